"""Pure-Python tests of the mocap filter (no ROS)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from smores_assembly.mocap import (MocapError, MocapFilter, MocapFilterSettings, RateMonitor,
                                   RigidTransform)


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def homog(R, t):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = t
    return T


def quat_wxyz_of_yaw(yaw):
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


IDENT_Q = [1.0, 0.0, 0.0, 0.0]


def test_transforms_match_explicit_matrices():
    rng = np.random.default_rng(1)
    for _ in range(50):
        w = rng.uniform(-1, 1, 6) * [1, 1, 1, 0.3, 0.3, math.pi]
        o = rng.uniform(-1, 1, 6) * [0.02, 0.02, 0.05, 0.2, 0.2, math.pi]
        T_wm = homog(rot_z(w[5]) @ rot_y(w[4]) @ rot_x(w[3]), w[:3])   # static x-y-z
        T_bo = homog(rot_z(o[5]) @ rot_y(o[4]) @ rot_x(o[3]), o[:3])
        f = MocapFilter(["m"], mocap_to_world=RigidTransform.from_xyzrpy(w),
                        marker_offset=RigidTransform.from_xyzrpy(o))
        pos = rng.uniform(-2, 2, 3)
        yaw = rng.uniform(-math.pi, math.pi)
        assert f.update("m", 1.0, 1.0, pos, quat_wxyz_of_yaw(yaw)) is None
        expect = T_wm @ homog(rot_z(yaw), pos) @ T_bo
        est = f.states(1.0)[0]
        assert np.allclose(est.position, expect[:3, 3], atol=1e-12)
        assert (est.x, est.y) == pytest.approx((expect[0, 3], expect[1, 3]), abs=1e-12)
        assert est.yaw == pytest.approx(math.atan2(expect[1, 0], expect[0, 0]), abs=1e-12)
        R = RigidTransform.from_pose([0, 0, 0], est.quaternion).rotation
        assert np.allclose(R, expect[:3, :3], atol=1e-12)
        assert est.quaternion[0] >= 0


def test_per_module_marker_offsets_override_the_default():
    f = MocapFilter(["a", "b"], marker_offset=RigidTransform.from_xyzrpy([0, 0, -0.04, 0, 0, 0]),
                    marker_offsets={"b": RigidTransform.from_xyzrpy([0.01, 0, 0, 0, 0, 0.5])})
    f.update("a", 1.0, 1.0, [1.0, 2.0, 0.08], IDENT_Q)
    f.update("b", 1.0, 1.0, [1.0, 2.0, 0.08], quat_wxyz_of_yaw(math.pi / 2))
    a, b = f.states(1.0)
    assert a.position == pytest.approx([1.0, 2.0, 0.04])
    assert b.position == pytest.approx([1.0, 2.01, 0.08])
    assert b.yaw == pytest.approx(math.pi / 2 + 0.5)
    with pytest.raises(MocapError, match="marker_offsets"):
        MocapFilter(["a"], marker_offsets={"zz": RigidTransform.identity()})


def test_bad_configuration_is_refused():
    with pytest.raises(MocapError, match="mocap_to_world"):
        RigidTransform.from_xyzrpy([0, 0, 0], "mocap_to_world")
    with pytest.raises(MocapError, match="marker_offset"):
        RigidTransform.from_xyzrpy([0, 0, 0, 0, 0, float("nan")], "marker_offset")
    with pytest.raises(MocapError, match="module_ids"):
        MocapFilter([])
    with pytest.raises(MocapError, match="duplicate"):
        MocapFilter(["a", "a"])
    with pytest.raises(MocapError, match="stale_timeout_s"):
        MocapFilter(["a"], MocapFilterSettings(stale_timeout_s=-1.0))
    with pytest.raises(MocapError, match="expected_rate_min_hz"):
        MocapFilter(["a"], MocapFilterSettings(expected_rate_min_hz=10, expected_rate_max_hz=5))


def test_nan_zero_and_bad_quaternions_are_never_forwarded():
    f = MocapFilter(["m"])
    assert f.update("m", 1.0, 1.0, [0.5, 0.5, 0.04], IDENT_Q) is None
    good = tuple(f.states(1.0)[0].position)
    cases = [([float("nan"), 0.5, 0.04], IDENT_Q, "nan"),
             ([0.5, 0.5, 0.04], [float("nan"), 0, 0, 1], "nan"),
             ([0.5, float("inf"), 0.04], IDENT_Q, "nan"),
             ([0.0, 0.0, 0.0], IDENT_Q, "zero"),
             ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], "zero"),
             ([0.5, 0.5, 0.04], [0.0, 0.0, 0.0, 0.0], "bad_quaternion"),
             ([0.5, 0.5, 0.04], [2.0, 0.0, 0.0, 0.0], "bad_quaternion")]
    for k, (pos, q, reason) in enumerate(cases):
        assert f.update("m", 1.01 + 0.01 * k, 1.01 + 0.01 * k, pos, q) == reason
        assert tuple(f.states(1.1)[0].position) == good
    assert sum(f.rejected["m"].values()) == len(cases)
    assert f.update("x", 1.0, 1.0, [1, 1, 1], IDENT_Q) == "unknown_module"


def test_jumps_are_rejected_then_reacquired():
    s = MocapFilterSettings(max_speed_mps=0.5, jump_tolerance_m=0.01, max_yaw_rate=6.0,
                            jump_tolerance_rad=0.1, reacquire_after=5)
    f = MocapFilter(["m"], s)
    assert f.update("m", 1.00, 1.00, [0.0, 0.1, 0.04], IDENT_Q) is None
    # 0.5 m/s * 0.01 s + 0.01 m = 0.015 m allowed
    assert f.update("m", 1.01, 1.01, [0.014, 0.1, 0.04], IDENT_Q) is None
    assert f.update("m", 1.02, 1.02, [0.030, 0.1, 0.04], IDENT_Q) == "jump"
    assert f.states(1.02)[0].x == pytest.approx(0.014)
    # yaw: 6 rad/s * 0.02 s (since the last accepted sample) + 0.1 = 0.22 rad allowed
    assert f.update("m", 1.03, 1.03, [0.014, 0.1, 0.04], quat_wxyz_of_yaw(0.3)) == "jump"
    assert f.update("m", 1.04, 1.04, [0.014, 0.1, 0.04], quat_wxyz_of_yaw(0.2)) is None
    # a real relocation: after reacquire_after consecutive jumps the track restarts
    for k in range(4):
        assert f.update("m", 1.05 + 0.01 * k, 1.05 + 0.01 * k, [1.0, 1.0, 0.04],
                        IDENT_Q) == "jump"
    assert f.update("m", 1.09, 1.09, [1.0, 1.0, 0.04], IDENT_Q) is None
    assert f.states(1.09)[0].x == pytest.approx(1.0)
    assert f.rejected["m"]["jump"] == 6


def test_out_of_order_and_duplicate_samples_are_dropped():
    f = MocapFilter(["m"])
    assert f.update("m", 2.0, 2.0, [0.1, 0.1, 0.04], IDENT_Q) is None
    assert f.update("m", 2.0, 2.01, [0.1, 0.1, 0.04], IDENT_Q) == "out_of_order"
    assert f.update("m", 1.99, 2.02, [0.1, 0.1, 0.04], IDENT_Q) == "out_of_order"


def test_staleness_and_restart_after_stale():
    s = MocapFilterSettings(stale_timeout_s=0.3)
    f = MocapFilter(["a", "b"], s)
    assert [e.tracked for e in f.states(0.0)] == [False, False]
    f.update("a", 1.0, 1.0, [0.1, 0.1, 0.04], IDENT_Q)
    assert [e.tracked for e in f.states(1.299)] == [True, False]
    assert [e.tracked for e in f.states(1.3001)] == [False, False]
    # a stale track accepts a far sample (moved by hand), no jump test
    assert f.update("a", 5.0, 5.0, [3.0, 3.0, 0.04], IDENT_Q) is None
    assert f.is_tracked("a", 5.0)


def test_rate_monitor_band():
    mon = RateMonitor(["a", "b"], window_s=1.0, lo=50.0, hi=150.0)
    mon.start(0.0)
    for k in range(300):
        t = k * 0.01
        mon.record("a", t)              # 100 Hz
        if k % 5 == 0:
            mon.record("b", t)          # 20 Hz
    assert mon.out_of_band(0.5) == {}   # window not complete yet
    bad = mon.out_of_band(2.995)
    assert set(bad) == {"b"} and bad["b"] == pytest.approx(20.0, abs=1.0)
    assert mon.rates(2.995)["a"] == pytest.approx(100.0, abs=1.0)
    assert mon.out_of_band(10.0) == {"a": 0.0, "b": 0.0}   # silence is out of band too


def test_clock_jumping_back_untracks_and_restarts():
    f = MocapFilter(["m"])
    assert f.update("m", 100.0, 100.0, [0.1, 0.1, 0.04], IDENT_Q) is None
    # a restarted simulation: time starts again near 0
    assert not f.is_tracked("m", 0.5)
    assert f.update("m", 0.5, 0.5, [0.3, 0.1, 0.04], IDENT_Q) is None
    assert f.is_tracked("m", 0.5) and f.states(0.5)[0].x == pytest.approx(0.3)


def test_one_sample_stamped_in_the_future_costs_no_good_sample():
    """Field case: a sample stamped 1 s ahead used to make the next 50 good ones (0.5 s at
    100 Hz) look out of order."""
    f = MocapFilter(["m"])
    t = 10.0
    for k in range(20):
        assert f.update("m", t, t + 0.005, [0.1 + 0.001 * k, 0.1, 0.04], IDENT_Q) is None
        t += 0.01
    assert f.update("m", t + 1.0, t + 0.005, [0.12, 0.1, 0.04], IDENT_Q) == "future"
    for k in range(50):
        t += 0.01
        assert f.update("m", t, t + 0.005, [0.12 + 0.001 * k, 0.1, 0.04], IDENT_Q) is None, k
    assert f.rejected["m"] == {"future": 1}
    assert f.states(t)[0].stamp == pytest.approx(t)
    # within the clock tolerance a stamp ahead of its reception is accepted
    assert f.update("m", t + 0.04, t + 0.001, [0.17, 0.1, 0.04], IDENT_Q) is None


@pytest.mark.parametrize("bad", ["Box 2 ", "3m", "m-1", "m.1", "", "m/1", 7])
def test_body_names_that_are_not_ros_names_are_refused_with_the_rule(bad):
    with pytest.raises(MocapError) as err:
        MocapFilter(["m0", bad])
    msg = str(err.value)
    assert "module_ids" in msg and repr(bad) in msg and "a letter, then letters" in msg
