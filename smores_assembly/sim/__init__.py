"""Fake-hardware world: simulated SMORES-EP modules on a plane (no ROS imports).

See :mod:`smores_assembly.sim.world` for the model (differential drive with wheel limits,
EP-magnet capture, rigid structures, helping modules, collision events) and its parts
(:mod:`.model`, :mod:`.kinematics`, :mod:`.faces`); :mod:`.reference` is the step without
caches that the fast :meth:`SimWorld.step` is tested against.
"""
from smores_assembly.sim.world import (FACES, Connection, SimError, SimEvent, SimParams,
                                       SimWorld, square_overlap)

__all__ = ["FACES", "Connection", "SimError", "SimEvent", "SimParams", "SimWorld",
           "square_overlap"]
