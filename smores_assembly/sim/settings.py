"""Settings of the ``fake_hardware`` node besides the physics (no ROS imports).

The physics tunables are :class:`smores_assembly.sim.SimParams`; the node
(:mod:`smores_assembly.ros.fake_hardware`) declares both as ROS parameters.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from smores_assembly.errors import ParamsError
from smores_assembly.geometry import WORLD_FRAME
from smores_assembly.params import check_ranges, param_field
from smores_assembly.ros.names import MOCAP_FRAME, VICON_FORMAT


#: Lockstep participants of the fake stack in turn order: the bridge turns the step's mocap
#: samples into states, the executive sequences, the navigation plans, the controller
#: commands.
DEFAULT_PARTICIPANTS = ["mocap_bridge", "executive", "navigation", "docking_controller"]
#: Formats of the simulated mocap output (``mocap_format``).
MOCAP_FORMATS = ("vicon", "frame")


def check_common_parameters(values: Mapping[str, Any]) -> None:
    """The fake hardware's rule on the parameters rclpy declares on every node
    (``values``: name -> value, those given; see :data:`smores_assembly.params.COMMON_CHECKS`):
    it is the time source (it publishes ``/clock``), so ``use_sim_time`` must be false.

    Raises:
        ParamsError: ``use_sim_time`` true (field ``use_sim_time``).
    """
    if values.get("use_sim_time"):
        raise ParamsError("use_sim_time: fake_hardware is the time source (it publishes "
                          "/clock); it must run with use_sim_time:=false",
                          field="use_sim_time")


@dataclass
class FakeHardwareSettings:
    """Tunables of the fake hardware node besides the physics (:class:`SimParams`)."""

    scenario: str = param_field("", "path of the scenario YAML (modules' initial poses, "
                                    "helpers)", start_only=True)
    physics_rate_hz: float = param_field(100.0, "physics step rate [Hz, simulated time]",
                                         1.0, 10000.0)
    mocap_rate_hz: float = param_field(100.0, "mocap sample rate [Hz, simulated time]",
                                       0.1, 10000.0)
    mocap_noise_std_m: float = param_field(0.0, "mocap position noise std (x, y, z) [m]",
                                           0.0, 0.1)
    mocap_noise_std_rad: float = param_field(0.0, "mocap yaw noise std [rad]", 0.0, 1.0)
    dropout_probability: float = param_field(
        0.0, "probability that a mocap sample of a module is not published", 0.0, 1.0)
    latency_s: float = param_field(0.0, "mocap latency: publish delay of a sample [s]",
                                   0.0, 5.0)
    real_time_factor: float = param_field(
        1.0, "simulated seconds per wall second (0: as fast as possible)", 0.0, 1000.0)
    publish_clock: bool = param_field(True, "publish /clock (simulated time)")
    mocap_topic_format: str = param_field(
        VICON_FORMAT, "mocap topic per module; {id} is replaced by the module id",
        start_only=True)
    mocap_frame_id: str = param_field(WORLD_FRAME, "frame_id of the mocap poses",
                                      start_only=True)
    mocap_format: str = param_field(
        "vicon", "mocap output: vicon (one geometry_msgs/PoseStamped per body and sample on "
        "mocap_topic_format, as vicon_receiver) | frame (one ModuleStateArray per sample on "
        "mocap_frame_topic with the bodies seen, as a driver that sends whole capture frames, "
        "e.g. mocap4r2's RigidBodies: one message instead of one per body)", start_only=True)
    mocap_frame_topic: str = param_field(
        MOCAP_FRAME, "topic of the mocap frames (mocap_format frame)", start_only=True)
    cmd_vel_timeout_s: float = param_field(
        0.5, "a cmd_vel older than this is treated as zero [s, simulated time]", 0.001, 1e6)
    ground_truth_rate_hz: float = param_field(
        50.0, "rate of /fake_hardware/ground_truth [Hz, simulated time]", 0.1, 10000.0)
    joint_state_rate_hz: float = param_field(
        20.0, "rate of /<id>/joint_states [Hz, simulated time]", 0.1, 10000.0)
    max_tick_wall_s: float = param_field(
        0.005, "longest wall time spent stepping before callbacks are serviced again [s]",
        0.0001, 1.0)
    random_seed: int = param_field(0, "seed of the mocap noise and dropout generator",
                                   0, 2**31 - 1, start_only=True)
    backend: str = param_field(
        "kinematic", "physics of the simulated world: kinematic (smores_assembly.sim.SimWorld, "
        "the controllers' own model) or mujoco (rigid bodies, "
        "smores_assembly.sim.mujoco_world)", start_only=True)
    lockstep: bool = param_field(
        False, "step only when every lockstep participant has answered the last step "
               "(deterministic); false: free-running on the wall clock", start_only=True)
    lockstep_participants: list = param_field(
        list(DEFAULT_PARTICIPANTS), "lockstep: node names of the participants, in turn order",
        start_only=True)
    lockstep_settle_s: float = param_field(
        0.5, "lockstep: wall time between the last participant's hello and the first step "
             "(endpoint discovery) [s]", 0.0, 60.0)
    lockstep_clock_rate_hz: float = param_field(
        10.0, "lockstep: rate of /clock [Hz, simulated time] (participants take their time "
              "from the turns; /clock only serves the other nodes and tools)", 0.1, 10000.0)
    lockstep_count_timeout_s: float = param_field(
        30.0, "lockstep: wall time to wait for commands announced but not received, with "
              "their publishers matched, before stepping without them (with a warning; no "
              "bound while a publisher is not matched) [s]", 0.1, 3600.0)
    lockstep_chain_turns: bool = param_field(
        True, "lockstep: chained turns (a participant hands the next one of the step its "
              "turn, with its answer, when nobody in between can be woken; same turns and "
              "trace, one fake-hardware wake-up less); false: every turn from and every "
              "answer to the fake hardware")

    def validate(self) -> None:
        """Raise :class:`~smores_assembly.errors.ParamsError` naming the field: a value out
        of range, an unknown ``backend`` or ``mocap_format``, a ``mocap_topic_format`` without
        ``{id}``, or
        (with ``lockstep``) repeated or empty ``lockstep_participants``."""
        check_ranges(self)
        from smores_assembly.sim.backend import BACKENDS  # noqa: PLC0415
        if self.backend not in BACKENDS:
            raise ParamsError(f"backend: {self.backend!r} is not one of {', '.join(BACKENDS)}",
                              field="backend")
        if self.mocap_format not in MOCAP_FORMATS:
            raise ParamsError(f"mocap_format: {self.mocap_format!r} is not one of "
                              f"{', '.join(MOCAP_FORMATS)}", field="mocap_format")
        if "{id}" not in self.mocap_topic_format:
            raise ParamsError(f"mocap_topic_format: {self.mocap_topic_format!r} must contain "
                              "{id}", field="mocap_topic_format")
        if self.lockstep:
            from smores_assembly.sim.lockstep import LockstepSchedule  # noqa: PLC0415
            try:
                LockstepSchedule([str(n) for n in self.lockstep_participants])
            except ValueError as exc:
                raise ParamsError(str(exc), field="lockstep_participants") from None
