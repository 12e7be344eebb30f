"""MAPF benchmark: success rate, runtime and cost of CBS, ECBS and LaCAM on random grids.

    python -m bench.bench_mapf [--quick] [--w 1.3] [--time-limit 1.0] [--pymapf]

Instances (fixed seed): 8x8 with 12 random obstacles and 4..20 agents; 32x32 with 20 %
obstacles and 10..200 agents (CBS and ECBS up to 50); 20 instances per row. Starts and
goals are distinct random cells of the largest connected free region. Every returned
schedule is checked with :func:`smores_assembly.navigation.mapf.validate_schedule`.
"cost/CBS" is the mean (and max) ratio of a solver's cost to the optimal CBS cost over the
instances both solved.
Columns: CBS (optimal), ECBS (w; with the default post-optimisation), optionally ECBS+
(``--tight-w``: ECBS with that factor on 25 % of the budget first, then w), LaCAM (with its
count-bounded refinement; "first/CBS": its first schedule before the refinement),
optionally pymapf's LaCAM (``--pymapf``, if that package is installed; first solution). An instance
counts as solved when it is solved within the time limit of CPU time (the machine may be
shared: the solver's bound is set on ``time.process_time``). Times in the table are CPU
seconds per instance (median over the solved ones).
"""
from __future__ import annotations

import argparse
import math
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


class _Cost:
    """The cost of a schedule (for a solver that returns only paths)."""

    def __init__(self, paths):
        self.paths = paths
        self.cost = self.initial_cost = sum(len(p) - 1 for p in paths.values())


def run_pymapf(inst, time_limit: float):
    """pymapf's LaCAM (first solution, PyPI ``pymapf``, if installed) on one instance:
    (paths as a :class:`_Cost` or None, CPU s). pymapf's cells are (row, col) = (y, x)."""
    import pymapf
    from pymapf.algorithms.lacam import LaCAM
    grid, starts, goals = inst
    rows = [[1 if (x, y) in grid.obstacles else 0 for x in range(grid.width)]
            for y in range(grid.height)]
    problem = pymapf.MAPFProblem(pymapf.GridMap(rows), [
        pymapf.Agent(a, (starts[a][1], starts[a][0]), (goals[a][1], goals[a][0]))
        for a in sorted(starts)])
    c0 = time.process_time()
    # pymapf bounds only wall time: the same limit, on the wall clock (a loaded machine
    # counts against it)
    sol = LaCAM(time_limit=time_limit, max_expansions=100_000, seed=0).solve(problem)
    cpu = time.process_time() - c0
    if sol is None or cpu > time_limit:
        return None, cpu
    paths = {a: [(c[1], c[0]) for c in p] for a, p in sol.paths.items()}
    errs = validate_schedule(grid, starts, goals, paths)
    if errs:
        raise AssertionError(f"pymapf LaCAM returned an invalid schedule: {errs[:3]}")
    return _Cost(paths), cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--w", type=float, default=1.3, help="ECBS suboptimality factor")
    ap.add_argument("--tight-w", type=float, default=None,
                    help="add a column ECBS+: ECBS first trying this factor on 25%% of the "
                         "budget")
    ap.add_argument("--time-limit", type=float, default=1.0,
                    help="per instance [CPU s] for CBS and ECBS")
    ap.add_argument("--lacam-time-limit", type=float, default=5.0,
                    help="per instance [CPU s] for LaCAM")
    ap.add_argument("--instances", type=int, default=20,
                    help="instances per row (table line)")
    ap.add_argument("--seed", type=int, default=2024,
                    help="seed of the random grids, starts and goals")
    ap.add_argument("--pymapf", action="store_true",
                    help="add a column: pymapf's LaCAM (pip install pymapf)")
    ap.add_argument("--quick", action="store_true", help="fewer rows (smoke test)")
    args = ap.parse_args(argv)
    rows = [(8, 12, n) for n in (4, 8, 12, 16, 20)] + \
           [(32, int(0.2 * 32 * 32), n) for n in (10, 20, 30, 40, 50, 100, 150, 200)]
    if args.quick:
        rows = [(8, 12, 16), (32, 204, 200)]
    print(f"# MAPF benchmark: {args.instances} instances/row, time limit {args.time_limit} s "
          f"(CBS, ECBS), {args.lacam_time_limit} s (LaCAM), ECBS w = {args.w}, seed "
          f"{args.seed}; times = median CPU s over the solved instances; cost/CBS = mean "
          f"(max) over the instances CBS solved; CBS and ECBS are not run beyond 50 agents")
    algs = {"CBS": ("cbs", None), "ECBS": ("ecbs", None)}
    if args.tight_w:
        algs["ECBS+"] = ("ecbs", args.tight_w)
    algs["LaCAM"] = ("lacam", None)
    if args.pymapf:
        algs["pymapf"] = ("pymapf", None)
    hdr = f"| {'map':>5} | {'agents':>6} |"
    for name in algs:
        hdr += f" {name + ' solved':>12} | {name + ' median s':>14} |"
        if name != "CBS":
            hdr += f" {name + ' cost/CBS':>22} |"
        if name == "LaCAM":
            hdr += f" {'first/CBS':>22} |"
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for size, n_obs, n_agents in rows:
        rng = random.Random(f"{args.seed}-{size}-{n_agents}")
        insts = [make_instance(rng, size, n_obs, n_agents) for _ in range(args.instances)]
        res = {}
        for name, (alg, tw) in algs.items():
            if alg in ("cbs", "ecbs") and n_agents > 50:
                res[name] = [(None, math.inf)] * len(insts)
            elif alg == "lacam":
                res[name] = [run(alg, inst, args.w, args.lacam_time_limit) for inst in insts]
            elif alg == "pymapf":
                res[name] = [run_pymapf(inst, args.lacam_time_limit) for inst in insts]
            else:
                res[name] = [run(alg, inst, args.w, args.time_limit, tw) for inst in insts]
        line = f"| {size:>2}x{size:<2} | {n_agents:>6} |"
        for name, (alg, _) in algs.items():
            limit = args.lacam_time_limit if alg in ("lacam", "pymapf") else args.time_limit
            ok = [t for sol, t in res[name] if sol is not None and t <= limit]
            if alg in ("cbs", "ecbs") and n_agents > 50:
                line += f" {'not run':>12} | {'-':>14} |"
            else:
                line += f" {f'{len(ok)}/{args.instances}':>12} |"
                line += f" {f'{statistics.median(ok):.3f}' if ok else '-':>14} |"
            for attr in (("cost",) if name != "LaCAM" else ("cost", "initial_cost")) \
                    if name != "CBS" else ():
                r = [getattr(e, attr) / c.cost for (c, _), (e, _) in zip(res["CBS"], res[name])
                     if c is not None and e is not None and c.cost > 0]
                cell = f"{statistics.mean(r):.3f} (max {max(r):.2f})" if r else "-"
                line += f" {cell:>22} |"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
