"""Which task drives which body on one control tick, and which task takes which new path.

The docking controller runs a stage's tasks (:class:`~smores_assembly.docking.task.DockingTask`,
:class:`~smores_assembly.docking.undock.UndockTask`), the straight back-offs of helpers
that handed a module over in the stage before, and a
:class:`~smores_assembly.docking.task.PathFollower` for every other module the navigation
gives a path (moved aside, or staged for a later stage). This module is that dispatch,
without ROS: the node (:mod:`smores_assembly.ros.docking_controller`) and the closed-loop
test harnesses call the same function, so what the tests run is what the node runs.

The rules:

* A helper backing off is driven by its back-off alone: no task ticks with it, and a path
  of it that arrives meanwhile is kept for a later tick (it starts after the back-off).
* One helper serves its stage's wheel-face actions one after the other, in plan order: a
  task whose helper is held by an earlier one (or backing off) waits (is not ticked).
* A task drives its module and its driven body (its helper for wheel-face docks) and takes
  the new path of its driven body -- until it is done. A done wheel-face task drives its
  helper's back-off; a new path of the helper meanwhile is kept for later, as for a
  back-off across stages. Once the back-off is over (``helper_free``) the helper is free:
  a later task of the same helper takes its paths; with none, the helper follows its path
  like any other module (a helper the navigation moves aside later in the stage moves).
  Random 100, stage 23 (issue 16): a finished task kept taking its helper's new path and
  commanding it to stand, so the helper stayed where the navigation had moved it out of a
  pair's way, and the pair's planned path drove into it.
* A path nobody took goes to the followers; a body a task or back-off drives follows none.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from smores_assembly.docking.control import DockingSettings, TimedPath, TurnGate, turns_in_place
from smores_assembly.docking.task import (DockingTask, PathFollower, PoseSample, StandingTracker,
                                          follower_order)
from smores_assembly.docking.undock import UndockTask

#: what the controller runs: a dock or an undock
Task = DockingTask | UndockTask


@dataclass(frozen=True)
class TaskTurn:
    """One task's turn on a tick.

    Attributes:
        task: the task to tick.
        path: the new path it takes (None: none arrived for its driven body, or the
            navigation answered with an empty one -- see ``unavailable``).
        unavailable: the navigation answered with no path for its driven body (the task
            drives directly: ``task.path_unavailable()``).
        bodies: the module ids whose commands this task gives this tick (its module, and its
            driven body while it holds it).
    """

    task: Task
    path: TimedPath | None
    unavailable: bool
    bodies: frozenset[str]


@dataclass
class Dispatch:
    """The dispatch of one tick (:func:`dispatch`).

    Attributes:
        turns: the tasks to tick, in plan order.
        held: every body a task or a back-off drives this tick (follows no path).
        kept: new paths of helpers still backing off (across stages, or after their task's
            hand-over in this stage), to hand in again on a later tick.
        free: new paths no task took (module id -> path, None = stop where it stands), for
            the followers of the bodies not in ``held``.
    """

    turns: list[TaskTurn] = field(default_factory=list)
    held: set[str] = field(default_factory=set)
    kept: dict[str, TimedPath | None] = field(default_factory=dict)
    free: dict[str, TimedPath | None] = field(default_factory=dict)


def task_bodies(task: Task) -> frozenset[str]:
    """The module ids ``task`` commands: its module and its driven body; a wheel-face dock
    whose helper is free (done, back-off over) no longer its helper."""
    if task.uses_helper and task.helper_free:
        return frozenset((task.spec.module,))
    return frozenset((task.spec.module, task.driven))


def dispatch(tasks: Iterable[Task], backing_off: Collection[str],
             new_paths: Mapping[str, TimedPath | None]) -> Dispatch:
    """Dispatch one control tick (rules: the module docstring).

    Args:
        tasks: the stage's tasks in plan order (each with ``spec.module``, ``driven``,
            ``uses_helper``, ``helper_free``).
        backing_off: helpers whose straight back-off runs this tick.
        new_paths: the paths that arrived since the last tick, by module id (None: the
            navigation has no path for it). Not modified.

    Returns:
        The :class:`Dispatch`.
    """
    paths = dict(new_paths)
    out = Dispatch(held=set(backing_off))
    out.kept = {h: paths.pop(h) for h in backing_off if h in paths}
    serving = set(backing_off)          # helpers taken by a back-off or an earlier task
    for task in tasks:
        if task.uses_helper:
            if task.driven in serving:
                continue
            if not task.helper_free:
                serving.add(task.driven)
        bodies = task_bodies(task)
        path, unavailable = None, False
        if task.driven in bodies and task.driven in paths:
            if task.uses_helper and task.done:
                # DOCKED, its helper still backing off: the path is the helper's next one
                # (planned from where the back-off ends), kept until the back-off is over
                out.kept[task.driven] = paths.pop(task.driven)
            else:
                path = paths.pop(task.driven)
                unavailable = path is None
        out.turns.append(TaskTurn(task, path, unavailable, bodies))
        out.held |= bodies
    out.free = paths
    return out


def tick_followers(followers: dict[str, PathFollower], d: Dispatch, t: float,
                   samples: Mapping[str, PoseSample], settings: DockingSettings,
                   cmds: dict[str, tuple[float, float]],
                   around: Callable[[str], Sequence[tuple[float, float]]],
                   staging_yaw: Callable[[str, TimedPath], float | None] | None = None,
                   standing: StandingTracker | None = None) -> set[str]:
    """The followers' part of a tick, after the tasks (their commands in ``cmds``).

    A new path of ``d.free`` for a body nobody holds gets a new
    :class:`~smores_assembly.docking.task.PathFollower` (it keeps the escape state of the
    body's unfinished follower: a new path of the same stage must not restart the escape
    halfway), ``staging_yaw(module, path)`` its goal heading (a pipelined stage's staging
    pose; None: none); an empty path (None) ends the body's follower (it stands). A body a
    task or back-off drives (``d.held``) follows nothing. The turns in place of the tick go
    through one :class:`~smores_assembly.docking.control.TurnGate`: the tasks' first, then
    the followers that turned last tick (:func:`follower_order`). Each follower is ticked
    with ``around(module)`` (centres [m] of its neighbours) until its start escape is done,
    and with ``samples`` (the sweep of its turn to a staging heading, and of a path's
    turn: ``PathFollower.turn_escape``); ``standing``, when given, is fed ``samples`` once
    here and tells the followers which modules stand (else each follower keeps its own).

    Args:
        followers: module id -> follower; updated in place.
        d: this tick's :func:`dispatch`.
        t: the controller's time [s].
        samples: the latest pose sample of every module.
        settings: the docking settings.
        cmds: the tick's commands by module id; the followers' are added.
        around: module id -> centres [m, ``world``] of the modules near it.
        staging_yaw: module id, path -> goal heading [rad] at the path's end, or None.
        standing: the controller's record of the modules that stand, kept across ticks.

    Returns:
        The modules that got a new follower this tick.
    """
    started = set()
    for m, p in d.free.items():
        if m in d.held:
            continue
        if p is None:
            followers.pop(m, None)
            continue
        old = followers.get(m)
        followers[m] = PathFollower(m, p, settings,
                                    final_yaw=staging_yaw(m, p) if staging_yaw else None,
                                    escape=old.escape if old and not old.finished else None,
                                    previous=old)
        started.add(m)
    if standing is not None:
        standing.update(t, samples)
    gate = TurnGate(settings.module_width)
    for m, (v, w) in cmds.items():
        smp = samples.get(m)
        if smp is not None and turns_in_place(v, w, settings.module_width):
            gate.note(smp.pose.x, smp.pose.y)
    for m in follower_order(followers):
        if m in d.held:
            del followers[m]
            continue
        f = followers[m]
        # the neighbours matter only until the follower's start escape is done (a scan of
        # every module per follower and tick otherwise)
        near = around(m) if not f.escape.was_clear else []
        cmds[m] = f.tick(t, samples.get(m), near, gate, samples, standing)
    return started


def merge_command(cmds: dict[str, tuple[float, float]], turn: TaskTurn,
                  task_cmd: Mapping[str, tuple[float, float]]) -> None:
    """Merge a task's commands (``TaskOutput.cmd``) into the tick's ``cmds``: only for the
    bodies of its ``turn``; a zero command never overwrites another one's."""
    for m, c in task_cmd.items():
        if m in turn.bodies and (m not in cmds or c != (0.0, 0.0)):
            cmds[m] = c


def magnets_on(sources: Iterable[Mapping[str, Collection]],
               off: Mapping[str, Collection] | None = None) -> dict[str, set]:
    """The EP-magnet faces to switch on, by module id: the union of ``sources`` (the tasks'
    wishes of this tick -- every task's, one module may serve two docks --, the faces of
    DOCKED actions, the faces of reported connections) less the faces an undock holds
    ``off``. A module missing from the result has every magnet off."""
    faces: dict[str, set] = {}
    for src in sources:
        for m, some in src.items():
            faces.setdefault(m, set()).update(some)
    for m, gone in (off or {}).items():
        faces.setdefault(m, set()).difference_update(gone)
    return faces
