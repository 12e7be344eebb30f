"""Staging during the undocking stages of a reuse reconfiguration (issue 15), judged closed
loop in the kinematic world (``SimWorld``: contacts, connections), not by the planner.

bench_reconfig: the one helper stood still through every undocking stage and then fetched
its first module from 1 m away (reconf_6_196676841 reuse: WAIT_HELPER 47 s of a 133 s run).
A reuse plan now stages while it undocks (:func:`smores_assembly.staging.undock_staging`):
the helper drives towards the pick-up pose of its first module (where the disassembly
parks it), parked modules to their staging poses, clear of the areas the undocks of that
stage and later sweep. Here every undocking stage of random bench pairs runs as the
docking controller runs it -- one UndockTask per undock, a PathFollower per staging path
of the navigation's plan for that stage (``nav_problem`` + ``plan_stage_carrying``, the
paths delivered 0.04 s after the stage starts), replanned at each stage from the world's
poses -- and then the followers go on to the end of their paths: no contact anywhere, the
connections left are exactly the kept part's, every undocked module that did not stage
is parked where the plan says. The paper's full disassembly stages nothing.
"""
from __future__ import annotations

import math
import random

from bench.bench_reconfig import make_pair
from smores_assembly.docking import DockingSettings, PoseSample, UndockSpec, UndockTask
from smores_assembly.docking.control import TimedPath
from smores_assembly.docking.task import PathFollower
from smores_assembly.edge import Connection
from smores_assembly.errors import NavigationError, PlanningError
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.stage import NavSettings
from smores_assembly.planning import with_schedule
from smores_assembly.reconfigure import plan_reconfiguration
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.sim import SimWorld
from smores_assembly.staging import plan_stage_carrying
from smores_assembly.vocabulary import Phase

DT = 0.02
PATH_DELAY = 0.04


def _pairs(count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield scenario_from_dict(make_pair(rng.randint(6, 10), rng.randrange(1 << 30)))


def _undock_stages(sc, method: str):
    """Run every undocking stage of ``sc``'s plan closed loop; returns (plan, world,
    collision events, modules that got a staging path)."""
    plan = with_schedule(plan_reconfiguration(sc, method=method), "pipelined")
    world = SimWorld(sc.modules, helpers=sc.helpers)
    world.connect_at_start(sc.initial_connections)
    s, nav = DockingSettings(), NavSettings()
    events: list[tuple[float, str, str]] = []
    staged: set[str] = set()
    followers: dict[str, PathFollower] = {}
    for k in range(plan.num_undock_stages):
        tasks = [UndockTask(UndockSpec(u.module, u.face, u.from_module, u.from_face,
                                       u.direction, u.distance, u.park), s)
                 for u in plan.undocks if u.stage == k]
        prob = nav_problem(plan, k, world.poses(), set(), {}, nav)
        paths = {}
        if prob.staging:
            try:
                sp, got = plan_stage_carrying(prob.moving, prob.staging, prob.carried,
                                              prob.obstacles, prob.zones, nav,
                                              fixed=prob.fixed, width=sc.module_width,
                                              keep_clear=prob.keep_clear, slides=prob.slides)
                paths = {m: sp.paths[m] for m in got if sp.paths.get(m)}
            except NavigationError:
                paths = {}
        staged |= set(paths)
        t0 = world.t
        pending = {}
        for m, pts in paths.items():
            tp = TimedPath(tuple((t0 + PATH_DELAY + t, p.x, p.y) for t, p in pts))
            pending[m] = (tp, _staging_yaw(plan, k, world, m, tp))
        # a new plan: followers the plan does not move stop where they are (the node's
        # empty paths), the others take their new path
        followers = {m: f for m, f in followers.items() if m in pending}
        while not all(task.done for task in tasks) and world.t - t0 < 120.0:
            _tick(world, tasks, followers, pending, t0, s, events)
        assert all(task.phase is Phase.UNDOCKED for task in tasks), \
            (sc.name, k, [(t.spec.module, t.message) for t in tasks])
    # the followers drive on to the end of their paths (into the docking stages)
    t_end = world.t + max((f.path.end_time - world.t for f in followers.values()),
                          default=0.0) + 10.0
    while followers and world.t < t_end:
        _tick(world, [], followers, {}, 0.0, s, events)
    return plan, world, events, staged


def _tick(world, tasks, followers, pending, t0, s, events) -> None:
    t = world.t
    samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
    conns = world.connections()
    for m, (path, yaw) in list(pending.items()):
        if t - t0 >= PATH_DELAY:
            old = followers.get(m)
            followers[m] = PathFollower(m, path, s, final_yaw=yaw,
                                        escape=old.escape if old and not old.finished
                                        else None)
            del pending[m]
    for task in tasks:
        c = Connection.make(task.spec.module, task.spec.face, task.spec.from_module,
                            task.spec.from_face)
        out = task.tick(t, samples, c in conns)
        for m, (v, w) in out.cmd.items():
            world.set_cmd_vel(m, v, w)
        for m, faces in out.magnets_off.items():
            world.set_magnets(m, set(world.magnets(m)) - set(faces))
    for m, f in followers.items():
        me = world.pose(m)
        near = [(q.x, q.y) for o, q in world.poses().items()
                if o != m and q.distance_to(me) <= 0.6] if not f.escape.was_clear else []
        world.set_cmd_vel(m, *f.tick(t, samples[m], near))
    events += [(round(world.t, 2), *ev.modules) for ev in world.step(DT)
               if ev.kind == "collision"]


def _staging_yaw(plan, k: int, world, m: str, path: TimedPath) -> float:
    """The heading a staging follower ends with, by the docking controller's rule
    (``_staging_yaw``): a module's goal heading; a helper's towards the module it carries
    next (where it stands now; the controller's outer pick-up on a dock axis aside)."""
    from smores_assembly.staging import next_carry
    for a in plan.actions:
        if a.module == m and a.stage > k:
            return a.goal.yaw
    c = next_carry(plan, k, m)
    ex, ey = path.end
    q = world.pose(c)
    return math.atan2(q.y - ey, q.x - ex)


def test_reuse_stages_while_undocking_without_contact():
    """Random bench pairs (seed 21, 8 pairs): every undocking stage closed loop with the
    staging followers. Before undock_staging nothing staged (0 of 8 plans)."""
    checked, staging_plans, helpers_staged = 0, 0, 0
    for sc in _pairs(8, 21):
        try:
            plan, world, events, staged = _undock_stages(sc, "reuse")
        except PlanningError:
            continue
        if plan.method != "reuse":
            continue
        checked += 1
        staging_plans += bool(staged)
        helpers_staged += "h0" in staged
        assert not events, (sc.name, events[:5])
        kept = set(plan.kept)
        assert world.connections() == {c for c in sc.initial_connections
                                       if c.module_a in kept and c.module_b in kept}
        for u in plan.undocks:   # parked where the plan says, unless it staged since
            if u.module not in staged:
                assert world.pose(u.module).distance_to(u.park) < 0.01, (sc.name, u.module)
    assert checked >= 6, checked
    assert helpers_staged >= checked // 2, (helpers_staged, checked)
    assert staging_plans >= helpers_staged


def test_full_disassembly_stages_nothing():
    """The paper's method: nothing moves while it undocks (the same pairs)."""
    for sc in list(_pairs(8, 21))[:3]:
        plan = with_schedule(plan_reconfiguration(sc, method="full"), "pipelined")
        for k in range(plan.num_undock_stages):
            prob = nav_problem(plan, k, dict(sc.modules), set(), {}, NavSettings())
            assert not prob.staging and not prob.moving, (sc.name, k)
