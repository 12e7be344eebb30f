"""Topology algorithms against independent oracles: networkx's barycenter for the centroid,
networkx shortest paths for depths, and geometric properties for the unfolding."""
from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from hypothesis import given, settings, strategies as st

from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D, face_center, face_normal_angle, wrap_angle
from smores_assembly.scenario import Edge, ScenarioError
from smores_assembly.topology import (centroids, check_tree, depths, grid_cell,
                                      random_planar_tree, rooted_edges, stage_estimate,
                                      tree_centroid, unfold)

FACES = list(Face)


def nx_tree_to_edges(t: nx.Graph, rng: random.Random) -> tuple[list[str], list[Edge]]:
    """Nodes/edges of a networkx tree with arbitrary faces (faces do not matter here)."""
    nodes = [f"v{n}" for n in t.nodes]
    edges = []
    for u, v in t.edges:
        if rng.random() < 0.5:
            u, v = v, u
        edges.append(Edge(f"v{u}", rng.choice(FACES), f"v{v}", rng.choice(FACES)))
    rng.shuffle(edges)
    return nodes, edges


def test_centroid_matches_networkx_barycenter_on_random_trees():
    rng = random.Random(1)
    two = 0
    for i in range(3000):
        n = rng.randint(1, 40)
        t = nx.random_labeled_tree(n, seed=i)
        nodes, edges = nx_tree_to_edges(t, rng)
        rng.shuffle(nodes)
        g = nx.relabel_nodes(t, {k: f"v{k}" for k in t.nodes})
        bary = sorted(nx.barycenter(g))
        assert centroids(nodes, edges) == bary
        c = tree_centroid(nodes, edges)
        assert c in bary
        if len(bary) == 2:
            two += 1
            # Documented tie-break: fewer estimated stages, then the smaller name.
            assert c == min(bary, key=lambda b: (stage_estimate(nodes, edges, b), b))
    assert two > 100  # the tie-break was exercised


def test_centroid_tie_break_prefers_fewer_stages():
    # Path a-b-c-d has centroids b and c. From b the height is 2 either way; give b a
    # LEFT and a TOP neighbour (split root stage: 3 stages) and c two TOP/BOTTOM ones.
    e = [Edge("a", Face.LEFT, "b", Face.BOTTOM),  # b's face towards a: BOTTOM
         Edge("b", Face.RIGHT, "c", Face.BOTTOM),  # b's face towards c: RIGHT -> b split
         Edge("c", Face.TOP, "d", Face.BOTTOM)]
    nodes = ["a", "b", "c", "d"]
    assert centroids(nodes, e) == ["b", "c"]
    assert stage_estimate(nodes, e, "b") == 3
    assert stage_estimate(nodes, e, "c") == 2
    assert tree_centroid(nodes, e) == "c"
    # Equal estimates: the lexicographically smaller name.
    e2 = [Edge("a", Face.TOP, "b", Face.BOTTOM), Edge("b", Face.TOP, "c", Face.BOTTOM),
          Edge("c", Face.TOP, "d", Face.BOTTOM)]
    assert tree_centroid(nodes, e2) == "b"
    assert tree_centroid(list(reversed(nodes)), list(reversed(e2))) == "b"


def test_centroid_single_node_and_empty():
    assert tree_centroid(["x"], []) == "x"
    with pytest.raises(InputError, match="nodes"):
        tree_centroid([], [])


def test_depths_match_networkx():
    rng = random.Random(7)
    for i in range(300):
        t = nx.random_labeled_tree(rng.randint(1, 60), seed=i)
        nodes, edges = nx_tree_to_edges(t, rng)
        g = nx.relabel_nodes(t, {k: f"v{k}" for k in t.nodes})
        root = rng.choice(nodes)
        assert depths(nodes, edges, root) == nx.single_source_shortest_path_length(g, root)
        oriented = rooted_edges(nodes, edges, root)
        assert set(oriented) == set(nodes) - {root}
        for v, e in oriented.items():
            assert e.child == v and nx.shortest_path_length(g, root, e.parent) + 1 == \
                nx.shortest_path_length(g, root, v)


def test_check_tree_accepts_random_trees():
    rng = random.Random(3)
    for i in range(200):
        t = nx.random_labeled_tree(rng.randint(1, 30), seed=i)
        check_tree(*nx_tree_to_edges(t, rng))


# --- unfolding ------------------------------------------------------------------------------

poses = st.builds(Pose2D, st.floats(-5, 5), st.floats(-5, 5), st.floats(-math.pi, math.pi))


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 2**31), root_pose=poses,
       width=st.sampled_from([0.08, 0.05, 1.0]), pick=st.integers(0, 10**6))
def test_unfolding_properties(n, seed, root_pose, width, pick):
    nodes, edges = random_planar_tree(n, seed=seed, reverse_prob=0.5)
    root = nodes[pick % n]
    p = unfold(nodes, edges, root, root_pose, width)
    assert set(p) == set(nodes)
    assert p[root] == root_pose
    # Every node on a distinct cell, on the grid anchored at the root.
    cells = {grid_cell(q, root_pose, width) for q in p.values()}
    assert len(cells) == n
    for q in p.values():
        i, j = grid_cell(q, root_pose, width)
        c, s = math.cos(root_pose.yaw), math.sin(root_pose.yaw)
        assert q.x == pytest.approx(root_pose.x + width * (c * i - s * j), abs=1e-9)
        assert q.y == pytest.approx(root_pose.y + width * (s * i + c * j), abs=1e-9)
        # Headings are the root's turned by a multiple of 90 degrees.
        k = wrap_angle(q.yaw - root_pose.yaw) / (math.pi / 2)
        assert abs(k - round(k)) < 1e-9
    for e in edges:
        a, b = p[e.parent], p[e.child]
        # Adjacent nodes exactly one width apart.
        assert a.distance_to(b) == pytest.approx(width, abs=1e-9)
        # The mating faces' centres coincide and their outward normals are opposed.
        fa = face_center(a, e.parent_face, width)
        fb = face_center(b, e.child_face, width)
        assert math.dist(fa, fb) < 1e-9
        d = wrap_angle(face_normal_angle(a, e.parent_face)
                       - face_normal_angle(b, e.child_face) - math.pi)
        assert abs(d) < 1e-9


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 2**31), root_pose=poses)
def test_unfolding_is_rigid_under_rerooting(n, seed, root_pose):
    """Unfolding from another node placed where the first unfolding put it reproduces
    every pose: the reverse edge direction is handled like the forward one."""
    nodes, edges = random_planar_tree(n, seed=seed, reverse_prob=0.5)
    p = unfold(nodes, edges, nodes[0], root_pose)
    other = nodes[-1]
    q = unfold(nodes, edges, other, p[other])
    for v in nodes:
        assert q[v].x == pytest.approx(p[v].x, abs=1e-9)
        assert q[v].y == pytest.approx(p[v].y, abs=1e-9)
        assert abs(wrap_angle(q[v].yaw - p[v].yaw)) < 1e-9


def test_unfold_reverse_edge_explicit():
    # Stored as child->parent: hub's TOP mates front's BOTTOM either way.
    fwd = unfold(["hub", "front"], [Edge("hub", Face.TOP, "front", Face.BOTTOM)], "hub",
                 Pose2D(0, 0, 0), 0.08)
    rev = unfold(["hub", "front"], [Edge("front", Face.BOTTOM, "hub", Face.TOP)], "hub",
                 Pose2D(0, 0, 0), 0.08)
    assert fwd["front"].x == pytest.approx(0.08) and rev["front"].x == pytest.approx(0.08)
    assert fwd["front"].yaw == pytest.approx(0.0) and rev["front"].yaw == pytest.approx(0.0)
    # A LEFT-face child: hub's LEFT (+y) mates child's RIGHT; child keeps hub's heading.
    p = unfold(["hub", "w"], [Edge("w", Face.RIGHT, "hub", Face.LEFT)], "hub",
               Pose2D(1.0, 2.0, math.pi / 2), 0.08)
    assert (p["w"].x, p["w"].y) == pytest.approx((0.92, 2.0))
    assert p["w"].yaw == pytest.approx(math.pi / 2)


def test_unfold_collision_names_both_nodes():
    nodes = ["a", "b", "c", "d", "e"]
    edges = [Edge("a", Face.TOP, "b", Face.BOTTOM), Edge("b", Face.LEFT, "c", Face.BOTTOM),
             Edge("c", Face.LEFT, "d", Face.BOTTOM), Edge("e", Face.BOTTOM, "d", Face.LEFT)]
    with pytest.raises(ScenarioError, match=r"nodes 'a' and 'e' unfold onto the same cell"):
        unfold(nodes, edges, "a", Pose2D(0.3, -0.2, 0.7))
    # Seen from another root the same pair collides.
    with pytest.raises(ScenarioError, match=r"'a' and 'e'"):
        unfold(nodes, edges, "c", Pose2D(0, 0, 0))


def test_random_planar_tree_is_a_valid_target():
    for seed in range(20):
        nodes, edges = random_planar_tree(50, seed=seed)
        check_tree(nodes, edges)
        faces = [(e.parent, e.parent_face) for e in edges] + \
                [(e.child, e.child_face) for e in edges]
        assert len(set(faces)) == len(faces)
        unfold(nodes, edges, nodes[0], Pose2D(0, 0, 0))
