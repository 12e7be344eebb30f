"""Navigation planning cost per stage (issue 16, "MAPF time per stage"), without ROS.

    python -m bench.bench_nav_stage [--kind comb] [--n 100] [--seed 0] [--stages 1 2 ...]
                                    [--scenario FILE] [--no-clear-footprint]
                                    [--profile FILE] [--dump FILE]
    python -m bench.bench_nav_stage --compare A.json B.json

The scenario is ``bench_scale``'s (:func:`bench.bench_scale.plannable_scenario`); its plan
is made pipelined (as ``task_assignment`` makes it). Stage ``k`` (1-based) is planned as
the navigation node plans it in lockstep (:func:`smores_assembly.navigation.replay.
plan_problem` with ``work_clock=True``, ``clear_footprint`` on, as ``bench_scale`` runs),
from a made-up world (:func:`stage_start_world`): stage 1 from the scenario's start poses,
a later stage with the placed modules at their goals and the later stages' modules at
their staging poses. Printed per stage: CPU time [s] of the plan (``time.process_time``),
the modules planned and the makespan; ``--dump`` writes every stage plan's paths (exact
floats) as JSON so that two code versions can be compared (``--compare A B``).

A slow plan is not stopped; send SIGUSR1 to the process for every
thread's stack (``faulthandler``).
"""
from __future__ import annotations

import argparse
import cProfile
import faulthandler
import json
import signal
import sys
import time
from pathlib import Path

from smores_assembly.errors import SmoresError
from smores_assembly.geometry import Pose2D
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.replay import plan_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import Scenario, scenario_from_dict
from smores_assembly.staging import staging_poses
from smores_assembly.yaml_io import read_yaml_file

from bench.bench_scale import plannable_scenario


def stage_start_world(plan, sc: Scenario, k: int, targets: dict) -> dict[str, Pose2D]:
    """Poses (module -> Pose2D) as stage ``k`` (0-based) of ``plan`` starts: the root and
    the modules of earlier stages at their goals, those of stage ``k`` and later at their
    staging poses ``targets`` when they have one, every other module where ``sc`` starts
    it (the same world as ``test/random_plans.stage_start_world``)."""
    poses = dict(sc.modules)
    if k > 0:
        poses[plan.root_module] = plan.goals[plan.root_module]
    for a in plan.actions:
        if a.stage < k:
            poses[a.module] = plan.goals[a.module]
        elif k > 0 and a.module in targets:
            poses[a.module] = targets[a.module]
    return poses


def _exact_paths(sp) -> dict:
    """A stage plan's paths with exact floats (``repr``): module -> [[t, x, y, yaw], ...]."""
    return {m: [[repr(t), repr(p.x), repr(p.y), repr(p.yaw)] for t, p in path]
            for m, path in sorted(sp.paths.items())}


def stage_plans(kind: str, n: int, seed: int, stages: list[int] | None, nav: NavSettings,
                profile: str | None = None, verbose: bool = True,
                scenario: str | None = None) -> dict:
    """Plan the chosen stages (1-based; None: all) of the scenario (``scenario``: a
    scenario file instead of ``bench_scale``'s ``kind``, ``n``, ``seed``); returns
    ``{"scenario": source, "stages": {k: {"cpu_s", "modules", "paths" | "error"}}}``."""
    if scenario:
        data = {**read_yaml_file(scenario), "source": scenario}
    else:
        data, _ = plannable_scenario(kind, n, seed)
    sc = scenario_from_dict(data)
    plan = with_schedule(plan_assembly(sc), "pipelined")
    targets = staging_poses(plan, nav.predock_standoff)
    out: dict = {"scenario": data["source"], "modules": len(sc.modules),
                 "n_stages": len(plan.stages), "stages": {}}
    if verbose:
        print(f"{data['source']}: {len(sc.modules)} modules, {len(plan.stages)} stages",
              flush=True)
    prof = cProfile.Profile() if profile else None
    for k in (stages or range(1, len(plan.stages) + 1)):
        poses = stage_start_world(plan, sc, k - 1, targets)
        prob = nav_problem(plan, k - 1, poses, set(), {}, nav, staging_targets=targets)
        c0 = time.process_time()
        if prof:
            prof.enable()
        try:
            sp, staged = plan_problem(prob, nav, work_clock=True)
            entry = {"paths": _exact_paths(sp), "staged": sorted(staged)}
        except SmoresError as exc:
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            if prof:
                prof.disable()
        cpu = time.process_time() - c0
        entry["cpu_s"] = round(cpu, 3)
        entry["modules"] = len(entry.get("paths", {}))
        out["stages"][str(k)] = entry
        if verbose:
            res = entry.get("error", "")[:120] or \
                f"{entry['modules']} paths, makespan " \
                f"{max((float(p[-1][0]) for p in entry['paths'].values()), default=0):.1f} s"
            print(f"stage {k:>3}: {cpu:8.2f} s CPU  {res}", flush=True)
    if prof:
        prof.dump_stats(profile)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_nav_stage")
    ap.add_argument("--kind", default="comb")
    ap.add_argument("--n", type=int, default=100, help="target nodes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stages", type=int, nargs="*", default=None, help="1-based; all")
    ap.add_argument("--scenario", default=None,
                    help="a scenario file instead of bench_scale's (--kind, --n, --seed)")
    ap.add_argument("--no-clear-footprint", action="store_false", dest="clear_footprint",
                    help="the navigation's default clear_footprint (off; bench_scale: on)")
    ap.add_argument("--profile", default=None, help="cProfile stats file")
    ap.add_argument("--dump", default=None, help="JSON of every stage plan")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two dumps")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diff = [k for k in sorted(set(a["stages"]) | set(b["stages"]), key=int)
                if {x: y for x, y in a["stages"].get(k, {}).items() if x != "cpu_s"}
                != {x: y for x, y in b["stages"].get(k, {}).items() if x != "cpu_s"}]
        print(f"{len(a['stages'])} / {len(b['stages'])} stages, differ: {diff or 'none'}")
        return 1 if diff or set(a["stages"]) != set(b["stages"]) else 0
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    out = stage_plans(args.kind, args.n, args.seed, args.stages,
                      NavSettings(clear_footprint=args.clear_footprint), args.profile,
                      scenario=args.scenario)
    if args.dump:
        Path(args.dump).write_text(json.dumps(out, sort_keys=True, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
