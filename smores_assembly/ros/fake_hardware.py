"""``fake_hardware`` node: simulated SMORES-EP modules seen through a simulated mocap.

Thin ROS adapter over :class:`smores_assembly.sim.SimWorld` (the physics is documented
there). Run it as ``python -m smores_assembly.ros.fake_hardware --ros-args -p scenario:=...``.

Time: this node is the time source and publishes ``/clock`` (when ``publish_clock``) so
that the rest of the stack runs with ``use_sim_time``. It refuses ``use_sim_time:=true`` for
itself. All stamps are simulated time. Two modes:

* ``lockstep: true`` (the fake stack's default): a discrete-event scheduler
  (:mod:`smores_assembly.ros.lockstep`). After each physics step of ``1/physics_rate_hz``
  it gives a turn to every participant of ``lockstep_participants`` that is due (in that
  order) and steps again only when all have answered and every command they sent has
  arrived. The results do not depend on the machine's load: the same seed gives the same
  ``trace_sha256``. ``real_time_factor`` is an upper bound on the pace (``0``: as fast as
  possible).
* ``lockstep: false``: free-running on a **wall-clock** (steady) timer,
  ``real_time_factor`` times faster than wall time (``0``: as fast as possible, still
  servicing callbacks between batches of steps); late consumers see stale data, as on real
  hardware.

The stepping loop only uses the world's :class:`smores_assembly.sim.SimWorld` interface
(``step(dt) -> events``, ``pose_array()``, ``t``, the command methods), so another backend
(:func:`smores_assembly.sim.backend.make_world`) can sit behind it.

Service ``/fake_hardware/trace`` (std_srvs/Trigger): ``message`` is JSON
``{"sha256", "steps", "t", "waiting_for"}``: the SHA-256 of the ground-truth poses and the
commands applied at every step so far (``trace_sha256`` of the run report), and the
participant whose turn is awaited (lockstep; ``a > b``: a chained turn, ``a`` hands ``b``
its turn).

Subscribes (per module ``<id>`` of the scenario):

* ``/<id>/cmd_vel`` (geometry_msgs/Twist): ``linear.x`` [m/s], ``angular.z`` [rad/s]; a
  command older than ``cmd_vel_timeout_s`` (simulated time) is replaced by zero (watchdog).
  In lockstep also ``fake_hardware/cmd_vel`` (smores_assembly/CmdVelArray): the docking
  controller's commands of a turn in one message, each entry applied as that module's
  cmd_vel.
* ``/<id>/joint_commands`` (sensor_msgs/JointState): ``pan`` / ``tilt`` positions [rad]
  (by name; without names, positions are ``[pan, tilt]``).
* ``/<id>/magnets`` (smores_assembly/MagnetCommand): magnet per face.
* ``/<id>/helper_command`` (smores_assembly/HelperCommand), helpers only:
  ``LIFT`` ``module`` (carried one width ahead of the helper's TOP face, turned to
  ``carry_yaw`` relative to the helper's heading), ``ROTATE`` (new ``carry_yaw``),
  ``RELEASE`` (put down where it is). A refused command is logged as an error.

Publishes:

* mocap: ``geometry_msgs/PoseStamped`` per module on ``mocap_topic_format`` (default
  vicon_receiver's ``vicon/{id}/{id}``), frame ``mocap_frame_id``, z = w/2, at
  ``mocap_rate_hz`` with Gaussian noise (``mocap_noise_std_m`` on x, y, z;
  ``mocap_noise_std_rad`` on yaw), dropouts (no message, probability
  ``dropout_probability`` per sample) and ``latency_s`` (the sample is published that much
  later; its stamp is the capture time). Sensor QoS. With ``mocap_format: frame`` (the fake
  stack's launch) instead one ``smores_assembly/ModuleStateArray`` per sample on
  ``mocap_frame_topic`` (default ``fake_hardware/mocap``): the bodies seen, each with the
  position and quaternion of its PoseStamped (``x``, ``y``, ``yaw``: the same planar pose,
  ``tracked`` true, ``stamp`` the capture time), as a driver that sends whole capture frames
  (mocap4r2's RigidBodies); read by the bridge's ``frame`` source.
* ``/<id>/joint_states`` (sensor_msgs/JointState ``pan``, ``tilt``) at ``joint_state_rate_hz``.
* ``/fake_hardware/connections`` (ConnectionArray, latched): on start and on every change.
* ``/fake_hardware/collisions`` (CollisionEvent, reliable) + a warning log per contact start.
* ``/fake_hardware/ground_truth`` (ModuleStateArray, exact poses, all tracked) at
  ``ground_truth_rate_hz``.
* ``/clock`` (rosgraph_msgs/Clock) when ``publish_clock``: after every physics step, in
  lockstep at ``lockstep_clock_rate_hz`` (the participants do not use it).
"""
from __future__ import annotations

import collections
import functools
import hashlib
import json
import math
import os
import struct
import sys
import time
from typing import Any, Callable

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.timer import Timer
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from smores_assembly import params
from smores_assembly.errors import InputError, ParamsError
from smores_assembly.msg import (CmdVelArray, CollisionEvent, ConnectionArray, HelperCommand,
                                 LockstepAck, LockstepTurn, MagnetCommand, ModuleStateArray)
from smores_assembly.ros import common, executor, lockstep, names
from smores_assembly.ros.convert import (connections_to_msg, helper_msg_to_op,
                                         magnet_msg_to_faces)
from smores_assembly.ros.wire import (PoseStampedWriter, read_ack, read_cmd_vel_array,
                                     read_twist, write_module_states, write_turn)
from smores_assembly.sim import SimError, SimParams
from smores_assembly.sim.backend import make_world
from smores_assembly.sim.lockstep import WAIT_WARNING_S, CountWait, LockstepSchedule
from smores_assembly.sim.settings import FakeHardwareSettings



#: Command kind of a CmdVelArray (the lockstep batch of cmd_vel commands) in the command
#: subscriptions' bookkeeping (the others: 0 cmd_vel, 1 joints, 2 magnets, 3 helper).
BATCH = -1

#: Lockstep: how often commands from outside the lockstep (not announced by a participant)
#: are taken from the parked command subscriptions [s, wall].
STRAY_COMMAND_PERIOD_S = 0.5

#: History depth of the ground-truth publisher [samples]: how far a reliable reader (the
#: recorder, the run's observer) may lag behind and still get every sample.
GROUND_TRUTH_DEPTH = 1000


def _next_due(due: float, rate_hz: float, t: float) -> float:
    """The next due instant after ``due`` for a schedule at ``rate_hz`` [Hz], restarting
    from ``t`` when it fell behind (e.g. after a rate change)."""
    nxt = due + 1.0 / rate_hz
    return nxt if nxt > t + 1e-9 else t + 1.0 / rate_hz


def _set_stamp(stamp, t: float) -> None:
    """Write ``t`` [s] into the builtin_interfaces/Time ``stamp`` in place (through integer
    nanoseconds, as :func:`common.sec_to_time`)."""
    ns = int(round(t * 1e9))
    stamp.sec, stamp.nanosec = divmod(ns, 1_000_000_000)




class FakeHardwareNode(Node):
    """The ``fake_hardware`` node (see the module docstring).

    Raises:
        SmoresError: missing/invalid scenario, a parameter out of range, or
            ``use_sim_time`` set (this node is the time source).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("fake_hardware", **common.node_kwargs(kwargs))
        # the rule param_check applies to a params file too (one place: sim.settings)
        params.check_common_parameters(
            "fake_hardware", {"use_sim_time": self.get_parameter("use_sim_time").value})
        settings, sim_params = params.node_settings("fake_hardware")
        self.settings: FakeHardwareSettings = common.declare_dataclass_params(
            self, settings, on_change=lambda _s: self._on_settings_change())
        self.sim_params: SimParams = common.declare_dataclass_params(self, sim_params)
        s = self.settings
        if not s.scenario:
            raise ParamsError("scenario: the path of a scenario YAML file is required")
        from smores_assembly.scenario import load_scenario  # noqa: PLC0415
        scen = load_scenario(s.scenario)
        if abs(scen.module_width - self.sim_params.module_width) > 1e-12:
            self.get_logger().info(
                f"module_width: using the scenario's {scen.module_width} m "
                f"(parameter said {self.sim_params.module_width} m)")
            self.set_parameters([Parameter("module_width", value=float(scen.module_width))])
        try:
            self.world = make_world(s.backend, scen.modules, self.sim_params,
                                    helpers=scen.helpers,
                                    connections=scen.initial_connections)
        except SimError as exc:
            raise ParamsError(f"scenario {s.scenario}: {exc}") from exc
        self.ids = self.world.modules()
        self._rng = np.random.default_rng(s.random_seed)
        n = len(self.ids)

        # command watchdog
        self._cmd_time = np.full(n, -math.inf)
        self._cmd_active = np.zeros(n, dtype=bool)
        self._next_expiry = math.inf
        self._expiry_stale = False   # a cmd_vel came: _next_expiry is recomputed at the step

        # publishers
        # per-module endpoints without the default QoS-event handlers: each handler is a
        # wait-set entry, and with 50 modules the executor's wait-set rebuild dominated
        pev = PublisherEventCallbacks(use_default_callbacks=False)
        sev = SubscriptionEventCallbacks(use_default_callbacks=False)
        mocap_qos = lockstep.counted(common.SENSOR_QOS) if s.lockstep else common.SENSOR_QOS
        # vicon: one PoseStamped per body and sample; frame: one ModuleStateArray per sample
        # with the bodies seen (a Task 1 run: ~1500 messages instead of ~10 500; each
        # message between processes costs ~0.1 ms of CPU in DDS on this machine, issue 10)
        self._mocap_frame = s.mocap_format == "frame"
        self._mocap_pubs = [] if self._mocap_frame else [self.create_publisher(
            PoseStamped, names.mocap_topic(s.mocap_topic_format, m), mocap_qos,
            event_callbacks=pev) for m in self.ids]
        self._mocap_topics = [p.topic_name for p in self._mocap_pubs]
        self._frame_pub = self.create_publisher(
            ModuleStateArray, s.mocap_frame_topic, mocap_qos,
            event_callbacks=pev) if self._mocap_frame else None
        self._joint_pubs = [self.create_publisher(
            JointState, names.module_topic(m, names.JOINT_STATES), 10, event_callbacks=pev)
            for m in self.ids]
        conn_qos, coll_qos = common.LATCHED_QOS, QoSProfile(
            depth=100, reliability=ReliabilityPolicy.RELIABLE)
        if s.lockstep:
            conn_qos, coll_qos = lockstep.counted(conn_qos), lockstep.counted(coll_qos)
        self._conn_pub = self.create_publisher(ConnectionArray, names.CONNECTIONS, conn_qos,
                                               event_callbacks=pev)
        self._coll_pub = self.create_publisher(CollisionEvent, names.COLLISIONS, coll_qos,
                                               event_callbacks=pev)
        # the ground truth's history is what a lagging reliable reader (the recorder, the
        # run's observer) can still get: at --real-time-factor 0 under load, depth 100
        # (2 s simulated at 50 Hz, ~0.2 s wall at Task 1's pace) left holes of 1.14 s and
        # 0.34 s in a Task 1 recording (test_end_to_end, clean-clone CI at load ~2-3);
        # 1000 samples are ~20 s simulated (a few MB at 110 modules)
        self._gt_pub = self.create_publisher(ModuleStateArray, names.GROUND_TRUTH,
                                             GROUND_TRUTH_DEPTH, event_callbacks=pev)
        self._clock_pub = self.create_publisher(ClockMsg, names.CLOCK, 10, event_callbacks=pev)
        # outgoing high-rate messages, built once and refilled before every publish
        # (publish() serialises synchronously, so one object can serve every publisher)
        self._mocap_writer = PoseStampedWriter(s.mocap_frame_id)
        self._joint_msg = JointState(name=["pan", "tilt"], position=[0.0, 0.0])
        self._clock_msg = ClockMsg()

        # subscriptions (commands). In lockstep they are applied at the next step in a
        # fixed order (kind, module, arrival), whatever order they arrived in.
        cmd_qos = lockstep.counted(common.COMMAND_QOS) if s.lockstep else common.COMMAND_QOS
        self._cmd_received: dict[str, int] = {}
        self._cmd_queue: list[tuple[int, int, int, object]] = []
        handlers = ((Twist, names.CMD_VEL, self._on_cmd_vel),
                    (JointState, names.JOINT_COMMANDS, self._on_joints),
                    (MagnetCommand, names.MAGNETS, self._on_magnets),
                    (HelperCommand, names.HELPER_COMMAND, self._on_helper))
        self._cmd_handlers: list[Callable[[int, Any], None]] = [h for _, _, h in handlers]
        self._cmd_topics: list[list[str]] = []
        #: lockstep: command topic -> (subscription, kind, module index); topics announced
        #: in an answer whose commands have not all been taken yet; subscriptions put back
        #: into the wait set to wait for late ones
        self._cmd_subs: dict[str, tuple[Any, int, int]] = {}
        self._cmd_due: set[str] = set()
        self._cmd_unparked: list = []
        for i, m in enumerate(self.ids):
            topics = []
            for kind, (typ, name, handler) in enumerate(handlers):
                # raw: a cmd_vel is read from its bytes (ros/wire.py), not through a
                # Python message (one per driven module and control tick)
                sub = self.create_subscription(
                    typ, names.module_topic(m, name),
                    lambda msg, i=i, kind=kind: self._on_command(kind, i, msg), cmd_qos,
                    event_callbacks=sev, raw=typ is Twist)
                self._cmd_received[sub.topic_name] = 0
                topics.append(sub.topic_name)
                if s.lockstep:
                    # taken when an answer announces them (_commands_complete), not at
                    # arrival: no wake-up per command (issue 10)
                    self._cmd_subs[sub.topic_name] = (sub, kind, i)
                    executor.park(sub)
            self._cmd_topics.append(topics)
        self._index = {m: i for i, m in enumerate(self.ids)}
        if s.lockstep:
            # the docking controller's cmd_vel commands of a turn in one message (kind
            # BATCH: one queued cmd_vel per entry, as if each had come on <id>/cmd_vel)
            sub = self.create_subscription(
                CmdVelArray, names.CMD_VEL_BATCH,
                lambda msg: self._on_command(BATCH, -1, msg), cmd_qos, event_callbacks=sev,
                raw=True)
            self._cmd_received[sub.topic_name] = 0
            self._batch_topic = sub.topic_name
            self._cmd_subs[sub.topic_name] = (sub, BATCH, -1)
            executor.park(sub)
        self._trace = hashlib.sha256()
        dump = os.environ.get("SMORES_TRACE_DUMP")  # debugging: every step's trace input
        self._trace_dump = open(dump, "w") if dump else None
        self._step_cmds: list[bytes] = []
        self.create_service(Trigger, names.TRACE_SERVICE, self._on_trace)

        # schedules (simulated time)
        # next due instants: on the grid k / rate (first at t = 1 / rate)
        self._next_mocap = 1.0 / s.mocap_rate_hz
        self._next_gt = 1.0 / s.ground_truth_rate_hz
        self._next_joint = 1.0 / s.joint_state_rate_hz
        self._next_clock = 0.0
        self._latency_queue: collections.deque = collections.deque()
        #: mocap sampling instants so far, and per module the samples not dropped
        self.mocap_samples = 0
        self.mocap_published = np.zeros(n, dtype=int)
        self.steps = 0
        self._publish_connections()
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer: Timer | None = None
        self._tick_end: float | None = None
        self._wall_start = time.monotonic()
        self._anchor()
        if s.lockstep:
            self._init_lockstep()
        self._make_timer()
        self.get_logger().info(
            f"fake hardware: {n} modules ({', '.join(self.ids)}), helpers "
            f"{sorted(self.world.helpers) or '[]'}, physics {s.physics_rate_hz} Hz, mocap "
            f"{s.mocap_rate_hz} Hz on "
            f"{s.mocap_frame_topic if self._mocap_frame else s.mocap_topic_format}, "
            "real_time_factor "
            f"{s.real_time_factor}"
            + (f", lockstep with {', '.join(s.lockstep_participants)}" if s.lockstep else
               ", free-running"))


    # --- timing --------------------------------------------------------------------------
    def _anchor(self) -> None:
        self._wall0 = time.monotonic()
        self._sim0 = self.world.t

    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        s = self.settings
        rtf = s.real_time_factor
        if s.lockstep:
            # paces the steps (rtf > 0); otherwise a watchdog (acks and commands drive the
            # stepping): 0.1 s, it only starts the stepping after the settle time and
            # re-polls answers an executor missed (at 0.02 s it was ~40 of the ~320 wake-ups
            # per simulated s of Task 1, issue 10)
            period = 0.1 if rtf == 0 else max(1e-4, min(0.02, 1.0 / (s.physics_rate_hz * rtf)))
            self._timer = self.create_timer(period, self._on_lockstep_timer, clock=self._steady)
            return
        period = 0.0 if rtf == 0 else max(1e-4, min(0.02, 1.0 / (s.physics_rate_hz * rtf)))
        self._timer = self.create_timer(period, self._tick, clock=self._steady)

    # --- lockstep ------------------------------------------------------------------------
    def _init_lockstep(self) -> None:
        s = self.settings
        names = [str(n) for n in s.lockstep_participants]
        self._sched = LockstepSchedule(names)
        self._turn_pubs = {n: self.create_publisher(
            LockstepTurn, lockstep.turn_topic(n), lockstep.TURN_QOS,
            event_callbacks=lockstep.NO_EVENTS_PUB) for n in names}
        # turns and answers as CDR bytes (ros/wire.py), not Python messages
        self._ack_sub = self.create_subscription(LockstepAck, lockstep.TOPIC_ACK,
                                                 self._on_ack, lockstep.ACK_SUB_QOS, raw=True,
                                                 event_callbacks=lockstep.NO_EVENTS_SUB)
        # participants in this process answer by a call (lockstep.register_local)
        lockstep.register_local(self, self._ack_sub.topic_name, self)
        self._advancing = False   # inside _advance: an answer by a call goes on there
        self._last_poll = self._last_stray = 0.0
        # the connections published at start-up (before the schedule existed) count too:
        # every participant receives them (transient local)
        self._sched.count_sent(self._conn_pub.topic_name)
        self._awaiting: tuple[str, int] | None = None
        #: a chained turn: the participant the awaited one hands its turn to (its answer
        #: then comes with the awaited one's in it)
        self._chain_next: str | None = None
        self._awaiting_since = 0.0
        self._answer_warned = 0   # warnings (and repeated turns) of the awaited answer
        #: the awaited turn held on purpose (``LockstepAck.holding``): by whom (the awaited
        #: participant, or the one it handed the turn on to), whether a report came since
        #: the last repeated turn, and whether the hold was said (once per hold)
        self._holder: str | None = None
        self._hold_reported = False
        self._hold_said = False
        #: per participant, the stamp of the last answer handled [ns] (a repeated one is
        #: dropped: it would set the participant's next due time back)
        self._answered: dict[str, int] = {}
        self._hello_at: float | None = None
        self._started = False
        self._cmd_wait: CountWait | None = None   # a step waiting for announced commands
        # one-shot "go on after servicing the other callbacks": a guard condition; under
        # the EventsExecutor (no guard conditions, mishandles a cancelled timer) a timer
        # made on demand (making and destroying an entity costs the other executors a new
        # wait set)
        self._kick: Timer | None = None
        self._kick_gc = (None if os.environ.get("SMORES_EXECUTOR") == "events"
                         else self.create_guard_condition(self._on_kick))

    def _on_ack(self, raw: bytes) -> None:
        try:
            msg = read_ack(raw)
            inner = read_ack(msg.chained) if msg.chained else None
        except ValueError as exc:
            self.get_logger().error(f"lockstep: an answer ignored: {exc}")
            return
        t_ns = msg.stamp_ns
        if msg.holding:   # no answer: the turn is held on purpose
            self._on_holding(msg.node, t_ns)
            return
        if inner is not None and self._fresh(inner):
            # a chained turn's answer: the answer of the participant that handed the turn
            # over first, then the next turn as if given now (the schedule goes through the
            # states of the unchained turns)
            self._handle_ack(inner)
            if (self._awaiting == (inner.node, inner.stamp_ns) and inner.stamp_ns == t_ns
                    and self._chain_next == msg.node):
                got = self._sched.next_turn()
                if got != msg.node:   # cannot happen: Chain.stop kept the order
                    self.get_logger().error(
                        f"lockstep: chained turn of {msg.node} but {got} was next")
                self._awaiting, self._chain_next = (msg.node, t_ns), None
        if not self._fresh(msg):
            return   # an answer handled already (a repeated turn answered twice)
        if (not msg.hello and self._chain_next is not None
                and self._awaiting == (msg.node, t_ns)):
            self._chain_next = None   # answered itself (it woke someone in between)
        self._handle_ack(msg)
        # a hello is no answer (its stamp 0 was taken for the answer to a turn at t = 0)
        if (not msg.hello and self._awaiting == (msg.node, t_ns)
                and self._chain_next is None):
            if self._hold_said:
                self.get_logger().info(
                    f"lockstep: {self._holder} released the simulation at "
                    f"t={t_ns * 1e-9:.3f} s after "
                    f"{time.monotonic() - self._awaiting_since:.0f} s; stepping on")
            self._awaiting = None
            if not self._advancing:   # else the turn was answered within _give_turn
                self._advance()

    def _on_holding(self, node: str, t_ns: int) -> None:
        """``node`` reports that it holds its turn at ``t_ns`` on purpose
        (``LockstepParticipant._report_hold``): not its answer (nothing is handled, nothing
        steps). For the awaited turn (``node`` the awaited participant, or the one it
        handed the turn on to in a chained turn), say so once per hold, as info; while the
        reports come, :meth:`_check_answer_wait` gives the turn again without a warning.
        Another one is a late copy: dropped."""
        if self._awaiting is None or self._awaiting[1] != t_ns or \
                node not in (self._awaiting[0], self._chain_next):
            return
        if node != self._holder:   # (a chained turn: the next one holds it in its turn)
            self._holder, self._hold_said = node, False
        self._hold_reported = True
        if not self._hold_said:
            self._hold_said = True
            self.get_logger().info(
                f"lockstep: {node} holds the simulation at t={t_ns * 1e-9:.3f} s (its turn "
                "is held on purpose, e.g. a goal being prepared or awaiting approval)")

    def _fresh(self, msg) -> bool:
        """``msg`` (a hello, or an answer to a turn later than the last one handled of its
        participant) is to be handled; False for an answer handled already (a participant
        answers a repeated turn again: :meth:`_check_answer_wait`)."""
        if msg.hello:
            return True
        last = self._answered.get(msg.node)
        if last is not None and msg.stamp_ns <= last:
            return False
        self._answered[msg.node] = msg.stamp_ns
        return True

    def _handle_ack(self, msg) -> None:
        self._sched.on_ack(msg.node, msg.hello, msg.next_turn_s,
                           dict(zip(msg.topics, msg.counts)), msg.subscribed or None, msg.wake,
                           msg.quiet)
        cmd_subs = self._cmd_subs
        self._cmd_due.update(t for t in msg.topics if t in cmd_subs)

    def _commands_complete(self) -> bool:
        """Every command that the answers announced has been taken (and queued for the next
        step). The command subscriptions are parked: their messages are taken here."""
        if not self._cmd_due:
            return True
        sent, recv = self._sched.sent, self._cmd_received
        short = False
        for t in self._cmd_due:
            n = sent.get(t, 0)
            if recv[t] < n:
                sub, kind, i = self._cmd_subs[t]
                executor.take_all(sub, functools.partial(self._queue_command, kind, i))
                short = short or recv[t] < n
        if not short:
            self._cmd_due.clear()
            self._cmd_wait = None
            for sub in self._cmd_unparked:
                executor.park(sub)
            self._cmd_unparked = []
            return True
        now = time.monotonic()
        wait = self._cmd_wait
        if wait is None:
            wait = self._cmd_wait = CountWait({t: sent.get(t, 0) for t in self._cmd_due},
                                              now, self.settings.lockstep_count_timeout_s)
        # a command topic whose publisher is not matched yet (the docking controller makes
        # a module's magnet, joint and helper publishers at their first command): no bound
        wait.unmatched(now, [t for t in wait.missing(recv)
                             if self._cmd_subs[t][0].get_publisher_count() == 0])
        if not wait.expired(now):
            # not arrived yet: their arrival goes on (_on_command); a warning every
            # WAIT_WARNING_S says what the step waits for
            for t in wait.missing(recv):
                sub = self._cmd_subs[t][0]
                if executor.is_parked(sub):
                    executor.park(sub, False)
                    self._cmd_unparked.append(sub)
            text = wait.warning(now, recv, self._cmd_senders)
            if text is not None:
                self.get_logger().warning(f"lockstep: the step after t={self.world.t:.3f} s "
                                          f"is {text} (commands announced in the answers)")
            return False
        self.get_logger().warning(
            f"lockstep: stepping at t={self.world.t:.3f} s without the commands announced "
            f"but not received after {wait.describe(now, recv, self._cmd_senders)}; the run "
            "is no longer deterministic")
        for t, (_, n) in wait.missing(recv).items():
            recv[t] = n
        self._cmd_due.clear()
        self._cmd_wait = None
        for sub in self._cmd_unparked:
            executor.park(sub)
        self._cmd_unparked = []
        return True

    def _cmd_senders(self, topic: str) -> str:
        """Whether the command subscription of ``topic`` has matched its publisher (for the
        warnings of a wait for commands)."""
        return f"matched publishers: {self._cmd_subs[topic][0].get_publisher_count()}"

    def _graph_nodes(self, topic: str, publishers: bool) -> str:
        """The nodes of the ROS graph with a publisher (else a subscription) on ``topic``."""
        try:
            infos = (self.get_publishers_info_by_topic(topic) if publishers
                     else self.get_subscriptions_info_by_topic(topic))
        except Exception:  # noqa: BLE001 - a diagnostic only
            return "?"
        return ", ".join(sorted({i.node_name for i in infos})) or "none"

    def _check_answer_wait(self, now: float) -> None:
        """The awaited answer is late: every ``WAIT_WARNING_S`` of wall time, say whose
        answer to which turn the simulation waits for and whether the protocol's endpoints
        have matched (a turn topic without the participant's subscription, an answer topic
        without its publisher: endpoint discovery has not finished), and give the turn
        again (unchained). A turn or an answer lost (e.g. a reader's one-deep history
        overwritten) is then recovered: a participant that has the turn reports that it
        holds it, one that answered it already answers again
        (``LockstepParticipant._answer_again``), also when it had handed the answer on in a
        chained turn that did not arrive; a repeated answer is dropped (:meth:`_fresh`). It
        never goes on without the answer: a participant's turn may take long (a held turn
        waits for a planning node).

        A turn held on purpose is not late: while its holder reports the hold
        (``LockstepAck.holding``, :meth:`_on_holding`: before the first warning, then to
        each repeated turn) the turn is given again to the holder without a warning (a
        lost answer after the hold is still recovered); when a repeated turn gets no such
        report, the warnings come again."""
        assert self._awaiting is not None
        waited = now - self._awaiting_since
        k = int(waited // WAIT_WARNING_S)
        if k <= self._answer_warned:
            return
        self._answer_warned = k
        name, t_ns = self._awaiting
        holder = self._holder if self._hold_reported else None
        self._hold_reported = False   # the repeated turn below asks again
        if holder is not None:
            self._repeat_turn(holder, t_ns)
            return
        self._hold_said = False       # a hold reported later is said again
        turns = self._turn_pubs[name].topic_name
        ack = self._ack_sub.topic_name
        text = (f"lockstep: waiting {waited:.0f} s for {name}'s answer to its turn at "
                f"t={t_ns * 1e-9:.3f} s")
        if self._chain_next is not None:
            nxt = self.resolve_topic_name(lockstep.turn_topic(self._chain_next))
            text += (f" (to be handed on with {self._chain_next}'s turn; {nxt} has "
                     f"publishers {self._graph_nodes(nxt, True)})")
        text += (f"; {turns}: {self._turn_pubs[name].get_subscription_count()} subscription(s)"
                 f" matched, subscribed in the graph: {self._graph_nodes(turns, False)}; "
                 f"{ack}: {self._ack_sub.get_publisher_count()} publisher(s) matched, "
                 f"in the graph: {self._graph_nodes(ack, True)}; giving the turn again")
        self.get_logger().warning(text)
        self._repeat_turn(name, t_ns)

    def _repeat_turn(self, name: str, t_ns: int) -> None:
        """Give ``name`` its turn at ``t_ns`` again (unchained; see
        :meth:`_check_answer_wait`)."""
        expected = self._sched.expected(name)
        sec, nsec = divmod(t_ns, 1_000_000_000)
        raw = write_turn(sec, nsec, tuple(expected), list(expected.values()))
        local = lockstep.local_endpoint(self, self._turn_pubs[name].topic_name)
        if local is not None:
            local._on_turn(raw)
        else:
            self._turn_pubs[name].publish(raw)

    def _give_turn(self, name: str) -> None:
        sched = self._sched
        expected = sched.expected(name)
        t_ns = int(round(self.world.t * 1e9))                   # as _set_stamp
        sec, nsec = divmod(t_ns, 1_000_000_000)
        self._awaiting = (name, t_ns)
        self._awaiting_since = time.monotonic()
        self._answer_warned = 0
        self._holder, self._hold_reported, self._hold_said = None, False, False
        chain = sched.chain(name) if self.settings.lockstep_chain_turns else None
        if chain is None:
            self._chain_next = None
            raw = write_turn(sec, nsec, tuple(expected), list(expected.values()))
        else:   # it hands the next one its turn (issue 10)
            self._chain_next = chain.next
            raw = write_turn(sec, nsec, tuple(expected), list(expected.values()), chain.next,
                             chain.topics, chain.counts, chain.stop)
        pub = self._turn_pubs[name]
        local = lockstep.local_endpoint(self, pub.topic_name)
        if local is not None:   # a participant in this process: a call (it may answer
            local._on_turn(raw)  # at once, within this call, or later)
        else:
            pub.publish(raw)

    def _advance(self) -> None:
        """Lockstep: give the due turns, step when they are answered (see the module doc)."""
        if self._advancing:
            return
        self._advancing = True
        try:
            self._advance_impl()
        except Exception:
            if not self.context.ok():
                return
            raise
        finally:
            self._advancing = False

    def _advance_impl(self) -> None:
        now = time.monotonic()
        if now - self._last_poll > 1.0 and (self._awaiting is not None or not self._started):
            # answers whose arrival event an executor missed (see lockstep.poll)
            self._last_poll = now
            lockstep.poll(self._ack_sub, self._on_ack)
        if self._awaiting is not None:
            self._check_answer_wait(now)
            return
        s, sched = self.settings, self._sched
        if not self._started:
            if not sched.all_hello():
                self.get_logger().info(
                    f"lockstep: waiting for {', '.join(sched.missing())}",
                    throttle_duration_sec=10.0)
                return
            if self._hello_at is None:
                self._hello_at = now
            if now - self._hello_at < s.lockstep_settle_s:
                return
            self._started = True
            self.get_logger().info("lockstep: every participant is there; stepping")
            self._anchor()
        dt = 1.0 / s.physics_rate_hz
        rtf = s.real_time_factor
        while True:
            name = sched.next_turn()
            if name is not None:
                self._give_turn(name)
                if self._awaiting is not None:   # answered later (its arrival goes on)
                    return
                continue   # answered within the call (a participant in this process)
            if not self._commands_complete():
                return
            if rtf > 0:
                wall = time.monotonic()
                due = self._wall0 + (self.world.t + dt - self._sim0) / rtf
                if wall < due:
                    return
                if wall - due > 1.0:  # fell behind the bound: do not catch up
                    self._anchor()
            self._apply_commands()
            self.step_once(dt)
            sched.start_step(self.world.t)
            if time.monotonic() - now > s.max_tick_wall_s:
                if self._kick_gc is not None:  # service the other callbacks, then go on
                    self._kick_gc.trigger()
                elif self._kick is None:
                    self._kick = self.create_timer(0.0, self._on_kick, clock=self._steady)
                return

    def _on_lockstep_timer(self) -> None:
        """Lockstep's wall-clock timer: commands from outside the lockstep (not announced in
        an answer; their step depends on when they arrive, as without lockstep) are taken
        here every ``STRAY_COMMAND_PERIOD_S``, as the parked command subscriptions give no
        callback; then go on."""
        now = time.monotonic()
        if now - self._last_stray >= STRAY_COMMAND_PERIOD_S:
            self._last_stray = now
            for topic, (sub, kind, i) in self._cmd_subs.items():
                if topic not in self._cmd_due and executor.is_parked(sub):
                    executor.take_all(sub, functools.partial(self._queue_command, kind, i))
        self._advance()

    def _on_kick(self) -> None:
        if self._kick is not None:
            self.destroy_timer(self._kick)
            self._kick = None
        self._advance()

    def _on_command(self, kind: int, i: int, msg) -> None:
        if self.settings.lockstep:
            self._queue_command(kind, i, msg)
            if self._awaiting is None and self._started:
                self._advance()
            return
        self._cmd_received[self._cmd_topics[i][kind]] += 1
        self._cmd_handlers[kind](i, msg)

    def _queue_command(self, kind: int, i: int, msg) -> None:
        """Lockstep: count a command and queue it for the next step (a CmdVelArray: one
        cmd_vel per entry, in its order)."""
        queue = self._cmd_queue
        if kind == BATCH:
            self._cmd_received[self._batch_topic] += 1
            try:
                entries = read_cmd_vel_array(msg)
            except ValueError as exc:
                self.get_logger().warning(f"{names.CMD_VEL_BATCH} ignored: {exc}",
                                          throttle_duration_sec=1.0)
                return
            index = self._index
            for m, v, w in entries:
                j = index.get(m)
                if j is None:
                    self.get_logger().warning(f"{names.CMD_VEL_BATCH}: unknown module {m!r}",
                                              throttle_duration_sec=1.0)
                    continue
                queue.append((0, j, len(queue), (v, w)))
            return
        self._cmd_received[self._cmd_topics[i][kind]] += 1
        queue.append((kind, i, len(queue), msg))

    def _apply_commands(self) -> None:
        if not self._cmd_queue:
            return
        queue, self._cmd_queue = sorted(self._cmd_queue, key=lambda c: c[:3]), []
        for kind, i, _, msg in queue:
            self._cmd_handlers[kind](i, msg)

    def _on_trace(self, _req, resp):
        waiting = ""
        if self.settings.lockstep and self._awaiting is not None:
            waiting = self._awaiting[0]
            if self._chain_next is not None:   # or the one it handed its turn to
                waiting += f" > {self._chain_next}"
        resp.success = True
        resp.message = json.dumps({"sha256": self._trace.copy().hexdigest(),
                                   "steps": self.steps, "t": round(self.world.t, 9),
                                   "waiting_for": waiting,
                                   "waiting_s": round(time.monotonic() - self._awaiting_since, 3)
                                   if waiting else 0.0})
        return resp

    def _on_settings_change(self) -> None:
        self._anchor()
        self._make_timer()

    def _tick(self) -> None:
        try:
            self._tick_impl()
        except Exception:
            if not self.context.ok():  # shutting down (SIGTERM while stepping)
                return
            raise

    def _tick_impl(self) -> None:
        s = self.settings
        dt = 1.0 / s.physics_rate_hz
        start = time.monotonic()
        budget = s.max_tick_wall_s
        if s.real_time_factor == 0:
            # spend at least 80 % of the wall time stepping: the executor's round trip
            # (wait-set rebuild, callbacks) grows with the number of entities
            if self._tick_end is not None:
                budget = max(budget, 4.0 * (start - self._tick_end))
            budget = min(budget, 0.1)
            while True:
                self.step_once(dt)
                if time.monotonic() - start >= budget:
                    break
            self._tick_end = time.monotonic()
            return
        due = self._sim0 + (start - self._wall0) * s.real_time_factor
        while self.world.t + dt <= due + 1e-12:
            self.step_once(dt)
            if time.monotonic() - start >= budget:
                break
        if due - self.world.t > 1.0:  # cannot keep up: do not try to catch up forever
            self.get_logger().warning(
                f"real_time_factor {s.real_time_factor} not reached; running slower",
                throttle_duration_sec=5.0)
            self._anchor()

    def on_shutdown(self) -> None:
        """Log how far the simulation got (called by ``run_node``)."""
        wall = time.monotonic() - self._wall_start
        self.get_logger().info(
            f"stopped at t={self.world.t:.2f} s simulated after {self.steps} steps "
            f"in {wall:.2f} s wall (x{self.world.t / max(wall, 1e-9):.1f})")

    # --- one physics step + publishing -----------------------------------------------------
    def step_once(self, dt: float) -> None:
        """Advance the world by ``dt`` [s] and publish what is due."""
        world = self.world
        t = world.t
        if self._expiry_stale:   # once per step, not per command (issue 10)
            self._update_expiry()
        if t >= self._next_expiry - 1e-9:
            self._expire_commands(t)
        events = world.step(dt)
        self.steps += 1
        t = world.t
        trace = self._trace
        trace.update(struct.pack("<q", self.steps))
        if self._step_cmds:
            cmds = b"".join(self._step_cmds)
            trace.update(cmds)
            self._step_cmds.clear()
        else:
            cmds = b""
        poses = world.pose_array().tobytes()
        trace.update(poses)
        if self._trace_dump is not None:
            self._trace_dump.write(f"{self.steps} {cmds.hex()} {poses.hex()}\n")
        if events:
            self._handle_events(events)
        s = self.settings
        if s.publish_clock and (not s.lockstep or t >= self._next_clock - 1e-9):
            if s.lockstep:
                self._next_clock = _next_due(self._next_clock, s.lockstep_clock_rate_hz, t)
            # nobody listening (the fake stack's nodes take their time from the turns and
            # drop /clock, issue 10): no message to convert and write (volatile: a later
            # subscriber would not get this one either)
            if self._clock_pub.get_subscription_count() > 0:
                _set_stamp(self._clock_msg.clock, t)
                self._clock_pub.publish(self._clock_msg)
        if t >= self._next_mocap - 1e-9:
            self._next_mocap = _next_due(self._next_mocap, s.mocap_rate_hz, t)
            self._sample_mocap(t)
        if self._latency_queue:
            self._flush_mocap(t)
        if t >= self._next_gt - 1e-9:
            self._next_gt = _next_due(self._next_gt, s.ground_truth_rate_hz, t)
            self._publish_ground_truth(t)
        if t >= self._next_joint - 1e-9:
            self._next_joint = _next_due(self._next_joint, s.joint_state_rate_hz, t)
            self._publish_joint_states(t)

    def _expire_commands(self, t: float) -> None:
        timeout = self.settings.cmd_vel_timeout_s
        expired = self._cmd_active & (t - self._cmd_time >= timeout - 1e-9)
        for i in np.flatnonzero(expired):
            self.world.set_cmd_vel(self.ids[i], 0.0, 0.0)
            self._cmd_active[i] = False
        self._update_expiry()

    def _update_expiry(self) -> None:
        self._expiry_stale = False
        if self._cmd_active.any():
            self._next_expiry = float(self._cmd_time[self._cmd_active].min()
                                      + self.settings.cmd_vel_timeout_s)
        else:
            self._next_expiry = math.inf

    def _sample_mocap(self, t: float) -> None:
        s = self.settings
        poses = self.world.pose_array()
        n = len(poses)
        z = np.full(n, 0.5 * self.sim_params.module_width)
        if s.mocap_noise_std_m > 0:
            poses[:, :2] += self._rng.normal(0.0, s.mocap_noise_std_m, (n, 2))
            z += self._rng.normal(0.0, s.mocap_noise_std_m, n)
        if s.mocap_noise_std_rad > 0:
            poses[:, 2] += self._rng.normal(0.0, s.mocap_noise_std_rad, n)
        visible = (self._rng.random(n) >= s.dropout_probability
                   if s.dropout_probability > 0 else np.ones(n, dtype=bool))
        self.mocap_samples += 1
        self.mocap_published += visible
        sample = (t + s.latency_s, t, poses, z, visible)
        if s.latency_s > 0:
            self._latency_queue.append(sample)
        else:
            self._publish_mocap(*sample[1:])

    def _flush_mocap(self, t: float) -> None:
        q = self._latency_queue
        while q and q[0][0] <= t + 1e-9:
            self._publish_mocap(*q.popleft()[1:])

    def _publish_mocap(self, stamp_t: float, poses: np.ndarray, z: np.ndarray,
                       visible: np.ndarray) -> None:
        sec, nsec = divmod(int(round(stamp_t * 1e9)), 1_000_000_000)   # as _set_stamp
        half = 0.5 * poses[:, 2]
        qz, qw = np.sin(half).tolist(), np.cos(half).tolist()
        zs = z.tolist()
        shown = np.flatnonzero(visible).tolist()
        if self._frame_pub is not None:
            # one frame: the bodies seen, each with the numbers of its PoseStamped (x, y,
            # yaw: the planar pose of the same sample)
            rows_xyy, ids = poses.tolist(), self.ids
            rows = []
            for i in shown:
                x, y, yaw = rows_xyy[i]
                rows.append((ids[i], x, y, yaw, (x, y, zs[i]), (qw[i], 0.0, 0.0, qz[i]), True,
                             sec, nsec))
            self._frame_pub.publish(write_module_states(sec, nsec, self.settings.mocap_frame_id,
                                                        rows))
            if self.settings.lockstep:
                self._sched.count_sent(self._frame_pub.topic_name)
            return
        xs, ys = poses[:, 0].tolist(), poses[:, 1].tolist()
        encode = self._mocap_writer.encode   # the serialised PoseStamped (ros/wire.py)
        pubs = self._mocap_pubs
        for i in shown:
            pubs[i].publish(encode(sec, nsec, xs[i], ys[i], zs[i], 0.0, 0.0, qz[i], qw[i]))
        if self.settings.lockstep:
            count, topics = self._sched.count_sent, self._mocap_topics
            for i in shown:
                count(topics[i])

    def _publish_ground_truth(self, t: float) -> None:
        sec, nsec = divmod(int(round(t * 1e9)), 1_000_000_000)   # as _set_stamp
        z = 0.5 * self.sim_params.module_width
        rows = [(m, x, y, yaw, (x, y, z), (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw)),
                 True, sec, nsec)
                for m, (x, y, yaw) in zip(self.ids, self.world.pose_array().tolist())]
        # written as bytes (ros/wire.py), not through a Python message
        self._gt_pub.publish(write_module_states(sec, nsec, common.WORLD_FRAME, rows))

    def _publish_joint_states(self, t: float) -> None:
        msg = self._joint_msg
        _set_stamp(msg.header.stamp, t)
        position = msg.position                              # array('d') of length 2
        world = self.world
        for pub, m in zip(self._joint_pubs, self.ids):
            # nobody listening (the fake stack does not): no message to build and write
            # (volatile: a later subscriber would not get this one either)
            if pub.get_subscription_count() == 0:
                continue
            position[0], position[1] = world.joint_states(m)
            pub.publish(msg)

    def _handle_events(self, events) -> None:
        changed = False
        for e in events:
            if e.kind == "collision":
                msg = CollisionEvent()
                msg.header.stamp = common.sec_to_time(e.t)
                msg.header.frame_id = common.WORLD_FRAME
                msg.module_a, msg.module_b = e.modules
                msg.penetration_m = float(e.penetration_m or 0.0)
                self._coll_pub.publish(msg)
                if self.settings.lockstep:
                    self._sched.count_sent(self._coll_pub.topic_name)
                self.get_logger().warning(
                    f"collision at t={e.t:.3f} s: {e.modules[0]} and {e.modules[1]} "
                    f"(overlap {1000 * msg.penetration_m:.2f} mm); motion blocked")
            else:
                changed = True
                self.get_logger().info(
                    f"{e.kind} at t={e.t:.3f} s: {e.modules[0]}.{e.faces[0].value} - "
                    f"{e.modules[1]}.{e.faces[1].value}")
        if changed:
            self._publish_connections()

    def _publish_connections(self) -> None:
        self._conn_pub.publish(connections_to_msg(
            (((c.module_a, c.face_a), (c.module_b, c.face_b))
             for c in sorted(self.world.connections())), common.sec_to_time(self.world.t)))
        if self.settings.lockstep and hasattr(self, "_sched"):
            self._sched.count_sent(self._conn_pub.topic_name)

    # --- callbacks -----------------------------------------------------------------------
    def _on_cmd_vel(self, i: int, raw: bytes | tuple[float, float]) -> None:
        try:
            v, w = raw if isinstance(raw, tuple) else read_twist(raw)   # tuple: a batch's
            self.world.set_cmd_vel(self.ids[i], v, w)
        except ValueError as exc:  # SimError is a ValueError
            self.get_logger().warning(f"{self.ids[i]}/cmd_vel ignored: {exc}",
                                   throttle_duration_sec=1.0)
            return
        self._step_cmds.append(struct.pack("<Bidd", 0, i, v, w))
        self._cmd_time[i] = self.world.t
        self._cmd_active[i] = v != 0.0 or w != 0.0
        self._expiry_stale = True

    def _on_joints(self, i: int, msg: JointState) -> None:
        m = self.ids[i]
        pan, tilt = self.world.joint_targets(m)  # a joint not named keeps its target
        if msg.name:
            for name, pos in zip(msg.name, msg.position):
                if name == "pan":
                    pan = pos
                elif name == "tilt":
                    tilt = pos
        elif len(msg.position) >= 2:
            pan, tilt = msg.position[0], msg.position[1]
        self._step_cmds.append(struct.pack("<Bidd", 1, i, pan, tilt))
        try:
            self.world.set_joints(m, pan, tilt)
        except SimError as exc:
            self.get_logger().warning(f"{m}/joint_commands ignored: {exc}",
                                   throttle_duration_sec=1.0)

    def _on_magnets(self, i: int, msg: MagnetCommand) -> None:
        self._step_cmds.append(struct.pack("<BiBBBB", 2, i, msg.top, msg.bottom, msg.left,
                                           msg.right))
        self.world.set_magnets(self.ids[i], magnet_msg_to_faces(msg))

    def _on_helper(self, i: int, msg: HelperCommand) -> None:
        m = self.ids[i]
        self._step_cmds.append(struct.pack("<BiBd", 3, i, msg.command, msg.carry_yaw)
                               + msg.module.encode())
        try:
            op = helper_msg_to_op(msg)
            self.world.helper_command(m, op, msg.module, msg.carry_yaw)
        except InputError as exc:  # SimError is an InputError
            self.get_logger().error(f"{m}/helper_command refused: {exc}")
            return
        self.get_logger().info(f"helper {m}: {op.name} {msg.module} "
                               f"carry_yaw={msg.carry_yaw:.3f}")


def main(args: list[str] | None = None) -> int:
    """Entry point: ``python -m smores_assembly.ros.fake_hardware --ros-args ...``."""
    return common.run_node(lambda: FakeHardwareNode(), args)


if __name__ == "__main__":
    sys.exit(main())
