"""ros/convert.py: the conversions the nodes use instead of reading message fields
(message classes only, no ROS graph)."""
from __future__ import annotations

import itertools
import math
import random

import pytest

from smores_assembly.docking import DockingSpec, HelperRequest, TaskStatus
from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.vocabulary import ErrorCode, HelperOp, Phase

pytest.importorskip("rclpy")

from smores_assembly.msg import (DockingAction, DockingStatus, DockingStatusArray,  # noqa: E402
                                 HelperCommand, ModuleState, ModuleStateArray)
from smores_assembly.ros import convert  # noqa: E402


def _status(module: str, phase: Phase) -> TaskStatus:
    return TaskStatus(module=module, target_module="p", face_pair="TOP->p.BOTTOM", phase=phase,
                      face_gap_mm=1.5, lateral_error_mm=-0.25, yaw_error_deg=0.5, retries=2,
                      phase_elapsed_s=3.0,
                      phase_durations={p: float(p.value) for p in Phase},
                      error_code=ErrorCode.NONE, message="")


def test_status_phases_round_trip_and_unknown_values_are_left_out():
    arr = DockingStatusArray()
    arr.modules = [convert.task_status_to_msg(_status(f"m{p.value}", p)) for p in Phase]
    for st, p in zip(arr.modules, Phase):
        assert st.phase == p.value and st.phase_name == p.name
        assert list(st.phase_durations_s) == [float(q.value) for q in convert.DURATION_PHASES]
    assert convert.phases_from_status(arr) == {f"m{p.value}": p for p in Phase}
    arr.modules.append(DockingStatus(module="x", phase=99))
    assert "x" not in convert.phases_from_status(arr)
    refused = convert.refused_action_status(DockingAction(module="a", parent_module="b"), "no")
    assert (refused.phase, refused.error_code) == (Phase.FAILED, ErrorCode.CANCELLED)


def test_helper_commands_round_trip_and_bad_codes_refused():
    for op in HelperOp:
        msg = convert.helper_request_to_msg(HelperRequest("h", op, "m", 0.25))
        assert (msg.command, msg.module, msg.carry_yaw) == (op.value, "m", 0.25)
        assert convert.helper_msg_to_op(msg) is op
    with pytest.raises(InputError, match="command"):
        convert.helper_msg_to_op(HelperCommand(command=9))


def test_action_to_spec_and_refusals():
    spec = convert.action_msg_to_spec(DockingAction(
        module="m", parent_module="p", parent_face="top", child_face="BOTTOM", helper=""))
    assert spec == DockingSpec("m", "p", Face.TOP, Face.BOTTOM, "")
    with pytest.raises(InputError, match="parent_face"):
        convert.action_msg_to_spec(DockingAction(module="m", parent_module="p",
                                                 parent_face="UP", child_face="TOP"))


def test_timed_path_round_trip():
    rng = random.Random(3)
    t, path = 0.0, []
    for _ in range(12):
        t += rng.uniform(0.1, 2.0)
        path.append((t, Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), 0.0)))
    msg = convert.timed_path_to_msg(path, 100.0)
    assert msg.header.frame_id == "world" and len(msg.poses) == len(path)
    tp = convert.path_msg_to_timed(msg, now=100.0, nominal_speed=0.05)
    for (ti, p), q in zip(path, tp.points):
        assert q[0] == pytest.approx(100.0 + ti, abs=1e-9)
        assert (q[1], q[2]) == pytest.approx((p.x, p.y))
    assert convert.path_msg_to_timed(convert.timed_path_to_msg([], 5.0), 5.0, 0.05) is None


def test_states_to_poses_samples_and_untracked():
    msg = ModuleStateArray()
    msg.modules = [ModuleState(id="a", x=1.0, y=2.0, yaw=0.5, tracked=True),
                   ModuleState(id="b", x=3.0, y=4.0, yaw=-1.0, tracked=False)]
    msg.modules[0].stamp.sec, msg.modules[0].stamp.nanosec = 7, 500_000_000
    assert convert.states_msg_to_poses(msg) == {"a": Pose2D(1.0, 2.0, 0.5)}
    samples = convert.states_msg_to_samples(msg)
    assert samples["a"].stamp == pytest.approx(7.5) and samples["a"].tracked
    assert not samples["b"].tracked and samples["b"].pose == Pose2D(3.0, 4.0, -1.0)
    assert convert.untracked_ids(msg) == {"b"}
    assert math.isfinite(samples["b"].stamp)


def test_magnet_faces_round_trip_every_subset():
    for k in range(5):
        for faces in itertools.combinations(list(Face), k):
            msg = convert.faces_to_magnet_msg(faces)
            assert set(convert.magnet_msg_to_faces(msg)) == set(faces)


def test_connections_round_trip_and_bad_faces_left_out():
    pairs = [(("a", Face.TOP), ("b", Face.BOTTOM)), (("b", Face.LEFT), ("c", Face.RIGHT))]
    msg = convert.connections_to_msg(pairs)
    assert [(c.module_a, c.face_a, c.module_b, c.face_b) for c in msg.connections] == [
        ("a", "TOP", "b", "BOTTOM"), ("b", "LEFT", "c", "RIGHT")]
    assert convert.connections_from_msg(msg) == {frozenset(p) for p in pairs}
    msg.connections[0].face_a = "FRONT"
    assert convert.connections_from_msg(msg) == {frozenset(pairs[1])}
