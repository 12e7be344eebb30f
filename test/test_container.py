"""``run --single-process``: the container's spec is built from the launch file's node
commands (``<prefix>/lib/smores_assembly/<node>`` as the launch files start them, or
``python -m smores_assembly.ros.<node>``), with each node's own arguments. No ROS graph."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from smores_assembly.launch.yaml_launch import ProcessSpec
from smores_assembly.ros.container import NODE_CLASSES, container_spec

REPO = Path(__file__).resolve().parents[1]


def test_single_process_spec_holds_every_node_of_the_launch_file():
    pytest.importorskip("rclpy")
    from smores_assembly.run_job.stack import launch_specs
    args = argparse.Namespace(scenario=str(REPO / "config/scenarios/mobile_manipulator.yaml"),
                              params_file=None, free_running=False, seed=3,
                              real_time_factor=None, backend=None, namespace=None,
                              nodes=None, single_process=False)
    multi = launch_specs(args)
    args.single_process = True
    single = launch_specs(args)
    assert len(single) == 1
    entries = json.loads(single[0].cmd[-1])
    assert [e["name"] for e in entries] == [s.name for s in multi]
    assert {e["module"] for e in entries} <= set(NODE_CLASSES)
    for e, s in zip(entries, multi):
        assert e["ros_args"] == s.cmd[s.cmd.index("--ros-args"):]
        assert "random_seed:=3" in " ".join(e["ros_args"]) or e["module"] != "fake_hardware"


def test_both_command_forms_and_a_foreign_command():
    ros = ["--ros-args", "-r", "__node:=x"]
    lib = ProcessSpec(name="a", cmd=["/opt/ws/lib/smores_assembly/navigation", *ros])
    mod = ProcessSpec(name="b", cmd=["python3", "-m", "smores_assembly.ros.executive", *ros])
    entries = json.loads(container_spec([lib, mod]).cmd[-1])
    assert [(e["name"], e["module"], e["ros_args"]) for e in entries] == [
        ("a", "navigation", ros), ("b", "executive", ros)]
    for cmd in (["/opt/ws/lib/other_pkg/navigation"], ["python3", "-m", "other.ros.x"],
                ["/opt/ws/lib/smores_assembly/gazebo_spawn"]):
        with pytest.raises(ValueError, match="not a node of this package"):
            container_spec([ProcessSpec(name="c", cmd=cmd)])
