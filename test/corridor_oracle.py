"""Independent geometric oracle for docking schedules (continuous geometry, not the
planner's grid): a slide from the pre-dock pose to the goal must never penetrate a module
already placed, and docks of one stage must never sweep overlapping areas. Flush contact
(overlap exactly 0) is legal motion."""
from __future__ import annotations

import itertools
import math
import re

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


#: The navigation's ``slide_clearance`` [m]: a module waiting to be carried in its own
#: stage (never moved aside there) must stand this far from every other slide of it.
SLIDE_CLEARANCE = 0.15
#: The staging's ``staging_limit`` [m]: a staging pose lies at most this far beyond the
#: pre-dock pose (the module slides in from there).
STAGING_LIMIT = 0.4


def waits_beside_slide(b, parent_goal: Pose2D, pose: Pose2D, w: float) -> bool:
    """True when a module waiting at ``pose`` to be carried (a helper dock's) stands
    closer than ``SLIDE_CLEARANCE`` to the slide of dock ``b`` (``parent_goal``: its
    parent's goal): the axis from ``b``'s goal out to the carrying helper's centre at the
    pre-dock pose (a helper dock) or to the farthest staging pose (segment distance)."""
    ux, uy = b.goal.x - parent_goal.x, b.goal.y - parent_goal.y
    d = math.hypot(ux, uy)
    ux, uy = ux / d, uy / d
    far = STANDOFF + (w if b.needs_helper else STAGING_LIMIT)
    t = min(far, max(0.0, (pose.x - b.goal.x) * ux + (pose.y - b.goal.y) * uy))
    return math.hypot(pose.x - b.goal.x - t * ux, pose.y - b.goal.y - t * uy) \
        < SLIDE_CLEARANCE


def geometry_constrains(plan: Plan, w: float,
                        modules: dict[str, Pose2D] | None = None) -> bool:
    """True when some slide would pass through another target cell, or two docks of one
    (depth, root-face) group sweep areas that touch, or (with the start poses
    ``modules``) the module of a helper dock of a group waits beside the slide of another
    dock of the group (:func:`waits_beside_slide`): then the paper's plain depth-staged
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
    if modules:
        for a, b in itertools.permutations(plan.actions, 2):
            if (a.needs_helper and a.module in modules and key[a.module] == key[b.module]
                    and waits_beside_slide(b, plan.goals[b.parent_module],
                                           modules[a.module], w)):
                return True
    return False




#: Centre distance the docking controller keeps from every module when it turns in place
#: (``obstacle_clearance``; one module width more while a helper carries a module).
TURN_CLEARANCE = 0.13


def lane_reachable(goal: Pose2D, parent_goal: Pose2D, placed: list[Pose2D], w: float,
                   helper: bool, limit: float = 0.4, step: float = 0.002) -> bool:
    """Can the driven body reach the dock's pre-dock pose, turning only in place (with the
    controller's clearance from every module centre: ``TURN_CLEARANCE``, plus ``w`` for a
    helper carrying the module, measured from the helper's centre one width behind) and
    otherwise driving straight? It must turn onto the docking axis somewhere at least the
    pre-dock distance out (at most ``limit`` [m] beyond it) and slide from there to the
    goal without penetrating a placed square (sampled every 5 mm; flush is legal).
    ``placed``: poses of the modules standing still."""
    ux, uy = goal.x - parent_goal.x, goal.y - parent_goal.y
    d = math.hypot(ux, uy)
    ux, uy = ux / d, uy / d
    back = w if helper else 0.0        # helper centre behind the moving module's centre
    clearance = TURN_CLEARANCE + back
    squares = [(p.x, p.y, p.yaw) for p in placed]
    k = 0
    while k * step <= limit + 1e-9:
        s = STANDOFF + k * step
        # the slide from here: module (and helper) bodies sampled every 5 mm
        n = int(s / 0.005) + 1
        slide = [(goal.x + ux * t * s / n + ux * b, goal.y + uy * t * s / n + uy * b, goal.yaw)
                 for t in range(n + 1) for b in ({0.0, back})]
        if any(square_overlap(q, sq, w) > TOL for q in slide for sq in squares):
            return False  # the lane ends here: every spot farther out is cut off too
        hx, hy = goal.x + ux * (s + back), goal.y + uy * (s + back)
        if all(math.hypot(hx - p.x, hy - p.y) >= clearance - 1e-9 for p in placed):
            return True
        k += 1
    return False


def pickup_side_free(module: Pose2D, placed: list[Pose2D], w: float, gap: float = 0.006
                     ) -> bool:
    """Is some side of ``module`` free for a helper to pick it up? The helper ends with its
    face ``gap`` [m] from one of the module's faces, facing it, coming straight along that
    face's normal from a spot where it turned in place (:func:`lane_reachable` with the
    module as the parent)."""
    for q in range(4):
        a = module.yaw + q * math.pi / 2
        at = Pose2D(module.x + (w + gap) * math.cos(a), module.y + (w + gap) * math.sin(a),
                    a + math.pi)
        if lane_reachable(at, module, placed, w, helper=False):
            return True
    return False


def walled_in(start, occupied) -> bool:
    """Oracle: no 4-connected way over free cells from ``start`` to a cell two beyond the
    occupied cells' bounding box (plain BFS over the box)."""
    xs = [c[0] for c in occupied]
    ys = [c[1] for c in occupied]
    box = (min(xs) - 2, max(xs) + 2, min(ys) - 2, max(ys) + 2)
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop(0)
        if x in (box[0], box[1]) or y in (box[2], box[3]):
            return False
        for c in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if c not in occupied and c not in seen:
                seen.add(c)
                todo.append(c)
    return True


def _forced_before(plan, node) -> list[str]:
    """Nodes every order places before ``node``: the root, its ancestors and, when its
    depth-1 ancestor docks onto a TOP/BOTTOM face of the root, the root's LEFT/RIGHT
    docks (the paper's rule)."""
    by_node = {a.node: a for a in plan.actions}
    out, v = [], node
    while v in by_node:
        first = by_node[v]
        v = first.parent_node
        out.append(v)
    if not first.parent_face.is_wheel:
        out += [a.node for a in plan.actions if a.depth == 1 and a.parent_face.is_wheel]
    return out


def confirm_refusal(sc, msg: str, root=None, named: bool = False) -> None:
    """A refusal for a walled-in, dead-end-lane or unreachable pick-up dock is right by the
    oracles: with the nodes that every order places first (and, with ``named``, the nodes
    the message names as placed before it: when the precedence is a choice, as for two
    docks whose lanes cross, only the geometry is checked), the dock's pre-dock pose (its
    module's pick-up sides) cannot be reached."""
    from smores_assembly import planning as planning_mod
    node = re.match(r"action \S+ \((\S+)\)", msg).group(1)
    real = planning_mod._check_reachable
    try:
        planning_mod._check_reachable = lambda *a, **k: None
        loose = planning_mod.plan_assembly(sc, root=root)
    finally:
        planning_mod._check_reachable = real
    a = next(b for b in loose.actions if b.node == node)
    before = set(_forced_before(loose, node))
    if named:
        before |= {u for group in re.findall(r"\[([^\]]*)\]", msg.split(":", 1)[1])
                   for u in re.findall(r"'([^']+)'", group) if u in loose.assignment}
    still = [loose.goals[loose.assignment[u]] for u in before]
    if "walled in" in msg:
        from smores_assembly.topology import grid_cell
        w = sc.module_width

        def cell(u):
            return grid_cell(loose.goals[loose.assignment[u]], loose.root_pose, w)
        i, j = cell(node)
        pi, pj = cell(a.parent_node)
        assert walled_in((2 * i - pi, 2 * j - pj), {cell(u) for u in before}), msg
    elif "pick it up" in msg:
        assert not pickup_side_free(sc.modules[a.module], still, sc.module_width), msg
    else:
        assert not lane_reachable(a.goal, loose.goals[a.parent_module], still,
                                  sc.module_width, a.needs_helper), msg
