"""The serialized form (CDR, little endian) of the high-rate messages, written and read
with :mod:`struct`: ``geometry_msgs/PoseStamped`` (the simulated mocap stream),
``smores_assembly/ModuleStateArray`` (the states, and the fake hardware's mocap frames),
``geometry_msgs/Twist`` (the controller's commands, one per driven module and control tick)
and ``smores_assembly/CmdVelArray`` (the same commands in lockstep, one per turn).

The fake hardware publishes one PoseStamped per module and mocap sample (700 messages per
simulated second for 7 modules at 100 Hz) and the mocap bridge reads every one of them.
rclpy turns each message into Python objects (message, header, stamp, pose, point,
quaternion) on both sides, which costs far more than the content: here the publisher sends
the bytes (``Publisher.publish(bytes)``) and the subscriber takes them raw
(``create_subscription(..., raw=True)``), so that a sample costs one ``struct`` call on
each side. The layout is the one rmw serialises (XCDR1, plain CDR with the 4-byte
encapsulation header; doubles aligned to 8 bytes from the end of that header);
``test/test_wire.py`` checks both directions against rclpy's own serialisation.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

_ENCAPSULATION_LE = b"\x00\x01\x00\x00"   # CDR, little endian, options 0
_HEAD = struct.Struct("<iiI")             # stamp.sec, stamp.nanosec, len(frame_id) + 1
_POSE = struct.Struct("<7d")              # position x y z, orientation x y z w


def _pose_offset(frame_len: int) -> int:
    """Byte offset of the pose in a PoseStamped whose frame_id has ``frame_len`` bytes."""
    data = _HEAD.size + frame_len + 1       # stamp, string length, bytes, terminator
    data += -data % 8                       # doubles aligned to 8 (from the data start)
    return len(_ENCAPSULATION_LE) + data


class PoseStampedWriter:
    """Serialised ``geometry_msgs/PoseStamped`` messages of one ``frame_id``.

    Args:
        frame_id: the header's frame (ASCII/UTF-8, no NUL).

    Raises:
        ValueError: a frame_id with a NUL character.
    """

    def __init__(self, frame_id: str):
        raw = frame_id.encode()
        if b"\x00" in raw:
            raise ValueError(f"frame_id: {frame_id!r} contains a NUL character")
        self._frame = struct.pack("<I", len(raw) + 1) + raw + b"\x00"
        pad = _pose_offset(len(raw)) - len(_ENCAPSULATION_LE) - 8 - len(self._frame)
        self._frame += b"\x00" * pad
        self._stamp = struct.Struct("<iI")

    def encode(self, sec: int, nanosec: int, x: float, y: float, z: float,
               qx: float, qy: float, qz: float, qw: float) -> bytes:
        """The serialised message: stamp ``sec``/``nanosec``, position [m], orientation
        (unit quaternion x, y, z, w)."""
        return b"".join((_ENCAPSULATION_LE, self._stamp.pack(sec, nanosec), self._frame,
                         _POSE.pack(x, y, z, qx, qy, qz, qw)))


def read_pose_stamped(raw: bytes) -> tuple[float, tuple[float, ...], tuple[float, ...]]:
    """``(stamp [s], (x, y, z), (qw, qx, qy, qz))`` of a serialised PoseStamped.

    Raises:
        ValueError: not a little-endian CDR PoseStamped (too short, other encapsulation).
    """
    if len(raw) < 4 + _HEAD.size or raw[:2] != _ENCAPSULATION_LE[:2]:
        raise ValueError(f"not a little-endian CDR PoseStamped ({len(raw)} bytes, "
                         f"encapsulation {bytes(raw[:4]).hex()})")
    sec, nanosec, n = _HEAD.unpack_from(raw, 4)
    off = _pose_offset(n - 1)
    if len(raw) < off + _POSE.size:
        raise ValueError(f"not a CDR PoseStamped: {len(raw)} bytes, frame_id of {n - 1}")
    x, y, z, qx, qy, qz, qw = _POSE.unpack_from(raw, off)
    return sec + nanosec * 1e-9, (x, y, z), (qw, qx, qy, qz)


# --- smores_assembly/ModuleStateArray --------------------------------------------------------
# header (stamp, frame_id), then per module: string id, float64 x y yaw, Pose (position x y
# z, orientation x y z w), bool tracked, Time stamp.
_U32 = struct.Struct("<I")
_TIME = struct.Struct("<iI")
#: a module after its id (which ends padded to 8): the 10 doubles x y yaw, position x y z,
#: orientation x y z w, ``tracked``, 3 bytes of padding, the stamp (sec, nanosec)
_ENTRY = struct.Struct("<10d?3xiI")
#: (id, data offset % 8) -> the id's bytes and padding (:func:`_state_prefix`)
_prefixes: dict[tuple[str, int], bytes] = {}


class ModuleStateView(NamedTuple):
    """One module of a ``ModuleStateArray`` as read from its bytes (the fields the nodes
    read; ``stamp_s`` = ``stamp.sec + stamp.nanosec * 1e-9``, as ``common.time_to_sec``)."""

    id: str
    x: float
    y: float
    yaw: float
    tracked: bool
    stamp_s: float


class StatesView(NamedTuple):
    """A serialised ``ModuleStateArray`` read for consumers of ``msg.modules`` (each with
    ``id``, ``x``, ``y``, ``yaw``, ``tracked``; ``stamp_s`` instead of ``stamp``)."""

    stamp_s: float
    modules: list[ModuleStateView]

    @classmethod
    def of(cls, raw: bytes) -> "StatesView":
        """Read ``raw``; little-endian CDR with :mod:`struct`, other byte orders through
        rclpy."""
        try:
            return cls(*read_module_states(raw))
        except ValueError:
            from rclpy.serialization import deserialize_message  # noqa: PLC0415

            from smores_assembly.msg import ModuleStateArray  # noqa: PLC0415
            msg = deserialize_message(raw, ModuleStateArray)
            return cls(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                       [ModuleStateView(s.id, s.x, s.y, s.yaw, s.tracked,
                                        s.stamp.sec + s.stamp.nanosec * 1e-9)
                        for s in msg.modules])


def _string(out: list[bytes], size: int, text: str) -> int:
    raw = text.encode()
    if b"\x00" in raw:
        raise ValueError(f"string {text!r} contains a NUL character")
    pad = -size % 4
    out.append(b"\x00" * pad + _U32.pack(len(raw) + 1) + raw + b"\x00")
    return size + pad + 4 + len(raw) + 1


def _state_prefix(mid: str, size: int) -> bytes:
    """The bytes of a ``ModuleState`` before its doubles when it starts at data offset
    ``size`` (4-aligned): its id as a CDR string and the padding that 8-aligns the doubles
    (cached: a message repeats the same few ids, and their padding depends only on
    ``size % 8``).

    Raises:
        ValueError: an id with a NUL character.
    """
    key = (mid, size & 7)
    got = _prefixes.get(key)
    if got is None:
        out: list[bytes] = []
        end = _string(out, size & 7, mid)
        got = b"".join(out) + b"\x00" * (-end % 8)
        if len(_prefixes) < 65536:
            _prefixes[key] = got
    return got


def write_module_states(sec: int, nanosec: int, frame_id: str, modules) -> bytes:
    """A serialised ``ModuleStateArray``.

    Args:
        sec, nanosec: the header's stamp.
        frame_id: the header's frame.
        modules: per module ``(id, x, y, yaw, (px, py, pz), (qw, qx, qy, qz), tracked,
            stamp_sec, stamp_nanosec)``: planar pose [m, rad], full pose (position [m],
            unit quaternion), tracked flag, time of the last valid sample.

    Raises:
        ValueError: a string with a NUL character.
    """
    out = [_ENCAPSULATION_LE, _TIME.pack(sec, nanosec)]
    size = _string(out, 8, frame_id)          # size: bytes after the encapsulation
    mods = list(modules)
    pad = -size % 4
    out.append(b"\x00" * pad + _U32.pack(len(mods)))
    size += pad + 4
    # each module: its id and padding (cached), then one pack of the rest (_ENTRY); every
    # module ends 4-aligned, so the next id needs no padding before it
    prefixes, pack = _prefixes, _ENTRY.pack
    for mid, x, y, yaw, (px, py, pz), (qw, qx, qy, qz), tracked, ssec, snsec in mods:
        pre = prefixes.get((mid, size & 7))
        if pre is None:
            pre = _state_prefix(mid, size)
        out.append(pre)
        out.append(pack(x, y, yaw, px, py, pz, qx, qy, qz, qw, tracked, ssec, snsec))
        size += len(pre) + _ENTRY.size
    return b"".join(out)


def _decode_states(raw: bytes) -> tuple[float, list[tuple[str, tuple]]]:
    """``(header stamp [s], entries)`` of a serialised ``ModuleStateArray``: per module
    ``(id, values)`` in the message's order, ``values`` as :data:`_ENTRY` unpacks them (the
    10 doubles x y yaw px py pz qx qy qz qw, tracked, stamp sec, nanosec). The one CDR walk
    behind :func:`read_module_states` and :func:`read_mocap_frame`.

    Raises:
        ValueError: not a little-endian CDR ModuleStateArray (truncated, other encapsulation).
    """
    if len(raw) < 4 + 16 or raw[:2] != _ENCAPSULATION_LE[:2]:
        raise ValueError(f"not a little-endian CDR ModuleStateArray ({len(raw)} bytes, "
                         f"encapsulation {bytes(raw[:4]).hex()})")
    u32, entry = _U32.unpack_from, _ENTRY.unpack_from
    try:
        sec, nanosec = _TIME.unpack_from(raw, 4)
        n = u32(raw, 12)[0]
        off = 16 + n                          # absolute offsets; data starts at 4
        off += -(off - 4) % 4
        count = u32(raw, off)[0]
        off += 4
        entries = []
        for _ in range(count):
            off += -(off - 4) % 4             # (0: a module ends 4-aligned)
            n = u32(raw, off)[0]
            mid = bytes(raw[off + 4:off + 3 + n]).decode()
            off += 4 + n
            off += -(off - 4) % 8
            entries.append((mid, entry(raw, off)))
            off += _ENTRY.size
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a CDR ModuleStateArray ({len(raw)} bytes): {exc}") from None
    return sec + nanosec * 1e-9, entries


def read_module_states(raw: bytes) -> tuple[float, list[ModuleStateView]]:
    """``(header stamp [s], modules)`` of a serialised ``ModuleStateArray``.

    Raises:
        ValueError: not a little-endian CDR ModuleStateArray (truncated, other encapsulation).
    """
    stamp, entries = _decode_states(raw)
    return stamp, [ModuleStateView(mid, v[0], v[1], v[2], v[10], v[11] + v[12] * 1e-9)
                   for mid, v in entries]


def read_mocap_frame(raw: bytes) -> tuple[float, list[tuple[str, float, tuple, tuple]]]:
    """``(header stamp [s], bodies)`` of a serialised ``ModuleStateArray`` used as a mocap
    frame (the fake hardware's ``mocap_format: frame``): per module whose ``tracked`` is
    true ``(id, stamp [s], (px, py, pz) [m], (qw, qx, qy, qz))``, in the message's order
    (stamps as :func:`read_pose_stamped` computes them).

    Raises:
        ValueError: not a little-endian CDR ModuleStateArray (truncated, other encapsulation).
    """
    stamp, entries = _decode_states(raw)
    return stamp, [(mid, v[11] + v[12] * 1e-9, (v[3], v[4], v[5]), (v[9], v[6], v[7], v[8]))
                   for mid, v in entries if v[10]]


# --- geometry_msgs/Twist ---------------------------------------------------------------------
_TWIST = struct.Struct("<6d")             # linear x y z, angular x y z


def write_twist(v: float, w: float) -> bytes:
    """A serialised ``geometry_msgs/Twist`` of a planar body: ``linear.x = v`` [m/s],
    ``angular.z = w`` [rad/s], every other field 0."""
    return _ENCAPSULATION_LE + _TWIST.pack(v, 0.0, 0.0, 0.0, 0.0, w)


def read_twist(raw: bytes) -> tuple[float, float]:
    """``(linear.x [m/s], angular.z [rad/s])`` of a serialised ``geometry_msgs/Twist``
    (little-endian CDR with :mod:`struct`, another byte order through rclpy).

    Raises:
        ValueError: not a CDR Twist (wrong length).
    """
    if len(raw) == 4 + _TWIST.size and raw[:2] == _ENCAPSULATION_LE[:2]:
        vals = _TWIST.unpack_from(raw, 4)
        return vals[0], vals[5]
    if len(raw) != 4 + _TWIST.size:
        raise ValueError(f"not a CDR Twist ({len(raw)} bytes)")
    from geometry_msgs.msg import Twist  # noqa: PLC0415
    from rclpy.serialization import deserialize_message  # noqa: PLC0415
    msg = deserialize_message(bytes(raw), Twist)
    return msg.linear.x, msg.angular.z


# --- smores_assembly/CmdVelArray ------------------------------------------------------------
def _f64_seq(size: int, values) -> tuple[bytes, int]:
    """A CDR ``float64[]`` at data offset ``size`` (padding included) and the offset after
    it."""
    pad = -size % 4
    n = len(values)
    head = b"\x00" * pad + _U32.pack(n)
    size += pad + 4
    if not n:
        return head, size
    pad = -size % 8
    return head + b"\x00" * pad + struct.pack(f"<{n}d", *values), size + pad + 8 * n


def write_cmd_vel_array(modules, v, w) -> bytes:
    """A serialised ``CmdVelArray``: ``modules[i]`` gets forward speed ``v[i]`` [m/s] and
    yaw rate ``w[i]`` [rad/s].

    Raises:
        ValueError: lengths that differ, or a module id with a NUL character.
    """
    if not len(modules) == len(v) == len(w):
        raise ValueError(f"CmdVelArray: {len(modules)} modules, {len(v)} v, {len(w)} w")
    out: list[bytes] = [_ENCAPSULATION_LE, _U32.pack(len(modules))]
    size = 4
    for mid in modules:
        size = _string(out, size, mid)
    for values in (v, w):
        chunk, size = _f64_seq(size, [float(x) for x in values])
        out.append(chunk)
    out.append(b"\x00" * (-size % 8))   # as rmw: the payload padded to the type's alignment
    return b"".join(out)


def _read_f64_seq(raw, off: int) -> tuple[list[float], int]:
    off += -(off - 4) % 4
    count = _U32.unpack_from(raw, off)[0]
    off += 4
    if not count:
        return [], off
    off += -(off - 4) % 8
    if off + 8 * count > len(raw):
        raise ValueError(f"{count} float64 at byte {off} past the end")
    return list(struct.unpack_from(f"<{count}d", raw, off)), off + 8 * count


def read_cmd_vel_array(raw: bytes) -> list[tuple[str, float, float]]:
    """``[(module, v [m/s], w [rad/s]), ...]`` of a serialised ``CmdVelArray``, in its order
    (little-endian CDR with :mod:`struct`, another byte order through rclpy).

    Raises:
        ValueError: not a CDR CmdVelArray (truncated, lengths that differ).
    """
    if len(raw) >= 4 and raw[:2] == b"\x00\x00":   # big endian: rclpy
        m = _fallback(raw, "CmdVelArray")
        modules, v, w = list(m.modules), list(m.v), list(m.w)
    else:
        try:
            if len(raw) < 8 or raw[:2] != _ENCAPSULATION_LE[:2]:
                raise ValueError("not little-endian CDR")
            modules, off = _read_string_seq(raw, 4)
            v, off = _read_f64_seq(raw, off)
            w, _ = _read_f64_seq(raw, off)
        except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
            raise ValueError(f"not a CDR CmdVelArray ({len(raw)} bytes): {exc}") from None
    if not len(modules) == len(v) == len(w):
        raise ValueError(f"CmdVelArray: {len(modules)} modules, {len(v)} v, {len(w)} w")
    return list(zip(modules, v, w))


# --- smores_assembly/LockstepTurn and LockstepAck ---------------------------------------------
# The lockstep protocol's own messages (one turn and one answer per participant turn, ~130
# of each per simulated second for Task 1): written and read as bytes like the others.
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")
_string_seqs: dict[tuple[str, ...], bytes] = {}


def _string_seq(items: tuple[str, ...]) -> bytes:
    """A CDR ``string[]`` (length, then each string) that starts 4-aligned (cached: the
    lockstep messages repeat a few topic lists)."""
    got = _string_seqs.get(items)
    if got is None:
        out: list[bytes] = [_U32.pack(len(items))]
        size = 4
        for text in items:
            size = _string(out, size, text)
        got = b"".join(out)
        if len(_string_seqs) < 4096:
            _string_seqs[items] = got
    return got


def _u64_seq(size: int, values) -> tuple[bytes, int]:
    """A CDR ``uint64[]`` at data offset ``size`` (padding included) and the offset after
    it."""
    pad = -size % 4
    n = len(values)
    head = b"\x00" * pad + _U32.pack(n)
    size += pad + 4
    if not n:
        return head, size
    pad = -size % 8
    return head + b"\x00" * pad + struct.pack(f"<{n}Q", *values), size + pad + 8 * n


def _octets(size: int, data: bytes) -> tuple[bytes, int]:
    """A CDR ``uint8[]`` at data offset ``size`` (padding included) and the offset after
    it."""
    pad = -size % 4
    return b"\x00" * pad + _U32.pack(len(data)) + data, size + pad + 4 + len(data)


def write_turn(sec: int, nanosec: int, topics: tuple[str, ...], counts, next_name: str = "",
               next_topics: tuple[str, ...] = (), next_counts=(), stop: tuple[str, ...] = (),
               chained: bytes = b"") -> bytes:
    """A serialised ``LockstepTurn``: stamp ``sec``/``nanosec``, the counted topics and the
    number of messages expected on each (``counts``, as many as ``topics``); for a chained
    turn the participant to hand the turn to (``next_name``), its ``next_topics`` and
    ``next_counts``, the ``stop`` topics, and (a turn handed over) the handing
    participant's serialised answer ``chained``.

    Raises:
        ValueError: a topic or name with a NUL character, or lengths that differ.
    """
    if len(topics) != len(counts):
        raise ValueError(f"LockstepTurn: {len(topics)} topics but {len(counts)} counts")
    if len(next_topics) != len(next_counts):
        raise ValueError(f"LockstepTurn: {len(next_topics)} next_topics but "
                         f"{len(next_counts)} next_counts")
    seq = _string_seq(tuple(topics))
    parts = [_ENCAPSULATION_LE, _TIME.pack(sec, nanosec), seq]
    tail, size = _u64_seq(8 + len(seq), counts)
    parts.append(tail)
    out: list[bytes] = []
    size = _string(out, size, next_name)
    parts += out
    pad = -size % 4
    seq = _string_seq(tuple(next_topics))
    parts.append(b"\x00" * pad + seq)
    tail, size = _u64_seq(size + pad + len(seq), next_counts)
    parts.append(tail)
    pad = -size % 4
    seq = _string_seq(tuple(stop))
    parts.append(b"\x00" * pad + seq)
    tail, _ = _octets(size + pad + len(seq), chained)
    parts.append(tail)
    return b"".join(parts)


def _read_string(raw, off: int) -> tuple[str, int]:
    """``(string, offset after it)`` of a CDR ``string`` at absolute offset ``off``."""
    off += -(off - 4) % 4
    n = _U32.unpack_from(raw, off)[0]
    if n < 1 or off + 4 + n > len(raw):
        raise ValueError(f"string of length {n} at byte {off}")
    return bytes(raw[off + 4:off + 3 + n]).decode(), off + 4 + n


def _read_string_seq(raw, off: int) -> tuple[list[str], int]:
    """``(strings, offset after them)`` of a CDR ``string[]`` at absolute offset ``off``."""
    off += -(off - 4) % 4
    count = _U32.unpack_from(raw, off)[0]
    off += 4
    if count > len(raw):
        raise ValueError(f"{count} strings in {len(raw)} bytes")
    out = []
    for _ in range(count):
        text, off = _read_string(raw, off)
        out.append(text)
    return out, off


def _read_u64_seq(raw, off: int) -> tuple[list[int], int]:
    off += -(off - 4) % 4
    count = _U32.unpack_from(raw, off)[0]
    off += 4
    if not count:
        return [], off
    off += -(off - 4) % 8
    if off + 8 * count > len(raw):
        raise ValueError(f"{count} uint64 at byte {off} past the end")
    return list(struct.unpack_from(f"<{count}Q", raw, off)), off + 8 * count


def _read_octets(raw, off: int) -> tuple[bytes, int]:
    """``(bytes, offset after them)`` of a CDR ``uint8[]`` at absolute offset ``off``."""
    off += -(off - 4) % 4
    n = _U32.unpack_from(raw, off)[0]
    if off + 4 + n > len(raw):
        raise ValueError(f"{n} bytes at byte {off} past the end")
    return bytes(raw[off + 4:off + 4 + n]), off + 4 + n


def _fallback(raw, msg_type_name: str):
    from rclpy.serialization import deserialize_message  # noqa: PLC0415

    from smores_assembly import msg as msgs  # noqa: PLC0415
    return deserialize_message(bytes(raw), getattr(msgs, msg_type_name))


class TurnView(NamedTuple):
    """A serialised ``LockstepTurn`` as read (``stamp_ns`` = sec * 1e9 + nanosec)."""

    stamp_ns: int
    topics: list[str]
    counts: list[int]
    next: str = ""
    next_topics: list[str] = []
    next_counts: list[int] = []
    stop: list[str] = []
    chained: bytes = b""


def read_turn(raw: bytes) -> TurnView:
    """Read a serialised ``LockstepTurn`` (little-endian CDR with :mod:`struct`, another byte
    order through rclpy).

    Raises:
        ValueError: not a CDR LockstepTurn (truncated, inconsistent lengths).
    """
    if len(raw) >= 4 and raw[:2] == b"\x00\x00":   # big endian: rclpy
        m = _fallback(raw, "LockstepTurn")
        return TurnView(m.stamp.sec * 1_000_000_000 + m.stamp.nanosec, list(m.topics),
                        list(m.counts), m.next, list(m.next_topics), list(m.next_counts),
                        list(m.stop), bytes(m.chained))
    try:
        if len(raw) < 16 or raw[:2] != _ENCAPSULATION_LE[:2]:
            raise ValueError("not little-endian CDR")
        sec, nanosec = _TIME.unpack_from(raw, 4)
        topics, off = _read_string_seq(raw, 12)
        counts, off = _read_u64_seq(raw, off)
        next_name, off = _read_string(raw, off)
        next_topics, off = _read_string_seq(raw, off)
        next_counts, off = _read_u64_seq(raw, off)
        stop, off = _read_string_seq(raw, off)
        chained, _ = _read_octets(raw, off)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"not a CDR LockstepTurn ({len(raw)} bytes): {exc}") from None
    if len(topics) != len(counts) or len(next_topics) != len(next_counts):
        raise ValueError(f"LockstepTurn: {len(topics)} topics but {len(counts)} counts, "
                         f"{len(next_topics)} next_topics but {len(next_counts)} next_counts")
    return TurnView(sec * 1_000_000_000 + nanosec, topics, counts, next_name, next_topics,
                    next_counts, stop, chained)


class AckWriter:
    """Serialised ``LockstepAck`` messages of one participant ``node``.

    Raises:
        ValueError: a node name with a NUL character.
    """

    def __init__(self, node: str):
        out: list[bytes] = []
        self._size = _string(out, 8, node)
        self._node = b"".join(out)

    def encode(self, sec: int, nanosec: int, hello: bool, next_turn_s: float,
               topics: tuple[str, ...], counts, subscribed: tuple[str, ...] = (),
               wake: tuple[str, ...] = (), quiet: tuple[str, ...] = (),
               chained: bytes = b"", holding: bool = False) -> bytes:
        """The answer at stamp ``sec``/``nanosec``: ``hello``, the simulated time of the next
        due timer [s], the cumulative ``counts`` of the ``topics`` published, the counted
        (``subscribed``) and ``wake`` topics (empty: unchanged), the ``quiet`` topics
        (published, but waking nobody), and the serialised answer ``chained`` of the
        participant that handed over the turn (a chained turn; empty: none); ``holding``:
        not an answer but the report that the turn at the stamp is held on purpose.

        Raises:
            ValueError: a topic with a NUL character, or lengths that differ.
        """
        if len(topics) != len(counts):
            raise ValueError(f"LockstepAck: {len(topics)} topics but {len(counts)} counts")
        size = self._size + 2                       # node, hello, holding
        pad = -size % 8
        parts = [_ENCAPSULATION_LE, _TIME.pack(sec, nanosec), self._node,
                 b"\x01" if hello else b"\x00", b"\x01" if holding else b"\x00",
                 b"\x00" * pad, _F64.pack(next_turn_s)]
        size += pad + 8
        for seq in (topics, None, subscribed, wake, quiet):
            if seq is None:
                chunk, size = _u64_seq(size, counts)
                parts.append(chunk)
                continue
            pad = -size % 4
            chunk = _string_seq(tuple(seq))
            parts.append(b"\x00" * pad + chunk)
            size += pad + len(chunk)
        parts.append(_octets(size, chained)[0])
        return b"".join(parts)


class AckView(NamedTuple):
    """A serialised ``LockstepAck`` as read (``stamp_ns`` = sec * 1e9 + nanosec)."""

    stamp_ns: int
    node: str
    hello: bool
    holding: bool
    next_turn_s: float
    topics: list[str]
    counts: list[int]
    subscribed: list[str]
    wake: list[str]
    quiet: list[str]
    chained: bytes = b""


def read_ack(raw: bytes) -> AckView:
    """Read a serialised ``LockstepAck`` (little-endian CDR with :mod:`struct`, another byte
    order through rclpy).

    Raises:
        ValueError: not a CDR LockstepAck (truncated, inconsistent lengths).
    """
    if len(raw) >= 4 and raw[:2] == b"\x00\x00":   # big endian: rclpy
        m = _fallback(raw, "LockstepAck")
        return AckView(m.stamp.sec * 1_000_000_000 + m.stamp.nanosec, m.node, m.hello,
                       m.holding, m.next_turn_s, list(m.topics), list(m.counts),
                       list(m.subscribed), list(m.wake), list(m.quiet), bytes(m.chained))
    try:
        if len(raw) < 16 or raw[:2] != _ENCAPSULATION_LE[:2]:
            raise ValueError("not little-endian CDR")
        sec, nanosec = _TIME.unpack_from(raw, 4)
        node, off = _read_string(raw, 12)
        hello = raw[off] != 0
        holding = raw[off + 1] != 0
        off += 2
        off += -(off - 4) % 8
        next_turn_s = _F64.unpack_from(raw, off)[0]
        topics, off = _read_string_seq(raw, off + 8)
        counts, off = _read_u64_seq(raw, off)
        subscribed, off = _read_string_seq(raw, off)
        wake, off = _read_string_seq(raw, off)
        quiet, off = _read_string_seq(raw, off)
        chained, _ = _read_octets(raw, off)
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise ValueError(f"not a CDR LockstepAck ({len(raw)} bytes): {exc}") from None
    if len(topics) != len(counts):
        raise ValueError(f"LockstepAck: {len(topics)} topics but {len(counts)} counts")
    return AckView(sec * 1_000_000_000 + nanosec, node, hello, holding, next_turn_s, topics,
                   counts, subscribed, wake, quiet, chained)
