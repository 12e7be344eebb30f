"""The serialized form (CDR, little endian) of ``geometry_msgs/PoseStamped``, written and
read with :mod:`struct` for the simulated mocap stream.

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
