"""The installed executables of smores_assembly, as the tests start them (imported as
``installed``).

Tests start the same executables a user does: ``bin/smores-assemble`` and the nodes'
``lib/smores_assembly/<node>`` (what ``ros2 run``/``ros2 launch`` and the launch runner
start), never ``python -m`` from the checkout's root, whose ``smores_assembly`` has no
generated interfaces.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = "smores_assembly"


def _prefixes() -> list[Path]:
    paths = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [Path(sys.prefix)] + [p for p in paths if p != Path(sys.prefix)]


def cli() -> list[str]:
    """``[<prefix>/bin/smores-assemble]``; fails the test when it is not installed."""
    for prefix in _prefixes():
        exe = prefix / "bin" / "smores-assemble"
        if exe.is_file() and os.access(exe, os.X_OK):
            return [str(exe)]
    raise AssertionError(f"smores-assemble not installed in {_prefixes()}: run `make setup`")


def node(name: str) -> list[str]:
    """``[<prefix>/lib/smores_assembly/<name>]``, the node executable ``name``."""
    from smores_assembly.launch.yaml_launch import node_command

    return node_command(PACKAGE, name)
