"""A helper's timed path after its back-off leaves it time to turn in place to its first
leg (issue 11, bench_targets seed 56 random_12_24688286: contact h0-m3 0.21 mm at
366.28 s, trace 24cdbaff).

Stage 7 (0-based 6, m0 carried by h0): h0 backs off from its hand-over of m11, heading
-9 degrees, and its first leg after the back-off runs at 147 degrees. The navigation plans
the stage from where the back-off ends, heading kept, and ``wait_for_backoffs`` shifted
the helper's path by the back-off alone: the first leg started the moment the back-off
ended, with no time for the turn. h0 fell 0.04 m behind and cut the corner, while m3,
planned one cell behind it down the same column, ran on schedule.

Judged here independently of the planner, no ROS: w x w squares of every module along the
timed paths, the helper modelled as it drives: its back-off as planned (its length at
``helper_backoff_speed`` plus the 0.5 s wheel ramp), then a turn in place at
``TURN_RATE`` to its first leg's heading, and only then its path, as late as it
started it (it does not catch up), or its path's reference at once after the turn (it
catches up). The fix (``wait_for_backoffs``' ``_followers_later``) has the other paths
wait for that turn; holding the helper where its back-off ends instead turned it into the
placed m8 there (end to end: stage 7 failed). The problem is the navigation node's at the stage's
start in the recorded run (mocap poses at 360.84 s; the plan anchored on the root's
mocap sample at 0.04 s), which plans exactly the run's paths (m3 into h0's column at
6.44 s).
"""
from __future__ import annotations

import math

from bench.bench_targets import make_scenario
from smores_assembly.geometry import Pose2D, square_overlap, wrap_angle
from smores_assembly.navigation.problem import nav_problem
from smores_assembly.navigation.replay import plan_problem
from smores_assembly.navigation.stage import NavSettings, pose_at
from smores_assembly.planning import plan_assembly, with_schedule
from smores_assembly.scenario import scenario_from_dict

W = 0.08
#: the docking controller's w_max [rad/s]: no helper turns faster
TURN_RATE = 1.5
#: the wheels' ramp [s] at the end of the back-off
RAMP_S = 0.5

#: the root m1's first mocap sample the run's plan is anchored on (t = 0.04 s)
ROOT = ("m1", (0.21971163853625045, 0.190395122060182, -0.13716392923591278))
#: mocap poses at 360.84 s, the stage-7 problem of the recorded run (trace 24cdbaff)
POSES = {
    "h0": (0.06765722549553925, 0.29534384711438855, -0.15519360969411816),
    "m0": (0.03086185711476703, -0.2509460957267751, -2.2421195859794416),
    "m1": (0.22116671235511437, 0.1891369732943267, -0.13058247462185554),
    "m2": (0.2894624227167883, 0.10095587403695015, -0.13504068821094653),
    "m3": (0.01684026334433721, 0.49196365054187396, 1.4079681736916954),
    "m4": (0.24343401204152137, 0.34847446782229147, -1.703692294916996),
    "m5": (0.21039175326365853, 0.110721895161486, 3.0100268224058926),
    "m6": (-0.5347657911337187, -0.04184546164284425, 0.2467105931373961),
    "m7": (0.1992628985920651, 0.032641041919929975, -0.13680681011688758),
    "m8": (0.06226336233748047, 0.21065412409190293, 1.4289755134238464),
    "m9": (0.23234929987017067, 0.27015331221016403, 3.008500889364305),
    "m10": (0.14172967487410384, 0.20129396207701103, -1.6963119730803184),
    "m11": (0.15156770639971764, 0.2793065029261899, 1.4398165471614985),
}


def _stage7():
    """(poses, back-offs, timed StagePlan) of the run's stage 7 as the node plans it."""
    sc = scenario_from_dict(make_scenario(12, 24688286))
    mods = dict(sc.modules)
    mods[ROOT[0]] = Pose2D(*ROOT[1])
    plan = with_schedule(plan_assembly(sc, mods), "pipelined")
    k = next(a.stage for a in plan.actions if a.module == "m0")
    docked = {a.module for a in plan.actions if a.stage < k}
    poses = {m: Pose2D(*p) for m, p in POSES.items()}
    nav = NavSettings()
    prob = nav_problem(plan, k, poses, docked, {}, nav)
    sp, _ = plan_problem(prob, nav, work_clock=True)
    return poses, prob.backoffs, sp


def _helper_as_driven(path, start: Pose2D, end: Pose2D, speed: float,
                      catch_up: bool = False):
    """The helper's pose at t [s] (a function), how late [s] it starts its path's
    first leg and when [s] it turns in place (from, to): back-off from ``start`` to
    ``end`` in its length / ``speed`` + RAMP_S, a turn in place at TURN_RATE to the
    heading from ``end`` to the path's first waypoint away from it, then the path from
    where it leaves ``end``, that much late (or, ``catch_up``, its path's reference as
    soon as it has turned)."""
    t_b = start.distance_to(end) / speed + RAMP_S
    back = next(i for i, (_, p) in enumerate(path) if p.distance_to(end) <= 1e-3)
    leave = next(i for i, (_, p) in enumerate(path)
                 if i > back and p.distance_to(end) > 1e-3)
    t_leave = path[leave - 1][0]
    q = path[leave][1]
    yaw = math.atan2(q.y - end.y, q.x - end.x)
    turn = wrap_angle(yaw - end.yaw)
    t_ready = t_b + abs(turn) / TURN_RATE
    lag = max(0.0, t_ready - t_leave)

    def at(t: float) -> Pose2D:
        if t <= t_b:
            s = min(1.0, t / (t_b - RAMP_S))
            return Pose2D(start.x + s * (end.x - start.x), start.y + s * (end.y - start.y),
                          start.yaw)
        if t <= t_ready:
            return Pose2D(end.x, end.y, end.yaw + turn * (t - t_b) / (t_ready - t_b))
        if catch_up:
            return pose_at(path, t)
        if t - lag <= t_leave:
            return Pose2D(end.x, end.y, yaw)
        return pose_at(path, t - lag)
    return at, lag, (t_b, t_ready)


def _overlaps(poses, backoffs, sp, catch_up: bool = False, dt: float = 0.05
              ) -> list[tuple]:
    """(a, b, depth [mm], t [s]) of the deepest overlap of each pair of w x w squares
    (the helpers as driven, the others on their timed paths, the rest where they stand)
    from the stage's start to the end of its last path. A helper turning in place where
    its back-off ends is judged against the modules that move only: its sweep there
    against a module standing still is the geometry of where the back-off ends (the
    docking controller's start escape, ``test_helper_backoff_paths``), the same with any
    timing (here h0's corner passes the placed m8 at 0.105 m)."""
    nav = NavSettings()
    at = {}
    turning: dict[str, tuple[float, float]] = {}
    for m, p in poses.items():
        path = sp.paths.get(m)
        if m in backoffs and path:
            at[m], _, turning[m] = _helper_as_driven(path, *backoffs[m],
                                                     nav.helper_backoff_speed, catch_up)
        elif path:
            at[m] = (lambda path: lambda t: pose_at(path, t))(path)
        else:
            at[m] = (lambda p: lambda t: p)(p)
    end = max(p[-1][0] for p in sp.paths.values() if p) + 2.0
    ids = sorted(poses)
    worst: dict[tuple[str, str], tuple[float, float]] = {}
    for i in range(int(end / dt) + 1):
        t = i * dt
        now = {m: at[m](t).as_tuple() for m in ids}
        for j, a in enumerate(ids):
            if a not in sp.paths:
                continue
            for b in ids:
                if b == a or (b in sp.paths and b < a):
                    continue
                if b not in sp.paths and a in turning and \
                        turning[a][0] < t <= turning[a][1]:
                    continue
                d = square_overlap(now[a], now[b], W)
                if d > 0.0 and d > worst.get((a, b), (0.0, 0.0))[0]:
                    worst[(a, b)] = (d, t)
    return [(a, b, round(d * 1000, 2), round(t, 2)) for (a, b), (d, t) in sorted(worst.items())]


def test_random_12_24688286_stage7_the_run_plans_what_it_ran():
    """The problem is the run's: h0 backs off from m11 and m3 runs into h0's column one
    cell behind it (the paths the run published, relative to the stage's start)."""
    poses, backoffs, sp = _stage7()
    assert set(backoffs) == {"h0"}
    end = backoffs["h0"][1]
    assert abs(end.x - 0.014) < 2e-3 and abs(end.y - 0.304) < 2e-3
    column = [(t, p) for t, p in sp.paths["m3"] if abs(p.x + 0.055) < 2e-3
              and abs(p.y - 0.349) < 2e-3]
    assert column, sp.paths["m3"]
    path = sp.paths["h0"]
    back = next(i for i, (_, p) in enumerate(path) if p.distance_to(end) <= 1e-3)
    first = next(p for _, p in path[back:] if p.distance_to(end) > 1e-3)
    turn = abs(wrap_angle(math.atan2(first.y - end.y, first.x - end.x) - end.yaw))
    assert math.degrees(turn) > 140.0


def test_random_12_24688286_stage7_m3_follows_h0_clear_of_its_turn():
    """With h0's turn in place where its back-off ends modelled (it starts its first leg
    that late, 1.8 s, and does not catch up; or catches up at once), no two squares
    overlap. Before: m3 ran on schedule one cell behind h0's late path and into it
    (squares 55 mm deep at 5.75 s)."""
    poses, backoffs, sp = _stage7()
    _, lag, _ = _helper_as_driven(sp.paths["h0"], *backoffs["h0"],
                                  NavSettings().helper_backoff_speed)
    assert lag > 1.0   # the turn this test is about
    for catch_up in (False, True):
        bad = _overlaps(poses, backoffs, sp, catch_up)
        assert not bad, (catch_up, bad)
