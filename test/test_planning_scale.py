"""Planning at scale (issue 16): the warm-started assignment gives scipy's optimum on the
same matrices, the set-based stage conflict equals the pairwise ``conflict``, the lane search
that looks up only nearby cells equals a scan over every occupied cell, and large
structured targets (combs) plan. Oracles: ``scipy.optimize.linear_sum_assignment`` on the
untransformed matrix, brute force over permutations for tiny matrices, the pairwise
``corridors.conflict``, :func:`_lane_entry_scan` (the scan of every occupied cell at every
step, as ``lane_entry`` was written first)."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from smores_assembly.corridors import (LaneEntry, conflict, corridor_halo, dock_corridor,
                                       enclosure, lane_entry)
from smores_assembly.geometry import Pose2D
from smores_assembly.planning import (COARSE_MIN_GOALS, WARM_START_MIN_GOALS, assign_modules,
                                      plan_assembly, radial_duals, reduced_matrix,
                                      solve_assignment)
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


def _assert_equivalent(cost, red) -> None:
    """Brute force over every assignment of the 6 x 6 ``red``: non-negative, and each
    assignment costs ``cost`` (4 modules x 6 goals, padded with zero rows) plus the same
    constant, so both matrices have the same optimal assignments."""
    assert red.min() >= -1e-12
    padded = np.zeros((6, 6))
    padded[:4] = cost
    diffs = {round(float(padded[range(6), p].sum() - red[range(6), p].sum()), 9)
             for p in itertools.permutations(range(6))}
    assert len(diffs) == 1


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
    """The clustered instances above do go through the reduced matrix (else the test above
    would only compare scipy with itself): below COARSE_MIN_GOALS under the radial goal
    duals."""
    import smores_assembly.planning as planning
    calls = []
    real = planning.reduced_matrix
    monkeypatch.setattr(planning, "reduced_matrix",
                        lambda c, u: calls.append(c.shape) or real(c, u))
    radial = []
    real_radial = planning.radial_goal_duals
    monkeypatch.setattr(planning, "radial_goal_duals",
                        lambda g: radial.append(g.shape) or real_radial(g))
    cost, g, mods = _instance(np.random.default_rng(1), WARM_START_MIN_GOALS, 80,
                              "clustered")
    planning.solve_assignment(cost, g, mods)
    assert calls == [(WARM_START_MIN_GOALS, 80)]
    assert radial == [(WARM_START_MIN_GOALS, 2)]
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
        _assert_equivalent(cost, red)


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


def _lane_entry_scan(d, occupied, start, clearance, limit, step=0.05):
    """Reference of ``corridors.lane_entry``: every occupied cell checked at every step."""
    (cx, cy), (nx_, ny_) = d.cell, d.normal
    tx, ty = -ny_, nx_
    rel = [((x - cx) * nx_ + (y - cy) * ny_, (x - cx) * tx + (y - cy) * ty, v)
           for (x, y), v in occupied.items() if (x, y) != d.cell]
    on_axis = sorted((a, v) for a, lat, v in rel if lat == 0 and a >= 1)
    block = on_axis[0] if on_axis else None
    k = 0
    while k * step <= limit + 1e-9:
        u = start + k * step
        if block is not None and u + 0.5 > block[0] - 0.5 + 1e-9:
            break
        if all(math.hypot(a - u, lat) >= clearance - 1e-9 for a, lat, _ in rel):
            return LaneEntry(extra=k * step)
        k += 1
    end = block[0] if block is not None else start + limit
    beside = sorted({v for a, lat, v in rel if lat != 0 and abs(lat) < clearance
                     and start - clearance < a < end + clearance})
    return LaneEntry(extra=None, blocking=(block[1],) if block is not None else (),
                     beside=tuple(beside))


def test_lane_entry_equals_scan_of_every_cell():
    """Random occupied grids (sparse to dense, near and far cells), random axes, start,
    clearance and limit like the planner's: the same spot, or the same reasons."""
    rng = random.Random(5)
    dirs = [(1, 0), (-1, 0), (0, 1), (0, -1)]
    outcomes = {"found": 0, "refused": 0, "moved": 0}
    for trial in range(3000):
        density = rng.choice([0.05, 0.15, 0.3, 0.5])
        span = rng.choice([4, 8, 14])
        cells = {(x, y): f"n{x}_{y}" for x in range(-span, span + 1)
                 for y in range(-span, span + 1) if rng.random() < density}
        c = (rng.randint(-3, 3), rng.randint(-3, 3))
        n = rng.choice(dirs)
        cells.pop(c, None)
        cells[(c[0] - n[0], c[1] - n[1])] = "parent"
        d = dock_corridor("v", "parent", {"v": c, "parent": (c[0] - n[0], c[1] - n[1])},
                          rng.random() < 0.5, 0.03, 0.08)
        occupied = dict(cells)
        if rng.random() < 0.5:
            occupied[c] = "v"  # the dock's own cell is skipped by both
        start = rng.choice([0.375, 1.375, 0.5, 1.0 + rng.random()])
        clearance = rng.choice([1.4375, 2.0, 2.5, 1.0 + 2.5 * rng.random()])
        limit = rng.choice([5.0, 2.0, 0.0, 8 * rng.random()])
        got = lane_entry(d, occupied, start, clearance, limit)
        want = _lane_entry_scan(d, occupied, start, clearance, limit)
        assert got == want, (trial, got, want)
        outcomes["found" if want.extra is not None else "refused"] += 1
        outcomes["moved"] += bool(want.extra)
    assert min(outcomes.values()) > 100  # both outcomes (and spots beyond the first) seen


def test_enclosure_with_kept_bounds_equals_without():
    rng = random.Random(9)
    for _ in range(500):
        occupied = {(rng.randint(0, 6), rng.randint(0, 6)): f"n{k}" for k in range(25)}
        xs = [c[0] for c in occupied]
        ys = [c[1] for c in occupied]
        start = (rng.randint(-1, 7), rng.randint(-1, 7))
        assert (enclosure(start, occupied, (min(xs), max(xs), min(ys), max(ys)))
                == enclosure(start, occupied))


def test_reduced_matrix_any_goal_duals_is_equivalent():
    """Whatever the goal duals (random here, not near optimal), every complete assignment
    of the padded matrix changes its total by the same constant, and reduced costs are
    >= 0 (brute force over all assignments of 6 x 6)."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        cost, g, mods = _instance(rng, 4, 6, "clustered")
        duals = rng.normal(0.0, 2.0, 4)
        red, v = reduced_matrix(cost, duals)
        assert red.shape == (6, 6) and v.shape == (6,)
        _assert_equivalent(cost, red)


@pytest.mark.parametrize("kind", ["clustered", "one_side", "grid"])
@pytest.mark.parametrize("n,extra", [(COARSE_MIN_GOALS, 0), (COARSE_MIN_GOALS + 1, 31),
                                     (2 * COARSE_MIN_GOALS + 3, 70)])
def test_multilevel_warm_start_equals_scipy_optimum(kind, n, extra):
    """Sizes that go through one or two half-size levels (coarse_goal_duals): the same
    optimal total as scipy on the untransformed matrix, every goal assigned a distinct
    module."""
    rng = np.random.default_rng(n + extra + 17 * len(kind))
    cost, g, mods = _instance(rng, n, n + extra, kind)
    rows, cols = solve_assignment(cost, g, mods)
    r0, c0 = linear_sum_assignment(cost)
    assert list(rows) == list(range(n))
    assert len(set(cols.tolist())) == n
    assert cost[rows, cols].sum() == pytest.approx(cost[r0, c0].sum(), rel=1e-12, abs=1e-9)


def test_multilevel_warm_start_is_exercised(monkeypatch):
    """The instances above do go through the half-size levels (else the test above would
    only compare scipy with the radial warm start), recursively down to COARSE_MIN_GOALS."""
    import smores_assembly.planning as planning
    calls = []
    real = planning.coarse_goal_duals
    monkeypatch.setattr(planning, "coarse_goal_duals",
                        lambda c, *a, **k: calls.append(c.shape[0]) or real(c, *a, **k))
    n = 2 * COARSE_MIN_GOALS + 3
    cost, g, mods = _instance(np.random.default_rng(5), n, n + 70, "clustered")
    planning.solve_assignment(cost, g, mods)
    assert calls == [n, (n + 1) // 2, ((n + 1) // 2 + 1) // 2]


def test_acyclic_equals_networkx_on_the_root_search_graphs():
    """The root search's cycle check (Kahn's algorithm over plain dicts) gives networkx's
    answer on the precedence graphs it checks (random planar trees of 20-120 nodes, every
    third node as the root, corridors from the unfolding as in ``ordered_roots``) and on
    random digraphs with duplicate edges and self-free cycles of every length."""
    import networkx as nx

    from smores_assembly.corridors import blockers
    from smores_assembly.planning import _acyclic, _precedence_edges, _precedence_graph
    from smores_assembly.topology import random_planar_tree, rooted_edges
    seen = {True: 0, False: 0}
    for seed in range(12):
        nodes, edges = random_planar_tree(20 + 9 * seed, seed=seed)
        for root in nodes[::3]:
            poses = unfold(nodes, edges, root, Pose2D(0.0, 0.0, 0.0))
            cells = {v: grid_cell(p, Pose2D(0.0, 0.0, 0.0)) for v, p in poses.items()}
            oriented = rooted_edges(nodes, edges, root)
            corr = [dock_corridor(v, e.parent, cells, e.child_face.is_wheel, 0.06, 0.08)
                    for v, e in oriented.items()]
            blocked_by = blockers(corr, cells)
            want = nx.is_directed_acyclic_graph(
                _precedence_graph(oriented, nodes, root, blocked_by))
            assert _acyclic(_precedence_edges(oriented, root, blocked_by)) == want
            seen[want] += 1
    rng = random.Random(3)
    for _ in range(400):
        k = rng.randint(1, 12)
        es = [(f"v{rng.randrange(k)}", f"v{rng.randrange(k)}", "x")
              for _ in range(rng.randint(0, 2 * k))]
        es = [e for e in es if e[0] != e[1]]
        es += es[: rng.randint(0, len(es))]  # duplicates: one edge in a DiGraph
        g = nx.DiGraph()
        g.add_edges_from((u, v) for u, v, _ in es)
        assert _acyclic(iter(es)) == nx.is_directed_acyclic_graph(g), es
        seen[nx.is_directed_acyclic_graph(g)] += 1
    assert min(seen.values()) > 50  # both answers exercised


def test_finite_check_fast_path_names_the_entry_and_passes_huge_finite_poses():
    """check_finite_poses' sum shortcut: +inf in one pose and -inf in another (their sum
    is nan), nan beside huge values, every field: the entry is named; finite poses whose
    sum overflows (1e308 + 1e308) are not refused."""
    from smores_assembly.errors import PlanningError
    from smores_assembly.planning import check_finite_poses
    huge = {f"m{i}": Pose2D(1e308, -1e308 if i % 2 else 1e308, 1e308) for i in range(6)}
    check_finite_poses(huge, "modules")  # finite: no error
    for bad, field, value in [("m2", "x", math.inf), ("m5", "yaw", -math.inf),
                              ("m0", "y", math.nan), ("m3", "x", -math.inf)]:
        vals = dict(zip(("x", "y", "yaw"), huge[bad].as_tuple()))
        vals[field] = value
        poses = {**huge, bad: Pose2D(**vals)}
        if value == -math.inf:  # and a +inf later on: the two cancel to nan in the sum
            poses["m9"] = Pose2D(0.0, math.inf, 0.0)
        with pytest.raises(PlanningError, match=rf"modules\.{bad}\.{field}: non-finite"):
            check_finite_poses(poses, "modules")


@pytest.mark.parametrize("kind", ["clustered", "one_side", "grid", "uniform"])
def test_outside_in_row_order_gives_the_optimum_of_every_row(kind):
    """The solver's row order (goals farthest from the centroid first) is mapped back:
    ``cols[i]`` is row i's column, a permutation whose total is scipy's optimum on the
    matrix in its own order (unique optimum: the same columns), dummy rows included."""
    from smores_assembly.planning import _solve_outside_in, radial_goal_duals
    rng = np.random.default_rng(len(kind))
    for n, extra in [(1, 0), (7, 3), (60, 15), (200, 0)]:
        cost, g, mods = _instance(rng, n, n + extra, kind)
        red, _ = reduced_matrix(cost, radial_goal_duals(g))
        cols = _solve_outside_in(red, g)
        assert sorted(cols.tolist()) == list(range(n + extra))
        r0, c0 = linear_sum_assignment(red)
        assert red[np.arange(n + extra), cols].sum() == pytest.approx(
            red[r0, c0].sum(), rel=1e-12, abs=1e-9)
        if kind in ("clustered", "one_side"):  # no ties: the same goal columns
            assert cols[:n].tolist() == c0[:n].tolist()


def test_precedence_dicts_equal_networkx():
    """The schedule's dict-based precedence graph answers as the networkx DiGraph it
    replaced: successors, predecessors, the reason kept for a pair added twice, and
    has_path for every ordered pair, on random digraphs grown edge by edge (as the
    enclosure precedences are added)."""
    import networkx as nx

    from smores_assembly.planning import _Precedence
    rng = random.Random(21)
    paths = {True: 0, False: 0}
    for _ in range(150):
        k = rng.randint(1, 9)
        nodes = [f"v{i}" for i in range(k)]
        es = [(rng.choice(nodes), rng.choice(nodes), rng.choice(["parent", "corridor"]))
              for _ in range(rng.randint(0, 2 * k))]
        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        for u, v, why in es[: len(es) // 2]:
            g.add_edge(u, v, why=why)
        p = _Precedence(nodes, es[: len(es) // 2])
        for u, v, why in es[len(es) // 2:]:  # added later, as add_edge does
            g.add_edge(u, v, why=why)
            p.add_edge(u, v, why)
        for a in nodes:
            assert list(p.successors(a)) == list(g.successors(a))
            assert list(p.predecessors(a)) == list(g.predecessors(a))
            assert {b: p.succ[a][b] for b in p.succ[a]} == {b: g.edges[a, b]["why"]
                                                             for b in g.successors(a)}
            for b in nodes:
                assert p.has_path(a, b) == nx.has_path(g, a, b), (es, a, b)
                paths[nx.has_path(g, a, b)] += 1
    assert min(paths.values()) > 200


def test_dock_corridor_cells_equal_the_stepwise_definition():
    """dock_corridor's cells, in order, against the definition written out step by step:
    k cells out along the normal (corridor_length), then both lateral neighbours of the
    final cell and of each corridor cell (+t first), for every normal, helper or not,
    standoffs from 0 to 4 widths."""
    from smores_assembly.corridors import corridor_length
    rng = random.Random(4)
    for _ in range(400):
        p = (rng.randint(-20, 20), rng.randint(-20, 20))
        n = rng.choice([(1, 0), (-1, 0), (0, 1), (0, -1)])
        c = (p[0] + n[0], p[1] + n[1])
        helper = rng.random() < 0.5
        standoff = rng.choice([0.0, 0.03, 0.06, 0.08, 0.081, 0.3 * rng.random()])
        d = dock_corridor("c", "p", {"c": c, "p": p}, helper, standoff, 0.08)
        k = corridor_length(standoff, 0.08, helper)
        want = []
        for s in range(1, k + 1):
            want.append((c[0] + s * n[0], c[1] + s * n[1]))
        beside = []
        for x, y in [c] + want:
            beside.append((x - n[1], y + n[0]))
            beside.append((x + n[1], y - n[0]))
        assert (d.cell, d.normal, d.corridor, d.beside) == (c, n, tuple(want), tuple(beside))


def test_plan_pauses_the_collector_and_restores_it(monkeypatch):
    """``plan_assembly`` plans with the cyclic collector off (no full-heap pass inside the
    plan) and leaves it as it found it: on stays on, off stays off, also when the plan is
    refused. Oracle: ``gc.isenabled()`` read inside the schedule and after the call."""
    import gc

    import smores_assembly.planning as planning
    from smores_assembly.errors import PlanningError
    seen = []
    real = planning.build_schedule
    monkeypatch.setattr(planning, "build_schedule",
                        lambda *a, **k: (seen.append(gc.isenabled()), real(*a, **k))[1])
    nodes, edges = comb_tree(3, 3)
    rng = random.Random(5)
    modules = {f"m{i}": [rng.uniform(-1, 1), rng.uniform(-1, 1), 0.0] for i in range(12)}
    data = {"name": "comb", "module_width": 0.08,
            "target": {"nodes": nodes, "edges": [e.to_dict() for e in edges]},
            "modules": modules}
    sc = scenario_from_dict(data)
    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            plan = plan_assembly(sc)
            assert gc.isenabled() is state
            assert len(plan.actions) == len(nodes) - 1
            with pytest.raises(PlanningError):  # too few modules: refused inside the pause
                plan_assembly(sc, modules={m: sc.modules[m] for m in list(sc.modules)[:4]})
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()
    assert seen and not any(seen)


def test_lane_params_equal_the_docking_settings_formula():
    """The cached ``(start, clearance)`` of a dock's driven body equals the formula of the
    docking controller's settings worked out afresh (``obstacle_clearance``; a carried
    pair: one width more, at least ``carry_clearance``), for both kinds and several
    widths and standoffs."""
    from smores_assembly.docking.control import DockingSettings
    from smores_assembly.navigation.stage import carry_clearance
    from smores_assembly.planning import _body_lane_params
    for w in (0.05, 0.08, 0.1):
        for standoff in (0.02, 0.04, 0.07):
            for helper in (False, True):
                c = DockingSettings().obstacle_clearance
                if helper:
                    c = max(c + w, carry_clearance(w))
                want = (standoff / w + (1.0 if helper else 0.0), c / w)
                assert _body_lane_params(helper, w, standoff) == want


@pytest.mark.parametrize("kind", ["clustered", "one_side", "grid", "uniform"])
@pytest.mark.parametrize("n,extra", [(64, 0), (120, 13), (320, 30)])
def test_assign_modules_in_solver_order_matches_scipy(kind, n, extra, monkeypatch):
    """``assign_modules`` solves a clustered problem with its goal rows outside in and its
    module columns by bearing (``_solver_order``) and maps the result back: the mapping is
    one module per goal, its summed distance is scipy's optimum on the name-ordered matrix
    (oracle), the reported total is that mapping's summed ``math.dist``, and it does not
    depend on the dicts' order. The warm (reordered) path is taken on clustered goals."""
    import smores_assembly.planning as planning
    taken = []
    real = planning._solver_order
    monkeypatch.setattr(planning, "_solver_order",
                        lambda g, m: (taken.append(len(g)), real(g, m))[1])
    rng = np.random.default_rng(7 * n + extra + len(kind))
    cost0, g, mods = _instance(rng, n, n + extra, kind)
    names = [f"n{i:03d}" for i in range(n)]
    ids = [f"m{i:03d}" for i in range(n + extra)]
    goals = {k: Pose2D(float(x), float(y), 0.0) for k, (x, y) in zip(names, g)}
    modules = {k: Pose2D(float(x), float(y), 0.0) for k, (x, y) in zip(ids, mods)}
    mapping, total = assign_modules(goals, modules)
    assert sorted(mapping) == names and len(set(mapping.values())) == n
    r, c = linear_sum_assignment(cost0)
    assert total == pytest.approx(cost0[r, c].sum(), rel=1e-12, abs=1e-9)
    assert total == pytest.approx(sum(math.dist((goals[k].x, goals[k].y),
                                                (modules[v].x, modules[v].y))
                                      for k, v in mapping.items()), rel=1e-12)
    shuffled_g = dict(reversed(list(goals.items())))
    order = list(modules.items())
    random.Random(n).shuffle(order)
    mapping2, total2 = assign_modules(shuffled_g, dict(order))
    assert mapping2 == mapping and total2 == total
    if kind in ("clustered", "one_side"):
        assert taken, "the clustered instance goes through the solver order"


def test_interval_gap_equals_max_formula():
    """``_gap`` (the stage lanes' box and spot gaps) equals ``max(0.0, a0 - b1, b0 - a1)``
    bit for bit on random, touching, nested, integer and degenerate (point) intervals."""
    from smores_assembly.planning import _gap
    rng = random.Random(11)
    for _ in range(20000):
        pts = [rng.choice([rng.uniform(-5, 5), float(rng.randint(-3, 3)), rng.randint(-3, 3)])
               for _ in range(4)]
        a0, a1 = sorted(pts[:2])
        b0, b1 = sorted(pts[2:])
        if rng.random() < 0.2:
            b1 = b0  # a point (a turning spot)
        want = max(0.0, a0 - b1, b0 - a1)
        got = _gap(a0, a1, b0, b1)
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def test_distances_equal_cdist_bit_for_bit():
    """``planning._distances`` (the chosen pairs' distances of the in-place solve) gives
    scipy's ``cdist`` values bit for bit, at every scale (the plan's total sums them)."""
    from scipy.spatial.distance import cdist

    from smores_assembly.planning import _distances
    rng = np.random.default_rng(23)
    for scale in (1e-3, 1.0, 30.0, 1e4):
        a = rng.normal(0.0, scale, (300, 2))
        b = rng.normal(0.0, scale, (300, 2))
        assert _distances(a, b).tobytes() == np.ascontiguousarray(cdist(a, b).diagonal()).tobytes()


@pytest.mark.parametrize("kind", ["clustered", "one_side", "grid"])
def test_assign_modules_in_place_equals_solve_assignment(kind):
    """``assign_modules``'s warm-started solve in one kept buffer (``_solve_warm_in_place``)
    returns what ``solve_assignment`` returns on ``cdist``'s matrix, column for column, with
    ``cdist``'s distances; twice in a row (the second plan reuses the buffer), and after a
    larger one (a smaller view of the kept buffer)."""
    from scipy.spatial.distance import cdist

    from smores_assembly.planning import (_solve_warm_in_place, _solver_order,
                                          _warm_start_applies)
    rng = np.random.default_rng(len(kind) + 5)
    for n, extra in [(2 * COARSE_MIN_GOALS + 3, 70), (COARSE_MIN_GOALS + 1, 31),
                     (WARM_START_MIN_GOALS, 16), (2 * COARSE_MIN_GOALS + 3, 70)]:
        _, g, mods = _instance(rng, n, n + extra, kind)
        ro, co = _solver_order(g, mods)
        g, mods = g[ro], mods[co]
        assert _warm_start_applies(g, mods)
        cost = cdist(g, mods)
        r0, c0 = solve_assignment(cost, g, mods)
        for _ in range(2):
            rows, cols, vals = _solve_warm_in_place(g, mods)
            assert rows.tolist() == r0.tolist() and cols.tolist() == c0.tolist()
            assert vals.tobytes() == cost[r0, c0].tobytes()
