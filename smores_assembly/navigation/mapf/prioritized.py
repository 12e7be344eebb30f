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
    vertex: set[tuple[int, int]] = set()
    edge: set[tuple[int, int, int]] = set()
    perm: dict[int, int] = {}
    for b, p in paths.items():
        if b == skip:
            continue
        path_constraints(p, k, vertex, edge)
        perm[p[-1]] = max(0, len(p) - 1 - k)
    return Constraints(frozenset(vertex), frozenset(edge), perm)


def path_constraints(p: list[int], k: int, vertex: set, edge: set) -> None:
    """Add one path's constraints to ``vertex`` (``(cell, t)``, k-dilated in time) and
    ``edge`` (``(u, v, t)``: the move v -> u at step t, forbidding the swap)."""
    for t, c in enumerate(p):
        for dt in range(-k, k + 1):
            if t + dt >= 0:
                vertex.add((c, t + dt))
        if t > 0 and p[t - 1] != c:
            edge.add((c, p[t - 1], t - 1))


class ConstraintTable:
    """:func:`others_as_constraints` of a changing set of paths, kept up to date instead of
    rebuilt: the post-optimisation (:mod:`.improve`) replans one agent or a small group
    against all the others hundreds of times, and each rebuild walked every other path
    (at 110 agents some 10^5 constraints a time).

    Each agent's share (its vertex constraints ``(cell, t)`` k-dilated, its edge
    constraints ``(u, v, t)``, its parking ``cell -> t0``) is kept with, per constraint,
    the number of agents that impose it; :meth:`without` takes the shares of a group out
    of the whole by set difference (at C speed), :meth:`update` replaces an agent's path.
    ``without(group)`` equals ``others_as_constraints({a: p for a not in group}, None,
    k)`` (same vertex, edge and permanent constraints, same ``max_t``); the agents' goals
    (last cells) are distinct, as in every valid instance.

    Args:
        paths: agent -> path (flat cells, ``paths[a][t]`` at step t); not modified.
        k: the robustness (vertex constraints from t - k to t + k).
    """

    def __init__(self, paths: Mapping[str, list[int]], k: int):
        self.k = k
        self.vshare: dict[str, frozenset] = {}
        self.eshare: dict[str, frozenset] = {}
        self.park: dict[str, tuple[int, int]] = {}  # agent -> (last cell, t0)
        self.span: dict[str, int] = {}  # agent -> len(path)
        self.vcount: dict[tuple[int, int], int] = {}
        self.ecount: dict[tuple[int, int, int], int] = {}
        self._vall: frozenset | None = None
        self._eall: frozenset | None = None
        for a, p in paths.items():
            self._add(a, p)

    def _share(self, p: list[int]) -> tuple[frozenset, frozenset]:
        vertex: set[tuple[int, int]] = set()
        edge: set[tuple[int, int, int]] = set()
        path_constraints(p, self.k, vertex, edge)
        return frozenset(vertex), frozenset(edge)

    def _add(self, a: str, p: list[int]) -> None:
        v, e = self._share(p)
        self.vshare[a], self.eshare[a] = v, e
        vc, ec = self.vcount, self.ecount
        for x in v:
            vc[x] = vc.get(x, 0) + 1
        for y in e:
            ec[y] = ec.get(y, 0) + 1
        self.park[a] = (p[-1], max(0, len(p) - 1 - self.k))
        self.span[a] = len(p)
        self._vall = self._eall = None

    def _remove(self, a: str) -> None:
        vc, ec = self.vcount, self.ecount
        for x in self.vshare.pop(a):
            n = vc[x] - 1
            if n:
                vc[x] = n
            else:
                del vc[x]
        for y in self.eshare.pop(a):
            n = ec[y] - 1
            if n:
                ec[y] = n
            else:
                del ec[y]
        del self.park[a], self.span[a]
        self._vall = self._eall = None

    def update(self, a: str, p: list[int]) -> None:
        """Replace agent ``a``'s path by ``p`` (or add it)."""
        if a in self.vshare:
            self._remove(a)
        self._add(a, p)

    @staticmethod
    def _gone(shares: list[frozenset], count: dict) -> set:
        """The constraints imposed by ``shares`` and by no other agent."""
        if len(shares) == 1:
            return {x for x in shares[0] if count[x] == 1}
        mine: dict = {}
        for sh in shares:
            for x in sh:
                mine[x] = mine.get(x, 0) + 1
        return {x for x, n in mine.items() if count[x] == n}

    def without(self, group) -> tuple[frozenset, frozenset, dict[int, int], int]:
        """``(vertex, edge, perm, max_t)`` of every agent's path but those of ``group``:
        the fields of ``others_as_constraints(paths without group, None, k)``."""
        group = [a for a in group if a in self.vshare]
        if self._vall is None or self._eall is None:
            self._vall = frozenset(self.vcount)
            self._eall = frozenset(self.ecount)
        vall, eall = self._vall, self._eall
        vertex = vall.difference(self._gone([self.vshare[a] for a in group], self.vcount))
        edge = eall.difference(self._gone([self.eshare[a] for a in group], self.ecount))
        skip = set(group)
        perm = {c: t0 for a, (c, t0) in self.park.items() if a not in skip}
        # vertex constraints reach len - 1 + k, edge ones len - 1, parking len - 1 - k
        spans = [n for a, n in self.span.items() if a not in skip]
        max_t = max(spans) - 1 + self.k if spans else -1
        return vertex, edge, perm, max_t

    def constraints(self, group) -> "Constraints":
        """:meth:`without` as a :class:`Constraints` of its own (its own MDD cache)."""
        vertex, edge, perm, max_t = self.without(group)
        return Constraints(vertex, edge, perm, max_t)
