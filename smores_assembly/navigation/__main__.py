"""``python -m smores_assembly.navigation INPUT.yaml [--algorithm cbs|ecbs] [--w 1.3]``

Reads a MAPF instance in the libMultiRobotPlanning input format::

    map: {dimensions: [W, H], obstacles: [[x, y], ...]}
    agents: [{name: a0, start: [x, y], goal: [x, y]}, ...]

and prints the solution in its output format (YAML on stdout, or ``--output FILE``)::

    statistics: {cost, makespan, runtime, highLevelExpanded, lowLevelExpanded}
    schedule: {a0: [{x, y, t}, ...], ...}

Exit status 0 on success, 2 with one line on stderr when the input is invalid or no
solution is found within the bounds.
"""
from __future__ import annotations

import argparse
import sys

import yaml

from smores_assembly.navigation.mapf import Grid, NavigationError, solve


def load_instance(data: dict) -> tuple[Grid, dict, dict]:
    """Parse a libMultiRobotPlanning instance (already loaded YAML).

    Raises:
        ValueError: naming the missing or malformed field.
    """
    if not isinstance(data, dict):
        raise ValueError("input: expected a mapping with keys 'map' and 'agents'")
    m = data.get("map")
    if not isinstance(m, dict) or "dimensions" not in m:
        raise ValueError("map.dimensions: missing")
    dims = m["dimensions"]
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise ValueError(f"map.dimensions: expected [W, H], got {dims!r}")
    grid = Grid(dims[0], dims[1], m.get("obstacles") or [])
    agents = data.get("agents")
    if not isinstance(agents, list):
        raise ValueError("agents: expected a list of {name, start, goal}")
    starts, goals = {}, {}
    for i, a in enumerate(agents):
        if not isinstance(a, dict) or not {"name", "start", "goal"} <= set(a):
            raise ValueError(f"agents[{i}]: expected keys name, start, goal, got {a!r}")
        name = str(a["name"])
        if name in starts:
            raise ValueError(f"agents[{i}].name: duplicate agent name {name!r}")
        starts[name], goals[name] = a["start"], a["goal"]
    return grid, starts, goals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m smores_assembly.navigation",
                                 description="Multi-agent path finding (CBS / ECBS) on a grid.")
    ap.add_argument("input", help="instance YAML (libMultiRobotPlanning format)")
    ap.add_argument("--algorithm", choices=("cbs", "ecbs", "prioritized"), default="cbs")
    ap.add_argument("--w", type=float, default=1.3, help="ECBS suboptimality factor (>= 1)")
    ap.add_argument("--output", "-o", help="write the solution here instead of stdout")
    ap.add_argument("--time-limit", type=float, default=30.0, help="search bound [s]")
    ap.add_argument("--max-expansions", type=int, default=1_000_000,
                    help="bound on high-level nodes")
    args = ap.parse_args(argv)
    try:
        with open(args.input) as f:
            data = yaml.safe_load(f)
        grid, starts, goals = load_instance(data)
        sol = solve(grid, starts, goals, algorithm=args.algorithm, w=args.w,
                    time_limit_s=args.time_limit, max_expansions=args.max_expansions,
                    max_low_level_expansions=100 * args.max_expansions)
    except (OSError, yaml.YAMLError) as exc:
        print(f"error: cannot read {args.input}: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    except (NavigationError, ValueError) as exc:
        print(f"error: no solution: {exc}", file=sys.stderr)
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
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
