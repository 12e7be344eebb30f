"""Planar world of simulated SMORES-EP modules: the physics behind the fake hardware.

Pure Python + numpy (no ROS imports); :mod:`smores_assembly.ros.fake_hardware` is the ROS
adapter. Units and frames: REP-103 (m, rad, s), poses in ``world``, faces as in
:mod:`smores_assembly.geometry` (TOP +x, LEFT +y, BOTTOM -x, RIGHT -y).

Model (what matters for docking control, nothing more):

* **Driving.** Each free module is a differential-drive (unicycle) vehicle. A body twist
  command ``(v, w)`` is turned into wheel speeds ``wl = (v - w*track/2)/r``,
  ``wr = (v + w*track/2)/r``; if one exceeds ``wheel_speed_max`` both are scaled by the same
  ratio (curvature kept). The wheel speeds then ramp linearly towards those targets at
  ``wheel_accel_max`` for the wheel with the larger change (both scaled by one ratio, so a
  start from rest keeps the commanded curvature). A step integrates the exact arc of the
  mean wheel speeds over the step (exact for the linear ramp).
* **Magnets and capture.** Each face has an EP magnet (on/off). When two faces of different
  modules both have their magnet on, the two face segments are within ``capture_range``,
  they are antiparallel within ``capture_angle_max`` and the centre of one face is within
  ``capture_lateral_max`` of the other face's centre along the face, the faces snap flush:
  the moving side (the carried module if any, else the smaller body, else the one that moved
  in this step) is rigidly moved to its exact docked pose
  (:func:`smores_assembly.geometry.child_pose`). A TOP face only captures while the module's
  tilt joint is within ``capture_angle_max`` of zero (a tilted face is not vertical).
  Connected modules form one rigid body. Switching either magnet off releases the
  connection at the next step.
* **Structures do not drive.** While a module belongs to a body of more than one module its
  ``cmd_vel`` is ignored (stored, applied again once it is free) and it does not move (its
  wheel speeds spin down); there is no "drive the structure as a whole" command.
* **Helping modules** (``helpers``): ``LIFT`` picks up a free module whose centre stands
  one module width (within ``lift_reach_tolerance`` along and across) in front of the
  helper's TOP face. The carried module's pose is then
  ``helper_pose.compose(w, 0, rel_yaw)``; ``rel_yaw`` starts at the module's current yaw
  relative to the helper and turns towards ``carry_yaw`` at ``carry_yaw_rate``. ``ROTATE``
  sets a new ``carry_yaw``; ``RELEASE`` puts the module down where it is. When a face of a
  carried module captures a face of another module the module is handed over (snapped,
  connected) and released from the helper automatically. A helper and its load never
  collide with each other.
* **Collisions.** Bodies are ``w x w`` oriented squares. A motion step that would make a
  module overlap another module more than before is not applied (the moving unit stays
  where it is and its wheels stop). Unless the overlap is a face contact (antiparallel
  faces, within ``capture_angle_max``, overlapping laterally, penetration at most
  ``contact_penetration_max``) it is reported as a ``collision`` event, once per contact
  start (the contact ends when the bodies are more than ``collision_clear_distance``
  apart). Any existing overlap that is not a face contact (e.g. after a ``RELEASE`` in the
  middle of a rotation) is reported the same way.

Cost: the per-step work is vectorised over modules with numpy; wheel targets and the arc
terms of steady wheels are cached, the collision broad phase is skipped while the movers'
accumulated displacement stays below the clearance measured at the last full check
(Verlet-list style), and captures / existing overlaps are only re-examined for modules
that moved, switched magnets, tilted, or after snaps, LIFT and RELEASE. About 50 us per
step for 9 or 50 modules driving apart (``python -m bench.bench_fake_hardware``).

Source: SMORES-EP hardware as described in Liu et al., "SMORES-EP, a Modular Robot with
Parallel Self-assembly" (Sec. II), and the project's ``DESIGN.md``.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from smores_assembly.geometry import (MODULE_WIDTH, Face, Pose2D, child_pose, square_overlap,
                                      wrap_angle)
from smores_assembly.params import check_ranges, param_field

#: Face order of the per-module magnet arrays.
FACES: tuple[Face, ...] = (Face.TOP, Face.LEFT, Face.BOTTOM, Face.RIGHT)
_FACE_INDEX = {f: i for i, f in enumerate(FACES)}
_FACE_ANGLES = np.array([f.angle for f in FACES])

HELPER_COMMANDS = ("LIFT", "ROTATE", "RELEASE")


class SimError(ValueError):
    """A command or query the simulated world refuses (the message says why)."""


@dataclass
class SimParams:
    """Physical parameters of the simulated modules (all SI units)."""

    module_width: float = param_field(MODULE_WIDTH, "module (cube) width w [m]", 0.01, 1.0)
    wheel_radius: float = param_field(0.040, "wheel radius r [m]", 0.001, 1.0)
    track: float = param_field(0.0672, "distance between the two wheels [m]", 0.001, 1.0)
    wheel_speed_max: float = param_field(math.pi / 2, "wheel speed cap [rad/s]", 0.01, 100.0)
    wheel_accel_max: float = param_field(20.0, "wheel acceleration cap [rad/s^2]", 0.1, 1e6)
    capture_range: float = param_field(
        0.004, "EP magnets pull two faces together from this distance [m]", 0.0, 0.05)
    capture_lateral_max: float = param_field(
        0.010, "largest offset of the face centres along the face for a capture [m]",
        0.0, 0.04)
    capture_angle_max: float = param_field(
        math.radians(10.0), "largest deviation from antiparallel faces for a capture [rad]",
        0.0, math.pi / 4)
    contact_penetration_max: float = param_field(
        0.004, "an overlap of antiparallel faces up to this depth is a face contact, "
        "not a collision [m]", 0.0, 0.05)
    overlap_tolerance: float = param_field(
        1e-6, "overlaps shallower than this are ignored (numerical noise) [m]", 0.0, 1e-3)
    collision_clear_distance: float = param_field(
        0.002, "a collision contact ends when the bodies are this far apart [m]", 0.0, 0.1)
    lift_reach_tolerance: float = param_field(
        0.02, "LIFT: tolerance on the module centre being one width ahead of the helper, "
        "along and across [m]", 0.0, 0.08)
    carry_yaw_rate: float = param_field(
        math.pi / 2, "rate at which a helper turns its carried module [rad/s]", 0.01, 100.0)
    joint_speed_max: float = param_field(2.0, "pan/tilt joint speed [rad/s]", 0.01, 100.0)
    pan_limit: float = param_field(math.pi, "pan joint limit |pan| <= this [rad]",
                                   0.0, math.pi)
    tilt_limit: float = param_field(math.pi / 2, "tilt joint limit |tilt| <= this [rad]",
                                    0.0, math.pi)

    def validate(self) -> None:
        """Raise :class:`SimError` naming the field when a value is out of range or NaN."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise SimError(f"{f.name}: {v!r} is not a finite number")
        try:
            check_ranges(self)
        except ValueError as exc:
            raise SimError(str(exc)) from None


@dataclass(frozen=True, order=True)
class Connection:
    """A magnetic connection between ``face_a`` of ``module_a`` and ``face_b`` of
    ``module_b``; normalised so that ``(module_a, face_a) < (module_b, face_b)``."""

    module_a: str
    face_a: Face
    module_b: str
    face_b: Face

    @staticmethod
    def make(module_a: str, face_a: Face, module_b: str, face_b: Face) -> "Connection":
        """The normalised connection of two (module, face) ends given in any order."""
        a, b = (module_a, Face.parse(face_a).value), (module_b, Face.parse(face_b).value)
        if b < a:
            a, b = b, a
        return Connection(a[0], Face(a[1]), b[0], Face(b[1]))

    def other(self, module: str) -> tuple[str, Face]:
        """The far end (module, face) seen from ``module``."""
        return (self.module_b, self.face_b) if module == self.module_a else (
            self.module_a, self.face_a)


@dataclass
class SimEvent:
    """Something that happened during :meth:`SimWorld.step`.

    ``kind``: ``'connected'``, ``'disconnected'`` or ``'collision'``; ``t``: simulated time
    at the end of the step [s]; ``modules``: the two modules (for connections in the order
    of the :class:`Connection`); ``faces``: the two faces for connection events, None for
    collisions; ``penetration_m``: overlap depth [m] for collisions (for a blocked motion:
    the depth the motion would have caused), None otherwise.
    """

    kind: str
    t: float
    modules: tuple[str, str]
    faces: tuple[Face, Face] | None = None
    penetration_m: float | None = None


def _face_geometry(pose, face_idx: int, width: float):
    """(centre x, centre y, normal angle) of a face of a module at ``pose``."""
    a = pose[2] + _FACE_ANGLES[face_idx]
    return (pose[0] + 0.5 * width * math.cos(a), pose[1] + 0.5 * width * math.sin(a), a)


def _point_segment_distance(px: float, py: float, cx: float, cy: float, tx: float,
                            ty: float, half: float) -> float:
    """Distance from point (px, py) to the segment centred at (cx, cy) with unit direction
    (tx, ty) and half length ``half``."""
    dx, dy = px - cx, py - cy
    s = max(-half, min(half, dx * tx + dy * ty))
    return math.hypot(dx - s * tx, dy - s * ty)


def _face_relation(pa, fa: int, pb, fb: int, width: float):
    """Relation of face ``fa`` of a module at ``pa`` and face ``fb`` of one at ``pb``.

    Returns ``(gap, lateral, misalignment)``: ``gap`` [m] = distance between the two face
    segments (0 when they cross), ``lateral`` [m] = offset of the face centres along face
    a, ``misalignment`` [rad] = deviation from antiparallel normals (>= 0).
    """
    half = 0.5 * width
    ax, ay, aa = _face_geometry(pa, fa, width)
    bx, by, ba = _face_geometry(pb, fb, width)
    tax, tay = -math.sin(aa), math.cos(aa)
    tbx, tby = -math.sin(ba), math.cos(ba)
    lateral = (bx - ax) * tax + (by - ay) * tay
    mis = abs(wrap_angle(aa - ba - math.pi))
    # segments cross? (signed sides of b's end points w.r.t. line a and vice versa)
    b1x, b1y, b2x, b2y = bx - half * tbx, by - half * tby, bx + half * tbx, by + half * tby
    a1x, a1y, a2x, a2y = ax - half * tax, ay - half * tay, ax + half * tax, ay + half * tay
    nax, nay = tay, -tax
    nbx, nby = tby, -tbx
    s1 = (b1x - ax) * nax + (b1y - ay) * nay
    s2 = (b2x - ax) * nax + (b2y - ay) * nay
    s3 = (a1x - bx) * nbx + (a1y - by) * nby
    s4 = (a2x - bx) * nbx + (a2y - by) * nby
    if s1 * s2 <= 0.0 and s3 * s4 <= 0.0:
        return 0.0, lateral, mis
    gap = min(_point_segment_distance(b1x, b1y, ax, ay, tax, tay, half),
              _point_segment_distance(b2x, b2y, ax, ay, tax, tay, half),
              _point_segment_distance(a1x, a1y, bx, by, tbx, tby, half),
              _point_segment_distance(a2x, a2y, bx, by, tbx, tby, half))
    return gap, lateral, mis


def _finite(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimError(f"{name}: {value!r} is not a number") from None
    if not math.isfinite(v):
        raise SimError(f"{name}: {value!r} is not finite")
    return v


class SimWorld:
    """A plane with SMORES-EP modules; see the module docstring for the model.

    Args:
        poses: initial pose of every module in ``world`` (``Pose2D`` or ``(x, y, yaw)``).
        params: physical parameters (defaults: :class:`SimParams`).
        helpers: ids of helping modules (they accept :meth:`helper_command`).

    Raises:
        SimError: no modules, an id that is empty or not a string, a non-finite pose, a
            helper that is not a module, or a parameter out of range.

    Initial overlaps are allowed (reported as collisions by the first :meth:`step`).
    """

    def __init__(self, poses: Mapping[str, Pose2D | tuple[float, float, float]],
                 params: SimParams | None = None, helpers: Iterable[str] = ()) -> None:
        self.params = params if params is not None else SimParams()
        self.params.validate()
        if not poses:
            raise SimError("poses: at least one module is needed")
        self._ids: list[str] = []
        rows = []
        for mid, p in poses.items():
            if not isinstance(mid, str) or not mid:
                raise SimError(f"poses: module id {mid!r} must be a non-empty string")
            if isinstance(p, Pose2D):
                p = p.as_tuple()
            try:
                x, y, yaw = p
            except (TypeError, ValueError):
                raise SimError(f"poses[{mid}]: {p!r} is not (x, y, yaw)") from None
            rows.append((_finite(x, f"poses[{mid}].x"), _finite(y, f"poses[{mid}].y"),
                         wrap_angle(_finite(yaw, f"poses[{mid}].yaw"))))
            self._ids.append(mid)
        self._idx = {m: i for i, m in enumerate(self._ids)}
        n = len(self._ids)
        self._pose = np.array(rows, dtype=float).reshape(n, 3)
        self._wheel = np.zeros((n, 2))        # left, right wheel speed [rad/s]
        self._cmd = np.zeros((n, 2))          # commanded v [m/s], w [rad/s]
        self._mag = np.zeros((n, 4), dtype=bool)
        self._joint = np.zeros((n, 2))        # pan, tilt [rad]
        self._joint_target = np.zeros((n, 2))
        self._helpers: set[str] = set()
        for h in helpers:
            if h not in self._idx:
                raise SimError(f"helpers: {h!r} is not a module (modules: {self._ids})")
            self._helpers.add(h)
        # helper -> [carried module, carry_yaw target, current relative yaw]
        self._carry: dict[str, list] = {}
        self._carrier: dict[str, str] = {}
        self._conns: set[Connection] = set()
        self._face_used: dict[tuple[str, Face], Connection] = {}
        self._body = np.arange(n)             # rigid-body label per module
        self._body_size = np.ones(n, dtype=int)
        self._collisions: dict[tuple[str, str], float] = {}
        self._kin = None                                # cached wheel targets
        self._steady = None                             # cached steady arc terms
        self._clearance = -1.0                          # broad-phase skip margin [m]
        self._clearance_movers = None                   # movers it was measured for
        self._overlap_dirty = True                      # full overlap scan due
        self._capture_dirty = np.ones(n, dtype=bool)    # capture check due
        self._joints_moving = False
        self.t = 0.0

    # --- queries -------------------------------------------------------------------------
    def modules(self) -> list[str]:
        """Module ids, in the order given at construction."""
        return list(self._ids)

    @property
    def helpers(self) -> frozenset[str]:
        """Ids of the helping modules."""
        return frozenset(self._helpers)

    def _i(self, module: str, field: str = "module") -> int:
        try:
            return self._idx[module]
        except (KeyError, TypeError):
            raise SimError(f"{field}: unknown module {module!r} "
                           f"(modules: {', '.join(self._ids)})") from None

    def pose(self, module: str) -> Pose2D:
        """Ground-truth pose of ``module`` in ``world`` (yaw in [-pi, pi))."""
        x, y, yaw = self._pose[self._i(module)]
        return Pose2D(float(x), float(y), float(yaw))

    def poses(self) -> dict[str, Pose2D]:
        """Ground-truth poses of all modules."""
        return {m: Pose2D(float(p[0]), float(p[1]), float(p[2]))
                for m, p in zip(self._ids, self._pose)}

    def pose_array(self) -> np.ndarray:
        """Copy of all poses, shape (N, 3): x [m], y [m], yaw [rad], rows in
        :meth:`modules` order."""
        return self._pose.copy()

    def joint_states(self, module: str) -> tuple[float, float]:
        """Current (pan, tilt) of ``module`` [rad]."""
        p, t = self._joint[self._i(module)]
        return float(p), float(t)

    def joint_targets(self, module: str) -> tuple[float, float]:
        """Commanded (pan, tilt) of ``module`` [rad]."""
        p, t = self._joint_target[self._i(module)]
        return float(p), float(t)

    def wheel_speeds(self, module: str) -> tuple[float, float]:
        """Current (left, right) wheel speeds of ``module`` [rad/s]."""
        l, r = self._wheel[self._i(module)]
        return float(l), float(r)

    def magnets(self, module: str) -> frozenset[Face]:
        """Faces of ``module`` whose magnet is on."""
        row = self._mag[self._i(module)]
        return frozenset(f for f, on in zip(FACES, row) if on)

    def carried_by(self, helper: str) -> str | None:
        """The module ``helper`` carries, or None."""
        self._i(helper, "helper")
        c = self._carry.get(helper)
        return c[0] if c else None

    def carrier_of(self, module: str) -> str | None:
        """The helper carrying ``module``, or None."""
        self._i(module)
        return self._carrier.get(module)

    def carry_yaw(self, helper: str) -> float | None:
        """Current yaw of the carried module relative to ``helper`` [rad], or None."""
        self._i(helper, "helper")
        c = self._carry.get(helper)
        return float(c[2]) if c else None

    def connections(self) -> set[Connection]:
        """The current magnetic connections."""
        return set(self._conns)

    def structure_of(self, module: str) -> frozenset[str]:
        """All modules rigidly connected to ``module`` (itself included)."""
        b = self._body[self._i(module)]
        return frozenset(m for m, bb in zip(self._ids, self._body) if bb == b)

    def collisions_active(self) -> set[tuple[str, str]]:
        """Module pairs (sorted) currently in a collision contact."""
        return set(self._collisions)

    # --- commands ------------------------------------------------------------------------
    def set_cmd_vel(self, module: str, v: float, w: float) -> None:
        """Body twist command of ``module``: forward speed ``v`` [m/s], yaw rate ``w``
        [rad/s]. Kept until the next command; clipped at the wheel-speed cap with the
        curvature kept; ignored while the module is carried or part of a structure."""
        i = self._i(module)
        self._cmd[i, 0] = _finite(v, "v")
        self._cmd[i, 1] = _finite(w, "w")
        self._kin = None

    def set_magnets(self, module: str, faces: Iterable[Face | str]) -> None:
        """Switch on the magnets of ``faces`` of ``module``, all others off.

        Raises:
            SimError: unknown module or face name.
        """
        i = self._i(module)
        row = np.zeros(4, dtype=bool)
        for f in faces:
            try:
                row[_FACE_INDEX[Face.parse(f, "faces")]] = True
            except ValueError as exc:
                raise SimError(str(exc)) from None
        if not np.array_equal(self._mag[i], row):
            self._mag[i] = row
            self._capture_dirty[i] = True

    def set_joints(self, module: str, pan: float, tilt: float) -> None:
        """Joint targets of ``module`` [rad]; the joints move there at ``joint_speed_max``.

        Raises:
            SimError: a non-finite value or one beyond ``pan_limit`` / ``tilt_limit``.
        """
        i = self._i(module)
        pan, tilt = _finite(pan, "pan"), _finite(tilt, "tilt")
        if abs(pan) > self.params.pan_limit + 1e-12:
            raise SimError(f"pan: {pan} beyond the joint limit +-{self.params.pan_limit}")
        if abs(tilt) > self.params.tilt_limit + 1e-12:
            raise SimError(f"tilt: {tilt} beyond the joint limit +-{self.params.tilt_limit}")
        self._joint_target[i] = (pan, tilt)
        self._joints_moving = True

    def helper_command(self, helper: str, command: str, module: str = "",
                       carry_yaw: float = 0.0) -> None:
        """Command a helping module: ``'LIFT'`` ``module`` (carried turned towards
        ``carry_yaw`` [rad] relative to the helper's heading), ``'ROTATE'`` to a new
        ``carry_yaw``, ``'RELEASE'`` (put the load down where it is).

        Raises:
            SimError: ``helper`` is not a helping module; unknown command; LIFT while
                already carrying, of itself, of an unknown, docked, carried or carrying
                module, or of a module not standing one width (within
                ``lift_reach_tolerance``) in front of the helper's TOP face; LIFT by a
                helper that is docked in a structure; ROTATE/RELEASE with nothing carried.
        """
        if helper not in self._helpers:
            raise SimError(f"helper: {helper!r} is not a helping module "
                           f"(helpers: {sorted(self._helpers)})")
        cmd = command.strip().upper() if isinstance(command, str) else command
        if cmd not in HELPER_COMMANDS:
            raise SimError(f"command: {command!r} is not one of {', '.join(HELPER_COMMANDS)}")
        yaw = wrap_angle(_finite(carry_yaw, "carry_yaw"))
        w = self.params.module_width
        if cmd == "LIFT":
            if helper in self._carry:
                raise SimError(f"LIFT: helper {helper} already carries "
                               f"{self._carry[helper][0]}")
            j = self._i(module, "module")
            if module == helper:
                raise SimError(f"LIFT: helper {helper} cannot lift itself")
            h = self._idx[helper]
            if self._body_size[h] > 1:
                raise SimError(f"LIFT: helper {helper} is docked in a structure")
            if self._body_size[j] > 1:
                raise SimError(f"LIFT: module {module} is docked in a structure "
                               f"({', '.join(sorted(self.structure_of(module)))})")
            if module in self._carrier:
                raise SimError(f"LIFT: module {module} is carried by {self._carrier[module]}")
            if module in self._carry:
                raise SimError(f"LIFT: module {module} is itself carrying a module")
            hp, mp = self._pose[h], self._pose[j]
            c, s = math.cos(hp[2]), math.sin(hp[2])
            dx, dy = mp[0] - hp[0], mp[1] - hp[1]
            along, across = c * dx + s * dy, -s * dx + c * dy
            tol = self.params.lift_reach_tolerance
            if abs(along - w) > tol or abs(across) > tol:
                raise SimError(
                    f"LIFT: module {module} is out of reach of helper {helper}: its centre is "
                    f"{along:.4f} m ahead and {across:.4f} m to the left of the helper's centre"
                    f" (needs {w:.4f} +- {tol:.4f} m ahead and 0 +- {tol:.4f} m across)")
            rel = wrap_angle(mp[2] - hp[2])
            self._carry[helper] = [module, yaw, rel]
            self._carrier[module] = helper
            self._kin = None
            self._wheel[j] = 0.0
            self._place_carried(helper)
            self._overlap_dirty = True
            self._clearance_movers = None
            self._capture_dirty[j] = True
        elif cmd == "ROTATE":
            if helper not in self._carry:
                raise SimError(f"ROTATE: helper {helper} carries nothing")
            self._carry[helper][1] = yaw
        else:
            if helper not in self._carry:
                raise SimError(f"RELEASE: helper {helper} carries nothing")
            load = self._idx[self._carry[helper][0]]
            self._release(helper)
            self._overlap_dirty = True
            self._clearance_movers = None
            self._capture_dirty[[load, self._idx[helper]]] = True

    # --- internals -----------------------------------------------------------------------
    def _release(self, helper: str) -> None:
        module = self._carry.pop(helper)[0]
        self._carrier.pop(module, None)
        self._kin = None

    def _carried_pose(self, helper_pose, rel: float) -> tuple[float, float, float]:
        w = self.params.module_width
        c, s = math.cos(helper_pose[2]), math.sin(helper_pose[2])
        return (helper_pose[0] + c * w, helper_pose[1] + s * w,
                wrap_angle(helper_pose[2] + rel))

    def _place_carried(self, helper: str) -> None:
        module, _, rel = self._carry[helper]
        self._pose[self._idx[module]] = self._carried_pose(self._pose[self._idx[helper]], rel)

    def _recompute_bodies(self) -> None:
        n = len(self._ids)
        parent = list(range(n))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for c in self._conns:
            ra, rb = find(self._idx[c.module_a]), find(self._idx[c.module_b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        self._body = np.array([find(i) for i in range(n)])
        self._body_size = np.bincount(self._body, minlength=n)[self._body]
        self._kin = None

    def _exempt(self, a: str, b: str) -> bool:
        """True when a and b never collide (helper and its load)."""
        return self._carrier.get(a) == b or self._carrier.get(b) == a

    def _is_face_contact(self, pa, pb, depth: float) -> bool:
        p = self.params
        if depth > p.contact_penetration_max:
            return False
        w = p.module_width
        for fa in range(4):
            for fb in range(4):
                _, lateral, mis = _face_relation(pa, fa, pb, fb, w)
                if mis <= p.capture_angle_max + 1e-9 and abs(lateral) < w:
                    # the faces must also be the ones facing each other
                    ax, ay, aa = _face_geometry(pa, fa, w)
                    if (pb[0] - pa[0]) * math.cos(aa) + (pb[1] - pa[1]) * math.sin(aa) > 0:
                        return True
        return False

    # --- stepping ------------------------------------------------------------------------
    def step(self, dt: float) -> list[SimEvent]:
        """Advance the world by ``dt`` [s]: releases, joints, driving with collision
        blocking, magnetic captures, collision bookkeeping.

        Returns:
            The events of this step: disconnections, then collisions, then connections.

        Raises:
            SimError: ``dt`` not a positive finite number.
        """
        dt = _finite(dt, "dt")
        if dt <= 0.0:
            raise SimError(f"dt: {dt} must be > 0")
        p = self.params
        w = p.module_width
        events: list[SimEvent] = []
        t_end = self.t + dt
        n = len(self._ids)

        # 1. releases (a magnet switched off on either face)
        if self._conns:
            released = [c for c in self._conns
                        if not (self._mag[self._idx[c.module_a], _FACE_INDEX[c.face_a]]
                                and self._mag[self._idx[c.module_b], _FACE_INDEX[c.face_b]])]
            for c in sorted(released):
                self._conns.discard(c)
                self._face_used.pop((c.module_a, c.face_a), None)
                self._face_used.pop((c.module_b, c.face_b), None)
                events.append(SimEvent("disconnected", t_end, (c.module_a, c.module_b),
                                       (c.face_a, c.face_b)))
            if released:
                self._recompute_bodies()
                self._overlap_dirty = True

        # 2. joints (only while some joint is still moving)
        if self._joints_moving:
            dj = self._joint_target - self._joint
            lim = p.joint_speed_max * dt
            step_j = np.clip(dj, -lim, lim)
            self._joint += step_j
            tilt_moved = np.flatnonzero(step_j[:, 1] != 0.0)
            self._capture_dirty[tilt_moved] = True
            self._joints_moving = bool(np.any(self._joint != self._joint_target))

        # 3. wheels and proposed poses
        r, half_track = p.wheel_radius, 0.5 * p.track
        moved = np.zeros(n, dtype=bool)
        blocked_pairs: dict[tuple[str, str], tuple[float, bool]] = {}
        kin_key = (r, p.track, p.wheel_speed_max)
        if self._kin is None or self._kin[0] != kin_key:
            # wheel-speed targets: only change with commands, structures, carrying, params
            driving = self._driving_mask()
            target = np.empty((n, 2))
            target[:, 0] = (self._cmd[:, 0] - self._cmd[:, 1] * half_track) / r
            target[:, 1] = (self._cmd[:, 0] + self._cmd[:, 1] * half_track) / r
            target[~driving] = 0.0
            peak = np.abs(target).max(axis=1)
            over = peak > p.wheel_speed_max
            if over.any():
                target[over] *= (p.wheel_speed_max / peak[over])[:, None]
            self._kin = (kin_key, driving, target)
            self._steady = None
        _, driving, target = self._kin
        old = self._wheel
        if not np.array_equal(old, target):
            # ramping: linear wheel ramps at wheel_accel_max (one ratio for both wheels)
            delta = target - old
            dpeak = np.abs(delta).max(axis=1)
            amax = p.wheel_accel_max * dt
            fast = dpeak > amax
            if fast.any():
                delta[fast] *= (amax / dpeak[fast])[:, None]
            # mean wheel speed over the step of a linear ramp of duration tau <= dt
            # followed by constant speed: old + delta * (1 - tau / (2 dt))
            tau_frac = np.minimum(dpeak / amax, 1.0)
            mean = old + delta * (1.0 - 0.5 * tau_frac)[:, None]
            self._wheel = old + delta
            self._steady = None
            motion = self._arc_terms(mean, driving, dt)
        else:
            # steady wheels: the per-step arc terms are constant; cache them
            if self._steady is None or self._steady[0] != (dt, kin_key):
                self._steady = ((dt, kin_key), self._arc_terms(old, driving, dt))
            motion = self._steady[1]
        dyaw, half_turn, chord, moving_base = motion
        if moving_base is not None or self._carry:
            prop = self._pose.copy()
            if moving_base is not None:
                heading = self._pose[:, 2] + half_turn
                prop[:, 0] += chord * np.cos(heading)
                prop[:, 1] += chord * np.sin(heading)
                prop[:, 2] = (self._pose[:, 2] + dyaw + math.pi) % (2 * math.pi) - math.pi
                moving = moving_base.copy()
            else:
                moving = np.zeros(n, dtype=bool)
            # carried modules follow their helper (the carry rotation rate-limited)
            new_rel: dict[str, float] = {}
            for h, (m, goal, rel) in self._carry.items():
                step_max = p.carry_yaw_rate * dt
                d = wrap_angle(goal - rel)
                nrel = rel + max(-step_max, min(step_max, d))
                new_rel[h] = nrel
                hi, mi = self._idx[h], self._idx[m]
                prop[mi] = self._carried_pose(prop[hi], nrel)
                if nrel != rel:
                    moving[hi] = True
                if moving[hi]:
                    moving[mi] = True
            if moving.any():
                self._resolve_motion(moving, prop, new_rel, moved, blocked_pairs)

        # 4. magnetic captures
        self._capture(moved, events, t_end)

        # 5. collision bookkeeping
        self._collision_events(blocked_pairs, events, t_end)
        self.t = t_end
        if len(events) > 1:
            order = {"disconnected": 0, "collision": 1, "connected": 2}
            events.sort(key=lambda e: order[e.kind])
        return events

    def _arc_terms(self, mean: np.ndarray, driving: np.ndarray, dt: float):
        """Per-module step terms of the exact arc for mean wheel speeds ``mean`` (N, 2):
        (yaw change, half yaw change, chord length, moving mask or None if none moves)."""
        p = self.params
        r = p.wheel_radius
        mean = np.where(driving[:, None], mean, 0.0)
        v = 0.5 * r * (mean[:, 0] + mean[:, 1])
        om = r * (mean[:, 1] - mean[:, 0]) / p.track
        moving = driving & ((v != 0) | (om != 0))
        if not moving.any():
            return None, None, None, None
        dyaw = om * dt
        half_turn = 0.5 * dyaw
        chord = v * dt * np.sinc(half_turn / math.pi)
        return dyaw, half_turn, chord, moving

    def _driving_mask(self) -> np.ndarray:
        driving = self._body_size == 1
        for m in self._carrier:
            driving[self._idx[m]] = False
        return driving

    def _resolve_motion(self, moving: np.ndarray, prop: np.ndarray,
                        new_rel: dict[str, float], moved: np.ndarray,
                        blocked_pairs: dict) -> None:
        """Apply the proposed poses of the moving units, blocking the ones that would
        overlap another module more than before (see the module docstring)."""
        p = self.params
        w = p.module_width
        n = len(self._ids)
        reach = w * math.sqrt(2.0) + 1e-9
        cur = self._pose
        # Verlet-list style skip: while the movers' accumulated displacement stays below
        # the clearance measured at the last full broad phase (same set of movers), no
        # mover can have come within reach of any module
        step_max = float(np.abs(prop[:, :2] - cur[:, :2]).max()) * math.sqrt(2.0)
        if (self._clearance_movers is not None
                and np.array_equal(self._clearance_movers, moving)
                and self._clearance - 2.0 * step_max > 0.0):
            self._clearance -= 2.0 * step_max
            self._pose[moving] = prop[moving]
            moved |= moving
            for h in new_rel:
                if moving[self._idx[h]]:
                    self._carry[h][2] = new_rel[h]
            return
        mv = np.flatnonzero(moving)
        disp = np.hypot(prop[:, 0] - cur[:, 0], prop[:, 1] - cur[:, 1])
        # conservative broad phase on the current positions: two squares can only overlap
        # when their centres are within w*sqrt(2) (+ what either moves in this step)
        dx = cur[mv, 0, None] - cur[None, :, 0]
        dy = cur[mv, 1, None] - cur[None, :, 1]
        lim = reach + disp[mv, None] + disp[None, :]
        d = np.sqrt(dx * dx + dy * dy)
        d[np.arange(len(mv)), mv] = np.inf
        near = d < lim
        hit_rows = near.any(axis=1)
        # clearance for the following steps (measured after this step's motion bound)
        self._clearance = float((d - lim).min()) if d.size else math.inf
        self._clearance_movers = moving.copy()
        # units: a driving module with its load (the load moves with its helper)
        unit_of = np.arange(n)
        for m, h in self._carrier.items():
            unit_of[self._idx[m]] = self._idx[h]
        hit_units = set(unit_of[mv[hit_rows]].tolist())
        if hit_units:
            free = moving & ~np.isin(unit_of, list(hit_units))
        else:
            free = moving
        if free.any():
            self._pose[free] = prop[free]
            moved |= free
            for h in new_rel:
                if free[self._idx[h]]:
                    self._carry[h][2] = new_rel[h]
        if not hit_units:
            return
        row_of = {int(i): k for k, i in enumerate(mv)}
        for u in sorted(hit_units):
            unit = [u] + ([self._idx[self._carry[self._ids[u]][0]]]
                          if self._ids[u] in self._carry else [])
            unit = [i for i in unit if moving[i]]
            ok = True
            for i in unit:
                k = row_of.get(i)
                if k is None:
                    continue
                a = self._ids[i]
                pa_new = tuple(prop[i])
                pa_old = tuple(self._pose[i])
                for j in np.flatnonzero(near[k]):
                    if j in unit:
                        continue
                    b = self._ids[j]
                    if self._exempt(a, b):
                        continue
                    pb = tuple(self._pose[j])
                    dn = square_overlap(pa_new, pb, w)
                    if dn <= p.overlap_tolerance:
                        continue
                    do = square_overlap(pa_old, pb, w)
                    if dn <= do + 1e-12:
                        continue
                    ok = False
                    key = (a, b) if a < b else (b, a)
                    fc = self._is_face_contact(pa_new, pb, dn)
                    if key not in blocked_pairs or blocked_pairs[key][0] < dn:
                        blocked_pairs[key] = (dn, fc)
            if ok:
                for i in unit:
                    self._pose[i] = prop[i]
                    moved[i] = True
                h = self._ids[u]
                if h in new_rel and h in self._carry:
                    self._carry[h][2] = new_rel[h]
            else:
                self._wheel[unit] = 0.0

    def _capture(self, moved: np.ndarray, events: list[SimEvent], t_end: float) -> None:
        """Connect face pairs that satisfy the capture rule. Only pairs with a module that
        moved, switched magnets or tilted since the last check can newly qualify."""
        p = self.params
        w = p.module_width
        dirty = self._capture_dirty | moved
        self._capture_dirty = np.zeros(len(self._ids), dtype=bool)
        has_mag = self._mag.any(axis=1)
        active = np.flatnonzero(dirty & has_mag)
        if len(active) == 0:
            return
        mags = np.flatnonzero(has_mag)
        if len(mags) < 2:
            return
        xy = self._pose
        dx = xy[active, 0, None] - xy[None, mags, 0]
        dy = xy[active, 1, None] - xy[None, mags, 1]
        limit = w + p.capture_range + p.capture_lateral_max + 0.5 * w * math.sin(
            p.capture_angle_max) + 1e-6
        close = dx * dx + dy * dy < limit * limit
        seen = set()
        for ai, bj in zip(*np.nonzero(close)):
            a_i, b_i = int(active[ai]), int(mags[bj])
            if a_i == b_i:
                continue
            if a_i > b_i:
                a_i, b_i = b_i, a_i
            if (a_i, b_i) in seen:
                continue
            seen.add((a_i, b_i))
            a, b = self._ids[a_i], self._ids[b_i]
            if self._exempt(a, b):
                continue
            for fa in np.flatnonzero(self._mag[a_i]):
                face_a = FACES[fa]
                if (a, face_a) in self._face_used:
                    continue
                if face_a is Face.TOP and abs(self._joint[a_i, 1]) > p.capture_angle_max:
                    continue
                for fb in np.flatnonzero(self._mag[b_i]):
                    face_b = FACES[fb]
                    if (b, face_b) in self._face_used or (a, face_a) in self._face_used:
                        continue
                    if face_b is Face.TOP and abs(self._joint[b_i, 1]) > p.capture_angle_max:
                        continue
                    gap, lateral, mis = _face_relation(self._pose[a_i], int(fa),
                                                       self._pose[b_i], int(fb), w)
                    if not (gap <= p.capture_range + 1e-9
                            and abs(lateral) <= p.capture_lateral_max + 1e-9
                            and mis <= p.capture_angle_max + 1e-9):
                        continue
                    self._connect(a_i, face_a, b_i, face_b, moved)
                    c = Connection.make(a, face_a, b, face_b)
                    events.append(SimEvent("connected", t_end, (c.module_a, c.module_b),
                                           (c.face_a, c.face_b)))

    def _connect(self, a_i: int, face_a: Face, b_i: int, face_b: Face,
                 moved: np.ndarray) -> None:
        a, b = self._ids[a_i], self._ids[b_i]
        if self._body[a_i] != self._body[b_i]:
            # choose the side that snaps
            if a in self._carrier and b not in self._carrier:
                mover = a_i
            elif b in self._carrier and a not in self._carrier:
                mover = b_i
            elif self._body_size[a_i] != self._body_size[b_i]:
                mover = a_i if self._body_size[a_i] < self._body_size[b_i] else b_i
            elif moved[a_i] != moved[b_i]:
                mover = a_i if moved[a_i] else b_i
            else:
                mover = b_i
            if mover == a_i:
                fixed, f_fixed, f_move = b_i, face_b, face_a
            else:
                fixed, f_fixed, f_move = a_i, face_a, face_b
            fp = self._pose[fixed]
            goal = child_pose(Pose2D(*fp), f_fixed, f_move, self.params.module_width)
            cur = self._pose[mover]
            # rigid transform T = goal * cur^-1 applied to the mover's whole body
            dyaw = goal.yaw - cur[2]
            c, s = math.cos(dyaw), math.sin(dyaw)
            members = np.flatnonzero(self._body == self._body[mover])
            rel = self._pose[members, :2] - cur[:2]
            self._pose[members, 0] = goal.x + c * rel[:, 0] - s * rel[:, 1]
            self._pose[members, 1] = goal.y + s * rel[:, 0] + c * rel[:, 1]
            self._pose[members, 2] = (self._pose[members, 2] + dyaw + math.pi) % (
                2 * math.pi) - math.pi
            self._pose[mover, 2] = goal.yaw
            for mi in members:
                m = self._ids[mi]
                if m in self._carrier:  # handed over to the structure
                    self._release(self._carrier[m])
                self._wheel[mi] = 0.0
        self._overlap_dirty = True
        self._clearance_movers = None
        conn = Connection.make(a, face_a, b, face_b)
        self._conns.add(conn)
        self._face_used[(a, face_a)] = conn
        self._face_used[(b, face_b)] = conn
        self._recompute_bodies()

    def _collision_events(self, blocked: dict[tuple[str, str], tuple[float, bool]],
                          events: list[SimEvent], t_end: float) -> None:
        p = self.params
        w = p.module_width
        if not blocked and not self._collisions and not self._overlap_dirty:
            return
        found: dict[tuple[str, str], float] = {}
        for key, (depth, face_contact) in blocked.items():
            if not face_contact:
                found[key] = depth
        # existing overlaps that are not face contacts: only poses changed by something
        # else than a checked motion (start, snaps, LIFT, RELEASE, releases) can create them
        n = len(self._ids)
        if self._overlap_dirty and n > 1:
            self._overlap_dirty = False
            xy = self._pose
            dx = xy[:, 0, None] - xy[None, :, 0]
            dy = xy[:, 1, None] - xy[None, :, 1]
            close = np.triu(dx * dx + dy * dy < 2.0 * w * w, k=1)
            close &= self._body[:, None] != self._body[None, :]
            for i, j in zip(*np.nonzero(close)):
                a, b = self._ids[i], self._ids[j]
                if self._exempt(a, b):
                    continue
                pa, pb = tuple(self._pose[i]), tuple(self._pose[j])
                d = square_overlap(pa, pb, w)
                if d > p.overlap_tolerance and not self._is_face_contact(pa, pb, d):
                    key = (a, b) if a < b else (b, a)
                    found[key] = max(found.get(key, 0.0), d)
        for key, depth in sorted(found.items()):
            if key not in self._collisions:
                events.append(SimEvent("collision", t_end, key, None, float(depth)))
            self._collisions[key] = depth
        for key in list(self._collisions):
            if key in found or key in blocked:
                continue
            i, j = self._idx[key[0]], self._idx[key[1]]
            same = self._body[i] == self._body[j]
            d = square_overlap(tuple(self._pose[i]), tuple(self._pose[j]), w)
            if same or self._exempt(*key) or -d > p.collision_clear_distance:
                del self._collisions[key]
