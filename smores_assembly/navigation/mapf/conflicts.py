"""Conflicts between paths, MDDs and cardinal conflicts (inputs of the CBS split)."""
from __future__ import annotations

from collections import deque
from typing import Mapping

from smores_assembly.navigation.mapf.grid import Grid
from smores_assembly.navigation.mapf.lowlevel import Constraints


def pos_at(p: list[int], t: int) -> int:
    return p[t] if t < len(p) else p[-1]


def find_conflicts(paths: Mapping[str, list[int]], k: int, max_list: int = 32):
    """Conflicts between agents' paths (flat cells).

    Returns ``(count, conflicts)``: ``count`` the number of conflicting (agent pair, time)
    incidents, ``conflicts`` the first ``max_list`` of them in time order, each
    ``("v", a, b, cell, t_a, t_b)`` (a at cell at t_a, b at cell at t_b, |t_a - t_b| <= k)
    or ``("e", a, b, u, v, t)`` (a: u -> v and b: v -> u between t and t + 1).
    """
    agents = sorted(paths)
    T = max(len(p) for p in paths.values()) + k
    count = 0
    found: list = []
    # history of the last k steps: cell -> agent
    hist: deque = deque()
    prevpos = None
    for t in range(T):
        here: dict[int, str] = {}
        pos = {}
        for a in agents:
            c = pos_at(paths[a], t)
            pos[a] = c
            b = here.get(c)
            if b is not None:
                count += 1
                if len(found) < max_list:
                    found.append(("v", b, a, c, t, t))
            else:
                here[c] = a
            # delayed vertex conflicts (k-robust) with earlier steps
            for back, prev in enumerate(reversed(hist), start=1):
                b = prev.get(c)
                if b is not None and b != a:
                    count += 1
                    if len(found) < max_list:
                        found.append(("v", b, a, c, t - back, t))
        if k == 0 and prevpos is not None:
            moves = {}
            for a in agents:
                u, v = prevpos[a], pos[a]
                if u != v:
                    moves[(u, v)] = a
            for (u, v), a in moves.items():
                b = moves.get((v, u))
                if b is not None and a < b:
                    count += 1
                    if len(found) < max_list:
                        found.append(("e", a, b, u, v, t - 1))
        prevpos = pos
        if k > 0:
            hist.append(here)
            if len(hist) > k:
                hist.popleft()
    return count, found


def mdd(grid: Grid, start: int, goal: int, h: list[int], cons: "Constraints",
         cost: int) -> list[set[int]] | None:
    """Multi-valued decision diagram (Sharon et al., ICTS, AIJ 2013): per time step the
    cells on some path of exactly ``cost`` steps satisfying ``cons``."""
    vertex, edge, perm, adj = cons.vertex, cons.edge, cons.perm, grid._adj
    levels = [{start}]
    for t in range(cost):
        nxt = set()
        for u in levels[-1]:
            for v in adj[u] + (u,):
                hv = h[v]
                if hv >= 0 and t + 1 + hv <= cost and (v, t + 1) not in vertex \
                        and (u, v, t) not in edge and perm.get(v, 1 << 30) > t + 1:
                    nxt.add(v)
        levels.append(nxt)
    if goal not in levels[cost]:
        return None
    levels[cost] = {goal}
    for t in range(cost - 1, -1, -1):
        nxt = levels[t + 1]
        levels[t] = {u for u in levels[t]
                     if any(v in nxt and (u, v, t) not in edge for v in adj[u] + (u,))}
    return levels


def cardinal(levels: list[set[int]] | None, conflict, side: int) -> bool:
    """True when every optimal path of the agent on ``side`` (0 = a, 1 = b) of ``conflict``
    uses the conflicting cell/move, so that resolving it raises its cost (Boyarski et al.,
    "ICBS: Improved Conflict-Based Search", IJCAI 2015, Sec. 3)."""
    if levels is None:
        return False
    cost = len(levels) - 1
    if conflict[0] == "v":
        c, t = conflict[3], conflict[4 + side]
        return t > cost or levels[t] == {c}
    u, v, t = conflict[3], conflict[4], conflict[5]
    if side == 1:
        u, v = v, u
    return t + 1 <= cost and levels[t] == {u} and levels[t + 1] == {v}
