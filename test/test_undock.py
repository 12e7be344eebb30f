"""Undocking on the fake hardware's world (issue 15), closed loop without ROS: start
structures in the kinematic world, a structure splits when a connection's magnet goes off,
and :class:`UndockTask` backs a module off and parks it while the rest stands still."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from smores_assembly.docking import DockingSettings, PoseSample, UndockSpec, UndockTask
from smores_assembly.edge import Connection
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import load_scenario
from smores_assembly.sim import SimError, SimWorld
from smores_assembly.sim.backend import make_world
from smores_assembly.vocabulary import Phase

WALKER = Path(__file__).resolve().parents[1] / "config" / "scenarios" / \
    "walker_to_manipulator.yaml"


def _walker_world():
    s = load_scenario(WALKER)
    return s, make_world("kinematic", s.modules, connections=s.initial_connections)


def test_start_structure_is_one_body_snapped_flush():
    s, world = _walker_world()
    assert world.connections() == set(s.initial_connections)
    assert world.structure_of("m4") == frozenset(s.modules)
    for c in s.initial_connections:
        assert c.face_a in world.magnets(c.module_a) and c.face_b in world.magnets(c.module_b)
    # measured start poses were rounded to 0.1 mm: the world puts them flush (< 1 um)
    for m in s.modules:
        assert world.pose(m).distance_to(s.modules[m]) < 2e-4
    # a structure does not drive
    before = world.poses()
    world.set_cmd_vel("m4", 0.05, 0.0)
    for _ in range(50):
        assert not [e for e in world.step(0.02) if e.kind == "collision"]
    assert all(world.pose(m).distance_to(before[m]) < 1e-9 for m in before)


def test_magnet_off_splits_the_structure():
    s, world = _walker_world()
    mags = set(world.magnets("m4")) - {Face.BOTTOM}
    world.set_magnets("m4", mags)
    events = world.step(0.02)
    assert [(e.kind, e.modules) for e in events] == [("disconnected", ("m3", "m4"))]
    assert world.structure_of("m4") == frozenset({"m4"})
    assert world.structure_of("m3") == frozenset(s.modules) - {"m4"}


def test_start_connections_refused_on_mujoco_and_for_a_used_face():
    s = load_scenario(WALKER)
    with pytest.raises(SimError, match="not supported on the mujoco backend"):
        make_world("mujoco", s.modules, connections=s.initial_connections)
    w = SimWorld(s.modules)
    with pytest.raises(SimError, match="already connected"):
        w.connect_at_start(s.initial_connections + [
            Connection.make("m1", Face.LEFT, "m5", Face.TOP)])


def _run(world: SimWorld, tasks: list[UndockTask], t_max: float = 120.0, dt: float = 0.02):
    """Closed loop: the tasks' commands and magnet wishes applied to the world."""
    t = 0.0
    collisions = []
    while t < t_max and not all(task.done for task in tasks):
        t += dt
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        conns = world.connections()
        for task in tasks:
            c = Connection.make(task.spec.module, task.spec.face, task.spec.from_module,
                                task.spec.from_face)
            out = task.tick(t, samples, c in conns)
            for m, (v, w) in out.cmd.items():
                world.set_cmd_vel(m, v, w)
            for m, faces in out.magnets_off.items():
                world.set_magnets(m, set(world.magnets(m)) - set(faces))
        collisions += [e for e in world.step(dt) if e.kind == "collision"]
    return t, collisions


def test_walker_undock_stage_parks_the_legs_and_leaves_the_rest():
    s, world = _walker_world()
    plan = plan_reconfiguration(s)
    settings = DockingSettings()
    tasks = [UndockTask(UndockSpec(u.module, u.face, u.from_module, u.from_face, u.direction,
                                   u.distance, u.park), settings) for u in plan.undocks]
    assert len(tasks) == 2
    kept_before = {m: world.pose(m) for m in plan.kept}
    t, collisions = _run(world, tasks)
    assert [task.phase for task in tasks] == [Phase.UNDOCKED] * 2, [t.message for t in tasks]
    assert collisions == []
    assert world.connections() == {c for c in s.initial_connections
                                   if c.module_a in plan.kept and c.module_b in plan.kept}
    for u in plan.undocks:
        p = world.pose(u.module)
        assert p.distance_to(u.park) < 0.005, (u.module, p, u.park)
        assert abs(math.remainder(p.yaw - u.park.yaw, 2 * math.pi)) < math.radians(3.0)
    for m, p in kept_before.items():
        assert world.pose(m).distance_to(p) < 1e-9
    # every phase took time; the back-off and the drive are both in there
    assert all(task.durations[Phase.UNDOCK] > 0 and task.durations[Phase.NAVIGATE] > 0
               for task in tasks)


def test_full_disassembly_of_the_walker_without_collision():
    s, world = _walker_world()
    plan = plan_reconfiguration(s, method="full")
    settings = DockingSettings()
    for k in range(plan.num_undock_stages):
        tasks = [UndockTask(UndockSpec(u.module, u.face, u.from_module, u.from_face,
                                       u.direction, u.distance, u.park), settings)
                 for u in plan.undocks if u.stage == k]
        _, collisions = _run(world, tasks)
        assert all(task.phase is Phase.UNDOCKED for task in tasks), \
            [(task.spec.module, task.message) for task in tasks]
        assert collisions == [], (k, collisions)
    assert world.connections() == set()


def test_connection_that_stays_fails_the_undock():
    """Real modules' variant (no hardware confirmation): a module that stays attached
    (here: the world keeps the other magnet on and the structure does not let it move)
    fails with a message instead of parking."""
    s, world = _walker_world()
    settings = DockingSettings(confirm_with_connections=True, confirm_timeout_s=2.0)
    task = UndockTask(UndockSpec("m4", Face.BOTTOM, "m3", Face.LEFT, 1, 0.1,
                                 Pose2D(0.0, 0.5, 0.0)), settings)
    t = 0.0
    while not task.done and t < 10.0:
        t += 0.05
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        task.tick(t, samples, connected=True)   # the hardware keeps reporting it
    assert task.phase is Phase.FAILED and "still reported" in task.message


def test_bad_spec_refused():
    with pytest.raises(ValueError, match="direction"):
        UndockSpec("a", Face.TOP, "b", Face.BOTTOM, 0, 0.1, Pose2D(0, 0, 0))
    with pytest.raises(ValueError, match="distance"):
        UndockSpec("a", Face.TOP, "b", Face.BOTTOM, 1, -0.1, Pose2D(0, 0, 0))
