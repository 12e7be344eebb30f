"""fake_hardware on the MuJoCo backend offers what it offers on the kinematic one.

The node is built once per backend on the same scenario; its publishers, subscriptions and
services (topic names and message types) must be identical, and the MuJoCo node must drive a
module over ROS (cmd_vel in, ground truth and mocap out, on /clock time).
"""
from __future__ import annotations

import math

import pytest
import yaml
from ros_helpers import HANG_S, spin_until

pytestmark = pytest.mark.ros
pytest.importorskip("mujoco")


def _scenario(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({
        "name": "backends", "module_width": 0.08,
        "target": {"nodes": ["n0", "n1"],
                   "edges": [{"parent": "n0", "parent_face": "TOP", "child": "n1",
                              "child_face": "BOTTOM"}]},
        "modules": {"a": [0.0, 0.0, 0.0], "b": [0.4, 0.2, 1.0], "h": [-0.4, 0.3, 0.0]},
        "helpers": ["h"]}))
    return str(path)


def _endpoints(node):
    return ({(p.topic_name, p.msg_type.__name__) for p in node.publishers},
            {(s.topic_name, s.msg_type.__name__) for s in node.subscriptions},
            {s.srv_name for s in node.services})


def test_mujoco_backend_has_the_kinematic_topics_and_drives_over_ros(ros_context, tmp_path):
    import rclpy
    from geometry_msgs.msg import PoseStamped, Twist
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from smores_assembly.msg import ModuleStateArray
    from smores_assembly.ros import common
    from smores_assembly.ros import names
    from smores_assembly.ros.fake_hardware import FakeHardwareNode
    from smores_assembly.sim.mujoco_world import MujocoWorld

    scen = _scenario(tmp_path)
    seen = {}
    for backend in ("kinematic", "mujoco"):
        node = FakeHardwareNode(context=ros_context, parameter_overrides=[
            Parameter("scenario", value=scen), Parameter("backend", value=backend),
            Parameter("real_time_factor", value=1e-3),
            Parameter("cmd_vel_timeout_s", value=100.0)])
        try:
            seen[backend] = _endpoints(node)
            if backend == "mujoco":
                assert isinstance(node.world, MujocoWorld)
                assert node.get_parameter("backend").value == "mujoco"
                mujoco_node = node
                continue
        except BaseException:
            node.destroy_node()
            raise
        node.destroy_node()
    pubs_k, subs_k, srvs_k = seen["kinematic"]
    pubs_m, subs_m, srvs_m = seen["mujoco"]
    assert pubs_m == pubs_k and subs_m == subs_k and srvs_m == srvs_k
    assert ("/clock", "Clock") in pubs_m
    assert ("/" + names.GROUND_TRUTH, "ModuleStateArray") in pubs_m
    assert ("/vicon/a/a", "PoseStamped") in pubs_m and ("/h/helper_command",
                                                       "HelperCommand") in subs_m

    # the MuJoCo node drives a module from cmd_vel, stepped by hand
    fake = mujoco_node
    probe = rclpy.create_node("probe_backends", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(fake)
    ex.add_node(probe)
    big = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    gts, mocap = [], []
    probe.create_subscription(ModuleStateArray, names.GROUND_TRUTH, gts.append, big)
    probe.create_subscription(PoseStamped, "/vicon/a/a", mocap.append, common.SENSOR_QOS)
    cmd = probe.create_publisher(Twist, names.module_topic("a", "cmd_vel"), common.COMMAND_QOS)
    try:
        assert spin_until(ex, lambda: cmd.get_subscription_count() > 0
                          and fake.count_subscribers("/" + names.GROUND_TRUTH) > 0, HANG_S)
        msg = Twist()
        msg.linear.x = 0.05
        cmd.publish(msg)
        assert spin_until(ex, lambda: fake.world._cmd[0, 0] == 0.05, HANG_S)
        for _ in range(100):                  # 1 s at 100 Hz, stepped by hand
            fake.step_once(0.01)
        assert spin_until(ex, lambda: gts and mocap and gts[-1].header.stamp.sec == 1, HANG_S)
        a = next(s for s in gts[-1].modules if s.id == "a")
        # 0.05 m/s for 1 s less half the wheels' ramp (0.06 s)
        assert 0.046 < a.x < 0.050 and abs(a.y) < 0.001 and abs(a.yaw) < math.radians(0.5)
        assert fake.world.pose("a").x == pytest.approx(a.x, abs=0.003)
    finally:
        ex.shutdown()
        probe.destroy_node()
        fake.destroy_node()
