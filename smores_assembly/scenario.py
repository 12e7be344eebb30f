"""Scenario files: a target tree topology plus the modules' initial planar poses (no ROS).

Format (``config/scenarios/README.md`` defines every field)::

    name: <string>
    source: <where the scenario comes from>        # optional
    module_width: 0.08                             # optional, m
    target:
      nodes: [<node>, ...]
      edges:
        - {parent: <node>, parent_face: TOP|BOTTOM|LEFT|RIGHT,
           child: <node>,  child_face:  TOP|BOTTOM|LEFT|RIGHT}
    modules:                                       # [x m, y m, yaw rad] in `world`
      <module_id>: [x, y, yaw]
    helpers: [<module_id>, ...]                    # optional, reserved helping modules
    initial:                                       # optional: structures at the start
      connections: [[<module>.<FACE>, <module>.<FACE>], ...]

Loading validates everything and refuses bad input with one :class:`ScenarioError` whose
message names the field and the offending value, e.g.
``target.edges[2].parent_face: unknown face 'FRONT' (expected one of TOP, BOTTOM, LEFT, RIGHT)``.
Refused: unknown or missing keys, unknown faces, unknown nodes in an edge, duplicate nodes or
modules (also duplicate YAML mapping keys), a target that is not a tree (wrong edge count,
cycle, disconnected), a face used twice on one node, two nodes that unfold onto one cell,
fewer available modules than nodes (reserved helpers are not available for nodes),
non-finite or missing pose values, helpers that are not modules, module bodies
(``module_width`` squares turned by their yaw) that overlap at the start (touching faces are
fine; checked for files, see :func:`scenario_from_dict`), a scenario ``name`` that is not
a plain file-name token (``^[A-Za-z0-9_][A-Za-z0-9_.-]*$``: it names output files), an
empty file, a file that is not UTF-8 text; ``initial.connections`` that name unknown
modules or faces, use a face twice, form a cycle, or disagree with the start poses (the two
modules not flush at the two faces within :data:`INITIAL_POSE_TOLERANCE_M` and
:data:`INITIAL_YAW_TOLERANCE_RAD`: the message names the pair).
Numbers may be written as YAML numbers or as strings that parse as a finite float (YAML 1.1
reads ``1e-3`` as a string); yaws are radians within [-2 pi, 2 pi] (a larger value,
usually degrees by mistake, is refused) and are wrapped to [-pi, pi); positions are metres
with |x|, |y| <= :data:`MAX_POSITION_M` (a lab floor) and ``module_width`` is in (0,
:data:`MAX_MODULE_WIDTH_M`] m (a larger value, usually millimetres by mistake, is refused
with the value in metres).
"""
from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from smores_assembly.edge import Connection, Edge
from smores_assembly.errors import InputError, ScenarioError
from smores_assembly.geometry import (MODULE_WIDTH, Face, Pose2D, child_pose, square_overlap,
                                     wrap_angle)
from smores_assembly.topology import check_tree, unfold
from smores_assembly.yaml_io import DuplicateKeyError, YamlError, load_yaml

__all__ = ["Edge", "Scenario", "ScenarioError", "check_no_overlap", "load_scenario",
           "scenario_from_dict"]

#: Keys of a scenario file (top level, ``target`` and each edge).
TOP_LEVEL_KEYS = ("name", "source", "module_width", "target", "modules", "helpers",
                  "initial")
INITIAL_KEYS = ("connections",)
#: Largest ``module_width`` accepted [m] (SMORES-EP: 0.08 m; 80 is millimetres by mistake).
MAX_MODULE_WIDTH_M = 1.0
#: Largest |x| and |y| of a start position accepted [m]: a lab floor (300 is millimetres).
MAX_POSITION_M = 50.0
#: Start poses of two connected modules may differ from flush by this much (position of the
#: second module's centre vs. its docked pose on the first one) [m] ...
INITIAL_POSE_TOLERANCE_M = 0.003
#: ... and by this much in heading [rad] (mocap noise of a measured start structure).
INITIAL_YAW_TOLERANCE_RAD = math.radians(3.0)
TARGET_KEYS = ("nodes", "edges")
EDGE_KEYS = ("parent", "parent_face", "child", "child_face")
#: Module ids become ROS topic name tokens (``/<id>/cmd_vel``) and parameter name parts.
_MODULE_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: The rule of :data:`_MODULE_ID_RE` in words (for error messages).
MODULE_ID_RULE = ("a letter, then letters, digits or '_' (it names ROS topics /<id>/... "
                  "and parameters)")


def module_id_error(mid: object) -> str | None:
    """Why ``mid`` is not a valid module id (see :data:`MODULE_ID_RULE`; nor one of the
    stack's own namespaces or node names, :func:`smores_assembly.ros.names.reserved_module_ids`),
    None when valid."""
    from smores_assembly.ros.names import reserved_module_ids   # no ROS imports
    if isinstance(mid, str) and _MODULE_ID_RE.match(mid):
        if mid in reserved_module_ids():
            return (f"invalid module id {mid!r}: reserved, the stack's own topics or nodes "
                    f"use that name (/{mid}/...); reserved: "
                    f"{', '.join(sorted(reserved_module_ids()))}")
        return None
    return f"invalid module id {mid!r}: must be {MODULE_ID_RULE}"
#: Scenario names become file names (reports, recordings): no path separators, no leading dot.
_SCENARIO_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: Overlaps of module bodies up to this depth are touching faces (numerical noise) [m].
OVERLAP_TOLERANCE = 1e-6


@dataclass
class Scenario:
    """A validated scenario.

    Attributes:
        name: scenario (target) name.
        source: where it comes from (free text).
        module_width: centre-to-centre distance of docked modules [m].
        nodes: target node names, in file order.
        edges: target tree edges.
        modules: every physical module's initial pose in ``world`` (helpers included).
        helpers: modules reserved as helping modules (never assigned to a node).
        initial_connections: connections that exist at the start (``initial.connections``;
            empty: every module starts single), normalised and sorted.
    """

    name: str
    source: str
    module_width: float
    nodes: list[str]
    edges: list[Edge]
    modules: dict[str, Pose2D]
    helpers: list[str] = field(default_factory=list)
    initial_connections: list[Connection] = field(default_factory=list)

    def available_modules(self) -> dict[str, Pose2D]:
        """Modules that may play a node (all modules except the reserved helpers)."""
        hs = set(self.helpers)
        return {m: p for m, p in self.modules.items() if m not in hs}

    def to_dict(self) -> dict[str, Any]:
        """The scenario in file form (``scenario_from_dict(s.to_dict())`` gives it back)."""
        return {"name": self.name, "source": self.source, "module_width": self.module_width,
                "target": {"nodes": list(self.nodes),
                           "edges": [e.to_dict() for e in self.edges]},
                "modules": {m: list(p.as_tuple()) for m, p in self.modules.items()},
                "helpers": list(self.helpers),
                **({"initial": {"connections": [c.to_list()
                                                for c in self.initial_connections]}}
                   if self.initial_connections else {})}


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate a scenario file.

    Raises:
        ScenarioError: unreadable or non-UTF-8 file, empty file, invalid YAML, duplicate
            keys, module bodies overlapping at the start (:func:`check_no_overlap`) or any
            other validation error of :func:`scenario_from_dict`; the one-line message
            starts with the path.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: cannot read: not UTF-8 text (invalid byte "
                            f"0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    try:
        data = load_yaml(text, str(path))
    except DuplicateKeyError as exc:
        where = exc.where or "scenario"
        what = "module" if exc.where == "modules" else "key"
        raise ScenarioError(f"{path}: {where}: duplicate {what} {exc.key!r} (lines "
                            f"{exc.first_line} and {exc.line})", field=where) from None
    except YamlError as exc:
        at = f" at line {exc.line}, column {exc.column}" if exc.line else ""
        raise ScenarioError(f"{path}: invalid YAML{at}: {exc.problem}") from None
    if data is None:
        raise ScenarioError(f"{path}: empty scenario file")
    return scenario_from_dict(data, origin=str(path), check_overlap=True)


def scenario_from_dict(data: Any, origin: str = "<dict>",
                       check_overlap: bool = False) -> Scenario:
    """Validate a scenario given as plain data (the parsed YAML) and build a :class:`Scenario`.

    Args:
        data: mapping in the scenario file format (module poses as ``[x, y, yaw]``).
        origin: where ``data`` comes from; prefixed to error messages unless ``"<dict>"``.
        check_overlap: also refuse module bodies that overlap (:func:`check_no_overlap`).
            On for scenario files (initial poses); off by default because live poses
            (e.g. ``/assembly/target`` validated with measured poses of docked modules)
            may overlap by measurement noise.

    Raises:
        ScenarioError: one message naming the field and the value (see the module docstring).
    """
    try:
        return _build(data, check_overlap)
    except ScenarioError as exc:
        if origin and origin != "<dict>":
            raise ScenarioError(f"{origin}: {exc}", field=exc.field) from None
        raise


def _fail(field_name: str, message: str) -> ScenarioError:
    return ScenarioError(f"{field_name}: {message}", field=field_name)


def _check_keys(data: Any, where: str, allowed: tuple[str, ...],
                required: tuple[str, ...]) -> None:
    if not isinstance(data, dict):
        raise _fail(where or "scenario",
                    f"expected a mapping with keys {', '.join(allowed)}, "
                    f"got {type(data).__name__} {_short(data)}")
    for key in data:
        if key not in allowed:
            raise _fail(where or "scenario",
                        f"unknown key {key!r} (expected one of {', '.join(allowed)})")
    for key in required:
        if key not in data:
            raise _fail(f"{where}.{key}" if where else key, "missing")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _yaml_typed(value: Any) -> str:
    """For a scalar that YAML typed (an unquoted ``123``, ``1.5``, ``yes``, ``null``,
    ``2024-01-01``) where a string was meant: the hint to quote it; "" for anything else
    (a string, a list, a mapping)."""
    if isinstance(value, bool):
        kind = f"the boolean {value} (an unquoted yes/no/on/off/true/false)"
    elif isinstance(value, (int, float)):
        kind = f"the number {value!r}"
    elif value is None:
        kind = "null (an empty value, ~ or null)"
    elif isinstance(value, (datetime.date, datetime.datetime)):
        kind = f"the date {value}"
    else:
        return ""
    return f"; YAML read it as {kind}, not a string: quote it in the file, e.g. \"{value}\""


def _name(value: Any, field_name: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise _fail(field_name, f"expected a {what} name (non-empty string without "
                                f"surrounding spaces), got {_short(value)}"
                                + _yaml_typed(value))
    return value


def _number(value: Any, field_name: str) -> float:
    """A finite float from a YAML number or a string that parses as one (YAML 1.1 reads
    ``1e-3`` and ``1e308`` as strings); bools are refused."""
    if value is None:
        raise _fail(field_name, "missing value")
    if isinstance(value, str):
        try:
            v = float(value)
        except ValueError:
            raise _fail(field_name, f"expected a number, got {_short(value)}") from None
    elif isinstance(value, bool):
        raise _fail(field_name, f"expected a number, got {_short(value)}; YAML read it as "
                                f"the boolean {value} (an unquoted yes/no/on/off/true/false)")
    elif not isinstance(value, (int, float)):
        raise _fail(field_name, f"expected a number, got {_short(value)}")
    else:
        v = float(value)
    if not math.isfinite(v):
        raise _fail(field_name, f"non-finite value {_short(value)}")
    return v


def _build(data: Any, check_overlap: bool) -> Scenario:
    _check_keys(data, "", TOP_LEVEL_KEYS, ("name", "target", "modules"))
    name = data["name"]
    if not isinstance(name, str):
        # an unquoted 123 is a YAML number: the pattern below matches its text
        raise _fail("name", f"expected a string, got {_short(name)}"
                            + (_yaml_typed(name) or f" ({type(name).__name__})"))
    if not _SCENARIO_NAME_RE.match(name):
        raise _fail("name", f"invalid scenario name {_short(name)} (it names output files: "
                            f"letters, digits, '_', '.', '-', matching "
                            f"{_SCENARIO_NAME_RE.pattern}; no path separators or leading "
                            f"dot)")
    source = data.get("source", "")
    if source is None:
        source = ""
    if not isinstance(source, str):
        raise _fail("source", f"expected a string, got {_short(source)}")
    width = _number(data.get("module_width", MODULE_WIDTH), "module_width")
    if width <= 0.0:
        raise _fail("module_width", f"must be > 0, got {width!r}")
    if width > MAX_MODULE_WIDTH_M:
        raise _fail("module_width", f"{width:g} m is more than {MAX_MODULE_WIDTH_M:g} m: "
                                    f"widths are in metres (given in millimetres? {width:g} "
                                    f"mm = {width / 1000:g} m)")

    target = data["target"]
    _check_keys(target, "target", TARGET_KEYS, TARGET_KEYS)
    raw_nodes = target["nodes"]
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise _fail("target.nodes", f"expected a non-empty list of node names, "
                                    f"got {_short(raw_nodes)}")
    nodes: list[str] = []
    seen_nodes: set[str] = set()
    for i, n in enumerate(raw_nodes):
        n = _name(n, f"target.nodes[{i}]", "node")
        if n in seen_nodes:
            raise _fail(f"target.nodes[{i}]", f"duplicate node {n!r}")
        seen_nodes.add(n)
        nodes.append(n)

    raw_edges = target["edges"]
    if raw_edges is None:
        raw_edges = []
    if not isinstance(raw_edges, list):
        raise _fail("target.edges", f"expected a list of edges, got {_short(raw_edges)}")
    edges: list[Edge] = []
    used_faces: dict[tuple[str, Face], str] = {}
    for i, e in enumerate(raw_edges):
        where = f"target.edges[{i}]"
        _check_keys(e, where, EDGE_KEYS, EDGE_KEYS)
        ends = {}
        for side in ("parent", "child"):
            n = _name(e[side], f"{where}.{side}", "node")
            if n not in seen_nodes:
                raise _fail(f"{where}.{side}", f"unknown node {n!r} (not in target.nodes)")
            try:
                face = Face.parse(e[f"{side}_face"], field=f"{where}.{side}_face")
            except InputError as exc:
                raise ScenarioError(str(exc), field=f"{where}.{side}_face") from None
            ends[side] = (n, face)
        if ends["parent"][0] == ends["child"][0]:
            raise _fail(where, f"edge joins node {ends['parent'][0]!r} to itself")
        for side in ("parent", "child"):
            key = ends[side]
            if key in used_faces:
                raise _fail(f"{where}.{side}_face",
                            f"face {key[1].value!r} of node {key[0]!r} is already used by "
                            f"{used_faces[key]}")
            used_faces[key] = where
        edges.append(Edge(ends["parent"][0], ends["parent"][1],
                          ends["child"][0], ends["child"][1]))

    raw_modules = data["modules"]
    if not isinstance(raw_modules, dict) or not raw_modules:
        raise _fail("modules", f"expected a mapping module_id: [x, y, yaw], "
                               f"got {_short(raw_modules)}")
    modules: dict[str, Pose2D] = {}
    for mid, pose in raw_modules.items():
        err = module_id_error(mid)
        if err:
            # an unquoted yes/on is a YAML boolean; quoted it is a valid id
            raise _fail("modules", err + (_yaml_typed(mid) if not isinstance(mid, str)
                                          and module_id_error(str(mid)) is None else ""))
        where = f"modules.{mid}"
        if pose is None:
            raise _fail(where, "missing pose (expected [x, y, yaw])")
        if not isinstance(pose, (list, tuple)) or len(pose) != 3:
            raise _fail(where, f"expected [x, y, yaw], got {_short(pose)}")
        x, y, yaw = (_number(v, f"{where}[{k}]") for k, v in enumerate(pose))
        if abs(yaw) > 2 * math.pi:
            # REP-103: radians; 90 here is nearly always meant as degrees
            raise _fail(f"{where}[2]", f"yaw {yaw:g} rad is outside [-2 pi, 2 pi]: yaws are "
                                       f"in radians (if {yaw:g} is degrees: "
                                       f"{math.radians(yaw):.4f} rad)")
        for k, v in ((0, x), (1, y)):
            if abs(v) > MAX_POSITION_M:
                # REP-103: metres; 300 here is nearly always millimetres
                raise _fail(f"{where}[{k}]", f"{'xy'[k]} {v:g} m is beyond the lab floor "
                                             f"(|x|, |y| <= {MAX_POSITION_M:g} m): positions "
                                             f"are in metres (given in millimetres? {v:g} "
                                             f"mm = {v / 1000:g} m)")
        modules[mid] = Pose2D(x, y, wrap_angle(yaw))

    raw_helpers = data.get("helpers", [])
    if raw_helpers is None:
        raw_helpers = []
    if not isinstance(raw_helpers, list):
        raise _fail("helpers", f"expected a list of module ids, got {_short(raw_helpers)}")
    helpers: list[str] = []
    for i, h in enumerate(raw_helpers):
        if not isinstance(h, str) or h not in modules:
            raise _fail(f"helpers[{i}]", f"unknown helper {h!r} (not among the modules)")
        if h in helpers:
            raise _fail(f"helpers[{i}]", f"duplicate helper {h!r}")
        helpers.append(h)

    available = len(modules) - len(helpers)
    if available < len(nodes):
        extra = f" ({len(helpers)} reserved as helpers)" if helpers else ""
        raise _fail("modules", f"{available} modules available for {len(nodes)} nodes{extra}")

    # Tree check and planar unfolding.
    check_tree(nodes, edges)
    unfold(nodes, edges, nodes[0], Pose2D(0.0, 0.0, 0.0), width)
    initial = _initial_connections(data.get("initial"), modules, width)
    if check_overlap:
        check_no_overlap(modules, width, structures=initial)
    return Scenario(name=name, source=source, module_width=width, nodes=nodes, edges=edges,
                    modules=modules, helpers=helpers, initial_connections=initial)


def _face_ref(value: Any, field_name: str, modules: dict[str, Pose2D]) -> tuple[str, Face]:
    """``"m0.TOP"`` -> ``("m0", Face.TOP)``; the module must exist."""
    if not isinstance(value, str) or value.count(".") != 1:
        raise _fail(field_name, f"expected '<module>.<FACE>', got {_short(value)}")
    mid, face_name = value.split(".")
    if mid not in modules:
        raise _fail(field_name, f"unknown module {mid!r} (not among the modules)")
    try:
        face = Face.parse(face_name, field=field_name)
    except InputError as exc:
        raise ScenarioError(str(exc), field=field_name) from None
    return mid, face


def _initial_connections(raw: Any, modules: dict[str, Pose2D], width: float
                         ) -> list[Connection]:
    """Validate ``initial: {connections: [[a.F, b.G], ...]}`` against the start poses.

    Each pair must join two different modules, each face is used once, the connections
    form a forest (no cycle), and the second module of each pair must stand at its docked
    pose on the first one (:func:`~smores_assembly.geometry.child_pose`) within
    :data:`INITIAL_POSE_TOLERANCE_M` and :data:`INITIAL_YAW_TOLERANCE_RAD`.

    Raises:
        ScenarioError: naming ``initial.connections[i]`` and the pair.
    """
    if raw is None:
        return []
    _check_keys(raw, "initial", INITIAL_KEYS, INITIAL_KEYS)
    items = raw["connections"]
    if items is None:
        return []
    if not isinstance(items, list):
        raise _fail("initial.connections", f"expected a list of [<module>.<FACE>, "
                                           f"<module>.<FACE>] pairs, got {_short(items)}")
    out: list[Connection] = []
    used: dict[tuple[str, Face], str] = {}
    component = {m: m for m in modules}

    def find(m: str) -> str:
        while component[m] != m:
            component[m] = component[component[m]]
            m = component[m]
        return m

    for i, pair in enumerate(items):
        where = f"initial.connections[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise _fail(where, f"expected [<module>.<FACE>, <module>.<FACE>], "
                               f"got {_short(pair)}")
        (a, fa), (b, fb) = (_face_ref(v, f"{where}[{k}]", modules)
                            for k, v in enumerate(pair))
        text = f"{a}.{fa.value}-{b}.{fb.value}"
        if a == b:
            raise _fail(where, f"{text} joins module {a!r} to itself")
        for end in ((a, fa), (b, fb)):
            if end in used:
                raise _fail(where, f"{text}: face {end[1].value} of module {end[0]!r} is "
                                   f"already used by {used[end]}")
            used[end] = where
        ra, rb = find(a), find(b)
        if ra == rb:
            raise _fail(where, f"{text} closes a cycle (the start structures must be "
                               f"trees)")
        component[ra] = rb
        want = child_pose(modules[a], fa, fb, width)
        got = modules[b]
        dist = math.hypot(got.x - want.x, got.y - want.y)
        dyaw = abs(wrap_angle(got.yaw - want.yaw))
        if dist > INITIAL_POSE_TOLERANCE_M or dyaw > INITIAL_YAW_TOLERANCE_RAD:
            raise _fail(where, f"{text}: the start poses disagree: {b!r} stands "
                               f"{dist * 1000:.1f} mm and {math.degrees(dyaw):.1f} deg from "
                               f"its docked pose on {a}.{fa.value} (tolerance "
                               f"{INITIAL_POSE_TOLERANCE_M * 1000:g} mm, "
                               f"{math.degrees(INITIAL_YAW_TOLERANCE_RAD):g} deg)")
        out.append(Connection.make(a, fa, b, fb))
    return sorted(out)


def check_no_overlap(modules: dict[str, Pose2D], width: float,
                     tolerance: float = OVERLAP_TOLERANCE,
                     structures: list[Connection] | None = None) -> None:
    """Refuse module bodies that overlap: each body is a ``width`` x ``width`` square [m]
    centred at the module's pose and turned by its yaw (``world`` frame).

    Candidate pairs come from a k-d tree (centres closer than ``width * sqrt(2)``, twice the
    circumradius: farther squares cannot meet), each checked exactly with
    :func:`smores_assembly.geometry.square_overlap` (separating-axis test). Overlaps up to
    ``tolerance`` [m] count as touching faces (modules docked side by side are fine).
    Two modules of one start structure (joined through ``structures``, the validated
    ``initial.connections``) may overlap by up to :data:`INITIAL_POSE_TOLERANCE_M`, the
    tolerance of their measured poses.

    Raises:
        ScenarioError: field ``modules``, naming the two modules (the first pair in file
            order) and the overlap depth in mm.
    """
    if len(modules) < 2:
        return
    ids = list(modules)
    poses = [modules[m].as_tuple() for m in ids]
    tree = cKDTree(np.array([(p[0], p[1]) for p in poses]))
    comp = {m: m for m in ids}

    def find(m: str) -> str:
        while comp[m] != m:
            comp[m] = comp[comp[m]]
            m = comp[m]
        return m

    for c in structures or ():
        comp[find(c.module_a)] = find(c.module_b)
    bad = []
    for i, j in tree.query_pairs(r=width * math.sqrt(2.0)):
        d = square_overlap(poses[i], poses[j], width)
        same = structures and find(ids[i]) == find(ids[j])
        if d > (INITIAL_POSE_TOLERANCE_M if same else tolerance):
            bad.append((min(i, j), max(i, j), d))
    if bad:
        i, j, d = min(bad)
        more = f" ({len(bad) - 1} more overlapping pairs)" if len(bad) > 1 else ""
        at = [f"{ids[k]!r} at ({poses[k][0]:.3f}, {poses[k][1]:.3f}) m" for k in (i, j)]
        raise _fail("modules", f"modules {at[0]} and {at[1]} overlap by {d * 1000:.1f} mm "
                               f"at the start (bodies are {width * 1000:g} mm squares turned "
                               f"by their yaw){more}")
