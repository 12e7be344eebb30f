"""Self-reconfiguration: from the structures that exist at the start to a target tree.

Source: "SMORES-EP, a Modular Robot with Parallel Self-assembly" (Liu, Yim et al.), Sec. VI
(reconfiguration of the walker into the mobile manipulator): the paper disassembles the
structure completely and then runs the parallel assembly (``method="full"``). Beyond it
(issue 15), ``method="reuse"`` keeps the largest part of a start structure that already
equals a part of the target and undocks only the rest. No ROS imports. Units: m, rad;
poses in ``world``.

Steps of :func:`plan_reconfiguration`:

1. **Common part** (:func:`common_parts`). A start structure and the target are trees whose
   edges name faces, and a face is used by one edge at most, so mapping one module onto one
   node determines the largest common subtree containing that pair: grow it breadth-first
   across every connection ``(m.F, m2.G)`` for which the target has the edge
   ``(n.F, n2.G)`` (equal faces on both sides). Trying every (module, node) pair gives every
   maximal common part in O(|M| |V| |V|); the largest is kept (reserved helpers never are).
2. **Disassembly** (:func:`plan_disassembly`), stage by stage from the leaves inward: in a
   stage every module that has exactly one connection left and is not kept may undock (it
   is then free: nothing is ever split off as a multi-module piece, so no module is left
   stranded inside a structure). It switches its magnet off and backs off straight along
   its heading (away from the structure for a TOP/BOTTOM face, sliding along the face for a
   wheel face) to a parking pose; the swept lane must be clear of every other body at that
   time (modules of its own structure may be passed flush), of the lanes of the stage's other
   undocks, and the parking pose of the target's future footprint. A leaf whose lane is
   blocked waits for a later stage; when no leaf can leave, the plan is refused naming the
   blocked ones.
3. **Assembly** (:func:`smores_assembly.planning.build_schedule`): the kept part is the
   start structure (its node nearest the target's tree centroid is the root and anchors the
   unfolding at its module's pose; its other nodes are placed from the start), the other
   nodes are assigned by Kuhn-Munkres to the modules at their poses after the disassembly,
   and the parallel schedule runs after the undocking stages.

A reuse plan is built for each of the largest common parts (up to :data:`MAX_PARTS`), for
a few single modules kept in place as the target's root (:func:`single_parts`, up to
:data:`MAX_SINGLES`: the nodes with the fewest wheel-face docks), and the full
disassembly's plan too; the one with the shortest
:func:`estimated_time` is kept (then the fewest stages, the fewest actions, the larger part,
full disassembly last), so
``method="reuse"`` keeps a part only when that is estimated faster. The kept part decides
more than how many docks are saved: every other edge is docked away from it, so it also
decides which docks present a wheel face (LEFT/RIGHT child face: a helper fetches the
module and carries it, one carry after another per helper), and where the disassembly
parks the modules a helper fetches. The estimate plans each fetch, carry and drive with
the navigation's own planner (bench_reconfig reconf_7_280080820: the reuse plan's one
carry went round its parked neighbours, 1.8 m for a 0.36 m straight line, and the full
disassembly was faster). A reuse plan that cannot be built (a kept node in a dock's
corridor, a blocked lane) is skipped.
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from smores_assembly.edge import Connection, Edge
from smores_assembly.errors import InputError, NavigationError, PlanningError
from smores_assembly.geometry import Face, Pose2D, child_pose, wrap_angle
from smores_assembly.planning import (Plan, UndockAction, assign_modules, build_schedule,
                                      check_finite_poses, plan_assembly)
from smores_assembly.scenario import INITIAL_POSE_TOLERANCE_M, Scenario
from smores_assembly.topology import rooted_edges, tree_centroid, unfold

if TYPE_CHECKING:
    from smores_assembly.navigation.stage import NavSettings

__all__ = ["ReconfigurationSettings", "common_parts", "estimated_time", "plan_disassembly",
           "plan_reconfiguration", "single_parts", "stage_ends", "staging_world",
           "undock_swept", "with_kept_goals", "METHODS"]

#: ``reuse``: keep a common part (the shortest estimated time among the largest); ``full``:
#: the paper's full disassembly.
METHODS = ("reuse", "full")

#: How many common parts (largest first) a reuse plan is built for; the one with the
#: shortest :func:`estimated_time` is kept.
MAX_PARTS = 16

#: How many single modules kept in place (:func:`single_parts`) a reuse plan is also built
#: for; the one with the shortest :func:`estimated_time` of all plans is kept.
MAX_SINGLES = 6


@dataclass(frozen=True)
class ReconfigurationSettings:
    """Geometry of undocking and parking (all in m).

    Attributes:
        backoff_min: shortest back-off of a module undocked at a TOP/BOTTOM face.
        slide_extra: a module undocked at a wheel face slides one module width plus this.
        step: parking distances tried are ``min + k * step``.
        max_distance: longest back-off tried.
        clearance: gap kept between a lane and any body not of the leaver's structure.
        footprint_margin: a parking pose keeps this gap from the target's future footprint
            (the docks' pre-dock poses and corridors lie within one module width of it).
        park_gap: a parking pose is at least this far (centre to centre) from the start
            pose of every module of its start structure, so that parked modules stay out of
            the lanes of the modules that undock after them.
        undock_stage_s, undock_speed, adjust_s, approach_s, lift_s, release_s,
            travel_factor, fallback_speed: the time model of :func:`estimated_time`: an
            undocking stage takes ``undock_stage_s`` [s] plus its longest undock's back-off
            and drive at ``undock_speed`` [m/s]; a dock ``adjust_s`` (pose adjustment) and
            ``approach_s`` [s] after its body reaches the pre-dock pose; a helper
            ``lift_s`` at the pick-up and ``release_s`` after the dock; the navigation's
            planned path durations count ``travel_factor`` times (path tracking, in-place
            turns); a path the planner cannot find counts the straight line at
            ``fallback_speed`` [m/s]. ``approach_s`` and ``release_s`` as measured (APPROACH
            2.4-2.6 s, a helper's release 2.0-2.1 s), the others fitted (least squares)
            to the end of the undocking stages and the end of 16 runs of bench_reconfig
            seeds 2 and 3 (fake hardware, lockstep): RMS error 19 s on 104-297 s, with the
            staging modules at their parking poses (not refitted since they stand at their
            staging poses: bench_reconfig seeds 4 and 5 on main b2e333e, see
            docs/RESULTS.md).

    A single module kept in place competes on the estimate alone (the margin of 10 s it
    needed before, fitted on bench_reconfig reconf_8_1018022223, is gone: with the modules
    staging meanwhile placed, :func:`staging_world`, that pair keeps m0 m1 by the estimate).
    """

    backoff_min: float = 0.06
    slide_extra: float = 0.03
    step: float = 0.02
    max_distance: float = 1.2
    clearance: float = 0.015
    footprint_margin: float = 0.10
    park_gap: float = 0.22
    undock_stage_s: float = 8.0
    undock_speed: float = 0.15
    adjust_s: float = 1.0
    approach_s: float = 2.5
    lift_s: float = 5.0
    release_s: float = 2.0
    travel_factor: float = 1.2
    fallback_speed: float = 0.02


# --------------------------------------------------------------------- common part
def _adjacency(connections: Iterable[Connection]) -> dict[str, dict[Face, tuple[str, Face]]]:
    adj: dict[str, dict[Face, tuple[str, Face]]] = {}
    for c in connections:
        adj.setdefault(c.module_a, {})[c.face_a] = (c.module_b, c.face_b)
        adj.setdefault(c.module_b, {})[c.face_b] = (c.module_a, c.face_a)
    return adj


def _node_adjacency(edges: Iterable[Edge]) -> dict[str, dict[Face, tuple[str, Face]]]:
    adj: dict[str, dict[Face, tuple[str, Face]]] = {}
    for e in edges:
        adj.setdefault(e.parent, {})[e.parent_face] = (e.child, e.child_face)
        adj.setdefault(e.child, {})[e.child_face] = (e.parent, e.parent_face)
    return adj


def common_parts(connections: Sequence[Connection], nodes: Sequence[str],
                 edges: Sequence[Edge], exclude: Iterable[str] = ()
                 ) -> list[dict[str, str]]:
    """Every maximal common part of the start structures and the target, largest first.

    A common part maps a connected set of nodes one-to-one onto modules so that every
    target edge between two of its nodes, ``(n.F, n2.G)``, is a connection
    ``(m.F, m2.G)`` of the mapped modules (equal faces); grown breadth-first from each
    (module, node) pair (see the module docstring, step 1).

    Args:
        connections: the connections at the start (a forest).
        nodes, edges: the target tree.
        exclude: modules never kept (reserved helpers).

    Returns:
        ``node -> module`` maps with at least two nodes, distinct, sorted by size
        (largest first), then by their sorted items (deterministic).
    """
    madj = _adjacency(connections)
    nadj = _node_adjacency(edges)
    skip = set(exclude)
    seen: set[frozenset] = set()
    out: list[dict[str, str]] = []
    for m0 in sorted(madj):
        if m0 in skip:
            continue
        for n0 in nodes:
            node_of = {m0: n0}
            module_of = {n0: m0}
            q = deque([(m0, n0)])
            while q:
                m, n = q.popleft()
                for f, (m2, f2) in sorted(madj.get(m, {}).items()):
                    hit = nadj.get(n, {}).get(f)
                    if hit is None or hit[1] is not f2:
                        continue
                    n2 = hit[0]
                    if m2 in node_of or n2 in module_of or m2 in skip:
                        continue
                    node_of[m2], module_of[n2] = n2, m2
                    q.append((m2, n2))
            if len(module_of) < 2:
                continue
            key = frozenset(module_of.items())
            if key not in seen:
                seen.add(key)
                out.append(dict(module_of))
    out.sort(key=lambda d: (-len(d), sorted(d.items())))
    return out


def single_parts(modules: Mapping[str, Pose2D], nodes: Sequence[str], edges: Sequence[Edge],
                 width: float, exclude: Iterable[str] = (), limit: int = MAX_SINGLES
                 ) -> list[dict[str, str]]:
    """One module kept in place as the target's root: the candidates worth planning.

    A common part (:func:`common_parts`) fixes where the target stands and which side
    every other edge is docked from; so does a single module left where it stands (its
    neighbours undock from it) with the target unfolded round it. That choice decides
    which docks present a wheel face (a helper fetches and carries those, one after
    another), which the full disassembly's root rule
    (:func:`~smores_assembly.planning.select_root_module`) does not weigh, and keeps
    the target where the modules are. bench_reconfig seeds 2 and 3: keeping one module
    was estimated faster than every common part for 4 of 8 pairs (reconf_10_140722156:
    134 s against 159 s, 2 carried docks instead of 3).

    Candidates: the nodes with the fewest wheel-face docks when the tree is docked away
    from them (:func:`~smores_assembly.topology.rooted_edges`), each with every module
    not in ``exclude``; ranked by the Kuhn-Munkres cost (summed distance [m],
    :func:`~smores_assembly.planning.assign_modules`) of the other nodes' goals, unfolded
    at that module's pose, against the other modules' poses; the first ``limit``.

    Args:
        modules: module -> pose (``world``; start structures made exact,
            :func:`snap_structures`).
        nodes, edges: the target tree; width: module width [m].
        exclude: modules never kept (reserved helpers).

    Returns:
        ``{node: module}`` maps of one item, best first.
    """
    skip = set(exclude)
    pool = {m: p for m, p in sorted(modules.items()) if m not in skip}
    if len(pool) < len(nodes) or len(nodes) < 2:
        return []
    wheel = {n: sum(e.child_face.is_wheel for e in rooted_edges(nodes, edges, n).values())
             for n in nodes}
    fewest = min(wheel.values())
    ranked: list[tuple[float, str, str]] = []
    for n in nodes:
        if wheel[n] != fewest:
            continue
        for m, p in pool.items():
            goals = unfold(nodes, edges, n, p, width)
            rest = {k: g for k, g in goals.items() if k != n}
            _, cost = assign_modules(rest, {k: q for k, q in pool.items() if k != m})
            ranked.append((cost, n, m))
    ranked.sort()
    return [{n: m} for _, n, m in ranked[:limit]]


# --------------------------------------------------------------------- geometry helpers
#: An oriented rectangle: centre x, y [m], yaw [rad], half extents along its x and y [m].
Rect = tuple[float, float, float, float, float]


def _rect_gap(a: Rect, b: Rect) -> float:
    """Largest separation of two oriented rectangles along their four edge normals [m]
    (separating-axis test): > 0 means apart by at least that much, <= 0 overlap or touch."""

    def radius(r: Rect, ux: float, uy: float) -> float:
        c, s = math.cos(r[2]), math.sin(r[2])
        return r[3] * abs(ux * c + uy * s) + r[4] * abs(-ux * s + uy * c)

    dx, dy = b[0] - a[0], b[1] - a[1]
    best = -math.inf
    for yaw in (a[2], a[2] + math.pi / 2, b[2], b[2] + math.pi / 2):
        ux, uy = math.cos(yaw), math.sin(yaw)
        best = max(best, abs(dx * ux + dy * uy) - radius(a, ux, uy) - radius(b, ux, uy))
    return best


def _body(p: Pose2D, width: float, grow: float = 0.0) -> Rect:
    return (p.x, p.y, p.yaw, 0.5 * width + grow, 0.5 * width + grow)


def _lane(start: Pose2D, direction: int, distance: float, width: float,
          shrink: float = 1e-3) -> Rect:
    """The area swept by a module driving ``distance`` straight along its heading from
    ``start`` (``direction`` +1 forward, -1 reverse), shrunk by ``shrink`` at the sides and
    at its rear end so that flush neighbours do not count as obstacles."""
    h = 0.5 * width
    lo, hi = -h + shrink, distance + h          # along the travel direction
    mid = 0.5 * (lo + hi) * direction
    return (start.x + mid * math.cos(start.yaw), start.y + mid * math.sin(start.yaw),
            start.yaw, 0.5 * (hi - lo), h - shrink)


def _along(p: Pose2D, d: float) -> Pose2D:
    return Pose2D(p.x + d * math.cos(p.yaw), p.y + d * math.sin(p.yaw), p.yaw)


def undock_swept(u: UndockAction, width: float) -> list[Rect]:
    """The areas an undock sweeps (``world``, oriented rectangles ``(x, y, yaw, hx, hy)``
    [m, rad]): its back-off lane from ``u.start`` to :attr:`~UndockAction.pivot`, the
    square round the pivot that its turn in place covers, the lane of its drive to
    ``u.park`` and its body there -- the areas :func:`plan_disassembly` checks clear
    (``_find_park``), each a module body wide. Used to keep what moves during the
    undocking stages (:func:`smores_assembly.staging.undock_staging`) out of them."""
    pivot = u.pivot
    turn_r = width / math.sqrt(2.0)
    d = pivot.distance_to(u.park)
    head = Pose2D(pivot.x, pivot.y, u.park.yaw)
    return [_lane(u.start, u.direction, u.distance, width, shrink=0.0),
            (pivot.x, pivot.y, 0.0, turn_r, turn_r),
            _lane(head, 1, d, width, shrink=0.0),
            _body(u.park, width)]


# --------------------------------------------------------------------- disassembly
def plan_disassembly(connections: Sequence[Connection], poses: Mapping[str, Pose2D],
                     kept: Iterable[str], width: float, footprint: Sequence[Pose2D] = (),
                     settings: ReconfigurationSettings | None = None
                     ) -> tuple[list[UndockAction], dict[str, Pose2D]]:
    """Undocking actions that remove every connection not inside ``kept``, leaves first.

    See the module docstring, step 2. Each stage undocks modules that have exactly one
    connection at the stage's start and are not kept; of a two-module piece only one end
    leaves (the other stays where it is, single).

    Args:
        connections: connections at the start (a forest).
        poses: every module's pose at the start (``world``).
        kept: modules that stay docked (a connected part of one structure; may be empty).
        width: module width [m].
        footprint: docked poses of the target's nodes still to be docked; parking poses
            keep ``footprint_margin`` from them.

    Returns:
        ``(undocks, poses after the disassembly)``.

    Raises:
        PlanningError: no remaining leaf can back off (names each blocked leaf and what
            blocks it).
    """
    s = settings or ReconfigurationSettings()
    keep = set(kept)
    conns = set(connections)
    to_remove = {c for c in conns if not (c.module_a in keep and c.module_b in keep)}
    pose = dict(poses)
    undocks: list[UndockAction] = []
    comp_of = _components(conns, pose)
    members: dict[int, list[Pose2D]] = {}
    for mm, k in comp_of.items():
        members.setdefault(k, []).append(pose[mm])
    start_structure = {mm: members[k] for mm, k in comp_of.items()}
    stage = 0
    while to_remove:
        degree: dict[str, int] = {}
        for c in conns:
            degree[c.module_a] = degree.get(c.module_a, 0) + 1
            degree[c.module_b] = degree.get(c.module_b, 0) + 1
        lanes: list[tuple[str, Rect]] = []
        leaving: set[str] = set()
        blocked: list[str] = []
        for c in sorted(to_remove):
            ends = [(m, f) for m, f in ((c.module_a, c.face_a), (c.module_b, c.face_b))
                    if m not in keep and degree[m] == 1 and m not in leaving]
            done = False
            reasons = []
            for m, f in ends:
                other, of = c.other(m)
                if other in leaving:
                    continue
                found = _find_park(m, f, pose, comp_of, start_structure[m], lanes, leaving,
                                   footprint, width, s)
                if isinstance(found, str):
                    reasons.append(f"{m}: {found}")
                    continue
                direction, distance, park, swept = found
                undocks.append(UndockAction(
                    module=m, face=f, from_module=other, from_face=of, stage=stage,
                    start=pose[m], park=park, direction=direction, distance=distance))
                lanes.extend((m, r) for r in swept)
                leaving.add(m)
                done = True
                break
            if not done and ends:
                blocked.extend(reasons)
        stage_actions = [u for u in undocks if u.stage == stage]
        if not stage_actions:
            left = ", ".join(sorted(c.describe() for c in to_remove))
            why = "; ".join(blocked) if blocked else "no module of them is a free leaf"
            raise PlanningError(f"disassembly: connections {left} cannot be undocked: {why}")
        for u in stage_actions:
            c = Connection.make(u.module, u.face, u.from_module, u.from_face)
            conns.discard(c)
            to_remove.discard(c)
            pose[u.module] = u.park
        comp_of = _components(conns, pose)
        stage += 1
    return undocks, pose


def _components(conns: Iterable[Connection], poses: Mapping[str, Pose2D]) -> dict[str, int]:
    parent = {m: m for m in poses}

    def find(m: str) -> str:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for c in conns:
        parent[find(c.module_a)] = find(c.module_b)
    roots = sorted({find(m) for m in poses})
    index = {r: i for i, r in enumerate(roots)}
    return {m: index[find(m)] for m in poses}


def _find_park(m: str, face: Face, pose: Mapping[str, Pose2D], comp_of: Mapping[str, int],
               structure: Sequence[Pose2D], lanes: Sequence[tuple[str, Rect]],
               leaving: set[str], footprint: Sequence[Pose2D], width: float,
               s: ReconfigurationSettings) -> tuple[int, float, Pose2D, list[Rect]] | str:
    """The shortest clear undock of ``m`` at ``face``: ``(direction, back-off distance,
    parking pose, swept rectangles)``, or why there is none.

    The module backs off straight along its heading until it can turn in place clear of
    every body, then drives straight (forward) to a parking pose at least
    ``park_gap`` from every module of its start structure and clear of ``footprint``; the
    drive's direction is tried outward first (away from the structure's centre)."""
    start = pose[m]
    if face.is_wheel:
        options = [(1, width + s.slide_extra), (-1, width + s.slide_extra)]
    else:  # away from the neighbour: reverse for TOP, forward for BOTTOM
        options = [(-1 if face is Face.TOP else 1, s.backoff_min)]
    foot = [_body(p, width, s.footprint_margin) for p in footprint]
    turn_r = width / math.sqrt(2.0)
    cx = sum(p.x for p in structure) / len(structure)
    cy = sum(p.y for p in structure) / len(structure)
    last = "no clear lane"
    for direction, d in options:
        way = "forward" if direction > 0 else "reverse"
        while d <= s.max_distance + 1e-9:
            lane = _lane(start, direction, d, width)
            hit = _lane_blocker(m, lane, pose, comp_of, lanes, leaving, width, s.clearance)
            if hit is not None:
                last = f"backing off {way} is blocked by {hit}"
                break  # longer lanes are blocked too
            pivot = _along(start, direction * d)
            spin = (pivot.x, pivot.y, 0.0, turn_r, turn_r)
            if _lane_blocker(m, spin, pose, {**comp_of, m: -1}, lanes, leaving, width,
                             s.clearance) is None:
                found = _drive_out(m, pivot, pose, comp_of, lanes, leaving, foot, structure,
                                   (cx, cy), width, s)
                if found is None:
                    last = f"no parking pose within {s.max_distance:g} m of the pivot"
                    break
                park, drive = found
                return direction, round(d, 6), park, [lane, spin, drive]
            d += s.step
        else:
            last = f"cannot turn anywhere within {s.max_distance:g} m backing off {way}"
    return last


def _drive_out(m: str, pivot: Pose2D, pose: Mapping[str, Pose2D], comp_of: Mapping[str, int],
               lanes: Sequence[tuple[str, Rect]], leaving: set[str], foot: Sequence[Rect],
               structure: Sequence[Pose2D], centre: tuple[float, float], width: float,
               s: ReconfigurationSettings) -> tuple[Pose2D, Rect] | None:
    out = math.atan2(pivot.y - centre[1], pivot.x - centre[0])
    dirs = sorted((2.0 * math.pi * k / 16 for k in range(16)),
                  key=lambda a: (-math.cos(a - out), a))
    free = {**comp_of, m: -1}
    best: tuple[float, Pose2D, Rect] | None = None
    for a in dirs:
        if math.cos(a - out) < 0.0:
            break
        head = Pose2D(pivot.x, pivot.y, wrap_angle(a))
        d = 0.0
        while d <= s.max_distance + 1e-9:
            park = _along(head, d)
            ok = (all(park.distance_to(q) >= s.park_gap for q in structure)
                  and not any(_rect_gap(_body(park, width), f) < 0.0 for f in foot))
            if ok:
                drive = _lane(head, 1, d, width, shrink=0.0)
                if _lane_blocker(m, drive, pose, free, lanes, leaving, width,
                                 s.clearance) is None and (best is None or d < best[0]):
                    best = (d, park, drive)
                break
            d += s.step
    if best is None:
        return None
    return best[1], best[2]


def _lane_blocker(m: str, lane: Rect, pose: Mapping[str, Pose2D], comp_of: Mapping[str, int],
                  lanes: Sequence[tuple[str, Rect]], leaving: set[str], width: float,
                  clearance: float) -> str | None:
    for o, p in pose.items():
        if o == m or o in leaving:
            continue
        gap = _rect_gap(lane, _body(p, width))
        # a module of the same structure stands flush: measured poses may overlap by the
        # tolerance of a start structure's poses
        need = -INITIAL_POSE_TOLERANCE_M if comp_of[o] == comp_of[m] else clearance
        if gap < need - 1e-9:
            return o
    for o, other in lanes:
        if _rect_gap(lane, other) < clearance:
            return f"the lane of {o} (undocking in the same stage)"
    return None


# --------------------------------------------------------------------- whole plan
def plan_reconfiguration(scenario: Scenario, connections: Sequence[Connection] | None = None,
                         modules: Mapping[str, Pose2D] | None = None, method: str = "reuse",
                         settings: ReconfigurationSettings | None = None) -> Plan:
    """Plan the reconfiguration of the start structures into ``scenario``'s target.

    Args:
        scenario: validated scenario; its ``initial_connections`` are the start structures
            unless ``connections`` is given.
        connections: the connections that exist now (e.g. from the hardware).
        modules: current module poses overriding the scenario's.
        method: ``"reuse"`` (the default: of the plans keeping a common part and the full
            disassembly, the one with the shortest :func:`estimated_time`; a plan of method
            ``"full"`` when that is estimated faster) or ``"full"`` (the paper's full
            disassembly, then the parallel assembly).

    Returns:
        The :class:`~smores_assembly.planning.Plan`: ``undocks`` in the first stages,
        the docks after them, ``kept`` the modules that stay docked. Without connections
        it is :func:`~smores_assembly.planning.plan_assembly`'s plan.

    Raises:
        PlanningError: unknown method, a connection naming a module without a pose, no
            order undocks everything that must go (the message gives the reason of the full
            disassembly, and of the reuse plans tried before it), or the assembly cannot be
            planned.
    """
    if method not in METHODS:
        raise PlanningError(f"method: unknown reconfiguration method {method!r} "
                            f"(expected one of {', '.join(METHODS)})")
    conns = sorted(scenario.initial_connections if connections is None else connections)
    mods = dict(scenario.modules if modules is None else modules)
    check_finite_poses(mods, "modules")
    for c in conns:
        for m in (c.module_a, c.module_b):
            if m not in mods:
                raise PlanningError(f"connections: {c.describe()} names module {m!r}, "
                                    f"which has no pose")
    if not conns:
        return plan_assembly(scenario, mods)
    mods = snap_structures(conns, mods, scenario.module_width)
    s = settings or ReconfigurationSettings()
    tried: list[str] = []
    if method == "full":
        return _plan_full(scenario, conns, mods, s)
    # every reuse plan and the full disassembly, by estimated time (helper fetches and
    # carries, drives, as the navigation plans them), then the fewest stages (each stage
    # waits for its slowest action), the fewest actions, then rank: the common parts
    # (larger first, list order), the full disassembly, the single modules kept in place
    # (a tie with the full disassembly, e.g. a two-module piece, is the full one)
    best: tuple[tuple, Plan] | None = None
    common = common_parts(conns, scenario.nodes, scenario.edges,
                          exclude=scenario.helpers)[:MAX_PARTS]
    singles = single_parts(mods, scenario.nodes, scenario.edges, scenario.module_width,
                           exclude=scenario.helpers)
    ranked = list(enumerate(common)) + [(len(common) + 1 + j, part)
                                        for j, part in enumerate(singles)]
    for k, part in ranked:
        try:
            plan = _plan_with_kept(scenario, conns, mods, part, s)
        except PlanningError as exc:
            tried.append(f"keeping {sorted(part.values())}: {exc}")
            continue
        key = (estimated_time(plan, mods, s), len(plan.stages),
               len(plan.undocks) + len(plan.actions), k)
        if best is None or key < best[0]:
            best = (key, plan)
    try:
        full = _plan_full(scenario, conns, mods, s)
    except PlanningError as exc:
        if best is not None:
            return best[1]
        if tried:
            raise PlanningError(f"{exc} (reuse plans refused first: {'; '.join(tried)})"
                                ) from None
        raise
    if best is None:
        return full
    key = (estimated_time(full, mods, s), len(full.stages),
           len(full.undocks) + len(full.actions), len(common))
    return full if key < best[0] else best[1]


def estimated_time(plan: Plan, poses: Mapping[str, Pose2D],
                   settings: ReconfigurationSettings | None = None,
                   nav: "NavSettings | None" = None) -> float:
    """A reconfiguration plan's duration [simulated s] by the time model of ``settings``,
    with every helper's fetch and carry and every dock's drive as the navigation plans
    them. Used to choose the kept part and between reuse and full disassembly; not a
    prediction of a run.

    The model (a chain of events; ``T0`` = the end of the undocking stages):

    * undocking stage: ``undock_stage_s`` + the longest (back-off + drive to the parking
      pose) of its undocks at ``undock_speed``; stages one after another;
    * a dock without helper: its module drives from where the disassembly parked it to its
      pre-dock pose (:func:`~smores_assembly.geometry.predock_pose`), adjusts
      (``adjust_s``) and approaches (``approach_s``). A module that has a staging pose
      (:func:`~smores_assembly.staging.staging_poses` of the pipelined plan) drives from
      ``T0`` on, during earlier stages, and approaches once its stage has started: ends at
      ``max(S, T0 + drive + adjust_s) + approach_s`` (``S``: its stage's start); one
      without drives in its own stage: ``S + drive + adjust_s + approach_s``;
    * a carried dock (wheel face): its helper, free at ``F`` (``T0``, or the end of its
      previous carry) where its previous carry left it (its carried pre-dock pose),
      drives to the pick-up pose (:func:`~smores_assembly.docking.control.pickup_pose`)
      and lifts (``fetch``, ``lift_s``, before the stage if it can), then carries the pair
      to the carried pre-dock pose (:func:`~smores_assembly.navigation.stage.carried_predock`):
      ends at ``max(S, F + fetch + lift_s) + carry + adjust_s + approach_s + release_s``;
      a pre-staged carried module (:func:`~smores_assembly.staging.carry_staging_poses`)
      is picked up at its staging pose, not before ``T0`` + its own drive there +
      ``lift_s``;
    * a stage starts when the stage before ends (the latest end of its docks);
    * a reuse plan (``plan.method`` ``"reuse"``) stages during its undocking stages
      (:func:`smores_assembly.staging.undock_staging`): a helper's first fetch and a
      staged module's drive start, instead of at ``T0``, when the first undocking stage
      starts whose areas and those of the stages after it
      (:func:`smores_assembly.staging.undock_areas`) their goal keeps clear of, a module
      not before the stage after its own undock. The paper's full disassembly does not.

    ``drive``, ``fetch`` and ``carry`` are the planned durations of the navigation's own
    single-body paths (:func:`~smores_assembly.navigation.stage.plan_stage`,
    :func:`~smores_assembly.navigation.stage.plan_carried` for the pair, every other
    module a fixed obstacle where it stands as the stage starts: placed modules at their
    goals, the modules of this stage or later that have a staging pose at it
    (:func:`staging_world`: the pipelined stages move them there from ``T0`` on), the
    others where the disassembly left them) times ``travel_factor``; a path the
    planner cannot find counts the straight line at ``fallback_speed``. The search is
    bounded by work (:class:`~smores_assembly.navigation.stage.WorkClock`): the same
    estimate on any machine.

    Args:
        plan: a reconfiguration plan (:func:`plan_reconfiguration`; an assembly plan
            without undocks too).
        poses: every module's pose at the start (``world``; the plan's undocks move the
            undocked modules to their parking poses).
        nav: the navigation's settings (default: its defaults).

    Raises:
        PlanningError: a module of the plan without a pose in ``poses``.
    """
    return stage_ends(plan, poses, settings, nav)[-1]


def stage_ends(plan: Plan, poses: Mapping[str, Pose2D],
               settings: ReconfigurationSettings | None = None,
               nav: "NavSettings | None" = None) -> list[float]:
    """When each stage of ``plan`` ends by the model of :func:`estimated_time` [simulated
    s from the start], undocking stages first; arguments and errors as there (an empty
    plan: ``[0.0]``)."""
    from smores_assembly.docking.control import pickup_pose
    from smores_assembly.geometry import predock_pose
    from smores_assembly.navigation.stage import (NavSettings, WorkClock, carried_predock,
                                                  plan_carried, plan_stage)
    from smores_assembly.planning import with_schedule
    from smores_assembly.staging import carry_staging_poses, staging_poses

    s = settings or ReconfigurationSettings()
    nv = nav or NavSettings()
    world = dict(poses)
    need = {a.module for a in plan.actions} | {a.helper for a in plan.actions if a.helper}
    need |= {u.module for u in plan.undocks}
    missing = sorted(need - set(world))
    if missing:
        raise PlanningError(f"poses: no pose for {', '.join(missing)}")
    for m in plan.kept:
        if m in plan.goals:
            world[m] = plan.goals[m]
    w, standoff = nv.module_width, nv.predock_standoff
    piped = with_kept_goals(with_schedule(plan, "pipelined"), world)
    staged = staging_poses(piped, standoff, width=w)
    carry_staged = carry_staging_poses(piped, standoff, width=w, others=staged)

    def travel(body: str, start: Pose2D, goal: Pose2D, carried: str | None = None) -> float:
        if start.distance_to(goal) < 1e-3:
            return 0.0
        obstacles = {m: p for m, p in world.items() if m not in (body, carried)}
        try:
            if carried is None:
                sp = plan_stage({body: (start, goal)}, obstacles, nv, fixed=list(obstacles),
                                clock=WorkClock())
            else:
                sp = plan_carried(body, start, goal, obstacles, nv, fixed=list(obstacles),
                                  clock=WorkClock())
            return s.travel_factor * sp.duration_s
        except (NavigationError, InputError):
            return start.distance_to(goal) / s.fallback_speed

    t = 0.0
    ends: list[float] = []
    n_undock = plan.num_undock_stages
    for k in range(n_undock):
        longest = 0.0
        for u in plan.undocks:
            if u.stage == k:
                pivot = _along(u.start, u.direction * u.distance)
                longest = max(longest, u.distance + pivot.distance_to(u.park))
                world[u.module] = u.park
        t += s.undock_stage_s + longest / s.undock_speed
        ends.append(t)
    t0 = start = t
    ready: dict[str, float] = {}
    at: dict[str, Pose2D] = {}
    parked = dict(world)
    # a reuse plan stages during its undocking stages (staging.undock_staging): a module
    # of a later dock, once parked, and the helpers towards their first pick-up, from
    # the first undocking stage whose areas (and those of the stages after it) their
    # goal keeps clear of
    overlap = plan.method == "reuse" and n_undock > 0
    begins = [0.0] + ends[:n_undock]

    def stage_free(m: str, goal: Pose2D) -> float:
        if not overlap:
            return t0
        k = 1 + max((u.stage for u in plan.undocks if m in (u.module, u.from_module)),
                    default=-1)
        r = w / math.sqrt(2.0)
        while k < n_undock and any(z.distance_to_point(goal.x, goal.y) < r
                                   for z in undock_areas(plan, k, w, margin).values()):
            k += 1
        return begins[k]

    from smores_assembly.staging import StagingSettings, undock_areas
    margin = StagingSettings().staging_margin
    for k in range(n_undock, len(plan.stages)):
        end = start
        acts = [a for a in plan.actions if a.stage == k]
        # the modules that stage meanwhile stand at their staging poses (they drive
        # there from T0 on): obstacles of this stage's fetches, carries and drives
        world.update(staging_world(plan, k, staged, carry_staged))
        for a in acts:
            if a.needs_helper and a.helper:
                h = a.helper
                hp = at.get(h, world[h])
                others = [(p.x, p.y) for m, p in world.items() if m not in (h, a.module)]
                pick = pickup_pose(world[a.module], hp, others, w, standoff)
                pre = carried_predock(a.goal, a.child_face.angle, standoff, w)
                fetch = travel(h, hp, pick)
                carry = travel(h, pick, pre, carried=a.module)
                if h not in ready:
                    ready[h] = stage_free(h, pick)
                go = max(start, ready[h] + fetch + s.lift_s)
                if a.module in carry_staged:   # picked up once it stands there
                    go = max(go, stage_free(a.module, world[a.module])
                             + travel(a.module, parked[a.module], world[a.module]) + s.lift_s)
                done = go + carry + s.adjust_s + s.approach_s + s.release_s
                ready[h], at[h] = done, pre
            else:
                drive = travel(a.module, parked[a.module],
                               predock_pose(a.goal, a.child_face, standoff))
                early = stage_free(a.module, staged[a.module]) if a.module in staged else start
                done = max(start, early + drive + s.adjust_s) + s.approach_s
            end = max(end, done)
        for a in acts:
            world[a.module] = a.goal
        world.update(at)
        start = end
        ends.append(end)
    return ends or [0.0]


def staging_world(plan: Plan, stage: int, staged: Mapping[str, Pose2D],
                  carry_staged: Mapping[str, Pose2D]) -> dict[str, Pose2D]:
    """Where the modules that stage meanwhile stand while docking ``stage`` (0-based, of
    ``plan``'s stages) runs, by the model of :func:`estimated_time`: module -> its staging
    pose (``world``) for every module of a dock of ``stage`` or later that has one
    (``staged``: :func:`~smores_assembly.staging.staging_poses`, ``carry_staged``:
    :func:`~smores_assembly.staging.carry_staging_poses` of the pipelined plan; a carried
    module's staging pose is where its helper picks it up). The pipelined stages move them
    there from the end of the undocking stages on, so the docks of ``stage`` drive, fetch
    and carry round them, not round their parking poses (bench_reconfig
    reconf_8_1018022223, the single m7 kept: three carries of 39-47 s round modules
    staging by the structure, estimated as if those stood where they were parked)."""
    out: dict[str, Pose2D] = {}
    for a in plan.actions:
        if a.stage >= stage:
            pose = staged.get(a.module, carry_staged.get(a.module))
            if pose is not None:
                out[a.module] = pose
    return out


def snap_structures(connections: Sequence[Connection], poses: Mapping[str, Pose2D],
                    width: float) -> dict[str, Pose2D]:
    """Poses with every start structure made exact: breadth-first from the structure's
    smallest module id, each module at its docked pose on its neighbour
    (:func:`~smores_assembly.geometry.child_pose`). Measured poses of docked modules are a
    few mm off (mocap noise); the plan's flush neighbours and goals must not be."""
    out = dict(poses)
    adj = _adjacency(connections)
    seen: set[str] = set()
    for m0 in sorted(adj):
        if m0 in seen:
            continue
        seen.add(m0)
        q = deque([m0])
        while q:
            u = q.popleft()
            for f, (v, fv) in sorted(adj[u].items()):
                if v not in seen:
                    seen.add(v)
                    out[v] = child_pose(out[u], f, fv, width)
                    q.append(v)
    return out


def _plan_full(scenario: Scenario, conns: Sequence[Connection], mods: dict[str, Pose2D],
               s: ReconfigurationSettings) -> Plan:
    undocks, after = plan_disassembly(conns, mods, (), scenario.module_width, (), s)
    plan = plan_assembly(scenario, after)
    return _prepend(plan, undocks, kept=[], method="full")


def _plan_with_kept(scenario: Scenario, conns: Sequence[Connection], mods: dict[str, Pose2D],
                    part: Mapping[str, str], s: ReconfigurationSettings) -> Plan:
    """The reuse plan keeping ``part`` (node -> module) where it stands."""
    centroid = tree_centroid(scenario.nodes, scenario.edges)
    dist = _hops(scenario.nodes, scenario.edges, centroid)
    root_node = min(part, key=lambda n: (dist[n], n))
    root_module = part[root_node]
    root_pose = mods[root_module]
    node_goals = unfold(scenario.nodes, scenario.edges, root_node, root_pose,
                        scenario.module_width)
    footprint = [p for n, p in node_goals.items() if n not in part]
    kept_modules = sorted(part.values())
    undocks, after = plan_disassembly(conns, mods, kept_modules, scenario.module_width,
                                      footprint, s)
    reserved = set(h for h in scenario.helpers if h in after)
    available = {m: p for m, p in after.items() if m not in reserved and m not in kept_modules}
    others = {n: p for n, p in node_goals.items() if n not in part}
    if len(available) < len(others):
        raise PlanningError(f"modules: {len(available)} modules available for the "
                            f"{len(others)} nodes that are not kept")
    sub, cost = assign_modules(others, available)
    assignment = {n: part[n] if n in part else sub[n] for n in scenario.nodes}
    goals = {assignment[n]: node_goals[n] for n in scenario.nodes}
    taken = set(assignment.values())
    idle = sorted(m for m in after if m not in taken)
    helpers = [h for h in scenario.helpers if h in after]
    pool = helpers + [m for m in idle if m not in reserved]
    stages, actions = build_schedule(scenario.nodes, scenario.edges, root_node, assignment,
                                     goals, pool, after, width=scenario.module_width,
                                     placed=[n for n in part if n != root_node])
    used: list[str] = []
    for a in actions:
        if a.helper is not None and a.helper not in used:
            used.append(a.helper)
    plan = Plan(name=scenario.name, root_node=root_node, root_module=root_module,
                root_pose=root_pose, assignment=assignment, goals=goals, total_cost_m=cost,
                stages=stages, actions=actions, idle=idle, helpers=used)
    return _prepend(plan, undocks, kept=kept_modules, method="reuse")


def _hops(nodes: Sequence[str], edges: Sequence[Edge], root: str) -> dict[str, int]:
    adj = _node_adjacency(edges)
    dist = {root: 0}
    q = deque([root])
    while q:
        u = q.popleft()
        for v, _ in adj.get(u, {}).values():
            if v not in dist:
                dist[v] = dist[u] + 1
                q.append(v)
    return dist


def _prepend(plan: Plan, undocks: list[UndockAction], kept: list[str], method: str) -> Plan:
    """``plan`` with the undocking stages before its docking stages."""
    u = 1 + max((x.stage for x in undocks), default=-1)
    stages = [[x.module for x in undocks if x.stage == k] for k in range(u)]
    actions = [dataclasses.replace(a, stage=a.stage + u) for a in plan.actions]
    return dataclasses.replace(plan, stages=stages + [list(st) for st in plan.stages],
                               actions=actions, undocks=list(undocks), kept=list(kept),
                               method=method)


def with_kept_goals(plan: Plan, poses: Mapping[str, Pose2D]) -> Plan:
    """``plan`` with a goal for every kept module: where it stands (``poses``, ``world``).

    A kept module stays docked where it is, so its goal is its pose. The ``AssemblyPlan``
    message carries the goals of the docking modules and the root's only; a plan read from
    it (:func:`smores_assembly.ros.convert.msg_to_plan`) lacks those of the other kept
    modules, which the pipelined schedule needs (a dock onto a kept parent: the dock's zone;
    kept bodies: placed, :mod:`smores_assembly.staging`). Goals already in the plan are
    kept; a kept module without a pose stays without a goal. Returns ``plan`` itself when
    nothing is missing.
    """
    missing = {m: poses[m] for m in plan.kept if m not in plan.goals and m in poses}
    if not missing:
        return plan
    return dataclasses.replace(plan, goals={**plan.goals, **missing})
