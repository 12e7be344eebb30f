"""A dock's turning spot far out on its axis keeps clear of the other slides of its stage
(issue 11, bench_targets random_10_68252793 / random_11_68252793 stage 4: modules beside
m2's pre-dock pose moved its goal 0.265 m out along its axis, where it turns onto the
axis; that spot stood 0.08 m beside the slide of m4 docking in the same stage).

Random targets of ``bench_targets``' generator, planned with the pipelined schedule; every
stage from the world as it starts (``test_stage_clearance._world_at``). The turning spot
is the pre-dock goal the navigation gives a dock in that world
(``navigation.problem.nav_problem``: ``clear_predock`` moves it out along the axis while
modules stand within ``predock_clearance`` of it); the slides of the other docks of the
stage are computed here from the plan's goals (``test_stage_conflicts._slide``: out to the
pre-dock pose, the staging pose, or a carrying helper's pre-dock pose). Every spot moved
out beyond the nominal pre-dock pose keeps the navigation's ``slide_clearance`` (0.15 m,
what it keeps any module from a slide) from every other slide of its stage.
"""
from __future__ import annotations

from bench.bench_targets import make_scenario
from random_plans import bench_plans
from test_stage_clearance import STANDOFF, _world_at
from test_stage_conflicts import _slide
from smores_assembly.geometry import point_segment_distance
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import staging_poses

NEAR = NavSettings().slide_clearance


def _spots_beside_slides(sc, plan) -> tuple[int, list[tuple]]:
    """(number of spots moved out, [(stage, turning module, other dock, centre distance
    [m])] of every spot closer than NEAR to another slide of its stage)."""
    nav = NavSettings()
    targets = staging_poses(plan, STANDOFF)
    moved, bad = 0, []
    for k in range(len(plan.stages)):
        acts = {a.module: a for a in plan.actions if a.stage == k}
        prob = nav_problem(plan, k, _world_at(plan, sc, k, targets), set(), {}, nav,
                           staging_targets=targets)
        for m, (_, goal) in prob.moving.items():
            a = acts.get(m)
            if a is None or a.needs_helper or goal.distance_to(a.goal) <= STANDOFF + 1e-3:
                continue
            moved += 1
            for b in acts.values():
                if b is not a:
                    d = point_segment_distance((goal.x, goal.y), *_slide(plan, b, targets))
                    if d < NEAR:
                        bad.append((k, m, b.module, round(d, 3)))
    return moved, bad


def test_turning_spots_keep_clear_of_the_stage_slides_random_targets():
    """Two batches of 200 targets of the bench's generator. Before the schedule knew the
    lanes: random_10_869209392 (stage 3, m2 0.08 m from m3's slide) and
    random_11_68252793 (stage 4, m2 0.08 m from m4's slide)."""
    moved, bad = 0, []
    for seed in (11, 42):
        for sc, plan in bench_plans(200, seed):
            n, b = _spots_beside_slides(sc, plan)
            moved += n
            bad += [(sc.name, *x) for x in b]
    assert not bad, bad
    assert moved >= 15, moved


def test_random_11_68252793_m2_and_m4_dock_in_different_stages():
    """The bench case: m2's lane runs beside m4's slide; every dock still after its
    parent, and m2's turning spot clear of every slide of its stage."""
    sc = scenario_from_dict(make_scenario(11, 68252793))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    stage = {a.module: a.stage for a in plan.actions}
    assert stage["m2"] != stage["m4"]
    stage[plan.root_module] = -1
    for a in plan.actions:
        assert stage[a.parent_module] < a.stage, a.describe()
    moved, bad = _spots_beside_slides(sc, plan)
    assert moved >= 1 and not bad, (moved, bad)
