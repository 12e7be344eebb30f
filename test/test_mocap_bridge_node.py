"""mocap_bridge node over DDS: exact frame transforms, bad samples dropped, staleness,
refused configurations, and the fake hardware -> bridge chain on simulated time."""
from __future__ import annotations

import math
import time

import numpy as np
import installed
import pytest

from ros_helpers import HANG_S, spin_until

from smores_assembly.ros import names
from smores_assembly.errors import ParamsError
from smores_assembly.mocap import MocapError

pytestmark = pytest.mark.ros

W = 0.08


def homog_xyzrpy(v):
    x, y, z, r, p, yw = v
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(yw), math.sin(yw))
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    T = np.eye(4)
    T[:3, :3] = Rz @ Ry @ Rx
    T[:3, 3] = (x, y, z)
    return T


class BridgeRig:
    def __init__(self, ctx, ids, **params):
        import rclpy
        from geometry_msgs.msg import PoseStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from smores_assembly.msg import ModuleStateArray
        from smores_assembly.ros.mocap_bridge import MocapBridgeNode

        overrides = [Parameter("module_ids", value=list(ids)),
                     Parameter("publish_rate_hz", value=100.0)]
        overrides += [Parameter(k, value=v) for k, v in params.items()]
        self.bridge = MocapBridgeNode(context=ctx, parameter_overrides=overrides)
        self.node = rclpy.create_node("driver", context=ctx)
        self.ex = SingleThreadedExecutor(context=ctx)
        self.ex.add_node(self.bridge)
        self.ex.add_node(self.node)
        self.states = []
        self.node.create_subscription(
            ModuleStateArray, names.STATES, self.states.append,
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.pubs = {m: self.node.create_publisher(PoseStamped, f"/vicon/{m}/{m}", 10)
                     for m in ids}
        assert spin_until(self.ex, lambda: all(p.get_subscription_count() > 0
                                               for p in self.pubs.values()), HANG_S)

    def send(self, m, stamp, pos, yaw=0.0, quat=None):
        from geometry_msgs.msg import PoseStamped

        from smores_assembly.ros import common
        msg = PoseStamped()
        msg.header.frame_id = "mocap"
        msg.header.stamp = common.sec_to_time(stamp)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, pos)
        if quat is None:
            quat = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
        o = msg.pose.orientation
        o.w, o.x, o.y, o.z = map(float, quat)
        self.pubs[m].publish(msg)

    def state(self, msg, m):
        return next(s for s in msg.modules if s.id == m)

    def wait_state(self, pred, timeout=HANG_S):
        """Spin until a states message satisfying ``pred`` arrives; return it."""
        n0 = len(self.states)
        found = []

        def check():
            for s in self.states[n0:]:
                if pred(s):
                    found.append(s)
                    return True
            return False
        assert spin_until(self.ex, check, timeout), "no matching /modules/states"
        return found[0]

    def close(self):
        self.ex.shutdown()
        self.node.destroy_node()
        self.bridge.destroy_node()


@pytest.fixture
def make_bridge(ros_context):
    rigs = []

    def make(ids, **params):
        r = BridgeRig(ros_context, ids, **params)
        rigs.append(r)
        return r

    yield make
    for r in rigs:
        r.close()


def test_frame_transforms_are_applied_exactly(make_bridge):
    m2w = [1.0, -2.0, 0.3, 0.02, -0.01, math.pi / 2]
    off = [0.0, 0.0, -0.045, 0.0, 0.0, 0.0]
    off2 = [0.01, -0.005, -0.04, 0.0, 0.0, 0.3]
    rig = make_bridge(["m1", "m2"], mocap_to_world=m2w, marker_offset=off,
                      **{"marker_offsets.m2": off2})
    samples = {"m1": ((0.5, 0.25, 0.09), 0.4), "m2": ((-0.3, 0.7, 0.085), -2.0)}
    for m, (pos, yaw) in samples.items():
        rig.send(m, 10.0, pos, yaw)
    msg = rig.wait_state(lambda s: all(st.tracked for st in s.modules))
    assert msg.header.frame_id == "world"
    for m, (pos, yaw) in samples.items():
        expect = homog_xyzrpy(m2w) @ homog_xyzrpy([*pos, 0, 0, yaw]) @ homog_xyzrpy(
            off2 if m == "m2" else off)
        st = rig.state(msg, m)
        assert (st.x, st.y) == pytest.approx((expect[0, 3], expect[1, 3]), abs=1e-12)
        assert st.pose.position.z == pytest.approx(expect[2, 3], abs=1e-12)
        assert st.yaw == pytest.approx(math.atan2(expect[1, 0], expect[0, 0]), abs=1e-12)
        q = st.pose.orientation
        from transforms3d.quaternions import quat2mat
        assert np.allclose(quat2mat((q.w, q.x, q.y, q.z)), expect[:3, :3], atol=1e-12)
        assert st.stamp.sec == 10 and st.stamp.nanosec == 0


def test_nan_zero_and_jump_samples_are_never_forwarded(make_bridge):
    rig = make_bridge(["m"], max_speed_mps=0.5, jump_tolerance_m=0.01, stale_timeout_s=30.0)
    rig.send("m", 1.00, (0.2, 0.1, 0.04), 0.5)
    rig.wait_state(lambda s: s.modules[0].tracked)
    rejected = rig.bridge.filter.rejected["m"]
    bad = [(1.01, (float("nan"), 0.1, 0.04), 0.5, None, "nan"),
           (1.02, (0.0, 0.0, 0.0), 0.0, (0.0, 0.0, 0.0, 0.0), "zero"),
           (1.03, (0.0, 0.0, 0.0), 0.0, None, "zero"),
           (1.04, (0.5, 0.1, 0.04), 0.5, None, "jump"),          # 0.3 m in 40 ms
           (1.05, (0.2, 0.1, 0.04), 2.5, None, "jump")]          # 2 rad in 50 ms
    for k, (stamp, pos, yaw, quat, reason) in enumerate(bad):
        rig.send("m", stamp, pos, yaw, quat)
        assert spin_until(rig.ex, lambda: sum(rejected.values()) == k + 1, HANG_S), reason
        assert rejected[reason] >= 1
    good = (0.205, 0.1, 0.04)
    rig.send("m", 1.06, good, 0.52)
    msg = rig.wait_state(lambda s: abs(s.modules[0].x - 0.205) < 1e-12)
    assert msg.modules[0].yaw == pytest.approx(0.52)
    # nothing but the two good samples ever left the bridge
    xs = {round(s.modules[0].x, 12) for s in rig.states if s.modules[0].tracked}
    assert xs <= {0.2, 0.205}
    for s in rig.states:
        st = s.modules[0]
        assert all(math.isfinite(v) for v in (st.x, st.y, st.yaw))


def test_silent_module_is_marked_untracked_within_the_timeout(make_bridge):
    stale = 0.3
    rig = make_bridge(["m1", "m2"], stale_timeout_s=stale)
    t = [time.time()]

    def feed():   # the "driver": m1 keeps streaming, m2 streams until told to stop
        # stamps increase, but never run ahead of the clock that receives them (a sample
        # stamped in the future is refused: max_future_s)
        t[0] = max(t[0] + 1e-4, time.time())
        rig.send("m1", t[0], (0.1, 0.1, 0.04))
        if not stop[0]:
            rig.send("m2", t[0], (0.3, 0.1, 0.04))

    stop = [False]
    assert spin_until(rig.ex, lambda: rig.states and all(
        st.tracked for st in rig.states[-1].modules), HANG_S, tick=feed)
    stop[0] = True
    last = rig.bridge.filter._est["m2"]   # its `received` is the last m2 sample's
    n0 = len(rig.states)
    assert spin_until(rig.ex, lambda: any(not rig.state(s, "m2").tracked
                                          for s in rig.states[n0:]), HANG_S, tick=feed)
    first_untracked = next(s for s in rig.states[n0:] if not rig.state(s, "m2").tracked)

    def stamp(s):
        return s.header.stamp.sec + s.header.stamp.nanosec * 1e-9

    # exact rule on the bridge's own clock: tracked iff the last valid sample is at most
    # stale_timeout_s old when the states message is made
    for s in rig.states[n0:]:
        assert rig.state(s, "m2").tracked == (stamp(s) - last.received <= stale)
        assert rig.state(s, "m1").tracked
    assert stamp(first_untracked) - last.received > stale
    # the untracked module keeps its last pose
    assert rig.state(first_untracked, "m2").x == pytest.approx(0.3)


def test_refused_configurations(ros_context):
    from rclpy.parameter import Parameter

    from smores_assembly.ros.mocap_bridge import MocapBridgeNode

    def make(**p):
        ps = [Parameter("module_ids", value=["m1"])]
        ps += [Parameter(k, value=v) for k, v in p.items()]
        return MocapBridgeNode(context=ros_context, parameter_overrides=ps)

    with pytest.raises(ParamsError, match="mocap4r2_msgs"):
        make(source="mocap4r2")
    with pytest.raises(MocapError, match="source: 'optitrack'"):
        make(source="optitrack")
    with pytest.raises(MocapError, match="mocap_to_world"):
        make(mocap_to_world=[0.0, 1.0])
    with pytest.raises(ParamsError, match=r"marker_offsets: \['marker_offsets.zz'\] name modules"):
        make(**{"marker_offsets.zz": [0.0] * 6})
    with pytest.raises(ParamsError, match="marker_offsets.m1"):
        make(**{"marker_offsets.m1": ["a", "b"]})
    # integers given for doubles (a params file's [0, 0, 0, 0, 0, 0]) are widened
    node = make(**{"marker_offsets.m1": [0, 0, 1, 0, 0, 0], "publish_rate_hz": 20})
    try:
        assert node.get_parameter("marker_offsets.m1").value == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
        assert node.filter._offsets["m1"].translation[2] == 1.0
        assert node.settings.publish_rate_hz == 20.0
    finally:
        node.destroy_node()
    node = make()
    try:
        res = node.set_parameters([Parameter("stale_timeout_s", value=-1.0)])
        assert not res[0].successful and "stale_timeout_s" in res[0].reason
        res = node.set_parameters([Parameter("expected_rate_min_hz", value=5000.0)])
        assert not res[0].successful and "expected_rate_min_hz" in res[0].reason
        res = node.set_parameters([Parameter("marker_offsets.m1", value=[0.0, 0.0])])
        assert not res[0].successful and "marker_offsets.m1" in res[0].reason
        res = node.set_parameters([Parameter("mocap_to_world",
                                             value=[0.5, 0.0, 0.0, 0.0, 0.0, 0.0])])
        assert res[0].successful
        assert node.filter.mocap_to_world.translation[0] == 0.5
    finally:
        node.destroy_node()


@pytest.mark.parametrize("fmt", ["vicon", "frame"])
def test_fake_hardware_to_states_on_sim_time(ros_context, tmp_path, fmt):
    """The chain the stack runs on: fake_hardware (vicon topics or, ``frame``, one mocap
    frame per sample; /clock) -> mocap_bridge (use_sim_time, the matching source) ->
    /modules/states equal to the ground truth when there is no noise."""
    import rclpy
    import yaml
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from smores_assembly.msg import ModuleStateArray
    from smores_assembly.ros.fake_hardware import FakeHardwareNode
    from smores_assembly.ros.mocap_bridge import MocapBridgeNode

    poses = {"m0": [0.3, 0.5, 0.6], "m1": [-0.2, 0.1, -2.9], "h0": [0.0, -0.4, 1.9]}
    scen = tmp_path / "s.yaml"
    scen.write_text(yaml.safe_dump({"name": "t", "target": {"nodes": ["n"], "edges": []},
                                    "modules": poses, "helpers": ["h0"]}))
    fake = FakeHardwareNode(context=ros_context, parameter_overrides=[
        Parameter("scenario", value=str(scen)), Parameter("real_time_factor", value=5.0),
        Parameter("mocap_format", value=fmt)])
    bridge = MocapBridgeNode(context=ros_context, parameter_overrides=[
        Parameter("scenario", value=str(scen)), Parameter("use_sim_time", value=True),
        Parameter("source", value=fmt),
        Parameter("marker_offset", value=[0.0, 0.0, -0.04, 0.0, 0.0, 0.0])])
    probe = rclpy.create_node("probe_chain", context=ros_context)
    ex = SingleThreadedExecutor(context=ros_context)
    for n in (fake, bridge, probe):
        ex.add_node(n)
    got = []
    probe.create_subscription(ModuleStateArray, names.STATES, got.append,
                              QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT))
    try:
        assert spin_until(ex, lambda: got and all(s.tracked for s in got[-1].modules), HANG_S)
        msg = got[-1]
        assert sorted(s.id for s in msg.modules) == sorted(poses)
        t_msg = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        assert 0 < t_msg <= fake.world.t + 1e-9          # stamped with simulated time
        for s in msg.modules:
            x, y, yaw = poses[s.id]
            assert (s.x, s.y, s.yaw) == pytest.approx((x, y, yaw), abs=1e-9)
            assert s.pose.position.z == pytest.approx(0.0, abs=1e-12)  # marker offset
    finally:
        ex.shutdown()
        for n in (probe, bridge, fake):
            n.destroy_node()


def test_warns_when_nothing_arrives_and_when_a_rate_leaves_its_band(make_bridge, capfd):
    """No sample at all: the no-data warning (wall time, as documented). Then m1 at 100 Hz
    and m2 at 5 Hz of **message time**: the bridge runs on ``use_sim_time`` and this test is
    the driver and the clock; each 10 ms step publishes ``/clock``, then the step's samples,
    and waits until the bridge took them (an event), so the rates the bridge measures do not
    depend on the machine's load. (Before, the samples were paced by the wall clock: at load
    10-25 the driver's ticks came late, a burst of m1 samples met the bridge's depth-1
    subscription and m1 was measured at 18 Hz, below the band, with m2.)"""
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from smores_assembly.ros import common

    rig = make_bridge(["m1", "m2"], use_sim_time=True, no_data_warn_s=0.2,
                      diagnostics_period_s=0.05, rate_window_s=0.5,
                      expected_rate_min_hz=20.0, expected_rate_max_hz=1000.0)
    err = []

    def logged(text):
        err.append(capfd.readouterr().err)
        return text in "".join(err)

    assert spin_until(rig.ex, lambda: logged("no mocap sample has arrived yet"), HANG_S)
    assert "/vicon/m1/m1" in "".join(err)
    # from here on the samples come by message time; a loaded machine may take longer than
    # 0.2 s of wall time for one step, which would be reported as "no mocap sample" and
    # skip the rate check: the no-data warning has been checked, give it its maximum
    assert rig.bridge.set_parameters([Parameter("no_data_warn_s", value=3600.0)])[0].successful
    clock_pub = rig.node.create_publisher(Clock, "/clock", 10)
    est = rig.bridge.filter._est
    t0, step = 100.0, 0.01
    # the observation starts with the samples, on a running clock: the bridge starts it at
    # its first diagnosis after the first sample (not before the first /clock, time 0: the
    # first diagnosis after t0 + 0.5 then judged 4 m1 samples in a "full" window, under
    # load), so at t0 or after
    clock_pub.publish(Clock(clock=common.sec_to_time(t0)))
    assert spin_until(rig.ex, lambda: rig.bridge._now() >= t0 - 1e-9, HANG_S), "clock t0"
    assert not rig.bridge._rate_started   # no sample yet: no window
    k = 0
    # the rate window (0.5 s) is full after 0.5 s of message time and the warning is due at
    # the next diagnosis; 10 s of message time without it is a failure, whatever the load
    while not logged("mocap rate outside"):
        t = round(t0 + k * step, 9)
        assert t <= t0 + 10.0, "no rate warning within 10 s of message time"
        clock_pub.publish(Clock(clock=common.sec_to_time(t)))
        assert spin_until(rig.ex, lambda: rig.bridge._now() >= t - 1e-9, HANG_S), f"clock {t}"
        sent = ["m1"] + (["m2"] if k % 20 == 0 else [])   # 100 Hz and 5 Hz
        for m in sent:
            rig.send(m, t, (0.1, 0.2, 0.04))
        assert spin_until(rig.ex, lambda: all(est[m].stamp >= t - 1e-9 for m in sent),
                          HANG_S), f"samples at {t}"
        k += 1
    assert k * step > 0.5   # not before a full window of message time
    assert rig.bridge.rates._start >= t0   # the window started with the samples
    line = next(ln for ln in "".join(err).splitlines() if "mocap rate outside" in ln)
    assert "m2:" in line and "m1:" not in line


def test_body_names_that_are_not_ros_names_are_refused_at_start_up(ros_domain):
    """Field case mocap_bad_names.yaml: the bridge died with a traceback."""
    import subprocess
    from pathlib import Path

    f = Path(__file__).resolve().parent / "data" / "field" / "mocap_bad_names.yaml"
    r = subprocess.run([*installed.node("mocap_bridge"),
                        "--ros-args", "--params-file", str(f)],
                       capture_output=True, text=True, timeout=HANG_S)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out
    assert "module_ids: invalid module id 'Box 2 '" in out and "a letter, then letters" in out


def test_hundred_subjects_at_100_hz_rate_and_staleness_on_message_time(make_bridge):
    """Issue 16: 100 VICON subjects at 100 Hz (10,000 samples per simulated second) into one
    bridge on simulated time (``use_sim_time``; this test is the driver and the clock).
    Each 10 ms step publishes ``/clock`` and one sample per visible subject, and the next
    step waits until the bridge has taken them (an event, not a sleep), so everything
    below is a function of message time, whatever the machine's load. After 1 s ten
    subjects stop. Checked: the bridge published ``modules/states`` at its 50 Hz in
    simulated time (message stamps: count and spacing), took every sample (its rate
    monitor: 100 Hz per visible subject over its window, 0 for the hidden ones), kept every
    visible subject tracked, and flagged each hidden one untracked exactly when its last
    sample is older than ``stale_timeout_s`` (first untracked within one publish period
    of that), keeping its last pose."""
    from rosgraph_msgs.msg import Clock

    from smores_assembly.ros import common
    from smores_assembly.ros.wire import read_module_states

    ids = [f"s{i}" for i in range(100)]
    hidden = set(ids[::10])
    stale, rate, step = 0.5, 50.0, 0.01
    rig = make_bridge(ids, use_sim_time=True, publish_rate_hz=rate, stale_timeout_s=stale,
                      rate_window_s=0.5)
    clock_pub = rig.node.create_publisher(Clock, "/clock", 10)
    published = []                        # (stamp, modules) of every states message
    pub = rig.bridge._pub
    inner = pub.publish

    def record(raw):
        published.append(read_module_states(raw))
        inner(raw)
    pub.publish = record
    bridge_now = rig.bridge._now
    est = rig.bridge.filter._est
    t0, t_hide, t_end = 100.0, 101.0, 102.0
    n_steps = round((t_end - t0) / step)
    last_sent = {}
    for k in range(n_steps + 1):
        t = round(t0 + k * step, 9)
        clock_pub.publish(Clock(clock=common.sec_to_time(t)))
        assert spin_until(rig.ex, lambda: bridge_now() >= t - 1e-9, HANG_S), f"clock {t}"
        for i, m in enumerate(ids):
            if m in hidden and t > t_hide:
                continue
            rig.send(m, t, (0.3 * (i % 10), 0.3 * (i // 10), 0.04))
            last_sent[m] = t
        assert spin_until(rig.ex, lambda: all(est[m].stamp >= last_sent[m] - 1e-9
                                               for m in ids), HANG_S), f"samples at {t}"
    # rates seen by the bridge (simulated time, over its window)
    rates = rig.bridge.rates.rates(bridge_now())
    for m in ids:
        if m in hidden:
            assert rates[m] == 0.0, m
        else:
            assert rates[m] == pytest.approx(100.0, abs=2.0), m
    assert sum(sum(v.values()) for v in rig.bridge.filter.rejected.values()) == 0
    # published rate: 50 Hz of message time, evenly spaced
    stamps = [s for s, _ in published if t0 + 0.1 <= s <= t_end]
    assert len(stamps) == pytest.approx(rate * (t_end - t0 - 0.1), abs=1)
    gaps = np.diff(stamps)
    assert gaps.max() <= 1.5 / rate and gaps.min() >= 0.5 / rate
    # staleness: exact rule on message time; visible subjects always tracked
    received = {m: est[m].received for m in hidden}
    assert all(t_hide - step - 1e-9 <= r <= t_hide + 1e-9 for r in received.values())
    for stamp, mods in published:
        if stamp < t0 + 0.1:
            continue
        for st in mods:
            if st.id in hidden:
                assert st.tracked == (stamp - received[st.id] <= stale), (st.id, stamp)
            else:
                assert st.tracked, (st.id, stamp)
    for m in hidden:
        first = min(s for s, mods in published if s > t_hide
                    for st in mods if st.id == m and not st.tracked)
        assert stale < first - received[m] <= stale + 1.0 / rate + 1e-9
        i = ids.index(m)
        last = next(st for st in published[-1][1] if st.id == m)
        assert (last.x, last.y) == pytest.approx((0.3 * (i % 10), 0.3 * (i // 10)))
    # and the states did go out over DDS
    assert rig.states and len(rig.states[-1].modules) == 100
