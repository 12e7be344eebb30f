"""Choosing a free ``ROS_DOMAIN_ID`` for a run on a shared machine.

``smores-assemble run`` picks a domain at random unless ``ROS_DOMAIN_ID`` is set. Two runs
(or a run and a test) on one machine that draw the same id take over each other's stacks
(one executive answers the other's Assemble goal), so the run first looks whether any ROS
node is already discoverable in the drawn domain and draws again if so. The test suite
uses domains 101-232 (``test/conftest.py``), the runs 1-100, so the two never meet.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable

#: domains ``run`` draws from when ROS_DOMAIN_ID is not set (the tests use 101-232)
RUN_DOMAINS = range(1, 101)


def domain_in_use(domain: int, probe_s: float = 1.0) -> bool:
    """True when a ROS node (other than this probe) is discovered in ``domain`` within
    ``probe_s`` [s] of wall time (discovery range as the environment sets it).

    Raises:
        ValueError: ``domain`` outside 0-232 (rclpy's check).
    """
    import rclpy  # noqa: PLC0415  (ROS only where a run needs it)
    from rclpy.signals import SignalHandlerOptions  # noqa: PLC0415

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node("smores_domain_probe", context=ctx,
                                 start_parameter_services=False)
        try:
            deadline = time.monotonic() + probe_s
            while time.monotonic() < deadline:
                if any(name != "smores_domain_probe" for name in node.get_node_names()):
                    return True
                time.sleep(0.05)  # discovery is asynchronous: poll the graph
            return False
        finally:
            node.destroy_node()
    finally:
        ctx.try_shutdown()


def pick_free_domain(rng: random.Random | None = None, tries: int = 5,
                     in_use: Callable[[int], bool] = domain_in_use) -> tuple[int, int]:
    """A domain from :data:`RUN_DOMAINS` in which no node is discovered.

    Returns ``(domain, busy)``: the domain and how many drawn domains were found busy.
    After ``tries`` busy draws the last draw is returned (``busy == tries``) and the
    caller says so.
    """
    rng = rng or random.Random()
    domain = rng.choice(RUN_DOMAINS)
    for busy in range(tries):
        if not in_use(domain):
            return domain, busy
        domain = rng.choice(RUN_DOMAINS)
    return domain, tries
