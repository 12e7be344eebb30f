"""MuJoCo physics backend of the fake hardware: SMORES-EP modules as rigid bodies on a floor.

Pure Python + ``mujoco`` + numpy (no ROS imports). :class:`MujocoWorld` has the public
interface of the kinematic :class:`smores_assembly.sim.SimWorld` (same constructor
arguments, queries, commands, :meth:`MujocoWorld.step` returning the same
:class:`~smores_assembly.sim.SimEvent` list), so the docking core, ``bench.bench_docking``
and the ``fake_hardware`` node can run on either. Units and frames: REP-103 (m, rad, s),
planar poses ``(x, y, yaw)`` in ``world`` (the yaw of the body's x axis projected on the
floor), faces as in :mod:`smores_assembly.geometry`.

Model (built from the one module description, ``description/smores_ep.urdf``, read by
:mod:`smores_assembly.sim.description`):

* **Bodies.** Each module is a free body (6 DoF) with the URDF's mass and inertia, an
  80 x 80 x 76 mm collision box (the shell), two wheels on hinge joints at +-track/2 whose
  tyre touches the floor in one point (a sphere of the wheel radius; friction from the
  URDF), two frictionless skids, and the PAN/TILT joints of the TOP
  face plate (position servos; their targets move at ``joint_speed_max``).
* **Driving.** A body twist ``(v, w)`` becomes wheel-speed targets exactly as in the
  kinematic world (same clipping at ``wheel_speed_max`` keeping the curvature, same linear
  ramp at ``wheel_accel_max``: the motor controller's profile). Each wheel is a velocity
  servo (MuJoCo ``velocity`` actuator, gain ``wheel_kv``, rotor inertia ``wheel_armature``,
  torque limited to the URDF
  effort, control range +-``wheel_speed_max``), so the module rolls, slips and is pushed as
  the contacts dictate. ``wheel_deadband`` and the wheel gains act on the references as in
  the kinematic world; ``wheel_slip`` must be 0 (slip is the contacts' business here).
  Modules of a structure and carried modules hold their wheels at zero.
* **EP magnets.** For two faces of different bodies whose magnets are both on, facing each
  other (misalignment <= 45 deg, centres less than a width apart along the face) at a gap
  ``d`` <= ``magnet_range``, an attraction ``F(d) = F_hold (d0 / (d0 + d))^4`` times the
  overlap fraction ``1 - |lateral| / w`` acts between the two face centres (equal and
  opposite, so it also turns the faces towards each other). This is the force between two
  coaxial magnetic dipoles, ``3 mu0 m1 m2 / (2 pi z^4)``, with the dipoles an effective depth
  ``d0 / 2`` behind each face (``z = d + d0``); ``F_hold`` = ``magnet_holding_force`` (90 N,
  the EP-Face holding force: Tosun et al., "Design and characterization of the EP-Face
  connector", IROS 2016; ``docs/CONVENTIONS.md``) and ``d0`` is fitted so that at the
  capture range the pull equals ``magnet_capture_force`` (default: the module's weight,
  ~4.9 N: the pull that can drag a module across the floor, which is what "captures from
  ~4 mm" means).
  With the defaults d0 = 3.6 mm; the pull is 0.5 N at 10 mm and 0.05 N at 20 mm.
  The capture rule is the kinematic world's: both magnets on, gap <= ``capture_range``,
  face centres within ``capture_lateral_max`` along the face, antiparallel within
  ``capture_angle_max``, a TOP face only with its tilt within ``capture_angle_max`` of 0.
  Then a **weld** (MuJoCo equality constraint) with the exact docked relative pose
  (:func:`smores_assembly.geometry.child_pose`) joins the two bodies and pulls the faces
  flush (a soft constraint, time constant ``weld_timeconst``), and the attraction of that
  pair stops (the weld holds it). Switching either magnet off deactivates the weld at the
  next step (``disconnected``).
* **Helping modules.** ``LIFT`` (same reach check as the kinematic world) welds the module
  to the helper at one width ahead of the helper's TOP face, turned by ``rel_yaw`` (moving
  towards ``carry_yaw`` at ``carry_yaw_rate``, the weld's relative pose is updated every
  step); the carried module's wheels are raised off the floor (its tyres stop touching it;
  it rides on its frictionless skids) and its shell stops touching the helper's (contact
  bitmasks). ``RELEASE`` removes the weld and restores the contacts. When a face of the
  carried module is captured the carry weld is removed (handed over to the structure).
* **Collisions** are MuJoCo contacts between the shells of two modules of different
  structures (a helper and its load excepted) that are not face contacts (antiparallel
  faces within ``capture_angle_max``, overlapping along the face, depth at most
  ``contact_penetration_max``). One ``collision`` event per contact start (depth = deepest
  contact); the contact ends when the shells are ``collision_clear_distance`` apart.
  Contacts are physical: nothing is blocked by rule, the bodies push each other.

Stepping: :meth:`MujocoWorld.step` advances ``dt`` in ``ceil(dt / timestep_max)`` equal MuJoCo
steps (implicit-fast integrator); commands, magnet forces and the carry pose are held over
``dt``. Pace: see ``python -m bench.bench_docking --backend mujoco`` and the README.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import mujoco
import numpy as np

from smores_assembly.geometry import Face, Pose2D, child_pose, square_overlap, wrap_angle
from smores_assembly.params import param_field
from smores_assembly.sim.description import ModuleDescription, load_description
from smores_assembly.sim import kinematics
from smores_assembly.sim.base import WorldBase
from smores_assembly.sim.model import (FACE_ANGLES, FACES, SimError, SimEvent, SimParams,
                                       check_params, finite)

#: Helper commands (as :class:`smores_assembly.sim.SimWorld`).

_GRAVITY = 9.81
#: contact bits: module shells, floor and what touches it, then one bit per helper
_SHELL, _FLOOR = 1, 2
_MAX_HELPERS = 29


@dataclass
class MujocoParams:
    """Parameters of the MuJoCo backend beyond :class:`SimParams` (SI units)."""

    timestep_max: float = param_field(0.002, "longest MuJoCo integration step [s]",
                                      1e-5, 0.01)
    magnet_holding_force: float = param_field(
        90.0, "EP-magnet pull at zero gap (holding force) [N]", 0.0, 1000.0)
    magnet_capture_force: float = param_field(
        0.0, "EP-magnet pull at capture_range [N]; 0: the module's weight", 0.0, 1000.0)
    magnet_range: float = param_field(
        0.02, "EP-magnet attraction acts below this gap [m]", 0.0, 0.2)
    weld_timeconst: float = param_field(
        0.01, "time constant of the dock and carry welds [s] (>= 2 timestep_max)",
        1e-4, 1.0)
    wheel_kv: float = param_field(
        0.5, "wheel velocity servo gain [N m s/rad]", 1e-5, 10.0)
    wheel_armature: float = param_field(
        1e-3, "reflected rotor inertia of a wheel's gear motor [kg m^2] (ASSUMED: a micro "
        "motor rotor of ~1e-8 kg m^2 through a ~300:1 gearbox; without it the stiff wheel "
        "servo makes the tyres creep and the body over-turn)", 0.0, 1.0)
    joint_kp: float = param_field(2.0, "pan/tilt position servo gain [N m/rad]", 1e-4, 100.0)

    def validate(self) -> None:
        """Raise :class:`SimError` naming the field when a value is out of range or NaN."""
        check_params(self)


def magnet_force(gap: float, holding: float, capture_force: float,
                 capture_range: float) -> float:
    """EP-magnet pull [N] at face gap ``gap`` [m]: ``holding * (d0 / (d0 + gap))**4`` with
    ``d0`` such that the pull at ``capture_range`` is ``capture_force`` (see the module
    docstring for the model and its source). 0 when ``holding`` is 0."""
    if holding <= 0.0:
        return 0.0
    k = min(max(capture_force / holding, 1e-12), 1.0 - 1e-12) ** 0.25
    d0 = max(capture_range, 1e-6) * k / (1.0 - k)
    return holding * (d0 / (d0 + max(gap, 0.0))) ** 4


def _face_relation(pa, fa: int, pb, fb: int, w: float):
    """(gap, lateral, misalignment, axial) of face ``fa`` of a module at ``pa`` and face
    ``fb`` of one at ``pb``: ``axial`` [m] = distance of b's face centre in front of a's face
    plane, ``gap`` [m] = that less the reach of b's nearest corner (``w/2 |sin mis|``),
    clipped at 0, ``lateral`` [m] = offset of the centres along face a, ``misalignment``
    [rad] = deviation from antiparallel normals (>= 0)."""
    h = 0.5 * w
    aa = pa[2] + FACE_ANGLES[fa]
    ba = pb[2] + FACE_ANGLES[fb]
    ca, sa = math.cos(aa), math.sin(aa)
    ax, ay = pa[0] + h * ca, pa[1] + h * sa
    bx, by = pb[0] + h * math.cos(ba), pb[1] + h * math.sin(ba)
    dx, dy = bx - ax, by - ay
    axial = dx * ca + dy * sa
    lateral = -dx * sa + dy * ca
    mis = abs(wrap_angle(aa - ba - math.pi))
    gap = max(0.0, axial - h * abs(math.sin(mis)))
    return gap, lateral, mis, axial


class MujocoWorld(WorldBase):
    """SMORES-EP modules simulated by MuJoCo; see the module docstring for the model.

    Args:
        poses: initial pose of every module in ``world`` (``Pose2D`` or ``(x, y, yaw)``).
        params: the parameters shared with the kinematic world (:class:`SimParams`);
            ``module_width``, ``wheel_radius``, ``track`` and ``wheel_speed_max`` override
            the description's values.
        helpers: ids of helping modules (they accept :meth:`helper_command`).
        mj_params: MuJoCo-specific parameters (:class:`MujocoParams`).
        description: the module description (default: ``description/smores_ep.urdf``).

    Raises:
        SimError: no modules, an id that is empty or not a string, a non-finite pose, a
            helper that is not a module, more than 29 helpers, or a parameter out of range.
    """

    def __init__(self, poses: Mapping[str, Pose2D | tuple[float, float, float]],
                 params: SimParams | None = None, helpers: Iterable[str] = (),
                 mj_params: MujocoParams | None = None,
                 description: ModuleDescription | None = None) -> None:
        self.params = params if params is not None else SimParams()
        self.params.validate()
        if self.params.wheel_slip != 0.0:
            raise SimError(f"wheel_slip: {self.params.wheel_slip} must be 0 on the MuJoCo "
                           f"backend (slip comes from the tyre contacts there)")
        self.mj_params = mj_params if mj_params is not None else MujocoParams()
        self.mj_params.validate()
        self.description = description if description is not None else load_description()
        start = self._init_modules(poses, helpers)
        n = len(self._ids)
        if len(self._helpers) > _MAX_HELPERS:
            raise SimError(f"helpers: at most {_MAX_HELPERS} helping modules on the MuJoCo "
                           f"backend (got {len(self._helpers)})")
        self._helper_bit = {h: 1 << (2 + k) for k, h in enumerate(self._helpers)}
        self._all_helper_bits = sum(self._helper_bit.values())
        self._wheel_target = np.zeros((n, 2))     # ramped wheel-speed command [rad/s]
        self._joint_ref = np.zeros((n, 2))        # servo reference moving at joint_speed_max
        self._build(start)
        self._pose = self._read_poses()

    # --- model ---------------------------------------------------------------------------
    def _build(self, start: np.ndarray) -> None:
        p, mp, desc = self.params, self.mj_params, self.description
        n = len(self._ids)
        r = p.wheel_radius
        bx, by, bz = desc.body_size
        scale = p.module_width / bx                   # a module_width other than 0.08
        hx, hy, hz = 0.5 * bx * scale, 0.5 * by * scale, 0.5 * bz * scale
        zc = r                                        # wheel axle height = body centre
        mu = desc.friction
        cap = p.wheel_speed_max
        eff = desc.wheel_effort_max
        self._zc = zc

        def inertial(i, pos=(0.0, 0.0, 0.0)):
            c = tuple(a + b for a, b in zip(i.com, pos))
            return (f'<inertial pos="{c[0]} {c[1]} {c[2]}" mass="{i.mass}" '
                    f'diaginertia="{i.diag[0]} {i.diag[1]} {i.diag[2]}"/>')

        parts = [
            '<mujoco model="smores_world">',
            '<compiler angle="radian" autolimits="true"/>',
            f'<option timestep="{mp.timestep_max}" integrator="implicitfast" '
            f'gravity="0 0 {-_GRAVITY}" noslip_iterations="3" '
            'cone="elliptic"/>',
            f'<size memory="{max(8, 2 * n)}M"/>',
            '<worldbody>',
            f'<geom name="floor" type="plane" size="0 0 1" contype="{_FLOOR}" '
            f'conaffinity="{_FLOOR}" friction="{mu["left_wheel"]} 0.005 0.0001"/>',
        ]
        shell_mu = mu["base_link"]
        skid_z = desc.skid_z
        for i, (x, y, yaw) in enumerate(start):
            q = (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))
            ct, ca = self._shell_bits(self._ids[i])
            parts += [
                f'<body name="m{i}" pos="{x} {y} {zc}" quat="{q[0]} 0 0 {q[3]}">',
                f'<freejoint name="m{i}_free"/>',
                inertial(desc.body),
                f'<geom name="m{i}_shell" type="box" size="{hx} {hy} {hz}" contype="{ct}" '
                f'conaffinity="{ca}" friction="{shell_mu} 0.005 0.0001" mass="0"/>',
            ]
            for k, sx in enumerate(desc.skid_x):
                parts.append(
                    f'<geom name="m{i}_skid{k}" type="sphere" size="{desc.skid_radius}" '
                    f'pos="{sx * scale} 0 {skid_z}" contype="0" '
                    f'conaffinity="{_FLOOR}" condim="1" priority="1" friction="0 0 0" '
                    f'mass="0"/>')
            for side, sy in (("l", 0.5 * p.track), ("r", -0.5 * p.track)):
                parts += [
                    f'<body name="m{i}_w{side}" pos="0 {sy} 0">',
                    f'<joint name="m{i}_w{side}" type="hinge" axis="0 1 0" '
                    f'armature="{mp.wheel_armature}"/>',
                    inertial(desc.wheel),
                    f'<geom name="m{i}_tyre{side}" type="sphere" size="{r}" '
                    f'contype="0" conaffinity="{_FLOOR}" condim="3" '
                    f'friction="{mu["left_wheel"]} 0.005 0.0001" mass="0"/>',
                    '</body>',
                ]
            parts += [
                f'<body name="m{i}_tilt" pos="{desc.tilt_x * scale} 0 0">',
                f'<joint name="m{i}_tilt" type="hinge" axis="0 1 0" '
                f'range="{-p.tilt_limit} {p.tilt_limit}" damping="0.01"/>',
                '<inertial pos="0 0 0" mass="0.001" diaginertia="1e-8 1e-8 1e-8"/>',
                f'<body name="m{i}_face">',
                f'<joint name="m{i}_pan" type="hinge" axis="1 0 0" '
                f'range="{-p.pan_limit} {p.pan_limit}" damping="0.01"/>',
                inertial(desc.face),
                '</body></body>',
                '</body>',
            ]
        parts.append('</worldbody><actuator>')
        for i in range(n):
            for side in ("l", "r"):
                parts.append(f'<velocity name="m{i}_w{side}" joint="m{i}_w{side}" '
                             f'kv="{mp.wheel_kv}" ctrlrange="{-cap} {cap}" '
                             f'forcerange="{-eff} {eff}"/>')
            for j in ("pan", "tilt"):
                parts.append(f'<position name="m{i}_{j}" joint="m{i}_{j}" kp="{mp.joint_kp}" '
                             f'kv="0.05" forcerange="-1 1"/>')
        parts.append('</actuator>')
        if n > 1:
            parts.append('<equality>')
        tc = max(mp.weld_timeconst, 2.0 * mp.timestep_max)
        # one weld per module pair: a dock (magnets) or a carry (helper), never both
        self._weld: dict[tuple[int, int], int] = {}
        for lo in range(n):
            for hi in range(lo + 1, n):
                parts.append(f'<weld name="w{lo}_{hi}" body1="m{lo}" body2="m{hi}" '
                             f'active="false" solref="{tc} 1" relpose="0 0 0 1 0 0 0"/>')
                self._weld[(lo, hi)] = len(self._weld)
        if n > 1:
            parts.append('</equality>')
        parts.append('</mujoco>')
        xml = "\n".join(parts)
        self.xml = xml
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        m = self.model
        name2id = lambda kind, name: mujoco.mj_name2id(m, kind, name)  # noqa: E731
        B, J, G = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_GEOM
        self._bid = np.array([name2id(B, f"m{i}") for i in range(n)])
        self._shell = np.array([name2id(G, f"m{i}_shell") for i in range(n)])
        self._tyres = np.array([[name2id(G, f"m{i}_tyre{s}") for s in "lr"]
                                for i in range(n)])
        geom_module = np.full(m.ngeom, -1)
        geom_module[self._shell] = np.arange(n)
        self._geom_module = geom_module
        self._wheel_dof = np.array([[m.jnt_dofadr[name2id(J, f"m{i}_w{s}")] for s in "lr"]
                                    for i in range(n)])
        self._joint_qpos = np.array([[m.jnt_qposadr[name2id(J, f"m{i}_{j}")]
                                      for j in ("pan", "tilt")] for i in range(n)])
        self._act_wheel = np.arange(n)[:, None] * 4 + np.array([0, 1])
        self._act_joint = np.arange(n)[:, None] * 4 + np.array([2, 3])
        # settle on the floor (contact forces established, no command) before t = 0
        self.data.ctrl[:] = 0.0
        mujoco.mj_step(m, self.data, int(round(0.2 / mp.timestep_max)))
        self.data.qvel[:] = 0.0
        mujoco.mj_forward(m, self.data)

    def _shell_bits(self, module: str, carried_by: str | None = None) -> tuple[int, int]:
        """(contype, conaffinity) of a module's shell.

        Bits: 1 = shells, 2 = the floor and what touches it (tyres, skids), ``1 << (2 + k)``
        = helper k. Two geoms touch when ``contype_a & conaffinity_b`` or
        ``contype_b & conaffinity_a`` is non-zero. A shell has type 1 and affinity 1 plus
        every helper bit except its own (when it is a helper); the load of helper k has
        type ``B_k`` and affinity all helper bits but ``B_k``: it touches every shell and
        every other load, never its own helper."""
        if carried_by is not None:
            b = self._helper_bit[carried_by]
            return b, self._all_helper_bits & ~b     # touches all shells but its helper's
        if module in self._helper_bit:
            return _SHELL, _SHELL | (self._all_helper_bits & ~self._helper_bit[module])
        return _SHELL, _SHELL | self._all_helper_bits

    def _set_carried_contacts(self, module: str, helper: str | None) -> None:
        i = self._idx[module]
        ct, ca = self._shell_bits(module, helper)
        self.model.geom_contype[self._shell[i]] = ct
        self.model.geom_conaffinity[self._shell[i]] = ca
        self.model.geom_conaffinity[self._tyres[i]] = 0 if helper is not None else _FLOOR

    def _set_weld(self, a: int, b: int, rel_b_in_a: tuple[float, float, float],
                  active: bool) -> None:
        """Activate/deactivate the weld of modules a, b holding b at planar pose
        ``rel_b_in_a`` (x, y, yaw) in a's frame (same height)."""
        i, j = (a, b) if a < b else (b, a)
        x, y, yaw = rel_b_in_a
        if a > b:   # the weld's body1 is the lower index: invert the relative pose
            c, s = math.cos(yaw), math.sin(yaw)
            x, y, yaw = -(c * x + s * y), -(-s * x + c * y), -yaw
        k = self._weld[(i, j)]
        eq = self.model.eq_data[k]
        eq[0:3] = 0.0
        eq[3:6] = (x, y, 0.0)
        eq[6:10] = (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))
        eq[10] = 1.0
        self.data.eq_active[k] = active

    def _weld_off(self, a: int, b: int) -> None:
        i, j = (a, b) if a < b else (b, a)
        self.data.eq_active[self._weld[(i, j)]] = False

    def _read_poses(self) -> np.ndarray:
        d = self.data
        pos = d.xpos[self._bid]
        q = d.xquat[self._bid]
        w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        out = np.empty((len(self._ids), 3))
        out[:, 0], out[:, 1] = pos[:, 0], pos[:, 1]
        out[:, 2] = (yaw + math.pi) % (2 * math.pi) - math.pi
        return out

    # --- queries beyond WorldBase's ------------------------------------------------------
    def height(self, module: str) -> float:
        """Height of the module's centre above the floor [m] (0.04 when standing)."""
        return float(self.data.xpos[self._bid[self._i(module)], 2])

    def joint_states(self, module: str) -> tuple[float, float]:
        """Current (pan, tilt) of ``module`` [rad] (MuJoCo joint positions)."""
        qa = self._joint_qpos[self._i(module)]
        return float(self.data.qpos[qa[0]]), float(self.data.qpos[qa[1]])

    def wheel_speeds(self, module: str) -> tuple[float, float]:
        """Current (left, right) wheel speeds of ``module`` relative to its body [rad/s]
        (positive drives forward)."""
        dl, dr = self._wheel_dof[self._i(module)]
        return float(self.data.qvel[dl]), float(self.data.qvel[dr])

    # --- what a helper command changes here (WorldBase's hooks) --------------------------
    def _on_lift(self, helper: str, h: int, j: int, rel: float) -> None:
        self._set_carried_contacts(self._ids[j], helper)
        self._set_weld(h, j, (self.params.module_width, 0.0, rel), True)

    def _release(self, helper: str) -> None:
        module = self._carry[helper][0]
        super()._release(helper)
        self._weld_off(self._idx[helper], self._idx[module])
        self._set_carried_contacts(module, None)

    # --- internals -----------------------------------------------------------------------
    def _exempt(self, a: str, b: str) -> bool:
        return self._carrier.get(a) == b or self._carrier.get(b) == a

    def _is_face_contact(self, pa, pb, depth: float) -> bool:
        p = self.params
        if depth > p.contact_penetration_max:
            return False
        w = p.module_width
        for fa in range(4):
            for fb in range(4):
                _, lateral, mis, axial = _face_relation(pa, fa, pb, fb, w)
                if (mis <= p.capture_angle_max + 1e-9 and abs(lateral) < w
                        and axial > -p.contact_penetration_max - 1e-9):
                    ang = pa[2] + FACE_ANGLES[fa]
                    if (pb[0] - pa[0]) * math.cos(ang) + (pb[1] - pa[1]) * math.sin(ang) > 0:
                        return True
        return False

    def _magnet_pairs(self):
        """Candidate (a, face a, b, face b, relation) with both magnets on, different
        modules, not a helper and its load, faces not already used."""
        p = self.params
        w = p.module_width
        mags = np.flatnonzero(self._mag.any(axis=1))
        if len(mags) < 2:
            return []
        xy = self._pose[mags, :2]
        lim = w + max(self.mj_params.magnet_range, p.capture_range) + w
        d2 = ((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2)
        out = []
        for ia, ib in zip(*np.nonzero(np.triu(d2 < lim * lim, k=1))):
            a_i, b_i = int(mags[ia]), int(mags[ib])
            a, b = self._ids[a_i], self._ids[b_i]
            if self._exempt(a, b):
                continue
            for fa in np.flatnonzero(self._mag[a_i]):
                if (a, FACES[fa]) in self._face_used:
                    continue
                for fb in np.flatnonzero(self._mag[b_i]):
                    if (b, FACES[fb]) in self._face_used:
                        continue
                    rel = _face_relation(self._pose[a_i], int(fa), self._pose[b_i], int(fb), w)
                    gap, lateral, mis, axial = rel
                    if axial < -p.contact_penetration_max or abs(lateral) >= w:
                        continue
                    out.append((a_i, int(fa), b_i, int(fb), rel))
        return out

    def _apply_magnets(self, pairs) -> None:
        """Attraction of facing magnet pairs into ``data.xfrc_applied`` (see the model)."""
        xf = self.data.xfrc_applied
        xf[:] = 0.0
        p, mp = self.params, self.mj_params
        if mp.magnet_holding_force <= 0.0:
            return
        cap_f = mp.magnet_capture_force or self.description.total_mass * _GRAVITY
        w = p.module_width
        h = 0.5 * w
        com = self.data.xipos
        for a_i, fa, b_i, fb, (gap, lateral, mis, _axial) in pairs:
            if self._body[a_i] == self._body[b_i]:
                continue
            if gap > mp.magnet_range or mis > math.pi / 4:
                continue
            f = magnet_force(gap, mp.magnet_holding_force, cap_f, p.capture_range)
            f *= max(0.0, 1.0 - abs(lateral) / w)
            pa, pb = self._pose[a_i], self._pose[b_i]
            aa, ba = pa[2] + FACE_ANGLES[fa], pb[2] + FACE_ANGLES[fb]
            ca = np.array([pa[0] + h * math.cos(aa), pa[1] + h * math.sin(aa)])
            cb = np.array([pb[0] + h * math.cos(ba), pb[1] + h * math.sin(ba)])
            u = cb - ca
            dist = float(np.hypot(*u))
            u = u / dist if dist > 1e-9 else np.array([math.cos(aa), math.sin(aa)])
            for idx, centre, sign in ((a_i, ca, 1.0), (b_i, cb, -1.0)):
                bid = self._bid[idx]
                fx, fy = sign * f * u[0], sign * f * u[1]
                rx, ry = centre[0] - com[bid, 0], centre[1] - com[bid, 1]
                xf[bid, 0] += fx
                xf[bid, 1] += fy
                xf[bid, 5] += rx * fy - ry * fx

    def _capture(self, pairs, events: list[SimEvent], t_end: float) -> None:
        p = self.params
        w = p.module_width
        for a_i, fa, b_i, fb, (gap, lateral, mis, _axial) in pairs:
            a, b = self._ids[a_i], self._ids[b_i]
            face_a, face_b = FACES[fa], FACES[fb]
            if (a, face_a) in self._face_used or (b, face_b) in self._face_used:
                continue
            if not (gap <= p.capture_range + 1e-9 and abs(lateral) <= p.capture_lateral_max
                    + 1e-9 and mis <= p.capture_angle_max + 1e-9):
                continue
            tilt_ok = True
            for idx, face in ((a_i, face_a), (b_i, face_b)):
                if face is Face.TOP and abs(self.data.qpos[self._joint_qpos[idx, 1]]) > \
                        p.capture_angle_max:
                    tilt_ok = False
            if not tilt_ok:
                continue
            for m in (a, b):          # handed over: the carry weld gives way to the dock
                if m in self._carrier:
                    self._release(self._carrier[m])
            rel = child_pose(Pose2D(0.0, 0.0, 0.0), face_a, face_b, w)
            self._set_weld(a_i, b_i, rel.as_tuple(), True)
            conn = self._add_connection(a, face_a, b, face_b)
            events.append(SimEvent("connected", t_end, (conn.module_a, conn.module_b),
                                   (conn.face_a, conn.face_b)))

    def _collision_events(self, events: list[SimEvent], t_end: float) -> None:
        p = self.params
        w = p.module_width
        d = self.data
        found: dict[tuple[str, str], float] = {}
        ncon = d.ncon
        if ncon:
            con = d.contact
            g1 = self._geom_module[con.geom1[:ncon]]
            g2 = self._geom_module[con.geom2[:ncon]]
            shell = (g1 >= 0) & (g2 >= 0)
            if shell.any():
                depth = -con.dist[:ncon]
                for k in np.flatnonzero(shell):
                    i, j = int(g1[k]), int(g2[k])
                    if self._body[i] == self._body[j]:
                        continue
                    a, b = self._ids[i], self._ids[j]
                    if self._exempt(a, b):
                        continue
                    key = (a, b) if a < b else (b, a)
                    found[key] = max(found.get(key, 0.0), float(depth[k]))
        for key in list(found):
            i, j = self._idx[key[0]], self._idx[key[1]]
            if self._is_face_contact(tuple(self._pose[i]), tuple(self._pose[j]), found[key]):
                del found[key]
        for key, depth in sorted(found.items()):
            if key not in self._collisions:
                events.append(SimEvent("collision", t_end, key, None, max(depth, 0.0)))
            self._collisions[key] = depth
        for key in list(self._collisions):
            if key in found:
                continue
            i, j = self._idx[key[0]], self._idx[key[1]]
            same = self._body[i] == self._body[j]
            gap = -square_overlap(tuple(self._pose[i]), tuple(self._pose[j]), w)
            if same or self._exempt(*key) or gap > p.collision_clear_distance:
                del self._collisions[key]

    # --- stepping ------------------------------------------------------------------------
    def connect_at_start(self, connections) -> None:
        """Start structures (a reconfiguration's ``initial.connections``): not supported
        on this backend yet (the kinematic world's
        :meth:`~smores_assembly.sim.SimWorld.connect_at_start` has them); no connections
        is a no-op.

        Raises:
            SimError: any connection given, naming the field.
        """
        if list(connections):
            raise SimError("connections: start structures (initial.connections) are not "
                           "supported on the mujoco backend yet; use the kinematic one")

    def step(self, dt: float) -> list[SimEvent]:
        """Advance the world by ``dt`` [s]: releases, joint and wheel references, carry
        poses, magnet forces, MuJoCo steps, captures, collision bookkeeping.

        Returns:
            The events of this step: disconnections, then collisions, then connections.

        Raises:
            SimError: ``dt`` not a positive finite number.
        """
        dt = finite(dt, "dt")
        if dt <= 0.0:
            raise SimError(f"dt: {dt} must be > 0")
        p, mp = self.params, self.mj_params
        m, d = self.model, self.data
        events: list[SimEvent] = []
        t_end = self.t + dt

        # 1. releases (a magnet switched off on either face)
        if self._conns:
            released = self._switched_off()
            for c in released:
                self._drop_connection(c)
                self._weld_off(self._idx[c.module_a], self._idx[c.module_b])
                events.append(SimEvent("disconnected", t_end, (c.module_a, c.module_b),
                                       (c.face_a, c.face_b)))
            if released:
                self._recompute_bodies()

        # 2. joint servo references at joint_speed_max
        lim = p.joint_speed_max * dt
        self._joint_ref += np.clip(self._joint_target - self._joint_ref, -lim, lim)
        d.ctrl[self._act_joint] = self._joint_ref

        # 3. wheel-speed references: the kinematic world's targets (speed cap, motor
        # controller deadband and gains) and ramp
        target = kinematics.wheel_targets(self._cmd, self._driving_mask(), p)
        wheel_start = self._wheel_target
        self._wheel_target, _ = kinematics.ramp_wheels(wheel_start, target,
                                                       p.wheel_accel_max, dt)
        delta = self._wheel_target - wheel_start

        # 4. carry rotation (weld relative pose)
        w = p.module_width
        for h, carry in self._carry.items():
            carry[2] = kinematics.carry_turn(carry[2], carry[1], p.carry_yaw_rate, dt)
            self._set_weld(self._idx[h], self._idx[carry[0]], (w, 0.0, carry[2]), True)

        # 5. magnet attraction, held over the step
        pairs = self._magnet_pairs()
        self._apply_magnets(pairs)

        # 6. integrate; the wheel references ramp linearly over the sub-steps (a staircase
        # of dt-sized jumps would make the servos jerk the body)
        nsub = max(1, math.ceil(dt / mp.timestep_max - 1e-9))
        m.opt.timestep = dt / nsub
        if np.array_equal(wheel_start, self._wheel_target):
            d.ctrl[self._act_wheel] = self._wheel_target
            mujoco.mj_step(m, d, nsub)
        else:
            for k in range(1, nsub + 1):
                d.ctrl[self._act_wheel] = wheel_start + delta * (k / nsub)
                mujoco.mj_step(m, d)
        d.xfrc_applied[:] = 0.0
        self._pose = self._read_poses()

        # 7. captures (on the new poses), 8. collisions
        if pairs:
            self._capture(self._magnet_pairs(), events, t_end)
        self._collision_events(events, t_end)
        self.t = t_end
        if len(events) > 1:
            order = {"disconnected": 0, "collision": 1, "connected": 2}
            events.sort(key=lambda e: order[e.kind])
        return events
