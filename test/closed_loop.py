"""One dock closed loop in the kinematic world, for the tests that judge docking by the
world (``SimWorld``: the connection formed, collision events) rather than by the
controller: the docking task's commands drive the world, the world's poses feed the task.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from pathlib import Path

from smores_assembly.docking import DockingSettings, DockingSpec, DockingTask
from smores_assembly.docking.control import TimedPath
from smores_assembly.docking.dispatch import (TaskTurn, dispatch, magnets_on, merge_command,
                                              tick_followers)
from smores_assembly.docking.task import PathFollower, PoseSample, StandingTracker
from smores_assembly.geometry import Face, Pose2D, wrap_angle
from smores_assembly.planning import DockAction
from smores_assembly.sim import Connection, SimWorld
from smores_assembly.vocabulary import HelperOp, Phase
from smores_assembly.yaml_io import load_yaml

#: obstacles the task is told about: modules within this distance [m] of the moving one
OBSTACLE_RANGE = 0.6
#: world step [s]
DT = 0.02


def load_scene(path) -> tuple[dict[str, Pose2D], dict, list, dict]:
    """A stage scene cut out of a run (``test/data/*.yaml``): ``(poses, paths, actions,
    data)``: poses module -> Pose2D, the navigation's paths module -> ``[(t [s], Pose2D)]``,
    one DockAction per entry of ``actions`` (a helper dock when it names a helper), and the
    file's whole mapping (helpers, back-offs, ...)."""
    d = load_yaml(Path(path).read_text(), str(path))
    poses = {m: Pose2D(*v) for m, v in d["poses"].items()}
    paths = {m: [(t, Pose2D(x, y, 0.0)) for t, x, y in pts] for m, pts in d["paths"].items()}
    acts = [DockAction(module=a["module"], node=a["module"], stage=0, depth=1,
                       parent_module=a["parent_module"], parent_node=a["parent_module"],
                       parent_face=Face.parse(a["parent_face"]),
                       child_face=Face.parse(a["child_face"]),
                       needs_helper=a.get("helper") is not None, helper=a.get("helper"),
                       goal=Pose2D(0.0, 0.0, 0.0)) for a in d["actions"]]
    return poses, paths, acts, d


def dock_in_world(poses: dict[str, Pose2D], act, t_max: float = 90.0,
                  carried_by: Pose2D | None = None) -> tuple[bool, int, int, float]:
    """Run ``act``'s DockingTask (no path: it starts where its module stands in ``poses``)
    in a SimWorld of ``poses`` until done or ``t_max`` [s] simulated.

    ``carried_by``: a wheel-face dock starts lifted, its helper ``act.helper`` at this
    pose carrying the module one width ahead (``carry_yaw``), the task as
    :class:`~smores_assembly.docking.task.Lift` leaves it (NAVIGATE, carrying; no path:
    the pair moves directly from there). The module's and the helper's poses in ``poses``
    are ignored.

    Returns:
        (connected, collision events, retries, simulated time at the end [s]).
    """
    helper = act.helper if carried_by is not None else ""
    spec = DockingSpec(act.module, act.parent_module, act.parent_face, act.child_face, helper)
    task = DockingTask(spec, DockingSettings())
    if carried_by is not None:
        carry_yaw = wrap_angle(-act.child_face.angle)
        poses = dict(poses)
        poses[helper] = carried_by
        poses[act.module] = carried_by.compose(DockingSettings().module_width, 0.0, carry_yaw)
        world = SimWorld(poses, helpers=[helper])
        world.helper_command(helper, HelperOp.LIFT, act.module, carry_yaw)
        task.tick(0.0, {m: PoseSample(p, 0.0) for m, p in world.poses().items()})
        task.ctx.lifted = True
        task._go(Phase.NAVIGATE)
    else:
        world = SimWorld(poses)
    task.path_unavailable()
    want = Connection.make(act.module, act.child_face, act.parent_module, act.parent_face)
    collisions = _run_task(task, world, act, helper, t_max, want)
    return want in world.connections(), collisions, task.retries, world.t


def fetch_in_world(poses: dict[str, Pose2D], act, t_max: float = 150.0
                   ) -> tuple[bool, int, float, str]:
    """Run the fetch of the wheel-face dock ``act`` in a SimWorld of ``poses``: its helper
    ``act.helper`` starts free at its pose there and picks the module up with
    WAIT_HELPER's direct moves (no path), until the module is lifted, the task ends or
    ``t_max`` [s] simulated.

    Returns:
        (lifted, collision events, simulated time at the end [s], the task's message).
    """
    spec = DockingSpec(act.module, act.parent_module, act.parent_face, act.child_face,
                       act.helper)
    task = DockingTask(spec, DockingSettings())
    world = SimWorld(poses, helpers=[act.helper])
    task.path_unavailable()
    want = Connection.make(act.module, act.child_face, act.parent_module, act.parent_face)
    collisions = _run_task(task, world, act, act.helper, t_max, want,
                           stop=lambda: task.ctx.lifted)
    return task.ctx.lifted, collisions, world.t, task.message


def _run_task(task: DockingTask, world, act, helper: str, t_max: float, want,
              stop=lambda: False) -> int:
    """Tick ``task`` (driving ``helper``, else ``act.module``) closed loop in ``world``
    until it is done, ``stop()`` or ``t_max`` [s]; its obstacles: the modules within
    OBSTACLE_RANGE but its module, its parent and its helper. Returns the collision
    events."""
    driven = helper or act.module
    collisions = 0
    while world.t < t_max and not task.done and not stop():
        t = world.t
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        me = world.pose(driven)
        obs = [(p.x, p.y) for m, p in world.poses().items()
               if m not in (act.module, act.parent_module, helper)
               and p.distance_to(me) <= OBSTACLE_RANGE]
        out = task.tick(t, samples, want in world.connections(), None, obs)
        for m, (v, om) in out.cmd.items():
            world.set_cmd_vel(m, v, om)
        for m, faces in out.magnets.items():
            world.set_magnets(m, set(faces))
        for r in out.helper_commands:
            world.helper_command(r.helper, r.command, r.module, r.carry_yaw)
        collisions += sum(ev.kind == "collision" for ev in world.step(DT))
    return collisions



def _tick(turn: TaskTurn, world, t: float, samples, connected: bool, cmds: dict,
          wanted: dict, off: dict) -> Pose2D:
    """One control tick of ``turn.task`` (a :func:`dispatch` turn, the node's rules) in
    ``world`` at ``t``: the turn's path, its obstacles (the modules within OBSTACLE_RANGE but
    its own, its parent and its helper), its commands merged into ``cmds``
    (:func:`merge_command`), its magnet wishes added to ``wanted`` and the faces it holds off
    to ``off`` (module -> faces; the tick applies them all, :func:`_apply_magnets`), its
    helper commands applied. Returns the driven module's pose at the tick."""
    task = turn.task
    if turn.unavailable:
        task.path_unavailable()
    me = world.pose(task.driven)
    skip = {task.spec.module, task.spec.parent_module, task.spec.helper}
    obs = [(q.x, q.y) for m, q in world.poses().items()
           if m not in skip and q.distance_to(me) <= OBSTACLE_RANGE]
    out = task.tick(t, samples, connected, turn.path, obs)
    merge_command(cmds, turn, out.cmd)
    for m, faces in out.magnets.items():
        wanted.setdefault(m, set()).update(faces)
    for m, faces in out.magnets_off.items():
        off.setdefault(m, set()).update(faces)
    for hc in out.helper_commands:
        world.helper_command(hc.helper, hc.command, hc.module, hc.carry_yaw)
    return me

def _apply_magnets(world, wanted: dict, off: dict, was_on: set) -> set:
    """Switch the world's magnets as the node does once per tick
    (:func:`~smores_assembly.docking.dispatch.magnets_on`): every task's wishes of the tick
    (``wanted``, ``off`` as :func:`_tick` fills them) and the faces of the world's connections, less
    the faces an undock holds off; modules switched on before (``was_on``) and no longer
    wanted switched off. Returns the modules switched on now."""
    conn: dict[str, set] = {}
    for c in world.connections():
        conn.setdefault(c.module_a, set()).add(c.face_a)
        conn.setdefault(c.module_b, set()).add(c.face_b)
    faces = magnets_on((wanted, conn), off)
    for m in set(faces) | was_on:
        world.set_magnets(m, faces.get(m, set()))
    return {m for m, f in faces.items() if f}


def _tick_followers(followers: dict, dis, world, t: float, samples, s, cmds: dict,
                    standing: StandingTracker, lag: dict | None = None) -> None:
    """The followers' part of a tick: the node's own
    (:func:`~smores_assembly.docking.dispatch.tick_followers`), each follower's neighbours
    those within OBSTACLE_RANGE, ``standing`` the run's record of who stands (fed here, as
    the node's); ``lag`` (module -> [m]) keeps each one's largest distance
    from its path's reference."""

    def around(m: str) -> list[tuple[float, float]]:
        me = world.pose(m)
        return [(q.x, q.y) for o, q in world.poses().items()
                if o != m and q.distance_to(me) <= OBSTACLE_RANGE]

    tick_followers(followers, dis, t, samples, s, cmds, around, standing=standing)
    if lag is not None:
        for m, f in followers.items():
            if t <= f.path.end_time:
                x, y = f.path.reference(t)
                q = world.pose(m)
                lag[m] = max(lag.get(m, 0.0), math.hypot(q.x - x, q.y - y))


def stage_in_world(poses: dict[str, Pose2D], actions, paths: dict, helpers=(),
                   path_delay: float = 0.04, t_max: float = 20.0,
                   backing_off: dict[str, float] | None = None, direct=(),
                   lifted: Collection[str] = (), backed_off: dict[str, float] | None = None,
                   later: Mapping[float, dict] | None = None
                   ) -> tuple[list[tuple[float, str, str]], dict[str, float]]:
    """Run one stage closed loop in a SimWorld of ``poses``, as the docking controller
    node does: one DockingTask per action of ``actions`` (plan order; one helper serves
    its actions one after the other), a PathFollower for every other module with a path.
    The navigation's ``paths`` (module -> ``[(t [s from stage start], Pose2D), ...]``,
    a StagePlan's) reach the controller ``path_delay`` s after the stage started, as
    they do in a run (the controller ticks before the navigation has answered).

    ``backing_off``: helper -> the distance [m] it still backs off from its hand-over of
    the stage before: as the node's ``_backing_off``, it first drives straight back that
    far at ``near_structure_speed`` (no task drives it meanwhile) and takes its path only
    afterwards.

    ``direct``: modules of ``actions`` the navigation gives an empty path unless ``paths``
    has one for them (a pipelined stage's module on its axis: it slides straight in).

    ``lifted``: modules of wheel-face actions whose helper has just lifted them: the
    module stands one width ahead of its helper (``poses`` of the module are ignored),
    carried at ``carry_yaw``, and the task starts in NAVIGATE carrying, as
    :class:`~smores_assembly.docking.task.Lift` leaves it (as :func:`dock_in_world`'s
    ``carried_by``).

    ``backed_off``: filled with helper -> the simulated time [s] its back-off ended.

    ``later``: further answers of the navigation (a replan): simulated time [s] -> paths
    (``paths``' form, times from the stage's start), reaching the controller at that time.

    Returns:
        (collision events ``(t, a, b)``, each module's largest distance [m] from its
        path's reference position while it followed the path).
    """
    s = DockingSettings()
    poses = dict(poses)
    for a in actions:
        if a.module in lifted:
            poses[a.module] = poses[a.helper].compose(s.module_width, 0.0,
                                                      wrap_angle(-a.child_face.angle))
    world = SimWorld(poses, helpers=tuple(helpers))
    tasks = [DockingTask(DockingSpec(a.module, a.parent_module, a.parent_face, a.child_face,
                                     a.helper or ""), s) for a in actions]
    for a, task in zip(actions, tasks):
        if a.module in lifted:
            world.helper_command(a.helper, HelperOp.LIFT, a.module,
                                 wrap_angle(-a.child_face.angle))
            task.tick(0.0, {m: PoseSample(p, 0.0) for m, p in world.poses().items()})
            task.ctx.lifted = True
            task._go(Phase.NAVIGATE)
    timed = {m: TimedPath(tuple((t + path_delay, p.x, p.y) for t, p in pts))
             for m, pts in paths.items()}
    wants = [Connection.make(a.module, a.child_face, a.parent_module, a.parent_face)
             for a in actions]
    want_of = {id(task): want for task, want in zip(tasks, wants)}
    # the navigation's answer: a path, or none (None) for a direct module without one
    answer: dict[str, TimedPath | None] = dict(timed)
    answer.update({m: None for m in direct if m not in timed})
    followers: dict[str, PathFollower] = {}
    standing = StandingTracker()
    lag = {m: 0.0 for m in timed}
    backs = {h: (world.pose(h), d) for h, d in (backing_off or {}).items() if d > 0.0}
    pending: dict[str, TimedPath | None] = {}   # arrived, not yet handed in (back-offs)
    later_left = dict(later or {})
    delivered = False
    events = []
    mag_on: set[str] = set()
    while world.t < t_max and not all(t.done for t in tasks):
        t = world.t
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        if not delivered and t >= path_delay:
            delivered = True
            pending.update(answer)
        for t_at in [t_at for t_at in later_left if t >= t_at]:
            pending.update({m: TimedPath(tuple((tt, p.x, p.y) for tt, p in pts))
                            for m, pts in later_left.pop(t_at).items()})
        cmds: dict[str, tuple[float, float]] = {}
        wanted: dict[str, set] = {}
        off: dict[str, set] = {}
        conns = world.connections()
        for h, (p0, d) in list(backs.items()):
            if world.pose(h).distance_to(p0) >= d:
                del backs[h]
                if backed_off is not None:
                    backed_off[h] = t
        # the node's dispatch: the back-offs, the tasks in plan order, then the followers
        dis = dispatch(tasks, backs, pending)
        pending = dict(dis.kept)
        for h in backs:
            cmds[h] = (-min(s.near_structure_speed, s.v_max), 0.0)
        for turn in dis.turns:
            task = turn.task
            me = _tick(turn, world, t, samples, want_of[id(task)] in conns, cmds, wanted, off)
            if (task.phase in (Phase.NAVIGATE, Phase.WAIT_HELPER) and task.driven in timed
                    and t <= timed[task.driven].end_time):
                x, y = timed[task.driven].reference(t)
                lag[task.driven] = max(lag[task.driven], math.hypot(me.x - x, me.y - y))
        _tick_followers(followers, dis, world, t, samples, s, cmds, standing, lag)
        mag_on = _apply_magnets(world, wanted, off, mag_on)
        for m, (v, om) in cmds.items():
            world.set_cmd_vel(m, v, om)
        events += [(round(world.t, 2), *ev.modules) for ev in world.step(DT)
                   if ev.kind == "collision"]
    return events, lag


def stage_with_navigation(plan, k: int, poses: dict[str, Pose2D], helpers=(),
                          t_max: float = 150.0, dt: float = DT
                          ) -> tuple[list[tuple[float, str, str]], list]:
    """Run stage ``k`` of ``plan`` (pipelined, kept goals completed) closed loop in a
    SimWorld of ``poses`` with the navigation in the loop, as the nodes run it: the
    stage's problem (``nav_problem`` -> ``plan_stage_carrying``) planned as the stage
    starts and again when a helper has lifted its module (its phase NAVIGATE: the pair's
    path), the paths delivered 0.04 s later; one DockingTask per action (one helper
    serves its actions one after the other), a PathFollower for every other module with
    a path.

    Returns:
        (collision events ``(t, a, b)``, the tasks at the end).
    """
    from smores_assembly.errors import InputError, NavigationError
    from smores_assembly.navigation.problem import nav_problem
    from smores_assembly.navigation.stage import NavSettings
    from smores_assembly.staging import plan_stage_carrying

    s, nav = DockingSettings(), NavSettings()
    world = SimWorld(poses, helpers=tuple(helpers))
    acts = [a for a in plan.actions if a.stage == k]
    tasks = [DockingTask(DockingSpec(a.module, a.parent_module, a.parent_face, a.child_face,
                                     a.helper or ""), s) for a in acts]
    wants = [Connection.make(a.module, a.child_face, a.parent_module, a.parent_face)
             for a in acts]
    want_of = {id(task): want for task, want in zip(tasks, wants)}
    carried = {a.module for a in acts if a.needs_helper}
    pending: dict[str, TimedPath] = {}
    followers: dict[str, PathFollower] = {}
    standing = StandingTracker()

    def replan(t: float, phases, docked) -> None:
        prob = nav_problem(plan, k, world.poses(), docked, phases, nav)
        try:
            sp, _ = plan_stage_carrying(prob.moving, prob.staging, prob.carried,
                                        prob.obstacles, prob.zones, nav, fixed=prob.fixed,
                                        width=s.module_width, keep_clear=prob.keep_clear,
                                        slides=prob.slides)
        except (NavigationError, InputError):
            return   # the node publishes empty paths: the tasks drive directly
        for m, pts in sp.paths.items():
            pending[m] = TimedPath(tuple((t + 0.04 + tt, p.x, p.y) for tt, p in pts))

    replan(world.t, {}, set())
    events: list[tuple[float, str, str]] = []
    mag_on: set[str] = set()
    before: dict = {}
    while world.t < t_max and not all(t.done for t in tasks):
        t = world.t
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        conns = world.connections()
        phases = {task.spec.module: task.phase for task in tasks}
        if any(p is Phase.NAVIGATE and before.get(m) is not Phase.NAVIGATE
               for m, p in phases.items() if m in carried):
            replan(t, phases, {m for m, p in phases.items() if p is Phase.DOCKED})
        before = phases
        cmds: dict[str, tuple[float, float]] = {}
        wanted: dict[str, set] = {}
        off: dict[str, set] = {}
        # the node's dispatch: the tasks in plan order, then the followers
        dis = dispatch(tasks, (), pending)
        pending.clear()
        for turn in dis.turns:
            _tick(turn, world, t, samples, want_of[id(turn.task)] in conns, cmds, wanted, off)
        _tick_followers(followers, dis, world, t, samples, s, cmds, standing)
        mag_on = _apply_magnets(world, wanted, off, mag_on)
        for m, (v, om) in cmds.items():
            world.set_cmd_vel(m, v, om)
        events += [(round(world.t, 2), *ev.modules) for ev in world.step(dt)
                   if ev.kind == "collision"]
    return events, tasks
