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
   ``active_stage = -1``: every module stops and the goal ends CANCELED (error code
   ``ERROR_CANCELLED``). A cancel holds from the moment it is asked for (also right after
   the goal was accepted); with no goal, ``/assembly/cancel`` answers failure.

Every goal ends with a result (code and message), also when something raises inside goal
handling (``ERROR_INTERNAL``), and the server is then ready for the next goal.

The sequencing logic is :class:`smores_assembly.sequencer.StageSequencer` (no ROS).

With ``lockstep:=true`` the executive is a participant of the fake hardware's lockstep
simulation (:mod:`smores_assembly.ros.lockstep`): the stage loop runs at its turns every
0.05 s of simulated time, a goal is prepared (states, target, plan, approval) while the
simulation waits, and while no goal runs the simulation is held at the executive's first
turn with every module tracked, so that an assembly always starts from the same state.
"""
from __future__ import annotations

import sys
import time

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from rclpy.task import Future
from geometry_msgs.msg import Point
from std_msgs.msg import Int32
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from action_msgs.srv import CancelGoal

from smores_assembly import params
from smores_assembly.action import Assemble
from smores_assembly.msg import (AssemblyPlan, Connection, ConnectionArray, DockingStatusArray,
                                 ModuleStateArray, TargetTopology)
from smores_assembly.errors import InputError
from smores_assembly.geometry import MODULE_WIDTH, Pose2D
from smores_assembly.ros import common, lockstep, names
from smores_assembly.ros.convert import (msg_to_plan, phases_from_status, states_msg_to_poses,
                                         target_msg_to_scenario)
from smores_assembly.sequencer import ExecutiveSettings
from smores_assembly.goal_runner import ErrorCode, GoalRunner, PlanInfo
from smores_assembly.vocabulary import Phase, counted

#: Lockstep: period of the executive's turns outside a goal's stages [s, simulated time].
TURN_PERIOD_S = 0.05
#: Lockstep: longest interval between two looks of the stage loop at the stages while a
#: goal executes [s, simulated time] (stage timeouts, cancellation, feedback). The loop
#: looks at every turn of the executive, and a docking status whose phases changed gives it
#: one (at the next step): it is event-driven, not a poll of every status (issue 10).
EXECUTING_POLL_S = 0.5

# The action's result codes are the core's (one list, checked here).
for _code in ErrorCode:
    if getattr(Assemble.Result, f"ERROR_{_code.name}", None) != _code.value:
        raise ImportError(f"Assemble.Result.ERROR_{_code.name} differs from "
                          f"goal_runner.ErrorCode.{_code.name} = {_code.value}")



class ExecutiveNode(Node):
    """Sequences an assembly; see the module docstring for the protocol.

    Goal handling itself is :class:`smores_assembly.goal_runner.GoalRunner` (no ROS); this
    node is its :class:`~smores_assembly.goal_runner.GoalPort` and maps its outcomes to
    action results and terminal states.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("executive", **common.node_kwargs(kwargs))
        self.lockstep = lp = lockstep.declare(self)
        self._waiter = lp.waiter()
        self._target_sent = False
        settings, = params.node_settings("executive")
        self.settings: ExecutiveSettings = common.declare_dataclass_params(self, settings)
        cb = ReentrantCallbackGroup()
        self._states_msg: ModuleStateArray | None = None
        self._states_raw: bytes | None = None   # the latest states, decoded on demand
        self._plan: AssemblyPlan | None = None
        self._plan_count = 0
        self._plan_wanted: tuple[int, str] | None = None
        self._status: DockingStatusArray | None = None
        self._connections: ConnectionArray | None = None
        self._method = "reuse"                  # reconfiguration method of the goal
        self._start_connections: list[Connection] = []
        self._goal_handle = None
        self.runner = GoalRunner(self, self.settings)

        lp.create_subscription(ModuleStateArray, names.STATES, self._on_states,
                               common.SENSOR_QOS, raw=True)
        lp.create_subscription(AssemblyPlan, names.PLAN, self._on_plan,
                               common.LATCHED_QOS, counted=False)
        lp.create_subscription(DockingStatusArray, names.DOCKING_STATUS,
                               self._on_status, common.COMMAND_QOS, wake=True)
        lp.create_subscription(ConnectionArray, names.CONNECTIONS,
                               self._on_connections, common.LATCHED_QOS)
        self._target_pub = lp.create_publisher(TargetTopology, names.TARGET,
                                               common.LATCHED_QOS)
        self._stage_pub = lp.create_publisher(Int32, names.ACTIVE_STAGE,
                                              common.LATCHED_QOS)
        self._marker_pub = self.create_publisher(MarkerArray, names.MODULE_MARKERS,
                                                 common.LATCHED_QOS)
        lp.create_timer(1.0 / self.settings.marker_rate_hz, self._publish_markers)
        # lockstep: turns every 0.05 s; with no goal the simulation is held at the first turn
        # with every module tracked, and a goal always starts at that turn (paused while a
        # goal executes its stages: the stage loop's own waits give the turns then). "No
        # goal" is no goal *entered* (_execute): an accepted goal whose execution has not
        # started yet must not let that turn go (it started a turn later under load)
        self._turn_timer = lp.create_timer(TURN_PERIOD_S, lambda: None)
        self._goal_entered = False
        lp.hold(lambda: not self._goal_entered and self._all_tracked())
        self.create_service(Trigger, names.APPROVE, self._on_approve, callback_group=cb)
        self.create_service(Trigger, names.CANCEL, self._on_cancel, callback_group=cb)
        # /assembly/cancel goes through the action's own cancel service, so that a goal
        # cancelled either way ends in the one terminal state CANCELED.
        self._cancel_client: Client[CancelGoal.Request, CancelGoal.Response] = self.create_client(
            CancelGoal, names.ASSEMBLE + "/_action/cancel_goal", callback_group=cb)
        self._server = ActionServer(
            self, Assemble, names.ASSEMBLE, execute_callback=self._execute,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_action_cancel, callback_group=cb)
        self._publish_stage(-1)
        self.get_logger().info(f"executive ready: action {names.ASSEMBLE}")

    def _all_tracked(self) -> bool:
        return self._states is not None and all(m.tracked for m in self._states.modules)

    # --- inputs ---------------------------------------------------------------------------
    def _on_states(self, raw: bytes) -> None:
        self._states_raw = raw

    @property
    def _states(self) -> ModuleStateArray | None:
        """The latest module states (decoded when first read: the executive reads them
        at a goal's start and for its markers, far less often than they arrive)."""
        if self._states_raw is not None:
            self._states_msg = deserialize_message(self._states_raw, ModuleStateArray)
            self._states_raw = None
        return self._states_msg

    def _on_plan(self, msg: AssemblyPlan) -> None:
        self._plan = msg
        self._plan_count += 1

    def _on_status(self, msg: DockingStatusArray) -> None:
        self._status = msg

    def _on_connections(self, msg: ConnectionArray) -> None:
        self._connections = msg

    def _on_approve(self, _req, resp):
        resp.success, resp.message = self.runner.approve()
        if resp.success:
            self.get_logger().info("assembly approved by operator")
        return resp

    def _on_cancel(self, _req, resp):
        resp.success, resp.message = self.runner.request_cancel()
        if resp.success:
            self.get_logger().warning(f"/assembly/cancel: {resp.message}")
            gh = self._goal_handle
            if gh is not None and gh.is_active and not gh.is_cancel_requested:
                req = CancelGoal.Request()
                req.goal_info.goal_id = gh.goal_id
                self._cancel_client.call_async(req)
        else:
            self.get_logger().info(f"/assembly/cancel refused: {resp.message}")
        return resp

    def _on_goal(self, goal) -> GoalResponse:
        ok, why = self.runner.accept(goal.require_approval)
        if not ok:
            self.get_logger().error(f"refusing an Assemble goal: {why}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_accepted(self, goal_handle) -> None:
        self._goal_handle = goal_handle
        goal_handle.execute()

    def _on_action_cancel(self, goal_handle) -> CancelResponse:
        # rclpy offers only goals that are not yet terminal. The goal's cancel state is set
        # here too (no-op when /assembly/cancel already set it).
        if goal_handle is self._goal_handle:
            self.runner.request_cancel()
        return CancelResponse.ACCEPT

    # --- GoalPort (see smores_assembly.goal_runner) ----------------------------------------
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, period_s: float) -> None:
        """Wait ``period_s`` of wall time; in lockstep, while the goal waits for states or
        executes its stages, until this node's next turn ``period_s`` of simulated time
        later (the simulation runs on), else holding the simulation (target, plan and
        approval are handled while it stands still)."""
        goal = self.runner.goal
        phase = goal.phase if goal is not None else ""
        if self.lockstep.enabled and phase == "EXECUTING":
            if self._turn_timer is not None:
                self.lockstep.destroy_timer(self._turn_timer)
                self._turn_timer = None
            await self._waiter.next(max(period_s, EXECUTING_POLL_S), early=True)
            # look on the grid of TURN_PERIOD_S, as the 20-Hz poll did: a status gives a
            # turn at the next step, the look comes at the next grid time (the stages start
            # at the same steps as with the poll; starting up to 40 ms earlier made a staged
            # module of holonomic_vehicle pose-adjust 1.2 s instead of sliding in)
            rest_ns = -self.get_clock().now().nanoseconds % round(TURN_PERIOD_S * 1e9)
            if rest_ns:
                await self._waiter.next(rest_ns * 1e-9)
            return
        if self.lockstep.enabled and phase == "PLANNING" and not self._target_sent:
            await self._waiter.next(period_s)
            return
        fut: Future[bool] = Future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(True)

        timer = self.create_timer(period_s, wake, clock=self._wall_clock)
        try:
            await fut
        finally:
            self.destroy_timer(timer)

    def tracked_poses(self):
        if self._states is None:
            return None
        if self.lockstep.enabled and not self._all_tracked():
            return None  # lockstep: a goal starts at the first turn with all tracked
        return states_msg_to_poses(self._states, tracked_only=True)

    def target_to_scenario(self, target, poses):
        return target_msg_to_scenario(target, poses)

    def plan_locally(self, scenario, poses) -> None:
        from smores_assembly.reconfigure import plan_reconfiguration
        plan_reconfiguration(scenario, modules=poses, method=self._method)

    def target_name(self, target) -> str:
        return target.name

    def target_modules(self, target) -> tuple[set[str], int]:
        named = set(target.helpers)
        for c in target.start_connections:
            named |= {c.module_a, c.module_b}
        return named, len(target.nodes) + len(target.helpers)

    def publish_target(self, target) -> None:
        target.header.stamp = self.get_clock().now().to_msg()
        self._plan_wanted = (self._plan_count, target.name)
        self._target_sent = True
        self._target_pub.publish(target)

    def received_plan(self) -> PlanInfo | None:
        if self._plan_wanted is None or self._plan is None:
            return None
        count, name = self._plan_wanted
        if self._plan_count <= count or self._plan.target_name != name:
            return None
        plan = self._plan
        try:
            stages = msg_to_plan(plan).stages
        except InputError as exc:
            self.get_logger().error(f"{names.PLAN} refused: {exc}")
            return None
        undock_stages = len({u.stage for u in plan.undocks})
        return PlanInfo(stages, f"root {plan.root.root_module} as {plan.root.centroid_node}, "
                                f"{len(plan.actions)} docks"
                                + (f" after {counted(len(plan.undocks), 'undock')} "
                                   f"({counted(undock_stages, 'stage')})"
                                   if plan.undocks else "")
                                + f" in {counted(plan.num_stages, 'stage')}, "
                                f"assignment cost {plan.total_cost_m:.3f} m", plan,
                        undocks=len(plan.undocks), undock_stages=undock_stages)

    def publish_stage(self, stage: int) -> None:
        self._publish_stage(stage)

    def phases(self, stage: int) -> dict[str, Phase]:
        if self._status is None or self._status.stage != stage:
            return {}
        return self._phases()

    def feedback(self, state: str, stage: int, num_stages: int, elapsed_s: float) -> None:
        gh = self._goal_handle
        if gh is None or not gh.is_active:
            return
        fb = Assemble.Feedback()
        fb.state, fb.stage, fb.num_stages, fb.elapsed_s = state, stage, num_stages, elapsed_s
        if self._status is not None:
            phases = self._phases()
            fb.modules = list(phases)
            fb.phases = [ph.name for ph in phases.values()]
        gh.publish_feedback(fb)

    def log(self, level: str, text: str) -> None:
        # One call site per severity: rclpy refuses a call site whose severity changes.
        logger = self.get_logger()
        if level == "error":
            logger.error(text)
        elif level == "warn":
            logger.warning(text)
        else:
            logger.info(text)

    # --- helpers --------------------------------------------------------------------------
    def _phases(self) -> dict[str, Phase]:
        """Module -> docking phase as last reported (empty before any status)."""
        return phases_from_status(self._status) if self._status is not None else {}

    def _publish_stage(self, k: int) -> None:
        self._stage_pub.publish(Int32(data=int(k)))

    @property
    def _wall_clock(self):
        from rclpy.clock import Clock, ClockType
        if not hasattr(self, "_steady"):
            self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        return self._steady

    def _with_start_connections(self, goal):
        """The goal's target with the connections that exist now when the goal asks for a
        reconfiguration (``reconfigure``, ``full_disassembly`` or non-empty
        ``connections``): the fake hardware's when it publishes them, else the goal's
        ``connections`` (real modules); otherwise the target's own ``start_connections``
        (a plain goal assembles as if every module were single, as before)."""
        target = goal.target
        if goal.reconfigure or goal.full_disassembly or goal.connections:
            if self._connections is not None:
                target.start_connections = list(self._connections.connections)
            elif goal.connections:
                target.start_connections = list(goal.connections)
        target.full_disassembly = bool(goal.full_disassembly or target.full_disassembly)
        self._method = "full" if target.full_disassembly else "reuse"
        self._start_connections = list(target.start_connections)
        return target

    def _formed_connections(self, plan: AssemblyPlan):
        """Connections measured by the fake hardware, else those of confirmed docks and,
        in a reconfiguration, the start connections of the kept modules."""
        if self._connections is not None:
            return self._connections.connections
        docked = {m for m, ph in self._phases().items() if ph is Phase.DOCKED}
        kept = set(plan.kept_modules)
        return [c for c in self._start_connections
                if c.module_a in kept and c.module_b in kept] + [
            Connection(module_a=a.module, face_a=a.child_face, module_b=a.parent_module,
                       face_b=a.parent_face) for a in plan.actions if a.module in docked]

    # --- visualisation ---------------------------------------------------------------------
    def _publish_markers(self) -> None:
        """Modules (cubes, coloured by phase), goals (ghosts) and connections for RViz;
        nothing while no one subscribes (a viewer that subscribes later gets the next one,
        ``1 / marker_rate_hz`` later; building the message was a quarter of this node's
        CPU in a Task 1 run, issue 10)."""
        if self._states is None or self._marker_pub.get_subscription_count() == 0:
            return
        stamp = self.get_clock().now().to_msg()
        phase = self._phases()
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
            r, g, b = phase[m.id].rgb if m.id in phase else (0.6, 0.6, 0.6)
            cube.color.r, cube.color.g, cube.color.b = r, g, b
            cube.color.a = 0.9 if m.tracked else 0.3
            arr.markers.append(cube)
            label = marker("labels", i, Marker.TEXT_VIEW_FACING)
            label.pose = common.pose2d_to_pose(Pose2D(m.x, m.y, 0.0), 1.5 * w)
            label.scale.z = 0.3 * w
            label.color.r = label.color.g = label.color.b = label.color.a = 1.0
            label.text = m.id + (f" {phase[m.id].name}" if m.id in phase else "")
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
        """Run the goal with the runner, then give it its result and one terminal state."""
        self._target_sent = False
        # lockstep: start at this node's first turn with every module tracked (where the
        # simulation is held until a goal enters), whenever the goal came; the simulation
        # then waits for the goal's preparation (target, plan, approval) until the stages
        # start. Not tracked within states_timeout_s (here of simulated time: wall seconds
        # would depend on the load): the goal enters all the same, the runner says what is
        # missing
        await self._waiter.enter(self._all_tracked, self.settings.states_timeout_s)
        self._goal_entered = True
        try:
            target = self._with_start_connections(goal_handle.request)
            outcome = await self.runner.execute(target)
        finally:
            if self._turn_timer is None:
                self._turn_timer = self.lockstep.create_timer(TURN_PERIOD_S, lambda: None)
            self._goal_entered = False
            self._waiter.release()
        res = Assemble.Result()
        res.success = outcome.success
        res.error_code = int(outcome.code)
        res.message = outcome.message
        res.assembly_time_s = float(outcome.elapsed_s)
        try:
            if outcome.plan is not None:
                res.plan = outcome.plan
                res.connections = list(self._formed_connections(outcome.plan))
        except Exception as exc:  # noqa: BLE001 - the result is still sent
            self.log("error", f"result: cannot fill plan/connections: {exc}")
        try:
            if outcome.code is ErrorCode.CANCELLED:
                # A cancel through /assembly/cancel reaches the action server through its
                # cancel service: wait (bounded) for it so the state is CANCELED.
                deadline = time.monotonic() + 5.0
                while (goal_handle.is_active and not goal_handle.is_cancel_requested
                       and time.monotonic() < deadline):
                    await self.sleep(0.02)
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
            elif outcome.success:
                goal_handle.succeed()
            else:
                goal_handle.abort()
        except Exception as exc:  # noqa: BLE001 - rclpy aborts a goal left active
            self.log("error", f"cannot set the goal's terminal state: {exc}")
        finally:
            if self._goal_handle is goal_handle:
                self._goal_handle = None
        return res

    def on_shutdown(self) -> None:
        """Stop every module when the executive goes down."""
        self._publish_stage(-1)


def main(args=None) -> int:
    """Run the executive node."""
    return common.run_node(ExecutiveNode, args)


if __name__ == "__main__":
    sys.exit(main())
