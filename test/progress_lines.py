"""The progress lines of ``smores-assemble run`` read back, and the report's phase changes
they must show (imported as ``progress_lines`` by the unit and the end-to-end tests).

A line: ``[  22.6 s] stage 3/4 | m4 APPROACH gap 61 mm | m2 DOCKED retry 1``.
"""
from __future__ import annotations

import re

LINE = re.compile(r"^\[\s*(-?\d+\.\d) s\] stage (\d+)/(\d+) \| (.+)$")
#: the progress line's time resolution [s] (one decimal), half of it either way
RESOLUTION_S = 0.05


def parse(stdout: str) -> list[tuple[float, int, dict[str, str]]]:
    """``(time [s], stage, {module: phase name})`` of every progress line in ``stdout``."""
    out = []
    for line in stdout.splitlines():
        m = LINE.match(line)
        if m:
            mods = dict(part.split(" ")[:2] for part in m.group(4).split(" | "))
            out.append((float(m.group(1)), int(m.group(2)), mods))
    return out


def changes(lines) -> list[tuple[str, str, float]]:
    """``(module, phase, time [s])`` of every line that shows a module in another phase
    than the last line that showed it (its first showing included); IDLE left out, as the
    report leaves it out."""
    shown: dict[str, str] = {}
    out = []
    for t, _, mods in lines:
        for module, phase in mods.items():
            if shown.get(module) != phase and phase != "IDLE":
                out.append((module, phase, t))
            shown[module] = phase
    return out


def report_changes(report: dict) -> list[tuple[str, str, float]]:
    """``(module, phase, start [s])`` of every phase in report.json (undocks, then docks
    of each module), sorted by time."""
    out = [(e["module"], p["phase"], p["start_s"])
           for e in [*report.get("undocks", []), *report["actions"]] for p in e["phases"]]
    return sorted(out, key=lambda c: (c[2], c[0]))


def missing(printed, expected) -> list[tuple[str, str, float]]:
    """The entries of ``expected`` (module, phase, time) that no entry of ``printed`` gives
    with the same module and phase within :data:`RESOLUTION_S` (plus float noise)."""
    return [e for e in expected if not any(
        p[:2] == e[:2] and abs(p[2] - e[2]) <= RESOLUTION_S + 1e-6 for p in printed)]
