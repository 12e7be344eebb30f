"""``root_search`` node: root node of the target (the tree centroid, or the node with the
fewest stages that admits a docking order when the centroid does not) and the physical
root module.

Paper: "SMORES-EP, a Modular Robot with Parallel Self-assembly" (Liu, Yim et al.), Sec. IV-A.
A thin adapter over :func:`smores_assembly.planning.search_root`.

Subscribes:
    ``/assembly/target`` (smores_assembly/TargetTopology, latched)
    ``/modules/states`` (smores_assembly/ModuleStateArray), only while a target waits for
    its root: the node subscribes when a target arrives (the latched latest states arrive at
    once) and unsubscribes when the root is published, so that an idle node does not decode
    the 50-100 Hz pose stream
Publishes:
    ``/assembly/root`` (smores_assembly/RootSelection, latched), once per received target,
    as soon as module states are available. ``target_name`` and ``header.stamp`` are copied
    from the target so that consumers can match the two.

An invalid target is logged once as an error and nothing is published. When the target is
valid but the current states cannot serve it (too few tracked modules, a helper not seen),
the node logs a throttled warning and tries again with every new states message.

Parameters: see :class:`smores_assembly.planning.PlanningNodeSettings`
(``config/root_search.yaml``).
"""
from __future__ import annotations

import sys


from smores_assembly.msg import ModuleStateArray, RootSelection, TargetTopology
from smores_assembly.params import node_settings
from smores_assembly.planning import PlanningError, PlanningNodeSettings, search_root
from smores_assembly.ros import names
from smores_assembly.ros.common import (LATCHED_QOS, StatesOnDemandNode, declare_dataclass_params,
                                        node_kwargs, run_node, time_to_sec)
from smores_assembly.ros.convert import (root_to_msg, states_msg_to_poses,
                                         target_msg_to_scenario, validate_target_msg)
from smores_assembly.scenario import ScenarioError


class RootSearchNode(StatesOnDemandNode):
    """Publishes the root selection of every received target (see the module docstring)."""

    def __init__(self, **kwargs):
        super().__init__("root_search", **node_kwargs(kwargs))
        self._no_clock()   # never read: no /clock wake-ups (issue 10)
        settings, = node_settings("root_search")
        self.settings: PlanningNodeSettings = declare_dataclass_params(self, settings)
        self._target: TargetTopology | None = None
        self._states: ModuleStateArray | None = None
        self._pending = False
        self.last_root: RootSelection | None = None
        #: Names of the targets refused as invalid (for introspection and tests).
        self.rejected: list[str] = []
        self._pub = self.create_publisher(RootSelection, names.ROOT, LATCHED_QOS)
        self._states_sub = None
        self.create_subscription(TargetTopology, names.TARGET, self._on_target, LATCHED_QOS)

    def _on_target(self, msg: TargetTopology) -> None:
        try:
            validate_target_msg(msg)
        except ScenarioError as exc:
            self.get_logger().error(f"invalid target {msg.name!r}: {exc}")
            self.rejected.append(msg.name)
            self._target, self._pending = None, False
            self._want_states(False)
            return
        self._target, self._pending = msg, True
        self._want_states(True)
        self._try_compute()

    def _on_states(self, msg: ModuleStateArray) -> None:
        self._states = msg
        if self._pending:
            self._try_compute()

    def _try_compute(self) -> None:
        if self._target is None or self._states is None:
            return
        poses = states_msg_to_poses(self._states, self.settings.tracked_only)
        try:
            scenario = target_msg_to_scenario(self._target, poses)
            root = search_root(scenario)
        except (ScenarioError, PlanningError) as exc:
            self.get_logger().warning(
                f"target {self._target.name!r}: waiting for module states that serve it: "
                f"{exc}", throttle_duration_sec=self.settings.wait_warning_period_s)
            return
        msg = root_to_msg(self._target.name, root, stamp=self._target.header.stamp)
        self._pending = False
        self._want_states(False)
        self.last_root = msg
        self._pub.publish(msg)
        self.get_logger().info(
            f"target {self._target.name!r}: root node {root.node!r} on module "
            f"{root.module!r} at ({root.pose.x:.3f}, {root.pose.y:.3f}, {root.pose.yaw:.3f}), "
            f"from the module states of t={time_to_sec(self._states.header.stamp):.3f} s "
            f"(target of t={time_to_sec(self._target.header.stamp):.3f} s)")


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: RootSearchNode(), args)


if __name__ == "__main__":
    sys.exit(main())
