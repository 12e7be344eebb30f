"""The docking phase machine: one :class:`DockingTask` per docking action (no ROS imports).

Phases (DESIGN.md, pipeline step 5; numbering = ``DockingStatus.PHASE_*``)::

    IDLE -> [WAIT_HELPER] -> NAVIGATE -> POSE_ADJUST -> APPROACH -> DOCKED
                                             ^             |
                                             +-- RETRY <---+   (bounded: max_retries)
    any active phase -> PAUSED (a needed pose is stale: wheels stopped) -> same phase
    RETRY beyond max_retries / helper failure -> FAILED (error code + message)

The task is fed once per control tick with the time, the latest pose samples of the modules
it needs, whether the connection is confirmed and the module's timed path if any. It returns
the wheel commands of the modules it drives, the magnet faces it wants on, helper commands
and a status. The moving body is the module itself for TOP/BOTTOM docks, or the helping
module carrying it for LEFT/RIGHT docks (see :mod:`smores_assembly.docking.control`).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from smores_assembly.docking.control import (DockAxis, DockingSettings, PoseRegulator,
                                             TimedPath, approach_command, detour_waypoints,
                                             real_command, saturate, track_timed_path,
                                             virtual_pose)
from smores_assembly.geometry import Face, Pose2D, face_center, wrap_angle


class Phase(enum.IntEnum):
    """Docking phases; values equal ``DockingStatus.PHASE_*``."""

    IDLE = 0
    WAIT_HELPER = 1
    NAVIGATE = 2
    POSE_ADJUST = 3
    APPROACH = 4
    RETRY = 5
    DOCKED = 6
    FAILED = 7
    PAUSED = 8


class ErrorCode(enum.IntEnum):
    """Failure codes; values equal ``DockingStatus.ERROR_*``."""

    NONE = 0
    TIMEOUT = 1
    MISALIGNED = 2
    TARGET_MOVED = 3
    RETRIES_EXHAUSTED = 4
    NO_HELPER = 5
    CANCELLED = 6


ACTIVE_PHASES = frozenset({Phase.WAIT_HELPER, Phase.NAVIGATE, Phase.POSE_ADJUST,
                           Phase.APPROACH, Phase.RETRY})


@dataclass(frozen=True)
class DockingSpec:
    """One docking action: ``module`` docks its ``child_face`` onto ``parent_face`` of
    ``parent_module``; ``helper`` (a module id, or empty) carries it when ``child_face`` is a
    wheel face."""

    module: str
    parent_module: str
    parent_face: Face
    child_face: Face
    helper: str = ""

    def __post_init__(self):
        for name in ("module", "parent_module"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ValueError(f"{name}: module id must be a non-empty string, got {v!r}")
        if self.module == self.parent_module:
            raise ValueError(f"parent_module: {self.parent_module!r} equals module")
        object.__setattr__(self, "parent_face", Face.parse(self.parent_face, "parent_face"))
        object.__setattr__(self, "child_face", Face.parse(self.child_face, "child_face"))
        if self.helper in (self.module, self.parent_module):
            raise ValueError(f"helper: {self.helper!r} must differ from module and parent")


@dataclass(frozen=True)
class PoseSample:
    """A measured pose: ``stamp`` = time of the measurement [s]; ``tracked`` False when the
    mocap lost the body."""

    pose: Pose2D
    stamp: float
    tracked: bool = True


@dataclass(frozen=True)
class HelperRequest:
    """A helper command to send: ``command`` in LIFT, ROTATE, RELEASE."""

    helper: str
    command: str
    module: str = ""
    carry_yaw: float = 0.0


@dataclass
class TaskStatus:
    """Status of one task; errors of the module's face against the target face (measured).

    ``phase_durations`` holds the time spent [s] in every phase so far (pauses excluded).
    """

    module: str
    target_module: str
    face_pair: str
    phase: Phase
    face_gap_mm: float
    lateral_error_mm: float
    yaw_error_deg: float
    retries: int
    phase_elapsed_s: float
    phase_durations: dict
    error_code: ErrorCode
    message: str


@dataclass
class TaskOutput:
    """One tick's output.

    Attributes:
        cmd: ``module id -> (v [m/s], w [rad/s])`` for every module the task drives
            (zero when it must stand still).
        magnets: ``module id -> faces`` the task wants on (others: the task does not care).
        helper_commands: commands to send now (edge triggered).
        status: the task's status.
    """

    cmd: dict
    magnets: dict
    helper_commands: list
    status: TaskStatus


class PoseObserver:
    """Pose estimate of a driven body: predicted with the applied command, corrected towards
    each new measurement by ``alpha`` (a fixed-gain observer; alpha = 1 returns raw mocap).

    Delayed measurements (mocap latency) are compared with the estimate *at their stamp*
    (kept in a short history) and the innovation is applied to the current estimate, so
    latency does not bias the estimate while the body moves. Measurements jumping by more
    than ``reset`` [m] re-initialise the estimate.
    """

    def __init__(self, alpha: float, reset: float = 0.03, history_s: float = 1.0):
        self.alpha = alpha
        self.reset = reset
        self.history_s = history_s
        self.est: Pose2D | None = None
        self._stamp: float | None = None
        self._hist: list[tuple[float, Pose2D]] = []

    def predict(self, v: float, w: float, dt: float, t: float | None = None) -> None:
        """Integrate the command ``(v, w)`` over ``dt`` [s], arriving at time ``t``."""
        if self.est is None:
            return
        if dt > 0:
            e = self.est
            h = e.yaw + 0.5 * w * dt
            self.est = Pose2D(e.x + v * dt * math.cos(h), e.y + v * dt * math.sin(h),
                              wrap_angle(e.yaw + w * dt))
        if t is not None:
            self._hist.append((t, self.est))
            while self._hist and self._hist[0][0] < t - self.history_s:
                self._hist.pop(0)

    def _at(self, stamp: float) -> Pose2D:
        for t, p in reversed(self._hist):
            if t <= stamp + 1e-9:
                return p
        return self._hist[0][1] if self._hist else self.est

    def correct(self, sample: PoseSample) -> Pose2D:
        z = sample.pose
        if self._stamp is not None and sample.stamp == self._stamp and self.est is not None:
            return self.est
        self._stamp = sample.stamp
        e = self.est
        if e is None or self._at(sample.stamp).distance_to(z) > self.reset:
            self.est = z
            self._hist = []
        else:
            a = self.alpha
            then = self._at(sample.stamp)
            dx, dy = a * (z.x - then.x), a * (z.y - then.y)
            dyaw = a * wrap_angle(z.yaw - then.yaw)
            self.est = Pose2D(e.x + dx, e.y + dy, wrap_angle(e.yaw + dyaw))
            # the stored past estimates get the same correction (else it is re-applied)
            self._hist = [(t, Pose2D(p.x + dx, p.y + dy, wrap_angle(p.yaw + dyaw)))
                          for t, p in self._hist]
        return self.est


def face_errors(module_pose: Pose2D, child_face: Face, axis: DockAxis,
                width: float) -> tuple[float, float, float]:
    """``(gap [m], lateral [m], yaw [rad])`` of ``child_face`` of a module at ``module_pose``
    against ``axis`` (gap along the axis, positive while apart)."""
    fx, fy = face_center(module_pose, child_face, width)
    c, s = math.cos(axis.heading), math.sin(axis.heading)
    dx, dy = axis.tx - fx, axis.ty - fy
    return (dx * c + dy * s, s * dx - c * dy,
            wrap_angle(module_pose.yaw + child_face.angle - axis.heading))


def dock_axis(parent: Pose2D, parent_face: Face, width: float) -> DockAxis:
    """The docking axis onto ``parent_face`` of a module at ``parent``."""
    tx, ty = face_center(parent, parent_face, width)
    return DockAxis(tx, ty, wrap_angle(parent.yaw + parent_face.angle + math.pi))


class DockingTask:
    """Phase machine of one docking action (see the module docstring).

    Args:
        spec: the action.
        settings: tunables (shared object: parameter changes apply at the next tick).

    The body model: TOP dock -> module, face ``w/2`` ahead, forward; BOTTOM -> module, face
    ``w/2`` behind, reverse; wheel-face dock -> the helper, carried module's face ``1.5 w``
    ahead (carry_yaw = -angle(child_face)). A wheel-face dock without a helper starts in
    FAILED with ``ErrorCode.NO_HELPER``.

    WAIT_HELPER (wheel-face docks): the helper follows its path if one is given (until its
    end, or until it comes within ``obstacle_clearance`` of the module), picks the
    module face whose pick-up pose (helper TOP face towards it) is nearest and clear of
    other modules, regulates to ``standoff`` in front of it, approaches to
    ``helper_pickup_gap``, sends ``LIFT`` once and waits until the module's measured pose
    is the carried pose; a LIFT that does not show within ``lift_timeout_s`` is retried,
    and a pick-up pose not reached within ``adjust_timeout_s`` is chosen again.

    PAUSED (a needed pose stale) stops the wheels and freezes the phase: on resume the
    phase continues with its regulator, detour progress, sub-step and timers unchanged.

    Direct moves (POSE_ADJUST, helper pick-up) go round the target and the given obstacles
    (:func:`~smores_assembly.docking.control.detour_waypoints`); a body starting closer than
    ``escape_distance`` to a module first drives straight away from it (turning in place
    there could sweep a corner into it). The driven body's pose goes through a
    latency-compensating :class:`PoseObserver`; the target's pose is low-pass filtered.
    """

    def __init__(self, spec: DockingSpec, settings: DockingSettings):
        self.spec = spec
        self.s = settings
        w = settings.module_width
        self.phase = Phase.IDLE
        self._paused_from: Phase | None = None
        self.retries = 0
        self.error = ErrorCode.NONE
        self.message = ""
        self.durations: dict[Phase, float] = {p: 0.0 for p in Phase}
        self._phase_elapsed = 0.0
        self._t_last: float | None = None
        self._cmd: dict[str, tuple[float, float]] = {}
        self._helper_out: list[HelperRequest] = []
        self.uses_helper = bool(spec.helper)
        self.driven = spec.helper if self.uses_helper else spec.module
        if self.uses_helper:
            self.reverse, self.face_offset = False, 1.5 * w
            self.carry_yaw = wrap_angle(-spec.child_face.angle)
        else:
            self.reverse = spec.child_face is Face.BOTTOM
            self.face_offset = 0.5 * w
            self.carry_yaw = 0.0
        self.body_obs = PoseObserver(settings.filter_alpha)
        self.target_est: Pose2D | None = None
        self.module_est: Pose2D | None = None
        self._lifted = False
        self._reg: PoseRegulator | None = None
        self._goal_key: Pose2D | None = None
        self._approach_target: Pose2D | None = None
        self._hold_t = 0.0
        self._dwell_t = 0.0
        self._sub = ""
        self._sub_t = 0.0
        self._was_clear = False
        self._escape_sign = 0.0
        self._lift_sent_t = -1e9
        self._pickup_axis: DockAxis | None = None
        self._path: TimedPath | None = None
        self._no_path = False
        self._backoff_from: Pose2D | None = None
        self._last_reason = ""
        self._errors = (math.nan, math.nan, math.nan)
        if spec.child_face.is_wheel and not spec.helper:
            self._fail(ErrorCode.NO_HELPER,
                       f"{spec.module}: {spec.child_face.value} is a wheel face: the dock needs "
                       "a helping module and none was given")

    # ----------------------------------------------------------------------------- helpers
    @property
    def done(self) -> bool:
        """True in DOCKED or FAILED."""
        return self.phase in (Phase.DOCKED, Phase.FAILED)

    @property
    def helper_free(self) -> bool:
        """True when this task no longer drives its helper (done, back-off finished)."""
        return self.done and self._backoff_from is None

    @property
    def effective_phase(self) -> Phase:
        """The phase, or the paused one when PAUSED."""
        return self._paused_from if self.phase is Phase.PAUSED else self.phase

    def _fail(self, code: ErrorCode, message: str) -> None:
        self.phase = Phase.FAILED
        self.error = code
        self.message = message
        self._phase_elapsed = 0.0

    def _enter(self, phase: Phase, t: float) -> None:
        self.phase = phase
        self._phase_elapsed = 0.0
        self._reg = None
        self._hold_t = self._dwell_t = 0.0
        self._sub = ""
        self._sub_t = 0.0
        self._was_clear = False
        self._escape_sign = 0.0

    def path_unavailable(self) -> None:
        """The navigation says there will be no path (e.g. an empty Path after a planning
        failure): NAVIGATE ends at once and the body moves directly."""
        self._no_path = True

    def cancel(self, message: str = "cancelled") -> None:
        """Stop the task: FAILED with ``ErrorCode.CANCELLED`` (no-op once done)."""
        if not self.done:
            self._fail(ErrorCode.CANCELLED, message)

    def _needed(self) -> list[str]:
        ph = self.effective_phase
        if ph is Phase.WAIT_HELPER:
            return [self.spec.helper, self.spec.module]
        if ph in (Phase.IDLE, Phase.DOCKED, Phase.FAILED):
            return []
        return [self.driven, self.spec.parent_module]

    def _speed_limit(self, body_v: Pose2D, axis: DockAxis) -> float:
        fx = body_v.x + self.face_offset * math.cos(body_v.yaw)
        fy = body_v.y + self.face_offset * math.sin(body_v.yaw)
        if math.hypot(fx - axis.tx, fy - axis.ty) < self.s.slow_down_distance:
            return min(self.s.v_max, self.s.near_structure_speed)
        return self.s.v_max

    def _set_cmd(self, v: float, w: float, virtual: bool = True,
                 reverse: bool | None = None) -> None:
        rev = self.reverse if reverse is None else reverse
        if virtual:
            v, w = real_command(v, w, rev)
        v, w = saturate(v, w, self.s)
        self._cmd[self.driven] = (v, w)

    # ----------------------------------------------------------------------------- main
    def tick(self, t: float, samples: Mapping[str, PoseSample], connected: bool = False,
             path: TimedPath | None = None,
             obstacles: Sequence[tuple[float, float]] = ()) -> TaskOutput:
        """Advance the task to time ``t`` [s].

        Args:
            t: current time [s] (ROS or simulated; monotonic).
            samples: latest pose samples by module id (missing = unknown).
            connected: the dock's connection is confirmed by the hardware (only used when
                ``settings.confirm_with_connections``).
            path: the driven body's timed path, if one arrived.
            obstacles: centres [m] of other modules to keep clear of on direct moves.

        Returns:
            The :class:`TaskOutput` of this tick.
        """
        dt = 0.0 if self._t_last is None else max(0.0, min(0.5, t - self._t_last))
        self._t_last = t
        if path is not None:
            self._path = path
            self._no_path = False
        prev_cmd = self._cmd.get(self.driven, (0.0, 0.0))
        self.body_obs.predict(prev_cmd[0], prev_cmd[1], dt, t)
        self._cmd = {self.spec.module: (0.0, 0.0), self.driven: (0.0, 0.0)}
        self._helper_out = []
        self._obstacles = list(obstacles)

        if self.phase is Phase.IDLE:
            self._enter(Phase.WAIT_HELPER if self.uses_helper else Phase.NAVIGATE, t)
        if connected and self.s.confirm_with_connections and not self.done:
            self._docked(t)

        stale = [m for m in self._needed() if not self._fresh(samples.get(m), t)]
        if stale and not self.done:
            if self.phase is not Phase.PAUSED:
                self._paused_from = self.phase
                self.phase = Phase.PAUSED
            self.message = f"pose stale: {', '.join(stale)}"
            self.durations[Phase.PAUSED] += dt
            return self._output(t)
        if self.phase is Phase.PAUSED:
            # Resume where the phase stopped: the regulator (its detour waypoints already
            # passed, its sub-step), sub-step timers and the pose observer are all kept --
            # short track losses come every second or so on a loaded machine, and
            # re-planning on each one made the body start every detour over (it never got
            # round). The observer predicted the body at rest during the pause; a body
            # that was moved meanwhile by more than its reset distance re-initialises it.
            self.phase = self._paused_from
            self._paused_from = None
            self.message = ""

        if not self.done:
            self.durations[self.phase] += dt
            self._phase_elapsed += dt
        self._update_estimates(samples)
        handler = {Phase.WAIT_HELPER: self._wait_helper, Phase.NAVIGATE: self._navigate,
                   Phase.POSE_ADJUST: self._pose_adjust, Phase.APPROACH: self._approach,
                   Phase.RETRY: self._retry, Phase.DOCKED: self._docked_tick}.get(self.phase)
        if handler is not None:
            handler(t, dt, connected)
        return self._output(t)

    def _fresh(self, sample: PoseSample | None, t: float) -> bool:
        return (sample is not None and sample.tracked
                and t - sample.stamp <= self.s.stale_timeout_s)

    def _update_estimates(self, samples: Mapping[str, PoseSample]) -> None:
        s = self.s
        for name, mid in (("target_est", self.spec.parent_module),
                          ("module_est", self.spec.module)):
            smp = samples.get(mid)
            if smp is None or not smp.tracked:
                continue
            z, e = smp.pose, getattr(self, name)
            if (e is None or e.distance_to(z) > s.target_jump
                    or abs(wrap_angle(z.yaw - e.yaw)) > math.radians(s.target_moved_yaw_deg)
                    or (name == "module_est" and self._lifted)):
                setattr(self, name, z)
            else:
                a = s.target_filter_alpha
                setattr(self, name, Pose2D(e.x + a * (z.x - e.x), e.y + a * (z.y - e.y),
                                           wrap_angle(e.yaw + a * wrap_angle(z.yaw - e.yaw))))
        smp = samples.get(self.driven)
        if smp is not None and smp.tracked:
            self.body_obs.correct(smp)

    # ----------------------------------------------------------------------------- geometry
    def axis(self) -> DockAxis | None:
        """The docking axis from the current target estimate (None before one is known)."""
        if self.target_est is None:
            return None
        return dock_axis(self.target_est, self.spec.parent_face, self.s.module_width)

    def _body_virtual(self) -> Pose2D:
        return virtual_pose(self.body_obs.est, self.reverse)

    def _predock(self, axis: DockAxis) -> Pose2D:
        return axis.body_pose(self.face_offset, self.s.standoff)

    def _obstacles_for_body(self) -> list[tuple[float, float]]:
        obs = list(self._obstacles)
        if self.target_est is not None:
            obs.append((self.target_est.x, self.target_est.y))
        return obs

    def _escape(self, body: Pose2D, obstacles: Sequence[tuple[float, float]]) -> bool:
        """Drive straight (forward or backward, no turning: turning in place there could
        sweep a corner into a neighbour) while a module is closer than ``escape_distance``
        and moving along the heading increases the distance to the nearest modules. The
        direction is kept until the body is clear. Sets the command; True while escaping."""
        s = self.s

        def clearance(shift: float, heading: float = body.yaw) -> float:
            x = body.x + shift * math.cos(heading)
            y = body.y + shift * math.sin(heading)
            return min((math.hypot(x - ox, y - oy) for ox, oy in obstacles), default=math.inf)

        now = clearance(0.0)
        if now >= s.escape_distance:
            self._escape_sign = 0.0
            return False
        if not self._escape_sign:
            step = max(0.05, s.escape_distance - now + 0.01)
            fwd, back = clearance(step), clearance(-step)
            if max(fwd, back) <= now + 0.004:
                # boxed in along the heading (e.g. between two modules): turn in place
                # towards the line of best clearance, then drive out along it
                best = max((clearance(step, a * math.pi / 12), a * math.pi / 12)
                           for a in range(24))
                err = wrap_angle(best[1] - body.yaw)
                if abs(err) > math.pi / 2:
                    err = wrap_angle(err + math.pi)
                self._set_cmd(0.0, s.adjust_k_yaw * err, virtual=False)
                self._reg = None
                return True
            self._escape_sign = 1.0 if fwd >= back else -1.0
        elif clearance(self._escape_sign * 0.005) < now:
            self._escape_sign = 0.0
            return False
        speed = min(s.near_structure_speed, s.v_max)
        self._set_cmd(self._escape_sign * speed, 0.0, virtual=False)
        self._reg = None  # plan the direct move again once clear
        return True

    def _escape_at_start(self, body: Pose2D) -> bool:
        """Escape (see :meth:`_escape`) only until the body was clear once in this phase: a
        planned path may legitimately pass close to modules later on."""
        if self._was_clear:
            return False
        if self._escape(body, self._obstacles_for_body()):
            return True
        self._was_clear = True
        return False

    def _clearance(self) -> float:
        extra = self.s.module_width if (self.uses_helper and self._lifted) else 0.0
        return self.s.obstacle_clearance + extra

    # ----------------------------------------------------------------------------- phases
    def _wait_helper(self, t: float, dt: float, connected: bool) -> None:
        s, w = self.s, self.s.module_width
        if self._phase_elapsed > s.helper_timeout_s:
            self._fail(ErrorCode.TIMEOUT, f"helper {self.spec.helper} did not pick up "
                       f"{self.spec.module} within {s.helper_timeout_s} s")
            return
        m = self.module_est
        helper = self.body_obs.est
        if m is None or helper is None:
            return
        if self._pickup_axis is None:
            # pick the module face whose pick-up pose is nearest to the helper
            best = None
            obs = self._obstacles_for_body()
            for f in Face:
                ax = dock_axis(m, f, w)
                p = ax.body_pose(0.5 * w, s.standoff)
                blocked = any(math.hypot(p.x - ox, p.y - oy) < s.obstacle_clearance
                              for ox, oy in obs)
                d = p.distance_to(helper) + (10.0 if blocked else 0.0)
                if best is None or d < best[0]:
                    best = (d, ax)
            self._pickup_axis = best[1]
            self._sub, self._sub_t = "goto", 0.0
        ax = self._pickup_axis
        self._sub_t += dt
        if self._sub == "goto" and self._path is not None and self._reg is None:
            self._sub, self._sub_t, self._was_clear = "path", 0.0, False
        if self._sub == "path":
            # the navigation's timed path towards the pick-up pose, then the direct moves
            if self._escape_at_start(helper):
                return
            v, om, finished = track_timed_path(helper, self._path, t, s, s.v_max)
            # Close to the module the direct moves take over (they keep the pick-up
            # clearance and go round it): a path may end right against the module (the
            # navigation's pick-up cell is one width away), and following it there at an
            # angle runs a corner into the module.
            near = math.hypot(helper.x - m.x, helper.y - m.y) < s.obstacle_clearance
            if finished or near or t > self._path.end_time + s.nav_timeout_margin_s:
                self._path = None
                self._pickup_axis = None   # re-choose the side from where the path ended
                self._sub, self._sub_t = "goto", 0.0
            else:
                self._set_cmd(v, om, virtual=False)
            return
        if self._sub == "goto":
            if self._sub_t > s.adjust_timeout_s:
                # no pick-up pose within the POSE_ADJUST budget: choose the side again
                # from where the helper is now and plan the move afresh
                self._pickup_axis, self._reg, self._sub_t = None, None, 0.0
                return
            # escape only before a move is planned: the planned detour may legitimately
            # pass a little closer than escape_distance (down to 0.97 x its start
            # distance), and escaping from it again made the helper shuttle for ever at
            # the escape boundary
            if self._reg is None and self._escape(
                    helper, self._obstacles_for_body() + [(m.x, m.y)]):
                return
            goal = ax.body_pose(0.5 * w, s.standoff)
            if self._reg is None:
                obs = self._obstacles_for_body() + [(m.x, m.y)]
                self._reg = PoseRegulator(goal, detour_waypoints(
                    (helper.x, helper.y), (goal.x, goal.y), obs, s.obstacle_clearance))
            v, om = self._reg.command(helper, s, self._speed_limit(helper, ax))
            self._set_cmd(v, om, virtual=False)
            if self._reg.done(helper, s):
                self._reg, self._sub, self._sub_t = None, "approach", 0.0
        elif self._sub == "approach":
            gap, lat, yaw = ax.errors(helper, 0.5 * w)
            if abs(lat) > s.misalign_lateral_bound or self._sub_t > s.approach_timeout_s:
                self._sub, self._sub_t = "goto", 0.0
                return
            if gap <= s.helper_pickup_gap:
                self._sub, self._sub_t = "lift", 0.0
                self._lift_sent_t = -1.0
                return
            v, om, _ = approach_command(helper, 0.5 * w, ax, s, s.approach_speed)
            if gap <= s.helper_pickup_gap + 0.002:
                v = min(v, s.approach_min_speed)
            self._set_cmd(v, om, virtual=False)
        elif self._sub == "lift":
            if self._lift_sent_t < 0:
                # LIFT once; the carried module then turns to carry_yaw (confirmed below)
                self._lift_sent_t = t
                self._helper_out.append(HelperRequest(self.spec.helper, "LIFT",
                                                      self.spec.module, self.carry_yaw))
                return
            expect = helper.compose(w, 0.0, self.carry_yaw)
            if (t > self._lift_sent_t and m.distance_to(expect) <= s.lift_confirm_tolerance
                    and abs(wrap_angle(m.yaw - expect.yaw)) <= math.radians(3.0)):
                self._lifted = True
                self._enter(Phase.NAVIGATE, t)
                return
            if self._sub_t > s.lift_timeout_s:
                # not lifted: put down whatever may be held and go round again
                self._helper_out.append(HelperRequest(self.spec.helper, "RELEASE",
                                                      self.spec.module, 0.0))
                self._pickup_axis = None
                self._reg = None
                return

    def _navigate(self, t: float, dt: float, connected: bool) -> None:
        s = self.s
        if self._path is None:
            if self._no_path or self._phase_elapsed >= s.path_wait_timeout_s:
                self._enter(Phase.POSE_ADJUST, t)
            return
        if t > self._path.end_time + s.nav_timeout_margin_s:
            self._enter(Phase.POSE_ADJUST, t)
            return
        body = self.body_obs.est
        if self._escape_at_start(body):
            return
        v, w, finished = track_timed_path(body, self._path, t, s, s.v_max)
        if finished:
            self._enter(Phase.POSE_ADJUST, t)
            return
        ax = self.axis()
        if ax is not None:
            v = max(-self._speed_limit(body, ax), min(self._speed_limit(body, ax), v))
        self._set_cmd(v, w, virtual=False)

    def _pose_adjust(self, t: float, dt: float, connected: bool) -> None:
        s = self.s
        if self._phase_elapsed > s.adjust_timeout_s:
            self._retry_enter(t, ErrorCode.TIMEOUT,
                              f"POSE_ADJUST took longer than {s.adjust_timeout_s} s")
            return
        ax = self.axis()
        if self._escape(self.body_obs.est, self._obstacles_for_body()):
            return
        body = self._body_virtual()
        goal = self._predock(ax)
        if (self._reg is None or self._goal_key is None
                or self._goal_key.distance_to(goal) > 0.5 * s.adjust_pos_tolerance
                or abs(wrap_angle(self._goal_key.yaw - goal.yaw)) > math.radians(0.2)):
            wps = [] if self._reg is None else self._reg.waypoints
            if self._reg is None:
                wps = detour_waypoints((body.x, body.y), (goal.x, goal.y),
                                       self._obstacles_for_body(), self._clearance())
            aligning = self._reg.aligning if self._reg is not None else False
            self._reg = PoseRegulator(goal, wps)
            self._reg.aligning = aligning
            self._goal_key = goal
        if self._reg.done(body, s):
            self._approach_enter(t)
            return
        v, w = self._reg.command(body, s, self._speed_limit(body, ax))
        self._set_cmd(v, w)

    def _approach_enter(self, t: float) -> None:
        self._enter(Phase.APPROACH, t)
        self._approach_target = self.target_est

    def _approach(self, t: float, dt: float, connected: bool) -> None:
        s = self.s
        ax = self.axis()
        body = self._body_virtual()
        gap, lat, yaw = ax.errors(body, self.face_offset)
        tgt0 = self._approach_target
        if (tgt0.distance_to(self.target_est) > s.target_moved_bound
                or abs(wrap_angle(tgt0.yaw - self.target_est.yaw))
                > math.radians(s.target_moved_yaw_deg)):
            self._retry_enter(t, ErrorCode.TARGET_MOVED,
                              f"target {self.spec.parent_module} moved during APPROACH")
            return
        if abs(lat) > s.misalign_lateral_bound or abs(yaw) > math.radians(
                s.misalign_yaw_bound_deg):
            self._retry_enter(t, ErrorCode.MISALIGNED,
                              f"misaligned during APPROACH: lateral {lat * 1e3:.1f} mm, "
                              f"yaw {math.degrees(yaw):.1f} deg")
            return
        if self._phase_elapsed > s.approach_timeout_s:
            self._retry_enter(t, ErrorCode.TIMEOUT,
                              f"APPROACH took longer than {s.approach_timeout_s} s")
            return
        if not s.confirm_with_connections:
            inside = (gap <= s.capture_range and abs(lat) <= s.dock_lateral_tolerance
                      and abs(yaw) <= math.radians(s.dock_yaw_tolerance_deg))
            self._dwell_t = self._dwell_t + dt if inside else 0.0
            if inside and self._dwell_t >= s.confirm_dwell_s:
                self._docked(t)
                return
        v, w, holding = approach_command(body, self.face_offset, ax, s,
                                         min(s.approach_speed, self._speed_limit(body, ax)))
        self._hold_t = self._hold_t + dt if holding else 0.0
        if self._hold_t > s.confirm_timeout_s:
            self._retry_enter(t, ErrorCode.TIMEOUT,
                              f"no capture {s.confirm_timeout_s} s after reaching the face")
            return
        self._set_cmd(v, w)

    def _retry_enter(self, t: float, code: ErrorCode, reason: str) -> None:
        self.retries += 1
        self._last_reason = reason
        if self.retries > self.s.max_retries:
            self._fail(ErrorCode.RETRIES_EXHAUSTED,
                       f"{self.retries - 1} retries exhausted; last failure "
                       f"({code.name}): {reason}")
            return
        self.message = f"retry {self.retries}: {reason}"
        self._enter(Phase.RETRY, t)

    def _retry(self, t: float, dt: float, connected: bool) -> None:
        s = self.s
        if self._phase_elapsed > s.retry_timeout_s:
            self._fail(ErrorCode.TIMEOUT, f"RETRY back-off took longer than {s.retry_timeout_s} s")
            return
        ax = self.axis()
        body = self._body_virtual()
        gap, _, _ = ax.errors(body, self.face_offset)
        if (gap >= s.standoff - 2 * s.adjust_pos_tolerance
                or self._phase_elapsed > 0.5 * s.retry_timeout_s):
            self._enter(Phase.POSE_ADJUST, t)
            return
        # back straight out, holding the heading
        w = s.adjust_k_yaw * wrap_angle(ax.heading - body.yaw) if abs(
            wrap_angle(ax.heading - body.yaw)) < math.radians(30) else 0.0
        self._set_cmd(-min(s.near_structure_speed, s.v_max), w)

    def _docked(self, t: float) -> None:
        self._enter(Phase.DOCKED, t)
        self.error, self.message = ErrorCode.NONE, ""
        self._backoff_from = self.body_obs.est if self.uses_helper else None
        if self.uses_helper and not self.s.confirm_with_connections:
            # The fake hardware hands a captured module over by itself (its connections
            # confirm the dock); on real hardware the helper lets go explicitly.
            self._helper_out.append(HelperRequest(self.spec.helper, "RELEASE",
                                                  self.spec.module, 0.0))

    def _docked_tick(self, t: float, dt: float, connected: bool) -> None:
        if not self.uses_helper or self._backoff_from is None:
            return
        h = self.body_obs.est
        if h is None or h.distance_to(self._backoff_from) >= self.s.helper_backoff:
            self._backoff_from = None
            return
        self._set_cmd(-min(self.s.near_structure_speed, self.s.v_max), 0.0, virtual=False)

    # ----------------------------------------------------------------------------- output
    def magnet_faces(self) -> dict[str, frozenset]:
        """Faces this task wants on: the child and parent faces from APPROACH on (kept on
        while DOCKED and while paused in APPROACH)."""
        if self.effective_phase in (Phase.APPROACH, Phase.DOCKED):
            return {self.spec.module: frozenset({self.spec.child_face}),
                    self.spec.parent_module: frozenset({self.spec.parent_face})}
        return {}

    def status(self) -> TaskStatus:
        """The current status (errors from the latest estimates; NaN while unknown)."""
        ax = self.axis()
        if ax is not None and self.module_est is not None:
            m = self.module_est
            if self.spec.module == self.driven and self.body_obs.est is not None:
                m = self.body_obs.est
            gap, lat, yaw = face_errors(m, self.spec.child_face, ax, self.s.module_width)
        else:
            gap = lat = yaw = math.nan
        return TaskStatus(
            module=self.spec.module, target_module=self.spec.parent_module,
            face_pair=f"{self.spec.child_face.value}->{self.spec.parent_module}."
                      f"{self.spec.parent_face.value}",
            phase=self.phase, face_gap_mm=gap * 1e3, lateral_error_mm=lat * 1e3,
            yaw_error_deg=math.degrees(yaw), retries=self.retries,
            phase_elapsed_s=self._phase_elapsed, phase_durations=dict(self.durations),
            error_code=self.error, message=self.message)

    def _output(self, t: float) -> TaskOutput:
        if self.phase in (Phase.PAUSED, Phase.FAILED, Phase.IDLE):
            self._cmd = {k: (0.0, 0.0) for k in self._cmd}
        return TaskOutput(dict(self._cmd), self.magnet_faces(), list(self._helper_out),
                          self.status())


class PathFollower:
    """Follows a timed path of a module that has no docking action (moved aside by the
    navigation) and stops at its end (timed pure pursuit, forward only)."""

    def __init__(self, module: str, path: TimedPath, settings: DockingSettings):
        self.module = module
        self.path = path
        self.s = settings
        self.finished = False
        self.obs = PoseObserver(settings.filter_alpha)
        self._cmd = (0.0, 0.0)
        self._t: float | None = None

    def tick(self, t: float, sample: PoseSample | None) -> tuple[float, float]:
        """``(v, w)`` for this tick; zero when stale or finished."""
        dt = 0.0 if self._t is None else max(0.0, min(0.5, t - self._t))
        self._t = t
        self.obs.predict(*self._cmd, dt, t)
        if (self.finished or sample is None or not sample.tracked
                or t - sample.stamp > self.s.stale_timeout_s):
            self._cmd = (0.0, 0.0)
            return self._cmd
        pose = self.obs.correct(sample)
        v, w, fin = track_timed_path(pose, self.path, t, self.s, self.s.v_max)
        self.finished = fin
        self._cmd = saturate(v, w, self.s)
        return self._cmd
