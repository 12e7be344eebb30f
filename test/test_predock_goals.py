"""The navigation's pre-dock goal is a pose where the module can turn, whenever one exists
on its axis with a free slide in (issue 11, bench_targets seed 42 random_10_68252793: m4
docks into the slot beside the column m6, m7, m3, m8; its nominal pre-dock pose is 0.082 m
from m7, too close to turn. The navigation moved the goal out along the axis only while
no module stood "in the lane", and counted m7, docked flush beside the lane but 0.3 mm
closer than a width, as in it: the goal stayed at the nominal pose, m4 turned there into
m7 (collision) and POSE_ADJUST timed out four times).

Random targets of ``bench_targets``' generator, every stage of the pipelined plan, the
world as that stage starts (modules of earlier stages docked, each off its goal by up to
0.5 mm, as docked modules are; later stages' modules at their staging poses or starts).
For every module of the stage that gets a pre-dock goal (``nav_problem``), judged by
geometry computed here (squares, not the planner's or the navigation's lane rules): if the
goal is closer than ``predock_clearance`` to another module, no pose on the axis up to
``limit`` beyond the nominal pre-dock pose is both that clear and joined to the docked
pose by a straight slide that penetrates no module by more than 2 mm (flush neighbours
beside the lane, with their pose error, are passed).

From such a goal the module slides in along the lane, closed loop with the kinematic
world (``SimWorld``: connected, no collision event, no retry): every module it passes,
also the part of the wall already behind it, is a wall to slide along, not an obstacle to
flee (random_10_68252793 on the fixed navigation: m4 reached its goal 0.345 m out beside
m8, m3 and m7, fled m8 and m3 sliding in, slid on, fled again: four POSE_ADJUST
timeouts; the docking controller's lane ended at the pre-dock pose).
"""
from __future__ import annotations

import math
import random

import pytest

from bench.bench_targets import make_scenario
from closed_loop import dock_in_world
from random_plans import bench_plans, stage_start_world
from smores_assembly.geometry import Pose2D, square_overlap
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings, clear_predock
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import staging_poses

W = 0.08
STANDOFF = 0.06
LIMIT = 0.4          # clear_predock's default search limit beyond the pre-dock pose [m]
FAR = 0.12           # a goal this far beyond the pre-dock pose: a long slide [m]
PENETRATION = 0.002  # more than this is not a flush pass


def _world(plan, sc, k: int, targets, rng: random.Random, error: float) -> dict[str, Pose2D]:
    """Poses as stage ``k`` starts; docked modules off their goals by up to ``error``."""
    poses = stage_start_world(plan, sc, k, targets)
    for a in plan.actions:
        if a.stage < k:
            g = a.goal
            poses[a.module] = Pose2D(g.x + rng.uniform(-error, error),
                                     g.y + rng.uniform(-error, error), g.yaw)
    return poses


def _free_slide(p: Pose2D, goal: Pose2D, others) -> bool:
    """The straight slide of a module square (``goal``'s heading) from ``p`` to ``goal``
    penetrates no body of ``others`` by more than PENETRATION (sampled every 5 mm)."""
    d = math.hypot(p.x - goal.x, p.y - goal.y)
    n = max(1, math.ceil(d / 0.005))
    for i in range(n + 1):
        t = i / n
        b = (goal.x + (p.x - goal.x) * t, goal.y + (p.y - goal.y) * t, goal.yaw)
        if any(square_overlap(b, (q.x, q.y, q.yaw), W) > PENETRATION for q in others):
            return False
    return True


def _bad_goals(sc, plan, rng, error: float, nav: NavSettings) -> list[tuple]:
    """(stage, module, distance of its goal to the nearest module, a clear pose with a
    free slide) for every pre-dock goal where the module cannot turn though it could."""
    targets = staging_poses(plan, STANDOFF)
    out = []
    for k in range(len(plan.stages)):
        poses = _world(plan, sc, k, targets, rng, error)
        prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets)
        for a in plan.actions:
            if a.stage != k or a.needs_helper or a.module not in prob.moving:
                continue
            goal = prob.moving[a.module][1]
            others = [q for m, q in poses.items() if m != a.module]
            near = min(math.hypot(goal.x - q.x, goal.y - q.y) for q in others)
            if near >= nav.predock_clearance - 1e-9:
                continue
            ang = a.goal.yaw + a.child_face.angle
            ca, sa = math.cos(ang), math.sin(ang)
            for i in range(int(LIMIT / 0.005) + 1):
                d = STANDOFF + 0.005 * i
                p = Pose2D(a.goal.x - d * ca, a.goal.y - d * sa, a.goal.yaw)
                if (min(math.hypot(p.x - q.x, p.y - q.y) for q in others)
                        >= nav.predock_clearance and _free_slide(p, a.goal, others)):
                    out.append((k, a.module, round(near, 4), round(d, 3)))
                    break
    return out


def test_predock_goal_can_turn_with_flush_neighbours_off_by_tenths_of_mm():
    """Random targets, docked modules off their goals by up to 0.5 mm: every pre-dock goal
    is clear whenever a clear pose with a free slide exists on the axis."""
    nav = NavSettings()
    rng = random.Random(7)
    bad, checked = [], 0
    for sc, plan in bench_plans(100, 42):
        checked += 1
        bad += [(sc.name,) + b for b in _bad_goals(sc, plan, rng, 0.0005, nav)]
    assert checked >= 90
    assert not bad, bad


def test_random_10_68252793_m4_goal_beyond_the_wall():
    """The bench case: m4's goal stays out at its turning spot (0.265 m from its docked
    pose) when m7 and m3, docked flush beside its lane, stand 0.3 mm closer to it."""
    sc = scenario_from_dict(make_scenario(10, 68252793))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    a = next(x for x in plan.actions if x.module == "m4")
    root = plan.goals[plan.root_module]
    ux, uy = (a.goal.x - root.x) / W, (a.goal.y - root.y) / W   # m6 -> m4: towards the lane
    targets = staging_poses(plan, STANDOFF)
    poses = _world(plan, sc, a.stage, targets, random.Random(0), 0.0)
    for m in ("m7", "m3"):
        p = poses[m]
        poses[m] = Pose2D(p.x + 0.0003 * ux, p.y + 0.0003 * uy, p.yaw)
    nav = NavSettings()
    goal = nav_problem(plan, a.stage, poses, set(), {}, nav,
                       staging_targets=targets).moving["m4"][1]
    assert math.hypot(goal.x - a.goal.x, goal.y - a.goal.y) > 0.2
    assert min(math.hypot(goal.x - q.x, goal.y - q.y)
               for m, q in poses.items() if m != "m4") >= nav.predock_clearance
    # clear_predock alone, the same world
    others = [(q.x, q.y) for m, q in poses.items() if m != "m4"]
    g2 = clear_predock(a.goal, a.child_face.angle, STANDOFF, others, nav.predock_clearance)
    assert g2.distance_to(goal) < 1e-9


def _dock_from(poses: dict[str, Pose2D], act, t_max: float = 90.0) -> tuple[bool, int, int]:
    """``act``'s DockingTask from where its module stands in ``poses`` (no path), closed
    loop in SimWorld. Returns (connected, collision events, retries)."""
    return dock_in_world(poses, act, t_max)[:3]


def _far_docks(sc, plan, nav: NavSettings):
    """(poses, action) of every dock without a helper whose pre-dock goal
    (``clear_predock``, the modules of earlier stages and the stage's other docks placed)
    lies more than FAR beyond the pre-dock pose, the module standing there aligned."""
    for a in plan.actions:
        if a.needs_helper:
            continue
        placed = [plan.root_module] + [b.module for b in plan.actions
                                       if b.stage <= a.stage and b.module != a.module]
        poses = {m: plan.goals[m] for m in placed}
        others = [(p.x, p.y) for p in poses.values()]
        g = clear_predock(a.goal, a.child_face.angle, STANDOFF, others,
                          nav.predock_clearance)
        if g.distance_to(a.goal) > STANDOFF + FAR:
            poses[a.module] = g
            yield poses, a


def test_docks_slide_in_from_far_predock_goals_along_walls():
    """Random targets of the bench's generator: every dock whose pre-dock goal lies far out
    (a lane along a wall) docks from there without a collision or a retry."""
    nav = NavSettings()
    bad, runs = [], 0
    for sc, plan in bench_plans(80, 43, (6, 12)):
        for poses, a in _far_docks(sc, plan, nav):
            runs += 1
            ok, coll, retries = _dock_from(poses, a)
            if not ok or coll or retries:
                bad.append((sc.name, a.module, ok, coll, retries))
    assert runs >= 10, runs
    assert not bad, bad


def test_random_10_68252793_m4_slides_in_along_m8_m3_m7():
    """The bench case: m4 from its pre-dock goal 0.345 m out (m8 of its stage docked, m5
    at its pre-staging pose), aligned or turned 0.3 rad off: docked, no collision, no
    retry."""
    from smores_assembly.staging import carry_staging_poses

    sc = scenario_from_dict(make_scenario(10, 68252793))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    a = next(x for x in plan.actions if x.module == "m4")
    targets = staging_poses(plan, STANDOFF)
    placed = [plan.root_module] + [b.module for b in plan.actions
                                   if b.stage <= a.stage and b.module != "m4"]
    poses = {m: plan.goals[m] for m in placed}
    poses["m5"] = carry_staging_poses(plan, STANDOFF, others=targets)["m5"]
    g = clear_predock(a.goal, a.child_face.angle, STANDOFF,
                      [(p.x, p.y) for p in poses.values()], NavSettings().predock_clearance)
    assert g.distance_to(a.goal) > 0.3
    for dyaw in (0.0, 0.3):
        poses["m4"] = Pose2D(g.x, g.y, g.yaw + dyaw)
        assert _dock_from(dict(poses), a) == (True, 0, 0), dyaw


def _clearest(goal, face, others, stay, clearance):
    """Brute force of clear_predock's pose on a lane nothing blocks: the first clear pose
    out to LIMIT, else the one at LIMIT when no centre of ``others`` is within a module
    width of it, else the greatest (distance to ``stay`` up to ``clearance``, distance to
    ``others``), the nearer pose on a tie. Returns (pose, how: "clear", "limit" or
    "clearest")."""
    ang = goal.yaw + face
    ca, sa = math.cos(ang), math.sin(ang)
    best, best_key = None, None
    for i in range(int(round(LIMIT / 0.005)) + 1):
        d = STANDOFF + 0.005 * i
        p = Pose2D(goal.x - d * ca, goal.y - d * sa, goal.yaw)
        near = min(math.hypot(p.x - x, p.y - y) for x, y in others)
        if near >= clearance:
            return p, "clear"
        key = (round(min(clearance, min((math.hypot(p.x - x, p.y - y) for x, y in stay),
                                        default=math.inf)), 9), round(near, 9))
        if best_key is None or key > best_key:
            best, best_key = p, key
    if near >= W:
        return p, "limit"
    return best, "clearest"


def test_a_crowded_axis_gives_the_limit_pose_or_the_clearest_one():
    """Random worlds in which no pose out to ``LIMIT`` is ``clearance`` from every module:
    a later stage's modules queued on the axis or, in a third of the worlds, beside it
    (moved aside by the stage planner, so they do not hold the pose back), one at the
    limit in the other two thirds, and modules that stay beside the lane
    (``lane_others``) in half. The pose returned is ``_clearest``'s:
    the one at the limit when no module's body covers it, else the clearest one on the
    axis (clear of the modules that stay first), not one inside a module (before:
    random 50 seed 911 stage 5, m10's goal 0.4 m out, 5 mm from its child m3 staged on
    its axis; the stage drove m10 into m3 as it was being moved aside, 0.5 mm)."""
    rng = random.Random(911)
    clearance, hows = 0.12, []
    for n in range(300):
        goal = Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi))
        face = rng.choice([0.0, math.pi / 2, math.pi, -math.pi / 2])
        ang = goal.yaw + face
        ca, sa = math.cos(ang), math.sin(ang)
        # modules every 0.06-0.1 m along the axis, up to 3 cm off it, one at the limit;
        # the first beyond the pre-dock pose's body (a pose inside a module is returned
        # unchanged, for the planner to refuse)
        others, d = [], STANDOFF + W + rng.uniform(0.0, 0.05)
        while d < STANDOFF + LIMIT + 0.1:
            # in a third of the worlds beside the lane (no pose is inside one), else in it
            lat = (rng.choice([-1, 1]) * rng.uniform(0.082, 0.11) if n % 3 == 0
                   else rng.uniform(-0.03, 0.03))
            others.append((goal.x - d * ca - lat * sa, goal.y - d * sa + lat * ca))
            d += rng.uniform(0.06, 0.1)
        if n % 3:
            others.append((goal.x - (STANDOFF + LIMIT) * ca,
                           goal.y - (STANDOFF + LIMIT) * sa))
        stay = []
        if n % 2:   # modules that stay, flush beside the lane (never in it)
            for _ in range(rng.randint(1, 4)):
                d, lat = rng.uniform(0.0, STANDOFF + LIMIT), rng.choice([-1, 1]) * W
                stay.append((goal.x - d * ca - lat * sa, goal.y - d * sa + lat * ca))
        best, how = _clearest(goal, face, others + stay, stay, clearance)
        if how == "clear":
            continue
        hows.append(how)
        got = clear_predock(goal, face, STANDOFF, others + stay, clearance, lane_others=stay)
        assert math.hypot(got.x - best.x, got.y - best.y) < 1e-6, (n, how, got, best)
        assert got.yaw == goal.yaw
    assert hows.count("clearest") >= 150 and hows.count("limit") >= 20, hows


def test_a_pose_in_a_pocket_beside_modules_that_stay_is_not_the_clearest():
    """A slot two modules deep that stays (flush both sides at 0.08 and 0.16 m) and idle
    modules beside the lane from 0.3 m out: no pose out to the limit is clear of all;
    the one returned is ``clearance`` from the modules that stay (it can turn there), not
    the one farthest from all, in the pocket 0.103 m from the slot (the fresh review's
    case)."""
    goal = Pose2D(0.0, 0.0, 0.0)   # face angle 0: the pre-dock pose lies along -x
    stay = [(-0.16, W), (-0.16, -W), (-W, W), (-W, -W)]
    idle = [(-(0.30 + W * i), 0.075) for i in range(4)]
    clearance = 0.13
    p = clear_predock(goal, 0.0, STANDOFF, stay + idle, clearance, lane_others=stay)
    assert min(math.hypot(p.x - x, p.y - y) for x, y in stay) >= clearance
    best, how = _clearest(goal, 0.0, stay + idle, stay, clearance)
    assert how == "clearest" and (p.x, p.y) == pytest.approx((best.x, best.y))
