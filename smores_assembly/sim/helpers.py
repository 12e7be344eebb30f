"""Helping modules of the kinematic world: what LIFT and RELEASE change in its model, and
the carried pose (a mixin of :class:`~.world.SimWorld`; the commands' rules are in
:class:`~.base.WorldBase`; no ROS)."""
from __future__ import annotations


from smores_assembly.sim import kinematics
from smores_assembly.sim.base import WorldBase


class HelpersMixin(WorldBase):
    """What the helper commands change in the kinematic model (the commands' rules and the
    carry bookkeeping, ``_carry`` and ``_carrier``, are :class:`~.base.WorldBase`'s)."""

    def _on_lift(self, helper: str, h: int, j: int, rel: float) -> None:
        self._kin = None
        self._wheel[j] = 0.0
        self._place_carried(helper)
        self._overlap_dirty = True
        self._clearance_movers = None
        self._capture_dirty[j] = True

    def _on_release_command(self, helper: str) -> None:
        load = self._idx[self._carry[helper][0]]
        self._release(helper)
        self._overlap_dirty = True
        self._clearance_movers = None
        self._capture_dirty[[load, self._idx[helper]]] = True

    def _release(self, helper: str) -> None:
        super()._release(helper)
        self._kin = None

    def _carried_pose(self, helper_pose, rel: float) -> tuple[float, float, float]:
        return kinematics.carried_pose(helper_pose, rel, self.params.module_width)

    def _place_carried(self, helper: str) -> None:
        module, _, rel = self._carry[helper]
        self._pose[self._idx[module]] = self._carried_pose(self._pose[self._idx[helper]], rel)
