"""Scenario loading and validation: the reference scenarios load; every invalid-input class
is refused with one message naming the field and the value."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from smores_assembly.geometry import Face, Pose2D
from smores_assembly.scenario import (Edge, Scenario, ScenarioError, load_scenario,
                                      scenario_from_dict)

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "config" / "scenarios"


def base() -> dict:
    """A valid 4-node target: hub with a front and a left neighbour, arm behind."""
    return {
        "name": "t",
        "source": "test",
        "module_width": 0.08,
        "target": {
            "nodes": ["hub", "front", "left", "arm"],
            "edges": [
                {"parent": "hub", "parent_face": "TOP", "child": "front",
                 "child_face": "BOTTOM"},
                {"parent": "hub", "parent_face": "LEFT", "child": "left",
                 "child_face": "BOTTOM"},
                {"parent": "hub", "parent_face": "BOTTOM", "child": "arm",
                 "child_face": "TOP"},
            ],
        },
        "modules": {"m0": [0.0, 0.0, 0.0], "m1": [0.3, 0.0, 0.0], "m2": [0.0, 0.3, 1.0],
                    "m3": [-0.3, -0.1, 2.0], "h0": [0.5, 0.5, 0.0]},
        "helpers": ["h0"],
    }


def refused(data, *needles: str) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    msg = str(info.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


@pytest.mark.parametrize("name", ["mobile_manipulator", "holonomic_vehicle", "rc_car"])
def test_reference_scenarios_load(name):
    s = load_scenario(SCENARIOS / f"{name}.yaml")
    assert s.name == name
    assert len(s.edges) == len(s.nodes) - 1
    assert s.module_width == pytest.approx(0.08)
    assert all(isinstance(e.parent_face, Face) for e in s.edges)
    assert len(s.modules) - len(s.helpers) >= len(s.nodes)


def test_mobile_manipulator_contents():
    s = load_scenario(SCENARIOS / "mobile_manipulator.yaml")
    assert s.nodes == ["hub", "right", "front", "left", "arm1", "arm2", "arm3"]
    assert s.edges[0] == Edge("hub", Face.RIGHT, "right", Face.BOTTOM)
    assert s.modules["m1"] == Pose2D(0.0, 0.0, 0.0)
    assert s.modules["m6"] == Pose2D(-0.172, -0.380, -2.431)
    assert s.helpers == []
    rc = load_scenario(SCENARIOS / "rc_car.yaml")
    assert rc.helpers == ["h0"] and "h0" not in rc.available_modules()


def test_valid_and_round_trip():
    s = scenario_from_dict(base())
    assert isinstance(s, Scenario)
    assert s.helpers == ["h0"]
    assert scenario_from_dict(s.to_dict()) == s


def test_optional_keys_default():
    d = base()
    del d["source"], d["module_width"], d["helpers"]
    s = scenario_from_dict(d)
    assert s.source == "" and s.module_width == 0.08 and s.helpers == []


def test_face_case_insensitive():
    d = base()
    d["target"]["edges"][0]["parent_face"] = "top"
    assert scenario_from_dict(d).edges[0].parent_face is Face.TOP


# --- every invalid-input class --------------------------------------------------------------

def test_unknown_face():
    d = base()
    d["target"]["edges"][2]["parent_face"] = "FRONT"
    refused(d, "target.edges[2].parent_face", "'FRONT'", "TOP, BOTTOM, LEFT, RIGHT")


def test_unknown_node_in_edge():
    d = base()
    d["target"]["edges"][1]["child"] = "ghost"
    refused(d, "target.edges[1].child", "unknown node 'ghost'")


def test_duplicate_node():
    d = base()
    d["target"]["nodes"].append("left")
    refused(d, "target.nodes[4]", "duplicate node 'left'")


def test_duplicate_module_in_yaml(tmp_path):
    text = """
name: dup
target:
  nodes: [a, b]
  edges:
    - {parent: a, parent_face: TOP, child: b, child_face: BOTTOM}
modules:
  m0: [0, 0, 0]
  m1: [1, 0, 0]
  m0: [2, 0, 0]
"""
    p = tmp_path / "dup.yaml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    msg = str(info.value)
    assert str(p) in msg and "modules" in msg and "duplicate module 'm0'" in msg
    assert "lines 8 and 10" in msg


def test_duplicate_key_elsewhere_in_yaml(tmp_path):
    p = tmp_path / "dup.yaml"
    p.write_text("name: a\nname: b\ntarget: {nodes: [a], edges: []}\nmodules: {m0: [0, 0, 0]}\n")
    with pytest.raises(ScenarioError, match=r"scenario: duplicate key 'name'"):
        load_scenario(p)


@pytest.mark.parametrize("case", ["cycle", "disconnected", "too_many", "double_edge"])
def test_not_a_tree(case):
    d = base()
    edges = d["target"]["edges"]
    if case == "cycle":
        # front-left also joined: hub, front, left form a cycle (and arm is cut off).
        edges[2] = {"parent": "front", "parent_face": "LEFT", "child": "left",
                    "child_face": "RIGHT"}
        refused(d, "target.edges", "not a tree", "cycle", "hub", "front", "left")
    elif case == "disconnected":
        del edges[2]
        refused(d, "target.edges", "not a tree", "2 edges for 4 nodes", "'arm'")
    elif case == "too_many":
        edges.append({"parent": "front", "parent_face": "LEFT", "child": "left",
                      "child_face": "RIGHT"})
        refused(d, "target.edges", "not a tree", "cycle")
    else:
        edges[2] = {"parent": "front", "parent_face": "TOP", "child": "hub",
                    "child_face": "RIGHT"}
        refused(d, "target.edges[2]", "'front'", "'hub'", "already joined")


def test_face_used_twice():
    d = base()
    d["target"]["edges"][1]["parent_face"] = "TOP"
    refused(d, "target.edges[1].parent_face", "face 'TOP' of node 'hub'",
            "already used by target.edges[0]")


def test_self_loop():
    d = base()
    d["target"]["edges"][1]["child"] = "hub"
    refused(d, "target.edges[1]", "'hub'", "itself")


def test_two_nodes_unfold_onto_one_cell():
    # A square spiral: a -> b (east) -> c (north) -> d (west) -> e lands on a's cell.
    d = base()
    d["target"]["nodes"] = ["a", "b", "c", "dd", "e"]
    d["target"]["edges"] = [
        {"parent": "a", "parent_face": "TOP", "child": "b", "child_face": "BOTTOM"},
        {"parent": "b", "parent_face": "LEFT", "child": "c", "child_face": "BOTTOM"},
        {"parent": "c", "parent_face": "LEFT", "child": "dd", "child_face": "BOTTOM"},
        {"parent": "dd", "parent_face": "LEFT", "child": "e", "child_face": "BOTTOM"},
    ]
    d["helpers"] = []
    refused(d, "target.edges", "nodes 'a' and 'e'", "same cell")


def test_fewer_modules_than_nodes():
    d = base()
    del d["modules"]["m3"]  # 4 modules left, one reserved as helper -> 3 for 4 nodes
    refused(d, "modules", "3 modules available for 4 nodes", "1 reserved as helpers")


def test_helpers_do_not_count_as_available():
    d = base()
    d["helpers"] = ["h0", "m3"]
    refused(d, "modules", "3 modules available for 4 nodes")


@pytest.mark.parametrize("bad, needle", [
    ([0.0, math.nan, 0.0], "modules.m2[1]: non-finite value nan"),
    ([0.0, 0.0, math.inf], "modules.m2[2]: non-finite value inf"),
    ([0.0, None, 0.0], "modules.m2[1]: missing value"),
    ([0.0, 0.0], "modules.m2: expected [x, y, yaw], got [0.0, 0.0]"),
    (None, "modules.m2: missing pose"),
    ([0.0, "a", 0.0], "modules.m2[1]: expected a number, got 'a'"),
    ([0.0, True, 0.0], "modules.m2[1]: expected a number, got True"),
])
def test_bad_pose_values(bad, needle):
    d = base()
    d["modules"]["m2"] = bad
    refused(d, needle)


def test_nan_from_yaml(tmp_path):
    p = tmp_path / "nan.yaml"
    p.write_text("name: n\ntarget: {nodes: [a], edges: []}\nmodules: {m0: [.nan, 0, 0]}\n")
    with pytest.raises(ScenarioError, match=r"modules\.m0\[0\]: non-finite value nan"):
        load_scenario(p)


@pytest.mark.parametrize("where", ["top", "target", "edge"])
def test_unknown_keys(where):
    d = base()
    if where == "top":
        d["colour"] = "red"
        refused(d, "scenario: unknown key 'colour'")
    elif where == "target":
        d["target"]["root"] = "hub"
        refused(d, "target: unknown key 'root'")
    else:
        d["target"]["edges"][0]["angle"] = 3
        refused(d, "target.edges[0]: unknown key 'angle'")


def test_missing_keys():
    d = base()
    del d["modules"]
    refused(d, "modules: missing")
    d = base()
    del d["target"]["edges"][0]["child_face"]
    refused(d, "target.edges[0].child_face: missing")


def test_unknown_helper():
    d = base()
    d["helpers"] = ["h9"]
    refused(d, "helpers[0]", "unknown helper 'h9'")


def test_bad_width_and_ids():
    d = base()
    d["module_width"] = -0.08
    refused(d, "module_width", "-0.08")
    d = base()
    d["modules"]["3m"] = [0, 0, 0]
    refused(d, "modules", "invalid module id '3m'")


def test_yaml_syntax_error_is_one_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ntarget: [\n  nodes: {a\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    msg = str(info.value)
    assert "\n" not in msg and "invalid YAML at line" in msg and str(p) in msg


def test_unreadable_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_origin_prefix():
    d = copy.deepcopy(base())
    d["helpers"] = ["zz"]
    with pytest.raises(ScenarioError, match=r"^/assembly/target: helpers\[0\]"):
        scenario_from_dict(d, origin="/assembly/target")
