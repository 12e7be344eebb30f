"""Helping modules of the simulated world: LIFT, ROTATE, RELEASE and the carried pose
(a mixin of :class:`~.world.SimWorld`; its state lives there, no ROS)."""
from __future__ import annotations

import math

from smores_assembly.errors import InputError
from smores_assembly.geometry import wrap_angle
from smores_assembly.sim import kinematics
from smores_assembly.sim.model import SimError, finite
from smores_assembly.vocabulary import HelperOp


class HelpersMixin:
    """Commands and bookkeeping of the helping modules (``_carry``: helper -> [load,
    carry_yaw target, current relative yaw]; ``_carrier``: load -> helper)."""

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
        w = self.params.module_width
        if cmd is HelperOp.LIFT:
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
        elif cmd is HelperOp.ROTATE:
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

    def _release(self, helper: str) -> None:
        module = self._carry.pop(helper)[0]
        self._carrier.pop(module, None)
        self._kin = None

    def _carried_pose(self, helper_pose, rel: float) -> tuple[float, float, float]:
        return kinematics.carried_pose(helper_pose, rel, self.params.module_width)

    def _place_carried(self, helper: str) -> None:
        module, _, rel = self._carry[helper]
        self._pose[self._idx[module]] = self._carried_pose(self._pose[self._idx[helper]], rel)
