"""Check a ROS parameter file against the stack's declared parameters before launch.

A mistyped node or parameter name in a ROS params file is silently ignored by ROS, and an
out-of-range value only shows up as one node dying after the whole stack has started.
:func:`check_params_file` refuses such a file up front, with one message naming the node,
the parameter and the value. The parameters are the fields of each node's settings
dataclasses (:data:`smores_assembly.params.NODE_SETTINGS`, the same ones the nodes declare,
with the same ranges); no ROS module is imported.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
from pathlib import Path
from typing import Any

from smores_assembly.errors import InputError
from smores_assembly.params import (NODE_SETTINGS, check_common_parameters, node_settings,
                                     validate_settings)
from smores_assembly.params_file import ParamsFileError, ParamsSection, parse_params_file
from smores_assembly.scenario import module_id_error
from smores_assembly.sim.settings import DEFAULT_PARTICIPANTS

#: parameters declared outside the settings dataclasses (prefix match for dotted groups).
EXTRA_PARAMETERS: dict[str, tuple[str, ...]] = {
    "mocap_bridge": ("module_ids", "marker_offsets."),
}
COMMON_PARAMETERS = ("use_sim_time",)
#: their defaults, as rclpy declares them on every node
COMMON_DEFAULTS: dict[str, Any] = {"use_sim_time": False}
#: the nodes that declare ``lockstep`` (default false) outside their settings dataclasses
#: (``smores_assembly.ros.lockstep.declare``): the fake hardware's default participants
LOCKSTEP_NODES = tuple(DEFAULT_PARTICIPANTS)


def _default(node: str, name: str, fields: dict) -> Any:
    """The value ``node`` gives parameter ``name`` when no file sets it: its settings'
    default, rclpy's for the common ones, false for a participant's ``lockstep``."""
    if name in fields:
        return fields[name][1]
    if name == "lockstep" and node in LOCKSTEP_NODES:
        return False
    return COMMON_DEFAULTS.get(name)


def _fields(node: str) -> dict[str, tuple[dataclasses.Field, Any]]:
    out = {}
    for settings in node_settings(node):
        for f in dataclasses.fields(settings):
            out[f.name] = (f, getattr(settings, f.name))
    return out


def _check_value(where: str, f: dataclasses.Field, default: Any, value: Any) -> None:
    want = type(default)
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, want)
    if not ok:
        raise ParamsFileError(f"{where}: expected {want.__name__}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParamsFileError(f"{where}: {value!r} is not a finite number")
    rng = f.metadata.get("range")
    if rng is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = rng
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamsFileError(f"{where}: {value!r} outside [{lo}, {hi}]")


def _known(name: str, node: str, fields: dict) -> bool:
    return (name in fields or name in COMMON_PARAMETERS
            or (name == "lockstep" and node in LOCKSTEP_NODES)
            or any(name == p or (p.endswith(".") and name.startswith(p))
                   for p in EXTRA_PARAMETERS.get(node, ())))


def declares(executable: str, name: str) -> bool:
    """Whether the node ``executable`` (e.g. ``docking_controller``) declares parameter
    ``name``: a value for it in a ``/**`` section reaches only the nodes that do (rcl
    leaves the others' undeclared values unused). True for an executable this module has
    no settings for (nothing known to leave out)."""
    if executable not in NODE_SETTINGS:
        return True
    return _known(name, executable, _fields(executable))


def _check_module_ids(where: str, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParamsFileError(f"{where}: expected a list of strings, got {value!r}")
    for v in value:
        err = module_id_error(v)
        if err:
            raise ParamsFileError(f"{where}: {err}")


def _check_bool(where: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ParamsFileError(f"{where}: expected a bool, got {value!r}")


#: checks of parameters declared outside the settings dataclasses
EXTRA_CHECKS = {"module_ids": _check_module_ids, "lockstep": _check_bool}


def _as_field(value: Any, default: Any) -> Any:
    """A params-file value (already type-checked) as the settings field holds it."""
    if isinstance(default, float) and isinstance(value, int):
        return float(value)
    if isinstance(default, tuple):
        return tuple(value)
    return value


def _validate_node(path: Path, exe: str, sections: list[ParamsSection]) -> None:
    """Apply what ``sections`` (in file order, later wins) give one node of kind ``exe`` to
    its settings dataclasses and run the very checks the node runs at start-up
    (:func:`smores_assembly.params.validate_settings`: ranges, allowed texts such as
    ``schedule`` or ``backend``, consistency between fields; and
    :func:`smores_assembly.params.check_common_parameters` on ``use_sim_time``).

    Raises:
        ParamsFileError: ``file:line: pattern.name: <the node's own message>``.
    """
    given: dict[str, tuple[Any, ParamsSection]] = {}
    for sec in sections:
        for name, value in sec.params.items():
            if not (isinstance(value, list) and not value):  # [] leaves the default
                given[name] = (value, sec)
    # the node's own rule on the parameters every node has (the fake hardware refuses
    # use_sim_time: true): the very function it calls at start-up
    common = {n: given[n][0] for n in COMMON_PARAMETERS if n in given}
    try:
        check_common_parameters(exe, common)
    except InputError as exc:
        field = exc.field if exc.field in common else next(iter(common))
        sec = given[field][1]
        raise ParamsFileError(f"{path}:{sec.lines[field]}: {sec.pattern}.{field}: "
                              f"{str(exc).removeprefix(f'{field}: ')}", field=field) from None
    for settings in node_settings(exe):
        used = {f.name: given[f.name] for f in dataclasses.fields(settings)
                if f.name in given}
        if not used:
            continue
        for name, (value, _) in used.items():
            setattr(settings, name, _as_field(value, getattr(settings, name)))
        try:
            validate_settings(settings)
        except InputError as exc:
            msg = str(exc)
            m = re.match(r"(\w+): ", msg)
            field = exc.field or (m.group(1) if m else "")
            if field in used:
                msg = msg.removeprefix(f"{field}: ")
            else:  # inconsistent with a default: name the file's first value involved
                field = min(used, key=lambda n: (used[n][1].line, used[n][1].lines[n]))
            sec = used[field][1]
            raise ParamsFileError(f"{path}:{sec.lines[field]}: {sec.pattern}.{field}: {msg}",
                                  field=field) from None


def _namespaces(sections: list[ParamsSection]) -> set[str]:
    """The namespaces (``""``: the root) the sections' patterns name a node in."""
    out = {""}
    for sec in sections:
        concrete = re.sub(r"/\*(?=/|$)", "/x", sec.pattern.replace("/**", ""))
        out.add(concrete.rsplit("/", 1)[0] if concrete.count("/") > 1 else "")
    return out


@functools.lru_cache(maxsize=8)
def _fake_assembly_specs(path: str, namespace: str) -> tuple:
    """The processes of ``launch/fake_assembly.launch.yaml`` (what ``run --params-file``
    starts) with ``params_file:=path`` in ``namespace``: resolved once for
    :func:`default_readers` and :func:`launch_pinned` (they depend on the path, not on
    the file's content)."""
    from smores_assembly.launch import launch_file  # noqa: PLC0415
    from smores_assembly.launch.yaml_launch import resolve_launch  # noqa: PLC0415
    launch_args = {"params_file": path}
    if namespace:
        launch_args["namespace"] = namespace
    return tuple(resolve_launch(launch_file("fake_assembly"), launch_args))


def default_readers(path: str | Path, namespace: str = "") -> dict[str, str]:
    """Nodes that read ``path`` as ``params_file`` of ``launch/fake_assembly.launch.yaml``
    (what ``run --params-file`` starts), launched in ``namespace`` (``""``: the root):
    fully qualified name -> executable."""
    return {s.node: s.executable for s in _fake_assembly_specs(str(path), namespace)
            if str(path) in s.params_files}


#: how to change a parameter that a launch file sets after the params file (a value in the
#: file would be ignored): the run flag or launch argument that sets it
PINNED_HINTS = {
    "scenario": "the scenario is run's SCENARIO.yaml (launch argument scenario:=)",
    "lockstep": "use run --free-running (launch argument lockstep:=false); every node "
                "of the stack must agree",
    "use_sim_time": "the fake stack runs on the fake hardware's simulated time",
    "source": "the bridge reads what the fake hardware publishes (fake_assembly.launch.yaml "
              "mocap_format:=frame|vicon; real modules: assembly.launch.yaml mocap_source:=)",
    "mocap_format": "fake_assembly.launch.yaml mocap_format:=frame|vicon (the bridge's "
                    "source follows it)",
}


def launch_pinned(path: str | Path, namespace: str = "") -> dict[str, dict[str, Any]]:
    """Parameters that ``launch/fake_assembly.launch.yaml`` (what ``run --params-file``
    starts) sets on a node's command line *after* the params file ``path`` (they win over
    it): node name (without namespace) -> parameter -> value, typed as rcl types it."""
    from smores_assembly.params_file import rcl_scalar  # noqa: PLC0415
    out: dict[str, dict[str, Any]] = {}
    for spec in _fake_assembly_specs(str(path), namespace):
        cmd = spec.cmd
        at = [i for i, a in enumerate(cmd[:-1])
              if a == "--params-file" and cmd[i + 1] == str(path)]
        if not at:
            continue
        pinned = out.setdefault(spec.node.rsplit("/", 1)[-1], {})
        for i in range(at[-1] + 2, len(cmd) - 1):
            if cmd[i] == "-p" and ":=" in cmd[i + 1]:
                name, text = cmd[i + 1].split(":=", 1)
                pinned[name] = rcl_scalar(text)
    return out


def _applies(sec: ParamsSection, fqn: str, any_namespace: bool) -> bool:
    """Does ``sec`` apply to node ``fqn``, or (``any_namespace``) to that node launched
    in some namespace (``/swarm1/executive`` names the executive of a stack launched with
    ``namespace:=/swarm1``)?"""
    if sec.matches(fqn):
        return True
    if not any_namespace:
        return False
    concrete = re.sub(r"/\*(?=/|$)", "/x", sec.pattern.replace("/**", ""))
    return (concrete.endswith("/" + fqn.rsplit("/", 1)[-1]) and sec.matches(concrete))


def check_params_file(path: str | Path, readers: dict[str, str] | None = None,
                      pinned: dict[str, dict[str, Any]] | None = None,
                      notes: list[str] | None = None) -> list[ParamsSection]:
    """Validate a ROS params file for the nodes of this stack that read it.

    The file is read with rcl's rules (:func:`smores_assembly.params_file.parse_params_file`:
    node patterns with ``/*`` and ``/**``, nested namespaces, ``1e-3`` a double). Every
    section must apply to at least one reader, and every parameter must be one that a
    node it applies to declares, with the right type and range.

    Args:
        path: the file.
        readers: fully qualified node name -> executable of the nodes the file is passed
            to (a section must match one of them exactly); default: those of
            ``fake_assembly.launch.yaml`` (:func:`default_readers`) in any namespace the
            launch's ``namespace`` argument may give them.
        pinned: node name -> parameters the launch sets after this file (a different
            value in the file would be silently ignored, so it is refused naming the run
            flag or launch argument to use); default: those of ``fake_assembly``
            (:func:`launch_pinned`).
        notes: when given, gets one line per value of the file that the launch overrides
            but that equals the node's default (the generated ``config/<node>.yaml``
            files list every default, so it is not refused; e.g. ``lockstep: false``
            under ``run``, which steps in lockstep unless ``--free-running``).

    Returns:
        The file's sections.

    Raises:
        ParamsFileError: unreadable file, invalid YAML (with the line), duplicate key, a
            section for no reader or an unknown parameter (with the closest known name), a
            wrong type, a non-finite or out-of-range value, an invalid module id, or any
            value the node itself would refuse at start-up (its settings' ``validate``:
            a text that is not one of the allowed ones, inconsistent fields). The
            message names the file, line, node, parameter and value.
    """
    p = Path(path)
    sections = parse_params_file(p)
    any_namespace = readers is None
    if readers is None:
        readers = default_readers(p)
    if pinned is None:
        pinned = launch_pinned(p)
    cache: dict[str, dict] = {}
    ignored: list[ParamsFileError] = []   # valid values the launch would override
    for sec in sections:
        owners = {fqn: exe for fqn, exe in readers.items()
                  if _applies(sec, fqn, any_namespace)}
        if not owners:
            name = sec.pattern.rsplit("/", 1)[-1]
            near = difflib.get_close_matches(name, sorted({f.rsplit("/", 1)[-1]
                                                           for f in readers}), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ParamsFileError(
                f"{p}:{sec.line}: section {sec.pattern!r} matches no node that reads this "
                f"file{hint}; nodes: {', '.join(sorted(readers))}")
        kinds = sorted({exe for exe in owners.values() if exe in NODE_SETTINGS})
        for exe in kinds:
            cache.setdefault(exe, _fields(exe))
        for name, value in sec.params.items():
            where = f"{p}:{sec.lines[name]}: {sec.pattern}.{name}"
            known = [exe for exe in kinds if _known(name, exe, cache[exe])]
            if kinds and not known:
                pool = sorted({f for exe in kinds for f in cache[exe]})
                near = difflib.get_close_matches(name, pool, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ParamsFileError(f"{where}: unknown parameter{hint}")
            if isinstance(value, list) and not value:
                continue  # rcl leaves an empty list unset: the node keeps its default
            noted: dict[Any, list[str]] = {}   # pinned value -> nodes (one note each)
            for fqn, exe in owners.items():
                node = fqn.rsplit("/", 1)[-1]
                default = _default(exe, name, cache.get(exe, {}))
                # the one rule for a value the launch sets after this file: one that
                # differs from the node's default (its settings' or rclpy's, e.g.
                # use_sim_time) is refused with the hint; one equal to it asks for nothing
                # (the generated config/<node>.yaml files list every default): a note
                if name in pinned.get(node, {}) and pinned[node][name] != value:
                    hint = PINNED_HINTS.get(name, "set it with the run flag or launch "
                                                  "argument instead")
                    text = (f"{where}: {node} gets {name} from the launch, after this file "
                            f"({pinned[node][name]!r}): {value!r} here would be ignored; "
                            f"{hint}")
                    if value != default:
                        ignored.append(ParamsFileError(text, field=name))
                    elif notes is not None and value != "":   # "": unset, nothing asked
                        noted.setdefault(pinned[node][name], []).append(node)
            for launched, nodes in noted.items():   # filled only when notes is a list
                assert notes is not None
                hint = PINNED_HINTS.get(name, "set it with the run flag or launch "
                                              "argument instead")
                who = (f"{nodes[0]} gets" if len(nodes) == 1
                       else f"{', '.join(sorted(set(nodes)))} get")
                notes.append(f"note: {where}: {who} {name} from the launch, after this "
                             f"file ({launched!r}): {value!r} here is ignored; {hint}")
            if name in EXTRA_CHECKS:
                EXTRA_CHECKS[name](where, value)
            for exe in known:
                if name in cache[exe]:
                    f, default = cache[exe][name]
                    _check_value(where, f, default, value)
    # every value has the declared type and range: now the nodes' own check of the
    # settings as each node would hold them (allowed texts, consistency between fields)
    spaces = _namespaces(sections) if any_namespace else {""}
    for fqn, exe in sorted(readers.items()):
        if exe not in NODE_SETTINGS:
            continue
        names = {fqn} | ({ns + "/" + fqn.rsplit("/", 1)[-1] for ns in spaces}
                         if any_namespace else set())
        for name in sorted(names):
            _validate_node(p, exe, [s for s in sections if s.matches(name)])
    if ignored:
        raise ignored[0]
    return sections
