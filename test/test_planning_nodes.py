"""ROS adapters of the planning core: message conversions (round trips) and the
``root_search`` + ``task_assignment`` nodes over DDS, checked against the core's results."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from ros_helpers import HANG_S

from smores_assembly.geometry import Pose2D
from smores_assembly.planning import RootChoice, plan_assembly, search_root, with_schedule
from smores_assembly.staging import DEFAULT_SCHEDULE
from smores_assembly.ros import names
from smores_assembly.scenario import ScenarioError, load_scenario

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from smores_assembly.msg import (AssemblyPlan, ModuleState, ModuleStateArray,  # noqa: E402
                                 RootSelection, TargetTopology)
from smores_assembly.ros.common import LATCHED_QOS, STATES_PUB_QOS  # noqa: E402
from smores_assembly.ros.convert import (msg_to_plan, msg_to_root, plan_to_msg,  # noqa: E402
                                         root_to_msg, scenario_to_target_msg,
                                         states_msg_to_poses, target_msg_to_scenario,
                                         validate_target_msg)
from smores_assembly.ros.root_search import RootSearchNode  # noqa: E402
from smores_assembly.ros.task_assignment import TaskAssignmentNode  # noqa: E402

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"


def states_msg(poses: dict[str, Pose2D], untracked: dict[str, Pose2D] | None = None
               ) -> ModuleStateArray:
    msg = ModuleStateArray()
    msg.header.frame_id = "world"
    for tracked, group in ((True, poses), (False, untracked or {})):
        for m, p in group.items():
            s = ModuleState(id=m, x=p.x, y=p.y, yaw=p.yaw, tracked=tracked)
            s.pose.position.x, s.pose.position.y = p.x, p.y
            msg.modules.append(s)
    return msg


# --- conversions ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mobile_manipulator", "holonomic_vehicle", "rc_car"])
def test_scenario_and_plan_round_trips(name):
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    tmsg = scenario_to_target_msg(sc, stamp=Time(sec=3, nanosec=5))
    assert tmsg.helpers == sc.helpers and tmsg.header.stamp.sec == 3
    back = target_msg_to_scenario(tmsg, sc.modules, source=sc.source)
    assert back == sc
    plan = plan_assembly(sc)
    assert msg_to_plan(plan_to_msg(plan)) == plan
    pmsg = plan_to_msg(plan)
    assert pmsg.num_stages == len(plan.stages) and len(pmsg.actions) == len(sc.edges)
    assert pmsg.root.root_module == plan.root_module
    root = RootChoice(plan.root_node, plan.root_module, plan.root_pose)
    rmsg = root_to_msg(sc.name, root)
    assert rmsg.target_name == sc.name and msg_to_root(rmsg) == root


def test_states_conversion_and_target_validation():
    poses = {"a": Pose2D(1.0, 2.0, 0.5), "b": Pose2D(-1.0, 0.0, -3.0)}
    msg = states_msg(poses, untracked={"c": Pose2D(0.0, 0.0, 0.0)})
    assert states_msg_to_poses(msg) == poses
    assert set(states_msg_to_poses(msg, tracked_only=False)) == {"a", "b", "c"}
    sc = load_scenario(SCENARIOS / "rc_car.yaml")
    tmsg = scenario_to_target_msg(sc)
    validate_target_msg(tmsg)  # valid without any module poses
    tmsg.edges[1].child_face = "SIDE"
    with pytest.raises(ScenarioError, match=r"target.edges\[1\].child_face: unknown face "
                                            r"'SIDE'"):
        validate_target_msg(tmsg)
    with pytest.raises(ScenarioError, match="helpers"):
        target_msg_to_scenario(scenario_to_target_msg(sc),
                               {m: p for m, p in sc.modules.items() if m != "h0"})


# --- nodes over DDS -------------------------------------------------------------------------

class Harness:
    """The two planning nodes plus a test node, spun by one executor."""

    def __init__(self, ctx, sim_time: bool = False, **task_assignment_kwargs):
        sim = {"parameter_overrides": [Parameter("use_sim_time", value=True)]} \
            if sim_time else {}
        self.nodes = [RootSearchNode(context=ctx, **sim),
                      TaskAssignmentNode(context=ctx, **sim, **task_assignment_kwargs)]
        self.io = Node("planning_test_io", context=ctx)
        self.nodes.append(self.io)
        self.target_pub = self.io.create_publisher(TargetTopology, names.TARGET, LATCHED_QOS)
        # the mocap bridge's QoS: the planning nodes subscribe on demand and get the
        # latest (latched) states at once
        self.states_pub = self.io.create_publisher(ModuleStateArray, names.STATES,
                                                   STATES_PUB_QOS)
        self.roots: list[RootSelection] = []
        self.plans: list[AssemblyPlan] = []
        self.io.create_subscription(RootSelection, names.ROOT, self.roots.append, LATCHED_QOS)
        self.io.create_subscription(AssemblyPlan, names.PLAN, self.plans.append, LATCHED_QOS)
        self.states: ModuleStateArray | None = None
        # Sensor QoS is best effort: keep publishing the states like a mocap bridge would.
        self.io.create_timer(0.05, self._publish_states)
        self.executor = SingleThreadedExecutor(context=ctx)
        for n in self.nodes:
            self.executor.add_node(n)

    def _publish_states(self):
        if self.states is not None:
            self.states_pub.publish(self.states)

    def spin_until(self, cond, timeout=HANG_S):
        end = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < end, "timed out waiting for a condition"
            self.executor.spin_once(timeout_sec=0.05)

    def close(self):
        self.executor.shutdown()
        for n in self.nodes:
            n.destroy_node()


@pytest.fixture
def harness(ros_context):
    h = Harness(ros_context)
    yield h
    h.close()


def plan_for(h: Harness, name: str):
    return [p for p in h.plans if p.target_name == name]


@pytest.mark.ros
def test_nodes_publish_root_and_plan_equal_to_core(harness):
    h = harness
    sc = load_scenario(SCENARIOS / "mobile_manipulator.yaml")
    mean = Pose2D(sum(p.x for p in sc.modules.values()) / 7,
                  sum(p.y for p in sc.modules.values()) / 7, 0.0)
    # An untracked module sitting exactly on the mean must not become the root.
    h.states = states_msg(sc.modules, untracked={"m9": mean})
    h.target_pub.publish(scenario_to_target_msg(sc, stamp=Time(sec=7, nanosec=11)))
    h.spin_until(lambda: h.roots and plan_for(h, sc.name))
    root = h.roots[-1]
    core_root = search_root(sc)
    assert (root.target_name, root.centroid_node, root.root_module) == \
        (sc.name, "hub", "m1") == (sc.name, core_root.node, core_root.module)
    assert (root.x, root.y, root.yaw) == core_root.pose.as_tuple()
    assert (root.header.stamp.sec, root.header.stamp.nanosec) == (7, 11)
    plan = msg_to_plan(plan_for(h, sc.name)[-1])
    # the node plans in its `schedule` parameter's mode (default pipelined)
    assert plan == with_schedule(plan_assembly(sc), DEFAULT_SCHEDULE)
    assert "m9" not in plan.assignment.values() and "m9" not in plan.idle


@pytest.mark.ros
def test_planning_nodes_with_sim_time_take_no_clock_and_still_plan(ros_context):
    """With ``use_sim_time`` (the fake stack) the planning nodes subscribe to no
    ``/clock`` (they never read their clock; it was ~2/3 of their wake-ups while idle,
    issue 10), unlike a plain node with ``use_sim_time``, and plan as before."""
    h = Harness(ros_context, sim_time=True)
    plain = Node("plain_sim_time", context=ros_context,
                 parameter_overrides=[Parameter("use_sim_time", value=True)])
    try:
        def clock_subs(n):
            return [s.topic_name for s in n.subscriptions if s.topic_name == "/clock"]
        assert clock_subs(plain) == ["/clock"]   # rclpy's time source subscribes
        for n in h.nodes[:2]:
            assert n.get_parameter("use_sim_time").value is True
            assert clock_subs(n) == [], n.get_name()
        sc = load_scenario(SCENARIOS / "mobile_manipulator.yaml")
        h.states = states_msg(sc.modules)
        h.target_pub.publish(scenario_to_target_msg(sc))
        h.spin_until(lambda: h.roots and plan_for(h, sc.name))
        plan = msg_to_plan(plan_for(h, sc.name)[-1])
        assert plan == with_schedule(plan_assembly(sc), DEFAULT_SCHEDULE)
    finally:
        plain.destroy_node()
        h.close()


@pytest.mark.ros
def test_nodes_plan_rc_car_with_live_poses_and_skip_invalid_target(harness):
    h = harness
    sc = load_scenario(SCENARIOS / "rc_car.yaml")
    # Mocap poses differ from the file's: the plan follows the live poses.
    live = {m: Pose2D(p.x + 0.5, p.y - 0.25, p.yaw) for m, p in sc.modules.items()}
    h.states = states_msg(live)
    bad = scenario_to_target_msg(sc)
    bad.name = "broken"
    bad.edges[0].parent_face = "FRONT"
    h.target_pub.publish(bad)
    h.spin_until(lambda: "broken" in h.nodes[0].rejected)
    h.target_pub.publish(scenario_to_target_msg(sc, stamp=Time(sec=1)))
    h.spin_until(lambda: plan_for(h, sc.name))
    # Nothing was published for the invalid target.
    assert [r.target_name for r in h.roots] == [sc.name]
    assert [p.target_name for p in h.plans] == [sc.name]
    plan = msg_to_plan(h.plans[-1])
    expected = with_schedule(plan_assembly(sc, modules=live), DEFAULT_SCHEDULE)
    assert plan == expected
    assert plan.helpers == ["h0"] and all(
        a.helper == "h0" for a in plan.actions if a.needs_helper)
    assert math.isclose(plan.root_pose.x, live[plan.root_module].x)


@pytest.mark.ros
@pytest.mark.parametrize("schedule,full", [("pipelined", False), ("sequential", False),
                                           ("staged", True), ("pipelined", True)])
def test_reconfiguration_plan_of_the_node_equals_the_cli_plan(schedule, full, ros_context,
                                                              capsys):
    """`plan` and `run` show the same reconfiguration plan (issue 15): task_assignment
    (as `run` starts it, `-p schedule:=MODE`) publishes for the walker's target with its
    start connections exactly what `smores-assemble plan --json --schedule MODE
    [--full-disassembly]` prints, undocking stages and schedule mode included."""
    from rclpy.parameter import Parameter

    from smores_assembly.cli import json_rounded, main
    from smores_assembly.planning import Plan

    path = SCENARIOS / "walker_to_manipulator.yaml"
    args = ["plan", str(path), "--json", "--schedule", schedule]
    assert main(args + (["--full-disassembly"] if full else [])) == 0
    cli_plan = Plan.from_dict(json.loads(capsys.readouterr().out))
    assert cli_plan.schedule == schedule and cli_plan.method == ("full" if full else "reuse")
    assert cli_plan.undocks and cli_plan.num_undock_stages >= 1
    h = Harness(ros_context,
                parameter_overrides=[Parameter("schedule", value=schedule)])
    try:
        sc = load_scenario(path)
        h.states = states_msg(sc.modules)
        target = scenario_to_target_msg(sc, stamp=Time(sec=5))
        target.full_disassembly = full
        h.target_pub.publish(target)
        h.spin_until(lambda: plan_for(h, sc.name))
        node_plan = msg_to_plan(plan_for(h, sc.name)[-1])
    finally:
        h.close()
    # the message carries the goals of the modules that dock (and the root's), not those of
    # the other kept modules: compare what the executive receives, at the precision
    # `plan --json` prints (poses rounded to 1e-6 m / rad: cli.json_rounded)
    assert json_rounded(node_plan.to_dict()) == \
        json_rounded(msg_to_plan(plan_to_msg(cli_plan)).to_dict())
    assert (node_plan.stages, node_plan.kept) == (cli_plan.stages, cli_plan.kept)
    assert json_rounded(node_plan.to_dict())["undocks"] == \
        json_rounded(cli_plan.to_dict())["undocks"] != []
    if schedule == "sequential":  # one dock per stage after the undocking stages
        assert all(len(st) == 1 for st in node_plan.stages[node_plan.num_undock_stages:])


@pytest.mark.parametrize("full", [False, True], ids=["reuse", "full"])
def test_pipelined_reconfiguration_from_the_message_stages_like_the_core(full):
    """The navigation reads the plan from the message, which has no goals for the kept
    modules other than the root: completed with where they stand (with_kept_goals), every
    pipelined stage's problem (zones, staging poses, direct modules) equals the core
    plan's (a dock onto a kept parent raised KeyError in the walker's run)."""
    from smores_assembly.reconfigure import (plan_reconfiguration, snap_structures,
                                             with_kept_goals)
    from smores_assembly.staging import staging_problem

    sc = load_scenario(SCENARIOS / "walker_to_manipulator.yaml")
    core = with_schedule(plan_reconfiguration(sc, method="full" if full else "reuse"),
                         "pipelined")
    received = msg_to_plan(plan_to_msg(core))
    poses = snap_structures(sorted(sc.initial_connections), sc.modules, sc.module_width)
    if not full:
        assert set(core.kept) - set(received.goals), "the message lost no kept goal"
    done = with_kept_goals(received, poses)
    assert set(core.goals) <= set(done.goals)
    for m in core.goals:
        assert done.goals[m].distance_to(core.goals[m]) < 1e-9, m
    for k in range(len(core.stages)):
        a = staging_problem(core, k, poses, (), 0.04)
        b = staging_problem(done, k, poses, (), 0.04)
        assert set(a.zones) == set(b.zones) and a.direct == b.direct
        assert set(a.staging) == set(b.staging)
        for m, (cur, goal) in a.staging.items():
            assert cur == b.staging[m][0] and goal.distance_to(b.staging[m][1]) < 1e-9, m
