"""The docking controller's dispatch (which task drives which body, which task takes which
new path; :mod:`smores_assembly.docking.dispatch`), shared by the node and the closed-loop
harnesses (issue 16).

Random 100, stage 23: a wheel-face task that had docked and finished its helper's back-off
still took its helper's new paths and commanded it to stand, so a helper the navigation
moved aside later in the stage never moved, and a pair's planned path drove into it. The
harness had its own copy of the node's dispatch, with the same defect, so no closed-loop
test could see it. Judged here by the world: the helper reaches the end of the path it was
given after its task was done.
"""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import closed_loop
from closed_loop import stage_in_world
from smores_assembly.docking.control import TimedPath
from smores_assembly.docking.dispatch import dispatch, magnets_on, merge_command, task_bodies
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.navigation.stage import carried_predock
from smores_assembly.planning import DockAction

#: the helper's move aside, given 6 s into the stage (its pair docked at 2.5 s, its
#: back-off ended at 4.6 s; the other dock of the stage ends at 14 s)
T_ASIDE = 6.0
ASIDE = [(T_ASIDE, Pose2D(0.0, -0.225, 0.0)), (T_ASIDE + 1.5, Pose2D(0.0, -0.30, 0.0)),
         (T_ASIDE + 5.0, Pose2D(0.25, -0.30, 0.0))]


def _act(module: str, parent: str, pf: Face, cf: Face, helper: str | None = None):
    return DockAction(module=module, node=module, stage=0, depth=1, parent_module=parent,
                      parent_node=parent, parent_face=pf, child_face=cf,
                      needs_helper=helper is not None, helper=helper, goal=Pose2D(0, 0, 0))


def _stage(monkeypatch, later):
    """The stage: h0 carries m1 (lifted at its pre-dock pose) onto p.RIGHT; m2 drives from
    0.6 m onto p.LEFT. Returns (collision events, what was seen: the world, the time m1's
    task freed its helper, the time of m2's task's last tick)."""
    poses = {"p": Pose2D(0.0, 0.0, 0.0),
             "h0": carried_predock(Pose2D(0.0, -0.08, 0.0), Face.LEFT.angle, 0.06),
             "m1": Pose2D(9.0, 9.0, 0.0),      # replaced: the lifted module
             "m2": Pose2D(0.0, 0.6, -1.5708)}
    acts = [_act("m1", "p", Face.RIGHT, Face.LEFT, "h0"),
            _act("m2", "p", Face.LEFT, Face.BOTTOM)]
    seen: dict = {}
    tick = closed_loop._tick

    def spy(turn, world, t, *rest):
        seen["world"] = world
        if turn.task.spec.module == "m1" and turn.task.helper_free:
            seen.setdefault("free", t)
        if turn.task.spec.module == "m2":
            seen["m2_last"] = t
        return tick(turn, world, t, *rest)

    monkeypatch.setattr(closed_loop, "_tick", spy)
    events, _lag = stage_in_world(poses, acts, {}, helpers=["h0"], direct={"h0", "m2"},
                                  lifted={"m1"}, t_max=60.0, later=later)
    return events, seen


def _aside(t0: float) -> list:
    """The move aside of ``ASIDE`` given at ``t0`` [s]."""
    return [(t - T_ASIDE + t0, p) for t, p in ASIDE]


@pytest.mark.parametrize("t_given", [T_ASIDE, 3.5])
def test_a_helper_freed_by_its_task_follows_the_path_it_gets_later(monkeypatch, t_given):
    """Given after the back-off (6 s) or during it (3.5 s: the navigation replans when the
    pair docks, with the helper where its back-off ends; the path waits for it)."""
    events, seen = _stage(monkeypatch, {t_given: {"h0": _aside(t_given)}})
    world = seen["world"]
    # the scene is as meant: the pair docked (2.5 s) before the move aside came, its task
    # freed h0 before (6 s) or after (3.5 s) it, the stage's other dock ran on after it
    assert 2.6 < t_given < seen["m2_last"]
    assert (seen["free"] < t_given) == (t_given == T_ASIDE)
    assert events == []
    assert {c.describe() for c in world.connections()} == {"m1.LEFT-p.RIGHT",
                                                          "m2.BOTTOM-p.LEFT"}
    end = ASIDE[-1][1]
    h0 = world.pose("h0")
    assert h0.distance_to(Pose2D(end.x, end.y, h0.yaw)) < 0.03, h0


def test_a_helper_without_a_later_path_stays_where_its_back_off_ended(monkeypatch):
    """The control: no move aside, no motion of h0 after its back-off (the move above is
    the path's, not a drift)."""
    events, seen = _stage(monkeypatch, {})
    assert events == []
    h0 = seen["world"].pose("h0")
    assert abs(h0.x) < 0.005 and -0.235 < h0.y < -0.215, h0


# ----------------------------------------------------------------------- the rules alone

def _task(module, helper="", done=False, backing=False):
    """A stand-in task with the four attributes the dispatch reads."""
    return SimpleNamespace(spec=SimpleNamespace(module=module), driven=helper or module,
                           uses_helper=bool(helper), helper_free=done and not backing,
                           done=done)


def _path(tag: float) -> TimedPath:
    return TimedPath(((tag, 0.0, 0.0), (tag + 1.0, 1.0, 0.0)))


def test_one_helper_serves_its_tasks_in_plan_order():
    a, b = _task("m1", "h0"), _task("m2", "h0")
    p = _path(1.0)
    d = dispatch([a, b], (), {"h0": p})
    assert [t.task for t in d.turns] == [a]          # b waits for h0
    assert d.turns[0].path is p and d.free == {}
    a.done = a.helper_free = True
    d = dispatch([a, b], (), {"h0": p})
    assert [t.task for t in d.turns] == [a, b]
    assert d.turns[0].path is None and d.turns[1].path is p
    assert d.turns[0].bodies == {"m1"} and d.turns[1].bodies == {"m2", "h0"}


def test_a_helper_backing_off_keeps_its_path_for_later():
    a = _task("m2", "h0")
    p = _path(2.0)
    d = dispatch([a], ["h0"], {"h0": p, "m5": None})
    assert d.turns == [] and d.kept == {"h0": p} and d.free == {"m5": None}
    assert d.held == {"h0"}


def test_a_done_task_still_holds_its_module_and_while_backing_off_its_helper():
    a = _task("m1", "h0", done=True, backing=True)
    p0 = _path(0.0)
    d = dispatch([a], (), {"h0": p0})
    assert d.turns[0].bodies == {"m1", "h0"} and d.free == {}
    # the helper's next path, kept until the back-off is over (not the done task's)
    assert d.turns[0].path is None and d.kept == {"h0": p0}
    a.helper_free = True
    p = _path(0.0)
    d = dispatch([a], (), {"h0": p})
    assert d.turns[0].bodies == {"m1"} and d.free == {"h0": p} and d.held == {"m1"}


def test_an_empty_answer_is_the_task_driving_directly():
    a = _task("m3")
    d = dispatch([a], (), {"m3": None})
    assert d.turns[0].unavailable and d.turns[0].path is None


def test_merge_gives_a_body_only_its_holder_s_command():
    a = _task("m1", "h0", done=True)
    turn = dispatch([a], (), {}).turns[0]
    cmds = {"h0": (0.05, 0.0)}
    merge_command(cmds, turn, {"m1": (0.0, 0.0), "h0": (0.0, 0.0)})
    assert cmds == {"h0": (0.05, 0.0), "m1": (0.0, 0.0)}
    cmds = {}
    merge_command(cmds, turn, {"h0": (0.1, 0.2)})     # not its body any more
    assert cmds == {}


def test_magnets_are_the_union_of_every_wish_less_the_faces_held_off():
    on = magnets_on(({"p": {Face.RIGHT}}, {"p": {Face.LEFT}, "m1": {Face.TOP}}),
                    {"m1": {Face.TOP}, "m9": {Face.LEFT}})
    assert on == {"p": {Face.RIGHT, Face.LEFT}, "m1": set(), "m9": set()}


@pytest.mark.parametrize("seed", range(40))
def test_random_dispatch_conserves_paths_and_gives_each_body_one_driver(seed):
    """Random stages (helpers shared, tasks in every state, back-offs, paths and empty
    answers for any module), judged by rules stated independently of the code: every new
    path is taken by exactly one task, kept, or left free; a body is driven by at most one
    turn or back-off; a task waits exactly when an earlier non-free task of its helper or
    a back-off holds it; a free path is never for a held body's taker."""
    rng = random.Random(seed)
    helpers = [f"h{i}" for i in range(rng.randint(1, 3))]
    tasks = []
    for i in range(rng.randint(1, 7)):
        h = rng.choice(helpers + [""] * 2)
        state = rng.choice(["active", "backing", "free"])
        tasks.append(_task(f"m{i}", h, done=state != "active", backing=state == "backing"))
    backing = [h for h in helpers if rng.random() < 0.3]
    ids = [f"m{i}" for i in range(10)] + helpers
    paths = {m: (None if rng.random() < 0.3 else _path(float(k)))
             for k, m in enumerate(rng.sample(ids, rng.randint(0, len(ids))))}
    d = dispatch(tasks, backing, paths)
    # waiting: the oracle's own walk
    taken: set = set(backing)
    expect = []
    for t in tasks:
        if t.uses_helper and t.driven in taken:
            continue
        if t.uses_helper and not t.helper_free:
            taken.add(t.driven)
        expect.append(t)
    assert [x.task for x in d.turns] == expect
    # one driver per body
    drivers = [b for x in d.turns for b in x.bodies] + list(backing)
    assert len(drivers) == len(set(drivers)), drivers
    assert d.held == set(drivers)
    # conservation of the new paths
    took = {x.task.driven: x.path for x in d.turns if x.path is not None or x.unavailable}
    assert set(took) | set(d.kept) | set(d.free) == set(paths)
    assert not (set(took) & set(d.kept)) and not (set(took) & set(d.free))
    assert not (set(d.kept) & set(d.free))
    for m, p in {**took, **d.kept, **d.free}.items():
        assert p is paths[m]
    # a path is taken only by an unfinished task that drives that body now; the paths
    # kept are those of helpers backing off (across stages, or after a hand-over)
    for x in d.turns:
        if x.path is not None or x.unavailable:
            assert x.task.driven in task_bodies(x.task)
            assert not (x.task.uses_helper and x.task.done)
    backing_now = set(backing) | {x.task.driven for x in d.turns
                                  if x.task.uses_helper and x.task.done
                                  and not x.task.helper_free}
    assert set(d.kept) == {m for m in paths if m in backing_now}
