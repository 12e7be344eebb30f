"""``docking_controller`` node: closed-loop docking of the active stage's actions.

Thin adapter over :class:`smores_assembly.docking.DockingTask` (phases, laws and tunables
are documented in :mod:`smores_assembly.docking`). Run it as
``python -m smores_assembly.ros.docking_controller --ros-args --params-file
config/docking_controller.yaml`` (add ``-p use_sim_time:=true`` with the fake hardware).

Subscribes:

* ``/assembly/plan`` (AssemblyPlan, latched): the docking actions, and a reconfiguration's
  undocking actions (one :class:`~smores_assembly.docking.UndockTask` each: magnets of the
  connection's two faces held off, back off, park);
* ``/assembly/active_stage`` (std_msgs/Int32, latched): the stage whose actions run; ``-1``
  stops every module (zero ``cmd_vel``; magnets of docked faces stay on);
* ``/modules/states`` (ModuleStateArray, sensor QoS): poses, ``tracked`` flags and stamps;
* ``/<id>/path`` (nav_msgs/Path, latched) of every module of the plan: the timed path
  (pose stamps = planned arrival times; all-zero stamps: untimed, timed at
  ``nominal_path_speed``; an empty path: no path, drive directly). A path for a module
  without an action in the active stage (moved aside by the navigation) is followed to its
  end, then the module stops (an empty path stops it at once); in a pipelined plan a
  module whose dock runs in a later stage (driving to its staging pose) then also turns in
  place to its goal heading, a helper staging at the pick-up pose of its next module turns
  to face that module;
* ``/fake_hardware/connections`` (ConnectionArray, latched): confirms docks when
  ``confirm_with_connections``.

Publishes ``/<id>/cmd_vel`` (Twist) at ``control_rate_hz`` for every module it drives (zero
while the module's pose is stale or the stage is -1; a zero command only when it becomes
zero and then every ``stop_refresh_s``; in lockstep the commands of a turn go to the fake
hardware as one ``fake_hardware/cmd_vel`` CmdVelArray instead), ``/<id>/magnets`` (MagnetCommand) on
change and every ``magnet_refresh_s``, ``/<id>/helper_command`` (HelperCommand),
``/<id>/joint_commands`` (JointState ``pan``, ``tilt`` = 0 for modules docking a TOP face,
so that the face is vertical) and ``/assembly/docking_status`` (DockingStatusArray,
reliable) at ``status_rate_hz``.

Timers use the node clock, so the node runs on simulated time with ``use_sim_time``. With
``lockstep:=true`` the node is a participant of the fake hardware's lockstep simulation
(:mod:`smores_assembly.ros.lockstep`): its timers run at its turns, and a turn with an
active stage but no plan yet is held until the plan arrives.
"""
from __future__ import annotations

import functools
import math
import sys

from geometry_msgs.msg import Twist
from nav_msgs.msg import Path
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Int32

from smores_assembly import params
from smores_assembly.docking import (DockingSettings, DockingSpec, DockingTask, PathFollower,
                                     PoseSample, StandingTracker, TimedPath, UndockTask)
from smores_assembly.docking.dispatch import (dispatch, magnets_on, merge_command,
                                              tick_followers)
from smores_assembly.docking.settings import DockingNodeSettings
from smores_assembly.errors import InputError
from smores_assembly.geometry import Face
from smores_assembly.msg import (AssemblyPlan, CmdVelArray, ConnectionArray, DockingStatus,
                                 DockingStatusArray, HelperCommand, MagnetCommand,
                                 ModuleStateArray)
from smores_assembly.ros import common, lockstep, names
from smores_assembly.ros.convert import (action_msg_to_spec, connections_from_msg,
                                         faces_to_magnet_msg, helper_request_to_msg,
                                         path_msg_to_timed, refused_action_status,
                                         states_raw_to_samples, task_status_to_msg,
                                         undock_msg_to_spec)
from smores_assembly.ros.wire import write_cmd_vel_array, write_twist
from smores_assembly.staging import next_carry
from smores_assembly.vocabulary import Phase, counted




class DockingControllerNode(Node):
    """The ``docking_controller`` node (see the module docstring).

    Raises:
        ParamsError: a parameter out of range or inconsistent (at start-up).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("docking_controller", **common.node_kwargs(kwargs))
        self.lockstep = lp = lockstep.declare(self)
        node_settings, settings = params.node_settings("docking_controller")
        self.node_settings: DockingNodeSettings = common.declare_dataclass_params(
            self, node_settings, on_change=lambda _s: self._make_timers())
        self.settings: DockingSettings = common.declare_dataclass_params(self, settings)
        self._plan: AssemblyPlan | None = None
        self._stage: int | None = None
        self._samples: dict[str, PoseSample] = {}
        self._connections: set[frozenset] = set()
        self._conn_faces: dict[str, set] = {}
        self._tasks: dict[str, DockingTask | UndockTask] = {}   # action module -> task
        self._bad: list[DockingStatus] = []            # actions refused at creation
        self._followers: dict[str, PathFollower] = {}
        # which modules stand (fed every tick; the followers' turn escape judges those)
        self._standing = StandingTracker()
        self._new_paths: dict[str, TimedPath | None] = {}   # arrived since the last tick
        self._paths: dict[str, tuple[TimedPath | None, float]] = {}
        self._docked_faces: dict[str, set] = {}        # magnets kept on for DOCKED actions
        self._mag_sent: dict[str, tuple[frozenset, float]] = {}
        self._zero_sent: dict[str, float] = {}   # module -> time of its last zero cmd_vel
        self._driven: set[str] = set()
        # helper -> a DOCKED task of an ended stage whose helper still backs off from the
        # module it handed over (it turns or drives elsewhere only once clear of it)
        self._backing_off: dict[str, DockingTask] = {}
        self._stopped: set[str] = set()                # kept at zero while the stage is -1
        self._pubs: dict[tuple[str, str], object] = {}
        self._path_subs: dict[str, object] = {}

        lp.create_subscription(AssemblyPlan, names.PLAN, self._on_plan,
                               common.LATCHED_QOS, counted=False)
        lp.create_subscription(Int32, names.ACTIVE_STAGE, self._on_stage,
                               common.LATCHED_QOS)
        lp.create_subscription(ModuleStateArray, names.STATES, self._on_states,
                               common.SENSOR_QOS, raw=True)   # read with struct (wire.py)
        lp.create_subscription(ConnectionArray, names.CONNECTIONS,
                               self._on_connections, common.LATCHED_QOS)
        # an active stage needs its plan (published by task_assignment, not a participant):
        # the control tick waits for it, whether it arrived before the turn or during it
        lp.hold(lambda: self._stage is not None and self._stage >= 0 and self._plan is None,
                before_timers=True)
        self._status_pub = lp.create_publisher(
            DockingStatusArray, names.DOCKING_STATUS, common.STATUS_QOS)
        self._status_key: tuple | None = None   # stage and phases of the last status
        #: (stage, module) -> the retries already said in the log
        self._retries_logged: dict[tuple[int, str], int] = {}
        # lockstep: a turn's cmd_vel commands go to the fake hardware as one CmdVelArray
        # (published before the answer) instead of one Twist per module (issue 10)
        self._cmd_batch: list[tuple[str, float, float]] | None = None
        if lp.enabled:
            self._cmd_batch = []
            self._batch_pub = lp.create_publisher(CmdVelArray, names.CMD_VEL_BATCH,
                                                  common.COMMAND_QOS)
            lp.before_answer(self._flush_cmds)
        self._control_timer = self._status_timer = None
        self._make_timers()
        self.get_logger().info(
            f"docking controller: {self.node_settings.control_rate_hz} Hz, standoff "
            f"{self.settings.standoff} m, approach {self.settings.approach_speed} m/s, "
            f"max_retries {self.settings.max_retries}")

    # ------------------------------------------------------------------ plumbing
    def _make_timers(self) -> None:
        lp = self.lockstep
        for tmr in (self._control_timer, self._status_timer):
            if tmr is not None:
                lp.destroy_timer(tmr)
        ns = self.node_settings
        self._control_timer = lp.create_timer(1.0 / ns.control_rate_hz, self._tick)
        self._status_timer = lp.create_timer(1.0 / ns.status_rate_hz, self._publish_status)

    def _pub(self, module: str, name: str, typ):
        key = (module, name)
        pub = self._pubs.get(key)
        if pub is None:
            pub = self.lockstep.create_publisher(typ, names.module_topic(module, name),
                                                 common.COMMAND_QOS)
            self._pubs[key] = pub
        return pub

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _watch_path(self, module: str) -> None:
        if module and module not in self._path_subs:
            self._path_subs[module] = self.lockstep.create_subscription(
                Path, names.module_topic(module, names.PATH),
                functools.partial(self._on_path, module), common.LATCHED_QOS)

    # ------------------------------------------------------------------ inputs
    @staticmethod
    def _plan_key(msg: AssemblyPlan) -> tuple:
        return (msg.target_name, tuple(
            (a.module, a.stage, a.parent_module, a.parent_face, a.child_face, a.helper)
            for a in msg.actions), tuple((u.module, u.stage, u.face) for u in msg.undocks))

    def _on_plan(self, msg: AssemblyPlan) -> None:
        if self._plan is not None and self._plan_key(msg) == self._plan_key(self._plan):
            self._plan = msg  # the same plan again: keep the running tasks
            return
        self._cancel_all("a new plan arrived")
        self._plan = msg
        for m in list(msg.assigned_modules) + list(msg.idle_modules):
            self._watch_path(m)
        for a in msg.actions:
            self._watch_path(a.module)
            self._watch_path(a.helper)
        self.get_logger().info(f"plan {msg.target_name!r}: "
                               f"{counted(len(msg.actions), 'action')} in "
                               f"{counted(msg.num_stages, 'stage')}")
        self._start_stage()

    def _on_stage(self, msg: Int32) -> None:
        if msg.data == self._stage:
            return
        self._cancel_all(f"stage changed to {msg.data}")
        self._stage = msg.data
        self.get_logger().info(f"active stage {msg.data + 1}" if msg.data >= 0
                               else "no active stage")
        self._start_stage()

    def _on_states(self, raw: bytes) -> None:
        self._samples.update(states_raw_to_samples(raw))

    def _on_connections(self, msg: ConnectionArray) -> None:
        conns = connections_from_msg(msg)
        faces: dict[str, set] = {}
        for pair in conns:
            for m, f in pair:
                faces.setdefault(m, set()).add(f)
        self._connections, self._conn_faces = conns, faces

    def _on_path(self, module: str, msg: Path) -> None:
        now = self._now()
        try:
            path = path_msg_to_timed(msg, now, self.node_settings.nominal_path_speed)
        except InputError as exc:
            self.get_logger().error(f"{module}/path refused: {exc}")
            return
        self._new_paths[module] = path
        self._paths[module] = (path, now)

    # ------------------------------------------------------------------ stages
    def _cancel_all(self, why: str) -> None:
        for task in self._tasks.values():
            if task.phase is Phase.DOCKED:
                for m, faces in task.magnet_faces().items():
                    self._docked_faces.setdefault(m, set()).update(faces)
                if isinstance(task, DockingTask) and task.uses_helper and not task.helper_free:
                    # the stage ended at the hand-over: the helper, flush against the
                    # module, finishes its straight back-off before anything else
                    # (turning there swept its corners into the module: bench_targets
                    # random_4_1008411487)
                    self._backing_off[task.driven] = task
            else:
                task.cancel(why)
        for m in self._driven:
            self._send_cmd(m, 0.0, 0.0)
        self._stopped |= self._driven
        self._tasks, self._bad, self._followers = {}, [], {}
        self._driven = set(self._backing_off)

    def _start_stage(self) -> None:
        if self._plan is None or self._stage is None or self._stage < 0 or self._tasks:
            return
        now = self._now()
        for u in self._plan.undocks:
            if u.stage != self._stage:
                continue
            try:
                uspec = undock_msg_to_spec(u)
            except InputError as exc:
                st = DockingStatus(module=u.module, target_module=u.from_module,
                                   phase=int(Phase.FAILED), phase_name=Phase.FAILED.name,
                                   message=f"invalid undock action refused: {exc}")
                self._bad.append(st)
                self.get_logger().error(st.message)
                continue
            self._tasks[u.module] = UndockTask(uspec, self.settings)
            self._driven.add(u.module)
        # paths from earlier stages (their timing is over) are not for this stage
        for m, (path, t_rx) in list(self._paths.items()):
            if path is not None and path.end_time < now - 1.0:
                del self._paths[m]
        self._new_paths = {m: p for m, (p, _) in self._paths.items()}
        for a in self._plan.actions:
            if a.stage != self._stage:
                continue
            try:
                spec = action_msg_to_spec(a)
            except InputError as exc:
                st = refused_action_status(a, f"invalid action refused: {exc}")
                self._bad.append(st)
                self.get_logger().error(st.message)
                continue
            task = DockingTask(spec, self.settings)
            self._tasks[a.module] = task
            self._driven.update({a.module, task.driven})
            # TOP faces capture only while the tilt joint is at zero
            for m, f in ((a.module, spec.child_face), (a.parent_module, spec.parent_face)):
                if f is Face.TOP:
                    js = JointState(name=["pan", "tilt"], position=[0.0, 0.0])
                    js.header.stamp = self.get_clock().now().to_msg()
                    self._pub(m, names.JOINT_COMMANDS, JointState).publish(js)
        self.get_logger().info(f"stage {self._stage + 1}: "
                               f"{counted(len(self._tasks), 'docking action')} "
                               f"({', '.join(sorted(self._tasks)) or 'none'})")

    # ------------------------------------------------------------------ control
    def _send_cmd(self, module: str, v: float, w: float) -> None:
        """Publish ``module``'s twist; a zero twist only when the command became zero or
        ``stop_refresh_s`` after the last one (a module standing still costs the fake
        hardware and the transport nothing per tick, issue 10)."""
        v, w = float(v), float(w)
        if v == 0.0 and w == 0.0:
            now = self._now()
            last = self._zero_sent.get(module)
            if last is not None and now - last < self.node_settings.stop_refresh_s - 1e-9:
                return
            self._zero_sent[module] = now
        else:
            self._zero_sent.pop(module, None)
        if self._cmd_batch is not None:
            self._cmd_batch.append((module, v, w))
            if not self.lockstep.in_turn:   # not expected: a command outside a turn
                self._flush_cmds()
            return
        # the serialised Twist (ros/wire.py): no Python message per command
        self._pub(module, names.CMD_VEL, Twist).publish(write_twist(v, w))

    def _flush_cmds(self) -> None:
        """Lockstep: publish the cmd_vel commands collected since the last flush as one
        CmdVelArray (in the order they were sent)."""
        batch = self._cmd_batch
        if batch:
            mods, vs, ws = zip(*batch)
            batch.clear()
            self._batch_pub.publish(write_cmd_vel_array(mods, vs, ws))

    def _connected(self, spec) -> bool:
        if isinstance(spec, DockingSpec):
            return frozenset({(spec.module, spec.child_face),
                              (spec.parent_module, spec.parent_face)}) in self._connections
        return frozenset({(spec.module, spec.face),
                          (spec.from_module, spec.from_face)}) in self._connections

    def _obstacles(self, task) -> list[tuple[float, float]]:
        if not isinstance(task, DockingTask):
            return []
        return self._around(task.driven,
                            {task.spec.module, task.spec.parent_module, task.spec.helper})

    def _around(self, driven: str, skip: set[str]) -> list[tuple[float, float]]:
        """Centres [m] of the tracked modules within ``obstacle_radius`` of ``driven``,
        those in ``skip`` left out."""
        me = self._samples.get(driven)
        r = self.node_settings.obstacle_radius
        out = []
        for m, smp in self._samples.items():
            if m in skip or not smp.tracked:
                continue
            if me is None or me.pose.distance_to(smp.pose) <= r:
                out.append((smp.pose.x, smp.pose.y))
        return out

    def _tick(self) -> None:
        now = self._now()
        if now <= 0.0:
            return  # no clock yet (use_sim_time before the first /clock)
        new_paths, self._new_paths = self._new_paths, {}
        if self._stage is None or self._stage < 0:
            for m in self._stopped | self._driven:
                self._send_cmd(m, 0.0, 0.0)
            self._send_magnets(now, {})
            return
        self._stopped = set()
        cmds: dict[str, tuple[float, float]] = {}
        wanted: dict[str, set] = {}
        off: dict[str, set] = {}
        backing = []
        for h, back in list(self._backing_off.items()):
            if back.helper_free:
                del self._backing_off[h]
            else:
                backing.append(h)
        # which task drives which body and takes which path: one ROS-free rule set
        # (smores_assembly.docking.dispatch), the closed-loop test harnesses run it too
        d = dispatch(self._tasks.values(), backing, new_paths)
        for h in backing:
            # the helper's back-off first: no task drives it, no path of it starts yet
            back = self._backing_off[h]
            cmds[h] = back.tick(now, self._samples, True, None, ()).cmd.get(h, (0.0, 0.0))
        for h, p in d.kept.items():
            self._new_paths.setdefault(h, p)
        for turn in d.turns:
            task = turn.task
            if turn.unavailable:
                task.path_unavailable()
            out = task.tick(now, self._samples, self._connected(task.spec), turn.path,
                            self._obstacles(task))
            merge_command(cmds, turn, out.cmd)
            for m, faces in out.magnets.items():
                wanted.setdefault(m, set()).update(faces)
            for m, faces in out.magnets_off.items():
                off.setdefault(m, set()).update(faces)
            for hc in out.helper_commands:
                msg = helper_request_to_msg(hc)
                self._pub(hc.helper, names.HELPER_COMMAND, HelperCommand).publish(msg)
                self.get_logger().info(f"{hc.helper}: {hc.command.name} {hc.module}")
        # modules moved aside by the navigation, or staging for a later stage (pipelined):
        # follow their paths to the end (staging: then turn to the goal heading)
        self._driven |= tick_followers(self._followers, d, now, self._samples, self.settings,
                                       cmds, lambda m: self._around(m, {m}),
                                       self._staging_yaw, self._standing)
        for m in self._driven:
            v, w = cmds.get(m, (0.0, 0.0))
            self._send_cmd(m, v, w)
        self._send_magnets(now, wanted, off)

    def _staging_yaw(self, module: str, path) -> float | None:
        """The goal heading of ``module`` when a pipelined plan stages it now (its dock
        runs in a later stage: with a helper too, a pre-staged carried module,
        :func:`smores_assembly.staging.carry_staging_poses`); for a helper staging at a
        pick-up pose (:func:`smores_assembly.staging.next_carry`) the heading from the
        path's end towards the module it will carry -- along that module's dock axis
        when the path ends on it (the outer pick-up pose of a pre-staged module, which may
        still be on its way there); else None."""
        plan = self._plan
        if plan is None or plan.schedule != "pipelined" or self._stage is None:
            return None
        for a in plan.actions:
            if a.module == module and a.stage > self._stage:
                return float(a.goal_yaw)
        helper_of = {a.helper for a in plan.actions if a.needs_helper and a.helper}
        if module in helper_of:
            m = next_carry(plan, self._stage, module)
            ex, ey = path.end
            act = next((a for a in plan.actions if a.module == m), None)
            if act is not None:
                # out of the structure along the dock axis: against the docking face
                ang = act.goal_yaw + Face.parse(act.child_face, "child_face").angle
                gx, gy, nx, ny = act.goal_x, act.goal_y, -math.cos(ang), -math.sin(ang)
                if (abs(-(ex - gx) * ny + (ey - gy) * nx) < 0.005
                        and (ex - gx) * nx + (ey - gy) * ny > 0.0):
                    return math.atan2(-ny, -nx)
            smp = self._samples.get(m) if m is not None else None
            if smp is not None:
                return math.atan2(smp.pose.y - ey, smp.pose.x - ex)
        return None

    def _send_magnets(self, now: float, wanted: dict[str, set],
                      off: dict[str, set] | None = None) -> None:
        """Magnets on: the tasks' wishes, the faces of DOCKED actions and of the reported
        connections -- except the faces an undock holds off."""
        faces = magnets_on((wanted, self._docked_faces, self._conn_faces), off)
        for m, gone in (off or {}).items():
            if m in self._docked_faces:
                self._docked_faces[m].difference_update(gone)
        for m in set(faces) | set(self._mag_sent):
            fs = frozenset(faces.get(m, ()))
            sent = self._mag_sent.get(m)
            if sent is not None and sent[0] == fs and (
                    not fs or now - sent[1] < self.node_settings.magnet_refresh_s):
                continue
            self._pub(m, names.MAGNETS, MagnetCommand).publish(faces_to_magnet_msg(fs))
            self._mag_sent[m] = (fs, now)

    # ------------------------------------------------------------------ status
    def _publish_status(self) -> None:
        msg = DockingStatusArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = common.WORLD_FRAME
        msg.stage = -1 if self._stage is None else int(self._stage)
        for task in self._tasks.values():
            st = task.status()
            msg.modules.append(task_status_to_msg(st))
            # a retry is said once in the log with its reason (it was only in the status:
            # a run's nodes.log showed a 72-s POSE_ADJUST with one retry and no word of it)
            seen = self._retries_logged.get((msg.stage, st.module), 0)
            if st.retries > seen:
                self._retries_logged[(msg.stage, st.module)] = st.retries
                self.get_logger().warning(f"stage {msg.stage + 1}: {st.module}: {st.message}")
        msg.modules.extend(self._bad)
        # lockstep: a status whose phases are those of the last one gives no turn to the
        # nodes that wake on it (navigation, executive: they act on phase changes and read
        # the refresh at their next turn; issue 10: their turns on every 10-Hz status)
        key = (msg.stage, tuple((st.module, st.phase, st.retries, st.error_code)
                                for st in msg.modules))
        self.lockstep.publish(self._status_pub, msg, wake=key != self._status_key)
        self._status_key = key


def main(args: list[str] | None = None) -> int:
    """Entry point: ``python -m smores_assembly.ros.docking_controller``."""
    return common.run_node(lambda: DockingControllerNode(), args)


if __name__ == "__main__":
    sys.exit(main())
