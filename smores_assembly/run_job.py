"""``smores-assemble run``: the main job — assemble a scenario on the fake hardware.

1. Load and plan the scenario with the pure core: bad input is refused (exit 2) before any
   process starts.
2. Start the stack from ``launch/fake_assembly.launch.yaml`` (one process per node).
3. Send the ``Assemble`` goal, print live progress (stage, each module's phase and errors).
4. Write ``report.json``, ``trajectories.png``, ``timeline.png`` (and with ``--record`` an
   MCAP file of all topics) to ``--out``.

Exit status: 0 only when the target topology is fully formed (the fake hardware's
connections equal the target's edges); 1 when the assembly failed; 2 on bad input;
130 on Ctrl-C (every process is shut down, a partial report is still written).
"""
from __future__ import annotations

import math
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

from smores_assembly.geometry import Pose2D
from smores_assembly.report import (PhaseInterval, PhaseRecorder, final_errors,
                                    plot_timeline, plot_trajectories, write_json)

_WATCH = ("WARN", "ERROR", "FATAL")
#: Wall-clock limit of a run when --timeout is not given [s].
DEFAULT_TIMEOUT_S = 900.0


def _say(msg: str) -> None:
    print(msg, flush=True)


def _connection_key(module_a: str, face_a: str, module_b: str, face_b: str):
    return frozenset({(module_a, face_a.upper()), (module_b, face_b.upper())})


def expected_connections(plan) -> set:
    """Target edges as module/face pairs under the plan's assignment."""
    return {_connection_key(a.module, a.child_face.value, a.parent_module, a.parent_face.value)
            for a in plan.actions}


def run(args) -> int:
    """Handler of ``smores-assemble run`` (``args`` from :mod:`smores_assembly.cli`)."""
    from smores_assembly.planning import plan_assembly
    from smores_assembly.scenario import load_scenario

    t_wall0 = time.monotonic()
    try:
        scenario = load_scenario(args.scenario)
        plan = plan_assembly(scenario)
        if getattr(args, "params_file", None):
            from smores_assembly.param_check import check_params_file
            if not Path(args.params_file).is_file():
                raise ValueError(f"--params-file: {args.params_file} does not exist")
            check_params_file(args.params_file)
    except (OSError, ValueError) as exc:
        print(f"smores-assemble: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or f"out/{scenario.name}")
    out.mkdir(parents=True, exist_ok=True)
    env = os.environ
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if "ROS_DOMAIN_ID" not in env:
        env["ROS_DOMAIN_ID"] = str(random.Random().randint(1, 100))
    if not any(k in env for k in ("ROS_LOG_DIR", "ROS_HOME")):
        env["ROS_LOG_DIR"] = str(out / "ros_log")
    _say(f"scenario '{scenario.name}': {len(scenario.nodes)} nodes, "
         f"{len(scenario.modules)} modules; root {plan.root_module} as {plan.root_node}; "
         f"{len(plan.actions)} docks in {len(plan.stages)} stages "
         f"(ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}, output in {out}/)")
    return _run_stack(args, scenario, plan, out, t_wall0)


def _run_stack(args, scenario, plan, out: Path, t_wall0: float) -> int:
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions
    from std_srvs.srv import Trigger

    from smores_assembly.action import Assemble
    from smores_assembly.launch import LaunchRunner, launch_file, load_launch
    from smores_assembly.msg import (CollisionEvent, ConnectionArray, DockingStatusArray,
                                     ModuleStateArray)
    from smores_assembly.ros import common
    from smores_assembly.ros.convert import scenario_to_target_msg

    launch_args = {"scenario": str(Path(args.scenario).resolve())}
    if getattr(args, "params_file", None):
        params = Path(args.params_file)
        launch_args["params_file"] = str(params.resolve())
    if args.real_time_factor is not None:
        launch_args["real_time_factor"] = str(args.real_time_factor)
    specs = load_launch(launch_file("fake_assembly"), launch_args)
    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
    log_file = open(out / "nodes.log", "w")
    log_lock = threading.Lock()

    def sink(line: str) -> None:
        with log_lock:
            log_file.write(line + "\n")
            log_file.flush()
        if any(f"[{w}]" in line for w in _WATCH):
            print("  " + line, file=sys.stderr, flush=True)

    stop = threading.Event()
    interrupted = threading.Event()

    def on_signal(*_):
        interrupted.set()
        stop.set()

    old_int = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    runner = LaunchRunner(specs, sink=sink)
    runner.start()
    _say(f"started {len(specs)} nodes: {', '.join(s.name for s in specs)} (logs: {out}/nodes.log)")

    # Our own SIGINT/SIGTERM handlers stay in force: Ctrl-C cancels the goal and shuts the
    # stack down in order instead of tearing this process's ROS context down under it.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("smores_assemble_run",
                             parameter_overrides=[Parameter("use_sim_time", value=True)])
    recorder = PhaseRecorder()
    traj: dict[str, list[tuple[float, float, float]]] = {}
    final: dict[str, Pose2D] = {}
    connections: dict = {"msg": None}
    collisions: list[dict] = []
    last_status: dict = {"msg": None}

    def on_truth(msg: ModuleStateArray) -> None:
        for m in msg.modules:
            pts = traj.setdefault(m.id, [])
            p = (m.x, m.y, m.yaw)
            if not pts or math.hypot(pts[-1][0] - p[0], pts[-1][1] - p[1]) > 0.002:
                pts.append(p)
            final[m.id] = Pose2D(*p)

    def on_status(msg: DockingStatusArray) -> None:
        t = common.time_to_sec(msg.header.stamp)
        for s in msg.modules:
            recorder.sample(t, s.module, s.phase_name, s.retries, {
                "face_gap_mm": s.face_gap_mm, "lateral_error_mm": s.lateral_error_mm,
                "yaw_error_deg": s.yaw_error_deg}, s.message)
        last_status["msg"] = msg

    def on_collision(msg: CollisionEvent) -> None:
        collisions.append({"t": common.time_to_sec(msg.header.stamp), "modules":
                           [msg.module_a, msg.module_b], "penetration_m": msg.penetration_m})

    node.create_subscription(ModuleStateArray, "/fake_hardware/ground_truth", on_truth,
                             common.SENSOR_QOS)
    node.create_subscription(DockingStatusArray, common.TOPIC_DOCKING_STATUS, on_status, 50)
    node.create_subscription(ConnectionArray, common.TOPIC_CONNECTIONS,
                             lambda m: connections.__setitem__("msg", m), common.LATCHED_QOS)
    node.create_subscription(CollisionEvent, common.TOPIC_COLLISIONS, on_collision, 50)
    recorder_mcap = None
    if args.record:
        from smores_assembly.record import McapRecorder
        recorder_mcap = McapRecorder(node, out / "assembly.mcap")
    client = ActionClient(node, Assemble, "/assembly/assemble")
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin_until(pred, timeout: float, interruptible: bool = True) -> bool:
        deadline = time.monotonic() + timeout
        while not (interruptible and stop.is_set()) and time.monotonic() < deadline:
            if pred():
                return True
            executor.spin_once(timeout_sec=0.05)
            if recorder_mcap is not None:
                recorder_mcap.poll_topics()
            dead = {n: c for n, c in runner.poll().items() if c != 0}
            if dead:
                raise RuntimeError(f"node(s) exited early: {dead}; see {out}/nodes.log")
        return pred()

    result = None
    error = ""
    goal_handle = None
    try:
        if not spin_until(lambda: client.server_is_ready(), 60.0):
            raise RuntimeError("the executive's /assembly/assemble action did not come up "
                               "within 60 s")
        goal = Assemble.Goal(target=scenario_to_target_msg(scenario),
                             require_approval=bool(args.approve))
        state = {"fb": None}
        send = client.send_goal_async(goal, feedback_callback=lambda f: state.__setitem__(
            "fb", f.feedback))
        if not spin_until(lambda: send.done(), 30.0):
            raise RuntimeError("the Assemble goal was not answered within 30 s")
        goal_handle = send.result()
        if not goal_handle.accepted:
            raise RuntimeError("the Assemble goal was rejected (is another assembly running?)")
        res_future = goal_handle.get_result_async()
        if args.approve:
            spin_until(lambda: state["fb"] is not None and state["fb"].state ==
                       "WAITING_APPROVAL" or res_future.done(), 60.0)
            if not res_future.done():
                _print_plan(plan)
                answer = _ask("Approve this plan and start moving? [y/N] ")
                if answer.strip().lower() in ("y", "yes"):
                    cli = node.create_client(Trigger, "/assembly/approve")
                    cli.wait_for_service(timeout_sec=10.0)
                    fut = cli.call_async(Trigger.Request())
                    spin_until(fut.done, 10.0)
                else:
                    goal_handle.cancel_goal_async()
        printer = _ProgressPrinter(len(plan.stages))
        deadline = time.monotonic() + timeout
        while not res_future.done() and not stop.is_set():
            if time.monotonic() > deadline:
                error = f"timed out after {timeout:.0f} s of wall time"
                break
            spin_until(res_future.done, 0.5)
            printer.show(state["fb"], last_status["msg"])
        if res_future.done():
            result = res_future.result().result
        elif goal_handle is not None:
            # Ctrl-C or timeout: cancel the goal (the executive stops every module) and wait
            # for its result, even if Ctrl-C is pressed again.
            cancel = goal_handle.cancel_goal_async()
            spin_until(cancel.done, 5.0, interruptible=False)
            spin_until(res_future.done, 5.0, interruptible=False)
            if res_future.done():
                result = res_future.result().result
            if interrupted.is_set():
                error = "interrupted (Ctrl-C): assembly cancelled, every module stopped"
        # let the last ground truth / connections arrive
        t_end = time.monotonic() + 0.5
        spin_until(lambda: time.monotonic() > t_end, 1.0, interruptible=False)
    except RuntimeError as exc:
        error = error or ("interrupted (Ctrl-C) before the assembly started"
                          if interrupted.is_set() else str(exc))
    finally:
        if recorder_mcap is not None:
            recorder_mcap.close()
        codes = runner.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        log_file.close()
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)

    wall = time.monotonic() - t_wall0
    if result is not None and result.plan.actions:
        # The plan the stack executed (made from mocap poses) is the one to judge against.
        from smores_assembly.ros.convert import msg_to_plan
        plan = msg_to_plan(result.plan)
    formed = set()
    if connections["msg"] is not None:
        formed = {_connection_key(c.module_a, c.face_a, c.module_b, c.face_b)
                  for c in connections["msg"].connections}
    expected = expected_connections(plan)
    complete = formed == expected
    success = bool(result is not None and result.success and complete)
    if result is not None and not result.success and not error:
        error = result.message
    elif result is not None and result.success and not complete:
        error = (f"executive reported success but the fake hardware shows "
                 f"{len(formed & expected)}/{len(expected)} target connections "
                 f"(+{len(formed - expected)} unexpected)")

    report = _report(scenario, plan, result, success, error, wall, recorder, final, formed,
                     expected, collisions, codes)
    write_json(out / "report.json", report)
    goals = plan.goals
    edges = [(a.module, a.parent_module) for a in plan.actions]
    try:
        plot_trajectories(out / "trajectories.png", traj, goals, edges,
                          title=f"{scenario.name}: trajectories (dashed: target)")
        t0 = _activity_start(recorder)
        rows = [(f"s{a.stage + 1} {a.module}->{a.parent_module} "
                 f"{a.child_face.value}/{a.parent_face.value}",
                 [PhaseInterval(i.phase, i.start - t0, i.end - t0)
                  for i in recorder.intervals.get(a.module, [])]) for a in
                sorted(plan.actions, key=lambda a: (a.stage, a.module))]
        plot_timeline(out / "timeline.png", rows,
                      [(lo - t0, hi - t0) for lo, hi in _stage_bounds(plan, recorder)],
                      title=f"{scenario.name}: docking actions by phase")
    except Exception as exc:  # a plotting problem must not hide the result
        _say(f"warning: could not draw the pictures: {exc}")
    verdict = "ASSEMBLED" if success else "FAILED"
    _say(f"{verdict}: {len(formed & expected)}/{len(expected)} target connections, "
         f"assembly {report['assembly_time_s']:.1f} s simulated, {wall:.1f} s wall"
         + (f" — {error}" if error else ""))
    _say(f"report: {out}/report.json, pictures: {out}/trajectories.png, {out}/timeline.png"
         + (f", recording: {out}/assembly.mcap" if args.record else ""))
    if interrupted.is_set():
        return 130
    return 0 if success else 1


def _stage_bounds(plan, recorder: PhaseRecorder) -> list[tuple[float, float]]:
    bounds = []
    for stage in plan.stages:
        ivs = [iv for m in stage for iv in recorder.intervals.get(m, [])
               if iv.phase not in ("IDLE", "DOCKED")]
        if ivs:
            bounds.append((min(i.start for i in ivs), max(i.end for i in ivs)))
    return bounds


def _activity_start(recorder: PhaseRecorder) -> float:
    """Time of the first docking activity [s, ROS time]: t = 0 of the report and timeline."""
    return min((iv.start for ivs in recorder.intervals.values() for iv in ivs
                if iv.phase not in ("IDLE", "DOCKED")), default=0.0)


def _report(scenario, plan, result, success, error, wall, recorder, final, formed, expected,
            collisions, codes) -> dict:
    t0 = _activity_start(recorder)
    t1 = max((iv.end for ivs in recorder.intervals.values() for iv in ivs), default=t0)
    # The executive's time (first stage start to last dock); for an unfinished run, the
    # span of the recorded docking activity.
    assembly_time = (float(result.assembly_time_s) if result is not None
                     and result.assembly_time_s > 0 else max(0.0, t1 - t0))
    actions = []
    for a in sorted(plan.actions, key=lambda a: (a.stage, a.module)):
        phases = [{**p, "start_s": round(p["start_s"] - t0, 3), "end_s": round(p["end_s"] - t0, 3)}
                  for p in recorder.to_dict(a.module) if p["phase"] != "IDLE"]
        actions.append({"module": a.module, "node": a.node, "stage": a.stage,
                        "parent_module": a.parent_module, "parent_face": a.parent_face.value,
                        "child_face": a.child_face.value, "needs_helper": a.needs_helper,
                        "helper": a.helper, "phases": phases,
                        "retries": recorder.retries.get(a.module, 0),
                        "last_error": recorder.messages.get(a.module, "")})
    return {
        "scenario": scenario.name,
        "success": success,
        "error": error,
        "assembly_time_s": round(assembly_time, 3),
        "wall_time_s": round(wall, 2),
        "root": {"node": plan.root_node, "module": plan.root_module},
        "assignment": dict(plan.assignment),
        "stages": plan.stages,
        "connections": sorted([sorted([f"{m}.{f}" for m, f in c]) for c in formed]),
        "missing_connections": sorted([sorted([f"{m}.{f}" for m, f in c])
                                       for c in expected - formed]),
        "actions": actions,
        "final_errors": final_errors(plan.goals, final),
        "capture_errors": recorder.capture,
        "collisions": collisions,
        "node_exit_codes": codes,
    }


def _print_plan(plan) -> None:
    _say(f"plan: root {plan.root_module} ({plan.root_node}), total travel "
         f"{plan.total_cost_m:.3f} m")
    for k, stage in enumerate(plan.stages):
        acts = [a for a in plan.actions if a.stage == k]
        _say(f"  stage {k + 1}: " + "; ".join(
            f"{a.module} {a.child_face.value} -> {a.parent_module} {a.parent_face.value}"
            + (f" (helper {a.helper})" if a.needs_helper else "") for a in acts))


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""


class _ProgressPrinter:
    """Prints a line whenever the stage or any module's phase changes (at most 1/s else)."""

    def __init__(self, num_stages: int):
        self.num_stages = num_stages
        self.last = None
        self.t_last = 0.0

    def show(self, fb, status) -> None:
        if status is None and fb is None:
            return
        stage = status.stage + 1 if status is not None and status.stage >= 0 else (
            fb.stage if fb is not None else 0)
        mods = []
        key = [stage]
        if status is not None:
            for s in status.modules:
                key.append((s.module, s.phase_name, s.retries))
                extra = ""
                if s.phase_name in ("POSE_ADJUST", "APPROACH", "RETRY"):
                    extra = f" gap {s.face_gap_mm:.0f} mm"
                if s.retries:
                    extra += f" retry {s.retries}"
                mods.append(f"{s.module} {s.phase_name}{extra}")
        now = time.monotonic()
        if fb is None:
            return
        if key != self.last or now - self.t_last > 5.0:
            self.last, self.t_last = key, now
            elapsed = f"{fb.elapsed_s:6.1f} s"
            _say(f"[{elapsed}] stage {stage}/{self.num_stages} | " + " | ".join(mods))
