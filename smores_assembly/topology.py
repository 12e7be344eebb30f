"""Target-tree algorithms: tree check, root search (tree centroid), depths, planar unfolding.

Source: "SMORES-EP, a Modular Robot with Parallel Self-assembly" (Liu, Yim et al.),
Sec. IV-A (root search: the tree centroid minimises the depth of the assembly tree, hence
the number of sequential docking stages) and the planar unfolding rule of
``docs/CONVENTIONS.md`` (coded once in :func:`smores_assembly.geometry.child_pose`).

No ROS imports. Nodes are names (``str``), edges are :class:`smores_assembly.edge.Edge`;
an edge may be traversed in either direction (its "parent"/"child" only name the sides).
"""
from __future__ import annotations

import math
import random
from collections import deque
from typing import Iterable, Sequence

import networkx as nx

from smores_assembly.edge import Edge
from smores_assembly.errors import InputError, ScenarioError
from smores_assembly.geometry import MODULE_WIDTH, Face, Pose2D, child_pose


def _adjacency(nodes: Sequence[str], edges: Iterable[Edge]) -> dict[str, list[Edge]]:
    adj: dict[str, list[Edge]] = {n: [] for n in nodes}
    for e in edges:
        adj[e.parent].append(e)
        adj[e.child].append(e)
    return adj


def to_graph(nodes: Sequence[str], edges: Iterable[Edge]) -> nx.Graph:
    """The target as an undirected ``networkx.Graph``; each edge carries ``edge=<Edge>``."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    for e in edges:
        g.add_edge(e.parent, e.child, edge=e)
    return g


def check_tree(nodes: Sequence[str], edges: Sequence[Edge]) -> None:
    """Check that ``(nodes, edges)`` is a tree (|E| = |V| - 1, no cycle, connected).

    Raises:
        ScenarioError: field ``target.edges``, naming the edge count, the cycle or the
            unreachable nodes.
    """
    n = len(nodes)
    seen_pairs: dict[frozenset, int] = {}
    for i, e in enumerate(edges):
        pair = frozenset((e.parent, e.child))
        if pair in seen_pairs:
            raise ScenarioError(
                f"target.edges[{i}]: not a tree: nodes {e.parent!r} and {e.child!r} are "
                f"already joined by target.edges[{seen_pairs[pair]}] (cycle)",
                field=f"target.edges[{i}]")
        seen_pairs[pair] = i
    g = to_graph(nodes, edges)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        names = [u for u, _ in cycle] + [cycle[0][0]]
        raise ScenarioError(f"target.edges: not a tree: cycle {' -> '.join(names)}",
                            field="target.edges")
    if len(edges) != n - 1 or not nx.is_connected(g):
        comps = sorted((sorted(c) for c in nx.connected_components(g)),
                       key=lambda c: (-len(c), c))
        cut = [x for c in comps[1:] for x in c]
        raise ScenarioError(
            f"target.edges: not a tree: {len(edges)} edges for {n} nodes (a tree needs "
            f"{n - 1}); nodes {cut[:10]!r}{'...' if len(cut) > 10 else ''} are not connected "
            f"to {comps[0][0]!r}", field="target.edges")


def _bfs(adj: dict[str, list[Edge]], root: str) -> tuple[list[str], dict[str, str | None]]:
    """BFS order from ``root`` and the parent of every node (``None`` for the root)."""
    order = [root]
    parent: dict[str, str | None] = {root: None}
    q = deque([root])
    while q:
        u = q.popleft()
        for e in adj[u]:
            v = e.child if e.parent == u else e.parent
            if v not in parent:
                parent[v] = u
                order.append(v)
                q.append(v)
    return order, parent


def centroids(nodes: Sequence[str], edges: Sequence[Edge]) -> list[str]:
    """All tree centroids (one or two, sorted by name), by bottom-up DP over subtree sizes.

    A centroid minimises the size of the largest component left when it is removed
    (equivalently, for trees, the sum of distances: the barycenter). O(|V|).
    Source: SMORES-EP parallel self-assembly paper, Sec. IV-A (root search).
    """
    if not nodes:
        raise InputError("nodes: empty tree has no centroid", field="nodes")
    return _centroids(nodes, _adjacency(nodes, edges))


def _centroids(nodes: Sequence[str], adj: dict[str, list[Edge]]) -> list[str]:
    """:func:`centroids` on the adjacency ``adj`` of the tree (``nodes`` not empty)."""
    order, parent = _bfs(adj, nodes[0])
    n = len(nodes)
    if len(order) != n:
        raise ScenarioError("target.edges: not a tree: graph is disconnected",
                            field="target.edges")
    size = dict.fromkeys(order, 1)
    heaviest = dict.fromkeys(order, 0)  # largest child subtree
    for v in reversed(order):  # children before parents
        p = parent[v]
        if p is not None:
            size[p] += size[v]
            if size[v] > heaviest[p]:
                heaviest[p] = size[v]
    worst = {v: max(heaviest[v], n - size[v]) for v in order}
    best = min(worst.values())
    return sorted(v for v in order if worst[v] == best)


def stage_estimate(nodes: Sequence[str], edges: Sequence[Edge], root: str) -> int:
    """Number of docking stages when rooted at ``root``, before any helper splitting.

    Height of the rooted tree, plus one when the root has both LEFT/RIGHT and TOP/BOTTOM
    neighbours (those two groups dock in separate stages, Sec. IV-C).
    """
    adj = _adjacency(nodes, edges)
    if root not in adj:
        raise InputError(f"root: unknown node {root!r}", field="root")
    return _stage_estimate(adj, root)


def _stage_estimate(adj: dict[str, list[Edge]], root: str) -> int:
    """:func:`stage_estimate` on the adjacency ``adj`` of the tree (``root`` a node): the
    root's faces from the edges at the root, the same set as from every edge."""
    height = max(_depths(adj, root).values())
    root_faces = {e.other(root)[1] for e in adj[root]}
    split = any(f.is_wheel for f in root_faces) and any(not f.is_wheel for f in root_faces)
    return height + (1 if split else 0)


def tree_centroid(nodes: Sequence[str], edges: Sequence[Edge]) -> str:
    """Root node of the assembly: the tree centroid (paper Sec. IV-A), O(|V|).

    A tree has one or two (adjacent) centroids. Deterministic tie-break between two:
    the one giving fewer docking stages (:func:`stage_estimate`: tree height from it, +1 if
    its LEFT/RIGHT and TOP/BOTTOM docks must be split), then the lexicographically smaller
    name.

    Raises:
        InputError: empty node list; ScenarioError if the graph is disconnected.
    """
    if not nodes:
        raise InputError("nodes: empty tree has no centroid", field="nodes")
    adj = _adjacency(nodes, edges)  # one adjacency for the centroids and their estimates
    cs = _centroids(nodes, adj)
    if len(cs) == 1:
        return cs[0]
    return min(cs, key=lambda c: (_stage_estimate(adj, c), c))


def root_candidates(nodes: Sequence[str], edges: Sequence[Edge]) -> list[str]:
    """Every node in the order a root is chosen: the tree centroid (:func:`tree_centroid`)
    first, then the other nodes by :func:`stage_estimate` (fewest docking stages first),
    then name. O(|V| log |V|): a node's height is its eccentricity, the larger of its
    distances to the two ends of a diameter (three BFS instead of one per node).

    Raises:
        InputError: empty node list; ScenarioError if the graph is disconnected.
    """
    first = tree_centroid(nodes, edges)
    adj = _adjacency(nodes, edges)  # one adjacency for the three BFS
    d0 = _depths(adj, nodes[0])
    a = max(nodes, key=d0.__getitem__)
    da = _depths(adj, a)
    b = max(nodes, key=da.__getitem__)
    db = _depths(adj, b)
    wheel: dict[str, set[bool]] = {v: set() for v in nodes}
    for e in edges:
        wheel[e.parent].add(e.parent_face.is_wheel)
        wheel[e.child].add(e.child_face.is_wheel)
    estimate = {v: max(da[v], db[v]) + (1 if len(wheel[v]) == 2 else 0) for v in nodes}
    return [first] + sorted((v for v in nodes if v != first),
                            key=lambda v: (estimate[v], v))


def depths(nodes: Sequence[str], edges: Sequence[Edge], root: str) -> dict[str, int]:
    """Hop distance of every node from ``root`` (root: 0). O(|V|).

    Raises:
        InputError: ``root`` is not a node.
    """
    adj = _adjacency(nodes, edges)
    if root not in adj:
        raise InputError(f"root: unknown node {root!r}", field="root")
    return _depths(adj, root)


def _depths(adj: dict[str, list[Edge]], root: str) -> dict[str, int]:
    """:func:`depths` on the adjacency ``adj`` of the tree (``root`` a node)."""
    order, parent = _bfs(adj, root)
    d = {root: 0}
    for v in order[1:]:
        d[v] = d[parent[v]] + 1  # type: ignore[index]  # only the root has no parent
    return d


def rooted_edges(nodes: Sequence[str], edges: Sequence[Edge], root: str) -> dict[str, Edge]:
    """For every non-root node, its edge oriented away from ``root``, in BFS order.

    The returned ``Edge`` has ``parent`` = the neighbour nearer the root, with the faces
    swapped as needed so that ``parent_face`` belongs to ``parent``.
    """
    adj = _adjacency(nodes, edges)
    if root not in adj:
        raise InputError(f"root: unknown node {root!r}", field="root")
    out: dict[str, Edge] = {}
    seen = {root}
    q = deque([root])
    while q:
        u = q.popleft()
        for e in adj[u]:
            v, fu, fv = e.other(u)
            if v not in seen:
                seen.add(v)
                out[v] = e if e.parent == u else Edge(u, fu, v, fv)
                q.append(v)
    return out


def grid_cell(pose: Pose2D, anchor: Pose2D, width: float = MODULE_WIDTH) -> tuple[int, int]:
    """Integer cell of ``pose`` on the unfolding grid anchored at ``anchor`` (anchor: (0,0)).

    Cells are ``width`` apart along the anchor's x and y axes; positions are rounded to the
    nearest cell (the unfolding only produces exact multiples, up to float error).
    """
    dx, dy = pose.x - anchor.x, pose.y - anchor.y
    c, s = math.cos(anchor.yaw), math.sin(anchor.yaw)
    return (round((c * dx + s * dy) / width), round((-s * dx + c * dy) / width))


def unfold(nodes: Sequence[str], edges: Sequence[Edge], root_node: str, root_pose: Pose2D,
           width: float = MODULE_WIDTH) -> dict[str, Pose2D]:
    """Planar unfolding of the tree around ``root_node`` placed at ``root_pose``.

    Breadth-first from the root, each node is placed with
    :func:`smores_assembly.geometry.child_pose` from its already placed neighbour (edges are
    traversed in whichever direction reaches the new node; the rule is symmetric). O(|V|).
    Source: ``docs/CONVENTIONS.md`` (unfolding rule); paper Sec. IV-B (goal poses of the
    assignment).

    Returns:
        Pose in ``world`` of every node, in BFS order from the root.

    Raises:
        ScenarioError: two nodes land on the same grid cell (the message names both and the
            cell in the root frame, in units of ``width``); the target is not planar-
            assemblable.
        InputError: ``root_node`` is not a node.
    """
    adj = _adjacency(nodes, edges)
    if root_node not in adj:
        raise InputError(f"root: unknown node {root_node!r}", field="root")
    poses = {root_node: root_pose}
    cells = {(0, 0): root_node}
    q = deque([root_node])
    while q:
        u = q.popleft()
        pu = poses[u]
        for e in adj[u]:
            v, fu, fv = e.other(u)
            if v in poses:
                continue
            pv = child_pose(pu, fu, fv, width)
            cell = grid_cell(pv, root_pose, width)
            if cell in cells:
                a, b = sorted((cells[cell], v))
                raise ScenarioError(
                    f"target.edges: nodes {a!r} and {b!r} unfold onto the same cell "
                    f"{cell} (in module widths from {root_node!r}): the target is not "
                    f"planar-assemblable", field="target.edges")
            cells[cell] = v
            poses[v] = pv
            q.append(v)
    return poses


def random_planar_tree(n: int, seed: int | None = None, reverse_prob: float = 0.3,
                       prefix: str = "n") -> tuple[list[str], list[Edge]]:
    """A random tree of ``n`` nodes that unfolds without collisions (for tests, benchmarks).

    Grown on the grid: repeatedly pick a random placed node and a free face of it whose
    neighbouring cell is empty, attach a new node there with a random face. Each edge is
    stored reversed (child first) with probability ``reverse_prob``. Expected O(n).
    """
    if n < 1:
        raise InputError(f"n: need at least 1 node, got {n}", field="n")
    rng = random.Random(seed)
    faces = list(Face)
    nodes = [f"{prefix}0"]
    origin = Pose2D(0.0, 0.0, 0.0)
    poses = {nodes[0]: origin}
    occupied = {(0, 0)}
    used: set[tuple[str, Face]] = set()
    frontier = [(nodes[0], f) for f in faces]
    edges: list[Edge] = []
    while len(nodes) < n:
        if not frontier:  # cannot happen on an infinite grid; keep the loop total
            raise RuntimeError("random_planar_tree: no free face left")
        i = rng.randrange(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        u, fu = frontier.pop()
        if (u, fu) in used:
            continue
        fv = rng.choice(faces)
        pv = child_pose(poses[u], fu, fv, 1.0)
        cell = grid_cell(pv, origin, 1.0)
        if cell in occupied:
            continue
        v = f"{prefix}{len(nodes)}"
        nodes.append(v)
        poses[v] = pv
        occupied.add(cell)
        used.add((u, fu))
        used.add((v, fv))
        frontier.extend((v, f) for f in faces if f != fv)
        if rng.random() < reverse_prob:
            edges.append(Edge(v, fv, u, fu))
        else:
            edges.append(Edge(u, fu, v, fv))
    return nodes, edges


def comb_tree(teeth: int, length: int, prefix: str = "n") -> tuple[list[str], list[Edge]]:
    """A comb of ``teeth * length`` nodes (for tests and benchmarks; issue 16's 10 x 10).

    The spine is the first node of every tooth, chained TOP -> BOTTOM along the root's x
    axis; each tooth continues from its spine node's LEFT face (BOTTOM onto it) and then
    TOP -> BOTTOM along +y, ``length`` nodes per tooth. Teeth stand side by side, so the
    target fills a ``teeth x length`` block of cells. Node ``f"{prefix}{i}_{j}"`` is node j
    of tooth i; the spine is ``j == 0``.

    Raises:
        InputError: ``teeth`` or ``length`` < 1.
    """
    if teeth < 1 or length < 1:
        raise InputError(f"teeth, length: need >= 1, got {teeth}, {length}", field="teeth")
    name = [[f"{prefix}{i}_{j}" for j in range(length)] for i in range(teeth)]
    nodes = [v for tooth in name for v in tooth]
    edges = [Edge(name[i][0], Face.TOP, name[i + 1][0], Face.BOTTOM)
             for i in range(teeth - 1)]
    for i in range(teeth):
        if length > 1:
            edges.append(Edge(name[i][0], Face.LEFT, name[i][1], Face.BOTTOM))
        edges.extend(Edge(name[i][j], Face.TOP, name[i][j + 1], Face.BOTTOM)
                     for j in range(1, length - 1))
    return nodes, edges
