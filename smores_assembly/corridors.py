"""Geometric feasibility of docking actions: approach corridors on the unfolding grid.

A dock moves the child module along the normal of its parent's face: it stands at the
pre-dock pose, ``standoff`` further out than its goal on that normal, and slides straight in
(``docs/CONVENTIONS.md``, docking phases). A helping module drives one module width behind
the module it carries. So, on the unfolding grid (cells one module width ``w`` apart,
anchored at the physical root):

* the **swept cells** of a dock are its final cell plus its **corridor**: the cells
  ``cell + k·n`` (``n`` = unit step from the parent's cell to the child's cell) for
  ``k = 1 .. ceil(standoff / w)``, and one more for a helper dock (the helper's body);
* the **beside cells** are the lateral neighbours of the swept cells: a module placed there
  is passed flush (face to face, no penetration), which is legal motion (issue 11).

Rules derived from it (used by :func:`smores_assembly.planning.build_schedule`):

* **precedence**: dock X must run before dock Y when Y's final cell lies in X's corridor
  (once Y is placed, X could not reach its pre-dock pose or slide in);
* **same-stage conflict**: two docks may share a stage only when their swept cells neither
  overlap nor touch (Manhattan distance >= 2 between every pair), so two modules never
  slide side by side or cross each other's path while both move.

No ROS imports; cells are integer ``(i, j)`` in units of ``w`` along the root's x and y axes
(:func:`smores_assembly.topology.grid_cell`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from smores_assembly.errors import InputError

Cell = tuple[int, int]

#: Default distance of the pre-dock pose from the docked pose along the dock axis [m]
#: (the navigation's and the docking controller's default ``predock_standoff``/``standoff``).
DEFAULT_STANDOFF = 0.06


@dataclass(frozen=True)
class DockCorridor:
    """Grid footprint of one docking action.

    Attributes:
        node: the docking (child) node.
        parent: its parent node (already placed when the dock runs).
        cell: the child's final cell.
        normal: unit step from the parent's cell to ``cell`` (the child slides along
            ``-normal`` into ``cell``).
        corridor: cells covered between the pre-dock pose and ``cell`` (child body, and the
            helper's body behind it for a helper dock), nearest first; ``cell`` excluded.
        beside: lateral neighbours of ``cell`` and ``corridor`` (passed flush).
    """

    node: str
    parent: str
    cell: Cell
    normal: Cell
    corridor: tuple[Cell, ...]
    beside: tuple[Cell, ...]

    @property
    def swept(self) -> tuple[Cell, ...]:
        """The final cell followed by the corridor."""
        return (self.cell,) + self.corridor


@functools.lru_cache(maxsize=64)
def corridor_length(standoff: float, width: float, helper: bool) -> int:
    """Number of corridor cells beyond the final cell: ``ceil(standoff / width)`` for the
    moving module (at least 1: it arrives from outside) plus one for a helper's body.

    Raises:
        InputError: ``width <= 0`` or ``standoff < 0`` (names the value).

    Cached (a plan asks once per dock, always the same few values).
    """
    if not width > 0:
        raise InputError(f"width: must be > 0 m, got {width!r}")
    if not standoff >= 0:
        raise InputError(f"standoff: must be >= 0 m, got {standoff!r}")
    k = max(1, math.ceil(standoff / width - 1e-9))
    return k + (1 if helper else 0)


def dock_corridor(node: str, parent: str, cells: Mapping[str, Cell], helper: bool,
                  standoff: float = DEFAULT_STANDOFF, width: float = 0.08) -> DockCorridor:
    """The :class:`DockCorridor` of the dock of ``node`` onto ``parent``.

    Args:
        cells: node -> grid cell (both nodes present; they must be grid neighbours).
        helper: the dock is carried by a helping module (wheel-face dock).
        standoff: pre-dock distance along the dock axis [m]; width: module width [m].

    Raises:
        InputError: the two cells are not 4-neighbours.
    """
    (ci, cj), (pi, pj) = cells[node], cells[parent]
    n = (ci - pi, cj - pj)
    if abs(n[0]) + abs(n[1]) != 1:
        raise InputError(f"cells: {node!r} at {cells[node]} is not next to its parent "
                         f"{parent!r} at {cells[parent]}")
    k = corridor_length(standoff, width, helper)
    nx_, ny_ = n
    # plain loops over the 1-3 cells, not comprehensions (a 1,000-node plan builds every
    # corridor; the root search one per edge it turns round): the same cells in the same
    # order
    cells_out = []
    for s in range(1, k + 1):
        cells_out.append((ci + nx_ * s, cj + ny_ * s))
    corridor = tuple(cells_out)
    tx, ty = -ny_, nx_
    side = [(ci + tx, cj + ty), (ci - tx, cj - ty)]
    for x, y in corridor:
        side.append((x + tx, y + ty))
        side.append((x - tx, y - ty))
    return DockCorridor(node, parent, (ci, cj), n, corridor, tuple(side))


def blockers(corridors: Iterable[DockCorridor], cells: Mapping[str, Cell]
             ) -> dict[str, list[str]]:
    """For each dock, the nodes whose final cell lies in its corridor, sorted.

    Such a node must be placed *after* the dock (or the dock is infeasible when it cannot
    be, e.g. the root or an ancestor). O(total corridor length).
    """
    at = {c: v for v, c in cells.items()}
    out: dict[str, list[str]] = {}
    for d in corridors:
        found = []
        for c in d.corridor:  # 1-3 cells: a plain loop, then sorted without duplicates
            if c in at:
                found.append(at[c])
        out[d.node] = sorted(set(found)) if len(found) > 1 else found
    return out


def corridor_halo(d: DockCorridor) -> set[Cell]:
    """The swept cells of ``d`` and their 4-neighbours: ``conflict(a, b)`` holds exactly
    when a swept cell of ``b`` lies in ``corridor_halo(a)`` (one set lookup per cell, so a
    stage's conflicts are checked in O(swept cells) instead of over all pairs of docks)."""
    return {(x + dx, y + dy) for x, y in d.swept
            for dx, dy in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))}


def conflict(a: DockCorridor, b: DockCorridor) -> bool:
    """True when docks ``a`` and ``b`` may not run in the same stage: some swept cell of one
    equals or touches (shares an edge with) a swept cell of the other."""
    return any(abs(x[0] - y[0]) + abs(x[1] - y[1]) <= 1 for x in a.swept for y in b.swept)


def enclosure(start: Cell, occupied: Mapping[Cell, str],
              bounds: tuple[int, int, int, int] | None = None
              ) -> tuple[set[Cell], list[str]] | None:
    """The free region around ``start`` when the ``occupied`` cells (cell -> node) wall it
    in: ``(cells of the region, nodes bordering it, sorted)``; None when it is open (a
    4-connected way over free cells leads out of the occupied cells' bounding box).

    A module whose pre-dock pose lies in such a region cannot reach it (issue 11: refused
    at plan time, not found out by retries). Flood fill, O(region size); ``bounds``
    (``min x, max x, min y, max y`` of the occupied cells) saves the O(len(occupied)) scan
    for them when the caller keeps them.
    """
    if not occupied:
        return None
    if bounds is None:
        xs = [c[0] for c in occupied]
        ys = [c[1] for c in occupied]
        bounds = (min(xs), max(xs), min(ys), max(ys))
    lo_x, hi_x, lo_y, hi_y = bounds
    if start in occupied:
        return {start}, [occupied[start]]
    # fast path: a straight ray out of the bounding box over free cells (+x, -x, +y, -y;
    # plain loops, no generator per ray: ~1,000 calls in a 1,000-dock plan)
    sx, sy = start
    for x in range(sx, hi_x + 1):
        if (x, sy) in occupied:
            break
    else:
        return None
    for x in range(lo_x, sx + 1):
        if (x, sy) in occupied:
            break
    else:
        return None
    for y in range(sy, hi_y + 1):
        if (sx, y) in occupied:
            break
    else:
        return None
    for y in range(lo_y, sy + 1):
        if (sx, y) in occupied:
            break
    else:
        return None
    seen = {start}
    stack = [start]
    walls: set[str] = set()
    while stack:
        x, y = stack.pop()
        if not (lo_x <= x <= hi_x and lo_y <= y <= hi_y):
            return None
        for c in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if c in occupied:
                walls.add(occupied[c])
            elif c not in seen:
                seen.add(c)
                stack.append(c)
    return seen, sorted(walls)


@functools.lru_cache(maxsize=256)
def _lane_window(normal: Cell, start: float, clearance: float, limit: float
                 ) -> tuple[tuple[tuple[int, int, int, int], ...],
                            tuple[tuple[int, int, int], ...]]:
    """:func:`_lane_offsets` for a dock with this ``normal`` and :func:`lane_entry`'s
    ``start``, ``clearance`` and ``limit`` (one lookup per call: the planner's docks come
    in two kinds)."""
    half = math.ceil(clearance) - 1  # the largest |lateral offset| < clearance
    return _lane_offsets(normal, math.floor(start - clearance),
                         math.ceil(start + limit + clearance), half,
                         math.ceil(start + limit + 1))


@functools.lru_cache(maxsize=256)
def _lane_offsets(normal: Cell, lo: int, hi: int, half: int, last: int
                  ) -> tuple[tuple[tuple[int, int, int, int], ...],
                             tuple[tuple[int, int, int], ...]]:
    """The cells :func:`lane_entry` looks up, as grid offsets from the dock's final cell
    (the same for every dock with this ``normal`` and these bounds: worked out once):
    ``(a, lat, dx, dy)`` for axial positions ``lo..hi`` and lateral offsets
    ``-half..half``, axial first, the final cell itself left out; and ``(a, dx, dy)`` on the
    axis for ``a = 1..last``."""
    nx_, ny_ = normal
    tx, ty = -ny_, nx_
    near = tuple((a, lat, a * nx_ + lat * tx, a * ny_ + lat * ty)
                 for a in range(lo, hi + 1) for lat in range(-half, half + 1) if a or lat)
    axis = tuple((a, a * nx_, a * ny_) for a in range(1, last + 1))
    return near, axis


@dataclass(frozen=True)
class LaneEntry:
    """Where a dock's driven body can turn onto its docking axis (:func:`lane_entry`).

    Attributes:
        extra: distance [module widths] beyond the pre-dock pose of the nearest spot on the
            axis where the body can turn (every occupied cell's centre ``clearance`` away)
            reached without crossing an occupied cell; None when there is none.
        blocking: nodes on the axis beyond the pre-dock pose that end the lane before such
            a spot (at most one: the nearest), sorted.
        beside: nodes standing within ``clearance`` of the axis between the pre-dock pose
            and the end of the lane (they make it a lane: no turn there), sorted.
    """

    extra: float | None
    blocking: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()


@functools.lru_cache(maxsize=1024)
def _spot(extra: float) -> LaneEntry:
    """``LaneEntry(extra=extra)``, one instance per value (frozen: shared)."""
    return LaneEntry(extra=extra)


def lane_entry(d: DockCorridor, occupied: Mapping[Cell, str], start: float, clearance: float,
               limit: float, step: float = 0.05) -> LaneEntry:
    """The turning spot of a dock on its own axis, or why there is none (issue 11).

    The driven body (the moving module, or for a helper dock the helper carrying it one
    width ahead) reaches its pre-dock pose by turning onto the docking axis where no module
    is within ``clearance`` of its centre, then sliding straight in along the axis, flush
    past modules beside it (the docking controller's staging pose,
    :func:`smores_assembly.docking.control.staging_extra`, and the navigation's
    :func:`smores_assembly.navigation.stage.clear_predock`). When modules stand beside the
    pre-dock pose, that spot lies farther out along the axis; a module *on* the axis before
    it ends the lane, and a spot more than ``limit`` out is never tried: the pre-dock pose
    cannot be reached and the dock would only fail by retrying.

    Positions are along ``d.normal`` from the final cell's centre, in module widths.

    Args:
        d: the dock's corridor (its cells on the unfolding grid).
        occupied: cell -> node of the modules standing still while the dock runs.
        start: axial position of the driven body's centre at the pre-dock pose
            (``standoff / w``, plus 1 for a helper dock).
        clearance: centre distance needed to turn in place [widths]; limit: farthest
            extra distance tried [widths]; step: search step [widths].

    Returns:
        :class:`LaneEntry`. The search looks up only the grid cells within ``clearance``
        of the searched stretch of the axis (O(clearance * (limit + clearance) * limit /
        step), independent of ``len(occupied)``: a 1,000-node comb has 1,000 docks); the
        reasons of a refusal (``blocking``, ``beside``) scan ``occupied`` once.
    """
    (cx, cy), (nx_, ny_) = d.cell, d.normal
    tx, ty = -ny_, nx_

    get = occupied.get
    # A cell farther than `clearance` from the searched stretch [start, start + limit] of
    # the axis never stops a turn; a node on the axis beyond start + limit + 1 never ends
    # the searched lane (the body's front stays behind it).
    near_offs, axis_offs = _lane_window(d.normal, start, clearance, limit)
    # the nearest node on the axis (it ends the lane), looked up as far as the body's
    # front has come (`ax` axis cells so far)
    block: tuple[int, str] | None = None
    ax, n_axis = 0, len(axis_offs)
    k = 0
    # `near` is sorted by axial position a and u only grows: a cell with u - a >= clearance
    # is out of reach for good (dropped from the front), and the first cell with
    # a - u >= clearance ends the search for this u (hypot(a - u, lat) >= |a - u|): the
    # same first hit as a scan of every cell, fewer cells looked at. The cells are looked
    # up as the search reaches them (`looked` offsets so far, axial first): most searches
    # end a few cells out, where a lookup of the whole stretch cost half of the call
    near: list[tuple[int, int, str]] = []
    first, count, looked, n_offs = 0, 0, 0, len(near_offs)
    hypot = math.hypot
    while k * step <= limit + 1e-9:
        u = start + k * step
        while block is None and ax < n_axis and u + 0.5 > axis_offs[ax][0] - 0.5 + 1e-9:
            a, dx, dy = axis_offs[ax]
            ax += 1
            v = get((cx + dx, cy + dy))
            if v is not None:
                block = (a, v)
        if block is not None and u + 0.5 > block[0] - 0.5 + 1e-9:
            break  # the body would overlap the module that ends the lane
        while looked < n_offs and near_offs[looked][0] - u < clearance:
            a, lat, dx, dy = near_offs[looked]
            looked += 1
            v = get((cx + dx, cy + dy))
            if v is not None:
                near.append((a, lat, v))
                count += 1
        while first < count and u - near[first][0] >= clearance:
            first += 1
        hit = None
        for j in range(first, count):
            a, lat, _ = near[j]
            if a - u >= clearance:
                break
            if hypot(a - u, lat) < clearance - 1e-9:
                hit = (a, lat)
                break
        if hit is None:
            return _spot(k * step)
        # every spot short of the far side of the hit cell's clearance disc is taken too:
        # jump to the last step at least one step inside it (the steps skipped lie
        # strictly inside the disc, so the scan's result is unchanged)
        a, lat = hit
        reach = a + math.sqrt(max((clearance - 1e-9) ** 2 - lat * lat, 0.0))
        jump = math.floor((reach - start) / step - 1e-6)
        k = jump if jump > k + 1 else k + 1
    for a, dx, dy in axis_offs[ax:]:  # the rest of the axis, when no node ended the lane
        if block is not None:
            break
        v = get((cx + dx, cy + dy))
        if v is not None:
            block = (a, v)
    rel = []
    for (x, y), v in occupied.items():
        if (x, y) == d.cell:
            continue
        rel.append(((x - cx) * nx_ + (y - cy) * ny_, (x - cx) * tx + (y - cy) * ty, v))
    if block is None:
        on_axis = sorted((a, v) for a, lat, v in rel if lat == 0 and a >= 1)
        block = on_axis[0] if on_axis else None
    end = block[0] if block is not None else start + limit
    beside = sorted({v for a, lat, v in rel if lat != 0 and abs(lat) < clearance
                     and start - clearance < a < end + clearance})
    return LaneEntry(extra=None, blocking=(block[1],) if block is not None else (),
                     beside=tuple(beside))
