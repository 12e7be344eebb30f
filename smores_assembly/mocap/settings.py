"""Settings of the ``mocap_bridge`` node besides the filter's (no ROS imports).

The filter tunables are :class:`smores_assembly.mocap.MocapFilterSettings`; the node
(:mod:`smores_assembly.ros.mocap_bridge`) declares both as ROS parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

from smores_assembly.mocap.filter import MocapError, RigidTransform
from smores_assembly.params import check_ranges, param_field
from smores_assembly.ros import names

#: Supported mocap drivers.
SOURCES = ("vicon", "vrpn", "mocap4r2", "frame")


@dataclass
class BridgeSettings:
    """Tunables of the mocap bridge node (besides the filter's)."""

    source: str = param_field(
        "vicon", "mocap driver: vicon | vrpn | mocap4r2 | frame (the fake hardware's "
        "mocap_format frame: one ModuleStateArray per capture frame on frame_topic)",
        start_only=True)
    vicon_topic_format: str = param_field(
        names.VICON_FORMAT, "vicon_receiver PoseStamped topic; {id} = module id (relative: "
        "in the node's namespace)",
        start_only=True)
    vrpn_topic_format: str = param_field(
        names.VRPN_FORMAT, "vrpn_mocap PoseStamped topic; {id} = module id",
        start_only=True)
    mocap4r2_topic: str = param_field(names.MOCAP4R2, "mocap4r2 RigidBodies topic",
                                      start_only=True)
    frame_topic: str = param_field(
        names.MOCAP_FRAME, "source frame: topic of the ModuleStateArray mocap frames",
        start_only=True)
    mocap_to_world: list = param_field(
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        "T_world_mocap as [x, y, z, roll, pitch, yaw] [m, rad] (static x-y-z axes)")
    marker_offset: list = param_field(
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        "default T_body_module (module centre in the tracked body's frame) as "
        "[x, y, z, roll, pitch, yaw] [m, rad]; per module: marker_offsets.<id>")
    publish_rate_hz: float = param_field(50.0, "rate of /modules/states [Hz, node clock]",
                                         0.1, 1000.0, start_only=True)
    use_header_stamp: bool = param_field(
        True, "use the samples' header stamps as sample times (else the reception time)")
    scenario: str = param_field(
        "", "scenario YAML whose modules are tracked when module_ids is empty",
        start_only=True)
    diagnostics_period_s: float = param_field(
        1.0, "period of the rate / no-data checks [s, wall time]", 0.05, 60.0,
        start_only=True)

    def validate(self) -> None:
        """Raise :class:`MocapError` naming the field: out of range, unknown source, a topic
        format without ``{id}``, a malformed transform."""
        check_ranges(self)
        if self.source not in SOURCES:
            raise MocapError(f"source: {self.source!r} is not one of {', '.join(SOURCES)}",
                             field="source")
        for name in ("vicon_topic_format", "vrpn_topic_format"):
            if "{id}" not in getattr(self, name):
                raise MocapError(f"{name}: {getattr(self, name)!r} must contain {{id}}",
                                 field=name)
        for name in ("mocap_to_world", "marker_offset"):
            RigidTransform.from_xyzrpy(getattr(self, name), name)
