"""Independent checker of a MAPF schedule (shares no code with the search)."""
from __future__ import annotations

from typing import Mapping, Sequence

from smores_assembly.navigation.mapf.grid import Grid


def validate_schedule(grid: Grid, starts: Mapping[str, Sequence[int]],
                      goals: Mapping[str, Sequence[int]], schedule: Mapping[str, Sequence],
                      k_robust: int = 0) -> list[str]:
    """Check a schedule independently of the search; return the violations (empty if valid).

    ``schedule[a]`` is a list of cells ``(x, y)`` indexed by time, or of dicts
    ``{x, y, t}`` (libMultiRobotPlanning output format, t = 0, 1, 2, ...). After its last
    entry an agent stays at its last cell forever.

    Checks: every agent of ``starts`` has a schedule; it begins at its start at t = 0 and
    ends at its goal; each step moves to a 4-neighbour or waits; every cell is on the map
    and free; no two agents share a cell at a time step (or within ``k_robust`` steps); no
    two agents swap cells in one step.
    """
    errs: list[str] = []
    seq: dict[str, list[tuple[int, int]]] = {}
    for a in starts:
        if a not in schedule:
            errs.append(f"{a}: no schedule")
            continue
        raw = list(schedule[a])
        if not raw:
            errs.append(f"{a}: empty schedule")
            continue
        cells = []
        for i, e in enumerate(raw):
            if isinstance(e, Mapping):
                if int(e["t"]) != i:
                    errs.append(f"{a}: entry {i} has t={e['t']}")
                cells.append((int(e["x"]), int(e["y"])))
            else:
                cells.append((int(e[0]), int(e[1])))
        seq[a] = cells
        if cells[0] != tuple(starts[a]):
            errs.append(f"{a}: starts at {cells[0]}, expected {tuple(starts[a])}")
        if cells[-1] != tuple(goals[a]):
            errs.append(f"{a}: ends at {cells[-1]}, expected {tuple(goals[a])}")
        for t, (x, y) in enumerate(cells):
            if not (0 <= x < grid.width and 0 <= y < grid.height) or (x, y) in grid.obstacles:
                errs.append(f"{a}: t={t} at blocked/outside cell {(x, y)}")
            if t > 0:
                px, py = cells[t - 1]
                if abs(px - x) + abs(py - y) > 1:
                    errs.append(f"{a}: jump {(px, py)} -> {(x, y)} at t={t}")
    for a in schedule:
        if a not in starts:
            errs.append(f"{a}: scheduled but not an agent")
    if errs:
        return errs
    horizon = max(len(c) for c in seq.values()) + k_robust + 1

    def at(a, t):
        c = seq[a]
        return c[t] if t < len(c) else c[-1]

    names = sorted(seq)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for t in range(horizon):
                for dt in range(0, k_robust + 1):
                    if at(a, t) == at(b, t + dt):
                        errs.append(f"{a} and {b}: both at {at(a, t)} (t={t}, delay {dt})")
                    elif at(b, t) == at(a, t + dt):
                        errs.append(f"{a} and {b}: both at {at(b, t)} (t={t}, delay {dt})")
                if t > 0 and at(a, t - 1) == at(b, t) and at(b, t - 1) == at(a, t) \
                        and at(a, t) != at(a, t - 1):
                    errs.append(f"{a} and {b}: swap {at(a, t - 1)} <-> {at(b, t - 1)} at t={t - 1}")
    return errs
