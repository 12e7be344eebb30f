"""Record every topic of a run to an MCAP file (opens in Foxglove and ``ros2 bag``).

rosbag2 has no PyPI wheel, so the run records with the pure-Python ``mcap`` writer:
serialized CDR messages (rclpy raw subscriptions) with ``ros2msg`` schemas built from the
installed ``.msg`` definitions, exactly as rosbag2's MCAP storage plugin stores them.
"""
from __future__ import annotations

import importlib
import re
import time
from pathlib import Path

from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import Writer

from smores_assembly.launch.yaml_launch import find_pkg_share

_SEP = "=" * 80
_BUILTIN = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
            "int32", "uint32", "int64", "uint64", "string", "wstring"}


def _msg_file(pkg: str, name: str) -> Path:
    return find_pkg_share(pkg) / "msg" / f"{name}.msg"


def message_definition(datatype: str) -> str:
    """Full ``ros2msg`` definition text of ``pkg/msg/Type`` with all its dependencies.

    Raises:
        FileNotFoundError: a ``.msg`` file of the type or of a dependency is not installed.
    """
    pkg, _, name = datatype.split("/")
    main = _msg_file(pkg, name).read_text()
    seen: set[str] = set()
    parts = [main]
    todo = [(pkg, main)]
    while todo:
        cur_pkg, text = todo.pop()
        for raw in text.splitlines():
            tokens = raw.split("#", 1)[0].split()
            if len(tokens) < 2:
                continue
            ftype = re.sub(r"(<=\d+)?(\[[^\]]*\])?$", "", tokens[0])
            ftype = re.sub(r"<=\d+$", "", ftype)
            if ftype in _BUILTIN:
                continue
            if "/" in ftype:
                dpkg, dname = ftype.split("/")[0], ftype.split("/")[-1]
            else:
                dpkg, dname = cur_pkg, ftype
            if dname == "Header" and "/" not in ftype:
                dpkg = "std_msgs"
            key = f"{dpkg}/{dname}"
            if key in seen:
                continue
            seen.add(key)
            dtext = _msg_file(dpkg, dname).read_text()
            parts.append(f"{_SEP}\nMSG: {key}\n{dtext}")
            todo.append((dpkg, dtext))
    return "\n".join(parts)


class McapRecorder:
    """Subscribe to every topic an rclpy ``node`` can see and write it to ``path``.

    Call :meth:`poll_topics` periodically (new topics are picked up) and :meth:`close` at
    the end. Topics whose type definition cannot be found are skipped (listed in
    :attr:`skipped`).
    """

    def __init__(self, node, path: Path):
        from rclpy.qos import QoSProfile, DurabilityPolicy, ReliabilityPolicy
        self._node = node
        self._file = open(path, "wb")
        self._writer = Writer(self._file)
        self._writer.start(profile="ros2", library="smores_assembly")
        self._channels: dict[str, int] = {}
        self._subs = []
        self.skipped: dict[str, str] = {}
        self._last_poll = 0.0
        self._qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT,
                               durability=DurabilityPolicy.VOLATILE)

    def poll_topics(self, period_s: float = 1.0) -> None:
        now = time.monotonic()
        if now - self._last_poll < period_s:
            return
        self._last_poll = now
        for topic, types in self._node.get_topic_names_and_types():
            if topic in self._channels or topic in self.skipped or not types:
                continue
            datatype = types[0]
            try:
                pkg, kind, name = datatype.split("/")
                cls = getattr(importlib.import_module(f"{pkg}.{kind}"), name)
                schema = self._writer.register_schema(
                    name=datatype, encoding=SchemaEncoding.ROS2,
                    data=message_definition(datatype).encode())
            except (ImportError, AttributeError, OSError, ValueError) as exc:
                self.skipped[topic] = str(exc)
                continue
            cid = self._writer.register_channel(topic=topic, message_encoding=MessageEncoding.CDR,
                                                schema_id=schema)
            self._channels[topic] = cid
            self._subs.append(self._node.create_subscription(
                cls, topic, lambda data, c=cid: self._write(c, data), self._qos_for(topic),
                raw=True))

    def _qos_for(self, topic: str):
        """Transient-local (latched) topics are subscribed transient-local and reliable, so
        the message published before the recorder joined is recorded too."""
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        infos = self._node.get_publishers_info_by_topic(topic)
        if infos and any(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                         for i in infos):
            return QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                              durability=DurabilityPolicy.TRANSIENT_LOCAL)
        return self._qos

    def _write(self, channel: int, data: bytes) -> None:
        t = self._node.get_clock().now().nanoseconds
        self._writer.add_message(channel_id=channel, log_time=t, data=data, publish_time=t)

    def close(self) -> None:
        for s in self._subs:
            self._node.destroy_subscription(s)
        self._writer.finish()
        self._file.close()
