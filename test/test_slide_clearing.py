"""Nothing that may move stands beside an active dock's slide once its stage is planned
(issue 11, bench_targets random_12_594393859: m7 slid in from its staging pose with m4,
a later stage's module waiting to be carried, 0.131 m from m7's pre-dock pose; nothing
moved m4 and m7 timed out four times in POSE_ADJUST).

Random targets of ``bench_targets``' generator, every stage of the pipelined plan, the
world as that stage starts (modules of earlier stages docked, modules of later stages at
their staging poses or where they started, the active stage's modules at their staging
poses or starts). The stage's navigation problem (``navigation.problem.nav_problem``, what
the navigation node plans) is planned and its paths run to their ends. Judged by geometry
computed here from the target (not from the planner's slides): every dock's slide, from
its docked pose out along the face normal to its pre-dock pose or to the staging pose its
module slides in from, keeps every module that is not part of the built structure at
least the docking controller's ``obstacle_clearance`` plus 1 cm of pose error away
(centre distance; closer, the controller counts it as a lane neighbour or flees it);
modules standing at their staging poses keep the staging rules instead (``test_staging``).
"""
from __future__ import annotations

import math

from bench.bench_targets import make_scenario
from random_plans import bench_plans, stage_start_world
from smores_assembly.docking import DockingSettings
from smores_assembly.errors import NavigationError
from smores_assembly.geometry import Pose2D, point_segment_distance, predock_pose
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import (carry_staging_poses, on_staging_axis, plan_stage_carrying,
                                     staging_poses)

W = 0.08
STANDOFF = 0.06
#: the docking controller's clearance of direct moves, plus 1 cm of pose error
NEAR = DockingSettings().obstacle_clearance + 0.01


def _slide_violations(plan, k: int, poses: dict[str, Pose2D], targets) -> list[tuple]:
    """(dock module, intruder, centre distance) for every module off the structure closer
    than NEAR to the slide of a non-helper dock of stage ``k``; modules standing at their
    staging poses (``targets``) keep the staging rules instead (``test_staging``)."""
    placed = {plan.root_module} | {a.module for a in plan.actions if a.stage < k}
    placed |= {m for m, q in targets.items() if m in poses and poses[m].distance_to(q) < 1e-3}
    # the stage's own modules and helpers: same-stage conflicts are the schedule's matter
    active = {x for b in plan.actions if b.stage == k for x in (b.module, b.helper) if x}
    out = []
    for a in plan.actions:
        if a.stage != k or a.needs_helper:
            continue
        g = a.goal
        pre = predock_pose(g, a.child_face, STANDOFF)
        far = (pre.x, pre.y)
        cur = poses[a.module]
        # where it stands on its axis beyond the pre-dock pose: it slides in from there
        if on_staging_axis(cur, g, plan.goals[a.parent_module], STANDOFF, 0.03,
                           math.radians(4.0)) and math.hypot(cur.x - g.x, cur.y - g.y) \
                > math.hypot(pre.x - g.x, pre.y - g.y):
            far = (cur.x, cur.y)
        for m, p in poses.items():
            if m == a.module or m in placed or m in active:
                continue
            d = point_segment_distance((p.x, p.y), (g.x, g.y), far)
            if d < NEAR:
                out.append((a.module, m, round(d, 4)))
    return out


def _plans(count: int, seed: int):
    return bench_plans(count, seed)


def _run(sc, plan, nav: NavSettings):
    """Per stage: (stage, violations before planning, violations after the plan)."""
    targets = staging_poses(plan, STANDOFF)
    # pre-staged carried modules (issue 14) keep the staging rules too
    staged_at = dict(targets, **carry_staging_poses(plan, STANDOFF, others=targets))
    for k in range(len(plan.stages)):
        poses = stage_start_world(plan, sc, k, targets)
        before = _slide_violations(plan, k, poses, staged_at)
        prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets)
        try:
            sp, _staged = plan_stage_carrying(prob.moving, prob.staging, prob.carried,
                                              prob.obstacles, prob.zones, nav,
                                              fixed=prob.fixed, width=W,
                                              keep_clear=prob.keep_clear,
                                              slides=prob.slides)
        except NavigationError:
            continue  # a stage the grid cannot plan at all (not this test's matter)
        # placed modules and modules waiting to be carried never move
        assert not set(sp.paths) & prob.fixed, (sc.name, k, set(sp.paths) & prob.fixed)
        after = dict(poses)
        for m, path in sp.paths.items():
            if path:
                after[m] = path[-1][1]
        yield k, before, _slide_violations(plan, k, after, staged_at)


def test_modules_beside_a_slide_are_moved_aside_random_targets():
    """Random targets: after each stage's plan no module off the structure stands within
    the controller's clearance of a slide of that stage; such modules stood there before
    planning in enough stages for the check to mean something."""
    nav = NavSettings()
    cases = 0
    for sc, plan in _plans(40, 11):
        for k, before, after in _run(sc, plan, nav):
            cases += bool(before)
            assert not after, (sc.name, k, after)
    assert cases >= 5, cases


def test_random_12_594393859_m4_moved_aside_for_m7():
    """The bench_targets case: stage 2, m7 at its staging pose, m4 (carried in stage 5)
    standing 0.131 m from m7's pre-dock pose is moved aside, nothing placed moves."""
    data = make_scenario(12, 594393859)
    sc = scenario_from_dict(data)
    plan = with_schedule(plan_assembly(sc), "pipelined")
    k = next(a.stage for a in plan.actions if a.module == "m7")
    res = {st: (b, a) for st, b, a in _run(sc, plan, NavSettings())}
    before, after = res[k]
    assert any(v[:2] == ("m7", "m4") for v in before), before
    assert not after, after


def test_a_module_crosswise_on_its_axis_is_navigated_not_slid_in():
    """random_12_594393859 stage 2: m7 still on its way, standing on its axis between the
    pre-dock pose and the face but turned 2 rad off (the run: it got no path, turned
    beside m4 and timed out four times) is planned to its pre-dock pose; at its staging
    pose, aligned, it slides in (no path)."""
    sc = scenario_from_dict(make_scenario(12, 594393859))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    targets = staging_poses(plan, STANDOFF)
    k = next(a.stage for a in plan.actions if a.module == "m7")
    poses = stage_start_world(plan, sc, k, targets)
    prob = nav_problem(plan, k, poses, set(), {}, NavSettings(), staging_targets=targets)
    assert "m7" in prob.direct and "m7" not in prob.moving
    poses["m7"] = Pose2D(0.225, 0.225, 0.0)      # ground truth at the stage's start
    prob = nav_problem(plan, k, poses, set(), {}, NavSettings(), staging_targets=targets)
    assert "m7" not in prob.direct
    goal = prob.moving["m7"][1]
    pre = predock_pose(plan.goals["m7"], next(a for a in plan.actions
                                              if a.module == "m7").child_face, STANDOFF)
    assert goal.distance_to(pre) < 1e-9 and abs(goal.yaw - pre.yaw) < 1e-9


def _lead_in_violations(sp, poses: dict[str, Pose2D]) -> list[tuple]:
    """Pairs of modules that come closer than ``min(w sqrt 2, their distance at t = 0)``
    while the planned modules drive from their poses to their first grid cells (every
    path's first leg, timed; modules without a path stand still), sampled every 0.05 s."""
    from smores_assembly.navigation.stage import pose_at
    body = W * math.sqrt(2.0)
    t0 = sp.stats.get("t0_s", 0.0)
    ids = sorted(poses)
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if a not in sp.paths and b not in sp.paths:
                continue
            pa, pb = poses[a], poses[b]
            d0 = pa.distance_to(pb)
            if d0 > 0.6:
                continue
            n = max(1, int(t0 / 0.05))
            for k in range(n + 1):
                t = t0 * k / n
                qa = pose_at(sp.paths[a], t) if a in sp.paths else pa
                qb = pose_at(sp.paths[b], t) if b in sp.paths else pb
                if qa.distance_to(qb) < min(body, d0) - 1e-6:
                    out.append((a, b, round(d0, 4), round(qa.distance_to(qb), 4), round(t, 2)))
                    break
    return out


def test_first_legs_never_close_in_on_a_neighbour():
    """Random targets of the bench's generator (starts 1.5 widths apart and more), the
    first stage from the start poses: while the modules drive from their poses to their first
    grid cells, no two come closer than two corner radii (``w sqrt 2``: both may turn in
    place there) unless they already stood closer, and then no closer than that
    (random_12_594393859: m11's first cell lay 0.087 m from m5, m11 drove at m5 while it
    turned, 0.32 mm contact, and every replan gave the same cells)."""
    nav = NavSettings()
    checked = 0
    for sc, plan in _plans(40, 5):
        targets = staging_poses(plan, STANDOFF)
        for k in range(1):   # from the drawn start poses (later worlds here are made up)
            poses = dict(sc.modules)
            prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets)
            try:
                sp, _ = plan_stage_carrying(prob.moving, prob.staging, prob.carried,
                                            prob.obstacles, prob.zones, nav,
                                            fixed=prob.fixed, width=W,
                                            keep_clear=prob.keep_clear, slides=prob.slides)
            except NavigationError:
                continue
            if not sp.paths:
                continue
            assert not _lead_in_violations(sp, poses), (sc.name, k,
                                                        _lead_in_violations(sp, poses))
            checked += 1
    assert checked >= 30, checked


def test_a_helper_past_its_path_is_never_moved_aside():
    """A helper whose carried module is in POSE_ADJUST, APPROACH or RETRY is driven by the
    docking controller beside its own dock's slide: fixed, never moved aside
    (random_7_356561138 stage 3: h0, carrying m6, was moved aside for m6's slide)."""
    from smores_assembly.vocabulary import Phase
    nav = NavSettings()
    seen = 0
    for sc, plan in _plans(20, 3):
        targets = staging_poses(plan, STANDOFF)
        for a in plan.actions:
            if not a.needs_helper:
                continue
            poses = stage_start_world(plan, sc, a.stage, targets)
            # the pair at its pre-dock pose, sliding in
            from smores_assembly.navigation.stage import carried_predock
            hp = carried_predock(a.goal, a.child_face.angle, STANDOFF, W)
            poses[a.helper] = hp
            poses[a.module] = Pose2D(hp.x + W * math.cos(hp.yaw), hp.y + W * math.sin(hp.yaw),
                                     hp.yaw)
            for ph in (Phase.POSE_ADJUST, Phase.APPROACH, Phase.RETRY):
                prob = nav_problem(plan, a.stage, poses, set(), {a.module: ph}, nav,
                                   staging_targets=targets)
                assert a.helper in prob.fixed and a.helper not in prob.blockers(nav)
            seen += 1
            break
    assert seen >= 5, seen
