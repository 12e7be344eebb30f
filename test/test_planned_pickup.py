"""A helper at the end of its path picks its module up from the side the navigation
planned, while that side is free (``planned_pickup_axis``; issue 16, random 50).

Random 50 (bench_scale random 50 seed 0, ``clear_footprint``), stage 1: the navigation
planned h1's path to m28's TOP pick-up pose and m7's staging path up the column
x = 0.30 m beside m28. When h1 arrived (22.7 s) m21 was passing on its way to its staging
pose, 0.16 m from the lift pose, so the TOP side looked cramped for the pair's first turn
(``pickup_axis``). h1 chose again, drove round m28 to its RIGHT side -- a move no plan
knew of -- and stood in m7's column when m7 came up it: collision at 33.41 s, then m21
into the lifted m28 at 36.5 s, and the stage never ended (400 s timeout). The scene is the
run's ground truth at 20 s with the navigation's stage-start paths
(``data/random50_stage1_pickup.yaml``), run closed loop as the node runs it
(``closed_loop.stage_in_world``): no collision, and h1 lifts m28 from the planned side.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import closed_loop
from closed_loop import load_scene, stage_in_world
from smores_assembly.docking import DockingSettings
from smores_assembly.docking.control import (PLANNED_PICKUP_TOLERANCE, dock_axis,
                                             planned_pickup_axis)
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.vocabulary import Phase

SCENE = Path(__file__).parent / "data" / "random50_stage1_pickup.yaml"
W = 0.08
STANDOFF = DockingSettings().standoff


def _scene():
    poses, paths, acts, d = load_scene(SCENE)
    return poses, paths, acts, d["helpers"]


def test_random50_stage1_h1_lifts_m28_where_its_path_ends(monkeypatch):
    poses, paths, acts, helpers = _scene()
    seen: dict = {}
    tick = closed_loop._tick

    def spy(turn, world, t, *rest):
        task = turn.task
        if task.spec.module == "m28" and task.phase is Phase.NAVIGATE and "lift" not in seen:
            seen["lift"] = (t, world.pose("h1"), world.pose("m28"))
        return tick(turn, world, t, *rest)

    monkeypatch.setattr(closed_loop, "_tick", spy)
    # 25 s: past h1's lift (13.4 s in the run) and m7's passing up the column (15.6 s)
    events, _lag = stage_in_world(poses, acts, paths, helpers=helpers, t_max=25.0)
    assert events == []
    assert "lift" in seen, "h1 never lifted m28"
    _t, h1, _m28 = seen["lift"]
    # lifted from the side its path ended on: the TOP face of m28 (where it stood until
    # lifted), where the navigation put h1
    m28 = poses["m28"]
    top = dock_axis(m28, Face.TOP, W)
    gap, lateral, _yaw = top.errors(h1, 0.5 * W)
    assert abs(lateral) < 0.01 and gap < 0.02, (h1, m28)
    end = paths["h1"][-1][1]
    assert h1.distance_to(Pose2D(end.x, end.y, h1.yaw)) < 0.1


# ---------------------------------------------------------------- the rule on its own


@pytest.mark.parametrize("face", list(Face))
def test_the_side_a_path_ends_on_is_kept_while_free(face):
    m = Pose2D(0.3, -0.2, 0.7)
    p = dock_axis(m, face, W).body_pose(0.5 * W, STANDOFF)
    ax = planned_pickup_axis(m, (p.x + 0.02, p.y - 0.01), [], W, STANDOFF)
    assert ax is not None and ax == dock_axis(m, face, W)
    # a module standing at that pick-up pose: not free, so chosen again
    assert planned_pickup_axis(m, (p.x, p.y), [(p.x + 0.05, p.y)], W, STANDOFF) is None


def test_a_path_ending_on_no_side_is_chosen_again():
    m = Pose2D(0.0, 0.0, 0.0)
    p = dock_axis(m, Face.LEFT, W).body_pose(0.5 * W, STANDOFF)
    off = PLANNED_PICKUP_TOLERANCE + 0.005
    assert planned_pickup_axis(m, (p.x + off, p.y), [], W, STANDOFF) is None
    assert planned_pickup_axis(m, (1.0, 1.0), [], W, STANDOFF) is None


def test_a_path_that_ran_out_of_time_does_not_force_its_side():
    """The helper, blocked above m1, never reached its path's end at m1's BOTTOM pick-up
    pose: after the path's timeout it chooses the side again from where it stands (LEFT,
    the near one), not the far side the path was going to."""
    from smores_assembly.docking import DockingSpec, DockingTask, PoseSample
    from smores_assembly.docking.control import TimedPath
    s = DockingSettings()
    m = Pose2D(0.5, 0.0, 0.0)
    poses = {"p": Pose2D(0.0, 0.0, 0.0), "m1": m, "h0": Pose2D(0.5, 0.25, -1.5708)}
    h = poses["h0"]
    end = dock_axis(m, Face.BOTTOM, W).body_pose(0.5 * W, s.standoff)
    path = TimedPath(((0.0, h.x, h.y), (5.0, 0.9, 0.25), (10.0, 0.9, end.y),
                      (15.0, end.x, end.y)))
    task = DockingTask(DockingSpec("m1", "p", Face.TOP, Face.LEFT, "h0"), s)
    t = 0.0
    while t < 15.0 + s.nav_timeout_margin_s + 2.0:
        task.tick(t, {k: PoseSample(p, t) for k, p in poses.items()}, False,
                  path if t == 0.0 else None)
        t = round(t + 0.1, 6)
    assert task.phase is Phase.WAIT_HELPER and task.step_name == "goto"
    assert task.step.axis == dock_axis(m, Face.LEFT, W)
