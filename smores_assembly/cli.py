"""The ``smores-assemble`` command.

* ``smores-assemble plan SCENARIO.yaml [--json] [--schedule MODE] [--sequential]``: root
  search, task assignment and the parallel schedule of a scenario (no ROS needed).
  ``--json`` prints one JSON object (:meth:`smores_assembly.planning.Plan.to_dict`; its
  ``stage`` numbers are 0-based indices into ``stages``; its ``idle``, as the table's
  "idle throughout", lists the modules that neither play a node nor carry one, and
  ``notes`` the table's notes), otherwise a readable table
  (stages numbered from 1, as in the ``run`` progress and approval prompt).
* ``smores-assemble run SCENARIO.yaml [--out DIR] [--approve] [--record] [--timeout S]
  [--real-time-factor F] [--params-file FILE] [--backend kinematic|mujoco] [--namespace NS]
  [--nodes LIST] [--schedule sequential|staged|pipelined]``: the main job on the fake
  hardware (``--nodes``: only some nodes here, the others on other computers)
  (:mod:`smores_assembly.run_job`, imported lazily: it needs rclpy).

Bad input (invalid scenario, unplannable target, unreadable file): exit status 2 and one
line ``smores-assemble: error: <message>`` on stderr, no traceback. A closed stdout (e.g.
``smores-assemble plan s.yaml | head -1``) ends the command quietly with status 0.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from smores_assembly.argtypes import bounded, run_cli
from smores_assembly.errors import InputError, SmoresError
from smores_assembly.staging import SCHEDULES
from smores_assembly.vocabulary import counted

PROG = "smores-assemble"
#: Wall-clock limit of ``run`` without --timeout [s]; equals
#: ``smores_assembly.run_job.DEFAULT_TIMEOUT_S`` (not imported here: run_job pulls in
#: matplotlib and rclpy; test/test_cli_plan.py checks the two agree).
RUN_DEFAULT_TIMEOUT_S = 900.0


_positive = bounded(float, lo=0.0, lo_open=True)
_non_negative = bounded(float, lo=0.0)
_seed = bounded(int, lo=0, hi=2**31 - 1)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands ``plan`` and ``run``)."""
    p = argparse.ArgumentParser(
        prog=PROG, description="Parallel self-assembly of SMORES-EP-style modular robots.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    pp = sub.add_parser("plan", help="plan a scenario: root, assignment, docking stages",
                        description="Root search, task assignment and parallel schedule "
                                    "of a scenario file (no ROS needed).")
    pp.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file")
    pp.add_argument("--json", action="store_true",
                    help="print one JSON object (its 'stage' numbers are 0-based indices "
                         "into 'stages'; the table numbers stages from 1)")
    pp.add_argument("--schedule", choices=SCHEDULES, default=None,
                    help="schedule mode (default: pipelined, as run; staged: the paper's "
                         "stages without staging moves; sequential: one dock per stage)")
    pp.add_argument("--sequential", action="store_true",
                    help="same as --schedule sequential")
    pp.add_argument("--full-disassembly", action="store_true", dest="full_disassembly",
                    help="reconfiguration (scenario with 'initial'): undock everything, "
                         "then assemble (the paper's method) instead of keeping the "
                         "largest common part")
    pp.set_defaults(handler=_cmd_plan, subparser=pp)

    pr = sub.add_parser("run", help="run the assembly on the fake hardware",
                        description="Bring up the stack on the fake hardware, assemble the "
                                    "scenario's target and write a report.",
                        epilog="exit status: 0 assembled (the fake hardware's connections "
                               "equal the target's edges); 1 the assembly failed or ran past "
                               "--timeout (or the middleware's teardown blocked the "
                               "interpreter: the watchdog's exit, the report may be "
                               "missing); 2 bad input, refused before anything starts, or a "
                               "node refused its configuration at start-up; 3 plan not "
                               "approved at the --approve prompt (nothing moved); 130 Ctrl-C "
                               "(once the stack is up: assembly cancelled, every module "
                               "stopped, report written; before: nothing moved, no report); "
                               "143 SIGTERM (once the stack is up: as Ctrl-C; before: "
                               "ended at once, nothing moved, no report)")
    pr.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file")
    pr.add_argument("--out", metavar="DIR", default=None,
                    help="output directory for report.json, the pictures and nodes.log "
                         "(default: out/<scenario name>)")
    pr.add_argument("--approve", action="store_true",
                    help="plan first and wait for operator approval before moving")
    pr.add_argument("--record", action="store_true", help="record the run's topics (MCAP)")
    pr.add_argument("--timeout", metavar="S", type=_positive, default=None,
                    help=f"give up after S seconds of wall-clock time, counted from the "
                         f"goal's acceptance (the stack's start-up is not counted; default: "
                         f"{RUN_DEFAULT_TIMEOUT_S:g} s, "
                         f"smores_assembly.run_job.DEFAULT_TIMEOUT_S)")
    pr.add_argument("--real-time-factor", metavar="F", type=_non_negative, default=None,
                    dest="real_time_factor",
                    help="upper bound on simulated seconds per wall-clock second; 0: as fast "
                         "as possible (default: 0 in lockstep, 4 with --free-running)")
    pr.add_argument("--seed", metavar="N", type=_seed, default=None,
                    help="seed of every random source (mocap noise, dropouts); the same "
                         "scenario, parameters and seed give the same trace_sha256 "
                         "(default: the params file's fake_hardware random_seed, else 0)")
    pr.add_argument("--free-running", action="store_true", dest="free_running",
                    help="step the simulation on the wall clock instead of in lockstep with "
                         "the controllers (latency realism; results then depend on the "
                         "machine's load)")
    pr.add_argument("--single-process", action="store_true", dest="single_process",
                    help="run every node in one process under one executor (like a "
                         "component container) instead of one process per node")
    pr.add_argument("--backend", choices=("kinematic", "mujoco"), default=None,
                    help="physics of the fake hardware (default: kinematic; mujoco: rigid "
                         "bodies, see README 'Physics'); given, it wins over the params "
                         "file's fake_hardware backend")
    pr.add_argument("--full-disassembly", action="store_true", dest="full_disassembly",
                    help="reconfiguration (scenario with 'initial'): undock everything, "
                         "then assemble (the paper's method) instead of keeping the "
                         "largest common part")
    pr.add_argument("--namespace", metavar="NS", default=None,
                    help="run the whole stack under this ROS namespace (e.g. /swarm1: "
                         "/swarm1/modules/states, /swarm1/clock, ...), so that several "
                         "swarms share one ROS domain (default: the root namespace)")
    pr.add_argument("--nodes", metavar="LIST", default=None,
                    help="start only these nodes here, comma-separated groups or node "
                         "names: hardware (fake_hardware, mocap_bridge), planning "
                         "(root_search, task_assignment, navigation, executive), control "
                         "(docking_controller), pipeline (planning + control), none (only "
                         "send the goal to a stack started elsewhere, e.g. by python -m "
                         "smores_assembly.launch fake_assembly); the others run on other "
                         "computers (README 'Running on several computers'; default: all)")
    pr.add_argument("--schedule", choices=SCHEDULES, default=None,
                    help="task_assignment's schedule mode: sequential (one dock per "
                         "stage), staged (the paper's parallel stages) or pipelined (also "
                         "drive later stages' modules to staging poses meanwhile); default: "
                         "the parameter's value (pipelined)")
    pr.add_argument("--params-file", metavar="FILE", default=None, dest="params_file",
                    help="ROS parameter overrides for every node the run starts "
                         "(fake_hardware, mocap_bridge, root_search, task_assignment, "
                         "navigation, docking_controller, executive), checked before "
                         "anything starts (see config/overrides.yaml)")
    pr.set_defaults(handler=_cmd_run, subparser=pr)
    return p


def _cmd_plan(args: argparse.Namespace) -> int:
    from smores_assembly.planning import with_schedule
    from smores_assembly.scenario import load_scenario
    from smores_assembly.staging import DEFAULT_SCHEDULE

    scenario = load_scenario(args.scenario)
    check_full_disassembly(args, scenario)
    plan = plan_scenario(args, scenario)
    if args.sequential and args.schedule not in (None, "sequential"):
        raise InputError(f"--sequential: contradicts --schedule {args.schedule}")
    plan = with_schedule(plan, "sequential" if args.sequential
                         else args.schedule or DEFAULT_SCHEDULE)
    if args.json:
        d = plan.to_dict()
        d["idle"] = idle_throughout(plan)   # as the table says it
        d["notes"] = plan_notes(plan, scenario)
        print(json.dumps(json_rounded(d)))
    else:
        print(format_plan(plan, scenario, asked_full=bool(args.full_disassembly)))
    return 0


#: decimals of the poses of ``plan --json``: 1e-6 m (and 1e-6 rad), far below the 4 mm
#: capture range, so the planner's float noise (e.g. 9.8e-18 m for 0) does not show
POSE_DECIMALS = 6


def _pose(p: list) -> list:
    return [round(float(v), POSE_DECIMALS) + 0.0 for v in p]   # -0.0 + 0.0 == +0.0


def json_rounded(d: dict) -> dict:
    """``plan --json``'s dict (:meth:`Plan.to_dict`) with every pose (``goals``, each
    action's ``goal``, each undock's ``start`` and ``park``) rounded to
    :data:`POSE_DECIMALS` decimals, -0.0 written as 0.0; other numbers as they are."""
    d = dict(d)
    d["goals"] = {m: _pose(p) for m, p in d["goals"].items()}
    d["actions"] = [{**a, "goal": _pose(a["goal"])} for a in d["actions"]]
    d["undocks"] = [{**u, "start": _pose(u["start"]), "park": _pose(u["park"])}
                    for u in d.get("undocks", [])]
    return d


def plan_scenario(args: argparse.Namespace, scenario):
    """The plan of ``scenario`` as ``plan`` and ``run`` make it (``--full-disassembly``:
    the paper's method, else keeping the largest common part), with one wording of a
    refusal for both.

    Raises:
        PlanningError: the planner's message prefixed with the scenario file (and the
            ``helpers:`` field for a wheel-face dock without a helper).
    """
    from smores_assembly.planning import PlanningError
    from smores_assembly.reconfigure import plan_reconfiguration
    try:
        return plan_reconfiguration(
            scenario, method="full" if getattr(args, "full_disassembly", False) else "reuse")
    except PlanningError as exc:
        msg = str(exc)
        if msg.startswith("action "):  # the missing-helper error names no field
            msg = f"helpers: {msg}"
        raise PlanningError(f"{args.scenario}: {msg}") from None


def check_full_disassembly(args: argparse.Namespace, scenario) -> None:
    """``--full-disassembly`` needs start structures: refuse it for a scenario without an
    ``initial:`` block (every module starts single, there is nothing to disassemble).

    Raises:
        InputError: names the flag, the scenario file and the missing block.
    """
    if getattr(args, "full_disassembly", False) and not scenario.initial_connections:
        raise InputError(f"--full-disassembly: {args.scenario} has no 'initial:' block "
                         f"(initial.connections: the structures to take apart), so every "
                         f"module starts single and there is nothing to disassemble; drop "
                         f"the flag, or add the start connections (config/scenarios/"
                         f"README.md)")


def _cmd_run(args: argparse.Namespace) -> int:
    from smores_assembly.entry import sigint_held

    # a Ctrl-C during these imports (~0.5 s) is held until they end, then interrupts
    # cleanly: inside them it raised from a half-initialised module (a traceback, exit 1)
    with sigint_held():
        try:
            import rclpy  # noqa: F401  (run needs ROS 2; plan does not)
        except ImportError as exc:
            raise InputError(f"run needs ROS 2 (rclpy could not be imported: {exc}); set "
                             f"it up with `make setup` (README) or source a ROS 2 "
                             f"install") from None
        from smores_assembly import run_job

    return run_job.run(args)


def carries_of(plan) -> dict[str, list[str]]:
    """Helping module -> the modules it carries, in stage order."""
    carries: dict[str, list[str]] = {}
    for a in sorted(plan.actions, key=lambda a: a.stage):
        if a.helper:
            carries.setdefault(a.helper, []).append(a.module)
    return carries


def idle_throughout(plan) -> list[str]:
    """The modules that neither play a node nor carry one (``plan``'s table line "idle
    throughout" and the ``idle`` of ``plan --json``; :attr:`Plan.idle` itself lists every
    module without a node, helpers too), sorted."""
    carries = carries_of(plan)
    return [m for m in plan.idle if m not in carries]


def plan_notes(plan, scenario) -> list[str]:
    """Notes of ``plan`` (the table's ``note:`` lines, ``plan --json``'s ``notes``): spare
    modules that would carry but are not listed under ``helpers:``."""
    spare = sorted(h for h in carries_of(plan) if h not in scenario.helpers)
    if not spare:
        return []
    return [f"{', '.join(spare)} (spare, not under 'helpers:') would carry; real modules "
            f"can, but `run` on the fake hardware needs them listed under 'helpers:'"]


def full_reason(scenario, asked_full: bool = False) -> str:
    """Why a reconfiguration plan of ``scenario`` takes everything apart: the flag, no
    common part of the start structures and the target, or keeping one (or a single
    module in place) estimated slower (or refused) than the full disassembly
    (:func:`~smores_assembly.reconfigure.plan_reconfiguration` chooses by estimated
    time)."""
    from smores_assembly.reconfigure import common_parts
    if asked_full:
        return "--full-disassembly"
    if not common_parts(sorted(scenario.initial_connections), scenario.nodes,
                        scenario.edges, exclude=scenario.helpers):
        return ("no part of the start structure is kept because none is a part of the "
                "target: no start connection joins two modules at the faces of a target "
                "edge; keeping one module in place was not estimated faster")
    return ("keeping a common part of the start structure and the target, or one module "
            "in place, was estimated slower than taking everything apart, or could not be "
            "planned")


def format_plan(plan, scenario=None, asked_full: bool = False) -> str:
    """A readable table of ``plan`` (positions in m, yaw in degrees, stages numbered from
    1 like the ``run`` progress; :attr:`DockAction.stage` itself is 0-based).
    ``asked_full``: ``--full-disassembly`` was given (a full plan says why it is full)."""
    rp = plan.root_pose
    lines = []
    if scenario is not None:
        lines.append(f"scenario {plan.name}: {counted(len(scenario.nodes), 'node')}, "
                     f"{counted(len(scenario.modules), 'module')}"
                     + (f", helpers {', '.join(scenario.helpers)}" if scenario.helpers
                        else ""))
    lines.append(f"root: node {plan.root_node} = module {plan.root_module} at "
                 f"({rp.x:.3f}, {rp.y:.3f}) m, yaw {math.degrees(rp.yaw):.1f} deg")
    if plan.method != "assembly":
        how = (f"full disassembly, then assembly ({full_reason(scenario, asked_full)})"
               if plan.method == "full" and scenario is not None else
               "full disassembly, then assembly" if plan.method == "full" else
               f"keeps {plan.kept[0]} in place (the target is built round it)"
               if len(plan.kept) == 1 else
               f"keeps {', '.join(plan.kept) if plan.kept else 'nothing'} docked")
        lines.append(f"reconfiguration ({plan.method}): {how}; "
                     f"{counted(len(plan.undocks), 'undocking action')} "
                     f"in {counted(plan.num_undock_stages, 'stage')}")
        uh = ("stage", "module", "undocks face", "from", "back-off", "park x [m]",
              "park y [m]", "yaw [deg]")
        urows = [uh]
        for u in plan.undocks:
            urows.append((str(u.stage + 1), u.module, u.face.value,
                          f"{u.from_module}.{u.from_face.value}",
                          f"{'forward' if u.direction > 0 else 'reverse'} {u.distance:.3f} m",
                          f"{u.park.x:.3f}", f"{u.park.y:.3f}",
                          f"{math.degrees(u.park.yaw):.1f}"))
        uw = [max(len(ur[i]) for ur in urows) for i in range(len(uh))]
        if not plan.undocks:
            lines.append("nothing to undock")
            urows = []
        for i, ur in enumerate(urows):
            lines.append("  ".join(c.ljust(w) if j < 5 else c.rjust(w)
                                   for j, (c, w) in enumerate(zip(ur, uw))).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in uw))
    n_undock = plan.num_undock_stages if plan.method != "assembly" else 0
    split = (f" ({n_undock} undocking, {len(plan.stages) - n_undock} docking)"
             if n_undock else "")
    lines.append(f"{counted(len(plan.stages), 'stage')}{split}, "
                 f"{counted(len(plan.actions), 'docking action')}, "
                 f"total travel {plan.total_cost_m:.3f} m, schedule {plan.schedule}")
    header = ("stage", "module", "node", "docks face", "onto", "helper", "goal x [m]",
              "goal y [m]", "yaw [deg]")
    rows = [header]
    for a in plan.actions:
        rows.append((str(a.stage + 1), a.module, a.node, a.child_face.value,
                     f"{a.parent_module}.{a.parent_face.value} ({a.parent_node})",
                     a.helper or "-", f"{a.goal.x:.3f}", f"{a.goal.y:.3f}",
                     f"{math.degrees(a.goal.yaw):.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if j < 6 else c.rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    carries = carries_of(plan)
    if carries:
        lines.append("helping modules: " + "; ".join(
            f"{h} carries {', '.join(ms)}" for h, ms in sorted(carries.items())))
        if scenario is not None:
            lines += [f"note: {n}" for n in plan_notes(plan, scenario)]
    idle = idle_throughout(plan)
    lines.append(f"{IDLE_HEAD}: {', '.join(idle) if idle else '-'}")
    return "\n".join(lines)


#: head of the plan table's last line: the modules that neither play a node nor carry one
#: (they do not stand still for sure: a path may need them out of its way, fresh-user
#: finding)
IDLE_HEAD = "idle throughout (no node, no carry; navigation may move them aside)"


def _run_interrupted() -> str:
    """What a Ctrl-C that reached the CLI interrupted: before the stack started (nothing
    moved) or after it stopped (while the results were written; the run's own handlers
    cover the time in between)."""
    # looked up, not imported: a Ctrl-C during run_job's own import left it half-made
    stack_started = getattr(sys.modules.get("smores_assembly.run_job"), "stack_started", None)
    if callable(stack_started) and stack_started():
        return ("interrupted after the stack stopped, while the results were written "
                "(the report and pictures may be missing or incomplete)")
    return "interrupted before any module moved"


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # refused by the subcommand, so that its usage is the one shown
        args.subparser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        # quiet on a closed pipe (``| head``); one line, no traceback, on Ctrl-C before
        # the run's own handlers are in force (see run_job.stack.Interrupts)
        return run_cli(lambda: args.handler(args), prog=PROG,
                       interrupted=(_run_interrupted if args.command == "run"
                                    else "interrupted"))
    except SmoresError as exc:  # ScenarioError, PlanningError, bad parameters
        msg = " ".join(str(exc).split())
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
