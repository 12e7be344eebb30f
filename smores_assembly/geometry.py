"""Geometry conventions shared by every part of smores_assembly (no ROS imports).

Units and axes follow REP-103: metres, radians, seconds; x forward, y left, z up.
A module's planar pose is ``(x, y, yaw)`` in the ``world`` frame (REP-105).

A SMORES-EP module is a cube of width ``w`` (default :data:`MODULE_WIDTH` = 0.08 m) with
four connector faces. In the module frame:

* ``TOP``    (pan face)  at +x, the front: driving forward pushes it ahead;
* ``BOTTOM``             at -x;
* ``LEFT``   (wheel)     at +y;
* ``RIGHT``  (wheel)     at -y.

Source: SMORES-EP, a Modular Robot with Parallel Self-assembly (Liu, Yim et al.), Sec. II
(hardware). Every convention coded here is written out in ``docs/CONVENTIONS.md``.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from smores_assembly.errors import InputError

#: Centre-to-centre distance of two docked modules [m].
MODULE_WIDTH = 0.08
#: EP-magnet capture range: faces closer than this are pulled together [m].
CAPTURE_RANGE = 0.004
#: The fixed frame every pose is expressed in (REP-105 ``world``; the lab's mocap frame
#: is mapped into it by the mocap bridge).
WORLD_FRAME = "world"


class Face(str, enum.Enum):
    """A connector face of a module. The value is the name used in files and messages."""

    TOP = "TOP"
    BOTTOM = "BOTTOM"
    LEFT = "LEFT"
    RIGHT = "RIGHT"

    @property
    def angle(self) -> float:
        """Direction of the face's outward normal in the module frame [rad]."""
        return _FACE_ANGLE[self]

    @property
    def is_wheel(self) -> bool:
        """True for LEFT/RIGHT, the wheel faces (docking with them needs a helping module)."""
        return self in _WHEEL_FACES

    @property
    def opposite(self) -> "Face":
        """The face on the other side of the cube."""
        return _OPPOSITE[self]

    @classmethod
    def parse(cls, value: object, field: str = "face") -> "Face":
        """Parse a face name (case-insensitive).

        Raises:
            InputError: naming ``field`` and the offending value when it is not a face.
        """
        if isinstance(value, Face):
            return value
        if isinstance(value, str) and value.strip().upper() in cls.__members__:
            return cls[value.strip().upper()]
        raise InputError(
            f"{field}: unknown face {value!r} (expected one of TOP, BOTTOM, LEFT, RIGHT)",
            field=field)


_FACE_ANGLE = {Face.TOP: 0.0, Face.LEFT: math.pi / 2, Face.BOTTOM: math.pi,
               Face.RIGHT: -math.pi / 2}
#: a set, not a tuple of Face.LEFT, Face.RIGHT: one hash lookup instead of two enum
#: attribute lookups and comparisons (0.04 vs 0.7 us; ~2,000 calls in a 1,000-node plan)
_WHEEL_FACES = frozenset((Face.LEFT, Face.RIGHT))
_OPPOSITE = {Face.TOP: Face.BOTTOM, Face.BOTTOM: Face.TOP, Face.LEFT: Face.RIGHT,
             Face.RIGHT: Face.LEFT}


def wrap_angle(a: float) -> float:
    """Wrap an angle to [-pi, pi) [rad]."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True)
class Pose2D:
    """Planar pose in the ``world`` frame: position [m], heading ``yaw`` [rad] about +z."""

    x: float
    y: float
    yaw: float

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.x, self.y, self.yaw)

    def xy(self) -> np.ndarray:
        """Position as a numpy array of shape (2,) [m]."""
        return np.array([self.x, self.y])

    def distance_to(self, other: "Pose2D") -> float:
        """Euclidean distance between the two positions [m]."""
        return math.hypot(self.x - other.x, self.y - other.y)

    def compose(self, dx: float, dy: float, dyaw: float = 0.0) -> "Pose2D":
        """The pose at offset ``(dx, dy)`` [m] in this pose's frame, rotated by ``dyaw``."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return Pose2D(self.x + c * dx - s * dy, self.y + s * dx + c * dy,
                      wrap_angle(self.yaw + dyaw))


def face_frame(pose: Pose2D | tuple[float, float, float], face: Face,
               width: float = MODULE_WIDTH) -> tuple[float, float, float]:
    """Centre ``(x, y)`` [m] and outward normal direction [rad, wrapped to [-pi, pi)] in
    ``world`` of ``face`` of a module at ``pose`` (a :class:`Pose2D` or ``(x, y, yaw)``).

    The face is the side of the module's ``width`` square half a width out along the face
    normal; its segment runs ``width`` long perpendicular to the normal.
    """
    x, y, yaw = pose.as_tuple() if isinstance(pose, Pose2D) else pose
    a = yaw + face.angle
    return (x + 0.5 * width * math.cos(a), y + 0.5 * width * math.sin(a), wrap_angle(a))


def face_center(pose: Pose2D, face: Face, width: float = MODULE_WIDTH) -> tuple[float, float]:
    """World position [m] of the centre of ``face`` of a module at ``pose`` (half a width out)."""
    x, y, _ = face_frame(pose, face, width)
    return (x, y)


def face_normal_angle(pose: Pose2D, face: Face) -> float:
    """World direction [rad] of the outward normal of ``face`` of a module at ``pose``."""
    return wrap_angle(pose.yaw + face.angle)


def child_pose(parent: Pose2D, parent_face: Face, child_face: Face,
               width: float = MODULE_WIDTH) -> Pose2D:
    """Planar unfolding of one edge (``docs/CONVENTIONS.md``, "Unfolding rule").

    The child's centre lies one module width from the parent's centre along the parent's
    face normal, and the child is turned so that ``child_face`` faces ``parent_face``:
    ``c.yaw = p.yaw + angle(fp) + pi - angle(fc)``.

    Args:
        parent: the parent module's pose in ``world``.
        parent_face: the parent's face of the edge.
        child_face: the child's face of the edge.
        width: module width [m].

    Returns:
        The child's pose in ``world``.
    """
    a = parent.yaw + parent_face.angle
    return Pose2D(parent.x + width * math.cos(a), parent.y + width * math.sin(a),
                  wrap_angle(a + math.pi - child_face.angle))


def segment_projection(p: tuple[float, float], a: tuple[float, float],
                       b: tuple[float, float]) -> tuple[float, float]:
    """Nearest point of the segment ``a``-``b`` to the point ``p`` (all ``(x, y)`` [m]).

    Returns:
        ``(t, d)``: the nearest point is ``a + t (b - a)`` with ``t`` in [0, 1] (0 for a
        segment shorter than 1 um), ``d`` [m] is its distance to ``p``.
    """
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    l2 = dx * dx + dy * dy
    t = 0.0 if l2 < 1e-12 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / l2))
    return t, math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def point_segment_distance(p: tuple[float, float], a: tuple[float, float],
                           b: tuple[float, float]) -> float:
    """Distance [m] from the point ``p`` to the segment ``a``-``b`` (see
    :func:`segment_projection`)."""
    return segment_projection(p, a, b)[1]


def segment_distance(a0: tuple[float, float], a1: tuple[float, float],
                     b0: tuple[float, float], b1: tuple[float, float]) -> float:
    """Distance [m] between the segments ``a0``-``a1`` and ``b0``-``b1`` (0 when they
    cross; either may be a point)."""
    def side(p, q, r) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    d1, d2 = side(b0, b1, a0), side(b0, b1, a1)
    d3, d4 = side(a0, a1, b0), side(a0, a1, b1)
    if d1 * d2 < 0.0 and d3 * d4 < 0.0:
        return 0.0
    return min(point_segment_distance(a0, b0, b1), point_segment_distance(a1, b0, b1),
               point_segment_distance(b0, a0, a1), point_segment_distance(b1, a0, a1))


def _square_half_extent(rel_angle: float, half: float) -> float:
    """Half-width of the projection of a square (half side ``half``) on a direction at
    ``rel_angle`` from one of its axes."""
    return half * (abs(math.cos(rel_angle)) + abs(math.sin(rel_angle)))


def square_overlap(pa: tuple[float, float, float], pb: tuple[float, float, float],
                   width: float) -> float:
    """Overlap depth of two oriented ``width x width`` squares centred at poses ``pa``,
    ``pb`` (x, y, yaw) [m].

    Separating-axis test over the four edge normals: the result is the smallest overlap of
    the projections (> 0: the squares overlap by that much along the best axis; <= 0: they
    are separated, and ``-result`` is a lower bound of their distance).

    Used by the simulated world's collision check and by scenario loading (initial bodies
    must not overlap). Source: separating axis theorem for oriented boxes (Gottschalk, Lin,
    Manocha, "OBBTree", SIGGRAPH 1996, Sec. 4), reduced to 2-D squares of equal size.
    """
    dx, dy = pb[0] - pa[0], pb[1] - pa[1]
    half = 0.5 * width
    dyaw = pb[2] - pa[2]
    hb = _square_half_extent(dyaw, half)  # both squares have the same extent on either
    best = math.inf                       # pair of axes (the relative angle is symmetric)
    for yaw in (pa[2], pb[2]):
        c, s = math.cos(yaw), math.sin(yaw)
        for nx, ny in ((c, s), (-s, c)):
            d = half + hb - abs(dx * nx + dy * ny)
            if d < best:
                best = d
    return best


def predock_pose(goal: Pose2D, child_face: Face, standoff: float) -> Pose2D:
    """Pre-dock pose of a module whose goal (docked) pose is ``goal``.

    The module stands on the docking axis of its ``child_face``, ``standoff`` [m] further
    from the parent than at the goal, with the goal's heading, so that a straight motion
    along the face normal (forward for TOP, reverse for BOTTOM) closes the gap.
    """
    a = goal.yaw + child_face.angle
    return Pose2D(goal.x - standoff * math.cos(a), goal.y - standoff * math.sin(a), goal.yaw)
