"""Judging and writing up a run: the verdict (target connections formed?), ``report.json``,
``trajectories.png`` and ``timeline.png`` (no ROS imports)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from smores_assembly.planning import Plan
from smores_assembly.report import (PhaseInterval, PhaseRecorder, activity_start, final_errors,
                                    outside, plot_timeline, plot_trajectories, pose_error,
                                    write_json)
from smores_assembly.run_job.console import say
from smores_assembly.vocabulary import Phase


def connection_key(module_a: str, face_a: str, module_b: str, face_b: str) -> frozenset:
    """An undirected connection as ``{(module, FACE), (module, FACE)}``."""
    return frozenset({(module_a, face_a.upper()), (module_b, face_b.upper())})


def expected_connections(plan, scenario=None) -> set:
    """Target edges as module/face pairs under the plan's assignment (with ``scenario``:
    every target edge, a reconfiguration's kept ones included; without: the plan's
    docks)."""
    if scenario is not None:
        return {connection_key(plan.assignment[e.parent], e.parent_face.value,
                               plan.assignment[e.child], e.child_face.value)
                for e in scenario.edges}
    return {connection_key(a.module, a.child_face.value, a.parent_module, a.parent_face.value)
            for a in plan.actions}


def split_intervals(plan, recorder: PhaseRecorder, module: str
                    ) -> tuple[list[PhaseInterval], list[PhaseInterval]]:
    """``module``'s recorded phases split into its undock (up to and including its first
    UNDOCKED or FAILED, when the plan undocks it) and its dock (the rest)."""
    ivs = recorder.intervals.get(module, [])
    if not any(u.module == module for u in getattr(plan, "undocks", [])):
        return [], list(ivs)
    for i, iv in enumerate(ivs):
        if iv.phase in (Phase.UNDOCKED, Phase.FAILED):
            # the recorder stretches the last phase until the next one: parked, then idle
            return list(ivs[:i]) + [PhaseInterval(iv.phase, iv.start, iv.start)], \
                list(ivs[i + 1:])
    return list(ivs), []


def _stage_intervals(plan, recorder: PhaseRecorder, k: int) -> list[PhaseInterval]:
    undocking = k < getattr(plan, "num_undock_stages", 0)
    return [iv for m in plan.stages[k]
            for iv in split_intervals(plan, recorder, m)[0 if undocking else 1]]


@dataclass
class Verdict:
    """``formed``/``expected``: sets of :func:`connection_key`; ``success``: the executive
    reported success and the fake hardware's connections equal the target's; ``error``: the
    reason of a failure ("" on success); ``declined``: the plan was not approved at the
    ``--approve`` prompt (nothing moved); ``interrupted``: the user stopped the run
    (Ctrl-C)."""

    plan: Plan
    formed: set
    expected: set
    success: bool
    error: str
    declined: bool = False
    interrupted: bool = False


def judge(plan, result, connections_msg, error: str, scenario=None,
          declined: bool = False, interrupted: bool = False) -> Verdict:
    """Compare the fake hardware's last ``ConnectionArray`` with the target edges under the
    plan the stack executed (``result.plan`` when it holds one, else ``plan``); with
    ``scenario``, every target edge (a reconfiguration's kept ones included)."""
    if result is not None and (result.plan.actions or result.plan.undocks):
        # The plan the stack executed (made from mocap poses) is the one to judge against.
        from smores_assembly.reconfigure import with_kept_goals
        from smores_assembly.ros.convert import msg_to_plan
        # the message has no goals for kept modules besides the root: the run's own plan
        # (file poses) has them (final pose errors, trajectory picture)
        plan = with_kept_goals(msg_to_plan(result.plan), getattr(plan, "goals", {}))
    formed = set()
    if connections_msg is not None:
        formed = {connection_key(c.module_a, c.face_a, c.module_b, c.face_b)
                  for c in connections_msg.connections}
    expected = expected_connections(plan, scenario)
    complete = formed == expected
    success = bool(result is not None and result.success and complete)
    if result is not None and not result.success and not error:
        error = result.message
    elif result is not None and result.success and not complete:
        error = (f"executive reported success but the fake hardware shows "
                 f"{len(formed & expected)}/{len(expected)} target connections "
                 f"(+{len(formed - expected)} unexpected)")
    return Verdict(plan, formed, expected, success, error, declined, interrupted)


def stage_bounds(plan, recorder: PhaseRecorder) -> list[tuple[float, float]]:
    """Per stage, the span of its modules' docking activity [s, ROS time]."""
    bounds = []
    for k in range(len(plan.stages)):
        ivs = [iv for iv in _stage_intervals(plan, recorder, k)
               if iv.phase not in (Phase.IDLE, Phase.DOCKED, Phase.UNDOCKED)]
        if ivs:
            bounds.append((min(i.start for i in ivs), max(i.end for i in ivs)))
    return bounds


def build_report(scenario, result, verdict: Verdict, wall: float, obs, codes) -> dict:
    """The ``report.json`` dictionary. ``obs``: the run's :class:`Observations`; ``codes``:
    exit code per node; ``wall``: wall time of the run [s]."""
    recorder, plan = obs.recorder, verdict.plan
    t0 = activity_start(recorder)
    t1 = max((iv.end for ivs in recorder.intervals.values() for iv in ivs), default=t0)
    # The executive's time (first stage start to last dock); for an unfinished run, the
    # span of the recorded docking activity.
    assembly_time = (float(result.assembly_time_s) if result is not None
                     and result.assembly_time_s > 0 else max(0.0, t1 - t0))
    def entries(ivs: list[PhaseInterval]) -> list[dict]:
        return [{"phase": i.phase.name, "start_s": round(i.start - t0, 3),
                 "end_s": round(i.end - t0, 3)} for i in ivs if i.phase is not Phase.IDLE]

    undocks = []
    for u in sorted(getattr(plan, "undocks", []), key=lambda u: (u.stage, u.module)):
        undocks.append({"module": u.module, "stage": u.stage, "face": u.face.value,
                        "from_module": u.from_module, "from_face": u.from_face.value,
                        "park": [round(v, 4) for v in u.park.as_tuple()],
                        "phases": entries(split_intervals(plan, recorder, u.module)[0]),
                        "last_error": recorder.messages.get(u.module, "")})
    actions = []
    for a in sorted(plan.actions, key=lambda a: (a.stage, a.module)):
        phases = entries(split_intervals(plan, recorder, a.module)[1])
        actions.append({"module": a.module, "node": a.node, "stage": a.stage,
                        "parent_module": a.parent_module, "parent_face": a.parent_face.value,
                        "child_face": a.child_face.value, "needs_helper": a.needs_helper,
                        "helper": a.helper, "phases": phases,
                        "retries": recorder.retries.get(a.module, 0),
                        "last_error": recorder.messages.get(a.module, "")})
    formed, expected = verdict.formed, verdict.expected
    return {
        "scenario": scenario.name,
        "success": verdict.success,
        "error": verdict.error,
        "assembly_time_s": round(assembly_time, 3),
        "wall_time_s": round(wall, 2),
        "root": {"node": plan.root_node, "module": plan.root_module},
        "assignment": dict(plan.assignment),
        "stages": plan.stages,
        "schedule": plan.schedule,
        "connections": sorted([sorted([f"{m}.{f}" for m, f in c]) for c in formed]),
        "missing_connections": sorted([sorted([f"{m}.{f}" for m, f in c])
                                       for c in expected - formed]),
        "actions": actions,
        "num_docks": len(plan.actions),
        "num_undocks": len(getattr(plan, "undocks", [])),
        "num_undock_stages": getattr(plan, "num_undock_stages", 0),
        "method": getattr(plan, "method", "assembly"),
        "kept": list(getattr(plan, "kept", [])),
        "undocks": undocks,
        "final_errors": final_errors(plan.goals, obs.final, anchor=plan.root_module),
        "root_offset": (pose_error(plan.goals[plan.root_module], obs.final[plan.root_module])
                        if plan.root_module in plan.goals and plan.root_module in obs.final
                        else None),
        "capture_errors": recorder.capture,
        "collisions": obs.collisions,
        "node_exit_codes": codes,
    }


def staging_moves(plan, recorder: PhaseRecorder, motion: dict,
                  rows: list[tuple[str, bool]], min_s: float = 0.2
                  ) -> list[list[tuple[float, float]]]:
    """Per timeline row ``(module, undock)`` (``undock``: the row of the module's undock,
    else of its dock): the intervals [s, ROS time] in which the module moved
    (``motion``, :attr:`Observations.motion`) outside its own docking and undocking
    phases, each at least ``min_s`` long. A move belongs to one row: for a module that
    the plan undocks and docks again, the moves up to the end of its undock (its
    UNDOCKED) are its undock row's, the later ones (a reuse plan's staging while others
    undock) its dock row's (they were drawn on both: fresh-user finding)."""
    out = []
    for m, undock_row in rows:
        undock, dock = split_intervals(plan, recorder, m)
        moves = outside(motion.get(m, []), [*undock, *dock], min_s)
        if undock:
            t = undock[-1].end
            moves = ([(lo, min(hi, t)) for lo, hi in moves] if undock_row
                     else [(max(lo, t), hi) for lo, hi in moves])
            moves = [(lo, hi) for lo, hi in moves if hi - lo >= min_s]
        out.append(moves)
    return out


def helper_rows(plan) -> list[tuple[str, list[str]]]:
    """The helping modules of ``plan`` in order of first use, each with the modules it
    carries in stage order: the timeline's helper rows."""
    carried: dict[str, list[str]] = {h: [] for h in getattr(plan, "helpers", [])}
    for a in sorted(plan.actions, key=lambda a: (a.stage, a.module)):
        if a.helper:
            carried.setdefault(a.helper, []).append(a.module)
    return [(h, ms) for h, ms in carried.items() if ms]


def draw_pictures(out: Path, scenario, plan, obs, ended: str = "",
                  ended_at: float | None = None) -> None:
    """``trajectories.png`` and ``timeline.png``; a plotting problem is only a warning.
    ``ended``: how a run that did not finish ended ("interrupted", "failed"; "" when it
    finished): the timeline marks the moment and both titles say so; ``ended_at``: that
    moment [s] as the report gives it (``assembly_time_s``), default the last interval's end."""
    recorder = obs.recorder
    goals = plan.goals
    edges = [(a.module, a.parent_module) for a in plan.actions]
    try:
        plot_trajectories(out / "trajectories.png", obs.traj, goals, edges,
                          title=f"{scenario.name}: trajectories"
                                + (f" ({ended}: ends are where the modules stopped)"
                                   if ended else "")
                                + "\n(dotted: start, filled: end with the name in bold, "
                                  "hatched: a helper's end,\ndashed: target, arrows: "
                                  "direction)",
                          # every listed helper (also one that carried nothing, moved
                          # aside) and any spare module that carries
                          helpers=list(dict.fromkeys(
                              [*getattr(scenario, "helpers", ()),
                               *(h for h, _ in helper_rows(plan))])))
        t0 = activity_start(recorder)
        rows = [(f"s{u.stage + 1} {u.module} undock {u.face.value}/{u.from_module}."
                 f"{u.from_face.value}",
                 [PhaseInterval(i.phase, i.start - t0, i.end - t0)
                  for i in split_intervals(plan, recorder, u.module)[0]])
                for u in sorted(getattr(plan, "undocks", []),
                                key=lambda u: (u.stage, u.module))]
        groups = [f"stage {u.stage + 1}" for u in sorted(getattr(plan, "undocks", []),
                                                         key=lambda u: (u.stage, u.module))]
        docks = sorted(plan.actions, key=lambda a: (a.stage, a.module))
        rows += [(f"s{a.stage + 1} {a.module}->{a.parent_module} "
                  f"{a.child_face.value}/{a.parent_face.value}",
                  [PhaseInterval(i.phase, i.start - t0, i.end - t0)
                   for i in split_intervals(plan, recorder, a.module)[1]]) for a in docks]
        groups += [f"stage {a.stage + 1}" for a in docks]
        movers = ([(u.module, True) for u in sorted(getattr(plan, "undocks", []),
                                                    key=lambda u: (u.stage, u.module))]
                  + [(a.module, False) for a in docks])
        staging = [[(lo - t0, hi - t0) for lo, hi in moves]
                   for moves in staging_moves(plan, recorder, obs.motion, movers)]
        helping: list[list[tuple[float, float]]] = [[] for _ in rows]
        for h, carried in helper_rows(plan):
            rows.append((f"{h} helping {', '.join(carried)}", []))
            groups.append("helping modules")
            staging.append([])
            helping.append([(lo - t0, hi - t0) for lo, hi in obs.motion.get(h, [])])
        plot_timeline(out / "timeline.png", rows, groups=groups, staging=staging,
                      helping=helping,
                      stage_bounds=[
                      (lo - t0, hi - t0) for lo, hi in stage_bounds(plan, recorder)],
                      title=f"{scenario.name}: "
                            + (f"{len(plan.undocks)} undocks and {len(plan.actions)} docks"
                               if getattr(plan, "undocks", None)
                               else f"{len(plan.actions)} docking actions") + " by phase"
                            + ("" if any(iv.phase is not Phase.IDLE for _, ivs in rows
                                         for iv in ivs) else " (nothing ran)"),
                      ended=ended, ended_at=ended_at,
                      stage_labels=[
                          f"stage {k + 1}" + (" (undock)" if k < getattr(
                              plan, "num_undock_stages", 0) else "")
                          for k in range(len(plan.stages))])
    except Exception as exc:  # a plotting problem must not hide the result
        say(f"warning: could not draw the pictures: {exc}")


def write_up(out: Path, scenario, result, verdict: Verdict, wall: float, obs, codes,
             recorded: bool, extra: dict | None = None) -> None:
    """Write the report and pictures to ``out`` and print the verdict lines. ``extra``:
    keys added to the report (seed, lockstep, ``trace_sha256``…)."""
    report = build_report(scenario, result, verdict, wall, obs, codes)
    report.update(extra or {})
    write_json(out / "report.json", report)
    draw_pictures(out, scenario, verdict.plan, obs,
                  ended=("interrupted" if verdict.interrupted else
                         "" if verdict.success or verdict.declined else "failed"),
                  ended_at=report["assembly_time_s"])
    formed, expected, error = verdict.formed, verdict.expected, verdict.error
    verdict_word = ("ASSEMBLED" if verdict.success else
                    "INTERRUPTED" if verdict.interrupted else
                    "NOT APPROVED" if verdict.declined else "FAILED")
    undocks = report.get("undocks", [])
    undone = (f" ({sum(any(ph['phase'] == 'UNDOCKED' for ph in u['phases']) for u in undocks)}"
              f"/{len(undocks)} undocks done)" if undocks and not verdict.success else "")
    say(f"{verdict_word}: {len(formed & expected)}/"
        f"{len(expected)} target connections{undone}, "
        f"assembly {report['assembly_time_s']:.1f} s simulated, {wall:.1f} s wall"
        # not approved: the word says it, and the line said when it was answered
        + (f" — {error}" if error and not verdict.declined else ""))
    say(f"report: {out}/report.json, pictures: {out}/trajectories.png, {out}/timeline.png"
        + (f", recording: {out}/assembly.mcap" if recorded else ""))
