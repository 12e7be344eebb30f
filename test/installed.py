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


def run_cli(args: list[str], timeout: float, prefix: tuple[str, ...] = (), **kwargs):
    """``subprocess.run([smores-assemble, *args], capture_output=True, text=True, ...)``,
    except that a run past ``timeout`` [s, wall] (or interrupted by any exception, e.g.
    pytest-timeout's) is stopped as a user stops it: SIGINT
    (``run`` stops its nodes, which live in their own sessions), then SIGKILL after 60 s.
    ``subprocess.run``'s own timeout kills only ``run`` and leaves its nodes running (a
    stack kept loading the machine for up to 45 min after a timed-out test). ``prefix``
    goes before the command, e.g. ``ip netns exec NS`` (which execs it: the signals reach
    ``run`` itself).

    Raises:
        subprocess.TimeoutExpired: after the stop, with the output so far.
    """
    import signal
    import subprocess

    proc = subprocess.Popen([*prefix, *cli(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as exc:   # also pytest-timeout's failure or Ctrl-C: never orphan it
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise subprocess.TimeoutExpired(proc.args, timeout, output=out,
                                            stderr=err) from None
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assembled_report(proc, out: Path, n_connections: int | None = None) -> dict:
    """The report.json a finished ``run`` wrote into ``out``, judged by the fake hardware's
    ground truth: exit 0, every target connection formed and nothing else, no collision,
    lockstep, every dock's last phase DOCKED (assertion errors name what differs).

    Args:
        proc: the ``subprocess.CompletedProcess`` of :func:`run_cli` (its output goes into
            the messages).
        n_connections: the number of target connections the report must hold, if given.
    """
    import json

    report_file = out / "report.json"
    assert report_file.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert proc.returncode == 0, (report["error"], proc.stdout[-3000:])
    assert report["success"] is True and report["missing_connections"] == []
    expected = {frozenset({f"{a['module']}.{a['child_face']}",
                           f"{a['parent_module']}.{a['parent_face']}"})
                for a in report["actions"]}
    if n_connections is not None:
        assert len(expected) == n_connections
    assert {frozenset(c) for c in report["connections"]} == expected
    assert report["collisions"] == []
    assert report["lockstep"] is True
    for a in report["actions"]:
        assert a["phases"][-1]["phase"] == "DOCKED", a["module"]
    return report
