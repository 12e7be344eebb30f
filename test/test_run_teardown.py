"""The run's teardown of its own ROS participant is bounded (no ROS needed): Fast DDS
once hung for good in rclpy's shutdown after a successful assembly (deleting the /rosout
writer, a timer unregistration racing the removal of the remote participants), and the
report was never written."""
from __future__ import annotations

import threading
import time

from smores_assembly.run_job import bounded_call


def test_a_teardown_step_that_blocks_is_left_behind_after_the_bound():
    release = threading.Event()
    t0 = time.monotonic()
    assert bounded_call(release.wait, 0.2) is False      # blocked like the DDS teardown
    assert time.monotonic() - t0 >= 0.2
    release.set()


def test_a_teardown_step_that_returns_or_raises_counts_as_done():
    calls = []
    assert bounded_call(lambda: calls.append(1), 30.0) is True
    assert calls == [1]

    def boom():
        raise RuntimeError("rcl_shutdown failed")
    assert bounded_call(boom, 30.0) is True


def test_the_watchdog_ends_a_hang_that_keeps_the_gil(tmp_path):
    """A teardown step blocked inside a C call that keeps the GIL (a ``run`` after SIGTERM:
    ``rcl_logging_fini`` waiting for ever) starves ``bounded_call``'s own thread as well:
    the run never ended and wrote no report. ``teardown.watchdog`` (a C timer) ends the
    process with its stacks. Here the hang is ``sleep(600)`` through ``ctypes.PyDLL``, which
    keeps the GIL; without the watchdog the child would sleep the 600 s."""
    import subprocess
    import sys
    import textwrap

    from ros_helpers import HANG_S

    code = textwrap.dedent("""
        import ctypes, sys
        from smores_assembly.teardown import bounded_call, watchdog
        print("start", flush=True)
        with watchdog(0.5):
            bounded_call(lambda: ctypes.PyDLL(None).sleep(600), 0.2)
        print("not reached", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=HANG_S)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "start\n"
    assert "Timeout" in r.stderr and "bounded-teardown" not in r.stdout
