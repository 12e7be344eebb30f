"""Data types of the simulated world: parameters, connections, events, errors (no ROS).

Units: REP-103 (m, rad, s). Face order of the per-module magnet arrays: :data:`FACES`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from smores_assembly.edge import Connection  # noqa: F401  (re-exported: its home is edge.py)
from smores_assembly.errors import InputError, ParamsError
from smores_assembly.geometry import MODULE_WIDTH, Face
from smores_assembly.params import check_ranges, param_field
from smores_assembly.vocabulary import HelperOp

#: Face order of the per-module magnet arrays.
FACES: tuple[Face, ...] = (Face.TOP, Face.LEFT, Face.BOTTOM, Face.RIGHT)
FACE_INDEX = {f: i for i, f in enumerate(FACES)}
FACE_ANGLES = np.array([f.angle for f in FACES])

#: The helper commands (:class:`~smores_assembly.vocabulary.HelperOp`), by name.
HELPER_COMMANDS = tuple(op.name for op in HelperOp)


class SimError(InputError):
    """A command or query the simulated world refuses (the message says why)."""


@dataclass
class SimParams:
    """Physical parameters of the simulated modules (all SI units)."""

    module_width: float = param_field(MODULE_WIDTH, "module (cube) width w [m]", 0.01, 1.0)
    wheel_radius: float = param_field(0.040, "wheel radius r [m]", 0.001, 1.0)
    track: float = param_field(0.0672, "distance between the two wheels [m]", 0.001, 1.0)
    wheel_speed_max: float = param_field(math.pi / 2, "wheel speed cap [rad/s]", 0.01, 100.0)
    wheel_accel_max: float = param_field(20.0, "wheel acceleration cap [rad/s^2]", 0.1, 1e6)
    # wheel effects of real modules (off by default; see smores_assembly.sim.kinematics)
    wheel_deadband: float = param_field(
        0.0, "per-wheel deadband: a wheel commanded slower than this (at the rim) does not "
        "turn [m/s]", 0.0, 0.5)
    wheel_gain_left: float = param_field(
        1.0, "left wheel speed / commanded left wheel speed (unequal wheel gains)",
        0.1, 2.0)
    wheel_gain_right: float = param_field(
        1.0, "right wheel speed / commanded right wheel speed (unequal wheel gains)",
        0.1, 2.0)
    wheel_slip: float = param_field(
        0.0, "slip: fraction of the wheels' rim speed lost on the ground (both wheels)",
        0.0, 0.9)
    capture_range: float = param_field(
        0.004, "EP magnets pull two faces together from this distance [m]", 0.0, 0.05)
    capture_lateral_max: float = param_field(
        0.010, "largest offset of the face centres along the face for a capture [m]",
        0.0, 0.04)
    capture_angle_max: float = param_field(
        math.radians(10.0), "largest deviation from antiparallel faces for a capture [rad]",
        0.0, math.pi / 4)
    contact_penetration_max: float = param_field(
        0.004, "an overlap of antiparallel faces up to this depth is a face contact, "
        "not a collision [m]", 0.0, 0.05)
    face_contact_slide: bool = param_field(
        True, "a motion that presses a face flat against another module's face slides "
        "along it (pushed back out of the penetration) instead of stopping the wheels; "
        "flush slides into corners and one-module slots are legal motion")
    overlap_tolerance: float = param_field(
        1e-6, "overlaps shallower than this are ignored (numerical noise) [m]", 0.0, 1e-3)
    collision_clear_distance: float = param_field(
        0.002, "a collision contact ends when the bodies are this far apart [m]", 0.0, 0.1)
    lift_reach_tolerance: float = param_field(
        0.02, "LIFT: tolerance on the module centre being one width ahead of the helper, "
        "along and across [m]", 0.0, 0.08)
    carry_yaw_rate: float = param_field(
        math.pi / 2, "rate at which a helper turns its carried module [rad/s]", 0.01, 100.0)
    joint_speed_max: float = param_field(2.0, "pan/tilt joint speed [rad/s]", 0.01, 100.0)
    pan_limit: float = param_field(math.pi, "pan joint limit |pan| <= this [rad]",
                                   0.0, math.pi)
    tilt_limit: float = param_field(math.pi / 2, "tilt joint limit |tilt| <= this [rad]",
                                    0.0, math.pi)

    def validate(self) -> None:
        """Raise :class:`SimError` naming the field when a value is out of range or NaN."""
        check_params(self)


def check_params(params) -> None:
    """Check a parameter dataclass of the simulated worlds (:class:`SimParams`, the MuJoCo
    backend's ``MujocoParams``): booleans are booleans, every other field a finite number
    inside its ``param_field`` range.

    Raises:
        SimError: naming the first field that is not.
    """
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        if f.type in (bool, "bool"):
            if not isinstance(v, bool):
                raise SimError(f"{f.name}: {v!r} is not a boolean")
            continue
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise SimError(f"{f.name}: {v!r} is not a finite number")
    try:
        check_ranges(params)
    except ParamsError as exc:
        raise SimError(str(exc), field=exc.field) from None


@dataclass
class SimEvent:
    """Something that happened during :meth:`SimWorld.step`.

    ``kind``: ``'connected'``, ``'disconnected'`` or ``'collision'``; ``t``: simulated time
    at the end of the step [s]; ``modules``: the two modules (for connections in the order
    of the :class:`Connection`); ``faces``: the two faces for connection events, None for
    collisions; ``penetration_m``: overlap depth [m] for collisions (for a blocked motion:
    the depth the motion would have caused), None otherwise.
    """

    kind: str
    t: float
    modules: tuple[str, str]
    faces: tuple[Face, Face] | None = None
    penetration_m: float | None = None


def finite(value: float, name: str) -> float:
    """``value`` as a float; SimError naming ``name`` when it is not a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimError(f"{name}: {value!r} is not a number") from None
    if not math.isfinite(v):
        raise SimError(f"{name}: {value!r} is not finite")
    return v
