"""The Gazebo path (not runnable here: no gz-sim): what can be checked without Gazebo.

The launch file resolves with the project's launch parser (ros_gz executables stood in by
stubs on a temporary ament prefix), the world and the module description parse with the
right elements, the URDF's DiffDrive matches the kinematic model, and ``gazebo_spawn``
spawns every scenario module at its pose and bridges cmd_vel, poses and /clock (checked with
stub ``create`` / ``parameter_bridge`` executables that record what they were given).
"""
from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET

import pytest

from smores_assembly.errors import InputError
from smores_assembly.launch.yaml_launch import find_pkg_share, launch_file, load_launch
from smores_assembly.ros import gazebo_spawn
from smores_assembly.scenario import load_scenario
from smores_assembly.sim.description import default_urdf_path, load_description
from smores_assembly.sim.gazebo import bridge_config, spawn_arguments

SCENARIO = find_pkg_share("smores_assembly") / "config" / "scenarios" / "rc_car.yaml"

_STUB = """#!{python}
import json, sys, os, yaml
args = sys.argv[1:]
rec = {{"exe": os.path.basename(sys.argv[0]), "args": args}}
if "--ros-args" in args:
    for a in args:
        if a.startswith("config_file:="):
            rec["config"] = yaml.safe_load(open(a.split(":=", 1)[1]))
with open({log!r}, "a") as f:
    f.write(json.dumps(rec) + "\\n")
"""


@pytest.fixture
def ros_gz_prefix(tmp_path, monkeypatch):
    """An ament prefix with stub ros_gz executables; returns the log file they append to."""
    import sys
    log = tmp_path / "calls.jsonl"
    for pkg, exe in (("ros_gz_sim", "gzserver"), ("ros_gz_sim", "create"),
                     ("ros_gz_bridge", "parameter_bridge")):
        d = tmp_path / "prefix" / "lib" / pkg
        d.mkdir(parents=True, exist_ok=True)
        f = d / exe
        f.write_text(_STUB.format(python=sys.executable, log=str(log)))
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join(
        [str(tmp_path / "prefix")] + [p for p in os.environ.get("AMENT_PREFIX_PATH", "")
                                      .split(os.pathsep) if p]))
    return log


def test_launch_file_resolves_to_gz_server_spawner_bridge_and_pipeline(ros_gz_prefix):
    specs = load_launch(launch_file("gazebo_assembly"), {"scenario": str(SCENARIO)})
    by_name = {s.name: s for s in specs}
    assert {"gz_server", "gazebo_spawn", "mocap_bridge", "root_search", "task_assignment",
            "navigation", "docking_controller", "executive"} <= set(by_name)
    assert "fake_hardware" not in by_name
    gz = by_name["gz_server"].cmd
    assert gz[0].endswith("lib/ros_gz_sim/gzserver")
    world = next(a.split(":=", 1)[1] for a in gz if a.startswith("world_sdf_file:="))
    root = ET.parse(world).getroot()
    assert root.tag == "sdf" and root.find("world").get("name") == "smores"
    spawn = by_name["gazebo_spawn"].cmd
    assert f"scenario:={SCENARIO}" in spawn and "world:=smores" in spawn
    for name in ("mocap_bridge", "executive", "navigation"):
        assert "use_sim_time:=true" in by_name[name].cmd


def test_urdf_gazebo_plugins_match_the_description():
    root = ET.parse(default_urdf_path()).getroot()
    plugins = {p.get("name"): p for p in root.iter("plugin")}
    dd = plugins["gz::sim::systems::DiffDrive"]
    d = load_description()
    assert float(dd.findtext("wheel_separation")) == pytest.approx(d.track)
    assert float(dd.findtext("wheel_radius")) == pytest.approx(d.wheel_radius)
    assert float(dd.findtext("max_velocity")) == pytest.approx(d.wheel_speed_max * d.wheel_radius)
    assert dd.findtext("left_joint") == "left_wheel_joint"
    assert "gz::sim::systems::PosePublisher" in plugins


def test_bridge_config_and_spawn_arguments():
    cfg = bridge_config(["a", "b"])
    topics = {(c["ros_topic_name"], c["direction"]) for c in cfg}
    assert topics == {("/clock", "GZ_TO_ROS"), ("/a/cmd_vel", "ROS_TO_GZ"),
                      ("/b/cmd_vel", "ROS_TO_GZ"), ("/vicon/a/a", "GZ_TO_ROS"),
                      ("/vicon/b/b", "GZ_TO_ROS")}
    with pytest.raises(InputError, match="mocap_topic_format"):
        bridge_config(["a"], "/mocap/pose")
    scen = load_scenario(SCENARIO)
    args = spawn_arguments(scen.modules, "/x/smores_ep.urdf")
    assert len(args) == len(scen.modules)
    for a, (mid, pose) in zip(args, scen.modules.items()):
        kv = dict(zip(a[::2], a[1::2]))
        assert kv["-name"] == mid and kv["-file"] == "/x/smores_ep.urdf"
        assert float(kv["-x"]) == pytest.approx(pose.x, abs=1e-6)
        assert float(kv["-Y"]) == pytest.approx(pose.yaw, abs=1e-6)
        assert float(kv["-z"]) == pytest.approx(0.04)


def test_gazebo_spawn_spawns_every_module_then_bridges(ros_gz_prefix):
    rc = gazebo_spawn.main(["--ros-args", "-p", f"scenario:={SCENARIO}"])
    assert rc == 0
    calls = [json.loads(line) for line in ros_gz_prefix.read_text().splitlines()]
    scen = load_scenario(SCENARIO)
    creates = [c for c in calls if c["exe"] == "create"]
    assert [dict(zip(c["args"][::2], c["args"][1::2]))["-name"] for c in creates] == \
        list(scen.modules)
    bridge = [c for c in calls if c["exe"] == "parameter_bridge"]
    assert len(bridge) == 1
    assert bridge[0]["config"] == bridge_config(list(scen.modules))
    assert calls[-1]["exe"] == "parameter_bridge"       # after every spawn


def test_gazebo_spawn_refuses_bad_input(capsys, monkeypatch, tmp_path):
    assert gazebo_spawn.main(["--ros-args", "-p", "scenario:=/nonexistent.yaml"]) == 2
    assert "nonexistent" in capsys.readouterr().err
    # without ros_gz (as on this machine): a one-line error naming the package
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    assert gazebo_spawn.main(["--ros-args", "-p", f"scenario:={SCENARIO}"]) == 2
    assert "ros_gz_sim" in capsys.readouterr().err
