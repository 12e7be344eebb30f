"""The struct-written PoseStamped (smores_assembly.ros.wire) against rclpy's own CDR
serialisation, both directions, random contents and frame ids of every padding length."""
from __future__ import annotations

import math
import random

import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from smores_assembly.ros.wire import PoseStampedWriter, read_pose_stamped  # noqa: E402


def _random_msg(rng: random.Random, frame: str) -> PoseStamped:
    m = PoseStamped()
    m.header.frame_id = frame
    m.header.stamp.sec = rng.randrange(0, 2**31)
    m.header.stamp.nanosec = rng.randrange(0, 10**9)
    p, q = m.pose.position, m.pose.orientation
    p.x, p.y, p.z = (rng.uniform(-1e3, 1e3) for _ in range(3))
    q.x, q.y, q.z, q.w = (rng.uniform(-1, 1) for _ in range(4))
    return m


@pytest.mark.parametrize("frame", ["", "w", "world", "mocap", "vicon_world", "a" * 13,
                                   "frame/with/slashes", "ü"])
def test_written_bytes_deserialise_to_the_same_message(frame):
    rng = random.Random(len(frame))
    writer = PoseStampedWriter(frame)
    for _ in range(50):
        m = _random_msg(rng, frame)
        p, q = m.pose.position, m.pose.orientation
        raw = writer.encode(m.header.stamp.sec, m.header.stamp.nanosec,
                            p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        assert len(raw) == len(serialize_message(m))
        assert deserialize_message(raw, PoseStamped) == m


@pytest.mark.parametrize("frame", ["", "world", "mocap_frame_x", "ü"])
def test_read_gives_the_fields_of_rclpys_bytes(frame):
    rng = random.Random(7)
    for _ in range(50):
        m = _random_msg(rng, frame)
        stamp, pos, quat = read_pose_stamped(serialize_message(m))
        p, q = m.pose.position, m.pose.orientation
        assert stamp == m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
        assert pos == (p.x, p.y, p.z)
        assert quat == (q.w, q.x, q.y, q.z)
        assert all(math.isfinite(v) for v in pos + quat)


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="NUL"):
        PoseStampedWriter("a\x00b")
    with pytest.raises(ValueError, match="CDR"):
        read_pose_stamped(b"\x00\x01\x00\x00\x01")
    raw = serialize_message(PoseStamped())
    with pytest.raises(ValueError, match="CDR"):
        read_pose_stamped(raw[:-8])
    with pytest.raises(ValueError, match="encapsulation"):
        read_pose_stamped(b"\x00\x00" + raw[2:])   # big endian


def _random_states(rng: random.Random, n: int, frame: str):
    from smores_assembly.msg import ModuleState, ModuleStateArray
    a = ModuleStateArray()
    a.header.frame_id = frame
    a.header.stamp.sec, a.header.stamp.nanosec = rng.randrange(2**31), rng.randrange(10**9)
    for _ in range(n):
        s = ModuleState(id="m" * rng.randrange(0, 9) + str(rng.randrange(1000)))
        s.x, s.y, s.yaw = (rng.uniform(-10, 10) for _ in range(3))
        p, q = s.pose.position, s.pose.orientation
        p.x, p.y, p.z = (rng.uniform(-10, 10) for _ in range(3))
        q.x, q.y, q.z, q.w = (rng.uniform(-1, 1) for _ in range(4))
        s.tracked = rng.random() < 0.5
        s.stamp.sec, s.stamp.nanosec = rng.randrange(2**31), rng.randrange(10**9)
        a.modules.append(s)
    return a


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 12])
def test_module_states_both_ways(n):
    from smores_assembly.msg import ModuleStateArray
    from smores_assembly.ros.wire import read_module_states, write_module_states
    rng = random.Random(n)
    for frame in ("", "world", "abc", "frame_x"):
        for _ in range(10):
            a = _random_states(rng, n, frame)
            rows = [(s.id, s.x, s.y, s.yaw,
                     (s.pose.position.x, s.pose.position.y, s.pose.position.z),
                     (s.pose.orientation.w, s.pose.orientation.x, s.pose.orientation.y,
                      s.pose.orientation.z), s.tracked, s.stamp.sec, s.stamp.nanosec)
                    for s in a.modules]
            raw = write_module_states(a.header.stamp.sec, a.header.stamp.nanosec, frame, rows)
            assert len(raw) == len(serialize_message(a))
            assert deserialize_message(raw, ModuleStateArray) == a
            stamp, views = read_module_states(serialize_message(a))
            assert stamp == a.header.stamp.sec + a.header.stamp.nanosec * 1e-9
            assert [(v.id, v.x, v.y, v.yaw, v.tracked, v.stamp_s) for v in views] == [
                (s.id, s.x, s.y, s.yaw, s.tracked, s.stamp.sec + s.stamp.nanosec * 1e-9)
                for s in a.modules]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_mocap_frame_reads_the_tracked_bodies_of_rclpys_bytes(n):
    """read_mocap_frame (the bridge's ``frame`` source) gives, for rclpy's bytes of random
    ModuleStateArrays, each tracked module's id, stamp, position and quaternion in order."""
    from smores_assembly.ros.wire import read_mocap_frame
    rng = random.Random(100 + n)
    for frame in ("", "world", "abc", "frame_x"):
        for _ in range(10):
            a = _random_states(rng, n, frame)
            stamp, bodies = read_mocap_frame(serialize_message(a))
            assert stamp == a.header.stamp.sec + a.header.stamp.nanosec * 1e-9
            assert bodies == [
                (s.id, s.stamp.sec + s.stamp.nanosec * 1e-9,
                 (s.pose.position.x, s.pose.position.y, s.pose.position.z),
                 (s.pose.orientation.w, s.pose.orientation.x, s.pose.orientation.y,
                  s.pose.orientation.z)) for s in a.modules if s.tracked]
    raw = serialize_message(_random_states(random.Random(1), 3, "world"))
    with pytest.raises(ValueError, match="ModuleStateArray"):
        read_mocap_frame(raw[:len(raw) - 24])


def test_cmd_vel_array_bytes_equal_rclpys_both_ways():
    """write_cmd_vel_array gives bytes that rclpy reads as the same CmdVelArray (same
    length), and read_cmd_vel_array reads rclpy's bytes back, for random ids and speeds."""
    from smores_assembly.msg import CmdVelArray
    from smores_assembly.ros.wire import read_cmd_vel_array, write_cmd_vel_array
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(0, 6)
        mods = ["m" * rng.randint(0, 7) + str(rng.randrange(100)) for _ in range(n)]
        v = [rng.uniform(-1, 1) for _ in range(n)]
        w = [rng.uniform(-10, 10) for _ in range(n)]
        msg = CmdVelArray(modules=mods, v=v, w=w)
        ref = serialize_message(msg)
        mine = write_cmd_vel_array(mods, v, w)
        assert len(mine) == len(ref) and deserialize_message(mine, CmdVelArray) == msg
        assert read_cmd_vel_array(ref) == list(zip(mods, v, w))
    with pytest.raises(ValueError, match="CmdVelArray"):
        read_cmd_vel_array(write_cmd_vel_array(["m1", "m2"], [0.1, 0.2], [0.0, 0.1])[:-12])
    with pytest.raises(ValueError, match="CmdVelArray"):
        write_cmd_vel_array(["m1"], [0.1, 0.2], [0.0])


def test_truncated_module_states_are_refused():
    from smores_assembly.ros.wire import read_module_states
    raw = serialize_message(_random_states(random.Random(1), 3, "world"))
    for cut in (1, 8, 40, len(raw) - 24):
        with pytest.raises(ValueError, match="ModuleStateArray"):
            read_module_states(raw[:len(raw) - cut] if cut < len(raw) - 4 else raw[:4])


def test_twist_bytes_equal_rclpys_both_ways():
    """write_twist gives rclpy's own bytes of the planar Twist; read_twist reads linear.x
    and angular.z of rclpy's bytes of any Twist."""
    from geometry_msgs.msg import Twist

    from smores_assembly.ros.wire import read_twist, write_twist
    rng = random.Random(3)
    for _ in range(100):
        v, w = rng.uniform(-1, 1), rng.uniform(-10, 10)
        m = Twist()
        m.linear.x, m.angular.z = v, w
        assert write_twist(v, w) == serialize_message(m)
        m.linear.y, m.linear.z = rng.uniform(-1, 1), rng.uniform(-1, 1)
        m.angular.x, m.angular.y = rng.uniform(-1, 1), rng.uniform(-1, 1)
        assert read_twist(serialize_message(m)) == (v, w)
    with pytest.raises(ValueError, match="Twist"):
        read_twist(b"\x00\x01\x00\x00" + b"\x00" * 8)


def test_lockstep_turn_and_ack_bytes_equal_rclpys_both_ways(monkeypatch):
    """Random turns and answers (empty and non-empty topic lists, inf next turn, chained
    turns and answers, answers that report a held turn): the written bytes deserialise with
    rclpy to the same message and have its length (the padding bytes rclpy leaves are not
    specified), and rclpy's bytes read back to the fields, also through the rclpy fallback
    that reads another byte order (here: rclpy's own bytes, relabelled big endian and
    handed to rclpy as they are)."""
    import random

    from builtin_interfaces.msg import Time

    from smores_assembly import msg as msgs
    from smores_assembly.msg import LockstepAck, LockstepTurn
    from smores_assembly.ros import wire
    from smores_assembly.ros.wire import AckWriter, read_ack, read_turn, write_turn
    rng = random.Random(7)

    def name():
        return "/" + "".join(rng.choice("abc_/xyz19") for _ in range(rng.randint(0, 14)))
    for _ in range(200):
        n = rng.randint(0, 5)
        topics = tuple(name() for _ in range(n))
        counts = [rng.randint(0, 2 ** 40) for _ in range(n)]
        sec, nsec = rng.randint(0, 10 ** 6), rng.randint(0, 999_999_999)
        # a chained turn (issue 10) half of the time: the next participant, its counts, the
        # stop topics and a handed-over answer (any bytes, odd lengths included)
        chain = rng.random() < 0.5
        nxt = name()[1:] if chain else ""
        k = rng.randint(0, 4) if chain else 0
        next_topics = tuple(name() for _ in range(k))
        next_counts = [rng.randint(0, 2 ** 40) for _ in range(k)]
        stop = tuple(name() for _ in range(rng.randint(0, 3))) if chain else ()
        chained = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 77])))
        turn = LockstepTurn(stamp=Time(sec=sec, nanosec=nsec), topics=list(topics),
                            counts=counts, next=nxt, next_topics=list(next_topics),
                            next_counts=next_counts, stop=list(stop), chained=chained)
        ref = serialize_message(turn)
        mine = write_turn(sec, nsec, topics, counts, nxt, next_topics, next_counts, stop,
                          chained)
        # rclpy's buffer is 4 bytes longer when an empty uint64[] that other fields follow
        # (next_counts) starts 4 bytes short of an 8 boundary: Fast CDR's size estimate
        # aligns it, the serialiser does not (the tail is unused)
        assert len(mine) in (len(ref), len(ref) - 4)
        assert deserialize_message(mine, LockstepTurn) == turn
        assert read_turn(ref) == (sec * 10 ** 9 + nsec, list(topics), counts, nxt,
                                  list(next_topics), next_counts, list(stop), chained)
        node = name()[1:] or "n"
        hello = rng.random() < 0.5
        holding = not hello and rng.random() < 0.5   # a held turn's report
        next_s = rng.choice([math.inf, rng.uniform(0.0, 100.0)])
        sub = tuple(name() for _ in range(rng.randint(0, 3)))
        wake = tuple(name() for _ in range(rng.randint(0, 2)))
        quiet = tuple(rng.sample(topics, rng.randint(0, n)))
        ack = LockstepAck(stamp=Time(sec=sec, nanosec=nsec), node=node, hello=hello,
                          holding=holding, next_turn_s=next_s, topics=list(topics), counts=counts,
                          subscribed=list(sub), wake=list(wake), quiet=list(quiet),
                          chained=chained)
        ref = serialize_message(ack)
        mine = AckWriter(node).encode(sec, nsec, hello, next_s, topics, counts, sub, wake,
                                      quiet, chained, holding)
        assert len(mine) == len(ref) and deserialize_message(mine, LockstepAck) == ack
        fields = (sec * 10 ** 9 + nsec, node, hello, holding, next_s, list(topics), counts,
                  list(sub), list(wake), list(quiet), chained)
        assert read_ack(ref) == fields
        # another byte order goes through rclpy (wire._fallback): the same fields
        with monkeypatch.context() as mp:
            mp.setattr(wire, "_fallback", lambda raw, name: deserialize_message(
                b"\x00\x01" + bytes(raw[2:]), getattr(msgs, name)))
            assert read_ack(b"\x00\x00" + ref[2:]) == fields
        # an answer handed over in a chained turn reads back from the turn's bytes
        assert read_ack(read_turn(write_turn(sec, nsec, (), [], chained=mine)).chained) \
            == read_ack(ref)


def test_truncated_lockstep_messages_are_refused():
    from smores_assembly.ros.wire import AckWriter, read_ack, read_turn, write_turn
    ack = AckWriter("navigation").encode(3, 5, False, 0.5, ("/x",), [4])
    turn = write_turn(3, 5, ("/a/b", "/c"), [1, 2], "controller", ("/s",), [7], ("/t",), ack)
    for raw, read in ((turn, read_turn), (ack, read_ack)):
        for cut in (0, 3, 12, len(raw) // 2, len(raw) - 1):
            with pytest.raises(ValueError, match="not a CDR Lockstep"):
                read(raw[:cut])
    with pytest.raises(ValueError, match="2 topics but 1 counts"):
        write_turn(0, 0, ("/a", "/b"), [1])
    with pytest.raises(ValueError, match="1 next_topics but 0 next_counts"):
        write_turn(0, 0, (), [], "controller", ("/a",), [])
