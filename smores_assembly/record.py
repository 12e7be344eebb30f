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

    Call :meth:`poll_topics` periodically (new topics and publishers are picked up) and
    :meth:`close` at the end. Topics whose type definition cannot be found are skipped
    (listed in :attr:`skipped`).

    QoS: a topic is subscribed as soon as it is seen (also when only subscribers exist yet,
    so no message of a later publisher is missed), with the QoS that matches every current
    publisher (:func:`matching_qos`). At every poll the publishers are looked at again;
    when the matching QoS changed (e.g. a latched publisher appeared after the topic was
    first seen from a subscriber), the topic is subscribed again with it, so a transient-
    local subscription receives what was latched before; a poll that sees no publisher
    keeps the subscription it has. A latched message that the old subscription had already
    recorded is not recorded twice.
    """

    def __init__(self, node, path: Path):
        self._node = node
        self._file = open(path, "wb")
        self._writer = Writer(self._file)
        self._writer.start(profile="ros2", library="smores_assembly")
        self._channels: dict[str, int] = {}
        self._classes: dict[str, type] = {}
        self._subs: dict[str, tuple[object, tuple]] = {}
        self._last: dict[str, bytes] = {}
        self._skip_once: dict[str, bytes] = {}
        self.counts: dict[str, int] = {}
        self.skipped: dict[str, str] = {}
        self._last_poll = -float("inf")

    def poll_topics(self, period_s: float = 1.0) -> None:
        """Subscribe new topics and re-subscribe those whose publishers' QoS changed (at
        most once per ``period_s`` wall seconds)."""
        now = time.monotonic()
        if now - self._last_poll < period_s:
            return
        self._last_poll = now
        for topic, types in self._node.get_topic_names_and_types():
            if topic in self.skipped or not types:
                continue
            if topic not in self._channels:
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
                self._channels[topic] = self._writer.register_channel(
                    topic=topic, message_encoding=MessageEncoding.CDR, schema_id=schema)
                self._classes[topic] = cls
            self._subscribe(topic)

    def _subscribe(self, topic: str) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        publishers = self._node.get_publishers_info_by_topic(topic)
        old = self._subs.get(topic)
        if old is not None and not publishers:
            # no publisher seen now (one restarting, or a discovery answer momentarily
            # empty on a loaded machine): keep the subscription, a publisher that comes
            # back matches it again. Subscribing anew loses what arrives in between, and
            # twice (best effort now, then back): one way to the 0.36 s hole a Task 1
            # recording had once under CI load (2026-12-07; the cause was not proven)
            return
        key = matching_qos(publishers)
        if old is not None and old[1] == key:
            return
        reliability, durability = key
        # deep enough for the 50 Hz ground truth (reliable, publisher depth 100) at full
        # pace on a busy machine: with depth 100 a Task 1 recording at
        # --real-time-factor 0 lost 155 of 1497 messages (1.74 s of simulated time in
        # one hole); with 1000, none. A publisher's own depth still bounds what a
        # lagging reader can get (depth-1 and best-effort streams can lose messages).
        qos = QoSProfile(depth=1000 if durability == "volatile" else 10,
                         reliability=(ReliabilityPolicy.RELIABLE if reliability == "reliable"
                                      else ReliabilityPolicy.BEST_EFFORT),
                         durability=(DurabilityPolicy.TRANSIENT_LOCAL
                                     if durability == "transient_local"
                                     else DurabilityPolicy.VOLATILE))
        if old is not None:
            self._node.destroy_subscription(old[0])
            if durability == "transient_local" and topic in self._last:
                # the new subscription receives the latched message again
                self._skip_once[topic] = self._last[topic]
        cid = self._channels[topic]
        sub = self._node.create_subscription(
            self._classes[topic], topic, lambda data, t=topic, c=cid: self._write(t, c, data),
            qos, raw=True)
        self._subs[topic] = (sub, key)

    def _write(self, topic: str, channel: int, data: bytes) -> None:
        if self._skip_once.get(topic) is not None:
            seen = self._skip_once.pop(topic)
            if data == seen:
                return
        self._last[topic] = data
        self.counts[topic] = self.counts.get(topic, 0) + 1
        t = self._node.get_clock().now().nanoseconds
        self._writer.add_message(channel_id=channel, log_time=t, data=data, publish_time=t)

    def close(self) -> None:
        for sub, _ in self._subs.values():
            self._node.destroy_subscription(sub)
        self._subs.clear()
        self._writer.finish()
        self._file.close()


def matching_qos(publishers) -> tuple[str, str]:
    """(reliability, durability) of a subscription that matches every publisher in
    ``publishers`` (rclpy ``TopicEndpointInfo`` list) and gets the most from them.

    Reliable only when every publisher is reliable, transient-local only when every
    publisher is (a transient-local or reliable subscription does not match a volatile or
    best-effort publisher). With no publisher: best effort, volatile (matches any).
    """
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
    if not publishers:
        return ("best_effort", "volatile")
    reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                   for p in publishers)
    latched = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                  for p in publishers)
    return ("reliable" if reliable else "best_effort",
            "transient_local" if latched else "volatile")
