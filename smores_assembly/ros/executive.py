"""Executive node: the ``Assemble`` action, approval gate and stage sequencing.

Action ``/assembly/assemble`` (smores_assembly/action/Assemble):

1. the goal's target topology is validated and planned with the pure planning core against
   the current ``/modules/states`` (an invalid target or an impossible plan is refused here,
   before anything moves: result ``ERROR_INVALID_TARGET`` / ``ERROR_PLANNING``);
2. the target is published (latched) on ``/assembly/target``; ``root_search`` and
   ``task_assignment`` answer with ``/assembly/root`` and ``/assembly/plan``;
3. with ``require_approval`` nothing moves until ``/assembly/approve`` (std_srvs/Trigger);
4. stage k is started by publishing ``/assembly/active_stage = k``; the next stage starts
   when every action of stage k reports ``DOCKED`` on ``/assembly/docking_status``;
5. ``/assembly/cancel`` (std_srvs/Trigger) or cancelling the goal publishes
   ``active_stage = -1``: every module stops.

The sequencing logic is :class:`smores_assembly.sequencer.StageSequencer` (no ROS).
"""
from __future__ import annotations

import sys
import time

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from geometry_msgs.msg import Point
from std_msgs.msg import Int32
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from smores_assembly.action import Assemble
from smores_assembly.msg import (AssemblyPlan, Connection, ConnectionArray, DockingStatusArray,
                                 ModuleStateArray, TargetTopology)
from smores_assembly.geometry import MODULE_WIDTH, Pose2D
from smores_assembly.ros import common, names
from smores_assembly.ros.convert import states_msg_to_poses, target_msg_to_scenario
from smores_assembly.sequencer import ExecutiveSettings, SeqState, StageSequencer


#: Marker colour per docking phase (RGB).
_PHASE_RGB = {"NAVIGATE": (0.0, 0.45, 0.7), "POSE_ADJUST": (0.9, 0.6, 0.0),
              "APPROACH": (0.0, 0.62, 0.45), "DOCKED": (0.34, 0.7, 0.91),
              "RETRY": (0.84, 0.37, 0.0), "FAILED": (0.1, 0.1, 0.1),
              "PAUSED": (0.8, 0.47, 0.65), "WAIT_HELPER": (0.5, 0.5, 0.5)}


class ExecutiveNode(Node):
    """Sequences an assembly; see the module docstring for the protocol."""

    def __init__(self, **kwargs) -> None:
        super().__init__("executive", **common.node_kwargs(kwargs))
        self.settings = common.declare_dataclass_params(self, ExecutiveSettings())
        cb = ReentrantCallbackGroup()
        self._states: ModuleStateArray | None = None
        self._plan: AssemblyPlan | None = None
        self._plan_count = 0
        self._status: DockingStatusArray | None = None
        self._connections: ConnectionArray | None = None
        self._approved = False
        self._cancel_requested = False
        self._busy = False

        self.create_subscription(ModuleStateArray, names.STATES, self._on_states,
                                 common.SENSOR_QOS)
        self.create_subscription(AssemblyPlan, names.PLAN, self._on_plan,
                                 common.LATCHED_QOS)
        self.create_subscription(DockingStatusArray, names.DOCKING_STATUS,
                                 self._on_status, 10)
        self.create_subscription(ConnectionArray, names.CONNECTIONS,
                                 self._on_connections, common.LATCHED_QOS)
        self._target_pub = self.create_publisher(TargetTopology, names.TARGET,
                                                 common.LATCHED_QOS)
        self._stage_pub = self.create_publisher(Int32, names.ACTIVE_STAGE,
                                                common.LATCHED_QOS)
        self._marker_pub = self.create_publisher(MarkerArray, names.MODULE_MARKERS,
                                                 common.LATCHED_QOS)
        self.create_timer(1.0 / self.settings.marker_rate_hz, self._publish_markers)
        self.create_service(Trigger, names.APPROVE, self._on_approve, callback_group=cb)
        self.create_service(Trigger, names.CANCEL, self._on_cancel, callback_group=cb)
        self._server = ActionServer(
            self, Assemble, names.ASSEMBLE, execute_callback=self._execute,
            goal_callback=self._on_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=cb)
        self._publish_stage(-1)
        self.get_logger().info("executive ready: action /assembly/assemble")

    # --- inputs ---------------------------------------------------------------------------
    def _on_states(self, msg: ModuleStateArray) -> None:
        self._states = msg

    def _on_plan(self, msg: AssemblyPlan) -> None:
        self._plan = msg
        self._plan_count += 1

    def _on_status(self, msg: DockingStatusArray) -> None:
        self._status = msg

    def _on_connections(self, msg: ConnectionArray) -> None:
        self._connections = msg

    def _on_approve(self, _req, resp):
        if not self._busy:
            resp.success, resp.message = False, "no assembly is waiting for approval"
        else:
            self._approved = True
            resp.success, resp.message = True, "approved"
            self.get_logger().info("assembly approved by operator")
        return resp

    def _on_cancel(self, _req, resp):
        self._cancel_requested = True
        self._publish_stage(-1)
        resp.success, resp.message = True, "cancel requested: all modules stop"
        self.get_logger().warn("cancel requested: publishing active_stage=-1")
        return resp

    def _on_goal(self, _goal) -> GoalResponse:
        if self._busy:
            self.get_logger().error("refusing a second Assemble goal while one runs")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    # --- helpers --------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _publish_stage(self, k: int) -> None:
        self._stage_pub.publish(Int32(data=int(k)))

    async def _wait(self, predicate, timeout_s: float, period_s: float = 0.05) -> bool:
        """Wait (without blocking the executor) until ``predicate()`` or a wall timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            if predicate():
                return True
            if time.monotonic() > deadline:
                return False
            fut = Future()
            timer = self.create_timer(period_s, lambda: fut.set_result(True),
                                      clock=self._wall_clock)
            try:
                await fut
            finally:
                self.destroy_timer(timer)

    @property
    def _wall_clock(self):
        from rclpy.clock import Clock, ClockType
        if not hasattr(self, "_steady"):
            self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        return self._steady

    def _result(self, goal_handle, code: int, message: str, seq=None, plan=None):
        res = Assemble.Result()
        res.success = code == Assemble.Result.ERROR_NONE
        res.error_code = code
        res.message = message
        res.assembly_time_s = float(seq.elapsed) if seq is not None else 0.0
        res.connections = list(self._formed_connections(plan)) if plan is not None else []
        if plan is not None:
            res.plan = plan
        log = (self.get_logger().info if res.success else self.get_logger().warn
               if code == Assemble.Result.ERROR_CANCELLED else self.get_logger().error)
        log(f"assembly {'succeeded' if res.success else 'failed'}: {message}")
        if goal_handle.is_cancel_requested and code == Assemble.Result.ERROR_CANCELLED:
            goal_handle.canceled()
        elif res.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        self._busy = False
        return res

    def _formed_connections(self, plan: AssemblyPlan):
        """Connections measured by the fake hardware, else those of confirmed docks."""
        if self._connections is not None:
            return self._connections.connections
        docked = {s.module for s in (self._status.modules if self._status else [])
                  if s.phase_name == "DOCKED"}
        return [Connection(module_a=a.module, face_a=a.child_face, module_b=a.parent_module,
                           face_b=a.parent_face) for a in plan.actions if a.module in docked]

    def _feedback(self, goal_handle, seq, state: str, t0: float, plan) -> None:
        fb = Assemble.Feedback()
        fb.state = state
        fb.num_stages = seq.num_stages if seq else (plan.num_stages if plan else 0)
        fb.stage = (seq.stage + 1) if seq and seq.stage >= 0 else 0
        if self._status is not None:
            fb.modules = [s.module for s in self._status.modules]
            fb.phases = [s.phase_name for s in self._status.modules]
        fb.elapsed_s = self._now() - t0
        goal_handle.publish_feedback(fb)

    # --- visualisation ---------------------------------------------------------------------
    def _publish_markers(self) -> None:
        """Modules (cubes, coloured by phase), goals (ghosts) and connections for RViz."""
        if self._states is None:
            return
        stamp = self.get_clock().now().to_msg()
        phase = {s.module: s.phase_name for s in (self._status.modules if self._status else [])}
        arr = MarkerArray()
        w = MODULE_WIDTH
        centres = {}

        def marker(ns: str, i: int, kind: int) -> Marker:
            mk = Marker()
            mk.header.frame_id = common.WORLD_FRAME
            mk.header.stamp = stamp
            mk.ns, mk.id, mk.type, mk.action = ns, i, kind, Marker.ADD
            mk.pose.orientation.w = 1.0
            return mk

        for i, m in enumerate(sorted(self._states.modules, key=lambda m: m.id)):
            centres[m.id] = Point(x=m.x, y=m.y, z=w / 2)
            cube = marker("modules", i, Marker.CUBE)
            cube.pose = common.pose2d_to_pose(Pose2D(m.x, m.y, m.yaw), w / 2)
            cube.scale.x = cube.scale.y = cube.scale.z = w
            r, g, b = _PHASE_RGB.get(phase.get(m.id, ""), (0.6, 0.6, 0.6))
            cube.color.r, cube.color.g, cube.color.b = r, g, b
            cube.color.a = 0.9 if m.tracked else 0.3
            arr.markers.append(cube)
            label = marker("labels", i, Marker.TEXT_VIEW_FACING)
            label.pose = common.pose2d_to_pose(Pose2D(m.x, m.y, 0.0), 1.5 * w)
            label.scale.z = 0.3 * w
            label.color.r = label.color.g = label.color.b = label.color.a = 1.0
            label.text = m.id + (f" {phase[m.id]}" if m.id in phase else "")
            arr.markers.append(label)
        if self._plan is not None:
            for i, a in enumerate(self._plan.actions):
                ghost = marker("goals", i, Marker.CUBE)
                ghost.pose = common.pose2d_to_pose(Pose2D(a.goal_x, a.goal_y, a.goal_yaw), w / 2)
                ghost.scale.x = ghost.scale.y = ghost.scale.z = 0.98 * w
                ghost.color.g = ghost.color.b = 1.0
                ghost.color.a = 0.15
                arr.markers.append(ghost)
        links = marker("connections", 0, Marker.LINE_LIST)
        links.scale.x = 0.006
        links.color.r = links.color.a = 1.0
        links.color.g = 0.8
        for c in (self._connections.connections if self._connections else []):
            if c.module_a in centres and c.module_b in centres:
                links.points += [centres[c.module_a], centres[c.module_b]]
        arr.markers.append(links)
        self._marker_pub.publish(arr)

    # --- the action -----------------------------------------------------------------------
    async def _execute(self, goal_handle):
        self._busy = True
        self._approved = False
        self._cancel_requested = False
        R = Assemble.Result
        goal = goal_handle.request
        t0 = self._now()
        self._publish_stage(-1)

        if not await self._wait(lambda: self._states is not None and any(
                m.tracked for m in self._states.modules), self.settings.states_timeout_s):
            return self._result(goal_handle, R.ERROR_NO_STATES,
                                f"no tracked module states on {names.STATES} within "
                                f"{self.settings.states_timeout_s:.1f} s")
        poses = states_msg_to_poses(self._states, tracked_only=True)
        try:
            scenario = target_msg_to_scenario(goal.target, poses)
        except ValueError as exc:
            return self._result(goal_handle, R.ERROR_INVALID_TARGET, f"invalid target: {exc}")
        try:
            from smores_assembly.planning import plan_assembly
            plan_assembly(scenario, poses)
        except ValueError as exc:
            return self._result(goal_handle, R.ERROR_PLANNING, f"cannot plan: {exc}")

        count = self._plan_count
        target = goal.target
        target.header.stamp = self.get_clock().now().to_msg()
        self._target_pub.publish(target)
        self.get_logger().info(f"target '{target.name}' published "
                               f"({len(target.nodes)} nodes); waiting for the plan")
        if not await self._wait(lambda: self._plan_count > count and
                                self._plan.target_name == target.name,
                                self.settings.plan_timeout_s):
            return self._result(goal_handle, R.ERROR_PLANNING,
                                f"no plan on {names.PLAN} within "
                                f"{self.settings.plan_timeout_s:.1f} s")
        plan = self._plan
        stages: list[list[str]] = [[] for _ in range(plan.num_stages)]
        for a in plan.actions:
            stages[a.stage].append(a.module)
        self.get_logger().info(
            f"plan: root {plan.root.root_module} as {plan.root.centroid_node}, "
            f"{len(plan.actions)} docks in {plan.num_stages} stages, "
            f"assignment cost {plan.total_cost_m:.3f} m")

        if goal.require_approval:
            self.get_logger().info("waiting for operator approval on /assembly/approve")
            self._feedback(goal_handle, None, "WAITING_APPROVAL", t0, plan)
            ok = await self._wait(lambda: self._approved or self._cancel_requested
                                  or goal_handle.is_cancel_requested,
                                  self.settings.approval_timeout_s)
            if self._cancel_requested or goal_handle.is_cancel_requested:
                return self._result(goal_handle, R.ERROR_CANCELLED, "cancelled before approval",
                                    plan=plan)
            if not ok:
                return self._result(goal_handle, R.ERROR_APPROVAL_TIMEOUT,
                                    f"no approval within {self.settings.approval_timeout_s:.0f} s",
                                    plan=plan)

        seq = StageSequencer(stages, self.settings.stage_timeout_s)
        stage = seq.start(self._now())
        self._publish_stage(stage)
        self.get_logger().info(f"stage 1/{seq.num_stages}: {', '.join(stages[0])}")
        last_fb = 0.0
        while True:
            if self._cancel_requested or goal_handle.is_cancel_requested:
                seq.cancel(self._now())
                self._publish_stage(-1)
                return self._result(goal_handle, R.ERROR_CANCELLED,
                                    "cancelled: every module stopped", seq, plan)
            phases = {}
            if self._status is not None and self._status.stage == seq.stage:
                phases = {s.module: s.phase_name for s in self._status.modules}
            prev = seq.stage
            stage = seq.update(phases, self._now())
            if stage != prev:
                self._publish_stage(stage)
                rec = seq.records[prev] if prev >= 0 else None
                if rec is not None and rec.end is not None and seq.state != SeqState.FAILED:
                    self.get_logger().info(
                        f"stage {prev + 1}/{seq.num_stages} done in {rec.end - rec.start:.1f} s")
                if stage >= 0:
                    self.get_logger().info(
                        f"stage {stage + 1}/{seq.num_stages}: {', '.join(stages[stage])}")
            if seq.state is SeqState.SUCCEEDED:
                return self._result(goal_handle, R.ERROR_NONE,
                                    f"target '{target.name}' assembled: {len(plan.actions)} docks "
                                    f"in {seq.num_stages} stages, {seq.elapsed:.1f} s", seq, plan)
            if seq.state is SeqState.FAILED:
                return self._result(goal_handle, R.ERROR_DOCKING, seq.error, seq, plan)
            now = time.monotonic()
            if now - last_fb >= 1.0 / self.settings.feedback_rate_hz:
                last_fb = now
                self._feedback(goal_handle, seq, "EXECUTING", t0, plan)
            await self._wait(lambda: False, 0.05)

    def on_shutdown(self) -> None:
        """Stop every module when the executive goes down."""
        self._publish_stage(-1)


def main(args=None) -> int:
    """Run the executive node."""
    return common.run_node(ExecutiveNode, args)


if __name__ == "__main__":
    sys.exit(main())
