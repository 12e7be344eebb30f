"""Starting and stopping the node processes of ``smores-assemble run``: the launch
arguments, the node log and the run's own SIGINT/SIGTERM handling (no rclpy here)."""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

#: Log levels of node output that are also echoed to stderr.
WATCH = ("WARN", "ERROR", "FATAL")


def launch_specs(args) -> list:
    """The processes of ``launch/fake_assembly.launch.yaml`` for the CLI ``args``
    (scenario, ``--params-file``, ``--real-time-factor``, ``--seed``, ``--free-running``,
    ``--single-process``: then one process, :mod:`smores_assembly.ros.container`, runs
    every node)."""
    from smores_assembly.launch import launch_file, load_launch
    launch_args = {"scenario": str(Path(args.scenario).resolve())}
    if getattr(args, "params_file", None):
        launch_args["params_file"] = str(Path(args.params_file).resolve())
    free = bool(getattr(args, "free_running", False))
    launch_args["lockstep"] = "false" if free else "true"
    launch_args["random_seed"] = str(int(getattr(args, "seed", 0) or 0))
    rtf = args.real_time_factor
    if rtf is None and not free:
        rtf = 0.0  # lockstep: as fast as possible (the results do not depend on the pace)
    if rtf is not None:
        launch_args["real_time_factor"] = str(float(rtf))
    if getattr(args, "backend", None):
        launch_args["backend"] = args.backend
    specs = load_launch(launch_file("fake_assembly"), launch_args)
    if getattr(args, "single_process", False):
        from smores_assembly.ros.container import container_spec
        specs = [container_spec(specs)]
    return specs


class NodeLog:
    """``nodes.log`` in the output directory: every line of every node (thread-safe);
    WARN/ERROR/FATAL lines are echoed to stderr."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "w")
        self._lock = threading.Lock()

    def sink(self, line: str) -> None:
        """Write one line of node output (called from the launch runner's reader threads)."""
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
        if any(f"[{w}]" in line for w in WATCH):
            print("  " + line, file=sys.stderr, flush=True)

    def close(self) -> None:
        self._file.close()


class Interrupts:
    """SIGINT/SIGTERM handlers that only set events, so that Ctrl-C cancels the goal and
    shuts the stack down in order instead of tearing the ROS context down under it.

    ``stop`` is set by a signal (the loops waiting on the stack end); ``interrupted`` tells
    that a signal came (exit status 130). :meth:`restore` puts the previous handlers back.
    """

    def __init__(self):
        self.stop = threading.Event()
        self.interrupted = threading.Event()
        self._old_int = signal.signal(signal.SIGINT, self._on_signal)
        self._old_term = signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, *_) -> None:
        self.interrupted.set()
        self.stop.set()

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._old_int)
        signal.signal(signal.SIGTERM, self._old_term)
