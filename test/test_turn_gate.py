"""Two followers closer than two half-diagonals never turn in place at once (TurnGate).

A module's square turning in place sweeps the disc of radius ``w / sqrt 2`` round its
centre. Two modules 0.097-0.113 m apart can each turn alone without touching the other's
square as it stands, yet touch when both turn at the same time (random 100 seed 0: the
followers m70 and m80, 0.1035 m apart, 0.38 mm; random 50: m47 and m49 turning to their
staging yaws). The docking controller ticks its followers through one :class:`TurnGate`
per tick: a turn overlapping one granted earlier in the tick holds still.

Judged in the kinematic world (``SimWorld``) closed loop: random pairs of followers that
turn in place to random staging yaws, placed so that each one's turn alone is clear of
the other's square at its start and at its final yaw (so one after the other is safe);
with the gate no collision event and both reach their yaws, without it some touch.
"""
from __future__ import annotations

import math
import random

from smores_assembly.docking import DockingSettings, TurnGate, turns_in_place
from smores_assembly.docking.control import TimedPath, turn_sweep_clear
from smores_assembly.docking.task import PathFollower, PoseSample, follower_order
from smores_assembly.geometry import Pose2D, wrap_angle
from smores_assembly.sim import SimWorld

S = DockingSettings()
W = S.module_width
DT = 0.02


def _clear(m: str, o: str, starts, ends) -> tuple[bool, bool] | None:
    """Whether ``m``'s turn alone is clear of ``o``'s square at its start, at its end;
    None where either is marginal (within 3 mm of the follower's 2 mm margin: the yaws
    are reached within the POSE_ADJUST tolerance, not exactly)."""
    out = []
    for other in (starts[o], ends[o]):
        wide = turn_sweep_clear(starts[m], [other], W, margin=0.005)
        if wide != turn_sweep_clear(starts[m], [other], W, margin=-0.001):
            return None
        out.append(wide)
    return out[0], out[1]


def _scenes(seed: int, n: int, after_b_blocks_a: bool = False
            ) -> list[tuple[dict[str, Pose2D], dict[str, float]]]:
    """``n`` random pairs (start poses, final yaws [rad]) 0.097-0.113 m apart, each
    body's turn alone clear of the other's square at its start and final yaw; with
    ``after_b_blocks_a`` instead: ``a``'s turn is clear of ``b``'s start square but not of
    its final one (``a`` may turn only before ``b``), ``b``'s clear of both of ``a``'s."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        x, y, bearing = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi)
        d = rng.uniform(0.097, math.sqrt(2.0) * W)
        starts = {"a": Pose2D(x, y, rng.uniform(-math.pi, math.pi)),
                  "b": Pose2D(x + d * math.cos(bearing), y + d * math.sin(bearing),
                              rng.uniform(-math.pi, math.pi))}
        finals = {m: wrap_angle(p.yaw + rng.choice([-1, 1]) * rng.uniform(0.5, 2.5))
                  for m, p in starts.items()}
        ends = {m: Pose2D(p.x, p.y, finals[m]) for m, p in starts.items()}
        want = (True, not after_b_blocks_a)
        if (_clear("a", "b", starts, ends) == want
                and _clear("b", "a", starts, ends) == (True, True)):
            out.append((starts, finals))
    return out


def _run(starts: dict[str, Pose2D], finals: dict[str, float], gated: bool,
         squares: bool = True):
    """Both followers turn to their final yaws closed loop. Returns (collision events,
    followers, number of ticks in which both turned in place at once, final yaws)."""
    world = SimWorld(starts)
    followers = {m: PathFollower(m, TimedPath(((0.0, p.x, p.y), (0.3, p.x, p.y))), S,
                                 final_yaw=finals[m]) for m, p in starts.items()}
    events, both = [], 0
    while world.t < 12.0:
        t = world.t
        gate = TurnGate(W) if gated else None
        turning = 0
        samples = {m: PoseSample(world.pose(m), t) for m in followers}
        for m in follower_order(followers):
            v, w = followers[m].tick(t, samples[m], (), gate, samples if squares else None)
            turning += turns_in_place(v, w, W)
            world.set_cmd_vel(m, v, w)
        both += turning == 2
        events += [(round(world.t, 2), *ev.modules) for ev in world.step(DT)
                   if ev.kind == "collision"]
    yaws = {m: world.pose(m).yaw for m in starts}
    return events, followers, both, yaws


def test_turn_gate_grants_overlapping_turns_one_at_a_time():
    """Brute force over random disc centres: ``may_turn`` is False exactly when a granted
    disc lies closer than ``w sqrt 2 + margin``; a granted turn is recorded."""
    rng = random.Random(3)
    reach = math.sqrt(2.0) * W + 0.002
    for _ in range(200):
        gate = TurnGate(W, margin=0.002)
        granted = []
        for _ in range(rng.randint(1, 6)):
            x, y = rng.uniform(0, 0.3), rng.uniform(0, 0.3)
            want = all(math.hypot(x - gx, y - gy) >= reach for gx, gy in granted)
            assert gate.may_turn(x, y) is want
            if want:
                granted.append((x, y))
        assert gate.discs == granted


def test_followers_near_each_other_turn_to_their_staging_yaws_one_after_the_other():
    """40 random pairs (seed 70): with the gate no collision event, never both turning in
    place in one tick, and both within the POSE_ADJUST yaw tolerance of their staging yaws
    by 12 s; without the gate (the code before) 14 of them touch."""
    tol = math.radians(S.adjust_yaw_tolerance_deg)
    touched_before = 0
    for k, (starts, finals) in enumerate(_scenes(70, 40)):
        events, followers, both, yaws = _run(starts, finals, gated=True)
        assert events == [], (k, starts, finals, events[:3])
        assert both == 0, (k, both)
        for m, f in followers.items():
            assert f.final_yaw is None, (k, m)   # the regulator is done: stopped there
            assert abs(wrap_angle(yaws[m] - finals[m])) <= tol, (k, m, yaws[m], finals[m])
        touched_before += bool(_run(starts, finals, gated=False)[0])
    assert touched_before >= 3, touched_before   # 14 of the 40 touch before


def test_a_follower_does_not_turn_into_the_corner_a_neighbour_has_just_swung_in():
    """40 random pairs (seed 71) where ``a`` may turn only before ``b`` (``b``'s staging
    yaw swings a corner into ``a``'s sweep; m63/m76): no collision event, ``b`` reaches its
    yaw, ``a`` reaches its yaw or stands holding; judged by the gate alone (no squares)
    31 of the 40 pairs touch."""
    tol = math.radians(S.adjust_yaw_tolerance_deg)
    touched_without_squares = 0
    for k, (starts, finals) in enumerate(_scenes(71, 40, after_b_blocks_a=True)):
        starts = {"b": starts["b"], "a": starts["a"]}   # b asks first: the bad order
        events, followers, both, yaws = _run(starts, finals, gated=True)
        assert events == [], (k, starts, finals, events[:3])
        assert abs(wrap_angle(yaws["b"] - finals["b"])) <= tol, (k, yaws["b"], finals["b"])
        a = followers["a"]
        assert a.final_yaw is None or abs(wrap_angle(yaws["a"] - starts["a"].yaw)) < 0.3, k
        touched_without_squares += bool(_run(starts, finals, gated=True, squares=False)[0])
    assert touched_without_squares >= 3, touched_without_squares
