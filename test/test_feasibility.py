"""Geometric feasibility of the docking schedule (issue 11): corners, one-module slots,
rows docking side by side, orders that are not depth order, and infeasible targets refused
at plan time naming the dock and its blockers. Judged by the continuous-geometry oracle of
``corridor_oracle`` and, for refusals, by an exhaustive search over docking orders."""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from corridor_oracle import corridor_violations
from smores_assembly.corridors import blockers, conflict, corridor_length, dock_corridor
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.planning import PlanningError, RootChoice, plan_assembly
from smores_assembly.scenario import Edge, Scenario, load_scenario
from smores_assembly.topology import grid_cell, random_planar_tree
from test_planning import brute_force_feasible, _depth_only_schedule

DATA = Path(__file__).resolve().parent / "data"
W = 0.08
_FACE_AT = {0: Face.TOP, 1: Face.LEFT, 2: Face.BOTTOM, 3: Face.RIGHT}  # quarter turns


def layout(cells: dict[str, tuple[str | None, tuple[int, int]]], helpers=()) -> Scenario:
    """A target drawn on the grid: node -> (parent, cell); the root (parent None) at (0, 0)
    with yaw 0. Each child docks its BOTTOM face onto the parent's face that points at it,
    so its yaw is the direction from parent to child. Modules start far away on a ring."""
    yaw_q = {}
    edges = []
    for v, (p, (i, j)) in cells.items():
        if p is None:
            yaw_q[v] = 0
            continue
        pi, pj = cells[p][1]
        d = {(1, 0): 0, (0, 1): 1, (-1, 0): 2, (0, -1): 3}[(i - pi, j - pj)]
        yaw_q[v] = d
        edges.append(Edge(p, _FACE_AT[(d - yaw_q[p]) % 4], v, Face.BOTTOM))
    nodes = list(cells)
    n = len(nodes) + len(helpers)
    mods = {f"m{k}": Pose2D(1.0 * math.cos(2 * math.pi * k / n),
                            1.0 * math.sin(2 * math.pi * k / n), 0.0) for k in range(n)}
    root = next(v for v, (p, _) in cells.items() if p is None)
    mods["m0"] = Pose2D(0.0, 0.0, 0.0)  # nearest the mean: the physical root
    sc = Scenario(name="layout", source="test", module_width=W, nodes=nodes, edges=edges,
                  modules=mods, helpers=list(helpers))
    return sc, RootChoice(node=root, module="m0", pose=mods["m0"])


def test_corridor_geometry():
    cells = {"p": (0, 0), "c": (0, 1)}
    d = dock_corridor("c", "p", cells, helper=False, standoff=0.06, width=W)
    assert d.normal == (0, 1) and d.corridor == ((0, 2),)
    assert set(d.beside) == {(1, 1), (-1, 1), (1, 2), (-1, 2)}
    h = dock_corridor("c", "p", cells, helper=True, standoff=0.06, width=W)
    assert h.corridor == ((0, 2), (0, 3))  # the helper's body behind the carried module
    assert corridor_length(0.09, W, False) == 2 and corridor_length(0.0, W, False) == 1
    with pytest.raises(ValueError, match="width"):
        corridor_length(0.06, 0.0, False)
    with pytest.raises(ValueError, match="not next to"):
        dock_corridor("c", "p", {"p": (0, 0), "c": (1, 1)}, helper=False)
    # Side by side lanes touch: not in one stage; lanes two apart may share a stage.
    a = dock_corridor("a", "p", {"p": (0, 0), "a": (1, 0)}, helper=False)
    b = dock_corridor("b", "q", {"q": (0, 1), "b": (1, 1)}, helper=False)
    c = dock_corridor("c", "r", {"r": (0, 2), "c": (1, 2)}, helper=False)
    assert conflict(a, b) and conflict(b, c) and not conflict(a, c)
    assert blockers([a], {"p": (0, 0), "a": (1, 0), "x": (2, 0)}) == {"a": ["x"]}


def test_pocket_and_rc_car_fig12_plan_executable_orders():
    for name in ("pocket.yaml", "rc_car_fig12.yaml"):
        sc = load_scenario(DATA / name)
        plan = plan_assembly(sc)
        assert corridor_violations(plan, sc.module_width) == [], name


def test_row_of_three_side_by_side_and_corner():
    # Root r with a (LEFT side) and b (RIGHT side); x, y, z end in a row at x = 1: y docks
    # onto r's TOP, x and z onto a and b, sliding flush along y (two corners).
    sc, root = layout({"r": (None, (0, 0)), "a": ("r", (0, 1)), "b": ("r", (0, -1)),
                       "y": ("r", (1, 0)), "x": ("a", (1, 1)), "z": ("b", (1, -1))})
    plan = plan_assembly(sc, root=root)
    assert corridor_violations(plan, W) == []
    stage = {a.node: a.stage for a in plan.actions}
    assert stage["a"] == stage["b"] < stage["y"] < stage["x"] == stage["z"]


def test_only_feasible_order_is_not_depth_order():
    # c (depth 2, onto q) slides in along -y from (1, 1)+; d (depth 1, onto r's BOTTOM)...
    # Here: u (depth 3) must come before v (depth 2) because v's cell lies in u's corridor.
    #   r(0,0) -> a(0,1) -> b(1,1) -> u(1,0)?  u's parent b is at (1,1): u slides in along
    #   -y from (1,-1); v = r's child... place v at (1,-1) as child of w(0,-1) (depth 2).
    sc, root = layout({"r": (None, (0, 0)), "a": ("r", (0, 1)), "b": ("a", (1, 1)),
                       "u": ("b", (1, 0)), "w": ("r", (0, -1)), "v": ("w", (1, -1))})
    plan = plan_assembly(sc, root=root)
    assert corridor_violations(plan, W) == []
    stage = {a.node: a.stage for a in plan.actions}
    depth = {a.node: a.depth for a in plan.actions}
    assert depth["u"] == 3 and depth["v"] == 2
    assert stage["u"] < stage["v"]  # not depth order: the only executable one


def test_infeasible_target_refused_naming_dock_and_blockers():
    # A U-turn: c ends at (1, 0) next to the root, docking onto p at (2, 0): its slide
    # comes from (0, 0) — the root's own cell. No order can assemble it.
    cells = {"r": (None, (0, 0)), "a": ("r", (0, 1)), "b": ("a", (1, 1)),
             "p": ("b", (2, 1)), "q": ("p", (2, 0)), "c": ("q", (1, 0))}
    sc, root = layout(cells)
    with pytest.raises(PlanningError) as info:
        plan_assembly(sc, root=root)
    msg = str(info.value)
    assert "approach corridor" in msg and "'r'" in msg and "(c)" in msg
    from smores_assembly import planning as planning_mod
    real = planning_mod.build_schedule
    try:
        planning_mod.build_schedule = _depth_only_schedule
        loose = plan_assembly(sc, root=root)
    finally:
        planning_mod.build_schedule = real
    assert not brute_force_feasible(loose, sc)


def _kinds(plan):
    """Which hard geometric situations a plan contains."""
    cell = {a.node: grid_cell(a.goal, plan.root_pose, W) for a in plan.actions}
    cell[plan.root_node] = (0, 0)
    at = {c: n for n, c in cell.items()}
    stage = {a.node: a.stage for a in plan.actions}
    stage[plan.root_node] = -1
    kinds = set()
    for a in plan.actions:
        pc = cell[a.parent_node]
        n = (cell[a.node][0] - pc[0], cell[a.node][1] - pc[1])
        t = (-n[1], n[0])
        side = [at.get((cell[a.node][0] + t[0] * s, cell[a.node][1] + t[1] * s))
                for s in (1, -1)]
        placed = [x for x in side if x is not None and stage[x] < a.stage]
        if len(placed) == 1:
            kinds.add("corner")
        if len(placed) == 2:
            kinds.add("slot")
    for a in plan.actions:
        for b in plan.actions:
            if a.depth < b.depth and a.stage > b.stage:
                kinds.add("not depth order")
    return kinds


def test_random_targets_hard_kinds_all_executable():
    """Random 6-20 node trees: corners, one-module slots and non-depth orders all occur,
    and every plan passes the independent geometric check."""
    rng = random.Random(3)
    seen: dict[str, int] = {}
    for seed in range(150):
        n = rng.randint(6, 20)
        nodes, edges = random_planar_tree(n, seed=9000 + seed, reverse_prob=0.4)
        ids = [f"m{i}" for i in range(n)] + ["h0", "h1"]
        mods = {m: Pose2D(rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(-3, 3))
                for m in ids}
        sc = Scenario(name="r", source="test", module_width=W, nodes=nodes, edges=edges,
                      modules=mods, helpers=["h0", "h1"])
        try:
            plan = plan_assembly(sc)
        except PlanningError as exc:
            assert "approach corridor" in str(exc)
            continue
        assert corridor_violations(plan, W) == [], seed
        for k in _kinds(plan):
            seen[k] = seen.get(k, 0) + 1
    assert seen.get("corner", 0) > 20 and seen.get("slot", 0) >= 1 \
        and seen.get("not depth order", 0) > 3, seen


def _walled_in(start, occupied) -> bool:
    """Oracle: no 4-connected way over free cells from ``start`` to a cell two beyond the
    occupied cells' bounding box (plain BFS over the box)."""
    xs = [c[0] for c in occupied]
    ys = [c[1] for c in occupied]
    box = (min(xs) - 2, max(xs) + 2, min(ys) - 2, max(ys) + 2)
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop(0)
        if x in (box[0], box[1]) or y in (box[2], box[3]):
            return False
        for c in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if c not in occupied and c not in seen:
                seen.add(c)
                todo.append(c)
    return True


def test_dock_into_a_ring_runs_before_the_ring_closes():
    """A ring of placed nodes round a two-cell hole; x docks onto f from inside the hole
    (its pre-dock pose in the hole). In depth order the ring closes (h, depth 3) long before
    x (depth 7) docks and x could never reach its pre-dock pose; the schedule makes x dock
    before h. Judged by an independent walled-in check at every dock and the corridor
    oracle."""
    cells = {"r": (None, (0, 0)), "i": ("r", (0, 1)), "h": ("i", (0, 2)), "g": ("h", (0, 3)),
             "a": ("r", (1, 0)), "b": ("a", (2, 0)), "c": ("b", (2, 1)), "d": ("c", (2, 2)),
             "e": ("d", (2, 3)), "f": ("e", (1, 3)), "x": ("f", (1, 2))}
    sc, root = layout(cells)
    plan = plan_assembly(sc, root=root)
    assert corridor_violations(plan, W) == []
    stage = {a.node: a.stage for a in plan.actions}
    stage["r"] = -1
    assert stage["x"] < stage["h"]
    for a in plan.actions:
        occupied = {cells[n][1] for n, k in stage.items() if k < a.stage}
        i, j = cells[a.node][1]
        pi, pj = cells[a.parent_node][1]
        predock = (2 * i - pi, 2 * j - pj)   # one cell further out along the dock axis
        assert not _walled_in(predock, occupied), a.node
