"""Settings dataclasses that double as ROS parameters (no ROS imports).

Core modules describe their tunables as ``@dataclass`` fields made with :func:`param_field`;
``smores_assembly.ros.common.declare_dataclass_params`` turns them into declared, range-
checked ROS parameters. One description and one range per tunable, in one place.

Contract of a settings class: its fields are made with :func:`param_field`; it may define
``validate(self) -> None``, which raises ``ValueError`` (or a subclass) naming the field and
the value when the settings are out of range (:func:`check_ranges`) or inconsistent across
fields. :func:`validate_settings` applies that contract to any settings instance.

:data:`NODE_SETTINGS` says which settings classes make up each node's parameters; the
classes live next to the cores they configure, so this module, ``param_check`` and the
tests import no ROS.
"""
from __future__ import annotations

import dataclasses
from typing import Any


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
    """Raise ``ValueError`` naming the field and value when a field is outside its range."""
    for f in dataclasses.fields(settings):
        rng = f.metadata.get("range")
        v = getattr(settings, f.name)
        if rng is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        lo, hi = rng
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(f"{f.name}: {v!r} outside [{lo}, {hi}]")


def validate_settings(settings: Any) -> None:
    """Check one settings instance: its own ``validate()`` when it has one (which includes
    the ranges), else the field ranges.

    Raises:
        ValueError: naming the field and the value.
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
    "navigation": ("smores_assembly.navigation.stage:NavSettings",),
    "docking_controller": ("smores_assembly.docking.settings:DockingNodeSettings",
                           "smores_assembly.docking.control:DockingSettings"),
    "executive": ("smores_assembly.sequencer:ExecutiveSettings",),
}


def settings_class(ref: str) -> type:
    """The class named by a ``"module:Class"`` reference of :data:`NODE_SETTINGS`."""
    import importlib  # noqa: PLC0415

    mod, cls = ref.split(":")
    return getattr(importlib.import_module(mod), cls)


def node_settings(node: str) -> list[Any]:
    """Fresh default instances of the settings classes of ``node`` (a key of
    :data:`NODE_SETTINGS`), in declaration order.

    Raises:
        KeyError: ``node`` is not a node of the stack.
    """
    return [settings_class(ref)() for ref in NODE_SETTINGS[node]]
