"""MuJoCo backend (smores_assembly.sim.mujoco_world) and the module description.

Oracles: the unicycle closed form for driving, the unfolding rule (geometry.child_pose) for
docked poses, the kinematic world's public interface for parity, the docking benchmark's
ground-truth errors for closed-loop docks.
"""
from __future__ import annotations

import inspect
import math
import random
import xml.etree.ElementTree as ET

import pytest

mujoco = pytest.importorskip("mujoco")

from bench.bench_docking import run_trial  # noqa: E402
from smores_assembly.docking.task import Phase  # noqa: E402
from smores_assembly.geometry import (MODULE_WIDTH, Face, Pose2D, child_pose,  # noqa: E402
                                      face_center, square_overlap, wrap_angle)
from smores_assembly.sim import SimError, SimParams, SimWorld  # noqa: E402
from smores_assembly.sim.backend import make_world  # noqa: E402
from smores_assembly.sim.description import (REQUIRED_JOINTS, REQUIRED_LINKS,  # noqa: E402
                                             DescriptionError, default_urdf_path,
                                             load_description)
from smores_assembly.sim.mujoco_world import (MujocoParams, MujocoWorld,  # noqa: E402
                                              magnet_force)

DT = 0.01


def _face_gap(pa: Pose2D, fa: Face, pb: Pose2D, fb: Face) -> float:
    """Distance between the two face centres [m]."""
    ca, cb = face_center(pa, fa), face_center(pb, fb)
    return math.hypot(ca[0] - cb[0], ca[1] - cb[1])


# --- the description ---------------------------------------------------------------------

def test_urdf_has_the_links_joints_and_numbers_of_the_kinematic_model():
    root = ET.parse(default_urdf_path()).getroot()
    assert root.tag == "robot"
    assert set(REQUIRED_LINKS) <= {e.get("name") for e in root.findall("link")}
    joints = {e.get("name"): e for e in root.findall("joint")}
    assert set(REQUIRED_JOINTS) <= set(joints)
    assert joints["left_wheel_joint"].get("type") == "continuous"
    assert joints["pan"].get("type") == joints["tilt"].get("type") == "revolute"
    d = load_description()
    p = SimParams()
    assert d.wheel_radius == pytest.approx(p.wheel_radius)
    assert d.track == pytest.approx(p.track)
    assert d.wheel_speed_max == pytest.approx(math.pi / 2)
    assert d.body_size[:2] == pytest.approx((MODULE_WIDTH, MODULE_WIDTH))
    assert d.pan_limit == pytest.approx(p.pan_limit)
    assert d.tilt_limit == pytest.approx(p.tilt_limit)
    assert 0.3 < d.total_mass < 1.0
    # inertia of the body = uniform box of its mass and collision size
    bx, by, bz = d.body_size
    assert d.body.diag[2] == pytest.approx(d.body.mass * (bx ** 2 + by ** 2) / 12, rel=1e-3)
    assert d.friction["left_wheel"] > 0.5 and d.friction["skid_front"] == 0.0


def test_urdf_loads_in_mujoco_with_its_joints():
    m = mujoco.MjModel.from_xml_path(str(default_urdf_path()))
    names = {m.joint(i).name for i in range(m.njnt)}
    assert {"left_wheel_joint", "right_wheel_joint", "pan", "tilt"} <= names
    assert m.jnt_range[m.joint("tilt").id][1] == pytest.approx(math.pi / 2)


def test_broken_description_is_refused_with_the_element_named(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text(default_urdf_path().read_text().replace('name="tilt"', 'name="tlt"'))
    with pytest.raises(DescriptionError, match="'tilt'"):
        load_description(bad)
    (tmp_path / "x.urdf").write_text("<robot")
    with pytest.raises(DescriptionError, match="x.urdf"):
        load_description(tmp_path / "x.urdf")


# --- interface parity ----------------------------------------------------------------------

def test_public_interface_matches_the_kinematic_world():
    for name, member in inspect.getmembers(SimWorld):
        if name.startswith("_"):
            continue
        assert hasattr(MujocoWorld, name), name
        if inspect.isfunction(member):
            kin = list(inspect.signature(member).parameters)
            mj = list(inspect.signature(getattr(MujocoWorld, name)).parameters)
            assert mj[:len(kin)] == kin, name
    w = MujocoWorld({"a": (0, 0, 0), "b": (0.3, 0, 1.0)}, helpers=["a"])
    k = SimWorld({"a": (0, 0, 0), "b": (0.3, 0, 1.0)}, helpers=["a"])
    assert w.modules() == k.modules() and w.helpers == k.helpers
    assert w.pose_array().shape == (2, 3)
    for mid in ("a", "b"):
        assert w.pose(mid).distance_to(k.pose(mid)) < 1e-3
        assert abs(wrap_angle(w.pose(mid).yaw - k.pose(mid).yaw)) < 1e-3


def test_bad_inputs_are_refused_with_the_field_named():
    w = MujocoWorld({"a": (0, 0, 0)})
    with pytest.raises(SimError, match="dt"):
        w.step(0.0)
    with pytest.raises(SimError, match="unknown module 'zz'"):
        w.set_cmd_vel("zz", 0, 0)
    with pytest.raises(SimError, match="v"):
        w.set_cmd_vel("a", float("nan"), 0)
    with pytest.raises(SimError, match="faces"):
        w.set_magnets("a", ["FRONT"])
    with pytest.raises(SimError, match="tilt"):
        w.set_joints("a", 0.0, 3.0)
    with pytest.raises(SimError, match="not a helping module"):
        w.helper_command("a", "LIFT", "a")
    with pytest.raises(SimError, match="timestep_max"):
        MujocoWorld({"a": (0, 0, 0)}, mj_params=MujocoParams(timestep_max=-1.0))
    with pytest.raises(SimError, match="backend: 'bullet'"):
        make_world("bullet", {"a": (0, 0, 0)})
    with pytest.raises(SimError, match="poses"):
        MujocoWorld({})
    with pytest.raises(SimError, match="wheel_slip"):
        MujocoWorld({"a": (0, 0, 0)}, SimParams(wheel_slip=0.1))


def test_wheel_deadband_and_gains_act_on_the_references():
    """A 4 mm/s command under a 5 mm/s deadband does not move the module; a left gain of
    0.9 turns a straight command into the arc of the slower left wheel."""
    world = MujocoWorld({"a": (0, 0, 0)}, SimParams(wheel_deadband=0.005))
    world.set_cmd_vel("a", 0.004, 0.0)
    for _ in range(100):
        world.step(DT)
    assert world.pose("a").distance_to(Pose2D(0, 0, 0)) < 2e-4
    p = SimParams(wheel_gain_left=0.9)
    world = MujocoWorld({"a": (0, 0, 0)}, p)
    world.set_cmd_vel("a", 0.04, 0.0)
    for _ in range(300):
        world.step(DT)
    # wheel rim speeds 0.036 / 0.04 m/s: yaw rate (0.04 - 0.036) / track
    rate = (0.04 - 0.036) / p.track
    assert world.pose("a").yaw == pytest.approx(rate * (world.t - 0.03), abs=math.radians(1))


# --- driving -------------------------------------------------------------------------------

def _closed_form(start: Pose2D, v: float, w: float, t: float, p: SimParams) -> Pose2D:
    """Unicycle pose after ``t`` s of the command (v, w) from rest: the wheels ramp linearly
    at ``wheel_accel_max`` (both by one ratio, so the curvature is constant) and the module
    loses half the ramp time; wheel-speed clipping is excluded by the caller."""
    wl = (v - w * p.track / 2) / p.wheel_radius
    wr = (v + w * p.track / 2) / p.wheel_radius
    tau = max(abs(wl), abs(wr)) / p.wheel_accel_max
    te = t - tau / 2
    if abs(w) < 1e-12:
        return start.compose(v * te, 0.0)
    r = v / w
    dyaw = w * te
    return start.compose(r * math.sin(dyaw), r * (1 - math.cos(dyaw)), dyaw)


def test_commanded_arcs_end_within_5_mm_and_half_a_degree_of_the_closed_form():
    """Random arcs of 4 s (up to ~25 cm, up to ~115 deg): the rolling, servoed, physical
    module ends within 5 mm and 0.5 deg of the unicycle closed form."""
    rng = random.Random(13)
    p = SimParams()
    for _ in range(4):
        start = Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi))
        v = rng.uniform(-0.05, 0.05)
        w = rng.uniform(-0.5, 0.5)
        # keep inside the wheel-speed cap (no clipping in the oracle)
        wl, wr = (v - w * p.track / 2) / p.wheel_radius, (v + w * p.track / 2) / p.wheel_radius
        assert max(abs(wl), abs(wr)) <= p.wheel_speed_max
        world = MujocoWorld({"m": start})
        world.set_cmd_vel("m", v, w)
        for _ in range(400):
            world.step(DT)
        want = _closed_form(start, v, w, world.t, p)
        got = world.pose("m")
        assert got.distance_to(want) < 0.005, (v, w, got, want)
        assert abs(wrap_angle(got.yaw - want.yaw)) < math.radians(0.5), (v, w, got, want)
        assert world.height("m") == pytest.approx(0.04, abs=5e-4)   # on its wheels


def test_wheel_speeds_are_capped():
    world = MujocoWorld({"m": (0, 0, 0)})
    world.set_cmd_vel("m", 1.0, 0.0)
    for _ in range(100):
        world.step(DT)
    wl, wr = world.wheel_speeds("m")
    assert wl == pytest.approx(math.pi / 2, abs=0.01) and wr == pytest.approx(wl, abs=1e-3)


def test_joints_follow_their_targets():
    world = MujocoWorld({"m": (0, 0, 0)})
    world.set_joints("m", 0.5, -0.3)
    for _ in range(100):
        world.step(DT)
    pan, tilt = world.joint_states("m")
    assert pan == pytest.approx(0.5, abs=0.02) and tilt == pytest.approx(-0.3, abs=0.02)
    assert world.joint_targets("m") == (0.5, -0.3)


# --- magnets -------------------------------------------------------------------------------

def test_magnet_force_law():
    mg = load_description().total_mass * 9.81
    assert magnet_force(0.0, 90.0, mg, 0.004) == pytest.approx(90.0)
    assert magnet_force(0.004, 90.0, mg, 0.004) == pytest.approx(mg)
    gaps = [0.0005 * k for k in range(40)]
    forces = [magnet_force(g, 90.0, mg, 0.004) for g in gaps]
    assert all(a > b for a, b in zip(forces, forces[1:]))      # grows as the gap closes
    assert magnet_force(0.02, 90.0, mg, 0.004) < 0.1
    assert magnet_force(0.001, 0.0, mg, 0.004) == 0.0


def _facing_pair(gap: float, lateral: float = 0.0, yaw: float = 0.0):
    """Module p at the origin, m in front of p's TOP face with its BOTTOM face ``gap`` away."""
    goal = child_pose(Pose2D(0, 0, 0), Face.TOP, Face.BOTTOM)
    return {"p": Pose2D(0, 0, 0), "m": Pose2D(goal.x + gap, lateral, yaw)}


def test_attraction_pulls_facing_magnets_into_a_weld_and_off_releases_it():
    """8 mm apart, no wheel command: with both magnets on the pull draws the faces into
    capture range and the weld holds them flush at the docked pose; with one magnet off
    nothing moves. Switching a magnet off releases the weld: the module drives away."""
    world = MujocoWorld(_facing_pair(0.008))
    world.set_magnets("p", [Face.TOP])
    for _ in range(50):
        world.step(DT)
    assert world.connections() == set()
    assert _face_gap(world.pose("p"), Face.TOP, world.pose("m"), Face.BOTTOM) == \
        pytest.approx(0.008, abs=5e-4)

    world.set_magnets("m", [Face.BOTTOM])
    events = []
    for _ in range(100):
        events += world.step(DT)
    assert [e.kind for e in events] == ["connected"]
    assert events[0].faces == (Face.BOTTOM, Face.TOP)        # m.BOTTOM - p.TOP
    for _ in range(30):
        world.step(DT)
    want = child_pose(world.pose("p"), Face.TOP, Face.BOTTOM)
    got = world.pose("m")
    assert got.distance_to(want) < 5e-4
    assert abs(wrap_angle(got.yaw - want.yaw)) < math.radians(0.2)
    assert world.structure_of("m") == {"m", "p"}

    world.set_magnets("m", [])
    events = world.step(DT)
    assert [e.kind for e in events] == ["disconnected"]
    assert world.structure_of("m") == {"m"}
    world.set_cmd_vel("m", 0.05, 0.0)
    for _ in range(100):
        world.step(DT)
    assert _face_gap(world.pose("p"), Face.TOP, world.pose("m"), Face.BOTTOM) > 0.03
    assert world.connections() == set()


def test_no_capture_when_misaligned_beyond_the_rule():
    """Faces 3 mm apart but turned by 20 deg (rule: 10): attracted, never welded."""
    world = MujocoWorld(_facing_pair(0.012, yaw=math.radians(20)))
    world.set_magnets("p", [Face.TOP])
    world.set_magnets("m", [Face.BOTTOM])
    for _ in range(100):
        assert not [e for e in world.step(DT) if e.kind == "connected"]


# --- collisions ----------------------------------------------------------------------------

def test_corner_hit_is_a_collision_face_push_is_not():
    # m drives diagonally (45 deg) into p's corner: shells meet at 45 deg
    world = MujocoWorld({"p": (0.0, 0.0, 0.0), "m": (-0.11, -0.11, math.radians(45))})
    world.set_cmd_vel("m", 0.05, 0.0)
    kinds = []
    for _ in range(300):
        kinds += [(e.kind, e.modules) for e in world.step(DT)]
    assert ("collision", ("m", "p")) in kinds
    assert world.collisions_active() == {("m", "p")}
    assert square_overlap(world.pose("m").as_tuple(), world.pose("p").as_tuple(), 0.08) < 0.004

    # aligned face-to-face push without magnets: a face contact, not a collision
    world = MujocoWorld({"p": (0.0, 0.0, 0.0), "m": (-0.12, 0.0, 0.0)})
    world.set_cmd_vel("m", 0.05, 0.0)
    events = []
    for _ in range(300):
        events += world.step(DT)
    assert events == []
    assert _face_gap(world.pose("m"), Face.TOP, world.pose("p"), Face.BOTTOM) < 0.003


# --- helpers -------------------------------------------------------------------------------

def test_lift_rotate_release():
    world = MujocoWorld({"h": (0, 0, 0), "m": (0.085, 0.005, 0.3)}, helpers=["h"])
    with pytest.raises(SimError, match="out of reach"):
        MujocoWorld({"h": (0, 0, 0), "m": (0.2, 0, 0)}, helpers=["h"]).helper_command(
            "h", "LIFT", "m")
    world.helper_command("h", "LIFT", "m", carry_yaw=math.pi / 2)
    assert world.carried_by("h") == "m" and world.carrier_of("m") == "h"
    world.set_cmd_vel("h", 0.04, 0.2)
    for _ in range(200):
        assert not [e for e in world.step(DT) if e.kind == "collision"]
    hp, mp = world.pose("h"), world.pose("m")
    want = hp.compose(MODULE_WIDTH, 0.0, math.pi / 2)
    assert mp.distance_to(want) < 1e-3
    assert abs(wrap_angle(mp.yaw - want.yaw)) < math.radians(0.5)
    assert world.carry_yaw("h") == pytest.approx(math.pi / 2)
    world.set_cmd_vel("h", 0.0, 0.0)
    world.helper_command("h", "RELEASE")
    for _ in range(50):
        world.step(DT)
    assert world.carried_by("h") is None
    world.set_cmd_vel("m", 0.05, 0.0)      # on its wheels again: it drives
    start = world.pose("m")
    for _ in range(100):
        world.step(DT)
    assert world.pose("m").distance_to(start) > 0.04


# --- closed-loop docks (the docking core on MuJoCo) ----------------------------------------

@pytest.mark.parametrize("parent_face,child_face,helper,seed", [
    (Face.TOP, Face.BOTTOM, False, 3),
    (Face.LEFT, Face.LEFT, True, 5),
])
def test_closed_loop_dock_on_mujoco_within_4_mm_and_2_deg(parent_face, child_face, helper,
                                                          seed):
    r = run_trial(parent_face, child_face, seed, helper, backend="mujoco")
    assert r.phase is Phase.DOCKED and r.connected, r.message
    assert r.gap_mm <= 4.0 and abs(r.yaw_deg) <= 2.0
    assert abs(r.capture_lateral_mm) <= 4.0 and abs(r.capture_yaw_deg) <= 2.0
    assert r.collisions == 0
    if helper:
        assert r.helper_carries is None      # handed over to the structure
