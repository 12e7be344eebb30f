"""End to end at scale (issue 16): a 30-module target assembles completely, with no
collision, in the suite.

``test/data/comb_5x6.yaml``: bench_scale's layout (30 modules for the nodes and 3 spare
modules on a jittered 0.3 m lattice round the origin, so that the target's footprint
covers idle modules) with a 5 x 6 comb as the target (``topology.comb_tree(5, 6)``: 29
docks in 13 stages, no carried dock). The run uses bench_scale's navigation setting
(``clear_footprint``: modules standing on the footprint still to be built are moved out of
it). The whole stack runs on the fake hardware in lockstep at full pace and is judged by
the fake hardware's ground truth (connections formed, collision events). A random tree of
30 nodes from bench_scale's generator (about half its docks carried by helpers) does not
assemble yet: docs/RESULTS.md, issue 16.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import installed

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "test" / "data"

pytestmark = pytest.mark.ros


def test_comb_5x6_of_33_modules_assembles_without_collision(tmp_path, ros_domain):
    params = tmp_path / "clear_footprint.yaml"
    params.write_text("/**/navigation:\n  ros__parameters:\n    clear_footprint: true\n")
    r = installed.run_cli(
        ["run", str(DATA / "comb_5x6.yaml"), "--out", str(tmp_path / "run"), "--timeout",
         "1500", "--real-time-factor", "0", "--params-file", str(params)],
        timeout=1700, cwd=REPO)
    installed.assembled_report(r, tmp_path / "run", n_connections=29)
