"""Lockstep simulation: the participant side (a node that the fake hardware waits for).

In lockstep mode (``lockstep: true``, the default of the fake-hardware stack) the fake
hardware is a discrete-event scheduler: after every physics step it gives a **turn** to each
participant that is due, one after the other in a fixed order, and steps again only when
every turn has been answered. A participant therefore sees exactly the data of the steps
before its turn and its outputs reach the others before their next turn, whatever the load
of the machine: the same seed gives bit-identical runs (like Gazebo's lockstep or Webots'
synchronous mode, here across processes).

Protocol (all reliable):

* ``lockstep/turn/<node>`` (smores_assembly/LockstepTurn, transient local): the turn at
  simulated time ``stamp``, with the number of messages published so far by participants on
  each topic the node counts. The node waits until it has received that many on each topic.
* ``lockstep/ack`` (smores_assembly/LockstepAck): the answer, with the counts of what the
  node published, its next due timer and (first message: ``hello``) the topics it counts;
  or (``holding``) no answer but the report that a turn is held on purpose
  (:meth:`LockstepParticipant._report_hold`).

Inside a node, :class:`LockstepParticipant` replaces ``create_subscription``,
``create_publisher`` and ``create_timer`` for the topics and timers that take part. A turn
sets the node's clock to the turn's time (the node does not listen to ``/clock``), then
delivers the messages buffered since the last turn (in subscription order, each
subscription's messages in arrival order), then runs the timers that are due (in creation
order); the turn ends when no :meth:`hold` predicate is true and every :class:`TurnWaiter`
that was woken has waited again. While a turn is held, messages are delivered at once (e.g.
a plan from a node that is not a participant). Without lockstep every method is the plain
rclpy call, so the nodes' logic is the same in both modes.
"""
from __future__ import annotations

import functools
import math
import time
import weakref
from typing import Any, Callable

from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from rclpy.timer import Timer
from rosgraph_msgs.msg import Clock as ClockMsg

from smores_assembly.msg import LockstepAck, LockstepTurn
from smores_assembly.ros import executor, names, wire
from smores_assembly.sim.lockstep import (COUNT_TIMEOUT_S, HISTORY_DEPTH, HOLD_REPORT_S,
                                          WAIT_WARNING_S, CountWait, chained_counts)

TOPIC_ACK = names.LOCKSTEP_ACK
#: Participants' answers: reliable; transient local so that a hello sent before the fake
#: hardware's subscription matched still arrives.
ACK_PUB_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
ACK_SUB_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Turns: the latest one reaches a participant whose subscription matched late.
TURN_QOS = ACK_PUB_QOS
#: Depth of counted subscriptions and publishers (messages are never dropped between turns;
#: a subscription made later receives this much history, see ``HISTORY_DEPTH``).
COUNTED_DEPTH = HISTORY_DEPTH
#: Longest wall time a participant waits for the publishers of its counted topics before
#: its hello [s].
HELLO_MATCH_TIMEOUT_S = 20.0


#: In-process endpoints of the protocol (one process: ``run --single-process``), by
#: ``(id(context), resolved topic)``: the turn topic of each participant, the answer topic
#: of the fake hardware. A turn or an answer to an endpoint in the same process is handed
#: over by a call instead of through DDS (as a component container's intra-process
#: communication): the same bytes and handlers, without the publish, the executor wake-up
#: and the take per turn and per answer (in one process these were ~6300 of the ~7700
#: waits of a Task 1 run; issue 10). Between processes nothing changes.
_LOCAL: "weakref.WeakValueDictionary[tuple[int, str], Any]" = weakref.WeakValueDictionary()


def register_local(node: Node, topic: str, endpoint: Any) -> None:
    """Register ``endpoint`` (an object with ``_on_turn(raw)`` or ``_on_ack(raw)``) as the
    in-process receiver of the resolved ``topic`` in ``node``'s context."""
    _LOCAL[(id(node.context), topic)] = endpoint


def local_endpoint(node: Node, topic: str) -> Any:
    """The in-process receiver of the resolved ``topic`` in ``node``'s context, or None
    (another process: publish)."""
    return _LOCAL.get((id(node.context), topic))


def declare(node: Node, count_timeout_s: float = COUNT_TIMEOUT_S) -> "LockstepParticipant":
    """Declare the node's read-only ``lockstep`` parameter (default false) and return its
    :class:`LockstepParticipant`.

    Raises:
        ValueError: ``lockstep`` without ``use_sim_time``.
    """
    from rcl_interfaces.msg import ParameterDescriptor  # noqa: PLC0415

    from smores_assembly.ros.common import declare_given  # noqa: PLC0415
    enabled = declare_given(
        node, "lockstep", False, ParameterDescriptor(
            description="take part in the fake hardware's lockstep simulation (turns set "
                        "the clock; needs use_sim_time)", read_only=True)).value
    if not isinstance(enabled, bool):
        raise ValueError(f"lockstep: expected a bool, got {enabled!r}")
    return LockstepParticipant(node, enabled, count_timeout_s)


def turn_topic(node_name: str) -> str:
    """Topic of ``node_name``'s turns: ``lockstep/turn/<node_name>`` (relative)."""
    return f"{names.LOCKSTEP_TURN}/{node_name}"


def reliable(qos: QoSProfile, depth: int = COUNTED_DEPTH) -> QoSProfile:
    """``qos`` made reliable with at least ``depth`` of history (durability kept)."""
    return QoSProfile(depth=max(depth, qos.depth), history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE, durability=qos.durability)


def counted(qos: QoSProfile, depth: int = COUNTED_DEPTH) -> QoSProfile:
    """QoS of a counted topic: reliable and transient local with ``depth`` of history, so
    that a reader that matches its writer late (endpoint discovery on a loaded machine)
    still receives every message it is counted for."""
    return QoSProfile(depth=max(depth, qos.depth), history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


#: Lockstep endpoints go without rclpy's default QoS-event handlers (they only log an
#: incompatible QoS, and every counted topic is reliable and transient local here): each
#: handler is one more waitable that every wake-up of the executor adds and checks (the
#: docking controller's per-module publishers had ~50).
NO_EVENTS_PUB = PublisherEventCallbacks(use_default_callbacks=False)
NO_EVENTS_SUB = SubscriptionEventCallbacks(use_default_callbacks=False)


def poll(sub, callback: Callable[[Any], None]) -> int:
    """Take every message waiting in ``sub`` and pass it to ``callback``; returns how many.

    A fallback for executors that can miss the arrival event of a message delivered as
    history of a transient-local topic (rclpy's EventsExecutor under load)."""
    n = 0
    while True:
        try:
            with sub.handle:
                got = sub.handle.take_message(sub.msg_type, sub.raw)
        except Exception:  # destroyed
            return n
        if got is None:
            return n
        n += 1
        callback(got[0])


def _counted_qos(qos: QoSProfile) -> QoSProfile:
    return counted(qos)


#: Due time of a wish that waits only for the node's next turn of any kind [ns] (~292 years).
_FAR_NS = 2**63 - 1


def _ns(t_s: float) -> int:
    return int(round(t_s * 1e9))


class _CountingPublisher:
    """A publisher that counts what it publishes (lockstep); other attributes delegate."""

    def __init__(self, lp: "LockstepParticipant", pub, topic: str):
        self._lp, self._pub, self._topic = lp, pub, topic

    def publish(self, msg, wake: bool = True) -> None:
        """Publish and count ``msg``; ``wake=False``: it gives no turn to the nodes that
        wake on this topic (a periodic refresh whose content that matters did not change;
        they read it at their next turn). A turn that publishes on a topic both ways wakes
        them."""
        self._pub.publish(msg)
        lp, topic = self._lp, self._topic
        lp._sent[topic] = lp._sent.get(topic, 0) + 1
        lp._published.add(topic)
        if wake:
            lp._loud.add(topic)

    def __getattr__(self, name):
        return getattr(self._pub, name)


class _SimTimer:
    __slots__ = ("period_ns", "due_ns", "callback", "cancelled")

    def __init__(self, period_s: float, now_ns: int, callback: Callable[[], None]):
        self.period_ns = max(1, _ns(period_s))
        self.due_ns = now_ns + self.period_ns
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class TurnWaiter:
    """Lets a coroutine (an action's execute callback) run in step with the simulation.

    ``await waiter.next(period_s)`` waits for the participant's next turn at least
    ``period_s`` of simulated time later; from then until the next ``next()`` or
    :meth:`release` the turn is held (the simulation waits for the coroutine). Without
    lockstep ``next`` waits ``period_s`` of wall time.
    """

    def __init__(self, lp: "LockstepParticipant"):
        self._lp = lp
        self.held = False

    def hold(self) -> None:
        """Hold the current turn until :meth:`release` or :meth:`next`."""
        if not self.held and self._lp.enabled:
            self.held = True
            self._lp._holds += 1

    def release(self) -> None:
        """Stop holding; the participant answers its turn if nothing else holds it."""
        if self.held:
            self.held = False
            self._lp._holds -= 1
            self._lp._try_finish()

    async def enter(self, ready: Callable[[], bool],
                    timeout_s: float = math.inf) -> None:
        """Continue (holding the turn) in the first of the participant's turns, the
        current one or a later one, at which ``ready()`` is true; at a turn ``timeout_s``
        of simulated time after the first one it saw, whatever ``ready()`` says (the caller
        then finds what is missing and fails). Simulated, not wall time: on a busy machine
        the turn at which it is ready can be many wall seconds away, and entering before it
        would make the run depend on the load.

        For a request from outside the lockstep (an action goal), which arrives at a
        wall-clock moment: the turn it continues in must not depend on that moment. The
        participant holds every turn at which ``ready()`` is true while no request has
        entered (a :meth:`LockstepParticipant.hold` predicate), so a request that arrives
        while the simulation runs continues at the first such turn, and one that arrives
        later finds the simulation held there. Before, a goal continued in the current
        turn or at the node's next timer: a goal accepted just before its first held turn,
        but whose execution started only after it (the executor runs an accepted goal as
        a task of its own), let that turn go and started one turn later, at t = 0.10
        instead of 0.05 s, under load (issue 10); asking for a turn at the next step (the
        repeated hello announces the node's next due time) had started it at 0.03 s."""
        lp = self._lp
        if not lp.enabled:
            return
        limit_ns = _ns(timeout_s) if math.isfinite(timeout_s) else _FAR_NS
        first_ns: int | None = None
        while True:
            if lp.in_turn:
                if first_ns is None:
                    first_ns = lp._now_ns
                if ready() or lp._now_ns - first_ns >= limit_ns:
                    break
            fut: Future[bool] = Future()
            # at the node's next turn, whatever gives it (a timer, a waking message)
            lp._wishes.append((_FAR_NS, fut, self, True))
            self.release()
            await fut
        self.hold()

    async def next(self, period_s: float, early: bool = False) -> None:
        """Wait for the participant's next turn at least ``period_s`` of simulated time
        later or, with ``early``, for any earlier turn of it (a turn given because a topic
        it wakes on got a message, or for another of its timers): an event-driven wait
        with ``period_s`` as its longest interval. Without lockstep: ``period_s`` of wall
        time."""
        lp = self._lp
        fut: Future[bool] = Future()
        if not lp.enabled:
            timer = lp.node.create_timer(period_s, lambda: fut.set_result(True),
                                         clock=lp._steady)
            try:
                await fut
            finally:
                lp.node.destroy_timer(timer)
            return
        lp._wishes.append((lp._now_ns + _ns(period_s), fut, self, early))
        self.release()
        await fut


class LockstepParticipant:
    """The lockstep side of a node (see the module docstring).

    Args:
        node: the node; in lockstep it must run with ``use_sim_time`` (its clock is then set
            by the turns instead of ``/clock``).
        enabled: lockstep mode; False makes every method the plain rclpy call.
        count_timeout_s: wall time a turn waits for the counted messages it expects, with
            a publisher matched on each topic still short, before it runs without them,
            with a warning [s] (no bound while one has none: ``CountWait``).
        wait_warning_s: wall time between two warnings of a turn waiting for them [s].
        hold_report_s: wall time a turn is held before the hold is reported to the fake
            hardware (:meth:`_report_hold`) [s].

    Raises:
        ValueError: lockstep without ``use_sim_time``.
    """

    def __init__(self, node: Node, enabled: bool, count_timeout_s: float = COUNT_TIMEOUT_S,
                 wait_warning_s: float = WAIT_WARNING_S,
                 hold_report_s: float = HOLD_REPORT_S):
        self.node = node
        self.enabled = bool(enabled)
        #: wall time a turn waits for its counted inputs before it goes on without them [s]
        self.count_timeout_s = count_timeout_s
        #: wall time between two warnings of a turn that waits for its inputs [s]
        self.wait_warning_s = wait_warning_s
        #: wall time a turn is held before the hold is reported [s]
        self.hold_report_s = hold_report_s
        self._hold_reported = False   # the current turn's hold was reported
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._subs: list[tuple[str, Callable, bool]] = []   # topic, callback, counted
        self._buffer: list[list] = []                       # per subscription
        self._received: dict[str, int] = {}
        self._subscribed: dict[str, bool] = {}              # counted topic -> wakes
        self._announced: tuple | None = None
        self._sent: dict[str, int] = {}
        self._published: set[str] = set()
        self._loud: set[str] = set()      # published in this turn with wake=True
        self._timers: list[_SimTimer] = []
        #: (due [ns], future, waiter, early: also at any earlier turn)
        self._wishes: list[tuple[int, Future[bool], TurnWaiter, bool]] = []
        self._holds = 0
        self._hold_preds: list[Callable[[], bool]] = []
        self._before_answer: list[Callable[[], None]] = []
        self._defer_preds: list[Callable[[], bool]] = []
        self._timers_pending = False   # this turn's timers wait for a defer predicate
        self._running = False          # inside this turn's timers (no early finish)
        #: the turn given but not started: its time [ns] and its wait for the counted
        #: messages it expects
        self._pending: tuple[int, CountWait] | None = None
        self._in_turn = False
        #: the pending or current turn's chain (``wire.TurnView`` with ``next`` set: hand
        #: ``next`` its turn when done) and the answer handed over with it (``chained``)
        self._chain: wire.TurnView | None = None
        self._chained = b""
        #: the last answer (serialised) and the participant it was handed on to ("": sent)
        self._answer = b""
        self._answer_next = ""
        #: the counts of the last answer (what the fake hardware knows: a chained turn's
        #: counts add what was published since)
        self._sent_acked: dict[str, int] = {}
        self._published_turn: set[str] = set()
        self._chain_pubs: dict[str, Any] = {}
        self._turn_ns = -1
        self._turn_start = 0.0
        self._now_ns = 0
        self.turns = 0
        if not self.enabled:
            return
        if not node.get_parameter("use_sim_time").value:
            raise ValueError("lockstep: needs use_sim_time:=true (the turns set the clock)")
        from smores_assembly.ros.common import drop_clock_subscription  # noqa: PLC0415
        drop_clock_subscription(node)   # the turns are this node's clock, not /clock
        self._time_source = node._time_source
        #: the Clock message each turn sets the node's clock with (one, refilled per turn:
        #: the time source keeps a Time of its own; building a message per turn cost ~4x
        #: the call, issue 10)
        self._clock_msg = ClockMsg()
        # turns and answers as CDR bytes (ros/wire.py): ~130 of each per simulated second
        self._ack_pub = node.create_publisher(LockstepAck, TOPIC_ACK, ACK_PUB_QOS,
                                              event_callbacks=NO_EVENTS_PUB)
        self._ack_writer = wire.AckWriter(node.get_name())
        self._turn_sub = node.create_subscription(LockstepTurn, turn_topic(node.get_name()),
                                                  self._on_turn, TURN_QOS, raw=True,
                                                  event_callbacks=NO_EVENTS_SUB)
        register_local(node, self._turn_sub.topic_name, self)
        self._sub_objs: list = []
        self._subs_of: dict[str, list[int]] = {}   # counted topic -> its subscriptions
        self._unparked: set[int] = set()
        self._hello_since: float | None = None
        self._hello_timer: Timer | None = node.create_timer(0.05, self._hello,
                                                            clock=self._steady)
        node.create_timer(1.0, self._watchdog, clock=self._steady)

    # --- the node's API ------------------------------------------------------------------
    def create_subscription(self, msg_type, topic: str, callback: Callable[[Any], None],
                            qos, counted: bool = True, wake: bool = False,
                            raw: bool = False, **kwargs):
        """A subscription whose messages are delivered at the node's turns.

        ``counted``: published by participants; the node waits for all of them before a
        turn (use False for topics of other nodes, e.g. the plan). ``wake``: a new message
        gives the node a turn at the next opportunity (else it waits for its timers).
        ``raw``: the callback gets the serialised bytes (rclpy's ``raw``; decode them only
        when needed). Other keyword arguments go to ``Node.create_subscription``.
        """
        if not self.enabled:
            return self.node.create_subscription(msg_type, topic, callback, qos, raw=raw,
                                                 **kwargs)
        i = len(self._subs)
        kwargs.setdefault("event_callbacks", NO_EVENTS_SUB)
        sub = self.node.create_subscription(msg_type, topic,
                                            lambda msg, i=i: self._on_msg(i, msg),
                                            _counted_qos(qos) if counted else qos, raw=raw,
                                            **kwargs)
        name = sub.topic_name
        self._sub_objs.append(sub)
        self._subs.append((name, callback, counted))
        self._buffer.append([])
        if counted:
            self._subscribed[name] = self._subscribed.get(name, False) or wake
            self._received.setdefault(name, 0)
            self._subs_of.setdefault(name, []).append(i)
            # read at the turn, not at arrival (no wake-up per message; see _take_counted)
            executor.park(sub)
        return sub

    def create_publisher(self, msg_type, topic: str, qos, history: bool = True):
        """A publisher whose messages are counted (lockstep: reliable, transient local with
        a history of :data:`COUNTED_DEPTH` messages; ``history=False`` keeps ``qos``'s depth,
        e.g. depth 1 for the latest states)."""
        if not self.enabled:
            return self.node.create_publisher(msg_type, topic, qos)
        pub = self.node.create_publisher(
            msg_type, topic, counted(qos) if history else counted(qos, depth=qos.depth),
            event_callbacks=NO_EVENTS_PUB)
        return _CountingPublisher(self, pub, pub.topic_name)

    @staticmethod
    def publish(pub, msg, wake: bool = True) -> None:
        """``pub.publish(msg)``; in lockstep (a publisher of :meth:`create_publisher`)
        ``wake=False`` gives no turn to the nodes that wake on the topic (see
        :meth:`_CountingPublisher.publish`)."""
        if isinstance(pub, _CountingPublisher):
            pub.publish(msg, wake)
        else:
            pub.publish(msg)

    def create_timer(self, period_s: float, callback: Callable[[], None]):
        """A timer on simulated time; in lockstep it runs at the node's turns."""
        if not self.enabled:
            return self.node.create_timer(period_s, callback)
        tmr = _SimTimer(period_s, self._now_ns, callback)
        self._timers.append(tmr)
        return tmr

    def destroy_timer(self, tmr) -> None:
        if isinstance(tmr, _SimTimer):
            tmr.cancel()
            self._timers = [t for t in self._timers if t is not tmr]
        elif tmr is not None:
            self.node.destroy_timer(tmr)

    def hold(self, predicate: Callable[[], bool], before_timers: bool = False) -> None:
        """Hold every turn while ``predicate()`` is true (re-checked after each message
        delivered during the turn and on :meth:`poke`).

        ``before_timers``: the predicate says that an input from outside the lockstep
        (e.g. the plan of a planning node) is missing; the turn's timers wait for it, so
        that they see the same inputs whether it arrived before the turn or during it.
        Otherwise the timers run first and the turn is held after them."""
        (self._defer_preds if before_timers else self._hold_preds).append(predicate)

    def before_answer(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at the end of every turn, just before the answer (e.g. to
        publish, as one message, what the turn collected; it is counted in this turn)."""
        self._before_answer.append(callback)

    def poke(self) -> None:
        """Re-check the holds (call when a hold predicate may have become false)."""
        self._try_finish()

    def waiter(self) -> TurnWaiter:
        return TurnWaiter(self)

    @property
    def in_turn(self) -> bool:
        return self._in_turn

    # --- protocol ------------------------------------------------------------------------
    def _hello(self) -> None:
        """Announce the node once its counted subscriptions and its turn subscription have
        found their publishers (or after ``HELLO_MATCH_TIMEOUT_S``), so that the first
        steps and the first turn are not missed (a turn published before the subscription
        matched arrives only when it does: the fake hardware waits for its answer)."""
        unmatched = [self._subs[i][0] for i, sub in enumerate(self._sub_objs)
                     if self._subs[i][2] and sub.get_publisher_count() == 0]
        if self._turn_sub.get_publisher_count() == 0:
            unmatched.append(self._turn_sub.topic_name)
        if self._hello_since is None:
            self._hello_since = time.monotonic()
        if unmatched and time.monotonic() - self._hello_since < HELLO_MATCH_TIMEOUT_S:
            return  # the 0.05 s timer tries again
        if self._hello_timer is not None:
            self.node.destroy_timer(self._hello_timer)
            self._hello_timer = None
        if unmatched:
            self.node.get_logger().warning(
                f"lockstep: no publisher yet on {', '.join(unmatched)}; announcing anyway")
        self._send_ack(hello=True)

    def _watchdog(self) -> None:
        """Once a second (wall): repeat the hello until the first turn has come, take turns
        and counted messages whose arrival event was missed, warn (every
        ``wait_warning_s``) about a turn still waiting for messages and start it after
        ``count_timeout_s`` with their publishers matched (``CountWait``), and report a turn
        held for ``hold_report_s`` (:meth:`_report_hold`)."""
        # not once a turn has come (pending): a hello has the stamp of no turn (0) and was
        # taken for the answer to a turn at t = 0
        if (self.turns == 0 and not self._in_turn and self._pending is None
                and self._hello_timer is None):
            self._send_ack(hello=True)
        poll(self._turn_sub, self._on_turn)
        if (self._in_turn and not self._hold_reported
                and time.monotonic() - self._turn_start >= self.hold_report_s):
            self._report_hold()
        if self._pending is not None:
            for i, sub in enumerate(self._sub_objs):
                if self._subs[i][2]:
                    poll(sub, functools.partial(self._on_msg, i))
            if self._pending is not None:
                self._try_run()

    def _on_msg(self, i: int, msg) -> None:
        topic, callback, counted = self._subs[i]
        if counted:
            self._received[topic] += 1
        if self._in_turn and not counted:
            callback(msg)
            self._try_finish()
            return
        # a counted message that arrives during a turn was not counted for it (the history
        # of a subscription made during the turn): it belongs to the next turn
        self._buffer[i].append(msg)
        if self._pending is not None:
            self._try_run()

    def _on_turn(self, raw: bytes) -> None:
        try:
            turn = wire.read_turn(raw)
        except ValueError as exc:
            self.node.get_logger().error(f"lockstep: a turn ignored: {exc}")
            return
        t_ns = turn.stamp_ns
        if t_ns <= self._turn_ns:
            if t_ns == self._turn_ns:
                if self._in_turn:   # a copy of the turn it holds: say so, again
                    self._report_hold()
                elif self._answer:
                    self._answer_again(t_ns)
            return  # else the latched copy of a turn answered earlier
        expected = dict(zip(turn.topics, turn.counts))
        self._take_counted(expected)
        self._chain = turn if turn.next else None
        self._chained = turn.chained
        pending = self._pending
        # the same turn again (the fake hardware repeats a turn it has no answer to): the
        # wait for its messages goes on from when it began
        since = pending[1].since if pending is not None and pending[0] == t_ns \
            else time.monotonic()
        self._pending = (t_ns, CountWait(expected, since, self.count_timeout_s,
                                         self.wait_warning_s))
        self._try_run()

    def _answer_again(self, t_ns: int) -> None:
        """The turn at ``t_ns`` came again after it was answered: the fake hardware, which
        repeats a turn when its answer is late (a turn or an answer lost, or an answer
        handed on in a chained turn to a participant that has not received it), gets the
        same answer once more, straight (a chained answer too: the fake hardware then gives
        the next participant its turn itself). It ignores an answer it already has."""
        self.node.get_logger().warning(
            f"lockstep: the turn at t={t_ns * 1e-9:.3f} s came again after it was answered "
            f"{'(handed on to ' + self._answer_next + ') ' if self._answer_next else ''}"
            "(the answer did not reach the fake hardware): answering it again")
        local = local_endpoint(self.node, self._ack_pub.topic_name)
        if local is not None:
            local._on_ack(self._answer)
        else:
            self._ack_pub.publish(self._answer)

    def _report_hold(self) -> None:
        """The current turn is held on purpose (a :meth:`hold` predicate, a held
        :class:`TurnWaiter`, a ``before_timers`` input that has not come: e.g. the executive
        while a goal is prepared or awaits approval; every other part of a turn runs
        without waiting): tell the fake hardware, straight, with a ``LockstepAck`` marked
        ``holding`` (no answer: it counts nothing and changes no state here), once the turn
        has been held ``hold_report_s`` and at each repeated copy of the turn. The fake
        hardware then says once that the participant holds the simulation, instead of
        warning every ``WAIT_WARNING_S`` that its answer is late."""
        self._hold_reported = True
        sec, nsec = divmod(self._turn_ns, 1_000_000_000)
        raw = self._ack_writer.encode(sec, nsec, False, math.inf, (), [], holding=True)
        local = local_endpoint(self.node, self._ack_pub.topic_name)
        if local is not None:
            local._on_ack(raw)
        else:
            self._ack_pub.publish(raw)

    def _take_counted(self, expected: dict[str, int]) -> None:
        """Take the counted messages a turn expects from their readers.

        Counted subscriptions are parked (:func:`executor.park`): their messages wait in
        the reader (reliable, :data:`COUNTED_DEPTH` deep) and are taken here, at the turn,
        instead of waking the node once per message (the states and mocap samples were most
        of the wake-ups of the executive, the navigation and the bridge, issue 10). Every
        counted message that exists when the turn is given is counted in it (turns are
        given one at a time, and participants publish counted messages only in their
        turns), so taking all that wait is taking the turn's messages; a message that
        arrives during a turn stays in its reader until the next one, as before."""
        received, subs_of = self._received, self._subs_of
        for topic, n in expected.items():
            if received.get(topic, 0) < n:
                for i in subs_of.get(topic, ()):
                    executor.take_all(self._sub_objs[i], functools.partial(self._on_msg, i))

    def _senders(self, topic: str) -> str:
        """Who publishes ``topic`` as this node sees it: the nodes of the ROS graph with a
        publisher on it and how many publishers its subscriptions have matched (a
        publisher in the graph but not matched: endpoint discovery has not finished)."""
        try:
            infos = self.node.get_publishers_info_by_topic(topic)
        except Exception:  # noqa: BLE001 - a diagnostic only
            infos = []
        nodes = sorted({(i.node_namespace.rstrip("/") + "/" + i.node_name) for i in infos})
        matched = sum(self._sub_objs[i].get_publisher_count()
                      for i in self._subs_of.get(topic, ()))
        return (f"publishers in the graph: {', '.join(nodes) or 'none'}; "
                f"matched here: {matched}")

    def _try_run(self) -> None:
        if self._pending is None:
            return
        t_ns, wait = self._pending
        missing = wait.missing(self._received)
        if missing:
            now = time.monotonic()
            # a topic whose publisher is not matched yet: its messages come with the
            # writer's history once discovery matches it, however long that takes
            subs_of, objs = self._subs_of, self._sub_objs
            wait.unmatched(now, [t for t in missing if subs_of.get(t) and not any(
                objs[i].get_publisher_count() for i in subs_of[t])])
            if not wait.expired(now):
                # not arrived yet: wait for them (their arrival runs the turn), saying what
                # for every wait_warning_s
                for t in missing:
                    for i in self._subs_of.get(t, ()):
                        if i not in self._unparked:
                            self._unparked.add(i)
                            executor.park(self._sub_objs[i], False)
                text = wait.warning(now, self._received, self._senders)
                if text is not None:
                    self.node.get_logger().warning(
                        f"lockstep: turn at t={t_ns * 1e-9:.3f} s {text}")
                return
            self.node.get_logger().warning(
                f"lockstep: turn at t={t_ns * 1e-9:.3f} s started without the messages it "
                f"waited {wait.describe(now, self._received, self._senders)}; the run is "
                "no longer deterministic")
            for t, (_, n) in missing.items():
                self._received[t] = n
        self._pending = None
        self._run_turn(t_ns)

    def _run_turn(self, t_ns: int) -> None:
        if self._unparked:
            for i in self._unparked:
                executor.park(self._sub_objs[i])
            self._unparked.clear()
        self._in_turn = True
        self._turn_ns = self._now_ns = t_ns
        self._turn_start = time.monotonic()
        self._hold_reported = False
        self.turns += 1
        stamp = self._clock_msg.clock
        stamp.sec, stamp.nanosec = divmod(t_ns, 1_000_000_000)
        self._time_source.clock_callback(self._clock_msg)
        self._timers_pending = True
        self._running = True   # a callback's poke() must not run the timers yet
        try:
            for (_, callback, _), buf in zip(self._subs, self._buffer):
                if buf:
                    msgs = list(buf)
                    buf.clear()
                    for m in msgs:
                        callback(m)
        finally:
            self._running = False
        self._try_finish()

    def _run_timers(self, t_ns: int) -> None:
        self._running = True
        try:
            for tmr in list(self._timers):
                if tmr.cancelled or tmr.due_ns > t_ns:
                    continue
                while tmr.due_ns <= t_ns:
                    tmr.due_ns += tmr.period_ns
                tmr.callback()
            wishes, self._wishes = self._wishes, []
            for wish in wishes:
                due, fut, waiter, early = wish
                if due <= t_ns or early:
                    waiter.hold()
                    fut.set_result(True)
                else:
                    self._wishes.append(wish)
        finally:
            self._running = False

    def _held(self) -> bool:
        if self._holds > 0:
            return True
        if any(p() for p in self._hold_preds):
            return True
        return False

    def _try_finish(self) -> None:
        if not self._in_turn or self._running:
            return
        if self._timers_pending:
            if any(p() for p in self._defer_preds):
                return
            self._timers_pending = False
            self._run_timers(self._turn_ns)
        if self._held():
            return
        for callback in self._before_answer:
            callback()
        self._in_turn = False
        self._send_ack()

    def _next_turn_s(self) -> float:
        dues = [t.due_ns for t in self._timers if not t.cancelled]
        dues += [w[0] for w in self._wishes if w[0] != _FAR_NS]
        return min(dues) * 1e-9 if dues else math.inf

    def _send_ack(self, hello: bool = False) -> None:
        sec, nsec = divmod(max(self._turn_ns, 0), 1_000_000_000)
        topics = tuple(sorted(self._sent) if hello else sorted(self._published))
        quiet = tuple(t for t in topics if t not in self._loud) if not hello else ()
        loud, self._published_turn = self._loud, self._published
        self._published = set()
        self._loud = set()
        subscribed: tuple[str, ...] = ()
        wake: tuple[str, ...] = ()
        announced = tuple(sorted(self._subscribed.items()))
        if hello or announced != self._announced:
            self._announced = announced
            subscribed = tuple(t for t, _ in announced) or ("",)  # "": announced, none
            wake = tuple(t for t, w in announced if w)
        chained, chain = b"", None
        if not hello:   # the answer to this turn: its chain and the answer handed over
            chained, chain = self._chained, self._chain
            self._chained, self._chain = b"", None
        raw = self._ack_writer.encode(
            sec, nsec, hello, self._next_turn_s(), topics, [self._sent[t] for t in topics],
            subscribed, wake, quiet, chained)
        handed = chain is not None and self._hand_over(chain, sec, nsec, raw, loud)
        if not hello:   # for a repeated turn (_answer_again)
            self._answer = raw
            self._answer_next = chain.next if handed and chain is not None else ""
        self._sent_acked = dict(self._sent)
        if handed:
            return
        local = local_endpoint(self.node, self._ack_pub.topic_name)
        if local is not None:   # the fake hardware in this process: a call, not DDS
            local._on_ack(raw)
        else:
            self._ack_pub.publish(raw)

    def _hand_over(self, chain: wire.TurnView, sec: int, nsec: int, answer: bytes,
                   loud: set) -> bool:
        """A chained turn is done: give ``chain.next`` its turn with this ``answer`` in it
        (the fake hardware gets both with the next one's answer), its counts plus what this
        answer reports beyond the last one; False when this turn published a waking message
        on a ``chain.stop`` topic (then answer as usual, and the fake hardware gives the
        next turn, after those it woke)."""
        before = self._sent_acked
        published = {t: self._sent[t] - before.get(t, 0) for t in self._published_turn}
        expected = chained_counts(chain.next_topics, chain.next_counts, published, loud,
                                  chain.stop)
        if expected is None:
            return False
        raw = wire.write_turn(sec, nsec, tuple(expected), list(expected.values()),
                              chained=answer)
        pub = self._chain_pubs.get(chain.next)
        if pub is None:   # made at the first hand-over to it (its name comes with the turn)
            pub = self._chain_pubs[chain.next] = self.node.create_publisher(
                LockstepTurn, turn_topic(chain.next), TURN_QOS, event_callbacks=NO_EVENTS_PUB)
        local = local_endpoint(self.node, pub.topic_name)
        if local is not None:   # the next participant in this process: a call
            local._on_turn(raw)
        else:
            pub.publish(raw)
        return True

