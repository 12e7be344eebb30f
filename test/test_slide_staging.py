"""No module is staged beside an active dock's slide (issue 15, bench_reconfig
reconf_10_140722156 reuse, stage 6: m4's pre-dock goal, in the corner between the kept m3
and the just docked m2, was moved out along its axis to 0.23 m (``clear_predock``); m7,
staged for stage 7, stood 0.08 m beside that longer slide; the staging rules keep a
staging pose clear of a dock's zone only up to its nominal pre-dock pose, and m4 regulated
0.25 m out on its axis and timed out four times in POSE_ADJUST).

Judged by geometry computed here: a point is beside a slide when it projects onto the
segment (docked pose -> the pose the module slides in from) strictly between its ends and
lies closer than the navigation's ``slide_clearance`` to it.
"""
from __future__ import annotations

import math
import random

import pytest

from bench.bench_reconfig import make_pair
from smores_assembly.docking import DockingSettings
from smores_assembly.errors import PlanningError
from smores_assembly.geometry import Pose2D, point_segment_distance
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import with_schedule
from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.staging import carry_staging_poses, plan_stage_carrying, staging_poses

STANDOFF = 0.06
#: the docking controller's clearance of direct moves, plus 1 cm of pose error
NEAR = DockingSettings().obstacle_clearance + 0.01

#: ground truth of reconf_10_140722156's reuse run at stage 6's start (70.5 s simulated;
#: m2 docked, m7 at its staging pose), x [m], y [m], yaw [rad]
STAGE6 = {"m0": (0.0976, -0.0852, 0.9898), "m1": (0.3068, -0.3827, -1.1902),
          "m3": (0.1415, -0.0184, -2.1518), "m5": (-0.2313, -0.2180, -2.7659),
          "m9": (-0.1047, -0.3294, -2.3742), "m2": (0.0307, -0.0413, 2.5606),
          "m4": (0.4851, -0.1984, -0.3731), "m6": (-0.2663, 0.2446, 2.5480),
          "m8": (-0.4135, 0.2462, -2.1661), "m7": (0.0960, 0.2073, -2.1265),
          "h0": (-0.5303, 0.3240, -0.5889)}


def _beside(p: Pose2D, a: tuple[float, float], b: tuple[float, float], clearance: float
            ) -> bool:
    dx, dy = b[0] - a[0], b[1] - a[1]
    n2 = dx * dx + dy * dy
    if n2 == 0.0:
        return False
    t = ((p.x - a[0]) * dx + (p.y - a[1]) * dy) / n2
    lateral = abs((p.x - a[0]) * dy - (p.y - a[1]) * dx) / math.sqrt(n2)
    return 0.0 < t < 1.0 and lateral < clearance


def _outer_part(a: tuple[float, float], b: tuple[float, float]
                ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of the slide a -> b more than STANDOFF from its goal a, or None."""
    d = math.dist(a, b)
    if d <= STANDOFF + 1e-3:
        return None
    return ((a[0] + (b[0] - a[0]) * STANDOFF / d, a[1] + (b[1] - a[1]) * STANDOFF / d), b)


def _staged_beside(plan, prob, clearance: float) -> list[tuple[str, str]]:
    """(staging module, dock module) for every module (not a helper) whose staging pose
    lies beside a slide of the active stage; for a module carried in a later stage
    (pre-staged with its helper, judged by the pair's footprint in test_staging) beside
    the slide's part past its nominal pre-dock pose."""
    helpers = {a.helper for a in plan.actions if a.helper}
    k = min((a.stage for a in plan.actions if a.module in prob.slides), default=-1)
    carried = {a.module for a in plan.actions if a.needs_helper and a.stage > k}
    out = []
    for m, (_cur, g) in sorted(prob.staging.items()):
        if m in helpers:
            continue
        for o, (a, b) in sorted(prob.slides.items()):
            seg = _outer_part(a, b) if m in carried else (a, b)
            if o != m and seg is not None and _beside(g, *seg, clearance):
                out.append((m, o))
    return out


def _reconf_10_140722156():
    """The run's plan: reuse keeping m0 and m3 (the planner's choice then)."""
    from smores_assembly import reconfigure as rc
    sc = scenario_from_dict(make_pair(10, 140722156))
    conns = sorted(sc.initial_connections)
    mods = rc.snap_structures(conns, sc.modules, sc.module_width)
    part = next(p for p in rc.common_parts(conns, sc.nodes, sc.edges, exclude=sc.helpers)
                if sorted(p.values()) == ["m0", "m3"])
    plan = rc._plan_with_kept(sc, conns, mods, part, rc.ReconfigurationSettings())
    return sc, with_schedule(plan, "pipelined")


def test_reconf_10_140722156_m7_not_staged_beside_m4s_slide():
    """The run's stage 6: m4's slide reaches out past m7's staging pose, m7 is not staged
    there; planned, m7 is moved aside and ends at least the controller's clearance from
    m4's slide; nothing fixed moves."""
    sc, plan = _reconf_10_140722156()
    nav = NavSettings()
    k = next(a.stage for a in plan.actions if a.module == "m4")
    assert k == next(a.stage for a in plan.actions if a.module == "m1")
    m7 = next(a for a in plan.actions if a.module == "m7")
    assert m7.stage > k
    poses = {m: Pose2D(*p) for m, p in STAGE6.items()}
    prob = nav_problem(plan, k, poses, {"m2"}, {}, nav)
    (gx, gy), out = prob.slides["m4"]
    # the slide is longer than the nominal one (pre-dock moved out along the axis), and m7
    # stands beside it: the case
    assert math.hypot(out[0] - gx, out[1] - gy) > STANDOFF + 0.1
    assert _beside(poses["m7"], (gx, gy), out, nav.slide_clearance)
    assert not _staged_beside(plan, prob, nav.slide_clearance), prob.staging
    assert "m7" not in prob.staging
    sp, _staged = plan_stage_carrying(prob.moving, prob.staging, prob.carried, prob.obstacles,
                                      prob.zones, nav, fixed=prob.fixed,
                                      width=sc.module_width, keep_clear=prob.keep_clear,
                                      slides=prob.slides)
    assert not set(sp.paths) & prob.fixed
    assert "m7" in sp.moved_aside
    end = sp.paths["m7"][-1][1]
    assert point_segment_distance((end.x, end.y), (gx, gy), out) >= NEAR


def test_random_reconfigurations_stage_nothing_beside_a_slide():
    """Random bench_reconfig pairs (reuse, pipelined), every docking stage, the world as
    it starts (placed modules at their goals, the others where the disassembly parked
    them): no module is staged beside a slide of that stage, though staging poses beside
    one exist (17 of the 113 stages staged a module there before the rule)."""
    nav = NavSettings()
    rng = random.Random(5)
    stages = near = 0
    for _ in range(30):
        sc = scenario_from_dict(make_pair(rng.randint(6, 10), rng.randrange(1 << 30)))
        try:
            plan = with_schedule(plan_reconfiguration(sc), "pipelined")
        except PlanningError:
            continue
        targets = staging_poses(plan, STANDOFF)
        carry = carry_staging_poses(plan, STANDOFF, others=targets)
        parked = dict(sc.modules)
        for u in plan.undocks:
            parked[u.module] = u.park
        for k in range(plan.num_undock_stages, len(plan.stages)):
            poses = dict(parked)
            for a in plan.actions:
                if a.stage < k:
                    poses[a.module] = a.goal
            prob = nav_problem(plan, k, poses, set(), {}, nav, staging_targets=targets,
                               carry_targets=carry)
            stages += 1
            assert not _staged_beside(plan, prob, nav.slide_clearance), (sc.name, k)
            helpers = {a.helper for a in plan.actions if a.helper}
            near += any(_beside(t, a, b, nav.slide_clearance)
                        for m, t in targets.items() if m not in helpers and m in poses
                        for o, (a, b) in prob.slides.items() if o != m)
    assert stages >= 80, stages
    assert near >= 5, near


def test_rc_car_keeps_its_pre_staged_carried_module_beside_a_nominal_slide():
    """rc_car_two_helpers stage 1: m1, carried in stage 2, is pre-staged on its own dock
    axis 0.14 m beside the docked end of m0's (nominal, 6 cm) slide. Dropping that pose
    undid the pre-staging: 79.2 s -> 106.0 s simulated. It stays staged; the rule still
    applies to a slide's part past its nominal pre-dock pose (test above)."""
    from smores_assembly.planning import plan_assembly
    from smores_assembly.scenario import load_scenario
    nav = NavSettings()
    plan = with_schedule(plan_assembly(load_scenario("config/scenarios/rc_car_two_helpers.yaml")),
                         "pipelined")
    targets = staging_poses(plan, STANDOFF)
    carry = carry_staging_poses(plan, STANDOFF, others=targets)
    m1 = next(a for a in plan.actions if a.module == "m1")
    assert m1.needs_helper and m1.stage == 1
    sc = load_scenario("config/scenarios/rc_car_two_helpers.yaml")
    prob = nav_problem(plan, 0, dict(sc.modules), set(), {}, nav, staging_targets=targets,
                       carry_targets=carry)
    assert "m1" in prob.staging
    g = prob.staging["m1"][1]
    a, b = prob.slides["m0"]
    assert math.dist(a, b) == pytest.approx(STANDOFF, abs=1e-6)    # a nominal slide
    assert _beside(g, a, b, nav.slide_clearance)                    # m1 stands beside it
    assert not _staged_beside(plan, prob, nav.slide_clearance)
