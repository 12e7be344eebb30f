"""Prioritized planning (Silver, AIIDE 2005): agents planned one after another, earlier
agents' paths as hard constraints; incomplete, a fallback."""
from __future__ import annotations

import random
from typing import Mapping

from smores_assembly.navigation.mapf.errors import SearchLimitError
from smores_assembly.navigation.mapf.grid import Grid
from smores_assembly.navigation.mapf.lowlevel import NOT_FOUND, Budget, Constraints, low_level


def prioritized(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
                 k: int, budget: Budget, orders: int = 8, seed: int = 0):
    agents = sorted(s, key=lambda a: (-h[a][s[a]], a))
    rng = random.Random(seed)
    last_err = "no order tried"
    for attempt in range(orders):
        if attempt > 0:
            rng.shuffle(agents)
        paths: dict[str, list[int]] = {}
        ok = True
        for a in agents:
            # earlier agents are hard constraints (parked at their goals afterwards); the
            # goal condition of low_level keeps a from stopping where they pass later
            cons = others_as_constraints(paths, a, k)
            r = low_level(grid, s[a], g[a], h[a], cons, None, 1.0, budget)
            if r is None:
                ok = False
                last_err = f"agent {a!r} found no path around higher-priority agents"
                break
            paths[a] = r[0]
        if ok:
            return paths
    raise SearchLimitError(f"{NOT_FOUND}: prioritized planning failed for {orders} agent "
                           f"orders ({last_err})")


def others_as_constraints(paths: Mapping[str, list[int]], skip: str, k: int) -> Constraints:
    """Other agents' paths (parked at their goals afterwards) as hard constraints."""
    vertex = set()
    edge = set()
    perm: dict[int, int] = {}
    for b, p in paths.items():
        if b == skip:
            continue
        for t, c in enumerate(p):
            for dt in range(-k, k + 1):
                if t + dt >= 0:
                    vertex.add((c, t + dt))
            if t > 0 and p[t - 1] != c:
                edge.add((c, p[t - 1], t - 1))
        perm[p[-1]] = max(0, len(p) - 1 - k)
    return Constraints(frozenset(vertex), frozenset(edge), perm)
