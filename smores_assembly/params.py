"""Settings dataclasses that double as ROS parameters (no ROS imports).

Core modules describe their tunables as ``@dataclass`` fields made with :func:`param_field`;
``smores_assembly.ros.common.declare_dataclass_params`` turns them into declared, range-
checked ROS parameters. One description and one range per tunable, in one place.
"""
from __future__ import annotations

import dataclasses
from typing import Any


def param_field(default: Any, description: str, lo: float | None = None,
                hi: float | None = None, **kw) -> Any:
    """A dataclass field carrying a parameter description and an inclusive range [lo, hi]."""
    md = {"description": description}
    if lo is not None or hi is not None:
        md["range"] = (lo, hi)
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
