"""No module is sent to a staging pose where a module of the stage that waits for its helper
leaves it no room to turn (issue 11, bench_targets seed 58 random_7_88490221, stage 1: m2's
staging pose was 0.110 m from m1, which stood waiting for its helper h0; m2 turned onto its
dock axis there and touched m1, 0.04 mm). The staging rules keep a staging pose off the
placed bodies only; such a module stays where it is until it is lifted (an idle module in
the way is moved aside instead: test_aside_legs); the navigation's problem drops a staging
move whose goal lies this close to it (it waits where it is, and stages at a later replan).

Judged by geometry computed here: two ``w x w`` squares at any headings cannot touch when
their centres are at least ``w sqrt 2`` apart (each turns inside its circumscribed
circle); a staging goal must keep that, plus 5 mm of path error, from every module of the
stage that waits for its helper."""
from __future__ import annotations

import math

from bench.bench_targets import make_scenario
from random_plans import bench_plans, stage_start_world
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import StagingSettings, carry_staging_poses, staging_poses

W = 0.08
ROOM = W * math.sqrt(2.0) + 0.005


def _too_close(plan, k, poses, prob) -> list[tuple[str, str, float]]:
    """(staging module, waiting module, distance) for every staging goal of ``prob`` closer
    than ``ROOM`` to a module of stage ``k`` that waits for its helper (not lifted yet)."""
    lifted = {c for _h, (_s, _g, c) in prob.carried.items()}
    waiting = [a.module for a in plan.actions if a.stage == k and a.needs_helper
               and a.module not in lifted]
    bad = []
    for m, (_cur, goal) in prob.staging.items():
        for o in waiting:
            d = math.hypot(goal.x - poses[o].x, goal.y - poses[o].y)
            if d < ROOM:
                bad.append((m, o, round(d, 4)))
    return bad


def _problem(plan, sc, k, poses):
    nav, st = NavSettings(), StagingSettings()
    targets = staging_poses(plan, nav.predock_standoff, st, W)
    carry = carry_staging_poses(plan, nav.predock_standoff, st, W, others=targets)
    return nav_problem(plan, k, poses, set(), {}, nav, st, staging_targets=targets,
                       carry_targets=carry)


def test_staging_pose_beside_a_module_waiting_for_its_helper_seed58():
    """The recorded stage: the plan as the run made it, the modules where they start."""
    sc = scenario_from_dict(make_scenario(7, 88490221))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    poses = dict(sc.modules)
    prob = _problem(plan, sc, 0, poses)
    assert _too_close(plan, 0, poses, prob) == []
    assert "m3" in prob.staging   # the other staging move stays


def test_no_staging_goal_crowds_a_standing_module_random_targets():
    """Every stage of 40 random targets, as the stage starts (earlier docks placed, later
    modules at their staging poses or where they started)."""
    nav = NavSettings()
    checked, bad = 0, []
    for sc, plan in bench_plans(40, 58):
        targets = staging_poses(plan, nav.predock_standoff, StagingSettings(), W)
        for k in range(len(plan.stages)):
            poses = stage_start_world(plan, sc, k, targets) if k else dict(sc.modules)
            prob = _problem(plan, sc, k, poses)
            checked += len(prob.staging)
            bad += [(sc.name, k, *b) for b in _too_close(plan, k, poses, prob)]
    assert checked >= 50, checked
    assert bad == []
