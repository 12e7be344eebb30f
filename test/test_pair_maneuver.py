"""A lifted pair that cannot turn where it stands reaches its docking axis by a shift,
a turn, a straight leg and a turn whose swept footprints are clear
(``control.pair_maneuver``, ``PoseAdjust._maneuver``).

random100 seed 0 (``bench_scale`` random 100), stage 13: h0 carried m91 to 12 cm out on
its axis, 83 degrees off it, between the parked helpers h1 and h2 and the docked m95.
The full-circle rule backed the pair 0.25 m away, the point detour from there ran round
the structure and pushed m91 into the staged m80: contacts at 1800.9, 1861.0, 1920.8 s,
four POSE_ADJUST timeouts, 'docking failed for m91'. Poses: the recorded run's ground
truth at 1725.0 s, where POSE_ADJUST began (modules within 0.45 m of h0, and the parent
m90); closed loop in SimWorld with the docking core (no ROS), judged by the world's
collisions. The planner is also checked against an exact geometric oracle on random
layouts: oriented squares, not the corner-radius discs it plans with.
"""
from __future__ import annotations

import math
import random

from smores_assembly.docking.control import pair_maneuver
from smores_assembly.geometry import Face, Pose2D, wrap_angle
from test_docking_core import _scene_docks

POSES = {
    "h1": (0.2856, 0.1248, -2.3530),
    "h2": (0.1377, 0.3958, -0.0372),
    "m59": (-0.0983, -0.1494, -2.3502),
    "m60": (0.0141, -0.0356, 0.7914),
    "m69": (-0.2690, 0.0192, 2.3622),
    "m72": (0.1280, -0.1481, -2.3502),
    "m78": (-0.1552, -0.0932, 0.7914),
    "m79": (0.0717, -0.2050, -0.7794),
    "m80": (-0.0999, 0.2749, 1.6437),
    "m81": (0.0710, -0.0919, 2.3622),
    "m83": (0.1273, -0.0350, -2.3502),
    "m84": (0.1842, -0.0912, 2.3622),
    "m85": (0.1849, -0.2043, 2.3622),
    "m88": (-0.2121, -0.0370, -0.7794),
    "m89": (0.0148, -0.1488, -2.3502),
    "m90": (-0.0990, -0.0363, -2.3502),
    "m91": (0.1793, 0.1574, -2.4808),
    "m92": (0.3791, 0.3956, -0.3963),
    "m94": (0.2600, 0.5736, 1.5720),
    "m95": (0.1835, 0.0220, 2.3622),
    "m99": (-0.0421, -0.0925, -2.3502),
}
H0 = Pose2D(0.1302, 0.2206, -0.9100)
W = 0.08


class _Act:
    module, parent_module = "m91", "m90"
    parent_face, child_face = Face.BOTTOM, Face.LEFT


def test_pair_between_helpers_turns_where_its_sweep_is_clear_and_docks():
    _scene_docks(POSES, _Act, "h0", H0, t_dock=90.0, within=40.0)


# ------------------------------------------------------------------ geometric oracle
def _corners(cx: float, cy: float, yaw: float, back: float, front: float,
             half: float) -> list[tuple[float, float]]:
    c, s = math.cos(yaw), math.sin(yaw)
    return [(cx + u * c - v * s, cy + u * s + v * c)
            for u, v in ((-back, -half), (front, -half), (front, half), (-back, half))]


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Separating-axis test of two convex quadrilaterals."""
    for poly in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y1 - y2, x2 - x1
            pa = [nx * x + ny * y for x, y in a]
            pb = [nx * x + ny * y for x, y in b]
            if max(pa) <= min(pb) or max(pb) <= min(pa):
                return False
    return True


def _poses_of(start: Pose2D, plan) -> list[Pose2D]:
    """The pair's poses along the plan, every 1 mm and 0.5 degree (ideal execution)."""
    out = [start]
    p = start
    for kind, a, b, c in plan:
        if kind == "turn":
            err = wrap_angle(a - p.yaw)
            if math.copysign(1.0, err) != b and abs(err) > 1e-9:
                err += b * 2.0 * math.pi
            n = max(1, int(abs(err) / math.radians(0.5)))
            out += [Pose2D(p.x, p.y, p.yaw + err * k / n) for k in range(1, n + 1)]
            p = Pose2D(p.x, p.y, a)
        else:
            d = math.hypot(a - p.x, b - p.y)
            n = max(1, int(d / 0.001))
            out += [Pose2D(p.x + (a - p.x) * k / n, p.y + (b - p.y) * k / n, p.yaw)
                    for k in range(1, n + 1)]
            p = Pose2D(a, b, p.yaw)
    return out


def test_pair_maneuver_never_sweeps_into_a_square_random_layouts():
    rng = random.Random(5)
    planned = 0
    for _ in range(300):
        start = Pose2D(0.0, 0.0, rng.uniform(-math.pi, math.pi))
        squares = []
        while len(squares) < rng.randint(3, 9):
            x, y = rng.uniform(-0.45, 0.45), rng.uniform(-0.45, 0.45)
            sq = (x, y, rng.uniform(-math.pi, math.pi))
            if not _overlap(_corners(*sq, 0.5 * W, 0.5 * W, 0.5 * W),
                            _corners(start.x, start.y, start.yaw, 0.5 * W, 1.5 * W, 0.5 * W)):
                squares.append(sq)
        ax_yaw = rng.uniform(-math.pi, math.pi)
        ox, oy = rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)
        spots = [Pose2D(ox - k * 0.01 * math.cos(ax_yaw), oy - k * 0.01 * math.sin(ax_yaw),
                        ax_yaw) for k in range(0, 30)]
        # the hard places: a square just beside a spot, one just beside the start
        for near, reach in ((rng.choice(spots), 1.5 * W), (start, 1.5 * W)):
            for _ in range(20):
                a, r = rng.uniform(-math.pi, math.pi), rng.uniform(0.045, reach)
                sq = (near.x + r * math.cos(a), near.y + r * math.sin(a),
                      rng.uniform(-math.pi, math.pi))
                if not _overlap(_corners(*sq, 0.5 * W, 0.5 * W, 0.5 * W),
                                _corners(start.x, start.y, start.yaw, 0.5 * W, 1.5 * W,
                                         0.5 * W)):
                    squares.append(sq)
                    break
        plan = pair_maneuver(start, spots, [(x, y) for x, y, _ in squares], W)
        if plan is None:
            continue
        planned += 1
        path = _poses_of(start, plan)
        end = path[-1]
        assert any(end.distance_to(sp) < 1e-9 and abs(wrap_angle(end.yaw - sp.yaw)) < 1e-9
                   for sp in spots), plan
        for p in path:
            pair = _corners(p.x, p.y, p.yaw, 0.5 * W, 1.5 * W, 0.5 * W)
            for sq in squares:
                assert not _overlap(_corners(*sq, 0.5 * W, 0.5 * W, 0.5 * W), pair), \
                    (plan, p, sq)
    assert planned >= 60, planned
