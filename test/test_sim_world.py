"""Pure-Python tests of the fake-hardware world (no ROS)."""
from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from smores_assembly.geometry import Face, Pose2D, child_pose, wrap_angle
from smores_assembly.sim import Connection, SimError, SimParams, SimWorld, square_overlap

W = 0.08


def run(world: SimWorld, seconds: float, dt: float = 0.01) -> list:
    events = []
    for _ in range(int(round(seconds / dt))):
        events += world.step(dt)
    return events


def unicycle(p0: Pose2D, v: float, w: float, t: float) -> Pose2D:
    """Closed-form unicycle pose after driving (v, w) for t seconds."""
    if abs(w) < 1e-12:
        return Pose2D(p0.x + v * t * math.cos(p0.yaw), p0.y + v * t * math.sin(p0.yaw), p0.yaw)
    r = v / w
    th = p0.yaw + w * t
    return Pose2D(p0.x + r * (math.sin(th) - math.sin(p0.yaw)),
                  p0.y - r * (math.cos(th) - math.cos(p0.yaw)), wrap_angle(th))


def assert_pose(p: Pose2D, q: Pose2D, tol: float = 1e-9, tol_yaw: float = 1e-9) -> None:
    assert abs(p.x - q.x) <= tol and abs(p.y - q.y) <= tol, (p, q)
    assert abs(wrap_angle(p.yaw - q.yaw)) <= tol_yaw, (p, q)


# --- driving -------------------------------------------------------------------------------

def test_arc_matches_closed_form_without_ramp():
    params = SimParams(wheel_accel_max=1e6)
    p0 = Pose2D(0.1, -0.2, 0.7)
    world = SimWorld({"m": p0}, params)
    world.set_cmd_vel("m", 0.04, 0.5)
    run(world, 3.0)
    # the 1.3 us ramp of the first step costs v * tau / 2 ~ 1e-8 m
    assert_pose(world.pose("m"), unicycle(p0, 0.04, 0.5, 3.0), 1e-7, 1e-6)
    assert world.t == pytest.approx(3.0)


def test_arc_from_rest_keeps_curvature_and_loses_half_the_ramp():
    """Accelerating from rest keeps the commanded curvature; with a linear ramp of
    duration t_r the distance lost is v*t_r/2 (exact because the step integrates the mean
    of the old and new wheel speeds)."""
    params = SimParams(wheel_accel_max=10.0)
    p0 = Pose2D(0.0, 0.0, 0.0)
    v, w = 0.03, -0.4
    world = SimWorld({"m": p0}, params)
    world.set_cmd_vel("m", v, w)
    run(world, 2.0)
    wl = (v - w * params.track / 2) / params.wheel_radius
    wr = (v + w * params.track / 2) / params.wheel_radius
    t_ramp = max(abs(wl), abs(wr)) / params.wheel_accel_max
    t_eff = 2.0 - t_ramp / 2
    # the ramp ends on a step boundary only approximately: sub-mm agreement
    assert_pose(world.pose("m"), unicycle(p0, v, w, t_eff), 2e-5, 1e-3)


def test_wheel_deadband_stops_slow_wheels_exactly():
    """Issue 12 item 8: with a 5 mm/s deadband a wheel commanded slower does not turn at all
    (exactly 0 rad/s, pose unchanged when both are), a faster one turns as commanded."""
    params = SimParams(wheel_accel_max=1e6, wheel_deadband=0.005)
    r, half = params.wheel_radius, 0.5 * params.track
    rng = random.Random(7)
    for _ in range(20):
        p0 = Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-3, 3))
        # both wheels below the deadband: nothing turns, nothing moves (bit for bit)
        vl, vr = rng.uniform(-0.0049, 0.0049), rng.uniform(-0.0049, 0.0049)
        world = SimWorld({"m": p0}, params)
        world.set_cmd_vel("m", 0.5 * (vl + vr), (vr - vl) / (2 * half))
        run(world, 1.0)
        assert world.wheel_speeds("m") == (0.0, 0.0)
        assert world.pose("m") == p0
        # left wheel below, right wheel above: a pivot about the standing left wheel
        vl, vr = rng.uniform(-0.0049, 0.0049), rng.choice([-1, 1]) * rng.uniform(0.0051, 0.05)
        world = SimWorld({"m": p0}, params)
        world.set_cmd_vel("m", 0.5 * (vl + vr), (vr - vl) / (2 * half))
        events = run(world, 2.0)
        wl, wr = world.wheel_speeds("m")
        assert wl == 0.0 and wr == pytest.approx(vr / r, rel=1e-12)
        assert not events
        assert_pose(world.pose("m"), unicycle(p0, vr / 2, vr / params.track, 2.0), 1e-7, 1e-6)
    # without a deadband the same slow command turns the wheel
    world = SimWorld({"m": p0}, SimParams(wheel_accel_max=1e6))
    world.set_cmd_vel("m", 0.004, 0.0)
    world.step(0.01)
    assert world.wheel_speeds("m") == pytest.approx((0.1, 0.1))


@pytest.mark.parametrize("gl, gr, slip", [(0.9, 1.1, 0.0), (1.0, 1.0, 0.25),
                                          (1.05, 0.8, 0.1), (1.0, 1.0, 0.0)])
def test_wheel_gains_and_slip_change_the_arc_as_the_closed_form_says(gl, gr, slip):
    """Steady wheels: v = (1 - slip) r (gl wl + gr wr) / 2, w = (1 - slip) r (gr wr - gl wl)
    / track with wl, wr the commanded wheel speeds; the wheels turn at gl wl, gr wr."""
    params = SimParams(wheel_accel_max=1e6, wheel_gain_left=gl, wheel_gain_right=gr,
                       wheel_slip=slip)
    r, track = params.wheel_radius, params.track
    rng = random.Random(int(100 * (gl + 2 * gr + 3 * slip)))
    for _ in range(5):
        p0 = Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-3, 3))
        v, w = rng.uniform(-0.04, 0.04), rng.uniform(-0.6, 0.6)
        wl, wr = (v - w * track / 2) / r, (v + w * track / 2) / r
        world = SimWorld({"m": p0}, params)
        world.set_cmd_vel("m", v, w)
        run(world, 3.0)
        assert world.wheel_speeds("m") == pytest.approx((gl * wl, gr * wr), rel=1e-12)
        v_eff = (1 - slip) * r * (gl * wl + gr * wr) / 2
        w_eff = (1 - slip) * r * (gr * wr - gl * wl) / track
        assert_pose(world.pose("m"), unicycle(p0, v_eff, w_eff, 3.0), 1e-7, 1e-6)


def test_wheel_speed_cap_keeps_curvature():
    params = SimParams(wheel_accel_max=1e6)
    world = SimWorld({"m": (0, 0, 0)}, params)
    v, w = 0.5, 2.0                       # far above the cap
    world.set_cmd_vel("m", v, w)
    world.step(0.01)
    wl, wr = world.wheel_speeds("m")
    assert max(abs(wl), abs(wr)) == pytest.approx(params.wheel_speed_max)
    r = params.wheel_radius
    v_real = r * (wl + wr) / 2
    w_real = r * (wr - wl) / params.track
    assert v_real / w_real == pytest.approx(v / w)
    # straight: top speed = r * cap
    world.set_cmd_vel("m", 1.0, 0.0)
    world.step(0.01)
    wl, wr = world.wheel_speeds("m")
    assert r * (wl + wr) / 2 == pytest.approx(r * params.wheel_speed_max)


def test_acceleration_is_limited():
    params = SimParams(wheel_accel_max=5.0)
    world = SimWorld({"m": (0, 0, 0)}, params)
    world.set_cmd_vel("m", 0.06, 0.0)
    world.step(0.01)
    assert world.wheel_speeds("m") == pytest.approx((0.05, 0.05))


def test_bad_inputs_are_refused_with_the_field_named():
    with pytest.raises(SimError, match="wheel_radius"):
        SimWorld({"m": (0, 0, 0)}, SimParams(wheel_radius=-1.0))
    with pytest.raises(SimError, match="capture_range"):
        SimWorld({"m": (0, 0, 0)}, SimParams(capture_range=float("nan")))
    with pytest.raises(SimError, match="poses"):
        SimWorld({})
    with pytest.raises(SimError, match=r"poses\[m\]\.x"):
        SimWorld({"m": (float("nan"), 0, 0)})
    with pytest.raises(SimError, match="helpers"):
        SimWorld({"m": (0, 0, 0)}, helpers=["h"])
    world = SimWorld({"m": (0, 0, 0)})
    with pytest.raises(SimError, match="unknown module 'x'"):
        world.set_cmd_vel("x", 0, 0)
    with pytest.raises(SimError, match="v"):
        world.set_cmd_vel("m", float("inf"), 0)
    with pytest.raises(SimError, match="faces"):
        world.set_magnets("m", ["FRONT"])
    with pytest.raises(SimError, match="tilt"):
        world.set_joints("m", 0.0, 3.0)
    with pytest.raises(SimError, match="dt"):
        world.step(0.0)


def test_joints_move_at_joint_speed():
    world = SimWorld({"m": (0, 0, 0)}, SimParams(joint_speed_max=1.0))
    world.set_joints("m", 0.5, -0.2)
    world.step(0.1)
    assert world.joint_states("m") == pytest.approx((0.1, -0.1))
    run(world, 1.0)
    assert world.joint_states("m") == pytest.approx((0.5, -0.2))


# --- capture -------------------------------------------------------------------------------

def _pair(gap: float, lateral: float, angle: float, face_a=Face.TOP, face_b=Face.TOP):
    """Module b fixed at the origin; a placed so that face_a faces face_b of b with the
    given gap between the face centres, lateral offset and yaw error."""
    b = Pose2D(0.0, 0.0, 0.0)
    docked = child_pose(b, face_b, face_a, W)
    nb = face_b.angle
    # move the docked pose out along b's face normal, sideways along the face, then turn
    # a about its own face centre by `angle`
    ox = gap * math.cos(nb) - lateral * math.sin(nb)
    oy = gap * math.sin(nb) + lateral * math.cos(nb)
    fa = docked.yaw + face_a.angle
    fcx, fcy = docked.x + ox + W / 2 * math.cos(fa), docked.y + oy + W / 2 * math.sin(fa)
    yaw = docked.yaw + angle
    cx = fcx - W / 2 * math.cos(yaw + face_a.angle)
    cy = fcy - W / 2 * math.sin(yaw + face_a.angle)
    return Pose2D(cx, cy, yaw), b


def _segment_distance_brute(pa: Pose2D, fa: Face, pb: Pose2D, fb: Face) -> float:
    """Distance between two faces by brute force over 201 sample points per face."""
    u = np.linspace(-W / 2, W / 2, 201)

    def pts(p, f):
        a = p.yaw + f.angle
        c = np.array([p.x + W / 2 * math.cos(a), p.y + W / 2 * math.sin(a)])
        return c + u[:, None] * np.array([-math.sin(a), math.cos(a)])

    A, B = pts(pa, fa), pts(pb, fb)
    return float(np.min(np.linalg.norm(A[:, None, :] - B[None, :, :], axis=2)))


def _oracle_capture(dist: float, lateral: float, angle: float, p: SimParams) -> bool:
    """The capture rule stated independently: faces within capture_range (brute-force
    distance), centre offset and misalignment within their limits."""
    return (dist <= p.capture_range and abs(lateral) <= p.capture_lateral_max
            and abs(angle) <= p.capture_angle_max)


@pytest.mark.parametrize("faces", [(Face.TOP, Face.TOP), (Face.BOTTOM, Face.LEFT),
                                   (Face.RIGHT, Face.BOTTOM), (Face.LEFT, Face.RIGHT)])
def test_capture_region_matches_the_rule(faces):
    p = SimParams()
    rng = np.random.default_rng(3)
    n_conn = 0
    for _ in range(150):
        gap = rng.uniform(0.0005, 0.008)
        lateral = rng.uniform(-0.02, 0.02)
        angle = rng.uniform(-0.3, 0.3)
        # stay clear of the boundaries, where rounding decides
        pa, pb = _pair(gap, lateral, angle, *faces)
        dist = _segment_distance_brute(pa, faces[0], pb, faces[1])
        # stay clear of the boundaries, where the sampling decides
        if (abs(abs(lateral) - p.capture_lateral_max) < 1e-4
                or abs(abs(angle) - p.capture_angle_max) < 1e-4
                or abs(dist - p.capture_range) < 2e-4 or dist < 3e-4):
            continue
        world = SimWorld({"a": pa, "b": pb})
        world.set_magnets("a", [faces[0]])
        world.set_magnets("b", [faces[1]])
        events = world.step(0.01)
        expect = _oracle_capture(dist, lateral, angle, p)
        got = bool(world.connections())
        assert got == expect, (gap, lateral, angle)
        if got:
            n_conn += 1
            assert world.connections() == {Connection.make("a", faces[0], "b", faces[1])}
            assert [e.kind for e in events] == ["connected"]
            # a snapped exactly into the docked pose (b bigger? equal size, both still:
            # the second module of the pair moves) -- either way the pair is flush
            pa2, pb2 = world.pose("a"), world.pose("b")
            moved_b = pb2 != pb
            if moved_b:
                assert_pose(pb2, child_pose(pa2, faces[0], faces[1], W), 1e-12, 1e-12)
            else:
                assert_pose(pa2, child_pose(pb2, faces[1], faces[0], W), 1e-12, 1e-12)
    assert n_conn > 10


def test_no_capture_unless_both_magnets_on():
    pa, pb = _pair(0.002, 0.0, 0.0)
    for mags_a, mags_b in (([], []), (["TOP"], []), ([], ["TOP"])):
        world = SimWorld({"a": pa, "b": pb})
        world.set_magnets("a", mags_a)
        world.set_magnets("b", mags_b)
        world.step(0.01)
        assert world.connections() == set()
    # the wrong face of b
    world = SimWorld({"a": pa, "b": pb})
    world.set_magnets("a", ["TOP"])
    world.set_magnets("b", ["BOTTOM", "LEFT", "RIGHT"])
    world.step(0.01)
    assert world.connections() == set()


def test_tilted_top_face_does_not_capture():
    pa, pb = _pair(0.002, 0.0, 0.0)
    world = SimWorld({"a": pa, "b": pb}, SimParams(joint_speed_max=100))
    world.set_magnets("a", ["TOP"])
    world.set_magnets("b", ["TOP"])
    world.set_joints("a", 0.0, 0.5)
    world.step(0.01)
    assert world.connections() == set()
    world.set_joints("a", 0.0, 0.0)
    world.step(0.01)
    assert len(world.connections()) == 1


def test_drive_face_to_face_connects_and_stays_connected():
    p = SimParams()
    world = SimWorld({"a": (0.0, 0.0, 0.0), "b": (0.25, 0.003, math.pi)}, p)
    world.set_magnets("a", ["TOP"])
    world.set_magnets("b", ["TOP"])
    world.set_cmd_vel("a", 0.05, 0.0)
    events = []
    gaps = []
    for _ in range(600):
        ev = world.step(0.01)
        events += ev
        if ev:
            break
        gaps.append(world.pose("b").x - world.pose("a").x - W)
    assert [e.kind for e in events] == ["connected"]
    # captured exactly when the gap first fell inside the capture range
    assert gaps[-1] > p.capture_range
    assert world.pose("a") == Pose2D(*child_pose(world.pose("b"), Face.TOP, Face.TOP, W)
                                     .as_tuple())
    # commands of a docked module are ignored: the structure stays where it is
    before = world.poses()
    world.set_cmd_vel("a", -0.05, 0.3)
    world.set_cmd_vel("b", 0.05, 0.0)
    assert run(world, 2.0) == []
    assert world.poses() == before
    assert world.structure_of("a") == {"a", "b"}
    # release
    world.set_magnets("b", [])
    ev = world.step(0.01)
    assert [e.kind for e in ev] == ["disconnected"]
    assert world.connections() == set()
    run(world, 1.0)
    assert world.pose("a").x < before["a"].x - 0.01   # a backs off again


def test_structure_snaps_as_a_whole_onto_a_bigger_one():
    # a+b docked; c+d+e docked; a TOP face of the pair captures e's BOTTOM: pair moves
    b = Pose2D(0, 0, 0)
    a = child_pose(b, Face.BOTTOM, Face.TOP, W)  # a's TOP on b's BOTTOM... a behind b
    c = Pose2D(0.5, 0.5, 0.3)
    d = child_pose(c, Face.TOP, Face.BOTTOM, W)
    e = child_pose(d, Face.TOP, Face.BOTTOM, W)
    world = SimWorld({"a": a, "b": b, "c": c, "d": d, "e": e})
    for m, f in (("a", ["TOP"]), ("b", ["BOTTOM", "TOP"]), ("c", ["TOP"]),
                 ("d", ["TOP", "BOTTOM"]), ("e", ["BOTTOM", "TOP"])):
        world.set_magnets(m, f)
    world.step(0.01)
    assert len(world.connections()) == 3
    # bring the pair b.TOP near e.TOP with a small error: place it by hand
    target_b = child_pose(world.pose("e"), Face.TOP, Face.TOP, W)
    world2 = SimWorld({"a": child_pose(target_b.compose(-0.002, 0.003, 0.05), Face.BOTTOM,
                                       Face.TOP, W),
                       "b": target_b.compose(-0.002, 0.003, 0.05),
                       "c": c, "d": d, "e": e})
    for m, f in (("a", ["TOP"]), ("b", ["BOTTOM"]), ("c", ["TOP"]),
                 ("d", ["TOP", "BOTTOM"]), ("e", ["BOTTOM"])):
        world2.set_magnets(m, f)
    world2.step(0.01)
    assert len(world2.connections()) == 3
    world2.set_magnets("b", ["BOTTOM", "TOP"])
    world2.set_magnets("e", ["BOTTOM", "TOP"])
    world2.step(0.01)
    assert Connection.make("b", Face.TOP, "e", Face.TOP) in world2.connections()
    assert_pose(world2.pose("b"), target_b, 1e-12, 1e-12)
    assert_pose(world2.pose("a"), child_pose(target_b, Face.BOTTOM, Face.TOP, W), 1e-12,
                1e-12)
    assert_pose(world2.pose("c"), c)        # the bigger structure did not move
    assert world2.structure_of("a") == {"a", "b", "c", "d", "e"}


# --- collisions ----------------------------------------------------------------------------

def test_square_overlap_against_brute_force():
    rng = np.random.default_rng(0)
    grid = np.stack(np.meshgrid(np.linspace(-0.5, 0.5, 41), np.linspace(-0.5, 0.5, 41)),
                    -1).reshape(-1, 2) * W
    for _ in range(200):
        pa = (0.0, 0.0, rng.uniform(-math.pi, math.pi))
        pb = (rng.uniform(-0.12, 0.12), rng.uniform(-0.12, 0.12), rng.uniform(-math.pi, math.pi))
        d = square_overlap(pa, pb, W)
        # brute force: is any sample point of b inside a?
        c, s = math.cos(pb[2]), math.sin(pb[2])
        pts = grid @ np.array([[c, s], [-s, c]]) + pb[:2]
        ca, sa = math.cos(pa[2]), math.sin(pa[2])
        loc = pts @ np.array([[ca, -sa], [sa, ca]])
        inside = np.all(np.abs(loc) < W / 2, axis=1).any()
        if d < -0.003:
            assert not inside
        if inside:
            assert d > 0


def test_collision_is_reported_once_and_blocks_motion():
    world = SimWorld({"a": (0.0, 0.0, 0.0), "b": (0.15, 0.04, math.pi / 4)})
    world.set_cmd_vel("a", 0.05, 0.0)
    events = run(world, 3.0)
    coll = [e for e in events if e.kind == "collision"]
    assert len(coll) == 1
    assert coll[0].modules == ("a", "b") and coll[0].penetration_m > 0
    # never overlapping: a stopped short of b
    assert square_overlap(world.pose("a").as_tuple(), world.pose("b").as_tuple(), W) <= 1e-6
    assert world.collisions_active() == {("a", "b")}
    # back off, then drive in again: a new contact start, a new event
    world.set_cmd_vel("a", -0.05, 0.0)
    run(world, 1.0)
    assert world.collisions_active() == set()
    world.set_cmd_vel("a", 0.05, 0.0)
    assert len([e for e in run(world, 3.0) if e.kind == "collision"]) == 1


def test_face_contact_without_magnets_is_not_a_collision():
    world = SimWorld({"a": (0.0, 0.0, 0.0), "b": (0.2, 0.01, math.pi + 0.02)})
    world.set_cmd_vel("a", 0.05, 0.0)
    assert run(world, 4.0) == []
    assert world.connections() == set()
    assert world.pose("b").x - world.pose("a").x < W + 0.002   # pushed against the face


def test_random_traffic_never_overlaps_silently():
    rng = random.Random(7)
    poses = {f"m{i}": (0.15 * (i % 4), 0.15 * (i // 4), rng.uniform(-3, 3)) for i in range(12)}
    world = SimWorld(poses)
    for m in poses:
        world.set_magnets(m, rng.sample(["TOP", "BOTTOM", "LEFT", "RIGHT"], 2))
    for k in range(800):
        if k % 50 == 0:
            for m in poses:
                world.set_cmd_vel(m, rng.uniform(-0.06, 0.06), rng.uniform(-1.5, 1.5))
        world.step(0.01)
        active = world.collisions_active()
        ids = world.modules()
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if world.structure_of(a) == world.structure_of(b):
                    continue
                d = square_overlap(world.pose(a).as_tuple(), world.pose(b).as_tuple(), W)
                assert d <= world.params.contact_penetration_max or (a, b) in active, (k, a, b)
    # connections are flush and consistent with the poses
    for c in world.connections():
        pa, pb = world.pose(c.module_a), world.pose(c.module_b)
        assert_pose(pb, child_pose(pa, c.face_a, c.face_b, W), 1e-9, 1e-9)


# --- helpers -------------------------------------------------------------------------------

def test_helper_command_errors():
    world = SimWorld({"h": (0, 0, 0), "m": (0.08, 0.0, 1.0), "far": (0.5, 0.5, 0),
                      "s1": (-0.5, 0, 0), "s2": (-0.42, 0, math.pi)}, helpers=["h"])
    world.set_magnets("s1", ["TOP"])
    world.set_magnets("s2", ["TOP"])
    world.step(0.01)
    with pytest.raises(SimError, match="not a helping module"):
        world.helper_command("m", "LIFT", "h")
    with pytest.raises(SimError, match="command"):
        world.helper_command("h", "JUMP", "m")
    with pytest.raises(SimError, match="out of reach"):
        world.helper_command("h", "LIFT", "far")
    with pytest.raises(SimError, match="docked"):
        world.helper_command("h", "LIFT", "s1")
    with pytest.raises(SimError, match="itself"):
        world.helper_command("h", "LIFT", "h")
    with pytest.raises(SimError, match="carries nothing"):
        world.helper_command("h", "RELEASE")
    with pytest.raises(SimError, match="carries nothing"):
        world.helper_command("h", "ROTATE", carry_yaw=1.0)
    world.helper_command("h", "LIFT", "m", carry_yaw=0.0)
    with pytest.raises(SimError, match="already carries"):
        world.helper_command("h", "LIFT", "far")
    assert world.carried_by("h") == "m" and world.carrier_of("m") == "h"


def test_helper_carries_rotates_and_docks_a_wheel_face():
    p = SimParams(carry_yaw_rate=2.0)
    s = Pose2D(0.6, 0.0, math.pi)           # a structure module, its TOP faces -x
    world = SimWorld({"h": (0.0, 0.0, 0.0), "m": (0.09, -0.005, 0.4), "s": s}, p,
                     helpers=["h"])
    world.helper_command("h", "LIFT", "m", carry_yaw=-Face.LEFT.angle)
    # the load jumps onto the helper's front, then turns at carry_yaw_rate
    assert world.pose("m").x == pytest.approx(W) and world.pose("m").y == pytest.approx(0)
    world.step(0.1)
    assert world.carry_yaw("h") == pytest.approx(0.4 - 0.2)
    run(world, 2.0)
    assert world.carry_yaw("h") == pytest.approx(-math.pi / 2)
    world.set_cmd_vel("h", 0.05, 0.0)
    world.step(0.01)
    # pose = helper composed with (w, 0, carry_yaw)
    assert_pose(world.pose("m"), world.pose("h").compose(W, 0.0, -math.pi / 2), 1e-12, 1e-12)
    world.set_magnets("m", ["LEFT"])
    world.set_magnets("s", ["TOP"])
    events = []
    for _ in range(2000):
        events += world.step(0.01)
        if any(e.kind == "connected" for e in events):
            break
    assert [e.kind for e in events] == ["connected"]
    assert world.connections() == {Connection.make("m", Face.LEFT, "s", Face.TOP)}
    assert world.carried_by("h") is None
    assert_pose(world.pose("m"), child_pose(s, Face.TOP, Face.LEFT, W), 1e-12, 1e-12)
    # the helper backs off; the docked module stays
    world.set_cmd_vel("h", -0.05, 0.0)
    m_pose = world.pose("m")
    assert run(world, 1.0) == []
    assert world.pose("m") == m_pose


def test_carried_module_collides_with_others_but_not_its_helper():
    world = SimWorld({"h": (0.0, 0.0, 0.0), "m": (0.08, 0.0, 0.0), "x": (0.3, 0.0, 1.5)},
                     helpers=["h"])
    world.helper_command("h", "LIFT", "m", carry_yaw=0.6)   # corners sweep into h: fine
    world.set_cmd_vel("h", 0.05, 0.0)
    events = run(world, 4.0)
    assert [(e.kind, e.modules) for e in events] == [("collision", ("m", "x"))]
    world.helper_command("h", "RELEASE")
    # released half-way into h's footprint? carry_yaw reached 0.6: m overlaps h -> reported
    ev = world.step(0.01)
    assert ("h", "m") in world.collisions_active()
    assert [(e.kind, e.modules) for e in ev] == [("collision", ("h", "m"))]


# --- the fast (cached) step against the plain reference step ------------------------------

def _random_world(rng: random.Random) -> tuple[dict, list[str]]:
    """Modules crowded in a 0.5 m square, some placed flush or nearly flush against another
    one (captures, face contacts), some overlapping (collisions); up to two helpers."""
    n = rng.randint(2, 9)
    poses: dict[str, tuple[float, float, float]] = {}
    for i in range(n):
        if poses and rng.random() < 0.5:
            base = Pose2D(*poses[rng.choice(sorted(poses))])
            fa, fb = rng.choice(list(Face)), rng.choice(list(Face))
            p = child_pose(base, fa, fb, W)
            gap = rng.choice([0.0, rng.uniform(-0.003, 0.006)])
            p = Pose2D(p.x + gap * math.cos(base.yaw + fa.angle) + rng.uniform(-0.004, 0.004),
                       p.y + gap * math.sin(base.yaw + fa.angle) + rng.uniform(-0.004, 0.004),
                       p.yaw + rng.uniform(-0.1, 0.1))
            poses[f"m{i}"] = p.as_tuple()
        else:
            poses[f"m{i}"] = (rng.uniform(0, 0.5), rng.uniform(0, 0.5),
                              rng.uniform(-math.pi, math.pi))
    helpers = rng.sample(sorted(poses), k=min(2, rng.randint(0, n)))
    return poses, helpers


def _random_command(rng: random.Random, world: SimWorld):
    """One random command as (method name, args)."""
    mods = world.modules()
    m = rng.choice(mods)
    kind = rng.random()
    if kind < 0.45:
        return "set_cmd_vel", (m, rng.choice([0.0, rng.uniform(-0.06, 0.06)]),
                               rng.choice([0.0, rng.uniform(-1.5, 1.5)]))
    if kind < 0.75:
        return "set_magnets", (m, rng.sample(list(Face), k=rng.randint(0, 4)))
    if kind < 0.85:
        return "set_joints", (m, rng.uniform(-1, 1), rng.choice([0.0, rng.uniform(-0.5, 0.5)]))
    helpers = sorted(world.helpers)
    if not helpers:
        return "set_cmd_vel", (m, 0.0, 0.0)
    return "helper_command", (rng.choice(helpers), rng.choice(["LIFT", "ROTATE", "RELEASE"]),
                              m, rng.uniform(-math.pi, math.pi))


def _state(world: SimWorld):
    return (world.pose_array().tobytes(), world.t,
            [world.wheel_speeds(m) for m in world.modules()],
            [world.joint_states(m) for m in world.modules()],
            sorted(world.connections()), sorted(world.collisions_active()),
            [world.carried_by(h) for h in sorted(world.helpers)],
            [world.carry_yaw(h) for h in sorted(world.helpers)])


@pytest.mark.parametrize("seed", range(24))
def test_fast_step_equals_reference_step_on_random_worlds(seed):
    """Identical poses (bit for bit), wheels, joints, connections, contacts, carrying and
    events over 400 random steps with random commands (the crazyswarm2 way of testing a
    fast simulator backend against a plain one). Over seeds 0..39 the worlds see ~90
    collisions, ~30 captures and ~20 releases; the step before the split failed this test
    (a face freed by a release never captured a neighbour it already touched; an overlap
    left by an allowed motion that stopped being a face contact was never reported)."""
    from smores_assembly.sim.reference import reference_step

    rng = random.Random(seed)
    poses, helpers = _random_world(rng)
    params = SimParams()
    if seed % 2:  # the wheel effects of real modules on
        params = SimParams(wheel_deadband=rng.uniform(0, 0.01),
                           wheel_gain_left=rng.uniform(0.8, 1.2),
                           wheel_gain_right=rng.uniform(0.8, 1.2), wheel_slip=rng.uniform(0, 0.3))
    fast = SimWorld(poses, params, helpers=helpers)
    ref = SimWorld(poses, dataclasses.replace(params), helpers=helpers)
    for k in range(400):
        if rng.random() < 0.15:
            name, args = _random_command(rng, fast)
            outcome = []
            for w in (fast, ref):
                try:
                    getattr(w, name)(*args)
                    outcome.append(None)
                except SimError as exc:
                    outcome.append(str(exc))
            assert outcome[0] == outcome[1], (k, name, args)
        dt = rng.choice([0.01, 0.01, 0.02, 0.005])
        ev_fast, ev_ref = fast.step(dt), reference_step(ref, dt)
        assert ev_fast == ev_ref, (seed, k)
        assert _state(fast) == _state(ref), (seed, k)
    assert fast.t > 3.0


@pytest.mark.parametrize("yaw_err_deg", [0.3, -0.3, 1.0, -1.0])
def test_flush_slide_along_a_neighbour_face_is_legal_motion(yaw_err_deg):
    """A module driving past a neighbour flush (a corner or slot approach) with a small
    heading error slides along the neighbour's face: it reaches the end of the slide,
    never penetrates deeper than the tolerance, and no collision is reported
    (issue 11: flush slides are legal motion)."""
    w = 0.08
    yaw = math.radians(yaw_err_deg)
    # "n" sits at the origin; "m" starts flush on its +y side, 0.1 m behind, heading +x.
    world = SimWorld({"n": (0.0, 0.0, 0.0), "m": (-0.10, w + 1e-7, yaw)},
                     SimParams(wheel_accel_max=1e6))
    events = []
    world.set_cmd_vel("m", 0.03, 0.0)
    for _ in range(400):  # 4 s at 30 mm/s: 0.12 m of travel
        events += world.step(0.01)
        assert square_overlap(tuple(world.pose("m").as_tuple()),
                              (0.0, 0.0, 0.0), w) <= 1e-6
    end = world.pose("m")
    assert end.x == pytest.approx(-0.10 + 0.12 * math.cos(yaw), abs=2e-3)
    assert not [e for e in events if e.kind == "collision"]
    # Without the slide rule a heading into the face stops the module at first contact.
    if yaw_err_deg < 0:
        stiff = SimWorld({"n": (0.0, 0.0, 0.0), "m": (-0.10, w + 1e-7, yaw)},
                         SimParams(wheel_accel_max=1e6, face_contact_slide=False))
        stiff.set_cmd_vel("m", 0.03, 0.0)
        for _ in range(400):
            stiff.step(0.01)
        assert stiff.pose("m").x < end.x - 0.09  # stuck at the corner


@pytest.mark.parametrize("yaw_err_deg", [-3.0, 2.0])
def test_walls_square_up_a_module_in_a_one_module_slot(yaw_err_deg):
    """A slot exactly one module wide (neighbours flush on both sides, as placed modules
    stand): a module entering it with a small heading error presses both walls. The walls
    square it up (turned to their orientation, pushed out of the faces) and it slides in:
    it reaches the end of the slot, ends aligned, never penetrates either wall deeper than
    the tolerance, and no collision is reported (issue 11). With a turn above
    ``capture_angle_max`` it is not squared: it stops at the mouth."""
    w = 0.08
    walls = {"a": (0.0, w, 0.0), "b": (0.0, -w, 0.0)}
    world = SimWorld({**walls, "m": (-0.10, 0.0005, math.radians(yaw_err_deg))},
                     SimParams(wheel_accel_max=1e6))
    events = []
    world.set_cmd_vel("m", 0.03, 0.0)
    for _ in range(400):  # 0.12 m of travel: from 0.10 m before the slot to 0.02 m in it
        events += world.step(0.01)
        for p in walls.values():
            assert square_overlap(tuple(world.pose("m").as_tuple()), p, w) <= 1e-6
    end = world.pose("m")
    assert end.x > 0.015 and abs(end.yaw) < 1e-9
    assert not [e for e in events if e.kind == "collision"]
    # far off square: no squaring, the module stops at the slot's mouth
    stuck = SimWorld({**walls, "m": (-0.10, 0.0, math.radians(15.0))},
                     SimParams(wheel_accel_max=1e6))
    stuck.set_cmd_vel("m", 0.03, 0.0)
    for _ in range(400):
        stuck.step(0.01)
    assert stuck.pose("m").x < -0.05
