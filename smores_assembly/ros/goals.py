"""An action client that does not lose a goal whose service response is lost.

Right after discovery, an action server can receive a goal before its service *response*
writer has matched the client's reader. Fast DDS then drops the response ("failed to send
response (timeout): client will not receive response") although the goal was accepted and
runs: a client that waits only for the response waits forever. The same can happen to the
``get_result`` response of a goal that ends at once (e.g. an invalid target).

The action's status topic (``<action>/_action/status``, latched) lists every accepted goal.
:class:`GoalTracker` watches it, so that an accepted goal is known with or without its
response (the goal handle is then made from its id), and a goal that reached a terminal
state without its result answered has its ``get_result`` request sent again (results stay
on the server for its result timeout, 15 min by default).
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Optional

#: Wall time [s] after a terminal status without a result answer before ``get_result``
#: is asked again (a retry interval, not a synchronisation: the status is the event).
RESULT_RETRY_S = 2.0

SpinUntil = Callable[[Callable[[], bool], float], bool]


class GoalTracker:
    """Send goals through ``client`` (an ``rclpy.action.ActionClient`` of ``node``) and
    follow them through the action's status topic as well as the service responses.

    ``action_name``: the name the client was made with (relative names resolve in the
    node's namespace, as the client's do).
    """

    def __init__(self, node, client, action_type, action_name: str):
        from action_msgs.msg import GoalStatusArray
        from rclpy.qos import qos_profile_action_status_default

        self._client, self._type = client, action_type
        self._status: dict[bytes, int] = {}
        self._terminal_since: dict[bytes, float] = {}
        self._asked: dict[bytes, float] = {}
        self._sub = node.create_subscription(
            GoalStatusArray, f"{action_name}/_action/status", self._on_status,
            qos_profile_action_status_default)

    def _on_status(self, msg) -> None:
        from action_msgs.msg import GoalStatus
        terminal = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_CANCELED,
                    GoalStatus.STATUS_ABORTED)
        for s in msg.status_list:
            key = bytes(s.goal_info.goal_id.uuid)
            self._status[key] = s.status
            if s.status in terminal:
                self._terminal_since.setdefault(key, time.monotonic())

    def status(self, handle) -> Optional[int]:
        """The last ``GoalStatus`` code the server published for ``handle``'s goal (None:
        not seen)."""
        return self._status.get(bytes(handle.goal_id.uuid))

    def send(self, goal, spin_until: SpinUntil, timeout: float,
             feedback_callback: Optional[Callable[[Any], None]] = None):
        """Send ``goal``; return its ``ClientGoalHandle`` once the server answered or its
        status topic lists the goal (then ``accepted`` is True), or None when neither
        happened within ``timeout`` [s, wall]. ``spin_until(pred, timeout)`` spins the
        node's executor until ``pred()`` holds."""
        from rclpy.action.client import ClientGoalHandle
        from unique_identifier_msgs.msg import UUID

        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        key = bytes(goal_id.uuid)
        send = self._client.send_goal_async(goal, feedback_callback=feedback_callback,
                                            goal_uuid=goal_id)
        spin_until(lambda: send.done() or key in self._status, timeout)
        if send.done():
            return send.result()
        if key in self._status:
            response = self._type.Impl.SendGoalService.Response(accepted=True)
            return ClientGoalHandle(self._client, goal_id, response)
        return None

    def result(self, handle, spin_until: SpinUntil, timeout: float):
        """Wait up to ``timeout`` [s, wall] for the result of the accepted goal ``handle``;
        returns the ``GetResult`` response (``.status``, ``.result``) or None. The request
        is sent again when the status says the goal ended but no answer came within
        :data:`RESULT_RETRY_S`."""
        fut = self.request_result(handle)
        deadline = time.monotonic() + timeout
        while not fut.done() and time.monotonic() < deadline:
            spin_until(fut.done, min(RESULT_RETRY_S, max(deadline - time.monotonic(), 0.0)))
            fut = self.retry_result(handle, fut)
        return fut.result() if fut.done() else None

    def request_result(self, handle):
        """``handle.get_result_async()``, remembering when it was asked."""
        self._asked[bytes(handle.goal_id.uuid)] = time.monotonic()
        return handle.get_result_async()

    def retry_result(self, handle, fut):
        """``fut``, or a new ``get_result`` future when the goal ended (per the status
        topic) more than :data:`RESULT_RETRY_S` ago and ``fut`` has had as long without an
        answer. Call it while waiting for a result."""
        if fut.done():
            return fut
        key = bytes(handle.goal_id.uuid)
        ended = self._terminal_since.get(key)
        now = time.monotonic()
        asked = self._asked.get(key, now)
        if ended is not None and now - ended > RESULT_RETRY_S and now - asked > RESULT_RETRY_S:
            return self.request_result(handle)
        return fut

    def destroy(self, node) -> None:
        node.destroy_subscription(self._sub)
