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
"""
from __future__ import annotations

import math
import random

from bench.bench_targets import make_scenario
from smores_assembly.errors import PlanningError
from smores_assembly.geometry import Pose2D, square_overlap
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings, clear_predock
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import staging_poses

W = 0.08
STANDOFF = 0.06
LIMIT = 0.4          # clear_predock's default search limit beyond the pre-dock pose [m]
PENETRATION = 0.002  # more than this is not a flush pass


def _world(plan, sc, k: int, targets, rng: random.Random, error: float) -> dict[str, Pose2D]:
    """Poses as stage ``k`` starts; docked modules off their goals by up to ``error``."""
    poses = dict(sc.modules)
    poses[plan.root_module] = plan.goals[plan.root_module]
    for a in plan.actions:
        if a.stage < k:
            g = a.goal
            poses[a.module] = Pose2D(g.x + rng.uniform(-error, error),
                                     g.y + rng.uniform(-error, error), g.yaw)
        elif a.module in targets:
            poses[a.module] = targets[a.module]
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
    gen = random.Random(42)
    bad, checked = [], 0
    for _ in range(100):
        data = make_scenario(gen.randint(5, 12), gen.randrange(1 << 30))
        sc = scenario_from_dict(data)
        try:
            plan = with_schedule(plan_assembly(sc), "pipelined")
        except PlanningError:
            continue
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
