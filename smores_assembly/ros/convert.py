"""Conversions between the planning core's types and the package's ROS messages.

* :class:`smores_assembly.scenario.Scenario` <-> ``smores_assembly/TargetTopology``
  (+ module poses, which travel separately on ``/modules/states``),
* :class:`smores_assembly.planning.Plan` <-> ``smores_assembly/AssemblyPlan``,
* :class:`smores_assembly.planning.RootChoice` <-> ``smores_assembly/RootSelection``,
* ``smores_assembly/ModuleStateArray`` -> ``{module id: Pose2D}``.

Poses are planar ``(x [m], y [m], yaw [rad])`` in ``world``.
"""
from __future__ import annotations

from typing import Mapping

from builtin_interfaces.msg import Time

from smores_assembly.geometry import Face, Pose2D
from smores_assembly.msg import (AssemblyPlan, DockingAction, ModuleStateArray,
                                 RootSelection, TargetEdge, TargetTopology)
from smores_assembly.planning import DockAction, Plan, RootChoice
from smores_assembly.ros.common import WORLD_FRAME
from smores_assembly.scenario import Scenario, ScenarioError, scenario_from_dict


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
    return msg


def target_msg_to_scenario(msg: TargetTopology, modules: Mapping[str, Pose2D],
                           source: str = "/assembly/target") -> Scenario:
    """Validate a target message together with the current module poses.

    Args:
        msg: the target topology.
        modules: module id -> current pose (e.g. :func:`states_msg_to_poses`).
        source: recorded as the scenario's ``source`` and prefixed to error messages.

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
    return scenario_from_dict(data, origin=source)


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
    target_msg_to_scenario(msg, fake, source)


def states_msg_to_poses(msg: ModuleStateArray, tracked_only: bool = True
                        ) -> dict[str, Pose2D]:
    """Planar poses of the modules in a ``ModuleStateArray`` (``x``, ``y``, ``yaw`` fields).

    Args:
        tracked_only: skip modules whose ``tracked`` flag is false.
    """
    return {s.id: Pose2D(float(s.x), float(s.y), float(s.yaw)) for s in msg.modules
            if s.tracked or not tracked_only}


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
    return msg


def msg_to_plan(msg: AssemblyPlan) -> Plan:
    """An ``AssemblyPlan`` message as a :class:`Plan`.

    ``stages`` are rebuilt from the actions (in message order), ``helpers`` from the actions'
    helper fields (order of first use), the root's goal from the root pose.

    Raises:
        ValueError: inconsistent message (array lengths, faces, stage numbers).
    """
    if len(msg.assigned_nodes) != len(msg.assigned_modules):
        raise ValueError(f"assigned_nodes/assigned_modules: lengths differ "
                         f"({len(msg.assigned_nodes)} vs {len(msg.assigned_modules)})")
    root_pose = Pose2D(msg.root.x, msg.root.y, msg.root.yaw)
    actions = []
    for i, a in enumerate(msg.actions):
        if a.stage >= msg.num_stages:
            raise ValueError(f"actions[{i}].stage: {a.stage} >= num_stages {msg.num_stages}")
        actions.append(DockAction(
            module=a.module, node=a.node, stage=int(a.stage), depth=int(a.depth),
            parent_module=a.parent_module, parent_node=a.parent_node,
            parent_face=Face.parse(a.parent_face, f"actions[{i}].parent_face"),
            child_face=Face.parse(a.child_face, f"actions[{i}].child_face"),
            needs_helper=bool(a.needs_helper), helper=a.helper or None,
            goal=Pose2D(a.goal_x, a.goal_y, a.goal_yaw)))
    stages: list[list[str]] = [[] for _ in range(msg.num_stages)]
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
                idle=list(msg.idle_modules), helpers=helpers)
