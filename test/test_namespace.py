"""Two swarms can share a ROS graph: the stack's nodes use relative names, so nodes started
under a namespace talk to each other there and nothing leaks into the root namespace."""
from __future__ import annotations

import json

import installed
import pytest
import yaml
from ros_helpers import HANG_S, spin_until

from smores_assembly.ros import names

pytestmark = pytest.mark.ros


def test_names_resolve_like_rcl():
    assert names.resolve("", names.STATES) == "/modules/states"
    assert names.resolve("/", names.STATES) == "/modules/states"
    assert names.resolve("/swarm1", names.STATES) == "/swarm1/modules/states"
    assert names.resolve("swarm1/", names.module_topic("m3", names.CMD_VEL)) == \
        "/swarm1/m3/cmd_vel"
    assert names.resolve("/swarm1", names.CLOCK) == "/clock"
    assert names.mocap_topic(names.VICON_FORMAT, "m3") == "vicon/m3/m3"


def test_a_namespaced_stack_talks_to_itself_and_only_there(ros_context, tmp_path):
    """fake_hardware -> mocap_bridge -> root_search -> task_assignment, all under /swarm1:
    a target published in /swarm1 gets its plan there; every topic of the stack is under
    /swarm1 (but /clock); a root-namespace listener hears nothing."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from smores_assembly.msg import AssemblyPlan, ModuleStateArray, TargetTopology
    from smores_assembly.ros import common
    from smores_assembly.ros.convert import scenario_to_target_msg
    from smores_assembly.ros.fake_hardware import FakeHardwareNode
    from smores_assembly.ros.mocap_bridge import MocapBridgeNode
    from smores_assembly.ros.root_search import RootSearchNode
    from smores_assembly.ros.task_assignment import TaskAssignmentNode
    from smores_assembly.scenario import load_scenario

    scen = tmp_path / "pair.yaml"
    scen.write_text(yaml.safe_dump({
        "name": "pair", "target": {"nodes": ["p", "c"],
                                   "edges": [{"parent": "p", "parent_face": "TOP",
                                              "child": "c", "child_face": "BOTTOM"}]},
        "modules": {"a": [0.0, 0.0, 0.0], "b": [0.4, 0.2, 1.0]}}))
    ns = "/swarm1"
    stack = [
        FakeHardwareNode(context=ros_context, namespace=ns, parameter_overrides=[
            Parameter("scenario", value=str(scen)), Parameter("real_time_factor", value=5.0)]),
        MocapBridgeNode(context=ros_context, namespace=ns, parameter_overrides=[
            Parameter("scenario", value=str(scen)), Parameter("use_sim_time", value=True)]),
        RootSearchNode(context=ros_context, namespace=ns),
        TaskAssignmentNode(context=ros_context, namespace=ns),
    ]
    probe = rclpy.create_node("probe", namespace=ns, context=ros_context)
    outsider = rclpy.create_node("outsider", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    for n in (*stack, probe, outsider):
        ex.add_node(n)
    plans, heard = [], []
    probe.create_subscription(AssemblyPlan, names.PLAN, plans.append, common.LATCHED_QOS)
    outsider.create_subscription(AssemblyPlan, names.PLAN, heard.append, common.LATCHED_QOS)
    outsider.create_subscription(ModuleStateArray, names.STATES, heard.append,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    target_pub = probe.create_publisher(TargetTopology, names.TARGET, common.LATCHED_QOS)
    try:
        target_pub.publish(scenario_to_target_msg(load_scenario(scen),
                                                  stamp=probe.get_clock().now().to_msg()))
        assert spin_until(ex, lambda: bool(plans), HANG_S), "no plan in /swarm1"
        plan = plans[-1]
        assert plan.target_name == "pair" and len(plan.actions) == 1
        assert {plan.root.root_module, plan.actions[0].module} == {"a", "b"}

        topics = {t for t, _ in probe.get_topic_names_and_types()}
        expected = {"/swarm1/" + t for t in (
            names.STATES, names.TARGET, names.ROOT, names.PLAN, names.CONNECTIONS,
            names.COLLISIONS, names.GROUND_TRUTH, "vicon/a/a", "vicon/b/b", "a/cmd_vel",
            "b/magnets", "a/joint_states", "b/helper_command")}
        assert expected <= topics, sorted(expected - topics)
        ros_own = {"/rosout", "/parameter_events", names.CLOCK}
        outside = sorted(t for t in topics - ros_own if not t.startswith("/swarm1/")
                         and t not in ("/assembly/plan", "/modules/states"))
        assert outside == []
        # nobody publishes the root-namespace names the outsider listens to
        assert probe.count_publishers("/assembly/plan") == 0
        assert probe.count_publishers("/modules/states") == 0
        assert heard == []
        nodes = set(probe.get_node_names_and_namespaces())
        assert {(n, ns) for n in ("fake_hardware", "mocap_bridge", "root_search",
                                  "task_assignment")} <= nodes
    finally:
        ex.shutdown()
        for n in (outsider, probe, *reversed(stack)):
            n.destroy_node()


def test_two_swarms_side_by_side_in_one_domain(tmp_path, ros_domain):
    """Two whole stacks in one ROS domain, under /swarm1 and /swarm2, each with its own
    fake hardware and simulated clock, and the same module ids (m0, m1, m2) in both: each
    assembles its own target (pair: m1 comes from (0.30, 0.10); on_predock: m1 starts on
    its pre-dock pose), and while they run each namespace has its own clock and nobody
    publishes the root-namespace names."""
    import signal
    import subprocess
    from pathlib import Path

    import rclpy

    repo = Path(__file__).resolve().parents[1]
    field = repo / "test" / "data" / "field"
    runs = {}
    for ns, scen in (("/swarm1", "pair"), ("/swarm2", "on_predock")):
        out = tmp_path / ns.strip("/")
        with open(tmp_path / f"{scen}.log", "w") as log:
            runs[ns] = (out, subprocess.Popen(
                [*installed.cli(), "run",
                 str(field / f"{scen}.yaml"), "--namespace", ns, "--out", str(out),
                 # real time: both runs must still be up when their clocks are checked
                 # (at the default 4x pace the one-dock run could end first on an idle
                 # machine: "a run ended early" in a clean-clone CI)
                 "--real-time-factor", "1", "--timeout", "400"],
                stdout=log, stderr=subprocess.STDOUT, cwd=repo))
    from rclpy.executors import SingleThreadedExecutor
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    probe = rclpy.create_node("probe", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(probe)
    try:
        spin_until(ex, lambda: all(probe.count_publishers(f"{ns}/clock") == 1 for ns in runs)
                   or any(p.poll() is not None for _, p in runs.values()), 300)
        assert all(p.poll() is None for _, p in runs.values()), "a run ended early"
        clocks = {ns: probe.count_publishers(f"{ns}/clock") for ns in runs}
        root_names = {t: probe.count_publishers(t) for t in (
            "/clock", "/" + names.STATES, "/" + names.CONNECTIONS, "/m1/cmd_vel")}
        for _, p in runs.values():
            p.wait(600)
    finally:
        # a run stopped by SIGINT shuts its nodes down (SIGKILL would leave them running)
        for _, p in runs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for _, p in runs.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        ex.shutdown()
        probe.destroy_node()
        ctx.try_shutdown()
    assert clocks == {"/swarm1": 1, "/swarm2": 1}
    assert root_names == dict.fromkeys(root_names, 0)
    for (ns, (out, p)), scen in zip(runs.items(), ("pair", "on_predock")):
        output = (tmp_path / f"{scen}.log").read_text()
        assert (out / "report.json").exists(), output[-3000:]
        report = json.loads((out / "report.json").read_text())
        assert p.returncode == 0, (ns, report["error"], output[-3000:])
        assert report["namespace"] == ns and report["success"] is True
        assert {frozenset(c) for c in report["connections"]} == {
            frozenset({f"{a['module']}.{a['child_face']}",
                       f"{a['parent_module']}.{a['parent_face']}"})
            for a in report["actions"]}
        assert len(report["connections"]) == 1
