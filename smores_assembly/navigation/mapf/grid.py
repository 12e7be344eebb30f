"""The 4-connected grid map of the MAPF search (cells ``(x, y)``, flat indices, BFS)."""
from __future__ import annotations

from collections import deque
from typing import Iterable, Sequence

from smores_assembly.errors import InputError

Cell = tuple[int, int]


class Grid:
    """A ``width`` x ``height`` 4-connected grid; cells are ``(x, y)`` with 0 <= x < width.

    Args:
        width, height: map size in cells (>= 1).
        obstacles: blocked cells.

    Raises:
        InputError: non-positive size, or an obstacle outside the map (naming it).
    """

    def __init__(self, width: int, height: int, obstacles: Iterable[Sequence[int]] = ()):
        if int(width) != width or width < 1:
            raise InputError(f"width: must be a positive integer, got {width!r}")
        if int(height) != height or height < 1:
            raise InputError(f"height: must be a positive integer, got {height!r}")
        self.width, self.height = int(width), int(height)
        blocked = set()
        for o in obstacles:
            c = (int(o[0]), int(o[1]))
            if not self.inside(c):
                raise InputError(f"obstacles: {list(o)!r} outside the {width}x{height} map")
            blocked.add(c)
        self.obstacles: frozenset[Cell] = frozenset(blocked)
        n = self.width * self.height
        self._free = [True] * n
        for (x, y) in blocked:
            self._free[y * self.width + x] = False
        # adjacency on flat indices (free cells only)
        self._adj: list[tuple[int, ...]] = []
        for i in range(n):
            if not self._free[i]:
                self._adj.append(())
                continue
            x, y = i % self.width, i // self.width
            nb = []
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = x + dx, y + dy
                if 0 <= nx < self.width and 0 <= ny < self.height and \
                        self._free[ny * self.width + nx]:
                    nb.append(ny * self.width + nx)
            self._adj.append(tuple(nb))

    def inside(self, c: Sequence[int]) -> bool:
        """True when cell ``c`` lies on the map."""
        return 0 <= c[0] < self.width and 0 <= c[1] < self.height

    def free(self, c: Sequence[int]) -> bool:
        """True when ``c`` is on the map and not an obstacle."""
        return self.inside(c) and self._free[c[1] * self.width + c[0]]

    def neighbors(self, c: Cell) -> list[Cell]:
        """Free 4-neighbours of ``c``."""
        return [self.cell(i) for i in self._adj[self.index(c)]]

    def index(self, c: Sequence[int]) -> int:
        return int(c[1]) * self.width + int(c[0])

    def cell(self, i: int) -> Cell:
        return (i % self.width, i // self.width)

    def distances(self, goal: Cell) -> dict[Cell, int]:
        """BFS distances [steps] from ``goal`` to every free cell connected to it."""
        d = self._bfs(self.index(goal))
        return {self.cell(i): v for i, v in enumerate(d) if v >= 0}

    def _bfs(self, src: int) -> list[int]:
        dist = [-1] * (self.width * self.height)
        if not self._free[src]:
            return dist
        dist[src] = 0
        q = deque([src])
        adj = self._adj
        while q:
            u = q.popleft()
            du = dist[u] + 1
            for v in adj[u]:
                if dist[v] < 0:
                    dist[v] = du
                    q.append(v)
        return dist
