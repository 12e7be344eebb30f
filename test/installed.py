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


def run_cli(args: list[str], timeout: float, **kwargs):
    """``subprocess.run([smores-assemble, *args], capture_output=True, text=True, ...)``,
    except that a run past ``timeout`` [s, wall] is stopped as a user stops it: SIGINT
    (``run`` stops its nodes, which live in their own sessions), then SIGKILL after 60 s.
    ``subprocess.run``'s own timeout kills only ``run`` and leaves its nodes running (a
    stack kept loading the machine for up to 45 min after a timed-out test).

    Raises:
        subprocess.TimeoutExpired: after the stop, with the output so far.
    """
    import signal
    import subprocess

    proc = subprocess.Popen([*cli(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
