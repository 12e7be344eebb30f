"""Conflict-based search: CBS (``w == 1``, optimal, ICBS cardinal splits) and ECBS
(``w > 1``, focal search on both levels); Sharon et al. AIJ 2015, Barer et al. SoCS 2014."""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Mapping

from smores_assembly.navigation.mapf.conflicts import cardinal, find_conflicts, mdd
from smores_assembly.navigation.mapf.errors import NoSolutionError
from smores_assembly.navigation.mapf.grid import Grid
from smores_assembly.navigation.mapf.lowlevel import Budget, Constraints, Occupancy, low_level


class HLNode:
    __slots__ = ("cons", "paths", "lbs", "cost", "lb", "nconf", "conflicts", "closed", "id")
    id: int  # set by the search when the node is created

    def __init__(self, cons, paths, lbs, k):
        self.cons = cons
        self.paths = paths
        self.lbs = lbs
        self.cost = sum(len(p) - 1 for p in paths.values())
        self.lb = sum(lbs.values())
        self.nconf, self.conflicts = find_conflicts(paths, k)
        self.closed = False


def conflict_search(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
                     w: float, k: int, budget: Budget,
                     base: Mapping[str, Constraints] | None = None
                     ) -> tuple[dict[str, list[int]], int]:
    agents = sorted(s)
    cons = {a: (base or {}).get(a) or Constraints() for a in agents}
    paths: dict[str, list[int]] = {}
    lbs: dict[str, int] = {}
    for a in agents:
        cat = Occupancy(paths, a, k)
        r = low_level(grid, s[a], g[a], h[a], cons[a], cat, w, budget)
        if r is None:
            raise NoSolutionError(f"agent {a!r}: no path")
        paths[a], lbs[a] = r
    ids = itertools.count()
    root = HLNode(cons, paths, lbs, k)
    root.id = next(ids)
    open_heap = [(root.lb, root.id, root)]
    pending = [(root.cost, root.id, root)]
    focal: list = []
    while True:
        while open_heap and open_heap[0][2].closed:
            heapq.heappop(open_heap)
        if not open_heap:
            raise NoSolutionError("conflict-based search exhausted its search space")
        lb_min = open_heap[0][0]
        bound = w * lb_min
        while pending and pending[0][0] <= bound + 1e-9:
            _, _, n = heapq.heappop(pending)
            if not n.closed:
                heapq.heappush(focal, (n.nconf, n.cost, n.id, n))
        node = None
        while focal:
            _, _, _, cand = heapq.heappop(focal)
            if not cand.closed:
                node = cand
                break
        if node is None:  # cannot happen (the lb_min node has cost <= w * lb); be safe
            node = open_heap[0][2]
        node.closed = True
        budget.tick_high()
        if not node.conflicts:
            return node.paths, lb_min
        conflict = node.conflicts[0]
        if w == 1.0:  # CBS: split on a cardinal conflict first, then a semi-cardinal one
            best_rank = -1
            for cf in node.conflicts:
                rank = 0
                for side, agent in enumerate(cf[1:3]):
                    c = node.cons[agent]
                    cost = len(node.paths[agent]) - 1
                    if c.mdd is None or c.mdd[0] != cost:
                        c.mdd = (cost, mdd(grid, s[agent], g[agent], h[agent], c, cost))
                    rank += cardinal(c.mdd[1], cf, side)
                if rank > best_rank:
                    conflict, best_rank = cf, rank
                    if rank == 2:
                        break
        branches: list[tuple[str, tuple[str, Any]]]  # (agent, (kind, constraint))
        if conflict[0] == "v":
            _, a, b, c, ta, tb = conflict
            if k == 0:
                branches = [(a, ("v", [(c, ta)])), (b, ("v", [(c, tb)]))]
            else:
                # a at c at ta, b at c at tb (|ta - tb| <= k): either a is not at c at ta, or
                # b is nowhere at c within k steps of ta (Atzmon et al. 2018, range constraints)
                branches = [(a, ("v", [(c, ta)])),
                            (b, ("v", [(c, t) for t in range(max(0, ta - k), ta + k + 1)]))]
        else:
            _, a, b, u, v, t = conflict
            branches = [(a, ("e", (u, v, t))), (b, ("e", (v, u, t)))]
        for agent, (kind, item) in branches:
            old = node.cons[agent]
            new = old.add_vertex(item) if kind == "v" else old.add_edge(item)
            if kind == "v" and new.vertex == old.vertex:
                continue
            ccons = dict(node.cons)
            ccons[agent] = new
            cpaths = dict(node.paths)
            cpaths[agent] = None
            cat = Occupancy(cpaths, agent, k)
            r = low_level(grid, s[agent], g[agent], h[agent], new, cat, w, budget)
            if r is None:
                continue
            cpaths[agent] = r[0]
            clbs = dict(node.lbs)
            clbs[agent] = max(r[1], node.lbs[agent])
            child = HLNode(ccons, cpaths, clbs, k)
            child.id = next(ids)
            heapq.heappush(open_heap, (child.lb, child.id, child))
            if child.cost <= bound + 1e-9:
                heapq.heappush(focal, (child.nconf, child.cost, child.id, child))
            else:
                heapq.heappush(pending, (child.cost, child.id, child))
