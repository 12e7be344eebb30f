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
