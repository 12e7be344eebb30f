"""The post-optimisation's incremental constraint tables equal the reference they replace
(issue 16: at 110 agents each replan rebuilt the other paths' constraints, ~10^5 of them).

``ConstraintTable.without(group)`` against ``others_as_constraints`` of the paths without
the group, after random path replacements; ``Constraints.last_at`` and ``max_t`` carried
through ``add_vertex`` / ``add_edge`` against a scan of the sets; and ``solve`` with the
post-optimisation gives the schedules it gave with the rebuilt tables (recorded on main
849eb71), after the same number of clock readings.
"""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from smores_assembly.navigation.mapf import Grid, solve
from smores_assembly.navigation.mapf.lowlevel import Constraints
from smores_assembly.navigation.mapf.prioritized import ConstraintTable, others_as_constraints
from smores_assembly.navigation.stage import WorkClock


def _random_path(rng: random.Random, n_cells: int, goal: int) -> list[int]:
    """A path of flat cells (not necessarily connected: the tables do not care) ending at
    ``goal``, with waits (a cell repeated) and revisits."""
    p = [rng.randrange(n_cells) for _ in range(rng.randint(0, 12))]
    for _ in range(rng.randint(0, 3)):
        if p:
            i = rng.randrange(len(p))
            p[i:i] = [p[i]] * rng.randint(1, 3)
    return p + [goal]


def _scan(cons: Constraints) -> tuple[int, dict[int, int]]:
    """``max_t`` and the latest vertex time per cell by scanning the sets."""
    mt = max([-1] + [t for _, t in cons.vertex] + [t + 1 for _, _, t in cons.edge]
             + list(cons.perm.values()))
    last: dict[int, int] = {}
    for c, t in cons.vertex:
        last[c] = max(last.get(c, -1), t)
    return mt, last


@pytest.mark.parametrize("k", [0, 1, 2])
def test_constraint_table_equals_others_as_constraints(k):
    rng = random.Random(k)
    for _trial in range(40):
        n_cells = rng.randint(4, 30)
        agents = [f"a{i}" for i in range(rng.randint(1, 8))]
        goals = rng.sample(range(n_cells), min(len(agents), n_cells))
        agents = agents[:len(goals)]
        paths = {a: _random_path(rng, n_cells, g) for a, g in zip(agents, goals)}
        table = ConstraintTable(paths, k)
        for _step in range(6):
            group = rng.sample(agents, rng.randint(0, min(3, len(agents))))
            ref = others_as_constraints({a: p for a, p in paths.items() if a not in group},
                                        None, k)
            vertex, edge, perm, max_t = table.without(group)
            assert vertex == ref.vertex and edge == ref.edge and perm == ref.perm
            assert max_t == ref.max_t, (max_t, ref.max_t, group, paths)
            cons = table.constraints(group)
            assert cons.max_t == ref.max_t and cons.vertex == ref.vertex
            # replace some paths, keeping the goals distinct (as in a valid schedule)
            for a in rng.sample(agents, rng.randint(0, len(agents))):
                paths[a] = _random_path(rng, n_cells, paths[a][-1])
                table.update(a, paths[a])


def test_constraints_carry_last_at_and_max_t_through_children():
    rng = random.Random(7)
    for _trial in range(200):
        vertex = frozenset((rng.randrange(10), rng.randrange(20))
                           for _ in range(rng.randint(0, 30)))
        edge = frozenset((rng.randrange(10), rng.randrange(10), rng.randrange(20))
                         for _ in range(rng.randint(0, 5)))
        perm = {rng.randrange(10): rng.randrange(20) for _ in range(rng.randint(0, 3))}
        cons = Constraints(vertex, edge, perm)
        if rng.random() < 0.5:
            cons.last_at(0)  # the table computed before the children, or not
        for _child in range(rng.randint(1, 6)):
            if rng.random() < 0.6:
                cons = cons.add_vertex([(rng.randrange(12), rng.randrange(30))
                                        for _ in range(rng.randint(1, 3))])
            else:
                cons = cons.add_edge((rng.randrange(10), rng.randrange(10),
                                      rng.randrange(30)))
            if rng.random() < 0.3:
                cons = cons.copy()
            mt, last = _scan(cons)
            assert cons.max_t == mt
            assert all(cons.last_at(c) == last.get(c, -1) for c in range(12))
            fresh = Constraints(cons.vertex, cons.edge, cons.perm)
            assert fresh.max_t == mt


#: ``solve`` with the post-optimisation on random dense instances (10 x 10 grid, up to 10
#: obstacles, 16 agents: LaCAM and its refinement; 10 agents: ECBS, best responses and
#: LNS), its bounds counting work (``WorkClock``, as in lockstep): (sum of costs, sha256 of
#: the schedule, clock readings) as main 849eb71 (the tables rebuilt for every replan) gave
#: them. The same readings: the bounds saw the same work.
SOLVED = {("lacam", 0): (118, "6517311d5d9c", 194), ("lacam", 1): (116, "57d25d25966c", 159),
          ("lacam", 2): (121, "dc3d7912d0a5", 236), ("ecbs", 0): (72, "3cafaed5e96e", 95),
          ("ecbs", 1): (49, "22e66b8a1721", 93), ("ecbs", 2): (52, "e0e282462b3a", 60)}


def _instance(seed: int, n_agents: int):
    rng = random.Random(seed)
    w = h = 10
    blocked = {(rng.randrange(w), rng.randrange(h)) for _ in range(10)}
    free = [(x, y) for x in range(w) for y in range(h) if (x, y) not in blocked]
    grid = Grid(w, h, blocked)
    cells = rng.sample(free, 2 * n_agents)
    starts = {f"a{i}": cells[i] for i in range(n_agents)}
    goals = {f"a{i}": cells[n_agents + i] for i in range(n_agents)}
    return grid, starts, goals


@pytest.mark.parametrize("alg,seed", sorted(SOLVED))
def test_post_optimisation_schedules_unchanged(alg, seed):
    grid, starts, goals = _instance(seed, 16 if alg == "lacam" else 10)
    clock = WorkClock()
    sol = solve(grid, starts, goals, algorithm=alg, k_robust=1, time_limit_s=2.0, clock=clock)
    digest = hashlib.sha256(json.dumps(sorted(sol.paths.items())).encode()).hexdigest()
    assert (sol.cost, digest[:12], clock.readings) == SOLVED[(alg, seed)]


def test_occupancy_move_equals_its_definition():
    """``Occupancy.move`` (inlined) against its definition: ``at(v, t + 1 + dt)`` summed
    over ``dt`` in ``-k..k`` (times >= 0) plus the swaps ``(v, u, t)``."""
    from smores_assembly.navigation.mapf.lowlevel import Occupancy

    rng = random.Random(3)
    for k in (0, 1, 2, 3):
        for _trial in range(30):
            n_cells = rng.randint(3, 12)
            goals = rng.sample(range(n_cells), rng.randint(1, min(5, n_cells)))
            paths = {f"a{i}": _random_path(rng, n_cells, g) for i, g in enumerate(goals)}
            occ = Occupancy(paths, "a0", k)
            for _ in range(100):
                u, v, t = rng.randrange(n_cells), rng.randrange(n_cells), rng.randrange(-1, 20)
                ref = sum(occ.at(v, t + 1 + dt) for dt in range(-k, k + 1) if t + 1 + dt >= 0)
                if u != v:
                    ref += occ.edges.get((v, u, t), 0)
                assert occ.move(u, v, t) == ref, (k, u, v, t)
