"""End-to-end assembly benchmark on the fake hardware: schedule modes (issue 14).

For each scenario and each schedule mode (``sequential``: one dock per stage; ``staged``:
the paper's parallel stages; ``pipelined``: the same stages while later stages' modules
drive to staging poses, :mod:`smores_assembly.staging`) one ``smores-assemble run`` in
lockstep (simulated results do not depend on the machine's load): simulated assembly time,
wall time, retries, collisions, and the speed-up over ``sequential``. Prints each run's
stage timeline (simulated s from the first stage's start) and phase totals.

Goals (issue 14): Task 1 (``mobile_manipulator``) <= 45 s simulated; pipelined vs
sequential >= 2.5x on Task 1, >= 3x on ``holonomic_vehicle``, >= 2x on
``rc_car_two_helpers``.

    python -m bench.bench_assembly [--scenarios a,b] [--modes m1,m2] [--seed N] [--out DIR]
                                   [--timeline] [--jobs N]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from bench import smores_assemble

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ["mobile_manipulator", "holonomic_vehicle", "rc_car", "rc_car_two_helpers"]
MODES = ["sequential", "staged", "pipelined"]
#: scenario -> minimum speed-up of pipelined over sequential (issue 14)
SPEEDUP_GOALS = {"mobile_manipulator": 2.5, "holonomic_vehicle": 3.0, "rc_car_two_helpers": 2.0}
TASK1_GOAL_S = 45.0


def run_one(scenario: str, mode: str, out: Path, seed: int, domain: int | None = None,
            rtf: float = 0.0, timeout: float = 7200.0) -> dict:
    """One ``smores-assemble run`` of ``config/scenarios/<scenario>.yaml`` with ``--schedule
    mode``; its report (``process_wall_s`` added; a failed start gives ``success: False``).
    ``domain`` None: the run draws a free ROS domain itself (``smores_assembly.ros.domain``),
    so runs can go side by side."""
    cmd = [*smores_assemble(), "run",
           str(REPO / "config" / "scenarios" / f"{scenario}.yaml"), "--out", str(out),
           "--schedule", mode, "--seed", str(seed), "--real-time-factor", str(rtf),
           "--timeout", str(timeout)]
    env = dict(os.environ)
    env.pop("ROS_DOMAIN_ID", None)
    if domain is not None:
        env["ROS_DOMAIN_ID"] = str(domain)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.monotonic() - t0
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        report = {"success": False, "error": proc.stderr[-300:],
                  "assembly_time_s": float("nan")}
    report["process_wall_s"] = wall
    return report


def stage_timeline(report: dict) -> list[tuple[int, float, float, dict[str, float]]]:
    """Per stage: (index, start, end, phase -> summed seconds over the stage's docks), in
    simulated s from the first action's first phase, from the report's ``actions``."""
    by_stage: dict[int, list[dict]] = {}
    for a in report.get("actions", []):
        by_stage.setdefault(int(a.get("stage", -1)), []).append(a)
    rows = []
    for k in sorted(by_stage):
        starts, ends, phases = [], [], {}
        for a in by_stage[k]:
            for ph in a.get("phases", []):
                s, e = ph.get("start_s"), ph.get("end_s")
                if s is None or e is None:
                    continue
                starts.append(s)
                ends.append(e)
                phases[ph["phase"]] = phases.get(ph["phase"], 0.0) + (e - s)
        if starts:
            rows.append((k, min(starts), max(ends), phases))
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.bench_assembly")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated scenario names of config/scenarios (default: "
                         "%(default)s)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated schedule modes, each run per scenario (default: "
                         "%(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="simulation seed of every run")
    ap.add_argument("--out", default=None, help="keep the runs' reports here")
    ap.add_argument("--timeline", action="store_true", help="print each run's stages")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs side by side (each in its own free ROS domain; lockstep: the "
                         "simulated results do not change, only the wall times)")
    args = ap.parse_args(argv)
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench_assembly_"))
    modes = args.modes.split(",")
    results: dict[tuple[str, str], dict] = {}
    runs = [(name, mode) for name in args.scenarios.split(",") for mode in modes]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_one, name, mode, base / name / mode, args.seed): (name, mode)
                   for name, mode in runs}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
    for name, mode in runs:
        r = results[(name, mode)]
        ok = "ok" if r.get("success") else "FAILED"
        print(f"{name:<20} {mode:<10} {ok:<6} {r['assembly_time_s']:7.1f} s simulated "
              f"{r['process_wall_s']:6.1f} s wall", flush=True)
        if args.timeline:
            for k, s, e, ph in stage_timeline(r):
                parts = ", ".join(f"{p} {v:.1f}" for p, v in sorted(ph.items()))
                print(f"    stage {k + 1}: {s:6.1f} .. {e:6.1f} s ({e - s:5.1f} s): {parts}")
    print(f"\nlockstep, seed {args.seed}; reports in {base}")
    head = f"{'scenario':<20}" + "".join(f" {m + ' [s]':>16}" for m in modes)
    if "sequential" in modes:
        head += "".join(f" {m + ' x':>13}" for m in modes if m != "sequential")
    print(head + "  retries  collisions")
    status = 0
    for name in args.scenarios.split(","):
        line = f"{name:<20}"
        for m in modes:
            r = results[(name, m)]
            line += f" {r['assembly_time_s']:>12.1f}{'' if r.get('success') else ' (F)':>4}"
        if "sequential" in modes:
            seq = results[(name, "sequential")]["assembly_time_s"]
            for m in modes:
                if m != "sequential":
                    t = results[(name, m)]["assembly_time_s"]
                    line += f" {seq / t if t else float('nan'):>12.2f}x"
        retries = sum(sum(a.get("retries", 0) for a in results[(name, m)].get("actions", []))
                      for m in modes)
        coll = sum(len(results[(name, m)].get("collisions", [])) for m in modes)
        print(line + f"  {retries:>7}  {coll:>10}")
        if not all(results[(name, m)].get("success") for m in modes):
            status = 1
    for name, goal in SPEEDUP_GOALS.items():
        if (name, "pipelined") in results and (name, "sequential") in results:
            t = results[(name, "pipelined")]["assembly_time_s"]
            sp = results[(name, "sequential")]["assembly_time_s"] / t if t else float("nan")
            print(f"goal: {name} pipelined vs sequential >= {goal}x: {sp:.2f}x -> "
                  f"{'met' if sp >= goal else 'NOT met'}")
    t1 = results.get(("mobile_manipulator", "pipelined"))
    if t1 is not None:
        t = t1["assembly_time_s"]
        print(f"goal: Task 1 <= {TASK1_GOAL_S:g} s simulated: {t:.1f} s -> "
              f"{'met' if t1.get('success') and t <= TASK1_GOAL_S else 'NOT met'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
