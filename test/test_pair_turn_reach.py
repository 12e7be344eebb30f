"""An active module keeps out of the reach of a carried pair that turns in place on its
path (issue 11, bench_targets seed 59 random_7_181697095: contact m0-m4 0.89 mm at
17.57 s, trace d78e4fda).

Stage 1: h0 lifts m0 at 9.2 s; the navigation plans the stage again with the pair. The
pair's plan waits 8.8 s where it was lifted (the module it moves aside, m2, goes first),
then turns the pair from heading -86 to +90 degrees and drives to its pre-dock pose. The
stage's plan held the pair where it stood and sent the active m4 up the column x = -0.313,
0.12 m beside h0's centre: outside the grid clearance (0.115 m) but inside the pair's
room (its reach, ``hypot(1.5 w, 0.5 w)``, plus a body's corner radius, 0.183 m).
``plan_stage_carrying`` saw the crossing and planned the stage again with the pair's path
as fixed obstacles (``_swept_obstacles``), but one point each blocks only the grid's
clearance round it: the replan took the same column, no wait cleared it (the pair's
pre-dock pose is in m4's way too), and the crossing plan was kept. The pair turned (the
short way, through +x) as m4 came up beside it; m0 swung into m4.

Judged here independently of the planner, no ROS: a module on its timed path is its
``w x w`` square, turned along its leg (``test_aside_legs._square``); a carried pair may
turn in place wherever its helper stands still on its path (before its first leg and
between legs; not at its pre-dock pose, where the docking controller turns a pair only
where its sweep is clear), so there it covers the disc of its reach about the helper's
centre. An active module's square keeps out of that disc (1 mm tolerance), or comes no
closer than it stood at the stage's start. The problem is the navigation node's at the
replan (ground-truth poses at 9.2 s; the plan anchored on the root m6 where it stands),
which plans exactly the run's paths before the fix.
"""
from __future__ import annotations

import math
import random

from bench.bench_targets import make_scenario
from smores_assembly.geometry import Pose2D, point_segment_distance
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.replay import plan_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import _swept_obstacles, pair_reach
from smores_assembly.vocabulary import Phase
from test_aside_legs import _square

W = 0.08
DT = 0.05
#: a carried pair's reach from its helper's centre, whatever its heading [m]
REACH = math.hypot(1.5 * W, 0.5 * W)

#: ground-truth poses at 9.2 s, as h0 has lifted m0 (the recorded run, trace d78e4fda)
POSES = {
    "h0": (-0.4333381122179378, -0.07268861845213333, -1.4995262156308204),
    "m0": (-0.42764132891843676, -0.15248552728974762, 0.07127011116407633),
    "m1": (-0.19744019800916174, 0.405267066579356, 1.5002765272544671),
    "m2": (-0.07801248445991918, -0.07489867808941311, 0.7526755340240348),
    "m3": (-0.07749307106853492, 0.28499679721092275, 1.7785809982863627),
    "m4": (-0.04825095367639005, -0.20036438767929787, 0.32782734276729864),
    "m5": (0.043748463835793235, 0.17868436952876246, -1.6760087853008594),
    "m6": (-0.194, 0.041, -1.408),
}


def _stage1():
    """(problem, timed StagePlan) of stage 1 replanned as h0 has lifted m0."""
    sc = scenario_from_dict(make_scenario(7, 181697095))
    mods = dict(sc.modules)
    mods["m6"] = Pose2D(*POSES["m6"])
    plan = with_schedule(plan_assembly(sc, mods), "pipelined")
    assert plan.root_module == "m6"
    poses = {m: Pose2D(*p) for m, p in POSES.items()}
    nav = NavSettings()
    prob = nav_problem(plan, 0, poses, set(), {"m0": Phase.NAVIGATE, "m4": Phase.NAVIGATE},
                       nav)
    sp, _ = plan_problem(prob, nav, work_clock=True)
    return prob, sp


def _square_gap(sq: tuple[float, float, float], x: float, y: float) -> float:
    """Distance [m] from the point (x, y) to the ``w x w`` square ``sq`` = (x, y, yaw)
    (negative inside: minus the depth)."""
    cx, cy, yaw = sq
    c, s = math.cos(yaw), math.sin(yaw)
    lx = abs((x - cx) * c + (y - cy) * s) - 0.5 * W
    ly = abs(-(x - cx) * s + (y - cy) * c) - 0.5 * W
    if lx > 0.0 or ly > 0.0:
        return math.hypot(max(lx, 0.0), max(ly, 0.0))
    return max(lx, ly)


def _standing(path, end: float) -> list[tuple[float, float, float, float]]:
    """(from, to [s], x, y) of every stretch where the helper on ``path`` stands still
    before its last leg (at t = 0 and between legs): where the pair may turn in place."""
    out = []
    start = path[0][0]
    for (ta, a), (tb, b) in zip(path, path[1:]):
        if math.hypot(b.x - a.x, b.y - a.y) > 1e-9:
            out.append((start, ta, a.x, a.y))
            start = tb
    return out if out else [(start, end, path[0][1].x, path[0][1].y)]


def turn_reach_hits(prob, sp) -> list[tuple[str, str, float, float]]:
    """(helper, module, depth [mm], t [s]) of the deepest entry of each active module's
    square into a carried pair's turning disc (module docstring)."""
    end = max(p[-1][0] for p in sp.paths.values() if p)
    out = []
    for h in sorted(prob.carried):
        path = sp.paths.get(h)
        if not path:
            continue
        wins = _standing(path, end)
        for m in sorted(prob.moving):
            p = sp.paths.get(m)
            if not p or len(p) < 2:
                continue
            g0 = _square_gap(_square(p, 0.0), path[0][1].x, path[0][1].y) - REACH
            worst = None
            for t0, t1, x, y in wins:
                k = int(math.floor(t0 / DT))
                while k * DT <= t1:
                    g = _square_gap(_square(p, k * DT), x, y) - REACH
                    if g < -1e-3 and g < g0 - 1e-3 and (worst is None or g < worst[0]):
                        worst = (g, k * DT)
                    k += 1
            if worst:
                out.append((h, m, round(-worst[0] * 1000, 1), round(worst[1], 2)))
    return out


def test_random_7_181697095_stage1_is_the_runs_problem():
    """The replan as h0 has lifted m0: the pair waits where it was lifted and then turns
    about 180 degrees to its first leg, and m4 is the stage's active module."""
    prob, sp = _stage1()
    assert set(prob.carried) == {"h0"} and prob.carried["h0"][2] == "m0"
    assert set(prob.moving) == {"m4"}
    h0 = sp.paths["h0"]
    assert h0[1][0] > 8.0 and h0[1][1].distance_to(h0[0][1]) < 1e-9   # it waits
    first = h0[2][1]
    heading = math.atan2(first.y - h0[1][1].y, first.x - h0[1][1].x)
    assert abs(math.remainder(heading - POSES["h0"][2], 2.0 * math.pi)) > 2.5


def test_random_7_181697095_stage1_m4_keeps_out_of_the_pairs_turn():
    """No active module's square enters the disc the pair covers turning in place where
    it waits (before: m4 47 mm into it at 7.1 s, up the column beside h0; the run: m0
    swung into m4 as the pair turned, 0.89 mm), and m4 still reaches its pre-dock pose."""
    prob, sp = _stage1()
    assert not turn_reach_hits(prob, sp)
    assert sp.paths["m4"][-1][1].distance_to(prob.moving["m4"][1]) < 1e-9


def _polyline_distance(pts: list[Pose2D], x: float, y: float) -> float:
    if len(pts) == 1:
        return math.hypot(x - pts[0].x, y - pts[0].y)
    return min(point_segment_distance((x, y), (a.x, a.y), (b.x, b.y))
               for a, b in zip(pts, pts[1:]))


def test_swept_obstacles_block_a_pairs_whole_room():
    """The obstacles standing for a pair's path block, with the grid's clearance round
    each, every point within the pair's room of that path, its start included (random
    paths, random points), and nothing beyond the room by more than 6 mm (before: one
    point per step past the start, blocking the clearance only); a module without a room
    keeps one point per step past its start, as before (its room, two corner radii, is
    within the clearance)."""
    clearance = NavSettings().clearance
    room = pair_reach(W) + W / math.sqrt(2.0)
    rng = random.Random(11)
    for trial in range(40):
        n = rng.randint(1, 5)
        path = [(float(i), Pose2D(rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), 0.0))
                for i in range(n)]
        if n == 1:
            path.append((1.0, path[0][1]))   # a wait where it stands
        pts = [p for _, p in path]
        obs = _swept_obstacles({"h": path}, 0.5 * W, {"h": room}, clearance)
        xy = [(p.x, p.y) for p in obs.values()]

        def blocked(x: float, y: float) -> bool:
            return any(math.hypot(x - ox, y - oy) < clearance for ox, oy in xy)
        for _ in range(300):
            x, y = rng.uniform(-0.8, 0.8), rng.uniform(-0.8, 0.8)
            d = _polyline_distance(pts, x, y)
            if d < room - 1e-9:
                assert blocked(x, y), (trial, x, y, d)
            elif d > room + 0.006:
                assert not blocked(x, y), (trial, x, y, d)
        plain = _swept_obstacles({"h": path}, 0.5 * W, {}, clearance)
        assert len(plain) == sum(max(1, math.ceil(a.distance_to(b) / (0.5 * W)))
                                 for a, b in zip(pts, pts[1:]))
