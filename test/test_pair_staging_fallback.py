"""A lifted pair whose docking axis has no staging pose clear enough to turn in (every pose
up to ``STAGING_LIMIT`` out is within ``pair_turn_clearance`` of some module) stages at the
clearest one (``staging_extra(..., best_fallback=True)``), not at the limit.

random100 seed 0 (``bench_scale`` random 100), stage 11: h2 carried m83 to a pre-dock
pose on a diagonal axis between the docked structure, h0 (docking m90) and the staged m70;
its path ended 6 cm off, 136 degrees off the axis. No pose on the axis kept 0.187 m from
every module, so the staging pose was the limit, 0.4 m out, 0.08 m from m70, and the
detour to it drove the pair with m83 ahead into m70: four contacts, four POSE_ADJUST
timeouts, 'docking failed for m83'. Poses: the recorded run's ground truth at 1590.2 s,
where POSE_ADJUST began (modules within 0.42 m of h2, and the parent m84); closed loop in
SimWorld with the docking core (no ROS), judged by the world's collisions.
"""
from __future__ import annotations

import math
import random

from smores_assembly.docking.control import DockAxis, dock_axis, staging_extra
from smores_assembly.docking.task import PoseAdjust
from smores_assembly.geometry import Face, Pose2D
from test_docking_core import _scene_docks

POSES = {
    "h0": (-0.1994, 0.0688, -0.8005),
    "m49": (0.0155, -0.2619, -0.7794),
    "m56": (-0.0976, -0.2626, -2.3502),
    "m59": (-0.0983, -0.1494, -2.3502),
    "m60": (0.1261, 0.5131, 0.3304),
    "m66": (-0.1545, -0.2064, -0.7794),
    "m67": (-0.2114, -0.1501, -0.7794),
    "m68": (-0.0414, -0.2057, 2.3622),
    "m70": (-0.3260, 0.3016, -0.7676),
    "m72": (0.1280, -0.1481, -2.3502),
    "m77": (-0.2684, -0.0939, -0.7794),
    "m78": (-0.1552, -0.0932, 0.7914),
    "m79": (0.0717, -0.2050, -0.7794),
    "m81": (0.0710, -0.0919, 2.3622),
    "m83": (-0.1125, 0.1453, 1.5576),
    "m84": (0.1842, -0.0912, 2.3622),
    "m85": (0.1849, -0.2043, 2.3622),
    "m89": (0.0148, -0.1488, -2.3502),
    "m90": (-0.0990, -0.0363, -2.3502),
    "m94": (0.2998, 0.2527, -2.3339),
    "m99": (-0.0421, -0.0925, -2.3502),
}
H2 = Pose2D(-0.0325, 0.1442, 3.1284)


class _Act:
    module, parent_module = "m83", "m84"
    parent_face, child_face = Face.TOP, Face.LEFT


def test_pair_without_a_clear_staging_pose_stages_at_the_clearest(monkeypatch):
    # the rule alone: the pair maneuver (test_pair_maneuver), which also handles this
    # scene where no staging pose has room, is switched off
    monkeypatch.setattr(PoseAdjust, "_maneuver", lambda self, *a: (False, None))
    _scene_docks(POSES, _Act, "h2", H2, t_dock=90.0, within=60.0)


def _axis(rng: random.Random) -> DockAxis:
    parent = Pose2D(rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2), rng.uniform(-math.pi, math.pi))
    return dock_axis(parent, rng.choice(list(Face)), 0.08)


def test_staging_extra_against_brute_force():
    """Brute force over the same candidates (``extra`` = 0, step, 2 step, ... < limit; a
    candidate behind a module in the lane is never taken, the scan stops there): the first
    candidate whose centre keeps ``clearance`` from every obstacle; none: the clearest
    (``best_fallback``) or the limit (default)."""
    rng = random.Random(11)
    step, limit, width, offset, standoff = 0.005, 0.4, 0.08, 0.08, 0.05
    fallbacks = lanes = 0
    for _ in range(600):
        ax = _axis(rng)
        c, s = math.cos(ax.heading), math.sin(ax.heading)
        obstacles = []   # around the axis, out to 0.7 m from the face, up to 0.3 m off it
        for _ in range(rng.randint(0, 10)):
            u, lat = rng.uniform(0.0, 0.7), rng.choice((-1, 1)) * rng.uniform(0.0, 0.3)
            obstacles.append((ax.tx - u * c - lat * s, ax.ty - u * s + lat * c))
        clearance = rng.uniform(0.08, 0.22)
        lane = [-((ox - ax.tx) * c + (oy - ax.ty) * s) for ox, oy in obstacles
                if -((ox - ax.tx) * c + (oy - ax.ty) * s) > 0.0
                and abs(-s * (ox - ax.tx) + c * (oy - ax.ty)) < 0.9 * width]
        want_first, best, best_d, blocked = None, 0.0, -math.inf, False
        k = 0
        while k * step < limit - 1e-12:
            extra = k * step
            if any(u < offset + standoff + extra + width - 1e-9 for u in lane):
                blocked = True
                break
            p = ax.body_pose(offset, standoff + extra)
            d = min((math.hypot(p.x - ox, p.y - oy) for ox, oy in obstacles), default=math.inf)
            if d >= clearance:
                want_first = extra
                break
            if d > best_d + 1e-12:
                best, best_d = extra, d
            k += 1
        for fb in (False, True):
            got = staging_extra(ax, offset, standoff, obstacles, clearance, step=step,
                                limit=limit, width=width, best_fallback=fb)
            if want_first is not None:
                want = want_first
            elif blocked:
                want = best
                lanes += fb
            else:
                want = best if fb else limit
                fallbacks += fb
            assert math.isclose(got, want, abs_tol=1e-9), (fb, got, want)
    assert fallbacks >= 10 and lanes >= 10, (fallbacks, lanes)   # both cases occur
