"""Final legs of one stage plan keep their modules apart (issue 15, bench_reconfig).

The stage planner's search ends every module on a grid cell; from there each one drives a
straight *final leg* off the grid to its exact goal (a pre-dock pose, a staging pose), all
at once after the schedule, and nobody checked two such legs against each other: the
staging m6's goal lay 0.072 m from the cell that m0, a module of the active stage, left at
the same moment (reconf_7_661718012 reuse, stage 4: contact m0/m6 0.28 mm, m0 blocked for
45 s); two staging modules likewise (reconf_7_651328766: m0/m6 0.24 mm). Now two legs
that come too close driven at once are driven one after the other
(``navigation.stage._final_leg_waits``).

Random targets of ``bench_targets``' generator, every stage of the pipelined plan, in a
world where the later stages' modules have not staged yet (the root and the earlier
stages' modules at their goals, everyone else where the scenario starts it: a first stage,
or the first dock after a reconfiguration's undocking), planned as the navigation node
plans it (``nav_problem`` + ``plan_stage_carrying``). Judged by body geometry, not by the
planner: from the end of the schedule (the grid's last step) to the end of the last path,
every two modules that both have a path keep 1 mm apart (or, when closer already then, no
closer than then); a module driving a leg is its square turned along the leg, one standing
on a waypoint or at its goal (where it turns to its goal heading) the disc of its corner
radius (``test_stage_clearance``'s bodies).
"""
from __future__ import annotations

import random

from random_plans import bench_plans, plan_like_node
from test_stage_clearance import MARGIN, _body, _gap

from bench.bench_reconfig import make_pair
from smores_assembly.errors import PlanningError
from smores_assembly.geometry import Pose2D
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings, _final_leg_waits, turn_clearance
from smores_assembly.planning import with_schedule
from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import scenario_from_dict

W = 0.08


def _unstaged_world(plan, sc, k: int) -> dict[str, Pose2D]:
    """Stage ``k`` starts before anything staged: the root and the earlier stages' modules
    at their goals, a reconfiguration's undocked modules where they parked, every other
    module (the kept ones too) where ``sc`` starts it."""
    poses = dict(sc.modules)
    for u in getattr(plan, "undocks", ()):
        poses[u.module] = u.park
    if plan.root_module in plan.goals and not getattr(plan, "kept", ()):
        poses[plan.root_module] = plan.goals[plan.root_module]
    for a in plan.actions:
        if a.stage < k:
            poses[a.module] = plan.goals[a.module]
    return poses


def _final_leg_violations(sp, dt: float = 0.05) -> list[tuple]:
    """(a, b, gap [m], t [s]) of the first instant each pair of modules with paths comes
    too close between the end of the schedule and the end of the last path. A pair whose
    goals lie closer than ``W`` (their bodies overlap there whatever their headings, a
    conflict of the goals, not of the legs: random_6_726016459 stage 1, h0's pick-up pose
    for m4 0.074 m from m3's staging pose) is not judged."""
    t1 = sp.stats.get("t0_s", 0.0) + sp.stats.get("makespan", 0) * sp.stats.get("step_s", 0)
    t1 += max(sp.stats.get("backoff_delay_s", {}).values(), default=0.0)
    paths = {m: p for m, p in sp.paths.items() if p and len(p) > 1}
    t2 = max((p[-1][0] for p in paths.values()), default=t1)
    n = max(1, int((t2 - t1) / dt))

    def at(m: str, t: float) -> tuple:
        p = paths[m]
        if t >= p[-1][0]:
            return ("disc", p[-1][1].x, p[-1][1].y)   # turning to its goal heading
        return _body(p, t)
    ids = sorted(paths)
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if paths[a][-1][1].distance_to(paths[b][-1][1]) < W:
                continue   # goals overlapping at rest: no timing of the legs helps
            g0 = _gap(at(a, t1), at(b, t1))
            for k in range(n + 1):
                t = t1 + (t2 - t1) * k / n
                g = _gap(at(a, t), at(b, t))
                if g < min(MARGIN, g0) - 1e-9:
                    out.append((a, b, round(g, 4), round(t, 2)))
                    break
    return out


def _stage_plans(sc, plan, nav: NavSettings):
    """StagePlans of every stage of ``plan`` (docking stages) in the unstaged world."""
    undock_stages = {u.stage for u in getattr(plan, "undocks", ())}
    for k in range(len(plan.stages)):
        if k in undock_stages:
            continue
        poses = _unstaged_world(plan, sc, k)
        prob = nav_problem(plan, k, poses, set(), {}, nav)
        if not prob.staging:
            continue
        sp = plan_like_node(prob, nav, W)
        if sp is None:
            continue  # a stage the grid cannot plan at all (not this test's matter)
        if sp.paths:
            yield k, sp


def _reuse_plans(count: int, seed: int):
    """Random bench_reconfig pairs, planned with reuse (pipelined) as a run plans them."""
    rng = random.Random(seed)
    for _ in range(count):
        sc = scenario_from_dict(make_pair(rng.randint(6, 10), rng.randrange(1 << 30)))
        try:
            plan = with_schedule(plan_reconfiguration(sc, method="reuse"), "pipelined")
        except PlanningError:
            continue
        yield sc, plan


def test_final_legs_keep_bodies_apart_random_targets():
    """Random targets (40, seed 15) and reuse reconfiguration pairs (30, seed 15): no two
    final legs of a stage plan bring bodies closer than 1 mm (module docstring). Without
    the waits (``_final_leg_waits`` returning nothing): 14 of 302 stage plans had such a
    pair."""
    nav = NavSettings()
    checked = 0
    cases = list(bench_plans(40, 15)) + list(_reuse_plans(30, 15))
    for sc, plan in cases:
        for k, sp in _stage_plans(sc, plan, nav):
            bad = _final_leg_violations(sp)
            assert not bad, (sc.name, k, bad)
            checked += 1
    assert checked >= 150, checked


def test_final_leg_waits_reconf_7_661718012_stage_4():
    """The bench_reconfig case (the legs as the navigation planned them, from the
    recording): m0 leaves its last cell for its pre-dock pose while m6's staging pose lies
    0.072 m from that cell; m6 waits until m0's leg is done (and the margin), m0 does not
    wait; driven together they came within the corner radii."""
    cells = {"m0": (0.091, 0.384), "m6": (0.211, 0.384)}
    goals = {"m0": (0.074, 0.309), "m6": (0.155, 0.418)}
    waits = _final_leg_waits(cells, goals, 0.05, turn_clearance(W), 1.0)
    m0_leg = 0.0775 / 0.05
    assert set(waits) == {"m6"}
    assert abs(waits["m6"] - (m0_leg + 1.0)) < 0.05
    # legs far apart wait for nothing
    assert _final_leg_waits({"a": (0.0, 0.0), "b": (0.6, 0.0)},
                            {"a": (0.05, 0.02), "b": (0.55, 0.03)}, 0.05,
                            turn_clearance(W), 1.0) == {}


#: bench_scale comb 100 seed 0, stage 1 (``bench.bench_nav_stage``): nine of the 67 final
#: legs, cell centre, goal [m] and the heading on the cell [rad]: a ring of cells 0.12 m
#: apart, each goal beside a neighbour's cell, so that the legs wait for each other in a
#: cycle.
RING = {"m59": ((0.3723, -0.4599), (0.3399, -0.4279), -0.5),
        "m78": ((0.4923, -0.4599), (0.4492, -0.4886), 0.5),
        "m80": ((0.4923, -0.3399), (0.5268, -0.3486), -0.5),
        "m99": ((0.6123, -0.4599), (0.5798, -0.4695), 1.0),
        "m71": ((0.7323, -0.4599), (0.7105, -0.4505), -0.5),
        "m62": ((0.8523, -0.4599), (0.8198, -0.5111), 0.5),
        "m85": ((0.8523, -0.3399), (0.8974, -0.3712), -0.5),
        "m94": ((0.7323, -0.3399), (0.7880, -0.3105), 0.0),
        "m82": ((0.6123, -0.3399), (0.6574, -0.3296), -0.5)}


def test_final_leg_waits_ring_gives_up_a_cycle():
    """Legs that each wait for the next in a cycle never settle: before
    ``MAX_PAIR_TIMINGS`` the loop ran all its 4 n^2 rounds (here 325, 2.9 CPU s, waits up
    to 444 s, and in the whole stage of 67 legs 18,000 rounds, more than 40 CPU minutes).
    Now a pair timed that often is left as it is: the ring's waits stay under 70 s (with
    every pair timed at most 4 times, the bound changes nothing: test_final_legs'
    other tests, ``bench.bench_nav_stage``)."""
    from math import pi

    cells = {m: c for m, (c, _g, _y) in RING.items()}
    goals = {m: g for m, (_c, g, _y) in RING.items()}
    yaws = {m: y * pi for m, (_c, _g, y) in RING.items()}
    waits = _final_leg_waits(cells, goals, 0.05, turn_clearance(W), 1.0, cell_yaw=yaws,
                             turn_rate=1.5, lead_s=1.0)
    assert set(waits) == set(RING) - {"m59"}, waits
    assert 60.0 < max(waits.values()) < 70.0, waits
    assert waits["m78"] == 2.75 and waits["m99"] == 5.25, waits
