"""Self-reconfiguration planning (issue 15): scenario ``initial`` block, common part,
leaves-first disassembly and the assembly after it (no ROS).

Random start structures and targets are judged by an independent replay
(:func:`replay`): it applies the plan's undocks and docks to the connections stage by
stage, checks that every undocking module is a free leaf at that moment, sweeps its body
along the back-off, the turn and the drive with the scenario's own square-overlap test
against every body standing still, and compares the final connections with the target.
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from smores_assembly.edge import Connection
from smores_assembly.errors import PlanningError, ScenarioError
from smores_assembly.geometry import Face, Pose2D, child_pose, square_overlap
from smores_assembly.planning import Plan
from smores_assembly.reconfigure import common_parts, plan_reconfiguration, snap_structures
from smores_assembly.scenario import load_scenario, scenario_from_dict
from smores_assembly.topology import random_planar_tree, unfold

ROOT = Path(__file__).resolve().parents[1]
WALKER = ROOT / "config" / "scenarios" / "walker_to_manipulator.yaml"
W = 0.08


def target_connections(plan: Plan, scenario) -> set[Connection]:
    return {Connection.make(plan.assignment[e.parent], e.parent_face,
                            plan.assignment[e.child], e.child_face) for e in scenario.edges}


def _sweep_clear(path: list[Pose2D], others: dict[str, Pose2D], tol: float = 1e-4
                 ) -> str | None:
    for p in path:
        for o, q in others.items():
            d = square_overlap(p.as_tuple(), q.as_tuple(), W)
            if d > tol:
                return f"{o} ({d * 1000:.2f} mm at {p})"
    return None


def _motion(u) -> list[Pose2D]:
    """Body poses along an undock: back-off, turn in place, drive (5 mm / 3 deg steps)."""
    out = []
    n = max(1, int(u.distance / 0.005))
    for k in range(n + 1):
        d = u.direction * u.distance * k / n
        out.append(Pose2D(u.start.x + d * math.cos(u.start.yaw),
                          u.start.y + d * math.sin(u.start.yaw), u.start.yaw))
    pv = out[-1]
    turn = math.remainder(u.park.yaw - pv.yaw, 2 * math.pi)
    for k in range(1, 61):
        out.append(Pose2D(pv.x, pv.y, pv.yaw + turn * k / 60))
    dist = pv.distance_to(u.park)
    n = max(1, int(dist / 0.005))
    for k in range(n + 1):
        out.append(Pose2D(pv.x + (u.park.x - pv.x) * k / n, pv.y + (u.park.y - pv.y) * k / n,
                          u.park.yaw))
    return out


def replay(plan: Plan, scenario, connections) -> set[Connection]:
    """Independent check of a reconfiguration plan; returns the final connections."""
    conns = set(connections)
    # the plan works on the start structures made exact (measured poses are mm off)
    pose = snap_structures(sorted(conns), scenario.modules, W)
    kept = set(plan.kept)
    for k in range(plan.num_undock_stages):
        stage = [u for u in plan.undocks if u.stage == k]
        assert stage, f"undock stage {k} is empty"
        degree: dict[str, int] = {}
        for c in conns:
            for m in (c.module_a, c.module_b):
                degree[m] = degree.get(m, 0) + 1
        movers = {u.module for u in stage}
        for u in stage:
            c = Connection.make(u.module, u.face, u.from_module, u.from_face)
            assert c in conns, f"{c.describe()} does not exist when it is undocked"
            assert u.module not in kept, f"kept module {u.module} undocks"
            # a leaf: after the undock it is a single module, nothing else is split off
            assert degree[u.module] == 1, f"{u.module} has {degree[u.module]} connections"
            assert u.from_module not in movers, f"{u.from_module} moves away as well"
            # its motion sweeps no body that stands still in this stage (its own former
            # neighbours only flush: tolerance 0.1 mm)
            still = {m: p for m, p in pose.items() if m not in movers}
            hit = _sweep_clear(_motion(u), still)
            assert hit is None, f"undock {u.describe()} sweeps {hit}"
        # parks of one stage do not overlap each other
        for a in stage:
            for b in stage:
                if a.module < b.module:
                    assert square_overlap(a.park.as_tuple(), b.park.as_tuple(), W) <= 0.0
        for u in stage:
            conns.discard(Connection.make(u.module, u.face, u.from_module, u.from_face))
            pose[u.module] = u.park
    # only the kept structure's connections are left, and they are target edges
    assert all(c.module_a in kept and c.module_b in kept for c in conns), conns
    want = target_connections(plan, scenario)
    assert conns <= want
    for a in plan.actions:
        assert a.stage >= plan.num_undock_stages
        assert a.module not in kept
        conns.add(Connection.make(a.module, a.child_face, a.parent_module, a.parent_face))
    # stages: the undocking modules, then the docking modules
    for k, mods in enumerate(plan.stages):
        if k < plan.num_undock_stages:
            assert sorted(mods) == sorted(u.module for u in plan.undocks if u.stage == k)
        else:
            assert sorted(mods) == sorted(a.module for a in plan.actions if a.stage == k)
    return conns


# ------------------------------------------------------------------ scenario format
def _walker_dict():
    return load_scenario(WALKER).to_dict()


def test_walker_scenario_loads_with_its_connections():
    s = load_scenario(WALKER)
    assert len(s.initial_connections) == 6
    assert "reconstruction" in s.source.lower()
    assert scenario_from_dict(s.to_dict()) == s


@pytest.mark.parametrize("dx, dyaw", [(0.010, 0.0), (0.0, math.radians(8.0))])
def test_start_pose_that_contradicts_initial_is_refused(dx, dyaw):
    d = _walker_dict()
    x, y, yaw = d["modules"]["m4"]
    d["modules"]["m4"] = [x + dx, y, yaw + dyaw]
    with pytest.raises(ScenarioError) as exc:
        scenario_from_dict(d)
    msg = str(exc.value)
    assert msg.startswith("initial.connections[4]: m3.LEFT-m4.BOTTOM: the start poses "
                          "disagree"), msg
    assert exc.value.field == "initial.connections[4]"


def test_noise_within_tolerance_is_accepted():
    d = _walker_dict()
    x, y, yaw = d["modules"]["m4"]
    d["modules"]["m4"] = [x + 0.002, y, yaw + math.radians(1.0)]
    assert len(scenario_from_dict(d).initial_connections) == 6


@pytest.mark.parametrize("conns, field, words", [
    ([["m1.LEFT", "m9.BOTTOM"]], "initial.connections[0][1]", "unknown module 'm9'"),
    ([["m1.FRONT", "m0.BOTTOM"]], "initial.connections[0][0]", "unknown face"),
    ([["m1.LEFT", "m0.BOTTOM"], ["m1.LEFT", "m2.BOTTOM"]], "initial.connections[1]",
     "already used"),
    ([["m1", "m0.BOTTOM"]], "initial.connections[0][0]", "expected '<module>.<FACE>'"),
    ([["m1.LEFT"]], "initial.connections[0]", "expected [<module>.<FACE>"),
    ([["m1.LEFT", "m1.TOP"]], "initial.connections[0]", "to itself"),
])
def test_bad_initial_connections_are_refused(conns, field, words):
    d = _walker_dict()
    d["initial"] = {"connections": conns}
    with pytest.raises(ScenarioError) as exc:
        scenario_from_dict(d)
    assert exc.value.field == field and words in str(exc.value), str(exc.value)


def test_initial_unknown_key_refused():
    d = _walker_dict()
    d["initial"]["links"] = []
    with pytest.raises(ScenarioError, match="initial: unknown key 'links'"):
        scenario_from_dict(d)


def test_cycle_refused():
    # four modules in a 2x2 square, joined all round
    a = Pose2D(0.0, 0.0, 0.0)
    b = child_pose(a, Face.TOP, Face.BOTTOM, W)         # +x
    c = child_pose(b, Face.LEFT, Face.RIGHT, W)         # +x +y, yaw 0
    dd = child_pose(a, Face.LEFT, Face.RIGHT, W)        # +y
    d = {"name": "sq", "target": {"nodes": ["n0", "n1"], "edges": [
        {"parent": "n0", "parent_face": "TOP", "child": "n1", "child_face": "BOTTOM"}]},
         "modules": {m: list(p.as_tuple()) for m, p in zip("abcd", (a, b, c, dd))},
         "initial": {"connections": [["a.TOP", "b.BOTTOM"], ["b.LEFT", "c.RIGHT"],
                                     ["a.LEFT", "d.RIGHT"], ["d.TOP", "c.BOTTOM"]]}}
    with pytest.raises(ScenarioError, match=r"initial.connections\[3\]: d.TOP-c.BOTTOM "
                                            r"closes a cycle"):
        scenario_from_dict(d)


# ------------------------------------------------------------------ planning
def test_walker_reuse_keeps_the_common_part_and_ends_in_the_target():
    s = load_scenario(WALKER)
    plan = plan_reconfiguration(s)
    assert plan.method == "reuse"
    # the walker's m1 (hub) with m0, m2, m6 (left, right, front) and m3 (arm1) already
    # are Task 1's hub part: only the legs m4, m5 undock, and only arm2, arm3 dock
    assert plan.kept == ["m0", "m1", "m2", "m3", "m6"]
    assert sorted(u.module for u in plan.undocks) == ["m4", "m5"]
    assert sorted(a.node for a in plan.actions) == ["arm2", "arm3"]
    final = replay(plan, s, s.initial_connections)
    assert final == target_connections(plan, s)
    assert len(final) == len(s.edges)
    # kept modules' goals are where they stand (same unfolding; the file's poses are
    # rounded to 0.1 mm per coordinate, the plan makes the structure exact)
    for m in plan.kept:
        assert plan.goals[m].distance_to(s.modules[m]) < 5e-4


def test_walker_full_disassembly_undocks_everything():
    s = load_scenario(WALKER)
    plan = plan_reconfiguration(s, method="full")
    assert plan.method == "full" and plan.kept == []
    assert len(plan.undocks) == 6 and len(plan.actions) == 6
    final = replay(plan, s, s.initial_connections)
    assert final == target_connections(plan, s)


def _scenario_from_structure(nodes, edges, modules, pose0, extra=None, name="x"):
    """A scenario whose modules stand assembled as the tree (module ids = node names)."""
    poses = unfold(nodes, edges, nodes[0], pose0, W)
    d = {"name": name, "target": {"nodes": nodes, "edges": [e.to_dict() for e in edges]},
         "modules": {m: list(poses[m].as_tuple()) for m in nodes},
         "initial": {"connections": [[f"{e.parent}.{e.parent_face.value}",
                                      f"{e.child}.{e.child_face.value}"] for e in edges]}}
    if extra:
        d["modules"].update(extra)
    return d


def test_structure_equal_to_the_target_needs_zero_actions():
    nodes, edges = random_planar_tree(8, seed=3, prefix="m")
    d = _scenario_from_structure(nodes, edges, nodes, Pose2D(0.3, -0.2, 0.7))
    s = scenario_from_dict(d, check_overlap=True)
    plan = plan_reconfiguration(s)
    assert plan.undocks == [] and plan.actions == [] and plan.stages == []
    assert sorted(plan.kept) == sorted(nodes)
    assert target_connections(plan, s) == set(s.initial_connections)


def test_common_parts_brute_force():
    """The largest common part equals the largest one found by brute force over every
    connected set of modules and every one-to-one map onto nodes (small trees)."""
    import itertools

    import networkx as nx
    rng = random.Random(5)
    for trial in range(25):
        n_a, n_b = rng.randint(3, 5), rng.randint(3, 5)
        nodes, edges = random_planar_tree(n_b, seed=rng.randrange(10**6), prefix="n")
        mods, medges = random_planar_tree(n_a, seed=rng.randrange(10**6), prefix="m")
        conns = [Connection.make(e.parent, e.parent_face, e.child, e.child_face)
                 for e in medges]
        parts = common_parts(conns, nodes, edges)
        got = len(parts[0]) if parts else 1
        g = nx.Graph([(c.module_a, c.module_b) for c in conns])
        want_edges = {frozenset({(e.parent, e.parent_face), (e.child, e.child_face)})
                      for e in edges}
        best = 1
        for k in range(2, min(n_a, n_b) + 1):
            for sub in itertools.combinations(mods, k):
                if not nx.is_connected(g.subgraph(sub)):
                    continue
                inner = [c for c in conns if c.module_a in sub and c.module_b in sub]
                for img in itertools.permutations(nodes, k):
                    f = dict(zip(sub, img))
                    if all(frozenset({(f[c.module_a], c.face_a), (f[c.module_b], c.face_b)})
                           in want_edges for c in inner):
                        best = k
                        break
                if best == k:
                    break
        assert got == best, (trial, got, best)


def _random_pair(rng: random.Random, n: int):
    """A random start structure of ``n`` modules (random pose) and a random target of the
    same size, plus nothing else on the floor."""
    mods, medges = random_planar_tree(n, seed=rng.randrange(10**6), prefix="m")
    nodes, edges = random_planar_tree(n, seed=rng.randrange(10**6), prefix="n")
    start = unfold(mods, medges, mods[0], Pose2D(rng.uniform(-0.3, 0.3),
                                                   rng.uniform(-0.3, 0.3),
                                                   rng.uniform(-math.pi, math.pi)), W)
    d = {"name": "pair", "target": {"nodes": nodes, "edges": [e.to_dict() for e in edges]},
         "modules": {m: list(p.as_tuple()) for m, p in start.items()},
         "initial": {"connections": [[f"{e.parent}.{e.parent_face.value}",
                                      f"{e.child}.{e.child_face.value}"] for e in medges]}}
    # one spare module for the helper docks, far from the structure
    d["modules"]["h0"] = [1.0, 1.0, 0.0]
    return scenario_from_dict(d, check_overlap=True)


@pytest.mark.parametrize("method", ["reuse", "full"])
def test_random_pairs_never_strand_and_end_in_the_target(method):
    """Random 6-10-module structures and targets: each plan is refused with a
    PlanningError or passes the independent replay (leaves only, no swept body, final
    connections = target edges)."""
    rng = random.Random(15)
    planned = refused = 0
    for trial in range(30):
        s = _random_pair(rng, rng.randint(6, 10))
        try:
            plan = plan_reconfiguration(s, method=method)
        except PlanningError as exc:
            refused += 1
            assert str(exc), trial
            continue
        planned += 1
        final = replay(plan, s, s.initial_connections)
        assert final == target_connections(plan, s), trial
        if method == "reuse":
            best = common_parts(s.initial_connections, s.nodes, s.edges)
            assert len(plan.kept) <= (len(best[0]) if best else 0)
    assert planned >= 20, (planned, refused)


def test_reuse_never_undocks_more_than_full_disassembly():
    rng = random.Random(7)
    for _ in range(15):
        s = _random_pair(rng, rng.randint(6, 10))
        try:
            reuse = plan_reconfiguration(s, method="reuse")
            full = plan_reconfiguration(s, method="full")
        except PlanningError:
            continue
        assert len(reuse.undocks) <= len(full.undocks)
        assert len(reuse.actions) <= len(full.actions)


def test_reuse_keeps_the_common_part_with_the_shortest_estimate():
    """Every common part's reuse plan is built (brute force over the parts the planner may
    consider), every single module's kept in place that the planner considers
    (``single_parts``), and the full disassembly's: the chosen plan has the shortest
    estimated time of them all (helper fetches and carries included) and, among those,
    the fewest stages; so never longer than every common part's and the full
    disassembly's; a full disassembly is chosen only when it is estimated faster than
    every common part's plan (no slower than a single module's)."""
    from smores_assembly import reconfigure as rc

    rng = random.Random(21)
    methods = set()
    kept_one = 0
    for trial in range(15):
        s = _random_pair(rng, rng.randint(6, 10))
        plan = plan_reconfiguration(s, method="reuse")
        conns = sorted(s.initial_connections)
        mods = snap_structures(conns, s.modules, s.module_width)
        keys, single_keys = [], []
        for part in common_parts(conns, s.nodes, s.edges)[:rc.MAX_PARTS]:
            try:
                p = rc._plan_with_kept(s, conns, mods, part, rc.ReconfigurationSettings())
            except PlanningError:
                continue
            keys.append((rc.estimated_time(p, mods), len(p.stages)))
        for part in rc.single_parts(mods, s.nodes, s.edges, s.module_width, s.helpers):
            try:
                p = rc._plan_with_kept(s, conns, mods, part, rc.ReconfigurationSettings())
            except PlanningError:
                continue
            single_keys.append((rc.estimated_time(p, mods), len(p.stages)))
        full = plan_reconfiguration(s, method="full")
        full_key = (rc.estimated_time(full, mods), len(full.stages))
        got = (rc.estimated_time(plan, mods), len(plan.stages))
        methods.add(plan.method)
        kept_one += len(plan.kept) == 1
        assert got == min(keys + single_keys + [full_key]), (trial, got, keys, full_key)
        assert got <= min(keys + [full_key]), trial
        if plan.method == "full":
            assert not keys or full_key < min(keys), trial
            assert not single_keys or full_key <= min(single_keys), trial
        else:
            assert plan.method == "reuse" and got <= full_key, trial
    assert "reuse" in methods
    assert kept_one, "no trial kept a single module: the candidates were not exercised"



def test_a_single_module_kept_wins_by_its_estimate_alone():
    """The fresh pairs of ``bench_reconfig --n 4 --seed 5`` (its own generator and seed
    stream, not tuned on): every candidate plan is built (brute force: the common parts,
    the single modules kept in place, the full disassembly) and the chosen one has the
    shortest estimate of them all, a single module's included at its estimate (no margin:
    on main b2e333e, with ``single_margin_s`` = 10 s, reconf_8_62288247 chose the full
    disassembly, estimated 3.6 s slower than keeping m1 alone: this test failed)."""
    from bench.bench_reconfig import make_pair
    from smores_assembly import reconfigure as rc

    rng = random.Random(5)
    singles_seen = 0
    for _ in range(4):
        s = scenario_from_dict(make_pair(rng.randint(6, 10), rng.randrange(1 << 30)))
        conns = sorted(s.initial_connections)
        mods = snap_structures(conns, s.modules, s.module_width)
        rs = rc.ReconfigurationSettings()
        cands = [plan_reconfiguration(s, method="full")]
        singles = rc.single_parts(mods, s.nodes, s.edges, s.module_width, s.helpers)
        for part in common_parts(conns, s.nodes, s.edges, s.helpers)[:rc.MAX_PARTS] + singles:
            try:
                cands.append(rc._plan_with_kept(s, conns, mods, part, rs))
            except PlanningError:
                continue
        singles_seen += len(singles)
        best = min(rc.estimated_time(p, mods) for p in cands)
        got = rc.estimated_time(plan_reconfiguration(s), mods)
        assert math.isclose(got, best, abs_tol=1e-9), (s.name, got, best)
    assert singles_seen, "no single-module candidates: the case was not exercised"

def _wheel_docks_oracle(nodes, edges, root) -> int:
    """Oracle: target edges that dock a wheel face when every edge is docked by its end
    farther from ``root`` (networkx shortest paths)."""
    import networkx as nx
    dist = nx.single_source_shortest_path_length(
        nx.Graph([(e.parent, e.child) for e in edges]), root)
    return sum((e.child_face if dist[e.child] > dist[e.parent] else e.parent_face).is_wheel
               for e in edges)


def test_single_parts_root_at_the_fewest_wheel_face_docks():
    """Random pairs: every single module kept in place that the planner considers stands
    for a node whose tree, docked away from it, has the fewest wheel-face docks of all
    nodes (networkx oracle); never a helper; ranked by the summed distance of the other
    modules to the other nodes' goals unfolded round it, which equals the brute-force
    minimum over every one-to-one choice (permutations, 6-module pairs)."""
    import itertools

    from smores_assembly import reconfigure as rc
    from smores_assembly.topology import unfold

    rng = random.Random(5)
    for trial in range(6):
        s = _random_pair(rng, 6)
        mods = snap_structures(sorted(s.initial_connections), s.modules, s.module_width)
        got = rc.single_parts(mods, s.nodes, s.edges, s.module_width, s.helpers)
        assert 0 < len(got) <= rc.MAX_SINGLES, trial
        wheel = {n: _wheel_docks_oracle(s.nodes, s.edges, n) for n in s.nodes}
        costs = []
        for part in got:
            (n, m), = part.items()
            assert wheel[n] == min(wheel.values()), (trial, n, wheel)
            assert m not in s.helpers and m in mods, (trial, m)
            goals = unfold(s.nodes, s.edges, n, mods[m], s.module_width)
            rest = [k for k in s.nodes if k != n]
            pool = [k for k in mods if k != m and k not in s.helpers]
            costs.append(min(
                sum(goals[k].distance_to(mods[q]) for k, q in zip(rest, perm))
                for perm in itertools.permutations(pool, len(rest))))
        assert all(a <= b + 1e-9 for a, b in zip(costs, costs[1:])), (trial, costs)


def _carried_docks_brute_force(s) -> dict[frozenset, int]:
    """Oracle: every maximal common part (connected module set, one-to-one map onto nodes
    with equal faces on every inner connection; brute force over subsets and
    permutations) -> how many target edges outside it dock a wheel face, each edge docked
    by its endpoint farther from the part (networkx shortest paths)."""
    import itertools

    import networkx as nx
    conns = sorted(s.initial_connections)
    g = nx.Graph([(c.module_a, c.module_b) for c in conns])
    t = nx.Graph([(e.parent, e.child) for e in s.edges])
    want = {frozenset({(e.parent, e.parent_face), (e.child, e.child_face)}) for e in s.edges}
    mods = sorted(g.nodes)
    parts: list[frozenset] = []
    for k in range(2, len(mods) + 1):
        for sub in itertools.combinations(mods, k):
            if not nx.is_connected(g.subgraph(sub)):
                continue
            inner = [c for c in conns if c.module_a in sub and c.module_b in sub]
            for img in itertools.permutations(s.nodes, k):
                f = dict(zip(sub, img))   # k - 1 inner edges onto k nodes: a subtree
                if all(frozenset({(f[c.module_a], c.face_a), (f[c.module_b], c.face_b)})
                       in want for c in inner):
                    parts.append(frozenset((n, m) for m, n in f.items()))
    maximal = [p for p in parts if not any(p < q for q in parts)]
    out = {}
    for p in maximal:
        dist = nx.multi_source_dijkstra_path_length(t, {n for n, _ in p})
        carried = 0
        for e in s.edges:
            if dist[e.parent] == dist[e.child] == 0:
                continue   # kept
            face = e.child_face if dist[e.child] > dist[e.parent] else e.parent_face
            carried += face.is_wheel
        out[p] = carried
    return out


def test_reuse_plan_is_no_slower_by_the_estimate_than_any_maximal_part():
    """Every edge outside the kept part is docked away from it, so the kept part decides
    which docks present a wheel face and wait for a helper, and how far the helper fetches
    and carries. Random 6-7-module pairs: no maximal common part (brute-force oracle)
    whose plan can be built, and not the full disassembly, has a shorter estimated time
    than the chosen plan. (Until issue 15's travel-aware estimate the planner kept the
    part with the fewest carried docks; carries are now timed by their fetch and carry
    paths, so a part with more but shorter carries, or the full disassembly, may win.)"""
    from smores_assembly import reconfigure as rc

    rng = random.Random(33)
    for trial in range(12):
        s = _random_pair(rng, rng.randint(6, 7))
        plan = plan_reconfiguration(s, method="reuse")
        conns = sorted(s.initial_connections)
        mods = snap_structures(conns, s.modules, s.module_width)
        got = rc.estimated_time(plan, mods)
        others = [rc.estimated_time(plan_reconfiguration(s, method="full"), mods)]
        for p in sorted(_carried_docks_brute_force(s), key=sorted):
            try:
                others.append(rc.estimated_time(
                    rc._plan_with_kept(s, conns, mods, dict(p), rc.ReconfigurationSettings()),
                    mods))
            except PlanningError:
                continue
        assert got <= min(others) + 1e-9, (trial, got, others)


def test_unknown_method_and_unknown_module_refused():
    s = load_scenario(WALKER)
    with pytest.raises(PlanningError, match="method: unknown"):
        plan_reconfiguration(s, method="partial")
    with pytest.raises(PlanningError, match="names module 'zz'"):
        plan_reconfiguration(s, connections=[Connection.make("zz", Face.TOP, "m1",
                                                             Face.BOTTOM)])


def test_plan_dict_round_trip_keeps_undocks():
    s = load_scenario(WALKER)
    plan = plan_reconfiguration(s, method="full")
    again = Plan.from_dict(plan.to_dict())
    assert again.undocks == plan.undocks and again.kept == plan.kept
    assert again.method == "full" and again.stages == plan.stages


def test_report_splits_a_modules_undock_from_its_later_dock():
    from smores_assembly.report import PhaseRecorder
    from smores_assembly.run_job.results import expected_connections, split_intervals
    from smores_assembly.vocabulary import Phase
    s = load_scenario(WALKER)
    plan = plan_reconfiguration(s)
    rec = PhaseRecorder()
    for t, ph in ((0.0, Phase.UNDOCK), (4.0, Phase.NAVIGATE), (8.0, Phase.UNDOCKED),
                  (30.0, Phase.NAVIGATE), (50.0, Phase.APPROACH), (57.0, Phase.DOCKED)):
        rec.sample(t, "m4", ph)
    undock, dock = split_intervals(plan, rec, "m4")
    assert [(i.phase, i.start, i.end) for i in undock] == [
        (Phase.UNDOCK, 0.0, 4.0), (Phase.NAVIGATE, 4.0, 8.0), (Phase.UNDOCKED, 8.0, 8.0)]
    assert [i.phase for i in dock] == [Phase.NAVIGATE, Phase.APPROACH, Phase.DOCKED]
    # a module the plan does not undock: everything is its dock
    rec.sample(1.0, "m1", Phase.DOCKED)
    assert split_intervals(plan, rec, "m1")[0] == []
    # the verdict expects every target edge, the kept ones included
    exp = expected_connections(plan, s)
    assert len(exp) == 6 and len(expected_connections(plan)) == 2


def test_run_refuses_start_structures_on_the_mujoco_backend_before_anything_starts(
        tmp_path, capsys):
    """The MuJoCo world has no start structures yet: `run --backend mujoco` on a scenario
    with `initial:` is refused with exit 2 before any node starts (it crashed at start-up
    with a traceback), and the world itself refuses them naming the field."""
    from argparse import Namespace

    from smores_assembly import run_job
    from smores_assembly.sim.backend import make_world
    from smores_assembly.sim.model import SimError

    out = tmp_path / "out"
    assert run_job.run(Namespace(scenario=str(WALKER), backend="mujoco", out=str(out))) == 2
    assert "--backend mujoco: start structures" in capsys.readouterr().err
    assert not out.exists()
    sc = load_scenario(WALKER)
    assert sc.initial_connections
    with pytest.raises(SimError, match="connections: start structures"):
        make_world("mujoco", sc.modules, connections=sc.initial_connections)
