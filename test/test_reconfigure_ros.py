"""Reconfiguration end to end (issue 15): the walker scenario on the fake hardware through
the whole stack, judged by the fake hardware's ground truth (its final connections must
equal the target's edges under the executed plan's assignment)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import installed
import pytest

from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import load_scenario

REPO = Path(__file__).resolve().parents[1]
WALKER = REPO / "config" / "scenarios" / "walker_to_manipulator.yaml"

pytestmark = pytest.mark.ros


def _run(scenario: Path, out: Path, *extra: str, timeout: float = 900.0):
    return subprocess.run(
        [*installed.cli(), "run", str(scenario), "--out", str(out), *extra],
        capture_output=True, text=True, timeout=timeout, cwd=REPO)


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
