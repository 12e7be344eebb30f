"""World <-> grid for one assembly stage: timed, collision-free paths for the moving modules.

Pure Python (no ROS imports). :func:`plan_stage` takes the modules that move in a stage
(current pose and goal pose in ``world``) and every other module as an obstacle, lays a
grid over the scene, solves the multi-agent path finding problem with
:mod:`smores_assembly.navigation.mapf`, and turns the schedule back into world waypoints
with planned times.

Grid: square cells of size ``c = module_width + cell_margin`` whose centres are
``origin + (i c, j c)``; the grid covers the bounding box of all start, goal and obstacle
positions plus ``border_cells`` on each side. A module standing anywhere blocks every cell
whose centre is closer than ``clearance`` (default 0.115 m, just above the 0.113 m
diameter of the circle swept by a 0.08 m cube turning in place), so a module on a free
cell centre never touches it. The search is 1-robust by default (``k_robust = 1``: no
agent enters a cell within one step of another agent's occupancy), which keeps two modules
moving on the grid at least one cell size apart at every instant, also between steps
(their Chebyshev distance never drops below one cell).

Continuous world, discrete grid:

* starts: each moving module is assigned a distinct nearby free cell (minimum total
  distance, Hungarian method); it first drives from its pose to that cell's centre (all
  modules do this between t = 0 and a common ``t0``; two such legs that bring their
  modules into contact have the cells chosen again), then follows the schedule;
* goals (pre-dock poses): each goal is assigned a distinct nearby free cell (again a
  minimum-distance assignment, so two goals falling into one cell get distinct cells);
  after the whole schedule (makespan) every module drives from its goal cell centre
  straight to its exact goal pose ``(x, y, yaw)``: the last waypoint is the goal pose. The
  grid does not see that final leg, so a goal cell whose leg passes another module (closer
  than ``w sqrt 2``, or than that module's distance from the goal) costs more, and movable
  modules on the chosen leg are moved aside;
* modules moved aside: obstacles that are not ``fixed`` (idle modules, not docked
  structures) are moved out of the way instead of failing when they stand (a) within
  ``clearance`` of a goal pose, or (b) on a cell chosen as a moving module's start or goal
  cell, or (c) on the only corridor between a module's start and goal (found with a
  shortest path where entering a cell of a movable obstacle costs ``1 + n_cells``, i.e.
  crossing as few of them as possible), or (d) within ``clearance`` of a point of the
  **footprint still to be built** (``keep_clear``: the docked and pre-dock poses of the
  docks to come, issue 16: at 50-100 modules the target's footprint covers idle modules
  that nothing else moves out of the way), or (e) on the final leg of a chosen goal cell.
  They become additional agents whose goal is the nearest free cell reachable from their
  start cell that is no moving module's start or goal cell, lies on none of their
  shortest paths and is not near a goal pose, and (with ``keep_clear``) lies outside the
  convex hull of the footprint grown by ``clearance`` (so a parked module stands in no
  pocket of the target either); they keep their heading. Modules moved aside that can
  reach too few such cells (walled in by movable modules, a dense field on a carried
  pair's wide grid) have the movable modules on their cheapest ways out moved aside
  too, and nothing parks on those ways. Its start cell keeps clear of the moving modules' legs to
  their start cells where it can (it waits there while they drive them).

Times: one grid step takes ``c / nominal_speed``; waypoint times are seconds from the
stage start. Headings point along the motion; waits keep the heading; the final heading is
the goal heading.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from smores_assembly.errors import InputError, ParamsError
from smores_assembly.geometry import (MODULE_WIDTH, Pose2D, point_segment_distance,
                                     segment_distance, square_overlap, wrap_angle)
from smores_assembly.navigation.mapf import (ALGORITHMS, Cell, Grid, NavigationError,
                                             UnreachableGoalError, solve)
from smores_assembly.params import check_ranges, param_field


class GoalOccupiedError(NavigationError):
    """A goal pose overlaps a fixed (docked) module: no motion can reach it."""


@dataclass
class NavSettings:
    """Tunables of the navigation planner (also the ROS parameters of the node)."""

    module_width: float = param_field(MODULE_WIDTH, "module footprint (cube width) [m]",
                                      0.01, 1.0)
    cell_margin: float = param_field(0.04, "grid cell = module_width + cell_margin [m]",
                                     0.0, 1.0)
    clearance: float = param_field(
        0.115, "a module blocks every cell whose centre is closer than this [m]", 0.0, 2.0)
    border_cells: int = param_field(2, "free cells added around the scene's bounding box",
                                    0, 50)
    goal_search_cells: int = param_field(
        4, "radius [cells] searched for a free cell near a start or goal pose", 1, 50)
    nominal_speed: float = param_field(
        0.05, "planned travel speed [m/s] (keep below the docking controller's v_max: path "
        "tracking catches up after in-place turns)", 1e-3, 1.0)
    algorithm: str = param_field("ecbs", "MAPF algorithm: cbs, ecbs, prioritized or lacam")
    suboptimality: float = param_field(1.3, "ECBS suboptimality factor w", 1.0, 10.0)
    tight_suboptimality: float = param_field(
        1.05, "ECBS first tries this smaller w on a quarter of the bounds (1 = optimal)",
        1.0, 10.0)
    k_robust: int = param_field(1, "robustness: no two modules in a cell within k steps",
                                0, 3)
    max_expansions: int = param_field(20000, "bound on high-level search nodes", 1, 10**8)
    max_low_level_expansions: int = param_field(2_000_000, "bound on space-time expansions",
                                                1, 10**9)
    time_limit_s: float = param_field(2.0, "bound on planning wall time [s]", 0.01, 600.0)
    clear_footprint: bool = param_field(
        False, "move idle and later-stage modules that stand on the footprint still to be "
        "built out of it (issue 16, large targets; off by default: on pocket.yaml it made "
        "two staging modules touch)")
    fallback_prioritized: bool = param_field(
        True, "when CBS/ECBS hits a bound, try the complete LaCAM (prioritized planning when "
        "k_robust >= 2) before failing")
    lacam_min_agents: int = param_field(
        12, "a stage with at least this many moving or moved-aside modules is planned with "
        "LaCAM (complete, fast; cost not bounded) instead of algorithm (k_robust <= 1)",
        1, 10**6)
    lacam_expansions: int = param_field(
        100_000, "bound on the configurations LaCAM generates (a count: the plan does not "
        "depend on the machine's load)", 1, 10**9)
    predock_standoff: float = param_field(
        0.06, "distance of the pre-dock pose from the docked pose along the dock axis [m]",
        0.0, 1.0)
    helper_backoff: float = param_field(
        0.06, "how far a helper backs off straight after its hand-over before it follows "
        "any path (the docking controller's helper_backoff) [m]", 0.0, 1.0)
    helper_backoff_speed: float = param_field(
        0.03, "speed of that back-off (the docking controller's near_structure_speed) "
        "[m/s]", 0.001, 2.0)
    slide_clearance: float = param_field(
        0.15, "a module that may move (idle, staged, a later stage's) standing closer than "
        "this (centre distance) to an active dock's slide (its docking axis from the docked "
        "pose out to the pre-dock or staging pose where the module stands) is moved aside "
        "and parks at least this far from every slide (issue 11: the docking controller "
        "keeps obstacle_clearance there; keep >= it) [m]", 0.0, 1.0)
    predock_clearance: float = param_field(
        0.13, "a pre-dock goal closer than this (centre distance) to another module is moved "
        "out along the dock axis until it is not (a corner: the docking controller turns "
        "there and slides in along the lane) [m]", 0.0, 1.0)
    replan_lag_m: float = param_field(
        0.12, "replan when a moving module is this far behind its timed path [m]", 0.0, 10.0)
    monitor_period_s: float = param_field(0.5, "period of the path-following check [s]",
                                          0.01, 60.0)

    @property
    def cell_size(self) -> float:
        """Grid cell size [m]."""
        return self.module_width + self.cell_margin

    def validate(self) -> None:
        """Raise :class:`~smores_assembly.errors.ParamsError` naming the field on an
        out-of-range or unknown value."""
        check_ranges(self)
        if self.algorithm not in ALGORITHMS:
            raise ParamsError(f"algorithm: {self.algorithm!r} is not one of "
                              f"{', '.join(ALGORITHMS)}",
                              field="algorithm")


@dataclass
class StagePlan:
    """Timed world paths of one stage.

    Attributes:
        paths: module id -> list of ``(t [s from stage start], Pose2D in world)``, times
            non-decreasing; first entry = the module's current pose at t = 0, last entry =
            its goal pose (moving modules) or its parking cell centre (moved aside).
        moved_aside: ids of obstacle modules planned as extra agents to clear the way.
        start_cells, goal_cells: module id -> grid cell used by the MAPF search.
        cell_size: [m]; origin: world position of cell (0, 0)'s centre [m]; shape: (W, H).
        stats: algorithm, cost, makespan (steps), step_s, runtime_s, expansions, notes.
    """

    paths: dict[str, list[tuple[float, Pose2D]]]
    moved_aside: list[str]
    start_cells: dict[str, Cell] = field(default_factory=dict)
    goal_cells: dict[str, Cell] = field(default_factory=dict)
    cell_size: float = 0.0
    origin: tuple[float, float] = (0.0, 0.0)
    shape: tuple[int, int] = (0, 0)
    stats: dict = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        """Time of the last waypoint of all paths [s]."""
        return max((p[-1][0] for p in self.paths.values() if p), default=0.0)


def clear_predock(goal: Pose2D, face_angle: float, standoff: float,
                  others: Collection[tuple[float, float]], clearance: float,
                  step: float = 0.005, limit: float = 0.4,
                  width: float = MODULE_WIDTH,
                  lane_others: Collection[tuple[float, float]] | None = None) -> Pose2D:
    """The pre-dock goal of a dock, moved out along its dock axis until clear (issue 11).

    ``goal`` is the docked pose, ``face_angle`` [rad] the moving face's angle in the
    module frame (:attr:`smores_assembly.geometry.Face.angle`); the pose ``standoff + e``
    [m] out along the face normal is returned for the smallest ``e`` (in ``step``, at most
    ``limit``; as :func:`smores_assembly.geometry.predock_pose`) whose centre is at
    least ``clearance`` [m] from every centre in ``others``
    (the docking controller's staging pose: there the module can turn, then slide straight
    along the lane past modules flush beside it). Heading = ``goal``'s. A pre-dock pose
    that lies inside another module (centres closer than a module width) is returned
    unchanged, for the planner to refuse.

    Never past a module standing in the lane: the pose moves out only while no centre in
    ``others`` lies in the lane its body would slide along to the goal (less than
    ``width`` [m] beside the axis, between the goal and the body's far side); where one
    does, the clearest pose before it is returned (a module in the lane is moved aside by
    the stage planner; beyond it the module could never slide in: bench_targets
    random_12_497791772, m10's pre-dock goal was pushed past the idle m4 standing on its
    axis and POSE_ADJUST timed out four times). "In the lane" is the docking controller's
    bound (centre less than ``LANE_FLUSH_WIDTHS * width`` off the axis): a flush neighbour
    a few tenths of a mm closer is beside the lane, not in it (random_10_68252793).

    ``lane_others`` (default: ``others``): the centres that hold the pose back in the
    lane; ``others`` still count for the clearance. The navigation passes only the
    modules that stay where they are while the dock is driven when the pose found with
    all of them is a pocket beside them (``navigation.problem.nav_problem``): a module
    that the stage planner moves aside (an idle one, a later stage's) then no longer
    holds the pose where a path's straight final leg comes in across the lane, its body
    turned along the leg, into the modules flush beside it
    (bench_targets seed 54 random_11_708823247 stage 3: m8, moved aside through m7's
    lane, stood in it when the stage was replanned; m7's goal stopped 0.12 m out,
    0.089 m from m1 and m3 flush beside its lane, and its final leg, 57 degrees off the
    axis, touched m3: 0.08 mm). The pose moves out until clear, and the stage planner
    moves that module aside (the slide is longer).

    When no pose out to ``limit`` is clear, the pose at the limit is returned (the stage
    planner moves the modules within ``clearance`` of it aside) unless it lies inside a
    module (a centre in ``others`` closer than ``width``); then the clearest pose is: the
    farthest from the centres of ``lane_others`` (the modules that stay) up to
    ``clearance``, of those the farthest from all of ``others`` (before: the pose at the
    limit whatever stood there; random 50 seed 911 stage 5, m10's goal 0.4 m out, 5 mm
    from its child m3 staged on its axis, which the stage moved aside as m10 drove in:
    0.5 mm). The clearest pose is also the one returned before a module in the lane.
    """
    from smores_assembly.docking.control import LANE_FLUSH_WIDTHS

    a = goal.yaw + face_angle
    ca, sa = math.cos(a), math.sin(a)
    p0 = Pose2D(goal.x - standoff * ca, goal.y - standoff * sa, goal.yaw)
    if any(math.hypot(p0.x - ox, p0.y - oy) < width - 1e-9
           and abs(-(p0.x - ox) * sa + (p0.y - oy) * ca) < LANE_FLUSH_WIDTHS * width
           for ox, oy in others):
        # The pre-dock pose lies inside another module: no clearance matter but an
        # impossible dock; leave it for the stage planner to refuse (never jump over).
        # A module beside the lane (centre LANE_FLUSH_WIDTHS widths or more off the
        # axis) is a flush neighbour with a few mm of pose error, not one the pose lies
        # in: the pose moves out past it as it would with the nominal geometry
        # (bench_targets seed 56 random_12_903157656, stage 4: the structure stood 2 mm,
        # 0.4 deg from the plan's frame, m9 flush beside the pair's lane 0.079 m from its
        # nominal pre-dock pose; that pose was kept, where the pair could not turn, the
        # navigation refused it and m8 timed out four times in POSE_ADJUST against m9).
        return p0
    # along-axis position (outward from the goal) of the modules standing in the lane
    in_lane = [t for t, lat in (((goal.x - ox) * ca + (goal.y - oy) * sa,
                                 abs(-(goal.x - ox) * sa + (goal.y - oy) * ca))
                                for ox, oy in (others if lane_others is None
                                               else lane_others))
               if t > 0.0 and lat < LANE_FLUSH_WIDTHS * width]
    e = 0.0
    best, best_key = p0, (-math.inf, -math.inf)
    while True:
        d = standoff + e
        if any(t < d + width - 1e-9 for t in in_lane):
            return best  # the lane is blocked here: never beyond that module
        p = Pose2D(goal.x - d * ca, goal.y - d * sa, goal.yaw)
        near = min((math.hypot(p.x - ox, p.y - oy) for ox, oy in others), default=math.inf)
        if near >= clearance:
            return p
        # the clearest pose so far: clear of the modules that stay first, of all then
        stays = near if lane_others is None else min(
            (math.hypot(p.x - ox, p.y - oy) for ox, oy in lane_others), default=math.inf)
        key = (min(clearance, stays), near)
        if key[0] > best_key[0] + 1e-12 or (key[0] > best_key[0] - 1e-12
                                             and key[1] > best_key[1] + 1e-12):
            best, best_key = p, key
        if e >= limit:
            # beyond the crowd the modules in the way are moved aside; a pose inside
            # one's body never is a goal
            return p if near >= width - 1e-9 else best
        e += step


def carried_predock(goal: Pose2D, face_angle: float, standoff: float,
                    width: float = MODULE_WIDTH) -> Pose2D:
    """The helper's pre-dock pose for a module it carries (wheel-face dock, issue 11).

    ``goal`` is the carried module's docked pose, ``face_angle`` [rad] its docking face's
    angle in the module frame. The helper carries the module one ``width`` ahead with
    the docking face forward (``docs/ARCHITECTURE.md``, helping modules), so at the
    pre-dock pose the carried face is ``standoff`` [m] from the target face: the helper's
    centre is ``width + standoff`` behind the goal centre along the face normal, heading
    along it (towards the parent).
    """
    a = goal.yaw + face_angle
    d = width + standoff
    return Pose2D(goal.x - d * math.cos(a), goal.y - d * math.sin(a), wrap_angle(a))


def clear_carried_predock(goal: Pose2D, face_angle: float, standoff: float,
                          others: Collection[tuple[float, float]],
                          limit: float = 0.4, width: float = MODULE_WIDTH) -> Pose2D:
    """The pre-dock goal of a helper carrying a module (:func:`carried_predock`), moved
    out along the dock axis until the pair can turn there (issue 11: a carried pair going
    into a slot or a corner).

    The rule of :func:`clear_predock` for the pair: the helper's centre ``width +
    standoff + e`` [m] out from the goal, the smallest ``e`` (5 mm steps, at most
    ``limit``) whose centre is :func:`carry_clearance` from every centre in ``others``
    (the pair's sweep turning in place, module ahead and helper behind: the docking
    controller turns a lifted pair only at such a pose and slides it in along the axis,
    ``DockingContext.turn_clearance``), never past a module standing in the lane the
    pair slides along. Heading: along the axis, towards the parent.

    Args:
        goal: the carried module's docked pose; face_angle: its docking face's angle in
            the module frame [rad].
        others: centres [m] (``world``) of the modules the pair must clear: the placed
            ones (idle modules near the goal are moved aside by :func:`plan_carried`).
    """
    p = clear_predock(goal, face_angle, standoff + width, others, carry_clearance(width),
                      limit=limit, width=width)
    return Pose2D(p.x, p.y, wrap_angle(goal.yaw + face_angle))


def carry_clearance(width: float = MODULE_WIDTH) -> float:
    """Centre clearance [m] of a helper carrying a module (a two-cell footprint): the
    farthest corner of the pair from the helper's centre (``hypot(1.5 w, 0.5 w)``) plus
    the corner radius ``w / sqrt(2)`` of another module, plus 2 mm: turning in place
    anywhere on its path, the pair touches no module standing on a blocked cell
    (:func:`~smores_assembly.docking.control.pair_turn_clearance` plus
    :data:`~smores_assembly.docking.control.PAIR_TURN_MARGIN`)."""
    from smores_assembly.docking.control import PAIR_TURN_MARGIN, pair_turn_clearance
    return pair_turn_clearance(width) + PAIR_TURN_MARGIN


def plan_carried(helper: str, start: Pose2D, goal: Pose2D, obstacles: Mapping[str, Pose2D],
                 settings: NavSettings | None = None,
                 fixed: Collection[str] = (), clock=None,
                 keep_clear: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                 slides: Mapping[str, "Segment"] | None = None,
                 carried_pose: Pose2D | None = None) -> StagePlan:
    """Timed path of a helper carrying a module (the pair as one agent with a two-cell
    footprint, issue 11), with idle modules moved aside as in :func:`plan_stage`.

    The pair is planned as the helper's centre with every module blocking the cells within
    :func:`carry_clearance` (instead of ``settings.clearance``) of it, so the pair passes
    idle modules instead of running into them with its carried end: round all of them if
    it can (idle modules within that clearance of the pre-dock pose, and those closer
    than ``slide_clearance`` to one of ``slides``, are moved aside; a plan whose straight
    final leg passes another idle module does not count, :func:`_final_leg_hits`), else
    moving idle ones aside as :func:`plan_stage` does. The grid's cells are one pair
    clearance wide (``cell_margin`` raised), so a module moved aside, one cell from the
    pair at all times (the search's robustness), keeps clear of the carried end too.

    The modules moved aside reach their start cells on that wide grid by paths of the
    normal grid (:func:`_aside_first_legs`), the pair standing, before the wide schedule
    starts: straight, those first legs ran 0.4-0.7 m through other modules (bench_scale
    random 30 seed 9, stage 2: m1 from (-0.195, -0.104) to (-0.753, -0.425), contacts
    m1/m13, m1/m18, m19/m27).

    Args:
        helper: the helper's id; start: its pose (carrying); goal: its pre-dock pose
            (:func:`clear_carried_predock`).
        obstacles: every other module but the carried one -> pose (``world``).
        settings, fixed, clock, keep_clear, slides: as in :func:`plan_stage`.
        carried_pose: where the carried module stands (``world``; default: one
            ``module_width`` ahead of ``start``), an obstacle of those first paths.

    Raises:
        As :func:`plan_stage`.
    """
    s = settings or NavSettings()
    s.validate()
    cc = max(s.clearance, carry_clearance(s.module_width))
    # cells one pair clearance wide: modules moved aside keep one cell from the pair
    wide = replace(s, clearance=cc, cell_margin=max(s.cell_margin, cc - s.module_width))
    # round every module first, but for idle ones standing within the pair's clearance of
    # its pre-dock pose or beside an active dock's slide (they must go)
    near_goal = pair_must_clear(goal, obstacles, fixed, slides or {}, s)
    try:
        sp = plan_stage({helper: (start, goal)}, obstacles, wide,
                        fixed=[o for o in obstacles if o not in near_goal], clock=clock,
                        keep_clear=keep_clear, slides=slides)
    except NavigationError:
        sp = plan_stage({helper: (start, goal)}, obstacles, wide, fixed=fixed, clock=clock,
                        keep_clear=keep_clear, slides=slides)
    else:
        if _final_leg_hits(sp.paths.get(helper), goal, obstacles, set(fixed) | near_goal,
                           s.module_width):
            # the plan that may move them aside, when there is one (else this one)
            try:
                sp = plan_stage({helper: (start, goal)}, obstacles, wide, fixed=fixed,
                                clock=clock, keep_clear=keep_clear, slides=slides)
            except NavigationError:
                pass
    if carried_pose is None:
        carried_pose = start.compose(s.module_width, 0.0, 0.0)
    return _aside_first_legs(sp, helper, start, carried_pose, obstacles, s, fixed, cc, clock)


def _final_leg_hits(path: list[tuple[float, Pose2D]] | None, goal: Pose2D,
                    obstacles: Mapping[str, Pose2D], skip: Collection[str],
                    width: float = MODULE_WIDTH) -> set[str]:
    """The modules of ``obstacles`` (id -> pose, ``world``), but those in ``skip``, whose
    centre comes closer to the last leg of ``path`` (its last two waypoints: the straight
    final leg from the goal cell to ``goal``, off the grid) than ``min(w sqrt 2, its
    distance from the goal)`` [m] (:func:`_final_leg_blockers`' bound).

    :func:`plan_carried` first plans the pair round every module but those it must move
    aside, and its final leg may pass one of them (the goal cell's cost only says it
    should not): random 50 (r50_runs/random50.yaml) stage 1, the pair h0/m0 got a goal
    cell 0.60 m from its pre-dock pose whose leg passed 5 mm from the staging m10's
    centre; the carried m0 ran into m10 (0.03 mm at 156.64 s). Such a plan is dropped for
    the one that may move those modules aside, when that one plans."""
    if not path or len(path) < 2:
        return set()
    a = (path[-2][1].x, path[-2][1].y)
    b = (path[-1][1].x, path[-1][1].y)
    body = width * math.sqrt(2.0)
    return {o for o, p in obstacles.items() if o not in skip
            and point_segment_distance((p.x, p.y), a, b)
            < min(body, math.hypot(p.x - goal.x, p.y - goal.y)) - 1e-9}


def pair_must_clear(goal: Pose2D, obstacles: Mapping[str, Pose2D], fixed: Collection[str],
                    slides: Mapping[str, "Segment"], settings: NavSettings | None = None
                    ) -> set[str]:
    """The modules a carried pair's plan (:func:`plan_carried`) moves aside whatever the
    pair does: the movable ones (not in ``fixed``) of ``obstacles`` (id -> pose,
    ``world``) closer than the pair's clearance (:func:`carry_clearance`, or
    ``settings.clearance`` if larger) [m] to its pre-dock pose ``goal`` (the pair turns
    and slides in there), and those closer than ``slide_clearance`` to one of ``slides``
    they do not own."""
    s = settings or NavSettings()
    cc = max(s.clearance, carry_clearance(s.module_width))
    near = {o for o, p in obstacles.items() if o not in fixed
            and math.hypot(p.x - goal.x, p.y - goal.y) < cc}
    return near | _slide_blockers(obstacles, fixed, slides, s)


def _aside_first_legs(sp: StagePlan, helper: str, start: Pose2D, carried_pose: Pose2D,
                      obstacles: Mapping[str, Pose2D], s: NavSettings,
                      fixed: Collection[str], room: float, clock=None) -> StagePlan:
    """A carried pair's plan ``sp`` (wide grid, :func:`plan_carried`) whose modules moved
    aside first drive to their wide start cells on paths of the normal grid (``s``), the
    pair standing at ``start`` (its carried module at ``carried_pose``), in one
    :func:`plan_stage` problem; the wide schedule (the pair's path included) then runs
    that much later. Off the grid and all at once, those legs were straight and checked
    against nothing (bench_scale random 30 seed 9, stage 2: 0.4-0.7 m legs through m13,
    m18, m27).

    Every other module of ``obstacles`` is held where it stands; when that walls a module
    in (modules packed closer than ``clearance``), the ones not in ``fixed`` may be moved
    aside too, parking at least ``room`` [m] (the pair's clearance) from every leg of the
    wide schedule (as slides, :func:`plan_stage`); they join ``moved_aside``, their paths
    ending before the wide schedule starts.

    When the normal grid cannot plan them (:class:`NavigationError`), ``sp`` is returned
    as it is (``stats["notes"]`` says so). Returns the new plan (``sp`` changed in place:
    ``stats["t0_s"]`` grows by ``stats["aside_first_s"]``, the added time [s]).
    """
    aside = [o for o in sp.moved_aside if o in sp.paths and o in sp.start_cells]
    if not aside:
        return sp
    t0 = float(sp.stats.get("t0_s", 0.0))
    cells = {o: (sp.origin[0] + sp.start_cells[o][0] * sp.cell_size,
                 sp.origin[1] + sp.start_cells[o][1] * sp.cell_size) for o in aside}
    moving = {o: (obstacles[o], Pose2D(cells[o][0], cells[o][1], obstacles[o].yaw))
              for o in aside}
    obs = {o: p for o, p in obstacles.items() if o not in moving}
    obs[helper] = start
    obs[f"{helper}/carried"] = carried_pose   # no module id has a "/"
    notes = list(sp.stats.get("notes", []))
    try:
        first = plan_stage(moving, obs, s, fixed=list(obs), clock=clock)
    except NavigationError:
        # the legs of the wide schedule, where nothing moved aside here may park
        legs = {f"{m}/{i}": ((a.x, a.y), (b.x, b.y))
                for m, path in sp.paths.items()
                for i, ((ta, a), (_tb, b)) in enumerate(zip(path, path[1:]))
                if m not in aside or ta >= t0 - 1e-9}
        hold = (set(fixed) & set(obs)) | {helper, f"{helper}/carried"}
        try:
            first = plan_stage(moving, obs, replace(s, slide_clearance=max(
                s.slide_clearance, room)), fixed=sorted(hold), clock=clock, slides=legs)
        except NavigationError as exc:
            notes.append(f"modules moved aside drive straight to their start cells ({exc})")
            sp.stats["notes"] = notes
            return sp
    for o in first.moved_aside:
        sp.paths[o] = first.paths[o]
    sp.moved_aside = sorted(set(sp.moved_aside) | set(first.moved_aside))
    t1 = first.duration_s
    for o in aside:
        p1 = first.paths.get(o) or [(0.0, obstacles[o])]
        rest = [(t + t1, p) for t, p in sp.paths[o] if t >= t0 - 1e-9]
        if rest and math.hypot(rest[0][1].x - p1[-1][1].x, rest[0][1].y - p1[-1][1].y) > 1e-6:
            rest.insert(0, (t0 + t1, Pose2D(cells[o][0], cells[o][1], rest[0][1].yaw)))
        sp.paths[o] = _compress(p1 + rest)
    for m, path in sp.paths.items():
        if m in aside or m in first.moved_aside or not path:
            continue
        sp.paths[m] = _compress([path[0], (t1, path[0][1])]
                                + [(t + t1, p) for t, p in path[1:]])
    sp.stats["t0_s"] = t0 + t1
    sp.stats["aside_first_s"] = t1
    notes.append(f"modules moved aside reach their start cells on the normal grid "
                 f"first ({t1:.1f} s)")
    sp.stats["notes"] = notes
    return sp


def pose_at(path: list[tuple[float, Pose2D]], t: float) -> Pose2D:
    """Planned pose at time ``t`` [s] (linear interpolation; clamped to the path's ends)."""
    if not path:
        raise InputError("path: empty")
    if t <= path[0][0]:
        return path[0][1]
    for (t0, p0), (t1, p1) in zip(path, path[1:]):
        if t <= t1:
            if t1 - t0 <= 0.0:
                return p1
            s = (t - t0) / (t1 - t0)
            return Pose2D(p0.x + s * (p1.x - p0.x), p0.y + s * (p1.y - p0.y),
                          wrap_angle(p0.yaw + s * wrap_angle(p1.yaw - p0.yaw)))
    return path[-1][1]


class _Scene:
    """The grid laid over one stage's scene."""

    def __init__(self, points: np.ndarray, s: NavSettings):
        c = s.cell_size
        lo = points.min(axis=0) - s.border_cells * c
        hi = points.max(axis=0) + s.border_cells * c
        self.c = c
        self.origin = (float(lo[0]), float(lo[1]))
        self.W = int(math.ceil((hi[0] - lo[0]) / c - 1e-9)) + 1
        self.H = int(math.ceil((hi[1] - lo[1]) / c - 1e-9)) + 1
        self.clearance = s.clearance

    def center(self, cell: Cell) -> tuple[float, float]:
        return (self.origin[0] + cell[0] * self.c, self.origin[1] + cell[1] * self.c)

    def near(self, x: float, y: float, radius: float) -> list[tuple[float, Cell]]:
        """Cells whose centre is closer than ``radius`` to (x, y), as (distance, cell)."""
        i0 = (x - self.origin[0]) / self.c
        j0 = (y - self.origin[1]) / self.c
        r = int(math.ceil(radius / self.c)) + 1
        out = []
        for i in range(max(0, int(math.floor(i0)) - r), min(self.W, int(math.ceil(i0)) + r + 1)):
            for j in range(max(0, int(math.floor(j0)) - r),
                           min(self.H, int(math.ceil(j0)) + r + 1)):
                cx, cy = self.center((i, j))
                d = math.hypot(cx - x, cy - y)
                if d < radius:
                    out.append((d, (i, j)))
        out.sort()
        return out


def _assign(scene: _Scene, targets: dict[str, tuple[float, float]], allowed, penalty,
            radius: float, what: str, leg_penalty=None) -> dict[str, Cell]:
    """Distinct cells near each target minimising the summed distance (+ penalties;
    ``leg_penalty(a, cell)``: one that depends on the module too)."""
    ids = sorted(targets)
    cand: dict[Cell, int] = {}
    rows = []
    for a in ids:
        x, y = targets[a]
        opts = [(d + penalty(cell) + (leg_penalty(a, cell) if leg_penalty else 0.0), cell)
                for d, cell in scene.near(x, y, radius) if allowed(a, cell)]
        if not opts:
            raise UnreachableGoalError(
                f"module {a!r}: no free grid cell within {radius:.3f} m of its {what} "
                f"({x:.3f}, {y:.3f})")
        for _, cell in opts:
            cand.setdefault(cell, len(cand))
        rows.append(opts)
    big = 1e6
    cost = np.full((len(ids), len(cand)), big)
    for r, opts in enumerate(rows):
        for v, cell in opts:
            cost[r, cand[cell]] = v
    ri, ci = linear_sum_assignment(cost)
    if len(ri) < len(ids):
        # fewer candidate cells than modules: the assignment leaves rows out
        left = sorted(set(range(len(ids))) - {int(r) for r in ri})
        raise UnreachableGoalError(
            f"module {ids[left[0]]!r}: no distinct free grid cell near its {what} "
            "(too crowded)")
    cells = list(cand)
    out = {}
    for r, col in zip(ri, ci):
        if cost[r, col] >= big:
            raise UnreachableGoalError(
                f"module {ids[r]!r}: no distinct free grid cell near its {what} "
                "(too crowded)")
        out[ids[r]] = cells[col]
    return out


def _cheapest_crossing(W: int, H: int, fixed: set, movable: dict, src: Cell, dst: Cell):
    """Path src -> dst through non-fixed cells crossing as few movable-occupied cells as
    possible (Dijkstra; a movable cell costs 1 + W*H). Returns the cells or None."""
    return _cheapest_crossing_to(W, H, fixed, movable, src, lambda cell: cell == dst)


def _cheapest_crossing_to(W: int, H: int, fixed: set, movable: dict, src: Cell, is_dst):
    """:func:`_cheapest_crossing` to the nearest cell ``c`` with ``is_dst(c)``."""
    big = 1 + W * H
    dist = {src: 0}
    prev: dict[Cell, Cell] = {}
    pq = [(0, src)]
    while pq:
        d, u = heapq.heappop(pq)
        if is_dst(u):
            path = [u]
            while u in prev:
                u = prev[u]
                path.append(u)
            return path[::-1]
        if d > dist[u]:
            continue
        x, y = u
        for v in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if not (0 <= v[0] < W and 0 <= v[1] < H) or v in fixed:
                continue
            nd = d + (big if v in movable else 1)
            if nd < dist.get(v, 1 << 62):
                dist[v] = nd
                prev[v] = u
                heapq.heappush(pq, (nd, v))
    return None


class WorkClock:
    """A deterministic stand-in for wall time in the search bounds (``time_limit_s``): each
    reading advances it by ``quantum_s``. The searches read their clock at fixed points of
    their work (every high-level node, every 1024 low-level expansions, every LNS round),
    so the bound becomes a bound on work that does not depend on the machine's load: the
    lockstep simulation's plans (and so its runs) are then the same on a busy machine.

    Args:
        quantum_s: seconds per reading (default 1 ms: about a high-level node or 1024
            low-level expansions on this project's machine).
    """

    def __init__(self, quantum_s: float = 1e-3):
        self.quantum_s = quantum_s
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return self.readings * self.quantum_s


def plan_stage(moving: Mapping[str, tuple[Pose2D, Pose2D]], obstacles: Mapping[str, Pose2D],
               settings: NavSettings | None = None,
               fixed: Collection[str] = (), clock=None,
               keep_clear: Mapping[str, Sequence[tuple[float, float]]] | None = None,
               slides: Mapping[str, Segment] | None = None) -> StagePlan:
    """Plan timed, collision-free world paths for the modules that move in one stage.

    Args:
        moving: module id -> (current pose, goal pose), both in ``world`` [m, m, rad].
        obstacles: every other module id -> its pose in ``world``.
        settings: planner tunables (:class:`NavSettings`).
        fixed: ids of ``obstacles`` that must never be moved (docked structures); all other
            obstacles may be moved aside (listed in ``StagePlan.moved_aside``).
        clock: the clock of ``time_limit_s`` (default: wall time; :class:`WorkClock` for
            a bound on work, the same on any machine).
        keep_clear: the footprint still to be built: owner module -> world points [m]
            (its docked and pre-dock positions). A movable obstacle within ``clearance``
            of a point it does not own is moved aside, and every module moved aside
            parks outside the convex hull of all points grown by ``clearance``.
        slides: the active docks' slides: owner module -> segment ``((x0, y0), (x1, y1))``
            [m, ``world``] from the docked position out to the pre-dock or staging
            position. A movable obstacle (not its owner) closer than ``slide_clearance``
            to a segment is moved aside and parks no closer than that to any of them, also
            when nothing else moves (issue 11: an idle module beside a slide-in from the
            staging pose).

    Returns:
        A :class:`StagePlan` (empty when ``moving`` is empty and nothing is moved aside).

    Raises:
        InputError: a module id both moving and obstacle, an unknown ``fixed`` id, bad
            settings (naming the field).
        GoalOccupiedError: a goal pose overlaps a ``fixed`` module.
        NavigationError: no free cell near a start/goal, a goal unreachable
            even after moving every movable obstacle, two goals too close, search bounds
            exceeded (see :mod:`smores_assembly.navigation.mapf`).

    Steps (see the module docstring): :func:`_check_inputs`, :func:`_lay_grid`,
    :func:`_check_goals_not_fixed`, :func:`_choose_cells` (start/goal cells and the modules
    to move aside), :func:`_park_aside`, :func:`_solve_grid`, :func:`_to_world`.
    """
    s = settings or NavSettings()
    s.validate()
    _check_inputs(moving, obstacles, fixed)
    # A module standing at its goal (a staging module at its staging pose) is a fixed
    # obstacle of the search: as an agent it held the centre of its cell while it stood
    # off it, and a module on the next cell passed it at 0.088 m (bench_targets
    # random_10_713447292 stage 2: h0 wedged against the staging m6, 44 contacts); as an
    # obstacle it blocks every cell within ``clearance`` of where it stands. Where that
    # walls a module in, the one nearest the moving modules' starts is an agent (through
    # its cell's centre: it may make way), then the next one, at most STAY_RELEASES; then
    # all of them.
    stay = {m for m, (cur, goal) in moving.items() if at_goal(cur, goal)}
    if stay:
        starts = [cur for m, (cur, _) in moving.items() if m not in stay]
        near = sorted(stay, key=lambda m: (min((moving[m][0].distance_to(p) for p in starts),
                                                default=0.0), m))
        releases: list[set[str]] = [set()] + [{m} for m in near[:STAY_RELEASES]]
        for agents in releases:
            held = stay - agents
            obs = dict(obstacles)
            obs.update({m: moving[m][0] for m in held})
            try:
                sp = _plan_stage({m: v for m, v in moving.items() if m not in held}, obs, s,
                                 set(fixed) | held, clock, keep_clear, slides)
            except NavigationError:
                continue
            for m in sorted(held):
                sp.paths[m] = stay_path(*moving[m], s.nominal_speed)
            if not sp.stats:   # nothing but them: no search (its log line needs the stats)
                sp.stats = dict(_NO_SEARCH)
            return sp
    return _plan_stage(moving, obstacles, s, fixed, clock, keep_clear, slides)


def _plan_stage(moving: Mapping[str, tuple[Pose2D, Pose2D]], obstacles: Mapping[str, Pose2D],
                s: NavSettings, fixed: Collection[str], clock,
                keep_clear: Mapping[str, Sequence[tuple[float, float]]] | None,
                slides: Mapping[str, Segment] | None) -> StagePlan:
    """:func:`plan_stage` with every module of ``moving`` planned as an agent."""
    slides = dict(slides or {})
    if not moving and not _slide_blockers(obstacles, fixed, slides, s):
        return StagePlan({}, [], cell_size=s.cell_size)
    keep = {o: list(pts) for o, pts in (keep_clear or {}).items() if pts}
    lay = _lay_grid(moving, obstacles, fixed, s, keep)
    goals_xy = {m: (g.x, g.y) for m, (_, g) in moving.items()}
    _check_goals_not_fixed(goals_xy, obstacles, fixed, s)
    _clear_footprint(lay, keep, s)
    lay.aside |= _slide_blockers(obstacles, fixed, slides, s)
    start_cells, goal_cells = _choose_cells(lay, moving, goals_xy, s)
    agents_start, agents_goal, blocked = _park_aside(lay, moving, goals_xy, start_cells,
                                                     goal_cells, s, keep, slides)
    sol = _solve_grid(Grid(lay.scene.W, lay.scene.H, blocked), agents_start, agents_goal, s,
                      clock)
    paths, dt, t0 = _to_world(lay, moving, sol, agents_start, agents_goal, s)
    stats = {
        "algorithm": sol.algorithm, "cost": sol.cost, "makespan": sol.makespan,
        "lower_bound": sol.lower_bound, "runtime_s": sol.runtime_s,
        "high_level_expanded": sol.high_level_expanded,
        "low_level_expanded": sol.low_level_expanded, "step_s": dt, "t0_s": t0,
        "grid": [lay.scene.W, lay.scene.H], "notes": list(sol.notes),
    }
    return StagePlan(paths=paths, moved_aside=sorted(lay.aside),
                     start_cells={a: agents_start[a] for a in sol.paths},
                     goal_cells={a: agents_goal[a] for a in sol.paths},
                     cell_size=lay.scene.c, origin=lay.scene.origin,
                     shape=(lay.scene.W, lay.scene.H), stats=stats)


def _check_inputs(moving: Mapping, obstacles: Mapping, fixed: Collection[str]) -> None:
    """InputError when a module is both moving and an obstacle, or ``fixed`` names a
    module that is not an obstacle."""
    both = sorted(set(moving) & set(obstacles))
    if both:
        raise InputError(f"obstacles: modules {both} are also moving")
    unknown = sorted(set(fixed) - set(obstacles))
    if unknown:
        raise InputError(f"fixed: {unknown} are not obstacles")


@dataclass
class _Layout:
    """The grid over one stage and what stands on it.

    ``blocks``: obstacle id -> cells within ``clearance`` of it; ``fixed_cells``: cells
    blocked by fixed modules; ``aside``: movable obstacles chosen to be moved aside (grows
    in :func:`_choose_cells`).
    """

    scene: _Scene
    obstacles: Mapping[str, Pose2D]
    fixed: Collection[str]
    blocks: dict[str, set[Cell]]
    fixed_cells: set[Cell]
    aside: set[str] = field(default_factory=set)
    footprint_aside: set[str] = field(default_factory=set)

    def movable_cells(self) -> dict[Cell, set[str]]:
        """Cell -> the movable obstacles (not fixed, not moved aside) blocking it."""
        mc: dict[Cell, set[str]] = {}
        for o in self.obstacles:
            if o in self.fixed or o in self.aside:
                continue
            for cell in self.blocks[o]:
                mc.setdefault(cell, set()).add(o)
        return mc


def _lay_grid(moving: Mapping[str, tuple[Pose2D, Pose2D]], obstacles: Mapping[str, Pose2D],
              fixed: Collection[str], s: NavSettings,
              keep: Mapping[str, Sequence[tuple[float, float]]] | None = None) -> _Layout:
    """The grid over every start, goal and obstacle (plus the border), with the cells each
    obstacle blocks; with a footprint to keep clear, also over that footprint grown by
    ``clearance`` plus ``border_cells + 2`` cells (room to park round it)."""
    pts = []
    for m, (cur, goal) in moving.items():
        pts += [(cur.x, cur.y), (goal.x, goal.y)]
    pts += [(p.x, p.y) for p in obstacles.values()]
    if keep:
        fp = np.array([xy for v in keep.values() for xy in v], dtype=float)
        grow = s.clearance + 2 * s.cell_size
        pts += [tuple(fp.min(axis=0) - grow), tuple(fp.max(axis=0) + grow)]
    scene = _Scene(np.array(pts, dtype=float), s)
    blocks = {o: {cell for _, cell in scene.near(p.x, p.y, s.clearance)}
              for o, p in obstacles.items()}
    fixed_cells = set().union(*[blocks[o] for o in fixed]) if fixed else set()
    return _Layout(scene, obstacles, fixed, blocks, fixed_cells)


def _check_goals_not_fixed(goals_xy: dict[str, tuple[float, float]],
                           obstacles: Mapping[str, Pose2D], fixed: Collection[str],
                           s: NavSettings) -> None:
    """GoalOccupiedError when a goal pose overlaps a fixed module."""
    for m, (gx, gy) in sorted(goals_xy.items()):
        for o in sorted(fixed):
            d = math.hypot(obstacles[o].x - gx, obstacles[o].y - gy)
            if d < s.module_width - 1e-9:
                raise GoalOccupiedError(
                    f"module {m!r}: goal pose ({gx:.3f}, {gy:.3f}) overlaps fixed module "
                    f"{o!r} ({d:.3f} m < module_width {s.module_width} m)")


def _clear_footprint(lay: _Layout, keep: Mapping[str, Sequence[tuple[float, float]]],
                     s: NavSettings) -> None:
    """Rule (d): every movable obstacle within ``clearance`` of a footprint point that
    it does not own goes aside (added to ``lay.aside`` and ``lay.footprint_aside``)."""
    if not keep:
        return
    owners = sorted(keep)
    pts = np.array([xy for o in owners for xy in keep[o]], dtype=float)
    own = np.array([i for i, o in enumerate(owners) for _ in keep[o]])
    index = {o: i for i, o in enumerate(owners)}
    for o, p in lay.obstacles.items():
        if o in lay.fixed:
            continue
        d = np.hypot(pts[:, 0] - p.x, pts[:, 1] - p.y)
        near = d < s.clearance
        if o in index:
            near &= own != index[o]
        if near.any():
            lay.aside.add(o)
            lay.footprint_aside.add(o)


#: A straight stretch of the plane: ``((x0, y0), (x1, y1))`` [m].
Segment = tuple[tuple[float, float], tuple[float, float]]


def _slide_blockers(obstacles: Mapping[str, Pose2D], fixed: Collection[str],
                    slides: Mapping[str, Segment], s: NavSettings) -> set[str]:
    """The movable obstacles (not ``fixed``) closer than ``slide_clearance`` to a slide
    they do not own (:func:`plan_stage`'s ``slides``)."""
    out = set()
    for o, p in obstacles.items():
        if o in fixed:
            continue
        if any(owner != o and point_segment_distance((p.x, p.y), a, b) < s.slide_clearance
               for owner, (a, b) in slides.items()):
            out.add(o)
    return out


def _keep_out_cells(scene: _Scene, keep: Mapping[str, Sequence[tuple[float, float]]],
                    clearance: float) -> set[Cell]:
    """Cells whose centre lies in the convex hull of the footprint points or within
    ``clearance`` of its boundary (where nothing may park)."""
    pts = np.array([xy for v in keep.values() for xy in v], dtype=float)
    hull = _convex_hull(pts)
    ii, jj = np.meshgrid(np.arange(scene.W), np.arange(scene.H), indexing="ij")
    cx = scene.origin[0] + ii.ravel() * scene.c
    cy = scene.origin[1] + jj.ravel() * scene.c
    inside = np.ones(cx.shape, dtype=bool)
    dist = np.full(cx.shape, np.inf)
    n = len(hull)
    for k in range(n):
        ax, ay = hull[k]
        bx, by = hull[(k + 1) % n]
        ex, ey = bx - ax, by - ay
        # counter-clockwise hull: inside is to the left of every edge
        if n >= 3:
            inside &= ex * (cy - ay) - ey * (cx - ax) >= 0.0
        ll = ex * ex + ey * ey
        t = np.clip(((cx - ax) * ex + (cy - ay) * ey) / ll, 0.0, 1.0) if ll > 0 else 0.0
        dist = np.minimum(dist, np.hypot(cx - ax - t * ex, cy - ay - t * ey))
    if n < 3:
        inside[:] = False
    out = inside | (dist < clearance)
    return {(int(i), int(j)) for i, j in zip(ii.ravel()[out], jj.ravel()[out])}


def _convex_hull(pts: np.ndarray) -> list[tuple[float, float]]:
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain; collinear
    points dropped; one or two points for degenerate input)."""
    p = sorted(set(map(tuple, pts.tolist())))
    if len(p) <= 2:
        return p

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list = []
    for q in p:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    upper: list = []
    for q in reversed(p):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return lower[:-1] + upper[:-1]


def _choose_cells(lay: _Layout, moving: Mapping[str, tuple[Pose2D, Pose2D]],
                  goals_xy: dict[str, tuple[float, float]], s: NavSettings
                  ) -> tuple[dict[str, Cell], dict[str, Cell]]:
    """Start and goal cells of the moving modules, and (in ``lay.aside``) the movable
    obstacles that must go: (a) on a goal pose, (b) on a chosen start/goal cell, (c) on the
    cheapest corridor between a module's start and goal cells, (e) on the straight final
    leg from a chosen goal cell's centre to the goal pose (:func:`_final_leg_blockers`; a
    goal cell whose leg passes a fixed module costs ``10`` cells, so it is taken only
    when no other is near). Goal cells whose final legs no order keeps ``w sqrt 2``
    apart (:func:`_untimed_legs`) are chosen again with those cells penalised (f);
    start cells whose legs bring two modules into contact as they are driven
    (:func:`_start_leg_contacts`) likewise (g). Repeated until ``aside`` stops growing.
    Returns ``(start_cells, goal_cells)``."""
    scene, obstacles, fixed_cells, aside = lay.scene, lay.obstacles, lay.fixed_cells, lay.aside
    radius = s.goal_search_cells * scene.c
    # (a) movable obstacles standing on a goal pose must go
    for o, p in obstacles.items():
        if o in lay.fixed:
            continue
        if any(math.hypot(p.x - gx, p.y - gy) < s.clearance for gx, gy in goals_xy.values()):
            aside.add(o)
    penalty_occupied = 2.0 * scene.c
    start_xy = {m: (cur.x, cur.y) for m, (cur, _) in moving.items()}
    cur_poses = {m: cur for m, (cur, _) in moving.items()}
    pen = _start_leg_penalty(scene, {m: cur for m, (cur, _) in moving.items()}, obstacles, s)
    # a module standing at its goal (a staging module at its staging pose) keeps its own
    # cell: pushed to another one, it drove a loop out and back and met a neighbour
    # (bench_targets random_7_356561138 stage 3: staging m5 against staging m2)
    stay = {m for m, (cur, goal) in moving.items() if at_goal(cur, goal)}

    def leg_penalty(a: str, cell: Cell) -> float:
        return 0.0 if a in stay else pen(a, cell)
    final_leg = _final_leg_blockers(lay, goals_xy, radius, s)

    def final_penalty(a: str, cell: Cell) -> float:
        hit_fixed, hit = final_leg(a, cell)
        return (10.0 * scene.c if hit_fixed else 0.0) + penalty_occupied * len(hit - aside)
    room = turn_clearance(s.module_width)
    body = s.module_width * math.sqrt(2.0)
    for _ in range(len(obstacles) + 2):
        mc = lay.movable_cells()
        before = set(aside)
        # (f) two final legs that no order keeps apart (:func:`_untimed_legs`), by less
        # than two turning bodies need (``w sqrt 2``), cost their modules' cells
        # ``penalty_occupied`` each, and the cells are chosen again, up to
        # UNTIMED_LEG_PASSES times; the choice with the fewest such pairs is kept (the
        # first among equals)
        goal_cells = _choose_again(
            lambda bad: _assign(scene, goals_xy, lambda a, cell: cell not in fixed_cells,
                                lambda cell: penalty_occupied if cell in mc else 0.0,
                                radius, "goal pose",
                                leg_penalty=lambda a, cell: final_penalty(a, cell) + (
                                    penalty_occupied if (a, cell) in bad else 0.0)),
            lambda cells: [p for p, gap in _untimed_legs(
                {m: scene.center(c) for m, c in cells.items()}, goals_xy, room).items()
                if gap < body],
            UNTIMED_LEG_PASSES)
        # (e) on a chosen goal cell's final leg
        for m, cell in goal_cells.items():
            aside |= final_leg(m, cell)[1]
        # (g) two legs to start cells that, driven as :func:`_to_world` drives them,
        # bring their modules into contact (:func:`_start_leg_contacts`) cost their
        # modules' cells ``10`` cells each, and the start cells are chosen again, up to
        # START_LEG_PASSES times; the choice with the fewest such pairs is kept (the first
        # among equals). Without such a pair the first choice stands, as before.
        start_cells = _choose_again(
            lambda clash: _assign(scene, start_xy, lambda a, cell: cell not in fixed_cells,
                                  lambda cell: penalty_occupied if cell in mc else 0.0,
                                  radius, "current pose",
                                  leg_penalty=lambda a, cell: leg_penalty(a, cell) + (
                                      10.0 * scene.c if (a, cell) in clash else 0.0)),
            lambda cells: _start_leg_contacts(
                cur_poses, {m: scene.center(c) for m, c in cells.items()}, stay, s),
            START_LEG_PASSES, charged=lambda m: m not in stay)
        # (b) on a chosen cell
        for cell in list(goal_cells.values()) + list(start_cells.values()):
            aside |= mc.get(cell, set())
        # (c) on the cheapest corridor
        mc = lay.movable_cells()
        for m in sorted(moving):
            path = _cheapest_crossing(scene.W, scene.H, fixed_cells, mc, start_cells[m],
                                      goal_cells[m])
            if path is None:
                # the goal cell lies in a pocket of fixed cells (the grid is coarser than
                # the gaps between fixed modules, e.g. a helper's pick-up pose between its
                # module and the structure): end on a reachable cell from which the
                # straight final leg keeps clear of every module
                taken = (set(goal_cells.values()) | set(start_cells.values())) - {
                    goal_cells[m]}
                goal_cells[m] = _reachable_goal_cell(lay, m, start_cells[m], goals_xy[m],
                                                     taken, radius, s)
                path = _cheapest_crossing(scene.W, scene.H, fixed_cells, mc, start_cells[m],
                                          goal_cells[m])
                assert path is not None  # the cell lies in the start's component
            for cell in path:
                aside |= mc.get(cell, set())
        if aside == before:
            break
    return start_cells, goal_cells


#: How often :func:`_choose_cells` chooses the goal cells again to be rid of two final
#: legs that no order keeps apart (:func:`_untimed_legs`).
UNTIMED_LEG_PASSES = 3


def _choose_again(assign: Callable[[set], dict], pairs_of: Callable[[dict], Sequence],
                  passes: int, charged: Callable[[str], bool] = lambda m: True) -> dict:
    """Cells chosen by ``assign(bad)`` (module -> cell; ``bad``: the ``(module, cell)``
    choices to charge), chosen again while ``pairs_of(cells)`` finds pairs of modules whose
    legs conflict: their cells (of modules ``charged``) are added to ``bad``, up to
    ``passes`` more times or until no new choice is charged; the choice with the fewest
    pairs is kept (the first among equals). The one re-choice rule of :func:`_choose_cells`
    steps (f) and (g)."""
    bad: set[tuple[str, Cell]] = set()
    best: tuple[int, dict] | None = None
    for _pass in range(passes + 1):
        cells = assign(bad)
        pairs = pairs_of(cells)
        if best is None or len(pairs) < best[0]:
            best = (len(pairs), cells)
        new_bad = {(m, cells[m]) for pair in pairs for m in pair if charged(m)} - bad
        if not pairs or not new_bad:
            break
        bad |= new_bad
    assert best is not None  # one pass at least
    return best[1]


#: How often :func:`_choose_cells` chooses the start cells again to be rid of two legs to
#: start cells that bring their modules into contact (:func:`_start_leg_contacts`).
START_LEG_PASSES = 3

#: Separation [m] of two modules' bodies (squares, separating-axis test) below which
#: :func:`_start_leg_contacts` counts two legs to start cells as a contact: the bodies
#: touch or come this close (path error: the 5 mm :func:`turn_clearance` allows).
START_LEG_MARGIN = 0.005

#: Heading error [deg] below which a module tracking a path drives instead of turning in
#: place (the docking controller's ``nav_turn_in_place_deg``): a module leaves its pose
#: only once it has turned to within this of its leg (:func:`_start_leg_contacts`).
TRACK_DRIVE_DEG = 50.0

#: Top speed [m/s] of a module tracking a path (the docking controller's ``v_max``): how
#: fast it can run ahead of its timing towards the look-ahead point.
TRACK_SPEED_MAX = 0.06


def _start_leg_contacts(poses: Mapping[str, Pose2D], cell_xy: Mapping[str, tuple[float, float]],
                        stay: Collection[str], s: NavSettings, dt: float = 0.05,
                        step: float = 0.004) -> list[tuple[str, str]]:
    """Pairs ``(a, b)`` (``a < b``) of straight legs to start cells (``poses[a]`` ->
    ``cell_xy[a]``, ``world`` frame [m]) that, driven as :func:`_to_world` times them,
    bring their modules' bodies into contact or closer than :data:`START_LEG_MARGIN`, and
    closer than in any standing configuration: as they stand, turned to their legs'
    headings where they stand (the turn at the pose is not the legs' doing), or one at
    its cell and the other at its pose (:func:`_start_leg_penalty` judges each leg, its
    end included, against the other modules' poses). What is left is what the two
    motions together add: legs that cross or meet while both drive, or one driving past
    the other's cell.

    Timing: every leg is timed from ``t = 0`` to the common ``t0``, at least the longest
    leg at ``nominal_speed`` (each module's timed position covers the same fraction of its
    leg at any instant, :func:`_to_world`; a leg that waits for a module moved aside, not
    known here, is judged as one that does not); ``t0`` is taken at its least (a later
    one leaves the bounds below a smaller part of the legs). A module does not keep
    exactly to its timing; at time ``t`` it has driven, along its leg, at most as far as
    its timed position at ``t +`` :data:`FINAL_LEG_LEAD_S` (path tracking steers at that
    point) and as far as it can drive at :data:`TRACK_SPEED_MAX` once it has turned in
    place to within :data:`TRACK_DRIVE_DEG` of the leg's heading (at
    :data:`FINAL_LEG_TURN_RATE`), and at least as far as its timed position at ``t -``
    its whole turn's duration (it then catches up). Every pair of positions within those
    bounds at every instant (sampled every ``dt`` [s] and ``step`` [m]) is judged.

    Geometry: the bodies are ``module_width`` squares turned to their legs' headings
    (the module drives along its leg), judged (:func:`square_overlap`) only while both
    have left their poses and not both reached their cells: a leg passing a module that
    still stands at its pose (or turns there) is :func:`_start_leg_penalty`'s, a module
    starting flush against another one escapes straight first (the docking controller's
    ``Escape``). Modules in ``stay`` (at their goals, their legs a drift onto their own
    cells' centres) are not judged.

    Before, the start cells were judged against the other modules' *current centres*
    only (:func:`_start_leg_penalty`): bench_scale comb 100 seed 0 in lockstep, stage 2,
    the staging m14 and m94 0.48 m apart on one column, boxed in by neighbours, were each
    given the cell towards the other (legs 0.31 m, head on): contact m14/m94 0.39 mm at
    52.1 s, m94 blocked, every replan from the poses gave the same cells (34 replans, the
    run timed out in stage 2). A first fix (93b6082, reverted) judged straight legs
    driven at the same speed, not as timed, against ``min(room, their poses' distance,
    their cells' distance)`` of centre distance: it flagged legs that never touch and
    changed the cells of stages that assembled (test_scale_e2e: the comb 5 x 6 then
    touched, random 30 failed). Bounds as wide as :func:`_final_leg_waits`' windows
    (any real start from ``FINAL_LEG_LEAD_S`` early to a turn late), against only the
    poses as the modules stand, still flagged the comb 5 x 6's stage 2 in closed loop:
    staging m3, m23, m24 and m26 drifting 3-10 cm to their cells in 2 s, m3 arriving at
    its cell before m23, which turns less, had left its pose (1.2 mm overlap; m3 must
    turn 99 deg first), m23 at its cell 1.1 mm from m26 leaving its pose, m24 at its
    cell 1.6 mm from m23 at its pose (5.0 mm standing); re-chosen, the assembly touched
    twice (269.7 s, 260.6 s before). This rule flags no pair in the 107 stage plans of
    ``bench.bench_nav_stage --corpus`` nor in the bundled runs and those of
    test_scale_e2e: they plan as before.
    """
    w, v = s.module_width, s.nominal_speed
    margin = START_LEG_MARGIN
    ids = sorted(a for a in cell_xy if a in poses and a not in stay
                 and math.dist((poses[a].x, poses[a].y), cell_xy[a]) > 1e-9)
    lengths = {m: math.dist((p.x, p.y), cell_xy[m])
               for m, p in poses.items() if m in cell_xy}
    t0 = max(lengths.values(), default=0.0) / v
    if t0 <= 0.0:
        return []
    start = {a: (poses[a].x, poses[a].y) for a in ids}
    head = {a: math.atan2(cell_xy[a][1] - start[a][1], cell_xy[a][0] - start[a][0])
            for a in ids}
    turn = {a: abs(wrap_angle(head[a] - poses[a].yaw)) for a in ids}
    lead = FINAL_LEG_LEAD_S
    drive = math.radians(TRACK_DRIVE_DEG)

    def bounds(a: str, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Least and most fraction of its leg module ``a`` has driven at times ``t``."""
        la = lengths[a]
        lag = turn[a] / FINAL_LEG_TURN_RATE
        off = max(0.0, turn[a] - drive) / FINAL_LEG_TURN_RATE
        hi = np.minimum(np.clip((t + lead) / t0, 0.0, 1.0),
                        np.clip(TRACK_SPEED_MAX * (t - off) / la, 0.0, 1.0))
        lo = np.minimum(np.clip((t - lag) / t0, 0.0, 1.0), hi)
        return lo, hi

    # grown squares: centres farther apart than this never come within the margin
    reach = (w + margin) * math.sqrt(2.0)
    out = []
    for i, a in enumerate(ids):
        pa, ca = start[a], cell_xy[a]
        for b in ids[i + 1:]:
            pb, cb = start[b], cell_xy[b]
            if segment_distance(pa, ca, pb, cb) >= reach:
                continue
            # the standing configurations: as they stand, turned to their legs where they
            # stand, one at its cell and the other at its pose (judged by
            # _start_leg_penalty: a leg, its end included, against the other's pose)
            now = max(square_overlap((*pa, poses[a].yaw), (*pb, poses[b].yaw), w),
                      square_overlap((*pa, head[a]), (*pb, head[b]), w),
                      square_overlap((*ca, head[a]), (*pb, head[b]), w),
                      square_overlap((*pa, head[a]), (*cb, head[b]), w))
            t_end = t0 + max(turn[a], turn[b]) / FINAL_LEG_TURN_RATE
            t = np.arange(0.0, t_end + dt, dt)
            na = max(2, int(math.ceil(lengths[a] / step)) + 1)
            nb = max(2, int(math.ceil(lengths[b] / step)) + 1)
            # every fraction on a grid of ``step`` that lies within the bounds
            ga = np.linspace(0.0, 1.0, na)[None, :, None]
            gb = np.linspace(0.0, 1.0, nb)[None, None, :]
            lo_a, hi_a = (x[:, None, None] for x in bounds(a, t))
            lo_b, hi_b = (x[:, None, None] for x in bounds(b, t))
            # each interval's own ends as well (a grid may miss a short one)
            ua = np.concatenate([lo_a, hi_a, np.broadcast_to(ga, (len(t), na, 1))], axis=1)
            ub = np.concatenate([lo_b, hi_b, np.broadcast_to(gb, (len(t), 1, nb))], axis=2)
            ok = ((ua >= lo_a - 1e-12) & (ua <= hi_a + 1e-12) & (ub >= lo_b - 1e-12)
                  & (ub <= hi_b + 1e-12) & (ua > 0.0) & (ub > 0.0)
                  & ~((ua >= 1.0) & (ub >= 1.0)))
            if not ok.any():
                continue
            ua, ub = np.broadcast_arrays(ua, ub)
            ua, ub = ua[ok], ub[ok]
            dx = (pb[0] + ub * (cb[0] - pb[0])) - (pa[0] + ua * (ca[0] - pa[0]))
            dy = (pb[1] + ub * (cb[1] - pb[1])) - (pa[1] + ua * (ca[1] - pa[1]))
            over = _square_overlaps(dx, dy, head[a], head[b], w)
            if float(over.max()) > max(-margin, now) + 1e-9:
                out.append((a, b))
    return out


def _square_overlaps(dx: np.ndarray, dy: np.ndarray, yaw_a: float, yaw_b: float,
                     width: float) -> np.ndarray:
    """:func:`square_overlap` of a square at the origin turned by ``yaw_a`` and one at
    each ``(dx, dy)`` [m] turned by ``yaw_b`` (both ``width`` wide), vectorised."""
    half = 0.5 * width
    rel = yaw_b - yaw_a
    hb = half * (abs(math.cos(rel)) + abs(math.sin(rel)))
    best = np.full(np.shape(dx), np.inf)
    for yaw in (yaw_a, yaw_b):
        c, sn = math.cos(yaw), math.sin(yaw)
        for nx, ny in ((c, sn), (-sn, c)):
            best = np.minimum(best, half + hb - np.abs(dx * nx + dy * ny))
    return best


def _untimed_legs(cell_xy: Mapping[str, tuple[float, float]],
                  goal_xy: Mapping[str, tuple[float, float]], room: float
                  ) -> dict[tuple[str, str], float]:
    """Pairs of straight final legs (``cell_xy[a]`` -> ``goal_xy[a]``, world frame [m])
    that no order keeps ``min(room, their goals' distance, their cells' distance)``
    apart, each with the most centre distance [m] an order keeps (:func:`_leg_order_gap`).

    :func:`_final_leg_waits` times two close legs one after the other, the other module
    standing on its cell while the first drives and at its goal once it is done, so a
    pair is untimed when each order fails: a leg passes the other's cell while it waits
    there, or the other's goal once it is there (the comb 5 x 6 of test_scale_e2e with
    t11d's final-leg windows, 1e882c5, stage 3: staging m23's goal cell lay 0.226 m from
    its staging pose, the cells nearer walled by a module held at its staging pose, and
    its leg passed 0.064 m from m24's cell and 0.097 m from m24's staging pose, where the
    pair must keep 0.118 m; both drove together: contact m23/m24 0.07 mm at 70.51 s)."""
    ids = sorted(a for a in cell_xy if math.dist(cell_xy[a], goal_xy[a]) > 1e-12)
    out = {}
    for i, a in enumerate(ids):
        ca, ga = cell_xy[a], goal_xy[a]
        for b in ids[i + 1:]:
            cb, gb = cell_xy[b], goal_xy[b]
            d = min(room, math.dist(ga, gb), math.dist(ca, cb))
            if segment_distance(ca, ga, cb, gb) >= d:
                continue
            gap = _leg_order_gap((ca, ga), (cb, gb))
            if gap < d:
                out[(a, b)] = gap
    return out


def _leg_order_gap(leg_a: tuple[tuple[float, float], tuple[float, float]],
                   leg_b: tuple[tuple[float, float], tuple[float, float]]) -> float:
    """The most centre distance [m] that one of the two orders of two straight legs
    (``(start, end)``, [m]) keeps: the first drives while the other stands at its start,
    then the other drives while the first stands at its end."""
    (ca, ga), (cb, gb) = leg_a, leg_b
    a_first = min(point_segment_distance(cb, ca, ga), point_segment_distance(ga, cb, gb))
    b_first = min(point_segment_distance(ca, cb, gb), point_segment_distance(gb, ca, ga))
    return max(a_first, b_first)


def _final_leg_blockers(lay: _Layout, goals_xy: dict[str, tuple[float, float]],
                        radius: float, s: NavSettings):
    """``(module, cell) -> (a fixed module is hit, the movable ones hit)`` for the straight
    final leg of ``module`` from ``cell``'s centre to its goal pose (every module drives
    it after the schedule, off the grid): a module is hit when its centre comes closer to
    the leg than ``min(w sqrt 2, its distance from the goal)`` (on the leg two bodies
    never overlap, whatever their headings; a module the goal stands close to, as a
    parent beside its pre-dock pose, is approached from outside). The caller does not
    count modules moved aside (they park clear of every final leg, :func:`_park_aside`).

    The grid does not see these legs: bench_scale random 30 seed 9, stage 1, the pair
    carrying m29 got a goal cell 0.47 m from its pre-dock pose (the cells round it were
    blocked by modules standing within the pair's clearance) and its final leg ran
    straight through the idle m21 (contact 0.23 mm, the stage never ended)."""
    body = s.module_width * math.sqrt(2.0)
    near: dict[str, list[tuple[str, float, float, float]]] = {}
    for m, (gx, gy) in goals_xy.items():
        near[m] = [(o, p.x, p.y, min(body, math.hypot(p.x - gx, p.y - gy)))
                   for o, p in lay.obstacles.items()
                   if math.hypot(p.x - gx, p.y - gy) < radius + 2.0 * lay.scene.c + body]
    cache: dict[tuple[str, Cell], tuple[bool, set[str]]] = {}

    def blockers(m: str, cell: Cell) -> tuple[bool, set[str]]:
        key = (m, cell)
        if key not in cache:
            a = lay.scene.center(cell)
            g = goals_xy[m]
            hit = {o for o, x, y, lim in near[m]
                   if point_segment_distance((x, y), a, g) < lim - 1e-9}
            fixed_hit = any(o in lay.fixed for o in hit)
            cache[key] = (fixed_hit, {o for o in hit if o not in lay.fixed})
        return cache[key]

    return blockers


def turn_clearance(width: float = MODULE_WIDTH) -> float:
    """Centre distance [m] at which two modules may both turn in place without touching,
    whatever their headings: ``w sqrt 2`` (two corner radii) plus 5 mm of path error."""
    return width * math.sqrt(2.0) + 0.005


def _start_leg_penalty(scene: _Scene, moving: Mapping[str, Pose2D],
                       obstacles: Mapping[str, Pose2D], s: NavSettings):
    """``(module, cell) -> penalty`` [m] of a start cell whose straight leg from the
    module's pose to the cell centre comes closer to another module's current centre than
    ``min(w sqrt 2 + 5 mm, their distance now)`` (two bodies turning in place there may
    touch; issue 11, bench_targets random_12_594393859: m11's start cell lay 0.087 m from
    m5, m11 drove at m5 while m5 turned, and every replan gave the same cells until the
    stage timed out): ``10`` cells, so such a cell is taken only when no other is near.
    Every module counts, the moving ones at their current poses (they all leave their
    poses for their start cells at once). Boxed in on every side, the cell whose leg
    falls shortest of that distance costs least.

    Between a leg and a module of ``moving`` (the stage's planned modules, not those
    moved aside) the distance is ``settings.clearance`` when that is larger: a carried
    pair is planned as its helper's centre with the pair's clearance
    (:func:`plan_carried`), and a leg of a module moved aside for it that passed within
    the pair's reach crossed its carried module, or its sweep as it turned to its first
    cell (random bench targets, the pair just lifted beside an idle module: the moved
    aside module's leg crossed the carried module at 2.3 s; another passed the turning
    pair at 0.12 m).
    """
    body = turn_clearance(s.module_width)
    wide = _leg_room(s)
    pts = {m: (p.x, p.y) for m, p in moving.items()}
    pts.update({o: (p.x, p.y) for o, p in obstacles.items()})
    ids = list(pts)
    xy = np.array([pts[m] for m in ids], dtype=float).reshape(-1, 2)
    reach = s.goal_search_cells * scene.c * 2.0 + wide
    big = 10.0 * scene.c
    near: dict[str, list[tuple[tuple[float, float], float]]] = {}
    cache: dict[tuple[str, Cell], float] = {}

    def pen(a: str, cell: Cell) -> float:
        key = (a, cell)
        if key not in cache:
            p = pts[a]
            if a not in near:   # the modules a leg of this module may pass (once each)
                d = np.hypot(xy[:, 0] - p[0], xy[:, 1] - p[1])
                near[a] = [(pts[ids[i]], wide if (a in moving or ids[i] in moving) else body)
                           for i in np.nonzero(d < reach)[0] if ids[i] != a]
            c = scene.center(cell)
            short = max((min(r, math.hypot(q[0] - p[0], q[1] - p[1]))
                         - point_segment_distance(q, p, c) for q, r in near[a]), default=0.0)
            # graded: boxed in on every side, the leg that squeezes least
            cache[key] = big * (1.0 + short / body) if short > 1e-9 else 0.0
        return cache[key]

    return pen


def _reachable_goal_cell(lay: _Layout, m: str, start: Cell, goal: tuple[float, float],
                         taken: set[Cell], radius: float, s: NavSettings) -> Cell:
    """The cell nearest ``goal`` [m] within ``radius`` that is reachable from ``start``
    over non-fixed cells, not in ``taken``, and from whose centre the straight leg to the
    goal keeps every module's centre at least ``min(w * sqrt 2, its distance from the
    goal)`` away (bodies never overlap on it, whatever their headings; a module the goal
    stands close to, as a helper's pick-up pose by its module, is approached from outside).

    Raises:
        UnreachableGoalError: no such cell (the goal is walled off by fixed structures).
    """
    scene, fixed_cells = lay.scene, lay.fixed_cells
    seen = {start}
    todo = [start]
    while todo:
        x, y = todo.pop()
        for c in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if (0 <= c[0] < scene.W and 0 <= c[1] < scene.H and c not in fixed_cells
                    and c not in seen):
                seen.add(c)
                todo.append(c)
    body = s.module_width * math.sqrt(2.0)
    gx, gy = goal
    for _, cell in scene.near(gx, gy, radius):
        if cell not in seen or cell in taken:
            continue
        a = scene.center(cell)
        if all(point_segment_distance((p.x, p.y), a, (gx, gy))
               >= min(body, math.hypot(p.x - gx, p.y - gy)) - 1e-9
               for o, p in lay.obstacles.items()):
            return cell
    raise UnreachableGoalError(f"module {m!r}: its goal ({gx:.3f}, {gy:.3f}) is walled off "
                               "by fixed structures")


def _park_aside(lay: _Layout, moving: Mapping[str, tuple[Pose2D, Pose2D]],
                goals_xy: dict[str, tuple[float, float]], start_cells: dict[str, Cell],
                goal_cells: dict[str, Cell], s: NavSettings,
                keep: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                slides: Mapping[str, Segment] | None = None):
    """Start and parking cells of the modules moved aside: parking cells are free, no
    moving module's start or goal cell, on none of their shortest paths, not within
    ``clearance`` of a final leg to a goal pose and, with a footprint ``keep``, outside
    its grown convex hull (:func:`_keep_out_cells`), at least ``slide_clearance`` from
    every slide of ``slides``, and reachable from the module's own start cell. The search
    for a parking cell widens (3, 6, 12, ... x ``goal_search_cells``) until every module
    has one.

    Modules moved aside that reach too few such cells over free cells (walled in by
    movable modules: a dense field of idle and staged modules on a carried pair's wide
    grid; fewer cells to park on in the free part they start in than modules) have, for
    as many of them as cells are missing, the movable modules on their cheapest way out
    of that part (:func:`_cheapest_crossing_to` to the nearest cell where they may park)
    moved aside too (added to ``lay.aside``); nothing parks on those ways (the walled-in
    modules leave by them), and the cells are chosen again (issue 16, bench_scale random
    50 seed 0, stage 1: m37 moved aside from the carried m28's pre-dock pose, walled in
    on the pair's grid; "no free grid cell within 8.883 m of its parking area", the
    stage's modules drove without paths into contacts).

    Returns ``(agents_start, agents_goal, blocked)``: start/goal cells of every MAPF agent
    and the cells blocked for the search (fixed and remaining movable obstacles).

    Raises:
        UnreachableGoalError: a module moved aside is walled in by fixed modules, or no
            distinct cells are left.
    """
    keep_out = _keep_out_cells(lay.scene, keep, s.clearance) if keep else set()
    ways: set[Cell] = set()
    while True:   # lay.aside grows on every round
        out = _park_cells(lay, moving, goals_xy, start_cells, goal_cells, s, keep_out,
                          slides, ways)
        if isinstance(out, tuple):
            return out
        lay.aside |= out


def _park_cells(lay: _Layout, moving: Mapping[str, tuple[Pose2D, Pose2D]],
                goals_xy: dict[str, tuple[float, float]], start_cells: dict[str, Cell],
                goal_cells: dict[str, Cell], s: NavSettings, keep_out: set[Cell],
                slides: Mapping[str, Segment] | None, ways: set[Cell]):
    """One try of :func:`_park_aside` with the modules of ``lay.aside``: its result, or
    the movable modules (none of ``lay.aside``) to move aside as well for the walled-in
    ones (a non-empty set; their ways out are added to ``ways``, where nothing parks)."""
    scene = lay.scene
    mc = lay.movable_cells()
    agents_start = dict(start_cells)
    agents_goal = dict(goal_cells)
    blocked = lay.fixed_cells | set(mc)
    if not lay.aside:
        return agents_start, agents_goal, blocked
    radius = s.goal_search_cells * scene.c
    taken = set(goal_cells.values()) | set(start_cells.values())
    needed = set()
    g = Grid(scene.W, scene.H, blocked)
    for m in moving:
        d = g.distances(goal_cells[m])
        a0 = start_cells[m]
        if a0 in d:  # one shortest path (descending the distance field)
            cur = a0
            while d[cur] > 0:
                needed.add(cur)
                cur = min(g.neighbors(cur), key=lambda n: (d.get(n, 1 << 30), n))
    legs = [(scene.center(goal_cells[m]), goals_xy[m]) for m in moving]

    segs = list((slides or {}).values())

    def park_ok(a, cell):
        if (cell in blocked or cell in taken or cell in needed or cell in keep_out
                or cell in ways):
            return False
        cc = scene.center(cell)
        return (all(point_segment_distance(cc, a0, b0) >= s.clearance for a0, b0 in legs)
                and all(point_segment_distance(cc, a0, b0) >= s.slide_clearance
                        for a0, b0 in segs))

    ox = {o: (lay.obstacles[o].x, lay.obstacles[o].y) for o in lay.aside}
    # a start cell no closer than _leg_room to a moving module's leg to its own start
    # cell (the module moved aside stands there while that leg runs, _to_world), when
    # there is one: bench_scale random 50 seed 0, stage 1, m37 waited on the cell beside
    # the carried pair's 0.31 m leg, the carried m28 ran into it (6 mm overlap)
    room = _leg_room(s)
    first_legs = [((cur.x, cur.y), scene.center(start_cells[m]))
                  for m, (cur, _) in moving.items()]
    pen = _start_leg_penalty(scene, {m: cur for m, (cur, _) in moving.items()},
                             lay.obstacles, s)

    def off_legs(cell: Cell) -> bool:
        cc = scene.center(cell)
        return all(point_segment_distance(cc, p, q) >= room for p, q in first_legs)

    try:
        starts_aside = _assign(scene, ox, lambda a, cell: cell not in blocked
                               and cell not in taken and off_legs(cell),
                               lambda cell: 0.0, radius, "current pose", leg_penalty=pen)
    except UnreachableGoalError:
        starts_aside = _assign(scene, ox,
                               lambda a, cell: cell not in blocked and cell not in taken,
                               lambda cell: 0.0, radius, "current pose", leg_penalty=pen)
    # a parking cell the module can reach from its start cell (bench_scale random 30
    # seed 0, stage 2: m22, moved aside, parked on a cell walled off from its start; the
    # search failed and the stage's helpers drove without paths into a contact)
    reachable: dict[Cell, set[Cell]] = {}

    def can_reach(a: str, cell: Cell) -> bool:
        c0 = starts_aside[a]
        if c0 not in reachable:
            reachable[c0] = set(g.distances(c0))
        return cell in reachable[c0]

    # walled in by movable modules (in a part of the free cells with fewer cells to park
    # on than modules moved aside starting there): those on the cheapest way out of that
    # part go aside too
    more: set[str] = set()
    parts: dict[frozenset, list[str]] = {}
    for a in sorted(ox):
        c0 = starts_aside[a]
        can_reach(a, c0)
        parts.setdefault(frozenset(reachable[c0]), []).append(a)
    for part, mods in parts.items():
        room_left = sum(1 for cell in part if park_ok(mods[0], cell))
        for a in mods[room_left:] if room_left < len(mods) else ():
            way = _cheapest_crossing_to(scene.W, scene.H, lay.fixed_cells, mc, starts_aside[a],
                                        lambda cell, a=a: cell not in part and park_ok(a, cell))
            if way is None:
                x, y = ox[a]
                raise UnreachableGoalError(
                    f"module {a!r}: moved aside from ({x:.3f}, {y:.3f}), walled in by "
                    "fixed modules (no parking cell it can reach)")
            for cell in way:
                more |= mc.get(cell, set())
            ways.update(way)
    if more:
        return more
    reach = 3 * radius
    while True:
        try:
            parks = _assign(scene, ox, lambda a, cell: park_ok(a, cell) and can_reach(a, cell),
                            lambda cell: 0.0, reach, "parking area")
            break
        except UnreachableGoalError:
            if reach > scene.c * (scene.W + scene.H):
                raise
            reach *= 2
    agents_start.update(starts_aside)
    agents_goal.update(parks)
    return agents_start, agents_goal, blocked


def _solve_grid(grid: Grid, agents_start: dict[str, Cell], agents_goal: dict[str, Cell],
                s: NavSettings, clock=None):
    """The MAPF schedule of every agent (:func:`~smores_assembly.navigation.mapf.solve`
    with the settings' algorithm and bounds; LaCAM for ``lacam_min_agents`` agents or
    more)."""
    algorithm = s.algorithm
    if len(agents_start) >= s.lacam_min_agents and s.k_robust <= 1:
        algorithm = "lacam"
    return solve(grid, agents_start, agents_goal, algorithm=algorithm, w=s.suboptimality,
                 k_robust=s.k_robust, max_expansions=s.max_expansions,
                 max_low_level_expansions=s.max_low_level_expansions,
                 time_limit_s=s.time_limit_s, fallback=s.fallback_prioritized,
                 tight_w=s.tight_suboptimality if s.tight_suboptimality < s.suboptimality
                 else None, clock=clock, lacam_expansions=s.lacam_expansions)


def _to_world(lay: _Layout, moving: Mapping[str, tuple[Pose2D, Pose2D]], sol,
              agents_start: dict[str, Cell], agents_goal: dict[str, Cell], s: NavSettings):
    """Timed world waypoints of every agent: pose -> start cell centre (all by ``t0``),
    the schedule at one step per ``cell_size / nominal_speed``, goal cell centre -> goal
    pose (moved-aside modules end on their parking cell centre, heading kept).

    The legs to the start cells are off the grid and run at once. A module of
    ``moving`` whose leg comes closer than :func:`_leg_room` to the leg of a module moved
    aside waits at its pose until that module has driven its leg (at ``nominal_speed``,
    then it waits on its cell): the module moved aside makes way first (a carried pair
    just lifted turned to its first cell while a module moved aside for it passed at
    0.15 m, within the pair's reach: random bench targets, closed loop in SimWorld).
    The final legs run after the schedule, timed by :func:`_final_leg_waits` so that no
    two of them come too close (a module waits on its last cell for another's leg).

    Returns ``(paths, dt [s per step], t0 [s])``.
    """
    scene, obstacles, aside = lay.scene, lay.obstacles, lay.aside
    v = s.nominal_speed
    dt = scene.c / v
    T = sol.makespan
    current = {m: cur for m, (cur, _) in moving.items()}
    current.update({o: obstacles[o] for o in aside})
    final = {m: goal for m, (_, goal) in moving.items()}
    for o in aside:
        cx, cy = scene.center(agents_goal[o])
        final[o] = Pose2D(cx, cy, obstacles[o].yaw)
    legs = {a: ((current[a].x, current[a].y), scene.center(agents_start[a]))
            for a in sol.paths}
    leg_t = {a: math.dist(*legs[a]) / v for a in sol.paths}
    room = _leg_room(s)
    first = {b for b in sol.paths if b in aside}
    wait: dict[str, float] = {}
    for a in sorted(set(sol.paths) - first):
        w = max((leg_t[b] for b in first if segment_distance(*legs[a], *legs[b]) < room),
                default=0.0)
        if w > 0.0:
            wait[a] = w
    leaders = {b for b in first if any(segment_distance(*legs[a], *legs[b]) < room
                                       for a in wait)}
    t0 = max(max((wait.get(a, 0.0) + leg_t[a] for a in sol.paths), default=0.0),
             max(leg_t.values(), default=0.0))
    t_end = t0 + T * dt
    last_xy = {a: scene.center(cells[min(T, len(cells) - 1)]) for a, cells in sol.paths.items()}
    paths: dict[str, list[tuple[float, Pose2D]]] = {}
    cell_yaw: dict[str, float] = {}
    for a, cells in sol.paths.items():
        cur = current[a]
        wp: list[tuple[float, Pose2D]] = [(0.0, cur)]
        if a in wait:
            wp.append((wait[a], cur))
        yaw = cur.yaw
        px, py = cur.x, cur.y
        for k in range(T + 1):
            cell = cells[k] if k < len(cells) else cells[-1]
            cx, cy = scene.center(cell)
            if math.hypot(cx - px, cy - py) > 1e-12:
                yaw = math.atan2(cy - py, cx - px)
            if k == 0 and a in leaders and leg_t[a] < t0:
                wp.append((leg_t[a], Pose2D(cx, cy, yaw)))
            wp.append((t0 + k * dt, Pose2D(cx, cy, yaw)))
            px, py = cx, cy
        paths[a] = wp
        cell_yaw[a] = yaw
    leg_wait = _final_leg_waits(last_xy, {a: (final[a].x, final[a].y) for a in sol.paths},
                                v, turn_clearance(s.module_width), FINAL_LEG_MARGIN_S,
                                cell_yaw=cell_yaw, turn_rate=FINAL_LEG_TURN_RATE,
                                lead_s=FINAL_LEG_LEAD_S)
    for a, wp in paths.items():
        goal = final[a]
        px, py = wp[-1][1].x, wp[-1][1].y
        leg = math.hypot(goal.x - px, goal.y - py)
        if leg > 1e-12:
            w = leg_wait.get(a, 0.0)
            if w > 0.0:
                wp.append((t_end + w, wp[-1][1]))
            wp.append((t_end + w + leg / v, goal))
        else:
            wp[-1] = (wp[-1][0], goal)
        paths[a] = _compress(wp)
    return paths, dt, t0


#: Slack [s] a final leg that waits for another one (:func:`_final_leg_waits`) adds to
#: that leg's planned end: the module ahead may trail its timed path a little (its last
#: in-place turn), and it regulates onto its goal heading after the path.
FINAL_LEG_MARGIN_S = 1.0

#: How much earlier [s] than its timed start a module may set off on its final leg: the
#: docking controller's path tracking steers at the path position ``nav_lookahead_s``
#: (1 s) ahead, so a module dwelling on its cell leaves it up to that much early.
FINAL_LEG_LEAD_S = 1.0

#: Turn rate [rad/s] that :func:`_final_leg_waits` assumes for a module turning in place
#: on its last cell to the heading of its final leg (the docking controller's ``w_max``,
#: 1.5 rad/s): it sets off that much later than its timed start.
FINAL_LEG_TURN_RATE = 1.5

#: Steps [s] in which :func:`_final_leg_waits` tries the wait of a leg that must wait for
#: another one (the least wait that keeps the pair apart for every start in the windows).
WAIT_STEP_S = 0.25

#: How often :func:`_final_leg_waits` times one pair of legs before it gives the pair up
#: (left as it is). Legs that each must wait for the next in a cycle (a ring of modules,
#: each one's goal beside the next one's cell) never settle: every timing of one pair
#: brings the next pair too close again. bench_scale comb 100 seed 0, stage 1: a ring
#: of 8 legs took the loop through its 4 n^2 rounds (67 legs: 18,000 rounds, the waits
#: grown past 1,000 s, more than 40 CPU minutes, contacts left all the same); with this
#: bound 1 s and waits up to 59 s. Timings that settle time a pair at most 4 times on
#: every stage of the bundled scenarios, comb 25 and 50 and random 30 and 50 targets
#: (``bench.bench_nav_stage``): the bound changes nothing there.
MAX_PAIR_TIMINGS = 8


def _final_leg_waits(cell_xy: Mapping[str, tuple[float, float]],
                     goal_xy: Mapping[str, tuple[float, float]], speed: float, room: float,
                     margin_s: float, dt: float = 0.05,
                     cell_yaw: Mapping[str, float] | None = None, turn_rate: float = 0.0,
                     lead_s: float = 0.0) -> dict[str, float]:
    """How long [s after the schedule's end] each agent waits on its last grid cell before
    its straight final leg (cell centre -> goal pose), so that no two final legs bring
    their modules closer than ``min(room, their goals' distance, their cells' distance)``.

    Every agent drives its final leg at once after the schedule, off the grid, and nobody
    checked two legs against each other: a staging module's goal lay 0.072 m from the cell
    that the active stage's module left at the same moment (bench_reconfig
    reconf_7_661718012 reuse, stage 4: contact m0/m6 0.28 mm; reconf_7_651328766, two
    staging modules: m0/m6 0.24 mm). A module stands on its cell until its leg starts and
    at its goal once its leg is done. The legs are timed pair by pair, earliest contact
    first: of two legs that come too close, one starts after the other ends, the order
    that keeps that pair apart and ends sooner; every pair is judged again with the new
    timing (a module waiting on its cell is in the way of a leg that passed its cell after
    it had left: the comb 5 x 6 of test_scale_e2e, m19/m25), until no pair comes too
    close; a pair no order keeps apart keeps what the better order keeps
    (:func:`_leg_order_gap`; driven together it kept less), and one that even so
    cannot be timed, or that was timed ``MAX_PAIR_TIMINGS`` times already (a cycle of
    legs, each waiting for the next, never settles), is left as it is. ``speed`` [m/s]:
    the legs' speed.

    A module does not set off exactly at its timed start: it may leave up to ``lead_s``
    [s] early (path tracking looks ahead), and it first turns in place on its cell from
    ``cell_yaw[a]`` [rad, world frame: the heading it arrived with] to its leg's heading,
    which delays it by up to that angle / ``turn_rate`` [rad/s] (0: no delay). Two legs
    that run at the same time must keep apart for every pair of real starts within those
    windows (issue 11, bench_targets random_10_974250758 stage 1: m8 set off 0.84 s early
    on a leg turned 43 deg from its heading while m2 still turned 143 deg in place on its
    cell, 0.095 m from m8's goal; timed together the legs kept 0.12 m, driven so 0.100 m,
    contact 0.38 mm). A leg that waits for another starts ``margin_s`` after the other's
    latest end (its timed end plus its turn) plus its own ``lead_s``.
    """
    agents = sorted(a for a in cell_xy
                    if math.dist(cell_xy[a], goal_xy[a]) > 1e-12)
    dur = {a: math.dist(cell_xy[a], goal_xy[a]) / speed for a in agents}
    lag = {a: 0.0 for a in agents}
    if cell_yaw is not None and turn_rate > 0.0:
        for a in agents:
            (cx, cy), (gx, gy) = cell_xy[a], goal_xy[a]
            turn = abs(wrap_angle(math.atan2(gy - cy, gx - cx) - cell_yaw[a]))
            lag[a] = turn / turn_rate
    need: dict[tuple[str, str], float] = {}
    for i, a in enumerate(agents):
        for b in agents[i + 1:]:
            d = min(room, math.dist(goal_xy[a], goal_xy[b]),
                    math.dist(cell_xy[a], cell_xy[b])) - 1e-9
            # legs farther apart than that never come too close, whatever their timing
            if segment_distance(cell_xy[a], goal_xy[a], cell_xy[b], goal_xy[b]) < d:
                need[(a, b)] = d
    start = {a: 0.0 for a in agents}
    ends = {a: np.asarray(cell_xy[a], float) for a in agents}
    vecs = {a: np.asarray(goal_xy[a], float) - ends[a] for a in agents}

    def contact(a: str, b: str, st: Mapping[str, float]) -> float | None:
        """First instant [s, a's timed clock] the pair comes too close with the legs
        timed to start at ``st``, for any real starts within the windows."""
        lo = st[b] - lead_s - (st[a] + lag[a])
        hi = st[b] + lag[b] - (st[a] - lead_s)
        offs = np.arange(lo, hi + dt, dt)[:, None]       # b's real start - a's [s]
        tau = np.arange(min(0.0, lo), max(dur[a], hi + dur[b]) + dt, dt)[None, :]
        ua = np.clip(tau / dur[a], 0.0, 1.0)
        ub = np.clip((tau - offs) / dur[b], 0.0, 1.0)
        dx = (ends[a][0] + ua * vecs[a][0]) - (ends[b][0] + ub * vecs[b][0])
        dy = (ends[a][1] + ua * vecs[a][1]) - (ends[b][1] + ub * vecs[b][1])
        close = np.hypot(dx, dy) < need[(a, b)]
        if not close.any():
            return None
        return st[a] + float(tau[0, np.nonzero(close.any(axis=0))[0][0]])

    given_up: set[tuple[str, str]] = set()
    relaxed: set[tuple[str, str]] = set()
    timed: dict[tuple[str, str], int] = {}  # pair -> how often it was timed
    # a pair's first contact depends only on its two starts and its ``need``: it is kept
    # and computed again only when one of those changed (with every pair judged on every
    # round, a stage of 100 modules staging at once spent minutes here)
    pairs_of: dict[str, list[tuple[str, str]]] = {a: [] for a in agents}
    for pair in need:
        pairs_of[pair[0]].append(pair)
        pairs_of[pair[1]].append(pair)
    first_contact: dict[tuple[str, str], float | None] = {}
    stale: set[tuple[str, str]] = set(need)
    for _ in range(4 * len(agents) ** 2 + 1):
        for pair in stale:
            if pair not in given_up:
                first_contact[pair] = contact(pair[0], pair[1], start)
        stale = set()
        hits = [(t, a, b) for (a, b), t in first_contact.items() if t is not None]
        if not hits:
            break
        _t, a, b = min(hits)
        best = None
        for first, then in ((a, b), (b, a)):
            after = start[first] + lag[first] + dur[first] + margin_s + lead_s
            # the least wait that keeps the pair apart, up to ``then`` starting after
            # ``first``'s latest end (only that far when the windows are empty)
            waits = [after]
            if lag[first] + lag[then] + 2.0 * lead_s > 0.0:
                n_try = int((after - start[then]) / WAIT_STEP_S)
                waits = [start[then] + WAIT_STEP_S * j for j in range(1, n_try + 1)] + [after]
            for w_then in waits:
                st = dict(start)
                st[then] = max(st[then], w_then)
                if contact(a, b, st) is None:
                    end = st[then] + dur[then]
                    if best is None or end < best[0] - 1e-9:
                        best = (end, st)
                    break
        if best is None:
            # no order keeps the pair ``need`` apart: it keeps what the better order
            # keeps, once (driven together it kept less: the comb 5 x 6 with the windows,
            # stage 3 as chosen again by :func:`_choose_cells`, m19/m25: m19's goal
            # 0.082 m from m25's cell, m25's leg 0.117 m from m19's cell; together they
            # touched in the kinematic world)
            gap = _leg_order_gap((cell_xy[a], goal_xy[a]), (cell_xy[b], goal_xy[b]))
            if (a, b) in relaxed or not 0.0 < gap - 1e-6 < need[(a, b)]:
                given_up.add((a, b))
                del first_contact[(a, b)]
            else:
                relaxed.add((a, b))
                need[(a, b)] = gap - 1e-6
                stale.add((a, b))
        elif timed.get((a, b), 0) >= MAX_PAIR_TIMINGS:
            # a cycle of legs that never settles (MAX_PAIR_TIMINGS): left as it is
            given_up.add((a, b))
            del first_contact[(a, b)]
        else:
            timed[(a, b)] = timed.get((a, b), 0) + 1
            moved = [m for m in agents if best[1][m] != start[m]]
            start = best[1]
            for m in moved:
                stale.update(pairs_of[m])
    return {a: t for a, t in start.items() if t > 0.0}


def _leg_room(s: NavSettings) -> float:
    """Distance [m] two legs to start cells keep when they run at once
    (:func:`_to_world`): two corner radii and 5 mm (:func:`turn_clearance`), or the
    search's ``clearance`` when that is larger (a carried pair's, :func:`plan_carried`)."""
    return max(turn_clearance(s.module_width), s.clearance)


#: A module this close [m] to its goal stays there: a fixed obstacle of the search
#: (:func:`plan_stage`), or, when it must make way, an agent that keeps its cell and
#: drives straight to its goal when it never leaves the cell (:func:`_to_world`).
STAY_LEG = 0.02

#: How many modules standing at their goals :func:`plan_stage` releases one by one
#: (agents instead of fixed obstacles) before it plans all of them as agents.
STAY_RELEASES = 3

def at_goal(cur: Pose2D, goal: Pose2D) -> bool:
    """True when a module at ``cur`` stands at ``goal`` (centres within
    :data:`STAY_LEG`): it stays there, an obstacle of the search."""
    return math.hypot(goal.x - cur.x, goal.y - cur.y) <= STAY_LEG


def stay_path(cur: Pose2D, goal: Pose2D, speed: float) -> list[tuple[float, Pose2D]]:
    """The timed path of a module that stays at its goal: straight from ``cur`` to
    ``goal`` at ``speed`` [m/s] (at least 0.05 s)."""
    return [(0.0, cur), (max(cur.distance_to(goal) / speed, 0.05), goal)]


#: The search statistics of a plan with nothing to search (every module at its goal).
_NO_SEARCH = {"algorithm": "none", "cost": 0, "makespan": 0, "lower_bound": 0,
              "runtime_s": 0.0, "high_level_expanded": 0, "low_level_expanded": 0,
              "step_s": 0.0, "t0_s": 0.0, "grid": [0, 0], "notes": []}


def _compress(wp: list[tuple[float, Pose2D]]) -> list[tuple[float, Pose2D]]:
    """Drop inner waypoints of a wait (same pose before and after): keep its two ends."""
    out: list[tuple[float, Pose2D]] = []
    for i, (t, p) in enumerate(wp):
        if 0 < i < len(wp) - 1 and out and out[-1][1] == p and wp[i + 1][1] == p:
            continue
        out.append((t, p))
    return out
