"""Post-optimisation of a valid schedule: best responses and large neighbourhood search;
the schedule stays valid and its cost never rises."""
from __future__ import annotations

import math
import random

from smores_assembly.navigation.mapf.cbs import conflict_search
from smores_assembly.navigation.mapf.errors import NoSolutionError, SearchLimitError
from smores_assembly.navigation.mapf.grid import Grid
from smores_assembly.navigation.mapf.lowlevel import Budget, low_level
from smores_assembly.navigation.mapf.prioritized import ConstraintTable


def improve_paths(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
             paths: dict[str, list[int]], k: int, budget: Budget, rounds: int = 3,
             max_replans: int | None = None) -> int:
    """Post-optimisation of a valid schedule: replan one agent at a time optimally against
    all the others (a best response, i.e. a large-neighbourhood step of size one); a new
    path is kept only when shorter, so the schedule stays valid and its cost never rises.
    The most delayed agents first; at most ``max_replans`` replans (None: no bound).
    Stops at the budget. Returns the number of improved paths."""
    improved = 0
    replans = 0
    table = ConstraintTable(paths, k)  # others_as_constraints(paths, a, k), kept up to date
    try:
        for _ in range(rounds):
            changed = False
            order = sorted(paths, key=lambda a: (h[a][s[a]] - len(paths[a]), a))
            for a in order:
                if len(paths[a]) - 1 == h[a][s[a]]:
                    continue  # already a shortest path
                if max_replans is not None and replans >= max_replans:
                    return improved
                replans += 1
                r = low_level(grid, s[a], g[a], h[a], table.constraints([a]),
                               None, 1.0, budget)
                if r is not None and len(r[0]) < len(paths[a]):
                    paths[a] = r[0]
                    table.update(a, r[0])
                    improved += 1
                    changed = True
            if not changed:
                break
    except SearchLimitError:
        pass
    return improved


def lns(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
         paths: dict[str, list[int]], k: int, budget: Budget, time_s: float,
         group_size: int = 3, seed: int = 0, max_iters: int | None = None) -> int:
    """Large neighbourhood search (after Li et al., "Anytime Multi-Agent Path Finding via
    Large Neighborhood Search", IJCAI 2021): repeatedly pick a delayed agent and up to
    ``group_size - 1`` agents whose paths cross its path, replan that group optimally with
    CBS against all other paths as hard constraints, keep the result when cheaper. The
    schedule stays valid and its cost never rises. Bounded by ``time_s`` (``math.inf``:
    no time bound, each group replan then bounded by counts only, so that the result does
    not depend on the machine's load), ``max_iters`` iterations (default ``4 n``) and
    ``budget``. Returns the number of improving replans."""
    agents = sorted(paths)
    if len(agents) < 2 or time_s <= 0:
        return 0
    rng = random.Random(seed)
    t_end = budget.elapsed() + time_s
    improved, stale = 0, 0
    table = ConstraintTable(paths, k)  # all paths; without(group): the others'
    for _ in range(4 * len(agents) if max_iters is None else max_iters):
        if budget.elapsed() >= t_end or stale >= len(agents) or budget.low >= budget.max_low:
            break
        delay = {a: len(paths[a]) - 1 - h[a][s[a]] for a in agents}
        delayed = [a for a in agents if delay[a] > 0]
        if not delayed:
            break
        first = rng.choices(delayed, weights=[delay[a] for a in delayed])[0]
        cells = set(paths[first])
        near = [b for b in agents if b != first and cells.intersection(paths[b])]
        rng.shuffle(near)
        group = [first] + near[:group_size - 1]
        if len(group) < 2:
            group.append(rng.choice([b for b in agents if b != first]))
        # the other paths as hard constraints, one object per agent (own MDD cache)
        shared = table.constraints(group)
        base = {a: shared if i == 0 else shared.copy() for i, a in enumerate(group)}
        sub_s = math.inf if math.isinf(time_s) else \
            max(1e-3, min(t_end - budget.elapsed(), 0.05))
        sub = Budget(64, max(1, min(50_000, budget.max_low - budget.low)), sub_s, budget.clock)
        try:
            new, _ = conflict_search(grid, {a: s[a] for a in group}, {a: g[a] for a in group},
                                      h, 1.0, k, sub, base=base)
        except (SearchLimitError, NoSolutionError):
            new = None
        budget.low += sub.low
        if new is not None and sum(len(new[a]) for a in group) < \
                sum(len(paths[a]) for a in group):
            paths.update(new)
            for a in group:
                table.update(a, new[a])
            improved += 1
            stale = 0
        else:
            stale += 1
    return improved
