"""Every node of a launch in one process under one executor (like a component container).

``smores-assemble run --single-process`` starts this module instead of one process per
node: the same node classes, each with its own command-line parameters and remappings
(``cli_args``), spun by one single-threaded executor. It saves the per-process cost (one
Python interpreter, one DDS participant and one executor per node) and the inter-process
message transport. Launch files keep one process per node.

Run: ``python -m smores_assembly.ros.container SPEC.json`` where the JSON file (or the
argument itself) is a list of ``{"name", "module", "ros_args"}`` (see
:func:`container_spec`).
"""
from __future__ import annotations

import functools
import importlib
import json
import sys
from pathlib import Path

#: Node class of each executable of this package.
NODE_CLASSES = {
    "fake_hardware": "FakeHardwareNode",
    "mocap_bridge": "MocapBridgeNode",
    "root_search": "RootSearchNode",
    "task_assignment": "TaskAssignmentNode",
    "navigation": "NavigationNode",
    "docking_controller": "DockingControllerNode",
    "executive": "ExecutiveNode",
}
_PACKAGE = "smores_assembly"
_MODULE_PREFIX = f"{_PACKAGE}.ros."


def _executable(cmd: list[str]) -> str:
    """The node executable a command starts: ``<prefix>/lib/smores_assembly/<exec> ...`` or
    ``python -m smores_assembly.ros.<exec> ...`` ("" for anything else)."""
    if len(cmd) > 2 and cmd[1] == "-m":
        module = cmd[2]
        return module[len(_MODULE_PREFIX):] if module.startswith(_MODULE_PREFIX) else ""
    exe = Path(cmd[0]) if cmd else Path()
    return exe.name if (exe.parent.name, exe.parent.parent.name) == (_PACKAGE, "lib") else ""


def container_spec(specs: list, name: str = "container"):
    """One :class:`~smores_assembly.launch.ProcessSpec` running every node of ``specs``
    (``<prefix>/lib/smores_assembly/<exec> --ros-args ...`` commands, as the launch files
    give them, or ``python -m smores_assembly.ros.<exec> --ros-args ...``), started as the
    installed ``container`` executable.

    Raises:
        ValueError: a spec that is not one of this package's nodes.
        LaunchError: the ``container`` executable is not installed.
    """
    from smores_assembly.launch.yaml_launch import ProcessSpec, node_command  # noqa: PLC0415
    nodes, env = [], {}
    for spec in specs:
        cmd = list(spec.cmd)
        if "--ros-args" not in cmd:
            raise ValueError(f"{spec.name}: not a node of this package: {cmd}")
        ros = cmd[cmd.index("--ros-args"):]
        exe = _executable(cmd)
        if exe not in NODE_CLASSES:
            raise ValueError(f"{spec.name}: {cmd[0]} has no node class for a container")
        nodes.append({"name": spec.name, "module": exe, "ros_args": ros})
        env.update(spec.env)
    return ProcessSpec(name=name, cmd=[*node_command(_PACKAGE, "container"), json.dumps(nodes)],
                       env=env, output="screen")


def _split_log_level(ros_args: list[str]) -> tuple[list[str], list[str]]:
    """(node arguments, global ``--log-level`` arguments): the log level is a process-wide
    setting, not a node's argument."""
    node, glob, i = [], [], 0
    while i < len(ros_args):
        if ros_args[i] == "--log-level" and i + 1 < len(ros_args):
            glob += ros_args[i:i + 2]
            i += 2
            continue
        node.append(ros_args[i])
        i += 1
    return node, glob


def main(argv: list[str] | None = None) -> int:
    """Create every node of the spec list and spin them in one single-threaded executor,
    until SIGINT or SIGTERM (:func:`smores_assembly.ros.common.run_nodes`: the same clean
    shutdown as one node per process).

    Returns 0 on a clean shutdown, 2 on a bad argument or when a node refused its
    configuration (the node's name and the reason are logged).
    """
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m smores_assembly.ros.container SPEC.json|JSON", file=sys.stderr)
        return 2
    text = Path(argv[0]).read_text() if Path(argv[0]).is_file() else argv[0]
    entries = json.loads(text)
    split = [_split_log_level(e["ros_args"]) for e in entries]
    glob = next((g for _, g in split if g), [])
    from smores_assembly.ros.common import run_nodes  # noqa: PLC0415
    return run_nodes([functools.partial(_make_node, e, node_args)
                      for e, (node_args, _) in zip(entries, split)],
                     args=["--ros-args", *glob[-2:]] if glob else None,
                     profile_name="container")


def _make_node(entry: dict, node_args: list[str]):
    """The node of one spec entry; a refused configuration is a
    :class:`~smores_assembly.errors.SmoresError` naming the node."""
    from smores_assembly.errors import SmoresError  # noqa: PLC0415
    mod = importlib.import_module(_MODULE_PREFIX + entry["module"])
    cls = getattr(mod, NODE_CLASSES[entry["module"]])
    try:
        return cls(cli_args=node_args, use_global_arguments=False)
    except SmoresError:
        raise
    except ValueError as exc:
        raise SmoresError(f"{entry['name']}: {exc}") from exc


if __name__ == "__main__":
    sys.exit(main())
