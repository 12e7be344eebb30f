"""Lockstep scheduling of a simulation's participants (pure Python; no ROS).

The fake hardware steps its world and then gives a *turn* to every participant that is due,
one after the other in a fixed order; it steps again only when all turns of the step are
answered. :class:`LockstepSchedule` keeps the book: who takes part (in which order), when
each one is next due (its timers), which topics wake whom, and how many messages were
published on every topic (so that a participant can wait until it has received all of them
before its turn). The transport (ROS messages) is in :mod:`smores_assembly.ros.lockstep`.
"""
from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

#: Tolerance when comparing simulated times [s].
TIME_EPS = 1e-9
#: History kept by every counted writer (reliable, transient local): a subscription made
#: after a participant's hello receives that many of the messages published before it.
HISTORY_DEPTH = 100


@dataclass
class ParticipantState:
    """What the schedule knows of one participant."""

    name: str
    hello: bool = False
    next_turn_s: float = 0.0
    subscribed: dict[str, int] = field(default_factory=dict)   # topic -> baseline count
    wake: set[str] = field(default_factory=set)
    woken: bool = False
    last_turn_s: float = -math.inf


class LockstepSchedule:
    """Turn order and message counts of a lockstep simulation.

    Args:
        order: participant names in turn order (each step's turns follow this order; a
            participant's outputs reach the later ones in the same step).

    Raises:
        ValueError: an empty or duplicate name.
    """

    def __init__(self, order: list[str]):
        if any(not n for n in order) or len(set(order)) != len(order):
            raise ValueError(f"lockstep_participants: names must be unique and non-empty, "
                             f"got {order}")
        self.order = list(order)
        self.parts = {n: ParticipantState(n) for n in order}
        #: cumulative number of messages published per topic (participants and simulator)
        self.sent: dict[str, int] = {}
        self._sent_by: dict[tuple[str, str], int] = {}
        self._queue: list[str] = []
        self._position = -1   # index in `order` of the last turn given in this step

    # --- bookkeeping ---------------------------------------------------------------------
    def all_hello(self) -> bool:
        """Every participant has announced itself."""
        return all(p.hello for p in self.parts.values())

    def missing(self) -> list[str]:
        return [n for n in self.order if not self.parts[n].hello]

    def count_sent(self, topic: str, n: int = 1) -> None:
        """The simulator published ``n`` messages on ``topic``."""
        self.sent[topic] = self.sent.get(topic, 0) + n

    def on_ack(self, name: str, hello: bool, next_turn_s: float, counts: dict[str, int],
               subscribed: list[str] | None = None, wake: list[str] | None = None,
               quiet: Collection[str] = ()) -> None:
        """Record a participant's answer (unknown names are ignored).

        Args:
            counts: the participant's cumulative published messages per topic.
            subscribed: its counted topics when they changed (None: unchanged). A topic
                counted from a hello on counts every message; one added later counts also
                the last :data:`HISTORY_DEPTH` messages published before this answer: its
                writers' history (transient local) delivers them to the new subscription,
                and it must have them before its next turn (else their arrival, a matter
                of discovery time, would decide at which turn they are seen).
            wake: the subset of ``subscribed`` on which a new message gives it a turn.
            quiet: topics of ``counts`` whose new messages give nobody a turn (counted all
                the same: a periodic refresh whose content that matters did not change,
                e.g. a docking status with the same phases; the nodes waking on it read it
                at their next turn).
        """
        p = self.parts.get(name)
        if p is None:
            return
        first = hello and not p.hello
        p.hello = p.hello or hello
        if not math.isnan(next_turn_s):
            p.next_turn_s = next_turn_s
        changed = []
        for topic, n in counts.items():
            before = self._sent_by.get((name, topic), 0)
            if n > before:
                self.sent[topic] = self.sent.get(topic, 0) + n - before
                self._sent_by[(name, topic)] = n
                changed.append(topic)
        if subscribed is not None:
            p.subscribed = {t: p.subscribed.get(
                t, 0 if first else max(0, self.sent.get(t, 0) - HISTORY_DEPTH))
                for t in subscribed if t}
            p.wake = set(wake or ())
        for topic in changed:
            if topic in quiet:
                continue
            for q in self.parts.values():
                if q.name != name and topic in q.wake:
                    self._wake(q.name)

    def _wake(self, name: str) -> None:
        i = self.order.index(name)
        if i > self._position and name not in self._queue:
            self._queue.append(name)
            self._queue.sort(key=self.order.index)
        elif name not in self._queue:
            self.parts[name].woken = True

    def expected(self, name: str) -> dict[str, int]:
        """Messages ``name`` must have received before its turn, per counted topic."""
        p = self.parts[name]
        return {t: self.sent.get(t, 0) - base for t, base in p.subscribed.items()
                if self.sent.get(t, 0) - base > 0}

    # --- a step --------------------------------------------------------------------------
    def start_step(self, t: float) -> None:
        """Queue the turns due at simulated time ``t`` [s] (timers due or woken)."""
        self._position = -1
        self._queue = [n for n in self.order
                       if self.parts[n].woken or self.parts[n].next_turn_s <= t + TIME_EPS]
        for n in self._queue:
            self.parts[n].woken = False

    def next_turn(self) -> str | None:
        """The next participant to give a turn in this step, or None when the step is done."""
        if not self._queue:
            return None
        name = self._queue.pop(0)
        self._position = self.order.index(name)
        return name

    def next_due(self) -> float:
        """Earliest simulated time at which some participant is due [s] (inf: none)."""
        if any(p.woken for p in self.parts.values()):
            return -math.inf
        return min((p.next_turn_s for p in self.parts.values()), default=math.inf)
