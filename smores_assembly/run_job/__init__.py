"""``smores-assemble run``: the main job — assemble a scenario on the fake hardware.

1. Load and plan the scenario with the pure core: bad input is refused (exit 2) before any
   process starts.
2. Start the stack from ``launch/fake_assembly.launch.yaml`` (one process per node).
3. Send the ``Assemble`` goal, print live progress (stage, each module's phase and errors).
4. Write ``report.json``, ``trajectories.png``, ``timeline.png`` (and with ``--record`` an
   MCAP file of all topics) to ``--out``.

Exit status (as ``run --help`` lists them): 0 only when the target topology is fully
formed (the fake hardware's connections equal the target's edges); 1 when the assembly
failed or ran past ``--timeout`` (or the watchdog ended a teardown that blocked the
interpreter); 2 on bad input or a node that refused its configuration at start-up; 3
when the plan was not approved at the ``--approve`` prompt; 130 on Ctrl-C, 143 on
SIGTERM (once the stack is up every process is shut down and a partial report is
written; before that nothing has moved and there is no report).

The pieces: :mod:`.stack` (launch arguments, node log, signals), :mod:`.observer` (the run's
own node: observations, recording, spin loop), :mod:`.goal` (the ``Assemble`` goal, approval
prompt, progress, cancel), :mod:`.results` (verdict, report, pictures), :mod:`.console`
(terminal output and prompt).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from smores_assembly.errors import InputError, ParamsError, SmoresError
from smores_assembly.run_job.console import (assignment_note, params_line, say,
                                             started_line)
from smores_assembly.run_job.results import expected_connections
from smores_assembly.teardown import (TEARDOWN_TIMEOUT_S, WATCHDOG_MARGIN_S,  # noqa: F401
                                      bounded_call, exit_now, watchdog)
from smores_assembly.vocabulary import counted

__all__ = ["DEFAULT_TIMEOUT_S", "dds_environment", "expected_connections", "run",
           "stack_started"]

#: Wall-clock limit of a run when --timeout is not given [s].
DEFAULT_TIMEOUT_S = 900.0

#: set once a run has started its nodes (modules may move from then on); read by the CLI
#: to word a Ctrl-C that reaches it (:func:`stack_started`)
_STARTED = {"stack": False}

#: Fast DDS profile of the stack's nodes (``config/``): see :func:`dds_environment`.
FASTDDS_PROFILE = "fastdds_profile.xml"


def dds_environment(env) -> None:
    """Give the nodes started from ``env`` (and this process) the project's Fast DDS
    profile, ``FASTDDS_DEFAULT_PROFILES_FILE`` = ``config/fastdds_profile.xml``, unless
    ``env`` names a file of its own: no type propagation, so that an endpoint is
    discovered when its announcement arrives instead of after a TypeLookup request and
    reply (a node that had not registered the announced type yet; under load a publisher
    stayed unmatched for more than 30 s and a lockstep run went on without its message)."""
    from smores_assembly.launch.yaml_launch import PACKAGE, find_pkg_share  # noqa: PLC0415
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                   str(find_pkg_share(PACKAGE) / "config" / FASTDDS_PROFILE))


def stack_started() -> bool:
    """Whether a run in this process has started its stack's nodes (modules may have
    moved)."""
    return _STARTED["stack"]


def run(args) -> int:
    """Handler of ``smores-assemble run`` (``args`` from :mod:`smores_assembly.cli`)."""
    from smores_assembly.cli import check_full_disassembly, plan_scenario
    from smores_assembly.planning import PlanningError, with_schedule
    from smores_assembly.scenario import load_scenario
    from smores_assembly.run_job.stack import (ALL_NODES, check_namespace, check_run_flags,
                                               clear_previous_outputs, make_out_dir,
                                               select_nodes)
    from smores_assembly.staging import DEFAULT_SCHEDULE

    t_wall0 = time.monotonic()
    try:
        check_run_flags(args)
        scenario = load_scenario(args.scenario)
        check_full_disassembly(args, scenario)
        # as task_assignment will plan it (the progress and approval show its stages)
        plan = plan_scenario(args, scenario)
        plan = with_schedule(plan, getattr(args, "schedule", None) or DEFAULT_SCHEDULE)
        if getattr(args, "backend", None) == "mujoco" and scenario.initial_connections:
            # refused before anything starts (the fake hardware would exit at start-up)
            raise InputError("--backend mujoco: start structures (initial.connections) "
                             "are not supported on the mujoco backend yet; use the "
                             "kinematic one")
        namespace = check_namespace(getattr(args, "namespace", None) or "")
        local = select_nodes(getattr(args, "nodes", None))
        undeclared = [h for h in plan.helpers if h not in scenario.helpers]
        if undeclared and "fake_hardware" in local:
            # the plan may use spare modules as helpers; the fake hardware accepts helper
            # commands only from the scenario's helpers (its LIFT would be refused mid-run)
            raise PlanningError(
                f"{args.scenario}: helpers: the plan uses {', '.join(undeclared)} (spare) "
                f"to carry wheel-face docks, but the file declares helpers "
                f"{list(scenario.helpers)} and the fake hardware takes helper commands only "
                f"from those; add {', '.join(undeclared)} to 'helpers:'")
        if getattr(args, "params_file", None):
            from smores_assembly.param_check import (check_params_file, default_readers,
                                                     launch_pinned)
            if not Path(args.params_file).is_file():
                what = ("is a directory, not a parameter file"
                        if Path(args.params_file).is_dir() else "does not exist")
                raise ParamsError(f"--params-file: {args.params_file} {what}",
                                  field="--params-file")
            # the nodes of the whole stack (also those on other computers), as they are
            # named in the run's namespace: a section for no node of the stack is refused
            notes: list[str] = []
            check_params_file(args.params_file,
                              default_readers(args.params_file, namespace),
                              launch_pinned(args.params_file, namespace), notes=notes)
            for line in notes:
                say(line)
        out = make_out_dir(args.out or f"out/{scenario.name}")
        stale = clear_previous_outputs(out)
    except (OSError, SmoresError) as exc:
        print(f"smores-assemble: error: {exc}", file=sys.stderr)
        return 2
    if stale:
        say(f"removed the previous run's outputs from {out}/: {', '.join(stale)}")
    # the first line comes before the slow part (a free ROS domain, the stack's start-up:
    # seconds under load), so that the run is not silent meanwhile
    env = os.environ
    remote = tuple(n for n in ALL_NODES if n not in local)
    picking = "ROS_DOMAIN_ID" not in env and not remote   # as below
    say(f"planned {scenario.name}: "
        + ("picking a ROS domain and starting the stack ..." if picking else
           "starting the stack ..." if local else "waiting for the stack ..."))
    if remote:
        # The other nodes run on other computers: discover them the ROS way (the ROS
        # defaults unless the environment says otherwise: every host of the subnet,
        # domain 0; or ROS_STATIC_PEERS with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST).
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
        env.setdefault("ROS_DOMAIN_ID", "0")
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    # the nodes iterate over sets of module names: a fixed hash seed keeps that order
    env.setdefault("PYTHONHASHSEED", "0")
    dds_environment(env)
    held = None   # the domain's reservation on this machine, for the whole run
    if "ROS_DOMAIN_ID" not in env:
        # a random domain in which no other stack (or test) is running
        from smores_assembly.ros.domain import pick_free_domain
        domain, busy, held = pick_free_domain()
        if busy:
            say(f"ROS domains in use by other stacks: drew {busy} busy domain(s)"
                + ("; set ROS_DOMAIN_ID to choose one" if busy >= 5 else ""))
        env["ROS_DOMAIN_ID"] = str(domain)
    if not any(k in env for k in ("ROS_LOG_DIR", "ROS_HOME")):
        env["ROS_LOG_DIR"] = str(out / "ros_log")
    say(f"scenario '{scenario.name}': {counted(len(scenario.nodes), 'node')}, "
        f"{counted(len(scenario.modules), 'module')}; root {plan.root_module} as "
        f"{plan.root_node}; {counted(len(plan.actions), 'dock')}"
        + (f" after {counted(len(plan.undocks), 'undock')} ({plan.method})"
           if plan.method != "assembly" else "")
        + f" in {counted(len(plan.stages), 'stage')} "
        f"(ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}"
        + (f", namespace {namespace}" if namespace else "") + f", output in {out}/)")
    if remote:
        say(f"nodes on other computers: {', '.join(remote)} (discovery: "
            f"ROS_AUTOMATIC_DISCOVERY_RANGE={env['ROS_AUTOMATIC_DISCOVERY_RANGE']}, "
            f"ROS_STATIC_PEERS={env.get('ROS_STATIC_PEERS', '') or '-'})")
    try:
        return _run_stack(args, scenario, plan, out, t_wall0, namespace, local, remote)
    finally:
        if held is not None:
            held.release()


def _run_stack(args, scenario, plan, out: Path, t_wall0: float, namespace: str = "",
               local: tuple[str, ...] = (), remote: tuple[str, ...] = ()) -> int:
    """Start the stack's ``local`` nodes (``remote``: the nodes that other computers run)
    under ``namespace``, run the goal, shut everything down in order, write the results."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    from smores_assembly.launch import LaunchRunner
    from smores_assembly.run_job.goal import run_goal
    from smores_assembly.run_job.observer import ObserverNode
    from smores_assembly.run_job.results import judge, write_up
    from smores_assembly.run_job.stack import (Interrupts, NodeLog, StackExited,
                                               effective_seed, launch_specs)

    applied: dict[str, dict[str, object]] = {}
    specs = launch_specs(args, applied)
    if getattr(args, "params_file", None):
        say(params_line(args.params_file, applied))
    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
    log = NodeLog(out / "nodes.log")
    signals = Interrupts()
    runner = LaunchRunner(specs, sink=log.sink)
    _STARTED["stack"] = True
    runner.start()
    try:
        say(started_line([s.name for s in specs], out / "nodes.log"))
        # Our own SIGINT/SIGTERM handlers stay in force (see Interrupts).
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        observer = ObserverNode(runner, signals.stop, out,
                                out / "assembly.mcap" if args.record else None,
                                namespace=namespace)
    except BaseException:
        # nothing may outlive the run: the nodes are stopped before the error goes on
        runner.shutdown()
        rclpy.try_shutdown()
        log.close()
        signals.restore()
        raise
    finished = False   # the goal's part ran to its end (no exception on its way out)
    try:
        outcome = run_goal(observer, signals.interrupted, scenario, plan,
                           approve=bool(args.approve), timeout=timeout, remote=remote)
        lockstep = not getattr(args, "free_running", False)
        if outcome.result is not None and outcome.result.success:
            # the report's phases: every docked module's last status may still be on its way
            observer.await_docked([a.module for a in outcome.result.plan.actions])
        # after Ctrl-C too (the run's end is then not a seed's: the steps say how far
        # it got), but without waiting long for a simulation that may not stand still
        try:
            trace = observer.fetch_trace(
                wait_for_hold=lockstep and not signals.interrupted.is_set(),
                timeout=10.0 if not signals.interrupted.is_set() else 3.0)
        except StackExited:  # the fake hardware, or the node it waits for, is gone
            trace = None
        exited = {n: c for n, c in runner.poll().items() if c != 0}
        finished = True
    finally:
        observer.close_recording()
        # the observer goes first, while the stack's participants are still up: destroyed
        # after them, Fast DDS once hung for good deleting its publishers (a writer's timer
        # unregistration racing the removal of the remote participants; no report written).
        # The same race hung rclpy's shutdown once more (deleting the /rosout writer in
        # rcl_logging_fini, holonomic_vehicle sequential, after the assembly succeeded):
        # both are bounded, so the report is written and the run ends whatever DDS does;
        # a hang that keeps the GIL (rcl_logging_fini, seen after a SIGTERM) starves the
        # bounding thread too: the C watchdog (teardown.watchdog) ends the process then.
        with watchdog(TEARDOWN_TIMEOUT_S + WATCHDOG_MARGIN_S):
            hung = not bounded_call(observer.destroy, TEARDOWN_TIMEOUT_S)
        codes = runner.shutdown()
        if not finished:   # an exception on its way out: the context goes now
            with watchdog(TEARDOWN_TIMEOUT_S + WATCHDOG_MARGIN_S):
                bounded_call(rclpy.try_shutdown, TEARDOWN_TIMEOUT_S)
        log.close()
        signals.restore()

    wall = time.monotonic() - t_wall0
    verdict = judge(plan, outcome.result, observer.obs.connections, outcome.error, scenario,
                    declined=outcome.declined, interrupted=signals.interrupted.is_set())
    # said when the stack's plan arrived (StackPlanNote); here only if it was not seen
    note = (assignment_note(plan, verdict.plan)
            if outcome.result is not None and not outcome.plan_seen else "")
    if note:
        say(note)
    run_info = {"seed": effective_seed(args), "lockstep": lockstep,
                "single_process": bool(getattr(args, "single_process", False)),
                "trace_sha256": trace["sha256"] if trace else "",
                "trace_steps": trace["steps"] if trace else 0,
                "trace_end_s": trace["t"] if trace else 0.0,
                "namespace": namespace or "/", "local_nodes": list(local),
                "remote_nodes": list(remote),
                "params_file": (str(Path(args.params_file).resolve())
                                if getattr(args, "params_file", None) else None),
                "params_applied": applied}
    write_up(out, scenario, outcome.result, verdict, wall, observer.obs, codes,
             recorded=bool(args.record), extra=run_info)
    code = _exit_code(signals, exited, out, verdict, outcome)
    # the context last, once the results are written (its teardown is where Fast DDS hung)
    with watchdog(TEARDOWN_TIMEOUT_S + WATCHDOG_MARGIN_S):
        hung = not bounded_call(rclpy.try_shutdown, TEARDOWN_TIMEOUT_S) or hung
    if hung:
        say(f"warning: the ROS middleware did not shut down within {TEARDOWN_TIMEOUT_S:.0f} s "
            "(a Fast DDS teardown hang); the results are written and the run ends anyway")
        exit_now(code)
    return code


def _exit_code(signals, exited, out: Path, verdict, outcome) -> int:
    """The run's exit code (130 interrupted by Ctrl-C, 143 by SIGTERM, 2 a node refused its
    configuration, 3 not approved, 1 not assembled, 0 assembled)."""
    from smores_assembly.run_job.stack import StackExited

    if signals.interrupted.is_set():
        return signals.exit_code
    early = StackExited(exited, out / "nodes.log")
    if early.refused and not verdict.success:
        # a node refused its configuration (bad input the pre-checks did not catch)
        print(f"smores-assemble: error: {early.refusal()}", file=sys.stderr)
        return 2
    if outcome.declined:
        return 3
    return 0 if verdict.success else 1
