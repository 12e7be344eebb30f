"""Carried pairs and the modules moved aside for them (issue 16, the random 50 target
``r50_runs/random50.yaml``: 55 modules, 15 stages, ``clear_footprint`` on; main df0897c:
49/49 in 1223.5 s with 6 contacts).

Both files are the navigation node's problems of stage 1 of that run, written as the node
planned them (``replay.dump_problem``; the replay plans the very paths the node published):

``data/nav_random50file_stage1_two_pairs.yaml`` (64.8 s, h0 just lifted m0 while h1
carries m28): the pairs are planned in name order. h0's plan drives the pair along
y = -0.123 m; h1's plan, planned after it, holds h0 where it stands and moved m40 and m34
aside along that very row: m40 reached (-1.091, -0.123) 0.2 s before h0 did (in the run
it stopped 0.081 m before the carried m0, turned and touched it: 0.01 mm at 91.47 s, and
h0 fell behind).

``data/nav_random50file_stage1_pair_final_leg.yaml`` (101.5 s, m28 docked, h0 still
carrying m0): h0's plan, round every module but those it must move aside, got a goal cell
0.60 m from its pre-dock pose whose straight final leg passed 5 mm from the staging m10's
centre; the carried m0 ran into m10 (0.03 mm at 156.64 s).

Plans are judged by ``w x w`` squares along the timed paths
(``test_aside_legs.stage_violations``), every leg judged (the final legs too).
"""
from __future__ import annotations

import math
from pathlib import Path

from smores_assembly.geometry import point_segment_distance
from smores_assembly.navigation.replay import load_problem, plan_problem
from smores_assembly.navigation.stage import pose_at
from smores_assembly.staging import pair_reach
from test_aside_legs import stage_violations
from test_nav_replay import _world

DATA = Path(__file__).parent / "data"
TWO_PAIRS = DATA / "nav_random50file_stage1_two_pairs.yaml"
FINAL_LEG = DATA / "nav_random50file_stage1_pair_final_leg.yaml"
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


def test_a_pairs_final_leg_passes_no_module_it_could_move_aside():
    """h0's final leg (goal cell -> pre-dock pose, off the grid) keeps every module that
    does not move at least a module diagonal (0.113 m) from its line, or its distance
    from the goal: m10 is moved aside (before: the leg passed 5 mm from m10's centre, the
    carried m0 0.4 mm into m10 at 55.2 s), and no two bodies come closer than 1 mm."""
    prob, sp, bad = _plan(FINAL_LEG)
    assert bad == [], bad
    h0 = sp.paths["h0"]
    goal = prob.carried["h0"][1]
    a, b = (h0[-2][1].x, h0[-2][1].y), (h0[-1][1].x, h0[-1][1].y)
    assert math.hypot(b[0] - goal.x, b[1] - goal.y) < 1e-6
    for o, p in _world(prob).items():
        if o in ("h0", "m0") or sp.paths.get(o):
            continue   # the pair itself, and the modules that move
        lim = min(W * math.sqrt(2.0), math.hypot(p.x - goal.x, p.y - goal.y))
        assert point_segment_distance((p.x, p.y), a, b) >= lim - 1e-9, o
    assert "m10" in sp.moved_aside
