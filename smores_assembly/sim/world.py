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
* **Wheel effects of real modules** (all off by default): a wheel commanded slower than
  ``wheel_deadband`` [m/s] does not turn; each wheel runs at ``wheel_gain_left`` /
  ``wheel_gain_right`` times its (capped) command; the ground moves under a wheel at
  ``(1 - wheel_slip)`` times its rim speed (``wheel_speeds`` report the wheels' rotation).
  Closed form for steady wheels: ``v = (1 - slip) r (gl wl + gr wr) / 2``,
  ``w = (1 - slip) r (gr wr - gl wl) / track`` with ``wl``, ``wr`` the commanded wheel
  speeds (zero below the deadband).
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

Code: :mod:`.model` (parameters, connections, events, errors), :mod:`.kinematics` (wheels,
arcs, carrying), :mod:`.faces` (face geometry, the capture and face-contact rules), this
module (state, commands, the cached step), :mod:`.reference` (the same step without any
cache, the oracle of the fast one in ``test/test_sim_world.py``).

Cost: the per-step work is vectorised over modules with numpy; wheel targets and the arc
terms of steady wheels are cached, the collision broad phase is skipped while the movers'
accumulated displacement stays below the clearance measured at the last full check
(Verlet-list style), and captures / existing overlaps are only re-examined for modules
that moved, switched magnets, tilted, lost a connection, were snapped, or after LIFT and
RELEASE. About 50 us per step for 9 or 50 modules driving apart
(``python -m bench.bench_fake_hardware``).

Order within a step (both implementations): releases, joints, wheels and motion (units in
module order, each checked against the poses of the units before it), captures (repeated
until none qualifies, the first qualifying pair in module order first), collision events.

Source: SMORES-EP hardware as described in Liu et al., "SMORES-EP, a Modular Robot with
Parallel Self-assembly" (Sec. II), and the project's ``DESIGN.md``.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from smores_assembly.geometry import Face, Pose2D, child_pose, square_overlap, wrap_angle
from smores_assembly.sim import kinematics
from smores_assembly.sim.faces import capture_qualifies, is_face_contact
from smores_assembly.sim.model import (FACE_INDEX, FACES, HELPER_COMMANDS, Connection,
                                       SimError, SimEvent, SimParams, finite)

__all__ = ["FACES", "HELPER_COMMANDS", "Connection", "SimError", "SimEvent", "SimParams",
           "SimWorld", "square_overlap"]


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
            rows.append((finite(x, f"poses[{mid}].x"), finite(y, f"poses[{mid}].y"),
                         wrap_angle(finite(yaw, f"poses[{mid}].yaw"))))
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
        self._cmd[i, 0] = finite(v, "v")
        self._cmd[i, 1] = finite(w, "w")
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
                row[FACE_INDEX[Face.parse(f, "faces")]] = True
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
        pan, tilt = finite(pan, "pan"), finite(tilt, "tilt")
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
        yaw = wrap_angle(finite(carry_yaw, "carry_yaw"))
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

    # --- internals shared by both steps --------------------------------------------------
    def _release(self, helper: str) -> None:
        module = self._carry.pop(helper)[0]
        self._carrier.pop(module, None)
        self._kin = None

    def _carried_pose(self, helper_pose, rel: float) -> tuple[float, float, float]:
        return kinematics.carried_pose(helper_pose, rel, self.params.module_width)

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
        return is_face_contact(pa, pb, depth, self.params)

    def _driving_mask(self) -> np.ndarray:
        """Modules whose wheels drive them: free (a body of one) and not carried."""
        driving = self._body_size == 1
        for m in self._carrier:
            driving[self._idx[m]] = False
        return driving

    def _release_connections(self, events: list[SimEvent], t_end: float) -> None:
        """Step phase 1: drop the connections of which a magnet was switched off."""
        if not self._conns:
            return
        released = [c for c in self._conns
                    if not (self._mag[self._idx[c.module_a], FACE_INDEX[c.face_a]]
                            and self._mag[self._idx[c.module_b], FACE_INDEX[c.face_b]])]
        for c in sorted(released):
            self._conns.discard(c)
            self._face_used.pop((c.module_a, c.face_a), None)
            self._face_used.pop((c.module_b, c.face_b), None)
            events.append(SimEvent("disconnected", t_end, (c.module_a, c.module_b),
                                   (c.face_a, c.face_b)))
            # a freed face may now capture another one
            self._capture_dirty[[self._idx[c.module_a], self._idx[c.module_b]]] = True
        if released:
            self._recompute_bodies()
            self._overlap_dirty = True

    def _move_joints(self, dt: float) -> None:
        """Step phase 2: joints towards their targets at ``joint_speed_max``."""
        dj = self._joint_target - self._joint
        lim = self.params.joint_speed_max * dt
        step_j = np.clip(dj, -lim, lim)
        self._joint += step_j
        tilt_moved = np.flatnonzero(step_j[:, 1] != 0.0)
        self._capture_dirty[tilt_moved] = True
        self._joints_moving = bool(np.any(self._joint != self._joint_target))

    def _propose(self, motion, dt: float):
        """Step phase 3b: proposed poses of every module (driven arcs, carried modules
        following their helper, the carry rotation rate-limited).

        Returns ``(prop (N, 3), moving mask, new relative carry yaw per helper)``, or None
        when nothing moves.
        """
        p = self.params
        dyaw, half_turn, chord, moving_base = motion
        if moving_base is None and not self._carry:
            return None
        if moving_base is not None:
            prop = kinematics.arc_poses(self._pose, dyaw, half_turn, chord)
            moving = moving_base.copy()
        else:
            prop = self._pose.copy()
            moving = np.zeros(len(self._ids), dtype=bool)
        new_rel: dict[str, float] = {}
        for h, (m, goal, rel) in self._carry.items():
            nrel = kinematics.carry_turn(rel, goal, p.carry_yaw_rate, dt)
            new_rel[h] = nrel
            hi, mi = self._idx[h], self._idx[m]
            prop[mi] = self._carried_pose(prop[hi], nrel)
            if nrel != rel:
                moving[hi] = True
            if moving[hi]:
                moving[mi] = True
        return prop, moving, new_rel

    def _units(self, moving: np.ndarray) -> dict[int, list[int]]:
        """Moving units by unit index (a helper's index; its load moves with it)."""
        unit_of = np.arange(len(self._ids))
        for m, h in self._carrier.items():
            unit_of[self._idx[m]] = self._idx[h]
        units: dict[int, list[int]] = {}
        for u in sorted(set(unit_of[np.flatnonzero(moving)].tolist())):
            unit = [u] + ([self._idx[self._carry[self._ids[u]][0]]]
                          if self._ids[u] in self._carry else [])
            units[u] = [i for i in unit if moving[i]]
        return units

    def _try_unit(self, u: int, unit: list[int], candidates, prop: np.ndarray,
                  new_rel: dict[str, float], moved: np.ndarray, blocked_pairs: dict,
                  touching: set) -> None:
        """Apply the proposed poses of moving unit ``u`` (module indices ``unit``) unless that makes a module of it
        overlap another module (among ``candidates(i)``) more than before: then its wheels
        stop and the pairs go to ``blocked_pairs`` (key -> (depth, face contact)). Pairs
        left overlapping by an allowed motion go to ``touching``."""
        p = self.params
        w = p.module_width
        ok = True
        seen = []
        for i in unit:
            a = self._ids[i]
            pa_new = tuple(prop[i])
            pa_old = tuple(self._pose[i])
            for j in candidates(i):
                if j in unit:
                    continue
                b = self._ids[j]
                if self._exempt(a, b):
                    continue
                pb = tuple(self._pose[j])
                dn = square_overlap(pa_new, pb, w)
                if dn <= p.overlap_tolerance:
                    continue
                key = (a, b) if a < b else (b, a)
                do = square_overlap(pa_old, pb, w)
                if dn <= do + 1e-12:
                    seen.append(key)
                    continue
                ok = False
                fc = self._is_face_contact(pa_new, pb, dn)
                if key not in blocked_pairs or blocked_pairs[key][0] < dn:
                    blocked_pairs[key] = (dn, fc)
        if ok:
            touching.update(seen)
            for i in unit:
                self._pose[i] = prop[i]
                moved[i] = True
            h = self._ids[u]
            if h in new_rel and h in self._carry:
                self._carry[h][2] = new_rel[h]
        else:
            self._wheel[unit] = 0.0

    def _connect(self, a_i: int, face_a: Face, b_i: int, face_b: Face,
                 moved: np.ndarray) -> list[int]:
        """Connect two faces; when they belong to different bodies, snap the moving side
        (carried, else smaller, else the one that moved, else ``b``) rigidly to its docked
        pose. Returns the indices of the modules that were moved by the snap."""
        a, b = self._ids[a_i], self._ids[b_i]
        members: list[int] = []
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
            idx = np.flatnonzero(self._body == self._body[mover])
            rel = self._pose[idx, :2] - cur[:2]
            self._pose[idx, 0] = goal.x + c * rel[:, 0] - s * rel[:, 1]
            self._pose[idx, 1] = goal.y + s * rel[:, 0] + c * rel[:, 1]
            self._pose[idx, 2] = (self._pose[idx, 2] + dyaw + math.pi) % (
                2 * math.pi) - math.pi
            self._pose[mover, 2] = goal.yaw
            for mi in idx:
                m = self._ids[mi]
                if m in self._carrier:  # handed over to the structure
                    self._release(self._carrier[m])
                self._wheel[mi] = 0.0
            members = [int(i) for i in idx]
        self._overlap_dirty = True
        self._clearance_movers = None
        conn = Connection.make(a, face_a, b, face_b)
        self._conns.add(conn)
        self._face_used[(a, face_a)] = conn
        self._face_used[(b, face_b)] = conn
        self._recompute_bodies()
        return members

    def _capture_pair(self, a_i: int, b_i: int, moved: np.ndarray,
                      events: list[SimEvent], t_end: float) -> list[int] | None:
        """Connect the first qualifying face pair of modules ``a_i < b_i`` (faces in
        :data:`FACES` order); returns the snapped modules, None when no pair qualifies."""
        p = self.params
        a, b = self._ids[a_i], self._ids[b_i]
        if self._exempt(a, b):
            return None
        for fa in np.flatnonzero(self._mag[a_i]):
            face_a = FACES[fa]
            if (a, face_a) in self._face_used:
                continue
            if face_a is Face.TOP and abs(self._joint[a_i, 1]) > p.capture_angle_max:
                continue
            for fb in np.flatnonzero(self._mag[b_i]):
                face_b = FACES[fb]
                if (b, face_b) in self._face_used:
                    continue
                if face_b is Face.TOP and abs(self._joint[b_i, 1]) > p.capture_angle_max:
                    continue
                if not capture_qualifies(self._pose[a_i], int(fa), self._pose[b_i], int(fb),
                                         p):
                    continue
                members = self._connect(a_i, face_a, b_i, face_b, moved)
                c = Connection.make(a, face_a, b, face_b)
                events.append(SimEvent("connected", t_end, (c.module_a, c.module_b),
                                       (c.face_a, c.face_b)))
                return members
        return None

    def _collision_bookkeeping(self, found: dict, blocked: dict, events: list[SimEvent],
                               t_end: float) -> None:
        """Report the overlaps in ``found`` (key -> depth) that are new contacts; end the
        contacts that cleared (apart by ``collision_clear_distance``, same body, exempt)."""
        w = self.params.module_width
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
            if same or self._exempt(*key) or -d > self.params.collision_clear_distance:
                del self._collisions[key]

    def _overlap_found(self, i: int, j: int, found: dict) -> None:
        """Add pair (i, j) to ``found`` when it overlaps and is not a face contact."""
        a, b = self._ids[i], self._ids[j]
        if self._body[i] == self._body[j] or self._exempt(a, b):
            return
        pa, pb = tuple(self._pose[i]), tuple(self._pose[j])
        d = square_overlap(pa, pb, self.params.module_width)
        if d > self.params.overlap_tolerance and not self._is_face_contact(pa, pb, d):
            key = (a, b) if a < b else (b, a)
            found[key] = max(found.get(key, 0.0), d)

    # --- the fast (cached) step ----------------------------------------------------------
    def step(self, dt: float) -> list[SimEvent]:
        """Advance the world by ``dt`` [s]: releases, joints, driving with collision
        blocking, magnetic captures, collision bookkeeping.

        The result equals :func:`smores_assembly.sim.reference.reference_step` (the same
        model without caches) exactly; ``test/test_sim_world.py`` checks it on random worlds.

        Returns:
            The events of this step: disconnections, then collisions, then connections.

        Raises:
            SimError: ``dt`` not a positive finite number.
        """
        dt = finite(dt, "dt")
        if dt <= 0.0:
            raise SimError(f"dt: {dt} must be > 0")
        events: list[SimEvent] = []
        t_end = self.t + dt
        n = len(self._ids)
        self._release_connections(events, t_end)
        if self._joints_moving:
            self._move_joints(dt)
        moved = np.zeros(n, dtype=bool)
        blocked_pairs: dict[tuple[str, str], tuple[float, bool]] = {}
        touching: set = set()
        proposal = self._propose(self._wheel_motion(dt), dt)
        if proposal is not None and proposal[1].any():
            self._resolve_motion(proposal[1], proposal[0], proposal[2], moved,
                                 blocked_pairs, touching)
        self._capture(moved, events, t_end)
        self._collision_events(blocked_pairs, touching, events, t_end)
        self.t = t_end
        if len(events) > 1:
            order = {"disconnected": 0, "collision": 1, "connected": 2}
            events.sort(key=lambda e: order[e.kind])
        return events

    def _wheel_motion(self, dt: float):
        """Step phase 3a with caches: wheel targets (until a command, structure, carry or
        parameter change) and the arc terms of steady wheels (same ``dt``)."""
        p = self.params
        kin_key = kinematics.effects_key(p)
        if self._kin is None or self._kin[0] != kin_key:
            driving = self._driving_mask()
            self._kin = (kin_key, driving, kinematics.wheel_targets(self._cmd, driving, p))
            self._steady = None
        _, driving, target = self._kin
        old = self._wheel
        if not np.array_equal(old, target):
            self._wheel, mean = kinematics.ramp_wheels(old, target, p.wheel_accel_max, dt)
            self._steady = None
            return kinematics.arc_terms(mean, driving, p, dt)
        # steady wheels: the per-step arc terms are constant; cache them
        if self._steady is None or self._steady[0] != (dt, kin_key):
            self._steady = ((dt, kin_key), kinematics.arc_terms(old, driving, p, dt))
        return self._steady[1]

    def _resolve_motion(self, moving: np.ndarray, prop: np.ndarray,
                        new_rel: dict[str, float], moved: np.ndarray,
                        blocked_pairs: dict, touching: set) -> None:
        """Apply the proposed poses of the moving units, blocking the ones that would
        overlap another module more than before (see the module docstring). Units that
        cannot reach any module in this step (broad phase) are applied without checks."""
        w = self.params.module_width
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
        units = self._units(moving)
        unit_of = {i: u for u, members in units.items() for i in members}
        hit_units = {unit_of[int(i)] for i in mv[hit_rows]}
        # units out of reach of every module cannot overlap anything: apply them first
        for u, unit in units.items():
            if u not in hit_units:
                self._pose[unit] = prop[unit]
                moved[unit] = True
                h = self._ids[u]
                if h in new_rel and h in self._carry:
                    self._carry[h][2] = new_rel[h]
        row_of = {int(i): k for k, i in enumerate(mv)}
        for u in sorted(hit_units):
            self._try_unit(u, units[u], lambda i: np.flatnonzero(near[row_of[i]]), prop,
                           new_rel, moved, blocked_pairs, touching)

    def _capture(self, moved: np.ndarray, events: list[SimEvent], t_end: float) -> None:
        """Connect face pairs that satisfy the capture rule, the first qualifying pair in
        module order first, until none qualifies. Only pairs with a module that moved,
        switched magnets, tilted, lost a connection or was snapped can newly qualify."""
        p = self.params
        w = p.module_width
        dirty = self._capture_dirty | moved
        self._capture_dirty = np.zeros(len(self._ids), dtype=bool)
        has_mag = self._mag.any(axis=1)
        mags = np.flatnonzero(has_mag)
        if len(mags) < 2:
            return
        limit = w + p.capture_range + p.capture_lateral_max + 0.5 * w * math.sin(
            p.capture_angle_max) + 1e-6

        def pairs_of(active: np.ndarray) -> set[tuple[int, int]]:
            xy = self._pose
            dx = xy[active, 0, None] - xy[None, mags, 0]
            dy = xy[active, 1, None] - xy[None, mags, 1]
            close = dx * dx + dy * dy < limit * limit
            out = set()
            for ai, bj in zip(*np.nonzero(close)):
                a_i, b_i = int(active[ai]), int(mags[bj])
                if a_i != b_i:
                    out.add((min(a_i, b_i), max(a_i, b_i)))
            return out

        active = np.flatnonzero(dirty & has_mag)
        if len(active) == 0:
            return
        candidates = pairs_of(active)
        snapped = True
        while snapped:
            snapped = False
            for a_i, b_i in sorted(candidates):
                members = self._capture_pair(a_i, b_i, moved, events, t_end)
                if members is None:
                    continue
                # snapped modules moved: their pairs are candidates too; start again
                if members:
                    m = np.array(members)
                    candidates |= pairs_of(m[has_mag[m]])
                snapped = True
                break

    def _collision_events(self, blocked: dict[tuple[str, str], tuple[float, bool]],
                          touching: set, events: list[SimEvent], t_end: float) -> None:
        """Collision events of blocked motions that are not face contacts, of overlaps left
        by allowed motions (``touching``) and, after pose changes other than checked
        motions (start, snaps, LIFT, RELEASE, releases), of every existing overlap."""
        w = self.params.module_width
        if not blocked and not touching and not self._collisions and not self._overlap_dirty:
            return
        found: dict[tuple[str, str], float] = {}
        for key, (depth, face_contact) in blocked.items():
            if not face_contact:
                found[key] = depth
        for a, b in touching:
            self._overlap_found(self._idx[a], self._idx[b], found)
        n = len(self._ids)
        if self._overlap_dirty and n > 1:
            self._overlap_dirty = False
            xy = self._pose
            dx = xy[:, 0, None] - xy[None, :, 0]
            dy = xy[:, 1, None] - xy[None, :, 1]
            close = np.triu(dx * dx + dy * dy < 2.0 * w * w, k=1)
            close &= self._body[:, None] != self._body[None, :]
            for i, j in zip(*np.nonzero(close)):
                self._overlap_found(int(i), int(j), found)
        self._collision_bookkeeping(found, blocked, events, t_end)
