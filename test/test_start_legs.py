"""Legs to start cells of one stage plan do not pass each other (issue 16, comb 100).

The stage planner's modules first drive straight from their poses to their start cells,
all at once (:func:`navigation.stage._to_world`). The start cells were chosen one module
at a time against the other modules' *current centres* (``_start_leg_penalty``), never
against the other modules' legs: bench_scale comb 100 seed 0 in lockstep, stage 2, the
staging m14 and m94 stood 0.48 m apart on one column, boxed in by neighbours, and each
was given the one cell towards the other (legs of 0.36 m, head on): contact m14/m94
0.39 mm at 52.1 s, m94 blocked, every replan from the poses gave the same cells (34
replans, the run timed out in stage 2). Now two legs that pass each other cost their
cells and the start cells are chosen again (``_start_leg_clashes``, ``_choose_cells``).

The scene below is that stage's problem as the navigation node had it (measured poses of
a recorded run at 47.3 s, m14 and m94 with every moving module and obstacle within
0.45 m of their midpoint), at the grid laid over it alone.
"""
from __future__ import annotations

import math

import numpy as np

from smores_assembly.geometry import Pose2D
from smores_assembly.navigation.stage import NavSettings, _choose_cells, _lay_grid, _leg_room

Y = -0.505  # every goal's heading [rad]
MOVING = {  # module -> ((x, y, yaw) now, (x, y) goal)
    'm14': ((0.731, -0.8181, 0.041), (0.7733, -0.8526)),
    'm15': ((0.7318, -0.9375, -0.038), (0.6958, -0.9926)),
    'm2': ((0.61, -0.9388, -0.009), (0.5864, -0.9321)),
    'm21': ((0.9727, -0.9373, -3.132), (1.0133, -0.894)),
    'm24': ((0.6115, -0.8195, -0.054), (0.4771, -0.8716)),
    'm25': ((0.4946, -0.8946, -1.571), (0.3465, -0.8907)),
    'm32': ((0.9728, -0.8176, -1.527), (0.9601, -0.7731)),
    'm35': ((0.3761, -0.7733, -1.646), (0.4239, -0.7507)),
    'm41': ((1.094, -0.6993, 1.757), (1.0907, -0.754)),
    'm47': ((0.3728, -0.579, -0.014), (0.3708, -0.6299)),
    'm54': ((1.0943, -0.5793, -1.548), (1.0376, -0.6331)),
    'm59': ((0.3725, -0.4568, 0.014), (0.3389, -0.4294)),
    'm62': ((0.8506, -0.4587, 0.109), (0.8189, -0.5121)),
    'm74': ((0.9722, -0.5858, 1.754), (1.0057, -0.4326)),
    'm76': ((1.092, -0.4594, -1.609), (1.1151, -0.4932)),
    'm82': ((0.6115, -0.3389, 0.062), (0.6563, -0.3307)),
    'm85': ((0.8527, -0.338, -1.473), (0.8963, -0.3721)),
    'm86': ((0.9719, -0.3807, 1.564), (0.9282, -0.5726)),
    'm9': ((0.8518, -0.8203, 1.55), (0.8827, -0.9131)),
    'm94': ((0.7317, -0.3389, -1.538), (0.7869, -0.3116)),
}

OBSTACLES = {'m51': Pose2D(0.852, -0.6991, -1.642), 'm83': Pose2D(0.6124, -0.218, -1.631)}


def _min_gap_driven_at_once(pa, ca, pb, cb, step: float = 0.002) -> float:
    """Least centre distance [m] of two straight legs driven at once at one speed."""
    la, lb = math.dist(pa, ca), math.dist(pb, cb)
    s = np.arange(0.0, max(la, lb) + step, step)
    ua = np.clip(s / la, 0.0, 1.0) if la else np.zeros_like(s)
    ub = np.clip(s / lb, 0.0, 1.0) if lb else np.zeros_like(s)
    dx = pa[0] + ua * (ca[0] - pa[0]) - pb[0] - ub * (cb[0] - pb[0])
    dy = pa[1] + ua * (ca[1] - pa[1]) - pb[1] - ub * (cb[1] - pb[1])
    return float(np.hypot(dx, dy).min())


def _scene():
    s = NavSettings(clear_footprint=True)
    moving = {m: (Pose2D(*cur), Pose2D(g[0], g[1], Y)) for m, (cur, g) in MOVING.items()}
    return s, moving, dict(OBSTACLES)


def test_legs_to_start_cells_of_m14_and_m94_do_not_meet_head_on():
    s, moving, obstacles = _scene()
    lay = _lay_grid(moving, obstacles, sorted(obstacles), s)
    start_cells, _goal_cells = _choose_cells(lay, moving, {m: (g.x, g.y) for m, (_c, g) in
                                                           moving.items()}, s)
    xy = {m: lay.scene.center(c) for m, c in start_cells.items()}
    p14, p94 = (moving['m14'][0].x, moving['m14'][0].y), (moving['m94'][0].x,
                                                         moving['m94'][0].y)
    room = min(_leg_room(s), math.dist(xy['m14'], xy['m94']))
    gap = _min_gap_driven_at_once(p14, xy['m14'], p94, xy['m94'])
    # before: m14 -> (0.699, -0.513), m94 -> (0.699, -0.633), legs 0.31 m each, crossing
    # (gap 0.002 m); both cells lie on the other module's side
    assert gap >= room, (xy['m14'], xy['m94'], gap)
    assert xy['m14'][1] < xy['m94'][1]
