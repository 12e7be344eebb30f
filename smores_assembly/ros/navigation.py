"""Navigation node: timed, collision-free paths for the modules of the active stage.

Thin adapter over :func:`smores_assembly.navigation.stage.plan_stage`.

Subscribes: ``/assembly/plan`` (AssemblyPlan, latched), ``/modules/states``
(ModuleStateArray, sensor QoS), ``/assembly/active_stage`` (std_msgs/Int32, latched),
``/assembly/docking_status`` (DockingStatusArray; modules reported DOCKED are treated as
part of the fixed structure and are not planned again).

When the active stage ``k >= 0`` is set or changes (and a plan and states are known) it
plans for every action of stage ``k``:

* an action without helper: the moving body is the action's module, its goal the pre-dock
  pose ``predock_pose(goal, child_face, predock_standoff)``, moved out along the dock axis
  until ``predock_clearance`` from every other module (:func:`clear_predock`: in a corner
  the docking controller turns there and slides in along the lane);
* an action with ``needs_helper``: the moving body is the helper, its goal the pick-up pose
  of the docking core (:func:`smores_assembly.docking.control.pickup_pose`: facing the
  module to be carried, its TOP face ``predock_standoff`` from the module's face, on the
  free side nearest the helper; the docking controller uses the same rule); a helper
  serving several actions of one stage goes to the first one (in plan order) whose module
  is not docked yet, and is replanned when it docks;
* once that module is carried (its docking status NAVIGATE), the helper again, now with the
  pair's two-cell footprint (:func:`plan_carried`), to its pre-dock pose moved out along
  the dock axis until the pair can turn there clear of the placed modules
  (:func:`clear_carried_predock`; a slot or a corner): idle modules are passed at the
  pair's clearance or moved aside (issue 11: the pair used to drive straight at the
  pre-dock pose and ran into an idle module). The pairs are planned first and the
  staging moves of the same plan are kept out of the area they pass
  (:func:`smores_assembly.staging.plan_stage_carrying`; a staging module drove into a
  pair planned apart from it).

Pipelined plans (``AssemblyPlan.schedule == "pipelined"``, :mod:`smores_assembly.staging`):
the modules of later stages that have a staging pose and stand outside the active stage's
zones are planned too, to their staging poses, in the same MAPF problem; a staging path
that would enter a zone of the active stage is dropped (that module waits). A module of the
active stage already on its docking axis beyond its pre-dock pose (at its staging pose)
gets an empty path: the docking controller slides it straight in. A helper with no action
in the active stage is planned, the same way, to the pick-up pose of the module it carries
next (:func:`smores_assembly.staging.helper_staging`). A module carried in a later stage
that its helper does not fetch next is planned to its pre-staging pose on its own dock axis
(:func:`smores_assembly.staging.carry_staging_poses`), where its helper lifts it with the
pair already on the axis.

The problem itself (who moves where, what is fixed, the docks' slides) is built by the core
:func:`smores_assembly.navigation.problem.nav_problem`; modules that may move standing
beside a slide of the active stage are moved aside, also when nothing else moves (a module
sliding straight in from its staging pose).

Fixed obstacles (never moved): the root module, modules of earlier stages, modules
reported DOCKED, modules waiting to be carried, and a reconfiguration's kept modules
(its undocking actions get no path: the docking controller backs them off and parks
them). Every other tracked module is an obstacle that may be moved aside (it then gets a
path too).

Publishes: ``/<id>/path`` (nav_msgs/Path, latched, frame ``world``, ``header.stamp`` = stage
planning time, each pose's stamp = planned arrival time) for every moving or moved-aside
module; ``/assembly/markers`` (MarkerArray, namespace ``paths``). On a planning failure the
error is logged, every input of the failed planning call is written to
``navigation_failed_stage<k>_<n>.yaml`` in the ROS log directory (``--out``'s ``ros_log/``
in a run; at most ``MAX_DUMPS`` files; the error line names it; replay it offline with
:mod:`smores_assembly.navigation.replay`). A failed carried pair's plan does not fail the
stage: the pair waits where it stands and the rest is planned round it
(``defer_failed_pairs``). Whatever failed waits where it stands (a path that stands there
:data:`~smores_assembly.staging.DEFERRED_PAIR_HOLD_S`; modules en route on an earlier path
stop), and the stage is planned again from the current poses after ``PAIR_RETRY_S``
(simulated) or as soon as a module docks, until a plan succeeds (random 100 seed 0, stage
6: h1's plan carrying m51 failed, the node published empty paths for the whole stage, the
pairs drove blind into staged modules, 8 contacts, three POSE_ADJUST timeouts, m51's dock
failed). After ``MAX_HELD_RETRIES`` failures in a row the affected modules get an empty
Path as before (the docking controller then drives directly).

Service ``/navigation/replan`` (std_srvs/Trigger) replans from the current poses; a moving
module lagging more than ``replan_lag_m`` behind its timed path triggers the same.

With ``lockstep:=true`` the node is a participant of the fake hardware's lockstep simulation
(:mod:`smores_assembly.ros.lockstep`): a new active stage or docking status gives it a turn,
the simulation waits while it plans, and a turn with an active stage but no plan yet is held
until the plan arrives.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path as FilePath

from geometry_msgs.msg import Point
from nav_msgs.msg import Path
from rclpy.logging import get_logging_directory
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import ColorRGBA, Int32
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from smores_assembly import params
from smores_assembly.errors import InputError, NavigationError
from smores_assembly.geometry import Pose2D
from smores_assembly.msg import AssemblyPlan, DockingStatusArray, ModuleStateArray
from smores_assembly.navigation.problem import NavProblem, direct_waits, nav_problem
from smores_assembly.navigation.replay import dump_problem, plan_problem
from smores_assembly.navigation.stage import NavSettings, StagePlan, pose_at, turn_clearance
from smores_assembly.planning import Plan
from smores_assembly.ros import common, lockstep, names
from smores_assembly.ros.convert import (msg_to_plan, phases_from_status, states_msg_to_poses,
                                         timed_path_to_msg, untracked_ids)
from smores_assembly.reconfigure import with_kept_goals
from smores_assembly.staging import (DEFERRED_PAIR_HOLD_S, StagingSettings,
                                     carry_staging_poses, staging_poses)
from smores_assembly.vocabulary import Phase


#: At most this many failed problems are written to the log directory in a run.
MAX_DUMPS = 20

#: [s] after a failed plan (or a carried pair's, deferred) the stage is planned again this
#: long after (simulated time), before the standing paths
#: (:data:`~smores_assembly.staging.DEFERRED_PAIR_HOLD_S`) run out.
PAIR_RETRY_S = 10.0

#: Failed plans in a row after which the modules concerned drive directly (empty paths).
MAX_HELD_RETRIES = 12


class NavigationNode(Node):
    """See the module docstring."""

    def __init__(self, **node_kwargs) -> None:
        """``node_kwargs`` go to ``rclpy.node.Node`` (e.g. ``context``, overrides)."""
        super().__init__("navigation", **common.node_kwargs(node_kwargs))
        self.lockstep = lp = lockstep.declare(self)
        settings, staging = params.node_settings("navigation")
        self.settings: NavSettings = common.declare_dataclass_params(self, settings)
        self.staging_settings: StagingSettings = common.declare_dataclass_params(self, staging)
        self._plan: Plan | None = None
        self._poses: dict[str, Pose2D] = {}
        self._stage = -1
        self._docked: set[str] = set()
        self._keep_clear: dict[str, list[tuple[float, float]]] = {}
        self._staging_targets: tuple = (None, None, ({}, {}))
        self._en_route: dict[str, float] = {}   # module -> end of its last path [s]
        self._phases: dict[str, Phase] = {}
        self._pending = False
        self._current: StagePlan | None = None
        self._current_moving: set[str] = set()
        self._t_start = 0.0
        self._helper_targets: dict[str, str] = {}
        self._last_replan = -1e9
        self._path_pubs: dict[str, object] = {}
        self._published: set[str] = set()
        self.plan_count = 0  # number of planning attempts (tests, diagnostics)
        self.last_error = ""
        self._dumps = 0  # failed problems written (_dump_failed)
        self._retry_at: float | None = None  # plan the stage again then [s] (a failure)
        self._held_failures = 0  # failed plans in a row (MAX_HELD_RETRIES)
        lp.create_subscription(AssemblyPlan, names.PLAN, self._on_plan,
                               common.LATCHED_QOS, counted=False)
        # raw: the states are decoded only when a plan or the monitor needs them (every
        # message carries every module, so the latest one is all there is to know)
        self._states_raw: bytes | None = None
        lp.create_subscription(ModuleStateArray, names.STATES, self._on_states,
                               common.SENSOR_QOS, raw=True)
        lp.create_subscription(Int32, names.ACTIVE_STAGE, self._on_stage,
                               common.LATCHED_QOS, wake=True)
        lp.create_subscription(DockingStatusArray, names.DOCKING_STATUS,
                               self._on_status, common.COMMAND_QOS, wake=True)
        # an active stage needs its plan (from task_assignment, not a participant)
        lp.hold(lambda: self._stage >= 0 and self._plan is None, before_timers=True)
        self._marker_pub = self.create_publisher(MarkerArray, names.MARKERS,
                                                 common.LATCHED_QOS)
        self.create_service(Trigger, names.REPLAN, self._on_replan)
        self._timer = lp.create_timer(self.settings.monitor_period_s, self._monitor)
        self.get_logger().info("navigation ready")

    # --- inputs ---------------------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_plan(self, msg: AssemblyPlan) -> None:
        try:
            plan = msg_to_plan(msg)
        except InputError as exc:
            self.get_logger().error(f"{names.PLAN} refused: {exc}")
            return
        self._plan = plan
        self._docked.clear()
        self._phases.clear()
        if self._stage >= 0:
            self._pending = True
            self._try_plan("new assembly plan")

    def _on_states(self, raw: bytes) -> None:
        self._states_raw = raw
        if self._pending:
            self._try_plan("module states arrived")

    def _update_poses(self) -> None:
        """Decode the latest states (if new) into the tracked poses."""
        raw, self._states_raw = self._states_raw, None
        if raw is None:
            return
        msg = deserialize_message(raw, ModuleStateArray)
        self._poses.update(states_msg_to_poses(msg, tracked_only=True))
        for m in untracked_ids(msg):
            self._poses.pop(m, None)

    def _on_stage(self, msg: Int32) -> None:
        k = int(msg.data)
        if k == self._stage and self._current is not None:
            return
        self._stage = k
        self._current = None
        self._retry_at, self._held_failures = None, 0
        if k < 0:
            self._pending = False
            return
        self._pending = True
        self._try_plan("stage started")

    def _on_status(self, msg: DockingStatusArray) -> None:
        phases = phases_from_status(msg)
        carried = {m for m, ph in phases.items() if ph is Phase.NAVIGATE
                   and self._phases.get(m) is not Phase.NAVIGATE and m in self._carried_by()}
        self._phases.update(phases)
        if carried:
            # a helper lifted its module: plan the pair's way to the pre-dock pose
            self._pending = True
            self._try_plan(f"{sorted(carried)} carried")
        newly = {m for m, ph in phases.items()
                 if ph is Phase.DOCKED} - self._docked
        if not newly:
            return
        self._docked |= newly
        # a helper whose carried module just docked goes on to its next module; after a
        # failed plan, a dock changes the scene: plan again
        if self._retry_at is not None or any(
                self._helper_targets.get(h) in newly for h in self._helper_targets):
            self._pending = True
            self._try_plan(f"{sorted(newly)} docked")

    def _on_replan(self, _req, resp):
        if self._stage < 0 or self._plan is None:
            resp.success, resp.message = False, "no active stage"
            return resp
        self._pending = True
        ok = self._try_plan("replan requested")
        resp.success = ok
        resp.message = "replanned" if ok else (self.last_error or "waiting for module states")
        return resp

    # --- planning -------------------------------------------------------------------------
    def _carried_by(self) -> dict[str, str]:
        """Carried module -> its helper, for the helper actions of the active stage."""
        if self._plan is None:
            return {}
        return {a.module: a.helper for a in self._plan.actions
                if a.stage == self._stage and a.needs_helper and a.helper}

    def _stage_problem(self) -> NavProblem:
        """The active stage's problem (:func:`smores_assembly.navigation.problem.nav_problem`)
        from the plan, the poses and the phases; the staging poses are kept per plan."""
        plan, s = self._plan, self.settings
        assert plan is not None  # _try_plan plans only with a plan
        targets = carry_targets = None
        if plan.schedule == "pipelined":
            kplan = with_kept_goals(plan, self._poses)
            key = (s.predock_standoff, s.module_width,
                   tuple(vars(self.staging_settings).values()))
            cached_plan, cached_key, (targets, carry_targets) = self._staging_targets
            if cached_plan is not kplan or cached_key != key:  # a function of the plan
                targets = staging_poses(kplan, s.predock_standoff, self.staging_settings,
                                        s.module_width)
                carry_targets = carry_staging_poses(
                    kplan, s.predock_standoff, self.staging_settings, s.module_width,
                    others=targets)
                self._staging_targets = (kplan, key, (targets, carry_targets))
        prob = nav_problem(plan, self._stage, self._poses, self._docked, self._phases, s,
                           self.staging_settings, staging_targets=targets,
                           carry_targets=carry_targets)
        self._keep_clear = prob.keep_clear
        self._helper_targets = prob.helper_targets
        return prob

    def _try_plan(self, reason: str) -> bool:
        self._update_poses()
        if self._plan is None or self._stage < 0 or not self._poses:
            return False
        prob = self._stage_problem()
        moving, obstacles, fixed, missing = prob.moving, prob.obstacles, prob.fixed, prob.missing
        staging, direct, carried = prob.staging, prob.direct, prob.carried
        aside = prob.blockers(self.settings)
        if missing and not moving and not direct and not carried and not aside:
            # states may still be incomplete: wait for more (the pending flag stays set)
            self.get_logger().warning(f"stage {self._stage + 1}: no pose yet for {sorted(missing)}",
                                      throttle_duration_sec=5.0)
            return False
        self._pending = False
        self.plan_count += 1
        self._last_replan = self._now()
        t_start = self._now()
        if missing:
            self.get_logger().error(f"stage {self._stage + 1}: untracked modules {sorted(missing)} "
                                    "are not planned (empty path)")
            self._publish_empty(missing, t_start)
        if not moving and not staging and not carried and not aside:
            # on their axis at the staging pose: the controller slides them straight in
            self._publish_direct(direct, {}, obstacles, t_start)
            self._current = None
            self._stop_en_route(set(), t_start)
            return True
        staged: list[str] = []
        try:
            # the carried pairs first, the staging moves kept out of the area they pass;
            # a helper backing off from its hand-over: the back-off is its first move.
            # lockstep: the search bounds count work, not wall time (the same plan on a
            # busy machine)
            sp, staged = plan_problem(prob, self.settings, work_clock=self.lockstep.enabled,
                                      defer_failed_pairs=True)
        except (NavigationError, InputError) as exc:
            self._publish_empty(sorted(direct), t_start)
            self.last_error = f"stage {self._stage + 1}: navigation planning failed: {exc}"
            dumped = self._dump_failed(prob, reason, str(exc), t_start)
            affected = sorted(set(moving) | set(carried))
            held = self._hold_after_failure(prob, t_start)
            self.get_logger().error(
                self.last_error + (f" — {affected} wait where they stand, the stage is "
                                   f"planned again in {PAIR_RETRY_S:.0f} s or at a dock"
                                   if held else
                                   f" — publishing empty paths for {affected} (direct "
                                   f"driving, {self._held_failures} failures in a row)")
                + f"; {dumped}")
            self.get_logger().error(
                "the failed problem (x, y, yaw): moving "
                + ", ".join(f"{m} {_fmt(a)} -> {_fmt(b)}" for m, (a, b) in sorted(moving.items()))
                + "; carried " + ", ".join(f"{h} {_fmt(a)} -> {_fmt(b)} with {c}"
                                           for h, (a, b, c) in sorted(carried.items()))
                + "; obstacles " + ", ".join(f"{m}{'*' if m in fixed else ''} {_fmt(p)}"
                                             for m, p in sorted(obstacles.items()))
                + " (* fixed)")
            self._current = None
            if not held:
                self._publish_empty(affected, t_start)
            return False
        self.last_error = ""
        self._dump_every(prob, reason, t_start)
        deferred = sp.stats.get("deferred_pairs", {})
        if deferred:
            dumped = self._dump_failed(prob, reason, "; ".join(
                f"{h}: {e}" for h, e in sorted(deferred.items())), t_start)
            self._held_failures += 1
            if self._held_failures > MAX_HELD_RETRIES:
                self._retry_at = None
                for h in deferred:   # as before: the pair drives directly
                    sp.paths[h] = []
                self.get_logger().error(
                    f"stage {self._stage + 1}: the plans of the pairs {sorted(deferred)} "
                    f"failed {self._held_failures} times in a row: empty paths (direct "
                    f"driving); {dumped}")
            else:
                self._retry_at = t_start + PAIR_RETRY_S
                self.get_logger().warning(
                    f"stage {self._stage + 1} ({reason}): the plan of "
                    + ", ".join(f"{h} ({e})" for h, e in sorted(deferred.items()))
                    + f" failed: the pair waits where it stands, the rest of the stage is "
                    f"planned round it, planned again in {PAIR_RETRY_S:.0f} s or at a dock; "
                    f"{dumped}")
        else:
            self._retry_at, self._held_failures = None, 0
        # on their axis at the staging pose: the controller slides them straight in, once
        # the paths near their slides have passed (a path that stands, then ends)
        waits = direct_waits(sp, direct, prob.slides, turn_clearance(self.settings.module_width),
                             self.settings.replan_lag_m / self.settings.nominal_speed)
        self._publish_direct(direct, waits, obstacles, t_start)
        if not sp.paths:
            # every staging move dropped (a zone, a carried pair's area) and nothing else
            # moves: as with nothing to plan (the log line below needs a search's stats)
            self._current = None
            self._stop_en_route(set(), t_start)
            return True
        self._current, self._t_start = sp, t_start
        self._current_moving = set(moving) | set(staged) | set(carried)
        self._stop_en_route(set(sp.paths), t_start)
        for m, path in sp.paths.items():
            self._publish_path(m, path, t_start)
        self._publish_markers(sp)
        st = sp.stats
        self.get_logger().info(
            f"stage {self._stage + 1} ({reason}): planned {sorted(set(moving) | set(carried))}"
            + (f", staging {staged}" if staged else "")
            + (f", straight in {sorted(direct)}" if direct else "")
            + "".join(f", {d} slides in after {t:.1f} s" for d, t in sorted(waits.items()))
            + (f", moved aside {sp.moved_aside}" if sp.moved_aside else "")
            + (f", waiting {st['backoff_wait_s']:.1f} s for {sorted(prob.backoffs)} to back off"
               if "backoff_wait_s" in st else "")
            + "".join(f", {h}'s path after its back-off ({d:.1f} s)"
                      for h, d in st.get("backoff_delay_s", {}).items())
            + f" with {st['algorithm']}: cost {st['cost']}, makespan {st['makespan']} steps, "
            f"{sp.duration_s:.1f} s, search {1e3 * st['runtime_s']:.1f} ms"
            + "".join(f"; {n}" for n in st.get("notes", ())))
        for w in st.get("warnings", ()):
            self.get_logger().warning(f"stage {self._stage + 1} ({reason}): {w}")
        return True

    def _hold_after_failure(self, prob: NavProblem, t_start: float) -> bool:
        """After a failed plan: the modules it was for (moving, carried pairs' helpers)
        wait where they stand (a path that stands there
        :data:`~smores_assembly.staging.DEFERRED_PAIR_HOLD_S`), those en route on an
        earlier path stop, and the stage is planned again after ``PAIR_RETRY_S`` (or at a
        dock). False once ``MAX_HELD_RETRIES`` failures came in a row (the caller then
        publishes empty paths: direct driving, as before)."""
        self._held_failures += 1
        if self._held_failures > MAX_HELD_RETRIES:
            self._retry_at = None
            return False
        here = {m: a for m, (a, _b) in prob.moving.items()}
        here.update({h: a for h, (a, _b, _c) in prob.carried.items()})
        for m, p in sorted(here.items()):
            self._en_route.pop(m, None)
            self._publish_path(m, [(0.0, p), (DEFERRED_PAIR_HOLD_S, p)], t_start)
        self._stop_en_route(set(here), t_start)
        self._retry_at = t_start + PAIR_RETRY_S
        return True

    def _dump_failed(self, prob: NavProblem, reason: str, error: str, t: float) -> str:
        """Write the failed problem (:func:`smores_assembly.navigation.replay.dump_problem`)
        to the ROS log directory, at most MAX_DUMPS files a run; says where (for the log)."""
        self._dumps += 1
        if self._dumps > MAX_DUMPS:
            return f"problem not written (more than {MAX_DUMPS} failures)"
        path = FilePath(get_logging_directory()) / (
            f"navigation_failed_stage{self._stage + 1}_{self._dumps:03d}.yaml")
        try:
            self._write_problem(path, prob, reason, error, t)
        except (OSError, ValueError) as exc:
            return f"problem not written ({path}: {exc})"
        return f"problem written to {path} (replay: smores_assembly.navigation.replay)"

    def _write_problem(self, path: FilePath, prob: NavProblem, reason: str, error: str,
                       t: float) -> None:
        """Write ``prob`` with this node's settings and stage
        (:func:`smores_assembly.navigation.replay.dump_problem`)."""
        dump_problem(path, prob, self.settings, work_clock=self.lockstep.enabled,
                     stage=self._stage + 1, reason=reason, error=error, time_s=t,
                     staging_settings=dict(vars(self.staging_settings)))

    def _dump_every(self, prob: NavProblem, reason: str, t: float) -> None:
        """Debugging: with ``SMORES_NAV_DUMP_DIR`` set, write every problem planned (not
        only the failed ones) there, ``stage<k>_<n>.yaml``;
        :func:`smores_assembly.navigation.replay.plan_problem` with
        ``defer_failed_pairs=True`` (as here) plans the very paths published."""
        where = os.environ.get("SMORES_NAV_DUMP_DIR")
        if not where:
            return
        path = FilePath(where) / f"stage{self._stage + 1}_{self.plan_count:04d}.yaml"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._write_problem(path, prob, reason, "", t)
        except Exception as exc:  # noqa: BLE001 -- a debugging dump never stops planning
            self.get_logger().warning(f"SMORES_NAV_DUMP_DIR: {path} not written: {exc}")

    # --- outputs --------------------------------------------------------------------------
    def _pub(self, m: str):
        pub = self._path_pubs.get(m)
        if pub is None:
            pub = self.lockstep.create_publisher(Path, names.module_topic(m, names.PATH),
                                                 common.LATCHED_QOS)
            self._path_pubs[m] = pub
        return pub

    def _publish_path(self, m: str, path: list[tuple[float, Pose2D]], t_start: float) -> None:
        self._pub(m).publish(timed_path_to_msg(path, t_start))
        self._published.add(m)
        if path:
            self._en_route[m] = t_start + path[-1][0]

    def _publish_direct(self, direct, waits: dict[str, float], here: dict[str, Pose2D],
                        t_start: float) -> None:
        """The paths of the modules that slide straight in (``direct``): empty (go on at
        once), or, for those of ``waits`` (module -> s), a path that stands where the module
        is (``here``) until its wait is over (:func:`direct_waits`). They are no longer en
        route on a path of an earlier plan: :meth:`_stop_en_route` must not send them an
        empty path after this one (it cancelled the wait, and the module slid in at once:
        bench_targets seed 46 random_9_116948334 stage 5, m7, still on its staging path,
        into the helper backing off beside its lane, 0.49 mm)."""
        for d in direct:
            self._en_route.pop(d, None)
        self._publish_empty(sorted(set(direct) - set(waits)), t_start)
        for d, t_wait in sorted(waits.items()):
            self._pub(d).publish(timed_path_to_msg([(0.0, here[d]), (t_wait, here[d])],
                                                   t_start))

    def _stop_en_route(self, replanned: set[str], t_start: float) -> None:
        """Empty paths (stop where they are) for the modules still on a path of an earlier
        plan that the new plan does not move: it planned round them where they stand now
        (issue 16: a module moved aside in one stage, or staging, kept following its old
        path into the next stage's paths). ``replanned``: the modules with a path of the
        new plan."""
        for m, t_end in list(self._en_route.items()):
            if m in replanned:
                continue
            del self._en_route[m]
            if t_end > t_start and m not in self._docked:
                self._pub(m).publish(timed_path_to_msg([], t_start))

    def _publish_empty(self, modules, t_start: float) -> None:
        for m in modules:
            self._pub(m).publish(timed_path_to_msg([], t_start))

    def _publish_markers(self, sp: StagePlan) -> None:
        arr = MarkerArray()
        clear = Marker()
        clear.header.frame_id = common.WORLD_FRAME
        clear.ns = "paths"
        clear.action = Marker.DELETEALL
        arr.markers.append(clear)
        stamp = self.get_clock().now().to_msg()
        for i, (m, path) in enumerate(sorted(sp.paths.items())):
            mk = Marker()
            mk.header.frame_id = common.WORLD_FRAME
            mk.header.stamp = stamp
            mk.ns = "paths"
            mk.id = i
            mk.type = Marker.LINE_STRIP
            mk.action = Marker.ADD
            mk.pose.orientation.w = 1.0
            mk.scale.x = 0.01
            hue = (i * 0.61803398875) % 1.0
            aside = m in sp.moved_aside
            mk.color = ColorRGBA(r=0.5 if aside else 0.2 + 0.8 * hue,
                                 g=0.5 if aside else 0.8 - 0.6 * hue,
                                 b=0.5 if aside else 0.9, a=0.9)
            mk.text = m
            mk.points = [Point(x=float(p.x), y=float(p.y), z=0.005) for _, p in path]
            arr.markers.append(mk)
        self._marker_pub.publish(arr)

    # --- monitoring -----------------------------------------------------------------------
    def _monitor(self) -> None:
        if self._retry_at is not None and self._stage >= 0 and self._now() >= self._retry_at:
            # a failed plan (or a carried pair's, deferred): plan again from where the
            # modules stand now
            self._retry_at = None
            self._pending = True
            self._try_plan("retry after a failed plan")
            return
        sp = self._current
        if sp is None or self._stage < 0:
            return
        self._update_poses()
        now = self._now()
        t = now - self._t_start
        if now - self._last_replan < max(1.0, 2 * self.settings.monitor_period_s):
            return
        for m in sorted(self._current_moving):
            path = sp.paths.get(m)
            if not path or m in self._docked or m not in self._poses:
                continue
            if t > path[-1][0]:
                continue  # path finished: the docking controller takes over
            lag = self._poses[m].distance_to(pose_at(path, t))
            if lag > self.settings.replan_lag_m:
                self.get_logger().warning(f"{m} is {lag:.3f} m off its timed path "
                                       f"(> replan_lag_m={self.settings.replan_lag_m}): "
                                       "replanning from the current poses")
                self._pending = True
                self._try_plan(f"{m} fell behind")
                return


def _fmt(p: Pose2D) -> str:
    """A pose as ``(x, y, yaw)`` in mm-rounded metres and radians, for log lines."""
    return f"({p.x:.3f}, {p.y:.3f}, {p.yaw:.3f})"


def main(args=None) -> int:
    """Run the navigation node."""
    return common.run_node(NavigationNode, args)


if __name__ == "__main__":
    sys.exit(main())
