"""Motion-capture samples -> module states: frame transforms, sample rejection, staleness
and source-rate monitoring (no ROS imports).

Frames (REP-105 style names):

* ``mocap``: the frame the mocap driver reports rigid bodies in;
* ``world``: the stack's planar frame (z up);
* ``body``: the tracked rigid body (the marker constellation as defined in the mocap
  software);
* ``module``: the module's centre, x towards its TOP face, z up.

A sample ``T_mocap_body`` becomes ``T_world_module = T_world_mocap * T_mocap_body *
T_body_module`` where ``T_world_mocap`` is the configured mocap-to-world transform and
``T_body_module`` the marker offset (the module centre's pose in the body frame). Both are
given as ``(x, y, z, roll, pitch, yaw)`` [m, rad], rotations about static x, y, z axes
(``transforms3d`` convention ``'sxyz'``).

A sample is never forwarded when it is

* ``nan``: any non-finite number;
* ``zero``: an all-zero position (drivers such as vicon_receiver emit zeros for occluded
  bodies);
* ``bad_quaternion``: a quaternion whose norm is not within 0.1 of 1 (e.g. all zeros);
* ``future``: stamped more than ``max_future_s`` after its reception time (a sender's
  clock error; accepting it would make every later good sample look out of order);
* ``out_of_order``: not newer than the last accepted sample of that module (while it is
  tracked);
* ``jump``: farther from the last accepted sample than ``max_speed_mps * dt +
  jump_tolerance_m`` or turned more than ``max_yaw_rate * dt + jump_tolerance_rad``
  (``dt`` from the sample stamps). After ``reacquire_after`` consecutive jump rejections,
  or when the track is stale, the next valid sample restarts the track (the module was
  really moved, e.g. by hand).

A module is *tracked* while its last accepted sample was received at most
``stale_timeout_s`` ago (and not in the future: a clock that jumped back, e.g. a restarted
simulation, untracks every module until new samples arrive).
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import transforms3d.euler
import transforms3d.quaternions

from smores_assembly.errors import InputError, ParamsError
from smores_assembly.geometry import wrap_angle
from smores_assembly.params import check_ranges, param_field
from smores_assembly.scenario import module_id_error

REJECT_REASONS = ("nan", "zero", "bad_quaternion", "future", "out_of_order", "jump",
                  "unknown_module")


def _qmul(a, b):
    """Hamilton product of quaternions (w, x, y, z)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def _qrot(q, v):
    """Rotate vector ``v`` by the unit quaternion ``q`` (w, x, y, z)."""
    w, x, y, z = q
    vx, vy, vz = v
    # t = 2 u x v ; v' = v + w t + u x t
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (vx + w * tx + (y * tz - z * ty),
            vy + w * ty + (z * tx - x * tz),
            vz + w * tz + (x * ty - y * tx))


class MocapError(InputError):
    """Invalid mocap configuration (the message names the field and the value)."""


@dataclass
class MocapFilterSettings:
    """Tunables of the sample filter and the rate monitor (ROS parameters of mocap_bridge)."""

    stale_timeout_s: float = param_field(
        0.5, "a module without a valid sample for this long is untracked [s]", 0.001, 3600.0)
    max_speed_mps: float = param_field(
        0.5, "fastest physically possible module motion (jump rejection) [m/s]", 0.0, 100.0)
    max_yaw_rate: float = param_field(
        6.0, "fastest physically possible module rotation (jump rejection) [rad/s]",
        0.0, 1000.0)
    jump_tolerance_m: float = param_field(
        0.01, "allowance for noise on top of max_speed_mps * dt [m]", 0.0, 10.0)
    jump_tolerance_rad: float = param_field(
        0.1, "allowance for noise on top of max_yaw_rate * dt [rad]", 0.0, math.pi)
    max_future_s: float = param_field(
        0.05, "a sample stamped more than this after its reception is refused (clock error) "
             "[s]", 0.0, 3600.0)
    reacquire_after: int = param_field(
        20, "consecutive jump rejections after which the track restarts at the new sample",
        1, 1_000_000)
    zero_tolerance_m: float = param_field(
        1e-9, "a position with all |coordinates| below this is an all-zero sample [m]",
        0.0, 1e-3)
    expected_rate_min_hz: float = param_field(
        20.0, "warn when a body's sample rate falls below this [Hz]", 0.0, 10000.0)
    expected_rate_max_hz: float = param_field(
        1000.0, "warn when a body's sample rate rises above this [Hz]", 0.0, 100000.0)
    rate_window_s: float = param_field(
        2.0, "window over which sample rates are measured [s]", 0.1, 600.0)
    no_data_warn_s: float = param_field(
        2.0, "warn when no sample at all arrived for this long [s, wall time]", 0.1, 3600.0)

    def validate(self) -> None:
        """Raise :class:`MocapError` for a value out of range or an empty rate band."""
        try:
            check_ranges(self)
        except ParamsError as exc:
            raise MocapError(str(exc), field=exc.field) from None
        if self.expected_rate_min_hz > self.expected_rate_max_hz:
            raise MocapError(f"expected_rate_min_hz: {self.expected_rate_min_hz} is above "
                             f"expected_rate_max_hz {self.expected_rate_max_hz}")


@dataclass(frozen=True)
class RigidTransform:
    """A rigid transform ``T_parent_child``: ``rotation`` (3x3) and ``translation`` (3,) [m]
    such that ``p_parent = rotation @ p_child + translation``."""

    rotation: np.ndarray
    translation: np.ndarray

    @staticmethod
    def identity() -> "RigidTransform":
        return RigidTransform(np.eye(3), np.zeros(3))

    @staticmethod
    def from_xyzrpy(values: Sequence[float], name: str = "transform") -> "RigidTransform":
        """From ``[x, y, z, roll, pitch, yaw]`` [m, rad] (static-axes x-y-z rotations).

        Raises:
            MocapError: naming ``name`` when there are not 6 finite numbers.
        """
        try:
            vals = [float(v) for v in values]
        except (TypeError, ValueError):
            raise MocapError(f"{name}: {values!r} is not a list of 6 numbers "
                             f"[x, y, z, roll, pitch, yaw]") from None
        if len(vals) != 6 or not all(math.isfinite(v) for v in vals):
            raise MocapError(f"{name}: {values!r} must be 6 finite numbers "
                             f"[x, y, z, roll, pitch, yaw]")
        rot = transforms3d.euler.euler2mat(vals[3], vals[4], vals[5], axes="sxyz")
        return RigidTransform(rot, np.array(vals[:3]))

    @staticmethod
    def from_pose(position: Sequence[float], quaternion_wxyz: Sequence[float]
                  ) -> "RigidTransform":
        """From a position [m] and a unit quaternion (w, x, y, z)."""
        return RigidTransform(transforms3d.quaternions.quat2mat(quaternion_wxyz),
                              np.asarray(position, dtype=float))

    def __matmul__(self, other: "RigidTransform") -> "RigidTransform":
        """Composition ``self * other`` (apply ``other`` first)."""
        return RigidTransform(self.rotation @ other.rotation,
                              self.rotation @ other.translation + self.translation)

    def quaternion(self) -> np.ndarray:
        """Rotation as a unit quaternion (w, x, y, z) with w >= 0."""
        q = transforms3d.quaternions.mat2quat(self.rotation)
        return -q if q[0] < 0 else q

    def quat_trans(self) -> tuple[tuple[float, float, float, float],
                                  tuple[float, float, float]]:
        """(unit quaternion (w, x, y, z), translation) as plain floats."""
        q = self.quaternion()
        w, x, y, z = (float(v) for v in q)
        tx, ty, tz = (float(v) for v in self.translation)
        return (w, x, y, z), (tx, ty, tz)

    def yaw(self) -> float:
        """Heading of the child x axis projected on the parent xy plane [rad]."""
        return wrap_angle(math.atan2(self.rotation[1, 0], self.rotation[0, 0]))


@dataclass
class ModuleEstimate:
    """The bridge's view of one module.

    ``x``, ``y`` [m], ``yaw`` [rad]: planar pose of the module centre in ``world``;
    ``position`` (x, y, z) [m] and ``quaternion`` (w, x, y, z), w >= 0: its full pose in
    ``world``;
    ``tracked``: a valid sample was received within ``stale_timeout_s``; ``stamp`` [s]:
    stamp of the last valid sample (0 if none); ``received`` [s]: when it was received.
    """

    id: str
    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    position: tuple = (0.0, 0.0, 0.0)
    quaternion: tuple = (1.0, 0.0, 0.0, 0.0)
    tracked: bool = False
    stamp: float = 0.0
    received: float = -math.inf
    has_sample: bool = False
    consecutive_jumps: int = 0


class MocapFilter:
    """Per-module sample filter and tracker (see the module docstring for the rules).

    Args:
        module_ids: the modules to track (mocap body names are the module ids).
        settings: thresholds (validated).
        mocap_to_world: ``T_world_mocap``.
        marker_offset: default ``T_body_module`` for every module.
        marker_offsets: per-module overrides of ``marker_offset``.

    Raises:
        MocapError: no, invalid (:data:`smores_assembly.scenario.MODULE_ID_RULE`) or
            duplicate module ids, settings out of range, an override for an unknown module.
    """

    def __init__(self, module_ids: Iterable[str], settings: MocapFilterSettings | None = None,
                 mocap_to_world: RigidTransform | None = None,
                 marker_offset: RigidTransform | None = None,
                 marker_offsets: dict[str, RigidTransform] | None = None) -> None:
        ids = list(module_ids)
        if not ids:
            raise MocapError("module_ids: no modules to track")
        for m in ids:
            err = module_id_error(m)
            if err:
                raise MocapError(f"module_ids: {err}")
        dup = sorted({m for m in ids if ids.count(m) > 1})
        if dup:
            raise MocapError(f"module_ids: duplicate ids {dup}")
        self.settings = settings if settings is not None else MocapFilterSettings()
        self.settings.validate()
        self.ids = ids
        self._est = {m: ModuleEstimate(m) for m in ids}
        self.rejected: dict[str, collections.Counter[str]] = {
            m: collections.Counter() for m in ids}
        self.accepted: collections.Counter[str] = collections.Counter()
        self.set_transforms(mocap_to_world, marker_offset, marker_offsets)

    def set_transforms(self, mocap_to_world: RigidTransform | None = None,
                       marker_offset: RigidTransform | None = None,
                       marker_offsets: dict[str, RigidTransform] | None = None) -> None:
        """Replace the frame transforms (affects later samples)."""
        self.mocap_to_world = mocap_to_world or RigidTransform.identity()
        default = marker_offset or RigidTransform.identity()
        overrides = dict(marker_offsets or {})
        unknown = sorted(set(overrides) - set(self.ids))
        if unknown:
            raise MocapError(f"marker_offsets: {unknown} are not tracked modules "
                             f"(module_ids: {self.ids})")
        self._offsets = {m: overrides.get(m, default) for m in self.ids}
        self._m2w_qt = self.mocap_to_world.quat_trans()
        self._offsets_qt = {m: t.quat_trans() for m, t in self._offsets.items()}

    def module_pose(self, module: str, position: Sequence[float],
                    quaternion_wxyz: Sequence[float]) -> RigidTransform:
        """``T_world_module`` of a body sample ``T_mocap_body`` (no checks)."""
        q = np.asarray(quaternion_wxyz, dtype=float)
        body = RigidTransform.from_pose(position, q / np.linalg.norm(q))
        return self.mocap_to_world @ body @ self._offsets[module]

    def update(self, module: str, stamp: float, received: float,
               position: Sequence[float], quaternion_wxyz: Sequence[float]) -> str | None:
        """Offer one sample of body ``module``.

        Args:
            stamp: sample time [s] (header stamp; used for the jump test).
            received: reception time [s] (used for staleness).
            position: body position in the mocap frame [m], shape (3,).
            quaternion_wxyz: body orientation in the mocap frame.

        Returns:
            None when accepted, else the rejection reason (one of :data:`REJECT_REASONS`).
        """
        if module not in self._est:
            return "unknown_module"
        reason = self._check(module, stamp, received, position, quaternion_wxyz)
        if reason is not None:
            self.rejected[module][reason] += 1
        else:
            self.accepted[module] += 1
        return reason

    def _check(self, module: str, stamp: float, received: float, position, quat) -> str | None:
        # hot path (every mocap sample): plain floats and quaternion algebra, no numpy
        s = self.settings
        try:
            px, py, pz = map(float, position)
            qw, qx, qy, qz = map(float, quat)
            stamp, received = float(stamp), float(received)
        except (TypeError, ValueError):
            return "nan"
        isf = math.isfinite
        if not (isf(px) and isf(py) and isf(pz) and isf(qw) and isf(qx) and isf(qy)
                and isf(qz) and isf(stamp) and isf(received)):
            return "nan"
        tol = s.zero_tolerance_m
        if abs(px) <= tol and abs(py) <= tol and abs(pz) <= tol:
            return "zero"
        norm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        if abs(norm - 1.0) > 0.1:
            return "bad_quaternion"
        if stamp - received > s.max_future_s:
            return "future"
        est = self._est[module]
        fresh = est.has_sample and 0.0 <= received - est.received <= s.stale_timeout_s
        if est.has_sample and stamp <= est.stamp and fresh:
            return "out_of_order"
        # T_world_module = T_world_mocap * T_mocap_body * T_body_module
        qb = (qw / norm, qx / norm, qy / norm, qz / norm)
        (qm, tm), (qo, to) = self._m2w_qt, self._offsets_qt[module]
        ox, oy, oz = _qrot(qb, to)
        wx, wy, wz = _qrot(qm, (px + ox, py + oy, pz + oz))
        pos = (wx + tm[0], wy + tm[1], wz + tm[2])
        q = _qmul(_qmul(qm, qb), qo)
        if q[0] < 0.0:
            q = (-q[0], -q[1], -q[2], -q[3])
        w_, x_, y_, z_ = q
        yaw = math.atan2(2.0 * (w_ * z_ + x_ * y_), 1.0 - 2.0 * (y_ * y_ + z_ * z_))
        if fresh:
            dt = stamp - est.stamp
            ep = est.position
            dist = math.sqrt((pos[0] - ep[0]) ** 2 + (pos[1] - ep[1]) ** 2
                             + (pos[2] - ep[2]) ** 2)
            dyaw = abs(wrap_angle(yaw - est.yaw))
            if (dist > s.max_speed_mps * dt + s.jump_tolerance_m
                    or dyaw > s.max_yaw_rate * dt + s.jump_tolerance_rad):
                est.consecutive_jumps += 1
                if est.consecutive_jumps < s.reacquire_after:
                    return "jump"
        est.consecutive_jumps = 0
        est.x, est.y = pos[0], pos[1]
        est.yaw = wrap_angle(yaw)
        est.position = pos
        est.quaternion = q
        est.stamp = stamp
        est.received = received
        est.has_sample = True
        return None

    def is_tracked(self, module: str, now: float) -> bool:
        """True when ``module``'s last valid sample was received within ``stale_timeout_s``
        of ``now`` [s]."""
        est = self._est[module]
        return est.has_sample and 0.0 <= now - est.received <= self.settings.stale_timeout_s

    def states(self, now: float) -> list[ModuleEstimate]:
        """Current estimate of every module (in ``module_ids`` order), ``tracked`` updated
        for time ``now`` [s] (same clock as ``received``)."""
        out = []
        for m in self.ids:
            est = self._est[m]
            est.tracked = self.is_tracked(m, now)
            out.append(est)
        return out


class RateMonitor:
    """Sample-rate bookkeeping per source (body) for the bridge's warnings.

    ``record(source, t)`` for every arriving message (valid or not); ``rates(now)`` gives
    each source's rate over the last ``window_s``; ``out_of_band(now)`` the sources whose
    rate is outside ``[lo, hi]`` (only once a full window has been observed).
    """

    def __init__(self, sources: Iterable[str], window_s: float, lo: float, hi: float) -> None:
        if window_s <= 0:
            raise MocapError(f"rate_window_s: {window_s} must be > 0")
        if lo > hi:
            raise MocapError(f"expected rate band: min {lo} above max {hi}")
        self.window_s, self.lo, self.hi = window_s, lo, hi
        self._times: dict[str, collections.deque[float]] = {
            s: collections.deque() for s in sources}
        self._start: float | None = None
        self.last_any: float | None = None

    def start(self, now: float) -> None:
        """Start observing at time ``now`` (the first window ends at now + window_s)."""
        self._start = now

    def record(self, source: str, t: float) -> None:
        q = self._times.get(source)
        if q is None:
            return
        q.append(t)
        self.last_any = t

    def rates(self, now: float) -> dict[str, float]:
        """Messages per second of each source over ``(now - window_s, now]``."""
        out = {}
        lo_t = now - self.window_s
        for s, q in self._times.items():
            while q and q[0] <= lo_t:
                q.popleft()
            out[s] = len(q) / self.window_s
        return out

    def out_of_band(self, now: float) -> dict[str, float]:
        """Sources whose rate is outside the band (empty before a full window passed)."""
        if self._start is None:
            self._start = now
        if now - self._start < self.window_s:
            return {}
        return {s: r for s, r in self.rates(now).items() if not (self.lo <= r <= self.hi)}
