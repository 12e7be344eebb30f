"""The Gazebo (gz-sim) path: what to spawn and what to bridge for a scenario (no ROS imports).

``launch/gazebo_assembly.launch.yaml`` starts gz-sim on ``description/smores_world.sdf`` and
``gazebo_spawn`` (:mod:`smores_assembly.ros.gazebo_spawn`), which spawns one
``description/smores_ep.urdf`` per scenario module with ``ros_gz_sim create`` and runs one
``ros_gz_bridge parameter_bridge`` with :func:`bridge_config`:

* ``/<id>/cmd_vel`` (geometry_msgs/Twist, ROS -> gz ``/model/<id>/cmd_vel``, the URDF's
  DiffDrive system);
* the module's pose (gz ``/model/<id>/pose``, PosePublisher system -> ROS
  geometry_msgs/PoseStamped on the mocap topic, by default vicon_receiver's
  ``/vicon/<id>/<id>``), so that ``mocap_bridge`` and everything above it run unchanged;
* ``/clock`` (gz -> ROS rosgraph_msgs/Clock) for ``use_sim_time``.

EP magnets, helpers' LIFT and the fake hardware's connections/collisions topics are not
modelled on gz-sim (there is no EP-magnet system): modules drive and are tracked, docks do
not latch. Not run on this project's machines (Gazebo is not installable here).
"""
from __future__ import annotations

from pathlib import Path

from smores_assembly.errors import InputError
from smores_assembly.geometry import Pose2D


def bridge_config(modules: list[str], mocap_topic_format: str = "/vicon/{id}/{id}",
                  world: str = "smores") -> list[dict]:
    """``ros_gz_bridge`` YAML config entries (``config_file`` format) for ``modules``.

    Raises:
        InputError: ``mocap_topic_format`` without ``{id}``, or no modules.
    """
    if "{id}" not in mocap_topic_format:
        raise InputError(f"mocap_topic_format: {mocap_topic_format!r} must contain {{id}}",
                         field="mocap_topic_format")
    if not modules:
        raise InputError("modules: at least one module is needed", field="modules")
    out = [{"ros_topic_name": "/clock", "gz_topic_name": "/clock",
            "ros_type_name": "rosgraph_msgs/msg/Clock", "gz_type_name": "gz.msgs.Clock",
            "direction": "GZ_TO_ROS"}]
    for m in modules:
        out.append({"ros_topic_name": f"/{m}/cmd_vel", "gz_topic_name": f"/model/{m}/cmd_vel",
                    "ros_type_name": "geometry_msgs/msg/Twist",
                    "gz_type_name": "gz.msgs.Twist", "direction": "ROS_TO_GZ"})
        out.append({"ros_topic_name": mocap_topic_format.replace("{id}", m),
                    "gz_topic_name": f"/model/{m}/pose",
                    "ros_type_name": "geometry_msgs/msg/PoseStamped",
                    "gz_type_name": "gz.msgs.Pose", "direction": "GZ_TO_ROS"})
    return out


def spawn_arguments(modules: dict[str, Pose2D], urdf: str | Path, world: str = "smores",
                    z: float = 0.04) -> list[list[str]]:
    """Arguments of ``ros_gz_sim create`` for each module: the URDF at its planar pose,
    raised to ``z`` [m] (the wheel axle height: the wheels touch the floor)."""
    return [["-world", world, "-file", str(urdf), "-name", m,
             "-x", f"{p.x:.6f}", "-y", f"{p.y:.6f}", "-z", f"{z:.6f}", "-Y", f"{p.yaw:.6f}"]
            for m, p in modules.items()]
