"""CPU cost and pace of a whole ``smores-assemble run`` (lockstep, one process per node and
single process).

For each case the run is started as ``smores-assemble run ... --seed 0`` and every process
of the stack is sampled from ``/proc`` twice a second. Reported:

* ``cpu/sim``: CPU seconds of all processes (nodes and the run's own) spent while the
  simulation runs, per simulated second: from the first stage line to the last progress
  line before the verdict (the goal's end). Start-up is shown as ``startup``; what comes
  after the goal (the trace fetch, the stack's shutdown, report.json and the pictures) as
  ``after``: neither is in ``cpu/sim``. ``old/sim`` is (CPU s + after) per simulated s, the
  figure this bench printed as ``CPU/sim`` before (issue 10, third session): its window
  ended at the verdict line, which ``smores-assemble run`` prints after the shutdown and
  the pictures (~0.8 CPU s of the run process and ~0.2 s per node process in Task 1),
  contrary to this definition; the earlier figures in docs/RESULTS.md are of that kind;
* ``pace``: simulated seconds per wall second while it runs (real_time_factor 0: as fast as
  the machine allows; on a shared machine this depends on the load, CPU time does not);
* ``per node``: the share of the CPU of each node process (multi-process runs).

Cases: Task 1 (mobile_manipulator), holonomic_vehicle, and random 25- and 50-node targets
(:func:`bench.bench_scale.plannable_scenario`: random planar trees, modules on a jittered
lattice, 10 % spare modules and a helper). Goal: Task 1 at most 0.1 CPU s per
simulated s.

    python -m bench.bench_lockstep [--cases task1,holonomic,random25,random50]
        [--modes multi,single] [--timeout S] [--out DIR]

What was measured and changed (issue 10), on the 2-core machine: before, one run of Task 1
kept 8 processes at ~1.9 cores (~0.5 CPU s per simulated s at real_time_factor 4); the two
planning nodes spent ~17 % each decoding the 100 Hz ``/modules/states`` they only need when
planning. Changes: the planning nodes subscribe to the (latched) states only while they
plan; the simulation runs in lockstep, so a node only wakes for its own turns (the bridge
and the controller at 50 Hz, the executive at 20 Hz, the navigation on a new stage or
status), instead of free-running timers racing a wall clock; ``--single-process`` saves the
per-process interpreters and inter-process transport. Then (cProfile: 70-90 % of every
node's CPU was rclpy's wait-set rebuild per wake-up) every node spins
``smores_assembly.ros.executor.LeanExecutor``: Task 1 at load ~50-70 went from 1.07 to 0.61
CPU s per simulated s in one process per node (0.41 in one process), same trace.
Then (cProfile per node, and per-thread CPU from ``/proc``: the DDS threads are ~15 % of a
node, its Python main thread the rest, with no single item dominating): the simulated mocap
at 50 Hz, the bridge's state rate (``fake_assembly.launch.yaml`` ``mocap_rate_hz``; Task 1:
350 instead of 700 samples per simulated s, the bridge uses the latest one), the commands as
CDR bytes, a standing module's zero ``cmd_vel`` only when it becomes zero and every
``stop_refresh_s``, the docking controller's pose history corrected lazily (the same
floats), and cheaper executor wake-ups (cached handles, plain timer calls, a 0.1 s
watchdog): Task 1 back to back at load ~13: 0.367 -> 0.323 CPU s per simulated s (one
process per node); then at load ~5: 0.272 -> 0.251 (single process 0.152 -> 0.145).
Then (cProfile per node: after those, wake-ups were still most of every node's own cost:
the bridge woke for each of its 7 mocap samples per turn, the executive and the navigation
for each 50-Hz states message they only buffer, the fake hardware for every command; in
one process ~50 parameter services and ~30 QoS-event handlers were added to and checked
after every wait): counted subscriptions are parked (left out of the wait set) and read
at the turn, the fake hardware takes the commands an answer announces at the step, the
run's observer takes the ground truth once per spin, turns and answers are CDR bytes,
and services and QoS-event handlers are waited on at most every 20 ms while busy.
Then (wake-ups counted per process: the executive and the navigation turned on every 10-Hz
docking status or 20-Hz poll, the run's observer woke ~90 times per wall s): the docking
controller's status refresh is *quiet* (counted, wakes nobody) unless a phase changed, the
executive's stage loop waits for a status instead of polling, and the observer spins at
most 0.25 s: same trace, Task 1 wake-ups executive 1163 -> 254, navigation 612 -> 183,
fake hardware 5124 -> 3821; 0.306 -> 0.254 CPU s per simulated s at load ~8.
Then (third session; this bench's window now ends at the goal's end, see ``cpu/sim``;
cProfile of the single-process run and per-process CPU and wake-ups from ``/proc``): the
planning nodes and the run's observer take no ``/clock`` (they never read it: ~2/3 of the
planning nodes' wake-ups, root_search 0.13 -> 0.03 CPU s per run); LeanExecutor no
longer resumes a coroutine suspended on a pending future at every wake-up (the
executive's goal coroutine ~7000 times per run in one process); the bridge reads its
clock without a Time object per sample and keeps no rate bookkeeping in lockstep; the
fake hardware's command watchdog is updated once per step; in one process the turns and
answers are calls instead of DDS messages (``lockstep.register_local``: ~6300 of the
~7700 executor waits of a single-process run were turn and answer hand-overs).
Then (fourth session; cProfile of every node with process CPU time, and a two-process
micro-benchmark of rclpy publishing bytes: a reliable, transient-local message cost ~0.1 ms
of CPU to publish and ~0.05 ms to receive at load ~20, whatever its size, and a Task 1 run
sent ~30 000 of them): the fake stack's mocap is one frame per sample
(``mocap_format: frame``, a ModuleStateArray of the bodies seen, the bridge's ``frame``
source) instead of one PoseStamped per body (~10 500 -> ~1 500 messages), and in lockstep
the docking controller sends a turn's cmd_vel commands as one ``CmdVelArray`` instead of
one Twist per module (~4 900 -> ~1 500); same samples, commands and trace.
Then (fifth session; CPU per thread from ``/proc``, ``perf``, thread CPU per call: the
Python main threads are ~75 % of a run, the fake hardware woke twice per 20 ms, once per
answer): chained turns (the bridge hands the controller its turn with its own answer
inside, so the fake hardware gives one turn and takes one answer per 20 ms instead of two;
``lockstep_chain_turns``) and the ground truth at 10 Hz for a run without ``--record``
(what its report needs): fake hardware publishes 6561 -> 3792 per Task 1 run, same trace;
the fake hardware's CPU ~-15 %, the run's ~-25 %, the bridge's ~+7 %: ~5 % in all, within
this machine's run-to-run spread.
Figures: docs/RESULTS.md, "Cost of a run".
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

from bench import smores_assemble

import yaml

REPO = Path(__file__).resolve().parents[1]
CASES = {"task1": "mobile_manipulator", "holonomic": "holonomic_vehicle",
         "random25": 25, "random50": 50}
_TICK = os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d))
        except OSError:
            continue
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _cpu(pid: int) -> tuple[str, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline") as f:
            cmd = f.read().split("\0")
    except OSError:
        return None
    return _name(cmd), (int(fields[11]) + int(fields[12])) / _TICK


def _name(cmd: list[str]) -> str:
    """The node of a process's command line: ``<prefix>/lib/smores_assembly/<node>`` (as the
    launch files start them, through the script's interpreter), ``python -m
    smores_assembly.ros.<node>`` (the single-process container); else ``run`` (the CLI)."""
    for i, a in enumerate(cmd[:3]):
        p = Path(a)
        if p.parent.name == "smores_assembly" and p.parent.parent.name == "lib":
            return p.name
        if a == "-m" and i + 1 < len(cmd) and cmd[i + 1].startswith("smores_assembly.ros."):
            return cmd[i + 1].rsplit(".", 1)[1]
    return "run"


def _sample(root: int) -> dict[int, tuple[str, float]]:
    return {p: c for p in _descendants(root) if (c := _cpu(p)) is not None}


def _scenario_path(case: str, workdir: Path) -> Path:
    what = CASES[case]
    if isinstance(what, str):
        return REPO / "config" / "scenarios" / f"{what}.yaml"
    # bench_scale's lattice layout: bench_planning's random poses overlap at 25 modules
    # (run refuses them), and its scenarios are not all plannable
    from bench.bench_scale import plannable_scenario
    path = workdir / f"{case}.yaml"
    path.write_text(yaml.safe_dump(plannable_scenario("random", what, seed=0)[0]))
    return path


def _peak_rss_mb(pids) -> float:
    """Summed peak resident set size (VmHWM) of ``pids`` [MB] (0 for gone ones)."""
    total = 0.0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += float(line.split()[1]) / 1024.0
        except OSError:
            pass
    return total


def run_sampled(cmd: list[str], period_s: float = 0.5):
    """Run ``smores-assemble run`` command ``cmd`` to its end, sampling the CPU time of it
    and its descendants every ``period_s`` [s wall].

    No ROS_DOMAIN_ID is passed: run draws a domain in which no node is discovered
    (ros/domain.py; a fixed draw from the tests' range met a test's stack).

    Returns ``(lines, marks, per_pid, at_start, wall, t0, peak_rss_mb)``: the output lines;
    ``marks["start"]``/``marks["end"]`` (monotonic time of the first stage line and of the
    verdict; ``marks["goal_end"]``: of the last progress line before the verdict); per pid
    ``(name, cpu_s)`` up to the verdict; the same at the first stage (``{}`` when never
    reached); the process's wall time [s]; its start (monotonic); the largest summed peak
    RSS seen [MB]. :func:`sampled_windows` gives the CPU at the goal's end too.
    """
    lines, marks, at, at_start, wall, t0, peak = sampled_windows(cmd, period_s)
    return lines, marks, at(marks.get("end")), at_start, wall, t0, peak


def sampled_windows(cmd: list[str], period_s: float = 0.5):
    """:func:`run_sampled`, but instead of the CPU per pid at the verdict a function
    ``at(t)``: the CPU per pid ``(name, cpu_s)`` in the first sample at or after monotonic
    time ``t`` (before the verdict; the last sample when None or later)."""
    import threading
    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=REPO)
    lines: list[str] = []
    marks: dict[str, float] = {}

    def pump():
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            now = time.monotonic()
            if "stage 1/" in line and "start" not in marks:
                marks["start"] = now
            if line.startswith("[") and "end" not in marks:
                marks["goal_end"] = now   # a progress line: the last one is the goal's end
            if line.startswith(("ASSEMBLED", "FAILED")):
                marks["end"] = now
    th = threading.Thread(target=pump, daemon=True)
    th.start()
    at_start: dict[int, tuple[str, float]] | None = None
    names: dict[int, str] = {}
    history: list[tuple[float, dict[int, float]]] = []   # (time, cpu per pid)
    peak = 0.0
    while proc.poll() is None:
        snap = _sample(proc.pid)
        if "start" in marks and at_start is None:
            at_start = dict(snap)
        if "end" not in marks:
            for pid, (name, _) in snap.items():
                # an exiting process has no command line any more: keep its name
                names.setdefault(pid, name)
            history.append((time.monotonic(), {p: c for p, (_, c) in snap.items()}))
            peak = max(peak, _peak_rss_mb(list(snap)))
        time.sleep(period_s)
    th.join(timeout=5)

    def at(t: float | None) -> dict[int, tuple[str, float]]:
        out: dict[int, tuple[str, float]] = {}
        for ts, cpus in history:
            out.update({p: (names[p], c) for p, c in cpus.items()})
            if t is not None and ts >= t:
                break
        return out
    return lines, marks, at, at_start or {}, time.monotonic() - t0, t0, peak


def run_case(case: str, mode: str, workdir: Path, timeout: float) -> dict:
    """One ``smores-assemble run`` of ``case`` in ``mode`` (multi | single) with CPU
    sampling; returns the measured numbers."""
    out = workdir / f"{case}_{mode}"
    cmd = [*smores_assemble(), "run",
           str(_scenario_path(case, workdir)), "--out", str(out), "--seed", "0",
           "--real-time-factor", "0", "--timeout", str(timeout)]
    if mode == "single":
        cmd.append("--single-process")
    load = os.getloadavg()[0]
    lines, marks, at, at_start, wall, t0, _ = sampled_windows(cmd)
    # the goal's end: the stack's shutdown, report.json and the pictures come after it
    per_pid, at_verdict = at(marks.get("goal_end", marks.get("end"))), at(marks.get("end"))
    load = max(load, os.getloadavg()[0])
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        report = {}
    run_cpu: dict[str, float] = {}
    startup = 0.0
    for pid, (name, cpu) in per_pid.items():
        base = at_start.get(pid, (name, 0.0))[1]
        run_cpu[name] = run_cpu.get(name, 0.0) + cpu - base
        startup += base
    after = sum(cpu - per_pid.get(pid, (name, 0.0))[1]
                for pid, (name, cpu) in at_verdict.items())
    sim = float(report.get("assembly_time_s", 0.0))
    end = marks.get("goal_end", t0 + wall)   # no progress line: until the process ended
    run_wall = max(0.0, end - marks.get("start", end))
    total = sum(run_cpu.values())
    return {"case": case, "mode": mode, "success": report.get("success"),
            "error": report.get("error", "".join(lines[-3:]).strip()),
            "sim_s": sim, "run_wall_s": round(run_wall, 1), "wall_s": round(wall, 1),
            "cpu_run_s": round(total, 2), "cpu_startup_s": round(startup, 2),
            "cpu_after_s": round(after, 2),
            "old_cpu_per_sim_s": round((total + after) / sim, 3) if sim > 0 else None,
            "cpu_per_sim_s": round(total / sim, 3) if sim > 0 else None,
            "pace": round(sim / run_wall, 2) if run_wall > 0 else None,
            "per_node": {k: round(v, 2) for k, v in sorted(run_cpu.items())},
            "load": round(load, 1),
            "connections": len(report.get("connections", [])),
            "missing": len(report.get("missing_connections", [])),
            "trace_sha256": report.get("trace_sha256", "")[:12]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_lockstep")
    ap.add_argument("--cases", default="task1,holonomic,random25,random50",
                    help=f"comma-separated cases, of {', '.join(CASES)} (default: "
                         f"%(default)s)")
    ap.add_argument("--modes", default="multi,single",
                    help="comma-separated: multi (one process per node), single "
                         "(--single-process) (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="each run's --timeout, wall-clock s (default: %(default)g)")
    ap.add_argument("--out", default=None,
                    help="keep the runs' outputs here (default: a temporary directory)")
    a = ap.parse_args(argv)
    workdir = Path(a.out or tempfile.mkdtemp(prefix="bench_lockstep_"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'case':10} {'mode':6} {'result':9} {'sim s':>7} {'wall s':>7} {'pace':>5} "
          f"{'CPU s':>7} {'CPU/sim':>8} {'startup':>8} {'after':>6} {'old/sim':>8} "
          f"{'load':>5}  "
          "per node (CPU s while running)")
    for case in a.cases.split(","):
        for mode in a.modes.split(","):
            r = run_case(case, mode, workdir, a.timeout)
            rows.append(r)
            res = "ok" if r["success"] else f"{r['connections']}/{r['connections'] + r['missing']}"
            print(f"{case:10} {mode:6} {res:9} {r['sim_s']:7.1f} {r['run_wall_s']:7.1f} "
                  f"{r['pace'] or 0:5.2f} {r['cpu_run_s']:7.1f} {r['cpu_per_sim_s'] or 0:8.3f} "
                  f"{r['cpu_startup_s']:8.1f} {r['cpu_after_s']:6.1f} "
                  f"{r['old_cpu_per_sim_s'] or 0:8.3f} {r['load']:5.1f}  "
                  + ", ".join(f"{k} {v}" for k, v in r["per_node"].items()), flush=True)
            if not r["success"]:
                print(f"           {r['error'][:200]}", flush=True)
    print("CPU s, CPU/sim: from the first stage to the goal's end; startup: before it; "
          "after: the goal's end to the verdict (shutdown, report, pictures); old/sim: "
          "(CPU s + after) / sim, the window of this bench's figures before issue 10's "
          "third session; load: the "
          "larger 1-min load average at the start and the end of the run (the machine's "
          "share of idle spinning and wall-clock baselines is in CPU/sim too); what was "
          "changed and why: this module's docstring")
    (workdir / "bench_lockstep.json").write_text(json.dumps(rows, indent=1))
    print(f"results: {workdir}/bench_lockstep.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
