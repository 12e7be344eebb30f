"""The docking phase machine: one :class:`DockingTask` per docking action (no ROS imports).

Phases (:class:`smores_assembly.vocabulary.Phase`; ``docs/CONVENTIONS.md``)::

    IDLE -> [WAIT_HELPER] -> NAVIGATE -> POSE_ADJUST -> APPROACH -> DOCKED
                                             ^             |
                                             +-- RETRY <---+   (bounded: max_retries)
    any active phase -> PAUSED (a needed pose is stale: wheels stopped) -> same phase
    RETRY beyond max_retries / helper failure -> FAILED (error code + message)

Each phase first checks whether its goal already holds (opennav docking's "already docked" /
"already staged" checks): a confirmed connection is DOCKED at once; NAVIGATE ends when the
body is already at its pre-dock position; POSE_ADJUST hands over to APPROACH as soon as the
body stands on the approach line (at the pre-dock pose, or aligned between it and the face,
as when it starts flush or a few mm short of capture); the helper's pick-up move likewise.

The task is fed once per control tick with the time, the latest pose samples of the modules
it needs, whether the connection is confirmed and the module's timed path if any. It returns
the wheel commands of the modules it drives, the magnet faces it wants on, helper commands
and a status. The moving body is the module itself for TOP/BOTTOM docks, or the helping
module carrying it for LEFT/RIGHT docks (see :mod:`smores_assembly.docking.control`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from smores_assembly.docking.control import (DockAxis, DockingSettings, PoseRegulator,
                                             TimedPath, approach_command, detour_waypoints,
                                             StallMonitor, dock_axis, lane_neighbours,
                                             PAIR_TURN_MARGIN, on_approach_line,
                                             lane_blockers, pair_maneuver, pair_sweep_clear,
                                             pair_turn_clearance, turn_partial_clear,
                                             pair_turn_shift, pair_turn_way,
                                             pickup_axis, planned_pickup_axis,
                                             raise_to_min_wheel_speed, real_command,
                                             saturate, staging_extra, track_timed_path,
                                             SQUARES_APART, STAGING_LIMIT,
                                             turn_shift, turn_sweep_clear, turns_in_place,
                                             virtual_pose, TurnGate)
from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D, face_center, square_overlap, wrap_angle
from smores_assembly.vocabulary import ErrorCode, HelperOp, Phase


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
                raise InputError(f"{name}: module id must be a non-empty string, got {v!r}")
        if self.module == self.parent_module:
            raise InputError(f"parent_module: {self.parent_module!r} equals module")
        object.__setattr__(self, "parent_face", Face.parse(self.parent_face, "parent_face"))
        object.__setattr__(self, "child_face", Face.parse(self.child_face, "child_face"))
        if self.helper in (self.module, self.parent_module):
            raise InputError(f"helper: {self.helper!r} must differ from module and parent")


@dataclass(frozen=True)
class PoseSample:
    """A measured pose: ``stamp`` = time of the measurement [s]; ``tracked`` False when the
    mocap lost the body."""

    pose: Pose2D
    stamp: float
    tracked: bool = True


@dataclass(frozen=True)
class HelperRequest:
    """A helper command to send to ``helper``."""

    helper: str
    command: HelperOp
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
        magnets_off: ``module id -> faces`` the task wants off even while they are
            connected (an undock, :mod:`smores_assembly.docking.undock`).
    """

    cmd: dict
    magnets: dict
    helper_commands: list
    status: TaskStatus
    magnets_off: dict = field(default_factory=dict)


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
        # past estimates (t, pose, corrections applied): a correction is applied to a
        # stored estimate only when it is read (_pose_at), in the order the corrections
        # came, so the result is the same float for float as correcting every stored
        # estimate at once (which cost ~50 poses per control tick, issue 10)
        self._hist: list[tuple[float, Pose2D, int]] = []
        self._corr: list[tuple[float, float, float]] = []   # (dx, dy, dyaw) in order
        self._corr_base = 0                                  # index of _corr[0]

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
            hist = self._hist
            hist.append((t, self.est, self._corr_base + len(self._corr)))
            while hist and hist[0][0] < t - self.history_s:
                hist.pop(0)
            if len(self._corr) > 2 * len(hist) + 16:   # drop corrections every entry has
                done = min((k for _, _, k in hist), default=self._corr_base + len(self._corr))
                del self._corr[:done - self._corr_base]
                self._corr_base = done

    def _pose_at(self, j: int) -> Pose2D:
        """Stored estimate ``j`` with every correction made since it was stored."""
        t, p, k = self._hist[j]
        n = self._corr_base + len(self._corr)
        if k < n:
            for dx, dy, dyaw in self._corr[k - self._corr_base:]:
                p = Pose2D(p.x + dx, p.y + dy, wrap_angle(p.yaw + dyaw))
            self._hist[j] = (t, p, n)
        return p

    def _at(self, stamp: float) -> Pose2D:
        hist = self._hist
        for j in range(len(hist) - 1, -1, -1):
            if hist[j][0] <= stamp + 1e-9:
                return self._pose_at(j)
        return self._pose_at(0) if hist else self.est  # type: ignore[return-value]

    def correct(self, sample: PoseSample) -> Pose2D:
        z = sample.pose
        if self._stamp is not None and sample.stamp == self._stamp and self.est is not None:
            return self.est
        self._stamp = sample.stamp
        e = self.est
        if e is None or self._at(sample.stamp).distance_to(z) > self.reset:
            self.est = z
            self._hist = []
            self._corr_base += len(self._corr)
            self._corr = []
        else:
            a = self.alpha
            then = self._at(sample.stamp)
            dx, dy = a * (z.x - then.x), a * (z.y - then.y)
            dyaw = a * wrap_angle(z.yaw - then.yaw)
            self.est = Pose2D(e.x + dx, e.y + dy, wrap_angle(e.yaw + dyaw))
            # the stored past estimates get the same correction (else it is re-applied),
            # applied when read
            self._corr.append((dx, dy, dyaw))
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


# --------------------------------------------------------------------------------------------
# typed failures: raised by a phase, mapped to result codes in one place
# (DockingTask._on_failure)


class DockingFailure(Exception):
    """A phase cannot reach its goal. ``code`` is the :class:`ErrorCode` it maps to;
    ``retryable`` failures go through the retry loop (RETRY, at most ``max_retries``),
    the others end the task at once."""

    code = ErrorCode.TIMEOUT
    retryable = True

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class PhaseTimeout(DockingFailure):
    """A retryable phase (POSE_ADJUST, APPROACH) ran past its timeout."""


class Misaligned(DockingFailure):
    """The face drifted off the docking axis during APPROACH."""

    code = ErrorCode.MISALIGNED


class TargetMoved(DockingFailure):
    """The target module moved during APPROACH."""

    code = ErrorCode.TARGET_MOVED


class Stalled(DockingFailure):
    """The wheels were commanded (at ``min_wheel_speed`` or faster) and the body did not
    move: a deadband above ``min_wheel_speed``, or a body held fast."""

    code = ErrorCode.STALLED


class FatalTimeout(DockingFailure):
    """A phase without a retry (WAIT_HELPER, RETRY itself) ran past its timeout."""

    retryable = False


# --------------------------------------------------------------------------------------------
# the shared context of the phases


class DockingContext:
    """What the phases of one task share: the action, the settings, the body model, the
    estimates, this tick's inputs and the outputs being built.

    Body model: TOP dock -> module, face ``w/2`` ahead, forward; BOTTOM -> module, face
    ``w/2`` behind, reverse; wheel-face dock -> the helper, carried module's face ``1.5 w``
    ahead (carry_yaw = -angle(child_face)).
    """

    def __init__(self, spec: DockingSpec, settings: DockingSettings):
        w = settings.module_width
        self.spec = spec
        self.s = settings
        self.uses_helper = bool(spec.helper)
        self.driven = spec.helper if self.uses_helper else spec.module
        if self.uses_helper:
            self.reverse, self.face_offset = False, 1.5 * w
            self.carry_yaw = wrap_angle(-spec.child_face.angle)
        else:
            self.reverse = spec.child_face is Face.BOTTOM
            self.face_offset = 0.5 * w
            self.carry_yaw = 0.0
        # estimates
        self.body_obs = PoseObserver(settings.filter_alpha)
        self.target_est: Pose2D | None = None
        self.module_est: Pose2D | None = None
        self.lifted = False
        # inputs (the latest path stays until a phase consumes it)
        self.path: TimedPath | None = None
        self.no_path = False
        self.obstacles: list[tuple[float, float]] = []
        self.samples: Mapping[str, PoseSample] = {}  # every tracked module's latest pose
        self.t = 0.0
        self.dt = 0.0
        self.elapsed = 0.0          # time in the current phase [s] (pauses excluded)
        self.connected = False
        # face errors (gap [m], lateral [m], yaw [rad]) at the last APPROACH tick: once
        # DOCKED, the errors at capture (the docking accuracy)
        self.capture_errors: tuple[float, float, float] | None = None
        # outputs of this tick
        self.cmd: dict[str, tuple[float, float]] = {}
        self.helper_out: list[HelperRequest] = []

    # ---------------------------------------------------------------------- geometry
    def axis(self) -> DockAxis | None:
        """The docking axis from the current target estimate (None before one is known)."""
        if self.target_est is None:
            return None
        return dock_axis(self.target_est, self.spec.parent_face, self.s.module_width)

    def face_errors_now(self) -> tuple[float, float, float]:
        """Gap [m], lateral [m] and yaw [rad] error of the moving module's docking face
        against the parent's, from the latest estimates (the carried module's own track for
        a wheel-face dock); NaN while unknown."""
        ax = self.axis()
        if ax is None or self.module_est is None:
            return math.nan, math.nan, math.nan
        m = self.module_est
        if self.spec.module == self.driven and self.body_obs.est is not None:
            m = self.body_obs.est
        return face_errors(m, self.spec.child_face, ax, self.s.module_width)

    def body_virtual(self) -> Pose2D:
        """The driven body's estimate in its virtual forward frame."""
        return virtual_pose(self.body_obs.est, self.reverse)  # type: ignore[arg-type]

    def predock(self, axis: DockAxis) -> Pose2D:
        """The body's (virtual) pre-dock pose on ``axis``."""
        return axis.body_pose(self.face_offset, self.s.standoff)

    def on_approach_line(self) -> bool:
        """The body already stands on the docking axis between the pre-dock pose and the
        face (or a little past its capture), aligned within the POSE_ADJUST tolerances
        (:func:`~smores_assembly.docking.control.on_approach_line`)."""
        ax = self.axis()
        if ax is None or self.body_obs.est is None:
            return False
        return on_approach_line(ax, self.body_virtual(), self.face_offset, self.s,
                                self.s.standoff, -self.s.capture_range)

    def at_predock(self) -> bool:
        """The body is within ``nav_goal_tolerance`` of its pre-dock position (the
        navigation's goal), or already on the approach line."""
        ax = self.axis()
        if ax is None or self.body_obs.est is None:
            return False
        return (self.body_virtual().distance_to(self.predock(ax)) <= self.s.nav_goal_tolerance
                or self.on_approach_line())

    def obstacles_for_body(self) -> list[tuple[float, float]]:
        """Centres of the modules the driven body keeps clear of (the target included)."""
        obs = list(self.obstacles)
        if self.target_est is not None:
            obs.append((self.target_est.x, self.target_est.y))
        return obs

    def squares_near(self, body: Pose2D) -> list[Pose2D] | None:
        """Poses (``world``) of the tracked modules within :data:`SQUARES_RADIUS` of
        ``body``, the driven body left out: the squares
        :func:`~smores_assembly.docking.control.turn_sweep_clear` judges. None while a pair
        is carried (its single-body rule does not hold for a pair)."""
        if self.uses_helper and self.lifted:
            return None
        return squares_near(self.samples, body, self.driven)

    def lane_neighbours(self, axis: DockAxis, obstacles,
                        extent: float | None = None) -> list[tuple[float, float]]:
        """Modules flush beside this dock's approach lane
        (:func:`~smores_assembly.docking.control.lane_neighbours`; ``extent`` [m]: the
        lane's far end out from the target face, default the body's back at the pre-dock
        pose). Up to ``obstacle_clearance`` off the axis also while carrying: the pair is
        one module wide (with the carrying clearance, modules 0.2 m off the lane counted
        as flush neighbours and sent the pair to a far staging pose, into an idle
        module)."""
        return lane_neighbours(axis, self.face_offset, self.s.standoff, self.s.module_width,
                               obstacles, self.s.obstacle_clearance, extent)

    def lane_heading_bound(self, axis: DockAxis) -> float | None:
        """``lane_heading_max_deg`` [rad] when modules stand flush beside this dock's lane
        (the approach law's heading reference is bounded there), else None."""
        if self.lane_neighbours(axis, self.obstacles_for_body()):
            return math.radians(self.s.lane_heading_max_deg)
        return None

    def in_lane(self, axis: DockAxis) -> bool:
        """The body stands in the approach lane: axle within 1 cm of the axis, heading
        within 10 deg, its face no farther from the target face than the stand-off plus
        one module width."""
        body = self.body_virtual()
        gap, _lat, yaw = axis.errors(body, self.face_offset)
        return (abs(axis.axle_lateral(body)) <= 0.01 and abs(yaw) <= math.radians(10.0)
                and gap <= self.s.standoff + self.s.module_width)

    def clearance(self) -> float:
        """Clearance of direct moves (one width more while carrying a module)."""
        extra = self.s.module_width if (self.uses_helper and self.lifted) else 0.0
        return self.s.obstacle_clearance + extra

    def touch_distance(self) -> float:
        """Centre distance [m] from another module at which the driven body cannot touch it
        whatever the headings, with 6 % to spare: ``SQUARES_APART`` for one module; for a
        lifted pair its :func:`~smores_assembly.docking.control.pair_turn_clearance` x
        1.06 (the floor of a direct move's detour,
        :func:`~smores_assembly.docking.control.detour_waypoints`)."""
        if self.uses_helper and self.lifted:
            return 1.06 * pair_turn_clearance(self.s.module_width)
        return SQUARES_APART

    def turn_clearance(self) -> float:
        """Centre clearance [m] from every other module of a pose where the body may turn
        in place (a staging pose on its axis): ``obstacle_clearance``; for a lifted pair
        its sweep, :func:`~smores_assembly.docking.control.pair_turn_clearance` plus
        ``PAIR_TURN_MARGIN`` (the navigation's ``carry_clearance``, the rule of the pair's
        pre-dock goal, :func:`~smores_assembly.navigation.stage.clear_carried_predock`)."""
        if self.uses_helper and self.lifted:
            return pair_turn_clearance(self.s.module_width) + PAIR_TURN_MARGIN
        return self.s.obstacle_clearance

    def speed_limit(self, body_v: Pose2D, axis: DockAxis) -> float:
        """``near_structure_speed`` once the moving face is within ``slow_down_distance``
        of the target face, else ``v_max``."""
        fx = body_v.x + self.face_offset * math.cos(body_v.yaw)
        fy = body_v.y + self.face_offset * math.sin(body_v.yaw)
        if math.hypot(fx - axis.tx, fy - axis.ty) < self.s.slow_down_distance:
            return min(self.s.v_max, self.s.near_structure_speed)
        return self.s.v_max

    # ---------------------------------------------------------------------- outputs
    def set_cmd(self, v: float, w: float, virtual: bool = True) -> None:
        """Command the driven body (virtual-frame command unless ``virtual`` is False)."""
        if virtual:
            v, w = real_command(v, w, self.reverse)
        self.cmd[self.driven] = saturate(v, w, self.s)

    def send(self, command: HelperOp, carry_yaw: float = 0.0) -> None:
        """Queue a helper command (LIFT, RELEASE) about this task's module."""
        self.helper_out.append(HelperRequest(self.spec.helper, command, self.spec.module,
                                             carry_yaw))


#: a planned escape that has driven this far [m] past its room without getting clear stops
ESCAPE_OVERSHOOT = 0.02
#: modules within this distance [m] of a body count for its turn check (``turn_sweep_clear``:
#: a square farther than two half-diagonals cannot matter; the margin covers a tick's motion)
SQUARES_RADIUS = 0.15


#: a follower's turn escape that would bring its square within ESCAPE_GAP [m] of another
#: module's within ESCAPE_LOOKAHEAD [m] of driving on ends (``PathFollower._drives_into``)
ESCAPE_LOOKAHEAD = 0.005
ESCAPE_GAP = 0.002
#: a follower turns in place (its path's turn, a boxed-in escape's) only while this much
#: more of that turn [s] keeps its corners off every square near
#: (``PathFollower._boxed_turn_clear``; a tick at 1.5 rad/s and 50 Hz turns 0.03 rad)
BOXED_TURN_LOOKAHEAD_S = 0.1


#: a module whose samples' positions stay within this distance [m] of their mean ... (the
#: fake hardware's mocap noise: 1 mm std; its yaw is not judged: a turn in place stays in
#: its cell, where the plan does not keep others off its square)
STILL_TOLERANCE = 0.005
#: ... for this long [s] stands (``PathFollower``'s turn escape judges only those; one
#: driving at 0.01 m/s is 5 mm from its mean after 1 s; one slower than ~8 mm/s counts)
STILL_FOR_S = 1.2


def modules_near(samples: Mapping[str, PoseSample], body: Pose2D,
                 skip: str) -> list[tuple[str, Pose2D]]:
    """``(module id, pose)`` (``world``) of the tracked modules of ``samples`` within
    :data:`SQUARES_RADIUS` [m] of ``body``, module ``skip`` (the body itself) left out."""
    return [(m, smp.pose) for m, smp in samples.items()
            if m != skip and smp.tracked
            and math.hypot(smp.pose.x - body.x, smp.pose.y - body.y) <= SQUARES_RADIUS]


def squares_near(samples: Mapping[str, PoseSample], body: Pose2D, skip: str) -> list[Pose2D]:
    """Poses (``world``) of :func:`modules_near`: the squares
    :func:`~smores_assembly.docking.control.turn_sweep_clear` judges."""
    return [q for _, q in modules_near(samples, body, skip)]


class StandingTracker:
    """Which modules stand still, from their pose samples (``world``), fed every tick.

    A module stands once the position of every sample fed since its record began stayed
    within :data:`STILL_TOLERANCE` [m] of the running mean of those samples (the mean, not
    one sample: mocap noise) for :data:`STILL_FOR_S` [s]; a sample outside starts a new
    record, an untracked one drops it. Its yaw is not judged: the navigation's plan keeps
    modules that change cells apart, not a module turning in place in its cell; judged by
    yaw too, m75 (random 100 seed 0, stage 2), which had turned to its staging yaw beside
    m63 and stood there, did not count for 1.2 s after the turn, and m63's turn in place
    swept into its corner 0.3 s after it (0.49 mm). Fed with every module on every tick
    (``dispatch.tick_followers``), a neighbour that stood before a follower came near
    counts at once: fed only on the ticks a follower judged a turn, a module first seen
    at the turn was not protected for :data:`STILL_FOR_S` (the fresh review of the turn
    escape).
    """

    def __init__(self) -> None:
        # module -> (mean x, mean y, samples, still since [s])
        self._still: dict[str, tuple[float, float, int, float]] = {}

    def update(self, t: float, samples: Mapping[str, PoseSample]) -> None:
        """Feed the latest sample of every module at time ``t`` [s]."""
        for m, smp in samples.items():
            if not smp.tracked:
                self._still.pop(m, None)
                continue
            q = smp.pose
            st = self._still.get(m)
            if st is not None:
                n = st[2] + 1
                mx, my = st[0] + (q.x - st[0]) / n, st[1] + (q.y - st[1]) / n
                if math.hypot(q.x - mx, q.y - my) > STILL_TOLERANCE:
                    st = None
                else:
                    self._still[m] = (mx, my, n, st[3])
            if st is None:
                self._still[m] = (q.x, q.y, 1, t)

    def standing_near(self, t: float, samples: Mapping[str, PoseSample], pose: Pose2D,
                      skip: str) -> list[Pose2D]:
        """Latest poses (``world``) of the tracked modules of ``samples`` within
        :data:`SQUARES_RADIUS` [m] of ``pose`` that have stood for :data:`STILL_FOR_S` [s]
        up to ``t`` [s]; module ``skip`` (the body itself) left out."""
        return [q for m, q in modules_near(samples, pose, skip)
                if m in self._still and t - self._still[m][3] >= STILL_FOR_S]


class Escape:
    """Drive straight away from a module the body starts too close to, or to where a turn
    it must make is clear (state of one phase: a path's start, NAVIGATE's
    :meth:`before_turn`, a follower's ``turn_escape``).

    Straight (forward or backward, no turning: turning in place there could sweep a corner
    into a neighbour) while a module is closer than ``escape_distance``. The direction is
    the shorter straight move to where the body can turn, every module centre
    ``escape_distance`` away, without coming closer to any module on the way
    (:func:`~smores_assembly.docking.control.turn_shift`, the single-body rule of a
    carried pair's :class:`PairRoom`); the body drives until it is clear. With no such
    pose within its limit either way, the old rule: the direction whose clearance grows
    over the next few centimetres, kept while moving on increases the distance to the
    nearest modules; boxed in along the heading, it turns in place towards the line of
    best clearance first.

    Before, the direction was always chosen by the clearance 5 cm on and the move ended
    as soon as the next 5 mm brought the body closer: with the nearest module nearly abeam
    (its distance first dips by a fraction of a millimetre, then grows) the escape ended
    at once, 0.086 m from it, and the body turned in place into it (bench_targets
    random_11_236536086: h0 after its back-off beside m6, 0.48 mm, then blocked until the
    helper timed out).
    """

    def __init__(self):
        self.sign = 0.0
        self.room: Pose2D | None = None   # where the body can turn (a planned escape)
        self.was_clear = False
        self.path: TimedPath | None = None  # the path :meth:`at_start` last escaped for
        self.moved = False   # an escape command was given (the body left where it stood)

    def step(self, ctx: DockingContext, body: Pose2D,
             obstacles: Sequence[tuple[float, float]]) -> bool:
        """Set the escape command; True while escaping (the caller re-plans afterwards)."""
        cmd = self.command(ctx.s, body, obstacles)
        if cmd is None:
            return False
        ctx.set_cmd(*cmd, virtual=False)
        return True

    def command(self, s: DockingSettings, body: Pose2D,
                obstacles: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
        """The escape command ``(v [m/s], w [rad/s])`` of the body (world-frame pose, module
        centres ``obstacles`` [m]), or None when it is clear (``escape_distance`` from every
        obstacle) or moving on would bring it closer again."""
        cmd = self._command(s, body, obstacles)
        if cmd is not None:
            self.moved = True
        return cmd

    def holds_at_start(self, path: TimedPath, t: float, s: DockingSettings) -> bool:
        """True while the body, moved by this escape, waits where the escape left it: the
        reference ``nav_lookahead_s`` ahead of ``t`` [s] on ``path`` is still the path's
        first point (:meth:`TimedPath.leaves_at`; a path planned from where the body stood
        before it escaped dwells there first). Driving back to that point undid the escape:
        random 100 seed 0, stage 27 (issue 16): h1, 0.106 m from m52 after a back-off,
        escaped 15 mm, drove back to its path's start steering and turned there in place
        into m52 (0.50 mm), blocked until the stage timed out."""
        if not self.moved:
            return False
        leaves = path.leaves_at()
        return leaves is not None and t + s.nav_lookahead_s <= leaves

    def _command(self, s: DockingSettings, body: Pose2D,
                 obstacles: Sequence[tuple[float, float]]) -> tuple[float, float] | None:

        def clearance(shift: float, heading: float = body.yaw) -> float:
            x = body.x + shift * math.cos(heading)
            y = body.y + shift * math.sin(heading)
            return min((math.hypot(x - ox, y - oy) for ox, oy in obstacles), default=math.inf)

        now = clearance(0.0)
        if now >= s.escape_distance:
            self.sign, self.room = 0.0, None
            return None
        if not self.sign:
            shift = turn_shift(body, obstacles, s.module_width, s.escape_distance,
                               0.5 * s.module_width)
            if shift:
                self.sign = math.copysign(1.0, shift)
                self.room = body.compose(shift, 0.0)
        if self.room is not None:
            # a planned escape: on until clear (checked above); past the room by more
            # than a turn's worth of pose error, the plan did not hold: stop
            left = self.sign * ((self.room.x - body.x) * math.cos(body.yaw)
                                + (self.room.y - body.y) * math.sin(body.yaw))
            if left < -ESCAPE_OVERSHOOT:
                self.sign, self.room = 0.0, None
                return None
        elif not self.sign:
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
                return saturate(0.0, s.adjust_k_yaw * err, s)
            self.sign = 1.0 if fwd >= back else -1.0
        elif clearance(self.sign * 0.005) < now:
            self.sign = 0.0
            return None
        return saturate(self.sign * min(s.near_structure_speed, s.v_max), 0.0, s)

    def before_turn(self, ctx: DockingContext, body: Pose2D, v: float, w: float) -> bool:
        """Escape (:meth:`step`) instead of a path's turn in
        place (``v == 0``, ``w != 0``) whose sweep would touch a module (the squares of
        :meth:`DockingContext.squares_near`,
        :func:`~smores_assembly.docking.control.turn_sweep_clear`); True while escaping.

        A path may stop a body on a cell near a module and turn it there: the cell's
        clearance is by centres, the turn's by squares (random 100 seed 0, stage 7: h0's
        path drove it 0.02 m on to 0.108 m from m59, standing 38 degrees off, and turned
        it into m59, 0.24 mm). Not for a carried pair (its own rules)."""
        squares = ctx.squares_near(body) if v == 0.0 and w != 0.0 else None
        if squares is None or (not self.sign
                               and turn_sweep_clear(body, squares, ctx.s.module_width)):
            return False
        return self.step(ctx, body, ctx.obstacles_for_body())

    def at_start(self, ctx: DockingContext, body: Pose2D) -> bool:
        """:meth:`step` only until the body was clear once on the current path
        (``ctx.path``; a planned path may legitimately pass close to modules later on).

        Every new path re-arms it: a replan starts from where the body stands, and a body
        pressed against a module turned into it again on each new path (random 100
        stage 21: h0's corner against m50, 48 lag replans from the blocked pose, each
        one turning it back into m50, until m62's helper timed out)."""
        if ctx.path is not self.path:
            self.path = ctx.path
            self.was_clear = False
        if self.was_clear:
            return False
        if self.step(ctx, body, ctx.obstacles_for_body()):
            return True
        self.was_clear = True
        return False


class PairRoom:
    """A carried pair's straight move to turning room (state of one phase).

    A carried pair that cannot turn in place where it stands (a module within
    :func:`~smores_assembly.docking.control.pair_turn_clearance` of the helper's centre)
    first drives straight, forward or back, to the nearest pose where it can
    (:func:`~smores_assembly.docking.control.pair_turn_shift`), before it turns: turning
    where it stood swept the carried module into a neighbour (bench_scale random10: m8
    against m4 at the start of POSE_ADJUST's direct move; bench_targets
    random_12_326347789: m3 against the staging m10 at the start of its path, right
    after the lift). The navigation plans the pair from where this move ends and times
    its path after it (:func:`smores_assembly.navigation.problem.pair_turn_moves`).
    """

    def __init__(self):
        self.room: Pose2D | None = None
        self.sign = 0.0

    def step(self, ctx: DockingContext, obs: Sequence[tuple[float, float]]) -> bool:
        """Set the straight command; True while the move runs, False when there is room
        (or no straight move finds any: the caller turns as before)."""
        s = ctx.s
        h = ctx.body_obs.est
        if h is None:
            return False
        if self.room is None:
            shift = pair_turn_shift(h, obs, s.module_width)
            if not shift:
                return False
            self.room = h.compose(shift, 0.0)
            self.sign = math.copysign(1.0, shift)
        left = self.sign * ((self.room.x - h.x) * math.cos(h.yaw)
                            + (self.room.y - h.y) * math.sin(h.yaw))
        if left <= 0.002:
            self.room = None
            return False
        v = min(s.near_structure_speed, s.v_max, max(s.adjust_k_pos * left, 0.01))
        ctx.set_cmd(self.sign * v, 0.0, virtual=False)
        return True


# --------------------------------------------------------------------------------------------
# phase objects: enter / tick / exit over the context. ``tick`` returns the next phase (or
# None to stay) or raises a DockingFailure; a transition ends the tick.


class PhaseStep:
    """One phase (or helper sub-step): a fresh object on every entry, so its state (timers,
    regulator, escape) starts anew and survives pauses."""

    phase: Phase = Phase.IDLE
    name = ""

    def enter(self, ctx: DockingContext) -> None:
        """Called once when the phase starts."""

    def tick(self, ctx: DockingContext) -> Phase | None:
        """One control tick; returns the next phase or None."""
        return None

    def exit(self, ctx: DockingContext) -> None:
        """Called once when the phase ends (not when it pauses)."""


class Navigate(PhaseStep):
    """Follow the navigation's timed path (waiting ``path_wait_timeout_s`` for one); its end,
    its last stamp plus ``nav_timeout_margin_s``, or no path -> POSE_ADJUST. A body already
    at its pre-dock position (or on the approach line) goes on at once. A path that stands
    (every waypoint within 1 mm of the first: the navigation holds a module staged on its
    dock axis until the paths near its slide have passed,
    :func:`~smores_assembly.navigation.problem.direct_waits`) is waited out where the body
    stands, without a start escape (escaping straight along its axis from a neighbour
    took it into the path of a module moving aside)."""

    phase = Phase.NAVIGATE

    def enter(self, ctx):
        self.escape = Escape()
        self.room = PairRoom()
        self.roomy: TimedPath | None = None  # the path a lifted pair made room to turn for

    def tick(self, ctx):
        s = ctx.s
        if ctx.at_predock():
            return Phase.POSE_ADJUST
        if ctx.path is None:
            if ctx.no_path or ctx.elapsed >= s.path_wait_timeout_s:
                return Phase.POSE_ADJUST
            return None
        if ctx.t > ctx.path.end_time + s.nav_timeout_margin_s:
            return Phase.POSE_ADJUST
        if ctx.path.stands():
            return Phase.POSE_ADJUST if ctx.t >= ctx.path.end_time else None
        body = ctx.body_obs.est
        if ctx.uses_helper and ctx.lifted and self.roomy is not ctx.path:
            # a path's first act may be a turn: a lifted pair makes room first, on every
            # new path (the navigation plans each from where that move ends)
            if self.room.step(ctx, ctx.obstacles_for_body()):
                return None
            self.roomy = ctx.path
        if self.escape.at_start(ctx, body):
            return None
        if self.escape.holds_at_start(ctx.path, ctx.t, s):
            ctx.set_cmd(0.0, 0.0, virtual=False)
            return None
        v, w, finished = track_timed_path(body, ctx.path, ctx.t, s, s.v_max)
        if finished:
            return Phase.POSE_ADJUST
        if self.escape.before_turn(ctx, body, v, w):
            return None
        if ctx.uses_helper and ctx.lifted and v == 0.0 and w != 0.0:
            # a lifted pair turning in place: the way its sweep is clear
            # (pair_turn_way; turning the short way it swept its module into a neighbour)
            cx, cy = ctx.path.reference(ctx.t + s.nav_lookahead_s)
            alpha = wrap_angle(math.atan2(cy - body.y, cx - body.x) - body.yaw)
            w = pair_turn_way(body, alpha, ctx.obstacles_for_body(), s.module_width) * abs(w)
        ax = ctx.axis()
        if ax is not None:
            lim = ctx.speed_limit(body, ax)
            v = max(-lim, min(lim, v))
        ctx.set_cmd(v, w, virtual=False)
        return None


#: A body aligned on its docking axis at most this far [m] beyond the pre-dock pose slides
#: straight on into APPROACH (the staging limit of :class:`~smores_assembly.staging.
#: StagingSettings` is 0.4 m).
STAGED_SLIDE_MAX = 0.45
#: ... and at least this far [m] beyond it, a body up to the APPROACH lateral bound off the
#: axis slides on too, correcting on the way (:meth:`PoseAdjust._staged`).
STAGED_CORRECT_MIN = 0.02


class PoseAdjust(PhaseStep):
    """Direct move (round the target and obstacles) to the pre-dock pose -> APPROACH, at
    once when the body already stands on the approach line (at the pre-dock pose, or
    between it and the face, aligned: :meth:`DockingContext.on_approach_line`).

    Corners and slots (issue 11): when modules stand flush beside the approach lane
    (:func:`~smores_assembly.docking.control.lane_neighbours`) and the pre-dock pose is
    closer than the direct-move clearance to some module, the body first regulates to a
    staging pose further out on the axis (:func:`~smores_assembly.docking.control.staging_extra`:
    clear enough to turn there), aligned with the axis, then *slides* along the lane to
    the pre-dock pose and on into APPROACH; inside the lane (aligned, on the axis) it does
    not flee from the lane's flush neighbours, and when it is not aligned well enough to
    slide it still turns only at the staging pose. The slide follows the axis with the
    approach law (:func:`~smores_assembly.docking.control.approach_command`: the heading
    stays within a few degrees of the axis), never by steering at the pre-dock point:
    near a point the bearing is mocap noise, and turning on it swept the body's corner
    into the flush neighbour (pocket.yaml). A body found in the lane aligned within half
    the APPROACH misalignment bounds slides at once (after a RETRY, say); all in-place
    turns happen at the staging pose, clear of every module. So does a body found aligned
    on its axis beyond the pre-dock pose (a pipelined stage's staging pose, issue 14).
    """

    phase = Phase.POSE_ADJUST

    def enter(self, ctx):
        self.escape = Escape()
        self.reg: PoseRegulator | None = None
        self.goal_key: Pose2D | None = None
        self.extra = 0.0        # staging distance beyond the stand-off [m]
        self.staging = False    # regulating to the staging pose (not yet the pre-dock)
        self.sliding = False    # sliding along the lane from the staging pose
        self.room = PairRoom()  # a carried pair's straight move to turning room
        self.extent: float | None = None  # the lane's far end [m out from the face]
        self.turn_way = 0.0     # a lifted pair's turn in place at its pre-dock position
        self.maneuver: list | None = None  # a lifted pair's turn-leg-turn onto its axis
        self.maneuver_tried = False

    def tick(self, ctx):
        s = ctx.s
        if ctx.elapsed > s.adjust_timeout_s:
            raise PhaseTimeout(f"POSE_ADJUST took longer than {s.adjust_timeout_s} s")
        if ctx.on_approach_line():
            return Phase.APPROACH
        ax = ctx.axis()
        obs = ctx.obstacles_for_body()
        body = ctx.body_virtual()
        # aligned on the axis beyond the pre-dock pose, the lane runs from where the body
        # stands, and once it slides from where the slide began: the wall along the whole
        # slide is flush neighbours, also the part already passed (random_10_68252793)
        gap = ax.errors(body, ctx.face_offset)[0]
        if gap > s.standoff and self._can_slide(ctx, ax, body):
            self.extent = max(self.extent or 0.0,
                              ctx.face_offset + gap + 0.5 * s.module_width)
        elif not self.sliding:
            self.extent = None
        neigh = ctx.lane_neighbours(ax, obs, self.extent)
        # sliding in, aligned, a module beside the lane is a wall to slide along, not one
        # to flee, also before the body enters the lane (random_10_608720880: m8 slid
        # from its staging pose, came within the escape distance of the lane's first
        # neighbour 1 cm before the lane, backed off, slid on: four POSE_ADJUST timeouts)
        in_lane = bool(neigh) and (ctx.in_lane(ax) or (
            self.sliding and self._can_slide(ctx, ax, body)))
        flee = [o for o in obs if o not in neigh] if in_lane else obs
        if ctx.uses_helper and ctx.lifted and self.reg is None and not self.sliding:
            applies, nxt = self._pair_turn(ctx, ax, body, obs)
            if applies:
                return nxt
            if not in_lane or self.maneuver:
                # planned outside the lane; once planned it runs to its end (its last
                # turn brings the pair into the lane, where the direct move took over
                # with an unchecked reverse arc)
                applies, nxt = self._maneuver(ctx, ax, body, obs, bool(neigh))
                if applies:
                    return nxt
        if (ctx.uses_helper and ctx.lifted and self.reg is None and not self.sliding
                and not in_lane and not self._staged(ctx, ax, body, lane=bool(neigh))
                and self.room.step(ctx, obs)):
            return None
        if self.escape.step(ctx, ctx.body_obs.est, flee):
            self.reg = None   # plan the direct move again once clear
            return None
        if self.sliding or (in_lane and self._can_slide(ctx, ax, body)) or (
                self.reg is None and self._staged(ctx, ax, body, lane=bool(neigh))):
            return self._slide(ctx, ax, body)
        goal = ctx.predock(ax)
        if (self.reg is None or self.goal_key is None
                or self.goal_key.distance_to(goal) > 0.5 * s.adjust_pos_tolerance
                or abs(wrap_angle(self.goal_key.yaw - goal.yaw)) > math.radians(0.2)):
            # (re)plan on a target that moved: keep the detour progress and sub-step
            if self.reg is None:
                # a lifted pair turns only where its sweep is clear, lane neighbours or
                # not (random_9_932154232: staged with the direct-move clearance, 0.3 m
                # out, the detour there swept the carried m1 into the idle m0); where no
                # pose on the axis is that clear, at the clearest one, not the limit
                # (random100 stage 11: the limit pose stood 0.08 m from the staged m70)
                pair = ctx.uses_helper and ctx.lifted
                self.extra = (staging_extra(ax, ctx.face_offset, s.standoff, obs,
                                            ctx.turn_clearance(), width=s.module_width,
                                            best_fallback=pair)
                              if neigh or pair else 0.0)
                # in the lane (1 cm, 10 deg) but too far off to slide (half the APPROACH
                # bounds, else it slid above), the body turns at the staging pose too, not
                # on its way to the pre-dock point: steering on that point's bearing swept
                # its corner into the flush neighbour (bench_reconfig reconf_9_534836507
                # reuse, stage 7: m3 turned ~5 deg by a path of 0.04 s, 3 cm beyond its
                # pre-dock pose beside m0, contact 0.10 mm)
                self.staging = self.extra > 0.0
                aim = ax.body_pose(ctx.face_offset, s.standoff + self.extra) \
                    if self.staging else goal
                wps = ([] if in_lane else
                       detour_waypoints((body.x, body.y), (aim.x, aim.y), obs,
                                        ctx.clearance(), touch=ctx.touch_distance(),
                                        corner_cut=s.waypoint_tolerance))
                aligning = False
            else:
                aim = ax.body_pose(ctx.face_offset, s.standoff + self.extra) \
                    if self.staging else goal
                wps, aligning = self.reg.waypoints, self.reg.aligning
            self.reg = PoseRegulator(aim, wps)
            self.reg.aligning = aligning
            self.goal_key = goal
        if self.reg.done(body, s):
            if not self.staging:
                return Phase.APPROACH
            # aligned at the staging pose: slide along the lane to the pre-dock pose
            self.staging = False
            return self._slide(ctx, ax, body)
        v, w = self.reg.command(body, s, ctx.speed_limit(body, ax))
        ctx.set_cmd(v, w)
        return None

    def _pair_turn(self, ctx: DockingContext, ax: DockAxis, body: Pose2D,
                   obs: Sequence[tuple[float, float]]) -> tuple[bool, Phase | None]:
        """A lifted pair standing at its pre-dock position (within ``nav_goal_tolerance``,
        where NAVIGATE hands over) off its heading turns in place onto the axis, the way
        whose sweep is clear (:func:`~smores_assembly.docking.control.pair_sweep_clear`),
        when from there it can slide in (:meth:`_can_slide`), and slides. Returns (True,
        the tick's result) while this rule drives the pair, (False, None) when it does not
        apply (the direct move as before).

        random_12_861754307 stage 1: h0 lifted m4 2.4 mm from its pre-dock position, 45
        degrees off the axis, m1 staged 0.129 m beside it. The full-circle rule
        (``turn_clearance``, 0.185 m) sent the pair 0.15 m back to turning room and on
        to a staging pose beyond m1, and its slide from there swept m4 along m1 (flush
        beside the lane, 1.5 mm into it): four contacts, four POSE_ADJUST timeouts; the
        45-degree turn where it stood swept clear of m1 by 7 cm."""
        s = ctx.s
        goal = ctx.predock(ax)
        err = wrap_angle(goal.yaw - body.yaw)
        if not self.turn_way:
            if (body.distance_to(goal) > s.nav_goal_tolerance
                    or abs(err) <= math.radians(0.5 * s.misalign_yaw_bound_deg)
                    or not self._can_slide(ctx, ax, Pose2D(body.x, body.y, goal.yaw))):
                return False, None
            other = err - math.copysign(2.0 * math.pi, err)
            for turn in (err, other):
                if pair_sweep_clear(body, turn, obs, s.module_width):
                    self.turn_way = math.copysign(1.0, turn)
                    break
            else:
                return False, None
        if self._can_slide(ctx, ax, body):
            self.turn_way = 0.0
            return True, self._slide(ctx, ax, body)
        if abs(err) <= math.radians(s.adjust_yaw_tolerance_deg):
            self.turn_way = 0.0   # turned but drifted off the lane: the direct move
            return False, None
        if math.copysign(1.0, err) != self.turn_way and abs(err) > math.radians(10.0):
            err += self.turn_way * 2.0 * math.pi   # the long way round (the clear one)
        ctx.set_cmd(0.0, s.adjust_k_yaw * err)
        return True, None

    def _maneuver(self, ctx: DockingContext, ax: DockAxis, body: Pose2D,
                  obs: Sequence[tuple[float, float]], lane: bool) -> tuple[bool, Phase | None]:
        """A lifted pair that cannot turn in place where it stands (a module within its
        full-circle ``turn_clearance``), is not staged on its axis and has no staging pose
        on the axis with that clearance either (the direct move's turning room, staging
        pose and detour handle the other cases) gets onto the axis by a straight shift, a
        turn, a straight leg and a turn whose swept footprints are clear
        (:func:`~smores_assembly.docking.control.pair_maneuver`: the smallest shift that
        works, then the first spot), to a spot on the axis, from the pre-dock pose
        outwards every 5 mm up to
        ``STAGING_LIMIT`` beyond it (never past a module in the lane), then slides in.
        Applied more widely (whenever the pair cannot turn where it stands) it changed the
        course of random100 in stage 6 (h0/m89, 0.2 s) and the run failed elsewhere, in
        stage 8's navigation. Planned once per
        POSE_ADJUST entry; when no such way exists, or the pair ends off the lane, the
        direct move as before (turning room, staging pose, detour). The turns end within
        1 degree, the legs within 2 mm (heading held on the leg's bearing). Returns (True,
        the tick's result) while it drives the pair, else (False, None)."""
        s = ctx.s
        if self.maneuver is None:
            if self.maneuver_tried or self._staged(ctx, ax, body, lane=lane):
                return False, None
            self.maneuver_tried = True
            room = ctx.turn_clearance()
            if all(math.hypot(ox - body.x, oy - body.y) >= room for ox, oy in obs):
                return False, None   # it can turn where it stands: the direct move
            last = min([u - s.module_width - ctx.face_offset - s.standoff
                        for u in lane_blockers(ax, obs, s.module_width)] + [STAGING_LIMIT])
            spots = []
            extra = 0.0
            while extra <= last + 1e-9:
                spots.append(ax.body_pose(ctx.face_offset, s.standoff + extra))
                extra += 0.005
            if any(all(math.hypot(ox - p.x, oy - p.y) >= room for ox, oy in obs)
                   for p in spots):
                return False, None   # a staging pose with turning room: the direct move
            plan = pair_maneuver(body, spots, obs, s.module_width)
            if not plan:
                return False, None
            self.maneuver = plan
        while self.maneuver:
            kind, a, b, c = self.maneuver[0]
            if kind == "turn":
                err = wrap_angle(a - body.yaw)
                if abs(err) <= math.radians(1.0):
                    self.maneuver.pop(0)
                    continue
                if math.copysign(1.0, err) != b and abs(err) > math.radians(10.0):
                    err += b * 2.0 * math.pi   # the way whose sweep is clear
                ctx.set_cmd(0.0, s.adjust_k_yaw * err, virtual=False)
                return True, None
            heading = math.atan2(b - body.y, a - body.x)
            if c < 0:
                heading = wrap_angle(heading + math.pi)
            left = c * ((a - body.x) * math.cos(body.yaw) + (b - body.y) * math.sin(body.yaw))
            if left <= 0.002:
                self.maneuver.pop(0)
                continue
            v = min(s.near_structure_speed, s.v_max, max(s.adjust_k_pos * left, 0.01))
            w = s.adjust_k_yaw * wrap_angle(heading - body.yaw) if left > 0.01 else 0.0
            ctx.set_cmd(c * v, w, virtual=False)
            return True, None
        if self._can_slide(ctx, ax, body):
            return True, self._slide(ctx, ax, body)
        return False, None   # ended off the lane: the direct move

    @staticmethod
    def _can_slide(ctx: DockingContext, ax: DockAxis, body: Pose2D) -> bool:
        """The body is aligned with the lane well enough to slide in (half the APPROACH
        misalignment bounds: the approach law then never needs a large turn)."""
        s = ctx.s
        _gap, lat, yaw = ax.errors(body, ctx.face_offset)
        return (abs(lat) <= 0.5 * s.misalign_lateral_bound
                and abs(ax.axle_lateral(body)) <= 0.5 * s.misalign_lateral_bound
                and abs(yaw) <= math.radians(0.5 * s.misalign_yaw_bound_deg))

    @classmethod
    def _staged(cls, ctx: DockingContext, ax: DockAxis, body: Pose2D,
                lane: bool = False) -> bool:
        """The body waits on its docking axis beyond the pre-dock pose, aligned well enough
        to slide (a pipelined stage's staging pose, :mod:`smores_assembly.staging`): it
        slides on without stopping at the pre-dock pose (stopping there and starting the
        approach from rest cost ~2 s per dock). At least ``STAGED_CORRECT_MIN`` beyond the
        pre-dock pose and with no flush neighbour beside the lane (``lane`` False), an
        offset up to the APPROACH bounds (lateral; half the heading bound) is taken out on
        the way by the approach law (decay length ``face_offset / approach_k_lateral``,
        2.7 cm by default): a staging module stops a few mm off the axis its parent's
        measured pose defines, and regulating to the pre-dock pose and turning there cost
        ~1 s more per dock (Task 1's arm)."""
        s = ctx.s
        gap, lat, yaw = ax.errors(body, ctx.face_offset)
        if not s.standoff < gap <= s.standoff + STAGED_SLIDE_MAX:
            return False
        if cls._can_slide(ctx, ax, body):
            return True
        return (not lane and gap - s.standoff >= STAGED_CORRECT_MIN
                and abs(lat) <= s.misalign_lateral_bound
                and abs(ax.axle_lateral(body)) <= s.misalign_lateral_bound
                and abs(yaw) <= math.radians(0.5 * s.misalign_yaw_bound_deg))

    def _slide(self, ctx: DockingContext, ax: DockAxis, body: Pose2D) -> Phase | None:
        """Follow the axis towards the face (approach law) until the face gap is down to
        the stand-off -> APPROACH."""
        s = ctx.s
        self.sliding = True
        gap, _lat, _yaw = ax.errors(body, ctx.face_offset)
        if gap <= s.standoff + s.adjust_pos_tolerance:
            return Phase.APPROACH
        v, w, _ = approach_command(body, ctx.face_offset, ax, s, ctx.speed_limit(body, ax),
                                   ctx.lane_heading_bound(ax))
        ctx.set_cmd(v, w)
        return None


class Approach(PhaseStep):
    """Straight approach along the docking axis with the magnets on, until the connection
    (or, without connection feedback, a dwell inside the capture range) -> DOCKED."""

    phase = Phase.APPROACH

    def enter(self, ctx):
        self.target0 = ctx.target_est
        self.bound = ctx.lane_heading_bound(ctx.axis())
        self.hold_t = 0.0
        self.dwell_t = 0.0

    def tick(self, ctx):
        s = ctx.s
        ax = ctx.axis()
        body = ctx.body_virtual()
        gap, lat, yaw = ax.errors(body, ctx.face_offset)
        if (self.target0.distance_to(ctx.target_est) > s.target_moved_bound
                or abs(wrap_angle(self.target0.yaw - ctx.target_est.yaw))
                > math.radians(s.target_moved_yaw_deg)):
            raise TargetMoved(f"target {ctx.spec.parent_module} moved during APPROACH")
        if abs(lat) > s.misalign_lateral_bound or abs(yaw) > math.radians(
                s.misalign_yaw_bound_deg):
            raise Misaligned(f"misaligned during APPROACH: lateral {lat * 1e3:.1f} mm, "
                             f"yaw {math.degrees(yaw):.1f} deg")
        if ctx.elapsed > s.approach_timeout_s:
            raise PhaseTimeout(f"APPROACH took longer than {s.approach_timeout_s} s")
        ctx.capture_errors = ctx.face_errors_now()
        if not s.confirm_with_connections:
            inside = (gap <= s.capture_range and abs(lat) <= s.dock_lateral_tolerance
                      and abs(yaw) <= math.radians(s.dock_yaw_tolerance_deg))
            self.dwell_t = self.dwell_t + ctx.dt if inside else 0.0
            if inside and self.dwell_t >= s.confirm_dwell_s:
                return Phase.DOCKED
        v, w, holding = approach_command(body, ctx.face_offset, ax, s,
                                         min(s.approach_speed, ctx.speed_limit(body, ax)),
                                         self.bound)
        self.hold_t = self.hold_t + ctx.dt if holding else 0.0
        if self.hold_t > s.confirm_timeout_s:
            raise PhaseTimeout(f"no capture {s.confirm_timeout_s} s after reaching the face")
        ctx.set_cmd(v, w)
        return None


class Retry(PhaseStep):
    """Back straight out along the axis (holding the heading) to about the stand-off ->
    POSE_ADJUST."""

    phase = Phase.RETRY

    def tick(self, ctx):
        s = ctx.s
        if ctx.elapsed > s.retry_timeout_s:
            raise FatalTimeout(f"RETRY back-off took longer than {s.retry_timeout_s} s")
        ax = ctx.axis()
        body = ctx.body_virtual()
        gap, _, _ = ax.errors(body, ctx.face_offset)
        if (gap >= s.standoff - 2 * s.adjust_pos_tolerance
                or ctx.elapsed > 0.5 * s.retry_timeout_s):
            return Phase.POSE_ADJUST
        e_yaw = wrap_angle(ax.heading - body.yaw)
        w = s.adjust_k_yaw * e_yaw if abs(e_yaw) < math.radians(30) else 0.0
        ctx.set_cmd(-min(s.near_structure_speed, s.v_max), w)
        return None


class Docked(PhaseStep):
    """Docked; a helper lets go (explicitly unless the connections confirm the dock) and
    backs off ``helper_backoff``."""

    phase = Phase.DOCKED

    def enter(self, ctx):
        self.backoff_from = ctx.body_obs.est if ctx.uses_helper else None
        if ctx.uses_helper and not ctx.s.confirm_with_connections:
            # The fake hardware hands a captured module over by itself (its connections
            # confirm the dock); on real hardware the helper lets go explicitly.
            ctx.send(HelperOp.RELEASE)

    def tick(self, ctx):
        if self.backoff_from is None:
            return None
        h = ctx.body_obs.est
        if h is None or h.distance_to(self.backoff_from) >= ctx.s.helper_backoff:
            self.backoff_from = None
            return None
        ctx.set_cmd(-min(ctx.s.near_structure_speed, ctx.s.v_max), 0.0, virtual=False)
        return None


# ---------------------------------------------------------------- the helper's pick-up flow


class FetchPath(PhaseStep):
    """Helper sub-step: follow the navigation's path towards the pick-up pose; its end, a
    timeout, or coming within ``obstacle_clearance`` of the module -> the side the path
    ends on while it is free (not after a timeout), else the side chosen again, and on with
    :class:`FetchGoto`.
    Each entry follows a path not followed yet, so the start escape
    (:meth:`Escape.at_start`, re-armed per path) looks again."""

    name = "path"

    def tick(self, ctx):
        s, wh = ctx.s, self.wh
        helper, m = ctx.body_obs.est, ctx.module_est
        if wh.escape.at_start(ctx, helper):
            return None
        v, om, finished = track_timed_path(helper, ctx.path, ctx.t, s, s.v_max)
        if not finished and wh.escape.before_turn(ctx, helper, v, om):
            return None
        # Close to the module the direct moves take over (they keep the pick-up
        # clearance and go round it): a path may end right against the module, and
        # following it there at an angle runs a corner into the module. Not before the
        # path's last leg: a wait on the way is the plan's (another module passes the
        # pick-up pose first; random_12_338215987: h0 went on at once, into m0).
        pts = ctx.path.points
        near = (math.hypot(helper.x - m.x, helper.y - m.y) < s.obstacle_clearance
                and ctx.t >= pts[max(0, len(pts) - 2)][0])
        if finished or near or ctx.t > ctx.path.end_time + s.nav_timeout_margin_s:
            # at the path's end (or near the module on its last leg): the side the path was
            # planned to while it is free, else the side chosen again from where the helper
            # is (WaitHelper.tick); a path that ran out of time chooses again (the helper
            # did not get there: the planned side may be the far one)
            _t, ex, ey = pts[-1]
            ctx.path = None
            wh.rechoose(planned_end=(ex, ey) if finished or near else None)
        else:
            ctx.set_cmd(v, om, virtual=False)
        return None


class FetchGoto(PhaseStep):
    """Helper sub-step: direct move to the pick-up pose (``standoff`` in front of the
    chosen module face) -> :class:`FetchApproach` (at once when the helper already stands
    on the pick-up approach line); not there within ``adjust_timeout_s`` -> choose the
    side again."""

    name = "goto"

    def enter(self, ctx):
        self.reg: PoseRegulator | None = None

    def tick(self, ctx):
        s, wh, w = ctx.s, self.wh, ctx.s.module_width
        helper, m = ctx.body_obs.est, ctx.module_est
        if self.reg is None and on_approach_line(wh.axis, helper, 0.5 * w, s, s.standoff,
                                                 -s.capture_range):
            wh.go(ctx, FetchApproach())
            return None
        if self.elapsed > s.adjust_timeout_s:
            # no pick-up pose within the POSE_ADJUST budget: choose the side again
            # from where the helper is now and plan the move afresh
            wh.rechoose()
            return None
        # escape only before a move is planned: the planned detour may legitimately
        # pass a little closer than escape_distance (down to 0.97 x its start
        # distance), and escaping from it again made the helper shuttle for ever at
        # the escape boundary
        obs = ctx.obstacles_for_body() + [(m.x, m.y)]
        if self.reg is None and wh.escape.step(ctx, helper, obs):
            return None
        goal = wh.axis.body_pose(0.5 * w, s.standoff)
        if self.reg is None:
            self.reg = PoseRegulator(goal, detour_waypoints(
                (helper.x, helper.y), (goal.x, goal.y), obs, s.obstacle_clearance,
                touch=ctx.touch_distance(), corner_cut=s.waypoint_tolerance))
        v, om = self.reg.command(helper, s, ctx.speed_limit(helper, wh.axis))
        ctx.set_cmd(v, om, virtual=False)
        if self.reg.done(helper, s):
            wh.go(ctx, FetchApproach())
        return None


class FetchApproach(PhaseStep):
    """Helper sub-step: approach the module face to ``helper_pickup_gap`` -> :class:`Lift`;
    off the axis or too slow -> :class:`FetchGoto`."""

    name = "approach"

    def tick(self, ctx):
        s, wh, w = ctx.s, self.wh, ctx.s.module_width
        helper = ctx.body_obs.est
        gap, lat, yaw = wh.axis.errors(helper, 0.5 * w)
        if abs(lat) > s.misalign_lateral_bound or self.elapsed > s.approach_timeout_s:
            wh.go(ctx, FetchGoto())
            return None
        if gap <= s.helper_pickup_gap:
            wh.go(ctx, Lift())
            return None
        v, om, _ = approach_command(helper, 0.5 * w, wh.axis, s, s.approach_speed)
        if gap <= s.helper_pickup_gap + 0.002:
            v = min(v, s.approach_min_speed)
        ctx.set_cmd(v, om, virtual=False)
        return None


class Lift(PhaseStep):
    """Helper sub-step: send LIFT once; the module's measured pose at the carried pose ->
    NAVIGATE (carrying); not shown within ``lift_timeout_s`` -> RELEASE and choose the side
    again."""

    name = "lift"

    def enter(self, ctx):
        self.sent_t: float | None = None

    def tick(self, ctx):
        s, w = ctx.s, ctx.s.module_width
        helper, m = ctx.body_obs.est, ctx.module_est
        if self.sent_t is None:
            # LIFT once; the carried module then turns to carry_yaw (confirmed below)
            self.sent_t = ctx.t
            ctx.send(HelperOp.LIFT, ctx.carry_yaw)
            return None
        expect = helper.compose(w, 0.0, ctx.carry_yaw)
        if (ctx.t > self.sent_t and m.distance_to(expect) <= s.lift_confirm_tolerance
                and abs(wrap_angle(m.yaw - expect.yaw)) <= math.radians(3.0)):
            ctx.lifted = True
            return Phase.NAVIGATE
        if self.elapsed > s.lift_timeout_s:
            # not lifted: put down whatever may be held and go round again
            ctx.send(HelperOp.RELEASE)
            self.wh.rechoose()
        return None


class WaitHelper(PhaseStep):
    """Wheel-face docks: the helper fetches and lifts the module (sub-steps
    :class:`FetchPath`, :class:`FetchGoto`, :class:`FetchApproach`, :class:`Lift`) ->
    NAVIGATE, carrying it. The helper first waits up to ``path_wait_timeout_s`` for the
    navigation's path (as NAVIGATE does). Each choice of the pick-up side
    (:func:`pickup_axis`) starts with :class:`FetchGoto`, which gives way to
    :class:`FetchPath` whenever a path not followed yet is there; no lift within
    ``helper_timeout_s`` of the phase's start and of the end of the last path ends the
    task."""

    phase = Phase.WAIT_HELPER

    def enter(self, ctx):
        self.escape = Escape()
        self.axis: DockAxis | None = None
        self.sub: PhaseStep | None = None
        self.planned_end: tuple[float, float] | None = None
        self.path_end = -math.inf    # end [s] of the last path given (the timeout's start)

    @property
    def name(self) -> str:  # type: ignore[override]  # PhaseStep.name is a class constant
        return self.sub.name if self.sub is not None else ""

    def rechoose(self, planned_end: tuple[float, float] | None = None) -> None:
        """Choose the pick-up side again at the next tick; ``planned_end`` (``world`` [m]):
        where the navigation's path ended -- its side is kept while it is free
        (:func:`~smores_assembly.docking.control.planned_pickup_axis`)."""
        self.axis = None
        self.planned_end = planned_end

    def go(self, ctx: DockingContext, sub: PhaseStep) -> None:
        """Start sub-step ``sub``."""
        if self.sub is not None:
            self.sub.exit(ctx)
        sub.wh = self  # type: ignore[attr-defined]  # the helper sub-steps' back link
        sub.elapsed = 0.0  # type: ignore[attr-defined]
        self.sub = sub
        sub.enter(ctx)

    def tick(self, ctx):
        s = ctx.s
        if ctx.path is not None:
            self.path_end = ctx.path.end_time
        # the budget runs from the later of the phase's start and the end of the last path
        # the navigation gave the helper: a planned wait is not the helper's delay (random
        # 50, stage 3: the stage's paths waited 126 s for a carried pair; h1 failed at 120 s).
        # A helper that keeps lagging behind its replanned paths is bounded by the
        # executive's stage timeout.
        if ctx.elapsed > s.helper_timeout_s and ctx.t - self.path_end > s.helper_timeout_s:
            raise FatalTimeout(f"helper {ctx.spec.helper} did not pick up "
                               f"{ctx.spec.module} within {s.helper_timeout_s} s")
        m, helper = ctx.module_est, ctx.body_obs.est
        if m is None or helper is None:
            return None
        if self.sub is None and ctx.path is None and not ctx.no_path \
                and ctx.elapsed < s.path_wait_timeout_s:
            # the navigation's path comes a tick or two after the stage starts: a direct
            # move begun meanwhile ignored it (bench_targets random_4_130174667: h0 drove
            # straight, in reverse, across the row m1's path used: contact)
            return None
        if self.axis is None:
            others = ctx.obstacles_for_body()
            planned = None if self.planned_end is None else planned_pickup_axis(
                m, self.planned_end, others, s.module_width, s.standoff)
            self.axis = planned or pickup_axis(m, helper, others, s.module_width, s.standoff)
            self.planned_end = None
            self.go(ctx, FetchGoto())
        self.sub.elapsed += ctx.dt
        if isinstance(self.sub, FetchGoto) and ctx.path is not None:
            # a path not followed yet (FetchPath drops the one it ends): the navigation
            # planned it against every other module's path, a direct move is not
            self.go(ctx, FetchPath())
        return self.sub.tick(ctx)

    def exit(self, ctx):
        if self.sub is not None:
            self.sub.exit(ctx)


PHASE_STEPS = {Phase.WAIT_HELPER: WaitHelper, Phase.NAVIGATE: Navigate,
               Phase.POSE_ADJUST: PoseAdjust, Phase.APPROACH: Approach, Phase.RETRY: Retry,
               Phase.DOCKED: Docked}


# --------------------------------------------------------------------------------------------
# the task


class DockingTask:
    """Phase machine of one docking action (see the module docstring).

    Args:
        spec: the action.
        settings: tunables (shared object: parameter changes apply at the next tick).

    Each phase is a :class:`PhaseStep` object (enter / tick / exit) over a shared
    :class:`DockingContext`; a phase that cannot reach its goal raises a typed
    :class:`DockingFailure`, mapped to an :class:`ErrorCode` in one place
    (:meth:`_on_failure`), where the one retry loop lives. A wheel-face dock without a
    helper starts in FAILED with ``ErrorCode.NO_HELPER``.

    WAIT_HELPER (wheel-face docks, :class:`WaitHelper`): the helper waits up to
    ``path_wait_timeout_s`` for its path and follows it if one is given (until its end,
    or until it comes within ``obstacle_clearance`` of the module on the path's last leg),
    picks the module face whose pick-up pose (helper TOP face towards it) is
    nearest and clear of other modules (:func:`pickup_axis`), regulates to ``standoff`` in
    front of it, approaches to ``helper_pickup_gap``, sends ``LIFT`` once and waits until
    the module's measured pose is the carried pose; a LIFT that does not show within
    ``lift_timeout_s`` is retried, and a pick-up pose not reached within
    ``adjust_timeout_s`` is chosen again.

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
        self.ctx = DockingContext(spec, settings)
        self.phase = Phase.IDLE
        self.step: PhaseStep = PhaseStep()
        self.retries = 0
        self.error = ErrorCode.NONE
        self.message = ""
        self.durations: dict[Phase, float] = {p: 0.0 for p in Phase}
        self._t_last: float | None = None
        self._stall = StallMonitor()
        self.raised_to_min_speed = False   # a stall was noticed: commands raised
        if spec.child_face.is_wheel and not spec.helper:
            self._fail(ErrorCode.NO_HELPER,
                       f"{spec.module}: {spec.child_face.value} is a wheel face: the dock needs "
                       "a helping module and none was given")

    # ----------------------------------------------------------------------------- state
    @property
    def driven(self) -> str:
        """The module whose wheels this task drives (the helper for wheel-face docks)."""
        return self.ctx.driven

    @property
    def uses_helper(self) -> bool:
        """True for a helper-carried (wheel-face) dock."""
        return self.ctx.uses_helper

    @property
    def body_obs(self) -> PoseObserver:
        """The driven body's pose observer."""
        return self.ctx.body_obs

    @property
    def target_est(self) -> Pose2D | None:
        """The filtered pose of the target (parent) module."""
        return self.ctx.target_est

    @property
    def module_est(self) -> Pose2D | None:
        """The filtered pose of the docking module."""
        return self.ctx.module_est

    @property
    def done(self) -> bool:
        """True in DOCKED or FAILED."""
        return self.phase in (Phase.DOCKED, Phase.FAILED)

    @property
    def helper_free(self) -> bool:
        """True when this task no longer drives its helper (done, back-off finished)."""
        return self.done and getattr(self.step, "backoff_from", None) is None

    @property
    def effective_phase(self) -> Phase:
        """The phase, or the paused one when PAUSED."""
        return self.step.phase if self.phase is Phase.PAUSED else self.phase

    @property
    def step_name(self) -> str:
        """The helper sub-step within WAIT_HELPER ("path", "goto", "approach", "lift"),
        else ""."""
        return self.step.name

    def axis(self) -> DockAxis | None:
        """The docking axis from the current target estimate (None before one is known)."""
        return self.ctx.axis()

    # ----------------------------------------------------------------------------- transitions
    def _go(self, phase: Phase) -> None:
        self.step.exit(self.ctx)
        self.phase = phase
        self.ctx.elapsed = 0.0
        self.step = PHASE_STEPS[phase]()
        self.step.enter(self.ctx)
        if phase is Phase.DOCKED:
            self.error, self.message = ErrorCode.NONE, ""

    def _fail(self, code: ErrorCode, message: str) -> None:
        self.step.exit(self.ctx)
        self.step = PhaseStep()
        self.phase = Phase.FAILED
        self.error = code
        self.message = message
        self.ctx.elapsed = 0.0

    def _on_failure(self, exc: DockingFailure) -> None:
        """The one place where failures become result codes; the one retry loop."""
        if not exc.retryable:
            self._fail(exc.code, exc.reason)
            return
        if self.retries >= self.s.max_retries:
            # ``retries`` stays the number made (the status, the report and this message
            # agree: it read "3 retries exhausted" beside "retry 4" in the progress line
            # and the report, fresh-user finding)
            self._fail(ErrorCode.RETRIES_EXHAUSTED,
                       f"{self.retries} retries exhausted; last failure "
                       f"({exc.code.name}): {exc.reason}")
            return
        self.retries += 1
        self.message = f"retry {self.retries}: {exc.reason}"
        self._go(Phase.RETRY)

    def path_unavailable(self) -> None:
        """The navigation says there will be no path (e.g. an empty Path after a planning
        failure): NAVIGATE ends at once and the body moves directly."""
        self.ctx.no_path = True

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
        ctx = self.ctx
        dt = 0.0 if self._t_last is None else max(0.0, min(0.5, t - self._t_last))
        self._t_last = t
        ctx.t, ctx.dt, ctx.connected = t, dt, connected
        if path is not None:
            ctx.path = path
            ctx.no_path = False
        prev_cmd = ctx.cmd.get(self.driven, (0.0, 0.0))
        ctx.body_obs.predict(prev_cmd[0], prev_cmd[1], dt, t)
        ctx.cmd = {self.spec.module: (0.0, 0.0), self.driven: (0.0, 0.0)}
        ctx.helper_out = []
        ctx.obstacles = list(obstacles)
        ctx.samples = samples

        if self.phase is Phase.IDLE:
            self._go(Phase.WAIT_HELPER if self.uses_helper else Phase.NAVIGATE)
        if connected and self.s.confirm_with_connections and not self.done:
            self._go(Phase.DOCKED)

        stale = [m for m in self._needed() if not self._fresh(samples.get(m), t)]
        if stale and not self.done:
            self.phase = Phase.PAUSED
            self.message = f"pose stale: {', '.join(stale)}"
            self.durations[Phase.PAUSED] += dt
            self._stall.clear()
            return self._output()
        if self.phase is Phase.PAUSED:
            # Resume where the phase stopped: the regulator (its detour waypoints already
            # passed, its sub-step), sub-step timers and the pose observer are all kept --
            # short track losses come every second or so on a loaded machine, and
            # re-planning on each one made the body start every detour over (it never got
            # round). The observer predicted the body at rest during the pause; a body
            # that was moved meanwhile by more than its reset distance re-initialises it.
            self.phase = self.step.phase
            self.message = ""

        if not self.done:
            self.durations[self.phase] += dt
            ctx.elapsed += dt
        self._update_estimates(samples)
        try:
            if not self.done:
                self._check_stall(t, prev_cmd, samples.get(self.driven))
            nxt = self.step.tick(ctx)
        except DockingFailure as exc:
            self._on_failure(exc)
        else:
            if nxt is not None:
                self._go(nxt)
        if self.raised_to_min_speed and self.driven in ctx.cmd:
            ctx.cmd[self.driven] = raise_to_min_wheel_speed(*ctx.cmd[self.driven], self.s)
        return self._output()

    def _check_stall(self, t: float, applied: tuple[float, float],
                     sample: PoseSample | None) -> None:
        """Wheel deadband (issue: real wheels do not turn below some speed): a stall of slow
        commands raises every later command to ``min_wheel_speed``; a stall at that speed
        (or with ``min_wheel_speed`` 0) is a :class:`Stalled` failure."""
        s = self.s
        can_raise = s.min_wheel_speed > 0 and not self.raised_to_min_speed
        pose = sample.pose if sample is not None and sample.tracked else None
        if not self._stall.update(t, applied, pose, s, slow_only=can_raise):
            return
        if can_raise:
            self.raised_to_min_speed = True
            self.message = (f"stall: {self.driven} did not move at slow commands; wheel "
                            f"commands raised to {s.min_wheel_speed * 1e3:.1f} mm/s")
            return
        if s.min_wheel_speed > 0:
            why = (f"with its wheels commanded at >= {s.min_wheel_speed * 1e3:.1f} mm/s "
                   "(min_wheel_speed below the wheels' deadband, or the body is held)")
        else:
            why = "under a commanded motion (min_wheel_speed is 0: commands are not raised)"
        raise Stalled(f"stalled: {self.driven} did not move over {s.stall_window_s} s {why}")

    def _fresh(self, sample: PoseSample | None, t: float) -> bool:
        return (sample is not None and sample.tracked
                and t - sample.stamp <= self.s.stale_timeout_s)

    def _update_estimates(self, samples: Mapping[str, PoseSample]) -> None:
        s, ctx = self.s, self.ctx
        for name, mid in (("target_est", self.spec.parent_module),
                          ("module_est", self.spec.module)):
            smp = samples.get(mid)
            if smp is None or not smp.tracked:
                continue
            z, e = smp.pose, getattr(ctx, name)
            if (e is None or e.distance_to(z) > s.target_jump
                    or abs(wrap_angle(z.yaw - e.yaw)) > math.radians(s.target_moved_yaw_deg)
                    or (name == "module_est" and ctx.lifted)):
                setattr(ctx, name, z)
            else:
                a = s.target_filter_alpha
                setattr(ctx, name, Pose2D(e.x + a * (z.x - e.x), e.y + a * (z.y - e.y),
                                          wrap_angle(e.yaw + a * wrap_angle(z.yaw - e.yaw))))
        smp = samples.get(self.driven)
        if smp is not None and smp.tracked:
            ctx.body_obs.correct(smp)

    # ----------------------------------------------------------------------------- output
    def magnet_faces(self) -> dict[str, frozenset]:
        """Faces this task wants on: the child and parent faces from APPROACH on (kept on
        while DOCKED and while paused in APPROACH)."""
        if self.effective_phase in (Phase.APPROACH, Phase.DOCKED):
            return {self.spec.module: frozenset({self.spec.child_face}),
                    self.spec.parent_module: frozenset({self.spec.parent_face})}
        return {}

    def status(self) -> TaskStatus:
        """The current status: face errors from the latest estimates (NaN while unknown);
        once DOCKED, the errors at capture (the last APPROACH control tick, not the last
        status sample, which at ``status_rate_hz`` can be a few mm earlier)."""
        ctx = self.ctx
        if self.phase is Phase.DOCKED and ctx.capture_errors is not None:
            gap, lat, yaw = ctx.capture_errors
        else:
            gap, lat, yaw = ctx.face_errors_now()
        return TaskStatus(
            module=self.spec.module, target_module=self.spec.parent_module,
            face_pair=f"{self.spec.child_face.value}->{self.spec.parent_module}."
                      f"{self.spec.parent_face.value}",
            phase=self.phase, face_gap_mm=gap * 1e3, lateral_error_mm=lat * 1e3,
            yaw_error_deg=math.degrees(yaw), retries=self.retries,
            phase_elapsed_s=ctx.elapsed, phase_durations=dict(self.durations),
            error_code=self.error, message=self.message)

    def _output(self) -> TaskOutput:
        ctx = self.ctx
        if self.phase in (Phase.PAUSED, Phase.FAILED, Phase.IDLE):
            ctx.cmd = {k: (0.0, 0.0) for k in ctx.cmd}
        return TaskOutput(dict(ctx.cmd), self.magnet_faces(), list(ctx.helper_out),
                          self.status())


class PathFollower:
    """Follows a timed path of a module that has no docking action in the active stage
    (moved aside by the navigation, or driving to its staging pose in a pipelined stage)
    and stops at its end (timed pure pursuit, forward only); with ``final_yaw`` [rad] it
    then regulates to the path's end point with that heading (turn-drive-turn within the
    POSE_ADJUST tolerances: a staging pose, so that the module's stage starts on its
    docking axis).

    A module that starts closer than ``escape_distance`` to another (flush between
    neighbours) first drives straight away from them (:class:`Escape`), as a docking
    module's NAVIGATE does: turning in place towards the path there swept its corners into
    both neighbours (fresh-user finding: a module moved aside from between two flush
    modules, 0.49 mm contacts). ``escape``: the escape state of the module's previous
    follower (a new path of the same stage must not restart the escape halfway along).
    Along the path, a turn in place or on an arc of radius under one module width whose sweep
    (that turn's, :meth:`_turn_clear`) is not clear of the squares of the standing modules near
    the body first drives straight to where it can turn, and on until there (``turn_escape``, as
    NAVIGATE's :meth:`Escape.before_turn`): turning while it crept on, a follower swept a corner
    into a module beside its start cell (random 50 seed 0, stage 5: h2, moved aside after its
    back-off, into m14 in the structure, 0.49 mm, blocked; m29 then ran into h2 and its docking
    failed). Only modules that have stood still (within :data:`STILL_TOLERANCE`, turns in place
    included) for :data:`STILL_FOR_S` count: moving ones are the plan's to keep apart
    (escaping from one that came by took the body off its path's timing into a helper's way).
    """

    def __init__(self, module: str, path: TimedPath, settings: DockingSettings,
                 final_yaw: float | None = None, escape: Escape | None = None,
                 previous: "PathFollower | None" = None):
        self.module = module
        self.path = path
        self.s = settings
        self.finished = False
        self.final_yaw = final_yaw
        self.reg: PoseRegulator | None = None
        self.obs = PoseObserver(settings.filter_alpha)
        self.escape = escape if escape is not None else Escape()
        # before a turn whose sweep is not clear; with the follower's own record of the
        # modules seen standing (when ``tick`` is given no shared one): both kept from the
        # body's previous follower (a new path right before a turn re-learnt who stands
        # and turned unprotected meanwhile)
        self.turn_escape: Escape = (previous.turn_escape if previous is not None
                                    and not previous.finished else Escape())
        # made at the first tick given no shared record (a follower fed by its docking
        # controller's shared tracker never needs one)
        self.standing: StandingTracker | None = (previous.standing if previous is not None
                                                 else None)
        self._escape_cut = False   # an escape cut short (:meth:`_drives_into`) this turn
        self._cmd = (0.0, 0.0)
        self._t: float | None = None
        self.turning = False   # the last tick's command turned in place

    def tick(self, t: float, sample: PoseSample | None,
             obstacles: Sequence[tuple[float, float]] = (),
             gate: TurnGate | None = None,
             samples: Mapping[str, PoseSample] | None = None,
             standing: StandingTracker | None = None) -> tuple[float, float]:
        """``(v, w)`` for this tick; zero when stale or finished. ``obstacles``: centres
        [m, world frame] of the other modules near this one (for the escape at the start).

        With ``gate`` (the turns in place already granted this tick, :class:`TurnGate`)
        a turn in place holds still for the tick when it would overlap a granted one. A
        turn to the staging yaw also waits, as long as it takes, while its sweep is not
        clear of the squares of ``samples`` (every tracked module's latest pose;
        :func:`~smores_assembly.docking.control.turn_sweep_clear`), judged when the turn
        starts: a neighbour that has just turned may have swung a corner into it
        (``test_turn_gate``; in random 100 seed 0 the staging m63 turned into m76, 0.105 m
        apart, after m76 had turned -- there on its path's dwell, which only
        ``nav_turn_min_distance`` addresses). The docking task takes the module over at
        its stage. A path's turn is not held for the squares it may come near: the
        navigation's plan relies on its timing (held, a moved-aside h2 lagged its path and
        a docking module drove into it, random 50 seed 0) -- only, as every follower turn
        in place, while its next ``BOXED_TURN_LOOKAHEAD_S`` would bring a corner onto a
        module's square, standing or moving (:meth:`_boxed_turn_clear`; with no time limit:
        a body boxed in waits until the scene changes, or the navigation's replan or the
        stage's timeout ends it). Instead, where its sweep would touch a standing module's
        square (``samples``; who stands:
        ``standing``, fed by the caller with every module each tick, else the follower's
        own :class:`StandingTracker` fed with ``samples`` here), the body first drives
        straight to where it can turn (``turn_escape``, class docstring), the direction
        judged against every module near (a module that has just stopped counts for
        where to go, not for whether: judged against standing ones only, m26 backed into
        m23, which had just stopped, comb 5 x 6 at 38.08 s)."""
        self._cmd = self._command(t, sample, obstacles)
        v, w = self._cmd
        was_turning, self.turning = self.turning, False
        if standing is None and samples is not None:
            if self.standing is None:
                self.standing = StandingTracker()
            standing = self.standing
            standing.update(t, samples)
        if (sample is None or not sample.tracked or t - sample.stamp > self.s.stale_timeout_s
                or (self.finished and self.final_yaw is None)):
            # stopped (_command): no escape drives on a pose that does not change
            self.turn_escape.sign, self.turn_escape.room = 0.0, None
            return self._cmd
        pose = sample.pose
        tight = turns_in_place(v, w, 2.0 * self.s.module_width)
        if not tight and not self.turn_escape.sign:
            self._escape_cut = False   # the turn an escape was cut short for is over
        if self.reg is None and samples is not None and not self._escape_cut and (
                self.turn_escape.sign or tight):
            # a path's turn (in place or on a tight arc) whose sweep would touch a standing
            # module: straight to where the body can turn first, and on until there (as a
            # docking module's NAVIGATE, Escape.before_turn). Moving modules are the plan's
            # to keep apart: escaping from one that came by took the body off its timing
            # into a helper's way (bench_targets random_7_357522694).
            still = (standing.standing_near(t, samples, pose, self.module)
                     if standing is not None else [])
            if self.turn_escape.sign or not self._turn_clear(t, pose, still):
                near = squares_near(samples, pose, self.module)
                cmd = self.turn_escape.command(self.s, pose, [(q.x, q.y) for q in near])
                if cmd is not None and cmd[0] != 0.0 and self._drives_into(pose, cmd[0], near):
                    # a module where the escape drives (a follower behind on the same
                    # leg: the fresh review's convoy scene, where the escape pushed into
                    # it for 5 s): no escape for this turn, the path's command goes on
                    self.turn_escape.sign, self.turn_escape.room = 0.0, None
                    self._escape_cut, cmd = True, None
                if cmd is not None:
                    # boxed in, Escape's turn towards its best line is a turn in place like
                    # any other: the guard and the gate below (random 100 seed 0, 76.39 s:
                    # m63, boxed in between m75 and m41, turned its corner into m75)
                    self._cmd = v, w = cmd
        if (samples is not None and turns_in_place(v, w, self.s.module_width)
                and not self._boxed_turn_clear(pose, w, samples)):
            # the last guard of any turn in place (the path's, the start or turn escape's
            # when boxed in), before the gate (a held body must not take the gate's disc
            # and hold its neighbours' turns, the fresh review): not into a module's square
            # (a fresh user's cluster, 1 mm gaps: m0 boxed in between m2 and m4 turned into
            # the root m1 beside it, 0.49 mm at 2.9 s; after its start escape, its path's
            # turn 0.106 m from m1, whose escape had no move, 0.48 mm at 6.3 s)
            self._cmd = (0.0, 0.0)
            return self._cmd
        if gate is None or not turns_in_place(v, w, self.s.module_width):
            return self._cmd
        blocked = (self.reg is not None and not was_turning and samples is not None
                   and not turn_sweep_clear(pose, squares_near(samples, pose, self.module),
                                            self.s.module_width))
        if not blocked and gate.may_turn(pose.x, pose.y):
            self.turning = True
        else:
            self._cmd = (0.0, 0.0)
        return self._cmd

    def _boxed_turn_clear(self, pose: Pose2D, w: float,
                          samples: Mapping[str, PoseSample]) -> bool:
        """True when the next :data:`BOXED_TURN_LOOKAHEAD_S` of a turn in place at ``w``
        [rad/s] from ``pose`` (``world``) keeps the body's corners off the square of every
        module of ``samples`` near it (``turn_partial_clear``, no margin: a boxed-in body
        has none to spare). An escape boxed in along its heading turns towards its line
        of best clearance judged by centres only, and swept corners into a module beside
        it 1 mm away."""
        return turn_partial_clear(pose, w * BOXED_TURN_LOOKAHEAD_S,
                                  squares_near(samples, pose, self.module),
                                  self.s.module_width, margin=0.0)

    def _drives_into(self, pose: Pose2D, v: float, squares: Sequence[Pose2D]) -> bool:
        """True when driving straight ``ESCAPE_LOOKAHEAD`` [m] on the way ``v`` [m/s]
        points from ``pose`` (``world``) leaves less than ``ESCAPE_GAP`` [m] between the
        body's square and one of ``squares`` (``square_overlap``'s separating bound)."""
        p = pose.compose(math.copysign(ESCAPE_LOOKAHEAD, v), 0.0)
        return any(square_overlap((p.x, p.y, p.yaw), (q.x, q.y, q.yaw), self.s.module_width)
                   > -ESCAPE_GAP for q in squares)

    def _turn_clear(self, t: float, pose: Pose2D, squares: Sequence[Pose2D]) -> bool:
        """True when the path's turn at ``pose`` (``world``), towards its reference
        ``nav_lookahead_s`` after ``t`` [s], overlaps none of ``squares``: the partial
        sweep of that turn (:func:`~smores_assembly.docking.control.turn_partial_clear`;
        with the reference under 1 cm away, the full circle's), both with ``TURN_MARGIN``
        (with none, bodies creeping on while they turned touched: seeds 72 and 353 of
        ``test_a_follower_turning_beside_a_module_keeps_off_it``). Not the full circle
        for every turn: an escape for a turn that would not touch lags the body's path."""
        rx, ry = self.path.reference(min(t + self.s.nav_lookahead_s, self.path.end_time))
        if math.hypot(rx - pose.x, ry - pose.y) < 0.01:
            return turn_sweep_clear(pose, squares, self.s.module_width)
        turn = wrap_angle(math.atan2(ry - pose.y, rx - pose.x) - pose.yaw)
        return turn_partial_clear(pose, turn, squares, self.s.module_width)

    def _command(self, t: float, sample: PoseSample | None,
                 obstacles: Sequence[tuple[float, float]]) -> tuple[float, float]:
        dt = 0.0 if self._t is None else max(0.0, min(0.5, t - self._t))
        self._t = t
        self.obs.predict(*self._cmd, dt, t)
        if ((self.finished and self.final_yaw is None) or sample is None
                or not sample.tracked or t - sample.stamp > self.s.stale_timeout_s):
            self._cmd = (0.0, 0.0)
            return self._cmd
        pose = self.obs.correct(sample)
        if not self.escape.was_clear:
            cmd = self.escape.command(self.s, pose, obstacles)
            if cmd is not None:
                self._cmd = cmd
                return self._cmd
            self.escape.was_clear = True
        if not self.finished and self.escape.holds_at_start(self.path, t, self.s):
            self._cmd = (0.0, 0.0)   # where the escape left it, until the path leaves
            return self._cmd
        if not self.finished:
            v, w, fin = track_timed_path(pose, self.path, t, self.s, self.s.v_max)
            self.finished = fin
            if not fin:
                self._cmd = saturate(v, w, self.s)
                return self._cmd
        if self.final_yaw is None:
            self._cmd = (0.0, 0.0)
            return self._cmd
        if self.reg is None:
            ex, ey = self.path.end
            self.reg = PoseRegulator(Pose2D(ex, ey, self.final_yaw))
        if self.reg.done(pose, self.s):
            self.final_yaw = None  # there: stop
            self._cmd = (0.0, 0.0)
            return self._cmd
        self._cmd = saturate(*self.reg.command(pose, self.s, self.s.v_max), self.s)
        return self._cmd


def follower_order(followers: Mapping[str, PathFollower]) -> list[str]:
    """The order in which one controller ticks its followers through a :class:`TurnGate`:
    those that turned in place last tick first (a turn once started goes on), the others
    in ``followers``' order."""
    return sorted(followers, key=lambda m: not followers[m].turning)
