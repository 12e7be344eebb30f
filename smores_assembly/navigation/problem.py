"""The navigation problem of one active stage, from the plan, the tracked poses and the
docking phases: what the navigation node hands to
:func:`smores_assembly.staging.plan_stage_carrying` (no ROS imports, so the whole stage
problem is testable without a ROS graph).

Per action of the active stage (not docked yet):

* without helper: the module moves to its pre-dock pose
  (:func:`~smores_assembly.navigation.stage.clear_predock`), unless it stands aligned on
  its axis beyond the pre-dock pose (a pipelined plan's staging pose,
  :func:`smores_assembly.staging.staging_problem`'s ``direct``: no path, it slides in);
* with helper: the helper moves to its pick-up pose, or, once the module is carried
  (phase NAVIGATE), the pair to its pre-dock pose moved out along the axis until the pair
  can turn there clear of the placed modules
  (:func:`~smores_assembly.navigation.stage.clear_carried_predock`; ``carried``); the
  carried module is a fixed obstacle.

Every dock of the active stage has a **slide**: the segment of its docking axis from the
docked position out to where the moving body starts sliding (the pre-dock goal, the
staging pose a direct module stands at, a carrying helper's pre-dock position). Modules
that may move standing closer than ``slide_clearance`` to a slide are moved aside
(:func:`~smores_assembly.navigation.stage.plan_stage`'s ``slides``; bench_targets
random_12_594393859: m4 stood beside m7's slide-in and nothing moved it).

Fixed obstacles (never moved): the root, modules of earlier stages, modules reported
DOCKED, modules waiting to be carried, direct modules, a reconfiguration's kept modules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Collection, Mapping

import numpy as np

from smores_assembly.docking.control import pair_turn_shift, pickup_pose
from smores_assembly.geometry import Pose2D, point_segment_distance, wrap_angle
from smores_assembly.navigation.stage import (FINAL_LEG_TURN_RATE, NavSettings, Segment,
                                              StagePlan, clear_carried_predock,
                                              clear_predock, pose_at, turn_clearance)
from smores_assembly.reconfigure import with_kept_goals
from smores_assembly.staging import (Rect, StagingSettings, carry_staging_poses,
                                    footprint_to_build, staging_poses, staging_problem)
from smores_assembly.vocabulary import Phase


@dataclass
class NavProblem:
    """One active stage's navigation problem (poses in ``world``, m and rad).

    Attributes:
        moving: module -> (current pose, goal pose) of the modules planned to a goal.
        obstacles: every other tracked module -> its pose.
        fixed: ids of ``obstacles`` never moved.
        missing: modules of the stage without a tracked pose (not planned).
        staging: later-stage modules and helpers -> (current pose, staging pose).
        zones: the active stage's dock zones (staging paths keep out of them).
        direct: active modules that slide straight in from where they stand (no path).
        carried: helper -> (pose, pre-dock pose, carried module) of each carried pair.
        helper_targets: helper -> the module it serves now.
        keep_clear: the footprint still to be built (with ``clear_footprint``), else {}.
        slides: module -> its dock's slide ``((x0, y0), (x1, y1))`` (module docstring).
        backoffs: helper -> (where it stands, where its straight move ends) for every
            helper still backing off from a hand-over (:func:`backing_off`) and every
            lifted pair that first drives straight to where it can turn
            (:func:`pair_turn_moves`); the problem has it where that move ends
            (:func:`wait_for_backoffs` times the plan).
    """

    moving: dict[str, tuple[Pose2D, Pose2D]]
    obstacles: dict[str, Pose2D]
    fixed: set[str]
    missing: list[str]
    staging: dict[str, tuple[Pose2D, Pose2D]] = field(default_factory=dict)
    zones: list[Rect] = field(default_factory=list)
    direct: set[str] = field(default_factory=set)
    carried: dict[str, tuple[Pose2D, Pose2D, str]] = field(default_factory=dict)
    helper_targets: dict[str, str] = field(default_factory=dict)
    keep_clear: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    slides: dict[str, Segment] = field(default_factory=dict)
    backoffs: dict[str, tuple[Pose2D, Pose2D]] = field(default_factory=dict)

    def blockers(self, settings: NavSettings) -> set[str]:
        """Obstacles that must be moved aside for the slides (closer than
        ``slide_clearance`` to a slide they do not own, not fixed)."""
        from smores_assembly.navigation.stage import _slide_blockers
        return _slide_blockers(self.obstacles, self.fixed, self.slides, settings)


def _slide(goal: Pose2D, out: Pose2D) -> Segment:
    return ((goal.x, goal.y), (out.x, out.y))


def _beside(p: tuple[float, float], seg: Segment, clearance: float) -> bool:
    """``p`` projects onto ``seg`` strictly between its ends and lies closer than
    ``clearance`` [m] to it (beside a slide; a point beyond its outer end, a queue on the
    same axis, is not)."""
    (x0, y0), (x1, y1) = seg
    dx, dy = x1 - x0, y1 - y0
    n2 = dx * dx + dy * dy
    if n2 <= 0.0:
        return False
    t = ((p[0] - x0) * dx + (p[1] - y0) * dy) / n2
    if not 0.0 < t < 1.0:
        return False
    return abs((p[0] - x0) * dy - (p[1] - y0) * dx) / math.sqrt(n2) < clearance


def _extension(seg: Segment, standoff: float, eps: float = 1e-3) -> Segment | None:
    """The part of a slide ``(goal, out)`` farther than ``standoff`` [m] from its goal
    (a pre-dock goal moved out along the axis, :func:`clear_predock`, or a module
    sliding in from beyond it); ``None`` when the slide is no longer than that."""
    (x0, y0), (x1, y1) = seg
    d = math.hypot(x1 - x0, y1 - y0)
    if d <= standoff + eps:
        return None
    f = standoff / d
    return ((x0 + f * (x1 - x0), y0 + f * (y1 - y0)), (x1, y1))


def backing_off(plan, stage: int, poses: Mapping[str, Pose2D], docked: Collection[str],
                backoff: float, width: float) -> dict[str, tuple[Pose2D, Pose2D]]:
    """Helper -> (its pose, where its back-off ends) for every helper still backing off
    from its last hand-over.

    After a hand-over the docking controller backs the helper straight off ``backoff``
    [m] before it follows any path (``docking.task``'s DOCKED step; turning flush against
    the module swept its corners into it). A helper counts as still backing off when the
    module it carried last (an action of an earlier stage, or one reported docked) lies
    ahead of it on its heading, less than ``width / 2`` beside it and less than
    ``width + backoff`` ahead (by more than 1 mm): its back-off ends ``width + backoff``
    behind that module's centre, heading kept.
    """
    done = {a.module for a in plan.actions if a.stage < stage} | set(docked)
    last: dict[str, str] = {}
    for a in sorted(plan.actions, key=lambda a: a.stage):
        if a.needs_helper and a.helper and a.module in done:
            last[a.helper] = a.module
    out: dict[str, tuple[Pose2D, Pose2D]] = {}
    for h, m in sorted(last.items()):
        if h not in poses or m not in poses:
            continue
        hp, mp = poses[h], poses[m]
        c, sn = math.cos(hp.yaw), math.sin(hp.yaw)
        ahead = (mp.x - hp.x) * c + (mp.y - hp.y) * sn
        beside = abs(-(mp.x - hp.x) * sn + (mp.y - hp.y) * c)
        back = width + backoff - ahead
        if ahead > 0.0 and beside < 0.5 * width and back > 1e-3:
            out[h] = (hp, Pose2D(hp.x - back * c, hp.y - back * sn, hp.yaw))
    return out


def pair_turn_moves(plan, stage: int, poses: Mapping[str, Pose2D],
                    phases: Mapping[str, Phase], width: float
                    ) -> dict[str, tuple[Pose2D, Pose2D]]:
    """Helper -> (its pose, where its straight move ends) for every carried pair of
    ``stage`` (its module in NAVIGATE) that cannot turn in place where it stands.

    Its path's first act may be a turn, and turning there sweeps the carried module into
    a module within :func:`~smores_assembly.docking.control.pair_turn_clearance` of the
    helper: the docking controller first drives such a pair straight, forward or back,
    to the nearest pose where it can turn (``docking.task.PairRoom``, the rule of
    :func:`~smores_assembly.docking.control.pair_turn_shift` against every other tracked
    module). The stage is planned from where that move ends, and
    :func:`wait_for_backoffs` times the paths after it, as for a back-off (bench_targets
    random_12_326347789 stage 5: h0 lifted m3 0.150 m from the staging m10, its path
    turned it at once, m3 touched m10 0.5 s later, 0.13 mm).
    """
    out: dict[str, tuple[Pose2D, Pose2D]] = {}
    for a in plan.actions:
        h = a.helper
        if (a.stage != stage or not a.needs_helper or not h or h in out
                or phases.get(a.module) is not Phase.NAVIGATE or h not in poses):
            continue
        obs = [(p.x, p.y) for m, p in poses.items() if m not in (h, a.module)]
        shift = pair_turn_shift(poses[h], obs, width)
        if shift:
            out[h] = (poses[h], poses[h].compose(shift, 0.0))
    return out


def wait_for_backoffs(sp: StagePlan, backoffs: Mapping[str, tuple[Pose2D, Pose2D]],
                      speed: float, width: float, margin_s: float = 0.5,
                      dt: float = 0.05) -> StagePlan:
    """The stage plan ``sp`` (planned with each helper of ``backoffs`` where its back-off
    ends, :func:`nav_problem`) timed for the back-offs (issue 11).

    The back-off is a planned motion: it lasts its length at ``speed`` [m/s] plus
    ``margin_s`` (the wheels' ramp), the space it sweeps is the helper's meanwhile, and
    the helper follows no path before it has ended (the docking controller holds the
    helper's path until then). So:

    * when a path of another module comes closer than two corner radii
      (``turn_clearance``) to a back-off segment while it lasts (and closer than where it
      starts), every path of the plan waits the longest back-off at its start (one delay
      for all: the plan's paths stay conflict-free among themselves) and the helper's
      path starts with its back-off (5 of 305 hand-overs of random bench targets had a
      module planned through the space behind the helper while it backed off; planning
      the helper from where its back-off ends alone opened the spot it still stood on to
      the other paths: 2 of 297);
    * else each backing-off helper's own path starts with its back-off and follows,
      shifted by that back-off's duration, when the shifted path comes no closer to any
      other path than the plan had them and than ``turn_clearance`` (else every path
      waits, as above). Timed from the stage's start instead, the helper's path ran on
      while it backed off, and the helper cut across to where its reference had got to:
      bench_targets random_12_69109015 stage 7, h0 turned 45 degrees past the corner of
      m0, which it had just handed over (0.11 mm contact), and in 34 of 44 fetches
      right after a hand-over of random targets the helper ran more than 0.1 m behind
      its path in the kinematic world (``test_helper_backoff_paths``).

    Then the other modules' paths wait for the helpers' turns (:func:`_followers_later`).

    Returns:
        ``sp`` itself (no backing-off helper has a path that moves, and no path comes
        near a back-off), or a copy with the helpers' paths or every path shifted
        (``stats``: ``backoff_wait_s`` for all, ``backoff_delay_s`` helper -> its shift,
        ``backoff_turn_s`` how much later the other paths run).
    """
    out = _timed_backoffs(sp, backoffs, speed, width, margin_s, dt)
    if out is sp:
        return sp
    return _followers_later(out, backoffs, turn_clearance(width), margin_s, dt)


def _first_turn_s(path: list[tuple[float, Pose2D]] | None, end: Pose2D,
                  margin_s: float) -> float:
    """Time [s] a helper needs to turn in place where its back-off ends (``end``, the
    back-off's heading) to the heading of its first leg from there (``path``'s first
    waypoint away from ``end`` after reaching it): the angle at ``FINAL_LEG_TURN_RATE``
    (the docking controller's ``w_max``) plus ``margin_s`` (the wheels' ramp); 0 when it
    does not leave ``end`` or turns less than 1 degree."""
    if not path:
        return 0.0
    at_end = [i for i, (_, p) in enumerate(path) if p.distance_to(end) <= 1e-3]
    if not at_end:
        return 0.0
    nxt = next((p for _, p in path[at_end[0]:] if p.distance_to(end) > 1e-3), None)
    if nxt is None:
        return 0.0
    angle = abs(wrap_angle(math.atan2(nxt.y - end.y, nxt.x - end.x) - end.yaw))
    if angle < math.radians(1.0):
        return 0.0
    return angle / FINAL_LEG_TURN_RATE + margin_s


def _followers_later(sp: StagePlan, backoffs: Mapping[str, tuple[Pose2D, Pose2D]],
                     room: float, margin_s: float, dt: float) -> StagePlan:
    """``sp`` (timed for the back-offs) with every moving path but the backing-off
    helpers' waiting at its start as long as the longest turn in place a helper needs
    where its back-off ends before its first leg (:func:`_first_turn_s`).

    The stage is planned from where the back-off ends with the helper's heading kept, so
    its first leg had no time for that turn: the helper turns there (the docking
    controller turns towards its path's reference while it drives) and runs up to that
    long behind its path, while the modules planned after it ran on schedule
    (bench_targets seed 56 random_12_24688286 stage 7: h0's first leg needed a 147
    degree turn, it fell 0.04 m behind and cut the corner, and m3, planned one cell
    behind it in the same column, touched it, 0.21 mm). Holding the helper where its
    back-off ends for the turn does not do: its turn in place there swept into a placed
    module beside it (m8 at 0.105 m, the same target: stuck, stage 7 failed); so the
    others run later instead. Kept only when the helper, should it keep to its path,
    comes no closer to a delayed path than ``room`` and than the plan had them (sampled
    every ``dt`` [s]); else ``sp`` unchanged."""
    turn = {h: _first_turn_s(sp.paths.get(h), end, margin_s)
            for h, (_start, end) in backoffs.items()}
    late = max(turn.values(), default=0.0)
    if late <= 0.0:
        return sp
    helpers = [h for h in backoffs if _moves(sp.paths.get(h))]
    later = {m: [(0.0, p[0][1])] + [(t + late, q) for t, q in p]
             for m, p in sp.paths.items() if m not in backoffs and _moves(p)}
    if not helpers or not later:
        return sp
    end = max(p[-1][0] for p in list(sp.paths.values()) + list(later.values()) if p)
    ts = np.arange(0.0, end + dt, dt)
    for h in helpers:
        xy = _xy_at(sp.paths[h], ts)
        for m, p in later.items():
            d_new = np.hypot(*(xy - _xy_at(p, ts)).T)
            d_old = np.hypot(*(xy - _xy_at(sp.paths[m], ts)).T)
            if np.any((d_new < room) & (d_new < d_old - 1e-3)):
                return sp
    stats = dict(sp.stats)
    stats["backoff_turn_s"] = late
    return replace(sp, paths={**sp.paths, **later}, stats=stats)


def _timed_backoffs(sp: StagePlan, backoffs: Mapping[str, tuple[Pose2D, Pose2D]],
                    speed: float, width: float, margin_s: float, dt: float) -> StagePlan:
    """:func:`wait_for_backoffs` without :func:`_followers_later`."""
    if not backoffs or not sp.paths:
        return sp
    delay = {h: start.distance_to(end) / speed + margin_s
             for h, (start, end) in backoffs.items()}
    wait = max(delay.values())
    room = turn_clearance(width)
    n = int(wait / dt) + 1
    segs = [((a.x, a.y), (b.x, b.y)) for a, b in backoffs.values()]

    def near(p: Pose2D) -> float:
        return min(point_segment_distance((p.x, p.y), a, b) for a, b in segs)

    conflict = False
    for m, path in sp.paths.items():
        if m in backoffs or not path:
            continue
        d0 = near(path[0][1])
        for i in range(1, n + 1):
            d = near(pose_at(path, i * dt))
            # coming towards a back-off (one standing beside it already does not move
            # closer by waiting)
            if d < room and d < d0 - 1e-3:
                conflict = True
                break
        if conflict:
            break
    if not conflict:
        shifted = {h: _delayed(sp.paths[h], backoffs[h][0], delay[h]) for h in backoffs
                   if _moves(sp.paths.get(h))}
        if not shifted:
            return sp
        if _keeps_clear(sp.paths, shifted, room, dt):
            stats = dict(sp.stats)
            stats["backoff_delay_s"] = {h: delay[h] for h in sorted(shifted)}
            return replace(sp, paths={**sp.paths, **shifted}, stats=stats)
    paths: dict[str, list[tuple[float, Pose2D]]] = {}
    for m, path in sp.paths.items():
        if not path:
            paths[m] = path
            continue
        first = backoffs[m][0] if m in backoffs else path[0][1]
        paths[m] = [(0.0, first)] + [(t + wait, p) for t, p in path]
    stats = dict(sp.stats)
    stats["t0_s"] = stats.get("t0_s", 0.0) + wait
    stats["backoff_wait_s"] = wait
    return replace(sp, paths=paths, stats=stats)


def direct_waits(sp: StagePlan, direct: Collection[str], slides: Mapping[str, Segment],
                 clearance: float, margin_s: float, dt: float = 0.05) -> dict[str, float]:
    """How long [s from the stage's start] each module of ``direct`` (sliding straight in
    from where it stands, no path) waits before it slides: until no moving path of ``sp``
    comes closer than ``clearance`` [m] to its slide any more (``slides``: its docking
    axis from the docked position out to where it stands), plus ``margin_s`` (a module
    may run that far behind its timed path before the navigation replans). Modules
    without a wait are left out.

    The plan holds a direct module as a fixed obstacle where it stands, so the modules it
    moves aside from beside the slide, and any path across the lane, are planned as if it
    stayed there (bench_scale layout, comb 5 x 6, stage 6: the staging m25, 0.081 m beside
    m24's slide, was moved aside and turned in place towards its first cell while m24 slid
    past it: contact 0.05 mm)."""
    out: dict[str, float] = {}
    for d in sorted(direct):
        seg = slides.get(d)
        if seg is None:
            continue
        (ax, ay), (bx, by) = seg
        last = 0.0
        for m, path in sp.paths.items():
            if m == d or not _moves(path):
                continue
            ts = np.arange(0.0, path[-1][0] + dt, dt)
            xy = _xy_at(path, ts)
            ex, ey = bx - ax, by - ay
            ll = ex * ex + ey * ey
            u = np.clip(((xy[:, 0] - ax) * ex + (xy[:, 1] - ay) * ey) / ll, 0.0, 1.0) \
                if ll > 0 else np.zeros(len(ts))
            near = np.hypot(xy[:, 0] - ax - u * ex, xy[:, 1] - ay - u * ey) < clearance
            if near.any():
                last = max(last, float(ts[np.nonzero(near)[0][-1]]))
        if last > 0.0:
            out[d] = last + margin_s
    return out


def _moves(path: list[tuple[float, Pose2D]] | None) -> bool:
    """True when ``path`` has a waypoint away from its first position (by > 1 mm)."""
    if not path:
        return False
    return any(p.distance_to(path[0][1]) > 1e-3 for _, p in path[1:])


def _delayed(path: list[tuple[float, Pose2D]], start: Pose2D, delay: float
             ) -> list[tuple[float, Pose2D]]:
    """``path`` (from where a back-off ends, at t = 0) after that back-off: from
    ``start`` at t = 0 to the path's first pose at ``delay`` [s], then the path shifted
    by ``delay``."""
    return [(0.0, start)] + [(t + delay, p) for t, p in path]


def _xy_at(path: list[tuple[float, Pose2D]], ts: np.ndarray) -> np.ndarray:
    """Planned positions ``(len(ts), 2)`` [m] of ``path`` at the times ``ts`` [s]
    (:func:`pose_at`'s interpolation, positions only)."""
    t = np.array([w[0] for w in path], dtype=float)
    x = np.array([w[1].x for w in path], dtype=float)
    y = np.array([w[1].y for w in path], dtype=float)
    return np.stack([np.interp(ts, t, x), np.interp(ts, t, y)], axis=1)


def _keeps_clear(paths: Mapping[str, list[tuple[float, Pose2D]]],
                 shifted: Mapping[str, list[tuple[float, Pose2D]]], room: float,
                 dt: float) -> bool:
    """True when no path of ``shifted`` (a helper's path delayed by its back-off) comes
    closer to another path (of ``paths``, or shifted) than ``room`` [m] and than the two
    came in ``paths`` at the same time (sampled every ``dt`` [s] to the last waypoint).
    Modules without a path stand still: a shifted path keeps its geometry against them."""
    end = max(p[-1][0] for p in list(paths.values()) + list(shifted.values()) if p)
    ts = np.arange(0.0, end + dt, dt)
    old = {m: _xy_at(p, ts) for m, p in paths.items() if p}
    new = {**old, **{m: _xy_at(p, ts) for m, p in shifted.items()}}
    for h in shifted:
        for m in new:
            if m == h or (m in shifted and m < h):
                continue
            d_new = np.hypot(*(new[h] - new[m]).T)
            d_old = np.hypot(*(old[h] - old[m]).T)
            if np.any((d_new < room) & (d_new < d_old - 1e-3)):
                return False
    return True


def undock_walls(zones: Collection[Rect], width: float) -> dict[str, Pose2D]:
    """Points (``"~wall<i>"`` -> pose, ``world``) along the long axis of every area in
    ``zones`` (undocks' lanes, turns and parking bodies,
    :func:`smores_assembly.staging.undock_areas`), at most ``width / 2`` [m] apart: as
    fixed obstacles of the stage's search they block every cell within its ``clearance``
    of the area's middle line, so staging paths go round the undocks."""
    out: dict[str, Pose2D] = {}
    for z in zones:
        along, yaw = (z.hx - z.hy, z.yaw) if z.hx >= z.hy else (z.hy - z.hx,
                                                                   z.yaw + 0.5 * math.pi)
        n = max(1, int(math.ceil(2.0 * along / (0.5 * width))))
        c, sn = math.cos(yaw), math.sin(yaw)
        for i in range(n + 1):
            d = -along + 2.0 * along * i / n
            out[f"~wall{len(out)}"] = Pose2D(z.x + d * c, z.y + d * sn, 0.0)
    return out


def nav_problem(plan, stage: int, poses: Mapping[str, Pose2D], docked: Collection[str],
                phases: Mapping[str, Phase], settings: NavSettings | None = None,
                staging_settings: StagingSettings | None = None,
                staging_targets: Mapping[str, Pose2D] | None = None,
                carry_targets: Mapping[str, Pose2D] | None = None) -> NavProblem:
    """The navigation problem of ``stage`` (0-based) of ``plan``.

    Args:
        plan: a :class:`smores_assembly.planning.Plan` (any schedule; ``pipelined`` adds
            the staging moves).
        poses: tracked module poses (``world``); docked: modules reported DOCKED;
            phases: module -> its docking phase (carried pairs: NAVIGATE and later).
        staging_targets, carry_targets: the plan's
            :func:`~smores_assembly.staging.staging_poses` and
            :func:`~smores_assembly.staging.carry_staging_poses` (pre-staged carried
            modules) with these settings when the caller keeps them (default: computed
            here).

    Returns:
        A :class:`NavProblem`.
    """
    s = settings or NavSettings()
    st = staging_settings or StagingSettings()
    k = stage
    docked = set(docked)
    # a helper still backing off from its hand-over is planned from where it ends
    backoffs = backing_off(plan, k, poses, docked, s.helper_backoff, s.module_width)
    # a lifted pair that cannot turn where it stands is planned from where its straight
    # move ends, its carried module with it
    turns = pair_turn_moves(plan, k, poses, phases, s.module_width)
    backoffs.update(turns)
    if backoffs:
        moved = {h: end for h, (_start, end) in backoffs.items()}
        for a in plan.actions:
            if a.stage == k and a.helper in turns and a.module in poses:
                start, end = turns[a.helper]
                q = poses[a.module]
                moved[a.module] = Pose2D(q.x + end.x - start.x, q.y + end.y - start.y, q.yaw)
        poses = {**poses, **moved}
    fixed = {plan.root_module} if plan.root_module else set()
    fixed |= set(plan.kept)
    fixed |= {a.module for a in plan.actions if a.stage < k}
    fixed |= docked
    moving: dict[str, tuple[Pose2D, Pose2D]] = {}
    missing: list[str] = []
    helper_targets: dict[str, str] = {}
    carried: dict[str, tuple[Pose2D, Pose2D, str]] = {}
    slides: dict[str, Segment] = {}
    # what a carried pair's pre-dock goal must clear: the modules that stay where they are
    # while it docks (placed, and the stage's modules waiting to be carried)
    waiting = {a.module for a in plan.actions if a.stage == k and a.needs_helper}
    # what stays where it is while the stage's docks are driven (clear_predock's lane):
    # the placed modules and the active stage's modules and helpers; every other module
    # (an idle one, a later stage's, a helper without an action now) may be moved aside
    stays = fixed | {a.module for a in plan.actions if a.stage == k} | {
        a.helper for a in plan.actions if a.stage == k and a.helper}
    room = turn_clearance(s.module_width)
    for a in plan.actions:
        if a.stage != k or a.module in docked:
            continue
        if a.needs_helper:
            fixed.add(a.module)
            h = a.helper
            if not h:
                continue  # the planner refuses such plans; nothing to drive
            placed = [(p.x, p.y) for m, p in poses.items()
                      if (m in fixed or m in waiting) and m not in (h, a.module)]
            pre = clear_carried_predock(a.goal, a.child_face.angle, s.predock_standoff,
                                        placed, width=s.module_width)
            slides[a.module] = _slide(a.goal, pre)
            if h in helper_targets:
                continue  # this helper first serves an earlier action
            if h not in poses or a.module not in poses:
                missing += [x for x in (h, a.module) if x not in poses]
                continue
            helper_targets[h] = a.module
            ph = phases.get(a.module)
            if ph in (Phase.POSE_ADJUST, Phase.APPROACH, Phase.RETRY):
                # carried, past its path: the docking controller moves it (never moved
                # aside: beside its own dock's slide it was, bench_targets
                # random_7_356561138 stage 3)
                fixed.add(h)
                continue
            if ph is Phase.NAVIGATE:
                carried[h] = (poses[h], pre, a.module)
                continue
            others = [(p.x, p.y) for m, p in poses.items() if m not in (h, a.module)]
            moving[h] = (poses[h], pickup_pose(poses[a.module], poses[h], others,
                                               s.module_width, s.predock_standoff))
        else:
            if a.module not in poses:
                missing.append(a.module)
                continue
            others = [(p.x, p.y) for m, p in poses.items() if m != a.module]
            goal = clear_predock(a.goal, a.child_face.angle, s.predock_standoff, others,
                                 s.predock_clearance)
            placed = [(p.x, p.y) for m, p in poses.items() if m != a.module and m in stays]
            if any(math.hypot(goal.x - x, goal.y - y) < room for x, y in placed):
                # held back in a pocket of modules that stay (no room to turn, a final
                # leg from the grid comes in across the lane): only those hold it back,
                # a module that may move standing in the lane is moved aside
                goal = clear_predock(a.goal, a.child_face.angle, s.predock_standoff,
                                     others, s.predock_clearance, lane_others=placed)
            moving[a.module] = (poses[a.module], goal)
            slides[a.module] = _slide(a.goal, goal)
    staging: dict[str, tuple[Pose2D, Pose2D]] = {}
    zones: list[Rect] = []
    direct: set[str] = set()
    if plan.schedule == "pipelined":
        # a reconfiguration's kept modules: their goals are where they stand (the plan
        # message has none for them)
        kplan = with_kept_goals(plan, poses)
        targets = staging_targets
        if targets is None:
            targets = staging_poses(kplan, s.predock_standoff, st, s.module_width)
        if carry_targets is None:
            carry_targets = carry_staging_poses(kplan, s.predock_standoff, st,
                                                s.module_width, others=targets)
        sp = staging_problem(kplan, k, poses, docked, s.predock_standoff, st,
                             s.module_width, targets=targets, carry_targets=carry_targets)
        direct = {m for m in sp.direct if m in moving}
        for m in direct:
            del moving[m]
            cur = poses[m]
            (gx, gy), (px, py) = slides[m]
            # the slide starts where the module stands (at or beyond its pre-dock pose)
            if math.hypot(cur.x - gx, cur.y - gy) > math.hypot(px - gx, py - gy):
                slides[m] = ((gx, gy), (cur.x, cur.y))
        fixed |= direct
        staging = {m: v for m, v in sp.staging.items() if m not in moving}
        # a helper's pick-up pose beside a slide of the active stage: it waits (and is
        # moved aside if it stands there already); staging poses of modules keep their
        # own rules (clear of the zones and pre-dock poses of earlier docks)
        helpers = {a.helper for a in plan.actions if a.needs_helper and a.helper}
        for h in sorted(set(staging) & helpers):
            g = staging[h][1]
            if any(point_segment_distance((g.x, g.y), a, b) < s.slide_clearance
                   for a, b in slides.values()):
                del staging[h]
        # a staging pose where the goal of a module of the active stage (a pre-dock pose
        # moved out along its axis, clear_predock) leaves no room to turn: it waits
        # (random_12_594393859: m11's staging pose 0.104 m from m5's pre-dock goal)
        room = turn_clearance(s.module_width)
        for m in sorted(staging):
            g = staging[m][1]
            if any(g.distance_to(goal) < room for _, goal in moving.values()):
                del staging[m]
        # a module's staging pose beside a slide of the active stage: it waits (and is
        # moved aside if it stands there already, blockers). The staging rules keep it
        # clear of the dock's zone, which ends at the nominal pre-dock pose; a pre-dock
        # goal moved out along its axis (clear_predock, a corner) makes the slide longer
        # (bench_reconfig reconf_10_140722156 reuse, stage 6: m7 staged 0.08 m beside m4's
        # slide, moved out to 0.23 m; m4 timed out four times in POSE_ADJUST, 250 mm out)
        # A carried module pre-staged on its own dock axis (carry_staging_poses) has its
        # pose judged with the pair's footprint against the corridors of the stages
        # running meanwhile: only a slide's part past its nominal pre-dock pose counts for
        # it (dropping it beside a nominal slide undid the pre-staging: rc_car_two_helpers,
        # m1 0.14 m beside the docked end of m0's slide, 79.2 s -> 106.0 s simulated).
        carried_later = {a.module for a in plan.actions if a.needs_helper and a.stage > k}
        for m in sorted(staging):
            if m in helpers:
                continue
            g = staging[m][1]
            segs = list(slides.items())
            if m in carried_later:
                segs = [(o, e) for o, seg in segs
                        if (e := _extension(seg, s.predock_standoff)) is not None]
            if any(_beside((g.x, g.y), seg, s.slide_clearance)
                   for o, seg in segs if o != m):
                del staging[m]
        # a staging pose where a module of the stage that waits for its helper leaves no
        # room to turn: it waits. The staging rules keep off the placed bodies only, and
        # such a module stays where it is until it is lifted (an idle module there is
        # moved aside instead; bench_targets random_7_88490221 stage 1: m2's staging pose
        # 0.110 m from m1, which waited for h0; m2 turned onto its axis there and touched
        # m1, 0.04 mm)
        lifted = {c for _h, (_s, _g, c) in carried.items()}
        standing = [(poses[w].x, poses[w].y) for w in sorted(waiting)
                    if w in poses and w not in lifted and w not in docked]
        for m in sorted(staging):
            g = staging[m][1]
            if any(math.hypot(g.x - x, g.y - y) < room for x, y in standing):
                del staging[m]
        zones = list(sp.zones.values())
    fixed |= set(carried) | {c[2] for c in carried.values()}
    keep_clear = footprint_to_build(
        with_kept_goals(plan, poses), k, docked, s.predock_standoff,
        s.module_width) if s.clear_footprint else {}
    obstacles = {m: p for m, p in poses.items() if m not in moving}
    if any(u.stage == k for u in getattr(plan, "undocks", ())):
        # an undocking stage (staging only, a reuse reconfiguration): nothing is moved
        # aside, and the areas the undocks of this stage and later sweep are walls of the
        # search (the staging paths went through a lane otherwise, and were dropped)
        fixed |= set(obstacles)
        walls = undock_walls(zones, s.module_width)
        obstacles.update(walls)
        fixed |= set(walls)
    fixed = {m for m in fixed if m in obstacles}
    return NavProblem(moving, obstacles, fixed, missing, staging, zones, direct, carried,
                      helper_targets, keep_clear, slides, backoffs)


__all__ = ["NavProblem", "backing_off", "direct_waits", "nav_problem", "pair_turn_moves",
           "undock_walls", "wait_for_backoffs"]
