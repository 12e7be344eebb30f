"""Legs to start cells of one stage plan do not bring two modules into contact (issue 16,
comb 100), and legs that do not touch leave the start cells as they were.

The stage planner's modules first drive straight from their poses to their start cells,
all at once, every leg timed from t = 0 to the common ``t0``
(:func:`navigation.stage._to_world`). The start cells were chosen one module at a time
against the other modules' *current centres* (``_start_leg_penalty``), never against the
other modules' legs: bench_scale comb 100 seed 0 in lockstep, stage 2, the staging m14 and
m94 stood 0.48 m apart on one column, boxed in by neighbours, and each was given the one
cell towards the other (legs of 0.31 m, head on): contact m14/m94 0.39 mm at 52.1 s, m94
blocked, every replan from the poses gave the same cells (34 replans, the run timed out in
stage 2). Now two legs that, as timed, bring the bodies into contact cost their cells and
the start cells are chosen again (``_start_leg_contacts``, ``_choose_cells``); legs that
keep the bodies apart, or bring them no closer than a leg's end and the other's pose
stand, change nothing (a first fix, 93b6082, flagged legs passing closer
than ``w sqrt 2 + 5 mm`` at the same speed and changed stages that assembled).

The scene below is that stage's problem as the navigation node had it (measured poses of
a recorded run at 47.3 s, m14 and m94 with every moving module and obstacle within
0.45 m of their midpoint), at the grid laid over it alone.
"""
from __future__ import annotations

import math

import numpy as np

from smores_assembly.geometry import MODULE_WIDTH, Pose2D, square_overlap
from smores_assembly.navigation.stage import (FINAL_LEG_LEAD_S, START_LEG_MARGIN,
                                              NavSettings, _choose_cells, _lay_grid,
                                              _start_leg_contacts)

W = MODULE_WIDTH
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


def _timed_min_distance(pa, ca, pb, cb, t0: float, window_s: float = 3.0,
                        dt: float = 0.02) -> float:
    """Least centre distance [m] of two straight legs both timed from 0 to ``t0`` [s] (as
    the planner times legs to start cells), for every real start of b within
    ``window_s`` of a's."""
    best = math.inf
    tau = np.arange(-window_s, t0 + 2 * window_s + dt, dt)
    ua = np.clip(tau / t0, 0.0, 1.0)
    for off in np.arange(-window_s, window_s + dt, dt):
        ub = np.clip((tau - off) / t0, 0.0, 1.0)
        dx = pa[0] + ua * (ca[0] - pa[0]) - pb[0] - ub * (cb[0] - pb[0])
        dy = pa[1] + ua * (ca[1] - pa[1]) - pb[1] - ub * (cb[1] - pb[1])
        best = min(best, float(np.hypot(dx, dy).min()))
    return best


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
    p14, p94 = ((moving[m][0].x, moving[m][0].y) for m in ('m14', 'm94'))
    t0 = max(math.dist((cur.x, cur.y), xy[m]) for m, (cur, _g) in moving.items()) \
        / s.nominal_speed
    gap = _timed_min_distance(p14, xy['m14'], p94, xy['m94'], t0)
    # before: m14 -> (0.699, -0.513), m94 -> (0.699, -0.633), legs 0.31 m each, crossing
    # head on (least centre distance 0.000 m as timed); both cells lay on the other
    # module's side. Now each stays on its own side, never closer than two bodies turned
    # any way can touch (w sqrt 2)
    assert gap >= W * math.sqrt(2.0), (xy['m14'], xy['m94'], gap)
    assert xy['m14'][1] < xy['m94'][1]
    # and no pair of the stage's legs is left in contact
    cur = {m: c for m, (c, _g) in moving.items()}
    assert _start_leg_contacts(cur, xy, (), s) == []


def _legs(a_pose, a_cell, b_pose, b_cell):
    return ({'a': Pose2D(*a_pose), 'b': Pose2D(*b_pose)}, {'a': a_cell, 'b': b_cell})


def _least_separation(poses, cells, s: NavSettings) -> float:
    """Least separation [m] (minus the separating-axis overlap) of the two bodies turned
    to their legs' headings, both legs timed from 0 to the longer one's drive, with the
    starts up to FINAL_LEG_LEAD_S apart (the modules here start turned to their legs)."""
    pa, pb = ((poses[m].x, poses[m].y) for m in ('a', 'b'))
    ha, hb = (math.atan2(cells[m][1] - p[1], cells[m][0] - p[0])
              for m, p in (('a', pa), ('b', pb)))
    t0 = max(math.dist(pa, cells['a']), math.dist(pb, cells['b'])) / s.nominal_speed
    best = math.inf
    for off in np.arange(-FINAL_LEG_LEAD_S, FINAL_LEG_LEAD_S + 0.01, 0.05):
        for tau in np.arange(0.01, t0 + 1.0, 0.02):
            ua, ub = min(tau / t0, 1.0), min(max(tau - off, 0.0) / t0, 1.0)
            if ub <= 0.0:
                continue
            xa = (pa[0] + ua * (cells['a'][0] - pa[0]), pa[1] + ua * (cells['a'][1] - pa[1]))
            xb = (pb[0] + ub * (cells['b'][0] - pb[0]), pb[1] + ub * (cells['b'][1] - pb[1]))
            best = min(best, -square_overlap((*xa, ha), (*xb, hb), W))
    return best


def test_legs_that_bring_bodies_into_contact_are_flagged():
    s = NavSettings()
    # head on along one line, as m14/m94: the bodies run into each other
    poses, cells = _legs((0.0, 0.0, 0.0), (0.36, 0.0), (0.48, 0.0, math.pi), (0.12, 0.0))
    assert _least_separation(poses, cells, s) < 0.0
    assert _start_leg_contacts(poses, cells, (), s) == [('a', 'b')]
    # crossing at right angles, each at the crossing halfway along its leg
    poses, cells = _legs((0.0, 0.0, 0.0), (0.4, 0.0), (0.2, -0.3, math.pi / 2), (0.2, 0.3))
    assert _least_separation(poses, cells, s) < -0.05
    assert _start_leg_contacts(poses, cells, (), s) == [('a', 'b')]


def test_legs_that_keep_bodies_apart_are_not_flagged():
    s = NavSettings()
    # passing in opposite directions 0.10 m apart (closer than w sqrt 2 + 5 mm, which the
    # first fix flagged): the bodies keep 20 mm, more than START_LEG_MARGIN
    poses, cells = _legs((0.0, 0.0, 0.0), (0.4, 0.0), (0.4, 0.10, math.pi), (0.0, 0.10))
    assert _least_separation(poses, cells, s) > START_LEG_MARGIN + 0.01
    assert _start_leg_contacts(poses, cells, (), s) == []
    # crossing legs of different lengths, each through the crossing while the other is
    # far from it as timed (same fraction of the leg at any instant)
    poses, cells = _legs((0.0, 0.0, 0.0), (0.4, 0.0), (0.06, -0.36, math.pi / 2), (0.06, 0.04))
    assert _least_separation(poses, cells, s) > START_LEG_MARGIN
    assert _start_leg_contacts(poses, cells, (), s) == []
    # flush neighbours driving apart: they never come closer than they stand
    poses, cells = _legs((0.0, 0.0, math.pi), (-0.2, 0.0), (W, 0.0, 0.0), (0.3, 0.0))
    assert _start_leg_contacts(poses, cells, (), s) == []
    # a leg that ends on the other's pose is not the two motions' doing (the leg is
    # judged against the pose, ``_start_leg_penalty``): passing in opposite directions
    # 0.075 m apart, the bodies overlap 5 mm only where one stands at its cell and the
    # other at its pose
    poses, cells = _legs((0.0, 0.0, 0.0), (0.4, 0.0), (0.4, 0.075, math.pi), (0.0, 0.075))
    assert -0.006 < _least_separation(poses, cells, s) < 0.0
    assert _start_leg_contacts(poses, cells, (), s) == []
    # a module at its goal (``stay``) is not judged
    poses, cells = _legs((0.0, 0.0, 0.0), (0.36, 0.0), (0.48, 0.0, math.pi), (0.12, 0.0))
    assert _start_leg_contacts(poses, cells, {'b'}, s) == []
