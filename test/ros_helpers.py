"""Helpers shared by the tests that run rclpy nodes (imported as ``ros_helpers``)."""
from __future__ import annotations

import time
from typing import Callable


def spin_until(executor, predicate: Callable[[], bool], timeout: float,
               tick: Callable[[], None] | None = None, period: float = 0.02) -> bool:
    """Spin ``executor`` until ``predicate()`` holds or ``timeout`` wall seconds pass.

    ``tick`` (optional) runs before each check, e.g. to publish a test input. Returns the
    predicate's final value: the awaited event, never a fixed sleep.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tick is not None:
            tick()
        if predicate():
            return True
        executor.spin_once(timeout_sec=period)
    return predicate()
