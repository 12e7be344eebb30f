"""A module staged on its dock axis slides in only after the modules moved aside from beside
its slide have gone (issue 16, 30-module targets).

bench_scale layout with a 5 x 6 comb (``test/data/comb_5x6.yaml``), stage 6: m24 stood at
its staging pose on its axis, 0.41 m out, and slid straight in (no path) while the staging
m25, 0.081 m beside that slide, was moved aside by the same plan and turned in place
towards its first cell: m25's corner met m24 (contact 0.05 mm at 117.8 s). The plan held
m24 as a fixed obstacle where it stood, so nothing in it kept the two apart. The
navigation now gives such a module a path that stands where it is until no planned path
comes near its slide (``navigation.problem.direct_waits``), and the docking task waits
that path out where it stands.

Random inputs: pipelined plans of bench_targets' generator; in every stage with a module
that slides straight in from its staging pose, the world is the placed structure (root and
earlier stages at their goals), that module at its staging pose and one idle module put
beside its slide at a random place: between the docked position and the staging pose,
random heading, its centre 0.082-0.096 m off the axis (its corners reach into the lane
when it turns in place) and at least two corner radii from every module (so it can). The
stage is planned as the navigation node plans it and run closed loop in the kinematic
world (``SimWorld``: docking tasks, path followers) for 15 s; judged by the world's
collision events.
"""
from __future__ import annotations

import math
import random

from closed_loop import stage_in_world
from random_plans import bench_plans, stage_start_world
from smores_assembly.errors import NavigationError
from smores_assembly.geometry import Pose2D
from smores_assembly.navigation.problem import direct_waits, nav_problem
from smores_assembly.navigation.stage import NavSettings, turn_clearance
from smores_assembly.staging import plan_stage_carrying, staging_poses

W = 0.08
STANDOFF = 0.06


def _cases(rng: random.Random, nav: NavSettings):
    """(name, stage, direct module, poses, problem, StagePlan, actions) per stage with a
    direct module (module docstring)."""
    for sc, plan in bench_plans(60, 42):
        targets = staging_poses(plan, STANDOFF)
        for k in range(len(plan.stages)):
            full = stage_start_world(plan, sc, k, targets)
            prob = nav_problem(plan, k, full, set(), {}, nav, staging_targets=targets)
            if not prob.direct:
                continue
            d = sorted(prob.direct)[0]
            placed = {plan.root_module} | {a.module for a in plan.actions if a.stage < k}
            poses = {m: full[m] for m in placed | {d}}
            (gx, gy), (px, py) = prob.slides[d]
            length = math.hypot(px - gx, py - gy)
            ux, uy = (px - gx) / length, (py - gy) / length
            idle = next((m for m in sorted(full) if m not in poses), None)
            if idle is None:
                continue
            room = turn_clearance(W)
            for _ in range(50):
                u = rng.uniform(0.2, 1.0) * length
                lat = rng.choice((-1.0, 1.0)) * rng.uniform(0.082, 0.096)
                q = Pose2D(gx + u * ux - lat * uy, gy + u * uy + lat * ux,
                           rng.uniform(-math.pi, math.pi))
                # free to turn where it stands, its corners reaching into the lane
                if all(q.distance_to(p) >= room for p in poses.values()):
                    break
            else:
                continue
            poses[idle] = q
            prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets)
            if d not in prob.direct:
                continue
            try:
                sp, _ = plan_stage_carrying(prob.moving, prob.staging, prob.carried,
                                            prob.obstacles, prob.zones, nav,
                                            fixed=prob.fixed, width=W,
                                            keep_clear=prob.keep_clear, slides=prob.slides)
            except NavigationError:
                continue
            if idle not in sp.paths:
                continue
            acts = [a for a in plan.actions if a.stage == k and a.module in prob.direct]
            yield sc.name, k, d, poses, prob, sp, acts


def test_staged_module_slides_in_after_the_modules_beside_its_slide_left_random_targets():
    """No collision event in any case (a contact of the sliding module with the module
    moved aside from beside its slide, as in the comb run, is one). Before the wait
    (direct modules given an empty path, as the navigation did) 19 of these 37 cases had
    one: the idle module, moved aside, turned into the lane as the staged module slid by."""
    nav = NavSettings()
    rng = random.Random(16)
    bad, checked = [], 0
    for name, k, d, poses, prob, sp, acts in _cases(rng, nav):
        waits = direct_waits(sp, prob.direct, prob.slides, turn_clearance(W),
                             nav.replan_lag_m / nav.nominal_speed)
        paths = dict(sp.paths)
        paths.update({m: [(0.0, poses[m]), (t, poses[m])] for m, t in waits.items()})
        events, _lag = stage_in_world(poses, acts, paths, t_max=15.0, direct=prob.direct)
        checked += 1
        if events:
            bad.append((name, k, d, events[:3]))
    assert checked >= 30, checked
    assert not bad, bad
