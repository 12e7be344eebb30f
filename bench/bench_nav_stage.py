"""Navigation planning cost per stage (issue 16, "MAPF time per stage"), without ROS.

    python -m bench.bench_nav_stage [--kind comb] [--n 100] [--seed 0] [--stages 1 2 ...]
                                    [--scenario FILE] [--no-clear-footprint]
                                    [--profile FILE] [--dump FILE]
    python -m bench.bench_nav_stage --corpus --dump FILE
    python -m bench.bench_nav_stage --compare A.json B.json

The scenario is ``bench_scale``'s (:func:`bench.bench_scale.plannable_scenario`); its plan
is made pipelined (as ``task_assignment`` makes it). Stage ``k`` (1-based) is planned as
the navigation node plans it in lockstep (:func:`smores_assembly.navigation.replay.
plan_problem` with ``work_clock=True``, ``clear_footprint`` on, as ``bench_scale`` runs),
from a made-up world (:func:`stage_start_world`): stage 1 from the scenario's start poses,
a later stage with the placed modules at their goals and the later stages' modules at
their staging poses. Printed per stage: CPU time [s] of the plan (``time.process_time``),
the modules planned and the makespan; ``--dump`` writes every stage plan's paths (exact
floats) as JSON so that two code versions can be compared (``--compare A B``: exit 1
when a stage plan differs); ``--corpus`` plans every stage of :data:`CORPUS` (the bundled
scenarios and small ``bench_scale`` targets), the check that a speed-up changes no plan.

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


#: ``--corpus``: the scenarios whose every stage plan a speed-up must leave unchanged: the
#: bundled scenarios (default settings, as ``make demo`` runs them) and ``bench_scale``
#: targets (``clear_footprint`` on): comb 25 and 50, random 30 and 50 from seeds 0 and 1
#: (``plannable_scenario``: the first seed from there whose plan is not refused).
CORPUS = ([{"scenario": f"config/scenarios/{n}.yaml", "clear_footprint": False}
           for n in ("mobile_manipulator", "rc_car", "rc_car_two_helpers",
                     "holonomic_vehicle", "walker_to_manipulator")]
          + [{"kind": "comb", "n": n, "seed": 0} for n in (25, 50)]
          + [{"kind": "random", "n": n, "seed": s} for n in (30, 50) for s in (0, 1)])


def corpus_plans(verbose: bool = True) -> dict:
    """Every stage plan of :data:`CORPUS`: scenario source -> :func:`stage_plans`'s
    result."""
    out = {}
    for c in CORPUS:
        nav = NavSettings(clear_footprint=c.get("clear_footprint", True))
        o = stage_plans(c.get("kind", "comb"), c.get("n", 0), c.get("seed", 0), None, nav,
                        verbose=False, scenario=c.get("scenario"))
        out[o["scenario"]] = o
        if verbose:
            cpu = [e["cpu_s"] for e in o["stages"].values()]
            print(f"{o['scenario']}: {o['n_stages']} stages, CPU sum {sum(cpu):.2f} s, max "
                  f"{max(cpu):.2f} s", flush=True)
    return out


def compare(a: dict, b: dict) -> list[str]:
    """The stage plans (``"scenario stage"``) that differ between two dumps (CPU times
    aside), those that only one has included."""
    a, b = ({d["scenario"]: d} if "stages" in d else d for d in (a, b))
    diff = []
    for sc in sorted(set(a) | set(b)):
        sa, sb = a.get(sc, {}).get("stages", {}), b.get(sc, {}).get("stages", {})
        for k in sorted(set(sa) | set(sb), key=int):
            ea = {x: y for x, y in sa.get(k, {}).items() if x != "cpu_s"}
            eb = {x: y for x, y in sb.get(k, {}).items() if x != "cpu_s"}
            if ea != eb or not ea:
                diff.append(f"{sc} stage {k}")
    return diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_nav_stage")
    ap.add_argument("--kind", default="comb", help="bench_scale target kind: comb or random")
    ap.add_argument("--n", type=int, default=100, help="target nodes")
    ap.add_argument("--seed", type=int, default=0,
                    help="first seed of the target (the first not refused is used)")
    ap.add_argument("--stages", type=int, nargs="*", default=None, help="1-based; all")
    ap.add_argument("--scenario", default=None,
                    help="a scenario file instead of bench_scale's (--kind, --n, --seed)")
    ap.add_argument("--no-clear-footprint", action="store_false", dest="clear_footprint",
                    help="the navigation's default clear_footprint (off; bench_scale: on)")
    ap.add_argument("--profile", default=None, help="cProfile stats file")
    ap.add_argument("--dump", default=None, help="JSON of every stage plan")
    ap.add_argument("--corpus", action="store_true",
                    help="every stage of the CORPUS scenarios (bundled + bench_scale)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two dumps")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diff = compare(a, b)
        for d in diff:
            print(f"differs: {d}")
        n = sum(len(d["stages"]) for d in ({a["scenario"]: a} if "stages" in a else a).values())
        print(f"{n} stage plans, {len(diff)} differ" + ("" if diff else ": identical"))
        return 1 if diff else 0
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if args.corpus:
        out = corpus_plans()
        if args.dump:
            Path(args.dump).write_text(json.dumps(out, sort_keys=True, indent=0))
        return 0
    out = stage_plans(args.kind, args.n, args.seed, args.stages,
                      NavSettings(clear_footprint=args.clear_footprint), args.profile,
                      scenario=args.scenario)
    if args.dump:
        Path(args.dump).write_text(json.dumps(out, sort_keys=True, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
