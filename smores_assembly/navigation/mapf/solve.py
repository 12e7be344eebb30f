"""The MAPF entry point :func:`solve` and its result :class:`Solution`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from smores_assembly.errors import InputError
from smores_assembly.navigation.mapf.cbs import conflict_search
from smores_assembly.navigation.mapf.errors import SearchLimitError
from smores_assembly.navigation.mapf.grid import Cell, Grid
from smores_assembly.navigation.mapf.improve import improve_paths, lns
from smores_assembly.navigation.mapf.instance import check_instance
from smores_assembly.navigation.mapf.lacam import lacam, without_following
from smores_assembly.navigation.mapf.lowlevel import Budget
from smores_assembly.navigation.mapf.prioritized import prioritized


@dataclass
class Solution:
    """A collision-free schedule.

    Attributes:
        paths: agent -> list of cells, ``paths[a][t]`` = cell at time step ``t``; the agent
            stays at the last cell (its goal) after the end of its list.
        cost: sum over agents of ``len(path) - 1`` (arrival times) [steps].
        makespan: largest ``len(path) - 1`` [steps].
        lower_bound: proven lower bound of the optimal cost (== cost for CBS).
        runtime_s: wall time of the search [s].
        high_level_expanded, low_level_expanded: search effort.
        algorithm: the algorithm that produced the schedule ("cbs", "ecbs", "prioritized",
            "lacam").
        initial_cost: cost of the schedule before the post-optimisation (== cost when
            there was none).
        notes: what happened on the way (fallbacks, refinement).
    """

    paths: dict[str, list[Cell]]
    cost: int
    makespan: int
    lower_bound: int
    runtime_s: float
    high_level_expanded: int
    low_level_expanded: int
    algorithm: str
    notes: list[str] = field(default_factory=list)
    initial_cost: int = 0


ALGORITHMS = ("cbs", "ecbs", "prioritized", "lacam")


def solve(grid: Grid, starts: Mapping[str, Sequence[int]], goals: Mapping[str, Sequence[int]],
          algorithm: str = "ecbs", w: float = 1.3, k_robust: int = 0,
          max_expansions: int = 100_000, max_low_level_expansions: int = 5_000_000,
          time_limit_s: float = 10.0, fallback: bool = False,
          tight_w: float | None = None, tight_fraction: float = 0.25,
          improve: bool = True, improve_time_s: float | None = None,
          clock: Callable[[], float] | None = None, lacam_expansions: int = 100_000,
          refine_iterations: int = 60, refine_expansions: int = 100_000,
          seed: int = 0) -> Solution:
    """Plan collision-free paths for all agents.

    Args:
        grid: the map.
        starts, goals: agent name -> ``(x, y)`` cell.
        algorithm: ``"cbs"`` (optimal sum of costs), ``"ecbs"`` (cost <= w * optimum),
            ``"prioritized"`` (incomplete) or ``"lacam"`` (complete, fast on dense and large
            instances, no bound on the cost; ``k_robust`` 0 or 1; :mod:`.lacam`).
        w: suboptimality factor of ECBS (>= 1).
        k_robust: 0 for the standard model; k >= 1 forbids two agents in one cell within k
            steps (no following).
        max_expansions: bound on high-level (constraint tree) nodes.
        max_low_level_expansions: bound on all low-level (space-time) expansions.
        time_limit_s: wall-time bound [s] (``math.inf``: none). Every other bound is a
            count, so a search that is not stopped by this one gives the same schedule
            whatever the machine's load.
        fallback: when CBS/ECBS hits a bound, run LaCAM (complete; ``k_robust`` <= 1, with
            ``lacam_expansions`` and a fresh low-level and time bound; prioritized planning
            when ``k_robust`` >= 2) before giving up. A LaCAM that exhausts the reachable
            configurations proves the instance unsolvable (:class:`NoSolutionError`).
            LaCAM with ``k_robust`` 1 (asked for or as the fallback) that hits its bound
            runs once more with ``k_robust`` 0 on fresh bounds of the same size, and its
            schedule re-timed so that no agent follows another
            (:func:`~.lacam.without_following`; the bound is hit when a step rotates a
            cycle): one call may take up to twice ``time_limit_s`` (three times with the
            fallback) before it gives up.
        clock: the clock of ``time_limit_s`` (default ``time.perf_counter``, wall time;
            ``time.process_time`` bounds CPU time instead, e.g. for benchmarks).
        tight_w: ECBS only: first run ECBS with this smaller factor (e.g. 1.05) on
            ``tight_fraction`` of the bounds and keep its (better) solution; only when it
            hits its bound, run with ``w`` on the remaining budget. The guarantee stays
            cost <= w * optimum (<= tight_w * optimum when the first run succeeds).
        improve: after ECBS or prioritized planning, shorten paths by best responses
            (each agent replanned optimally against all others) and by a large
            neighbourhood search (groups of 3 agents replanned with CBS) for at most
            ``improve_time_s`` (default 10 % of ``time_limit_s``, at most 0.5 s; never
            beyond 95 % of ``time_limit_s``); the cost never rises. A LaCAM schedule is
            refined the same way but bounded by counts only: ``refine_iterations`` best
            responses (most delayed agents first) and as many neighbourhood replans, with
            ``refine_expansions`` low-level expansions in all.
        lacam_expansions: bound on the configurations LaCAM generates.
        refine_iterations, refine_expansions: see ``improve``.
        seed: LaCAM's (PIBT's) tie-breaking.

    Returns:
        A :class:`Solution`.

    Raises:
        InputError: unknown ``algorithm``, ``w < 1``, ``k_robust < 0``.
        InvalidCellError, DuplicateStartError, DuplicateGoalError, UnreachableGoalError,
        InfeasibleError: unsolvable input, detected before the search
            (:func:`check_instance`).
        SearchLimitError: a bound was exceeded (and the fallback, if enabled, failed):
            "no solution found within the budget", which proves nothing.
        NoSolutionError: the search space is exhausted (CBS, or LaCAM: "proven
            unsolvable").
    """
    if algorithm not in ALGORITHMS:
        raise InputError(f"algorithm: {algorithm!r} not one of {ALGORITHMS}")
    if not w >= 1.0:
        raise InputError(f"w: suboptimality factor must be >= 1, got {w!r}")
    if int(k_robust) != k_robust or k_robust < 0:
        raise InputError(f"k_robust: must be a non-negative integer, got {k_robust!r}")
    if algorithm == "lacam" and k_robust > 1:
        raise InputError(f"k_robust: LaCAM supports 0 or 1, got {k_robust!r}")
    for name, v in (("lacam_expansions", lacam_expansions),
                    ("refine_iterations", refine_iterations),
                    ("refine_expansions", refine_expansions)):
        if int(v) != v or v < 0:
            raise InputError(f"{name}: must be a non-negative integer, got {v!r}")
    sc, gc = check_instance(grid, starts, goals)
    budget = Budget(max_expansions, max_low_level_expansions, time_limit_s, clock)
    s = {a: grid.index(c) for a, c in sc.items()}
    g = {a: grid.index(c) for a, c in gc.items()}
    h = {a: grid._bfs(g[a]) for a in s}
    notes: list[str] = []
    used = algorithm
    if not s:
        return Solution({}, 0, 0, 0, 0.0, 0, 0, algorithm)
    def run_lacam(b: Budget) -> dict[str, list[int]]:
        try:
            return lacam(grid, s, g, h, k_robust, b, seed=seed)
        except SearchLimitError as exc:
            if k_robust != 1:
                raise
            # Without following, agents packed in a corridor move one at a time and the
            # search can drown in configurations (random 50 seed 911, a carried pair's
            # stage: 13 agents, 17 x 15 cells, no k = 1 schedule in 10^7 moves; k = 0 in
            # 0.4 s). The k = 0 schedule, re-timed (``without_following``), is one.
            fb = Budget(b.max_high, b.max_low, b.time_limit, b.clock)
            try:
                followed = lacam(grid, s, g, h, 0, fb, seed=seed)
            except SearchLimitError:
                raise exc from None
            finally:
                b.absorb(fb)
            unfollowed = without_following(followed)
            if unfollowed is None:
                raise exc from None
            notes.append(f"lacam: {exc}; planned without the no-following rule and its "
                         "moves re-timed so that no agent follows another")
            return unfollowed

    try:
        if algorithm == "prioritized":
            paths = prioritized(grid, s, g, h, k_robust, budget)
            lb = sum(h[a][s[a]] for a in s)
        elif algorithm == "lacam":
            budget.max_high = lacam_expansions
            paths = run_lacam(budget)
            lb = sum(h[a][s[a]] for a in s)
        elif algorithm == "ecbs" and tight_w is not None and 1.0 <= tight_w < w:
            tight = Budget(max(1, int(tight_fraction * max_expansions)),
                            max(1, int(tight_fraction * max_low_level_expansions)),
                            tight_fraction * time_limit_s, clock)
            try:
                paths, lb = conflict_search(grid, s, g, h, tight_w, k_robust, tight)
                used = f"ecbs(w={tight_w})"
            except SearchLimitError:
                paths = None
            budget.absorb(tight)
            if paths is None:
                paths, lb = conflict_search(grid, s, g, h, w, k_robust, budget)
        else:
            paths, lb = conflict_search(grid, s, g, h, 1.0 if algorithm == "cbs" else w,
                                         k_robust, budget)
    except SearchLimitError as exc:
        if not fallback or algorithm in ("prioritized", "lacam"):
            raise
        if k_robust <= 1:
            notes.append(f"{algorithm}: {exc}; fell back to LaCAM")
            fb = Budget(lacam_expansions, max_low_level_expansions, time_limit_s, clock)
            try:
                paths = run_lacam(fb)
            finally:
                budget.absorb(fb)
            used = "lacam"
        else:
            notes.append(f"{algorithm}: {exc}; fell back to prioritized planning")
            fb = Budget(max_expansions, max_low_level_expansions, time_limit_s, clock)
            paths = prioritized(grid, s, g, h, k_robust, fb)
            budget.low += fb.low
            used = "prioritized"
        lb = sum(h[a][s[a]] for a in s)
    initial = sum(len(p) - 1 for p in paths.values())
    if improve and used == "lacam":
        # counts only (no time bound): the same instance gives the same schedule
        rb = Budget(1 << 62, refine_expansions, math.inf, clock)
        n = improve_paths(grid, s, g, h, paths, k_robust, rb, max_replans=refine_iterations)
        n += lns(grid, s, g, h, paths, k_robust, rb, math.inf, max_iters=refine_iterations)
        budget.low += rb.low
        if n:
            notes.append(f"refinement: {n} improving replans, cost {initial} -> "
                         f"{sum(len(p) - 1 for p in paths.values())}")
    elif improve and used != "cbs":
        n = improve_paths(grid, s, g, h, paths, k_robust, budget)
        lns_s = min(0.1 * time_limit_s, 0.5) if improve_time_s is None else improve_time_s
        n += lns(grid, s, g, h, paths, k_robust, budget,
                  min(lns_s, 0.95 * time_limit_s - budget.elapsed()))
        if n:
            notes.append(f"post-optimisation: {n} improving replans")
    out = {a: [grid.cell(c) for c in p] for a, p in paths.items()}
    cost = sum(len(p) - 1 for p in out.values())
    return Solution(paths=out, cost=cost, makespan=max(len(p) - 1 for p in out.values()),
                    lower_bound=lb, runtime_s=budget.elapsed(),
                    high_level_expanded=budget.high, low_level_expanded=budget.low,
                    algorithm=used, notes=notes, initial_cost=initial)
