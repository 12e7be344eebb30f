"""Motion-capture processing without ROS: frame transforms, sample filtering, staleness.

See :mod:`smores_assembly.mocap.filter`; :mod:`smores_assembly.mocap.cdr` holds the
hand-made CDR layouts of the high-rate messages (mocap samples, states, clock).
"""
from smores_assembly.mocap.filter import (REJECT_REASONS, MocapError, MocapFilter,
                                          MocapFilterSettings, ModuleEstimate, RateMonitor,
                                          RigidTransform)

__all__ = ["REJECT_REASONS", "MocapError", "MocapFilter", "MocapFilterSettings",
           "ModuleEstimate", "RateMonitor", "RigidTransform"]
