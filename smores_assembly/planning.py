"""Assembly planning: physical root, task assignment and the parallel docking schedule.

Source: "SMORES-EP, a Modular Robot with Parallel Self-assembly" (Liu, Yim et al.), Sec. IV:

* IV-A root search: the root node is the tree centroid of G
  (:func:`smores_assembly.topology.tree_centroid`); the physical root is the module nearest
  the mean module position (:func:`select_root_module`), which stays where it is: the
  unfolding grid is anchored at its current pose.
* IV-B task assignment: goal poses from the planar unfolding; Kuhn–Munkres (scipy's
  ``linear_sum_assignment``) of the non-root modules to the non-root goals by Euclidean
  distance (:func:`assign_modules`); spare modules stay idle or serve as helpers.
* IV-C parallel assembly: one docking action per edge, actions of equal depth in parallel,
  the root's LEFT/RIGHT docks one stage before its TOP/BOTTOM docks; a dock whose moving
  face is LEFT or RIGHT (a wheel face) needs a helping module (:func:`build_schedule`).

No ROS imports. Units: m, rad; poses in ``world``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Iterator, Mapping, Sequence

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from smores_assembly.corridors import (DEFAULT_STANDOFF, Cell, DockCorridor, corridor_halo,
                                       LaneEntry, dock_corridor, enclosure, lane_entry)
from smores_assembly.corridors import blockers as corridor_blockers
from smores_assembly.docking.control import (PICKUP_CLEARANCE_WIDTHS, STAGING_LIMIT,
                                             DockingSettings, dock_axis, free_pickup_faces)
from smores_assembly.edge import Edge
from smores_assembly.errors import InputError, ParamsError, PlanningError
from smores_assembly.geometry import MODULE_WIDTH, Face, Pose2D
from smores_assembly.params import check_ranges, param_field
from smores_assembly.navigation.stage import NavSettings, carry_clearance, turn_clearance
from smores_assembly.scenario import Scenario
from smores_assembly.staging import DEFAULT_SCHEDULE, StagingSettings, check_schedule
from smores_assembly.topology import (grid_cell, root_candidates, rooted_edges,
                                     tree_centroid, unfold)


@dataclass
class PlanningNodeSettings:
    """Parameters of the ``root_search`` and ``task_assignment`` nodes."""

    tracked_only: bool = param_field(
        True, "Plan only with modules whose mocap track is valid (ModuleState.tracked).")
    wait_warning_period_s: float = param_field(
        5.0, "Period of the warning while the module states cannot serve the target [s].",
        lo=0.1, hi=3600.0)
    schedule: str = param_field(
        DEFAULT_SCHEDULE, "task_assignment: sequential (one dock per stage, the baseline "
        "of the benchmarks), staged (the paper's parallel stages) or pipelined (parallel "
        "stages; modules of later stages drive to staging poses near their pre-dock poses "
        "meanwhile, smores_assembly.staging)")

    def validate(self) -> None:
        """Raise :class:`~smores_assembly.errors.ParamsError` naming the field on a bad
        value."""
        check_ranges(self)
        try:
            check_schedule(self.schedule)
        except InputError as exc:
            raise ParamsError(str(exc), field="schedule") from None


@dataclass
class DockAction:
    """One docking action: ``module`` (playing ``node``) docks its ``child_face`` onto
    ``parent_face`` of ``parent_module`` (playing ``parent_node``).

    Attributes:
        stage: execution group (0-based); actions of one stage run in parallel.
        depth: hop distance of ``node`` from the root node.
        needs_helper: ``child_face`` is LEFT/RIGHT (a wheel face): a helper carries it.
        helper: the helping module's id (``None`` when not needed).
        goal: docked pose of ``module`` in ``world`` [m, m, rad].
    """

    module: str
    node: str
    stage: int
    depth: int
    parent_module: str
    parent_node: str
    parent_face: Face
    child_face: Face
    needs_helper: bool
    helper: str | None
    goal: Pose2D

    def describe(self) -> str:
        """Short human description, e.g. ``m3 (left) BOTTOM -> m1.LEFT``."""
        return (f"{self.module} ({self.node}) {self.child_face.value} -> "
                f"{self.parent_module}.{self.parent_face.value}")

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "node": self.node, "stage": self.stage,
                "depth": self.depth, "parent_module": self.parent_module,
                "parent_node": self.parent_node, "parent_face": self.parent_face.value,
                "child_face": self.child_face.value, "needs_helper": self.needs_helper,
                "helper": self.helper, "goal": list(self.goal.as_tuple())}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DockAction":
        return cls(module=d["module"], node=d["node"], stage=int(d["stage"]),
                   depth=int(d["depth"]), parent_module=d["parent_module"],
                   parent_node=d["parent_node"], parent_face=Face.parse(d["parent_face"]),
                   child_face=Face.parse(d["child_face"]),
                   needs_helper=bool(d["needs_helper"]), helper=d.get("helper") or None,
                   goal=Pose2D(*map(float, d["goal"])))


@dataclass
class UndockAction:
    """One undocking action of a reconfiguration (:mod:`smores_assembly.reconfigure`):
    ``module`` switches off the magnet of its ``face``, which holds it to ``from_face`` of
    ``from_module``, backs off straight along its heading to :attr:`pivot`, turns there in
    place towards ``park`` and drives straight to it.

    Attributes:
        stage: execution group (0-based; undocking stages come before every docking stage).
        start: ``module``'s docked pose at the start of the action (``world``).
        direction, distance: the back-off, ``distance`` [m] along the heading, forward when
            ``direction`` is +1, in reverse when -1 (away from ``from_module`` for a
            TOP/BOTTOM face, sliding along it for a wheel face).
        park: the parking pose; its yaw is the direction of the drive from the pivot.
    """

    module: str
    face: Face
    from_module: str
    from_face: Face
    stage: int
    start: Pose2D
    park: Pose2D
    direction: int
    distance: float

    @property
    def pivot(self) -> Pose2D:
        """Where the back-off ends (``start`` moved ``direction * distance`` along its
        heading): the module turns there towards ``park``."""
        c, s = math.cos(self.start.yaw), math.sin(self.start.yaw)
        d = self.direction * self.distance
        return Pose2D(self.start.x + d * c, self.start.y + d * s, self.start.yaw)

    def describe(self) -> str:
        """Short human description, e.g. ``m4 BOTTOM off m3.LEFT, forward 0.160 m``."""
        way = "forward" if self.direction > 0 else "reverse"
        return (f"{self.module} {self.face.value} off {self.from_module}."
                f"{self.from_face.value}, {way} {self.distance:.3f} m")

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "face": self.face.value,
                "from_module": self.from_module, "from_face": self.from_face.value,
                "stage": self.stage, "start": list(self.start.as_tuple()),
                "park": list(self.park.as_tuple()), "direction": self.direction,
                "distance": self.distance}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "UndockAction":
        return cls(module=d["module"], face=Face.parse(d["face"]),
                   from_module=d["from_module"], from_face=Face.parse(d["from_face"]),
                   stage=int(d["stage"]), start=Pose2D(*map(float, d["start"])),
                   park=Pose2D(*map(float, d["park"])), direction=int(d["direction"]),
                   distance=float(d["distance"]))


@dataclass
class Plan:
    """An assembly plan.

    Attributes:
        name: target (scenario) name.
        root_node, root_module: the tree centroid and the physical root module.
        root_pose: the root module's pose, where the grid is anchored (``world``).
        assignment: node -> module, for every node (root included).
        goals: module -> docked pose in ``world``, for every assigned module.
        total_cost_m: summed straight-line distance from the non-root modules' poses to
            their goals [m] (the assignment's cost).
        stages: ``stages[k]`` = docking modules of stage k, in execution order.
        actions: one per edge, sorted by stage, then depth, then node.
        idle: modules that play no node (spare modules and helpers), sorted.
        helpers: modules that carry a module in some action, in order of first use.
        undocks: a reconfiguration's undocking actions (:mod:`smores_assembly.reconfigure`),
            by stage; their stages come first in ``stages``, the docks' after them.
        kept: modules of the start structure that stay docked (their nodes get no action).
        method: ``"assembly"`` (modules start single), ``"reuse"`` or ``"full"``
            (reconfiguration keeping a common part, or the paper's full disassembly).
        schedule: how the stages run (:data:`smores_assembly.staging.SCHEDULES`):
            ``staged`` (the paper's), ``pipelined`` (later stages' modules drive to
            staging poses meanwhile) or ``sequential`` (one dock per stage).
    """

    name: str
    root_node: str
    root_module: str
    root_pose: Pose2D
    assignment: dict[str, str]
    goals: dict[str, Pose2D]
    total_cost_m: float
    stages: list[list[str]]
    actions: list[DockAction]
    idle: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    undocks: list[UndockAction] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    method: str = "assembly"
    schedule: str = "staged"

    @property
    def num_undock_stages(self) -> int:
        """Number of undocking stages (they come first)."""
        return 1 + max((u.stage for u in self.undocks), default=-1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``smores-assemble plan --json``)."""
        return {"name": self.name, "method": self.method,
                "undocks": [u.to_dict() for u in self.undocks], "kept": list(self.kept),
                "root": {"node": self.root_node, "module": self.root_module},
                "assignment": dict(self.assignment),
                "goals": {m: list(p.as_tuple()) for m, p in self.goals.items()},
                "total_cost_m": self.total_cost_m,
                "stages": [list(s) for s in self.stages],
                "actions": [a.to_dict() for a in self.actions],
                "idle": list(self.idle), "helpers": list(self.helpers),
                "schedule": self.schedule}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Plan":
        """Inverse of :meth:`to_dict`."""
        goals = {m: Pose2D(*map(float, p)) for m, p in d["goals"].items()}
        root_module = d["root"]["module"]
        return cls(name=d.get("name", ""), root_node=d["root"]["node"],
                   root_module=root_module, root_pose=goals[root_module],
                   assignment=dict(d["assignment"]), goals=goals,
                   total_cost_m=float(d["total_cost_m"]),
                   stages=[list(s) for s in d["stages"]],
                   actions=[DockAction.from_dict(a) for a in d["actions"]],
                   idle=list(d.get("idle", [])), helpers=list(d.get("helpers", [])),
                   undocks=[UndockAction.from_dict(u) for u in d.get("undocks", [])],
                   kept=list(d.get("kept", [])), method=d.get("method", "assembly"),
                   schedule=check_schedule(d.get("schedule", "staged")))

    def action_of(self, module: str) -> DockAction | None:
        """The docking action of ``module`` (``None`` for the root and idle modules)."""
        for a in self.actions:
            if a.module == module:
                return a
        return None


@dataclass(frozen=True)
class RootChoice:
    """Result of the root search: root node of G, physical root module and its pose."""

    node: str
    module: str
    pose: Pose2D


def check_finite_poses(poses: Mapping[str, Pose2D], what: str) -> None:
    """PlanningError naming the entry and field of the first non-finite value, e.g.
    ``modules.m3.x: non-finite value nan in pose (nan, 0.0, 0.0)``."""
    # fast path (plan_assembly checks ~1,100 poses 4x at 1,000 modules): a finite sum
    # proves every term finite (a nan or an inf makes it nan or inf); a non-finite one (or
    # an overflow) goes through the loop that names the entry
    vals = poses.values()
    if math.isfinite(sum([p.x + p.y + p.yaw for p in vals])):
        return
    for name, p in poses.items():
        for field_name, v in zip(("x", "y", "yaw"), p.as_tuple()):
            if not math.isfinite(v):
                raise PlanningError(f"{what}.{name}.{field_name}: non-finite value {v} in "
                                    f"pose {p.as_tuple()}")


def select_root_module(modules: Mapping[str, Pose2D]) -> str:
    """The physical root: the module nearest the mean module position (paper Sec. IV-A).

    Tie-break (equal distance up to 1e-12 m): the lexicographically smallest id.

    Raises:
        PlanningError: no modules; a non-finite pose (naming module and field).
    """
    if not modules:
        raise PlanningError("modules: no module to choose the root from")
    check_finite_poses(modules, "modules")
    ids = list(modules)
    xy = np.array([[modules[m].x, modules[m].y] for m in ids])
    d = np.hypot(*(xy - xy.mean(axis=0)).T)
    best = d.min()
    # the ids within the tie tolerance, one array comparison (the same float64 values as a
    # comparison per module)
    return min(ids[i] for i in np.flatnonzero(d <= best + 1e-12))


def assign_modules(goals: Mapping[str, Pose2D], modules: Mapping[str, Pose2D]
                   ) -> tuple[dict[str, str], float]:
    """Kuhn–Munkres assignment of modules to goal poses by Euclidean distance (Sec. IV-B).

    Minimises the summed straight-line distance (cost matrix: nodes x modules, rectangular
    when there are spare modules, which stay unassigned). Solved with
    :func:`solve_assignment` (scipy's ``linear_sum_assignment``, warm-started on clustered
    goals); rows and columns are sorted by name first, so the result does not depend on
    dict order.

    Args:
        goals: node -> goal pose (``world``).
        modules: module id -> current pose (``world``), at least as many as goals.

    Returns:
        ``(node -> module, total cost in m)``; the mapping follows the order of ``goals``.

    Raises:
        PlanningError: fewer modules than goals; a non-finite pose (naming the module or
            node and the field; scipy would only say "invalid numeric entries").
    """
    if len(modules) < len(goals):
        raise PlanningError(f"modules: {len(modules)} modules for {len(goals)} goal poses")
    check_finite_poses(modules, "modules")
    check_finite_poses(goals, "goals")
    if not goals:
        return {}, 0.0
    nodes = sorted(goals)
    ids = sorted(modules)
    g = np.array([[goals[n].x, goals[n].y] for n in nodes])
    m = np.array([[modules[i].x, modules[i].y] for i in ids])
    # scipy's cdist: the same values as sqrt(dx^2 + dy^2) (bit for bit on the bench's
    # matrices) in one C loop, half the time of the in-place numpy passes (1,023 x 1,126:
    # 3.1 vs 5.8 ms) and a sixth of np.hypot's
    ro: np.ndarray | None = None
    co: np.ndarray | None = None
    if _warm_start_applies(g, m):
        # The warm-started solve in its own order (only the solver's: mapped back below):
        # goal rows outside in (as _solve_outside_in orders them, which then has nothing
        # to reorder and copies nothing) and module columns by bearing from the goals'
        # centroid, so that neighbouring columns are neighbouring modules (scipy on the
        # reduced matrices of bench_planning's ten 1,000-node instances, min of 3: 418 ->
        # 361 ms summed). Stable sorts of name-sorted arrays: independent of dict order.
        ro, co = _solver_order(g, m)
        g, m = g[ro], m[co]
    # solve_assignment decides on the arrays in the solver's order (its sums in that
    # order); where it warm-starts, the same solve in one buffer
    if ro is not None and _warm_start_applies(g, m):
        rows, cols, vals = _solve_warm_in_place(g, m)
    else:
        cost = cdist(g, m)
        rows, cols = solve_assignment(cost, g, m)
        vals = cost[rows, cols]
    if ro is not None and co is not None:
        rows, cols = ro[rows], co[cols]
        back = np.argsort(rows)
        rows, cols, vals = rows[back], cols[back], vals[back]
    chosen = {nodes[r]: ids[c] for r, c in zip(rows, cols)}
    # summed in node-name order (the values of cdist in name order, bit for bit)
    total = float(vals.sum())
    return {n: chosen[n] for n in goals}, total


def _solve_warm_in_place(goals_xy: np.ndarray, modules_xy: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`solve_assignment`'s warm-started solve of the distances from the goals
    (n, 2), already outside in, to the modules (m, 2), in one (m, m) buffer: ``cdist``
    writes the distances into its goal rows, :func:`coarse_goal_duals` reads them there,
    :func:`reduced_matrix` turns them into the reduced costs in place. The same values
    and the same scipy call as ``solve_assignment(cdist(g, m), g, m)``, without a
    separate distance matrix, and that buffer kept for the thread's next plan
    (:func:`_scratch`: no memory fresh from the system, no page faults, after the first).

    Returns:
        ``(rows, cols, vals)``: every goal row, its module column and their distance [m]
        (:func:`_distances`, the value ``cdist`` gave, bit for bit).
    """
    n, m = len(goals_xy), len(modules_xy)
    out = _scratch(m * m).reshape(m, m)
    cost = cdist(goals_xy, modules_xy, out=out[:n])
    red, _ = reduced_matrix(cost, coarse_goal_duals(cost, goals_xy, modules_xy), out=out)
    cols = _solve_outside_in(red, goals_xy)[:n]
    return np.arange(n), cols, _distances(goals_xy, modules_xy[cols])


#: The warm-started solve's (m, m) buffer is kept for the next plan of the same thread
#: when it holds at most this many float64 values (2**22: 32 MB, m <= 2,048).
SCRATCH_MAX_VALUES = 1 << 22
_SCRATCH = threading.local()


def _scratch(size: int) -> np.ndarray:
    """A float64 buffer of ``size`` values for :func:`_solve_warm_in_place`, kept per
    thread between plans (up to :data:`SCRATCH_MAX_VALUES`; larger ones are fresh).

    A fresh (m, m) array is memory new from the system in every plan (glibc maps a
    block that large and unmaps it on free), so each of its pages faults on first touch
    (1,127 modules, bench_planning's comb: ~3,200 minor faults per plan, 5-25 ms of
    system CPU time on this shared machine; with the buffer kept: none after the first
    plan). Its content is never read before it is written."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is not None and buf.size >= size:
        return buf[:size]
    buf = np.empty(size)
    if size <= SCRATCH_MAX_VALUES:
        _SCRATCH.buf = buf
    return buf


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances between the rows of ``a`` and ``b`` (k, 2) [m], pair by pair:
    ``sqrt(dx * dx + dy * dy)``, the arithmetic of scipy's ``cdist`` (the same values,
    bit for bit: ``test_distances_equal_cdist_bit_for_bit``)."""
    d = a - b
    dx, dy = d[:, 0], d[:, 1]
    return np.sqrt(dx * dx + dy * dy)


def _solver_order(goals_xy: np.ndarray, modules_xy: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Row and column orders of the warm-started solve: the goals (n, 2) farthest from
    their centroid first (:func:`_outside_in_order`), the modules (m, 2) by bearing
    from that centroid (``arctan2``, stable)."""
    cen = goals_xy.mean(axis=0)
    dm = modules_xy - cen
    return (_outside_in_order(goals_xy),
            np.argsort(np.arctan2(dm[:, 1], dm[:, 0]), kind="stable"))


def _outside_in_order(goals_xy: np.ndarray) -> np.ndarray:
    """Indices of the goals (n, 2), farthest from their centroid first (stable)."""
    cen = goals_xy.mean(axis=0)
    return np.argsort(-np.hypot(goals_xy[:, 0] - cen[0], goals_xy[:, 1] - cen[1]),
                      kind="stable")


def _warm_start_applies(goals_xy: np.ndarray, modules_xy: np.ndarray) -> bool:
    """True when :func:`solve_assignment` warm-starts (n goals (n, 2) among m modules
    (m, 2)): at least :data:`WARM_START_MIN_GOALS` goals, m >= n, and the goals clustered
    (RMS radius about their centroid below :data:`WARM_START_MAX_SPREAD` times the
    modules' RMS distance from it)."""
    n, m = len(goals_xy), len(modules_xy)
    if n < WARM_START_MIN_GOALS or m < n:
        return False
    cen = goals_xy.mean(axis=0)
    spread = math.sqrt(float(((goals_xy - cen) ** 2).sum(axis=1).mean()))
    reach = math.sqrt(float(((modules_xy - cen) ** 2).sum(axis=1).mean()))
    return spread < WARM_START_MAX_SPREAD * reach


#: Below this many goals the warm start is not worth building (scipy alone is ~1 ms).
WARM_START_MIN_GOALS = 64
#: Warm start only when the goals are this clustered: RMS radius of the goals about their
#: centroid below this fraction of the modules' RMS distance from that centroid.
WARM_START_MAX_SPREAD = 0.5
#: The warm start's duals come from a half-size problem (:func:`coarse_goal_duals`) down to
#: this many goals; below it from the radial potential (:func:`radial_goal_duals`).
COARSE_MIN_GOALS = 300
#: Relaxation sweeps that make a coarse solution's column duals tight (an approximation is
#: enough: the duals only warm-start the exact solve).
COARSE_DUAL_SWEEPS = 15


def radial_goal_duals(goals_xy: np.ndarray) -> np.ndarray:
    """Goal duals ``u_i = -|g_i - c|`` (``c`` the goals' centroid) [m]: the Kantorovich
    potential of Euclidean transport into a compact group, falling at slope 1 along the
    rays into it. Shape (n,) for ``goals_xy`` (n, 2)."""
    cen = goals_xy.mean(axis=0)
    return -np.hypot(goals_xy[:, 0] - cen[0], goals_xy[:, 1] - cen[1])


def reduced_matrix(cost: np.ndarray, goal_duals: np.ndarray, out: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Reduced cost matrix of the rectangular assignment ``cost`` (n goals x m modules,
    n <= m), squared with m - n dummy rows, under the goal duals ``goal_duals`` (n,) and
    module duals that are their c-transform.

    The module duals are ``v_j = min(min_i (cost_ij - u_i), a)``, with ``a`` the n-th
    smallest of the inner minima: the dummy rows' dual, so that about m - n modules are
    left over (the farthest in this potential). Every reduced cost is >= 0.

    Subtracting a constant from a row or a column of a *square* matrix changes every
    complete assignment's total by the same amount, so the optimal assignments of the
    returned matrix are exactly those of ``cost`` padded with zero-cost dummy rows (a
    dummy row's column = a module left over), whatever ``goal_duals`` are: the result
    stays exact; only the work of a shortest-augmenting-path solver changes (scipy's starts
    from zero duals and, on clustered goals, searches through long chains of near-ties;
    the nearer the duals are to optimal ones, the shorter its searches).

    Args:
        cost: (n, m) distances [m], n <= m; goal_duals: (n,) [m].
        out: optional (m, m) C-ordered float64 buffer for the result; ``cost`` may be
            its first n rows (``out[:n]``), which are then overwritten (element by
            element: the same values).

    Returns:
        ``(reduced, v)``: (m, m) reduced costs (rows n.. are the dummy rows) and the (m,)
        module duals subtracted from the columns [m].
    """
    n, m = cost.shape
    if out is None:
        out = np.empty((m, m))
    red = out[:n]
    np.subtract(cost, goal_duals[:, None], out=red)
    w = red.min(axis=0)
    a = np.partition(w, n - 1)[n - 1] if m > n else float(w.max())
    v = np.minimum(w, a)
    red -= v[None, :]
    out[n:] = (a - v)[None, :]
    return out, v


def radial_duals(cost: np.ndarray, goals_xy: np.ndarray) -> np.ndarray:
    """:func:`reduced_matrix` of ``cost`` (n goals x m modules, n <= m) under
    :func:`radial_goal_duals`: (m, m) reduced costs, rows n.. the dummy rows.

    Args:
        cost: (n, m) distances [m], n <= m.
        goals_xy: (n, 2) goal positions [m] (rows of ``cost``).
    """
    return reduced_matrix(cost, radial_goal_duals(goals_xy))[0]


def _half_sample(goals_xy: np.ndarray, modules_xy: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (sorted) of a stratified half of the goals and of the modules: modules
    sorted by bearing from the goals' centroid, every other one (the density per direction,
    which shapes the potential, is kept to one module); goals in rings of about one goal
    spacing round the centroid, sorted by bearing within a ring, every other one."""
    cen = goals_xy.mean(axis=0)
    dm = modules_xy - cen
    mi = np.sort(np.argsort(np.arctan2(dm[:, 1], dm[:, 0]), kind="stable")[::2])
    dg = goals_xy - cen
    r = np.hypot(dg[:, 0], dg[:, 1])
    n = len(goals_xy)
    # spacing of n goals filling a disc of their RMS radius (only the sample's balance
    # depends on it, never the result)
    spacing = max(float(np.sqrt((r * r).mean() * 2.0 * math.pi / n)), 1e-9)
    order = np.lexsort((np.arctan2(dg[:, 1], dg[:, 0]), np.floor(r / spacing)))
    return np.sort(order[::2]), mi


def coarse_goal_duals(cost: np.ndarray, goals_xy: np.ndarray, modules_xy: np.ndarray,
                      min_goals: int = COARSE_MIN_GOALS,
                      sweeps: int = COARSE_DUAL_SWEEPS) -> np.ndarray:
    """Approximate optimal goal duals of the assignment ``cost`` (n goals x m modules,
    n <= m) [m], shape (n,), from a problem of half the size (multilevel warm start).

    The half problem (:func:`_half_sample`: a stratified half of the goals and of the
    modules, so the same density per direction) is solved exactly, itself warm-started the
    same way down to ``min_goals`` goals (there :func:`radial_goal_duals`); its column
    duals are made tight on its solution by ``sweeps`` Bellman-Ford relaxations
    (``v_j = min_i (r_ij - u_i)``, ``u_i = r_{i s(i)} - v_{s(i)}``); the goal duals of the
    whole problem are their c-transform ``u_i = min_j (cost_ij - v_j)`` over the half's
    assigned modules. Only the speed of the exact solve depends on them: the optimal
    potential varies slowly over the goals, so half the problem locates it to a few mm
    where the radial potential is off by 5-10 cm (1,000 modules: scipy on the reduced
    matrix 25-45 ms instead of 60-130 ms)."""
    n = cost.shape[0]
    if n < min_goals:
        return radial_goal_duals(goals_xy)
    gi, mi = _half_sample(goals_xy, modules_xy)
    # np.take on the row block: a C-ordered copy (cost[np.ix_(gi, mi)] is 2-3x slower)
    sub = np.take(cost[gi], mi, axis=1)
    red, v = reduced_matrix(sub, coarse_goal_duals(sub, goals_xy[gi], modules_xy[mi],
                                                   min_goals, sweeps))
    cols = _solve_outside_in(red, goals_xy[gi])
    tight = red[np.arange(len(cols)), cols]
    vr = np.zeros(red.shape[1])
    buf = np.empty_like(red)
    for _ in range(sweeps):
        np.subtract(red, (tight - vr[cols])[:, None], out=buf)
        lower = buf.min(axis=0)
        if np.all(lower >= vr - 1e-12):
            break
        np.minimum(vr, lower, out=vr)
    used = cols[:len(gi)]
    dual = v[used] + vr[used]
    # the c-transform over the half's assigned modules, one module per row of the
    # transposed gather (C-ordered): cost[:, idx] - dual gathers into a column-strided
    # array whose subtraction and row minima ran 5-10x slower (1,023 x 511: ~12 vs ~2 ms);
    # the same values (the same subtraction, an exact minimum)
    ct = cost.T[mi[used]]
    ct -= dual[:, None]
    return ct.min(axis=0)


def solve_assignment(cost: np.ndarray, goals_xy: np.ndarray, modules_xy: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Optimal assignment of the rows (goals) of ``cost`` to its columns (modules).

    ``scipy.optimize.linear_sum_assignment`` (shortest augmenting paths, exact). When the
    goals are clustered among the modules (the common case: the target unfolds around the
    root module, the swarm is spread around it) and there are at least
    :data:`WARM_START_MIN_GOALS`, it solves the equivalent :func:`reduced_matrix` instead,
    under the goal duals of :func:`coarse_goal_duals` (radial below
    :data:`COARSE_MIN_GOALS` goals): the same optimum (an exact transformation, not a
    heuristic), 5-10x faster at 1,000 modules than scipy alone
    (``bench/bench_planning.py``).

    Args:
        cost: (n, m) costs [m], n <= m; goals_xy: (n, 2); modules_xy: (m, 2) [m].

    Returns:
        ``(rows, cols)`` as ``linear_sum_assignment`` (rows sorted, every row assigned).
    """
    n = cost.shape[0]
    if _warm_start_applies(goals_xy, modules_xy):
        red, _ = reduced_matrix(cost, coarse_goal_duals(cost, goals_xy, modules_xy))
        return np.arange(n), _solve_outside_in(red, goals_xy)[:n]
    return linear_sum_assignment(cost)


def _solve_outside_in(red: np.ndarray, goals_xy: np.ndarray) -> np.ndarray:
    """The column of every row of the square :func:`reduced_matrix` ``red`` (m, m) in an
    optimal assignment (rows 0..n-1 the goals at ``goals_xy`` (n, 2), then the dummy rows),
    by ``linear_sum_assignment`` on its rows reordered: the goals farthest from their
    centroid first, the dummy rows last. The order is only the solver's: the assignment is
    mapped back to the rows of ``red``. Scipy adds the rows one shortest augmenting path at
    a time; taken by name (a comb's nodes tooth by tooth, neighbours after each other) the
    later rows of a clustered target keep finding their columns taken, from the outside in
    they find them free more often (1,023 x 1,125 comb matrices under the coarse duals:
    ~15 % less solver time, 212 -> 177 ms over five)."""
    n = len(goals_xy)
    order = _outside_in_order(goals_xy)
    if np.array_equal(order, np.arange(n)):  # already in that order (assign_modules)
        return linear_sum_assignment(red)[1]
    perm = np.concatenate([order, np.arange(n, red.shape[0])])
    r, c = linear_sum_assignment(red[perm])
    cols = np.empty_like(c)
    cols[perm[r]] = c
    return cols


class _RootRefusal(PlanningError):
    """A refusal that depends on the root node (it decides which module of each edge moves,
    so along which face normal each dock runs): another root may plan."""


class _CorridorCycle(_RootRefusal):
    """No docking order exists from this root: docks' approach corridors and the parent
    precedences form a cycle (:func:`build_schedule`); another root may have one."""


class _Unreachable(_RootRefusal):
    """A dock cannot reach its pre-dock pose from this root's orientation of the edges
    (walled in, a dead-end lane, no free pick-up side) whatever the order of the walls
    (:func:`build_schedule`)."""


def _precedence_edges(oriented: Mapping[str, Edge], root_node: str,
                      blocked_by: Mapping[str, Sequence[str]],
                      docking: Collection[str] | None = None
                      ) -> Iterator[tuple[str, str, str]]:
    """Rule 2 of :func:`build_schedule`, as ``(u, v, why)``: u before v. A parent before its
    child (``parent``), a dock before every node in its corridor (``corridor``;
    ``blocked_by``: dock -> those nodes), the root's LEFT/RIGHT docks before its TOP/BOTTOM
    docks (``root``; among ``docking``, the nodes that dock: default every non-root
    node)."""
    for v, e in oriented.items():
        yield e.parent, v, "parent"
        for w in blocked_by.get(v, ()):
            yield v, w, "corridor"
    at_root = [(v, e.parent_face.is_wheel) for v, e in oriented.items()
               if e.parent == root_node and (docking is None or v in docking)]
    for v, wheel in at_root:
        if not wheel:
            for u, u_wheel in at_root:
                if u_wheel:
                    yield u, v, "root"


def _precedence_graph(oriented: Mapping[str, Edge], nodes: Sequence[str], root_node: str,
                      blocked_by: Mapping[str, Sequence[str]],
                      docking: Collection[str] | None = None) -> "nx.DiGraph":
    """:func:`_precedence_edges` as a graph over ``nodes`` (edge attribute ``why``)."""
    prec = nx.DiGraph()
    prec.add_nodes_from(nodes)
    for u, v, why in _precedence_edges(oriented, root_node, blocked_by, docking):
        prec.add_edge(u, v, why=why)
    return prec


#: The root search tries at most ``max(ROOT_SEARCH_MIN, ROOT_SEARCH_WORK // N)`` root nodes
#: of an N-node target whose centroid has no docking order (each try costs O(N)).
ROOT_SEARCH_MIN = 4
ROOT_SEARCH_WORK = 5000


def assembly_root_node(nodes: Sequence[str], edges: Sequence[Edge],
                       width: float = MODULE_WIDTH, standoff: float = DEFAULT_STANDOFF) -> str:
    """The root node of the assembly by the docking order alone: the tree centroid (paper
    Sec. IV-A) unless no docking order assembles the target from it, then the first of
    :func:`~smores_assembly.topology.root_candidates` (fewest docking stages) from which one
    does (:func:`ordered_roots`); the centroid when none of the tried ones does (the plan
    then refuses, naming a dock and its blockers). :func:`search_root` goes on past a root
    whose plan is refused for reachability.

    Raises:
        ScenarioError: the target does not unfold onto distinct cells.
    """
    first = root_candidates(nodes, edges)[0]
    return next(ordered_roots(nodes, edges, width, standoff), first)


def ordered_roots(nodes: Sequence[str], edges: Sequence[Edge],
                  width: float = MODULE_WIDTH, standoff: float = DEFAULT_STANDOFF
                  ) -> Iterator[str]:
    """The root nodes from which a docking order exists, in the order a root is chosen
    (:func:`~smores_assembly.topology.root_candidates`: the centroid, then fewest docking
    stages), among the first ``max(ROOT_SEARCH_MIN, ROOT_SEARCH_WORK // N)`` candidates
    (N nodes).

    "A docking order exists" is rule 2 of :func:`build_schedule`: the parent and corridor
    precedences (:mod:`smores_assembly.corridors`) and the root's LEFT/RIGHT-first rule
    have no cycle. The root decides which module of each edge moves (the child) and so
    along which face normal its approach corridor runs: a target whose corridors block each
    other from the centroid may be assemblable from another root. A dock's corridor, for
    each direction of an edge, is computed once, when a tried root first needs it (the
    unfolding has the same shape from any root, so has which node's cell lies in which
    corridor); each further root costs one BFS, the corridors of the edges it turns round
    and a cycle check.

    Raises:
        ScenarioError: the target does not unfold onto distinct cells.
    """
    candidates = root_candidates(nodes, edges)
    first = candidates[0]
    origin = Pose2D(0.0, 0.0, 0.0)
    poses = unfold(nodes, edges, first, origin, width)
    cells = {v: grid_cell(p, origin, width) for v, p in poses.items()}
    at = {c: v for v, c in cells.items()}

    def blocked(child: str, parent: str, face: Face) -> list[str]:
        corr = dock_corridor(child, parent, cells, face.is_wheel, standoff, width)
        return sorted({at[c] for c in corr.corridor if c in at})

    table: dict[tuple[str, str], list[str]] = {}  # (child, parent) -> its blockers
    tries = max(ROOT_SEARCH_MIN, ROOT_SEARCH_WORK // max(1, len(nodes)))
    for root in candidates[:tries]:
        oriented = rooted_edges(nodes, edges, root)
        blocked_by = {}
        for v, e in oriented.items():
            if (v, e.parent) not in table:  # most edges keep their direction between roots
                table[v, e.parent] = blocked(v, e.parent, e.child_face)
            blocked_by[v] = table[v, e.parent]
        if _acyclic(_precedence_edges(oriented, root, blocked_by)):
            yield root


def _acyclic(edges: Iterable[tuple[str, str, str]]) -> bool:
    """True when the directed graph of ``edges`` (``(u, v, why)``: u before v) has no
    cycle: Kahn's algorithm over plain dicts, the answer of
    ``nx.is_directed_acyclic_graph(_precedence_graph(...))`` without building the graph
    (the root search checks up to ``ROOT_SEARCH_WORK // N`` roots: a 1,000-node graph cost
    ~8 ms in networkx, ~2 ms here)."""
    succ: dict[str, set[str]] = {}
    indeg: dict[str, int] = {}
    for u, v, _ in edges:
        out = succ.setdefault(u, set())
        if v not in out:  # a DiGraph keeps one edge per pair
            out.add(v)
            indeg[v] = indeg.get(v, 0) + 1
    free = [u for u in succ if u not in indeg]
    left = len(set(succ) | set(indeg))
    while free:
        u = free.pop()
        left -= 1
        for v in succ.get(u, ()):
            indeg[v] -= 1
            if indeg[v] == 0:
                free.append(v)
    return left == 0


def search_root(scenario: Scenario, modules: Mapping[str, Pose2D] | None = None,
                root_node: str | None = None) -> RootChoice:
    """Root search (Sec. IV-A): the root node and the physical root module.

    The root node is the tree centroid, unless the plan from it is refused for a reason the
    root decides (its docks' approach corridors block each other, or a dock cannot reach
    its pre-dock pose: walled in, a lane that ends before the body can turn onto it, no
    free pick-up side); then the first node of :func:`ordered_roots` (a docking order
    exists from it; fewest docking stages first) whose plan is not refused. When every
    tried root is refused, :func:`assembly_root_node`'s (planning from it reports why).
    The physical root is chosen among the modules available for nodes (reserved helpers
    excluded), nearest their mean position. ``plan_assembly(scenario, modules,
    root=search_root(scenario, modules))`` is ``plan_assembly(scenario, modules)``.

    Args:
        scenario: validated scenario.
        modules: module poses overriding the scenario's (e.g. live mocap poses).
        root_node: force the root node instead of searching it.

    Raises:
        PlanningError: unknown ``root_node``; no module available.
        ScenarioError: the target does not unfold onto distinct cells.
    """
    mods = dict(scenario.modules if modules is None else modules)
    if root_node is None:
        try:
            return _root_search(scenario, mods)[0]
        except PlanningError:  # refused whatever the root (e.g. too few modules)
            root_node = assembly_root_node(scenario.nodes, scenario.edges,
                                           scenario.module_width)
    helpers = set(scenario.helpers)
    available = {m: p for m, p in mods.items() if m not in helpers}
    if root_node not in scenario.nodes:
        raise PlanningError(f"root_node: unknown node {root_node!r}")
    module = select_root_module(available)
    return RootChoice(node=root_node, module=module, pose=mods[module])


def _root_search(scenario: Scenario, mods: Mapping[str, Pose2D]
                 ) -> tuple[RootChoice, Plan | None, PlanningError | None]:
    """:func:`search_root`'s search: ``(root, its plan, None)``, or ``(the root planning
    reports from, None, its refusal)`` when every tried root is refused. Raises what is
    refused whatever the root (e.g. too few modules)."""
    helpers = [h for h in scenario.helpers if h in mods]
    reserved = set(helpers)
    available = {m: p for m, p in mods.items() if m not in reserved}
    module = select_root_module(available)
    centroid = RootChoice(node=tree_centroid(scenario.nodes, scenario.edges), module=module,
                          pose=mods[module])
    try:
        return centroid, _plan_from_root(scenario, mods, helpers, available, centroid), None
    except _RootRefusal as exc:
        refusal: PlanningError = exc
        report, report_cycle = centroid, isinstance(exc, _CorridorCycle)
    # Each further root costs a plan: only roots with a docking order are planned, at most
    # max(ROOT_SEARCH_MIN, ROOT_SEARCH_WORK // N) of them (ordered_roots).
    for node in ordered_roots(scenario.nodes, scenario.edges, scenario.module_width):
        if node == centroid.node:
            continue
        choice = dataclasses.replace(centroid, node=node)
        try:
            return choice, _plan_from_root(scenario, mods, helpers, available, choice), None
        except PlanningError as exc:
            if report_cycle:  # the first root with a docking order says why it is refused
                refusal, report, report_cycle = exc, choice, False
    return report, None, refusal


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the ``with`` block (back on after it when
    it was on before; nested and concurrent uses only ever turn it back on late).

    Planning allocates ~10^5 short-lived containers (dicts, tuples, lists), freed by
    reference counting: they form no cycles, so the collector finds nothing in them, but
    the allocations trigger it, and a full (generation 2) pass over the whole heap, which
    comes every few plans, cost 45-70 ms CPU inside one 1,000-node plan (measured with
    ``gc.callbacks``; ~2 ms of gen-0/1 passes otherwise). Paused, that work is deferred
    to the next allocation after the block, out of the plan's latency; memory is bounded
    by what one plan allocates."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def plan_assembly(scenario: Scenario, modules: Mapping[str, Pose2D] | None = None,
                  root: RootChoice | None = None) -> Plan:
    """Plan the assembly of ``scenario`` (paper Sec. IV-A to IV-C).

    Args:
        scenario: validated scenario (:func:`smores_assembly.scenario.load_scenario`).
        modules: current module poses overriding the scenario's (the ROS nodes pass mocap
            poses); modules absent from it are not used (helpers included).
        root: a root search result to use (e.g. received on ``/assembly/root``); its pose
            anchors the grid. Default: :func:`search_root` on these poses (the same plan:
            the centroid is planned first, and only when that plan is refused for a reason
            the root decides are further roots tried, so a plannable target does not pay
            for the search).

    Python's cyclic garbage collector is paused while it plans (:func:`gc_paused`).

    Returns:
        The :class:`Plan`.

    Raises:
        PlanningError: fewer available modules than nodes, an unknown root, an action
            that needs a helping module when none is available (names the action), a
            non-finite module or root pose (names the module and field), or no tried root
            has a docking order whose docks can all reach their pre-dock poses (names a
            dock and what stands in its way, from the centroid or, when the centroid has
            no docking order, from the first root that has one).
        ScenarioError: the target does not unfold onto distinct cells.
    """
    with gc_paused():
        return _plan_assembly(scenario, modules, root)


def _plan_assembly(scenario: Scenario, modules: Mapping[str, Pose2D] | None,
                   root: RootChoice | None) -> Plan:
    """:func:`plan_assembly`'s body (the collector paused around it)."""
    mods = dict(scenario.modules if modules is None else modules)
    check_finite_poses(mods, "modules")
    if root is not None:
        check_finite_poses({root.module: root.pose}, "root.pose")
    helpers = [h for h in scenario.helpers if h in mods]
    reserved = set(helpers)
    available = {m: p for m, p in mods.items() if m not in reserved}
    if len(available) < len(scenario.nodes):
        raise PlanningError(f"modules: {len(available)} modules available for "
                            f"{len(scenario.nodes)} nodes"
                            + (f" ({len(helpers)} reserved as helpers)" if helpers else ""))
    if root is not None:
        return _plan_from_root(scenario, mods, helpers, available, root)
    _, plan, refusal = _root_search(scenario, mods)
    if plan is None:
        raise refusal  # type: ignore[misc]
    return plan


def _plan_from_root(scenario: Scenario, mods: Mapping[str, Pose2D], helpers: list[str],
                    available: Mapping[str, Pose2D], root: RootChoice) -> Plan:
    """:func:`plan_assembly` with its inputs checked and the root chosen."""
    reserved = set(helpers)
    if root.node not in scenario.nodes:
        raise PlanningError(f"root.node: unknown node {root.node!r}")
    if root.module not in available:
        raise PlanningError(f"root.module: {root.module!r} is not an available module")

    node_goals = unfold(scenario.nodes, scenario.edges, root.node, root.pose,
                        scenario.module_width)
    others = {n: p for n, p in node_goals.items() if n != root.node}
    spare = {m: p for m, p in available.items() if m != root.module}
    sub, cost = assign_modules(others, spare)
    assignment = {root.node: root.module}
    assignment.update(sub)
    assignment = {n: assignment[n] for n in scenario.nodes}
    goals = {assignment[n]: node_goals[n] for n in node_goals}

    taken = set(assignment.values())
    idle = sorted(m for m in mods if m not in taken)
    spare_helpers = [m for m in idle if m not in reserved]
    # Helper pool: reserved helpers first (scenario order), then spare modules by id.
    pool = helpers + spare_helpers
    stages, actions = build_schedule(scenario.nodes, scenario.edges, root.node, assignment,
                                     goals, pool, mods, width=scenario.module_width)
    used: list[str] = []
    for a in actions:
        if a.helper is not None and a.helper not in used:
            used.append(a.helper)
    return Plan(name=scenario.name, root_node=root.node, root_module=root.module,
                root_pose=root.pose, assignment=assignment, goals=goals, total_cost_m=cost,
                stages=stages, actions=actions, idle=idle, helpers=used)


def sequential(plan: Plan) -> Plan:
    """The same plan executed one dock at a time (the baseline of the parallel schedule).

    Every action gets its own stage, in the parallel plan's order, so parents are still
    docked before their children. Used by the benchmarks to measure the parallel speed-up.
    A reconfiguration's undocking stages stay as they are, before the docks.
    """
    u = plan.num_undock_stages
    actions = [dataclasses.replace(a, stage=u + k) for k, a in enumerate(plan.actions)]
    return dataclasses.replace(plan, actions=actions,
                               stages=plan.stages[:u] + [[a.module] for a in actions],
                               schedule="sequential")


def with_schedule(plan: Plan, schedule: str) -> Plan:
    """``plan`` (as :func:`plan_assembly` returns it: the paper's stages) run with schedule
    mode ``schedule``: ``sequential`` (:func:`sequential`), ``staged`` (unchanged) or
    ``pipelined`` (the same stages; the navigation stages later docks meanwhile,
    :mod:`smores_assembly.staging`).

    Raises:
        InputError: an unknown mode (names ``schedule`` and the value).
    """
    check_schedule(schedule)
    if schedule == "sequential":
        return sequential(plan)
    return dataclasses.replace(plan, schedule=schedule)


def build_schedule(nodes: Sequence[str], edges: Sequence[Edge], root_node: str,
                   assignment: Mapping[str, str], goals: Mapping[str, Pose2D],
                   helper_pool: Sequence[str], poses: Mapping[str, Pose2D],
                   width: float = MODULE_WIDTH, standoff: float = DEFAULT_STANDOFF,
                   placed: Collection[str] = ()
                   ) -> tuple[list[list[str]], list[DockAction]]:
    """Parallel docking schedule (paper Sec. IV-C) with geometric feasibility (issue 11).

    Rules:

    1. One action per edge: the node farther from the root docks onto the nearer one.
    2. Precedence: a module docks only after its parent is placed; at the root the
       LEFT/RIGHT docks come before the TOP/BOTTOM docks; a dock runs before every node
       whose final cell lies in its approach corridor
       (:mod:`smores_assembly.corridors`), so no pre-dock pose or final slide is ever
       blocked by a module already placed. Passing a placed module flush is allowed.
    3. Stages by list scheduling: each stage takes, among the actions whose predecessors
       are placed, those of the smallest key (depth, then root LEFT/RIGHT before
       TOP/BOTTOM) — the paper's depth order whenever the corridors allow it — in node
       order, skipping an action whose swept cells touch those of one already in the
       stage (:func:`smores_assembly.corridors.conflict`), that needs a helper when
       all ``len(helper_pool)`` helpers are taken, or whose slide and a module waiting to
       be carried in the stage are closer than the navigation's ``slide_clearance``
       (:class:`_StageSlides`), or whose lane out to a turning spot beyond its pre-dock
       pose runs beside another dock of the stage (:class:`_StageLanes`); skipped actions
       go to later stages. A helper dock whose carried pair would pass between two nodes
       placed before it, flush on both sides (:func:`_check_slots`), goes before the later
       of the two (when neither can wait, it is left as it is).
    4. An action whose moving face (``child_face``) is LEFT or RIGHT needs a helper.
       Inside a stage, helpers are matched to actions by Kuhn–Munkres on the distance from
       the helper's initial pose to the carried module's initial pose; the first
       ``len(need)`` helpers of the pool are used (reserved helpers before spare modules).

    Without corridor constraints or conflicts this is exactly the depth-staged schedule of
    the paper (a group with more helper docks than helpers split into consecutive stages).

    Args:
        assignment: node -> module (all nodes).
        goals: module -> goal pose (the root module's goal anchors the grid).
        helper_pool: module ids that may help, in order of preference.
        poses: current poses of every module (for matching helpers).
        width: module width (grid pitch) [m]; standoff: pre-dock distance [m].
        placed: nodes already docked at the start besides the root (a structure kept by a
            reconfiguration, :mod:`smores_assembly.reconfigure`): connected to the root,
            they get no action and count as placed from the start.

    Returns:
        ``(stages, actions)``: ``stages[k]`` lists the docking modules of stage k.

    Raises:
        PlanningError: an action needs a helper and the pool is empty (names the action);
            no order satisfies the corridor precedences (names the dock and the nodes that
            block its corridor); a node of ``placed`` lies in a dock's corridor.
    """
    oriented = rooted_edges(nodes, edges, root_node)
    depth = {root_node: 0}
    for v, e in oriented.items():  # BFS order: parents first
        depth[v] = depth[e.parent] + 1
    anchor = goals[assignment[root_node]]
    cells = {n: grid_cell(goals[assignment[n]], anchor, width) for n in nodes}
    acts: dict[str, DockAction] = {}
    key: dict[str, tuple[int, int]] = {}
    kept = set(placed)
    for v, e in oriented.items():
        if v in kept:
            if e.parent != root_node and e.parent not in kept:
                raise PlanningError(f"placed: node {v!r} is not connected to the root "
                                    f"{root_node!r} through placed nodes")
            continue
        m = assignment[v]
        acts[v] = DockAction(module=m, node=v, stage=-1, depth=depth[v],
                             parent_module=assignment[e.parent], parent_node=e.parent,
                             parent_face=e.parent_face, child_face=e.child_face,
                             needs_helper=e.child_face.is_wheel, helper=None, goal=goals[m])
        key[v] = (depth[v], 1 if depth[v] == 1 and not e.parent_face.is_wheel else 0)
    order = sorted(acts, key=lambda v: (key[v], v))
    n_help = len(helper_pool)
    if n_help == 0:
        for v in order:
            a = acts[v]
            if a.needs_helper:
                raise PlanningError(
                    f"action {a.describe()}: docking with wheel face {a.child_face.value} "
                    f"needs a helping module, but none is available (list one under "
                    f"'helpers' or add a spare module)")

    corr = {v: dock_corridor(v, oriented[v].parent, cells, acts[v].needs_helper, standoff,
                             width) for v in acts}
    blocked_by = corridor_blockers(corr.values(), cells)
    for v in sorted(acts) if kept else ():  # nothing kept (an assembly): nothing stuck
        stuck = [w for w in blocked_by[v] if w in kept]
        if stuck:
            raise PlanningError(f"action {acts[v].describe()}: its approach corridor is "
                                f"blocked by node(s) {stuck} of the structure kept in place")
    edges_uv = list(_precedence_edges(oriented, root_node, blocked_by, acts))  # u before v
    if not _acyclic(edges_uv):  # the networkx graph only to name the cycle, as before
        raise _CorridorCycle(_infeasible_message(
            _precedence_graph(oriented, nodes, root_node, blocked_by, acts), acts, corr))
    prec = _Precedence(nodes, edges_uv)

    # A dock whose pre-dock pose the structure placed before it walls in gets a precedence
    # before one of the walls (one not after it already) and the stages are built again;
    # refused when no wall can wait (issue 11).
    geo = _Geometry(width, standoff, goals, assignment, poses,
                    _pickup_neighbours(acts, nodes, goals, assignment, poses, width, standoff),
                    waiting={v: _grid_xy(poses[acts[v].module], anchor, width) for v in acts
                             if acts[v].needs_helper and acts[v].module in poses},
                    slide_clearance=NavSettings().slide_clearance,
                    staging_limit=StagingSettings().staging_limit)
    # The same for a helper dock whose pair would pass flush between two nodes placed
    # before it (a slot with no clearance, _check_slots): it goes before one of the two,
    # the one that comes later by depth; when neither can wait it is left as it is.
    tolerated: set[str] = set()
    for _ in range(len(acts) * len(acts) + 1):  # one precedence more per round
        try:
            return _list_schedule(acts, order, key, prec, corr, cells, root_node, kept,
                                  n_help, helper_pool, poses, geo, tolerated)
        except _Pinched as pin:
            v = pin.node
            later = [w for w in pin.walls if w in acts and not prec.has_path(w, v)]
            if later:
                prec.add_edge(v, max(later, key=lambda w: (key[w], w)), "slot")
            else:
                tolerated.add(v)
        except _Enclosed as enc:
            v, walls = enc.node, enc.walls
            later = [w for w in walls if w in acts and not prec.has_path(w, v)]
            if not later:
                raise _Unreachable(enc.message + " (every wall must be placed before it)")
            prec.add_edge(v, later[0], "enclosure")
    raise PlanningError("schedule: enclosure and slot precedences did not converge")


class _Precedence:
    """The schedule's precedence graph (u before v) as two dicts of dicts: what
    :func:`_precedence_graph`'s ``networkx.DiGraph`` gave the list scheduling
    (predecessors, successors, an edge added, a path asked for) without its per-edge cost
    (a 1,023-node comb: ~6 ms to build in networkx, ~1.5 ms here)."""

    def __init__(self, nodes: Iterable[str], edges: Iterable[tuple[str, str, str]]):
        self.succ: dict[str, dict[str, str]] = {n: {} for n in nodes}
        self.pred: dict[str, dict[str, str]] = {n: {} for n in self.succ}
        succ, pred = self.succ, self.pred
        for u, v, why in edges:
            su, pv = succ.get(u), pred.get(v)
            if su is None or pv is None:  # an end outside `nodes`
                self.add_edge(u, v, why)
            else:  # add_edge without its setdefaults (both ends known): ~2,000 edges
                su[v] = why
                pv[u] = why

    def add_edge(self, u: str, v: str, why: str) -> None:
        """u before v, for reason ``why`` (one edge per pair: the last reason stays)."""
        self.succ.setdefault(u, {})[v] = why
        self.pred.setdefault(v, {})[u] = why
        self.succ.setdefault(v, {})
        self.pred.setdefault(u, {})

    def successors(self, u: str) -> Iterator[str]:
        return iter(self.succ[u])

    def predecessors(self, v: str) -> Iterator[str]:
        return iter(self.pred[v])

    def has_path(self, a: str, b: str) -> bool:
        """True when b can be reached from a along the edges (a itself: True)."""
        seen, todo = {a}, [a]
        while todo:
            u = todo.pop()
            if u == b:
                return True
            for w in self.succ[u]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return False


class _Walled(Exception):
    """A dock of the stage being built that the nodes placed before it get in the way of:
    ``node`` (the dock's node), ``walls`` (those nodes), ``message``. The subclasses are
    siblings, each handled its own way by :func:`build_schedule`."""

    def __init__(self, node: str, walls: list[str], message: str):
        super().__init__(message)
        self.node, self.walls, self.message = node, walls, message


class _Enclosed(_Walled):
    """A dock's pre-dock pose is walled in by the nodes placed before it."""


class _Pinched(_Walled):
    """A helper dock's carried pair would pass between two nodes placed before it, flush on
    both sides (:func:`_check_slots`)."""


def _check_slots(chosen: Sequence[str], corr: Mapping[str, DockCorridor],
                 acts: Mapping[str, DockAction], occupied: Mapping[Cell, str],
                 tolerated: Collection[str]) -> None:
    """:class:`_Pinched` when a helper dock of the stage ``chosen`` (not in ``tolerated``)
    has a swept cell (its final cell, the pair's cells up to its pre-dock pose:
    :attr:`~smores_assembly.corridors.DockCorridor.swept`) whose two lateral neighbours are
    both placed (``occupied``: cell -> node, the nodes placed before the stage), naming
    those two ("walls").

    A slot one module wide between two placed modules has no clearance: a single module
    sliding in is squared by the walls (the fake hardware models that, as the faces of a
    real slot do), but a carried pair is one rigid unit two modules long, and 1.5 degrees
    off the axis (``lane_heading_max_deg``) its carried module's corners meet the walls'
    at the slot's mouth and it jams (issue 16: random 100 seed 0, stage 29, m22 carried by
    its helper between m34 and m37, never docked; ``test_slots``: closed loop, a pair
    docks beside one wall and never between two, in every random scene tried)."""
    for v in chosen:
        if not acts[v].needs_helper or v in tolerated:
            continue
        side = corr[v].beside
        for k in range(0, len(side), 2):
            a, b = occupied.get(side[k]), occupied.get(side[k + 1])
            if a is not None and b is not None:
                cell = corr[v].swept[k // 2]
                raise _Pinched(v, [a, b],
                               f"action {acts[v].describe()}: the pair would pass cell {cell} "
                               f"between nodes {a!r} and {b!r}, flush on both sides")


def _list_schedule(acts, order, key, prec, corr, cells, root_node, kept, n_help,
                   helper_pool, poses, geo, tolerated=frozenset()
                   ) -> tuple[list[list[str]], list[DockAction]]:
    """Stages by list scheduling (rule 3 of :func:`build_schedule`); raises
    :class:`_Enclosed` when a dock's pre-dock pose is walled in, :class:`_Pinched` when a
    helper dock not in ``tolerated`` would pass between two placed nodes."""
    for a in acts.values():
        a.stage, a.helper = -1, None
    stages: list[list[str]] = []
    actions: list[DockAction] = []
    # Kahn-style readiness (O(N log N + edges) over all stages, not O(stages x N)): an
    # action is ready when none of its predecessors is left unplaced.
    rank = {v: i for i, v in enumerate(order)}
    placed_now = {root_node} | kept
    missing = {v: sum(1 for u in prec.predecessors(v) if u not in placed_now) for v in acts}
    ready = sorted((v for v in acts if missing[v] == 0), key=rank.__getitem__)
    # the placed nodes' cells and their bounding box, kept up to date stage by stage
    occupied = {cells[n]: n for n in placed_now}
    # the same and the docks chosen so far in the stage (the stage lanes add them)
    still = dict(occupied)
    xs = [c[0] for c in occupied]
    ys = [c[1] for c in occupied]
    bounds = (min(xs), max(xs), min(ys), max(ys))
    while ready:
        kmin = key[ready[0]]
        chosen: list[str] = []
        halo: set[Cell] = set()  # cells a dock of this stage may not sweep (conflict())
        slides = _StageSlides(corr, acts, geo)
        lanes = _StageLanes(corr, acts, geo, still, cells)
        helped = 0
        for v in ready:
            if key[v] != kmin:
                continue
            if acts[v].needs_helper and helped >= n_help:
                continue
            if not halo.isdisjoint(corr[v].swept):
                continue
            if slides.conflicts(v):
                continue
            if lanes.conflicts(v):
                continue
            chosen.append(v)
            halo.update(corridor_halo(corr[v]))
            slides.add(v)
            lanes.add(v)
            helped += acts[v].needs_helper
        _check_reachable(chosen, corr, acts, cells, placed_now, occupied, bounds, geo,
                         lanes.entries)
        _check_slots(chosen, corr, acts, occupied, tolerated)
        stage_actions = [acts[v] for v in chosen]
        need = [a for a in stage_actions if a.needs_helper]
        if need:
            _match_helpers(need, list(helper_pool[:len(need)]), poses)
        for a in stage_actions:
            a.stage = len(stages)
        stage_actions.sort(key=lambda a: (a.depth, a.node))
        stages.append([a.module for a in stage_actions])
        actions.extend(stage_actions)
        placed_now.update(chosen)
        lo_x, hi_x, lo_y, hi_y = bounds
        for u in chosen:
            x, y = cells[u]
            occupied[x, y] = u
            # min/max as comparisons (ints: the same bounds)
            if x < lo_x:
                lo_x = x
            elif x > hi_x:
                hi_x = x
            if y < lo_y:
                lo_y = y
            elif y > hi_y:
                hi_y = y
        bounds = (lo_x, hi_x, lo_y, hi_y)
        done = set(chosen)
        ready = [v for v in ready if v not in done]
        for u in chosen:
            for v in prec.successors(u):
                if v in missing:
                    missing[v] -= 1
                    if missing[v] == 0:
                        ready.append(v)
        ready.sort(key=rank.__getitem__)
    assert len(actions) == len(acts), "precedence graph is acyclic: every action placed"
    return stages, actions


@dataclass(frozen=True)
class _Geometry:
    """What the reachability checks of :func:`_check_reachable` need besides the grid."""

    width: float
    standoff: float
    goals: Mapping[str, Pose2D]          # module -> goal pose (world)
    assignment: Mapping[str, str]        # node -> module
    poses: Mapping[str, Pose2D]          # module -> pose at planning time (world)
    #: helper dock's node -> the nodes whose goal lies near its module's pose at planning
    #: time (:func:`_pickup_neighbours`): the only ones its pick-up check can meet
    near: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: helper dock's node -> where its module waits to be picked up (its pose at planning
    #: time) on the unfolding grid, in module widths (:func:`_grid_xy`)
    waiting: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: the navigation's ``slide_clearance`` and the staging's ``staging_limit`` [m]
    #: (:class:`_StageSlides`)
    slide_clearance: float = 0.15
    staging_limit: float = 0.4


def _grid_xy(pose: Pose2D, anchor: Pose2D, width: float) -> tuple[float, float]:
    """``pose``'s position on the unfolding grid anchored at ``anchor``, in module widths
    (unrounded :func:`~smores_assembly.topology.grid_cell`)."""
    dx, dy = pose.x - anchor.x, pose.y - anchor.y
    c, s = math.cos(anchor.yaw), math.sin(anchor.yaw)
    return ((c * dx + s * dy) / width, (-s * dx + c * dy) / width)


def _slide_distance(p: tuple[float, float], d: DockCorridor, length: float) -> float:
    """Distance [widths] from the grid point ``p`` to the slide of ``d``: its docking
    axis from the final cell's centre ``length`` widths out along ``d.normal``."""
    (cx, cy), (nx_, ny_) = d.cell, d.normal
    t = min(length, max(0.0, (p[0] - cx) * nx_ + (p[1] - cy) * ny_))
    return math.hypot(p[0] - cx - t * nx_, p[1] - cy - t * ny_)


class _StageSlides:
    """The slides of the docks chosen for one stage, against the modules waiting there to
    be carried (rule 3 of :func:`build_schedule`; issue 11, bench_targets
    random_9_677052670: m7, waiting for its helper in stage 3, stood 0.04 m from the slide
    of m3 docking in the same stage).

    A dock's *slide* is its docking axis from the final cell out to where the driven body
    may start sliding, as in :func:`smores_assembly.navigation.problem.nav_problem`: for a
    helper dock the helper's centre at the pre-dock pose (``standoff + w``); otherwise the
    farthest staging pose (``standoff + staging_limit``,
    :func:`smores_assembly.staging.staging_poses`, chosen after the schedule: on
    bench_targets' generator the pre-dock pose alone left random_9_669669833's m5 staged
    0.07 m from m2 waiting in its stage). A module waiting to be carried in its own stage
    is a fixed obstacle there (its helper comes to it; the navigation moves it aside only
    in other stages), so a slide of the same stage closer than ``slide_clearance`` to
    where it waits (its pose at planning time) could be used only once the pair has left:
    the two docks go to different stages (on 300 random targets 1422 -> 1431 stages).
    Lookups by grid cell: O(stage) per stage, not O(stage^2).
    """

    def __init__(self, corr: Mapping[str, DockCorridor], acts: Mapping[str, DockAction],
                 geo: _Geometry):
        self.corr, self.acts, self.geo = corr, acts, geo
        self.clear = geo.slide_clearance / geo.width
        self.reach = math.ceil(self.clear) + 1
        self.at: dict[Cell, list[str]] = {}     # slide cell -> chosen docks
        self.waiting: list[str] = []           # chosen docks whose module waits
        self.added: list[str] = []             # chosen docks, in order
        self._indexed = 0   # how many of them `at` holds: indexed when a query needs it

    def length(self, v: str) -> float:
        """Slide length of dock ``v`` [widths]."""
        if self.acts[v].needs_helper:
            return self.geo.standoff / self.geo.width + 1.0
        return (self.geo.standoff + self.geo.staging_limit) / self.geo.width

    def conflicts(self, v: str) -> bool:
        """True when dock ``v`` may not join the docks added so far."""
        d = self.corr[v]
        lv = self.length(v)
        if any(_slide_distance(self.geo.waiting[h], d, lv) < self.clear
               for h in self.waiting):
            return True
        p = self.geo.waiting.get(v)
        if p is None:
            return False
        self._index()
        ci, cj = round(p[0]), round(p[1])
        seen: set[str] = set()
        for di in range(-self.reach, self.reach + 1):
            for dj in range(-self.reach, self.reach + 1):
                for u in self.at.get((ci + di, cj + dj), ()):
                    if u not in seen:
                        seen.add(u)
                        if _slide_distance(p, self.corr[u], self.length(u)) < self.clear:
                            return True
        return False

    def add(self, v: str) -> None:
        """Add dock ``v`` to the stage."""
        self.added.append(v)
        if v in self.geo.waiting:
            self.waiting.append(v)

    def _index(self) -> None:
        """Put the slide cells of the docks added since the last query into ``at`` (only
        a dock whose module waits asks: a stage without one builds no index)."""
        for v in self.added[self._indexed:]:
            d = self.corr[v]
            (cx, cy), (nx_, ny_) = d.cell, d.normal
            for k in range(math.ceil(self.length(v)) + 1):
                self.at.setdefault((cx + k * nx_, cy + k * ny_), []).append(v)
        self._indexed = len(self.added)


def _lane_params(a: DockAction, geo: _Geometry) -> tuple[float, float]:
    """``(start, clearance)`` [widths] of dock ``a``'s driven body for
    :func:`~smores_assembly.corridors.lane_entry`: its centre at the pre-dock pose (the
    helper's one width behind the carried module) and the centre distance it needs to
    turn in place (the docking controller's ``obstacle_clearance``; a helper carrying its
    module: one width more, at least :func:`carry_clearance`)."""
    return _body_lane_params(a.needs_helper, geo.width, geo.standoff)


@functools.lru_cache(maxsize=16)
def _lane_constants(w: float) -> tuple[float, float, float]:
    """:class:`_StageLanes`' constants for module width ``w`` [m], in widths: the turning
    clearance (:func:`~smores_assembly.navigation.stage.turn_clearance`), the staging
    limit, and the margin beyond which two lane boxes never interact (the turning
    clearance of two bodies, or the lane search's clearance, a helper's the larger, plus
    a width); worked out once, not per stage."""
    turn = turn_clearance(w) / w
    margin = max(turn, (carry_clearance(w) + w) / w,
                 (DockingSettings().obstacle_clearance + w) / w) + 1.0
    return turn, STAGING_LIMIT / w, margin


@functools.lru_cache(maxsize=64)
def _body_lane_params(helper: bool, w: float, standoff: float) -> tuple[float, float]:
    """:func:`_lane_params` for a dock with (``helper``) or without a helper, width ``w``
    and standoff [m]: the same two numbers for every dock of a kind, worked out once (a
    ``DockingSettings()`` costs ~6 us, one per dock and stage: ~6 ms of a 1,000-dock
    plan)."""
    clearance = DockingSettings().obstacle_clearance
    if helper:
        clearance = max(clearance + w, carry_clearance(w))
    return standoff / w + (1.0 if helper else 0.0), clearance / w


def _gap(a0: float, a1: float, b0: float, b1: float) -> float:
    """Gap between the intervals [a0, a1] and [b0, b1] (a0 <= a1, b0 <= b1), 0 when they
    overlap: ``max(0.0, a0 - b1, b0 - a1)`` as two comparisons (at most one difference is
    positive), the same value; ~70 k of them in a 1,000-dock plan's stage lanes."""
    d = a0 - b1
    if d > 0.0:
        return d
    d = b0 - a1
    return d if d > 0.0 else 0.0


class _StageLanes:
    """The lanes of the docks chosen for one stage (rule 3 of :func:`build_schedule`;
    issue 11): where modules stand beside a dock's pre-dock pose, its driven body turns
    onto the docking axis farther out (:func:`~smores_assembly.corridors.lane_entry`,
    the navigation's :func:`~smores_assembly.navigation.stage.clear_predock`) and slides
    in from there. That turning spot and the lane to it are not in the dock's corridor
    cells, so :func:`~smores_assembly.corridors.conflict` does not see another dock of the
    stage beside them (bench_targets random_11_68252793 stage 4: m2 turned 0.265 m out,
    0.08 m beside m4's slide).

    A dock's *lane* is the segment of its axis from its final cell's centre out to its
    turning spot (at least its corridor); the spot is found among the nodes placed before
    the stage and the docks chosen so far (a later choice that stands near a lane moves
    its spot out: found again). Two docks conflict when one turns beyond its pre-dock pose
    and their lanes come within one width (side by side, or crossing), or a turning spot
    lies closer than :func:`~smores_assembly.navigation.stage.turn_clearance` to the
    other's lane (it turns while the other slides past). Docks turning at their pre-dock
    poses keep the corridor rule alone. O(stage) per dock."""

    def __init__(self, corr: Mapping[str, DockCorridor], acts: Mapping[str, DockAction],
                 geo: _Geometry, still: dict[Cell, str], cells: Mapping[str, Cell]):
        """``still``: cell -> node of the nodes placed before the stage; each dock added
        is added to it (the caller's map, changed in place: it keeps one map through the
        stages instead of a copy per stage)."""
        self.corr, self.acts, self.geo, self.cells = corr, acts, geo, cells
        self.still = still
        self.turn, self.limit, self.margin = _lane_constants(geo.width)
        #: chosen dock -> its lane among the placed nodes and the docks chosen so far
        self.entries: dict[str, LaneEntry] = {}
        #: chosen dock -> (moved out, lane box x0, x1, y0, y1, spot x, spot y)
        self.lanes: dict[str, tuple] = {}
        self._params: dict[str, tuple[float, float]] = {}
        #: conflicts()' dock, its lanes and their records (add() takes them over)
        self._last: tuple[str, dict[str, LaneEntry], dict[str, tuple]] | None = None

    def _entry(self, v: str, still: Mapping[Cell, str]) -> LaneEntry:
        got = self._params.get(v)
        if got is None:
            got = self._params[v] = _lane_params(self.acts[v], self.geo)
        return lane_entry(self.corr[v], still, got[0], got[1], self.limit)

    def _record(self, v: str, lane: LaneEntry) -> tuple:
        """(moved out, the lane's box ``x0, x1, y0, y1`` [widths], its turning spot ``x,
        y``, a spot found, the spot's axial position, then what :meth:`_moves` needs of
        the dock: its final cell ``cx, cy``, normal ``nx, ny``, lane ``start`` and
        ``clearance``)."""
        d = self.corr[v]
        start, clearance = self._params[v]
        spot = start + (lane.extra or 0.0)
        far = max(spot, float(len(d.corridor)))
        (cx, cy), (nx_, ny_) = d.cell, d.normal
        ex, ey = cx + far * nx_, cy + far * ny_
        # min/max of two as comparisons (the same objects: min and max keep the first of
        # equals), ~10 k records per 1,000-dock plan
        x0, x1 = (cx, ex) if cx < ex else ((ex, cx) if ex < cx else (cx, cx))
        y0, y1 = (cy, ey) if cy < ey else ((ey, cy) if ey < cy else (cy, cy))
        return (spot > start + 1e-9, x0, x1, y0, y1,
                cx + spot * nx_, cy + spot * ny_, lane.extra is not None, spot,
                cx, cy, nx_, ny_, start, clearance)

    def _moves(self, u: str, ru: tuple, cell: Cell) -> bool:
        """A node standing at ``cell`` changes ``u``'s lane (record ``ru``): it stands
        within the turning clearance of ``u``'s spot, or on ``u``'s axis before the spot's
        far side (every spot nearer in was taken already; a node farther away leaves the
        spot as it is). Without a spot, any node near the axis out to the staging limit
        (the refusal names the nodes)."""
        cx, cy, nx_, ny_, start, clearance = ru[9:]
        dx, dy = cell[0] - cx, cell[1] - cy
        along, lat = dx * nx_ + dy * ny_, dx * ny_ - dy * nx_
        if ru[7]:
            return (math.hypot(cell[0] - ru[5], cell[1] - ru[6]) < clearance
                    or (lat == 0 and 0 < along <= ru[8] + 1.0 + 1e-9))
        t = min(start + self.limit, max(0.0, along))
        return math.hypot(along - t, lat) < clearance + 1.0

    def _pair(self, ru: tuple, rv: tuple) -> bool:
        """Conflict of two lanes (records of :meth:`_record`; class docstring)."""
        mu, ux0, ux1, uy0, uy1, usx, usy = ru[:7]
        mv, vx0, vx1, vy0, vy1, vsx, vsy = rv[:7]
        if not (mu or mv):
            return False
        gx, gy = _gap(vx0, vx1, ux0, ux1), _gap(vy0, vy1, uy0, uy1)
        if gx * gx + gy * gy <= 1.0 + 1e-9:
            return True   # side by side or crossing
        if mu and math.hypot(_gap(vx0, vx1, usx, usx),
                             _gap(vy0, vy1, usy, usy)) < self.turn:
            return True   # u turns beside v's lane
        if mv and math.hypot(_gap(ux0, ux1, vsx, vsx),
                             _gap(uy0, uy1, vsy, vsy)) < self.turn:
            return True
        return False

    def conflicts(self, v: str) -> bool:
        """True when dock ``v`` may not join the docks chosen so far."""
        cell = self.cells[v]
        still = self.still
        still[cell] = v   # for the lanes looked at here; taken out again below
        try:
            new = {v: self._entry(v, still)}
            rv = self._record(v, new[v])
            recs = {v: rv}
            self._last = (v, new, recs)
            _, vx0, vx1, vy0, vy1 = rv[:5]
            margin = self.margin
            for u, ru in self.lanes.items():
                # far apart (box gap, Chebyshev): neither a conflict nor a moved spot
                if ru[7] and (ru[1] - vx1 > margin or vx0 - ru[2] > margin or ru[3] - vy1 > margin
                        or vy0 - ru[4] > margin):
                    continue
                if self._moves(u, ru, cell):
                    # v standing near u's lane moves u's spot out
                    new[u] = self._entry(u, still)
                    ru = recs[u] = self._record(u, new[u])
                if self._pair(ru, rv):
                    return True
            return False
        finally:
            del still[cell]

    def add(self, v: str) -> None:
        """Add dock ``v`` (just passed by :meth:`conflicts`) to the stage."""
        cell = self.cells[v]
        self.still[cell] = v
        if self._last is not None and self._last[0] == v:
            new, recs = self._last[1], self._last[2]
        else:
            new = {v: self._entry(v, self.still)}
            new.update((u, self._entry(u, self.still)) for u, ru in self.lanes.items()
                       if self._moves(u, ru, cell))
            recs = {u: self._record(u, lane) for u, lane in new.items()}
        self._last = None
        for u, lane in new.items():
            self.entries[u] = lane
            self.lanes[u] = recs[u]


def _pickup_neighbours(acts: Mapping[str, DockAction], nodes: Sequence[str],
                       goals: Mapping[str, Pose2D], assignment: Mapping[str, str],
                       poses: Mapping[str, Pose2D], width: float, standoff: float
                       ) -> dict[str, tuple[str, ...]]:
    """For each helper dock (node), the nodes whose goal is within reach of a pick-up
    check of its module (at its pose at planning time): ``width`` (it stands on their
    cells) or a pick-up pose's clearance (``width + standoff`` out, plus
    ``PICKUP_CLEARANCE_WIDTHS * width``), with a module width of margin. One (helper docks
    x nodes) distance matrix, so that a stage's checks cost O(neighbours) instead of
    O(placed nodes) per dock (1,000-node targets)."""
    helped = [v for v in acts if acts[v].needs_helper and acts[v].module in poses]
    if not helped:
        return {}
    reach = 2.0 * width + standoff + PICKUP_CLEARANCE_WIDTHS * width
    names = list(nodes)
    gxy = np.array([[goals[assignment[u]].x, goals[assignment[u]].y] for u in names])
    mxy = np.array([[poses[acts[v].module].x, poses[acts[v].module].y] for v in helped])
    d = np.hypot(mxy[:, None, 0] - gxy[None, :, 0], mxy[:, None, 1] - gxy[None, :, 1])
    return {v: tuple(names[j] for j in np.flatnonzero(row < reach))
            for v, row in zip(helped, d)}


def _check_reachable(chosen: Sequence[str], corr: Mapping[str, DockCorridor],
                     acts: Mapping[str, DockAction], cells: Mapping[str, tuple[int, int]],
                     placed: Collection[str], occupied: Mapping[Cell, str],
                     bounds: tuple[int, int, int, int], geo: _Geometry,
                     lanes: Mapping[str, LaneEntry] | None = None) -> None:
    """:class:`_Enclosed` when a dock of the stage ``chosen`` cannot reach its pre-dock
    pose (issue 11), naming the nodes that stand in the way ("walls"):

    * its pre-dock cell (outermost corridor cell) lies in a region walled in by the
      nodes placed before its stage (:func:`~smores_assembly.corridors.enclosure`);
    * its driven body (the module, or the helper carrying it) finds no spot on its docking
      axis within the staging limit where it can turn, before a node on the axis ends the
      lane (:func:`~smores_assembly.corridors.lane_entry`; the nodes placed before the
      stage and the other docks of the stage stand still there);
    * a helper dock's module has no side free for the helper to pick it up
      (:func:`~smores_assembly.docking.control.free_pickup_faces`) among those nodes, from
      the pose it has at planning time (it waits there: helper docks do not stage); unless
      it stands on the cell of one of them (closer than a module width): the navigation
      moves it aside before then, to a pose not known here.

    The module would only find any of these out by retrying.

    ``occupied`` (cell -> node) and ``bounds`` (its cells' ``min x, max x, min y, max y``)
    are those of ``placed``, kept by the caller: a stage's checks cost O(stage), not
    O(placed nodes). ``lanes``: the docks' :class:`~smores_assembly.corridors.LaneEntry`
    among the same nodes when the caller has them (:class:`_StageLanes`)."""
    ds = DockingSettings()
    w = geo.width
    # lane_entry skips the dock's own cell: one map of the stage serves all its docks
    # (built only for a dock whose lane the caller did not give)
    still: dict[Cell, str] | None = None
    for v in chosen:
        a = acts[v]
        inside = enclosure(corr[v].corridor[-1], occupied, bounds)
        if inside is not None:
            region, walls = inside
            raise _Enclosed(v, walls,
                            f"action {a.describe()}: its pre-dock pose (cell "
                            f"{corr[v].corridor[-1]} in module widths from the root) lies in "
                            f"a region of {len(region)} cell(s) walled in by nodes {walls}: "
                            "the module cannot reach it")
        clearance = ds.obstacle_clearance
        if a.needs_helper:
            clearance = max(clearance + w, carry_clearance(w))
        lane = lanes.get(v) if lanes is not None else None
        if lane is None:
            if still is None:
                still = dict(occupied)
                still.update((cells[u], u) for u in chosen)
            lane = lane_entry(corr[v], still,
                              start=geo.standoff / w + (1 if a.needs_helper else 0),
                              clearance=clearance / w, limit=STAGING_LIMIT / w)
        if lane.extra is None:
            walls = list(lane.blocking) + [u for u in lane.beside if u not in lane.blocking]
            body = "the helper carrying it" if a.needs_helper else "the module"
            why = (f"node(s) {list(lane.blocking)} on its docking axis end the lane"
                   if lane.blocking else
                   f"no spot within {STAGING_LIMIT} m beyond it is clear")
            raise _Enclosed(v, walls,
                            f"action {a.describe()}: its pre-dock pose (cell "
                            f"{corr[v].corridor[-1]} in module widths from the root) can be "
                            f"reached only along its lane, where {body} cannot turn "
                            f"({clearance:.3f} m from every module) before {why}; nodes "
                            f"{list(lane.beside)} stand beside the lane")
        if a.needs_helper:
            pose = geo.poses[a.module]
            others = {u: geo.goals[geo.assignment[u]] for u in geo.near.get(v, ())
                      if u != v and (u in placed or u in chosen)}
            if any(math.hypot(p.x - pose.x, p.y - pose.y) < w - 1e-6
                   for p in others.values()):
                continue  # it stands on the structure's cells: moved aside before then
            if not free_pickup_faces(pose, [(p.x, p.y) for p in others.values()], w,
                                     ds.standoff):
                walls = _pickup_walls(pose, others, w, ds.standoff)
                raise _Enclosed(v, walls,
                                f"action {a.describe()}: module {a.module!r} at "
                                f"({pose.x:.3f}, {pose.y:.3f}) has no side free for its "
                                f"helper to pick it up: nodes {walls} stand within "
                                f"{PICKUP_CLEARANCE_WIDTHS * w:.3f} m of every pick-up pose")


def _pickup_walls(module: Pose2D, others: Mapping[str, Pose2D], width: float,
                  standoff: float) -> list[str]:
    """The nodes of ``others`` (node -> pose) that block a pick-up pose of ``module``."""
    out: set[str] = set()
    for f in Face:
        p = dock_axis(module, f, width).body_pose(0.5 * width, standoff)
        out.update(u for u, o in others.items()
                   if math.hypot(p.x - o.x, p.y - o.y) < PICKUP_CLEARANCE_WIDTHS * width)
    return sorted(out)


def _infeasible_message(prec: "nx.DiGraph", acts: Mapping[str, DockAction],
                        corr: Mapping[str, DockCorridor]) -> str:
    """Name a dock whose approach corridor is blocked by nodes that must precede it."""
    cycle = nx.find_cycle(prec)
    for u, w in cycle:
        if prec.edges[u, w]["why"] == "corridor":
            a = acts[u]
            before = sorted(x for x, _ in cycle if x != u)
            return (f"action {a.describe()}: its approach corridor (cells "
                    f"{list(corr[u].corridor)} in module widths from the root) is blocked "
                    f"by node {w!r}, which must be placed before it (order: "
                    f"{' -> '.join(x for x, _ in cycle)} -> {cycle[0][0]}; also involved: "
                    f"{before}): no docking order can assemble this target")
    raise AssertionError("precedence cycle without a corridor edge")  # tree: impossible


def _match_helpers(need: list[DockAction], pool: Sequence[str],
                   poses: Mapping[str, Pose2D]) -> None:
    h = np.array([[poses[p].x, poses[p].y] for p in pool])
    m = np.array([[poses[a.module].x, poses[a.module].y] for a in need])
    cost = np.hypot(m[:, None, 0] - h[None, :, 0], m[:, None, 1] - h[None, :, 1])
    rows, cols = linear_sum_assignment(cost)
    for r, c in zip(rows, cols):
        need[r].helper = pool[c]
