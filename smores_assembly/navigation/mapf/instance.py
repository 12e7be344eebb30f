"""Checks of a MAPF instance that detect unsolvable inputs before any search."""
from __future__ import annotations

from typing import Mapping, Sequence

from smores_assembly.navigation.mapf.errors import (DuplicateGoalError, DuplicateStartError,
                                                    InfeasibleError, InvalidCellError,
                                                    UnreachableGoalError)
from smores_assembly.navigation.mapf.grid import Cell, Grid


def _as_cell(c: Sequence, what: str) -> Cell:
    try:
        if len(c) != 2:
            raise TypeError
        x, y = c
        if int(x) != x or int(y) != y:
            raise TypeError
        return (int(x), int(y))
    except (TypeError, ValueError):
        raise InvalidCellError(f"{what}: expected [x, y] integers, got {c!r}") from None


def check_instance(grid: Grid, starts: Mapping[str, Sequence[int]],
                   goals: Mapping[str, Sequence[int]]) -> tuple[dict[str, Cell], dict[str, Cell]]:
    """Detect unsolvable inputs before any search.

    Returns:
        ``(starts, goals)`` as dicts of integer cells.

    Raises:
        InvalidCellError: an agent without a goal (or start), a start or goal outside the map
            or in an obstacle.
        DuplicateStartError, DuplicateGoalError: two agents share a start / goal cell.
        UnreachableGoalError: no free path from an agent's start to its goal (BFS).
        InfeasibleError: two agents must pass each other in a corridor
            (:func:`corridor_passing`).
    """
    if set(starts) != set(goals):
        missing = sorted(set(starts) ^ set(goals))
        raise InvalidCellError(f"agents {missing}: need both a start and a goal")
    s = {a: _as_cell(c, f"agent {a!r} start") for a, c in starts.items()}
    g = {a: _as_cell(c, f"agent {a!r} goal") for a, c in goals.items()}
    for what, cells in (("start", s), ("goal", g)):
        for a, c in cells.items():
            if not grid.inside(c):
                raise InvalidCellError(
                    f"agent {a!r}: {what} {list(c)} outside the {grid.width}x{grid.height} map")
            if not grid.free(c):
                raise InvalidCellError(f"agent {a!r}: {what} {list(c)} is inside an obstacle")
    for what, cells, err in (("start", s, DuplicateStartError), ("goal", g, DuplicateGoalError)):
        seen: dict[Cell, str] = {}
        for a in sorted(cells):
            c = cells[a]
            if c in seen:
                raise err(f"agents {seen[c]!r} and {a!r} share the {what} {list(c)}")
            seen[c] = a
    for a in sorted(s):
        d = grid._bfs(grid.index(g[a]))
        if d[grid.index(s[a])] < 0:
            raise UnreachableGoalError(
                f"agent {a!r}: goal {list(g[a])} is not reachable from start {list(s[a])}")
    passing = corridor_passing(grid, s, g)
    if passing is not None:
        a, b, corridor = passing
        raise InfeasibleError(
            f"proven infeasible: agents {a!r} ({list(s[a])} -> {list(g[a])}) and {b!r} "
            f"({list(s[b])} -> {list(g[b])}) must pass each other in the corridor of "
            f"{len(corridor)} cells from {list(corridor[0])} to {list(corridor[-1])}, "
            "which has no cell where one can pass the other")
    return s, g


def corridor_passing(grid: Grid, starts: Mapping[str, Cell], goals: Mapping[str, Cell]
                     ) -> tuple[str, str, list[Cell]] | None:
    """Two agents that must pass each other in a corridor, or None.

    A corridor is a connected component of free cells that is a simple path (no cell with
    three or more free neighbours, no ring). Agents in it keep their order along it: to
    change it, two would have to share a cell or swap cells in one step, both conflicts.
    So when the agents' goals are in a different order than their starts, the instance has
    no solution. Sound, not complete (other unsolvable instances pass this check).

    Returns:
        ``(a, b, corridor cells in order)`` with ``a`` before ``b`` at the start and after
        it at the goal, or None. Assumes every goal lies in its start's component.
    """
    adj = grid._adj
    seen: set[int] = set()
    for a0 in sorted(starts):
        src = grid.index(starts[a0])
        if src in seen:
            continue
        comp = [src]
        seen.add(src)
        k = 0
        while k < len(comp):
            for v in adj[comp[k]]:
                if v not in seen:
                    seen.add(v)
                    comp.append(v)
            k += 1
        degrees = [len(adj[c]) for c in comp]
        if max(degrees) > 2 or sum(degrees) // 2 != len(comp) - 1:
            continue  # a branching component or a ring: agents may pass there
        # walk the path from one of its ends
        order = [next(c for c, d in zip(comp, degrees) if d <= 1)]
        prev = -1
        while len(order) < len(comp):
            nxt = next(v for v in adj[order[-1]] if v != prev)
            prev = order[-1]
            order.append(nxt)
        pos = {c: i for i, c in enumerate(order)}
        here = [a for a in starts if grid.index(starts[a]) in pos]
        by_start = sorted(here, key=lambda a: pos[grid.index(starts[a])])
        rank_goal = {a: pos[grid.index(goals[a])] for a in here}
        for i, a in enumerate(by_start):
            for b in by_start[i + 1:]:
                if rank_goal[a] > rank_goal[b]:
                    return a, b, [grid.cell(c) for c in order]
    return None
