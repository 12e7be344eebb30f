"""docking_controller over real topics: fake_hardware + mocap_bridge + docking_controller as
separate processes, a one-action plan published by this test (no navigation node: the
controller drives directly). Judged by the fake hardware's connections and ground truth.
"""
from __future__ import annotations

import math
import os
import subprocess
import time
from pathlib import Path

import installed
import pytest

from smores_assembly.ros import names
from ros_helpers import HANG_S

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
RTF = 4.0          # simulated seconds per wall second


def _scenario(path: Path, modules: dict[str, tuple[float, float, float]]) -> Path:
    lines = ["name: docking_test", "source: test_docking_ros", "module_width: 0.08",
             "target:", "  nodes: [a, b]",
             "  edges:", "    - {parent: a, parent_face: TOP, child: b, child_face: TOP}",
             "modules:"]
    lines += [f"  {m}: [{x}, {y}, {yaw}]" for m, (x, y, yaw) in modules.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class Stack:
    """Three node processes + an in-process test node."""

    def __init__(self, tmp_path: Path, ros_context, modules):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter

        scen = _scenario(tmp_path / "scenario.yaml", modules)
        ra = "--ros-args"
        cmds = {
            "fake_hardware": [*installed.node("fake_hardware"), ra,
                              "-p", f"scenario:={scen}", "-p", f"real_time_factor:={RTF}",
                              "-p", "mocap_noise_std_m:=0.001",
                              "-p", "mocap_noise_std_rad:=0.005", "-p", "random_seed:=3"],
            "mocap_bridge": [*installed.node("mocap_bridge"), ra,
                             "-p", f"scenario:={scen}", "-p", "use_sim_time:=true"],
            "docking_controller": [*installed.node("docking_controller"), ra,
                                   "--params-file",
                                   str(REPO / "config" / "docking_controller.yaml"),
                                   "-p", "use_sim_time:=true", "-p", "control_rate_hz:=25.0"],
        }
        self.logs = {n: open(tmp_path / f"{n}.log", "w") for n in cmds}
        self.procs = {n: subprocess.Popen(c, stdout=self.logs[n], stderr=subprocess.STDOUT,
                                          cwd=REPO, env=os.environ.copy())
                      for n, c in cmds.items()}
        self.tmp = tmp_path
        self.node = rclpy.create_node("docking_ros_test", context=ros_context,
                                      parameter_overrides=[Parameter("use_sim_time",
                                                                     value=True)])
        self.ex = SingleThreadedExecutor(context=ros_context)
        self.ex.add_node(self.node)

    def spin_until(self, pred, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return True
            for n, p in self.procs.items():
                assert p.poll() is None, f"{n} exited with {p.returncode}: {self.log(n)}"
            self.ex.spin_once(timeout_sec=0.02)
        return pred()

    def log(self, name: str) -> str:
        self.logs[name].flush()
        return (self.tmp / f"{name}.log").read_text()[-3000:]

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for f in self.logs.values():
            f.close()
        self.ex.shutdown()
        self.node.destroy_node()


@pytest.fixture
def make_stack(ros_context, tmp_path):
    stacks = []

    def make(modules):
        s = Stack(tmp_path, ros_context, modules)
        stacks.append(s)
        return s

    yield make
    for s in stacks:
        s.close()


class Observer:
    """Latest connections, ground truth, statuses and the moving module's cmd_vel."""

    def __init__(self, stack: Stack, module: str):
        from geometry_msgs.msg import Twist

        from smores_assembly.msg import ConnectionArray, DockingStatusArray, ModuleStateArray
        from smores_assembly.ros import common

        self.connections: set = set()
        self.truth: dict = {}
        self.truth_t = 0.0
        self.conn_t = 0.0    # stamp [s] of the latest connections message
        self.status: dict = {}
        self.stage = None
        self.phases: list[str] = []
        self.cmds: list[tuple[float, float, float]] = []
        n = stack.node
        n.create_subscription(ConnectionArray, names.CONNECTIONS, self._on_conn,
                              common.LATCHED_QOS)
        n.create_subscription(ModuleStateArray, names.GROUND_TRUTH, self._on_truth,
                              common.SENSOR_QOS)
        n.create_subscription(DockingStatusArray, names.DOCKING_STATUS, self._on_status,
                              10)
        n.create_subscription(Twist, names.module_topic(module, names.CMD_VEL),
                              lambda m: self.cmds.append(
                                  (self.truth_t, m.linear.x, m.angular.z)),
                              common.COMMAND_QOS)

    def _on_conn(self, msg):
        from smores_assembly.ros import common

        self.conn_t = common.time_to_sec(msg.header.stamp)
        self.connections = {frozenset({(c.module_a, c.face_a), (c.module_b, c.face_b)})
                            for c in msg.connections}

    def _on_truth(self, msg):
        from smores_assembly.geometry import Pose2D
        from smores_assembly.ros import common

        self.truth_t = common.time_to_sec(msg.header.stamp)
        self.truth = {m.id: Pose2D(m.x, m.y, m.yaw) for m in msg.modules}

    def _on_status(self, msg):
        self.stage = msg.stage
        for st in msg.modules:
            self.status[st.module] = st
            if not self.phases or self.phases[-1] != st.phase_name:
                self.phases.append(st.phase_name)


def _publish_plan(stack: Stack, module, parent, parent_face, child_face, goal):
    from std_msgs.msg import Int32

    from smores_assembly.msg import AssemblyPlan, DockingAction
    from smores_assembly.ros import common

    plan = AssemblyPlan(target_name="docking_test", num_stages=1,
                        assigned_nodes=["a", "b"], assigned_modules=[parent, module])
    plan.root.root_module = parent
    plan.actions = [DockingAction(module=module, node="b", stage=0, parent_module=parent,
                                  parent_node="a", parent_face=parent_face,
                                  child_face=child_face, goal_x=goal.x, goal_y=goal.y,
                                  goal_yaw=goal.yaw)]
    pubs = (stack.node.create_publisher(AssemblyPlan, names.PLAN, common.LATCHED_QOS),
            stack.node.create_publisher(Int32, names.ACTIVE_STAGE, common.LATCHED_QOS))
    pubs[0].publish(plan)
    pubs[1].publish(Int32(data=0))
    return pubs


def _final_errors(obs: Observer, parent_face, child_face):
    """Face errors of the latest ground truth: callers wait for a sample stamped after the
    connection (``obs.truth_t > obs.conn_t``) -- the ground truth is best effort, and a
    sample from a step before the EP magnets caught and snapped the faces flush (a gap of
    4.29 mm) was read once in a loaded CI run."""
    from smores_assembly.docking import dock_axis, face_errors
    from smores_assembly.geometry import Face

    ax = dock_axis(obs.truth["p"], Face(parent_face), 0.08)
    return face_errors(obs.truth["m"], Face(child_face), ax, 0.08)


def test_module_docks_onto_a_fixed_module_over_topics(make_stack):
    from smores_assembly.geometry import Face, Pose2D, child_pose

    stack = make_stack({"p": (0.0, 0.0, 0.0), "m": (-0.25, 0.2, 0.7)})
    obs = Observer(stack, "m")
    goal = child_pose(Pose2D(0, 0, 0), Face.BOTTOM, Face.BOTTOM)
    _pubs = _publish_plan(stack, "m", "p", "BOTTOM", "BOTTOM", goal)
    want = frozenset({("m", "BOTTOM"), ("p", "BOTTOM")})
    ok = stack.spin_until(lambda: want in obs.connections and obs.truth_t > obs.conn_t
                          and obs.status.get("m") is not None
                          and obs.status["m"].phase_name == "DOCKED", HANG_S)
    assert ok, (obs.phases, obs.connections, stack.log("docking_controller"))
    gap, lat, yaw = _final_errors(obs, "BOTTOM", "BOTTOM")
    assert abs(gap) <= 0.004 and abs(lat) <= 0.004 and abs(math.degrees(yaw)) <= 2.0
    st = obs.status["m"]
    assert obs.stage == 0 and st.retries <= 1 and st.error_code == 0
    assert st.face_pair == "BOTTOM->p.BOTTOM"
    # the three phases were visible and timed
    assert {"POSE_ADJUST", "APPROACH", "DOCKED"} <= set(obs.phases)
    assert st.phase_durations_s[1] > 0 and st.phase_durations_s[2] > 0
    # the moving module drove in reverse onto the face at the end (BOTTOM dock)
    assert any(v < 0 for _, v, _ in obs.cmds)


def test_lost_track_stops_the_module_and_docking_resumes(make_stack):
    from rcl_interfaces.msg import Parameter as ParamMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    from smores_assembly.geometry import Face, Pose2D, child_pose

    stack = make_stack({"p": (0.0, 0.0, 0.0), "m": (0.3, 0.25, -2.5)})
    obs = Observer(stack, "m")
    goal = child_pose(Pose2D(0, 0, 0), Face.TOP, Face.TOP)
    _pubs = _publish_plan(stack, "m", "p", "TOP", "TOP", goal)
    cli = stack.node.create_client(SetParameters, "/fake_hardware/set_parameters")

    def set_dropout(p: float) -> None:
        assert stack.spin_until(lambda: cli.service_is_ready(), HANG_S)
        req = SetParameters.Request(parameters=[ParamMsg(
            name="dropout_probability",
            value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=p))])
        fut = cli.call_async(req)
        assert stack.spin_until(fut.done, HANG_S) and fut.result().results[0].successful

    # wait until the module is moving under control, then lose every mocap track
    assert stack.spin_until(lambda: obs.status.get("m") is not None
                            and obs.status["m"].phase_name == "POSE_ADJUST"
                            and any(abs(v) > 0.01 for _, v, _ in obs.cmds), HANG_S), obs.phases
    set_dropout(1.0)
    assert stack.spin_until(lambda: obs.status["m"].phase_name == "PAUSED", HANG_S), obs.phases
    t_pause = obs.truth_t
    assert stack.spin_until(lambda: obs.truth_t > t_pause + 0.5, HANG_S)
    ref = obs.truth["m"]
    t_ref = obs.truth_t
    assert stack.spin_until(lambda: obs.truth_t > t_ref + 2.0, HANG_S)
    # still paused, not moved, and every command since the pause settled was zero
    assert obs.status["m"].phase_name == "PAUSED"
    assert obs.truth["m"].distance_to(ref) < 1e-6
    late = [(v, w) for t, v, w in obs.cmds if t >= t_ref]
    assert late and all(v == 0.0 and w == 0.0 for v, w in late)
    # the track returns: the same docking resumes and completes
    set_dropout(0.0)
    want = frozenset({("m", "TOP"), ("p", "TOP")})
    ok = stack.spin_until(lambda: want in obs.connections and obs.truth_t > obs.conn_t
                          and obs.status["m"].phase_name == "DOCKED", HANG_S)
    assert ok, (obs.phases, stack.log("docking_controller"))
    gap, lat, yaw = _final_errors(obs, "TOP", "TOP")
    assert abs(gap) <= 0.004 and abs(math.degrees(yaw)) <= 2.0
    i = len(obs.phases) - 1 - obs.phases[::-1].index("PAUSED")
    # Paused in a closed-loop docking phase (the dropout is switched on through a service
    # call while POSE_ADJUST runs; a short POSE_ADJUST may already have handed over to
    # APPROACH by then) ...
    before = obs.phases[i - 1]
    assert before in ("POSE_ADJUST", "APPROACH"), obs.phases
    # ... and resumed there (the status is sampled at 10 Hz: a short remainder of the
    # phase may fall between two samples), not from the start
    following = {"POSE_ADJUST": ("POSE_ADJUST", "APPROACH"), "APPROACH": ("APPROACH", "DOCKED")}
    assert obs.phases[i + 1] in following[before], obs.phases
    # (seen once in about 30 runs under load 60: retries == 1; the log says why)
    assert obs.status["m"].retries == 0, (obs.phases, stack.log("docking_controller")[-3000:])


def test_parameters_are_declared_with_ranges_and_validated_on_set(ros_context):
    """In-process: every DockingSettings field is a parameter; bad values are refused."""
    import dataclasses

    from rclpy.parameter import Parameter

    from smores_assembly.docking import DockingSettings
    from smores_assembly.ros.docking_controller import DockingControllerNode

    node = DockingControllerNode(context=ros_context)
    try:
        for f in dataclasses.fields(DockingSettings):
            assert node.has_parameter(f.name), f.name
            d = node.describe_parameter(f.name)
            assert d.description == f.metadata["description"]
        d = node.describe_parameter("standoff")
        assert d.floating_point_range[0].from_value == pytest.approx(0.005)
        assert node.get_parameter("max_retries").value == 3
        # out of range, wrong type, cross-field conflict: refused, settings unchanged
        for bad in (Parameter("approach_speed", value=-0.01),
                    Parameter("max_retries", value=1000),
                    Parameter("standoff", value="far"),
                    Parameter("approach_min_speed", value=0.1)):
            r = node.set_parameters([bad])[0]
            assert not r.successful, bad.name
        assert node.settings.approach_speed == DockingSettings().approach_speed
        r = node.set_parameters([Parameter("standoff", value=0.05),
                                 Parameter("max_retries", value=5)])
        assert all(x.successful for x in r)
        assert node.settings.standoff == 0.05 and node.settings.max_retries == 5
        assert node.set_parameters([Parameter("control_rate_hz", value=0.0)])[0].successful \
            is False
    finally:
        node.destroy_node()
