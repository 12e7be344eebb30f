"""A carried pair whose own plan fails waits where it stands, and the rest of its stage is
planned round it (``plan_stage_carrying(defer_failed_pairs=True)``, as the navigation node
plans; the node plans the stage again later, :mod:`smores_assembly.ros.navigation`).

``data/nav_failed_random100_stage6_m51.yaml`` (issue 16, ``plannable_scenario("random",
100, 0)``, 110 modules, ``clear_footprint`` on; branch r100 771405e, run
``/work/r100b_run``): the node's dump of stage 6 replanned at 558.9 s as h1 lifted m51:
"search exceeded time_limit_s=2.0" (the lockstep work clock) in h1's own plan: its pre-dock
pose lies 0.72 m away at the end of a lane of staged modules. The node published empty
paths for the whole stage (h0, h1, m36, m97 drove directly): h1/m51 pushed into m52 and
m64, h0 fetched m89 without a path and shoved m70, m88, m12, m80, m67; three POSE_ADJUST
timeouts, m51's dock failed, the run FAILED in stage 6.

``data/nav_failed_random100_stage3_m85.yaml``: the same run's dump of stage 3 replanned at
131.4 s as h1 lifted m85 (the same error in h1's plan; the stage drove without paths too).

Plans are judged by ``w x w`` squares along the timed paths
(``test_aside_legs.stage_violations``), not by the planner's grid.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smores_assembly.navigation.mapf import SearchLimitError
from smores_assembly.navigation.replay import load_problem, plan_problem
from smores_assembly.staging import DEFERRED_PAIR_HOLD_S, _xy_at
from test_nav_replay import _violations

DATA = Path(__file__).parent / "data"


def _closest(sp, xy, skip) -> float:
    """The closest any path of ``sp`` (but those of ``skip``) comes to the point ``xy``
    [m], sampled every 0.05 s."""
    ts = np.arange(0.0, sp.duration_s + 0.05, 0.05)
    return min(float(np.min(np.hypot(*(_xy_at(p, ts) - np.array(xy)).T)))
               for m, p in sp.paths.items() if p and m not in skip)


def test_a_pair_whose_plan_fails_waits_and_the_rest_of_the_stage_is_planned():
    """Stage 6 as h1 lifted m51 (module docstring): without deferring, h1's plan fails the
    stage (the node drove it without paths); deferred, h1 stands where it is for
    DEFERRED_PAIR_HOLD_S, and h0 (to m89's pick-up pose), m36 and m97 reach their goals
    round it, 41 staging moves too, no two bodies within 1 mm along the legs; the closest
    any other path comes to h1 is 0.305 m, to m51 0.232 m (m64's staging correction, 0.4
    mm, beside it)."""
    fp = load_problem(DATA / "nav_failed_random100_stage6_m51.yaml")
    prob = fp.problem
    assert "time_limit_s=2.0" in fp.error and fp.work_clock, fp.error
    assert set(prob.carried) == {"h1"} and prob.carried["h1"][2] == "m51"
    with pytest.raises(SearchLimitError):
        plan_problem(prob, fp.settings, work_clock=fp.work_clock)
    sp, staged = plan_problem(prob, fp.settings, work_clock=fp.work_clock,
                              defer_failed_pairs=True)
    assert list(sp.stats["deferred_pairs"]) == ["h1"]
    assert "SearchLimitError" in sp.stats["deferred_pairs"]["h1"]
    here = prob.carried["h1"][0]
    assert sp.paths["h1"] == [(0.0, here), (DEFERRED_PAIR_HOLD_S, here)]
    for m in ("h0", "m36", "m97"):
        assert sp.paths[m][-1][1] == prob.moving[m][1], m
    assert len(staged) == 41 and "m12" in staged
    assert not _violations(prob, sp)
    m51 = prob.obstacles["m51"]
    assert _closest(sp, (here.x, here.y), {"h1"}) == pytest.approx(0.305, abs=1e-3)
    assert _closest(sp, (m51.x, m51.y), {"h1"}) == pytest.approx(0.232, abs=1e-3)



def test_stage3_pair_waits_and_h0_m33_m79_are_planned():
    """Stage 3 as h1 lifted m85 (module docstring): h1's plan fails the same way; deferred,
    h1 stands, h0, m33 and m79 reach their goals, m4, m56 and m97 are moved aside, and no
    two bodies come within 1 mm along the legs (before: every path of the stage dropped)."""
    fp = load_problem(DATA / "nav_failed_random100_stage3_m85.yaml")
    prob = fp.problem
    assert prob.carried["h1"][2] == "m85" and "time_limit_s=2.0" in fp.error
    sp, _staged = plan_problem(prob, fp.settings, work_clock=fp.work_clock,
                               defer_failed_pairs=True)
    assert list(sp.stats["deferred_pairs"]) == ["h1"]
    assert sp.paths["h1"][-1] == (DEFERRED_PAIR_HOLD_S, prob.carried["h1"][0])
    for m in ("h0", "m33", "m79"):
        assert sp.paths[m][-1][1] == prob.moving[m][1], m
    assert sp.moved_aside == ["m4", "m56", "m97"]
    assert not _violations(prob, sp)
