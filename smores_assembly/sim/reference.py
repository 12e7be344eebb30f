"""The simulated world's step without any cache: the oracle of :meth:`SimWorld.step`.

:func:`reference_step` advances a :class:`~.world.SimWorld` by the same model (see
:mod:`.world`) computed the plain way: wheel targets and arcs recomputed every step,
every moving unit checked against every other module, every pair of modules with magnets
examined for a capture (again after each capture), every pair examined for an overlap.
It is O(N^2) per step and meant for tests (``test/test_sim_world.py`` runs both on random
worlds and requires identical poses, wheel speeds, connections and events).
"""
from __future__ import annotations

import numpy as np

from smores_assembly.sim import kinematics
from smores_assembly.sim.model import SimError, SimEvent, finite


def reference_step(world, dt: float) -> list[SimEvent]:
    """Advance ``world`` (a :class:`~.world.SimWorld`) by ``dt`` [s]; same contract as
    :meth:`SimWorld.step` (events: disconnections, collisions, connections).

    Raises:
        SimError: ``dt`` not a positive finite number.
    """
    dt = finite(dt, "dt")
    if dt <= 0.0:
        raise SimError(f"dt: {dt} must be > 0")
    p = world.params
    n = len(world._ids)
    events: list[SimEvent] = []
    t_end = world.t + dt
    # 1. releases, 2. joints
    world._release_connections(events, t_end)
    world._move_joints(dt)
    # 3. wheels (recomputed from the commands) and motion
    driving = world._driving_mask()
    target = kinematics.wheel_targets(world._cmd, driving, p)
    world._wheel, mean = kinematics.ramp_wheels(world._wheel, target, p.wheel_accel_max, dt)
    moved = np.zeros(n, dtype=bool)
    blocked: dict = {}
    touching: set = set()
    proposal = world._propose(kinematics.arc_terms(mean, driving, p, dt), dt)
    if proposal is not None:
        prop, moving, new_rel = proposal
        everyone = list(range(n))
        for u, unit in world._units(moving).items():
            world._try_unit(u, unit, lambda i: everyone, prop, new_rel, moved, blocked,
                            touching)
    # 4. captures: the first qualifying pair in module order, until none qualifies
    has_mag = world._mag.any(axis=1)
    captured = True
    while captured:
        captured = False
        for i in range(n):
            for j in range(i + 1, n):
                if has_mag[i] and has_mag[j] and \
                        world._capture_pair(i, j, moved, events, t_end) is not None:
                    captured = True
                    break
            if captured:
                break
    # 5. collisions: blocked motions that are not face contacts and every overlap
    found = {key: depth for key, (depth, face_contact) in blocked.items() if not face_contact}
    for i in range(n):
        for j in range(i + 1, n):
            world._overlap_found(i, j, found)
    world._collision_bookkeeping(found, blocked, events, t_end)
    world.t = t_end
    # the fast step's caches no longer describe this state
    world._kin = world._steady = world._clearance_movers = None
    world._overlap_dirty = True
    world._capture_dirty[:] = True
    order = {"disconnected": 0, "collision": 1, "connected": 2}
    events.sort(key=lambda e: order[e.kind])
    return events
