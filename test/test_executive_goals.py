"""A sequence of Assemble goals against one running fake stack: every goal is answered with
the right terminal status and result, and no goal wedges the executive (field case:
an invalid target used to leave every later goal rejected)."""
from __future__ import annotations

from pathlib import Path

import installed
import pytest
from ros_helpers import HANG_S, spin_until

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
FIELD = REPO / "test" / "data" / "field"


@pytest.fixture
def pair_stack(ros_domain, ros_context, tmp_path):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    import rclpy

    from smores_assembly.launch import LaunchRunner, launch_file, load_launch

    specs = load_launch(launch_file("fake_assembly"), {
        "scenario": str(FIELD / "pair.yaml"), "real_time_factor": "6"})
    log = open(tmp_path / "nodes.log", "w")
    runner = LaunchRunner(specs, sink=lambda line: (log.write(line + "\n"), log.flush()))
    runner.start()
    node = rclpy.create_node("goal_sequence_test", context=ros_context,
                             parameter_overrides=[Parameter("use_sim_time", value=True)])
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    try:
        yield node, ex, runner, tmp_path / "nodes.log"
    finally:
        codes = runner.shutdown()
        log.close()
        node.destroy_node()
        ex.shutdown()
    text = (tmp_path / "nodes.log").read_text()
    assert "Traceback" not in text, text[-4000:]
    assert all(c == 0 for c in codes.values()), codes


def test_goal_sequence_invalid_valid_one_node_invalid_cancelled(pair_stack):
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    from std_srvs.srv import Trigger

    from smores_assembly.action import Assemble
    from smores_assembly.ros.convert import scenario_to_target_msg
    from smores_assembly.scenario import load_scenario

    node, ex, runner, log = pair_stack
    client = ActionClient(node, Assemble, "/assembly/assemble")
    cancel = node.create_client(Trigger, "/assembly/cancel")
    assert spin_until(ex, client.server_is_ready, HANG_S), runner.poll()
    assert spin_until(ex, cancel.service_is_ready, HANG_S)

    def call_cancel():
        fut = cancel.call_async(Trigger.Request())
        assert spin_until(ex, fut.done, HANG_S)
        return fut.result()

    pair = scenario_to_target_msg(load_scenario(FIELD / "pair.yaml"))
    invalid = scenario_to_target_msg(load_scenario(FIELD / "pair.yaml"))
    invalid.edges[0].child = "zz"
    one = scenario_to_target_msg(load_scenario(FIELD / "single_node.yaml"))

    from smores_assembly.ros.goals import GoalTracker
    tracker = GoalTracker(node, client, Assemble, "/assembly/assemble")

    def spin(pred, timeout):
        return spin_until(ex, pred, timeout)

    def run(target, cancel_early=False, timeout=HANG_S):
        handle = tracker.send(Assemble.Goal(target=target), spin, HANG_S)
        assert handle is not None, "goal never answered"
        assert handle.accepted, "goal rejected: the executive is wedged"
        answer = call_cancel() if cancel_early else None
        res = tracker.result(handle, spin, timeout)
        assert res is not None, "goal result never answered"
        return res.status, res.result, answer

    # a cancel while idle is answered truthfully
    idle = call_cancel()
    assert not idle.success and "nothing to cancel" in idle.message

    status, res, _ = run(invalid)
    assert status == GoalStatus.STATUS_ABORTED
    assert res.error_code == Assemble.Result.ERROR_INVALID_TARGET and "zz" in res.message

    status, res, _ = run(pair)
    assert status == GoalStatus.STATUS_SUCCEEDED, res.message
    assert res.success and res.error_code == Assemble.Result.ERROR_NONE
    formed = {frozenset({f"{c.module_a}.{c.face_a}", f"{c.module_b}.{c.face_b}"})
              for c in res.connections}
    a = res.plan.actions[0]
    assert formed == {frozenset({f"{a.module}.{a.child_face}",
                                 f"{a.parent_module}.{a.parent_face}"})}
    assert res.assembly_time_s > 0

    status, res, _ = run(one)
    assert status == GoalStatus.STATUS_SUCCEEDED, res.message
    assert res.success and "nothing to dock" in res.message and len(res.plan.actions) == 0

    status, res, _ = run(invalid)
    assert status == GoalStatus.STATUS_ABORTED
    assert res.error_code == Assemble.Result.ERROR_INVALID_TARGET

    status, res, answer = run(pair, cancel_early=True)
    assert answer.success, answer.message
    assert status == GoalStatus.STATUS_CANCELED, (status, res.message)
    assert res.error_code == Assemble.Result.ERROR_CANCELLED

    # and the server is still ready
    status, res, _ = run(one)
    assert status == GoalStatus.STATUS_SUCCEEDED, res.message


def test_run_a_one_node_target_is_trivially_assembled(tmp_path, ros_domain):
    """Field case: `run single_node.yaml` raised "every stage needs at least one module"
    inside the action."""
    import json
    import subprocess

    out = tmp_path / "out"
    r = subprocess.run([*installed.cli(), "run",
                        str(FIELD / "single_node.yaml"), "--out", str(out),
                        "--real-time-factor", "5"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    report = json.loads((out / "report.json").read_text())
    assert r.returncode == 0, (report["error"], r.stdout[-2000:], r.stderr[-2000:])
    assert report["success"] is True and report["error"] == ""
    assert report["connections"] == [] and report["missing_connections"] == []
    assert report["assembly_time_s"] == 0.0
    assert "Traceback" not in (out / "nodes.log").read_text()
