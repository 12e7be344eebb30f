"""Every plan of the planning benchmarks' targets, as JSON, to check that a change to the
planner leaves plans byte-identical.

    python -m bench.plan_dump OUT.json [--quick]
    python -m bench.plan_dump --compare A.json B.json

Targets: ``bench_planning``'s random trees and combs at 10, 30, 100 and 200 nodes (seeds
``1000 * N + r``, r = 0..9) and at 1,000 nodes (r = 0..4), and ``bench_scale``'s random
targets of 20, 30, 50 and 100 nodes (seeds 0-49); ``--quick`` takes fewer (3 seeds each,
1,000 nodes: 2). Each target's entry is ``Plan.to_dict()`` with its floats as ``repr``
(exact), or the refusal's class and text. ``--compare`` prints the targets that differ
(exit 1) or that the two files are identical (exit 0).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from smores_assembly.errors import PlanningError
from smores_assembly.planning import plan_assembly
from smores_assembly.scenario import scenario_from_dict

from bench.bench_planning import make_comb_dict, make_scenario_dict
from bench.bench_scale import scale_scenario_dict


def targets(quick: bool = False):
    """``(name, scenario dict)`` of every target (module docstring)."""
    few = 3 if quick else 10
    for n in (10, 30, 100, 200):
        for r in range(few):
            yield f"bp random {n} r{r}", make_scenario_dict(n, 1000 * n + r)
            yield f"bp comb {n} r{r}", make_comb_dict(n, 1000 * n + r)
    for r in range(2 if quick else 5):
        yield f"bp random 1000 r{r}", make_scenario_dict(1000, 1000 * 1000 + r)
        yield f"bp comb 1000 r{r}", make_comb_dict(1000, 1000 * 1000 + r)
    for n in (20, 30, 50, 100):
        for s in range(few if quick else 50):
            yield f"bs random {n} s{s}", scale_scenario_dict("random", n, s)


def _exact(x):
    """JSON-ready ``x`` with every float as its ``repr`` (no rounding anywhere)."""
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, dict):
        return {k: _exact(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_exact(v) for v in x]
    return x


def dump(quick: bool = False) -> dict:
    """Target name -> its plan (``Plan.to_dict()``, exact floats) or its refusal."""
    out = {}
    for name, data in targets(quick):
        sc = scenario_from_dict(data)
        try:
            out[name] = _exact(plan_assembly(sc).to_dict())
        except PlanningError as exc:
            out[name] = {"refused": type(exc).__name__, "message": str(exc)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.plan_dump")
    ap.add_argument("out", nargs="?", help="JSON file to write")
    ap.add_argument("--quick", action="store_true", help="fewer targets")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two dumps")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        for k in diff:
            print(f"differs: {k}")
        print(f"{len(set(a) | set(b))} targets, {len(diff)} differ"
              + ("" if diff else ": identical"))
        return 1 if diff else 0
    if not args.out:
        ap.error("OUT or --compare A B")
    plans = dump(args.quick)
    Path(args.out).write_text(json.dumps(plans, sort_keys=True, indent=0))
    refused = sum(1 for p in plans.values() if "refused" in p)
    print(f"{len(plans)} targets ({refused} refused) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
