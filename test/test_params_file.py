"""Settings that are what runs: one YAML loader (duplicate keys refused) and one params-file
parser with rcl's rules, used by the ``run --params-file`` check and the launch runner.

Field cases in ``test/data/field/``; rcl itself (through rclpy's parameter overrides) is
the oracle for the parser.
"""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import installed
import pytest

from smores_assembly.launch import LaunchError, launch_file, load_launch
from smores_assembly.param_check import check_params_file
from smores_assembly.params_file import (ParamsFileError, node_matches, params_for,
                                         parse_params_file, parse_params_text)
from smores_assembly.yaml_io import DuplicateKeyError, load_yaml

REPO = Path(__file__).resolve().parents[1]
FIELD = REPO / "test" / "data" / "field"


# --- duplicate keys, everywhere --------------------------------------------------------------

def test_duplicate_key_in_a_params_file_names_file_line_and_key():
    f = FIELD / "params_duplicate_key.yaml"
    with pytest.raises(ParamsFileError) as err:
        check_params_file(f)
    msg = str(err.value)
    assert f"{f}:4: duplicate key 'approach_speed'" in msg and "first at line 3" in msg
    with pytest.raises(LaunchError, match=r"params_duplicate_key.yaml:4: duplicate key "
                                          r"'approach_speed'"):
        load_launch(launch_file("fake_assembly"), {"params_file": str(f)})


def test_duplicate_goal_in_a_navigation_instance_is_refused():
    f = FIELD / "mapf_duplicate_goal.yaml"
    r = subprocess.run([sys.executable, "-m", "smores_assembly.navigation", str(f)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2, r.stdout
    assert f"{f}:3: duplicate key 'goal' in agents[0]" in r.stderr
    assert "Traceback" not in r.stderr


def test_duplicate_key_in_a_launch_file_is_refused(tmp_path):
    f = tmp_path / "dup.launch.yaml"
    f.write_text("launch:\n- arg: {name: a, default: '1', default: '2'}\n")
    with pytest.raises(LaunchError, match=r"dup.launch.yaml:2: duplicate key 'default'"):
        load_launch(f)


@pytest.mark.parametrize("text,line,key", [
    ("a: 1\nb: 2\na: 3\n", 3, "a"),
    ("x:\n  - {p: 1, q: 2, p: 3}\n", 2, "p"),
    ("x: {y: {z: 1}}\nx: 2\n", 2, "x"),
])
def test_the_loader_refuses_duplicates_at_any_depth(text, line, key):
    with pytest.raises(DuplicateKeyError) as err:
        load_yaml(text, "f.yaml")
    assert err.value.line == line and err.value.key == key
    assert str(err.value).startswith(f"f.yaml:{line}: duplicate key {key!r}")


def test_merge_keys_are_not_duplicates():
    assert load_yaml("base: &b {x: 1, y: 2}\nd: {<<: *b, x: 5}\n")["d"] == {"x": 5, "y": 2}


# --- rcl's rules ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,value", [("params_wildcard_path.yaml", 0.01),
                                        ("params_wildcard_nested.yaml", 0.01),
                                        ("params_exponent.yaml", 0.001)])
def test_rcl_forms_are_accepted_with_the_value_the_node_gets(name, value):
    f = FIELD / name
    sections = check_params_file(f)
    got = params_for(sections, "/docking_controller")["approach_speed"]
    assert isinstance(got, float) and got == value
    # and through the launch files
    specs = load_launch(launch_file("fake_assembly"), {"params_file": str(f)})
    assert str(f) in next(s for s in specs if s.name == "docking_controller").params_files


def test_a_section_for_no_running_node_is_refused():
    f = FIELD / "params_unknown_node.yaml"
    with pytest.raises(ParamsFileError) as err:
        check_params_file(f)
    msg = str(err.value)
    assert f"{f}:1: section '/dockingcontroller' matches no node" in msg
    assert "did you mean 'docking_controller'" in msg
    with pytest.raises(LaunchError, match="'/dockingcontroller' matches no node"):
        load_launch(launch_file("fake_assembly"), {"params_file": str(f)})
    with pytest.raises(LaunchError, match="'/dockingcontroller' matches no node"):
        load_launch(launch_file("assembly"), {"params_file": str(f)})


def test_mocap_body_names_that_are_not_ros_names_are_refused_by_the_check():
    f = FIELD / "mocap_bad_names.yaml"
    with pytest.raises(ParamsFileError) as err:
        check_params_file(f)
    msg = str(err.value)
    assert "module_ids" in msg and "'Box 2 '" in msg and "a letter, then letters" in msg


@pytest.mark.parametrize("pattern,fqn,expected", [
    ("/**", "/a", True), ("/**", "/ns/a", True), ("/**/a", "/a", True),
    ("/**/a", "/x/y/a", True), ("/*/a", "/a", False), ("/*/a", "/x/a", True),
    ("/*/a", "/x/y/a", False), ("a", "/a", True), ("/a", "/ab", False),
    ("/ns/a", "/ns/a", True), ("/ns/*", "/ns/a", True), ("/**/b", "/a", False),
])
def test_node_patterns(pattern, fqn, expected):
    assert node_matches(pattern, fqn) is expected


TYPED = """\
/**:
  ros__parameters:
    exp: 1e-3
    hexa: 0x10
    octal: 010
    y: y
    yes_: Yes
    on_: on
    inf_: .inf
    inf2: inf
    nan_: nan
    dot: 5.
    quoted: "1.0"
    single: '7'
    word: hello
    null_: null
    tilde: ~
    big: 99999999999999999999
    plus: +5
    neg_hex: -0x1A
    hex_float: 0x1p3
    underscore: 1_000
    tagged: !!str 5
    arr_d: [1.0, 2.5]
    arr_s: [a, b]
    nest: {x: 1, y: {z: true}}
docking_controller:
  ros__parameters:
    v: 1
/*/docking_controller:
  ros__parameters:
    w: 3
/ns:
  docking_controller:
    ros__parameters:
      u: 4
      v: 5
"""


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.ros
@pytest.mark.parametrize("fqn", ["/docking_controller", "/ns/docking_controller",
                                 "/a/b/docking_controller", "/other"])
def test_parser_agrees_with_rcl(fqn, tmp_path, ros_context):
    """rclpy's parameter overrides (rcl_yaml_param_parser + rclpy's node matching) are the
    oracle."""
    import rclpy

    f = tmp_path / "typed.yaml"
    f.write_text(TYPED)
    ns, _, name = fqn.rpartition("/")
    node = rclpy.create_node(name, namespace=ns or "/", context=ros_context,
                             cli_args=["--ros-args", "--params-file", str(f)])
    try:
        rcl = {k: (list(p.value) if hasattr(p.value, "tolist") or isinstance(p.value, list)
                   else p.value) for k, p in node._parameter_overrides.items()}
    finally:
        node.destroy_node()
    ours = params_for(parse_params_file(f), fqn)
    assert set(ours) == set(rcl)
    for k in rcl:
        if isinstance(rcl[k], list):
            assert all(_same(a, b) for a, b in zip(ours[k], rcl[k])) and \
                len(ours[k]) == len(rcl[k]), k
        else:
            assert _same(ours[k], rcl[k]), (k, ours[k], rcl[k])


def test_list_of_mixed_types_is_refused_as_rcl_does():
    with pytest.raises(ParamsFileError, match="different types"):
        parse_params_text("/**:\n  ros__parameters:\n    m: [1, 2.5]\n", "m.yaml")


def test_run_refuses_the_field_files_before_starting_anything(tmp_path):
    for name, fragment in [("params_duplicate_key.yaml", "duplicate key 'approach_speed'"),
                           ("params_unknown_node.yaml", "matches no node"),
                           ("mocap_bad_names.yaml", "'Box 2 '")]:
        out = tmp_path / name
        r = subprocess.run([*installed.cli(), "run",
                            str(REPO / "config/scenarios/mobile_manipulator.yaml"),
                            "--params-file", str(FIELD / name), "--out", str(out)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
        assert r.returncode == 2, (name, r.stderr)
        assert fragment in r.stderr and "Traceback" not in r.stderr
        assert not (out / "nodes.log").exists()
    # a directory is named as one (it was "does not exist": fresh-user finding)
    r = subprocess.run([*installed.cli(), "run",
                        str(REPO / "config/scenarios/mobile_manipulator.yaml"),
                        "--params-file", str(tmp_path), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"--params-file: {tmp_path} is a directory, not a parameter file" in r.stderr


def test_namespaced_sections_pass_the_generic_check_but_not_run(tmp_path):
    """`/swarm1/executive` fits a stack launched with namespace:=/swarm1; `run` starts its
    nodes in the root namespace, so there it applies to nothing and is refused."""
    from smores_assembly.param_check import default_readers

    f = tmp_path / "ns.yaml"
    f.write_text("/swarm1/executive: {ros__parameters: {plan_timeout_s: 20.0}}\n")
    check_params_file(f)
    with pytest.raises(ParamsFileError, match="matches no node"):
        check_params_file(f, default_readers(f))


def test_a_launch_argument_given_twice_is_refused():
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "fake_assembly",
                        "real_time_factor:=2", "real_time_factor:=8"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2
    assert "launch argument 'real_time_factor' given twice ('2' and '8')" in r.stderr


@pytest.mark.ros
@pytest.mark.parametrize("node_name", sorted(__import__(
    "smores_assembly.params", fromlist=["NODE_SETTINGS"]).NODE_SETTINGS))
def test_shipped_config_keeps_every_field_type(node_name, ros_context):
    """Each node's settings, declared from its shipped ``config/<node>.yaml``, hold the type
    of their dataclass defaults: an integer stays an integer (``max_retries: 3`` came out as
    3.0, as rclpy's Parameter.Type.DOUBLE == 3 was read as "wants a float"), a float stays a
    float."""
    import dataclasses

    import rclpy

    from smores_assembly import params
    from smores_assembly.ros import common

    repo = Path(__file__).resolve().parents[1]
    node = rclpy.create_node(node_name, context=ros_context, **common.node_kwargs({
        "cli_args": ["--ros-args", "--params-file", str(repo / "config" / f"{node_name}.yaml")]}))
    try:
        for defaults, settings in zip(params.node_settings(node_name),
                                      params.node_settings(node_name)):
            common.declare_dataclass_params(node, settings)
            for f in dataclasses.fields(settings):
                want, got = getattr(defaults, f.name), getattr(settings, f.name)
                assert type(got) is type(want), (f.name, want, got)
                assert got == want, (f.name, want, got)  # the file holds the defaults
    finally:
        node.destroy_node()
