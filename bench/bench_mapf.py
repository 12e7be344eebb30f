"""MAPF benchmark: success rate, runtime and cost of CBS and ECBS on random grids.

    python -m bench.bench_mapf [--quick] [--w 1.3] [--time-limit 1.0]

Instances (fixed seed): 8x8 with 12 random obstacles and 4..20 agents; 32x32 with 20 %
obstacles and 10..50 agents; 20 instances per row. Starts and goals are distinct random
cells of the largest connected free region. Every returned schedule is checked with
:func:`smores_assembly.navigation.mapf.validate_schedule`. "cost/CBS" is the mean (and max)
ratio of the ECBS cost to the optimal CBS cost over the instances both solved.
Columns: CBS (optimal), ECBS (w; with the default post-optimisation), optionally ECBS+
(``--tight-w``: ECBS with that factor on 25 % of the budget first, then w). An instance
counts as solved when it is solved within the time limit of CPU time (the machine may be
shared: the solver's bound is set on ``time.process_time``). Times in the table are CPU
seconds per instance (mean/max over the solved ones).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from smores_assembly.navigation.mapf import (Grid, NavigationError, solve,
                                             validate_schedule)


def make_instance(rng: random.Random, size: int, n_obstacles: int, n_agents: int):
    """A random instance: (grid, starts, goals) with agents a0..a{n-1}."""
    while True:
        cells = [(x, y) for x in range(size) for y in range(size)]
        obstacles = rng.sample(cells, n_obstacles)
        grid = Grid(size, size, obstacles)
        free = [c for c in cells if grid.free(c)]
        # largest connected component
        seen: set = set()
        best: list = []
        for c in free:
            if c in seen:
                continue
            comp = list(grid.distances(c))
            seen.update(comp)
            if len(comp) > len(best):
                best = comp
        if len(best) < n_agents:
            continue
        best.sort()
        starts = rng.sample(best, n_agents)
        goals = rng.sample(best, n_agents)
        names = [f"a{i}" for i in range(n_agents)]
        return grid, dict(zip(names, starts)), dict(zip(names, goals))


def run(algorithm: str, inst, w: float, time_limit: float, tight_w=None):
    """Solve one instance; returns (solution or None, CPU seconds of this process).

    The bound is on CPU time (``clock=time.process_time``): the machine may be shared,
    and other processes must not decide which instances count as solved.
    """
    grid, starts, goals = inst
    c0 = time.process_time()
    try:
        sol = solve(grid, starts, goals, algorithm=algorithm, w=w,
                    time_limit_s=time_limit, clock=time.process_time,
                    max_expansions=10**6, max_low_level_expansions=10**8, tight_w=tight_w)
    except NavigationError:
        return None, time.process_time() - c0
    cpu = time.process_time() - c0
    errs = validate_schedule(grid, starts, goals, sol.paths)
    if errs:
        raise AssertionError(f"{algorithm} returned an invalid schedule: {errs[:3]}")
    return sol, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--w", type=float, default=1.3, help="ECBS suboptimality factor")
    ap.add_argument("--tight-w", type=float, default=None,
                    help="add a column ECBS+: ECBS first trying this factor on 25%% of the "
                         "budget")
    ap.add_argument("--time-limit", type=float, default=1.0, help="per instance [s]")
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--quick", action="store_true", help="fewer rows (smoke test)")
    args = ap.parse_args(argv)
    rows = [(8, 12, n) for n in (4, 8, 12, 16, 20)] + \
           [(32, int(0.2 * 32 * 32), n) for n in (10, 20, 30, 40, 50)]
    if args.quick:
        rows = [(8, 12, 8), (32, 204, 20)]
    print(f"# MAPF benchmark: {args.instances} instances/row, time limit {args.time_limit} s, "
          f"ECBS w = {args.w}, seed {args.seed}; times = CPU s")
    algs = {"CBS": ("cbs", None), "ECBS": ("ecbs", None)}
    if args.tight_w:
        algs["ECBS+"] = ("ecbs", args.tight_w)
    hdr = f"| {'map':>5} | {'agents':>6} |"
    for name in algs:
        hdr += f" {name + ' solved':>12} | {name + ' mean/max s':>16} |"
        if name != "CBS":
            hdr += f" {name + ' cost/CBS':>22} |"
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for size, n_obs, n_agents in rows:
        rng = random.Random(f"{args.seed}-{size}-{n_agents}")
        insts = [make_instance(rng, size, n_obs, n_agents) for _ in range(args.instances)]
        res = {name: [run(alg, inst, args.w, args.time_limit, tw) for inst in insts]
               for name, (alg, tw) in algs.items()}
        line = f"| {size:>2}x{size:<2} | {n_agents:>6} |"
        for name in algs:
            ok = [t for sol, t in res[name] if sol is not None and t <= args.time_limit]
            line += f" {f'{len(ok)}/{args.instances}':>12} |"
            line += f" {f'{statistics.mean(ok):.3f}/{max(ok):.3f}' if ok else '-':>16} |"
            if name != "CBS":
                r = [e.cost / c.cost for (c, _), (e, _) in zip(res["CBS"], res[name])
                     if c is not None and e is not None and c.cost > 0]
                cell = f"{statistics.mean(r):.4f} (max {max(r):.3f})" if r else "-"
                line += f" {cell:>22} |"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
