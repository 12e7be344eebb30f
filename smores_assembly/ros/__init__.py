"""rclpy nodes: thin adapters over the pure-Python cores.

In a node process (started as the installed ``<prefix>/lib/smores_assembly/<node>``
launcher, as ``ros2 run``/``ros2 launch``/the launch runner do, or as ``python -m
smores_assembly.ros.<node>``) this package is imported before the node module and its
imports (rclpy alone takes a good fraction of a second): SIGINT/SIGTERM are then recorded
from this moment on instead of raising in the middle of an import, and
:func:`smores_assembly.ros.common.run_node` acts on a signal that came early (exit 0, no
traceback). ``sys.argv[0]`` is ``"-m"`` exactly while Python locates the module of ``-m``
(documented in the Python command-line docs).
"""
import signal as _signal
import sys as _sys
from pathlib import Path as _Path

#: The first stop signal received before run_node() installed its handlers (None: none).
early_stop_signal = None


def _record_early_stop(signum, _frame) -> None:
    global early_stop_signal
    if early_stop_signal is None:
        early_stop_signal = signum


def _node_process() -> bool:
    argv0 = _sys.argv[0] if _sys.argv else ""
    if argv0 == "-m":
        return True
    exe = _Path(argv0)
    return exe.parent.name == "smores_assembly" and exe.parent.parent.name == "lib"


if _node_process():
    for _sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(_sig, _record_early_stop)
