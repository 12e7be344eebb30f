"""What both fake-hardware worlds share (no ROS): module ids, poses and helpers as given,
the queries, the validated commands, the rules of the helper commands, and the bookkeeping
of carrying, magnetic connections and rigid bodies.

:class:`~.world.SimWorld` (kinematic) and :class:`~.mujoco_world.MujocoWorld` (MuJoCo)
derive from :class:`WorldBase` and add their physics: the poses (``_pose``), the joint and
wheel states, the step, and what a command changes in their model (the ``_on_*`` hooks).
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from smores_assembly.errors import InputError
from smores_assembly.geometry import Face, Pose2D, wrap_angle
from smores_assembly.sim.model import (FACE_INDEX, FACES, Connection, SimError, SimParams,
                                       finite)
from smores_assembly.vocabulary import HelperOp


class WorldBase:
    """State and rules common to the simulated worlds (see the module docstring).

    State (rows in :meth:`modules` order): ``_cmd`` (N, 2) commanded v [m/s], w [rad/s];
    ``_mag`` (N, 4) magnets on, faces in :data:`~.model.FACES` order; ``_joint_target``
    (N, 2) commanded pan, tilt [rad]; ``_carry`` helper -> [carried module, carry_yaw
    target, current relative yaw]; ``_carrier`` carried module -> helper; ``_conns`` the
    connections, ``_face_used`` (module, face) -> its connection; ``_body`` rigid-body label
    per module and ``_body_size`` its body's size; ``_collisions`` sorted pair -> depth [m];
    ``t`` simulated time [s]. The subclass keeps ``_pose`` (N, 3): x, y [m], yaw [rad].
    """

    params: SimParams
    _pose: np.ndarray

    def _init_modules(self, poses: Mapping[str, Pose2D | tuple[float, float, float]],
                      helpers: Iterable[str]) -> np.ndarray:
        """Check and store the module ids and the helpers, and set the shared state.

        Returns:
            The start poses, shape (N, 3), yaw wrapped to [-pi, pi).

        Raises:
            SimError: no modules, an id that is empty or not a string, a pose that is not
                three finite numbers, a helper that is not a module.
        """
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
        self._helpers: list[str] = []
        for h in helpers:
            if h not in self._idx:
                raise SimError(f"helpers: {h!r} is not a module (modules: {self._ids})")
            if h not in self._helpers:
                self._helpers.append(h)
        self._cmd = np.zeros((n, 2))
        self._mag = np.zeros((n, 4), dtype=bool)
        self._joint_target = np.zeros((n, 2))
        self._carry: dict[str, list] = {}
        self._carrier: dict[str, str] = {}
        self._conns: set[Connection] = set()
        self._face_used: dict[tuple[str, Face], Connection] = {}
        self._body = np.arange(n)
        self._body_size = np.ones(n, dtype=int)
        self._collisions: dict[tuple[str, str], float] = {}
        self.t = 0.0
        return np.array(rows, dtype=float).reshape(n, 3)

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
        """Ground-truth planar pose of ``module`` in ``world`` (yaw in [-pi, pi))."""
        x, y, yaw = self._pose[self._i(module)]
        return Pose2D(float(x), float(y), float(yaw))

    def poses(self) -> dict[str, Pose2D]:
        """Ground-truth planar poses of all modules."""
        return {m: Pose2D(float(p[0]), float(p[1]), float(p[2]))
                for m, p in zip(self._ids, self._pose)}

    def pose_array(self) -> np.ndarray:
        """Copy of all planar poses, shape (N, 3): x [m], y [m], yaw [rad], rows in
        :meth:`modules` order."""
        return self._pose.copy()

    def joint_targets(self, module: str) -> tuple[float, float]:
        """Commanded (pan, tilt) of ``module`` [rad]."""
        p, t = self._joint_target[self._i(module)]
        return float(p), float(t)

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
        curvature kept; ignored while the module is carried or part of a structure.

        Raises:
            SimError: unknown module, a non-finite value.
        """
        i = self._i(module)
        self._cmd[i, 0] = finite(v, "v")
        self._cmd[i, 1] = finite(w, "w")
        self._on_cmd_vel(i)

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
            except InputError as exc:
                raise SimError(str(exc)) from None
        if not np.array_equal(self._mag[i], row):
            self._mag[i] = row
            self._on_magnets(i)

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
        self._on_joints(i)

    def helper_command(self, helper: str, command: HelperOp | str | int, module: str = "",
                       carry_yaw: float = 0.0) -> None:
        """Command a helping module (``command``: a :class:`HelperOp`, its name or its
        message value): ``'LIFT'`` ``module`` (carried turned towards
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
        try:
            cmd = HelperOp.parse(command)
        except InputError as exc:
            raise SimError(str(exc), field=exc.field) from None
        yaw = wrap_angle(finite(carry_yaw, "carry_yaw"))
        if cmd is HelperOp.LIFT:
            self._lift(helper, module, yaw)
        elif cmd is HelperOp.ROTATE:
            if helper not in self._carry:
                raise SimError(f"ROTATE: helper {helper} carries nothing")
            self._carry[helper][1] = yaw
        else:
            if helper not in self._carry:
                raise SimError(f"RELEASE: helper {helper} carries nothing")
            self._on_release_command(helper)

    def _lift(self, helper: str, module: str, yaw: float) -> None:
        """LIFT's checks (see :meth:`helper_command`), then the carry bookkeeping."""
        w = self.params.module_width
        if helper in self._carry:
            raise SimError(f"LIFT: helper {helper} already carries {self._carry[helper][0]}")
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
        self._on_lift(helper, h, j, rel)

    # --- what a command changes in the subclass's model (default: nothing) ----------------
    def _on_cmd_vel(self, i: int) -> None:
        """Module ``i`` got a new twist command."""

    def _on_magnets(self, i: int) -> None:
        """Module ``i`` switched its magnets (the row changed)."""

    def _on_joints(self, i: int) -> None:
        """Module ``i`` got new joint targets."""

    def _on_lift(self, helper: str, h: int, j: int, rel: float) -> None:
        """``helper`` (index ``h``) now carries module ``j`` at relative yaw ``rel``."""

    def _on_release_command(self, helper: str) -> None:
        """RELEASE: ``helper`` puts its load down (``_release`` and the model's part)."""
        self._release(helper)

    def _release(self, helper: str) -> None:
        """End the carry of ``helper`` (the bookkeeping; subclasses add their model's)."""
        module = self._carry.pop(helper)[0]
        self._carrier.pop(module, None)

    # --- connections and rigid bodies ----------------------------------------------------
    def _switched_off(self) -> list[Connection]:
        """The connections of which a magnet is off, sorted (they are released)."""
        return sorted(c for c in self._conns
                      if not (self._mag[self._idx[c.module_a], FACE_INDEX[c.face_a]]
                              and self._mag[self._idx[c.module_b], FACE_INDEX[c.face_b]]))

    def _drop_connection(self, c: Connection) -> None:
        """Forget connection ``c`` (call :meth:`_recompute_bodies` afterwards)."""
        self._conns.discard(c)
        self._face_used.pop((c.module_a, c.face_a), None)
        self._face_used.pop((c.module_b, c.face_b), None)

    def _add_connection(self, a: str, face_a: Face, b: str, face_b: Face) -> Connection:
        """Record the connection of two free faces and recompute the rigid bodies."""
        conn = Connection.make(a, face_a, b, face_b)
        self._conns.add(conn)
        self._face_used[(a, face_a)] = conn
        self._face_used[(b, face_b)] = conn
        self._recompute_bodies()
        return conn

    def _recompute_bodies(self) -> None:
        """``_body`` (smallest index of each connected component, union-find over
        ``_conns``) and ``_body_size``."""
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

    def _driving_mask(self) -> np.ndarray:
        """Modules whose wheels drive them: free (a body of one) and not carried."""
        driving = self._body_size == 1
        for m in self._carrier:
            driving[self._idx[m]] = False
        return driving
