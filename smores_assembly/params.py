"""Settings dataclasses that double as ROS parameters (no ROS imports).

Core modules describe their tunables as ``@dataclass`` fields made with :func:`param_field`;
``smores_assembly.ros.common.declare_dataclass_params`` turns them into declared, range-
checked ROS parameters. One description and one range per tunable, in one place.

Contract of a settings class: its fields are made with :func:`param_field`; it may define
``validate(self) -> None``, which raises :class:`~smores_assembly.errors.InputError`
(normally its subclass ``ParamsError``) naming the field and
the value when the settings are out of range (:func:`check_ranges`) or inconsistent across
fields. :func:`validate_settings` applies that contract to any settings instance.

:data:`NODE_SETTINGS` says which settings classes make up each node's parameters; the
classes live next to the cores they configure, so this module, ``param_check`` and the
tests import no ROS.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from smores_assembly.errors import ParamsError


def param_field(default: Any, description: str, lo: float | None = None,
                hi: float | None = None, start_only: bool = False, **kw) -> Any:
    """A dataclass field carrying a parameter description and an inclusive range [lo, hi].

    ``start_only``: the value is read once at start-up (topics, timers, files); the node
    refuses to change it later.
    """
    md: dict[str, Any] = {"description": description}
    if lo is not None or hi is not None:
        md["range"] = (lo, hi)
    if start_only:
        md["start_only"] = True
    if isinstance(default, (list, dict, set)):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=md, **kw)
    return dataclasses.field(default=default, metadata=md, **kw)


def check_ranges(settings: Any) -> None:
    """Raise :class:`~smores_assembly.errors.ParamsError` naming the field and value when a
    field is outside its range."""
    for f in dataclasses.fields(settings):
        rng = f.metadata.get("range")
        v = getattr(settings, f.name)
        if rng is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        lo, hi = rng
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ParamsError(f"{f.name}: {v!r} outside [{lo}, {hi}]", field=f.name)


def validate_settings(settings: Any) -> None:
    """Check one settings instance: its own ``validate()`` when it has one (which includes
    the ranges), else the field ranges.

    Raises:
        ParamsError: naming the field and the value.
    """
    validate = getattr(settings, "validate", None)
    if callable(validate):
        validate()
    else:
        check_ranges(settings)


#: node name -> "module:Class" of the settings dataclasses whose fields are its parameters
#: (imported lazily by :func:`node_settings`: the core modules import this one).
NODE_SETTINGS: dict[str, tuple[str, ...]] = {
    "fake_hardware": ("smores_assembly.sim.settings:FakeHardwareSettings",
                      "smores_assembly.sim:SimParams"),
    "mocap_bridge": ("smores_assembly.mocap.settings:BridgeSettings",
                     "smores_assembly.mocap.filter:MocapFilterSettings"),
    "root_search": ("smores_assembly.planning:PlanningNodeSettings",),
    "task_assignment": ("smores_assembly.planning:PlanningNodeSettings",),
    "navigation": ("smores_assembly.navigation.stage:NavSettings",
                   "smores_assembly.staging:StagingSettings"),
    "docking_controller": ("smores_assembly.docking.settings:DockingNodeSettings",
                           "smores_assembly.docking.control:DockingSettings"),
    "executive": ("smores_assembly.sequencer:ExecutiveSettings",),
}


#: node -> "module:function" of the node's own start-up rule on the parameters rclpy
#: declares on every node (``use_sim_time``), outside its settings dataclasses: called by
#: the node at start-up and by ``param_check`` with a params file's values
#: (:func:`check_common_parameters`), so both refuse the same.
COMMON_CHECKS: dict[str, str] = {
    "fake_hardware": "smores_assembly.sim.settings:check_common_parameters",
}


def check_common_parameters(node: str, values: dict[str, Any]) -> None:
    """Apply ``node``'s start-up rule (:data:`COMMON_CHECKS`; none: nothing) to ``values``
    (parameter name -> value, e.g. ``{"use_sim_time": True}``).

    Raises:
        ParamsError: naming the field, as the node refuses it at start-up.
    """
    ref = COMMON_CHECKS.get(node)
    if ref is not None:
        _resolve(ref)(values)


def _resolve(ref: str) -> Any:
    """The object named by a ``"module:name"`` reference (imported lazily)."""
    import importlib  # noqa: PLC0415

    mod, name = ref.split(":")
    return getattr(importlib.import_module(mod), name)


def settings_class(ref: str) -> type:
    """The class named by a ``"module:Class"`` reference of :data:`NODE_SETTINGS`."""
    return _resolve(ref)


def node_settings(node: str) -> list[Any]:
    """Fresh default instances of the settings classes of ``node`` (a key of
    :data:`NODE_SETTINGS`), in declaration order.

    Raises:
        KeyError: ``node`` is not a node of the stack.
    """
    return [settings_class(ref)() for ref in NODE_SETTINGS[node]]


# --- config/<node>.yaml: generated from the dataclasses ------------------------------------

#: Parameters a node declares besides its settings dataclasses, as commented example lines
#: of its config file.
EXTRA_CONFIG_LINES: dict[str, tuple[str, ...]] = {
    "mocap_bridge": (
        "# modules to track, i.e. the mocap body names (quote ids); empty or unset: the",
        "# modules of `scenario`",
        "# module_ids: ['m0', 'm1']",
        "# per-module overrides of marker_offset [x, y, z, roll, pitch, yaw] [m, rad]",
        "# marker_offsets:",
        "#   m3: [0.005, 0.0, -0.045, 0.0, 0.0, 0.0]",
    ),
}


def _yaml_value(value: Any) -> str:
    import yaml  # noqa: PLC0415

    if isinstance(value, tuple):
        value = list(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=1000)
    return text.strip().removesuffix("...").strip()


def _wrap(text: str, indent: str, width: int = 92) -> list[str]:
    import textwrap  # noqa: PLC0415

    return textwrap.wrap(text, width=width, initial_indent=indent + "# ",
                         subsequent_indent=indent + "# ")


def config_text(node: str) -> str:
    """The text of ``config/<node>.yaml``: every parameter of ``node`` at its dataclass
    default, each preceded by its description and range (the one parameter source is the
    dataclasses; this file is generated from them)."""
    refs = NODE_SETTINGS[node]
    lines = _wrap(f"Defaults of the {node} node, generated from "
                  + " and ".join(r.replace(":", ".") for r in refs) + ".", "")
    lines += ["# Do not edit: change the defaults there and run",
             "#   python -m smores_assembly.params --write-config config",
             "# (test_param_check checks this file equals them). A lab's values go in a params",
             "# file passed after this one (see config/overrides.yaml). The key /**/<node> applies",
             "# to the node in any namespace (launch argument namespace:=...).",
             f"/**/{node}:", "  ros__parameters:"]
    indent = "    "
    for ref, settings in zip(refs, node_settings(node)):
        for f in dataclasses.fields(settings):
            desc = f.metadata.get("description", "")
            rng = f.metadata.get("range")
            if rng is not None:
                lo, hi = rng
                desc += f" [{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            if f.metadata.get("start_only"):
                desc += " (start-up only)"
            lines += _wrap(desc, indent)
            lines.append(f"{indent}{f.name}: {_yaml_value(getattr(settings, f.name))}")
    lines += [indent + line for line in EXTRA_CONFIG_LINES.get(node, ())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m smores_assembly.params --write-config DIR | --check-config DIR``."""
    import argparse  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    ap = argparse.ArgumentParser(
        prog="python -m smores_assembly.params",
        description="Write (or check) config/<node>.yaml from the settings dataclasses.")
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write-config", metavar="DIR", type=Path,
                       help="write DIR/<node>.yaml for every node")
    group.add_argument("--check-config", metavar="DIR", type=Path,
                       help="exit 1 naming every DIR/<node>.yaml that differs")
    args = ap.parse_args(argv)
    if args.write_config is not None:
        args.write_config.mkdir(parents=True, exist_ok=True)
        for node in NODE_SETTINGS:
            (args.write_config / f"{node}.yaml").write_text(config_text(node))
        return 0
    stale = [node for node in NODE_SETTINGS
             if not (args.check_config / f"{node}.yaml").is_file()
             or (args.check_config / f"{node}.yaml").read_text() != config_text(node)]
    for node in stale:
        print(f"{args.check_config / (node + '.yaml')}: differs from the dataclass defaults "
              "(python -m smores_assembly.params --write-config "
              f"{args.check_config})", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
