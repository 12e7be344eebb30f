"""Read a run's step-by-step trace dump: where every module stood at a simulated time, who
came close to whom, one module's track.

A run started with ``SMORES_TRACE_DUMP=FILE`` in its environment has the fake hardware
write one line per physics step: ``<step> <commands hex> <poses hex>`` (the input of the
report's ``trace_sha256``; the poses are float64 ``(n, 3)`` rows x [m], y [m], yaw [rad] in
the ``world`` frame, in the order of the fake hardware's module list). The module list and
the physics rate come from the run's ``nodes.log``. Every cause of the scale failures of
issue 16 was found this way: the run's poses at the moment things went wrong, replayed
closed loop in a ``SimWorld`` (``test/closed_loop.py``).

    python -m bench.trace_dump DUMP NODES_LOG at T [MODULE ...]
    python -m bench.trace_dump DUMP NODES_LOG near T MODULE [--radius R]
    python -m bench.trace_dump DUMP NODES_LOG track MODULE T0 T1 [--every S]
    python -m bench.trace_dump DUMP NODES_LOG closest T0 T1 [MODULE ...]

``at`` prints a JSON object module -> [x, y, yaw] (a scene to cut out); ``closest`` the
smallest centre distance of each pair of the given modules (default: all) within the
interval and when.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np


def modules_and_rate(nodes_log: Path) -> tuple[list[str], float]:
    """The fake hardware's module ids (pose-row order) and physics rate [Hz] from a run's
    ``nodes.log``.

    Raises:
        ValueError: the log has no fake-hardware start line.
    """
    text = nodes_log.read_text(errors="replace")
    m = re.search(r"fake hardware: \d+ modules \(([^)]*)\).*?physics ([0-9.]+) Hz", text)
    if m is None:
        raise ValueError(f"{nodes_log}: no 'fake hardware: N modules (...) physics R Hz' line")
    return [s.strip() for s in m.group(1).split(",")], float(m.group(2))


def steps(dump: Path, n: int, rate: float, t0: float = 0.0,
          t1: float = math.inf) -> Iterator[tuple[float, np.ndarray]]:
    """``(t [s], poses (n, 3))`` of every dumped step with ``t0 <= t <= t1``."""
    with dump.open() as f:
        for line in f:
            k, _sp, rest = line.partition(" ")
            t = int(k) / rate
            if t < t0 - 1e-9:
                continue
            if t > t1 + 1e-9:
                return
            poses_hex = rest.rsplit(" ", 1)[-1].strip()
            if len(poses_hex) != 48 * n:
                return   # a run still going (or killed) leaves its last line cut short
            yield t, np.frombuffer(bytes.fromhex(poses_hex), dtype="<f8").reshape(n, 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path)
    ap.add_argument("nodes_log", type=Path)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("at", help="every pose at T (JSON)")
    a.add_argument("t", type=float)
    a.add_argument("modules", nargs="*")
    nr = sub.add_parser("near", help="the modules within --radius of MODULE at T")
    nr.add_argument("t", type=float)
    nr.add_argument("module")
    nr.add_argument("--radius", type=float, default=0.3)
    tr = sub.add_parser("track", help="MODULE's pose from T0 to T1")
    tr.add_argument("module")
    tr.add_argument("t0", type=float)
    tr.add_argument("t1", type=float)
    tr.add_argument("--every", type=float, default=0.5)
    cl = sub.add_parser("closest", help="smallest centre distance of each pair in [T0, T1]")
    cl.add_argument("t0", type=float)
    cl.add_argument("t1", type=float)
    cl.add_argument("modules", nargs="*")
    cl.add_argument("--below", type=float, default=0.078,
                    help="print pairs that came closer than this [m]")
    args = ap.parse_args(argv)
    ids, rate = modules_and_rate(args.nodes_log)
    idx = {m: i for i, m in enumerate(ids)}
    for m in (getattr(args, "modules", None) or []) + [getattr(args, "module", None)]:
        if m is not None and m not in idx:
            ap.error(f"unknown module {m!r} (the run has {', '.join(ids)})")
    n = len(ids)
    if args.cmd in ("at", "near"):
        got = next(steps(args.dump, n, rate, args.t), None)
        if got is None:
            ap.error(f"the dump ends before t = {args.t} s")
        t, poses = got
        if args.cmd == "at":
            want = args.modules or ids
            json.dump({"t": t, "poses": {m: [round(float(v), 5) for v in poses[idx[m]]]
                                         for m in want}}, sys.stdout, indent=1)
            print()
        else:
            me = poses[idx[args.module]]
            d = np.hypot(poses[:, 0] - me[0], poses[:, 1] - me[1])
            print(f"t = {t:.2f} s, {args.module} at ({me[0]:.4f}, {me[1]:.4f}, "
                  f"{math.degrees(me[2]):.1f} deg)")
            for i in np.argsort(d):
                if ids[i] != args.module and d[i] <= args.radius:
                    p = poses[i]
                    print(f"  {ids[i]:>5} {d[i]:.4f} m  ({p[0]:.4f}, {p[1]:.4f}, "
                          f"{math.degrees(p[2]):.1f} deg)")
    elif args.cmd == "track":
        i, last = idx[args.module], -math.inf
        for t, poses in steps(args.dump, n, rate, args.t0, args.t1):
            if t - last >= args.every - 1e-9:
                last = t
                p = poses[i]
                print(f"{t:8.2f} {p[0]:8.4f} {p[1]:8.4f} {math.degrees(p[2]):7.1f}")
    else:
        sel = [idx[m] for m in (args.modules or ids)]
        best: dict[tuple[int, int], tuple[float, float]] = {}
        for t, poses in steps(args.dump, n, rate, args.t0, args.t1):
            p = poses[sel]
            d = np.hypot(p[:, None, 0] - p[None, :, 0], p[:, None, 1] - p[None, :, 1])
            iu = np.triu_indices(len(sel), 1)
            close = np.nonzero(d[iu] < args.below)[0]
            for c in close:
                key = (sel[iu[0][c]], sel[iu[1][c]])
                dc = float(d[iu][c])
                if key not in best or dc < best[key][0]:
                    best[key] = (dc, t)
        for (i, j), (dc, t) in sorted(best.items(), key=lambda kv: kv[1][0]):
            print(f"{ids[i]:>5} {ids[j]:>5} {dc:.4f} m at {t:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
