"""A helper fetches a module in clutter it was not planned for: random scenes, judged by the
kinematic world (the lift made, no collision event).

A wheel-face dock's helper moves directly (WAIT_HELPER's FetchGoto, no navigation path)
when the navigation has no path for it. Its detour used to be arcs round one blocking
module at a time: in a cluster the arcs round one module ran into the next, or the chord
between two arcs cut a corner of the parent, and the helper drove into a module and pushed
there, blocked (seeds 3 and 24 below: a contact, the lift 105 s and 75 s late; in a
sweep of a looser generator two scenes of 60 never lifted within the 120 s budget and one
lifted after a contact, as in random 100's stage 3 on an earlier main: h1 brushed m85 and
never lifted it). Where the arcs cut corners the detour now takes a grid route that keeps
the clearance (:func:`~smores_assembly.docking.control.grid_detour`).

Scenes (``_scene``): the parent at the origin; the module 0.25-0.45 m away; the helper
0.12-0.30 m from the module; 2-5 idle modules within 0.3 m of the module; every centre at
least 0.125 m from every other, 0.2 m from the dock's goal. A scene counts only when one of
the module's four pick-up poses (0.14 m out from its centre, normal to a face) is 0.17 m
or more from every other centre (the test's own rule: with none, the module cannot be
fetched at all).
"""
from __future__ import annotations

import math
import random

import pytest

from closed_loop import fetch_in_world
from smores_assembly.geometry import Face, Pose2D, child_pose
from smores_assembly.planning import DockAction

#: the scenes run (the first ``SCENES`` seeds whose scene can be fetched at all)
SCENES = 40
#: centre of a helper at its pick-up pose [m] from the module's (width + stand-off)
PICKUP_OUT = 0.14


def _scene(seed: int) -> tuple[dict[str, Pose2D], DockAction] | None:
    rng = random.Random(seed)
    pf = rng.choice(list(Face))
    cf = rng.choice([Face.LEFT, Face.RIGHT])
    parent = Pose2D(0.0, 0.0, rng.uniform(-math.pi, math.pi))
    goal = child_pose(parent, pf, cf)
    poses = {"p": parent}

    def clear(q: Pose2D, d: float = 0.125) -> bool:
        return (all(math.hypot(q.x - o.x, q.y - o.y) >= d for o in poses.values())
                and math.hypot(q.x - goal.x, q.y - goal.y) >= 0.2)

    def place(name: str, cx: float, cy: float, r0: float, r1: float, d: float) -> None:
        for _ in range(500):
            a, r = rng.uniform(-math.pi, math.pi), rng.uniform(r0, r1)
            q = Pose2D(cx + r * math.cos(a), cy + r * math.sin(a), rng.uniform(-math.pi, math.pi))
            if clear(q, d):
                poses[name] = q
                return

    place("m", 0.0, 0.0, 0.25, 0.45, 0.2)
    m = poses["m"]
    place("h", m.x, m.y, 0.12, 0.30, 0.125)
    for i in range(rng.randint(2, 5)):
        place(f"o{i}", m.x, m.y, 0.0, 0.3, 0.125)
    others = [q for k, q in poses.items() if k not in ("m", "h")]
    if "h" not in poses or not any(
            all(math.hypot(m.x + PICKUP_OUT * math.cos(m.yaw + k * math.pi / 2) - q.x,
                           m.y + PICKUP_OUT * math.sin(m.yaw + k * math.pi / 2) - q.y) >= 0.17
                for q in others) for k in range(4)):
        return None
    return poses, DockAction(module="m", node="m", stage=0, depth=1, parent_module="p",
                             parent_node="p", parent_face=pf, child_face=cf,
                             needs_helper=True, helper="h", goal=goal)


def _seeds() -> list[int]:
    out, seed = [], 0
    while len(out) < SCENES:
        if _scene(seed) is not None:
            out.append(seed)
        seed += 1
    return out


@pytest.mark.parametrize("seed", _seeds())
def test_a_helper_fetches_a_module_in_random_clutter_without_contact(seed):
    poses, act = _scene(seed)
    lifted, collisions, t, message = fetch_in_world(poses, act, t_max=150.0)
    assert lifted and collisions == 0, (seed, lifted, collisions, round(t, 1), message)
