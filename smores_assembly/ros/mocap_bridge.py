"""``mocap_bridge`` node: mocap driver output -> ``/modules/states``.

Thin adapter over :class:`smores_assembly.mocap.MocapFilter` (frames, rejection rules and
staleness are documented there). Run: ``python -m smores_assembly.ros.mocap_bridge
--ros-args -p source:=vicon -p "module_ids:=['m0', 'm1']"``. Names are relative
(:mod:`smores_assembly.ros.names`; shown here as in the root namespace); a driver outside
the node's namespace needs an absolute topic format.

Sources (parameter ``source``):

* ``vicon``: vicon_receiver, ``geometry_msgs/PoseStamped`` per body on
  ``vicon_topic_format`` (default ``vicon/{id}/{id}``);
* ``vrpn``: vrpn_mocap, ``geometry_msgs/PoseStamped`` on ``vrpn_topic_format`` (default
  ``vrpn_mocap/{id}/pose``);
* ``mocap4r2``: ``mocap4r2_msgs/RigidBodies`` on ``mocap4r2_topic`` (bodies matched by
  ``rigid_body_name``). Only available when the ``mocap4r2_msgs`` Python interface is
  installed; otherwise the value is refused at start-up with a clear message;
* ``frame``: the fake hardware's ``mocap_format: frame`` (the fake stack's launch): one
  ``smores_assembly/ModuleStateArray`` per capture frame on ``frame_topic`` (default
  ``fake_hardware/mocap``), each body seen (``tracked``) a sample with its ``stamp``,
  position and quaternion, exactly the numbers of the per-body PoseStamped; one message
  per frame instead of one per body (issue 10: each message between processes costs
  ~0.1 ms of CPU in DDS).

Subscriptions are best effort (matches reliable and best-effort drivers), depth 1 per subject
(the newest sample: a bridge that falls behind the driver skips samples instead of queueing
them; depth 20 in lockstep, where every sample is counted).

Parameters besides those of :class:`BridgeSettings` and
:class:`smores_assembly.mocap.MocapFilterSettings`:

* ``module_ids`` (string array): modules to track; quote them on the command line
  (``"module_ids:=['m0', 'm1']"``). Empty: the modules of the ``scenario`` file.
* ``marker_offsets.<id>`` (double array ``[x, y, z, roll, pitch, yaw]``): per-module
  override of ``marker_offset`` (the module centre's pose in the tracked body's frame),
  e.g. in a params file::

      mocap_bridge:
        ros__parameters:
          marker_offset: [0.0, 0.0, -0.045, 0.0, 0.0, 0.0]
          marker_offsets:
            m3: [0.005, 0.0, -0.045, 0.0, 0.0, 0.1]

Publishes ``/modules/states`` (smores_assembly/ModuleStateArray, reliable, transient local
depth 1 (:data:`common.STATES_PUB_QOS`), frame ``world``) at ``publish_rate_hz`` (node clock:
simulated time with ``use_sim_time``): every module, ``tracked`` false when its last valid
sample is older than ``stale_timeout_s``. With ``lockstep:=true`` the node is a participant
of the fake hardware's lockstep simulation (:mod:`smores_assembly.ros.lockstep`): the
samples of a step are applied at its next turn, its subscriptions are reliable.
Warns (throttled) when a body's sample rate leaves ``[expected_rate_min_hz,
expected_rate_max_hz]`` and when no sample at all arrived for ``no_data_warn_s`` (wall time).
"""
from __future__ import annotations

import functools
import sys
import time

from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from smores_assembly import params
from smores_assembly.errors import ParamsError
from smores_assembly.mocap import (MocapError, MocapFilter, MocapFilterSettings,
                                   RigidTransform)
from smores_assembly.mocap.settings import BridgeSettings
from smores_assembly.msg import ModuleStateArray
from smores_assembly.ros import common, lockstep, names
from smores_assembly.ros.wire import read_mocap_frame, read_pose_stamped, write_module_states
from smores_assembly.scenario import module_id_error

class MocapBridgeNode(Node):
    """The ``mocap_bridge`` node (see the module docstring).

    Raises:
        ParamsError: unknown or unavailable source, no module ids, a bad transform or a
            parameter out of range (message names the parameter and the value).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("mocap_bridge", **common.node_kwargs(kwargs))
        self.lockstep = lockstep.declare(self)
        settings, filter_settings = params.node_settings("mocap_bridge")
        self.settings: BridgeSettings = common.declare_dataclass_params(
            self, settings, on_change=lambda _s: self._apply_transforms())
        self.filter_settings: MocapFilterSettings = common.declare_dataclass_params(
            self, filter_settings)
        ids = common.declare_given(
            self, "module_ids", Parameter.Type.STRING_ARRAY,
            ParameterDescriptor(
                description="modules to track (mocap body names); empty: the scenario's",
                read_only=True)).value or []
        s = self.settings
        if not ids and s.scenario:
            from smores_assembly.scenario import load_scenario  # noqa: PLC0415
            ids = list(load_scenario(s.scenario).modules)
        if not ids:
            raise ParamsError("module_ids: no modules to track (set module_ids or scenario)")
        for m in ids:  # names become topics and parameter names: check before any use
            err = module_id_error(m)
            if err:
                raise ParamsError(f"module_ids: {err}", field="module_ids")
        self.ids = [str(m) for m in ids]
        self._offset_params = {}
        given = set(self.get_parameters_by_prefix("marker_offsets"))
        for m in self.ids:
            p = common.declare_given(
                self, f"marker_offsets.{m}", Parameter.Type.DOUBLE_ARRAY,
                ParameterDescriptor(
                    description=f"T_body_module of {m} as [x, y, z, roll, pitch, yaw] "
                                "(overrides marker_offset)"))
            self._offset_params[m] = p.name
        stray = sorted(f"marker_offsets.{k}" for k in given - set(self.ids))
        if stray:
            raise ParamsError(f"marker_offsets: {stray} name modules that are not tracked "
                             f"(module_ids: {self.ids})")
        try:
            self.filter = MocapFilter(self.ids, self.filter_settings)
        except MocapError as exc:
            raise ParamsError(str(exc)) from exc
        self._apply_transforms()
        self.add_on_set_parameters_callback(self._on_offset_set)
        self.add_post_set_parameters_callback(self._after_set)

        fs = self.filter_settings
        from smores_assembly.mocap import RateMonitor  # noqa: PLC0415
        self.rates = RateMonitor(self.ids, fs.rate_window_s, fs.expected_rate_min_hz,
                                 fs.expected_rate_max_hz)
        self._wall_last_any: float | None = None
        self._clock_handle = self.get_clock().handle
        self._wall_start = time.monotonic()
        self._subscribe(s.source)
        self._pub = self.lockstep.create_publisher(ModuleStateArray, names.STATES,
                                                   common.STATES_PUB_QOS, history=False)
        self._pub_timer = self.lockstep.create_timer(1.0 / s.publish_rate_hz, self._publish)
        self._diag_timer = self.create_timer(
            s.diagnostics_period_s, self._diagnose,
            clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._rate_started = False
        self.get_logger().info(
            f"mocap bridge: source {s.source}, tracking {', '.join(self.ids)}")


    # --- configuration -------------------------------------------------------------------
    def _offset_transform(self, m: str, value) -> RigidTransform:
        return RigidTransform.from_xyzrpy(value, f"marker_offsets.{m}")

    def _apply_transforms(self) -> None:
        s = self.settings
        overrides = {}
        for m, name in getattr(self, "_offset_params", {}).items():
            try:
                v = self.get_parameter(name).value
            except ParameterUninitializedException:
                continue
            if v is not None and len(v) > 0:
                try:
                    overrides[m] = self._offset_transform(m, v)
                except MocapError as exc:
                    raise ParamsError(str(exc)) from exc
        if hasattr(self, "filter"):
            self.filter.set_transforms(RigidTransform.from_xyzrpy(s.mocap_to_world,
                                                                  "mocap_to_world"),
                                       RigidTransform.from_xyzrpy(s.marker_offset,
                                                                  "marker_offset"),
                                       overrides)

    def _on_offset_set(self, params):
        for p in params:
            if p.name.startswith("marker_offsets."):
                try:
                    self._offset_transform(p.name.split(".", 1)[1], p.value)
                except MocapError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _after_set(self, params) -> None:
        if any(p.name.startswith("marker_offsets.") for p in params):
            self._apply_transforms()

    def _subscribe(self, source: str) -> None:
        s = self.settings
        if source in ("vicon", "vrpn"):
            fmt = s.vicon_topic_format if source == "vicon" else s.vrpn_topic_format
            self.topics = [names.mocap_topic(fmt, m) for m in self.ids]
            # free-running: depth 1 per subject, so a bridge that cannot keep up with the
            # driver (100 subjects x 100 Hz) reads each subject's newest sample instead of
            # a backlog (bench/bench_mocap.py: median sample age 19 ms instead of 187 ms, a
            # hidden subject untracked after 0.57 s instead of 2.1 s); lockstep: the turns
            # count every sample, keep the queue
            depth = 20 if self.lockstep.enabled else 1
            qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE)
            ev = SubscriptionEventCallbacks(use_default_callbacks=False)
            # raw: the samples are read from their bytes (smores_assembly.ros.wire), not
            # built into Python messages (the bridge's main cost at 100 Hz per module)
            for m, topic in zip(self.ids, self.topics):
                self.lockstep.create_subscription(
                    PoseStamped, topic, functools.partial(self._on_pose_raw, m), qos,
                    raw=True, event_callbacks=ev)
            return
        if source == "frame":
            # the fake hardware's frames: one message per sample with every body seen
            # (mocap_format frame; counted in lockstep, the newest only otherwise)
            self.topics = [s.frame_topic]
            depth = 20 if self.lockstep.enabled else 1
            qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE)
            self.lockstep.create_subscription(
                ModuleStateArray, s.frame_topic, self._on_frame_raw, qos, raw=True,
                event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))
            return
        try:
            from mocap4r2_msgs.msg import RigidBodies  # noqa: PLC0415
        except ImportError:
            raise ParamsError(
                "source: 'mocap4r2' needs the mocap4r2_msgs Python interface, which is not "
                "installed here (it is not available as a wheel); build mocap4r2_msgs into "
                "this environment or use source 'vicon' or 'vrpn'") from None
        self.topics = [s.mocap4r2_topic]
        self.create_subscription(RigidBodies, s.mocap4r2_topic, self._on_rigid_bodies,
                                 common.SENSOR_QOS)

    # --- samples -------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _offer(self, m: str, header_stamp: float, position, quaternion_wxyz) -> None:
        self._offer_all(((m, header_stamp, position, quaternion_wxyz),))

    def _offer_all(self, samples) -> None:
        """Offer the samples ``(module, header stamp [s], position, quaternion_wxyz)`` of
        one message (a PoseStamped: one; a frame: every body seen), all received now."""
        # the node clock's nanoseconds without an rclpy Time object, read once per message
        # (the same value as get_clock().now(); ~1500 frames of 7 bodies per Task 1 run,
        # issue 10)
        if not samples:
            return
        clock = self._clock_handle
        with clock:
            now = clock.get_now().nanoseconds * 1e-9
        self._wall_last_any = time.monotonic()
        # rates are checked only without lockstep
        record = None if self.lockstep.enabled else self.rates.record
        use_header = self.settings.use_header_stamp
        update = self.filter.update
        for m, header_stamp, position, quaternion_wxyz in samples:
            if record is not None:
                record(m, now)
            stamp = header_stamp if use_header else now
            if stamp <= 0.0:
                stamp = now
            reason = update(m, stamp, now, position, quaternion_wxyz)
            if reason is not None:
                self.get_logger().warning(
                    f"{m}: mocap sample dropped ({reason}); "
                    f"dropped so far: {dict(self.filter.rejected[m])}",
                    throttle_duration_sec=2.0)

    def _on_pose(self, m: str, msg: PoseStamped) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        self._offer(m, common.time_to_sec(msg.header.stamp), (p.x, p.y, p.z),
                    (q.w, q.x, q.y, q.z))

    def _on_pose_raw(self, m: str, raw: bytes) -> None:
        try:
            stamp, position, quaternion_wxyz = read_pose_stamped(raw)
        except ValueError:  # not little-endian CDR (another host's byte order)
            self._on_pose(m, deserialize_message(raw, PoseStamped))
            return
        self._offer(m, stamp, position, quaternion_wxyz)

    def _on_frame_raw(self, raw: bytes) -> None:
        """A mocap frame (source ``frame``): each body seen, in the frame's order, as one
        sample (the numbers of a PoseStamped: the body's stamp, position, quaternion)."""
        try:
            _, bodies = read_mocap_frame(raw)
        except ValueError:  # not little-endian CDR (another host's byte order)
            msg = deserialize_message(raw, ModuleStateArray)
            bodies = [(b.id, common.time_to_sec(b.stamp),
                       (b.pose.position.x, b.pose.position.y, b.pose.position.z),
                       (b.pose.orientation.w, b.pose.orientation.x, b.pose.orientation.y,
                        b.pose.orientation.z)) for b in msg.modules if b.tracked]
        known = self.filter.rejected
        # bodies not tracked here are ignored (as mocap4r2's)
        self._offer_all([b for b in bodies if b[0] in known])

    def _on_rigid_bodies(self, msg) -> None:  # pragma: no cover - needs mocap4r2_msgs
        stamp = common.time_to_sec(msg.header.stamp)
        for body in msg.rigidbodies:
            if body.rigid_body_name in self.filter.rejected:
                p, q = body.pose.position, body.pose.orientation
                self._offer(body.rigid_body_name, stamp, (p.x, p.y, p.z),
                            (q.w, q.x, q.y, q.z))

    # --- output --------------------------------------------------------------------------
    def _publish(self) -> None:
        ns = self.get_clock().now().nanoseconds
        sec, nanosec = divmod(ns, 1_000_000_000)
        # written as bytes (ros/wire.py): rclpy's conversion of the Python message cost
        # more than everything else the bridge does per publish
        rows = [(m, est.x, est.y, est.yaw, est.position, est.quaternion, est.tracked,
                 *divmod(int(round(est.stamp * 1e9)), 1_000_000_000))
                for m, est in zip(self.ids, self.filter.states(ns * 1e-9))]  # ids order
        self._pub.publish(write_module_states(sec, nanosec, common.WORLD_FRAME, rows))

    def _diagnose(self) -> None:
        fs = self.filter_settings
        if self.lockstep.enabled:
            return  # samples come with the turns; the simulation may stand still (held)
        wall = time.monotonic()
        last = self._wall_last_any if self._wall_last_any is not None else self._wall_start
        if wall - last > fs.no_data_warn_s:
            what = "no mocap sample has arrived yet" if self._wall_last_any is None else \
                f"no mocap sample for {wall - last:.1f} s"
            where = ", ".join(self.resolve_topic_name(t) for t in self.topics)
            self.get_logger().warning(f"{what} on {where}", throttle_duration_sec=10.0)
            return
        now = self._now()
        if not self._rate_started:
            # the first window starts with the data, on a running clock: started before the
            # first sample (the stack still starting) or, on use_sim_time, before the first
            # /clock (time 0), it counted samples that could not have come yet and warned
            # of a low rate once, just after the start
            if self._wall_last_any is None or now <= 0.0:
                return
            self.rates.start(now)
            self._rate_started = True
            return
        self.rates.window_s = fs.rate_window_s
        self.rates.lo, self.rates.hi = fs.expected_rate_min_hz, fs.expected_rate_max_hz
        bad = self.rates.out_of_band(now)
        if bad:
            txt = ", ".join(f"{m}: {r:.1f} Hz" for m, r in sorted(bad.items()))
            self.get_logger().warning(
                f"mocap rate outside [{fs.expected_rate_min_hz}, {fs.expected_rate_max_hz}] Hz"
                f": {txt}", throttle_duration_sec=10.0)


def main(args: list[str] | None = None) -> int:
    """Entry point: ``python -m smores_assembly.ros.mocap_bridge --ros-args ...``."""
    return common.run_node(lambda: MocapBridgeNode(), args)


if __name__ == "__main__":
    sys.exit(main())
