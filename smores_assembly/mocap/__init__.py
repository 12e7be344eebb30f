"""Motion-capture processing without ROS: frame transforms, sample filtering, staleness.

See :mod:`smores_assembly.mocap.filter`.
"""
from smores_assembly.mocap.filter import (REJECT_REASONS, MocapError, MocapFilter,
                                          MocapFilterSettings, ModuleEstimate, RateMonitor,
                                          RigidTransform)

__all__ = ["REJECT_REASONS", "MocapError", "MocapFilter", "MocapFilterSettings",
           "ModuleEstimate", "RateMonitor", "RigidTransform"]
