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
import math
from pathlib import Path
from typing import Any

import yaml

from smores_assembly.params import NODE_SETTINGS, node_settings

#: parameters declared outside the settings dataclasses (prefix match for dotted groups).
EXTRA_PARAMETERS: dict[str, tuple[str, ...]] = {
    "mocap_bridge": ("module_ids", "marker_offsets."),
}
COMMON_PARAMETERS = ("use_sim_time",)


class ParamsFileError(ValueError):
    """The parameter file is unreadable or names a node, parameter or value the stack
    would refuse or ignore."""


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
            or any(name == p or (p.endswith(".") and name.startswith(p))
                   for p in EXTRA_PARAMETERS.get(node, ())))


def _flatten(params: dict, prefix: str = "") -> dict[str, Any]:
    """Nested mappings are dotted parameter names in ROS params files (``a: {b: 1}`` is
    ``a.b``)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def check_params_file(path: str | Path) -> None:
    """Validate a ROS params file for the nodes of this stack.

    Accepted: ``<node>: {ros__parameters: {...}}`` for the stack's nodes (optionally with
    a leading ``/`` or a namespace: ``/**/<node>`` is the node in any namespace, which is
    what a stack launched with ``namespace:=...`` needs) and ``/**: {ros__parameters:
    {...}}`` for parameters of any node.

    Raises:
        ParamsFileError: unreadable file or invalid YAML (with the line), an unknown node
            or parameter (with the closest known name), a wrong type, a non-finite or
            out-of-range value. The message names the file, node, parameter and value.
    """
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise ParamsFileError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ParamsFileError(f"{p}: invalid YAML{at}: {getattr(exc, 'problem', exc)}") from exc
    if data is None:
        return
    if not isinstance(data, dict):
        raise ParamsFileError(f"{p}: expected a mapping of node names, got {type(data).__name__}")
    cache: dict[str, dict] = {}
    for key, body in data.items():
        # "/**/docking_controller" or "/swarm1/docking_controller": the node in any / one
        # namespace; "docking_controller": the node in the root namespace only
        node = str(key).strip("/").rsplit("/", 1)[-1] or str(key)
        if str(key).strip("/") == "**":
            node = "**"
        if node != "**" and node not in NODE_SETTINGS:
            near = difflib.get_close_matches(node, NODE_SETTINGS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ParamsFileError(f"{p}: unknown node {key!r}{hint}; nodes: "
                                  f"{', '.join(sorted(NODE_SETTINGS))}, or '/**'")
        if not isinstance(body, dict) or not isinstance(body.get("ros__parameters", {}), dict) \
                or set(body) - {"ros__parameters"}:
            raise ParamsFileError(f"{p}: {key}: expected {{ros__parameters: {{name: value}}}}")
        params = _flatten(body.get("ros__parameters") or {})
        targets = list(NODE_SETTINGS) if node == "**" else [node]
        for n in targets:
            cache.setdefault(n, _fields(n))
        for name, value in params.items():
            where = f"{p}: {key}.{name}"
            owners = [n for n in targets if _known(name, n, cache[n])]
            if not owners:
                pool = sorted({f for n in targets for f in cache[n]})
                near = difflib.get_close_matches(name, pool, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ParamsFileError(f"{where}: unknown parameter{hint}")
            for n in owners:
                if name in cache[n]:
                    f, default = cache[n][name]
                    _check_value(where, f, default, value)
