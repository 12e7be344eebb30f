"""Planning at scale (issue 16): the warm-started assignment gives scipy's optimum on the
same matrices, the set-based stage conflict equals the pairwise ``conflict``, and large
structured targets (combs) plan. Oracles: ``scipy.optimize.linear_sum_assignment`` on the
untransformed matrix, brute force over permutations for tiny matrices, the pairwise
``corridors.conflict``."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from smores_assembly.corridors import conflict, corridor_halo, dock_corridor
from smores_assembly.geometry import Pose2D
from smores_assembly.planning import (WARM_START_MIN_GOALS, assign_modules, plan_assembly,
                                      radial_duals, solve_assignment)
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.topology import comb_tree, grid_cell, unfold


def _instance(rng: np.random.Generator, n: int, m: int, kind: str):
    if kind == "clustered":  # goals in a compact blob, modules spread around it
        g = rng.normal(0.0, 0.4, (n, 2))
        mods = rng.uniform(-0.3 * math.sqrt(m), 0.3 * math.sqrt(m), (m, 2))
    elif kind == "one_side":
        g = rng.normal(0.0, 0.3, (n, 2))
        mods = np.c_[rng.uniform(3, 12, m), rng.uniform(-2, 2, m)]
    elif kind == "grid":  # goals on a grid (ties in distances), modules on a coarser grid
        side = math.ceil(math.sqrt(n))
        g = np.array([(i * 0.08, j * 0.08) for i in range(side) for j in range(side)])[:n]
        mside = math.ceil(math.sqrt(m))
        mods = np.array([(i * 0.5 - 2, j * 0.5 - 2) for i in range(mside)
                         for j in range(mside)])[:m]
    else:  # uniform: goals as spread as the modules (the warm start is not used)
        g = rng.uniform(0, 5, (n, 2))
        mods = rng.uniform(0, 5, (m, 2))
    cost = np.hypot(g[:, None, 0] - mods[None, :, 0], g[:, None, 1] - mods[None, :, 1])
    return cost, g, mods


@pytest.mark.parametrize("kind", ["clustered", "one_side", "grid", "uniform"])
@pytest.mark.parametrize("n,extra", [(64, 0), (64, 7), (150, 15), (300, 40)])
def test_solve_assignment_equals_scipy_optimum(kind, n, extra):
    rng = np.random.default_rng(n * 1000 + extra + len(kind))
    for _ in range(3):
        cost, g, mods = _instance(rng, n, n + extra, kind)
        rows, cols = solve_assignment(cost, g, mods)
        r0, c0 = linear_sum_assignment(cost)
        assert list(rows) == list(range(n))
        assert len(set(cols.tolist())) == n  # a module plays one goal
        assert cost[rows, cols].sum() == pytest.approx(cost[r0, c0].sum(), rel=1e-12,
                                                       abs=1e-9)


def test_warm_start_is_exercised_on_clustered_goals(monkeypatch):
    """The clustered instances above do go through radial_duals (else the test above would
    only compare scipy with itself)."""
    import smores_assembly.planning as planning
    calls = []
    real = planning.radial_duals
    monkeypatch.setattr(planning, "radial_duals",
                        lambda c, g: calls.append(c.shape) or real(c, g))
    cost, g, mods = _instance(np.random.default_rng(1), WARM_START_MIN_GOALS, 80,
                              "clustered")
    planning.solve_assignment(cost, g, mods)
    assert calls == [(WARM_START_MIN_GOALS, 80)]
    cost, g, mods = _instance(np.random.default_rng(1), 80, 90, "uniform")
    planning.solve_assignment(cost, g, mods)
    assert calls == [(WARM_START_MIN_GOALS, 80)]  # not clustered: plain scipy


def test_radial_duals_square_reduced_nonnegative_and_equivalent():
    """Reduced costs >= 0, and every complete assignment of the padded matrix changes its
    total by the same constant (checked by brute force over all assignments of 6 x 6)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        cost, g, mods = _instance(rng, 4, 6, "clustered")
        red = radial_duals(cost, g)
        assert red.shape == (6, 6)
        assert red.min() >= -1e-12
        padded = np.zeros((6, 6))
        padded[:4] = cost
        diffs = {round(float(padded[range(6), p].sum() - red[range(6), p].sum()), 9)
                 for p in itertools.permutations(range(6))}
        assert len(diffs) == 1


def test_assign_modules_large_clustered_matches_scipy():
    rng = random.Random(3)
    goals = {f"n{i}": Pose2D(rng.gauss(0, 0.5), rng.gauss(0, 0.5), 0.0) for i in range(400)}
    modules = {f"m{i}": Pose2D(rng.uniform(-6, 6), rng.uniform(-6, 6), 0.0)
               for i in range(440)}
    mapping, total = assign_modules(goals, modules)
    assert len(set(mapping.values())) == len(goals)
    nodes, ids = sorted(goals), sorted(modules)
    g = np.array([[goals[k].x, goals[k].y] for k in nodes])
    m = np.array([[modules[k].x, modules[k].y] for k in ids])
    cost = np.hypot(g[:, None, 0] - m[None, :, 0], g[:, None, 1] - m[None, :, 1])
    r, c = linear_sum_assignment(cost)
    assert total == pytest.approx(cost[r, c].sum(), rel=1e-12)
    recomputed = sum(math.dist((goals[k].x, goals[k].y), (modules[v].x, modules[v].y))
                     for k, v in mapping.items())
    assert recomputed == pytest.approx(total, rel=1e-12)


def test_corridor_halo_equals_pairwise_conflict():
    rng = random.Random(11)
    dirs = [(1, 0), (-1, 0), (0, 1), (0, -1)]
    for _ in range(2000):
        docks = []
        for k in range(2):
            c = (rng.randint(-4, 4), rng.randint(-4, 4))
            d = rng.choice(dirs)
            cells = {f"v{k}": c, f"p{k}": (c[0] - d[0], c[1] - d[1])}
            docks.append(dock_corridor(f"v{k}", f"p{k}", cells, rng.random() < 0.5,
                                       rng.choice([0.03, 0.06, 0.12]), 0.08))
        a, b = docks
        via_halo = not corridor_halo(a).isdisjoint(b.swept)
        assert via_halo == conflict(a, b)
        assert (not corridor_halo(b).isdisjoint(a.swept)) == conflict(a, b)


@pytest.mark.parametrize("teeth,length", [(1, 1), (1, 4), (3, 1), (10, 10)])
def test_comb_tree_fills_block_and_plans(teeth, length):
    nodes, edges = comb_tree(teeth, length)
    assert len(nodes) == teeth * length and len(edges) == len(nodes) - 1
    poses = unfold(nodes, edges, nodes[0], Pose2D(0.0, 0.0, 0.0), 1.0)
    cells = {grid_cell(p, Pose2D(0.0, 0.0, 0.0), 1.0) for p in poses.values()}
    assert cells == {(i, j) for i in range(teeth) for j in range(length)}
    rng = random.Random(teeth * 100 + length)
    n_mod = len(nodes) + 3
    side = 0.3 * math.sqrt(n_mod) + 0.5
    modules = {f"m{i}": [rng.uniform(-side, side), rng.uniform(-side, side), 0.0]
               for i in range(n_mod)}
    sc = scenario_from_dict({"name": "comb", "module_width": 0.08,
                             "target": {"nodes": nodes, "edges": [e.to_dict() for e in edges]},
                             "modules": modules})
    plan = plan_assembly(sc)
    assert sorted(a.node for a in plan.actions) == sorted(set(nodes) - {plan.root_node})
    stage_of = {a.node: a.stage for a in plan.actions}
    stage_of[plan.root_node] = -1
    for a in plan.actions:  # parents first
        assert stage_of[a.parent_node] < a.stage
