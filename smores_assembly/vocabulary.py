"""The project's shared vocabulary: docking phases, docking error codes, helper commands.

One definition of each concept, used by the cores, the nodes, the report and the CLI
(no ROS imports). The integer values equal the message constants —
``DockingStatus.PHASE_*``, ``DockingStatus.ERROR_*``, ``HelperCommand.LIFT|ROTATE|RELEASE``
— so a message field converts with ``Phase(msg.phase)`` and back with ``int(phase)``
(``test_vocabulary`` checks every value against the generated messages). The names
(``Phase.DOCKED.name == "DOCKED"``) are the display names used in
``DockingStatus.phase_name``, the report, the timeline and the progress lines.

Phases of one docking action (see ``docs/CONVENTIONS.md``, "Docking phases")::

    IDLE -> [WAIT_HELPER] -> NAVIGATE -> POSE_ADJUST -> APPROACH -> DOCKED
                                              ^            |
                                              +-- RETRY <--+      (any active) -> FAILED
    any active phase -> PAUSED (a needed pose is stale) -> the same phase again

Phases of one undocking action of a reconfiguration (``smores_assembly.docking.undock``)::

    IDLE -> UNDOCK (magnets off, connection gone, back off) -> NAVIGATE (to the parking
    pose) -> UNDOCKED                                            (any active) -> FAILED
"""
from __future__ import annotations

import enum

from smores_assembly.errors import InputError


class Phase(enum.IntEnum):
    """Docking phase of one action; values equal ``DockingStatus.PHASE_*``."""

    IDLE = 0
    WAIT_HELPER = 1
    NAVIGATE = 2
    POSE_ADJUST = 3
    APPROACH = 4
    RETRY = 5
    DOCKED = 6
    FAILED = 7
    PAUSED = 8
    UNDOCK = 9
    UNDOCKED = 10

    @property
    def is_active(self) -> bool:
        """True while the action is in progress (:data:`ACTIVE_PHASES`)."""
        return self in ACTIVE_PHASES

    @property
    def is_terminal(self) -> bool:
        """True once the action has ended (:data:`TERMINAL_PHASES`: DOCKED or FAILED)."""
        return self in TERMINAL_PHASES

    @property
    def succeeded(self) -> bool:
        """True when the action reached its goal (:data:`SUCCESS_PHASES`: DOCKED for a
        dock, UNDOCKED for an undock)."""
        return self in SUCCESS_PHASES

    @property
    def colour(self) -> str:
        """Display colour (``#rrggbb``) of the timeline and the RViz markers."""
        return PHASE_COLOURS[self]

    @property
    def rgb(self) -> tuple[float, float, float]:
        """:attr:`colour` as ``(r, g, b)`` in [0, 1] (``std_msgs/ColorRGBA``)."""
        h = self.colour.lstrip("#")
        return tuple(int(h[i:i + 2], 16) / 255.0 for i in (0, 2, 4))  # type: ignore[return-value]

    @classmethod
    def parse(cls, value: object, field: str = "phase") -> "Phase":
        """A phase from a :class:`Phase`, its integer (message) value or its name
        (case-insensitive).

        Raises:
            InputError: naming ``field`` and the value when it is no phase.
        """
        return _parse(cls, value, field)


#: Phases of an action in progress (it has started and not ended; PAUSED included).
ACTIVE_PHASES = frozenset({Phase.WAIT_HELPER, Phase.NAVIGATE, Phase.POSE_ADJUST,
                           Phase.APPROACH, Phase.RETRY, Phase.PAUSED, Phase.UNDOCK})
#: Phases of an action that has ended.
TERMINAL_PHASES = frozenset({Phase.DOCKED, Phase.FAILED, Phase.UNDOCKED})
#: Phases of an action that has ended well (a dock made, an undock done).
SUCCESS_PHASES = frozenset({Phase.DOCKED, Phase.UNDOCKED})

#: Display colour of each phase, in legend order (Okabe-Ito colour-blind-safe palette).
PHASE_COLOURS: dict[Phase, str] = {
    Phase.WAIT_HELPER: "#999999", Phase.NAVIGATE: "#0072B2", Phase.POSE_ADJUST: "#E69F00",
    Phase.APPROACH: "#009E73", Phase.RETRY: "#D55E00", Phase.PAUSED: "#CC79A7",
    Phase.DOCKED: "#56B4E9", Phase.FAILED: "#000000", Phase.IDLE: "#DDDDDD",
    Phase.UNDOCK: "#F0E442", Phase.UNDOCKED: "#8C6D31",
}


class ErrorCode(enum.IntEnum):
    """Why a docking action failed (or retried); values equal ``DockingStatus.ERROR_*``."""

    NONE = 0
    TIMEOUT = 1
    MISALIGNED = 2
    TARGET_MOVED = 3
    RETRIES_EXHAUSTED = 4
    NO_HELPER = 5
    CANCELLED = 6
    STALLED = 7


class HelperOp(enum.IntEnum):
    """Command to a helping module; values equal ``HelperCommand.LIFT|ROTATE|RELEASE``.

    * ``LIFT``: pick up a module standing one width in front of the helper's TOP face and
      carry it there, turned by ``carry_yaw`` relative to the helper's heading;
    * ``ROTATE``: set a new ``carry_yaw`` for the carried module;
    * ``RELEASE``: put the carried module down where it is.
    """

    LIFT = 1
    ROTATE = 2
    RELEASE = 3

    @classmethod
    def parse(cls, value: object, field: str = "command") -> "HelperOp":
        """A helper command from a :class:`HelperOp`, its integer (message) value or its
        name (case-insensitive).

        Raises:
            InputError: naming ``field`` and the value when it is no helper command.
        """
        return _parse(cls, value, field)


def _parse(cls, value: object, field: str):
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        key = value.strip().upper()
        if key in cls.__members__:
            return cls[key]
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    choices = ", ".join(f"{m.name}({m.value})" for m in cls)
    raise InputError(f"{field}: unknown {cls.__name__} {value!r} (expected one of {choices})",
                     field=field)


def counted(n: int, noun: str) -> str:
    """``"1 stage"``, ``"2 stages"``: ``n`` and ``noun`` in the singular or the plural
    (``s`` added, ``es`` after s/x/ch/sh), for log lines and messages (``noun`` is given
    in the singular)."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{n} {noun}s"
