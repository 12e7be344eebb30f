"""Pipelined stages (issue 14): staging poses for the docks of later stages.

In the paper's schedule (Sec. IV-C) the modules of later stages stand still while a stage
docks. With the ``pipelined`` schedule they drive, during the stages before their own, to a
**staging pose** near their pre-dock pose, so that their own stage costs only the pose
adjustment and the approach. The paper's rules stay: a stage starts only when every dock
of the stage before is confirmed (a module docks only after its parent is placed; at the
root LEFT/RIGHT before TOP/BOTTOM).

Geometry (``world`` frame, m, rad; ``w`` = module width, ``n`` = unit vector from the
parent's goal to the child's goal, pointing out of the structure):

* the **zone** of a dock is the rectangle swept by its moving body (and the helper's body
  one ``w`` behind it for a wheel-face dock) sliding from its pre-dock pose, ``standoff``
  out along ``n``, onto its goal: ``w`` wide, from the parent's face to the back of the
  body at the pre-dock pose (:func:`dock_zone`); the docks' corridors of
  :mod:`smores_assembly.corridors` on the continuous plane;
* the **staging pose** of a dock without a helper lies on its own axis, heading as its
  goal, ``standoff + e`` out with the smallest ``e >= 0`` (steps of ``step``, at most
  ``limit``) such that its body stays ``margin`` clear of the zone of every other dock that
  runs in its stage or before it, clear of every module placed before it (also along the
  straight slide back to the pre-dock pose: flush is allowed; and by its corner radius
  plus ``TURN_MARGIN`` at the pose itself, where it turns in place), and its centre stays
  ``clearance`` from the pre-dock pose of every dock that runs before it or with it and
  from every staging pose chosen before, ``queue_clearance`` from such a pose that lies on
  its own axis with its heading (a queue: both slide straight on, neither turns there;
  a pre-dock pose only when its module slides in from its own staging pose, not one a
  module of the first stage, a carried pair or an unstaged module navigates to and turns
  at) (:func:`staging_poses`; docks in stage order).
  Helper (wheel-face) docks get their own kind of staging pose
  (:func:`carry_staging_poses`, pre-staged carried modules): the carried module drives by
  itself to a pose on its own dock axis, heading as its goal, where the same rules hold
  for the pair's footprint (the module and its helper at the pick-up pose behind it) and
  the module keeps a turning pair's reach from the pre-dock poses of the other helpers
  meanwhile. The **helper** stages too (:func:`helper_staging`): a helper with no action
  in the active stage drives to the pick-up pose of the first module it carries in a later
  stage (the docking core's :func:`~smores_assembly.docking.control.pickup_pose`, facing
  it; for a pre-staged module the outer pick-up on its axis), so that its fetch in that
  stage costs only the last approach and the lift, and the lifted pair stands on its axis
  just beyond its pre-dock pose.

The stage planner (:func:`plan_stage_pipelined`) plans the current stage's modules and the
staging moves of later stages together (one MAPF problem, so they never collide) and then
checks every staging path against the zones of the current stage: a staging module whose
path would enter one is left where it is (an obstacle) and the stage is planned again, so
no staging pose or staging path ever enters a corridor the current stage needs.

No ROS imports.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection, Mapping, Sequence

from smores_assembly.errors import InputError, NavigationError
from smores_assembly.geometry import MODULE_WIDTH, Pose2D, wrap_angle
from smores_assembly.params import check_ranges, param_field

if TYPE_CHECKING:   # annotations only: the functions import the planner where they plan
    from smores_assembly.navigation.stage import StagePlan

#: Schedule modes of ``task_assignment`` (``schedule`` parameter, ``run --schedule``):
#: one dock per stage; the paper's parallel stages; parallel stages with staging moves.
SCHEDULES = ("sequential", "staged", "pipelined")
#: Path error [m] added to the corner radius of a module turning in place at its staging
#: pose (as :func:`~smores_assembly.navigation.stage.turn_clearance` adds it)
TURN_MARGIN = 0.005
DEFAULT_SCHEDULE = "pipelined"

#: [s] how long the path of a carried pair whose plan failed stands where the pair is
#: (:func:`plan_stage_carrying`'s ``defer_failed_pairs``): the docking controller waits a
#: standing path out, then drives directly, so the caller plans again well before (the
#: navigation node: after ``PAIR_RETRY_S``, :mod:`smores_assembly.ros.navigation`).
DEFERRED_PAIR_HOLD_S = 30.0


def check_schedule(value: str, field: str = "schedule") -> str:
    """``value`` when it is one of :data:`SCHEDULES`, else an ``InputError`` naming
    ``field`` and the value."""
    if value not in SCHEDULES:
        raise InputError(f"{field}: {value!r} is not one of {', '.join(SCHEDULES)}",
                         field=field)
    return value


@dataclass
class StagingSettings:
    """Tunables of the staging moves of pipelined stages (ROS parameters of
    ``navigation``)."""

    staging_margin: float = param_field(
        0.025, "a staging module's body keeps this gap to the swept zone of every dock "
        "that runs before or with it [m] (>= 0.017 m lets it turn in place there)", 0.0, 1.0)
    staging_clearance: float = param_field(
        0.13, "centre distance of a staging pose from other staging poses and from the "
        "pre-dock poses of earlier docks [m] (keep >= predock_clearance and the docking "
        "controller's obstacle_clearance)", 0.0, 2.0)
    staging_queue_clearance: float = param_field(
        0.121, "centre distance of a staging pose from a staging or pre-dock pose on its own "
        "docking axis with its heading (a queue: both slide straight, neither turns "
        "there) [m] (keep >= the navigation's clearance and the docking controller's "
        "escape_distance)", 0.0, 2.0)
    staging_limit: float = param_field(
        0.4, "a staging pose lies at most this far beyond the pre-dock pose [m]; none "
        "found within it: the module waits where it is", 0.0, 5.0)
    staging_direct_tolerance: float = param_field(
        0.03, "a module of the active stage standing on its docking axis (this close to "
        "it [m]) beyond its pre-dock pose (its staging pose) gets no path: the docking "
        "controller slides it straight to the pre-dock pose", 0.0, 0.5)
    staging_direct_yaw_tolerance_deg: float = param_field(
        4.0, "... and heading within this of its goal heading [deg] (the docking "
        "controller slides on from there without turning; a module still on its way, "
        "turned off the axis, is planned to its pre-dock pose instead: bench_targets "
        "random_12_594393859, m7 stopped crosswise on its axis, turned beside m4 and "
        "timed out four times)", 0.0, 180.0)

    def validate(self) -> None:
        """Raise :class:`~smores_assembly.errors.ParamsError` naming the field on an
        out-of-range value."""
        check_ranges(self)


# ------------------------------------------------------------------ oriented rectangles
@dataclass(frozen=True)
class Rect:
    """Oriented rectangle: centre ``(x, y)`` [m], ``yaw`` [rad] of its first axis,
    half-extents ``hx`` (along ``yaw``) and ``hy`` [m]."""

    x: float
    y: float
    yaw: float
    hx: float
    hy: float

    def grown(self, d: float) -> "Rect":
        """The rectangle with every side pushed out by ``d`` [m]."""
        return Rect(self.x, self.y, self.yaw, self.hx + d, self.hy + d)

    def axes(self) -> tuple[tuple[float, float], tuple[float, float]]:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (c, s), (-s, c)

    def extent(self, nx: float, ny: float) -> float:
        """Half-width of the projection on the unit axis ``(nx, ny)``."""
        (ax, ay), (bx, by) = self.axes()
        return self.hx * abs(ax * nx + ay * ny) + self.hy * abs(bx * nx + by * ny)

    def distance_to_point(self, px: float, py: float) -> float:
        """Euclidean distance from the point to the rectangle (0 inside)."""
        (ax, ay), (bx, by) = self.axes()
        dx, dy = px - self.x, py - self.y
        u = max(0.0, abs(dx * ax + dy * ay) - self.hx)
        v = max(0.0, abs(dx * bx + dy * by) - self.hy)
        return math.hypot(u, v)


def rect_overlap(a: Rect, b: Rect) -> float:
    """Overlap depth of two oriented rectangles by the separating axis test (> 0: they
    overlap by that much along the best axis; <= 0: separated by at least ``-result``)."""
    best = math.inf
    dx, dy = b.x - a.x, b.y - a.y
    for r in (a, b):
        for nx, ny in r.axes():
            d = a.extent(nx, ny) + b.extent(nx, ny) - abs(dx * nx + dy * ny)
            best = min(best, d)
    return best


def body(pose: Pose2D, width: float = MODULE_WIDTH) -> Rect:
    """The square body of a module at ``pose``."""
    return Rect(pose.x, pose.y, pose.yaw, 0.5 * width, 0.5 * width)


def _outward(goal: Pose2D, parent_goal: Pose2D) -> tuple[float, float]:
    dx, dy = goal.x - parent_goal.x, goal.y - parent_goal.y
    d = math.hypot(dx, dy)
    if d < 1e-9:
        raise InputError(f"goal: child goal {goal.as_tuple()} coincides with its parent's")
    return dx / d, dy / d


def dock_zone(goal: Pose2D, parent_goal: Pose2D, helper: bool, standoff: float,
              width: float = MODULE_WIDTH) -> Rect:
    """The zone of a dock (see the module docstring): the rectangle from the parent's face
    out to the back of the moving body (and of the helper behind it) at the pre-dock pose.

    Raises:
        InputError: the goal coincides with the parent's goal.
    """
    nx, ny = _outward(goal, parent_goal)
    inner = -0.5 * width                     # the parent's face, from the goal centre
    outer = standoff + 0.5 * width + (width if helper else 0.0)
    mid = 0.5 * (inner + outer)
    return Rect(goal.x + mid * nx, goal.y + mid * ny, math.atan2(ny, nx),
                0.5 * (outer - inner), 0.5 * width)


def nominal_predock(goal: Pose2D, parent_goal: Pose2D, standoff: float) -> Pose2D:
    """The pre-dock pose ``standoff`` out along the dock axis, heading as ``goal``."""
    nx, ny = _outward(goal, parent_goal)
    return Pose2D(goal.x + standoff * nx, goal.y + standoff * ny, goal.yaw)


def _stage_of(plan) -> dict[str, int]:
    """Each module's docking stage in ``plan`` (0-based); -1 for what is placed from the
    start: the root and a reconfiguration's kept part."""
    stage_of = {a.module: a.stage for a in plan.actions}
    stage_of[plan.root_module] = -1
    for m in getattr(plan, "kept", ()):   # a reconfiguration's kept part: placed
        if m in plan.goals:
            stage_of[m] = -1
    return stage_of


def _zones(plan, standoff: float, width: float) -> dict[str, Rect]:
    return {a.module: dock_zone(a.goal, plan.goals[a.parent_module], a.needs_helper,
                                standoff, width) for a in plan.actions}


def stage_zones(plan, stage: int, standoff: float, width: float = MODULE_WIDTH
                ) -> dict[str, Rect]:
    """Module -> zone of every dock of ``stage`` (the corridors that stage needs)."""
    z = _zones(plan, standoff, width)
    return {a.module: z[a.module] for a in plan.actions if a.stage == stage}


def staging_poses(plan, standoff: float, settings: StagingSettings | None = None,
                  width: float = MODULE_WIDTH, step: float = 0.005,
                  prefilter: bool = True) -> dict[str, Pose2D]:
    """Module -> staging pose for every dock of ``plan`` that can stage (module docstring).

    Docks without a helper, in stage order (then node); a dock for which no pose within
    ``staging_limit`` satisfies the rules is left out (its module waits where it is), so
    are helper docks. Deterministic: a function of the plan and the settings only.

    Only the zones, placed bodies and poses that can reach a dock's axis are tested
    (``prefilter``, issue 16: every dock against every other cost 2.5 s at 100 modules):
    a zone whose bounding circle (grown by the margin) is farther than the body's
    half-diagonal from the axis segment ``[standoff, standoff + staging_limit]``, a placed
    body farther than two half-diagonals from ``[0, standoff + staging_limit]``, a pose
    farther than ``staging_clearance`` from the segment cannot change the result
    (``prefilter=False`` tests them all; the tests compare both).

    Args:
        plan: a :class:`smores_assembly.planning.Plan`.
        standoff: pre-dock distance along the dock axis [m].
    """
    s = settings or StagingSettings()
    zones = _zones(plan, standoff, width)
    stage_of = _stage_of(plan)
    predocks = {a.module: nominal_predock(a.goal, plan.goals[a.parent_module], standoff)
                for a in plan.actions}
    half_diag = width / math.sqrt(2.0)
    # the module turns in place at its staging pose (onto its axis, from its path): the
    # disc it sweeps plus 5 mm of path error keeps off every body placed before its stage
    # (bench_targets random_9_46370965: m4 staged 0.085 m from the root m0, its turn
    # swept 17 mm into m0, 3 contacts)
    turn_room = half_diag + TURN_MARGIN
    far = standoff + s.staging_limit + step

    def near(px: float, py: float, nx: float, ny: float, gx: float, gy: float,
             lo: float, radius: float) -> bool:
        """(px, py) closer than ``radius`` (+ 1 mm) to the axis segment [lo, far]."""
        if not prefilter:
            return True
        t = min(far, max(lo, (px - gx) * nx + (py - gy) * ny))
        return math.hypot(px - gx - t * nx, py - gy - t * ny) < radius + 1e-3

    chosen: dict[str, Pose2D] = {}
    first = min((a.stage for a in plan.actions), default=0)
    for a in sorted(plan.actions, key=lambda a: (a.stage, a.node)):
        if a.needs_helper:
            continue
        nx, ny = _outward(a.goal, plan.goals[a.parent_module])
        gx, gy = a.goal.x, a.goal.y
        before = [m for m, k in stage_of.items() if k < a.stage
                  and near(plan.goals[m].x, plan.goals[m].y, nx, ny, gx, gy, 0.0,
                           half_diag + turn_room)]
        other_zones = [zones[b.module] for b in plan.actions
                       if b.stage <= a.stage and b.module != a.module
                       and near(zones[b.module].x, zones[b.module].y, nx, ny, gx, gy,
                                standoff, half_diag
                                + math.hypot(zones[b.module].hx + s.staging_margin,
                                             zones[b.module].hy + s.staging_margin))]
        # (pose, may queue): a pre-dock pose is a queue's place only when its module slides
        # to it straight from a staging pose (chosen before, a dock after the first stage:
        # nothing stages before that one); a module that navigates there drives in off the
        # axis and turns there (issue 11, bench_targets random_4_280080820: m1 staged
        # 0.125 m out on m2's axis, m2 of the first stage came in past it to its pre-dock
        # pose and touched it, 0.10 mm)
        near_pre = [(predocks[b.module], b.stage > first and b.module in chosen)
                    for b in plan.actions
                    if b.stage <= a.stage and b.module != a.module
                    and near(predocks[b.module].x, predocks[b.module].y, nx, ny, gx, gy,
                             standoff, s.staging_clearance)]
        near_pre += [(q, True) for q in chosen.values()
                     if near(q.x, q.y, nx, ny, gx, gy, standoff, s.staging_clearance)]
        placed = [body(plan.goals[m], width) for m in before]
        e = 0.0
        while e <= s.staging_limit + 1e-9:
            d = standoff + e
            p = Pose2D(a.goal.x + d * nx, a.goal.y + d * ny, a.goal.yaw)
            sq = body(p, width)
            mid = standoff + 0.5 * e
            slide = Rect(a.goal.x + mid * nx, a.goal.y + mid * ny, math.atan2(ny, nx),
                         0.5 * e + 0.5 * width, 0.5 * width)
            if (all(rect_overlap(sq, z.grown(s.staging_margin)) <= 0.0 for z in other_zones)
                    and all(rect_overlap(slide, b) <= 1e-9 for b in placed)
                    and all(b.distance_to_point(p.x, p.y) >= turn_room for b in placed)
                    and all(math.hypot(p.x - q.x, p.y - q.y) >= (
                        s.staging_queue_clearance if queue and _queued(q, a.goal, nx, ny)
                        else s.staging_clearance) for q, queue in near_pre)):
                chosen[a.module] = p
                break
            e += step
    return chosen


def pair_staging_footprint(goal: Pose2D, parent_goal: Pose2D, standoff: float, e: float,
                           width: float = MODULE_WIDTH) -> Rect:
    """The area a carried module staged ``standoff + e`` [m] out on its own dock axis
    (:func:`carry_staging_poses`) needs until its helper lifts it: its body and the body
    of the helper at its pick-up pose behind it (TOP face ``standoff`` from the module's
    outer face), a ``(2 w + standoff) x w`` rectangle along the axis; the lifted pair (two
    widths long) lies inside it.

    Raises:
        InputError: the goal coincides with the parent's goal.
    """
    nx, ny = _outward(goal, parent_goal)
    inner = standoff + e - 0.5 * width
    outer = standoff + e + 1.5 * width + standoff
    mid = 0.5 * (inner + outer)
    return Rect(goal.x + mid * nx, goal.y + mid * ny, math.atan2(ny, nx),
                0.5 * (outer - inner), 0.5 * width)


def carry_staging_poses(plan, standoff: float, settings: StagingSettings | None = None,
                        width: float = MODULE_WIDTH, step: float = 0.005,
                        others: Mapping[str, Pose2D] | None = None) -> dict[str, Pose2D]:
    """Module -> staging pose of the module of every wheel-face (helper) dock that can
    stage: pre-staged carried modules (issue 14, ``rc_car_two_helpers``).

    A module its helper carries in a later stage drives, during the stages before (while
    its helper is busy elsewhere or fetching another module), to a pose on its own dock
    axis, heading as its goal, ``standoff + e`` [m] out (smallest ``e >= 0`` in steps of
    ``step``, at most ``staging_limit``). There its helper picks it up from the outer side
    and the lifted pair stands on the axis just beyond its pre-dock pose: the stage costs
    the helper's short fetch, the lift and the slide in, instead of a fetch across the
    field and a carry back. The rules of :func:`staging_poses` are applied to the pair's
    footprint (:func:`pair_staging_footprint`, twice a module long plus the pick-up
    standoff) instead of one body:

    * it keeps ``staging_margin`` from the zone of every other dock of its stage or before;
    * it and the pair's slide back to the pre-dock pose keep clear of every module placed
      before its stage (flush allowed);
    * it keeps ``staging_clearance - w / 2`` from the pre-dock poses (the module's and,
      for helper docks, the carrying helper's) of every other dock of its stage or
      before, and from every staging pose in ``others``; from the footprint of every
      carried module staged before it, ``staging_clearance - w``;
    * the module's centre, the helper's at the lift and at the pick-up keep the
      navigation's :func:`~smores_assembly.navigation.stage.carry_clearance` from the
      pre-dock pose of the helper of every other wheel-face dock of its stage or before
      (that pair reaches its pre-dock pose while the module waits: ``rc_car_two_helpers``'
      rear_left axis lies two widths beside front_left's, and the pair carrying front_left
      moved the module staged there aside);
    * the helper's centre at the lift (``w + 6 mm`` behind the module) keeps
      :func:`~smores_assembly.docking.control.pair_turn_clearance` from every module
      placed before or with it (the outer side is a side the docking core's
      :func:`~smores_assembly.docking.control.pickup_axis` may choose: the pair can turn
      there), and its pick-up pose ``PICKUP_CLEARANCE_WIDTHS * w`` (a free side).

    Only a dock whose helper has no action in the stage just before it gets one: that
    helper then stages at the outer pick-up pose during that stage
    (:func:`helper_staging`, a staging path like any other). A helper coming straight from
    its previous dock fetched a module pre-staged next to the structure through the
    staging modules there, and on bench_targets seed 41 met them (random_7_356561138,
    random_10_608720880: h0 against the staged m5, stuck, stage 3 failed; both assemble
    when their stage-3 modules wait where they started).

    Docks in stage order (then node); a dock with no such pose is left out (its module
    waits where it is). Deterministic: a function of the plan, the settings and
    ``others``.

    Args:
        plan: a :class:`smores_assembly.planning.Plan`.
        standoff: pre-dock distance along the dock axis [m] (also the helper's pick-up
            standoff, as in the navigation node).
        others: module -> staging pose of the docks without a helper (default:
            :func:`staging_poses` with the same settings).
    """
    from smores_assembly.docking.control import PICKUP_CLEARANCE_WIDTHS, pair_turn_clearance
    from smores_assembly.navigation.stage import carry_clearance

    s = settings or StagingSettings()
    if others is None:
        others = staging_poses(plan, standoff, s, width, step)
    zones = _zones(plan, standoff, width)
    stage_of = _stage_of(plan)
    points: dict[str, list[Pose2D]] = {}   # pre-dock poses: the module's, the helper's
    for a in plan.actions:
        par = plan.goals[a.parent_module]
        points[a.module] = [nominal_predock(a.goal, par, standoff)]
        if a.needs_helper:
            points[a.module].append(nominal_predock(a.goal, par, standoff + width))
    turn = pair_turn_clearance(width)
    pair = carry_clearance(width)
    free = PICKUP_CLEARANCE_WIDTHS * width
    lift_gap = 0.006
    lo_reach = standoff - 0.5 * width
    hi_reach = standoff + s.staging_limit + 1.5 * width + standoff
    pad = max(s.staging_margin, s.staging_clearance, turn, pair) + width

    def near(px: float, py: float, radius: float, nx: float, ny: float,
             gx: float, gy: float) -> bool:
        """(px, py) within ``radius + pad`` of the axis segment the footprint may cover."""
        t = min(hi_reach, max(lo_reach, (px - gx) * nx + (py - gy) * ny))
        return math.hypot(px - gx - t * nx, py - gy - t * ny) < radius + pad

    busy = {(b.helper, b.stage) for b in plan.actions if b.helper}
    chosen: dict[str, Rect] = {}
    out: dict[str, Pose2D] = {}
    for a in sorted(plan.actions, key=lambda a: (a.stage, a.node)):
        if not a.needs_helper or (a.helper, a.stage - 1) in busy:
            continue
        par = plan.goals[a.parent_module]
        nx, ny = _outward(a.goal, par)
        gx, gy = a.goal.x, a.goal.y
        other_zones = [z for b, z in zones.items() if b != a.module
                       and stage_of[b] <= a.stage
                       and near(z.x, z.y, math.hypot(z.hx, z.hy), nx, ny, gx, gy)]
        placed = [plan.goals[m] for m, k in stage_of.items()
                  if k <= a.stage and m != a.module
                  and near(plan.goals[m].x, plan.goals[m].y, width, nx, ny, gx, gy)]
        placed_before = [body(plan.goals[m], width) for m in plan.goals
                         if m != a.module and stage_of.get(m, math.inf) < a.stage
                         and near(plan.goals[m].x, plan.goals[m].y, width, nx, ny, gx, gy)]
        pts = [q for b, qs in points.items() if b != a.module and stage_of[b] <= a.stage
               for q in qs if near(q.x, q.y, 0.0, nx, ny, gx, gy)]
        pts += [q for q in others.values() if near(q.x, q.y, 0.0, nx, ny, gx, gy)]
        feet = [r for r in chosen.values() if near(r.x, r.y, math.hypot(r.hx, r.hy),
                                                   nx, ny, gx, gy)]
        pairs = [points[b.module][1] for b in plan.actions
                 if b.needs_helper and b.module != a.module and b.stage <= a.stage
                 and near(points[b.module][1].x, points[b.module][1].y, 0.0, nx, ny, gx, gy)]
        e = 0.0
        while e <= s.staging_limit + 1e-9:
            fp = pair_staging_footprint(a.goal, par, standoff, e, width)
            d0, d1 = standoff - 0.5 * width, standoff + e + 1.5 * width + standoff
            lane = Rect(gx + 0.5 * (d0 + d1) * nx, gy + 0.5 * (d0 + d1) * ny,
                        math.atan2(ny, nx), 0.5 * (d1 - d0), 0.5 * width)
            lift = standoff + e + width + lift_gap
            pick = standoff + e + width + standoff
            lx, ly = gx + lift * nx, gy + lift * ny
            px, py = gx + pick * nx, gy + pick * ny
            if (all(rect_overlap(fp, z.grown(s.staging_margin)) <= 0.0 for z in other_zones)
                    and all(rect_overlap(lane, b) <= 1e-9 for b in placed_before)
                    and all(fp.distance_to_point(q.x, q.y)
                            >= s.staging_clearance - 0.5 * width for q in pts)
                    and all(rect_overlap(fp, r) <= -(s.staging_clearance - width)
                            for r in feet)
                    and all(math.hypot(lx - q.x, ly - q.y) >= turn
                            and math.hypot(px - q.x, py - q.y) >= free for q in placed)
                    and all(min(math.hypot(cx - q.x, cy - q.y) for cx, cy in (
                        (gx + (standoff + e) * nx, gy + (standoff + e) * ny),
                        (lx, ly), (px, py))) >= pair for q in pairs)):
                d = standoff + e
                out[a.module] = Pose2D(gx + d * nx, gy + d * ny, a.goal.yaw)
                chosen[a.module] = fp
                break
            e += step
    return out


def _queued(q: Pose2D, goal: Pose2D, nx: float, ny: float) -> bool:
    """``q`` stands on the dock axis through ``goal`` (direction ``(nx, ny)``), heading as
    ``goal``: a module queued behind or ahead on the same axis."""
    lateral = -(q.x - goal.x) * ny + (q.y - goal.y) * nx
    return abs(lateral) < 1e-6 and abs(wrap_angle(q.yaw - goal.yaw)) < 1e-6


def footprint_to_build(plan, stage: int, done: Collection[str], standoff: float,
                       width: float = MODULE_WIDTH) -> dict[str, list[tuple[float, float]]]:
    """The part of the target still to be built when ``stage`` runs (issue 16): module ->
    its docked position and its pre-dock position (a wheel-face dock: the carrying
    helper's, one ``width`` farther out) [m, ``world``], for every dock of ``stage`` or
    later whose module is not in ``done``. Empty during a reconfiguration's undocking
    stage (modules back off there; nothing is moved aside). The stage planner moves
    modules standing there aside, to park outside it
    (:func:`smores_assembly.navigation.stage.plan_stage`'s ``keep_clear``).
    """
    if any(u.stage == stage for u in getattr(plan, "undocks", ())):
        return {}
    out: dict[str, list[tuple[float, float]]] = {}
    for a in plan.actions:
        if a.stage < stage or a.module in done:
            continue
        out[a.module] = [(a.goal.x, a.goal.y)]
        parent = plan.goals.get(a.parent_module)
        if parent is not None:   # (a kept parent without a pose: its dock's goal only)
            pre = nominal_predock(a.goal, parent, standoff + (width if a.needs_helper else 0.0))
            out[a.module].append((pre.x, pre.y))
    return out


# ------------------------------------------------------------------ stage problems
def path_enters(path: Sequence[tuple[float, Pose2D]], zones: Collection[Rect],
                width: float = MODULE_WIDTH, sample: float = 0.005) -> bool:
    """True when a body following ``path`` (timed waypoints; any heading: the disc of
    radius ``width / sqrt 2`` around its centre) comes into any of ``zones``."""
    r = width / math.sqrt(2.0)
    pts = [p for _, p in path]
    for p, q in zip(pts, pts[1:] or pts):
        n = max(1, int(math.ceil(math.hypot(q.x - p.x, q.y - p.y) / sample)))
        for k in range(n + 1):
            x = p.x + (q.x - p.x) * k / n
            y = p.y + (q.y - p.y) * k / n
            if any(z.distance_to_point(x, y) < r - 1e-9 for z in zones):
                return True
    return False


def on_staging_axis(pose: Pose2D, goal: Pose2D, parent_goal: Pose2D, standoff: float,
                    tolerance: float, yaw_tolerance: float = math.pi) -> bool:
    """True when ``pose`` stands on the dock axis (within ``tolerance`` [m] of it) at or
    beyond the pre-dock pose (up to ``tolerance`` short of it), heading within
    ``yaw_tolerance`` [rad] of ``goal``'s: from there the docking controller slides
    straight to the pre-dock pose."""
    nx, ny = _outward(goal, parent_goal)
    dx, dy = pose.x - goal.x, pose.y - goal.y
    along = dx * nx + dy * ny
    lateral = -dx * ny + dy * nx
    return (abs(lateral) <= tolerance and along >= standoff - tolerance
            and abs(wrap_angle(pose.yaw - goal.yaw)) <= yaw_tolerance)


def slide_blocker(pose: Pose2D, goal: Pose2D, poses: Mapping[str, Pose2D],
                  skip: Collection[str] = (), width: float = MODULE_WIDTH,
                  tolerance: float = 0.002, step: float = 0.005) -> str | None:
    """The first module (by id) whose body the straight slide from ``pose`` to ``goal``
    enters, or None.

    The sliding body (a ``width`` square with ``goal``'s heading) is sampled every
    ``step`` [m] from ``pose`` to ``goal`` (``world``); a module of ``poses`` not in
    ``skip`` blocks when a sample overlaps its body by more than ``tolerance`` [m]
    (:func:`~smores_assembly.geometry.square_overlap`): flush neighbours beside the lane
    and the parent at the goal's face do not. Used for a staged module's straight slide
    (issue 15 bench: the helper that had just docked the parent, released on that axis,
    stood in the lane and the slide timed out in POSE_ADJUST)."""
    from smores_assembly.geometry import point_segment_distance, square_overlap
    d = math.hypot(goal.x - pose.x, goal.y - pose.y)
    n = max(1, int(math.ceil(d / step)))
    reach = width * math.sqrt(2.0)   # centres farther than this from the segment: apart
    for o in sorted(poses):
        q = poses[o]
        if o in skip or point_segment_distance((q.x, q.y), (pose.x, pose.y),
                                               (goal.x, goal.y)) >= reach:
            continue
        for k in range(n + 1):
            t = k / n
            body = (pose.x + (goal.x - pose.x) * t, pose.y + (goal.y - pose.y) * t, goal.yaw)
            if square_overlap(body, (q.x, q.y, q.yaw), width) > tolerance:
                return o
    return None


@dataclass
class StagingProblem:
    """Staging part of one pipelined stage.

    Attributes:
        staging: module -> (current pose, staging pose) of later-stage modules that stage,
            and helper -> (current pose, pick-up pose) of helpers that stage
            (:func:`helper_staging`).
        direct: modules of the active stage already on their axis beyond the pre-dock pose,
            aligned with it, with a clear slide to the goal (:func:`slide_blocker`; no
            path: they slide straight in; fixed obstacles of the stage's MAPF). A module
            whose slide is blocked, or that is turned off the axis, gets a path like any
            other, and the stage's MAPF moves the blocker aside.
        zones: module -> zone of every dock of the active stage.
    """

    staging: dict[str, tuple[Pose2D, Pose2D]]
    direct: set[str]
    zones: dict[str, Rect]


def staging_problem(plan, stage: int, poses: Mapping[str, Pose2D], done: Collection[str],
                    standoff: float, settings: StagingSettings | None = None,
                    width: float = MODULE_WIDTH,
                    targets: Mapping[str, Pose2D] | None = None,
                    carry_targets: Mapping[str, Pose2D] | None = None) -> StagingProblem:
    """What moves besides the active stage's docks in a pipelined stage.

    Args:
        plan: the pipelined plan; stage: the active stage (0-based).
        poses: tracked module poses (``world``); done: modules reported DOCKED.
        standoff: pre-dock distance [m].
        targets: the plan's :func:`staging_poses` with these settings, when the caller
            keeps them (they depend on the plan only); default: computed here.
        carry_targets: the plan's :func:`carry_staging_poses` likewise.

    Returns:
        A :class:`StagingProblem`: modules of later stages whose staging pose exists and
        whose body is not inside a zone of the active stage now (those wait where they
        are) -- a module carried in a later stage too (its pre-staging pose,
        :func:`carry_staging_poses`; a helper with no action now stages at the outer
        pick-up pose of that pose, :func:`helper_staging`) -- and the active stage's
        modules that need no path; nothing during a reconfiguration's undocking stage.
    """
    s = settings or StagingSettings()
    zones = stage_zones(plan, stage, standoff, width)
    if targets is None:
        targets = staging_poses(plan, standoff, s, width)
    if carry_targets is None:
        carry_targets = carry_staging_poses(plan, standoff, s, width, others=targets)
    if any(u.stage == stage for u in getattr(plan, "undocks", ())):
        if getattr(plan, "method", "") != "reuse":
            # the paper's full disassembly: nothing else moves while it undocks
            return StagingProblem({}, set(), zones)
        return undock_staging(plan, stage, poses, standoff, width, targets, carry_targets,
                              s.staging_margin, s.staging_clearance)
    r = width / math.sqrt(2.0)
    staging = {}
    direct = set()
    for a in plan.actions:
        if a.module in done or a.module not in poses:
            continue
        cur = poses[a.module]
        if a.stage == stage and not a.needs_helper and on_staging_axis(
                cur, a.goal, plan.goals[a.parent_module], standoff,
                s.staging_direct_tolerance, math.radians(s.staging_direct_yaw_tolerance_deg)):
            # the slide along the axis (the controller takes a lateral offset out)
            nx, ny = _outward(a.goal, plan.goals[a.parent_module])
            along = (cur.x - a.goal.x) * nx + (cur.y - a.goal.y) * ny
            on_axis = Pose2D(a.goal.x + along * nx, a.goal.y + along * ny, a.goal.yaw)
            if slide_blocker(on_axis, a.goal, poses, {a.module}, width) is None:
                direct.add(a.module)
        elif a.stage > stage and a.module in targets:
            if any(z.distance_to_point(cur.x, cur.y) < r for z in zones.values()):
                continue
            staging[a.module] = (cur, targets[a.module])
        elif a.stage > stage and a.module in carry_targets and a.helper:
            if any(z.distance_to_point(cur.x, cur.y) < r for z in zones.values()):
                continue
            staging[a.module] = (cur, carry_targets[a.module])
    bound = {m: goal for m, (_, goal) in staging.items()}
    for h, (cur, goal) in helper_staging(plan, stage, poses, done, standoff, width,
                                         bound).items():
        if not any(z.distance_to_point(cur.x, cur.y) < r for z in zones.values()):
            staging[h] = (cur, goal)
    return StagingProblem(staging, direct, zones)


def free_modules(plan, stage: int) -> set[str]:
    """The modules of ``plan``'s docks and helpers that are in no start structure any more
    when undocking ``stage`` (0-based) runs: not kept, and every undock that names them
    (as the leaving module or the one left) is of an earlier stage. Those already parked
    (or single from the start)."""
    undocks = getattr(plan, "undocks", ())
    kept = set(getattr(plan, "kept", ()))
    mods = {a.module for a in plan.actions} | {a.helper for a in plan.actions if a.helper}
    busy = {m for u in undocks if u.stage >= stage for m in (u.module, u.from_module)}
    return {m for m in mods if m not in kept and m not in busy}


def undock_areas(plan, stage: int, width: float = MODULE_WIDTH, margin: float = 0.0
                 ) -> dict[str, Rect]:
    """Key -> area swept by every undock of ``stage`` or later (0-based): its back-off
    lane, turn, drive lane and parking body
    (:func:`smores_assembly.reconfigure.undock_swept`), grown by ``margin`` [m]; keys
    ``"<module>#<i>"``."""
    from smores_assembly.reconfigure import undock_swept
    return {f"{u.module}#{i}": Rect(*r).grown(margin)
            for u in getattr(plan, "undocks", ()) if u.stage >= stage
            for i, r in enumerate(undock_swept(u, width))}


def undock_staging(plan, stage: int, poses: Mapping[str, Pose2D], standoff: float,
                   width: float, targets: Mapping[str, Pose2D],
                   carry_targets: Mapping[str, Pose2D], margin: float = 0.025,
                   clearance: float = 0.13) -> StagingProblem:
    """What stages while undocking ``stage`` of a reuse reconfiguration runs (issue 15:
    the one helper stood idle through every undocking stage, then fetched its first module
    from 1 m away: 30-48 s of the first carried dock).

    Every module of a later dock that is free (:func:`free_modules`: already parked)
    drives to its staging pose (``targets``, ``carry_targets``), and every helper to the
    pick-up pose of the first module it carries (:func:`helper_staging`), that module
    taken where the disassembly parks it (its undock's ``park``) when it has not left its
    structure yet. Nothing of the structures moves otherwise (the caller fixes every
    other module). A staging goal whose body (radius ``width / sqrt 2``) comes within
    ``margin`` [m] of an area swept by an undock of this stage or a later one
    (:func:`undock_areas` grown by ``margin``, the returned ``zones``; the settings'
    ``staging_margin``) is not staged now; the caller keeps the
    paths out of those zones too (:func:`plan_stage_pipelined` drops a path that enters
    one). A staging goal also keeps ``clearance`` [m] (centre distance; the settings'
    ``staging_clearance``) from every module that stays where it is (every module is a
    fixed obstacle of that stage's search, none is moved aside), a helper's also from
    every staging goal, the module it carries next aside. The paper's full disassembly
    (``plan.method`` ``"full"``) stages nothing (:func:`staging_problem`).

    Returns:
        A :class:`StagingProblem` with no ``direct`` modules; ``zones`` the undocks'
        areas.
    """
    zones = undock_areas(plan, stage, width, margin)
    r = width / math.sqrt(2.0)
    free = free_modules(plan, stage)

    def clear(p: Pose2D) -> bool:
        return all(z.distance_to_point(p.x, p.y) >= r for z in zones.values())

    # where the modules stand meanwhile: those undocking now or later where the
    # disassembly parks them
    parked = dict(poses)
    for u in getattr(plan, "undocks", ()):
        if u.stage >= stage:
            parked[u.module] = u.park
    staging: dict[str, tuple[Pose2D, Pose2D]] = {}
    for a in plan.actions:
        goal = targets.get(a.module, carry_targets.get(a.module) if a.helper else None)
        if a.module in free and a.module in poses and goal is not None:
            if clear(poses[a.module]) and clear(goal):
                staging[a.module] = (poses[a.module], goal)
    # the helpers towards their first pick-up; the areas of the undocks to come count as
    # occupied when a pick-up side is chosen
    sides = dict(parked)
    for key, z in zones.items():
        sides[f"~{key}"] = Pose2D(z.x, z.y, z.yaw)
    bound = {m: goal for m, (_, goal) in staging.items()}
    helpers = {a.helper for a in plan.actions if a.needs_helper and a.helper}
    carries: dict[str, str | None] = {}
    for h, (cur, goal) in helper_staging(plan, stage, sides, (), standoff, width,
                                         bound).items():
        if h in free and h in helpers and clear(cur) and clear(goal):
            staging[h] = (cur, goal)
            carries[h] = next_carry(plan, stage, h)
    # every goal keeps ``clearance`` from every module that stays where it is (the
    # stage's search fixes them all: a module staged 0.096 m from a parked one touched
    # it, test_undock_staging reconf_10_506927179), a helper's also from the other
    # goals (a module staged 0.097 m from its pick-up pose turned into it,
    # reconf_9_603994827), the module it carries next aside; a move left out stays where
    # it is, so again until none is left out
    while True:
        stay = {m: p for m, p in parked.items() if m not in staging}
        bad = []
        for m, (_, g) in staging.items():
            near = [q for o, q in stay.items() if o != carries.get(m, m)]
            if m in carries:
                near += [g2 for o, (_, g2) in staging.items() if o not in (m, carries[m])]
            if any(g.distance_to(q) < clearance for q in near):
                bad.append(m)
        # a helper bound for the staging pose of a module left out: its goal is stale
        bad += [h for h, c in carries.items() if c in bad and c in bound and h in staging]
        if not bad:
            break
        for m in set(bad):
            del staging[m]
    return StagingProblem(staging, set(), zones)


def next_carry(plan, stage: int, helper: str, done: Collection[str] = ()) -> str | None:
    """The module ``helper`` carries first after ``stage`` (in a later stage, plan order;
    not in ``done``), or None -- also when the helper serves an action of ``stage``."""
    if any(a.helper == helper and a.stage == stage for a in plan.actions):
        return None
    later = [a for a in plan.actions
             if a.helper == helper and a.needs_helper and a.stage > stage
             and a.module not in done]
    return min(later, key=lambda a: a.stage).module if later else None


def helper_staging(plan, stage: int, poses: Mapping[str, Pose2D], done: Collection[str],
                   standoff: float, width: float = MODULE_WIDTH,
                   bound: Mapping[str, Pose2D] | None = None
                   ) -> dict[str, tuple[Pose2D, Pose2D]]:
    """Helper -> (current pose, pick-up pose) for every helper that has no action in the
    active ``stage`` and carries a module in a later one (:func:`next_carry`): the pick-up
    pose of that module from where the helper stands, on the side the docking core will
    choose (:func:`~smores_assembly.docking.control.pickup_pose`, the navigation's goal of
    the helper in that stage). Helpers or modules without a tracked pose are left out.
    A module in ``bound`` (module -> the pose it is being staged to, a pre-staged carried
    module, :func:`carry_staging_poses`) is picked up there, from the side facing out of
    its dock axis (the pair lifted there stands on the axis): the helper's goal is
    ``width + standoff`` out along the axis, facing it.

    The caller checks the helper's path against the active stage's zones like any staging
    path (:func:`plan_stage_pipelined`).
    """
    from smores_assembly.docking.control import pickup_pose

    out: dict[str, tuple[Pose2D, Pose2D]] = {}
    for h in sorted({a.helper for a in plan.actions if a.needs_helper and a.helper}):
        m = next_carry(plan, stage, h, done)
        if m is None or h not in poses or m not in poses:
            continue
        if bound and m in bound:
            a = next(a for a in plan.actions if a.module == m)
            nx, ny = _outward(a.goal, plan.goals[a.parent_module])
            p = bound[m]
            d = width + standoff
            out[h] = (poses[h], Pose2D(p.x + d * nx, p.y + d * ny, math.atan2(-ny, -nx)))
            continue
        others = [(p.x, p.y) for x, p in poses.items() if x not in (h, m)]
        out[h] = (poses[h], pickup_pose(poses[m], poses[h], others, width, standoff))
    return out


def plan_stage_pipelined(moving: Mapping[str, tuple[Pose2D, Pose2D]],
                         staging: Mapping[str, tuple[Pose2D, Pose2D]],
                         obstacles: Mapping[str, Pose2D], zones: Collection[Rect],
                         nav_settings=None, fixed: Collection[str] = (),
                         width: float = MODULE_WIDTH, clock_factory=None,
                         keep_clear: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                         slides=None, hold_zones: Collection[Rect] = ()):
    """Plan the active stage's modules and the staging moves together.

    One :func:`smores_assembly.navigation.stage.plan_stage` problem with the staging
    modules as extra moving modules (so nothing that moves collides); every staging path is
    then checked with :func:`path_enters` against ``zones`` (the active stage's): offenders
    are dropped (they stay where they are, as obstacles) and the stage planned again. When
    the joint problem cannot be planned, the staging moves are dropped one by one (latest
    first) until it can; without any the result is that of plan_stage alone. A module the
    plan moves aside whose path comes into ``hold_zones`` (a carried pair's, planned
    apart, :func:`plan_stage_carrying`) is held where it stands (a fixed obstacle) and the
    stage planned again, and a staging module whose staging pose lies within
    ``clearance`` of a held module stays where it is too (a module on an active module's
    goal is not held); when holding them leaves the stage unplannable, the plan before
    the first hold is returned.

    Args:
        moving: the active stage's modules -> (current pose, goal); staging: later-stage
            modules -> (current pose, staging pose); obstacles: every other module,
            staging modules included (they are taken out while they move); fixed: ids of
            obstacles never moved; clock_factory: makes the ``clock`` of each plan_stage
            call (e.g. ``WorkClock`` in lockstep), None: wall time; keep_clear: the
            footprint still to be built (as in plan_stage: obstacles standing on it are
            moved aside and park outside it); slides: the active docks' slides (as in
            plan_stage: obstacles beside them are moved aside).

    Returns:
        ``(StagePlan, staged)``: the plan and the ids that got a staging path.

    Raises:
        NavigationError, InputError: as plan_stage, for the active stage's modules alone.
    """
    from smores_assembly.navigation.stage import plan_stage

    staged = dict(staging)
    zones = list(zones)
    held: set[str] = set()
    before_hold = None
    clearance = getattr(nav_settings, "clearance", 0.115)

    def near_goal(o: str, goals) -> bool:
        """Whether obstacle ``o`` stands within ``clearance`` of one of ``goals``'
        ``(current, goal)`` goal poses."""
        return any(math.hypot(obstacles[o].x - g.x, obstacles[o].y - g.y) < clearance
                   for _cur, g in goals)

    while True:
        mv = dict(moving)
        mv.update(staged)
        obs = {m: p for m, p in obstacles.items() if m not in mv}
        fx = [m for m in set(fixed) | held if m in obs]
        try:
            sp = plan_stage(mv, obs, nav_settings, fixed=sorted(fx),
                            clock=clock_factory() if clock_factory else None,
                            keep_clear=keep_clear, slides=slides)
        except NavigationError:
            if before_hold is not None:
                # holding them walls the stage in: the plan as it was before
                sp, staged = before_hold
                break
            if not staged:
                raise
            staged.pop(sorted(staged)[-1])
            continue
        bad = [m for m in staged if path_enters(sp.paths.get(m, []), zones, width)]
        if bad:
            for m in bad:
                staged.pop(m)
            continue
        # a module moved aside here through a carried pair's area, where the pair's plan
        # had it stand (bench_scale random 30 seed 9, stage 2: m28, moved aside by the
        # stage's plan, parked on the cell m27 passed on its way to its wide start cell,
        # 0.29 mm, and m1 ran into the blocked m27)
        cross = sorted(m for m in sp.moved_aside if m not in held and m not in mv
                       and path_enters(sp.paths.get(m, []), hold_zones, width))
        # ... but one standing within ``clearance`` of a goal pose went aside for that
        # goal (plan_stage's rule (a), which a fixed module escapes from one width on):
        # held, the module driving there met it (bench_targets seed 53
        # random_12_1036581388 stage 1: m4, stopped mid-leg 0.087 m from m5's staging
        # pose, held; m5's final leg drove into it, 0.03 mm). The staging module stays
        # where it is instead; on an active module's goal the module is not held
        cross = [m for m in cross if not near_goal(m, moving.values())]
        if not cross:
            break
        if before_hold is None:
            before_hold = (sp, dict(staged))
        held |= set(cross)
        for m in sorted(staged):
            if any(near_goal(o, [staged[m]]) for o in held):
                staged.pop(m)
    if staged:
        for m in sorted(moving):
            retime_final_leg(sp.paths, m, clearance)
    return sp, sorted(staged)


def pair_reach(width: float = MODULE_WIDTH) -> float:
    """Farthest point [m] of a helper carrying a module (two cells, the module one
    ``width`` ahead) from the helper's centre, whatever its heading:
    ``hypot(1.5 w, 0.5 w)``."""
    return math.hypot(1.5 * width, 0.5 * width)


def path_zones(path: Sequence[tuple[float, Pose2D]], radius: float) -> list[Rect]:
    """Rectangles covering every point within ``radius`` [m] of the polyline through the
    positions of ``path`` (timed waypoints, ``world``): one per leg, along the leg,
    ``radius`` wider on every side (a single waypoint: a square of half side ``radius``).
    With :func:`pair_reach` as ``radius``, the area a carried pair may cover following
    the path, turning in place anywhere on it."""
    pts = [p for _, p in path]
    if len(pts) == 1:
        return [Rect(pts[0].x, pts[0].y, 0.0, radius, radius)]
    out = []
    for p, q in zip(pts, pts[1:]):
        dx, dy = q.x - p.x, q.y - p.y
        d = math.hypot(dx, dy)
        out.append(Rect(0.5 * (p.x + q.x), 0.5 * (p.y + q.y),
                        math.atan2(dy, dx) if d > 1e-12 else 0.0, 0.5 * d + radius, radius))
    return out


def plan_stage_carrying(moving: Mapping[str, tuple[Pose2D, Pose2D]],
                        staging: Mapping[str, tuple[Pose2D, Pose2D]],
                        carried: Mapping[str, tuple[Pose2D, Pose2D, str]],
                        obstacles: Mapping[str, Pose2D], zones: Collection[Rect],
                        nav_settings=None, fixed: Collection[str] = (),
                        width: float = MODULE_WIDTH, clock_factory=None,
                        keep_clear: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                        pair_margin: float = 0.02, slides=None,
                        defer_failed_pairs: bool = False):
    """One stage's plan with carried pairs, staging moves and the stage's own modules
    (issue 11: a staging module drove into a carried pair planned apart from it).

    Each carried pair is planned first
    (:func:`smores_assembly.navigation.stage.plan_carried`, the stage's moving modules
    held where they stand, the pairs planned before and what they move aside held too,
    the latter also where they park when the pair can be planned so; the modules beside the
    ``slides`` are moved aside by the pair's plan, and those a later pair's plan must move
    aside, :func:`~smores_assembly.navigation.stage.pair_must_clear`, are held where they
    stand when it can be planned so; a pair's plan whose paths cross those of the pairs
    planned before it is planned again keeping out of them, :func:`_clear_earlier_pairs`);
    the area it may cover
    along its path (:func:`path_zones` with :func:`pair_reach` + ``pair_margin``) is
    added to ``zones``, so :func:`plan_stage_pipelined` leaves every staging module whose
    path or staging pose would enter it where it is (the pair's plan went round it
    there). Modules a pair's plan moves aside stage in no plan and are fixed obstacles of
    the stage's plan; the area their paths cover (body radius + ``pair_margin``) is
    added to the zones like the pair's; a module the stage's plan moves aside through
    those zones is held where it stands instead (``plan_stage_pipelined``'s
    ``hold_zones``); when the stage's plan fails with them held where they stand (one on
    an active module's goal), it is planned with them where they park. Without staging or
    carried pairs the stage's modules are planned by
    ``plan_stage`` as before.

    Args:
        moving, staging, obstacles, zones, nav_settings, fixed, width, clock_factory,
            keep_clear, slides: as :func:`plan_stage_pipelined` (``staging`` and
            ``moving`` may be empty; ``slides`` go to the pairs' plans, and with nothing
            but pairs ``keep_clear`` too; with nothing at all, the modules beside the
            ``slides`` are moved aside alone).
        carried: helper -> (current pose, pre-dock pose, carried module id); the helper
            and the carried module are in ``obstacles`` and ``fixed``.
        pair_margin: [m] added to the pair's reach (its path-following error).
        defer_failed_pairs: a pair whose own plan fails does not fail the stage: it waits
            where it stands (a fixed obstacle of every other plan, as it is anyway), its
            helper's path stands there :data:`DEFERRED_PAIR_HOLD_S`, and
            ``stats["deferred_pairs"]`` (helper -> the error) tells the caller to plan the
            stage again later (random 100 seed 0, stage 6: h1's plan carrying m51 failed,
            the node dropped every path of the stage, h0 fetched m89 without one and
            h1/m51 drove blind into staged modules: 8 contacts, the stage failed).

    Returns:
        ``(StagePlan, staged)`` as :func:`plan_stage_pipelined`. When an active module's
        path still comes within a body of a pair's (or a moved-aside module's) path and
        neither the replan nor a wait clears it, the plan is kept and
        ``stats["warnings"]`` names the modules (the navigation node logs it).

    Raises:
        NavigationError, InputError: as ``plan_stage`` / ``plan_carried`` (a pair's
        failure only without ``defer_failed_pairs``).
    """
    sp, staged, left = _carrying_once(moving, staging, carried, obstacles, zones, nav_settings,
                                      fixed, width, clock_factory, keep_clear, pair_margin,
                                      slides, guard_goals=False,
                                      defer_failed=defer_failed_pairs)
    if left and moving and carried:
        # the pairs' plans held the active modules where they stand, and moved a module
        # aside past an active module's goal, or to park on its route: neither a way round
        # (walled by that path, the goal overlapped it) nor a wait cleared it (bench_scale
        # random 30 seed 7, stage 3: m0, moved aside for h2's pair, passed h0's goal 15 s
        # after h0 stood there and parked on h0's route). Planned again with the active
        # modules' goals held clear by the pairs' plans too; kept when that clears it.
        try:
            again = _carrying_once(moving, staging, carried, obstacles, zones, nav_settings,
                                   fixed, width, clock_factory, keep_clear, pair_margin,
                                   slides, guard_goals=True,
                                   defer_failed=defer_failed_pairs)
        except NavigationError:
            again = None
        if again is not None and not again[2] and set(
                again[0].stats.get("deferred_pairs", {})) <= set(
                sp.stats.get("deferred_pairs", {})):
            sp, staged, left = again
            sp.stats = {**sp.stats, "notes": list(sp.stats.get("notes", [])) + [
                "the pairs' plans keep clear of the active modules' goals (a module they "
                "moved aside crossed one)"]}
    if left:
        # neither a way round nor a wait clears them: the plan is kept as it is, and says
        # so (the navigation node logs it as a warning; the controllers' guards are left)
        sp.stats = {**sp.stats, "warnings": list(sp.stats.get("warnings", [])) + [
            "paths kept crossing (neither a way round nor a wait clears them): "
            + ", ".join(f"{m} with {c}" for m, c in left.items())
            + " (carried pairs and the modules their plans move aside, within two "
            "corner radii or a pair's turning reach at the same time)"]}
    return sp, staged


def _carrying_once(moving, staging, carried, obstacles, zones, nav_settings, fixed, width,
                   clock_factory, keep_clear, pair_margin, slides, guard_goals: bool,
                   defer_failed: bool = False):
    """:func:`plan_stage_carrying` once: ``(StagePlan, staged, left)``, ``left``: active
    module -> the paths (pairs', moved-aside modules') its path still crosses, empty when
    none. ``guard_goals``: the pairs' plans hold the active modules' goal poses clear as
    well as where they stand. ``defer_failed``: a pair whose plan fails stands where it
    is (:func:`_deferred_hold`) instead of failing the whole stage."""
    from smores_assembly.navigation.stage import (_NO_SEARCH, StagePlan, pair_must_clear,
                                                  plan_carried, plan_stage)

    alone = not moving and not staging
    deferred: dict[str, str] = {}
    pair_plans: list[StagePlan] = []
    pair_zones: list[Rect] = []
    aside: set[str] = set()
    held_pairs: set[str] = set()
    parked: dict[str, tuple[float, Pose2D]] = {}
    pairs = sorted(carried.items())
    for i, (h, (start, goal, module)) in enumerate(pairs):
        others = {m: p for m, p in obstacles.items() if m not in (h, module)}
        others.update({m: v[0] for m, v in moving.items()})
        if guard_goals:
            others.update({f"{m}/goal": v[1] for m, v in moving.items()})
        hold = (set(fixed) | set(moving) | held_pairs | aside | {
            f"{m}/goal" for m in moving}) & set(others)
        # the modules beside the stage's slides are moved aside by the pair's plan, with
        # the pair: moved aside by the stage's plan, which holds the pair where it
        # stands, one drove through the area the pair turned in (bench_targets seed 47
        # random_10_974250758 stage 3: m8 beside m4's slide, contact m4-m8 0.10 mm).
        # The slides of the pairs planned after this one are theirs to clear: moved
        # aside here, a module beside one is held where it stands by the later pair's
        # plan, inside the very clearance of its pre-dock pose that the pair must turn
        # in (bench_scale random 50 seed 0, stage 3: h0's plan moved m29 aside for m30's
        # slide, 0.117 m from h2's pre-dock pose; h2's plan, m29 held there, failed
        # "walled off by fixed structures", the stage drove without paths)
        later = {c[2] for _h, c in pairs[i + 1:]}
        own = {m: seg for m, seg in slides.items() if m not in later} if slides else slides
        # Likewise the modules a later pair's plan must move aside (beside its pre-dock
        # pose or its slide) are that pair's to move: this plan holds them where they
        # stand if it can. Moved aside here (a first leg's plan shifted one by 13 mm),
        # the later pair's plan held it there, inside its clearance (bench_scale random
        # 50 seed 0, stage 7: h0's plan moved m47, 0.072 m from h2's pre-dock pose; h2's
        # plan failed "walled off by fixed structures", the stage drove without paths,
        # m36's POSE_ADJUST timed out three times)
        theirs: set[str] = set()
        for _h, (_s, g, m) in pairs[i + 1:]:
            theirs |= pair_must_clear(g, others, hold, {m: slides[m]} if slides and m in slides
                                      else {}, nav_settings)

        def pair_plan(fx: set[str], obs: Mapping[str, Pose2D]):
            return plan_carried(h, start, goal, obs, nav_settings, fixed=fx,
                                clock=clock_factory() if clock_factory else None,
                                keep_clear=keep_clear if alone else None, slides=own,
                                carried_pose=obstacles.get(module))

        # The modules the earlier pairs' plans move aside stand where they park as well
        # as where they stand (no module id has a "/"), if the pair can be planned so:
        # held only where they stood, h2's path above ran over m43 where h0's plan parked
        # it (the same stage, with the rule above; 1.3 mm into it and on).
        phantoms = {f"{m}/parked": p for m, (_t, p) in parked.items()}
        attempts = []
        if theirs:
            attempts.append((hold | theirs | set(phantoms), {**others, **phantoms}))
        if phantoms:
            attempts.append((hold | set(phantoms), {**others, **phantoms}))
        cp = None
        used = (hold, others)
        for fx, obs in attempts:
            try:
                cp = pair_plan(fx, obs)
                used = (fx, obs)
                break
            except NavigationError:
                continue
        try:
            try:
                cp = cp or pair_plan(hold, others)
                cp = _clear_earlier_pairs(cp, h, pair_plans, carried, width, nav_settings,
                                          lambda fx, obs: pair_plan(fx, obs), *used)
                cp = _park_off_docks(cp, h, pairs, nav_settings, slides, used,
                                     lambda fx, obs: _clear_earlier_pairs(
                                         pair_plan(fx, obs), h, pair_plans, carried, width,
                                         nav_settings, pair_plan, fx, obs))
            except NavigationError:
                if not parked:
                    raise
                # held where they stand, the modules the earlier pairs' plans move aside
                # wall this pair in: it is planned with them where they park, and waits
                # until they are there
                others.update({m: p for m, (_t, p) in parked.items()})
                cp = pair_plan(hold, others)
                wait = max(t for t, _p in parked.values())
                cp.paths = {m: [(0.0, p[0][1])] + [(t + wait, q) for t, q in p] if p else p
                            for m, p in cp.paths.items()}
                cp.stats = {**cp.stats, "parked_wait_s": wait}
        except NavigationError as exc:
            if not defer_failed:
                raise
            # the pair waits where it stands (it is in ``fixed``: every other plan goes
            # round it) and is planned again later (the caller's retry)
            deferred[h] = f"{type(exc).__name__}: {exc}"
            held_pairs |= {h, module}
            continue
        pair_plans.append(cp)
        aside |= set(cp.moved_aside)
        for m in cp.moved_aside:
            p = cp.paths.get(m)
            if p:
                end = p[-1][1]
                t_end = next(t for t, q in p if all(r.distance_to(end) <= 1e-6
                                                     for _t, r in p if _t >= t))
                parked[m] = (t_end, end)
        held_pairs |= {h, module}
        pair_zones += path_zones(cp.paths.get(h) or [(0.0, start)],
                                 pair_reach(width) + pair_margin)
        # the modules the pair's plan moves aside too: a staging path planned without
        # them (they are fixed there) crossed one (bench_targets random_12_594393859:
        # m9 moved aside for the pair carrying m10, staging m1 touched it, 0.14 mm)
        for m in cp.moved_aside:
            if cp.paths.get(m):
                pair_zones += path_zones(cp.paths[m], width / math.sqrt(2.0) + pair_margin)
    st = {m: v for m, v in staging.items() if m not in aside}

    def stage_plan(obs: Mapping[str, Pose2D], fx: set[str]):
        sp, staged = None, []
        if st:
            sp, staged = plan_stage_pipelined(moving, st, obs, list(zones) + pair_zones,
                                              nav_settings, fixed=fx, width=width,
                                              clock_factory=clock_factory,
                                              keep_clear=keep_clear, slides=slides,
                                              hold_zones=pair_zones)
        elif moving and carried:
            sp, _ = plan_stage_pipelined(moving, {}, obs, (), nav_settings, fixed=fx,
                                         width=width, clock_factory=clock_factory,
                                         keep_clear=keep_clear, slides=slides,
                                         hold_zones=pair_zones)
        elif moving or (slides and not carried):
            sp = plan_stage(moving, obs, nav_settings, fixed=[m for m in fx if m in obs],
                            clock=clock_factory() if clock_factory else None,
                            keep_clear=keep_clear, slides=slides)
        return sp, staged

    fx = set(fixed) | aside
    left: dict[str, list[str]] = {}
    try:
        sp, staged = stage_plan(obstacles, fx)
    except NavigationError:
        if not parked:
            raise
        # held where it stands, a module a pair's plan moves aside may stand on an active
        # module's goal (bench_scale random 50 seed 0, stage 7 replanned as h0 lifted m24:
        # m49, moved aside by h0's plan, 0.076 m from m35's pre-dock pose: "goal pose
        # overlaps fixed module", the stage drove without paths): the stage is planned
        # with them where they park; the checks below make its paths keep out of theirs,
        # or wait until they have passed
        sp, staged = stage_plan({**obstacles, **{m: p for m, (_t, p) in parked.items()}},
                                fx)
    # The stage's own plan holds the carried pairs and the modules their plans move
    # aside where they stand, and the pairs' plans hold the stage's active modules where
    # they stand: an active module's path may cross where those drive or wait
    # (bench_scale random 50 seed 0, stage 3, replanned as h2 lifted m30: m25, moved
    # aside, waited on its wide start cell from 9 to 47 s, and m32's path to its
    # pre-dock pose ran through that cell at 12.5 s; they touched, m32 could not turn off
    # m25 for 100 s; stage 4: the pair h0/m1 drove a 0.58 m first leg to its wide start
    # cell across m23's path, contact, then h0/m23 again and again). Then the stage is
    # planned again with every place those paths pass as a fixed obstacle (as staging
    # moves keep out of the pairs' zones); kept when that plans and its active modules
    # keep clear of those paths.
    moved = {m: cp.paths[m] for cp in pair_plans for m in cp.moved_aside
             if cp.paths.get(m)}
    rooms = {h: pair_reach(width) + width / math.sqrt(2.0)
             for h in carried if any(h in cp.paths for cp in pair_plans)}
    moved.update({h: cp.paths[h] for cp in pair_plans for h in rooms if cp.paths.get(h)})
    crossed = _crossing(sp.paths, moving, moved, width, rooms) if sp and moving else set()
    # the staging and moved-aside modules of the first plan that already cross those paths
    # (a replan or a wait may add none): judged once
    before = _bystanders(sp.paths, moving, moved, width, rooms) if crossed else set()
    walls: set[str] = set()
    fixed_up = not crossed
    while crossed - walls:
        walls |= crossed
        swept = _swept_obstacles({m: moved[m] for m in walls}, 0.5 * width, rooms,
                                 getattr(nav_settings, "clearance", 0.115))
        try:
            sp2, staged2 = stage_plan({**obstacles, **swept}, fx | set(swept))
        except NavigationError:
            break
        crossed = _crossing(sp2.paths, moving, moved, width, rooms)
        if not crossed and _bystanders(sp2.paths, moving, moved, width, rooms) - before:
            # kept clear of those paths, the active modules made the stage's plan move a
            # staging or moved-aside module through them (random 100 seed 0, stage 2
            # replanned as h0 lifted m59: m80, moved aside, parked on the cell m66, moved
            # aside by h0's plan, drove through; 0.14-0.59 mm, three times): not kept
            break
        if not crossed:
            sp, staged, fixed_up = sp2, staged2, True
            sp.stats = {**sp.stats, "notes": list(sp.stats.get("notes", [])) + [
                f"the active modules keep out of the paths of {sorted(walls)} (carried "
                "pairs and the modules their plans move aside)"]}
    if not fixed_up:
        # no way round them (their paths pass the active modules' goals): the stage's
        # paths (the active, staging and moved-aside modules' together, as they were
        # planned) wait at their starts until those have passed
        last_s = max(p[-1][0] for p in moved.values())
        hold_s = next((k * 0.5 for k in range(1, int(math.ceil(last_s / 0.5)) + 2)
                       if not _crossing(sp.paths, moving, moved, width, rooms, k * 0.5)
                       and not _bystanders(sp.paths, moving, moved, width, rooms,
                                           k * 0.5) - before),
                      None)
        if hold_s is not None:
            sp.paths = {m: [(0.0, p[0][1])] + [(t + hold_s, q) for t, q in p] if p else p
                        for m, p in sp.paths.items()}
            sp.stats = {**sp.stats, "t0_s": sp.stats.get("t0_s", 0.0) + hold_s,
                        "pair_wait_s": hold_s,
                        "notes": list(sp.stats.get("notes", [])) + [
                            f"the stage's paths wait {hold_s:.1f} s for the carried pairs "
                            "and the modules their plans move aside"]}
        else:
            left = {m: sorted(c) for m in sorted(moving)
                    if (c := _crossing(sp.paths, [m], moved, width, rooms))}
    for cp in pair_plans:
        if sp is None or not sp.paths:
            # nothing else moves (every staging move dropped): the pair's plan is the plan
            sp = cp
            continue
        sp.paths.update(cp.paths)
        sp.moved_aside = sorted(set(sp.moved_aside) | set(cp.moved_aside))
    if deferred:
        if sp is None:
            sp = StagePlan(paths={}, moved_aside=[], stats=dict(_NO_SEARCH, notes=[]))
        for h in deferred:
            start = carried[h][0]
            sp.paths[h] = [(0.0, start), (DEFERRED_PAIR_HOLD_S, start)]
        sp.stats = {**sp.stats, "deferred_pairs": dict(deferred),
                    "notes": list(sp.stats.get("notes", [])) + [
                        f"{h} (carrying {carried[h][2]}) waits where it stands, its plan "
                        f"failed ({e})" for h, e in sorted(deferred.items())]}
    if sp is None:
        raise InputError("plan_stage_carrying: nothing to plan (moving, staging, carried "
                         "and slides are empty)")
    return sp, staged, left


def _park_off_docks(cp, helper: str, pairs, nav_settings, slides, used, replan):
    """The pair plan ``cp`` of ``helper``, or, when a module it moves aside parks where
    another carried pair of the stage (planned before or after it) would have to move it
    aside (:func:`~smores_assembly.navigation.stage.pair_must_clear`: closer than the pair
    clearance to that pair's pre-dock pose, or beside its slide), the plan
    ``replan(fixed, obstacles)`` made with the other pairs' pre-dock poses held as fixed
    obstacles too, when it plans and parks none there (its stats then say so).

    A module parked there is a fixed obstacle of the other pair's plan, which cannot move
    it: bench_scale random 50 seed 0, stage 4, h0's plan parked m13 0.081 m from h1's
    pre-dock pose; h1's straight final leg swept the carried m20 into m13, both were
    blocked for 200 s and the stage timed out. The replan keeps the pair and every module
    it moves off those poses all the way, not only where they park: it may take longer
    (the recorded stage 4: h0's plan 27.7 -> 52.4 s).

    Args:
        cp: the pair's plan (:class:`~smores_assembly.navigation.stage.StagePlan`).
        helper: its helper's id.
        pairs: ``(helper, (start, pre-dock pose, carried module))`` of the stage's carried
            pairs (poses ``world``, m and rad).
        nav_settings: the navigation settings (None: the defaults).
        slides: carried module -> its slide (``Segment``), or None.
        used: the ``(fixed, obstacles)`` ``cp`` was planned with.
        replan: ``(fixed, obstacles) -> StagePlan``; may raise ``NavigationError`` (then
            ``cp`` is kept).
    """
    from smores_assembly.navigation.stage import pair_must_clear

    others = [(f"{h}/predock", g, m) for h, (_s, g, m) in pairs if h != helper]

    def blocking(plan) -> list[str]:
        ends = {m: p[-1][1] for m in plan.moved_aside if (p := plan.paths.get(m))}
        return sorted({o for _n, g, m in others for o in pair_must_clear(
            g, ends, (), {m: slides[m]} if slides and m in slides else {}, nav_settings)})

    if not others or not (parked := blocking(cp)):
        return cp
    docks = {n: g for n, g, _m in others}
    fx, obs = used
    try:
        alt = replan(set(fx) | set(docks), {**obs, **docks})
    except NavigationError:
        return cp
    if blocking(alt):
        return cp
    alt.stats = {**alt.stats, "notes": list(alt.stats.get("notes", [])) + [
        f"{helper}'s plan planned again: it parked {parked} where another pair docks"]}
    return alt


def _pair_crossings(cp, helper: str, earlier: Mapping[str, Sequence[tuple[float, Pose2D]]],
                    pairs: Collection[str], width: float) -> set[str]:
    """The paths of ``earlier`` (id -> path: the carried pairs planned before, ``pairs``
    their helpers, and the modules their plans move aside) that the pair plan ``cp`` of
    ``helper`` comes too close to at the same time (:func:`_crossing`): a module ``cp``
    moves aside within a pair's reach plus a corner radius of an earlier pair's helper, or
    two corner radii of an earlier moved-aside module; ``helper`` within its own reach plus
    a corner radius of an earlier moved-aside module (closer than they stood at the
    start)."""
    room = pair_reach(width) + width / math.sqrt(2.0)
    rooms = {h: room for h in pairs}
    mine = [m for m in cp.moved_aside if cp.paths.get(m)]
    out = _crossing(cp.paths, mine, earlier, width, rooms)
    if cp.paths.get(helper):
        for o, q in earlier.items():
            if o not in pairs and q and o not in out and _crossing(
                    {o: q}, [o], {helper: cp.paths[helper]}, width, {helper: room}):
                out.add(o)
    return out


def _clear_earlier_pairs(cp, helper: str, pair_plans, carried, width: float, nav_settings,
                         pair_plan, fx: set[str], obs: Mapping[str, Pose2D]):
    """The pair plan ``cp`` of ``helper``, planned again, when its paths cross those of
    the carried pairs planned before it (``pair_plans``; :func:`_pair_crossings`), with
    every place those paths pass a fixed obstacle (:func:`_swept_obstacles` at the pair's
    clearance, :func:`~smores_assembly.navigation.stage.carry_clearance`); kept when that
    plans and crosses none of them, else ``cp`` as it is. ``pair_plan(fixed, obstacles)``
    plans the pair; ``fx``, ``obs``: the fixed ids and obstacles ``cp`` was planned with.

    A later pair's plan holds the earlier pairs where they stand: random 50
    (r50_runs/random50.yaml) stage 1, h1's plan (carrying m28) moved m40 and m34 aside
    along the row h0's pair (carrying m0) was planned to drive, m40 onto the cell h0
    reached 0.2 s later; m40 stopped 0.081 m before the carried m0, turned, and touched it
    (0.01 mm at 91.47 s), h0 fell behind.
    """
    from smores_assembly.navigation.stage import carry_clearance

    earlier: dict[str, Sequence[tuple[float, Pose2D]]] = {}
    pairs = set()
    for p in pair_plans:
        for m, q in p.paths.items():
            if q and (m in carried or m in p.moved_aside):
                earlier[m] = q
                if m in carried:
                    pairs.add(m)
    if not earlier:
        return cp
    crossed = _pair_crossings(cp, helper, earlier, pairs, width)
    if not crossed:
        return cp
    cc = max(getattr(nav_settings, "clearance", 0.115), carry_clearance(width))
    swept = _swept_obstacles({m: earlier[m] for m in sorted(crossed)}, 0.5 * width,
                             clearance=cc)
    try:
        again = pair_plan(set(fx) | set(swept), {**obs, **swept})
    except NavigationError:
        return cp
    if _pair_crossings(again, helper, earlier, pairs, width):
        return cp
    again.stats = {**again.stats, "notes": list(again.stats.get("notes", [])) + [
        f"{helper}'s plan keeps out of the paths of {sorted(crossed)} (carried pairs "
        "planned before it and the modules their plans move aside)"]}
    return again


def _xy_at(path: Sequence[tuple[float, Pose2D]], ts):
    """Planned positions ``(len(ts), 2)`` [m] of ``path`` at the times ``ts`` [s] (linear
    interpolation, clamped to the path's ends)."""
    import numpy as np

    t = np.array([w[0] for w in path], dtype=float)
    return np.stack([np.interp(ts, t, [w[1].x for w in path]),
                     np.interp(ts, t, [w[1].y for w in path])], axis=1)


def _crossing(paths: Mapping[str, Sequence[tuple[float, Pose2D]]], moving: Collection[str],
              others: Mapping[str, Sequence[tuple[float, Pose2D]]], width: float,
              rooms: Mapping[str, float] | None = None, delay: float = 0.0,
              dt: float = 0.05) -> set[str]:
    """The modules of ``others`` whose path a module of ``moving`` (its path in ``paths``,
    started ``delay`` [s] later) comes closer to at the same time than ``rooms[o]`` [m]
    (default two corner radii, ``sqrt(2) width``: two ``width`` squares may touch) and
    than the two stood at the start (sampled every ``dt`` [s] to the later path's end)."""
    import numpy as np

    room = math.sqrt(2.0) * width
    out: set[str] = set()
    mine = {m: p for m in moving if (p := paths.get(m))}
    if not mine or not others:
        return out
    end = max(p[-1][0] for p in list(mine.values()) + [q for q in others.values() if q])
    ts = np.arange(0.0, end + delay + dt, dt)
    theirs = {o: _xy_at(q, ts) for o, q in others.items() if q}
    for m, p in mine.items():
        a = _xy_at(p, ts - delay)
        for o, b in theirs.items():
            if o == m or o in out:
                continue
            d = np.hypot(*(a - b).T)
            r = (rooms or {}).get(o, room)
            if np.any((d < r) & (d < d[0] - 1e-3)):
                out.add(o)
    return out


def _bystanders(paths: Mapping[str, Sequence[tuple[float, Pose2D]]], moving: Collection[str],
                others: Mapping[str, Sequence[tuple[float, Pose2D]]], width: float,
                rooms: Mapping[str, float] | None = None, delay: float = 0.0) -> set[str]:
    """The modules of ``paths`` other than the active ones (``moving``) and those of
    ``others`` -- the staging and moved-aside modules of a stage's plan -- whose path,
    started ``delay`` [s] later, comes within :func:`_crossing`'s room of a path of
    ``others`` (the carried pairs' and the modules their plans move aside)."""
    return {m for m, p in paths.items()
            if p and m not in moving and m not in others
            and _crossing(paths, [m], others, width, rooms, delay)}


def _swept_obstacles(paths: Mapping[str, Sequence[tuple[float, Pose2D]]], step: float,
                     rooms: Mapping[str, float] | None = None, clearance: float = 0.115
                     ) -> dict[str, Pose2D]:
    """Points (``"<module>/swept<i>"`` -> pose, ``world``) along every path of ``paths``
    past its start, at most ``step`` [m] apart: as fixed obstacles of a search whose
    ``clearance`` [m] is given they block every cell within that clearance of where those
    modules drive and wait. A module with a ``rooms`` entry larger than ``clearance`` (a
    carried pair, :func:`pair_reach` plus a body) gets its start too and a ring of points
    round each of its points (:func:`_ring`), so that every cell within its room of the
    path is blocked: with one point each, an active module's path ran 0.12 m beside a pair's
    helper, outside the clearance but inside the pair's reach, and the pair turned its
    carried module into it (bench_targets seed 59 random_7_181697095 stage 1: m0-m4
    0.89 mm)."""
    out: dict[str, Pose2D] = {}
    for m, path in sorted(paths.items()):
        ring = _ring((rooms or {}).get(m, 0.0), clearance)
        pts = [p for _, p in path]
        for j, (a, b) in enumerate(zip(pts, pts[1:])):
            d = a.distance_to(b)
            n = max(1, int(math.ceil(d / step)))
            # a pair turns in place at its start too: its ring there as well
            for i in range(0 if ring and j == 0 else 1, n + 1):
                u = i / n
                x, y = a.x + u * (b.x - a.x), a.y + u * (b.y - a.y)
                out[f"{m}/swept{len(out)}"] = Pose2D(x, y, 0.0)
                for dx, dy in ring:
                    out[f"{m}/swept{len(out)}"] = Pose2D(x + dx, y + dy, 0.0)
    return out


def _ring(room: float, clearance: float) -> list[tuple[float, float]]:
    """Offsets [m] of points round a centre such that the discs of radius ``clearance``
    [m] about them (and about the centre) cover the disc of radius ``room`` [m], reaching
    at most ``0.05 clearance`` beyond it: ``n`` points on the circle of radius
    ``r = room - 0.95 clearance``, with ``n`` the smallest for which the point of the
    rim halfway between two of them is within ``clearance`` of both (along each ray the
    distance to the nearest ring point is convex, so rim and centre bound it). No points
    when ``room <= clearance`` (the centre covers it)."""
    if room <= clearance:
        return []
    r = room - 0.95 * clearance
    c = (room * room + r * r - clearance * clearance) / (2.0 * room * r)
    n = max(3, int(math.ceil(math.pi / math.acos(min(1.0, c)))))
    return [(r * math.cos(2.0 * math.pi * k / n), r * math.sin(2.0 * math.pi * k / n))
            for k in range(n)]


def retime_final_leg(paths: dict[str, list[tuple[float, Pose2D]]], module: str,
                     clearance: float, dt: float = 0.05) -> bool:
    """Let ``module`` leave for its goal pose as soon as it stands on its last grid cell.

    The stage planner starts every final leg (goal cell centre -> exact goal pose) after the
    whole schedule, so the longer staging paths of a pipelined stage would hold the active
    stage's modules at their goal cells. The wait before the final leg is cut when, at
    every instant from the module's arrival on the cell to the end of the old path, its
    centre stays at least ``min(clearance, the old path's smallest distance)`` [m] from
    every other path's (sampled every ``dt`` s). ``paths`` is changed in place.

    Returns:
        True when the path was retimed.
    """
    from smores_assembly.navigation.stage import pose_at

    path = paths.get(module)
    if not path or len(path) < 3:
        return False
    (ta, ca), (tb, cb), (tc, goal) = path[-3:]
    if math.hypot(ca.x - cb.x, ca.y - cb.y) > 1e-9 or tb - ta <= 1e-9:
        return False  # no wait on the cell before the final leg
    new = path[:-2] + [(ta + (tc - tb), goal)]
    others = [p for m, p in paths.items() if m != module and p]
    n = int(math.ceil((tc - ta) / dt)) + 1
    old_min = new_min = math.inf
    for k in range(n + 1):
        t = ta + k * dt
        a, b = pose_at(path, t), pose_at(new, t)
        for p in others:
            q = pose_at(p, t)
            old_min = min(old_min, math.hypot(a.x - q.x, a.y - q.y))
            new_min = min(new_min, math.hypot(b.x - q.x, b.y - q.y))
    if new_min < min(clearance, old_min) - 1e-9:
        return False
    paths[module] = new
    return True


__all__ = ["SCHEDULES", "DEFAULT_SCHEDULE", "check_schedule", "StagingSettings", "Rect",
           "rect_overlap", "body", "dock_zone", "nominal_predock", "stage_zones",
           "staging_poses", "pair_staging_footprint", "carry_staging_poses", "path_enters",
           "on_staging_axis", "StagingProblem",
           "staging_problem", "helper_staging", "next_carry", "free_modules",
           "undock_areas", "undock_staging", "plan_stage_pipelined",
           "footprint_to_build", "pair_reach", "path_zones", "plan_stage_carrying"]
