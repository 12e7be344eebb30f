"""Hand-made CDR for the stack's high-rate messages (pure ``struct``, no ROS imports).

rclpy converts every Python message field by field (tens of microseconds per message);
publishing pre-serialised bytes (``Publisher.publish(bytes)`` -> ``publish_raw``) and
subscribing with ``raw=True`` skip that. The layouts here are little-endian plain CDR
(XCDR1, encapsulation ``00 01 00 00``) as rmw_fastrtps and rmw_cyclonedds use for these
types; alignment counts from the end of the 4-byte encapsulation header. Every layout is
checked against ``rclpy.serialization`` in the tests.

* :class:`PoseStampedCdr`, :func:`parse_pose_stamped`: ``geometry_msgs/PoseStamped``
  (mocap samples);
* :func:`clock_cdr`: ``rosgraph_msgs/Clock``;
* :class:`JointStateCdr`: ``sensor_msgs/JointState`` with names ``pan``, ``tilt``;
* :class:`ModuleStatesCdr`: ``smores_assembly/ModuleStateArray`` for a fixed list of ids.
"""
from __future__ import annotations

import math
import struct

ENCAPSULATION = b"\x00\x01\x00\x00"


class _FixedLayout:
    """A layout whose strings are known in advance: one ``struct`` format for the whole
    message, so that serialising is a single ``pack`` call."""

    def __init__(self) -> None:
        self.fmt: list = []
        self.size = 0          # bytes after the encapsulation header

    def align(self, n: int) -> None:
        pad = (-self.size) % n
        if pad:
            self.fmt.append(f"{pad}x")
            self.size += pad

    def time(self) -> None:
        self.align(4)
        self.fmt.append("iI")
        self.size += 8

    def const_bytes(self, data: bytes) -> None:
        self.fmt.append(("B", data))
        self.size += len(data)

    def u32_const(self, v: int) -> None:
        self.align(4)
        self.const_bytes(struct.pack("<I", v))

    def string_const(self, text: str) -> None:
        data = text.encode() + b"\0"
        self.u32_const(len(data))
        self.const_bytes(data)

    def doubles(self, n: int) -> None:
        self.align(8)
        self.fmt.append(f"{n}d")
        self.size += 8 * n

    def boolean(self) -> None:
        self.fmt.append("?")
        self.size += 1

    def compile(self) -> tuple[struct.Struct, list[bytes]]:
        """(struct.Struct, the constant byte strings in pack order)."""
        fmt, consts = "<", []
        for part in self.fmt:
            if isinstance(part, tuple):
                fmt += f"{len(part[1])}s"
                consts.append(part[1])
            else:
                fmt += part
        return struct.Struct(fmt), consts


def clock_cdr(sec: int, nanosec: int) -> bytes:
    """``rosgraph_msgs/Clock`` serialised to CDR."""
    return ENCAPSULATION + struct.pack("<iI", sec, nanosec)


class PoseStampedCdr:
    """``geometry_msgs/PoseStamped`` with a fixed ``frame_id`` to CDR."""

    def __init__(self, frame_id: str) -> None:
        lay = _FixedLayout()
        lay.time()
        lay.string_const(frame_id)
        lay.doubles(7)
        self._st, consts = lay.compile()
        self._consts = tuple(consts)

    def __call__(self, sec: int, nanosec: int, x: float, y: float, z: float, qx: float,
                 qy: float, qz: float, qw: float) -> bytes:
        c0, c1 = self._consts
        return ENCAPSULATION + self._st.pack(sec, nanosec, c0, c1, x, y, z, qx, qy, qz, qw)


_TIME_LE, _TIME_BE = struct.Struct("<iI"), struct.Struct(">iI")
_U32_LE, _U32_BE = struct.Struct("<I"), struct.Struct(">I")
_POSE_LE, _POSE_BE = struct.Struct("<7d"), struct.Struct(">7d")


def parse_pose_stamped(data: bytes) -> tuple[float, tuple[float, float, float],
                                             tuple[float, float, float, float]]:
    """Decode a serialised ``geometry_msgs/PoseStamped``.

    Returns:
        ``(stamp [s], (x, y, z), (qw, qx, qy, qz))``.

    Raises:
        ValueError: truncated data or an unknown encapsulation.
    """
    if len(data) < 16 or data[0] != 0 or data[1] not in (0, 1):
        raise ValueError("PoseStamped: not a plain CDR message")
    le = data[1] == 1
    sec, nsec = (_TIME_LE if le else _TIME_BE).unpack_from(data, 4)
    (slen,) = (_U32_LE if le else _U32_BE).unpack_from(data, 12)
    off = 16 + slen
    off += (-(off - 4)) % 8
    if len(data) < off + 56:
        raise ValueError("PoseStamped: truncated message")
    x, y, z, qx, qy, qz, qw = (_POSE_LE if le else _POSE_BE).unpack_from(data, off)
    return sec + nsec * 1e-9, (x, y, z), (qw, qx, qy, qz)


class JointStateCdr:
    """``sensor_msgs/JointState`` (names ``pan``, ``tilt``; positions only) to CDR."""

    def __init__(self) -> None:
        lay = _FixedLayout()
        lay.time()
        lay.string_const("")                          # frame_id
        lay.u32_const(2)                              # name[]
        lay.string_const("pan")
        lay.string_const("tilt")
        lay.u32_const(2)                              # position[]
        lay.doubles(2)
        lay.u32_const(0)                              # velocity[]
        lay.u32_const(0)                              # effort[]
        self._st, consts = lay.compile()
        self._consts = tuple(consts)

    def __call__(self, sec: int, nanosec: int, pan: float, tilt: float) -> bytes:
        c = self._consts
        return ENCAPSULATION + self._st.pack(sec, nanosec, *c[:8], pan, tilt, *c[8:])


class ModuleStatesCdr:
    """``smores_assembly/ModuleStateArray`` for a fixed list of module ids to CDR, with one
    ``pack`` call.

    ``__call__(sec, nanosec, rows)``: ``rows[i] = (x, y, yaw, px, py, pz, qx, qy, qz, qw,
    tracked, stamp_sec, stamp_nanosec)`` for ``ids[i]``; :meth:`exact` builds the rows of
    exact planar poses (all tracked, stamped with the header stamp).
    """

    def __init__(self, frame_id: str, ids: list[str]) -> None:
        lay = _FixedLayout()
        lay.time()
        lay.string_const(frame_id)
        lay.u32_const(len(ids))
        marks = []
        for m in ids:
            lay.string_const(m)
            marks.append(len([p for p in lay.fmt if isinstance(p, tuple)]))
            lay.doubles(10)
            lay.boolean()
            lay.time()
        self._st, consts = lay.compile()
        self._head = tuple(consts[:3])               # frame_id len, frame_id, count
        self._ids = [tuple(consts[k - 2:k]) for k in marks]
        self.n = len(ids)

    def __call__(self, sec: int, nanosec: int, rows) -> bytes:
        vals = [sec, nanosec, *self._head]
        for idc, row in zip(self._ids, rows):
            vals += idc
            vals += row
        return ENCAPSULATION + self._st.pack(*vals)

    def exact(self, sec: int, nanosec: int, poses, z: float) -> bytes:
        """Exact planar poses ``poses[i] = (x, y, yaw)`` at height ``z`` (all tracked)."""
        rows = [(x, y, yaw, x, y, z, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2), True,
                 sec, nanosec) for x, y, yaw in poses]
        return self(sec, nanosec, rows)
