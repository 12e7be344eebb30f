"""Settings of the ``docking_controller`` node itself (no ROS imports).

The control tunables are :class:`smores_assembly.docking.control.DockingSettings`; the node
(:mod:`smores_assembly.ros.docking_controller`) declares both as ROS parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

from smores_assembly.params import param_field


@dataclass
class DockingNodeSettings:
    """Tunables of the node itself (the control tunables are :class:`DockingSettings`)."""

    control_rate_hz: float = param_field(50.0, "control loop rate [Hz, node clock]", 1.0, 1000.0)
    status_rate_hz: float = param_field(10.0, "rate of /assembly/docking_status [Hz]",
                                        0.1, 1000.0)
    magnet_refresh_s: float = param_field(1.0, "magnet commands are re-sent this often [s]",
                                          0.05, 60.0)
    stop_refresh_s: float = param_field(
        0.2, "a zero cmd_vel (stand still) is sent when the command becomes zero and then "
        "repeated only this often [s] (0: at every control tick); moving commands go out at "
        "every tick", 0.0, 60.0)
    nominal_path_speed: float = param_field(
        0.04, "speed used to time a path whose stamps are all zero [m/s]", 0.001, 2.0)
    obstacle_radius: float = param_field(
        0.6, "other modules within this distance of a moving body are kept clear of on "
        "direct moves [m]", 0.0, 10.0)
