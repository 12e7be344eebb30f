"""Shared plumbing of the rclpy nodes: QoS profiles, topic names, conversions, parameters.

Every node of ``smores_assembly.ros`` is a thin adapter over a pure-Python core. What they
share lives here, once:

* QoS: :data:`LATCHED_QOS` (transient local, reliable, depth 1) for the target, root, plan,
  connections and active stage; :data:`SENSOR_QOS` (best effort, volatile) for poses.
* Names: every topic, service and action is in :mod:`smores_assembly.ros.names`.
* :func:`declare_dataclass_params`: turns a core ``@dataclass`` of settings (fields
  made with :func:`smores_assembly.params.param_field`) into ROS parameters with
  descriptors and ranges, validated in the on-set callback and applied to the dataclass
  instance in the post-set callback; :data:`NODE_OPTIONS` and :func:`declare_given` take
  start-up values over with the public parameter API.
* :func:`run_node` / :func:`run_nodes`: spin one node or several (:func:`make_executor`)
  and shut down cleanly on Ctrl-C / SIGTERM, whenever the signal comes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import os
import signal
import sys
import time
import weakref
from typing import Any, Callable

import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, Quaternion
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
import transforms3d.euler

from smores_assembly.errors import InputError, ParamsError, SmoresError
from smores_assembly.geometry import WORLD_FRAME, Pose2D, wrap_angle  # noqa: F401
from smores_assembly.params import param_field  # noqa: F401  (re-exported)
from smores_assembly.params import validate_settings
from smores_assembly.teardown import (TEARDOWN_TIMEOUT_S, WATCHDOG_MARGIN_S, bounded_call,
                                      exit_now, watchdog)

#: Latched QoS for state that late joiners must receive (target, root, plan, connections).
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Sensor QoS for high-rate pose streams (mocap, module states).
SENSOR_QOS = qos_profile_sensor_data
#: ``/modules/states`` publisher: reliable and transient local with depth 1, so that a node
#: that subscribes only when it needs poses (root search, task assignment) gets the latest
#: states at once; best-effort subscribers still match.
STATES_PUB_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                            reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Subscription of a node that needs the poses only now and then: it subscribes when it
#: needs them (and receives the latest states at once) and unsubscribes afterwards.
STATES_ON_DEMAND_QOS = STATES_PUB_QOS
def drop_clock_subscription(node: Node) -> None:
    """Take no ``/clock`` for ``node`` (with ``use_sim_time``): destroy the subscription
    that rclpy's time source made, so that ``/clock`` messages no longer wake the node.

    For a node that never reads its clock (the planning nodes: their stamps are the
    target's), or whose clock is set otherwise (a lockstep participant: its turns set it).
    Its ROS clock then keeps its last value (zero if no ``/clock`` came). Setting
    ``use_sim_time`` again subscribes anew (rclpy's time source)."""
    ts = node._time_source
    if ts._clock_sub is not None:
        node.destroy_subscription(ts._clock_sub)
        ts._clock_sub = None


class StatesOnDemandNode(Node):
    """A planning node that decodes the module states only while it needs them (issue
    10): :meth:`_want_states` subscribes to ``names.STATES`` (fresh samples only,
    :data:`STATES_ON_DEMAND_QOS`) or drops the subscription. Subclasses define
    ``_on_states(msg)``; the latest sample is ``self._states`` (None until one arrives).

    It takes no ``/clock`` (:meth:`_no_clock`, called by the subclasses): it never reads
    its clock (its outputs carry the target's stamp, its timing is wall time) and the
    simulated clock (10 Hz in lockstep) was ~2/3 of an idle planning node's wake-ups (issue
    10). A subclass that comes to need its clock (a timer on ROS time, a stamp of now)
    must not call it."""

    _states: Any = None
    _states_sub: Any = None

    def _no_clock(self) -> None:
        """No ``/clock`` subscription (see the class docstring)."""
        drop_clock_subscription(self)

    def _on_states(self, msg: Any) -> None:
        raise NotImplementedError

    def _want_states(self, on: bool) -> None:
        """Subscribe to the module states (fresh ones only) or drop the subscription."""
        from smores_assembly.msg import ModuleStateArray  # noqa: PLC0415
        from smores_assembly.ros import names  # noqa: PLC0415

        if on and self._states_sub is None:
            self._states = None
            self._states_sub = self.create_subscription(
                ModuleStateArray, names.STATES, self._on_states, STATES_ON_DEMAND_QOS)
        elif not on and self._states_sub is not None:
            self.destroy_subscription(self._states_sub)
            self._states_sub = None


#: Reliable, volatile QoS for commands (cmd_vel, magnets, joints, helper commands).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)

#: Reliable QoS of the docking status (10 Hz): a deep history, so that a reader that falls
#: behind (the run's observer on a loaded machine; it is not a lockstep participant and the
#: simulation does not wait for it) still gets every status. With depth 10 the first ~13
#: statuses of a busy-machine run were lost, and the report's phase times (relative to the
#: first activity) moved by 1.3 s while the trace was the same (test_lockstep).
STATUS_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)

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


#: Keyword arguments every node of the package passes to ``rclpy.node.Node``: each
#: start-up value (params file, ``-p``, ``parameter_overrides``) is declared as it comes,
#: untyped, so that :func:`declare_given` can take it over with the public parameter API
#: (widen an integer given for a double, see values given for names the node only learns
#: at run time, e.g. ``marker_offsets.<id>``).
NODE_OPTIONS = {"automatically_declare_parameters_from_overrides": True}


def node_kwargs(kwargs: dict) -> dict:
    """``kwargs`` for ``Node.__init__`` with :data:`NODE_OPTIONS` as defaults."""
    return {**NODE_OPTIONS, **kwargs}


def _widen(value: Any, like: Any) -> Any:
    """An integer (or integer list) given where ``like`` is a float (or float list / a
    DOUBLE(_ARRAY) type) as floats; anything else unchanged."""
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    # Parameter.Type is an IntEnum: compare types only with types (an integer default of
    # 3 equals Type.DOUBLE)
    is_type = isinstance(like, Parameter.Type)
    wants_float = isinstance(like, float) or (is_type and like == Parameter.Type.DOUBLE)
    wants_floats = (is_type and like == Parameter.Type.DOUBLE_ARRAY) or (
        isinstance(like, (list, tuple)) and bool(like)
        and all(isinstance(x, float) for x in like))
    if wants_float and is_int(value):
        return float(value)
    if wants_floats and isinstance(value, (list, tuple)) and all(is_int(v) for v in value):
        return [float(v) for v in value]
    return value


def declare_given(node: Node, name: str, default: Any,
                  descriptor: ParameterDescriptor | None = None) -> Parameter:
    """Declare parameter ``name`` with ``default`` (a value, or a ``Parameter.Type`` for a
    parameter without default), its start-up value taken from the node's overrides.

    Nodes made with :data:`NODE_OPTIONS` find every override already declared (untyped);
    it is undeclared and declared again with its descriptor (static type, range), an
    integer given for a double widened to a float. Without those options this is
    ``declare_parameter``.

    Raises:
        ParamsError: ``parameter <name>: ...``, the given value has the wrong type or is out
            of range.
    """
    descriptor = descriptor if descriptor is not None else ParameterDescriptor()
    try:
        given = node.get_parameter(name) if node.has_parameter(name) else None
        if given is None or given.type_ == Parameter.Type.NOT_SET:
            return node.declare_parameter(name, default, descriptor)
        node.undeclare_parameter(name)
        value = _widen(given.value, default)
        if isinstance(default, Parameter.Type):
            if isinstance(value, (list, tuple)) and not value:
                return node.declare_parameter(name, default, descriptor)  # [] has no type
            if not default.check(value):
                raise ParamsError(f"expected {default.name.lower()}, got {value!r}")
        elif not _same_kind(value, default):
            raise ParamsError(f"expected {type(default).__name__}, got {value!r}")
        rng = _descriptor_range(descriptor)
        if (rng is not None and isinstance(value, (int, float))
                and not isinstance(value, bool) and not rng[0] <= value <= rng[1]):
            # rclpy's own refusal repeats itself ("Invalid parameter value (5.0) for
            # parameter. Reason: Parameter x out of range ...: x"): one line instead
            raise ParamsError(f"{name}: {value!r} outside [{rng[0]:g}, {rng[1]:g}]")
        return node.declare_parameter(name, value, descriptor, ignore_override=True)
    except ParamsError as exc:
        raise _located(ParamsError(_field_first(name, str(exc)), field=name), node) from None
    except ValueError as exc:
        raise _located(ParamsError(f"{name}: {exc}", field=name), node) from exc
    except Exception as exc:  # rclpy's ParameterException family
        raise _located(ParamsError(f"{name}: {exc}", field=name), node) from exc


def _same_kind(value: Any, default: Any) -> bool:
    """Does a start-up ``value`` (already widened) have the type of ``default``? (rclpy
    would declare the parameter with the type of the given value.)"""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    if isinstance(default, float):
        return isinstance(value, float)
    return isinstance(value, type(default))


def _field_first(name: str, message: str) -> str:
    """``message`` starting with ``name: `` (the project's error format)."""
    return message if message.startswith(f"{name}: ") else f"{name}: {message}"


def _descriptor_range(d: ParameterDescriptor) -> tuple[float, float] | None:
    """The inclusive range of a descriptor (integer or floating point), None without."""
    r = list(d.floating_point_range) or list(d.integer_range)
    return (r[0].from_value, r[0].to_value) if r else None


def _located(exc: SmoresError, node: Node) -> SmoresError:
    """``exc`` marked with the name of the node whose configuration it refuses (the
    logger :func:`run_nodes` reports it under)."""
    if not getattr(exc, "node_name", ""):
        try:
            exc.node_name = node.get_name()  # type: ignore[attr-defined]
        except Exception:  # a node whose construction failed early
            pass
    return exc


def _refusing_node(exc: SmoresError) -> str:
    """The name to log a start-up refusal under: the node that refused (set by the
    parameter helpers), else the name the launch gave this process (``__node:=``), else
    the package."""
    name = getattr(exc, "node_name", "")
    if name:
        return name
    import sys  # noqa: PLC0415
    for arg in sys.argv:
        if arg.startswith("__node:="):
            return arg.split(":=", 1)[1]
    return "smores_assembly"


#: The nodes that have the widening pre-set callback already.
_WIDENING: weakref.WeakSet[Node] = weakref.WeakSet()


def _widen_on_set(node: Node) -> None:
    """Once per node: an integer set for a double parameter (``ros2 param set n x 2``) is
    widened to a float before rclpy's type check (a pre-set callback)."""
    if node in _WIDENING:
        return
    _WIDENING.add(node)

    def pre_set(params: list[Parameter]) -> list[Parameter]:
        out = []
        for p in params:
            if node.has_parameter(p.name):
                t = Parameter.Type(node.get_parameter_type(p.name))
                if t in (Parameter.Type.DOUBLE, Parameter.Type.DOUBLE_ARRAY):
                    v = _widen(p.value, t)
                    if v is not p.value:
                        p = Parameter(p.name, t, v)
            out.append(p)
        return out

    node.add_pre_set_parameters_callback(pre_set)


def _field_value(value: Any, old: Any) -> Any:
    """A parameter value as the settings field holds it (tuples stay tuples)."""
    if isinstance(old, tuple):
        return tuple(value)
    if isinstance(old, list):
        return list(value)
    return value


def declare_dataclass_params(node: Node, settings: Any, prefix: str = "",
                             on_change: Callable[[Any], None] | None = None) -> Any:
    """Declare one ROS parameter per field of the dataclass instance ``settings``.

    Each field's ``metadata`` gives the description, an inclusive ``range`` and
    ``start_only`` (see :func:`smores_assembly.params.param_field`). Start-up values (params
    file, command line) override the defaults (:func:`declare_given`). Changes follow
    rclpy's parameter callbacks (ros2/demos ``demo_nodes_py``):

    * on set (``add_on_set_parameters_callback``), the candidate settings are *validated*
      only: :func:`smores_assembly.params.validate_settings` (ranges and the class's own
      ``validate``), and a start-only field refuses any change; a refusal carries the
      reason, naming the parameter;
    * after set (``add_post_set_parameters_callback``), the accepted values are *applied*
      to ``settings`` in place (the node keeps reading the same object), then
      ``on_change(settings)`` is called.

    Returns:
        ``settings``, updated with the start-up values.

    Raises:
        InputError: (a ``ParamsError`` or the settings' own subclass) a start-up value has
            the wrong type, is out of range or is refused by the settings' ``validate``
            (the message names the parameter and the value).
    """
    _widen_on_set(node)
    fields = {prefix + f.name: f for f in dataclasses.fields(settings)}
    for name, f in fields.items():
        default = getattr(settings, f.name)
        if isinstance(default, (list, tuple)):
            default = list(default)
        p = declare_given(node, name, default, _descriptor(f, default))
        setattr(settings, f.name, _field_value(p.value, getattr(settings, f.name)))
    try:
        validate_settings(settings)
    except SmoresError as exc:
        raise _located(exc, node)

    def on_set(params: list[Parameter]) -> SetParametersResult:
        mine = [p for p in params if p.name in fields]
        if not mine:
            return SetParametersResult(successful=True)
        candidate = dataclasses.replace(settings)
        for p in mine:
            f = fields[p.name]
            old = getattr(settings, f.name)
            value = _field_value(p.value, old)
            if f.metadata.get("start_only") and value != old:
                return SetParametersResult(
                    successful=False, reason=f"{p.name}: can only be set at start-up")
            setattr(candidate, f.name, value)
        try:
            validate_settings(candidate)
        except InputError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def post_set(params: list[Parameter]) -> None:
        mine = [p for p in params if p.name in fields]
        if not mine:
            return
        for p in mine:
            f = fields[p.name]
            setattr(settings, f.name, _field_value(p.value, getattr(settings, f.name)))
        if on_change is not None:
            on_change(settings)

    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(post_set)
    return settings


# --- process entry -------------------------------------------------------------------------

#: Signals that end a node cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: the values of ``SMORES_EXECUTOR`` (:func:`make_executor`)
EXECUTOR_KINDS = ("lean", "single", "events")


def executor_kind(events: bool = False) -> str:
    """The executor kind that :func:`make_executor` builds: ``SMORES_EXECUTOR`` when set,
    else ``events`` or ``lean``.

    Raises:
        InputError: (a ``ValueError``) ``SMORES_EXECUTOR`` is set to none of
            :data:`EXECUTOR_KINDS` (names the variable, its value and the allowed values).
    """
    import os  # noqa: PLC0415
    kind = os.environ.get("SMORES_EXECUTOR", "events" if events else "lean")
    if kind not in EXECUTOR_KINDS:
        raise InputError(f"SMORES_EXECUTOR={kind!r}: expected one of "
                         f"{', '.join(EXECUTOR_KINDS)} (or unset: lean)",
                         field="SMORES_EXECUTOR")
    return kind


def make_executor(events: bool = False):
    """The executor that spins the nodes: :class:`smores_assembly.ros.executor.LeanExecutor`
    (rclpy's single-threaded executor with a wait set built once per set of entities: the
    rebuild per wake-up was most of every node's CPU), or with ``events`` rclpy's
    ``EventsExecutor`` when available. ``SMORES_EXECUTOR=lean|single|events`` overrides
    ``events`` (``single``: rclpy's ``SingleThreadedExecutor``); another value raises
    ``ValueError`` (:func:`executor_kind`)."""
    kind = executor_kind(events)
    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor  # noqa: PLC0415
            return EventsExecutor()
        except ImportError:
            pass
    if kind == "single":
        return SingleThreadedExecutor()
    from smores_assembly.ros.executor import LeanExecutor  # noqa: PLC0415
    return LeanExecutor()



#: how often [s, wall] a node started by the package's launch runner checks that the
#: runner is still there (:func:`launcher_gone`)
LAUNCHER_CHECK_S = 1.0


def launcher_gone() -> bool:
    """True when this process was started by the package's launch runner (its pid in
    ``SMORES_LAUNCHER_PID``, :data:`smores_assembly.launch.yaml_launch.LAUNCHER_PID_ENV`)
    and that runner is gone: this process was re-parented. ``smores-assemble run`` killed
    with SIGKILL (or crashing) must not leave its nodes running, orphaned. False for a
    node started any other way (``ros2 launch``, by hand)."""
    from smores_assembly.launch.yaml_launch import LAUNCHER_PID_ENV  # noqa: PLC0415
    pid = os.environ.get(LAUNCHER_PID_ENV, "")
    return pid.isdigit() and os.getppid() != int(pid)


class StopRequest:
    """SIGINT/SIGTERM handlers that only record the request (installed by :func:`run_node`).

    A signal never interrupts the code that is running (node construction, a callback,
    the shutdown itself): the spin loop sees :attr:`requested` and ends in order. Signals
    that a launcher blocked while starting the process (see
    :class:`smores_assembly.launch.LaunchRunner`) are unblocked here and so delivered now.
    """

    def __init__(self) -> None:
        from smores_assembly import ros as _ros_pkg
        # a signal recorded while the node's modules were still being imported
        self.requested: int | None = _ros_pkg.early_stop_signal
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def _on_signal(self, signum, _frame) -> None:
        self.requested = signum


@contextlib.contextmanager
def profiled(name: str):
    """Profile the block with cProfile on process CPU time when ``SMORES_PROFILE_DIR`` is
    set (a measuring aid: where a node's CPU goes); the statistics go to
    ``$SMORES_PROFILE_DIR/<name>.prof`` (``python -m pstats``)."""
    import os  # noqa: PLC0415
    out = os.environ.get("SMORES_PROFILE_DIR")
    if not out:
        yield
        return
    import cProfile  # noqa: PLC0415
    import time  # noqa: PLC0415
    prof = cProfile.Profile(time.process_time)   # CPU time: waiting is not cost
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        os.makedirs(out, exist_ok=True)
        prof.dump_stats(os.path.join(out, f"{name}.prof"))


def run_node(factory: Callable[[], Node], args: list[str] | None = None,
             poll_s: float = 0.1) -> int:
    """Create a node with ``factory`` and spin it until SIGINT or SIGTERM; clean shutdown.

    :func:`run_nodes` with one node (see there for the signal handling and the returns).
    """
    return run_nodes([factory], args=args, poll_s=poll_s)


def run_nodes(factories: list[Callable[[], Node]], args: list[str] | None = None,
              poll_s: float = 0.1, profile_name: str | None = None) -> int:
    """Create the nodes with ``factories`` (in order), spin them in one executor
    (:func:`make_executor`) until SIGINT or SIGTERM, then shut down cleanly.

    A signal at any moment of the process's life (construction, spinning, shutdown) ends
    it with exit status 0 and no traceback: the signal only sets a flag
    (:class:`StopRequest`, rclpy's own handlers are off; signals a launcher blocked while
    starting the process are unblocked), the executor spins in steps of ``poll_s`` [s] and
    checks it, and the nodes are then destroyed and the context shut down in that order,
    so that no callback ever runs on a destroyed handle or an invalid context. The
    single-process container (:mod:`smores_assembly.ros.container`) and every node
    executable end the same way.

    Args:
        profile_name: name of the cProfile dump with ``SMORES_PROFILE_DIR`` (default: the
            first node's name).

    Returns:
        The process exit status (0 on a clean shutdown, 2 when a node refused its
        configuration with a :class:`~smores_assembly.errors.SmoresError`, whose message is
        logged, or ``SMORES_EXECUTOR`` names no executor; the nodes made before it are
        destroyed).

    Raises:
        Exception: whatever a callback raised while no stop was requested (a real fault).
    """
    stop = StopRequest()
    # SIGUSR1 writes every thread's Python stack to stderr (the node's log): a launcher
    # sends it before it kills a node that ignored SIGINT and SIGTERM (LaunchRunner)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    nodes: list[Node] = []
    executor = None
    status = 0
    try:
        try:
            executor_kind()   # a bad SMORES_EXECUTOR is refused before any node is made
            for factory in factories:
                nodes.append(factory())
        except SmoresError as exc:
            rclpy.logging.get_logger(_refusing_node(exc)).fatal(" ".join(str(exc).split()))
            status = 2
            return status
        executor = make_executor()
        for node in nodes:
            executor.add_node(node)
        next_check = time.monotonic() + LAUNCHER_CHECK_S
        with profiled(profile_name or nodes[0].get_name()):
            while stop.requested is None and rclpy.ok():
                executor.spin_once(timeout_sec=poll_s)
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + LAUNCHER_CHECK_S
                    if launcher_gone():
                        nodes[0].get_logger().warning(
                            "the launch runner that started this node is gone: stopping")
                        break
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # The context shut down by someone else (e.g. rclpy.shutdown()) is not an error.
        if stop.requested is None and rclpy.ok():
            status = 1
            raise
    finally:
        # Further signals change nothing now: the shutdown below runs to its end, each
        # middleware step bounded (smores_assembly.teardown: a Fast DDS teardown hang
        # otherwise kept the process alive through SIGINT and SIGTERM until SIGKILL)
        for node in nodes:
            on_shutdown = getattr(node, "on_shutdown", None)
            if callable(on_shutdown):
                try:
                    on_shutdown()
                except Exception:  # never mask the original exit path
                    pass
        with watchdog(TEARDOWN_TIMEOUT_S + WATCHDOG_MARGIN_S):   # a hang keeping the GIL
            torn_down = bounded_call(lambda: _destroy(executor, nodes), TEARDOWN_TIMEOUT_S)
        if not torn_down:
            name = nodes[0].get_name() if nodes else "node"
            print(f"[{name}] [WARN] the ROS middleware did not shut down within "
                  f"{TEARDOWN_TIMEOUT_S:.0f} s (a Fast DDS teardown hang): exiting anyway; "
                  "the Python stacks follow", file=sys.stderr)
            exit_now(status, stacks=True)
    return 0


def _destroy(executor, nodes: list[Node]) -> None:
    """The executor, then the nodes, then the context: each step's error is dropped (the
    process is ending; never mask the original exit path)."""
    if executor is not None:
        try:
            executor.shutdown(timeout_sec=1.0)
        except Exception:
            pass
    for node in nodes:
        try:
            node.destroy_node()
        except Exception:
            pass
    rclpy.try_shutdown()
