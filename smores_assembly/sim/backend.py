"""Choice of the fake hardware's physics: ``kinematic`` (:class:`~smores_assembly.sim.SimWorld`)
or ``mujoco`` (:class:`~smores_assembly.sim.mujoco_world.MujocoWorld`), one interface.

No ROS imports; ``mujoco`` is imported only when that backend is asked for.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from smores_assembly.edge import Connection
from smores_assembly.geometry import Pose2D
from smores_assembly.sim import SimError, SimParams, SimWorld

#: The backends :func:`make_world` knows.
BACKENDS = ("kinematic", "mujoco")


def make_world(backend: str, poses: Mapping[str, Pose2D | tuple[float, float, float]],
               params: SimParams | None = None, helpers: Iterable[str] = (),
               connections: Iterable[Connection] = (), **kwargs):
    """A world of ``backend`` (one of :data:`BACKENDS`) with the modules at ``poses``.

    ``connections``: structures that exist at the start (a reconfiguration's
    ``initial.connections``), kinematic world only so far
    (:meth:`~smores_assembly.sim.SimWorld.connect_at_start`).
    ``kwargs`` go to the MuJoCo world only (``mj_params``, ``description``).

    Raises:
        SimError: unknown backend (naming it and the choices), start connections on the
            MuJoCo backend, or what the world's constructor raises.
    """
    conns = list(connections)
    if backend == "kinematic":
        if kwargs:
            raise SimError(f"backend kinematic: unexpected options {sorted(kwargs)}")
        world = SimWorld(poses, params, helpers=helpers)
        if conns:
            world.connect_at_start(conns)
        return world
    if backend == "mujoco":
        from smores_assembly.sim.mujoco_world import MujocoWorld  # noqa: PLC0415
        mj = MujocoWorld(poses, params, helpers=helpers, **kwargs)
        mj.connect_at_start(conns)  # refuses start structures, naming the field
        return mj
    raise SimError(f"backend: {backend!r} is not one of {', '.join(BACKENDS)}")
