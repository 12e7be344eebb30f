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
module (state, queries, commands, the cached step) with its parts :mod:`.magnets`
(releases, captures, snapping, bodies), :mod:`.collisions` (blocked motions, contacts) and
:mod:`.helpers` (LIFT/ROTATE/RELEASE), and :mod:`.reference` (the same step without any
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
Parallel Self-assembly" (Sec. II); conventions in ``docs/CONVENTIONS.md``.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from smores_assembly.geometry import Pose2D, square_overlap
from smores_assembly.sim import kinematics
from smores_assembly.sim.base import WorldBase
from smores_assembly.sim.collisions import CollisionsMixin
from smores_assembly.sim.helpers import HelpersMixin
from smores_assembly.sim.magnets import MagnetsMixin
from smores_assembly.sim.model import (FACES, HELPER_COMMANDS, Connection,
                                       SimError, SimEvent, SimParams, finite)

__all__ = ["FACES", "HELPER_COMMANDS", "Connection", "SimError", "SimEvent", "SimParams",
           "SimWorld", "square_overlap"]


class SimWorld(HelpersMixin, MagnetsMixin, CollisionsMixin, WorldBase):
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
        self._pose = self._init_modules(poses, helpers)
        n = len(self._ids)
        self._wheel = np.zeros((n, 2))        # left, right wheel speed [rad/s]
        self._joint = np.zeros((n, 2))        # pan, tilt [rad]
        self._kin: Any = None                           # cached wheel targets
        self._steady: Any = None                        # cached steady arc terms
        self._clearance = -1.0                          # broad-phase skip margin [m]
        self._clearance_movers = None                   # movers it was measured for
        self._overlap_dirty = True                      # full overlap scan due
        self._capture_dirty = np.ones(n, dtype=bool)    # capture check due
        self._joints_moving = False

    # --- queries beyond WorldBase's ------------------------------------------------------
    def joint_states(self, module: str) -> tuple[float, float]:
        """Current (pan, tilt) of ``module`` [rad]."""
        p, t = self._joint[self._i(module)]
        return float(p), float(t)

    def wheel_speeds(self, module: str) -> tuple[float, float]:
        """Current (left, right) wheel speeds of ``module`` [rad/s]."""
        left, right = self._wheel[self._i(module)]
        return float(left), float(right)

    # --- what a command changes here (WorldBase's hooks) ---------------------------------
    def _on_cmd_vel(self, i: int) -> None:
        self._kin = None

    def _on_magnets(self, i: int) -> None:
        self._capture_dirty[i] = True

    def _on_joints(self, i: int) -> None:
        self._joints_moving = True

    # --- internals shared by both steps --------------------------------------------------
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
        # (==).all(), not np.array_equal, whose checks cost more than the comparison (same
        # shapes and dtype here; every step, issue 10)
        if not (old == target).all():
            self._wheel, mean = kinematics.ramp_wheels(old, target, p.wheel_accel_max, dt)
            self._steady = None
            return kinematics.arc_terms(mean, driving, p, dt)
        # steady wheels: the per-step arc terms are constant; cache them
        if self._steady is None or self._steady[0] != (dt, kin_key):
            self._steady = ((dt, kin_key), kinematics.arc_terms(old, driving, p, dt))
        return self._steady[1]
