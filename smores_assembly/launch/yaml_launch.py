"""A small runner for the subset of ROS 2's YAML launch format that this package uses.

``ros2 launch`` (the ``launch``/``launch_ros`` packages) is not installable from PyPI, so the
project brings its own runner for its own launch files. The files stay plain ROS 2 YAML
launch files: on a ROS install ``ros2 launch smores_assembly fake_assembly.launch.yaml``
runs the very same files.

Supported (anything else is refused with a clear :class:`LaunchError`):

* top level ``launch: [action, ...]``
* ``arg: {name, default?, description?}`` — values from the caller override defaults
* ``let: {name, value}``
* ``set_env: {name, value}``
* ``include: {file, arg: [{name, value}, ...]}`` (YAML launch files only)
* ``group: {if?, unless?, launch: [...]}`` or ``group: [...]`` — scoping of args/let
* ``node: {pkg, exec, name?, namespace?, output?, param: [{from} | {name, value}],
  remap: [{from, to}], args?, ros_args?, if?, unless?}``
* substitutions ``$(var NAME)``, ``$(env NAME [DEFAULT])``, ``$(find-pkg-share PKG)``,
  ``$(find-pkg-prefix PKG)``, nested inside strings.

:func:`load_launch` resolves a file into a list of :class:`ProcessSpec` (pure; no process is
started); :class:`LaunchRunner` starts them, one process per node, prefixes their output
and shuts them all down cleanly (SIGINT, then SIGTERM, then SIGKILL).
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import yaml

from smores_assembly.errors import InputError
from smores_assembly.yaml_io import YamlError, read_yaml_file

PACKAGE = "smores_assembly"
_SUBST = re.compile(r"\$\(([a-z-]+)((?:\s+[^()\s]+)*)\s*\)")


class LaunchError(InputError):
    """A launch file uses something this runner does not support, or is malformed."""


@dataclass
class ProcessSpec:
    """One process to start: a node (``cmd`` = the full command line)."""

    name: str
    cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)
    output: str = "screen"
    #: fully qualified node name (``/ns/name``), executable, parameter files in order
    node: str = ""
    executable: str = ""
    params_files: list[str] = field(default_factory=list)


def _prefixes() -> list[Path]:
    paths = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    if Path(sys.prefix) not in paths:
        paths.append(Path(sys.prefix))
    return paths


def _source_root() -> Path | None:
    """The checkout this module was imported from, when it is one (has package.xml)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "package.xml").is_file() and (root / "launch").is_dir() else None


def find_pkg_prefix(pkg: str) -> Path:
    """Install prefix of ``pkg`` from the ament index (AMENT_PREFIX_PATH, then this venv)."""
    for prefix in _prefixes():
        if (prefix / "share" / "ament_index" / "resource_index" / "packages" / pkg).exists():
            return prefix
    raise LaunchError(f"find-pkg-prefix: package {pkg!r} not found in the ament index "
                      f"(searched {', '.join(map(str, _prefixes()))})")


def find_pkg_share(pkg: str) -> Path:
    """Share directory of ``pkg``. For this package run from a checkout: the checkout."""
    root = _source_root() if pkg == PACKAGE else None
    if root is not None:
        return root
    return find_pkg_prefix(pkg) / "share" / pkg


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: environment variable with the launch runner's pid, given to this package's nodes: a
#: node whose launcher is gone (killed, or crashed before stopping it) stops itself
#: (``smores_assembly.ros.common.launcher_gone``) instead of running on, orphaned
LAUNCHER_PID_ENV = "SMORES_LAUNCHER_PID"


def _is_package_node(cmd: list[str]) -> bool:
    """True for this package's nodes (``<prefix>/lib/smores_assembly/<node>`` or
    ``python -m smores_assembly.ros.<node>``), whose run_node() handles blocked signals."""
    if len(cmd) > 2 and cmd[1] == "-m" and cmd[2].startswith(f"{PACKAGE}.ros."):
        return True
    exe = Path(cmd[0]) if cmd else Path()
    return exe.parent.name == PACKAGE and exe.parent.parent.name == "lib"


def node_command(pkg: str, executable: str) -> list[str]:
    """Command that starts ``executable`` of ``pkg``: ``<prefix>/lib/<pkg>/<executable>``.

    The same installed executable that ``ros2 run``/``ros2 launch`` start (for this package:
    the launchers generated from setup.py's entry points). Prefixes are searched as for
    :func:`find_pkg_prefix`. Raises :class:`LaunchError` when no prefix has it.
    """
    for prefix in _prefixes():
        exe = prefix / "lib" / pkg / executable
        if exe.is_file() and os.access(exe, os.X_OK):
            return [str(exe)]
    raise LaunchError(f"node: executable {executable!r} of package {pkg!r} not found in "
                      f"lib/{pkg}/ of {', '.join(map(str, _prefixes()))}")


class _Scope:
    def __init__(self, values: dict[str, str], env: dict[str, str]):
        self.values = values
        self.env = env

    def child(self) -> "_Scope":
        return _Scope(dict(self.values), dict(self.env))


def _substitute(text, scope: _Scope, where: str):
    if not isinstance(text, str):
        return text

    def repl(m: re.Match) -> str:
        kind, args = m.group(1), m.group(2).split()
        if kind == "var":
            if len(args) != 1:
                raise LaunchError(f"{where}: $(var) takes one name")
            if args[0] not in scope.values:
                raise LaunchError(f"{where}: launch argument {args[0]!r} is not set")
            return str(scope.values[args[0]])
        if kind == "env":
            if not args:
                raise LaunchError(f"{where}: $(env) needs a name")
            val = scope.env.get(args[0], os.environ.get(args[0]))
            if val is None:
                if len(args) < 2:
                    raise LaunchError(f"{where}: environment variable {args[0]!r} is not set")
                val = " ".join(args[1:])
            return val
        if kind == "find-pkg-share":
            return str(find_pkg_share(args[0]))
        if kind == "find-pkg-prefix":
            return str(find_pkg_prefix(args[0]))
        raise LaunchError(f"{where}: unsupported substitution $({kind} ...)")

    prev = None
    while prev != text:  # innermost first, so nested substitutions resolve
        prev, text = text, _SUBST.sub(repl, text)
    return text


def _truthy(value, where: str) -> bool:
    v = str(value).strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off", ""):
        return False
    raise LaunchError(f"{where}: condition {value!r} is neither true nor false")


def _check_keys(d: dict, allowed: Iterable[str], where: str) -> None:
    extra = set(d) - set(allowed)
    if extra:
        raise LaunchError(f"{where}: unsupported key(s) {sorted(extra)}")


def _param_value(value) -> str:
    """Render a parameter value for ``-p name:=value`` (YAML, so types survive)."""
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def _load_actions(path: Path) -> list:
    try:
        data = read_yaml_file(path)
    except YamlError as exc:
        raise LaunchError(f"cannot read launch file: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("launch"), list):
        raise LaunchError(f"{path}: expected a top-level 'launch:' list")
    return data["launch"]


def _walk(actions: list, scope: _Scope, out: list[ProcessSpec], where: str,
          arguments: dict[str, str]) -> None:
    for i, action in enumerate(actions):
        at = f"{where}[{i}]"
        if not isinstance(action, dict) or len(action) != 1:
            raise LaunchError(f"{at}: each action is a one-key mapping")
        (kind, body), = action.items()
        if kind == "arg":
            _check_keys(body, ("name", "default", "description"), at)
            name = body["name"]
            if name in arguments:
                scope.values[name] = str(arguments[name])
            elif "default" in body:
                scope.values.setdefault(name, str(_substitute(body["default"], scope, at)))
            elif name not in scope.values:
                raise LaunchError(f"{at}: launch argument {name!r} is required")
        elif kind == "let":
            _check_keys(body, ("name", "value"), at)
            scope.values[body["name"]] = str(_substitute(body["value"], scope, at))
        elif kind == "set_env":
            _check_keys(body, ("name", "value"), at)
            scope.env[body["name"]] = str(_substitute(body["value"], scope, at))
        elif kind == "group":
            items = body
            if isinstance(body, dict):
                _check_keys(body, ("if", "unless", "launch", "scoped"), at)
                if not _condition(body, scope, at):
                    continue
                items = body.get("launch", [])
            _walk(items, scope.child(), out, at, {})
        elif kind == "include":
            _check_keys(body, ("file", "arg", "if", "unless"), at)
            if not _condition(body, scope, at):
                continue
            file = Path(_substitute(body["file"], scope, at))
            if not file.name.endswith((".yaml", ".yml")):
                raise LaunchError(f"{at}: only YAML launch files can be included ({file})")
            inner = _Scope({}, dict(scope.env))
            args = {a["name"]: _substitute(a["value"], scope, at) for a in body.get("arg", [])}
            _walk(_load_actions(file), inner, out, str(file), args)
        elif kind == "node":
            _check_keys(body, ("pkg", "exec", "name", "namespace", "output", "param", "remap",
                               "args", "ros_args", "if", "unless"), at)
            if not _condition(body, scope, at):
                continue
            out.append(_node_spec(body, scope, at))
        else:
            raise LaunchError(f"{at}: unsupported launch action {kind!r}")


def _condition(body: dict, scope: _Scope, at: str) -> bool:
    if "if" in body and not _truthy(_substitute(body["if"], scope, at), at):
        return False
    if "unless" in body and _truthy(_substitute(body["unless"], scope, at), at):
        return False
    return True


def _node_spec(body: dict, scope: _Scope, at: str) -> ProcessSpec:
    sub = lambda v: _substitute(v, scope, at)  # noqa: E731
    pkg, exe = sub(body["pkg"]), sub(body["exec"])
    cmd = node_command(pkg, exe)
    if "args" in body:
        cmd += shlex.split(sub(body["args"]))
    ros = ["--ros-args"]
    name = sub(body.get("name", exe))
    ros += ["-r", f"__node:={name}"]
    ns = str(sub(body.get("namespace", ""))).strip()
    if ns.strip("/"):  # as launch_ros: relative namespaces are made absolute, "" is the root
        ns = "/" + ns.strip("/")
        ros += ["-r", f"__ns:={ns}"]
    else:
        ns = ""
    files = []
    for j, p in enumerate(body.get("param", [])):
        if "from" in p:
            f = Path(sub(p["from"]))
            if not f.is_file():
                raise LaunchError(f"{at}.param[{j}]: parameter file {f} does not exist")
            ros += ["--params-file", str(f)]
            files.append(str(f))
        else:
            ros += ["-p", f"{p['name']}:={_param_value(sub(p['value']))}"]
    for r in body.get("remap", []):
        ros += ["-r", f"{sub(r['from'])}:={sub(r['to'])}"]
    if "ros_args" in body:
        ros += shlex.split(sub(body["ros_args"]))
    return ProcessSpec(name=name, cmd=cmd + ros, env=dict(scope.env),
                       output=sub(body.get("output", "screen")),
                       node=f"{ns.rstrip('/')}/{name}", executable=exe, params_files=files)


def check_params_files(specs: list[ProcessSpec]) -> None:
    """Read every parameter file the launch passes to its nodes with rcl's rules
    (:mod:`smores_assembly.params_file`) and refuse duplicate keys, values rcl refuses and
    sections that match none of the nodes the file is passed to (rcl would ignore them).

    Raises:
        LaunchError: naming the file, the line and the section or key.
    """
    from smores_assembly.params_file import (ParamsFileError, check_sections_match,
                                             parse_params_file)
    readers: dict[str, list[str]] = {}
    for spec in specs:
        for f in spec.params_files:
            readers.setdefault(f, []).append(spec.node)
    for f, nodes in readers.items():
        try:
            check_sections_match(parse_params_file(f), nodes, f)
        except ParamsFileError as exc:
            raise LaunchError(str(exc)) from None


def load_launch(path: str | os.PathLike, arguments: dict[str, str] | None = None
                ) -> list[ProcessSpec]:
    """Resolve a YAML launch file into the processes it starts.

    Args:
        path: the launch file.
        arguments: launch arguments (``name -> value``) overriding the files' defaults.

    Raises:
        LaunchError: malformed file, unsupported action or substitution, missing argument,
            missing parameter file or executable, a parameter file with a duplicate key, a
            value rcl refuses or a section for no node it is passed to (see
            :func:`check_params_files`; the message names the place).
    """
    p = Path(path)
    scope = _Scope({}, {})
    out: list[ProcessSpec] = []
    arguments = {k: str(v) for k, v in (arguments or {}).items()}
    actions = _load_actions(p)
    declared = {a["arg"]["name"] for a in actions if isinstance(a, dict) and "arg" in a}
    unknown = set(arguments) - declared
    if unknown:
        raise LaunchError(f"{p}: unknown launch argument(s) {sorted(unknown)} "
                          f"(declared: {sorted(declared)})")
    _walk(actions, scope, out, str(p), arguments)
    check_params_files(out)
    return out


def resolve_launch(path: str | os.PathLike, arguments: dict[str, str] | None = None
                   ) -> list[ProcessSpec]:
    """The processes of a launch file, without reading their parameter files (for checks
    that read those files themselves, e.g. :mod:`smores_assembly.param_check`)."""
    p = Path(path)
    out: list[ProcessSpec] = []
    _walk(_load_actions(p), _Scope({}, {}), out, str(p),
          {k: str(v) for k, v in (arguments or {}).items()})
    return out


def launch_file(name: str) -> Path:
    """Path of one of this package's launch files, e.g. ``launch_file('fake_assembly')``."""
    f = find_pkg_share(PACKAGE) / "launch" / (name if name.endswith(".yaml")
                                              else f"{name}.launch.yaml")
    if not f.is_file():
        names = sorted(g.name.removesuffix(".launch.yaml")
                       for g in f.parent.glob("*.launch.yaml"))
        raise LaunchError(f"launch file {f} does not exist (launch files of {PACKAGE}: "
                          f"{', '.join(names) or 'none'}; or give a file's path)")
    return f


class LaunchRunner:
    """Start :class:`ProcessSpec` processes and stop them all cleanly.

    Each process gets its own process group; its output lines are prefixed with
    ``[name]`` and passed to ``sink`` (default: print to stderr), or written to
    ``log_dir/<name>.log`` when ``output`` is ``log``. Use as a context manager.
    """

    def __init__(self, specs: list[ProcessSpec], env: dict[str, str] | None = None,
                 sink: Callable[[str], None] | None = None, log_dir: Path | None = None):
        self.specs = specs
        self.env = dict(os.environ if env is None else env)
        self.sink = sink or (lambda line: print(line, file=sys.stderr, flush=True))
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "LaunchRunner":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def start(self) -> None:
        for spec in self.specs:
            env = dict(self.env)
            env.update(spec.env)
            env.setdefault("PYTHONUNBUFFERED", "1")
            # This package's nodes start with SIGINT/SIGTERM blocked (the mask is
            # inherited): a stop asked for while the interpreter still imports is held
            # until run_node() has its handlers, which unblock and act on it.
            ours = _is_package_node(spec.cmd)
            if ours:
                env[LAUNCHER_PID_ENV] = str(os.getpid())
            old_mask = (signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
                        if ours else None)
            try:
                proc = subprocess.Popen(spec.cmd, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, text=True, errors="replace")
            finally:
                if old_mask is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            self.procs[spec.name] = proc
            t = threading.Thread(target=self._pump, args=(spec, proc), daemon=True)
            t.start()
            self._threads.append(t)

    def _pump(self, spec: ProcessSpec, proc: subprocess.Popen) -> None:
        log = None
        if spec.output == "log" and self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log = open(self.log_dir / f"{spec.name}.log", "w")
        try:
            for line in proc.stdout or ():  # always a pipe (Popen(stdout=PIPE))
                line = line.rstrip("\n")
                if log is not None:
                    log.write(line + "\n")
                else:
                    self.sink(f"[{spec.name}] {line}")
        finally:
            if log is not None:
                log.close()

    def poll(self) -> dict[str, int]:
        """Exit codes of the processes that have ended so far."""
        return {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}

    def shutdown(self, timeout: float = 5.0, grace: float | None = None) -> dict[str, int]:
        """Stop every process: SIGINT, then SIGTERM, then SIGKILL.

        After the SIGINT each process has ``grace`` [s] to end by itself (default: the
        nodes' own bound on their middleware teardown, ``TEARDOWN_TIMEOUT_S``, and its
        C watchdog's margin ``WATCHDOG_MARGIN_S``, plus ``timeout``): a node whose Fast DDS
        teardown hangs leaves on its own after that bound, with a warning and its Python
        stacks in its log (exit status 0, or 1 when the hang kept the GIL and the watchdog
        ended it), instead of being killed first (a CI run once failed on
        ``mocap_bridge: -9`` from the 5 s this wait used to be). After the SIGTERM a
        process has ``timeout`` [s]; before the SIGKILL it is sent SIGUSR1, on which this
        package's nodes write every thread's Python stack to their log
        (:func:`smores_assembly.ros.common.run_nodes`), so a kill leaves a place to look.

        Returns:
            Process name -> exit status (negative: the signal that ended it).
        """
        from smores_assembly.teardown import TEARDOWN_TIMEOUT_S, WATCHDOG_MARGIN_S
        own = TEARDOWN_TIMEOUT_S + WATCHDOG_MARGIN_S + timeout
        waits = (own if grace is None else grace, timeout)
        for sig, wait in zip((signal.SIGINT, signal.SIGTERM), waits):
            self._signal_and_wait(sig, wait)
        stuck = [n for n, p in self.procs.items() if p.poll() is None]
        if stuck:
            self.sink(f"[launch] {', '.join(stuck)} did not stop on SIGINT and SIGTERM: "
                      "killing (the Python stacks of this package's nodes follow)")
            self._signal_and_wait(signal.SIGUSR1, min(1.0, timeout),
                                  only=lambda name: self._is_ours(name))
            self._signal_and_wait(signal.SIGKILL, timeout)
        for t in self._threads:
            t.join(timeout=1.0)
        return {n: p.returncode for n, p in self.procs.items()}

    def _is_ours(self, name: str) -> bool:
        """True for a process that runs one of this package's executables."""
        spec = next((s for s in self.specs if s.name == name), None)
        return spec is not None and _is_package_node(spec.cmd)

    def _signal_and_wait(self, sig: int, wait: float,
                         only: Callable[[str], bool] | None = None) -> None:
        """Send ``sig`` to the process group of every process still running (of those
        ``only`` accepts) and wait up to ``wait`` [s] in all for them to end."""
        alive = [p for n, p in self.procs.items()
                 if p.poll() is None and (only is None or only(n))]
        for p in alive:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        for p in alive:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass


def launch_arguments(path: str | os.PathLike) -> list[tuple[str, str | None, str]]:
    """The top-level ``arg`` declarations of a YAML launch file: ``(name, default or None,
    description)``, the description being the declaration's ``description`` ('' if none),
    as ``ros2 launch --show-args`` lists them.

    Raises:
        LaunchError: the file cannot be read or is not a YAML launch file.
    """
    out = []
    for a in _load_actions(Path(path)):
        if isinstance(a, dict) and isinstance(a.get("arg"), dict) and "name" in a["arg"]:
            d = a["arg"].get("default")
            out.append((str(a["arg"]["name"]), None if d is None else str(d),
                        str(a["arg"].get("description", ""))))
    return out


def _first_sentence(text: str) -> str:
    """``text`` up to its first ``.`` or ``:`` that ends a sentence outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch in ".:" and (i + 1 == len(text) or text[i + 1].isspace()):
            return text[:i]
    return text


def _print_help() -> None:
    print("usage: python -m smores_assembly.launch FILE|NAME [arg:=value ...]\n"
          "       python -m smores_assembly.launch FILE|NAME --show-args\n\n"
          "Run a YAML launch file (as `ros2 launch smores_assembly NAME.launch.yaml` on a "
          "ROS install)\nuntil Ctrl-C; a node that fails brings the whole launch down.\n\n"
          "launch files of smores_assembly (NAME):")
    try:
        files = sorted((find_pkg_share(PACKAGE) / "launch").glob("*.launch.yaml"))
    except LaunchError:
        files = []
    for f in files:
        head = []
        for ln in f.read_text().splitlines():
            if not ln.startswith("#"):
                break
            head.append(ln.lstrip("#").strip())
        first = _first_sentence(" ".join(head))
        name = f.name.removesuffix(".launch.yaml")
        print(textwrap.fill(first, 92, initial_indent=f"  {name:<16} ",
                            subsequent_indent=" " * 19))
    print("\n--show-args (-s): list the file's arguments, their defaults and meaning.")


def _print_arguments(path: Path) -> None:
    print(f"arguments of {path.name} (name:=value):")
    for name, default, text in launch_arguments(path):
        print(f"  {name}" + (f"  (default: {default!r})" if default is not None
                             else "  (required)"))
        if text:
            for ln in textwrap.wrap(text, 76):
                print(f"      {ln}")


def main(argv: list[str] | None = None) -> int:
    """``python -m smores_assembly.launch FILE [name:=value ...]``: run a YAML launch file."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        _print_help()
        return 0 if argv else 2
    if argv[0] in ("-s", "--show-args", "--show-arguments"):
        print("launch: error: --show-args lists the arguments of one launch file: "
              "python -m smores_assembly.launch FILE|NAME --show-args", file=sys.stderr)
        return 2
    target, rest = argv[0], argv[1:]
    try:
        path = Path(target) if Path(target).is_file() else launch_file(target)
        show = [a for a in rest if a in ("-s", "--show-args", "--show-arguments")]
        rest = [a for a in rest if a not in show]
        args: dict[str, str] = {}
        for a in rest:
            if ":=" not in a:
                raise LaunchError(f"launch argument {a!r}: expected name:=value")
            k, v = a.split(":=", 1)
            if k in args:  # the last would silently win
                raise LaunchError(f"launch argument {k!r} given twice ({args[k]!r} and "
                                  f"{v!r})")
            args[k] = v
        if show:  # the arguments given are checked as a launch would check them
            declared = [n for n, _, _ in launch_arguments(path)]
            unknown = sorted(set(args) - set(declared))
            if unknown:
                raise LaunchError(f"{path}: unknown launch argument(s) {unknown} "
                                  f"(declared: {sorted(declared)})")
            _print_arguments(path)
            return 0
        specs = load_launch(path, args)
    except LaunchError as exc:
        print(f"launch: error: {exc}", file=sys.stderr)
        return 2
    runner = LaunchRunner(specs)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner.start()
    failed: dict[str, int] = {}
    try:
        # Like a launch file whose nodes are all required: a node that fails (exit status
        # other than 0) brings the whole launch down, so nothing runs half-configured.
        while not stop.is_set() and len(runner.poll()) < len(specs):
            failed = {n: c for n, c in runner.poll().items() if c != 0}
            if failed:
                if all(c == 2 for c in failed.values()):
                    print(f"launch: error: {', '.join(sorted(failed))} refused its "
                          f"configuration (exit status 2; the reason is its FATAL line): "
                          f"shutting down", file=sys.stderr)
                else:
                    print(f"launch: node(s) failed {failed}: shutting down", file=sys.stderr)
                break
            stop.wait(0.2)
    finally:
        codes = runner.shutdown()
    if failed and all(c == 2 for c in failed.values()):
        return 2   # bad input, as every entry point of the package
    return 0 if all(c in (0, -signal.SIGINT, None) for c in codes.values()) else 1
