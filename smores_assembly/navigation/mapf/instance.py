"""Checks of a MAPF instance that detect unsolvable inputs before any search."""
from __future__ import annotations

from typing import Mapping, Sequence

from smores_assembly.navigation.mapf.errors import (DuplicateGoalError, DuplicateStartError,
                                                    InvalidCellError, UnreachableGoalError)
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
    return s, g
