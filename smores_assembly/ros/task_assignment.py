"""``task_assignment`` node: assignment, goal poses and the parallel docking schedule.

Paper: "SMORES-EP, a Modular Robot with Parallel Self-assembly" (Liu, Yim et al.),
Sec. IV-B (task assignment) and IV-C (parallel assembly). A thin adapter over
:func:`smores_assembly.planning.plan_assembly`.

Subscribes:
    ``/assembly/target`` (TargetTopology, latched), ``/assembly/root`` (RootSelection,
    latched), ``/modules/states`` (ModuleStateArray) only while a plan is pending: subscribed
    when a matching root arrives (the latched latest states arrive at once), dropped when the
    plan is published (an idle node does not decode the pose stream).
Publishes:
    ``/assembly/plan`` (AssemblyPlan, latched): once per root selection that matches the
    current target (same ``target_name`` and ``header.stamp``), planned on the latest module
    states, with the grid anchored at the root pose given by the root selection. The plan's
    ``header.stamp`` is the target's.

A target with ``start_connections`` (a reconfiguration) is planned by
:func:`smores_assembly.reconfigure.plan_reconfiguration` (``full_disassembly``: the paper's
method, else keeping the largest common part); its root is the kept part's, not the root
selection's, and its docking stages run in the ``schedule`` mode like any plan (the
undocking stages stay before them, :func:`~smores_assembly.planning.with_schedule`).

The plan's schedule mode is the ``schedule`` parameter (``sequential | staged |
pipelined``, :func:`~smores_assembly.planning.with_schedule`). Planning errors (e.g. a
wheel-face dock with no helping module) are logged once as errors and nothing is
published. Parameters: :class:`~smores_assembly.planning.PlanningNodeSettings`
(``config/task_assignment.yaml``).
"""
from __future__ import annotations

import sys


from smores_assembly.vocabulary import counted
from smores_assembly.msg import AssemblyPlan, ModuleStateArray, RootSelection, TargetTopology
from smores_assembly.params import node_settings
from smores_assembly.planning import (PlanningError, PlanningNodeSettings, plan_assembly,
                                      with_schedule)
from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.ros import names
from smores_assembly.ros.common import (LATCHED_QOS, StatesOnDemandNode, declare_dataclass_params,
                                        node_kwargs, run_node)
from smores_assembly.ros.convert import (msg_to_root, plan_to_msg, states_msg_to_poses,
                                         target_msg_to_scenario, validate_target_msg)
from smores_assembly.scenario import ScenarioError


def _same_stamp(a, b) -> bool:
    return a.sec == b.sec and a.nanosec == b.nanosec


class TaskAssignmentNode(StatesOnDemandNode):
    """Publishes the assembly plan of the current target (see the module docstring)."""

    def __init__(self, **kwargs):
        super().__init__("task_assignment", **node_kwargs(kwargs))
        self._no_clock()   # never read: no /clock wake-ups (issue 10)
        settings, = node_settings("task_assignment")
        self.settings: PlanningNodeSettings = declare_dataclass_params(self, settings)
        self._target: TargetTopology | None = None
        self._root: RootSelection | None = None
        self._states: ModuleStateArray | None = None
        self._pending = False
        self.last_plan: AssemblyPlan | None = None
        self._pub = self.create_publisher(AssemblyPlan, names.PLAN, LATCHED_QOS)
        self.create_subscription(TargetTopology, names.TARGET, self._on_target, LATCHED_QOS)
        self.create_subscription(RootSelection, names.ROOT, self._on_root, LATCHED_QOS)
        self._states_sub = None

    def _on_target(self, msg: TargetTopology) -> None:
        try:
            validate_target_msg(msg)
        except ScenarioError:
            # root_search reports it; no root will come for this target.
            self._target, self._pending = None, False
            return
        self._target, self._pending = msg, True
        self._try_plan()

    def _on_root(self, msg: RootSelection) -> None:
        self._root = msg
        self._pending = self._target is not None
        self._try_plan()

    def _on_states(self, msg: ModuleStateArray) -> None:
        self._states = msg
        if self._pending:
            self._try_plan()

    def _matches(self) -> bool:
        t, r = self._target, self._root
        return (t is not None and r is not None and r.target_name == t.name
                and _same_stamp(r.header.stamp, t.header.stamp))

    def _try_plan(self) -> None:
        if not self._pending or not self._matches():
            self._want_states(False)
            return
        self._want_states(True)
        if self._states is None:
            return
        target = self._target
        assert target is not None  # _matches() holds
        poses = states_msg_to_poses(self._states, self.settings.tracked_only)
        try:
            scenario = target_msg_to_scenario(target, poses)
        except ScenarioError as exc:
            self.get_logger().warning(
                f"target {target.name!r}: waiting for module states that serve it: {exc}",
                throttle_duration_sec=self.settings.wait_warning_period_s)
            return
        self._pending = False
        self._want_states(False)
        try:
            if scenario.initial_connections:
                plan = plan_reconfiguration(
                    scenario, modules=poses,
                    method="full" if target.full_disassembly else "reuse")
            else:
                plan = plan_assembly(scenario, root=msg_to_root(self._root))
            plan = with_schedule(plan, self.settings.schedule)
        except (PlanningError, ScenarioError) as exc:
            self.get_logger().error(f"target {target.name!r}: cannot plan: {exc}")
            return
        msg = plan_to_msg(plan, stamp=target.header.stamp)
        self.last_plan = msg
        self._pub.publish(msg)
        self.get_logger().info(
            f"target {target.name!r}: {plan.schedule} plan with "
            f"{counted(len(plan.stages), 'stage')}, "
            f"{counted(len(plan.actions), 'docking action')}"
            + (f", {counted(len(plan.undocks), 'undocking action')} ({plan.method}; kept "
               f"{plan.kept})" if plan.method != "assembly" else "")
            + f", travel {plan.total_cost_m:.3f} m")


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: TaskAssignmentNode(), args)


if __name__ == "__main__":
    sys.exit(main())
