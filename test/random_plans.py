"""Random targets of bench_targets' generator, planned as a run plans them (pipelined):
the shared input of the tests that judge plans by geometry or by the kinematic world."""
from __future__ import annotations

import random
from collections.abc import Iterator

from bench.bench_targets import make_scenario
from smores_assembly.errors import NavigationError, PlanningError
from smores_assembly.navigation.problem import wait_for_backoffs
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import Scenario, scenario_from_dict
from smores_assembly.staging import plan_stage_carrying


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
    first moves), or None when the grid cannot plan the stage at all."""
    try:
        sp, _ = plan_stage_carrying(prob.moving, prob.staging, prob.carried, prob.obstacles,
                                    prob.zones, nav, fixed=prob.fixed, width=width,
                                    keep_clear=prob.keep_clear, slides=prob.slides)
    except NavigationError:
        return None
    return wait_for_backoffs(sp, prob.backoffs, nav.helper_backoff_speed, width)


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
