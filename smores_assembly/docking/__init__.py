"""Docking control: control laws (:mod:`.control`) and the phase machine (:mod:`.task`).

Pure Python (no ROS imports); :mod:`smores_assembly.ros.docking_controller` is the ROS node.
"""
from smores_assembly.docking.control import (DockAxis, DockingSettings, PoseRegulator,
                                             TimedPath, approach_command, detour_waypoints,
                                             dock_axis, goto_point, pickup_axis, pickup_pose,
                                             real_command, saturate, track_timed_path,
                                             turns_in_place, virtual_pose, TurnGate)
from smores_assembly.docking.task import (DockingSpec, DockingTask, HelperRequest,
                                          PathFollower, PoseObserver, PoseSample, StandingTracker,
                                          TaskOutput, TaskStatus, face_errors)
from smores_assembly.docking.undock import UndockSpec, UndockTask, line_command
from smores_assembly.vocabulary import ACTIVE_PHASES, ErrorCode, HelperOp, Phase

__all__ = ["ACTIVE_PHASES", "DockAxis", "DockingSettings", "DockingSpec", "DockingTask",
           "ErrorCode", "HelperOp", "HelperRequest", "PathFollower", "Phase", "PoseObserver",
           "PoseRegulator", "PoseSample", "StandingTracker", "TaskOutput", "TaskStatus",
           "TimedPath",
           "approach_command", "detour_waypoints", "dock_axis", "face_errors", "goto_point",
           "pickup_axis", "pickup_pose", "real_command",
           "saturate", "track_timed_path", "turns_in_place", "TurnGate",
           "virtual_pose", "UndockSpec", "UndockTask",
           "line_command"]
