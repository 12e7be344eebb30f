"""Multi-agent path finding (MAPF) on a 4-connected grid in space-time (no ROS imports).

Model (the standard one of the MAPF literature, e.g. Stern et al., "Multi-Agent Pathfinding:
Definitions, Variants, and Benchmarks", SoCS 2019):

* time is discrete; at each step an agent moves to a free 4-neighbour cell or waits;
* a **vertex conflict**: two agents in one cell at one time step;
* an **edge (swap) conflict**: two agents exchange their cells in one step;
* an agent that reached its goal stays there forever (it still blocks it); its cost is the
  time step at which it arrives for good; the solution cost is the **sum of costs**.

Optionally the search is *k-robust* (Atzmon et al., "Robust Multi-Agent Path Finding",
SoCS 2018): two agents may not occupy one cell within ``k`` steps of each other. ``k = 1``
forbids "following" (entering a cell in the step its occupant leaves it), which keeps
physical modules of a given footprint apart during the transitions as well
(:mod:`smores_assembly.navigation.stage` uses it).

Algorithms:

* :func:`solve` with ``algorithm="cbs"``: Conflict-Based Search (Sharon et al., "Conflict-
  based search for optimal multi-agent pathfinding", AIJ 2015), optimal sum of costs; the
  low level is space-time A* with the true-distance heuristic; ties between equally cheap
  paths are broken by the number of conflicts with the other agents' paths (the conflict
  avoidance table of Sec. 4.3 of that paper).
* ``algorithm="ecbs"``: Enhanced CBS (Barer et al., "Suboptimal Variants of the Conflict-
  Based Search Algorithm for the Multi-Agent Pathfinding Problem", SoCS 2014, Sec. 5):
  focal search on both levels with suboptimality factor ``w`` (cost <= w * optimum),
  focal heuristic = number of conflicts.
* ``algorithm="prioritized"``: prioritized planning (Silver, "Cooperative Pathfinding",
  AIIDE 2005) over a few agent orders; incomplete, used only as a fallback.
* CBS splits on cardinal conflicts first (Boyarski et al., "ICBS", IJCAI 2015), detected
  with multi-valued decision diagrams; ECBS may first try a tighter factor
  (``tight_w``); ECBS and prioritized schedules are then shortened by best responses
  (each agent replanned optimally against all others, kept only when shorter).

Every search is bounded (high-level nodes, low-level expansions, wall time) and raises
:class:`SearchLimitError` when a bound is hit. Unsolvable inputs are detected before the
search (:func:`check_instance`): :class:`DuplicateGoalError`, :class:`DuplicateStartError`,
:class:`InvalidCellError` (outside the map or in an obstacle), :class:`UnreachableGoalError`
(BFS from each goal).

:func:`validate_schedule` is an independent checker of a schedule (it shares no code with
the search).
"""
from __future__ import annotations

import heapq
import itertools
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

Cell = tuple[int, int]


# --- errors --------------------------------------------------------------------------------

class NavigationError(ValueError):
    """Base class of every navigation failure (bad input, unsolvable, bounds exceeded)."""


class InvalidCellError(NavigationError):
    """A start or goal lies outside the map or inside an obstacle."""


class DuplicateGoalError(NavigationError):
    """Two agents share one goal cell (no solution: both would stay there forever)."""


class DuplicateStartError(NavigationError):
    """Two agents share one start cell."""


class UnreachableGoalError(NavigationError):
    """An agent's goal is not connected to its start by free cells."""


class SearchLimitError(NavigationError):
    """The search exceeded a bound (high-level nodes, low-level expansions or time)."""


class NoSolutionError(NavigationError):
    """The search space was exhausted without a solution (the instance is unsolvable)."""


# --- grid ----------------------------------------------------------------------------------

class Grid:
    """A ``width`` x ``height`` 4-connected grid; cells are ``(x, y)`` with 0 <= x < width.

    Args:
        width, height: map size in cells (>= 1).
        obstacles: blocked cells.

    Raises:
        ValueError: non-positive size, or an obstacle outside the map (naming it).
    """

    def __init__(self, width: int, height: int, obstacles: Iterable[Sequence[int]] = ()):
        if int(width) != width or width < 1:
            raise ValueError(f"width: must be a positive integer, got {width!r}")
        if int(height) != height or height < 1:
            raise ValueError(f"height: must be a positive integer, got {height!r}")
        self.width, self.height = int(width), int(height)
        blocked = set()
        for o in obstacles:
            c = (int(o[0]), int(o[1]))
            if not self.inside(c):
                raise ValueError(f"obstacles: {list(o)!r} outside the {width}x{height} map")
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


# --- results -------------------------------------------------------------------------------

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
        algorithm: the algorithm that produced the schedule ("cbs", "ecbs", "prioritized").
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


# --- instance checks -----------------------------------------------------------------------

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


# --- search bookkeeping --------------------------------------------------------------------

class _Budget:
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

    def tick_low(self, n: int = 1) -> None:
        self.low += n
        if self.low > self.max_low:
            raise SearchLimitError(
                f"search exceeded max_low_level_expansions={self.max_low}")
        if (self.low & 1023) == 0 and self.elapsed() > self.time_limit:
            raise SearchLimitError(f"search exceeded time_limit_s={self.time_limit}")

    def tick_high(self) -> None:
        self.high += 1
        if self.high > self.max_high:
            raise SearchLimitError(f"search exceeded max_expansions={self.max_high} "
                                   "(high-level nodes)")
        if self.elapsed() > self.time_limit:
            raise SearchLimitError(f"search exceeded time_limit_s={self.time_limit}")


class _Occupancy:
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
        """Conflicts of moving u -> v between t and t+1."""
        k = self.k
        n = 0
        for dt in range(-k, k + 1):
            if t + 1 + dt >= 0:
                n += self.at(v, t + 1 + dt)
        if u != v:
            n += self.edges.get((v, u, t), 0)
        return n

    def after(self, c: int, t: int) -> int:
        """Conflicts of staying at ``c`` forever from time ``t`` on."""
        n = 0
        for tt in range(t + 1, self.horizon + self.k + 1):
            n += self.occ.get((c, tt), 0)
        return n


class _Constraints:
    """Constraints of one agent: vertex (cell, t), edge (u, v, t) and permanent cell -> t0."""

    __slots__ = ("vertex", "edge", "perm", "max_t", "mdd")

    def __init__(self, vertex=frozenset(), edge=frozenset(), perm=None):
        self.vertex: frozenset = vertex
        self.edge: frozenset = edge
        self.perm: dict[int, int] = perm or {}
        self.mdd = None  # cached (cost, levels) of the optimal paths under these constraints
        mt = -1
        for (_, t) in vertex:
            mt = max(mt, t)
        for (_, _, t) in edge:
            mt = max(mt, t + 1)
        for t in self.perm.values():
            mt = max(mt, t)
        self.max_t = mt

    def add_vertex(self, items) -> "_Constraints":
        return _Constraints(self.vertex | frozenset(items), self.edge, self.perm)

    def add_edge(self, item) -> "_Constraints":
        return _Constraints(self.vertex, self.edge | {item}, self.perm)


def _low_level(grid: Grid, start: int, goal: int, h: list[int], cons: _Constraints,
               cat: _Occupancy | None, w: float, budget: _Budget) -> tuple[list[int], int] | None:
    """Focal search in space-time for one agent (A* with conflict tie-breaking when w == 1).

    Returns ``(path, lower_bound)`` or None when no path satisfies the constraints.
    Source: Barer et al. 2014, Sec. 5 (focal list on f <= w * f_min ordered by conflicts).
    """
    if h[start] < 0:
        return None
    vertex, edge, perm = cons.vertex, cons.edge, cons.perm
    last_goal = -1
    for (c, t) in vertex:
        if c == goal and t > last_goal:
            last_goal = t
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


# --- conflicts -----------------------------------------------------------------------------

def _pos(p: list[int], t: int) -> int:
    return p[t] if t < len(p) else p[-1]


def _find_conflicts(paths: Mapping[str, list[int]], k: int, max_list: int = 32):
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
            c = _pos(paths[a], t)
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


def _mdd(grid: Grid, start: int, goal: int, h: list[int], cons: "_Constraints",
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


def _cardinal(levels: list[set[int]] | None, conflict, side: int) -> bool:
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


# --- conflict-based search (CBS / ECBS) ----------------------------------------------------

class _HLNode:
    __slots__ = ("cons", "paths", "lbs", "cost", "lb", "nconf", "conflicts", "closed", "id")

    def __init__(self, cons, paths, lbs, k):
        self.cons = cons
        self.paths = paths
        self.lbs = lbs
        self.cost = sum(len(p) - 1 for p in paths.values())
        self.lb = sum(lbs.values())
        self.nconf, self.conflicts = _find_conflicts(paths, k)
        self.closed = False


def _conflict_search(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
                     w: float, k: int, budget: _Budget,
                     base: Mapping[str, _Constraints] | None = None
                     ) -> tuple[dict[str, list[int]], int]:
    agents = sorted(s)
    cons = {a: (base or {}).get(a) or _Constraints() for a in agents}
    paths: dict[str, list[int]] = {}
    lbs: dict[str, int] = {}
    for a in agents:
        cat = _Occupancy(paths, a, k)
        r = _low_level(grid, s[a], g[a], h[a], cons[a], cat, w, budget)
        if r is None:
            raise NoSolutionError(f"agent {a!r}: no path")
        paths[a], lbs[a] = r
    ids = itertools.count()
    root = _HLNode(cons, paths, lbs, k)
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
                        c.mdd = (cost, _mdd(grid, s[agent], g[agent], h[agent], c, cost))
                    rank += _cardinal(c.mdd[1], cf, side)
                if rank > best_rank:
                    conflict, best_rank = cf, rank
                    if rank == 2:
                        break
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
            cat = _Occupancy(cpaths, agent, k)
            r = _low_level(grid, s[agent], g[agent], h[agent], new, cat, w, budget)
            if r is None:
                continue
            cpaths[agent] = r[0]
            clbs = dict(node.lbs)
            clbs[agent] = max(r[1], node.lbs[agent])
            child = _HLNode(ccons, cpaths, clbs, k)
            child.id = next(ids)
            heapq.heappush(open_heap, (child.lb, child.id, child))
            if child.cost <= bound + 1e-9:
                heapq.heappush(focal, (child.nconf, child.cost, child.id, child))
            else:
                heapq.heappush(pending, (child.cost, child.id, child))


# --- prioritized planning ------------------------------------------------------------------

def _prioritized(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
                 k: int, budget: _Budget, orders: int = 8, seed: int = 0):
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
            # goal condition of _low_level keeps a from stopping where they pass later
            cons = _others_as_constraints(paths, a, k)
            r = _low_level(grid, s[a], g[a], h[a], cons, None, 1.0, budget)
            if r is None:
                ok = False
                last_err = f"agent {a!r} found no path around higher-priority agents"
                break
            paths[a] = r[0]
        if ok:
            return paths
    raise SearchLimitError(f"prioritized planning failed for {orders} agent orders "
                           f"({last_err})")


def _others_as_constraints(paths: Mapping[str, list[int]], skip: str, k: int) -> _Constraints:
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
    return _Constraints(frozenset(vertex), frozenset(edge), perm)


def _improve(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
             paths: dict[str, list[int]], k: int, budget: _Budget, rounds: int = 3) -> int:
    """Post-optimisation of a valid schedule: replan one agent at a time optimally against
    all the others (a best response, i.e. a large-neighbourhood step of size one); a new
    path is kept only when shorter, so the schedule stays valid and its cost never rises.
    Stops at the budget. Returns the number of improved paths."""
    improved = 0
    try:
        for _ in range(rounds):
            changed = False
            order = sorted(paths, key=lambda a: (h[a][s[a]] - len(paths[a]), a))
            for a in order:
                if len(paths[a]) - 1 == h[a][s[a]]:
                    continue  # already a shortest path
                r = _low_level(grid, s[a], g[a], h[a], _others_as_constraints(paths, a, k),
                               None, 1.0, budget)
                if r is not None and len(r[0]) < len(paths[a]):
                    paths[a] = r[0]
                    improved += 1
                    changed = True
            if not changed:
                break
    except SearchLimitError:
        pass
    return improved


def _lns(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]],
         paths: dict[str, list[int]], k: int, budget: _Budget, time_s: float,
         group_size: int = 3, seed: int = 0) -> int:
    """Large neighbourhood search (after Li et al., "Anytime Multi-Agent Path Finding via
    Large Neighborhood Search", IJCAI 2021): repeatedly pick a delayed agent and up to
    ``group_size - 1`` agents whose paths cross its path, replan that group optimally with
    CBS against all other paths as hard constraints, keep the result when cheaper. The
    schedule stays valid and its cost never rises. Bounded by ``time_s``, ``4 n``
    iterations and ``budget``. Returns the number of improving replans."""
    agents = sorted(paths)
    if len(agents) < 2 or time_s <= 0:
        return 0
    rng = random.Random(seed)
    t_end = budget.elapsed() + time_s
    improved, stale = 0, 0
    for _ in range(4 * len(agents)):
        if budget.elapsed() >= t_end or stale >= len(agents):
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
        rest = {a: p for a, p in paths.items() if a not in group}
        base = {a: _others_as_constraints(rest, a, k) for a in group}
        sub = _Budget(64, 50_000, max(1e-3, min(t_end - budget.elapsed(), 0.05)),
                      budget.clock)
        try:
            new, _ = _conflict_search(grid, {a: s[a] for a in group}, {a: g[a] for a in group},
                                      h, 1.0, k, sub, base=base)
        except (SearchLimitError, NoSolutionError):
            new = None
        budget.low += sub.low
        if new is not None and sum(len(new[a]) for a in group) < \
                sum(len(paths[a]) for a in group):
            paths.update(new)
            improved += 1
            stale = 0
        else:
            stale += 1
    return improved


# --- entry point ---------------------------------------------------------------------------

ALGORITHMS = ("cbs", "ecbs", "prioritized")


def solve(grid: Grid, starts: Mapping[str, Sequence[int]], goals: Mapping[str, Sequence[int]],
          algorithm: str = "ecbs", w: float = 1.3, k_robust: int = 0,
          max_expansions: int = 100_000, max_low_level_expansions: int = 5_000_000,
          time_limit_s: float = 10.0, fallback: bool = False,
          tight_w: float | None = None, tight_fraction: float = 0.25,
          improve: bool = True, improve_time_s: float | None = None,
          clock: Callable[[], float] | None = None) -> Solution:
    """Plan collision-free paths for all agents.

    Args:
        grid: the map.
        starts, goals: agent name -> ``(x, y)`` cell.
        algorithm: ``"cbs"`` (optimal sum of costs), ``"ecbs"`` (cost <= w * optimum) or
            ``"prioritized"`` (incomplete).
        w: suboptimality factor of ECBS (>= 1).
        k_robust: 0 for the standard model; k >= 1 forbids two agents in one cell within k
            steps (no following).
        max_expansions: bound on high-level (constraint tree) nodes.
        max_low_level_expansions: bound on all low-level (space-time) expansions.
        time_limit_s: wall-time bound [s].
        fallback: when CBS/ECBS hits a bound, try prioritized planning before giving up.
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
            beyond 95 % of ``time_limit_s``); the cost never rises.

    Returns:
        A :class:`Solution`.

    Raises:
        ValueError: unknown ``algorithm``, ``w < 1``, ``k_robust < 0``.
        InvalidCellError, DuplicateStartError, DuplicateGoalError, UnreachableGoalError:
            unsolvable input, detected before the search (:func:`check_instance`).
        SearchLimitError: a bound was exceeded (and the fallback, if enabled, failed).
        NoSolutionError: the search space is exhausted.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: {algorithm!r} not one of {ALGORITHMS}")
    if not w >= 1.0:
        raise ValueError(f"w: suboptimality factor must be >= 1, got {w!r}")
    if int(k_robust) != k_robust or k_robust < 0:
        raise ValueError(f"k_robust: must be a non-negative integer, got {k_robust!r}")
    sc, gc = check_instance(grid, starts, goals)
    budget = _Budget(max_expansions, max_low_level_expansions, time_limit_s, clock)
    s = {a: grid.index(c) for a, c in sc.items()}
    g = {a: grid.index(c) for a, c in gc.items()}
    h = {a: grid._bfs(g[a]) for a in s}
    notes: list[str] = []
    used = algorithm
    if not s:
        return Solution({}, 0, 0, 0, 0.0, 0, 0, algorithm)
    try:
        if algorithm == "prioritized":
            paths = _prioritized(grid, s, g, h, k_robust, budget)
            lb = sum(h[a][s[a]] for a in s)
        elif algorithm == "ecbs" and tight_w is not None and 1.0 <= tight_w < w:
            tight = _Budget(max(1, int(tight_fraction * max_expansions)),
                            max(1, int(tight_fraction * max_low_level_expansions)),
                            tight_fraction * time_limit_s, clock)
            try:
                paths, lb = _conflict_search(grid, s, g, h, tight_w, k_robust, tight)
                used = f"ecbs(w={tight_w})"
            except SearchLimitError:
                paths = None
            budget.high += tight.high
            budget.low += tight.low
            if paths is None:
                paths, lb = _conflict_search(grid, s, g, h, w, k_robust, budget)
        else:
            paths, lb = _conflict_search(grid, s, g, h, 1.0 if algorithm == "cbs" else w,
                                         k_robust, budget)
    except SearchLimitError as exc:
        if not fallback or algorithm == "prioritized":
            raise
        notes.append(f"{algorithm}: {exc}; fell back to prioritized planning")
        fb = _Budget(max_expansions, max_low_level_expansions, time_limit_s, clock)
        paths = _prioritized(grid, s, g, h, k_robust, fb)
        budget.low += fb.low
        lb = sum(h[a][s[a]] for a in s)
        used = "prioritized"
    if improve and used != "cbs":
        n = _improve(grid, s, g, h, paths, k_robust, budget)
        lns_s = min(0.1 * time_limit_s, 0.5) if improve_time_s is None else improve_time_s
        n += _lns(grid, s, g, h, paths, k_robust, budget,
                  min(lns_s, 0.95 * time_limit_s - budget.elapsed()))
        if n:
            notes.append(f"post-optimisation: {n} improving replans")
    out = {a: [grid.cell(c) for c in p] for a, p in paths.items()}
    cost = sum(len(p) - 1 for p in out.values())
    return Solution(paths=out, cost=cost, makespan=max(len(p) - 1 for p in out.values()),
                    lower_bound=lb, runtime_s=budget.elapsed(),
                    high_level_expanded=budget.high, low_level_expanded=budget.low,
                    algorithm=used, notes=notes)


# --- independent validation ----------------------------------------------------------------

def validate_schedule(grid: Grid, starts: Mapping[str, Sequence[int]],
                      goals: Mapping[str, Sequence[int]], schedule: Mapping[str, Sequence],
                      k_robust: int = 0) -> list[str]:
    """Check a schedule independently of the search; return the violations (empty if valid).

    ``schedule[a]`` is a list of cells ``(x, y)`` indexed by time, or of dicts
    ``{x, y, t}`` (libMultiRobotPlanning output format, t = 0, 1, 2, ...). After its last
    entry an agent stays at its last cell forever.

    Checks: every agent of ``starts`` has a schedule; it begins at its start at t = 0 and
    ends at its goal; each step moves to a 4-neighbour or waits; every cell is on the map
    and free; no two agents share a cell at a time step (or within ``k_robust`` steps); no
    two agents swap cells in one step.
    """
    errs: list[str] = []
    seq: dict[str, list[tuple[int, int]]] = {}
    for a in starts:
        if a not in schedule:
            errs.append(f"{a}: no schedule")
            continue
        raw = list(schedule[a])
        if not raw:
            errs.append(f"{a}: empty schedule")
            continue
        cells = []
        for i, e in enumerate(raw):
            if isinstance(e, Mapping):
                if int(e["t"]) != i:
                    errs.append(f"{a}: entry {i} has t={e['t']}")
                cells.append((int(e["x"]), int(e["y"])))
            else:
                cells.append((int(e[0]), int(e[1])))
        seq[a] = cells
        if cells[0] != tuple(starts[a]):
            errs.append(f"{a}: starts at {cells[0]}, expected {tuple(starts[a])}")
        if cells[-1] != tuple(goals[a]):
            errs.append(f"{a}: ends at {cells[-1]}, expected {tuple(goals[a])}")
        for t, (x, y) in enumerate(cells):
            if not (0 <= x < grid.width and 0 <= y < grid.height) or (x, y) in grid.obstacles:
                errs.append(f"{a}: t={t} at blocked/outside cell {(x, y)}")
            if t > 0:
                px, py = cells[t - 1]
                if abs(px - x) + abs(py - y) > 1:
                    errs.append(f"{a}: jump {(px, py)} -> {(x, y)} at t={t}")
    for a in schedule:
        if a not in starts:
            errs.append(f"{a}: scheduled but not an agent")
    if errs:
        return errs
    horizon = max(len(c) for c in seq.values()) + k_robust + 1

    def at(a, t):
        c = seq[a]
        return c[t] if t < len(c) else c[-1]

    names = sorted(seq)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for t in range(horizon):
                for dt in range(0, k_robust + 1):
                    if at(a, t) == at(b, t + dt):
                        errs.append(f"{a} and {b}: both at {at(a, t)} (t={t}, delay {dt})")
                    elif at(b, t) == at(a, t + dt):
                        errs.append(f"{a} and {b}: both at {at(b, t)} (t={t}, delay {dt})")
                if t > 0 and at(a, t - 1) == at(b, t) and at(b, t - 1) == at(a, t) \
                        and at(a, t) != at(a, t - 1):
                    errs.append(f"{a} and {b}: swap {at(a, t - 1)} <-> {at(b, t - 1)} at t={t - 1}")
    return errs
