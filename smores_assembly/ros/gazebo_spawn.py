"""``gazebo_spawn``: spawn a scenario's modules in a running gz-sim and bridge their topics.

Run by ``launch/gazebo_assembly.launch.yaml`` (see :mod:`smores_assembly.sim.gazebo` for
what is spawned and bridged)::

    python -m smores_assembly.ros.gazebo_spawn --ros-args -p scenario:=FILE.yaml \
        [-p world:=smores] [-p mocap_topic_format:=/vicon/{id}/{id}]

Needs ``ros_gz_sim`` and ``ros_gz_bridge`` (a ROS install with Gazebo). It runs
``ros_gz_sim create`` once per module, then ``ros_gz_bridge parameter_bridge`` with the
generated config until it is stopped. Not run on this project's machines.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from smores_assembly.errors import SmoresError
from smores_assembly.launch.yaml_launch import node_command
from smores_assembly.scenario import load_scenario
from smores_assembly.sim.description import default_urdf_path
from smores_assembly.sim.gazebo import bridge_config, spawn_arguments


def _ros_params(argv: list[str]) -> dict[str, str]:
    """``-p name:=value`` pairs after ``--ros-args``."""
    out: dict[str, str] = {}
    if "--ros-args" not in argv:
        return out
    rest = argv[argv.index("--ros-args") + 1:]
    for flag, val in zip(rest, rest[1:]):
        if flag == "-p" and ":=" in val:
            k, v = val.split(":=", 1)
            out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    """Spawn and bridge (see the module docstring); 2 on bad input or missing ros_gz."""
    argv = sys.argv[1:] if argv is None else argv
    params = _ros_params(argv)
    try:
        scen = load_scenario(params.get("scenario", ""))
        create = node_command("ros_gz_sim", "create")
        bridge = node_command("ros_gz_bridge", "parameter_bridge")
        cfg = bridge_config(list(scen.modules),
                            params.get("mocap_topic_format", "/vicon/{id}/{id}"))
    except (SmoresError, OSError) as exc:  # ScenarioError, LaunchError, InputError
        print(f"gazebo_spawn: {exc}", file=sys.stderr)
        return 2
    world = params.get("world", "smores")
    for args in spawn_arguments(scen.modules, default_urdf_path(), world):
        subprocess.run(create + args, check=True)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "bridge.yaml"
        f.write_text(yaml.safe_dump(cfg))
        proc = subprocess.Popen(bridge + ["--ros-args", "-p", f"config_file:={f}"])
        signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
