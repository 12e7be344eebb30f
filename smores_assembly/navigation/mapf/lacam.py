"""LaCAM with a PIBT configuration generator: a complete, fast, suboptimal MAPF search.

LaCAM (Okumura, "LaCAM: Search-Based Algorithm for Quick Multi-Agent Pathfinding",
AAAI 2023, Alg. 1 and 2) searches the graph of *configurations* (one cell per agent)
depth first. A search node does not list its successors: it keeps a queue of *constraints*
(partial assignments "agent i goes to cell v", a tree grown one agent deeper each time a
constraint is taken, breadth first) and asks the configuration generator for one successor
that satisfies the next constraint. The generator is one step of PIBT (Okumura et al.,
"Priority Inheritance with Backtracking for Iterative Multi-Agent Path Finding", AIJ 2022,
Alg. 1): agents in priority order take the free neighbour nearest their goal, pushing a
lower-priority occupant out of the way by lending it their priority. Since the constraint
tree of a node eventually pins every agent to every move, every successor of every reached
configuration is generated: the search is complete, and when it has exhausted the reachable
configurations without meeting the goal configuration the instance is *proven* unsolvable.
Priorities are PIBT's dynamic ones as in the authors' LaCAM code (an agent's priority grows
while it is away from its goal); an already known configuration is put back on top of the
stack (LaCAM*, Okumura IJCAI 2023, Sec. 4; it helps it leave dead ends).

``k = 1`` (no following, :mod:`smores_assembly.navigation.mapf`) is a property of one
transition: a cell may be entered only when no agent stands in it before the step. The
generator then lets an agent that wants an occupied cell wait one step while the occupant is
pushed away (the occupant may not enter an occupied cell either), so the k = 1 search is
still a search of configurations and still complete. Larger ``k`` depends on more than one
step and is refused.

The first solution of LaCAM is found fast, not cheap (agents may wander); the caller refines
it (:mod:`.improve`). The budget is a count of generated configurations (``Budget.high``)
and of PIBT moves (``Budget.low``), so the result does not depend on the machine's load
when the wall-clock bound is not the one that is hit.
"""
from __future__ import annotations

import random
import sys
from collections import deque

from smores_assembly.errors import InputError
from smores_assembly.navigation.mapf.errors import NoSolutionError
from smores_assembly.navigation.mapf.grid import Grid
from smores_assembly.navigation.mapf.lowlevel import Budget

Config = tuple[int, ...]


class _Cons:
    """A node of the constraint tree: ``who`` goes to ``where``; ``parent`` holds the
    constraints of the agents before it in the node's order."""

    __slots__ = ("parent", "who", "where", "depth")

    def __init__(self, parent: "_Cons | None", who: int, where: int, depth: int):
        self.parent, self.who, self.where, self.depth = parent, who, where, depth


class _Node:
    """A configuration reached by the search, with its queue of constraints."""

    __slots__ = ("config", "parent", "prio", "order", "tree")

    def __init__(self, config: Config, parent: "_Node | None", prio: list[float]):
        self.config, self.parent, self.prio = config, parent, prio
        self.order = sorted(range(len(config)), key=lambda i: -prio[i])
        self.tree: deque[_Cons] = deque([_Cons(None, -1, -1, 0)])


class _Generator:
    """One PIBT step under a LaCAM constraint (the configuration generator)."""

    def __init__(self, grid: Grid, dist: list[list[int]], goal: Config, k: int,
                 rng: random.Random, budget: Budget):
        self.adj, self.dist, self.goal, self.k = grid._adj, dist, goal, k
        self.rng, self.budget = rng, budget

    def next_config(self, node: _Node, cons: _Cons) -> Config | None:
        """A successor of ``node.config`` that satisfies ``cons``, or None."""
        q_from = node.config
        n = len(q_from)
        q_to: list[int] = [-1] * n
        occ_now = {c: i for i, c in enumerate(q_from)}
        occ_next: dict[int, int] = {}
        c: _Cons | None = cons
        while c is not None and c.depth > 0:
            i, v = c.who, c.where
            if v in occ_next:
                return None
            j = occ_now.get(v)
            if j is not None and j != i and (self.k >= 1 or q_to[j] == q_from[i]):
                return None  # k = 1: v is occupied now; k = 0: a swap with j
            q_to[i] = v
            occ_next[v] = i
            c = c.parent
        self.q_from, self.q_to, self.occ_now, self.occ_next = q_from, q_to, occ_now, occ_next
        pibt = self._pibt1 if self.k >= 1 else self._pibt0
        for i in node.order:
            if q_to[i] < 0 and not pibt(i):
                return None
        # the result is checked, not trusted: distinct cells, moves to neighbours, no swap
        # (k = 0) / no entry into a cell occupied before the step (k = 1)
        if len(set(q_to)) != n:
            return None
        for i in range(n):
            u, v = q_from[i], q_to[i]
            if u == v:
                continue
            if v not in self.adj[u]:
                return None
            j = occ_now.get(v)
            if j is not None and (self.k >= 1 or q_to[j] == u):
                return None
        return tuple(q_to)

    def _candidates(self, i: int) -> list[int]:
        u = self.q_from[i]
        cand = list(self.adj[u]) + [u]
        self.rng.shuffle(cand)
        d, occ = self.dist[i], self.occ_now
        # nearest the goal first; among equals a cell nobody stands in (fewer pushes)
        cand.sort(key=lambda v: (d[v], v in occ and v != u))
        self.budget.tick_low(len(cand))
        return cand

    def _pibt0(self, i: int) -> bool:
        """PIBT (AIJ 2022, Alg. 1) for the standard model (following allowed), with the
        swap rule of LaCAM3 (Okumura, "Engineering LaCAM*", AAMAS 2024, Sec. 4.2): when
        the agent and the one in its way must change places in a dead end or corridor, it
        steps back (candidates in reverse) and pulls that agent into its cell."""
        q_from, q_to, occ_now, occ_next = self.q_from, self.q_to, self.occ_now, self.occ_next
        u = q_from[i]
        cand = self._candidates(i)
        partner = self._swap_partner(i, cand[0]) if cand[0] != u else None
        if partner is not None:
            cand.reverse()
        for idx, v in enumerate(cand):
            if v in occ_next:
                continue
            j = occ_now.get(v)
            if j is not None and q_to[j] == u:
                continue  # swap
            occ_next[v] = i
            q_to[i] = v
            if j is not None and j != i and q_to[j] < 0 and not self._pibt0(j):
                continue
            if idx == 0 and partner is not None and q_to[partner] < 0 and u not in occ_next:
                q_to[partner] = u
                occ_next[u] = partner
            return True
        occ_next[u] = i
        q_to[i] = u
        return False

    def _narrow(self, prev: int, here: int) -> tuple[int, int]:
        """How many ways lead on from ``here`` (not back to ``prev``, not into a dead-end
        cell that is its occupant's goal), and one of them."""
        adj, occ_now, goal = self.adj, self.occ_now, self.goal
        ways, other = 0, -1
        for w in adj[here]:
            a = occ_now.get(w)
            if w == prev or (len(adj[w]) == 1 and a is not None and goal[a] == w):
                continue
            ways += 1
            other = w
        return ways, other

    def _swap_required(self, pusher: int, puller: int, vp: int, vq: int) -> bool:
        """Would ``pusher`` (at ``vp``) and ``puller`` (at ``vq``) have to pass each other
        in the narrow passage ahead, each wanting the other's side?"""
        d = self.dist[pusher]
        while d[vq] < d[vp]:
            ways, nxt = self._narrow(vp, vq)
            if ways >= 2:
                return False  # room to pass
            if ways <= 0:
                break
            vp, vq = vq, nxt
        dq = self.dist[puller]
        return dq[vp] < dq[vq] and (d[vp] == 0 or d[vq] < d[vp])

    def _swap_possible(self, vp: int, vq: int) -> bool:
        """Is there a branching cell behind ``vq`` (walking away from ``vp``) where two
        agents can change order?"""
        origin = vp
        while vq != origin:
            ways, nxt = self._narrow(vp, vq)
            if ways >= 2:
                return True
            if ways <= 0:
                return False
            vp, vq = vq, nxt
        return False

    def _swap_partner(self, i: int, best: int) -> int | None:
        u, occ_now, q_to = self.q_from[i], self.occ_now, self.q_to
        j = occ_now.get(best)
        if j is not None and q_to[j] < 0 and self._swap_required(i, j, u, best) \
                and self._swap_possible(best, u):
            return j  # the agent in the way must pass i
        for w in self.adj[u]:  # an agent behind i that i's next step would trap
            j = occ_now.get(w)
            if j is None or w == best:
                continue
            if self._swap_required(j, i, u, best) and self._swap_possible(best, u):
                return j
        return None

    def _pibt1(self, i: int, pushed: bool = False) -> bool:
        """PIBT without following (k = 1): only an empty cell may be entered; an agent
        whose best cell is occupied by an undecided agent pushes it (priority inheritance:
        the pushed agent does not count staying among its choices) and waits one step."""
        q_from, q_to, occ_now, occ_next = self.q_from, self.q_to, self.occ_now, self.occ_next
        u = q_from[i]
        for v in self._candidates(i):
            if v == u:
                if pushed:
                    continue
                break
            if v in occ_next:
                continue
            j = occ_now.get(v)
            if j is None:
                occ_next[v] = i
                q_to[i] = v
                return True
            if q_to[j] < 0:
                q_to[i] = u  # decided (waits), so that j does not push back
                occ_next[u] = i
                self._pibt1(j, True)
                return True
        q_to[i] = u
        if u in occ_next and occ_next[u] != i:
            return False  # a constraint put another agent on u
        occ_next[u] = i
        return True


def lacam(grid: Grid, s: dict[str, int], g: dict[str, int], h: dict[str, list[int]], k: int,
          budget: Budget, seed: int = 0) -> dict[str, list[int]]:
    """Solve with LaCAM (complete; first solution, not optimised).

    Args:
        grid: the map; ``s``, ``g``: agent -> flat start / goal cell; ``h``: agent -> BFS
            distance to its goal per flat cell (``Grid._bfs``); ``k``: 0 or 1 (robustness).
        budget: ``budget.tick_high`` per generated configuration, ``tick_low`` per candidate
            move considered; ``SearchLimitError`` when a bound is hit.
        seed: PIBT's tie-breaking (same seed, same result).

    Returns:
        agent -> flat cells per time step, each ending at the agent's last arrival at its
        goal (it stays there).

    Raises:
        InputError: ``k > 1``.
        SearchLimitError: a bound of ``budget`` was hit (proves nothing).
        NoSolutionError: every configuration reachable from the start was generated and
            none is the goal configuration (the instance is proven unsolvable).
    """
    if k > 1:
        raise InputError(f"k_robust: LaCAM supports 0 or 1, got {k}")
    names = sorted(s)
    n = len(names)
    start = tuple(s[a] for a in names)
    goal = tuple(g[a] for a in names)
    dist = [h[a] for a in names]
    rng = random.Random(seed)
    gen = _Generator(grid, dist, goal, k, rng, budget)
    if n + 100 > sys.getrecursionlimit():  # PIBT's push chains can be n deep
        sys.setrecursionlimit(n + 1000)
    root = _Node(start, None, [dist[i][start[i]] / max(n, 1) for i in range(n)])
    explored: dict[Config, _Node] = {start: root}
    stack = [root]
    adj = grid._adj
    while stack:
        node = stack[-1]
        if node.config == goal:
            return _paths(node, names, goal)
        if not node.tree:
            stack.pop()
            continue
        cons = node.tree.popleft()
        if cons.depth < n:  # grow the constraint tree by the next agent in the order
            _grow(node, cons, adj, k, rng)
        budget.tick_high()
        q = gen.next_config(node, cons)
        if q is None:
            continue
        known = explored.get(q)
        if known is not None:
            stack.append(known)  # LaCAM*: revisit (its queue may hold other moves)
            continue
        prio = [node.prio[i] + 1 if q[i] != goal[i] else node.prio[i] - int(node.prio[i])
                for i in range(n)]
        child = _Node(q, node, prio)
        explored[q] = child
        stack.append(child)
    raise NoSolutionError(
        f"proven unsolvable: the complete search (LaCAM) generated all {len(explored)} "
        "configurations reachable from the start and none has every agent at its goal")


def _grow(node: _Node, cons: _Cons, adj: list[tuple[int, ...]], k: int,
          rng: random.Random) -> None:
    """Append to ``node.tree`` the children of ``cons``: every move of the next agent in
    the node's order that is consistent with the moves already fixed (no two in one cell,
    no swap; k = 1: no entry into an occupied cell). Only inconsistent partial assignments
    are left out, which no valid successor contains, so the search stays complete."""
    q = node.config
    i = node.order[cons.depth]
    u = q[i]
    taken: set[int] = set()
    into_u = False
    c: _Cons | None = cons
    while c is not None and c.depth > 0:
        taken.add(c.where)
        if c.where == u:
            into_u = True
        c = c.parent
    moves = list(adj[u]) + [u]
    rng.shuffle(moves)
    for v in moves:
        if v in taken or (v == u and into_u):
            continue
        if v != u:
            if k >= 1 and v in q:
                continue  # k = 1: v is occupied before the step
            c = cons
            swap = False
            while c is not None and c.depth > 0:
                if c.where == u and q[c.who] == v:
                    swap = True
                    break
                c = c.parent
            if swap:
                continue
        node.tree.append(_Cons(cons, i, v, cons.depth + 1))


def _paths(node: _Node, names: list[str], goal: Config) -> dict[str, list[int]]:
    configs: list[Config] = []
    cur: _Node | None = node
    while cur is not None:
        configs.append(cur.config)
        cur = cur.parent
    configs.reverse()
    out = {}
    for i, a in enumerate(names):
        p = [c[i] for c in configs]
        end = len(p) - 1
        while end > 0 and p[end - 1] == goal[i]:
            end -= 1
        out[a] = p[:end + 1]
    return out


def without_following(paths: dict[str, list[int]]) -> dict[str, list[int]] | None:
    """A ``k = 0`` schedule made 1-robust (no following) by re-timing its moves.

    Every agent makes the same moves in the same order, and every cell is visited by the
    agents in the same order as in ``paths``; a move is made at the first step at which
    the cell's previous visitor left it at an earlier step (the schedule's action
    dependency graph executed as soon as possible: Hönig et al., "Persistent and Robust
    Execution of MAPF Schedules in Warehouses", RA-L 2019, with a delay of one step). No
    agent then enters a cell occupied before the step (Atzmon et al., "Robust Multi-Agent
    Path Finding", SoCS 2018: no following), and no two agents share a cell or swap.

    Args:
        paths: agent -> flat cells per time step (the agent stays at its last cell), a
            schedule without vertex or swap conflicts.

    Returns:
        agent -> flat cells per time step, each ending at its last arrival at its last
        cell; None when the dependencies form a cycle: a step of ``paths`` moves agents
        round a cycle (every one follows another), or the input has a vertex conflict.
    """
    names = list(paths)
    # each agent's visits: (cell, arrival step in `paths`), waits merged
    visits: dict[str, list[tuple[int, int]]] = {}
    for a, p in paths.items():
        v = [(p[0], 0)]
        for t in range(1, len(p)):
            if p[t] != p[t - 1]:
                v.append((p[t], t))
        visits[a] = v
    # the visitor before each visit of its cell: (agent, index of its visit) or None
    order: dict[int, list[tuple[int, str, int]]] = {}
    for a, v in visits.items():
        for i, (c, t) in enumerate(v):
            order.setdefault(c, []).append((t, a, i))
    before: dict[tuple[str, int], tuple[str, int] | None] = {}
    for seq in order.values():
        seq.sort()
        for j, (t, a, i) in enumerate(seq):
            if j and seq[j - 1][0] == t:
                return None  # two agents arrive in one cell at one step
            before[(a, i)] = (seq[j - 1][1], seq[j - 1][2]) if j else None
    left: dict[tuple[str, int], int] = {}   # (agent, visit) -> step it left that cell
    at = {a: 0 for a in names}              # index of the visit each agent is in
    out = {a: [v[0][0]] for a, v in visits.items()}
    t = 0
    while any(at[a] < len(visits[a]) - 1 for a in names):
        t += 1
        moved = []
        for a in names:
            i = at[a]
            if i + 1 < len(visits[a]):
                prev = before[(a, i + 1)]
                if prev is None or left.get(prev, t) < t:
                    moved.append(a)
        if not moved:
            return None  # a cycle: each waits for the next to leave
        for a in moved:
            left[(a, at[a])] = t
            at[a] += 1
        for a in names:
            out[a].append(visits[a][at[a]][0])
    for p in out.values():
        while len(p) > 1 and p[-1] == p[-2]:
            p.pop()
    return out
