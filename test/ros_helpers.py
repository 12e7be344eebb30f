"""Helpers shared by the tests that run rclpy nodes (imported as ``ros_helpers``)."""
from __future__ import annotations

import os
import time
from typing import Callable



def _hang_s() -> float:
    text = os.environ.get("SMORES_TEST_HANG_S", "300")
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0.0:
        raise ValueError(f"SMORES_TEST_HANG_S must be a positive number of seconds, not {text!r}")
    return value


HANG_S: float = _hang_s()
"""Wall time [s] after which a test declares the stack hung (default 300 s; the environment
variable ``SMORES_TEST_HANG_S`` overrides it, so a slow machine can raise it).

A hang guard, not a synchronisation: every wait that uses it ends on the awaited event
(a message, a service, a process exit, simulated time passing), never on the clock, so a
loaded machine only makes a test slower, never fails it. A *negative* check (something must
NOT happen) waits a bounded amount of simulated time or a bounded number of spins instead,
never ``HANG_S``.
"""


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
                   sim_limit: float, stall_s: float = HANG_S, period: float = 0.02) -> bool:
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
