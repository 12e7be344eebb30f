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
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

#: Tolerance when comparing simulated times [s].
TIME_EPS = 1e-9
#: History kept by every counted writer (reliable, transient local): a subscription made
#: after a participant's hello receives that many of the messages published before it.
HISTORY_DEPTH = 100


#: Wall time between two warnings of a lockstep wait (for announced messages, for an
#: answer) [s].
WAIT_WARNING_S = 10.0
#: Wall time a participant holds a turn on purpose (``LockstepParticipant.hold``, a held
#: ``TurnWaiter``) before it reports the hold to the fake hardware (``LockstepAck.holding``),
#: well before the fake hardware's first warning that the answer is late [s].
HOLD_REPORT_S = WAIT_WARNING_S / 2
#: Wall time after which a turn or a step goes on without announced messages that did not
#: come, counted while every topic still short has a matched publisher [s] (default of the
#: participants and of ``lockstep_count_timeout_s``; see :class:`CountWait`).
COUNT_TIMEOUT_S = 30.0


class CountWait:
    """A wait for counted messages that were announced but have not all arrived: a
    participant's turn waiting for its inputs, or the fake hardware's next step waiting
    for the commands the answers announced.

    The messages were published (their counts are the publishers' own), and every counted
    topic is reliable and transient local: a message that has not come is either still to
    be delivered by a writer that this reader has not matched yet (endpoint discovery, which
    on a loaded machine has taken more than 30 s), and comes with the writer's history once
    it is matched, or lost for good (a matched writer whose history no longer holds it).
    So the bound counts only while every topic still short has a matched publisher: the
    caller says which have none (:meth:`unmatched`), and the bound starts again then.
    After ``timeout_s`` of wall time with them all matched (:meth:`expired`) the caller
    goes on without them (the run is then no longer deterministic, and says so). Before,
    the bound counted from the start of the wait: a CI run of ``test_scale_e2e`` and a
    loaded run here went on without a path whose publisher discovery had not matched in
    30 s (the docking controller's ``/m10/path``, at t = 0.08 s), and the comb assembled
    as another run (335.7 s simulated and a contact instead of 260.6 s clean). Meanwhile
    :meth:`warning` says, every ``warn_every_s``, what it waits for and from whom, so that
    a node's log tells why the simulation stands still (a wait that was silent, the fake
    hardware's for an answer, once hung a CI run of Task 1 until its 600-s timeout).

    Args:
        expected: messages to have received per topic before the wait ends.
        since: wall time the wait began [s] (any monotonic clock; the same as ``now``).
        timeout_s: wall time with every topic still short matched after which the wait
            gives up [s], > 0 (``math.inf``: never).
        warn_every_s: wall time between two warnings [s], > 0.

    Raises:
        ValueError: ``timeout_s`` or ``warn_every_s`` not > 0.
    """

    def __init__(self, expected: dict[str, int], since: float,
                 timeout_s: float = COUNT_TIMEOUT_S, warn_every_s: float = WAIT_WARNING_S):
        if not timeout_s > 0:
            raise ValueError(f"timeout_s: expected > 0, got {timeout_s!r}")
        if not warn_every_s > 0:
            raise ValueError(f"warn_every_s: expected > 0, got {warn_every_s!r}")
        self.expected = dict(expected)
        self.since = since
        self.timeout_s = timeout_s
        self.warn_every_s = warn_every_s
        #: wall time from which the bound counts: the wait's start or the last time a
        #: topic still short had no matched publisher [s]
        self.bound_since = since
        #: topics still short that had no matched publisher when last looked at
        self.waiting_for_discovery: tuple[str, ...] = ()
        self._warned = 0

    def missing(self, received: dict[str, int]) -> dict[str, tuple[int, int]]:
        """Topic -> (received, expected) of the topics still short of their count."""
        return {t: (received.get(t, 0), n) for t, n in self.expected.items()
                if received.get(t, 0) < n}

    def done(self, received: dict[str, int]) -> bool:
        """Every expected message has been received: the wait is over."""
        return not self.missing(received)

    def unmatched(self, now: float, topics: Collection[str]) -> None:
        """At wall time ``now`` [s], ``topics`` (still short) have no matched publisher:
        their messages are still to come with the writers' history once discovery has
        matched them, so the bound starts again at ``now`` (none: it goes on counting)."""
        self.waiting_for_discovery = tuple(sorted(topics))
        if topics:
            self.bound_since = now

    def expired(self, now: float) -> bool:
        """``timeout_s`` of wall time (``now`` [s]) have passed since the wait began or a
        topic still short last had no matched publisher (:meth:`unmatched`)."""
        return now - self.bound_since >= self.timeout_s

    def describe(self, now: float, received: dict[str, int],
                 senders: Callable[[str], str] = lambda _t: "") -> str:
        """``"<s> s for /a (r/n; <senders(/a)>), ..."``: how long it has waited at ``now``
        [s] and for what; ``senders(topic)`` says who publishes it (e.g. the nodes of its
        publishers and how many of them are matched), left out when empty."""
        parts = []
        for t, (r, n) in sorted(self.missing(received).items()):
            who = senders(t)
            parts.append(f"{t} ({r}/{n}{'; ' + who if who else ''})")
        return f"{now - self.since:.0f} s for {', '.join(parts)}"

    def warning(self, now: float, received: dict[str, int],
                senders: Callable[[str], str] = lambda _t: "") -> str | None:
        """The text of the warning due at wall time ``now`` [s] (one per ``warn_every_s``
        of waiting, none when nothing is missing): ``"waiting "`` + :meth:`describe`;
        else None."""
        k = int((now - self.since) // self.warn_every_s)
        if not self.missing(received) or k <= self._warned:
            return None
        self._warned = k
        if self.waiting_for_discovery:
            then = (f"no publisher of {', '.join(self.waiting_for_discovery)} matched yet: "
                    "waiting for discovery, without a bound")
        else:
            then = f"it goes on without them after {self.timeout_s:.0f} s"
            if self.bound_since != self.since:
                then += " with every publisher matched"
        return f"waiting {self.describe(now, received, senders)} ({then})"


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


@dataclass(frozen=True)
class Chain:
    """A chained turn: the participant that has the turn hands ``next`` its turn at the
    same time when it is done, instead of answering the fake hardware (which would then
    give ``next`` its turn), unless it published a waking message on a topic of ``stop``
    in its turn (that would give a participant ordered between the two a turn first).

    ``topics``/``counts``: every topic ``next`` counts and the messages it must have
    received on each before its turn, without those the handing participant publishes in
    its turn (:func:`chained_counts` adds them).
    """

    next: str
    topics: tuple[str, ...]
    counts: tuple[int, ...]
    stop: tuple[str, ...]


def chained_counts(chain_topics, chain_counts, published: dict[str, int],
                   woke: Collection[str], stop: Collection[str]) -> dict[str, int] | None:
    """The messages the next participant of a chained turn (:class:`Chain`) must have
    received per topic before its turn, once the handing participant's turn is done (as
    :meth:`LockstepSchedule.expected` would give after its answer: topics with none left
    out), or None when it must answer the fake hardware instead.

    Args:
        chain_topics, chain_counts: the chain's topics and counts (as given with the turn).
        published: messages the participant published in its turn, per topic.
        woke: topics of ``published`` it published waking (not quiet).
        stop: the chain's ``stop`` topics.

    Raises:
        ValueError: ``chain_topics`` and ``chain_counts`` of different lengths.
    """
    if len(chain_topics) != len(chain_counts):
        raise ValueError(f"chain: {len(chain_topics)} topics but {len(chain_counts)} counts")
    if any(t in stop for t in woke):
        return None
    out = {t: int(n) + published.get(t, 0) for t, n in zip(chain_topics, chain_counts)}
    return {t: n for t, n in out.items() if n > 0}


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

        A hello wakes nobody: what a participant published before its first turn (the
        executive's first ``active_stage``) reaches the others at their first turns, and
        whether it also gave one of them a turn at t = 0 depended on which hello came
        first, a matter of wall time.
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
        for topic in () if hello else changed:
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

    def chain(self, name: str) -> Chain | None:
        """The chained turn after ``name``'s (the turn :meth:`next_turn` just returned), or
        None: the next participant queued in this step and what ``name`` needs to hand it
        its turn itself (see :class:`Chain`). The fake hardware then waits for one answer
        (the last one's, carrying ``name``'s) instead of two, and wakes once instead of
        twice (issue 10: the bridge hands the controller its turn, 50 times per simulated
        s). ``name``'s answer is then handled with :meth:`on_ack` before :meth:`next_turn`
        returns the next one, as without the chain, so the schedule goes through the same
        states."""
        if not self._queue:
            return None
        nxt = self._queue[0]
        i, j = self.order.index(name), self.order.index(nxt)
        # a message of `name` that wakes a participant ordered between the two gives it
        # its turn before `nxt`: `name` then answers as without a chain
        stop = sorted({t for q in self.order[i + 1:j] for t in self.parts[q].wake})
        p = self.parts[nxt]
        counts = {t: self.sent.get(t, 0) - base for t, base in p.subscribed.items()}
        return Chain(nxt, tuple(counts), tuple(counts.values()), tuple(stop))

    def next_due(self) -> float:
        """Earliest simulated time at which some participant is due [s] (inf: none)."""
        if any(p.woken for p in self.parts.values()):
            return -math.inf
        return min((p.next_turn_s for p in self.parts.values()), default=math.inf)
