"""``fake_hardware`` node: simulated SMORES-EP modules seen through a simulated mocap.

Thin ROS adapter over :class:`smores_assembly.sim.SimWorld` (the physics is documented
there). Run it as ``python -m smores_assembly.ros.fake_hardware --ros-args -p scenario:=...``.

Time: this node is the time source. It steps the physics on a **wall-clock** (steady) timer
at ``physics_rate_hz`` in simulated time, ``real_time_factor`` times faster than wall time
(``0``: as fast as possible, still servicing callbacks between batches of steps), and
publishes ``/clock`` (when ``publish_clock``) so that the rest of the stack runs with
``use_sim_time``. It refuses ``use_sim_time:=true`` for itself. All stamps are simulated time.

Subscribes (per module ``<id>`` of the scenario):

* ``/<id>/cmd_vel`` (geometry_msgs/Twist): ``linear.x`` [m/s], ``angular.z`` [rad/s]; a
  command older than ``cmd_vel_timeout_s`` (simulated time) is replaced by zero (watchdog).
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
  later; its stamp is the capture time). Sensor QoS.
* ``/<id>/joint_states`` (sensor_msgs/JointState ``pan``, ``tilt``) at ``joint_state_rate_hz``.
* ``/fake_hardware/connections`` (ConnectionArray, latched): on start and on every change.
* ``/fake_hardware/collisions`` (CollisionEvent, reliable) + a warning log per contact start.
* ``/fake_hardware/ground_truth`` (ModuleStateArray, exact poses, all tracked) at
  ``ground_truth_rate_hz``.
* ``/clock`` (rosgraph_msgs/Clock) after every physics step when ``publish_clock``.
"""
from __future__ import annotations

import collections
import math
import sys
import time

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState

from smores_assembly import params
from smores_assembly.errors import InputError, ParamsError
from smores_assembly.msg import (CollisionEvent, ConnectionArray, HelperCommand,
                                 MagnetCommand, ModuleState, ModuleStateArray)
from smores_assembly.ros import common, names
from smores_assembly.ros.convert import (connections_to_msg, helper_msg_to_op,
                                         magnet_msg_to_faces)
from smores_assembly.sim import SimError, SimParams
from smores_assembly.sim.backend import make_world
from smores_assembly.sim.settings import FakeHardwareSettings



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
        if self.get_parameter("use_sim_time").value:
            raise ParamsError("use_sim_time: fake_hardware is the time source (it publishes "
                             "/clock); it must run with use_sim_time:=false")
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
                                    helpers=scen.helpers)
        except SimError as exc:
            raise ParamsError(f"scenario {s.scenario}: {exc}") from exc
        self.ids = self.world.modules()
        self._rng = np.random.default_rng(s.random_seed)
        n = len(self.ids)

        # command watchdog
        self._cmd_time = np.full(n, -math.inf)
        self._cmd_active = np.zeros(n, dtype=bool)
        self._next_expiry = math.inf

        # publishers
        # per-module endpoints without the default QoS-event handlers: each handler is a
        # wait-set entry, and with 50 modules the executor's wait-set rebuild dominated
        pev = PublisherEventCallbacks(use_default_callbacks=False)
        sev = SubscriptionEventCallbacks(use_default_callbacks=False)
        self._mocap_pubs = [self.create_publisher(
            PoseStamped, names.mocap_topic(s.mocap_topic_format, m), common.SENSOR_QOS,
            event_callbacks=pev) for m in self.ids]
        self._joint_pubs = [self.create_publisher(
            JointState, names.module_topic(m, names.JOINT_STATES), 10, event_callbacks=pev)
            for m in self.ids]
        self._conn_pub = self.create_publisher(ConnectionArray, names.CONNECTIONS,
                                               common.LATCHED_QOS)
        self._coll_pub = self.create_publisher(
            CollisionEvent, names.COLLISIONS,
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self._gt_pub = self.create_publisher(ModuleStateArray, names.GROUND_TRUTH, 100)
        self._clock_pub = self.create_publisher(ClockMsg, names.CLOCK, 10)
        # outgoing high-rate messages, built once and refilled before every publish
        # (publish() serialises synchronously, so one object can serve every publisher)
        self._mocap_msg = PoseStamped()
        self._mocap_msg.header.frame_id = s.mocap_frame_id
        self._gt_msg = ModuleStateArray()
        self._gt_msg.header.frame_id = common.WORLD_FRAME
        self._gt_msg.modules = [ModuleState(id=m, tracked=True) for m in self.ids]
        self._joint_msg = JointState(name=["pan", "tilt"], position=[0.0, 0.0])
        self._clock_msg = ClockMsg()

        # subscriptions
        for i, m in enumerate(self.ids):
            self.create_subscription(Twist, names.module_topic(m, names.CMD_VEL),
                                     lambda msg, i=i: self._on_cmd_vel(i, msg),
                                     common.COMMAND_QOS, event_callbacks=sev)
            self.create_subscription(JointState, names.module_topic(m, names.JOINT_COMMANDS),
                                     lambda msg, i=i: self._on_joints(i, msg),
                                     common.COMMAND_QOS, event_callbacks=sev)
            self.create_subscription(MagnetCommand, names.module_topic(m, names.MAGNETS),
                                     lambda msg, i=i: self._on_magnets(i, msg),
                                     common.COMMAND_QOS, event_callbacks=sev)
            self.create_subscription(HelperCommand,
                                     names.module_topic(m, names.HELPER_COMMAND),
                                     lambda msg, i=i: self._on_helper(i, msg),
                                     common.COMMAND_QOS, event_callbacks=sev)

        # schedules (simulated time)
        # next due instants: on the grid k / rate (first at t = 1 / rate)
        self._next_mocap = 1.0 / s.mocap_rate_hz
        self._next_gt = 1.0 / s.ground_truth_rate_hz
        self._next_joint = 1.0 / s.joint_state_rate_hz
        self._latency_queue: collections.deque = collections.deque()
        #: mocap sampling instants so far, and per module the samples not dropped
        self.mocap_samples = 0
        self.mocap_published = np.zeros(n, dtype=int)
        self.steps = 0
        self._publish_connections()
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer = None
        self._tick_end: float | None = None
        self._wall_start = time.monotonic()
        self._anchor()
        self._make_timer()
        self.get_logger().info(
            f"fake hardware: {n} modules ({', '.join(self.ids)}), helpers "
            f"{sorted(self.world.helpers) or '[]'}, physics {s.physics_rate_hz} Hz, mocap "
            f"{s.mocap_rate_hz} Hz on {s.mocap_topic_format}, real_time_factor "
            f"{s.real_time_factor}")


    # --- timing --------------------------------------------------------------------------
    def _anchor(self) -> None:
        self._wall0 = time.monotonic()
        self._sim0 = self.world.t

    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        s = self.settings
        rtf = s.real_time_factor
        period = 0.0 if rtf == 0 else max(1e-4, min(0.02, 1.0 / (s.physics_rate_hz * rtf)))
        self._timer = self.create_timer(period, self._tick, clock=self._steady)

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
        if t >= self._next_expiry - 1e-9:
            self._expire_commands(t)
        events = world.step(dt)
        self.steps += 1
        t = world.t
        if events:
            self._handle_events(events)
        s = self.settings
        if s.publish_clock:
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
        msg = self._mocap_msg
        _set_stamp(msg.header.stamp, stamp_t)
        half = 0.5 * poses[:, 2]
        qz, qw = np.sin(half).tolist(), np.cos(half).tolist()
        xs, ys, zs = poses[:, 0].tolist(), poses[:, 1].tolist(), z.tolist()
        pos, ori = msg.pose.position, msg.pose.orientation   # x, y of ori stay 0
        pubs = self._mocap_pubs
        for i in np.flatnonzero(visible).tolist():
            pos.x, pos.y, pos.z = xs[i], ys[i], zs[i]
            ori.z, ori.w = qz[i], qw[i]
            pubs[i].publish(msg)

    def _publish_ground_truth(self, t: float) -> None:
        msg = self._gt_msg
        stamp = msg.header.stamp
        _set_stamp(stamp, t)
        sec, nsec = stamp.sec, stamp.nanosec
        z = 0.5 * self.sim_params.module_width
        for st, (x, y, yaw) in zip(msg.modules, self.world.pose_array().tolist()):
            st.x, st.y, st.yaw = x, y, yaw
            pos, ori = st.pose.position, st.pose.orientation
            pos.x, pos.y, pos.z = x, y, z
            ori.z, ori.w = math.sin(0.5 * yaw), math.cos(0.5 * yaw)
            st.stamp.sec, st.stamp.nanosec = sec, nsec
        self._gt_pub.publish(msg)

    def _publish_joint_states(self, t: float) -> None:
        msg = self._joint_msg
        _set_stamp(msg.header.stamp, t)
        position = msg.position                              # array('d') of length 2
        world = self.world
        for pub, m in zip(self._joint_pubs, self.ids):
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

    # --- callbacks -----------------------------------------------------------------------
    def _on_cmd_vel(self, i: int, msg: Twist) -> None:
        try:
            self.world.set_cmd_vel(self.ids[i], msg.linear.x, msg.angular.z)
        except SimError as exc:
            self.get_logger().warning(f"{self.ids[i]}/cmd_vel ignored: {exc}",
                                   throttle_duration_sec=1.0)
            return
        self._cmd_time[i] = self.world.t
        self._cmd_active[i] = msg.linear.x != 0.0 or msg.angular.z != 0.0
        self._update_expiry()

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
        try:
            self.world.set_joints(m, pan, tilt)
        except SimError as exc:
            self.get_logger().warning(f"{m}/joint_commands ignored: {exc}",
                                   throttle_duration_sec=1.0)

    def _on_magnets(self, i: int, msg: MagnetCommand) -> None:
        self.world.set_magnets(self.ids[i], magnet_msg_to_faces(msg))

    def _on_helper(self, i: int, msg: HelperCommand) -> None:
        m = self.ids[i]
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
