"""Report helpers: phase intervals, final errors, pictures, MCAP schemas."""
import math

import pytest

from smores_assembly.geometry import Pose2D
from smores_assembly.record import message_definition
from smores_assembly.report import (PhaseRecorder, final_errors, plot_timeline,
                                    plot_trajectories)
from smores_assembly.vocabulary import Phase

NAVIGATE, POSE_ADJUST, APPROACH, DOCKED = (Phase.NAVIGATE, Phase.POSE_ADJUST, Phase.APPROACH,
                                           Phase.DOCKED)


def test_phase_recorder_builds_contiguous_intervals():
    r = PhaseRecorder()
    for t, ph in [(0, NAVIGATE), (1, NAVIGATE), (2, POSE_ADJUST), (3, APPROACH),
                  (4, APPROACH), (5, DOCKED)]:
        r.sample(t, "m1", ph, retries=1 if t == 4 else 0)
    assert [(i.phase, i.start, i.end) for i in r.intervals["m1"]] == [
        (NAVIGATE, 0, 2), (POSE_ADJUST, 2, 3), (APPROACH, 3, 5), (DOCKED, 5, 5)]
    assert r.retries["m1"] == 1
    assert [d["phase"] for d in r.to_dict("m1")] == ["NAVIGATE", "POSE_ADJUST", "APPROACH",
                                                     "DOCKED"]


def test_final_errors_in_mm_and_degrees():
    goals = {"a": Pose2D(0.0, 0.0, 0.0), "b": Pose2D(1.0, 0.0, math.pi - 0.01)}
    final = {"a": Pose2D(0.003, 0.004, math.radians(1.5)), "b": Pose2D(1.0, 0.0, -math.pi + 0.01)}
    e = final_errors(goals, final)
    assert e["a"] == {"position_mm": pytest.approx(5.0), "yaw_deg": pytest.approx(1.5)}
    assert e["b"]["yaw_deg"] == pytest.approx(math.degrees(0.02), abs=0.01)
    assert final_errors({"c": Pose2D(0, 0, 0)}, {}) == {"c": {"position_mm": None, "yaw_deg": None}}


def test_pictures_are_written(tmp_path):
    from smores_assembly.report import PhaseInterval
    plot_trajectories(tmp_path / "t.png", {"m1": [(0, 0, 0), (0.1, 0.05, 0.3)]},
                      {"m1": Pose2D(0.1, 0.05, 0.3), "m0": Pose2D(0.02, 0.05, 0.3)},
                      [("m1", "m0")])
    plot_timeline(tmp_path / "l.png", [("m1", [PhaseInterval(NAVIGATE, 0, 3),
                                              PhaseInterval(APPROACH, 3, 4)])], [(0, 4)])
    for name in ("t.png", "l.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_mcap_schema_contains_every_dependency_once():
    text = message_definition("smores_assembly/msg/DockingStatusArray")
    assert text.startswith("std_msgs/Header header")
    for dep in ("std_msgs/Header", "builtin_interfaces/Time", "smores_assembly/DockingStatus"):
        assert text.count(f"MSG: {dep}\n") == 1
