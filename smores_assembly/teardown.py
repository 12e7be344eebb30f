"""Bounded teardown of a process's ROS participant (no ROS imports).

Fast DDS can hang for good while a participant is torn down (seen here: in
``rcl_logging_fini`` deleting the ``/rosout`` writer, the PDP mutex held by a thread waiting
for the event thread, which waited for that mutex). A process that waits for it never
ends: ``smores-assemble run`` wrote no report, and a node ignored SIGINT and SIGTERM until
its launcher killed it (exit -9). Both bound each teardown step with :func:`bounded_call`
and, when one hangs, say so and leave with :func:`exit_now`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
from collections.abc import Callable, Iterator

#: how long [s] a teardown step may take before the process goes on without it (normally
#: well under a second)
TEARDOWN_TIMEOUT_S = 30.0


#: how much longer [s] than a bounded step the C watchdog (:func:`watchdog`) waits
WATCHDOG_MARGIN_S = 10.0


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """End the process if the body has not finished after ``seconds`` [s]: every thread's
    Python stack to stderr, then exit status 1 (``faulthandler.dump_traceback_later`` with
    ``exit=True``; one at a time per process). Its timer is a C thread that needs no GIL,
    so it also ends a hang inside a C call that keeps the GIL, which :func:`bounded_call`'s
    Python thread cannot see end (a ``run`` after a SIGTERM: ``rcl_logging_fini`` deleting
    the ``/rosout`` writer waited for ever, the main thread stuck starting the bounding
    thread; no report, no exit)."""
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def bounded_call(fn: Callable[[], object], timeout: float) -> bool:
    """Call ``fn()`` in a daemon thread and wait at most ``timeout`` [s] for it; True when it
    returned (or raised: its exception is dropped, a teardown step must not hide the
    results), False when it is still running (e.g. blocked inside the middleware)."""
    done = threading.Event()

    def work() -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a teardown step's error must not end the run
            pass
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name="bounded-teardown").start()
    return done.wait(timeout)


def exit_now(code: int, stacks: bool = False) -> None:
    """End the process at once with ``code`` after flushing stdout and stderr; with
    ``stacks``, first write every thread's Python stack to stderr (``faulthandler``: where
    the teardown hangs). For a hung teardown: a DDS thread still holds its locks, and the
    interpreter's own exit would wait on it."""
    if stacks:
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
