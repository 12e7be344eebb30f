"""End-to-end assembly benchmark on the fake hardware.

For each reference scenario: simulated assembly time and wall time of the parallel plan,
and of the same plan executed one dock at a time (``task_assignment.sequential``).
Goals: Task 1 end-to-end in under 60 s of wall time; parallel at least 2x faster than
sequential in simulated time.

    python -m bench.bench_assembly [--scenarios a,b] [--rtf F] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import SMORES_ASSEMBLE

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ["mobile_manipulator", "holonomic_vehicle", "rc_car"]


def _run(scenario: str, out: Path, rtf: float, sequential: bool, domain: int) -> dict:
    cmd = [SMORES_ASSEMBLE, "run",
           str(REPO / "config" / "scenarios" / f"{scenario}.yaml"), "--out", str(out),
           "--real-time-factor", str(rtf)]
    if sequential:
        params = out / "sequential.yaml"
        out.mkdir(parents=True, exist_ok=True)
        params.write_text("task_assignment:\n  ros__parameters:\n    sequential: true\n")
        cmd += ["--params-file", str(params)]
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.monotonic() - t0
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        report = {"success": False, "error": proc.stderr[-300:], "assembly_time_s": float("nan")}
    report["process_wall_s"] = wall
    return report


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.bench_assembly")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--rtf", type=float, default=4.0, help="fake hardware real-time factor")
    ap.add_argument("--out", default=None, help="keep the runs' reports here")
    args = ap.parse_args(argv)
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench_assembly_"))
    rows = []
    domain = 150 + os.getpid() % 50
    for name in args.scenarios.split(","):
        par = _run(name, base / name / "parallel", args.rtf, False, domain)
        seq = _run(name, base / name / "sequential", args.rtf, True, domain + 1)
        rows.append((name, par, seq))
    print(f"fake hardware real-time factor requested: {args.rtf}; reports in {base}")
    print(f"{'scenario':<20} {'ok':>3} {'stages':>6} {'sim s':>7} {'wall s':>7} | "
          f"{'seq ok':>6} {'seq sim s':>9} {'seq wall s':>10} | {'speed-up':>8}")
    status = 0
    for name, par, seq in rows:
        sp = (seq["assembly_time_s"] / par["assembly_time_s"] if par["assembly_time_s"]
              else float("nan"))
        print(f"{name:<20} {'yes' if par['success'] else 'NO':>3} {len(par.get('stages', [])):>6} "
              f"{par['assembly_time_s']:7.1f} {par['process_wall_s']:7.1f} | "
              f"{'yes' if seq['success'] else 'NO':>6} {seq['assembly_time_s']:9.1f} "
              f"{seq['process_wall_s']:10.1f} | {sp:7.2f}x")
        if not par["success"]:
            print(f"  parallel failed: {par.get('error')}")
            status = 1
        if not seq["success"]:
            print(f"  sequential failed: {seq.get('error')}")
    t1 = next((p for n, p, _ in rows if n == "mobile_manipulator"), None)
    if t1 is not None:
        print(f"goal: Task 1 end-to-end < 60 s wall: {t1['process_wall_s']:.1f} s -> "
              f"{'met' if t1['success'] and t1['process_wall_s'] < 60 else 'NOT met'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
