"""The stack's ROS names: every topic, service and action, in one table (no ROS imports).

Names are **relative**: each node resolves them in its own namespace, so a whole stack
started under a namespace (``namespace:=/swarm1`` in the launch files, ``__ns`` remapping)
talks only to itself, and any name can be remapped. At the root namespace they resolve to
the names in README's topic table (``modules/states`` -> ``/modules/states``).

Per-module topics are ``<id>/<name>`` (:func:`module_topic`), e.g. ``m3/cmd_vel``. The mocap
drivers' topics are formats with ``{id}`` (:data:`VICON_FORMAT`, :data:`VRPN_FORMAT`);
a driver that runs outside the stack's namespace is reached by giving the mocap bridge an
absolute format (``vicon_topic_format: /vicon/{id}/{id}``).

One name stays absolute: :data:`CLOCK`, because ROS's time source (``use_sim_time``) listens
on ``/clock`` whatever the namespace. The launch files (and ``smores-assemble run``'s own
node) remap it to the relative ``clock`` (``-r /clock:=clock``), so a stack under
``/swarm1`` keeps its simulated time on ``/swarm1/clock`` and two fake-hardware stacks share
one ROS domain; at the root it stays ``/clock``.
"""
from __future__ import annotations

import functools

# --- topics --------------------------------------------------------------------------------
#: ModuleStateArray from mocap_bridge.
STATES = "modules/states"
#: TargetTopology (latched) from the executive.
TARGET = "assembly/target"
#: RootSelection (latched) from root_search.
ROOT = "assembly/root"
#: AssemblyPlan (latched) from task_assignment.
PLAN = "assembly/plan"
#: std_msgs/Int32 (latched) from the executive; -1: every module stops.
ACTIVE_STAGE = "assembly/active_stage"
#: DockingStatusArray from docking_controller.
DOCKING_STATUS = "assembly/docking_status"
#: MarkerArray (latched, ns ``paths``) from navigation.
MARKERS = "assembly/markers"
#: MarkerArray (latched, modules, labels, goals, connections) from the executive.
MODULE_MARKERS = "assembly/markers/modules"
#: ConnectionArray (latched) from fake_hardware.
CONNECTIONS = "fake_hardware/connections"
#: CollisionEvent from fake_hardware.
COLLISIONS = "fake_hardware/collisions"
#: ModuleStateArray (exact poses) from fake_hardware.
GROUND_TRUTH = "fake_hardware/ground_truth"
#: CmdVelArray, docking_controller -> fake_hardware in lockstep: a turn's cmd_vel commands.
CMD_VEL_BATCH = "fake_hardware/cmd_vel"
#: rosgraph_msgs/Clock from fake_hardware: absolute (see the module docstring).
CLOCK = "/clock"
#: std_srvs/Trigger, fake_hardware: the run's trace (SHA-256 of poses and commands per step)
TRACE_SERVICE = "fake_hardware/trace"
#: Lockstep (smores_assembly.ros.lockstep): answers of the participants, and each one's turns
LOCKSTEP_ACK = "lockstep/ack"
LOCKSTEP_TURN = "lockstep/turn"

# --- per-module topics: module_topic(id, ...) ----------------------------------------------
CMD_VEL = "cmd_vel"                    #: geometry_msgs/Twist, docking_controller -> module
MAGNETS = "magnets"                    #: MagnetCommand, docking_controller -> module
JOINT_COMMANDS = "joint_commands"      #: sensor_msgs/JointState, docking_controller -> module
HELPER_COMMAND = "helper_command"      #: HelperCommand, docking_controller -> helper
JOINT_STATES = "joint_states"          #: sensor_msgs/JointState, module -> all
PATH = "path"                          #: nav_msgs/Path (latched), navigation -> controller

# --- mocap drivers -------------------------------------------------------------------------
#: vicon_receiver's PoseStamped per body ({id} = module id); also fake_hardware's default.
VICON_FORMAT = "vicon/{id}/{id}"
#: vrpn_mocap's PoseStamped per body.
VRPN_FORMAT = "vrpn_mocap/{id}/pose"
#: mocap4r2's RigidBodies.
MOCAP4R2 = "rigid_bodies"
#: smores_assembly/ModuleStateArray, one per capture frame (the bodies seen): the fake
#: hardware's batched mocap (``mocap_format: frame``), read by the bridge's ``frame`` source.
MOCAP_FRAME = "fake_hardware/mocap"

# --- services and actions ------------------------------------------------------------------
#: smores_assembly/action/Assemble, served by the executive.
ASSEMBLE = "assembly/assemble"
#: std_srvs/Trigger: approve a plan (require_approval).
APPROVE = "assembly/approve"
#: std_srvs/Trigger: cancel the assembly, every module stops.
CANCEL = "assembly/cancel"
#: std_srvs/Trigger: replan the active stage's paths from the current poses.
REPLAN = "navigation/replan"


#: The stack's own names (not a module's): their first tokens are the stack's namespaces.
STACK_NAMES = (STATES, TARGET, ROOT, PLAN, ACTIVE_STAGE, DOCKING_STATUS, MARKERS, MODULE_MARKERS,
               CONNECTIONS, COLLISIONS, GROUND_TRUTH, CMD_VEL_BATCH, CLOCK, TRACE_SERVICE,
               LOCKSTEP_ACK, LOCKSTEP_TURN, VICON_FORMAT, VRPN_FORMAT, MOCAP4R2, MOCAP_FRAME,
               ASSEMBLE, APPROVE, CANCEL, REPLAN)


@functools.lru_cache(maxsize=None)
def reserved_module_ids() -> frozenset[str]:
    """Ids a module may not have: the first token of every name in :data:`STACK_NAMES`
    (``assembly``, ``fake_hardware``, ``modules``, ...) and the stack's node names. A
    module's topics are ``<id>/<name>`` (:func:`module_topic`), so such an id puts them among
    the stack's own: a module named ``fake_hardware`` gave ``fake_hardware/cmd_vel`` two
    types, and the fake hardware failed at start (a fresh-user finding)."""
    from smores_assembly.entry import NODES   # no ROS imports there either
    return frozenset({n.strip("/").split("/")[0] for n in STACK_NAMES} | set(NODES))


def module_topic(module_id: str, name: str) -> str:
    """Per-module topic, relative: ``module_topic('m3', CMD_VEL) == 'm3/cmd_vel'``."""
    return f"{module_id}/{name}"


def mocap_topic(fmt: str, module_id: str) -> str:
    """A mocap topic format (``{id}`` = module id) filled in for ``module_id``."""
    return fmt.replace("{id}", module_id)


def resolve(namespace: str, name: str) -> str:
    """The absolute name ``name`` resolves to in ``namespace`` (as rcl does for a node
    there; absolute names are unchanged): ``resolve('/swarm1', STATES) ==
    '/swarm1/modules/states'``, ``resolve('', STATES) == '/modules/states'``."""
    if name.startswith("/"):
        return name
    ns = "/" + namespace.strip("/")
    return (ns.rstrip("/") + "/" + name) if ns != "/" else "/" + name
