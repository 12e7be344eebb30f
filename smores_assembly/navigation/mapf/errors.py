"""Errors of the MAPF search: every one a
:class:`~smores_assembly.errors.NavigationError` (a ``PlanningError``: the search found no
paths for this instance). Arguments the search refuses raise
:class:`~smores_assembly.errors.InputError` instead."""
from __future__ import annotations

from smores_assembly.errors import NavigationError

__all__ = ["DuplicateGoalError", "DuplicateStartError", "InvalidCellError",
           "NavigationError", "NoSolutionError", "SearchLimitError", "UnreachableGoalError"]


class InvalidCellError(NavigationError):
    """A start or goal lies outside the map or inside an obstacle."""


class DuplicateGoalError(NavigationError):
    """Two agents share one goal cell (no solution: both would stay there forever)."""


class DuplicateStartError(NavigationError):
    """Two agents share one start cell."""


class UnreachableGoalError(NavigationError):
    """An agent's goal is not connected to its start by free cells."""


class SearchLimitError(NavigationError):
    """The search exceeded a bound (high-level nodes, low-level expansions or time)."""


class NoSolutionError(NavigationError):
    """The search space was exhausted without a solution (the instance is unsolvable)."""


class InfeasibleError(NoSolutionError):
    """The instance is proven unsolvable by a check before the search (e.g. two agents that
    must pass each other in a corridor without a passing place)."""
