"""Random targets of bench_targets' generator, planned as a run plans them (pipelined):
the shared input of the tests that judge plans by geometry or by the kinematic world."""
from __future__ import annotations

import random
from collections.abc import Iterator

from bench.bench_scale import plannable_scenario, scale_scenario_dict
from bench.bench_targets import make_scenario
from smores_assembly.docking.control import pickup_pose
from smores_assembly.errors import NavigationError, PlanningError
from smores_assembly.geometry import wrap_angle
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.replay import plan_problem
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import Scenario, scenario_from_dict
from smores_assembly.staging import staging_poses
from smores_assembly.vocabulary import Phase


def bench_plans(count: int, seed: int, sizes: tuple[int, int] = (5, 12)
                ) -> Iterator[tuple[Scenario, object]]:
    """``count`` random targets (node counts in ``sizes``, inclusive) drawn with ``seed``;
    yields (scenario, pipelined plan) for each one the planner accepts (the refused ones
    are skipped; the draws do not depend on the planner)."""
    rng = random.Random(seed)
    for _ in range(count):
        sc = scenario_from_dict(make_scenario(rng.randint(*sizes), rng.randrange(1 << 30)))
        try:
            plan = with_schedule(plan_assembly(sc), "pipelined")
        except PlanningError:
            continue
        yield sc, plan


def plan_like_node(prob, nav, width: float):
    """The stage plan of a :class:`~smores_assembly.navigation.problem.NavProblem` as the
    navigation node makes it (carried pairs first, then the helpers' back-offs as their
    first moves: :func:`~smores_assembly.navigation.replay.plan_problem`), or None when
    the grid cannot plan the stage at all. ``width`` [m] is ``nav.module_width``."""
    assert width == nav.module_width, (width, nav.module_width)
    try:
        sp, _ = plan_problem(prob, nav)
    except NavigationError:
        return None
    return sp


def stage_start_world(plan, sc: Scenario, k: int, targets: dict) -> dict:
    """Poses (module -> Pose2D) as stage ``k`` of ``plan`` starts: the root and the modules
    of earlier stages at their goals, those of stage ``k`` and later at their staging
    poses ``targets`` (:func:`smores_assembly.staging.staging_poses`) when they have one,
    every other module where ``sc`` starts it."""
    poses = dict(sc.modules)
    poses[plan.root_module] = plan.goals[plan.root_module]
    for a in plan.actions:
        if a.stage < k:
            poses[a.module] = plan.goals[a.module]
        elif a.module in targets:
            poses[a.module] = targets[a.module]
    return poses


def plan_pipelined(data: dict, name: str):
    """``(scenario, pipelined plan)`` of the scenario dict ``data`` named ``name``; None
    when the target is refused at plan time."""
    data["name"] = name
    sc = scenario_from_dict(data)
    try:
        return sc, with_schedule(plan_assembly(sc), "pipelined")
    except PlanningError:
        return None


def random30_plans(seeds):
    """(scenario, pipelined plan) of ``plannable_scenario("random", 30, seed)``, each
    scenario once (a refused seed gives the next one's)."""
    seen = set()
    for seed in seeds:
        data, _ = plannable_scenario("random", 30, seed)
        if data["source"] in seen:
            continue
        seen.add(data["source"])
        planned = plan_pipelined(data, f"random30_seed{seed}")
        if planned is not None:
            yield planned


def scale_plans(n: int, count: int, seed: int):
    """Pipelined plans of ``count`` bench_scale random targets of ``n`` nodes, their
    generator seeds drawn with ``seed`` (refused targets skipped): (scenario, plan)."""
    for s in random.Random(seed).sample(range(1000), count):
        planned = plan_pipelined(scale_scenario_dict("random", n, s), f"random{n}_seed{s}")
        if planned is not None:
            yield planned


def pair_problems(plans, nav, width: float = 0.08, standoff: float = 0.06):
    """``(name, action, poses, problem)`` of every carried dock that is its helper's first
    of its stage: the world as the stage starts, the helper one ``width`` [m] behind its
    module on the pick-up axis (``standoff`` [m] out from the pick-up pose), the module
    lifted (its docking face ahead, ``carry_yaw``); ``problem``: ``nav_problem`` of the
    stage with the module in NAVIGATE (``nav``: NavSettings)."""
    for sc, plan in plans:
        targets = staging_poses(plan, standoff)
        first: set[tuple[int, str]] = set()
        for a in plan.actions:
            if not a.needs_helper or not a.helper or (a.stage, a.helper) in first:
                continue
            first.add((a.stage, a.helper))
            poses = stage_start_world(plan, sc, a.stage, targets)
            others = [(p.x, p.y) for m, p in poses.items() if m not in (a.helper, a.module)]
            pick = pickup_pose(poses[a.module], poses[a.helper], others, width, standoff)
            h = pick.compose(standoff, 0.0, 0.0)
            poses[a.helper] = h
            poses[a.module] = h.compose(width, 0.0, wrap_angle(-a.child_face.angle))
            prob = nav_problem(plan, a.stage, poses, set(), {a.module: Phase.NAVIGATE}, nav,
                               staging_targets=targets)
            if a.helper in prob.carried:
                yield sc.name, a, poses, prob
