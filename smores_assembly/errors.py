"""The project's error hierarchy (no ROS imports).

Every error the project raises on purpose derives from :class:`SmoresError`; callers that
turn an error into a message for the user (the CLI, the launch runner, the nodes' goal and
parameter handling) catch :class:`SmoresError` or one of its subclasses only, so that a
programming error (a plain ``ValueError``, ``KeyError``, ``TypeError``...) is not reported
as bad input but surfaces with its traceback.

::

    SmoresError
    ├── InputError (also a ValueError)   bad input; ``field`` names the offending field
    │   ├── ScenarioError                scenario file / target topology
    │   ├── ParamsError                  node parameters, parameter files
    │   ├── LaunchError                  launch files
    │   ├── MocapError                   mocap samples and frames
    │   └── SimError                     fake-hardware world commands and settings
    └── PlanningError                    valid input, but no plan exists
        └── NavigationError              no collision-free paths (MAPF)

:class:`InputError` is also a :class:`ValueError` (the Python convention for an argument
of the right type and a wrong value); :class:`PlanningError` is not: the input was fine.
"""
from __future__ import annotations


class SmoresError(Exception):
    """Base of every error smores_assembly raises on purpose."""


class InputError(SmoresError, ValueError):
    """Bad input. The message names the field and the value; ``field`` holds the field's
    name (or "" when the whole input is wrong)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field


class ScenarioError(InputError):
    """Invalid scenario or target topology."""


class ParamsError(InputError):
    """Invalid node parameter or parameter file."""


class PlanningError(SmoresError):
    """The input is valid but the assembly cannot be planned (e.g. too few helpers)."""


class NavigationError(PlanningError):
    """Navigation planning failed (no collision-free timed paths)."""
