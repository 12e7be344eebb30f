"""A body that escaped from a neighbour at its path's start waits where the escape left it
while its path still dwells there (``Escape.holds_at_start``; issue 16).

Random 100 (bench_scale random 100 seed 0, ``clear_footprint``), stage 27: h1 had backed
off from its hand-over of stage 26 and stood 0.106 m from m52 in the structure, the two
squares corner to corner. Its path waited 4.7 s where it stood, then left behind it. The
follower escaped 15 mm straight back, then drove back to the path's start (the path
dwelt there), steering, and turned there in place into m52: 0.50 mm at 3267.05 s, then
blocked, replanned ~90 times from the same pose, and m40 timed out (68 of 99 docks).
The scene is the run's ground truth at the stage's start with the navigation's paths
(``data/random100_stage27_h1.yaml``), run closed loop as the node runs it.
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from closed_loop import DT, load_scene, stage_in_world
from smores_assembly.docking import DockingSettings
from smores_assembly.docking.control import TimedPath, turn_sweep_clear
from smores_assembly.docking.task import PathFollower, PoseSample
from smores_assembly.geometry import Pose2D
from smores_assembly.sim import SimWorld

SCENE = Path(__file__).parent / "data" / "random100_stage27_h1.yaml"
W = 0.08
S = DockingSettings()


def _scene():
    poses, paths, acts, d = load_scene(SCENE)
    return poses, paths, acts, d["helpers"], d["backing_off"]


def test_random100_stage27_h1_leaves_m52_without_touching_it():
    poses, paths, acts, helpers, backing = _scene()
    # the scene as it was: h1 0.106 m from m52, corner to corner (its turn there is not clear)
    assert poses["h1"].distance_to(poses["m52"]) < 0.11
    assert not turn_sweep_clear(poses["h1"], [poses["m52"]], W)
    # 20 s: past h1's turn (4.7 s) and well into its drive down the column
    events, lag = stage_in_world(poses, acts, paths, helpers=helpers, t_max=20.0,
                                 backing_off=backing)
    assert events == []
    # h1 kept to its path once it left (the lag the navigation replans at is 0.12 m)
    assert lag["h1"] < 0.06, lag


# ------------------------------------------------------------ the rules on their own


def _run(world: SimWorld, follower: PathFollower, body: str, t_max: float,
         around: bool = True):
    """Tick ``follower`` of ``body`` closed loop in ``world`` (the other modules stand):
    its collisions and its centre distance to each other module, per tick."""
    events, dists = [], []
    while world.t < t_max:
        t = world.t
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        me = world.pose(body)
        near = [(q.x, q.y) for m, q in world.poses().items() if m != body] if around else []
        v, w = follower.tick(t, samples[body], near, None, samples)
        world.set_cmd_vel(body, v, w)
        events += [ev.modules for ev in world.step(DT) if ev.kind == "collision"]
        dists.append((t, min(me.distance_to(q) for m, q in world.poses().items()
                             if m != body)))
    return events, dists


def _corner_scene(rng: random.Random):
    """A body B 0.100-0.110 m from a standing module N, the two yaws drawn at random, not
    touching; N at the origin."""
    while True:
        n = Pose2D(0.0, 0.0, rng.uniform(-math.pi, math.pi))
        bearing = rng.uniform(-math.pi, math.pi)
        d = rng.uniform(0.100, 0.110)
        b = Pose2D(d * math.cos(bearing), d * math.sin(bearing), rng.uniform(-math.pi, math.pi))
        world = SimWorld({"N": n, "B": b})
        if not turn_sweep_clear(b, [n], W) and not [
                e for e in world.step(DT) if e.kind == "collision"]:
            return n, b, bearing


@pytest.mark.parametrize("seed", range(12))
def test_an_escaped_follower_waits_where_the_escape_left_it(seed):
    """Its path dwells at the start (where it stood) for 4 s, then leaves away from N: the
    follower escapes to ``escape_distance`` and does not come back closer while the path
    dwells; it then leaves without a contact."""
    rng = random.Random(seed)
    n, b, bearing = _corner_scene(rng)
    away = bearing + rng.uniform(-1.2, 1.2)
    end = (b.x + 0.2 * math.cos(away), b.y + 0.2 * math.sin(away))
    path = TimedPath(((0.0, b.x, b.y), (4.0, b.x, b.y), (8.0, *end)))
    world = SimWorld({"N": n, "B": b})
    events, dists = _run(world, PathFollower("B", path, S), "B", 14.0)
    assert events == []
    escaped = [d for t, d in dists if 1.5 <= t <= 4.0 - S.nav_lookahead_s]
    assert min(escaped) >= S.escape_distance - 0.002, (seed, min(escaped))
    assert world.pose("B").distance_to(Pose2D(*end, 0.0)) <= S.nav_goal_tolerance


def test_leaves_at():
    p = TimedPath(((0.0, 1.0, 2.0), (3.0, 1.0, 2.0005), (5.0, 1.2, 2.0), (6.0, 1.2, 2.0)))
    assert p.leaves_at() == 3.0
    assert TimedPath(((0.0, 1.0, 2.0), (2.0, 1.5, 2.0))).leaves_at() == 0.0
    assert TimedPath(((0.0, 1.0, 2.0), (2.0, 1.0, 2.0))).leaves_at() is None
    assert TimedPath(((0.0, 1.0, 2.0),)).leaves_at() is None
