"""Two swarms can share a ROS graph: the stack's nodes use relative names, so nodes started
under a namespace talk to each other there and nothing leaks into the root namespace."""
from __future__ import annotations

import pytest
import yaml
from ros_helpers import spin_until

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
        assert spin_until(ex, lambda: bool(plans), 20), "no plan in /swarm1"
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
