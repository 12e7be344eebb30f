"""Bodies keep clear of each other along a stage's planned paths (issue 11, bench_targets
random_10_713447292 stage 2: the staging m6 stood 0.052 m off the centre of the grid cell
the search gave it, the helper h0 drove along the next row of cells 0.088 m from m6 and
stayed wedged against it, 44 contacts, m0 never picked up).

Random targets of ``bench_targets``' generator, every stage of the pipelined plan, the
world as that stage starts (modules of earlier stages docked, modules of later stages at
their staging poses or where they started, the helper of the stage before flush behind
the module it just handed over). The stage's navigation problem
(``navigation.problem.nav_problem``, what the navigation node plans) is planned and the
timed paths are judged here by body geometry, not by the planner's grid: a module driving
along a leg is its ``w x w`` square turned along the leg, a module standing on a waypoint
(where it may turn in place) is the disc of its corner radius ``w / sqrt 2``, a module
without a path is its square where it stands. From the end of the first legs (the
search's ``t0``) to the end of the schedule every two bodies keep at least 1 mm apart,
or, when closer already at ``t0``, no closer than then. A module on the last leg into
its goal pose (a pre-dock or pick-up pose beside the structure: flush slides are legal)
is not judged against modules that do not move.
"""
from __future__ import annotations

import math

from bench.bench_targets import make_scenario
from random_plans import bench_plans, plan_like_node, stage_start_world
from smores_assembly.docking import DockingSettings
from smores_assembly.geometry import Pose2D, square_overlap
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings, carried_predock
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import staging_poses

W = 0.08
STANDOFF = 0.06
#: corner radius of a module: the disc it sweeps turning in place
R = W / math.sqrt(2.0)
MARGIN = 0.001


def _world_at(plan, sc, k: int, targets) -> dict[str, Pose2D]:
    """Poses as stage ``k`` starts: placed modules at their goals, modules of the stage
    and later ones at their staging poses (else where they started), and the helper of
    the last wheel-face dock of stage ``k - 1`` flush behind the module it handed over."""
    poses = stage_start_world(plan, sc, k, targets)
    handed = [a for a in plan.actions if a.stage == k - 1 and a.needs_helper and a.helper]
    if handed:
        a = handed[-1]
        yaw = carried_predock(a.goal, a.child_face.angle, STANDOFF, W).yaw
        poses[a.helper] = Pose2D(a.goal.x - W * math.cos(yaw), a.goal.y - W * math.sin(yaw),
                                 yaw)
    return poses


def _body(path, t: float) -> tuple:
    """``("disc", x, y)`` standing on a waypoint, ``("square", x, y, yaw)`` on a leg (yaw
    along the leg) or at rest before a path starts moving."""
    if t <= path[0][0]:
        p = path[0][1]
        return ("disc", p.x, p.y) if len(path) > 1 else ("square", p.x, p.y, p.yaw)
    for (ta, a), (tb, b) in zip(path, path[1:]):
        if t <= tb:
            u = 0.0 if tb - ta <= 0.0 else (t - ta) / (tb - ta)
            x, y = a.x + u * (b.x - a.x), a.y + u * (b.y - a.y)
            if math.hypot(b.x - a.x, b.y - a.y) < 1e-9 or u <= 1e-9 or u >= 1.0 - 1e-9:
                return ("disc", x, y)
            return ("square", x, y, math.atan2(b.y - a.y, b.x - a.x))
    p = path[-1][1]
    return ("square", p.x, p.y, p.yaw)


def _point_square(px: float, py: float, sx: float, sy: float, yaw: float) -> float:
    """Signed distance [m] of a point from a ``W`` square centred at ``(sx, sy)``."""
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = px - sx, py - sy
    lx, ly = abs(c * dx + s * dy) - 0.5 * W, abs(-s * dx + c * dy) - 0.5 * W
    return math.hypot(max(lx, 0.0), max(ly, 0.0)) + min(max(lx, ly), 0.0)


def _gap(a: tuple, b: tuple) -> float:
    """Distance [m] between two bodies (negative: overlap; squares: a lower bound)."""
    if a[0] == "disc" and b[0] == "disc":
        return math.hypot(a[1] - b[1], a[2] - b[2]) - 2.0 * R
    if a[0] == "disc":
        return _point_square(a[1], a[2], *b[1:]) - R
    if b[0] == "disc":
        return _gap(b, a)
    return -square_overlap(a[1:], b[1:], W)


def _violations(sp, poses: dict[str, Pose2D], dt: float = 0.05) -> list[tuple]:
    """(a, b, gap [m], t [s]) of the first instant each pair comes too close (module
    docstring), sampled every ``dt`` s from ``t0`` to the end of the schedule (a pair
    with a helper whose path starts with its back-off, ``backoff_delay_s``: that much
    later, where its first leg ends)."""
    t0 = sp.stats.get("t0_s", 0.0)
    t1 = t0 + sp.stats.get("makespan", 0) * sp.stats.get("step_s", 0.0)
    n = max(1, int((t1 - t0) / dt))
    # a helper's path shifted by its back-off (wait_for_backoffs): its first leg ends
    # that much later, and so does its schedule
    shift = sp.stats.get("backoff_delay_s", {})

    def at(m: str, t: float) -> tuple:
        if m in sp.paths:
            return _body(sp.paths[m], t)
        p = poses[m]
        return ("square", p.x, p.y, p.yaw)

    def final_leg(m: str, t: float) -> bool:
        p = sp.paths.get(m)
        return p is not None and len(p) >= 3 and t > p[-2][0]

    ids = sorted(poses)
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if a not in sp.paths and b not in sp.paths:
                continue
            d = max(shift.get(a, 0.0), shift.get(b, 0.0))
            g0 = _gap(at(a, t0 + d), at(b, t0 + d))
            for k in range(n + 1):
                t = t0 + d + (t1 - t0) * k / n
                if ((final_leg(a, t) and b not in sp.paths)
                        or (final_leg(b, t) and a not in sp.paths)):
                    continue
                g = _gap(at(a, t), at(b, t))
                if g < min(MARGIN, g0) - 1e-9:
                    out.append((a, b, round(g, 4), round(t, 2)))
                    break
    return out


def _stage_plans(sc, plan, nav: NavSettings, handed_over: bool = False):
    """(stage, poses, StagePlan) of every stage of ``plan`` the grid can plan, as the
    navigation node plans it (a helper backing off from its hand-over planned from where
    its back-off ends, the plan timed for it: ``wait_for_backoffs``). ``poses``: the
    world as the stage starts, the helper that just handed over where its back-off ends
    (``handed_over``: flush behind the module, where it stands at the start)."""
    targets = staging_poses(plan, STANDOFF)
    for k in range(len(plan.stages)):
        poses = _world_at(plan, sc, k, targets)
        prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets)
        sp = plan_like_node(prob, nav, W)
        if sp is None:
            continue  # a stage the grid cannot plan at all (not this test's matter)
        if not handed_over:
            poses = {**poses, **{h: end for h, (_s, end) in prob.backoffs.items()}}
        if sp.paths:
            yield k, poses, sp


def test_bodies_keep_clear_along_stage_plans_random_targets():
    """Random targets (two seeds of the bench's generator, 70 targets): along every
    stage's plan no two bodies come closer than 1 mm (module docstring). Before modules
    standing at their goals were held as obstacles: 40 of 320 stage plans failed."""
    nav = NavSettings()
    checked = 0
    for seed, count in ((11, 30), (5, 40)):
        for sc, plan in bench_plans(count, seed):
            for k, poses, sp in _stage_plans(sc, plan, nav):
                bad = _violations(sp, poses)
                assert not bad, (sc.name, k, bad)
                checked += 1
    assert checked >= 250, checked


def test_random_10_713447292_h0_passes_the_staging_m6_clear():
    """The bench_targets case: stage 2, h0 flush behind m9 that it just handed over, m6
    at its staging pose off its cell's centre: h0's way to m0 keeps a body's clearance
    from m6 (it passed 0.088 m from m6's centre: 0.6 mm overlap turning there)."""
    sc = scenario_from_dict(make_scenario(10, 713447292))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    k = next(a.stage for a in plan.actions if a.module == "m0")
    (_, poses, sp), = [x for x in _stage_plans(sc, plan, NavSettings()) if x[0] == k]
    assert "h0" in sp.paths and "m6" in poses
    assert not _violations(sp, poses)
    t0 = sp.stats["t0_s"]
    m6 = poses["m6"]
    t_end = sp.paths["h0"][-1][0]
    closest = min(_gap(_body(sp.paths["h0"], t0 + 0.05 * i), ("square", m6.x, m6.y, m6.yaw))
                  for i in range(int((t_end - t0) / 0.05) + 1))
    assert closest >= MARGIN, closest


def _backoff_violations(plan, k: int, poses: dict[str, Pose2D], sp, dt: float = 0.05
                        ) -> list[tuple]:
    """(helper, module, gap [m], t [s]) where the helper of the last wheel-face dock of
    stage ``k - 1``, backing straight off from its hand-over pose (``poses``) as the
    docking controller does before it follows any path (``helper_backoff`` at
    ``near_structure_speed``, from t = 0), comes closer than 1 mm (or than at t = 0) to
    another module on its planned path or standing where it stands."""
    ds = DockingSettings()
    handed = [a for a in plan.actions if a.stage == k - 1 and a.needs_helper and a.helper]
    if not handed:
        return []
    h = handed[-1].helper
    hp = poses[h]
    speed = min(ds.near_structure_speed, ds.v_max)
    n = int(ds.helper_backoff / speed / dt) + 1

    def helper(i: int) -> tuple:
        d = min(ds.helper_backoff, i * dt * speed)
        return ("square", hp.x - d * math.cos(hp.yaw), hp.y - d * math.sin(hp.yaw), hp.yaw)

    def other(m: str, t: float) -> tuple:
        if m in sp.paths:
            return _body(sp.paths[m], t)
        p = poses[m]
        return ("square", p.x, p.y, p.yaw)

    out = []
    for m in sorted(poses):
        if m == h:
            continue
        if _gap(helper(n), other(m, 0.0)) < MARGIN:
            # standing where the back-off ends, the pair's nominal pre-dock pose of the
            # stage before, which that stage's slide kept clear: a run has no module
            # there (this made-up world left it where it started)
            continue
        g0 = _gap(helper(0), other(m, 0.0))
        for i in range(n + 1):
            g = _gap(helper(i), other(m, i * dt))
            if g < min(MARGIN, g0) - 1e-9:
                out.append((h, m, round(g, 4), round(i * dt, 2)))
                break
    return out


def test_a_helper_backing_off_meets_no_planned_module_random_targets():
    """Random targets (three seeds of the bench's generator, 110 targets), every stage
    after a hand-over: the helper's straight back-off from its hand-over pose, which the
    docking controller drives before it follows any path, meets no module on the stage's
    plan (before the navigation knew of the back-off: 5 of 305 hand-overs, paths through
    the space behind the helper while it backed off)."""
    nav = NavSettings()
    checked = 0
    for seed, count in ((11, 30), (5, 40), (7, 40)):
        for sc, plan in bench_plans(count, seed):
            for k, poses, sp in _stage_plans(sc, plan, nav, handed_over=True):
                bad = _backoff_violations(plan, k, poses, sp)
                assert not bad, (sc.name, k, bad)
                checked += any(a.stage == k - 1 and a.needs_helper for a in plan.actions)
    assert checked >= 250, checked
