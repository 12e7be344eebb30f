"""Low-level search of one agent in space-time: the search budget, the conflict-avoidance
table, an agent's constraints, and focal/A* search (Barer et al. 2014, Sec. 5)."""
from __future__ import annotations

import heapq
import itertools
import time
from typing import Mapping

from smores_assembly.navigation.mapf.errors import SearchLimitError
from smores_assembly.navigation.mapf.grid import Grid


#: Start of the message of every bound hit: the search says what it knows, not more (a
#: proven infeasibility is an :class:`~.errors.InfeasibleError` instead).
NOT_FOUND = "no solution found within the budget"


class Budget:
    """Bounds of one search: high-level nodes, low-level expansions and time [s] on
    ``clock``; :meth:`tick_high` / :meth:`tick_low` raise SearchLimitError past a bound."""

    clock = staticmethod(time.perf_counter)

    def __init__(self, max_high: int, max_low: int, time_limit_s: float, clock=None):
        self.max_high, self.max_low, self.time_limit = max_high, max_low, time_limit_s
        if clock is not None:
            self.clock = clock
        self.high = 0
        self.low = 0
        self.t0 = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def absorb(self, other: "Budget") -> None:
        """Count the work of ``other`` (a search run on its own bounds for this one, e.g.
        a fallback) in this one's totals; no bound is checked."""
        self.high += other.high
        self.low += other.low

    def tick_low(self, n: int = 1) -> None:
        self.low += n
        if self.low > self.max_low:
            raise SearchLimitError(f"{NOT_FOUND}: search exceeded "
                                   f"max_low_level_expansions={self.max_low}")
        if (self.low & 1023) == 0 and self.elapsed() > self.time_limit:
            raise SearchLimitError(f"{NOT_FOUND}: search exceeded "
                                   f"time_limit_s={self.time_limit}")

    def tick_high(self) -> None:
        self.high += 1
        if self.high > self.max_high:
            raise SearchLimitError(f"{NOT_FOUND}: search exceeded "
                                   f"max_expansions={self.max_high} (high-level nodes)")
        if self.elapsed() > self.time_limit:
            raise SearchLimitError(f"{NOT_FOUND}: search exceeded "
                                   f"time_limit_s={self.time_limit}")


class Occupancy:
    """Conflict-avoidance table of the other agents' paths (flat cell indices)."""

    __slots__ = ("occ", "edges", "park", "horizon", "k")

    def __init__(self, paths: Mapping[str, list[int]], skip: str, k: int):
        occ: dict[tuple[int, int], int] = {}
        edges: dict[tuple[int, int, int], int] = {}
        park: dict[int, int] = {}
        horizon = 0
        for a, p in paths.items():
            if a == skip or p is None:
                continue
            prev = None
            for t, c in enumerate(p):
                occ[(c, t)] = occ.get((c, t), 0) + 1
                if prev is not None and prev != c:
                    edges[(prev, c, t - 1)] = edges.get((prev, c, t - 1), 0) + 1
                prev = c
            park[p[-1]] = len(p) - 1
            horizon = max(horizon, len(p))
        self.occ, self.edges, self.park, self.horizon, self.k = occ, edges, park, horizon, k

    def at(self, c: int, t: int) -> int:
        n = self.occ.get((c, t), 0)
        pt = self.park.get(c)
        if pt is not None and t > pt:
            n += 1
        return n

    def move(self, u: int, v: int, t: int) -> int:
        """Conflicts of moving u -> v between t and t+1: :meth:`at` ``(v, t + 1 + dt)``
        summed over ``dt`` in ``-k..k`` (times >= 0), plus the swaps with u. Inlined (the
        low-level search's innermost call): the parked agent's share counted at once."""
        k, occ = self.k, self.occ
        s = t + 1
        lo = s - k if s > k else 0
        n = 0
        for x in range(lo, s + k + 1):
            n += occ.get((v, x), 0)
        pt = self.park.get(v)
        if pt is not None:
            # at() adds 1 for every time x > pt of the window
            if pt + 1 > lo:
                lo = pt + 1
            if s + k >= lo:
                n += s + k - lo + 1
        if u != v:
            n += self.edges.get((v, u, t), 0)
        return n

    def after(self, c: int, t: int) -> int:
        """Conflicts of staying at ``c`` forever from time ``t`` on."""
        n = 0
        for tt in range(t + 1, self.horizon + self.k + 1):
            n += self.occ.get((c, tt), 0)
        return n


class Constraints:
    """Constraints of one agent: vertex (cell, t), edge (u, v, t) and permanent cell -> t0.

    ``max_t``: the latest time step any constraint names (-1: none); given by a caller that
    knows it (:class:`~.prioritized.ConstraintTable`), else computed. :meth:`last_at` (the
    latest vertex constraint of a cell) is computed once per vertex set and carried over
    to :meth:`add_vertex` / :meth:`add_edge` children (a CBS over a large neighbourhood
    adds a few constraints to tens of thousands)."""

    __slots__ = ("vertex", "edge", "perm", "max_t", "mdd", "_last")

    def __init__(self, vertex=frozenset(), edge=frozenset(), perm=None, max_t=None,
                 last=None):
        self.vertex: frozenset = vertex
        self.edge: frozenset = edge
        self.perm: dict[int, int] = perm or {}
        self.mdd = None  # cached (cost, levels) of the optimal paths under these constraints
        self._last: dict[int, int] | None = last  # cell -> latest t of a vertex constraint
        if max_t is None:
            mt = -1
            for (_, t) in vertex:
                mt = max(mt, t)
            for (_, _, t) in edge:
                mt = max(mt, t + 1)
            for t in self.perm.values():
                mt = max(mt, t)
            max_t = mt
        self.max_t: int = max_t

    def last_at(self, c: int) -> int:
        """The latest time step t with ``(c, t)`` in ``vertex`` (-1: none)."""
        last = self._last
        if last is None:
            last = {}
            for (cc, t) in self.vertex:
                if t > last.get(cc, -1):
                    last[cc] = t
            self._last = last
        return last.get(c, -1)

    def copy(self) -> "Constraints":
        """The same constraints as an object of their own (its own MDD cache; the sets
        and :meth:`last_at`'s table shared, computed here when not yet)."""
        self.last_at(-1)
        return Constraints(self.vertex, self.edge, dict(self.perm), self.max_t, self._last)

    def add_vertex(self, items) -> "Constraints":
        items = frozenset(items)
        mt = max([self.max_t] + [t for (_, t) in items])
        last = self._last
        if last is not None:
            last = dict(last)
            for (c, t) in items:
                if t > last.get(c, -1):
                    last[c] = t
        return Constraints(self.vertex | items, self.edge, self.perm, mt, last)

    def add_edge(self, item) -> "Constraints":
        return Constraints(self.vertex, self.edge | {item}, self.perm,
                           max(self.max_t, item[2] + 1), self._last)


def low_level(grid: Grid, start: int, goal: int, h: list[int], cons: Constraints,
               cat: Occupancy | None, w: float, budget: Budget) -> tuple[list[int], int] | None:
    """Focal search in space-time for one agent (A* with conflict tie-breaking when w == 1).

    Returns ``(path, lower_bound)`` or None when no path satisfies the constraints.
    Source: Barer et al. 2014, Sec. 5 (focal list on f <= w * f_min ordered by conflicts).
    """
    if h[start] < 0:
        return None
    vertex, edge, perm = cons.vertex, cons.edge, cons.perm
    last_goal = cons.last_at(goal)
    pg = perm.get(goal)
    if pg is not None:
        return None  # own goal permanently taken (prioritized planning)
    horizon = max(cons.max_t, cat.horizon + cat.k if cat is not None else 0) + 1
    adj = grid._adj
    # node: [f, conflicts, t, cell, parent, alive, terminal]
    tie = itertools.count()
    focal: list = []
    buckets: dict[int, list] = {}
    open_count: dict[int, int] = {}
    f_heap: list[int] = []
    best: dict[tuple[int, int], list] = {}
    closed: set[tuple[int, int]] = set()
    if (start, 0) in vertex:
        return None
    f0 = h[start]
    fmin = f0
    bound = w * fmin

    def push(node):
        f = node[0]
        cnt = open_count.get(f, 0)
        if cnt == 0:
            heapq.heappush(f_heap, f)
        open_count[f] = cnt + 1
        if f <= bound:
            heapq.heappush(focal, (node[1], f, -node[2], next(tie), node))
        else:
            buckets.setdefault(f, []).append(node)

    root = [f0, 0, 0, start, None, True, False]
    best[(start, 0)] = root
    push(root)
    while focal:
        _, f, _, _, node = heapq.heappop(focal)
        if not node[5]:
            continue
        node[5] = False
        open_count[f] -= 1
        if node[6]:  # terminal: at goal for good
            path = []
            n = node[4]
            while n is not None:
                path.append(n[3])
                n = n[4]
            path.reverse()
            return path, min(fmin, f)
        _, conf, t, c, _, _, _ = node
        key = (c, min(t, horizon))
        if key not in closed:  # (a closed key only updates f_min below)
            closed.add(key)
            budget.tick_low()
            if c == goal and t > last_goal:
                extra = cat.after(c, t) if cat is not None else 0
                term = [f, conf + extra, t, c, node, True, True]
                push(term)
            nt = t + 1
            for v in adj[c] + (c,):
                if (v, nt) in vertex or (c, v, t) in edge:
                    continue
                pv = perm.get(v)
                if pv is not None and nt >= pv:
                    continue
                hv = h[v]
                if hv < 0:
                    continue
                nkey = (v, min(nt, horizon))
                if nkey in closed:
                    continue
                nconf = conf + (cat.move(c, v, t) if cat is not None else 0)
                old = best.get(nkey)
                if old is not None:
                    if (old[2], old[1]) <= (nt, nconf):
                        continue
                    if old[5]:
                        old[5] = False
                        open_count[old[0]] -= 1
                child = [nt + hv, nconf, nt, v, node, True, False]
                best[nkey] = child
                push(child)
        # advance f_min / focal bound
        while f_heap and open_count.get(f_heap[0], 0) == 0:
            heapq.heappop(f_heap)
        if not f_heap:
            return None
        if f_heap[0] != fmin:
            fmin = f_heap[0]
            new_bound = w * fmin
            if new_bound > bound:
                bound = new_bound
                for bf in [b for b in buckets if b <= bound]:
                    for n in buckets.pop(bf):
                        if n[5]:
                            heapq.heappush(focal, (n[1], n[0], -n[2], next(tie), n))
    return None
