"""Navigation node in-process: plan + states + active stage in, timed Paths and markers out."""
from __future__ import annotations


import math

import pytest

from ros_helpers import HANG_S, spin_until

from smores_assembly.ros import names

pytestmark = pytest.mark.ros


@pytest.fixture
def rig(ros_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from smores_assembly.ros.navigation import NavigationNode

    nav = NavigationNode(context=ros_context, parameter_overrides=[
        Parameter("monitor_period_s", value=0.1)])
    node = rclpy.create_node("nav_test", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(nav)
    ex.add_node(node)
    try:
        yield nav, node, ex
    finally:
        ex.shutdown()
        node.destroy_node()
        nav.destroy_node()


POSES = {"m0": (0.0, 0.0, 0.0), "m1": (0.45, 0.35, 2.0), "m2": (-0.4, -0.35, 0.5),
         "h0": (-0.45, 0.3, -1.0), "m9": (0.4, -0.4, 0.0)}


def _msgs(poses):
    from smores_assembly.msg import AssemblyPlan, DockingAction, ModuleState, ModuleStateArray

    plan = AssemblyPlan()
    plan.root.root_module = "m0"
    plan.num_stages = 1
    # m1 docks its BOTTOM onto m0's TOP; m2 docks its LEFT (wheel) face onto m0's RIGHT
    plan.actions = [
        DockingAction(module="m1", node="front", stage=0, parent_module="m0",
                      parent_face="TOP", child_face="BOTTOM", needs_helper=False,
                      goal_x=0.08, goal_y=0.0, goal_yaw=0.0),
        DockingAction(module="m2", node="right", stage=0, parent_module="m0",
                      parent_face="RIGHT", child_face="LEFT", needs_helper=True, helper="h0",
                      goal_x=0.0, goal_y=-0.08, goal_yaw=0.0),
    ]
    states = ModuleStateArray()
    states.header.frame_id = "world"
    for m, (x, y, yaw) in poses.items():
        states.modules.append(ModuleState(id=m, x=x, y=y, yaw=yaw, tracked=True))
    return plan, states


def test_paths_end_at_predock_and_pickup_poses(rig):
    from nav_msgs.msg import Path
    from std_msgs.msg import Int32
    from std_srvs.srv import Trigger
    from visualization_msgs.msg import MarkerArray

    from smores_assembly.geometry import Face, Pose2D, predock_pose, wrap_angle
    from smores_assembly.msg import AssemblyPlan, ModuleStateArray
    from smores_assembly.ros import common
    from smores_assembly.docking import pickup_pose

    nav, node, ex = rig
    plan, states = _msgs(POSES)
    paths: dict[str, list] = {"m1": [], "h0": [], "m2": []}
    markers: list = []
    for m in paths:
        node.create_subscription(Path, names.module_topic(m, names.PATH), paths[m].append,
                                 common.LATCHED_QOS)
    node.create_subscription(MarkerArray, names.MARKERS, markers.append,
                             common.LATCHED_QOS)
    plan_pub = node.create_publisher(AssemblyPlan, names.PLAN, common.LATCHED_QOS)
    stage_pub = node.create_publisher(Int32, names.ACTIVE_STAGE, common.LATCHED_QOS)
    states_pub = node.create_publisher(ModuleStateArray, names.STATES,
                                       common.SENSOR_QOS)
    plan_pub.publish(plan)
    stage_pub.publish(Int32(data=0))
    assert spin_until(ex, lambda: paths["m1"] and paths["h0"] and markers, HANG_S,
                       tick=lambda: states_pub.publish(states))
    assert nav.last_error == ""
    assert not paths["m2"]  # carried by the helper: it does not drive itself

    want_m1 = predock_pose(Pose2D(0.08, 0.0, 0.0), Face.BOTTOM, 0.06)
    p = {m: Pose2D(*v) for m, v in POSES.items()}
    want_h0 = pickup_pose(p["m2"], p["h0"], [(p[m].x, p[m].y) for m in ("m0", "m1", "m9")],
                          0.08, 0.06)
    for m, want in (("m1", want_m1), ("h0", want_h0)):
        msg = paths[m][-1]
        assert msg.header.frame_id == "world"
        assert len(msg.poses) >= 3
        last = common.pose_to_pose2d(msg.poses[-1].pose)
        assert abs(last.x - want.x) < 1e-9 and abs(last.y - want.y) < 1e-9
        assert abs(wrap_angle(last.yaw - want.yaw)) < 1e-9
        first = common.pose_to_pose2d(msg.poses[0].pose)
        assert abs(first.x - p[m].x) < 1e-9 and abs(first.y - p[m].y) < 1e-9
        stamps = [common.time_to_sec(ps.header.stamp) for ps in msg.poses]
        t0 = common.time_to_sec(msg.header.stamp)
        assert stamps[0] == pytest.approx(t0, abs=1e-6)
        assert all(b >= a for a, b in zip(stamps, stamps[1:])) and stamps[-1] > t0 + 1.0
    # the helper faces the module it picks up, its TOP face the 6 cm stand-off from the
    # module's face (centres one width + stand-off apart): where the docking task goes
    assert want_h0.distance_to(p["m2"]) == pytest.approx(0.08 + 0.06)
    bearing = math.atan2(p["m2"].y - want_h0.y, p["m2"].x - want_h0.x)
    assert abs(wrap_angle(bearing - want_h0.yaw)) < 1e-9
    mk = [m for m in markers[-1].markers if m.ns == "paths" and m.action == 0]
    assert {m.text for m in mk} == {"m1", "h0"}

    # replan on request (from the current poses)
    n_before = nav.plan_count
    cli = node.create_client(Trigger, names.REPLAN)
    assert cli.wait_for_service(timeout_sec=HANG_S)
    fut = cli.call_async(Trigger.Request())
    assert spin_until(ex, fut.done, HANG_S)
    assert fut.result().success, fut.result().message
    assert nav.plan_count == n_before + 1

    # a module far off its timed path triggers an automatic replan
    n_paths = len(paths["m1"])
    lagging = dict(POSES, m1=(0.45, 0.6, 2.0))
    _, lag_states = _msgs(lagging)
    assert spin_until(ex, lambda: len(paths["m1"]) > n_paths, HANG_S,
                       tick=lambda: states_pub.publish(lag_states))
    first = common.pose_to_pose2d(paths["m1"][-1].poses[0].pose)
    assert abs(first.y - 0.6) < 1e-9  # replanned from the current pose


def test_planning_failure_holds_the_modules_and_plans_again(rig, monkeypatch):
    """A failed plan no longer sends the stage's modules off without paths (random 100
    seed 0, stage 6: the pairs drove blind into staged modules): each waits where it
    stands (a path that stands there DEFERRED_PAIR_HOLD_S = 30 s), the stage is planned
    again after PAIR_RETRY_S by itself, and after MAX_HELD_RETRIES failures in a row the
    modules get the empty path of before (direct driving)."""
    from nav_msgs.msg import Path
    from std_msgs.msg import Int32

    from smores_assembly.msg import AssemblyPlan, ModuleStateArray
    from smores_assembly.ros import common
    from smores_assembly.ros import navigation as nav_mod

    monkeypatch.setattr(nav_mod, "PAIR_RETRY_S", 0.3)
    monkeypatch.setattr(nav_mod, "MAX_HELD_RETRIES", 2)
    nav, node, ex = rig
    plan, states = _msgs(POSES)
    plan.actions[0].goal_x, plan.actions[0].goal_y = 0.06, 0.0  # pre-dock pose inside m0
    plan.actions[0].child_face = "TOP"  # pre-dock = goal + 0.06 along +x: (0.0, 0.0)
    got: list = []
    node.create_subscription(Path, "/m1/path", got.append, common.LATCHED_QOS)
    node.create_publisher(AssemblyPlan, names.PLAN, common.LATCHED_QOS).publish(plan)
    node.create_publisher(Int32, names.ACTIVE_STAGE, common.LATCHED_QOS).publish(
        Int32(data=0))
    pub = node.create_publisher(ModuleStateArray, names.STATES, common.SENSOR_QOS)
    assert spin_until(ex, lambda: got, HANG_S, tick=lambda: pub.publish(states))
    assert "overlaps fixed module 'm0'" in nav.last_error
    first = got[-1]
    assert first.header.frame_id == "world" and len(first.poses) == 2
    for ps in first.poses:   # m1 stands where it is, (0.45, 0.35)
        assert (ps.pose.position.x, ps.pose.position.y) == pytest.approx((0.45, 0.35))
    t0, t1 = (ps.header.stamp.sec + 1e-9 * ps.header.stamp.nanosec for ps in first.poses)
    assert t1 - t0 == pytest.approx(30.0)
    # planned again by itself (the same failure: held again), then driven directly
    n = nav.plan_count
    assert spin_until(ex, lambda: nav.plan_count >= n + 2 and len(got) >= 3, HANG_S,
                      tick=lambda: pub.publish(states))
    assert [len(m.poses) for m in got[:3]] == [2, 2, 0]
    # every input of the failed call is written beside the log, and replays the failure
    import os
    from pathlib import Path

    from smores_assembly.navigation.replay import load_problem, replay
    from smores_assembly.navigation.stage import GoalOccupiedError
    dump = Path(os.environ["ROS_LOG_DIR"]) / "navigation_failed_stage1_001.yaml"
    fp = load_problem(dump)
    assert fp.stage == 1 and "overlaps fixed module 'm0'" in fp.error
    assert fp.settings == nav.settings and fp.work_clock == nav.lockstep.enabled
    assert set(fp.problem.moving) == {"m1", "h0"} and "m0" in fp.problem.fixed
    with pytest.raises(GoalOccupiedError, match="overlaps fixed module 'm0'"):
        replay(dump)


def test_a_direct_modules_wait_is_not_cancelled_by_an_empty_path(rig):
    """A module on its axis that waits before it slides straight in (a path that stands,
    :func:`~smores_assembly.navigation.problem.direct_waits`) and was still on a path of the
    previous plan (its staging move) got the standing path and then, in the same plan, an
    empty one ("stop where you are": ``_stop_en_route``), which told its docking task that
    no path would come: it slid in at once, into the helper backing off beside its lane
    (bench_targets seed 46 random_9_116948334 stage 5: contact h0-m7 0.49 mm, 65 s stuck).
    Its last message of the plan is the standing path; a module en route that the plan
    does not move still gets an empty one."""
    from nav_msgs.msg import Path

    from smores_assembly.geometry import Pose2D
    from smores_assembly.ros import common

    nav, node, ex = rig
    got: dict[str, list] = {"m7": [], "m9": []}
    for m in got:
        node.create_subscription(Path, names.module_topic(m, names.PATH), got[m].append,
                                 common.LATCHED_QOS)
    here = {"m7": Pose2D(-0.575, -0.229, -2.654)}
    nav._en_route = {"m7": 178.39, "m9": 180.0}   # both still on a path of the last plan
    waits = {"m7": 7.6}
    nav._publish_direct({"m7"}, waits, here, 173.55)
    nav._stop_en_route({"m1"}, 173.55)
    assert spin_until(ex, lambda: got["m7"] and got["m9"], HANG_S)
    ex.spin_once(timeout_sec=0.2)   # anything published after them arrives too
    assert [len(msg.poses) for msg in got["m7"]] == [2], got["m7"]
    stand = got["m7"][-1]
    assert [common.time_to_sec(p.header.stamp) for p in stand.poses] == \
        pytest.approx([173.55, 181.15])
    assert max(common.pose_to_pose2d(p.pose).distance_to(here["m7"])
               for p in stand.poses) < 1e-9
    assert [len(msg.poses) for msg in got["m9"]] == [0]
    assert nav._en_route == {}
