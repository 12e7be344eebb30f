"""Independent geometric oracle for docking schedules (continuous geometry, not the
planner's grid): a slide from the pre-dock pose to the goal must never penetrate a module
already placed, and docks of one stage must never sweep overlapping areas. Flush contact
(overlap exactly 0) is legal motion."""
from __future__ import annotations

import itertools
import math

from smores_assembly.geometry import Pose2D, square_overlap
from smores_assembly.planning import Plan

STANDOFF = 0.06  # the navigation's and docking controller's default pre-dock distance
TOL = 1e-7       # flush contact (overlap 0) is legal; any penetration is not


def swept_bodies(a, parent_goal: Pose2D, w: float) -> list[tuple[float, float, float]]:
    """Squares the moving module (and its helper, one width behind) cover while sliding
    from the pre-dock pose to the goal, sampled every 5 mm."""
    ux, uy = a.goal.x - parent_goal.x, a.goal.y - parent_goal.y
    d = math.hypot(ux, uy)
    ux, uy = ux / d, uy / d
    out = []
    for k in range(int(round(STANDOFF / 0.005)) + 1):
        s = k * 0.005
        out.append((a.goal.x + ux * s, a.goal.y + uy * s, a.goal.yaw))
        if a.needs_helper:
            out.append((a.goal.x + ux * (s + w), a.goal.y + uy * (s + w), a.goal.yaw))
    return out


def corridor_violations(plan: Plan, w: float) -> list[str]:
    """Every dock whose slide penetrates a module placed before it, or a dock of the same
    stage; empty when the plan is geometrically executable."""
    stage_of = {a.module: a.stage for a in plan.actions}
    stage_of[plan.root_module] = -1
    bad = []
    sweeps = {a.module: swept_bodies(a, plan.goals[a.parent_module], w)
              for a in plan.actions}
    for a in plan.actions:
        for m, k in stage_of.items():
            if k < a.stage:
                g = plan.goals[m]
                if max(square_overlap(b, (g.x, g.y, g.yaw), w) for b in sweeps[a.module]) > TOL:
                    bad.append(f"{a.module} passes through placed {m}")
        for b in plan.actions:
            if b.stage == a.stage and b.module < a.module:
                if max(square_overlap(p, q, w) for p in sweeps[a.module]
                       for q in sweeps[b.module]) > TOL:
                    bad.append(f"{a.module} and {b.module} sweep overlapping areas")
    return bad


def geometry_constrains(plan: Plan, w: float) -> bool:
    """True when some slide would pass through another target cell, or two docks of one
    (depth, root-face) group sweep areas that touch: then the paper's plain depth-staged
    schedule does not apply as is."""
    sweeps = {a.module: swept_bodies(a, plan.goals[a.parent_module], w)
              for a in plan.actions}
    for a in plan.actions:
        for m, g in plan.goals.items():
            if m != a.module and max(square_overlap(b, (g.x, g.y, g.yaw), w)
                                     for b in sweeps[a.module]) > TOL:
                return True
    key = {a.module: (a.depth, a.depth == 1 and not a.parent_face.is_wheel)
           for a in plan.actions}
    for a, b in itertools.combinations(plan.actions, 2):
        if key[a.module] == key[b.module] and max(
                square_overlap(p, q, w) for p in sweeps[a.module]
                for q in sweeps[b.module]) > -TOL:
            return True
    return False


