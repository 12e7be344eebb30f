"""Shared plumbing of the rclpy nodes: QoS profiles, topic names, conversions, parameters.

Every node of ``smores_assembly.ros`` is a thin adapter over a pure-Python core. What they
share lives here, once:

* QoS: :data:`LATCHED_QOS` (transient local, reliable, depth 1) for the target, root, plan,
  connections and active stage; :data:`SENSOR_QOS` (best effort, volatile) for poses.
* Topic names: :func:`module_topic` (``/<id>/cmd_vel`` …) and the constants below.
* :func:`declare_dataclass_params`: turns a core ``@dataclass`` of settings (fields with
  made with :func:`smores_assembly.params.param_field`) into ROS parameters with
  descriptors and ranges, validated on set, and keeps the dataclass instance up to date.
* :func:`run_node`: spin a node with a single-threaded executor and shut down cleanly on
  Ctrl-C / SIGTERM.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, Quaternion
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
import transforms3d.euler

from smores_assembly.geometry import Pose2D, wrap_angle
from smores_assembly.params import param_field  # noqa: F401  (re-exported)

#: Latched QoS for state that late joiners must receive (target, root, plan, connections).
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Sensor QoS for high-rate pose streams (mocap, module states).
SENSOR_QOS = qos_profile_sensor_data
#: Reliable, volatile QoS for commands (cmd_vel, magnets, joints, helper commands).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)

WORLD_FRAME = "world"
TOPIC_STATES = "/modules/states"
TOPIC_TARGET = "/assembly/target"
TOPIC_ROOT = "/assembly/root"
TOPIC_PLAN = "/assembly/plan"
TOPIC_ACTIVE_STAGE = "/assembly/active_stage"
TOPIC_DOCKING_STATUS = "/assembly/docking_status"
TOPIC_CONNECTIONS = "/fake_hardware/connections"
TOPIC_COLLISIONS = "/fake_hardware/collisions"
TOPIC_MARKERS = "/assembly/markers"
TOPIC_MODULE_MARKERS = "/assembly/markers/modules"


def module_topic(module_id: str, name: str) -> str:
    """Per-module topic, e.g. ``module_topic('m3', 'cmd_vel') == '/m3/cmd_vel'``."""
    return f"/{module_id}/{name}"


# --- conversions ---------------------------------------------------------------------------

def yaw_to_quaternion(yaw: float) -> Quaternion:
    """Quaternion (x, y, z, w) of a rotation by ``yaw`` [rad] about +z."""
    w, x, y, z = transforms3d.euler.euler2quat(0.0, 0.0, yaw, axes="sxyz")
    return Quaternion(x=x, y=y, z=z, w=w)


def quaternion_to_yaw(q: Quaternion) -> float:
    """Yaw [rad] (rotation about +z, static xyz convention) of a geometry_msgs Quaternion."""
    _, _, yaw = transforms3d.euler.quat2euler((q.w, q.x, q.y, q.z), axes="sxyz")
    return wrap_angle(yaw)


def pose2d_to_pose(p: Pose2D, z: float = 0.0) -> Pose:
    """geometry_msgs/Pose of a planar pose (z given, roll = pitch = 0)."""
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = float(p.x), float(p.y), float(z)
    msg.orientation = yaw_to_quaternion(p.yaw)
    return msg


def pose_to_pose2d(pose: Pose) -> Pose2D:
    """Planar projection (x, y, yaw) of a geometry_msgs/Pose."""
    return Pose2D(pose.position.x, pose.position.y, quaternion_to_yaw(pose.orientation))


def time_to_sec(t: Time) -> float:
    """builtin_interfaces/Time to seconds."""
    return t.sec + t.nanosec * 1e-9


def sec_to_time(s: float) -> Time:
    """Seconds to builtin_interfaces/Time (through integer nanoseconds, so rounding never
    moves a stamp backwards by a second)."""
    ns = int(round(s * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


# --- parameters ----------------------------------------------------------------------------

def _descriptor(f: dataclasses.Field, value: Any) -> ParameterDescriptor:
    d = ParameterDescriptor(description=f.metadata.get("description", ""))
    rng = f.metadata.get("range")
    if rng is not None and not isinstance(value, bool):
        lo, hi = rng
        if isinstance(value, int):
            d.integer_range = [IntegerRange(from_value=int(lo if lo is not None else -2**62),
                                            to_value=int(hi if hi is not None else 2**62),
                                            step=0)]
        elif isinstance(value, float):
            d.floating_point_range = [FloatingPointRange(
                from_value=float(lo if lo is not None else -1e300),
                to_value=float(hi if hi is not None else 1e300), step=0.0)]
    return d


def declare_dataclass_params(node: Node, settings: Any, prefix: str = "",
                             validate: Callable[[Any], str | None] | None = None,
                             on_change: Callable[[Any], None] | None = None,
                             start_only: tuple[str, ...] = ()) -> Any:
    """Declare one ROS parameter per field of the dataclass instance ``settings``.

    Each field's ``metadata`` gives the description and an inclusive ``range`` (see
    :func:`param_field`); rclpy rejects out-of-range values on set. Values from a parameter
    file or the command line override the defaults at start-up. Afterwards every accepted
    ``set_parameters`` updates ``settings`` in place (the node keeps reading the same
    object), and ``validate(candidate)`` can refuse cross-field conflicts by returning an
    error message or raising ``ValueError`` (a settings class's own ``validate`` method).

    Fields named in ``start_only`` (read once at start-up: topics, timers, files) are
    refused when set later, with a reason naming the parameter.

    Returns:
        ``settings``, updated with the start-up values.

    Raises:
        ValueError: a start-up value is out of range or refused by ``validate`` (the message
            names the parameter and the value).
    """
    fields = {prefix + f.name: f for f in dataclasses.fields(settings)}
    # `x:=5` on the command line or `value: "5"` in a launch file arrives as INTEGER; rclpy
    # would refuse it for a DOUBLE parameter, so widen such start-up values first.
    overrides = getattr(node, "_parameter_overrides", None) or {}
    for name, f in fields.items():
        p = overrides.get(name)
        if (p is not None and isinstance(getattr(settings, f.name), float)
                and p.type_ == Parameter.Type.INTEGER):
            overrides[name] = Parameter(name, Parameter.Type.DOUBLE, float(p.value))
    for name, f in fields.items():
        default = getattr(settings, f.name)
        if isinstance(default, (list, tuple)):
            default = list(default)
        try:
            p = node.declare_parameter(name, default, _descriptor(f, default))
        except Exception as exc:  # rclpy raises InvalidParameterValueException etc.
            raise ValueError(f"parameter {name}: {exc}") from exc
        value = p.value
        if isinstance(getattr(settings, f.name), tuple):
            value = tuple(value)
        setattr(settings, f.name, value)
    def check(candidate) -> str | None:
        if validate is None:
            return None
        try:
            return validate(candidate)
        except ValueError as exc:
            return str(exc)

    if validate is not None:
        err = check(settings)
        if err:
            raise ValueError(err)

    def _on_set(params) -> SetParametersResult:
        mine = [p for p in params if p.name in fields]
        if not mine:
            return SetParametersResult(successful=True)
        candidate = dataclasses.replace(settings)
        for p in mine:
            f = fields[p.name]
            old = getattr(settings, f.name)
            value = p.value
            if isinstance(old, float) and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if type(value) is not type(old) and not isinstance(old, tuple):
                return SetParametersResult(
                    successful=False,
                    reason=f"{p.name}: expected {type(old).__name__}, got {value!r}")
            rng = f.metadata.get("range")
            if rng is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                lo, hi = rng
                if (lo is not None and value < lo) or (hi is not None and value > hi):
                    return SetParametersResult(
                        successful=False, reason=f"{p.name}: {value} outside [{lo}, {hi}]")
            if f.name in start_only and value != old:
                return SetParametersResult(
                    successful=False, reason=f"{p.name}: can only be set at start-up")
            setattr(candidate, f.name, tuple(value) if isinstance(old, tuple) else value)
        if validate is not None:
            err = check(candidate)
            if err:
                return SetParametersResult(successful=False, reason=err)
        for f in dataclasses.fields(settings):
            setattr(settings, f.name, getattr(candidate, f.name))
        if on_change is not None:
            on_change(settings)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(_on_set)
    return settings


# --- process entry -------------------------------------------------------------------------

def run_node(factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """Create a node with ``factory`` and spin it until Ctrl-C or SIGTERM; clean shutdown.

    rclpy's own signal handlers turn SIGINT and SIGTERM into a context shutdown, which
    ends ``spin()`` with ``ExternalShutdownException``.

    Returns:
        The process exit status (0 on a clean shutdown, 2 when the node refused its
        configuration with a ``ValueError``, whose message is logged).
    """
    rclpy.init(args=args)
    try:
        node = factory()
    except ValueError as exc:
        rclpy.logging.get_logger("smores_assembly").fatal(str(exc))
        rclpy.try_shutdown()
        return 2
    try:
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # A callback that was running when SIGINT/SIGTERM shut the context down can fail
        # with "context is not valid": that is the shutdown, not an error.
        if rclpy.ok():
            raise
    finally:
        on_shutdown = getattr(node, "on_shutdown", None)
        if callable(on_shutdown):
            try:
                on_shutdown()
            except Exception:  # never mask the original exit path
                pass
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
