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


def spin_until_sim(executor, predicate: Callable[[], bool], sim_time: Callable[[], float],
                   sim_limit: float, stall_s: float = 120.0, period: float = 0.02) -> bool:
    """Spin ``executor`` until ``predicate()`` holds or ``sim_time()`` passes ``sim_limit``.

    A wait bounded by **simulated** time [s]: a loaded machine only makes it longer, never
    fails it. The only wall-clock bound is a stall guard: ``sim_time()`` not advancing for
    ``stall_s`` wall seconds (a hung simulation) ends it. Returns the predicate's final value.
    """
    last, since = sim_time(), time.monotonic()
    while not predicate():
        t = sim_time()
        if t > sim_limit:
            return predicate()
        now = time.monotonic()
        if t != last:
            last, since = t, now
        elif now - since > stall_s:
            return predicate()
        executor.spin_once(timeout_sec=period)
    return True
