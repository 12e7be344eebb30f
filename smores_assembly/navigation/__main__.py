"""``python -m smores_assembly.navigation INPUT.yaml [--algorithm cbs|ecbs|prioritized|lacam]``.

Reads a MAPF instance in the libMultiRobotPlanning input format::

    map: {dimensions: [W, H], obstacles: [[x, y], ...]}
    agents: [{name: a0, start: [x, y], goal: [x, y]}, ...]

and prints the solution in its output format (YAML on stdout, or ``--output FILE``)::

    statistics: {cost, makespan, runtime, highLevelExpanded, lowLevelExpanded}
    schedule: {a0: [{x, y, t}, ...], ...}

Exit status 0 on success, 2 with one line on stderr when the input is invalid
(``error: invalid input: ...``, e.g. unknown keys, a map larger than :data:`MAX_CELLS`),
the input or output file cannot be read or written, or no solution is found within the
bounds (``error: no solution: ...``).
"""
from __future__ import annotations

import argparse
import sys

import yaml

import math
import os

from smores_assembly.argtypes import bounded
from smores_assembly.errors import InputError
from smores_assembly.yaml_io import DuplicateKeyError, YamlError, read_yaml_file
from smores_assembly.navigation.mapf import (DuplicateGoalError, DuplicateStartError, Grid,
                                             InvalidCellError, NavigationError, solve)

#: Largest map accepted (width * height cells): the grid keeps per-cell adjacency lists.
MAX_CELLS = 4_000_000
_TOP_KEYS = ("map", "agents")
_MAP_KEYS = ("dimensions", "obstacles")
_AGENT_KEYS = ("name", "start", "goal")


class InvalidInput(InputError):
    """The instance file is malformed (the message names the field)."""


def _check_keys(d: dict, where: str, allowed: tuple[str, ...]) -> None:
    for k in d:
        if k not in allowed:
            raise InvalidInput(f"{where}: unknown key {k!r} (expected one of "
                               f"{', '.join(allowed)})")


_non_negative_int = bounded(int, lo=0)
_at_least_one = bounded(float, lo=1.0)
_non_negative_float = bounded(float, lo=0.0)


def load_instance(data: dict) -> tuple[Grid, dict, dict]:
    """Parse a libMultiRobotPlanning instance (already loaded YAML).

    Raises:
        InvalidInput: (an InputError) naming the missing, unknown or malformed field, or a
            map of more than :data:`MAX_CELLS` cells.
    """
    if not isinstance(data, dict):
        raise InvalidInput("input: expected a mapping with keys 'map' and 'agents'")
    _check_keys(data, "input", _TOP_KEYS)
    m = data.get("map")
    if not isinstance(m, dict):
        raise InvalidInput("map: missing (expected a mapping with keys dimensions, obstacles)")
    _check_keys(m, "map", _MAP_KEYS)
    if "dimensions" not in m:
        raise InvalidInput("map.dimensions: missing")
    dims = m["dimensions"]
    if not isinstance(dims, (list, tuple)) or len(dims) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v == int(v) and v >= 1 for v in dims):
        raise InvalidInput(f"map.dimensions: expected [W, H] (positive integers), got {dims!r}")
    dims = [int(v) for v in dims]
    if dims[0] * dims[1] > MAX_CELLS:
        raise InvalidInput(f"map.dimensions: {dims[0]}x{dims[1]} map has "
                           f"{dims[0] * dims[1]} cells, more than the {MAX_CELLS} supported")
    try:
        grid = Grid(dims[0], dims[1], m.get("obstacles") or [])
    except (TypeError, IndexError) as exc:
        raise InvalidInput(f"map.obstacles: expected a list of [x, y], got "
                           f"{m.get('obstacles')!r} ({exc})") from None
    except InputError as exc:
        raise InvalidInput(f"map.{exc}") from None
    agents = data.get("agents")
    if not isinstance(agents, list):
        raise InvalidInput("agents: expected a list of {name, start, goal}")
    starts, goals = {}, {}
    for i, a in enumerate(agents):
        if not isinstance(a, dict) or not set(_AGENT_KEYS) <= set(a):
            raise InvalidInput(f"agents[{i}]: expected keys name, start, goal, got {a!r}")
        _check_keys(a, f"agents[{i}]", _AGENT_KEYS)
        name = str(a["name"])
        if name in starts:
            raise InvalidInput(f"agents[{i}].name: duplicate agent name {name!r}")
        starts[name], goals[name] = a["start"], a["goal"]
    return grid, starts, goals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m smores_assembly.navigation",
        description="Multi-agent path finding (CBS / ECBS / LaCAM) on a grid.")
    ap.add_argument("input", help="instance YAML (libMultiRobotPlanning format)")
    ap.add_argument("--algorithm", choices=("cbs", "ecbs", "prioritized", "lacam"),
                    default="cbs")
    ap.add_argument("--w", type=_at_least_one, default=1.3,
                    help="ECBS suboptimality factor (>= 1)")
    ap.add_argument("--output", "-o", help="write the solution here instead of stdout")
    ap.add_argument("--time-limit", type=_non_negative_float, default=30.0,
                    help="search bound [s] (>= 0)")
    ap.add_argument("--max-expansions", type=_non_negative_int, default=1_000_000,
                    help="bound on high-level nodes")
    args = ap.parse_args(argv)
    if args.output:
        parent = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(parent):
            print(f"error: cannot write {args.output}: directory {parent} does not exist",
                  file=sys.stderr)
            return 2
    try:
        data = read_yaml_file(args.input)
    except DuplicateKeyError as exc:
        print(f"error: invalid input: {exc}", file=sys.stderr)
        return 2
    except YamlError as exc:
        print(f"error: cannot read {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    try:
        grid, starts, goals = load_instance(data)
    except InvalidInput as exc:
        print(f"error: invalid input: {args.input}: {exc}", file=sys.stderr)
        return 2
    try:
        sol = solve(grid, starts, goals, algorithm=args.algorithm, w=args.w,
                    time_limit_s=args.time_limit, max_expansions=args.max_expansions,
                    max_low_level_expansions=100 * args.max_expansions)
    except (InvalidCellError, DuplicateGoalError, DuplicateStartError) as exc:
        print(f"error: invalid input: {args.input}: {exc}", file=sys.stderr)
        return 2
    except NavigationError as exc:  # unreachable goal, search bound hit, no solution
        print(f"error: no solution: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:  # an argument solve() refuses
        print(f"error: invalid argument: {exc}", file=sys.stderr)
        return 2
    out = {
        "statistics": {"cost": sol.cost, "makespan": sol.makespan,
                       "runtime": round(sol.runtime_s, 6),
                       "highLevelExpanded": sol.high_level_expanded,
                       "lowLevelExpanded": sol.low_level_expanded},
        "schedule": {a: [{"x": c[0], "y": c[1], "t": t} for t, c in enumerate(p)]
                     for a, p in sol.paths.items()},
    }
    text = yaml.safe_dump(out, sort_keys=False, default_flow_style=None)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            print(f"error: cannot write {args.output}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
