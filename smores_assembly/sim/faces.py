"""Face geometry of the simulated modules: where a face is, how two faces relate, and the
two rules built on that — magnetic capture and face contact (no ROS).

A module is a ``w x w`` square; face ``f`` of a module at pose ``(x, y, yaw)`` is the side
whose outward normal points along ``yaw + f.angle`` (:data:`~.model.FACES` order).
"""
from __future__ import annotations

import math

from smores_assembly.geometry import face_frame, point_segment_distance, wrap_angle
from smores_assembly.sim.model import FACES, SimParams


def face_geometry(pose, face_idx: int, width: float):
    """(centre x, centre y, normal angle) of face ``FACES[face_idx]`` of a module at ``pose``
    (:func:`smores_assembly.geometry.face_frame`)."""
    return face_frame(pose, FACES[face_idx], width)


def face_relation(pa, fa: int, pb, fb: int, width: float):
    """Relation of face ``fa`` of a module at ``pa`` and face ``fb`` of one at ``pb``.

    Returns ``(gap, lateral, misalignment)``: ``gap`` [m] = distance between the two face
    segments (0 when they cross), ``lateral`` [m] = offset of the face centres along face
    a, ``misalignment`` [rad] = deviation from antiparallel normals (>= 0).
    """
    half = 0.5 * width
    ax, ay, aa = face_geometry(pa, fa, width)
    bx, by, ba = face_geometry(pb, fb, width)
    tax, tay = -math.sin(aa), math.cos(aa)
    tbx, tby = -math.sin(ba), math.cos(ba)
    lateral = (bx - ax) * tax + (by - ay) * tay
    mis = abs(wrap_angle(aa - ba - math.pi))
    # segments cross? (signed sides of b's end points w.r.t. line a and vice versa)
    b1x, b1y, b2x, b2y = bx - half * tbx, by - half * tby, bx + half * tbx, by + half * tby
    a1x, a1y, a2x, a2y = ax - half * tax, ay - half * tay, ax + half * tax, ay + half * tay
    nax, nay = tay, -tax
    nbx, nby = tby, -tbx
    s1 = (b1x - ax) * nax + (b1y - ay) * nay
    s2 = (b2x - ax) * nax + (b2y - ay) * nay
    s3 = (a1x - bx) * nbx + (a1y - by) * nby
    s4 = (a2x - bx) * nbx + (a2y - by) * nby
    if s1 * s2 <= 0.0 and s3 * s4 <= 0.0:
        return 0.0, lateral, mis
    a1, a2, b1, b2 = (a1x, a1y), (a2x, a2y), (b1x, b1y), (b2x, b2y)
    gap = min(point_segment_distance(b1, a1, a2), point_segment_distance(b2, a1, a2),
              point_segment_distance(a1, b1, b2), point_segment_distance(a2, b1, b2))
    return gap, lateral, mis


def capture_qualifies(pa, fa: int, pb, fb: int, p: SimParams) -> bool:
    """True when face ``fa`` of a module at ``pa`` and face ``fb`` of one at ``pb`` satisfy
    the capture rule: gap <= ``capture_range``, |lateral| <= ``capture_lateral_max``,
    misalignment <= ``capture_angle_max`` (each with 1e-9 slack)."""
    gap, lateral, mis = face_relation(pa, fa, pb, fb, p.module_width)
    return (gap <= p.capture_range + 1e-9 and abs(lateral) <= p.capture_lateral_max + 1e-9
            and mis <= p.capture_angle_max + 1e-9)


def is_face_contact(pa, pb, depth: float, p: SimParams) -> bool:
    """True when an overlap of ``depth`` [m] between modules at ``pa`` and ``pb`` is a face
    contact (a face of each facing the other, antiparallel within ``capture_angle_max``,
    overlapping laterally, ``depth <= contact_penetration_max``), not a collision."""
    if depth > p.contact_penetration_max:
        return False
    w = p.module_width
    for fa in range(4):
        for fb in range(4):
            _, lateral, mis = face_relation(pa, fa, pb, fb, w)
            if mis <= p.capture_angle_max + 1e-9 and abs(lateral) < w:
                # the faces must also be the ones facing each other
                ax, ay, aa = face_geometry(pa, fa, w)
                if (pb[0] - pa[0]) * math.cos(aa) + (pb[1] - pa[1]) * math.sin(aa) > 0:
                    return True
    return False



def facing_push(pa, pb, width: float) -> tuple[float, float, float]:
    """How far, and along which unit vector, a ``width`` square at ``pa`` must move to stop
    penetrating the face of the square at ``pb`` that faces it.

    The facing face of ``pb`` is the one whose normal is most aligned with the offset
    ``pa - pb`` (for a module sliding past a neighbour flush, the neighbour's side face,
    even while its front corner passes the neighbour's corner); the depth is the overlap
    of the two squares' projections on that normal.

    Returns:
        ``(depth, nx, ny)``; ``depth <= 0`` when the squares are apart along that normal.
    """
    dx, dy = pa[0] - pb[0], pa[1] - pb[1]
    half = 0.5 * width
    ha = half * (abs(math.cos(pa[2] - pb[2])) + abs(math.sin(pa[2] - pb[2])))
    c, s = math.cos(pb[2]), math.sin(pb[2])
    best: tuple[float, float, float] | None = None
    for nx, ny in ((c, s), (-s, c)):
        proj = dx * nx + dy * ny
        if best is None or abs(proj) > abs(best[0]):
            best = (proj, nx, ny)
    assert best is not None  # two candidate normals
    proj, nx, ny = best
    sign = 1.0 if proj >= 0.0 else -1.0
    return half + ha - abs(proj), sign * nx, sign * ny
