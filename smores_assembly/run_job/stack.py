"""Starting and stopping the node processes of ``smores-assemble run``: the launch
arguments, the node log and the run's own SIGINT/SIGTERM handling (no rclpy here)."""
from __future__ import annotations

import re
import shutil
import signal
import threading
from pathlib import Path

from smores_assembly.errors import InputError
from smores_assembly.teardown import TEARDOWN_TIMEOUT_S

#: Log levels of node output that are also echoed to stderr.
WATCH = ("WARN", "ERROR", "FATAL")

#: The nodes of ``launch/fake_assembly.launch.yaml`` by group, as its arguments ``hardware``,
#: ``planning`` and ``control`` select them (``pipeline`` = planning + control); ``run
#: --nodes`` takes these names or node names (test_multihost checks that the launch files
#: agree).
NODE_GROUPS: dict[str, tuple[str, ...]] = {
    "hardware": ("fake_hardware", "mocap_bridge"),
    "planning": ("root_search", "task_assignment", "navigation", "executive"),
    "control": ("docking_controller",),
}
#: Every node of the fake stack, in launch order.
ALL_NODES: tuple[str, ...] = ("fake_hardware", "mocap_bridge", "root_search",
                              "task_assignment", "navigation", "docking_controller",
                              "executive")
NODE_GROUPS["pipeline"] = tuple(n for n in ALL_NODES if n in NODE_GROUPS["planning"]
                                or n in NODE_GROUPS["control"])

_NAMESPACE = re.compile(r"^/?([A-Za-z_][A-Za-z0-9_]*)(/[A-Za-z_][A-Za-z0-9_]*)*/?$")


def select_nodes(spec: str | None) -> tuple[str, ...]:
    """The nodes named by ``run --nodes``: a comma-separated list of groups
    (:data:`NODE_GROUPS`) and node names, e.g. ``"hardware"`` or ``"pipeline"`` or
    ``"planning,docking_controller"``; None or ``"all"``: every node; ``"none"``: no node
    (the whole stack runs elsewhere, e.g. started with ``python -m smores_assembly.launch
    fake_assembly``: ``run`` only sends the goal and writes the report). Returned in launch
    order.

    Raises:
        InputError: ``--nodes`` names something that is neither a group nor a node, or
            nothing at all.
    """
    if spec is None or spec.strip() == "all":
        return ALL_NODES
    if spec.strip() == "none":
        return ()
    chosen: set[str] = set()
    for item in (s.strip() for s in spec.split(",")):
        if item in NODE_GROUPS:
            chosen.update(NODE_GROUPS[item])
        elif item in ALL_NODES:
            chosen.add(item)
        else:
            raise InputError(
                f"--nodes: unknown group or node {item!r} (groups: "
                f"{', '.join(sorted(NODE_GROUPS))}, all, none; nodes: "
                f"{', '.join(ALL_NODES)})",
                field="--nodes")
    return tuple(n for n in ALL_NODES if n in chosen)


def check_namespace(text: str) -> str:
    """``text`` as an absolute ROS namespace (``swarm1`` -> ``/swarm1``; ``""`` or ``/``:
    the root, returned as ``""``).

    Raises:
        InputError: not a valid ROS namespace (tokens of letters, digits and ``_``, not
            starting with a digit, separated by ``/``).
    """
    t = text.strip()
    if t in ("", "/"):
        return ""
    if not _NAMESPACE.match(t):
        raise InputError(f"--namespace: {text!r} is not a ROS namespace (e.g. /swarm1)",
                         field="--namespace")
    return "/" + t.strip("/")


class StackExited(RuntimeError):
    """Nodes of the stack exited (non-zero status) while the run still needed them.

    Attributes:
        codes: node name -> exit status.
        log: the run's ``nodes.log`` (every line of every node).
    """

    def __init__(self, codes: dict[str, int], log: Path):
        self.codes = dict(codes)
        self.log = Path(log)
        super().__init__("node(s) exited early: "
                         + ", ".join(f"{n} (status {c})" for n, c in sorted(codes.items()))
                         + f"; see {self.log}")

    @property
    def refused(self) -> bool:
        """Every node that exited refused its configuration (status 2: bad input, the
        reason is its FATAL line)."""
        return bool(self.codes) and all(c == 2 for c in self.codes.values())

    def refusal(self) -> str:
        """One line for the user: which node refused what (its FATAL lines from the
        log) and where the whole output is."""
        reasons = []
        try:
            for line in self.log.read_text(errors="replace").splitlines():
                for n in self.codes:
                    if "[FATAL]" in line and f"[{n}]" in line:
                        reasons.append(f"{n}: {line.split(']: ', 1)[-1].strip()}")
        except OSError:
            pass
        who = ", ".join(sorted(self.codes))
        return (f"{who} refused its configuration (exit status 2"
                + (f": {'; '.join(reasons)}" if reasons else "")
                + f"); the stack was stopped, nothing assembled; every node's output: "
                f"{self.log}")


def make_out_dir(path: str | Path) -> Path:
    """Create the output directory of ``run --out`` (and its parents); an existing
    directory is fine.

    Raises:
        InputError: naming ``--out`` and the path when it cannot be created (an existing
            file, a read-only or virtual file system, no permission).
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out: {out} exists and is not a directory", field="--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out: cannot create the directory {out}: "
                         f"{exc.strerror or exc}", field="--out") from None
    return out


def check_run_flags(args) -> None:
    """Refuse flag and environment combinations of ``run`` that cannot work, before
    anything starts: ``--free-running`` with ``--real-time-factor 0`` (or, without the
    flag, the params file's fake_hardware ``real_time_factor: 0``) (no pace: the
    simulation would race the controllers on the wall clock: stale mocap, PAUSED phases,
    collisions) and a ``SMORES_EXECUTOR`` that is none of the executor kinds.

    Raises:
        InputError: naming both flags, or the variable and the allowed values.
    """
    from smores_assembly.ros.common import executor_kind  # noqa: PLC0415
    if getattr(args, "free_running", False):
        rtf, what = getattr(args, "real_time_factor", None), "--real-time-factor 0"
        path = getattr(args, "params_file", None)
        if rtf is None and path and Path(path).is_file():   # the flag wins over the file
            rtf, line = params_file_values(args).get("real_time_factor", (None, 0))
            what = f"real_time_factor: 0 of --params-file {path}:{line}"
        if rtf == 0 and not isinstance(rtf, bool):
            raise InputError(f"--free-running with {what}: free-running steps the "
                             f"simulation on the wall clock and needs a pace (> 0, default "
                             f"4); for as fast as possible drop --free-running (lockstep)",
                             field="--real-time-factor")
    try:
        executor_kind()
    except ValueError as exc:
        raise InputError(str(exc), field="SMORES_EXECUTOR") from None


#: What ``run`` writes to ``--out`` (files and, ``ros_log``, the ROS log directory): an
#: earlier run's copies are removed at the start of a run (:func:`clear_previous_outputs`).
RUN_OUTPUTS = ("report.json", "trajectories.png", "timeline.png", "nodes.log",
               "assembly.mcap", "ros_log")


def clear_previous_outputs(out: Path) -> list[str]:
    """Remove an earlier run's outputs (:data:`RUN_OUTPUTS`) from ``out``, so that a reused
    ``--out`` holds one run's files only (no recording of run 1 beside run 2's report);
    any other file is left alone. Returns the names removed, in :data:`RUN_OUTPUTS` order.

    Raises:
        InputError: naming ``--out`` and the path when one cannot be removed.
    """
    removed = []
    for name in RUN_OUTPUTS:
        path = Path(out) / name
        if not (path.exists() or path.is_symlink()):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as exc:
            raise InputError(f"--out: cannot remove the previous run's {path}: "
                             f"{exc.strerror or exc}", field="--out") from None
        removed.append(name + ("/" if name == "ros_log" else ""))
    return removed


#: run flags that set a fake_hardware parameter: (attribute of the CLI args, parameter,
#: flag). A flag given wins over the --params-file (applied after it, with one line
#: saying so); a flag not given leaves the file's value (the launch arguments' values come
#: before the file, launch/fake_assembly.launch.yaml).
RUN_FLAG_PARAMS = (("backend", "backend", "--backend"),
                   ("real_time_factor", "real_time_factor", "--real-time-factor"),
                   ("seed", "random_seed", "--seed"))


def params_file_values(args, node: str = "fake_hardware") -> dict[str, tuple[object, int]]:
    """What ``--params-file`` gives ``node`` (in the run's namespace): parameter ->
    (value, line); empty without a file."""
    path = getattr(args, "params_file", None)
    if not path:
        return {}
    from smores_assembly.params_file import parse_params_file  # noqa: PLC0415
    fqn = f"{check_namespace(getattr(args, 'namespace', None) or '')}/{node}"
    out: dict[str, tuple[object, int]] = {}
    for sec in parse_params_file(path):
        if sec.matches(fqn):
            out.update({k: (v, sec.lines[k]) for k, v in sec.params.items()})
    return out


def effective_seed(args) -> int:
    """The fake hardware's random seed of a run: ``--seed``, else the params file's
    ``random_seed``, else 0."""
    if getattr(args, "seed", None) is not None:
        return int(args.seed)
    value = params_file_values(args).get("random_seed", (0, 0))[0]
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def params_file_applied(spec, path: str) -> dict[str, object]:
    """The values of the params file ``path`` that the node of ``spec`` (a
    :class:`~smores_assembly.launch.ProcessSpec`) runs with: the file's sections for the
    node, less what a later ``--params-file`` or ``-p`` of its command line sets (rcl
    applies them in order, the last one wins; e.g. a ``--seed`` flag, or the launch's
    ``use_sim_time``), and less what the node does not declare (a ``/**`` value for
    another node's parameter). Parameter -> value, typed as rcl types it."""
    from smores_assembly.param_check import declares  # noqa: PLC0415
    from smores_assembly.params_file import params_for, parse_params_file  # noqa: PLC0415
    cmd, out = spec.cmd, {}
    for i, a in enumerate(cmd[:-1]):
        if a == "--params-file":
            values = params_for(parse_params_file(cmd[i + 1]), spec.node)
            if cmd[i + 1] == path:
                out.update({k: v for k, v in values.items()
                            if declares(spec.executable, k)})
            else:
                for name in values:
                    out.pop(name, None)
        elif a == "-p" and ":=" in cmd[i + 1]:
            out.pop(cmd[i + 1].split(":=", 1)[0], None)
    return out


def _scenario_width(args, specs: list) -> set[str]:
    """The scenario's ``module_width`` on every node's command line (the last ``-p`` wins
    over the parameter files; a node that does not declare it leaves it unused): the fake
    hardware simulates modules of the scenario's width, and a navigation and docking
    controller left at another width failed to dock them (fresh-user finding: a 0.1 m
    scenario, 3 POSE_ADJUST timeouts and 3 collisions). A ``--params-file`` value that
    differs is said, once per value and file line (with the nodes it was for: a ``/**``
    section made it seven lines); returns the names of the specs whose file value lost."""
    from smores_assembly.scenario import load_scenario  # noqa: PLC0415
    width = float(load_scenario(args.scenario).module_width)
    lost = set()
    overruled: dict[tuple, list[str]] = {}
    for spec in specs:
        spec.cmd += ["-p", f"module_width:={width}"]
        node = spec.node.rsplit("/", 1)[-1]
        value = params_file_values(args, node).get("module_width")
        if value is not None and value[0] != width:
            overruled.setdefault(tuple(value), []).append(node)
            lost.add(spec.name)
    for (value, line), nodes in overruled.items():
        from smores_assembly.run_job.console import say  # noqa: PLC0415
        say(f"the scenario's module_width {width} m wins over module_width: {value} "
            f"of {args.params_file}:{line} ({', '.join(nodes)})")
    return lost


def launch_specs(args, applied: dict[str, dict[str, object]] | None = None) -> list:
    """The processes of ``launch/fake_assembly.launch.yaml`` for the CLI ``args``
    (scenario, ``--params-file``, ``--real-time-factor``, ``--seed``, ``--free-running``,
    ``--namespace``, ``--nodes``: only those nodes are started here, the others run on
    other computers; ``--schedule``: a ``-p schedule:=`` override of task_assignment;
    ``--backend``, ``--real-time-factor``, ``--seed`` when given: ``-p`` overrides of
    fake_hardware after its parameter files (:data:`RUN_FLAG_PARAMS`);
    ``--single-process``: then one process, :mod:`smores_assembly.ros.container`, runs
    the nodes; without ``--record`` the ground truth at
    :data:`~smores_assembly.run_job.observer.REPORT_TRUTH_RATE_HZ`).

    ``applied``: when a dict, it gets the ``--params-file`` values in force per node
    started here (node name -> :func:`params_file_applied`; nodes the file leaves alone
    are left out).
    """
    from smores_assembly.launch import launch_file, load_launch
    launch_args = {"scenario": str(Path(args.scenario).resolve())}
    namespace = check_namespace(getattr(args, "namespace", None) or "")
    if namespace:
        launch_args["namespace"] = namespace
    if getattr(args, "params_file", None):
        launch_args["params_file"] = str(Path(args.params_file).resolve())
    free = bool(getattr(args, "free_running", False))
    launch_args["lockstep"] = "false" if free else "true"
    launch_args["random_seed"] = str(effective_seed(args))
    rtf = args.real_time_factor
    if rtf is None and not free:
        rtf = 0.0  # lockstep: as fast as possible (the results do not depend on the pace)
    if rtf is not None:
        launch_args["real_time_factor"] = str(float(rtf))
    if getattr(args, "backend", None):
        launch_args["backend"] = args.backend
    if not getattr(args, "record", False):
        from smores_assembly.run_job.observer import REPORT_TRUTH_RATE_HZ  # noqa: PLC0415
        launch_args["ground_truth_rate_hz"] = str(REPORT_TRUTH_RATE_HZ)
    specs = load_launch(launch_file("fake_assembly"), launch_args)
    local = select_nodes(getattr(args, "nodes", None))
    specs = [s for s in specs if s.name in local]
    schedule = getattr(args, "schedule", None)
    if schedule:
        # the last -p of a node's command line wins over its parameter files
        for spec in specs:
            if spec.node.rsplit("/", 1)[-1] == "task_assignment":
                spec.cmd += ["-p", f"schedule:={schedule}"]
    width_lost = _scenario_width(args, specs)
    from_file = params_file_values(args)
    for attr, param, flag in RUN_FLAG_PARAMS:
        value = getattr(args, attr, None)
        if value is None:
            continue
        for spec in specs:
            if spec.node.rsplit("/", 1)[-1] == "fake_hardware":
                spec.cmd += ["-p", f"{param}:={value}"]
        if param in from_file and from_file[param][0] != value:
            from smores_assembly.run_job.console import say  # noqa: PLC0415
            say(f"{flag} {value} wins over {param}: {from_file[param][0]} of "
                f"{args.params_file}:{from_file[param][1]}")
    if applied is not None and getattr(args, "params_file", None):
        path = launch_args["params_file"]
        for spec in specs:
            values = params_file_applied(spec, path)
            if spec.name in width_lost:   # the scenario's width is in force
                values.pop("module_width", None)
            if values:
                applied[spec.name] = values
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
            from smores_assembly.run_job.console import echo  # noqa: PLC0415
            echo("  " + line)

    def close(self) -> None:
        self._file.close()


#: The line a run prints at once on its first SIGINT/SIGTERM ({what}: "Ctrl-C" or
#: "SIGTERM"): cancelling the goal, stopping the nodes and writing the report take seconds
#: (~17 s on a loaded machine), during which the run was silent (fresh-user finding).
INTERRUPT_NOTICE = ("{what}: cancelling the assembly and shutting the nodes down (the "
                    "report is still written) ...")
#: the answer to a second signal while the stack shuts down (said once; the shut-down is
#: bounded, so it is not cut short: that would lose the report)
INTERRUPT_AGAIN_NOTICE = ("{what} again: still shutting down (every step is bounded, "
                          "at most {bound:.0f} s each); the report follows")


class InterruptEvent(threading.Event):
    """The event set by the run's first SIGINT/SIGTERM; ``what`` names the signal as the
    run's lines and report say it ("Ctrl-C" or "SIGTERM"; "Ctrl-C" before any came)."""

    def __init__(self):
        super().__init__()
        self.what = "Ctrl-C"


class Interrupts:
    """SIGINT/SIGTERM handlers that only set events, so that Ctrl-C cancels the goal and
    shuts the stack down in order instead of tearing the ROS context down under it.

    ``stop`` is set by a signal (the loops waiting on the stack end); ``interrupted`` tells
    that a signal came and which (:class:`InterruptEvent`; :attr:`exit_code` 130 after
    SIGINT, 143 after SIGTERM, the shell's 128 + signal number). The first signal is
    answered at once with one line, :data:`INTERRUPT_NOTICE`, printed by a thread of this
    object (a signal handler must not write to a buffered stream the main thread may be
    writing to), also while the approval prompt waits; a second one with
    :data:`INTERRUPT_AGAIN_NOTICE` (the shut-down goes on), later ones with nothing.
    An ignored SIGINT stays ignored: a process started with it ignored (a background job
    of a non-interactive shell) keeps ignoring it, the POSIX convention that
    :mod:`smores_assembly.entry` keeps too (fresh-user finding: it was caught once the
    stack was up); SIGTERM still stops the run.
    :meth:`restore` puts the previous handlers back.
    """

    def __init__(self):
        from smores_assembly.run_job.console import notice  # noqa: PLC0415
        self._notice = notice
        self.stop = threading.Event()
        self.interrupted = InterruptEvent()
        self._signum: int | None = None
        self._count = 0                  # signals received
        self.said = 0                    # notices printed (at most 2)
        self._said_cv = threading.Condition()
        self._restored = False
        self._wake = threading.Event()   # a signal came, or restore()
        self._announcer = threading.Thread(target=self._announce, daemon=True,
                                           name="interrupt-notice")
        self._announcer.start()
        self._old_int = signal.getsignal(signal.SIGINT)
        if self._old_int != signal.SIG_IGN:
            signal.signal(signal.SIGINT, self._on_signal)
        self._old_term = signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum=None, _frame=None) -> None:
        if self._signum is None:
            self._signum = signum if signum is not None else signal.SIGINT
            self.interrupted.what = "SIGTERM" if self._signum == signal.SIGTERM else "Ctrl-C"
        self._count += 1
        self.interrupted.set()
        self.stop.set()
        self._wake.set()

    def _announce(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._signum is not None and self.said < min(self._count, 2):
                what = self.interrupted.what
                self._notice(INTERRUPT_NOTICE.format(what=what) if self.said == 0 else
                             INTERRUPT_AGAIN_NOTICE.format(what=what,
                                                           bound=TEARDOWN_TIMEOUT_S))
                with self._said_cv:
                    self.said += 1
                    self._said_cv.notify_all()
            if self._restored or self.said >= 2:
                return

    @property
    def exit_code(self) -> int:
        """The run's exit status after the first signal: 128 + its number (130 Ctrl-C,
        143 SIGTERM)."""
        return 128 + int(self._signum if self._signum is not None else signal.SIGINT)

    def wait_said(self, lines: int, timeout: float) -> bool:
        """Wait at most ``timeout`` [s] until ``lines`` notices were printed; True if so."""
        with self._said_cv:
            return self._said_cv.wait_for(lambda: self.said >= lines, timeout)

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._old_int)
        signal.signal(signal.SIGTERM, self._old_term)
        self._restored = True
        self._wake.set()
        self._announcer.join(timeout=5.0)   # the notice comes before the run's last lines
