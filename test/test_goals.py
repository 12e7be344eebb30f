"""GoalTracker (ros/goals.py): a goal whose goal response or result response is lost (as
Fast DDS drops a service response sent before the response writer matched the client, right
after discovery) is still followed to its result through the action's status topic.

The loss is made on purpose: the client's futures for the first answer are swapped for ones
that never complete, while the requests themselves reach a real in-process action server.
"""
from __future__ import annotations

import pytest

from ros_helpers import HANG_S, spin_until

pytestmark = pytest.mark.ros


@pytest.fixture
def server_and_client(ros_context):
    import rclpy
    from rclpy.action import ActionClient, ActionServer
    from rclpy.executors import SingleThreadedExecutor

    from smores_assembly.action import Assemble

    node = rclpy.create_node("goals_test", context=ros_context)
    executed = []

    def execute(handle):
        executed.append(bytes(handle.goal_id.uuid))
        handle.succeed()
        return Assemble.Result(success=True, message=f"done {len(executed)}")

    server = ActionServer(node, Assemble, "assembly/assemble", execute)
    client = ActionClient(node, Assemble, "assembly/assemble")
    ex = SingleThreadedExecutor(context=ros_context)
    ex.add_node(node)
    assert spin_until(ex, client.server_is_ready, HANG_S)
    yield node, client, ex, executed
    server.destroy()
    client.destroy()
    ex.shutdown()
    node.destroy_node()


def _drop_first_answer(obj, method: str):
    """Make ``obj.method``'s first call send its request as usual but return a Future that
    never completes (the answer is lost); later calls are untouched."""
    from rclpy.task import Future
    real = getattr(obj, method)
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(real(*args, **kwargs))
        return Future() if len(calls) == 1 else calls[-1]
    setattr(obj, method, wrapped)
    return calls


def test_lost_goal_and_result_responses_do_not_lose_the_goal(server_and_client):
    from action_msgs.msg import GoalStatus

    from smores_assembly.action import Assemble
    from smores_assembly.ros.goals import GoalTracker

    node, client, ex, executed = server_and_client
    tracker = GoalTracker(node, client, Assemble, "assembly/assemble")
    sent = _drop_first_answer(client, "send_goal_async")
    asked = _drop_first_answer(client, "_get_result_async")

    def spin(pred, timeout):
        return spin_until(ex, pred, timeout)

    handle = tracker.send(Assemble.Goal(), spin, HANG_S)
    assert handle is not None and handle.accepted
    assert executed == [bytes(handle.goal_id.uuid)]   # the server ran exactly this goal
    response = tracker.result(handle, spin, HANG_S)
    assert response is not None, "the result was never fetched again"
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.success and response.result.message == "done 1"
    assert tracker.status(handle) == GoalStatus.STATUS_SUCCEEDED
    assert len(sent) == 1 and len(asked) == 2   # one goal, the result asked twice


def test_answered_goal_uses_the_response(server_and_client):
    from action_msgs.msg import GoalStatus

    from smores_assembly.action import Assemble
    from smores_assembly.ros.goals import GoalTracker

    node, client, ex, executed = server_and_client
    tracker = GoalTracker(node, client, Assemble, "assembly/assemble")

    def spin(pred, timeout):
        return spin_until(ex, pred, timeout)

    for i in (1, 2):
        handle = tracker.send(Assemble.Goal(), spin, HANG_S)
        assert handle is not None and handle.accepted
        response = tracker.result(handle, spin, HANG_S)
        assert response.status == GoalStatus.STATUS_SUCCEEDED
        assert response.result.message == f"done {i}"
    assert len(executed) == 2 and executed[0] != executed[1]
