"""The undocking phase machine of a reconfiguration: one :class:`UndockTask` per undocking
action (no ROS imports).

Phases (:class:`smores_assembly.vocabulary.Phase`)::

    IDLE -> UNDOCK -> NAVIGATE -> UNDOCKED
    any active phase -> PAUSED (the module's pose is stale: wheels stopped) -> same phase
    a timeout, or a connection that does not go -> FAILED (error code + message)

* **UNDOCK**: the magnets of both faces of the connection are switched off
  (:attr:`TaskOutput.magnets_off`); the module waits until the connection is gone --
  confirmed by the hardware (``confirm_with_connections``) or, on real modules, after
  ``confirm_dwell_s`` -- then backs off straight along its heading (forward or in reverse,
  the plan's ``direction``) by ``distance``, holding the line (lateral and heading
  correction, :func:`line_command`). On real modules the back-off itself confirms the
  release: the module's face must then be at least half the back-off away from the face it
  was docked to (measured), else the undock fails ("still attached").
* **NAVIGATE**: turn in place towards the parking pose and drive there
  (:class:`~smores_assembly.docking.control.PoseRegulator`, the POSE_ADJUST law).
* **UNDOCKED**: parked; nothing is driven any more.

Timeouts: the release (``confirm_timeout_s``), the back-off (``retry_timeout_s``), the drive
to the parking pose (``adjust_timeout_s``). Paper context: reconfiguration by disassembly
(``smores_assembly.reconfigure``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from smores_assembly.docking.control import (DockingSettings, PoseRegulator, real_command,
                                             saturate, virtual_pose)
from smores_assembly.docking.task import PoseObserver, PoseSample, TaskOutput, TaskStatus
from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D, face_center, wrap_angle
from smores_assembly.vocabulary import ErrorCode, Phase


@dataclass(frozen=True)
class UndockSpec:
    """One undocking action: ``module`` leaves ``from_module`` (faces ``face`` /
    ``from_face``), backs off ``distance`` [m] along its heading (``direction`` +1 forward,
    -1 reverse) and parks at ``park`` (``world``)."""

    module: str
    face: Face
    from_module: str
    from_face: Face
    direction: int
    distance: float
    park: Pose2D

    def __post_init__(self):
        for name in ("module", "from_module"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise InputError(f"{name}: module id must be a non-empty string, got {v!r}")
        if self.module == self.from_module:
            raise InputError(f"from_module: {self.from_module!r} equals module")
        object.__setattr__(self, "face", Face.parse(self.face, "face"))
        object.__setattr__(self, "from_face", Face.parse(self.from_face, "from_face"))
        if self.direction not in (1, -1):
            raise InputError(f"direction: must be +1 or -1, got {self.direction!r}")
        if not (math.isfinite(self.distance) and self.distance > 0.0):
            raise InputError(f"distance: must be a positive number of metres, "
                             f"got {self.distance!r}")

    @property
    def driven(self) -> str:
        """The module the task drives (the undocking module itself)."""
        return self.module


def line_command(pose: Pose2D, start: Pose2D, direction: int, distance: float,
                 s: DockingSettings, speed: float) -> tuple[float, float, float]:
    """Drive straight along ``start``'s heading (``direction`` +1 forward, -1 reverse) to
    ``distance`` [m] from ``start``, steering back onto the line.

    Returns:
        ``(v, w, remaining)``: the body command (saturated) and the distance still to go
        [m] (negative once past the end).
    """
    reverse = direction < 0
    c, sn = math.cos(start.yaw), math.sin(start.yaw)
    dx, dy = pose.x - start.x, pose.y - start.y
    progress = direction * (dx * c + dy * sn)
    remaining = distance - progress
    travel = virtual_pose(Pose2D(start.x, start.y, start.yaw), reverse).yaw
    body = virtual_pose(pose, reverse)
    # lateral error to the left of the travel direction, heading error
    lateral = -dx * math.sin(travel) + dy * math.cos(travel)
    e_yaw = wrap_angle(body.yaw - travel)
    v = max(0.0, min(speed, s.adjust_k_pos * remaining)) if remaining > 0 else 0.0
    w = -s.approach_k_yaw * e_yaw - s.approach_k_lateral * lateral
    return (*saturate(*real_command(v, w, reverse), s), remaining)


class UndockTask:
    """Phase machine of one undocking action (see the module docstring).

    The interface is :class:`~smores_assembly.docking.task.DockingTask`'s (``tick``,
    ``status``, ``cancel``, ``magnet_faces``, ``phase``, ``done``, ``driven``), so the
    docking controller runs both side by side.
    """

    uses_helper = False
    helper_free = True

    def __init__(self, spec: UndockSpec, settings: DockingSettings):
        settings.validate()
        self.spec = spec
        self.s = settings
        self.phase = Phase.IDLE
        self._resume = Phase.UNDOCK
        self.error = ErrorCode.NONE
        self.message = ""
        self.retries = 0
        self.durations: dict[Phase, float] = {p: 0.0 for p in Phase}
        self._t_last: float | None = None
        self._t_phase = 0.0
        self._released_at: float | None = None
        self._start: Pose2D | None = None        # pose when the back-off began
        self._backing = False
        self._reg = PoseRegulator(spec.park)
        self._obs = PoseObserver(settings.filter_alpha)
        self._cmd = (0.0, 0.0)
        self._pose: Pose2D | None = None
        self._from_pose: Pose2D | None = None

    @property
    def driven(self) -> str:
        """The module this task drives."""
        return self.spec.module

    @property
    def done(self) -> bool:
        """True once UNDOCKED or FAILED."""
        return self.phase in (Phase.UNDOCKED, Phase.FAILED)

    def cancel(self, message: str = "cancelled") -> None:
        """Stop the task: FAILED with ``ErrorCode.CANCELLED`` (no-op once done)."""
        if not self.done:
            self._fail(ErrorCode.CANCELLED, message)

    def path_unavailable(self) -> None:
        """Undocks drive without a planned path (interface of ``DockingTask``)."""

    def _fail(self, code: ErrorCode, message: str) -> None:
        self.phase, self.error, self.message = Phase.FAILED, code, message
        self._cmd = (0.0, 0.0)

    def _go(self, phase: Phase, t: float) -> None:
        self.phase = phase
        self._resume = phase
        self._t_phase = 0.0

    # ----------------------------------------------------------------------------- main
    def tick(self, t: float, samples: Mapping[str, PoseSample], connected: bool = True,
             path=None, obstacles: Sequence[tuple[float, float]] = ()) -> TaskOutput:
        """Advance to time ``t`` [s].

        Args:
            samples: latest pose samples by module id.
            connected: the hardware still reports the connection (used with
                ``settings.confirm_with_connections``).
            path, obstacles: unused (interface of ``DockingTask.tick``).
        """
        dt = 0.0 if self._t_last is None else max(0.0, min(0.5, t - self._t_last))
        self._t_last = t
        self._obs.predict(self._cmd[0], self._cmd[1], dt, t)
        self._cmd = (0.0, 0.0)
        if self.phase is Phase.IDLE:
            self._go(Phase.UNDOCK, t)
        if self.done:
            return self._output()
        smp = samples.get(self.spec.module)
        other = samples.get(self.spec.from_module)
        if other is not None and other.tracked:
            self._from_pose = other.pose
        if smp is None or not smp.tracked or t - smp.stamp > self.s.stale_timeout_s:
            self.phase = Phase.PAUSED
            self.message = f"pose stale: {self.spec.module}"
            self.durations[Phase.PAUSED] += dt
            return self._output()
        self.phase = self._resume
        self.message = ""
        self._pose = self._obs.correct(smp)
        self.durations[self.phase] += dt
        self._t_phase += dt
        if self.phase is Phase.UNDOCK:
            self._undock(t, connected)
        elif self.phase is Phase.NAVIGATE:
            self._park()
        return self._output()

    def _undock(self, t: float, connected: bool) -> None:
        s, pose = self.s, self._pose
        assert pose is not None
        if not self._backing:
            if self._released_at is None:
                self._released_at = t
            gone = (not connected) if s.confirm_with_connections else (
                t - self._released_at >= s.confirm_dwell_s)
            if not gone:
                if t - self._released_at > s.confirm_timeout_s:
                    self._fail(ErrorCode.TIMEOUT,
                               f"undock: the connection {self.spec.module}."
                               f"{self.spec.face.value}-{self.spec.from_module}."
                               f"{self.spec.from_face.value} is still reported "
                               f"{s.confirm_timeout_s:g} s after the magnets went off")
                return
            self._backing = True
            self._start = pose
            self._t_phase = 0.0
        assert self._start is not None
        v, w, remaining = line_command(pose, self._start, self.spec.direction,
                                       self.spec.distance, s, s.approach_speed * 2.0)
        if remaining <= s.adjust_pos_tolerance:
            if not s.confirm_with_connections and not self._separated(pose):
                self._fail(ErrorCode.TARGET_MOVED,
                           f"undock: {self.spec.module} is still attached to "
                           f"{self.spec.from_module} after backing off (it moved along)")
                return
            self._go(Phase.NAVIGATE, t)
            return
        if self._t_phase > s.retry_timeout_s:
            self._fail(ErrorCode.TIMEOUT, f"undock: back-off not done after "
                                          f"{s.retry_timeout_s:g} s ({remaining * 1e3:.0f} mm "
                                          f"to go)")
            return
        self._cmd = (v, w)

    def _separated(self, pose: Pose2D) -> bool:
        if self._from_pose is None:
            return True
        a = face_center(pose, self.spec.face, self.s.module_width)
        b = face_center(self._from_pose, self.spec.from_face, self.s.module_width)
        return math.hypot(a[0] - b[0], a[1] - b[1]) >= 0.5 * self.spec.distance

    def _park(self) -> None:
        s, pose = self.s, self._pose
        assert pose is not None
        if self._reg.done(pose, s):
            self._go(Phase.UNDOCKED, 0.0)
            return
        if self._t_phase > s.adjust_timeout_s:
            self._fail(ErrorCode.TIMEOUT, f"undock: parking pose not reached after "
                                          f"{s.adjust_timeout_s:g} s "
                                          f"({pose.distance_to(self.spec.park) * 1e3:.0f} mm "
                                          f"away)")
            return
        self._cmd = saturate(*self._reg.command(pose, s, s.v_max), s)

    # ----------------------------------------------------------------------------- output
    def magnet_faces(self) -> dict[str, frozenset]:
        """Faces this task wants on: none."""
        return {}

    def magnets_off(self) -> dict[str, frozenset]:
        """Faces this task wants off: both faces of the connection, until it is done."""
        if self.phase is Phase.FAILED and self.error is ErrorCode.CANCELLED:
            return {}
        return {self.spec.module: frozenset({self.spec.face}),
                self.spec.from_module: frozenset({self.spec.from_face})}

    def status(self) -> TaskStatus:
        """The current status; ``face_gap_mm`` is the measured distance between the two
        face centres (NaN while unknown), the other errors are NaN."""
        gap = math.nan
        if self._pose is not None and self._from_pose is not None:
            a = face_center(self._pose, self.spec.face, self.s.module_width)
            b = face_center(self._from_pose, self.spec.from_face, self.s.module_width)
            gap = math.hypot(a[0] - b[0], a[1] - b[1])
        return TaskStatus(
            module=self.spec.module, target_module=self.spec.from_module,
            face_pair=f"{self.spec.face.value}-x-{self.spec.from_module}."
                      f"{self.spec.from_face.value}",
            phase=self.phase, face_gap_mm=gap * 1e3, lateral_error_mm=math.nan,
            yaw_error_deg=math.nan, retries=0,
            phase_elapsed_s=sum(v for k, v in self.durations.items() if k is not Phase.PAUSED),
            phase_durations=dict(self.durations), error_code=self.error,
            message=self.message)

    def _output(self) -> TaskOutput:
        if self.phase in (Phase.PAUSED, Phase.FAILED, Phase.IDLE, Phase.UNDOCKED):
            self._cmd = (0.0, 0.0)
        return TaskOutput({self.spec.module: self._cmd}, {}, [], self.status(),
                          magnets_off=self.magnets_off())
