"""Conversions between the planning core's types and the package's ROS messages.

* :class:`smores_assembly.scenario.Scenario` <-> ``smores_assembly/TargetTopology``
  (+ module poses, which travel separately on ``/modules/states``),
* :class:`smores_assembly.planning.Plan` <-> ``smores_assembly/AssemblyPlan``,
* :class:`smores_assembly.planning.RootChoice` <-> ``smores_assembly/RootSelection``,
* ``smores_assembly/ModuleStateArray`` -> ``{module id: Pose2D}`` or
  ``{module id: PoseSample}`` (pose, stamp, tracked),
* ``smores_assembly/DockingAction`` -> :class:`smores_assembly.docking.DockingSpec`,
* :class:`smores_assembly.docking.TaskStatus` -> ``smores_assembly/DockingStatus``, and
  ``DockingStatusArray`` -> ``{module id: Phase}``,
* :class:`smores_assembly.docking.HelperRequest` <-> ``smores_assembly/HelperCommand``,
* timed paths ``[(t, Pose2D)]`` / :class:`smores_assembly.docking.TimedPath` <->
  ``nav_msgs/Path`` (pose stamps = planned arrival times),
* magnet faces <-> ``smores_assembly/MagnetCommand``; connections (``module.FACE`` pairs)
  <-> ``smores_assembly/ConnectionArray``.

Nodes convert through these functions instead of reading message fields themselves. Enum
fields travel as their integer values (:mod:`smores_assembly.vocabulary`). Poses are planar
``(x [m], y [m], yaw [rad])`` in ``world``.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path

from smores_assembly.docking import (DockingSpec, HelperRequest, PoseSample, TaskStatus,
                                     TimedPath, UndockSpec)
from smores_assembly.edge import Connection as CoreConnection
from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.msg import (AssemblyPlan, Connection, ConnectionArray, DockingAction,
                                 DockingStatus, DockingStatusArray, HelperCommand,
                                 MagnetCommand, ModuleStateArray, RootSelection, TargetEdge,
                                 TargetTopology)
from smores_assembly.msg import UndockAction as UndockActionMsg
from smores_assembly.planning import DockAction, Plan, RootChoice, UndockAction
from smores_assembly.ros.common import WORLD_FRAME, pose2d_to_pose, sec_to_time, time_to_sec
from smores_assembly.scenario import Scenario, ScenarioError, scenario_from_dict
from smores_assembly.staging import check_schedule
from smores_assembly.vocabulary import ErrorCode, HelperOp, Phase

#: Phases whose time is reported in ``DockingStatus.phase_durations_s``, in that order.
DURATION_PHASES = (Phase.NAVIGATE, Phase.POSE_ADJUST, Phase.APPROACH)


def scenario_to_target_msg(scenario: Scenario, stamp: Time | None = None) -> TargetTopology:
    """The scenario's target topology (name, width, nodes, edges, helpers) as a message."""
    msg = TargetTopology()
    msg.header.frame_id = WORLD_FRAME
    if stamp is not None:
        msg.header.stamp = stamp
    msg.name = scenario.name
    msg.module_width = float(scenario.module_width)
    msg.nodes = list(scenario.nodes)
    msg.edges = [TargetEdge(parent=e.parent, parent_face=e.parent_face.value, child=e.child,
                            child_face=e.child_face.value) for e in scenario.edges]
    msg.helpers = list(scenario.helpers)
    msg.start_connections = [Connection(module_a=c.module_a, face_a=c.face_a.value,
                                        module_b=c.module_b, face_b=c.face_b.value)
                             for c in scenario.initial_connections]
    return msg


def start_connections_from_msg(connections: Iterable[Connection], field: str
                               ) -> list[CoreConnection]:
    """``Connection`` messages (e.g. ``TargetTopology.start_connections``) as normalised
    core connections, sorted.

    Raises:
        InputError: an unknown face name (naming ``field[i]``).
    """
    out = []
    for i, c in enumerate(connections):
        out.append(CoreConnection.make(c.module_a, Face.parse(c.face_a, f"{field}[{i}].face_a"),
                                       c.module_b, Face.parse(c.face_b, f"{field}[{i}].face_b")))
    return sorted(out)


def target_msg_to_scenario(msg: TargetTopology, modules: Mapping[str, Pose2D],
                           source: str = "/assembly/target",
                           with_start: bool = True) -> Scenario:
    """Validate a target message together with the current module poses.

    Args:
        msg: the target topology.
        modules: module id -> current pose (e.g. :func:`states_msg_to_poses`).
        source: recorded as the scenario's ``source`` and prefixed to error messages.
        with_start: take ``start_connections`` over as the scenario's
            ``initial_connections`` (their modules must have poses); False: only check
            their faces.

    Raises:
        ScenarioError: any validation error of
            :func:`smores_assembly.scenario.scenario_from_dict` (one message naming the
            field and the value), or no module poses at all.
    """
    if not modules:
        raise ScenarioError(f"{source}: modules: no module poses available", field="modules")
    data = {
        "name": msg.name,
        "source": source,
        "module_width": float(msg.module_width),
        "target": {"nodes": list(msg.nodes),
                   "edges": [{"parent": e.parent, "parent_face": e.parent_face,
                              "child": e.child, "child_face": e.child_face}
                             for e in msg.edges]},
        "modules": {m: list(p.as_tuple()) for m, p in modules.items()},
        "helpers": list(msg.helpers),
    }
    scenario = scenario_from_dict(data, origin=source)
    if msg.start_connections and not with_start:
        try:
            start_connections_from_msg(msg.start_connections, "start_connections")
        except InputError as exc:
            raise ScenarioError(f"{source}: {exc}", field=exc.field) from None
    elif msg.start_connections:
        # live poses: the start structure is what the hardware reports; its poses are not
        # checked against it here (measured, they may be a few mm off)
        try:
            conns = start_connections_from_msg(msg.start_connections, "start_connections")
        except InputError as exc:
            raise ScenarioError(f"{source}: {exc}", field=exc.field) from None
        missing = sorted({m for c in conns for m in (c.module_a, c.module_b)} - set(modules))
        if missing:
            raise ScenarioError(f"{source}: start_connections: modules {missing} have no "
                                f"pose", field="start_connections")
        scenario = dataclasses.replace(scenario, initial_connections=conns)
    return scenario


def validate_target_msg(msg: TargetTopology, source: str = "/assembly/target") -> None:
    """Validate the target topology alone (faces, tree, unfolding, keys, helper names).

    Module poses are not needed: placeholder modules stand in for them, so only errors of
    the target itself are raised (a later :func:`target_msg_to_scenario` with the real
    poses can still fail on missing modules or helpers).

    Raises:
        ScenarioError: naming the field and the value.
    """
    helpers = [h for h in msg.helpers if isinstance(h, str) and h]
    names = [h for h in helpers if h[:1].isalpha()]
    i = 0
    while len(names) < len(msg.nodes) + len(helpers):
        if f"placeholder{i}" not in names:
            names.append(f"placeholder{i}")
        i += 1
    # placeholders on a row, two widths apart, so that they never overlap each other
    spacing = 2.0 * (msg.module_width if msg.module_width > 0 else 0.08)
    fake = {m: Pose2D(k * spacing, 0.0, 0.0) for k, m in enumerate(dict.fromkeys(names))}
    target_msg_to_scenario(msg, fake, source, with_start=False)


def states_msg_to_poses(msg: ModuleStateArray, tracked_only: bool = True
                        ) -> dict[str, Pose2D]:
    """Planar poses of the modules in a ``ModuleStateArray`` (``x``, ``y``, ``yaw`` fields).

    Args:
        tracked_only: skip modules whose ``tracked`` flag is false.
    """
    return {s.id: Pose2D(float(s.x), float(s.y), float(s.yaw)) for s in msg.modules
            if s.tracked or not tracked_only}


def states_msg_to_samples(msg: ModuleStateArray) -> dict[str, PoseSample]:
    """Every module of a ``ModuleStateArray`` as a :class:`PoseSample` (pose, measurement
    time [s] from its ``stamp``, ``tracked`` flag), untracked ones included."""
    return {s.id: PoseSample(Pose2D(float(s.x), float(s.y), float(s.yaw)),
                             time_to_sec(s.stamp), bool(s.tracked)) for s in msg.modules}


def states_raw_to_samples(raw: bytes) -> dict[str, PoseSample]:
    """:func:`states_msg_to_samples` of a serialised ``ModuleStateArray`` (a ``raw``
    subscription): read with :mod:`struct` (:mod:`smores_assembly.ros.wire`), other byte
    orders through rclpy."""
    from smores_assembly.ros.wire import StatesView  # noqa: PLC0415
    return {v.id: PoseSample(Pose2D(v.x, v.y, v.yaw), v.stamp_s, v.tracked)
            for v in StatesView.of(raw).modules}


def untracked_ids(msg: ModuleStateArray) -> set[str]:
    """Ids of the modules a ``ModuleStateArray`` reports as not tracked."""
    return {s.id for s in msg.modules if not s.tracked}


def action_msg_to_spec(msg: DockingAction) -> DockingSpec:
    """One ``DockingAction`` of a plan as a :class:`DockingSpec`.

    Raises:
        InputError: empty or equal module ids, an unknown face, a helper equal to the
            module or its parent (:class:`DockingSpec` checks).
    """
    return DockingSpec(msg.module, msg.parent_module, msg.parent_face, msg.child_face,
                       msg.helper)


def undock_msg_to_spec(msg: UndockActionMsg) -> UndockSpec:
    """An ``UndockAction`` message as the undocking task's spec.

    Raises:
        InputError: empty or equal module ids, an unknown face, a bad direction/distance.
    """
    return UndockSpec(msg.module, msg.face, msg.from_module, msg.from_face,
                      int(msg.direction), float(msg.distance),
                      Pose2D(msg.park_x, msg.park_y, msg.park_yaw))


def phases_from_status(msg: DockingStatusArray) -> dict[str, Phase]:
    """Module id -> :class:`Phase` of every entry of a ``DockingStatusArray``.

    An entry whose ``phase`` is no known phase value is left out (the module then counts
    as not reported); a module reported twice keeps its last entry.
    """
    out = {}
    for s in msg.modules:
        try:
            out[s.module] = Phase(s.phase)
        except ValueError:
            continue
    return out


def task_status_to_msg(st: TaskStatus) -> DockingStatus:
    """A docking task's status as a ``DockingStatus`` (``phase`` and ``phase_name`` from
    :class:`Phase`; ``phase_durations_s`` in the order of :data:`DURATION_PHASES`)."""
    return DockingStatus(
        module=st.module, target_module=st.target_module, face_pair=st.face_pair,
        phase=int(st.phase), phase_name=st.phase.name,
        face_gap_mm=float(st.face_gap_mm), lateral_error_mm=float(st.lateral_error_mm),
        yaw_error_deg=float(st.yaw_error_deg), retries=int(st.retries),
        phase_elapsed_s=float(st.phase_elapsed_s),
        phase_durations_s=[float(st.phase_durations[p]) for p in DURATION_PHASES],
        error_code=int(st.error_code), message=st.message)


def refused_action_status(msg: DockingAction, message: str) -> DockingStatus:
    """``DockingStatus`` of an action refused before it started: FAILED, ``CANCELLED``."""
    return DockingStatus(module=msg.module, target_module=msg.parent_module,
                         phase=int(Phase.FAILED), phase_name=Phase.FAILED.name,
                         error_code=int(ErrorCode.CANCELLED), message=message)


def helper_request_to_msg(req: HelperRequest) -> HelperCommand:
    """A helper request as the ``HelperCommand`` for ``/<req.helper>/helper_command``."""
    return HelperCommand(command=int(HelperOp.parse(req.command)), module=req.module,
                         carry_yaw=float(req.carry_yaw))


def helper_msg_to_op(msg: HelperCommand) -> HelperOp:
    """The :class:`HelperOp` of a ``HelperCommand``.

    Raises:
        InputError: ``command`` is not LIFT(1), ROTATE(2) or RELEASE(3).
    """
    return HelperOp.parse(int(msg.command), "command")


def faces_to_magnet_msg(faces: Iterable[Face]) -> MagnetCommand:
    """A ``MagnetCommand`` with the magnets of ``faces`` on and the others off."""
    fs = set(faces)
    return MagnetCommand(top=Face.TOP in fs, bottom=Face.BOTTOM in fs, left=Face.LEFT in fs,
                         right=Face.RIGHT in fs)


def magnet_msg_to_faces(msg: MagnetCommand) -> list[Face]:
    """The faces whose magnet a ``MagnetCommand`` switches on (TOP, BOTTOM, LEFT, RIGHT)."""
    return [f for f, on in ((Face.TOP, msg.top), (Face.BOTTOM, msg.bottom),
                            (Face.LEFT, msg.left), (Face.RIGHT, msg.right)) if on]


#: One connection end: (module id, face).
End = tuple[str, Face]


def connections_to_msg(connections: Iterable[tuple[End, End]], stamp: Time | None = None
                       ) -> ConnectionArray:
    """Connections, each a pair of (module, face) ends, as a ``ConnectionArray`` (frame
    ``world``) in the given order."""
    msg = ConnectionArray()
    msg.header.frame_id = WORLD_FRAME
    if stamp is not None:
        msg.header.stamp = stamp
    msg.connections = [Connection(module_a=a[0], face_a=Face.parse(a[1]).value,
                                  module_b=b[0], face_b=Face.parse(b[1]).value)
                       for a, b in connections]
    return msg


def connections_from_msg(msg: ConnectionArray) -> set[frozenset[End]]:
    """The connections of a ``ConnectionArray`` as unordered pairs of (module, face) ends;
    an entry with an unknown face name is left out."""
    out = set()
    for c in msg.connections:
        try:
            out.add(frozenset({(c.module_a, Face.parse(c.face_a)),
                               (c.module_b, Face.parse(c.face_b))}))
        except InputError:
            continue
    return out


def timed_path_to_msg(path: Sequence[tuple[float, Pose2D]], t_start: float) -> Path:
    """A timed path (``(t [s] from t_start, pose)`` pairs) as a ``nav_msgs/Path`` in
    ``world``: ``header.stamp`` = ``t_start``, each pose stamped with its arrival time
    ``t_start + t``; an empty sequence gives an empty Path ("no path: drive directly")."""
    msg = Path()
    msg.header.frame_id = WORLD_FRAME
    msg.header.stamp = sec_to_time(t_start)
    for t, p in path:
        ps = PoseStamped()
        ps.header.frame_id = WORLD_FRAME
        ps.header.stamp = sec_to_time(t_start + t)
        ps.pose = pose2d_to_pose(p)
        msg.poses.append(ps)
    return msg


def path_msg_to_timed(msg: Path, now: float, nominal_speed: float) -> TimedPath | None:
    """A ``nav_msgs/Path`` as a :class:`TimedPath` (None for an empty path).

    All-zero stamps mean an untimed path, timed from ``now`` [s] at ``nominal_speed``
    [m/s] (:meth:`TimedPath.from_poses`).

    Raises:
        InputError: stamps that decrease, a non-positive ``nominal_speed``.
    """
    if not msg.poses:
        return None
    pts = [(time_to_sec(p.header.stamp), p.pose.position.x, p.pose.position.y)
           for p in msg.poses]
    return TimedPath.from_poses(pts, now, nominal_speed)


def root_to_msg(target_name: str, root: RootChoice, stamp: Time | None = None
                ) -> RootSelection:
    """A root search result as a ``RootSelection`` message (frame ``world``)."""
    msg = RootSelection()
    msg.header.frame_id = WORLD_FRAME
    if stamp is not None:
        msg.header.stamp = stamp
    msg.target_name = target_name
    msg.centroid_node = root.node
    msg.root_module = root.module
    msg.x, msg.y, msg.yaw = (float(v) for v in root.pose.as_tuple())
    return msg


def msg_to_root(msg: RootSelection) -> RootChoice:
    """Inverse of :func:`root_to_msg` (the target name is ``msg.target_name``)."""
    return RootChoice(node=msg.centroid_node, module=msg.root_module,
                      pose=Pose2D(msg.x, msg.y, msg.yaw))


def plan_to_msg(plan: Plan, stamp: Time | None = None) -> AssemblyPlan:
    """A plan as an ``AssemblyPlan`` message; :func:`msg_to_plan` gives it back."""
    msg = AssemblyPlan()
    msg.header.frame_id = WORLD_FRAME
    if stamp is not None:
        msg.header.stamp = stamp
    msg.target_name = plan.name
    msg.root = root_to_msg(plan.name, RootChoice(plan.root_node, plan.root_module,
                                                 plan.root_pose), stamp)
    msg.assigned_nodes = list(plan.assignment)
    msg.assigned_modules = [plan.assignment[n] for n in plan.assignment]
    msg.total_cost_m = float(plan.total_cost_m)
    msg.num_stages = len(plan.stages)
    msg.actions = [DockingAction(
        module=a.module, node=a.node, stage=a.stage, depth=a.depth,
        parent_module=a.parent_module, parent_node=a.parent_node,
        parent_face=a.parent_face.value, child_face=a.child_face.value,
        needs_helper=a.needs_helper, helper=a.helper or "", goal_x=float(a.goal.x),
        goal_y=float(a.goal.y), goal_yaw=float(a.goal.yaw)) for a in plan.actions]
    msg.idle_modules = list(plan.idle)
    msg.schedule = plan.schedule
    msg.undocks = [UndockActionMsg(
        module=u.module, face=u.face.value, from_module=u.from_module,
        from_face=u.from_face.value, stage=u.stage, start_x=float(u.start.x),
        start_y=float(u.start.y), start_yaw=float(u.start.yaw), direction=int(u.direction),
        distance=float(u.distance), park_x=float(u.park.x), park_y=float(u.park.y),
        park_yaw=float(u.park.yaw)) for u in plan.undocks]
    msg.kept_modules = list(plan.kept)
    msg.method = plan.method
    return msg


def msg_to_plan(msg: AssemblyPlan) -> Plan:
    """An ``AssemblyPlan`` message as a :class:`Plan`.

    ``stages`` are rebuilt from the actions (in message order), ``helpers`` from the actions'
    helper fields (order of first use), the root's goal from the root pose; an empty
    ``schedule`` is ``staged``.

    Raises:
        InputError: inconsistent message (array lengths, faces, stage numbers, an unknown
            schedule).
    """
    if len(msg.assigned_nodes) != len(msg.assigned_modules):
        raise InputError(f"assigned_nodes/assigned_modules: lengths differ "
                         f"({len(msg.assigned_nodes)} vs {len(msg.assigned_modules)})")
    root_pose = Pose2D(msg.root.x, msg.root.y, msg.root.yaw)
    actions = []
    for i, a in enumerate(msg.actions):
        if a.stage >= msg.num_stages:
            raise InputError(f"actions[{i}].stage: {a.stage} >= num_stages {msg.num_stages}",
                             field=f"actions[{i}].stage")
        actions.append(DockAction(
            module=a.module, node=a.node, stage=int(a.stage), depth=int(a.depth),
            parent_module=a.parent_module, parent_node=a.parent_node,
            parent_face=Face.parse(a.parent_face, f"actions[{i}].parent_face"),
            child_face=Face.parse(a.child_face, f"actions[{i}].child_face"),
            needs_helper=bool(a.needs_helper), helper=a.helper or None,
            goal=Pose2D(a.goal_x, a.goal_y, a.goal_yaw)))
    undocks = []
    for i, u in enumerate(msg.undocks):
        if u.stage >= msg.num_stages:
            raise InputError(f"undocks[{i}].stage: {u.stage} >= num_stages {msg.num_stages}",
                             field=f"undocks[{i}].stage")
        undocks.append(UndockAction(
            module=u.module, face=Face.parse(u.face, f"undocks[{i}].face"),
            from_module=u.from_module,
            from_face=Face.parse(u.from_face, f"undocks[{i}].from_face"), stage=int(u.stage),
            start=Pose2D(u.start_x, u.start_y, u.start_yaw),
            park=Pose2D(u.park_x, u.park_y, u.park_yaw), direction=int(u.direction),
            distance=float(u.distance)))
    stages: list[list[str]] = [[] for _ in range(msg.num_stages)]
    for u in undocks:
        stages[u.stage].append(u.module)
    helpers: list[str] = []
    goals = {msg.root.root_module: root_pose}
    for a in actions:
        stages[a.stage].append(a.module)
        goals[a.module] = a.goal
        if a.helper is not None and a.helper not in helpers:
            helpers.append(a.helper)
    return Plan(name=msg.target_name, root_node=msg.root.centroid_node,
                root_module=msg.root.root_module, root_pose=root_pose,
                assignment=dict(zip(msg.assigned_nodes, msg.assigned_modules)), goals=goals,
                total_cost_m=float(msg.total_cost_m), stages=stages, actions=actions,
                idle=list(msg.idle_modules), helpers=helpers,
                schedule=check_schedule(msg.schedule or "staged", "schedule"),
                undocks=undocks, kept=list(msg.kept_modules), method=msg.method or "assembly")
