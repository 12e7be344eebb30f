"""A carried pair's planned path keeps its bodies clear of the modules that stand still, its
straight final leg into the pre-dock pose included, and the modules the stage planner
moves aside can reach where they park (issue 16, 30-module targets).

bench_scale random 30 seed 9, stage 1: h0, carrying m29, got a goal cell 0.47 m from its
pre-dock pose (the wide cells round the pose were blocked by modules standing within the
pair's clearance); its final leg off the grid ran straight through the idle m21 (contact
0.23 mm, motion blocked, the stage never ended). Random 30 seed 0, stage 2: m22, moved
aside, was given a parking cell walled off from its start cell; the search failed and the
stage's helpers drove without paths (then a carried-pair contact).

Random targets of bench_scale's generator (30 nodes, seeds drawn here) and of
bench_targets' (5-12 nodes); every carried dock, the world as its stage starts with the
helper holding the module where it picked it up (one width behind it on its pick-up
axis); the pair's problem (``nav_problem`` with the module in NAVIGATE) planned as the
navigation node plans it. Judged by body geometry computed here: the pair is the helper's
square and the carried module's square one width ahead, driven straight along each leg
of the path; every module without a path (standing still meanwhile) is its square where
it stands. Along every leg after the pair's first turn the squares keep at least 1 mm
apart, or, on the last leg, no closer than they are at its end (the pre-dock pose may be
close to the structure). The first leg starts where the pair was lifted and is not judged
here (the pair's turn there is a matter of its own).
"""
from __future__ import annotations

import math

from random_plans import bench_plans, pair_problems, scale_plans
from smores_assembly.errors import NavigationError
from smores_assembly.geometry import Pose2D, square_overlap, wrap_angle
from smores_assembly.navigation.mapf import UnreachableGoalError
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.staging import plan_stage_carrying

W = 0.08
STANDOFF = 0.06
MARGIN = 0.001
STEP = 0.005       # sampling step along a leg [m]


def _plan(prob, nav: NavSettings):
    sp, _ = plan_stage_carrying(prob.moving, prob.staging, prob.carried, prob.obstacles,
                                prob.zones, nav, fixed=prob.fixed, width=W,
                                keep_clear=prob.keep_clear, slides=prob.slides)
    return sp


def _leg_violations(a, poses: dict[str, Pose2D], path) -> list[tuple]:
    """(leg index, module, gap [m]) where the pair, driven straight along a leg of
    ``path`` (after the first) with its heading along the leg, comes closer than the
    module docstring allows to a module in ``poses`` that does not move."""
    carry = wrap_angle(-a.child_face.angle)
    still = [(m, (p.x, p.y, p.yaw)) for m, p in poses.items()
             if m not in (a.helper, a.module)]
    pts = [p for _t, p in path]
    legs = [(p, q) for p, q in zip(pts, pts[1:]) if math.hypot(q.x - p.x, q.y - p.y) > 1e-9]
    out = []
    for i, (p, q) in enumerate(legs[1:], start=1):
        yaw = math.atan2(q.y - p.y, q.x - p.x)
        n = int(math.hypot(q.x - p.x, q.y - p.y) / STEP) + 1

        def bodies(u: float) -> list[tuple[float, float, float]]:
            hp = Pose2D(p.x + u * (q.x - p.x), p.y + u * (q.y - p.y), yaw)
            mp = hp.compose(W, 0.0, carry)
            return [(hp.x, hp.y, hp.yaw), (mp.x, mp.y, mp.yaw)]

        def gap(bs, o) -> float:
            return min(-square_overlap(b, o, W) for b in bs)

        end = bodies(1.0)
        for m, o in still:
            if math.hypot(o[0] - 0.5 * (p.x + q.x), o[1] - 0.5 * (p.y + q.y)) > (
                    0.5 * math.hypot(q.x - p.x, q.y - p.y) + 3 * W):
                continue
            floor = min(MARGIN, gap(end, o)) if i == len(legs) - 1 else MARGIN
            g = min(gap(bodies(k / n), o) for k in range(n + 1))
            if g < floor - 1e-9:
                out.append((i, m, round(g, 4)))
    return out


def test_carried_pair_paths_keep_clear_of_standing_modules_random_targets():
    """bench_scale random 30-node targets (8 generator seeds drawn with seed 16) and 40
    bench_targets targets (seed 42): no leg of a carried pair's path after its first
    brings the pair's squares within 1 mm of a module standing still (on the last leg: no
    closer than at its end). Before the final legs counted in the choice of the goal
    cell, 2 of the 250 pair paths ran their last leg through a standing module."""
    nav = NavSettings()
    bad, checked = [], 0
    plans = [*scale_plans(30, 8, 16), *bench_plans(40, 42)]
    for name, a, poses, prob in pair_problems(plans, nav, W, STANDOFF):
        try:
            sp = _plan(prob, nav)
        except NavigationError:
            continue   # judged by the test below
        path = sp.paths.get(a.helper)
        if not path:
            continue
        still = {m: p for m, p in poses.items() if m not in sp.paths}
        v = _leg_violations(a, still, path)
        checked += 1
        if v:
            bad.append((name, a.stage, a.module, v))
    assert checked >= 240, checked
    assert not bad, bad


def test_modules_moved_aside_for_a_pair_can_reach_their_parking_cells_random_targets():
    """The same problems: no pair's plan fails because a module moved aside cannot reach
    the parking cell it was given (the MAPF search's own reachability check, which names
    the agent, its start and goal cells). Before the parking cells were chosen among the
    cells reachable from the module's start cell, 10 of these 118 pair problems failed
    so."""
    nav = NavSettings()
    bad, checked = [], 0
    for name, a, _poses, prob in pair_problems(scale_plans(30, 8, 16), nav, W, STANDOFF):
        checked += 1
        try:
            _plan(prob, nav)
        except UnreachableGoalError as exc:
            if "is not reachable from start" in str(exc):
                bad.append((name, a.stage, a.module, str(exc)))
        except NavigationError:
            pass
    assert checked >= 110, checked
    assert not bad, bad
