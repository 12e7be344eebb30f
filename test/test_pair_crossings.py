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


RANDOM100_REPLAN = DATA / "nav_random100_stage2_pair_replan.yaml"


def test_the_stage_plan_moves_no_staging_module_into_a_pair_plans_moved_aside_paths():
    """Random 100 seed 0 (``clear_footprint``), stage 2 replanned at 80.21 s as h0 lifted
    m59 (``data/nav_random100_stage2_pair_replan.yaml``, as the node planned it). h0's
    plan moves m66 and m56 aside; the stage's own plan, planned again with the pairs'
    paths as walls for its active modules, moved m80 (staging) aside onto the cell m66
    drove through at the same instant (0.8 mm apart on the plan; in the run 0.14, 0.59 and
    0.27 mm contacts at 85.9-95.1 s) and sent m45 through the cell m56 waited on (0.2 mm;
    contacts at 90.1 and 93.3 s), and m45 within 0.080 m of h0 later. That replan is no
    longer kept when it sends a staging or moved-aside module across those paths where
    the first plan did not. Judged by ``stage_violations`` over the merged plan (every
    pair of bodies, squares along the timed paths) and, independently, by the centre
    distance of every two paths sampled every 0.05 s: no two come within two corner
    radii (0.113 m) unless they started closer."""
    prob, sp, bad = _plan(RANDOM100_REPLAN)
    assert set(prob.carried) == {"h0"}
    assert bad == [], bad
    end = max(p[-1][0] for p in sp.paths.values() if p)
    ts = [0.05 * k for k in range(int(end / 0.05) + 2)]
    at = {m: [pose_at(p, t) for t in ts] for m, p in sp.paths.items() if p}
    close = []
    ids = sorted(at)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            d = [math.hypot(p.x - q.x, p.y - q.y) for p, q in zip(at[a], at[b])]
            k = min(range(len(d)), key=d.__getitem__)
            if d[k] < W * math.sqrt(2.0) and d[k] < d[0] - 1e-3:
                close.append((a, b, round(d[k], 4), round(ts[k], 2)))
    assert close == []
