"""Choosing a free ``ROS_DOMAIN_ID`` for a run on a shared machine.

``smores-assemble run`` picks a domain at random unless ``ROS_DOMAIN_ID`` is set. Two runs
(or a run and a test) on one machine that draw the same id take over each other's stacks
(one executive answers the other's Assemble goal). So a drawn domain is first
**reserved** on this machine (:func:`reserve_domain`: an exclusive lock file per domain,
held for the life of the process, dropped by the kernel however it ends) and then
**probed** (:func:`domain_in_use`: any ROS node already discoverable there, e.g. a stack
started by hand with that ``ROS_DOMAIN_ID``); a domain that is taken either way is drawn
again. The probe alone was not enough: two runs that drew the same domain within the
same second, or a probe whose discovery took longer than its 1 s under load, both
started (a field case: one run's goal reached the other's executive). The test suite
reserves its domains the same way from 101-232 (``test/conftest.py``), the runs draw from
1-100, so the two never meet.
"""
from __future__ import annotations

import fcntl
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: domains ``run`` draws from when ROS_DOMAIN_ID is not set (the tests use 101-232)
RUN_DOMAINS = range(1, 101)
#: where the runs and tests of this machine reserve their domains (one lock file each)
LOCK_DIR = Path(tempfile.gettempdir()) / "smores_assembly-ros-domains"


class DomainReservation:
    """This process's exclusive claim on one ROS domain id on this machine: an ``flock`` on
    ``<lock dir>/<domain>.lock``. Released by :meth:`release`, or by the kernel when the
    process ends (also on a crash or SIGKILL: no stale reservation is left). The lock's
    file descriptor is not inherited by child processes."""

    def __init__(self, domain: int, fd: int):
        self.domain = domain
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the domain back (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)   # closing the descriptor drops the flock
            self._fd = None


def reserve_domain(domain: int, lock_dir: str | os.PathLike | None = None
                   ) -> DomainReservation | None:
    """Reserve ``domain`` for this process on this machine; None when another process
    holds it.

    Raises:
        OSError: the lock directory cannot be made or written.
    """
    d = Path(lock_dir) if lock_dir is not None else LOCK_DIR
    d.mkdir(parents=True, exist_ok=True)
    old = os.umask(0)   # one machine, several users: everyone may lock
    try:
        fd = os.open(d / f"{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    finally:
        os.umask(old)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:   # BlockingIOError: someone holds it
        os.close(fd)
        return None
    return DomainReservation(domain, fd)


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
                     in_use: Callable[[int], bool] = domain_in_use,
                     reserve: Callable[[int], DomainReservation | None] = reserve_domain
                     ) -> tuple[int, int, DomainReservation | None]:
    """A domain from :data:`RUN_DOMAINS`, reserved on this machine (``reserve``) and in
    which no node is discovered (``in_use``).

    Returns ``(domain, busy, reservation)``: the domain, how many drawn domains were found
    taken, and the reservation to hold for as long as the domain is used (the caller keeps
    it; it ends with the process). After ``tries`` taken draws the last draw is returned
    without a reservation (``busy == tries``) and the caller says so.
    """
    rng = rng or random.Random()
    domain = rng.choice(RUN_DOMAINS)
    for busy in range(tries):
        held = reserve(domain)
        if held is not None:
            if not in_use(domain):
                return domain, busy, held
            held.release()
        domain = rng.choice(RUN_DOMAINS)
    return domain, tries, None
