"""Reconfiguration end to end (issue 15): the walker scenario on the fake hardware through
the whole stack, judged by the fake hardware's ground truth (its final connections must
equal the target's edges under the executed plan's assignment)."""
from __future__ import annotations

import json
from pathlib import Path

import installed
import progress_lines
import pytest

from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import load_scenario

REPO = Path(__file__).resolve().parents[1]
WALKER = REPO / "config" / "scenarios" / "walker_to_manipulator.yaml"

pytestmark = pytest.mark.ros


def _run(scenario: Path, out: Path, *extra: str, timeout: float = 900.0):
    return installed.run_cli(["run", str(scenario), "--out", str(out), *extra],
                             timeout=timeout, cwd=REPO)


def _target_edges(report: dict, scenario) -> set:
    a = report["assignment"]
    return {frozenset({f"{a[e.parent]}.{e.parent_face.value}",
                       f"{a[e.child]}.{e.child_face.value}"}) for e in scenario.edges}


@pytest.mark.parametrize("full", [False, True], ids=["reuse", "full_disassembly"])
def test_walker_reconfigures_into_the_manipulator(full, tmp_path, ros_domain):
    scenario = load_scenario(WALKER)
    r = _run(WALKER, tmp_path, *(["--full-disassembly"] if full else []))
    report_file = tmp_path / "report.json"
    assert report_file.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert r.returncode == 0, (report["error"], r.stdout[-3000:])
    formed = {frozenset(c) for c in report["connections"]}
    assert formed == _target_edges(report, scenario)
    assert len(formed) == len(scenario.edges)
    assert report["missing_connections"] == [] and report["collisions"] == []
    plan = plan_reconfiguration(scenario, method="full" if full else "reuse")
    assert report["method"] == plan.method
    assert sorted(u["module"] for u in report["undocks"]) == \
        sorted(u.module for u in plan.undocks)
    assert len(report["undocks"]) == (6 if full else 2)
    for u in report["undocks"]:
        phases = [p["phase"] for p in u["phases"]]
        assert phases[-1] == "UNDOCKED" and "UNDOCK" in phases, (u["module"], phases)
    for a in report["actions"]:
        assert [p["phase"] for p in a["phases"]][-1] == "DOCKED", a
    assert (tmp_path / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    # every phase change of the report, UNDOCKED and the last DOCKED included, has its
    # progress line at the report's time (fresh-user finding: they were missed)
    printed = progress_lines.changes(progress_lines.parse(r.stdout))
    assert progress_lines.missing(printed, progress_lines.report_changes(report)) == [], \
        r.stdout


WHEEL_UNDOCK = REPO / "test" / "data" / "wheel_undock.yaml"


def test_wheel_face_undock_slides_off_and_the_module_docks_again(tmp_path, ros_domain):
    """m2 is docked with its LEFT (wheel) face to m1's TOP: reuse keeps m0-m1, m2 slides
    off along the face (straight along its heading), parks, and docks again with its BOTTOM
    face (1 undock, 1 dock; ~40 s simulated). Judged by the fake hardware's connections."""
    scenario = load_scenario(WHEEL_UNDOCK)
    plan = plan_reconfiguration(scenario, method="reuse")
    assert [(u.module, u.face.value, u.from_module, u.from_face.value) for u in plan.undocks] \
        == [("m2", "LEFT", "m1", "TOP")] and sorted(plan.kept) == ["m0", "m1"]
    r = _run(WHEEL_UNDOCK, tmp_path)
    report_file = tmp_path / "report.json"
    assert report_file.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert r.returncode == 0, (report["error"], r.stdout[-3000:])
    formed = {frozenset(c) for c in report["connections"]}
    assert formed == _target_edges(report, scenario) == {
        frozenset({"m0.TOP", "m1.BOTTOM"}), frozenset({"m1.TOP", "m2.BOTTOM"})}
    assert report["collisions"] == [] and report["missing_connections"] == []
    assert (report["method"], report["kept"]) == ("reuse", ["m0", "m1"])
    assert (report["num_undocks"], report["num_docks"]) == (1, 1)
    [u] = report["undocks"]
    assert (u["module"], u["face"]) == ("m2", "LEFT")
    phases = [p["phase"] for p in u["phases"]]
    assert "UNDOCK" in phases and phases[-1] == "UNDOCKED", phases
    [a] = report["actions"]
    assert a["module"] == "m2" and [p["phase"] for p in a["phases"]][-1] == "DOCKED"
    # every module has a goal (kept m0 too, whose goal the plan message does not carry):
    # the kept pair did not move, m2's new BOTTOM dock is at the plan's goal
    assert set(report["final_errors"]) == {"m0", "m1", "m2"}
    assert all(e["position_mm"] < 5.0 for e in report["final_errors"].values()), \
        report["final_errors"]
    assert (tmp_path / "trajectories.png").read_bytes()[:4] == b"\x89PNG"
