"""Carried pairs and the modules moved aside for them (issue 16, the random 50 target
``r50_runs/random50.yaml``: 55 modules, 15 stages, ``clear_footprint`` on; main df0897c:
49/49 in 1223.5 s with 6 contacts).

The file is the navigation node's problem of stage 1 of that run, written as the node
planned them (``replay.dump_problem``; the replay plans the very paths the node published):

``data/nav_random50file_stage1_two_pairs.yaml`` (64.8 s, h0 just lifted m0 while h1
carries m28): the pairs are planned in name order. h0's plan drives the pair along
y = -0.123 m; h1's plan, planned after it, holds h0 where it stands and moved m40 and m34
aside along that very row: m40 reached (-1.091, -0.123) 0.2 s before h0 did (in the run
it stopped 0.081 m before the carried m0, turned and touched it: 0.01 mm at 91.47 s, and
h0 fell behind).

Plans are judged by ``w x w`` squares along the timed paths
(``test_aside_legs.stage_violations``), every leg judged (the final legs too).
"""
from __future__ import annotations

import math
from pathlib import Path

from smores_assembly.navigation.replay import load_problem, plan_problem
from smores_assembly.navigation.stage import pose_at
from smores_assembly.staging import pair_reach
from test_aside_legs import stage_violations
from test_nav_replay import _world

DATA = Path(__file__).parent / "data"
TWO_PAIRS = DATA / "nav_random50file_stage1_two_pairs.yaml"
W = 0.08


def _plan(path):
    fp = load_problem(path)
    sp, _staged = plan_problem(fp.problem, fp.settings, work_clock=fp.work_clock)
    carried = {h: m for h, (_s, _g, m) in fp.problem.carried.items()}
    bad = stage_violations(sp, _world(fp.problem), carried,
                           final_legs=set(fp.problem.moving))
    return fp.problem, sp, bad


def test_a_later_pairs_plan_moves_no_module_aside_across_an_earlier_pair():
    """h1's plan keeps the modules it moves aside out of h0's pair's way: at every
    instant each is at least a pair's reach plus a corner radius (0.183 m) from h0's
    centre, and no two bodies of the plan come closer than 1 mm (before: m40 0.01 mm into
    the carried m0 at 25.5 s, m34 0.4 mm into m0 at 31.1 s and 3.9 mm into h0)."""
    prob, sp, bad = _plan(TWO_PAIRS)
    assert set(prob.carried) == {"h0", "h1"}
    assert bad == [], bad
    h0 = sp.paths["h0"]
    room = pair_reach(W) + W / math.sqrt(2.0)
    for m in sp.moved_aside:
        p = sp.paths.get(m)
        if not p:
            continue
        start = _world(prob)[m]
        d0 = math.hypot(start.x - h0[0][1].x, start.y - h0[0][1].y)
        t_end = max(p[-1][0], h0[-1][0])
        gap = min(math.hypot(a.x - b.x, a.y - b.y)
                  for k in range(int(t_end / 0.1) + 1)
                  for a, b in [(pose_at(p, 0.1 * k), pose_at(h0, 0.1 * k))])
        assert gap >= min(room, d0) - 1e-3, (m, round(gap, 4))
    # the row h0 drives along: none of h1's moved-aside modules goes onto it
    assert "m40" not in sp.moved_aside or all(
        abs(q.y + 0.123) > 0.1 for _t, q in sp.paths["m40"])
