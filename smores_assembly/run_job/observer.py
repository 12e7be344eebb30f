"""The run's own ROS node: what it observes of the stack (ground truth, docking status,
connections, collisions), the optional MCAP recording, and the spin loop every wait uses."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from smores_assembly.geometry import Pose2D
from smores_assembly.report import PhaseRecorder
from smores_assembly.vocabulary import Phase

if TYPE_CHECKING:  # rclpy is imported lazily: `smores-assemble plan` runs without ROS
    from rclpy.client import Client

#: A new trajectory point is kept when the module moved more than this [m].
TRAJ_STEP_M = 0.002
#: A module counts as moving above this ground-truth speed [m/s] (``Observations.motion``).
MOVING_SPEED = 0.004
#: Two moving intervals of a module closer than this [s] are one.
MOTION_MERGE_S = 0.5
#: Rate of the ground truth a run without a recording asks the fake hardware for [Hz]
#: (the launch's 50 Hz otherwise; a params file's ``ground_truth_rate_hz`` wins): what the
#: report needs of it (trajectory points, the final poses, the motion intervals of the
#: timeline, merged within :data:`MOTION_MERGE_S`) at a fifth of the messages (issue 10:
#: each costs the fake hardware a publish and this process a wake-up share and a take).
REPORT_TRUTH_RATE_HZ = 10.0
#: Longest wait of one executor spin in :meth:`ObserverNode.spin_until` [s, wall]: a message
#: or a future that a wait's predicate reads ends the spin at once, so this only bounds how
#: late a time-based predicate, Ctrl-C, a dead node and the recording's topic poll are seen
#: (was 0.05: 20 idle wake-ups per wall second with ~3 rcl waits each were most of this
#: process's CPU, issue 10).
SPIN_PERIOD_S = 0.25
#: how long [s, wall] the report waits for the last docking statuses after a successful
#: goal (:meth:`ObserverNode.await_docked`): above Fast DDS's 3-s heartbeat period
STATUS_CATCH_UP_S = 10.0


@dataclass
class Observations:
    """Everything the report needs from the stack's topics (filled by the callbacks below;
    no ROS imports, the messages are read by field name).

    ``traj``: per module, ground-truth points ``(x [m], y [m], yaw [rad])`` in ``world``,
    thinned to :data:`TRAJ_STEP_M`; ``final``: last ground-truth pose per module;
    ``connections``: the last ``ConnectionArray``; ``collisions``: one dict per
    ``CollisionEvent``; ``status_listeners``: called with every ``DockingStatusArray``
    once it is recorded (the progress lines, :meth:`ProgressPrinter.on_status`);
    ``stack_plan``:
    the last ``AssemblyPlan`` task_assignment published (the plan the stack executes, made
    from the measured poses); ``motion``: per
    module, the intervals ``[start, end]`` [s, ROS time] in which its ground-truth speed
    exceeded :data:`MOVING_SPEED` (what it did outside its docking phases, e.g. a
    pipelined schedule's staging moves, comes from these). They are for the
    timeline only, not for report.json (whose content a seed fixes): this observer is not
    a lockstep participant, and thresholds on sampled speeds are fragile to a lost or late
    sample.
    """

    recorder: PhaseRecorder = field(default_factory=PhaseRecorder)
    traj: dict = field(default_factory=dict)
    final: dict = field(default_factory=dict)
    connections: object = None
    collisions: list = field(default_factory=list)
    status_listeners: list = field(default_factory=list)
    stack_plan: object = None
    motion: dict = field(default_factory=dict)
    t_truth: float | None = None   # stamp [s] of the last ground truth

    def on_truth(self, msg) -> None:
        """Record a ground-truth ``ModuleStateArray`` (``msg.stamp_s``: its stamp [s])."""
        t = getattr(msg, "stamp_s", None)
        for m in msg.modules:
            pts = self.traj.setdefault(m.id, [])
            p = (m.x, m.y, m.yaw)
            if not pts or math.hypot(pts[-1][0] - p[0], pts[-1][1] - p[1]) > TRAJ_STEP_M:
                pts.append(p)
            last = self.final.get(m.id)
            if t is not None and last is not None:
                self._motion(m.id, t, math.hypot(p[0] - last.x, p[1] - last.y))
            self.final[m.id] = Pose2D(*p)
        if t is not None:
            self.t_truth = t

    def _motion(self, module: str, t: float, step_m: float) -> None:
        dt = t - (self.t_truth if self.t_truth is not None else t)
        if dt <= 0.0 or step_m / dt <= MOVING_SPEED:
            return
        ivs = self.motion.setdefault(module, [])
        if ivs and t - dt - ivs[-1][1] <= MOTION_MERGE_S:
            ivs[-1][1] = t
        else:
            ivs.append([t - dt, t])

    def on_status(self, msg, t: float) -> None:
        """Record a ``DockingStatusArray`` stamped ``t`` [s, ROS time]."""
        for s in msg.modules:
            try:
                phase = Phase(s.phase)
            except ValueError:
                continue  # not a phase this version knows
            self.recorder.sample(t, s.module, phase, s.retries, {
                "face_gap_mm": s.face_gap_mm, "lateral_error_mm": s.lateral_error_mm,
                "yaw_error_deg": s.yaw_error_deg}, s.message)
        for listener in self.status_listeners:
            listener(msg)

    def on_connections(self, msg) -> None:
        self.connections = msg

    def on_collision(self, msg, t: float) -> None:
        """Record a ``CollisionEvent`` stamped ``t`` [s, ROS time]."""
        self.collisions.append({"t": t, "modules": [msg.module_a, msg.module_b],
                                "penetration_m": msg.penetration_m})


class ObserverNode:
    """The ``smores_assemble_run`` node (sim time) subscribed to the stack's outputs, with an
    optional MCAP recording of every topic (``record_path``) and a single-threaded executor.

    ``rclpy`` must be initialised. ``runner`` is the :class:`LaunchRunner` of the stack (a
    node exiting early ends every wait with RuntimeError); ``stop`` is the event that ends
    interruptible waits (Ctrl-C); ``namespace``: the stack's (``""``: the root).
    """

    def __init__(self, runner, stop, out: Path, record_path: Path | None = None,
                 namespace: str = ""):
        import rclpy
        from rclpy.parameter import Parameter

        from smores_assembly.msg import (CollisionEvent, ConnectionArray,
                                         DockingStatusArray, ModuleStateArray)
        from smores_assembly.ros import common, names

        self.runner, self.stop, self.out = runner, stop, out
        self.obs = Observations()
        # in the stack's namespace, with its simulated time (/clock remapped there, as the
        # launch files do for every node)
        self.node = rclpy.create_node(
            "smores_assemble_run", namespace=namespace or "/",
            cli_args=["--ros-args", "-r", f"{names.CLOCK}:=clock"],
            parameter_overrides=[Parameter("use_sim_time", value=True)])
        node, obs = self.node, self.obs
        # without rclpy's default QoS-event handlers (they only log an incompatible QoS):
        # each is one more entity that the executor adds to its waits and checks
        from rclpy.event_handler import SubscriptionEventCallbacks
        ev = SubscriptionEventCallbacks(use_default_callbacks=False)
        # raw, read with struct (ros/wire.py): 50 messages per simulated second
        from smores_assembly.ros.wire import StatesView
        # the report is made of these: each must be matched before anything moves
        self._subs = {
            # reliable (the fake hardware's publisher is): the motion intervals of the
            # report (staging_moves) are made of consecutive samples, and a best-effort
            # subscription lost samples on a loaded machine, so a same-seed run's report
            # differed (test_lockstep's busy-machine run: staging moves 0.56 s apart)
            names.GROUND_TRUTH: node.create_subscription(
                ModuleStateArray, names.GROUND_TRUTH,
                lambda raw: obs.on_truth(StatesView.of(raw)), 1000, raw=True,
                event_callbacks=ev),
            names.DOCKING_STATUS: node.create_subscription(
                DockingStatusArray, names.DOCKING_STATUS,
                lambda m: obs.on_status(m, common.time_to_sec(m.header.stamp)),
                common.STATUS_QOS,
                event_callbacks=ev),
            names.CONNECTIONS: node.create_subscription(
                ConnectionArray, names.CONNECTIONS, obs.on_connections, common.LATCHED_QOS,
                event_callbacks=ev),
            names.COLLISIONS: node.create_subscription(
                CollisionEvent, names.COLLISIONS,
                lambda m: obs.on_collision(m, common.time_to_sec(m.header.stamp)), 50,
                event_callbacks=ev),
        }
        # not among the topics that must match before anything moves: only --approve shows it
        from smores_assembly.msg import AssemblyPlan
        self._plan_sub = node.create_subscription(
            AssemblyPlan, names.PLAN, lambda m: setattr(obs, "stack_plan", m),
            common.LATCHED_QOS, event_callbacks=ev)
        self.mcap = None
        if record_path is not None:
            from smores_assembly.record import McapRecorder
            self.mcap = McapRecorder(node, record_path)   # log times: this node's clock
        else:
            # nothing else reads this node's clock (the report's times are the messages'
            # stamps): no wake-up per /clock message (issue 10)
            common.drop_clock_subscription(node)
        from std_srvs.srv import Trigger
        # made now so that it is discovered while the stack runs
        self._trace_cli: Client[Trigger.Request, Trigger.Response] = node.create_client(
            Trigger, names.TRACE_SERVICE)
        self.executor = common.make_executor()   # the nodes' executor (cheap wake-ups)
        self.executor.add_node(node)
        # the ground truth (50 per simulated second) is taken from its reader once per
        # spin (spin_until) instead of waking this process for every message: parked,
        # LeanExecutor leaves it out of its wait set (issue 10; it was most of this
        # process's wake-ups). Other executors call the callback as before.
        from smores_assembly.ros import executor as lean
        self._truth = self._subs[names.GROUND_TRUTH]
        self._on_truth_raw = lambda raw: obs.on_truth(StatesView.of(raw))
        self._take_all = lean.take_all
        lean.park(self._truth)

    def spin_until(self, pred, timeout: float, interruptible: bool = True) -> bool:
        """Spin until ``pred()`` holds or ``timeout`` [s, wall] passes (or, when
        ``interruptible``, until ``stop`` is set); returns ``pred()``.

        Raises :class:`~smores_assembly.run_job.stack.StackExited` (a RuntimeError) when
        a node of the stack exited with a non-zero code.
        """
        deadline = time.monotonic() + timeout
        while not (interruptible and self.stop.is_set()) and time.monotonic() < deadline:
            self._take_all(self._truth, self._on_truth_raw)
            if pred():
                return True
            self.executor.spin_once(timeout_sec=min(
                SPIN_PERIOD_S, max(0.0, deadline - time.monotonic())))
            if self.mcap is not None:
                self.mcap.poll_topics()
            dead = {n: c for n, c in self.runner.poll().items() if c != 0}
            if dead:
                from smores_assembly.run_job.stack import StackExited  # noqa: PLC0415
                raise StackExited(dead, Path(self.out) / "nodes.log")
        self._take_all(self._truth, self._on_truth_raw)
        return pred()

    def unmatched_topics(self) -> list[str]:
        """The observed topics (ground truth, docking status, connections, collisions) whose
        subscription has no matched publisher yet. Messages sent before the match are lost
        to this node: a goal sent before every topic matched gave a report whose first
        phases started seconds late (lockstep does not wait for this node)."""
        return [t for t, sub in self._subs.items() if sub.get_publisher_count() == 0]

    def missing_nodes(self, expected) -> list[str]:
        """Those of the stack's nodes ``expected`` (names) that this node does not see in
        its namespace in the ROS graph (yet)."""
        ns = self.node.get_namespace()
        seen = {n for n, n_ns in self.node.get_node_names_and_namespaces() if n_ns == ns}
        return [n for n in expected if n not in seen]

    def await_docked(self, modules, timeout: float = STATUS_CATCH_UP_S) -> list[str]:
        """Spin until the last phase recorded for each of ``modules`` is DOCKED, at most
        ``timeout`` [s, wall]; returns the modules still short. For the report after a
        successful goal: the docking status is reliable, but a sample lost on a loaded
        machine is sent again only after the writer's next heartbeat (Fast DDS: 3 s), and
        the goal's result can come first (a CI run's Task 1 report, recorded at full pace,
        kept m3 in POSE_ADJUST although it had docked)."""
        rec = self.obs.recorder

        def short() -> list[str]:
            return [m for m in modules
                    if not (rec.intervals.get(m) and rec.intervals[m][-1].phase is Phase.DOCKED)]
        self.spin_until(lambda: not short(), timeout, interruptible=False)
        return short()

    def fetch_trace(self, wait_for_hold: bool, timeout: float = 10.0) -> dict | None:
        """The fake hardware's trace (``/fake_hardware/trace``: ``sha256``, ``steps``,
        ``t``), or None when the service does not answer. With ``wait_for_hold`` (lockstep)
        it is read once the simulation stands still (the executive holds it after the
        goal), so that it covers a deterministic number of steps."""
        import json

        from std_srvs.srv import Trigger
        cli = self._trace_cli
        if not self.spin_until(cli.service_is_ready, timeout, interruptible=False):
            return None
        last = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fut = cli.call_async(Trigger.Request())
            if not self.spin_until(fut.done, timeout, interruptible=False):
                return last
            response = fut.result()
            if response is None:
                return last
            info = json.loads(response.message)
            if not wait_for_hold or (last is not None and info["steps"] == last["steps"]):
                return info
            last = info
            t_next = time.monotonic() + 0.3
            self.spin_until(lambda: time.monotonic() > t_next, 1.0, interruptible=False)
        return last

    def close_recording(self) -> None:
        if self.mcap is not None:
            self.mcap.close()

    def destroy(self) -> None:
        self.node.destroy_node()
