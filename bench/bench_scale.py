"""Scale benchmark (issue 16): 10 / 25 / 50 / 100 modules assembled end to end.

    python -m bench.bench_scale [--sizes 10 25 50 100] [--kinds random,comb] [--seed S]
                                [--timeout S] [--out DIR] [--plan-only] [--single-process]

Scenarios (:func:`scale_scenario_dict`): a random planar tree
(:func:`smores_assembly.topology.random_planar_tree`, the first seed from ``--seed`` on
whose plan is not refused: most random trees of 100+ nodes have docking corridors that
block each other) or a comb (:func:`smores_assembly.topology.comb_tree`, ``sqrt(n) x
sqrt(n)``, a solid block of cells); one module per node and 10 % more as helpers on a
jittered square lattice of ``spacing`` round the origin, so that the target's footprint
covers idle modules (the stage planner moves them out of it, issue 16).

Each scenario: planning time (``plan_assembly``, CPU), then one ``smores-assemble run`` in
lockstep (``--real-time-factor 0``, seed 0, the navigation's ``clear_footprint`` on unless
``--no-clear-footprint``) with every process sampled from ``/proc``:
simulated and wall assembly time, CPU s of all processes per simulated s, peak memory
(summed peak RSS of the processes), and the navigation's MAPF search time per stage (from
its log); ``--single-process`` runs the stack in one process (``run --single-process``).
Goal: 100 modules assembled; CPU per simulated s growing at most linearly in the number of
modules: the column ``CPU/sim/mod`` (CPU s per simulated s and module, in ms) stays flat
or falls when it does.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from pathlib import Path

import yaml

from bench import smores_assemble
from bench.bench_lockstep import run_sampled
from smores_assembly.errors import PlanningError
from smores_assembly.planning import plan_assembly
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.topology import comb_tree, random_planar_tree

REPO = Path(__file__).resolve().parents[1]
KINDS = ("random", "comb")


def scale_scenario_dict(kind: str, n_nodes: int, seed: int = 0, spacing: float = 0.3,
                        jitter: float = 0.05) -> dict:
    """A scenario (file form) for the scale benchmark and tests.

    Args:
        kind: ``"random"`` (random planar tree of ``n_nodes``) or ``"comb"`` (a
            ``round(sqrt(n)) x round(sqrt(n))`` comb).
        n_nodes: target size; seed: tree and layout seed.
        spacing: lattice pitch of the start poses [m]; jitter: uniform offset per axis
            [m] (< ``(spacing - 0.12) / 2`` keeps bodies 0.12 m apart).

    Modules ``m0..`` (one per node) and helpers ``h0..`` (10 % of the nodes, at least
    one) stand on a square lattice centred on the origin in row-major order, yaw uniform.
    The spare modules are listed as helpers: the fake hardware lets only a scenario's
    helpers carry (the planner would otherwise pick spare modules as helpers, and the
    fake hardware refuses their LIFT: a random 30-node tree failed so).

    Raises:
        ValueError: an unknown ``kind`` (named).
    """
    if kind == "random":
        nodes, edges = random_planar_tree(n_nodes, seed=seed)
    elif kind == "comb":
        side = max(1, round(math.sqrt(n_nodes)))
        nodes, edges = comb_tree(side, side)
    else:
        raise ValueError(f"kind: {kind!r} is not one of {KINDS}")
    rng = random.Random(seed)
    helpers = [f"h{i}" for i in range(max(1, len(nodes) // 10))]
    ids = [f"m{i}" for i in range(len(nodes))] + helpers
    cols = math.ceil(math.sqrt(len(ids)))
    half = 0.5 * spacing * (cols - 1)
    modules = {}
    for k, m in enumerate(ids):
        i, j = divmod(k, cols)
        modules[m] = [round(-half + j * spacing + rng.uniform(-jitter, jitter), 4),
                      round(-half + i * spacing + rng.uniform(-jitter, jitter), 4),
                      round(rng.uniform(-math.pi, math.pi), 4)]
    return {"name": f"{kind}{len(nodes)}", "source": "bench_scale", "module_width": 0.08,
            "target": {"nodes": nodes, "edges": [e.to_dict() for e in edges]},
            "modules": modules, "helpers": helpers}


def plannable_scenario(kind: str, n_nodes: int, seed: int = 0, tries: int = 50
                       ) -> tuple[dict, float]:
    """The first scenario from ``seed`` on (seed, seed + 1, ...) whose plan is not refused,
    and its planning CPU time [s].

    Raises:
        PlanningError: ``tries`` seeds refused.
    """
    last: Exception | None = None
    for s in range(seed, seed + tries):
        data = scale_scenario_dict(kind, n_nodes, s)
        sc = scenario_from_dict(data, check_overlap=True)
        c0 = time.process_time()
        try:
            plan_assembly(sc)
        except PlanningError as exc:
            last = exc
            continue
        data["source"] = f"bench_scale {kind} {n_nodes} seed {s}"
        return data, time.process_time() - c0
    raise PlanningError(f"{kind} {n_nodes}: {tries} seeds from {seed} refused: {last}")


_SEARCH = re.compile(r"stage (\d+) \(.*search ([0-9.]+) ms")


#: ROS parameter overrides of bench_scale's runs: the navigation keeps the footprint still to
#: be built clear (``clear_footprint``, off by default), since these scenarios put idle
#: modules on the target's cells.
CLEAR_FOOTPRINT_PARAMS = """/**/navigation:
  ros__parameters:
    clear_footprint: true
"""


def run_scenario(path: Path, out: Path, timeout: float, seed: int = 0,
                 params_file: Path | None = None, single_process: bool = False) -> dict:
    """One lockstep ``smores-assemble run`` of ``path`` with CPU and memory sampling
    (``params_file``: ROS parameter overrides, ``run --params-file``; ``single_process``:
    ``run --single-process``).

    Returns the report's figures and: ``cpu_s`` (all processes, from the first stage's
    start to the verdict), ``cpu_per_sim_s``, ``peak_rss_mb`` (largest sum of the
    processes' peak RSS seen), ``mapf_ms`` (stage -> summed MAPF search time of the
    navigation's plans of that stage, from ``nodes.log``)."""
    cmd = [*smores_assemble(), "run", str(path), "--out", str(out), "--seed", str(seed),
           "--real-time-factor", "0", "--timeout", str(timeout)]
    if params_file is not None:
        cmd += ["--params-file", str(params_file)]
    if single_process:
        cmd.append("--single-process")
    lines, marks, per_pid, at_start, wall, t0, peak = run_sampled(cmd, period_s=1.0)
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        report = {}
    cpu = sum(c - at_start.get(pid, (n, 0.0))[1] for pid, (n, c) in per_pid.items())
    sim = float(report.get("assembly_time_s") or 0.0)
    mapf: dict[int, float] = {}
    try:
        for line in (out / "nodes.log").read_text().splitlines():
            m = _SEARCH.search(line)
            if m:
                mapf[int(m.group(1))] = mapf.get(int(m.group(1)), 0.0) + float(m.group(2))
    except OSError:
        pass
    # a run stopped before its verdict (timeout, Ctrl-C) has no "end" mark: it ran until
    # the process ended (was t0: a negative wall time); no "start" mark: it never ran
    end = marks.get("end", t0 + wall)
    run_wall = max(0.0, end - marks.get("start", end))
    return {"success": bool(report.get("success")),
            "error": report.get("error", "".join(lines[-3:]).strip()),
            "sim_s": sim, "wall_s": round(run_wall, 1), "process_wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "cpu_per_sim_s": round(cpu / sim, 3) if sim > 0 else None,
            "peak_rss_mb": round(peak), "mapf_ms": mapf,
            "connections": len(report.get("connections", [])),
            "missing": len(report.get("missing_connections", [])),
            "collisions": report.get("collisions", report.get("num_collisions"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_scale")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100],
                    help="module counts of the scenarios")
    ap.add_argument("--kinds", default="random,comb",
                    help="comma-separated target kinds: random (planar tree), comb")
    ap.add_argument("--seed", type=int, default=0,
                    help="first seed of the random targets (the first not refused is used)")
    ap.add_argument("--timeout", type=float, default=4 * 3600.0,
                    help="wall-time bound of one run [s]")
    ap.add_argument("--out", default=None, help="keep scenarios and runs here")
    ap.add_argument("--plan-only", action="store_true", dest="plan_only",
                    help="plan only (planning time), no run")
    ap.add_argument("--no-clear-footprint", action="store_false", dest="clear_footprint",
                    help="run with the navigation's default clear_footprint (off) instead of "
                         "on")
    ap.add_argument("--single-process", action="store_true", dest="single_process",
                    help="run the stack in one process (run --single-process)")
    args = ap.parse_args(argv)
    import tempfile
    base = Path(args.out or tempfile.mkdtemp(prefix="bench_scale_"))
    base.mkdir(parents=True, exist_ok=True)
    params = None
    if args.clear_footprint:
        params = base / "clear_footprint.yaml"
        params.write_text(CLEAR_FOOTPRINT_PARAMS)
    print(f"{'target':>10} {'modules':>7} {'plan ms':>8} {'result':>9} {'sim s':>8} "
          f"{'wall s':>8} {'CPU/sim s':>9} {'CPU/sim/mod':>11} {'peak MB':>8} "
          f"{'MAPF ms/stage med (max)':>24}",
          flush=True)
    rows = []
    for n in args.sizes:
        for kind in args.kinds.split(","):
            try:
                data, plan_cpu = plannable_scenario(kind, n, args.seed)
            except PlanningError as exc:  # e.g. no random 100-node tree from seeds 0-49
                print(f"{kind + str(n):>10} {'-':>7} {'-':>8} {'refused':>9}  {exc}"[:300],
                      flush=True)
                continue
            path = base / f"{data['name']}.yaml"
            path.write_text(yaml.safe_dump(data, sort_keys=False))
            mods = len(data["modules"])
            if args.plan_only:
                print(f"{data['name']:>10} {mods:>7} {1e3 * plan_cpu:>8.1f}", flush=True)
                continue
            r = run_scenario(path, base / data["name"], args.timeout, params_file=params,
                             single_process=args.single_process)
            r["modules"] = mods
            per_mod = 1e3 * (r["cpu_per_sim_s"] or float("nan")) / mods
            ms = sorted(r["mapf_ms"].values()) or [float("nan")]
            res = "ok" if r["success"] else f"{r['connections']}/{r['connections'] + r['missing']}"
            print(f"{data['name']:>10} {mods:>7} {1e3 * plan_cpu:>8.1f} {res:>9} "
                  f"{r['sim_s']:>8.1f} {r['wall_s']:>8.1f} "
                  f"{(r['cpu_per_sim_s'] or float('nan')):>9.3f} {per_mod:>8.2f} ms "
                  f"{r['peak_rss_mb']:>8} "
                  f"{ms[len(ms) // 2]:>14.0f} ({max(ms):.0f})", flush=True)
            if not r["success"]:
                print(f"           {r['error'][:300]}", flush=True)
            rows.append((kind, n, r))
    (base / "bench_scale.json").write_text(json.dumps(
        [{"kind": k, "n": n, **r} for k, n, r in rows], indent=1, default=str))
    print(f"runs in {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
