"""Scenario loading and validation: the reference scenarios load; every invalid-input class
is refused with one message naming the field and the value."""
from __future__ import annotations

import copy
import math
import re
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


def test_yes_as_coordinate_names_yaml_boolean(tmp_path):
    p = tmp_path / "yes.yaml"
    p.write_text("name: n\ntarget: {nodes: [a], edges: []}\nmodules: {m0: [0, yes, 0]}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    assert "modules.m0[1]: expected a number, got True; YAML read it as the boolean True " \
           "(an unquoted yes/no/on/off/true/false)" in str(info.value)


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


@pytest.mark.parametrize("mid", ["fake_hardware", "assembly", "lockstep", "navigation"])
def test_a_module_id_of_the_stacks_own_names_is_refused(mid):
    """A module's topics are ``<id>/cmd_vel`` ...: a module named ``fake_hardware`` passed
    the checks and ``plan``, then the fake hardware failed at start on
    ``fake_hardware/cmd_vel`` of two types (a fresh-user finding). Every first token of the
    stack's names (names.STACK_NAMES) is refused, before anything starts."""
    from smores_assembly.ros import names
    d = base()
    d["modules"][mid] = d["modules"].pop("m1")
    refused(d, "modules", f"invalid module id {mid!r}: reserved")
    own = {n.strip("/").split("/")[0] for n in names.STACK_NAMES}
    assert own <= names.reserved_module_ids()


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


# --- regressions: overlapping bodies, number strings, yaw wrap, empty/binary files, names ---

def test_overlapping_modules_refused_naming_both_and_depth():
    d = base()
    d["modules"]["m2"] = [0.0, 0.0, 0.5]  # on top of m0
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(d, check_overlap=True)
    msg = str(info.value)
    # SAT depth of two concentric squares at 0.5 rad: w/2 + w/2 (|cos| + |sin|) of 0.5 rad.
    depth_mm = 1000 * (0.04 + 0.04 * (math.cos(0.5) + math.sin(0.5)))
    assert info.value.field == "modules"
    assert "'m0'" in msg and "'m2'" in msg and f"overlap by {depth_mm:.1f} mm" in msg


def test_overlap_partial_and_rotated_against_brute_force():
    """A sampled point-in-both-squares oracle agrees with the refusal on random pairs."""
    import random
    rng = random.Random(3)
    w = 0.08

    def inside(px, py, p):
        c, s = math.cos(p[2]), math.sin(p[2])
        lx, ly = c * (px - p[0]) + s * (py - p[1]), -s * (px - p[0]) + c * (py - p[1])
        return abs(lx) < w / 2 - 1e-4 and abs(ly) < w / 2 - 1e-4

    checked = {True: 0, False: 0}
    for _ in range(120):
        pa = (0.0, 0.0, rng.uniform(-math.pi, math.pi))
        pb = (rng.uniform(-0.12, 0.12), rng.uniform(-0.12, 0.12), rng.uniform(-math.pi, math.pi))
        c, s = math.cos(pa[2]), math.sin(pa[2])
        hit = False
        for i in range(40):
            for j in range(40):
                u, v = (i + 0.5) / 40 * w - w / 2, (j + 0.5) / 40 * w - w / 2
                if inside(c * u - s * v, s * u + c * v, pb):
                    hit = True
                    break
            if hit:
                break
        d = base()
        d["modules"]["m0"] = list(pa)
        d["modules"]["m1"] = list(pb)
        try:
            scenario_from_dict(d, check_overlap=True)
            refused = False
        except ScenarioError as exc:
            assert "overlap by" in str(exc)
            refused = True
        if hit:  # a sampled point inside both: the loader must refuse
            assert refused, (pa, pb)
        checked[refused] += 1
    assert checked[True] > 10 and checked[False] > 10


def test_overlap_refused_when_loading_a_file(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: s\ntarget: {nodes: [a], edges: []}\n"
                 "modules: {m1: [0, 0, 0], m2: [0.04, 0.0, 0.0]}\n")
    with pytest.raises(ScenarioError, match=r"^.*s\.yaml: modules: modules 'm1'.*'m2'.*"
                                            r"overlap by 40\.0 mm"):
        load_scenario(p)


def test_overlap_not_checked_for_live_poses_by_default():
    d = base()
    d["modules"]["m1"] = [0.0799, 0.0, 0.0]  # docked beside m0, measured 0.1 mm too close
    assert scenario_from_dict(d).modules["m1"].x == 0.0799


def test_touching_faces_allowed_and_near_touch_refused():
    d = base()
    d["modules"]["m1"] = [0.08, 0.0, 0.0]          # flush against m0's TOP face
    d["modules"]["m3"] = [0.0, -0.08, math.pi / 2]  # flush against m0's RIGHT face, turned
    scenario_from_dict(d, check_overlap=True)
    d["modules"]["m1"] = [0.08 - 1e-4, 0.0, 0.0]    # 0.1 mm into m0
    with pytest.raises(ScenarioError, match=r"'m0'.*'m1'.*overlap by 0\.1 mm"):
        scenario_from_dict(d, check_overlap=True)


def test_overlap_check_with_1500_modules():
    d = base()
    d["modules"] = {f"m{i}": [0.12 * (i % 40), 0.12 * (i // 40),
                              math.remainder(0.3 * i, 2 * math.pi)] for i in range(1500)}
    d["helpers"] = []
    # 0.12 m grid > w sqrt(2): no overlap whatever the yaws
    assert len(scenario_from_dict(d, check_overlap=True).modules) == 1500
    d["modules"]["m1499"] = [0.12 * 17 + 0.03, 0.12 * 20, 0.0]  # into m817 (17 + 40 * 20)
    with pytest.raises(ScenarioError, match=r"'m817'.*'m1499'"):
        scenario_from_dict(d, check_overlap=True)


@pytest.mark.parametrize("text, value", [("1e-3", 1e-3), ("1e308", 1e308), ("-2.5", -2.5),
                                         ("1E+2", 100.0)])
def test_number_strings_accepted(tmp_path, text, value):
    p = tmp_path / "s.yaml"
    p.write_text("name: s\ntarget: {nodes: [a], edges: []}\n"
                 f"modules: {{m0: [{text}, 0, 0]}}\n")
    if abs(value) > 50.0:   # parsed, then refused as beyond the lab floor, naming the value
        with pytest.raises(ScenarioError, match=re.escape(f"m0[0]: x {value:g} m is beyond")):
            load_scenario(p)
        return
    sc = load_scenario(p)
    assert sc.modules["m0"].x == value


@pytest.mark.parametrize("text", ["abc", "nan", "1e999", "inf"])
def test_bad_number_strings_refused(text):
    d = base()
    d["modules"]["m1"] = [text, 0.0, 0.0]
    with pytest.raises(ScenarioError, match=r"modules\.m1\[0\]"):
        scenario_from_dict(d)


def test_bools_are_not_numbers():
    d = base()
    d["modules"]["m1"] = [True, 0.0, 0.0]
    with pytest.raises(ScenarioError, match=r"modules\.m1\[0\]: expected a number"):
        scenario_from_dict(d)


def test_yaw_is_wrapped():
    d = base()
    d["modules"]["m1"] = [0.3, 0.0, 6.0]
    d["modules"]["m2"] = [0.0, 0.3, math.pi]
    d["modules"]["m3"] = [0.3, 0.3, -2 * math.pi]
    sc = scenario_from_dict(d)
    yaw = sc.modules["m1"].yaw
    assert -math.pi <= yaw < math.pi
    assert math.cos(yaw) == pytest.approx(math.cos(6.0), abs=1e-9)
    assert math.sin(yaw) == pytest.approx(math.sin(6.0), abs=1e-9)
    assert sc.modules["m2"].yaw == pytest.approx(-math.pi)
    assert sc.modules["m3"].yaw == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("yaw", [90.0, -180.0, 1000.0, 2 * math.pi + 1e-6])
def test_a_yaw_beyond_two_pi_is_refused_as_probably_degrees(yaw):
    """Fresh-user finding: ``m0: [0, 0, 90]`` planned with yaw 116.6 deg (90 rad wrapped)."""
    d = base()
    d["modules"]["m1"] = [0.3, 0.0, yaw]
    with pytest.raises(ScenarioError, match=r"modules\.m1\[2\]: yaw .* rad is outside "
                                            r"\[-2 pi, 2 pi\]: yaws are in radians"):
        scenario_from_dict(d)


@pytest.mark.parametrize("content", ["", "\n", "# only a comment\n"])
def test_empty_file(tmp_path, content):
    p = tmp_path / "empty.yaml"
    p.write_text(content)
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    assert str(info.value) == f"{p}: empty scenario file"


def test_binary_file_names_the_file(tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: ") and "UTF-8" in msg and "\n" not in msg


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "a b", "", "-x", "x\\y"])
def test_scenario_name_must_be_a_file_name_token(name):
    d = base()
    d["name"] = name
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(d)
    assert info.value.field == "name" and "A-Za-z0-9_" in str(info.value)


@pytest.mark.parametrize("name", ["rc_car", "Task-1.v2", "0x", "_a"])
def test_scenario_name_tokens_accepted(name):
    d = base()
    d["name"] = name
    assert scenario_from_dict(d).name == name


def test_lower_case_faces_still_accepted():
    d = base()
    d["target"]["edges"][0]["parent_face"] = "top"
    assert scenario_from_dict(d).edges[0].parent_face is Face.TOP


@pytest.mark.parametrize("width,ok", [(80, False), (1.0001, False), (1.0, True),
                                      (0.08, True), (0.1, True)])
def test_a_module_width_in_millimetres_is_refused_with_the_metres(width, ok):
    """Fresh-user finding: ``module_width: 80`` (mm given as m) was taken as 80 m."""
    from smores_assembly.scenario import MAX_MODULE_WIDTH_M
    d = base()
    d["module_width"] = width
    d["modules"] = {m: [10 * x, 10 * y, yaw] for m, (x, y, yaw) in d["modules"].items()}
    if ok:
        assert scenario_from_dict(d).module_width == width <= MAX_MODULE_WIDTH_M
        return
    with pytest.raises(ScenarioError, match=r"^module_width: .* m is more than 1 m: widths "
                                            r"are in metres \(given in millimetres\? "
                                            + f"{width:g} mm = {width / 1000:g} m"):
        scenario_from_dict(d)


@pytest.mark.parametrize("k,value,ok", [(0, 300.0, False), (1, -50.5, False),
                                        (0, 50.0, True), (1, -49.0, True)])
def test_a_position_beyond_the_lab_floor_is_refused_as_probably_millimetres(k, value, ok):
    """Fresh-user finding: ``m1: [300, 0, 0]`` (mm given as m) planned a 300 m drive."""
    d = base()
    pose = [0.3, 0.0, 0.0]
    pose[k] = value
    d["modules"]["m1"] = pose
    if ok:
        m1 = scenario_from_dict(d).modules["m1"]
        assert (m1.x, m1.y)[k] == value
        return
    with pytest.raises(ScenarioError, match=rf"^modules\.m1\[{k}\]: {'xy'[k]} {value:g} m is "
                                            r"beyond the lab floor \(\|x\|, \|y\| <= 50 m\)"
                                            r": positions are in metres \(given in "
                                            rf"millimetres\? {value:g} mm = {value / 1000:g} m"):
        scenario_from_dict(d)


@pytest.mark.parametrize("text, shown", [("123", "the number 123"), ("1.5", "the number 1.5"),
                                         ("yes", "the boolean True"),
                                         ("2024-01-02", "the date 2024-01-02")])
def test_unquoted_yaml_scalar_name_says_quote_it(tmp_path, text, shown):
    # fresh-user finding: "name: 123" said "invalid scenario name 123 (... matching
    # ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ...)" though "123" matches: YAML made it a number
    p = tmp_path / "s.yaml"
    p.write_text(f"name: {text}\ntarget: {{nodes: [a], edges: []}}\nmodules: {{m0: [0, 0, 0]}}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    msg = str(info.value)
    assert info.value.field == "name"
    assert shown in msg and "quote it" in msg and "A-Za-z0-9_" not in msg
    # quoted, the same text is a valid name
    p.write_text(f"name: '{text}'\ntarget: {{nodes: [a], edges: []}}\nmodules: {{m0: [0, 0, 0]}}\n")
    assert load_scenario(p).name == text


def test_unquoted_yaml_scalar_node_and_module_id_say_quote_it(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: s\ntarget: {nodes: [a, 7], edges: []}\nmodules: {m0: [0, 0, 0]}\n")
    with pytest.raises(ScenarioError, match=r"target\.nodes\[1\].*the number 7.*quote it"):
        load_scenario(p)
    p.write_text("name: s\ntarget: {nodes: [a], edges: []}\nmodules: {on: [0, 0, 0]}\n")
    with pytest.raises(ScenarioError, match=r"the boolean True.*quote it"):
        load_scenario(p)
    # a number is no module id quoted either: no hint to quote it
    p.write_text("name: s\ntarget: {nodes: [a], edges: []}\nmodules: {5: [0, 0, 0]}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    assert "YAML read" not in str(info.value) and "invalid module id 5" in str(info.value)
