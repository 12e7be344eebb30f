"""One dock closed loop in the kinematic world, for the tests that judge docking by the
world (``SimWorld``: the connection formed, collision events) rather than by the
controller: the docking task's commands drive the world, the world's poses feed the task.
"""
from __future__ import annotations

from smores_assembly.docking import DockingSettings, DockingSpec, DockingTask
from smores_assembly.docking.task import PoseSample
from smores_assembly.geometry import Pose2D
from smores_assembly.sim import Connection, SimWorld

#: obstacles the task is told about: modules within this distance [m] of the moving one
OBSTACLE_RANGE = 0.6
#: world step [s]
DT = 0.02


def dock_in_world(poses: dict[str, Pose2D], act, t_max: float = 90.0
                  ) -> tuple[bool, int, int, float]:
    """Run ``act``'s DockingTask (no path: it starts where its module stands in ``poses``)
    in a SimWorld of ``poses`` until done or ``t_max`` [s] simulated.

    Returns:
        (connected, collision events, retries, simulated time at the end [s]).
    """
    world = SimWorld(poses)
    task = DockingTask(DockingSpec(act.module, act.parent_module, act.parent_face,
                                   act.child_face), DockingSettings())
    task.path_unavailable()
    want = Connection.make(act.module, act.child_face, act.parent_module, act.parent_face)
    collisions = 0
    while world.t < t_max and not task.done:
        t = world.t
        samples = {m: PoseSample(p, t) for m, p in world.poses().items()}
        me = world.pose(act.module)
        obs = [(p.x, p.y) for m, p in world.poses().items()
               if m not in (act.module, act.parent_module)
               and p.distance_to(me) <= OBSTACLE_RANGE]
        out = task.tick(t, samples, want in world.connections(), None, obs)
        for m, (v, om) in out.cmd.items():
            world.set_cmd_vel(m, v, om)
        for m, faces in out.magnets.items():
            world.set_magnets(m, set(faces))
        collisions += sum(ev.kind == "collision" for ev in world.step(DT))
    return want in world.connections(), collisions, task.retries, world.t
