"""Two docks of one stage never conflict through a module waiting to be carried (issue 11,
bench_targets random_9_677052670: stage 3 had m3 docking and m7 waiting for its helper
0.04 m from m3's slide; the navigation never moves a module waiting to be carried in its
own stage, so m3 could not slide in until the pair had left).

Random targets of ``bench_targets``' generator, planned with the pipelined schedule.
Judged by geometry computed here from the plan's goals (not from the planner's grid
corridors): in every stage, the module of each helper dock, where it waits to be picked
up (its pre-staging pose, :func:`~smores_assembly.staging.carry_staging_poses`, when it has
one, else its start pose), keeps at least the docking controller's ``obstacle_clearance``
plus 1 cm of pose error (centre distance) from the slide of every other dock of the
stage: the docking axis from the docked pose out to the pre-dock pose, or to the staging
pose its module slides in from (:func:`~smores_assembly.staging.staging_poses`), or for a
helper dock to the carrying helper's centre at its pre-dock pose. Before the schedule
checked it, ``_plans(100, 11)`` had random_9_677052670 (0.040 m) and random_11_853462373
(0.122 m, m3's slide from its staging pose past m2).
"""
from __future__ import annotations


from bench.bench_targets import make_scenario
from random_plans import bench_plans
from smores_assembly.docking import DockingSettings
from smores_assembly.geometry import point_segment_distance, predock_pose
from smores_assembly.navigation.stage import carried_predock
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import carry_staging_poses, staging_poses

W = 0.08
STANDOFF = 0.06
#: the docking controller's clearance of direct moves, plus 1 cm of pose error
NEAR = DockingSettings().obstacle_clearance + 0.01


def _plans(count: int, seed: int, sizes: tuple[int, int] = (4, 12)):
    return bench_plans(count, seed, sizes)


def _slide(plan, a, targets):
    """End points of the slide of dock ``a`` (module docstring)."""
    g = a.goal
    if a.needs_helper:
        far = carried_predock(g, a.child_face.angle, STANDOFF, W)
    else:
        far = targets.get(a.module, predock_pose(g, a.child_face, STANDOFF))
        pre = predock_pose(g, a.child_face, STANDOFF)
        if g.distance_to(pre) > g.distance_to(far):
            far = pre
    return (g.x, g.y), (far.x, far.y)


def _waiting_beside_slides(sc, plan) -> list[tuple]:
    """(stage, waiting module, docking module, centre distance [m]) of every module
    waiting to be carried closer than NEAR to the slide of another dock of its stage."""
    targets = staging_poses(plan, STANDOFF)
    carry = carry_staging_poses(plan, STANDOFF, others=targets)
    out = []
    for k in range(len(plan.stages)):
        acts = [a for a in plan.actions if a.stage == k]
        for a in acts:
            if not a.needs_helper:
                continue
            p = carry.get(a.module, sc.modules[a.module])
            for b in acts:
                if b is a:
                    continue
                d = point_segment_distance((p.x, p.y), *_slide(plan, b, targets))
                if d < NEAR:
                    out.append((k, a.module, b.module, round(d, 3)))
    return out


def test_no_module_waits_beside_a_slide_of_its_stage_random_targets():
    """Random targets (two batches of the bench's generator): no same-stage conflict of
    the waiting kind; enough stages with a helper dock beside others for it to matter."""
    shared = 0
    for seed, sizes in ((11, (5, 12)), (5, (4, 12))):
        for sc, plan in _plans(100, seed, sizes):
            assert not _waiting_beside_slides(sc, plan), (sc.name,
                                                           _waiting_beside_slides(sc, plan))
            shared += sum(1 for k in range(len(plan.stages))
                          if any(a.needs_helper for a in plan.actions if a.stage == k)
                          and sum(a.stage == k for a in plan.actions) > 1)
    assert shared >= 50, shared


def test_random_9_677052670_m7_waits_for_another_stage_than_m3():
    """The bench case: m7 (carried) stands 0.04 m from m3's slide; they dock in different
    stages, every dock still after its parent."""
    sc = scenario_from_dict(make_scenario(9, 677052670))
    plan = with_schedule(plan_assembly(sc), "pipelined")
    stage = {a.module: a.stage for a in plan.actions}
    assert stage["m7"] != stage["m3"]
    assert sc.modules["m7"].distance_to(plan.goals["m3"]) < 0.05   # the layout is the case
    stage[plan.root_module] = -1
    for a in plan.actions:
        assert stage[a.parent_module] < a.stage, a.describe()
    assert not _waiting_beside_slides(sc, plan)
