"""Multi-vehicle navigation (no ROS imports).

* :mod:`.mapf`: grid MAPF in space-time — CBS (optimal sum of costs, with cardinal-conflict
  selection), ECBS (bounded-suboptimal focal search), LaCAM (complete, dense or large
  stages; the fallback), prioritized planning,
  :func:`~.mapf.validate_schedule`, and the error classes (all
  :class:`~smores_assembly.errors.NavigationError`, a ``PlanningError``; arguments a
  function refuses raise :class:`~smores_assembly.errors.InputError`).
* :mod:`.stage`: one assembly stage in the ``world`` frame — :func:`~.stage.plan_stage`
  lays a grid over the scene, moves idle blockers aside, and returns timed waypoints.
* ``python -m smores_assembly.navigation INPUT.yaml``: libMultiRobotPlanning-format CLI.
"""
from smores_assembly.navigation.mapf import (DuplicateGoalError, DuplicateStartError, Grid,
                                             InvalidCellError, NavigationError,
                                             NoSolutionError, SearchLimitError, Solution,
                                             UnreachableGoalError, check_instance, solve,
                                             validate_schedule)
from smores_assembly.navigation.stage import (GoalOccupiedError, NavSettings, StagePlan,
                                              plan_stage, pose_at)

__all__ = ["DuplicateGoalError", "DuplicateStartError", "GoalOccupiedError", "Grid",
           "InvalidCellError", "NavSettings", "NavigationError", "NoSolutionError",
           "SearchLimitError", "Solution", "StagePlan", "UnreachableGoalError",
           "check_instance", "plan_stage", "pose_at", "solve", "validate_schedule"]
