"""Console entry points that survive a Ctrl-C while they are still importing (no ROS imports).

``smores-assemble`` and every node import numpy, scipy, networkx and rclpy before their
``main`` can install a signal handler: ~0.5-1 s in which a Ctrl-C (or the SIGINT a launcher
sends to a stack that is stopped while it starts) printed a traceback from deep inside
``importlib``, or an ``ImportError`` when it landed in a C extension's initialisation
(numpy's). Each entry point here holds a SIGINT back while it imports its real module
(the import completes), then, when one came, prints one line and exits with 130 (128 +
SIGINT, the shell's convention) without calling ``main``: nothing has moved by then (the
same for a KeyboardInterrupt that ``main`` lets out: one before its own handling is in
force, e.g. while the CLI parses its arguments). A
process started with SIGINT ignored (a background job of a non-interactive shell) keeps
ignoring it: ``smores-assemble`` for good, also once its stack is up
(:class:`smores_assembly.run_job.stack.Interrupts`); a node only until
:mod:`smores_assembly.ros` is imported, whose handlers catch it (SIGINT is how a launcher
stops a node). Otherwise ``main`` runs with Python's default handler back in force,
unchanged.

Each entry point also enables :mod:`faulthandler`: a process that dies of a fatal signal
(SIGSEGV, SIGABRT, ... inside the middleware; a ``run`` once ended with exit -11 under load)
writes every thread's Python stack to its stderr (the node's log), so the crash has a place.

setup.py names these functions as its console scripts (pip) and the scripts CMake writes
for ``ros2 run`` (``lib/smores_assembly/<node>``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import signal
import sys
from collections.abc import Callable, Iterator

#: exit status of a process interrupted by SIGINT before it did anything (128 + 2)
INTERRUPTED_EXIT = 130


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold a SIGINT back while the body runs (an import of numpy, scipy, networkx or
    rclpy: interrupted inside, it left a module half-initialised and raised an
    ``ImportError`` or ``AttributeError`` instead of ``KeyboardInterrupt``), then raise
    :class:`KeyboardInterrupt` when one came. Where SIGINT is not Python's default handler
    (ignored, or a handler of the program's own), the body runs unguarded."""
    interrupted: list[int] = []
    guard = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if guard:
        signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
    try:
        yield
    finally:
        if guard:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if interrupted:
        raise KeyboardInterrupt


def _guarded(module: str, prog: str, what: str) -> Callable[[], int]:
    """An entry point that imports ``module`` and returns ``module.main()``; a SIGINT during
    the import is held back until the import ends, then prints ``"<prog>: <what>"`` to
    stderr and the entry point returns :data:`INTERRUPTED_EXIT` (``main`` is not called);
    so does a KeyboardInterrupt that ``main`` lets out (one that came before ``main`` had
    its own handling in force)."""

    def entry() -> int:
        faulthandler.enable()
        try:
            with sigint_held():
                target = importlib.import_module(module)
            # main's own handling is not in force at once (the CLI's run_cli comes after
            # its argument parsing: a Ctrl-C there was a traceback)
            status = target.main()
        except KeyboardInterrupt:
            print(f"{prog}: {what}", file=sys.stderr)
            return INTERRUPTED_EXIT
        return int(status or 0)

    entry.__name__ = entry.__qualname__ = module.rsplit(".", 1)[-1]
    entry.__doc__ = f"Run ``{module}.main()``, quiet when interrupted while importing it."
    return entry


#: ``smores-assemble``
assemble = _guarded("smores_assembly.cli", "smores-assemble",
                    "interrupted before any module moved")

#: the nodes, one executable each; setup.py's NODE_SCRIPTS names the same (test_entry)
NODES = ("container", "docking_controller", "executive", "fake_hardware", "gazebo_spawn",
         "mocap_bridge", "navigation", "root_search", "task_assignment")
for _name in NODES:
    globals()[_name] = _guarded(f"smores_assembly.ros.{_name}", _name, "interrupted while starting")
