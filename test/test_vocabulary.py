"""One vocabulary: enum values equal the message constants; one error hierarchy; the shared
geometry helpers against brute-force oracles."""
from __future__ import annotations

import math
import random

import pytest

from smores_assembly import errors
from smores_assembly.geometry import (Face, Pose2D, face_center, face_frame,
                                      point_segment_distance, segment_projection)
from smores_assembly.vocabulary import (ACTIVE_PHASES, PHASE_COLOURS, TERMINAL_PHASES,
                                        ErrorCode, HelperOp, Phase)


def test_enum_values_equal_the_message_constants():
    from smores_assembly.msg import DockingStatus, HelperCommand
    for p in Phase:
        assert getattr(DockingStatus, f"PHASE_{p.name}") == p.value
    for e in ErrorCode:
        assert getattr(DockingStatus, f"ERROR_{e.name}") == e.value
    for h in HelperOp:
        assert getattr(HelperCommand, h.name) == h.value
    # and nothing in the messages is missing from the enums
    assert {n[len("PHASE_"):] for n in dir(DockingStatus) if n.startswith("PHASE_")} == \
        {p.name for p in Phase}
    assert {n[len("ERROR_"):] for n in dir(DockingStatus) if n.startswith("ERROR_")} == \
        {e.name for e in ErrorCode}


def test_phase_sets_partition_the_phases_and_every_phase_has_a_colour():
    assert ACTIVE_PHASES.isdisjoint(TERMINAL_PHASES)
    assert set(Phase) == ACTIVE_PHASES | TERMINAL_PHASES | {Phase.IDLE}
    assert Phase.PAUSED.is_active and not Phase.PAUSED.is_terminal
    assert Phase.DOCKED.is_terminal and Phase.FAILED.is_terminal and not Phase.IDLE.is_active
    assert set(PHASE_COLOURS) == set(Phase)
    assert len(set(PHASE_COLOURS.values())) == len(Phase)  # distinguishable
    assert Phase.NAVIGATE.rgb == pytest.approx((0x00 / 255, 0x72 / 255, 0xB2 / 255))


def test_parse_names_values_and_refusals():
    assert Phase.parse("docked") is Phase.DOCKED and Phase.parse(6) is Phase.DOCKED
    assert HelperOp.parse(" lift ") is HelperOp.LIFT and HelperOp.parse(3) is HelperOp.RELEASE
    for bad in ("JUMP", 0, 9, True, None, 1.0):
        with pytest.raises(errors.InputError, match="command: unknown HelperOp") as exc:
            HelperOp.parse(bad)
        assert exc.value.field == "command"
    with pytest.raises(errors.InputError, match="phase"):
        Phase.parse("DOCKING")


def test_error_hierarchy():
    assert issubclass(errors.ScenarioError, errors.InputError)
    assert issubclass(errors.ParamsError, errors.InputError)
    assert issubclass(errors.InputError, ValueError)
    assert issubclass(errors.NavigationError, errors.PlanningError)
    assert not issubclass(errors.PlanningError, ValueError)
    from smores_assembly.launch import LaunchError
    from smores_assembly.mocap import MocapError
    from smores_assembly.navigation import GoalOccupiedError, InvalidCellError
    from smores_assembly.param_check import ParamsFileError
    from smores_assembly.planning import PlanningError
    from smores_assembly.scenario import ScenarioError
    from smores_assembly.sim import SimError
    assert ScenarioError is errors.ScenarioError and PlanningError is errors.PlanningError
    for cls in (LaunchError, MocapError, SimError, ParamsFileError):
        assert issubclass(cls, errors.InputError), cls
    for cls in (GoalOccupiedError, InvalidCellError):
        assert issubclass(cls, errors.NavigationError), cls


def test_cli_reports_project_errors_but_not_programming_errors(monkeypatch, tmp_path, capsys):
    """A bug (plain ValueError) is not turned into 'bad input' (exit 2): it propagates."""
    from smores_assembly import cli, planning, reconfigure
    scen = tmp_path / "s.yaml"
    scen.write_text("name: s\ntarget: {nodes: [a], edges: []}\nmodules: {m: [0, 0, 0]}\n")

    def buggy(*_a, **_k):
        raise ValueError("a bug")

    # `plan` reaches the planner through the reconfiguration planner (issue 15)
    monkeypatch.setattr(planning, "plan_assembly", buggy)
    monkeypatch.setattr(reconfigure, "plan_assembly", buggy)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["plan", str(scen)])

    def refused(*_a, **_k):
        raise planning.PlanningError("modules: too few")

    monkeypatch.setattr(planning, "plan_assembly", refused)
    monkeypatch.setattr(reconfigure, "plan_assembly", refused)
    assert cli.main(["plan", str(scen)]) == 2
    assert "modules: too few" in capsys.readouterr().err


def _brute_distance(p, a, b, n=20000):
    return min(math.hypot(a[0] + k / n * (b[0] - a[0]) - p[0], a[1] + k / n * (b[1] - a[1]) - p[1])
               for k in range(n + 1))


def test_segment_projection_against_sampling():
    rng = random.Random(4)
    for _ in range(40):
        p, a, b = [(rng.uniform(-1, 1), rng.uniform(-1, 1)) for _ in range(3)]
        t, d = segment_projection(p, a, b)
        assert 0.0 <= t <= 1.0
        assert d == pytest.approx(_brute_distance(p, a, b), abs=2e-4)
        q = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        assert math.hypot(q[0] - p[0], q[1] - p[1]) == pytest.approx(d, abs=1e-12)
        assert point_segment_distance(p, a, b) == d
    # a degenerate segment is its point
    assert segment_projection((3.0, 4.0), (0.0, 0.0), (0.0, 0.0)) == (0.0, 5.0)


def test_face_frame_is_half_a_width_along_the_face_normal():
    rng = random.Random(7)
    for _ in range(20):
        pose = Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi))
        for face in Face:
            x, y, a = face_frame(pose, face, 0.1)
            assert face_frame(pose.as_tuple(), face, 0.1) == (x, y, a)
            assert (x, y) == face_center(pose, face, 0.1)
            assert math.hypot(x - pose.x, y - pose.y) == pytest.approx(0.05)
            assert math.atan2(y - pose.y, x - pose.x) == pytest.approx(a, abs=1e-9) or \
                abs(abs(a) - math.pi) < 1e-9
            assert -math.pi <= a < math.pi


def test_counted_says_one_in_the_singular():
    from smores_assembly.vocabulary import counted
    assert [counted(n, "stage") for n in (0, 1, 2)] == ["0 stages", "1 stage", "2 stages"]
    assert [counted(n, "process") for n in (1, 7)] == ["1 process", "7 processes"]
