"""The ``Assemble`` goal of ``smores-assemble run``: send it, let the user approve the plan
(``--approve``), show progress, and cancel it on Ctrl-C or time-out."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from smores_assembly.run_job.console import (ProgressPrinter, StackPlanNote, ask,
                                             print_plan, say)

#: Wall-clock waits of the goal conversation [s].
SERVER_WAIT_S = 60.0
#: Longest wait [s wall] for the nodes that other computers run to be discovered.
REMOTE_WAIT_S = 120.0
ANSWER_WAIT_S = 30.0
APPROVAL_WAIT_S = 60.0
CANCEL_WAIT_S = 5.0
#: Longest wait [s wall] for the fake hardware's connections to show what the result says.
RESULT_CONNECTIONS_WAIT_S = 15.0
#: Wall-clock wait for task_assignment's latched plan at the approval prompt [s].
PLAN_WAIT_S = 5.0


@dataclass
class GoalOutcome:
    """``result``: the ``Assemble.Result`` (None when none arrived); ``error``: why the run
    stopped early ("" when it was not stopped by this side)."""

    result: Any = None  # a generated message: untyped
    error: str = ""
    #: the user answered no at the ``--approve`` prompt: the goal was cancelled before
    #: any module moved
    declined: bool = False
    #: the stack's plan was seen during the run (its assignment note, if any, was said)
    plan_seen: bool = False


def _result(res_future) -> Any:
    """The ``Assemble.Result`` of a done ``get_result_async()`` future (None: no response)."""
    response = res_future.result()
    return response.result if response is not None else None


def run_goal(observer, interrupted, scenario, plan, approve: bool,
             timeout: float, remote: tuple[str, ...] = ()) -> GoalOutcome:
    """Run one ``Assemble`` goal through ``observer`` (:class:`ObserverNode`) to its end.

    ``timeout``: wall-clock limit of the assembly [s]; ``interrupted``: the event set by
    Ctrl-C or SIGTERM (its ``what``, if it has one, names it in the error:
    :class:`~smores_assembly.run_job.stack.InterruptEvent`); ``remote``: nodes of the stack
    that other computers run (waited for, up to :data:`REMOTE_WAIT_S`, before the goal is
    sent). Never raises for a failure of the stack: it is returned as ``error``.
    """
    from std_srvs.srv import Trigger
    from rclpy.action import ActionClient

    from smores_assembly.action import Assemble
    from smores_assembly.ros import names
    from smores_assembly.ros.convert import scenario_to_target_msg
    from smores_assembly.ros.goals import GoalTracker

    node, spin_until, stop = observer.node, observer.spin_until, observer.stop
    client: ActionClient = ActionClient(node, Assemble, names.ASSEMBLE)
    # follows the goal through its status topic too: a goal response or result response
    # lost right after discovery does not lose the goal (ros/goals.py)
    tracker = GoalTracker(node, client, Assemble, names.ASSEMBLE)
    out = GoalOutcome()
    goal_handle = None
    try:
        if remote:
            say(f"waiting for {', '.join(remote)} (other computers) ...")
            if not spin_until(lambda: not observer.missing_nodes(remote), REMOTE_WAIT_S):
                raise RuntimeError(
                    f"node(s) expected from other computers not discovered within "
                    f"{REMOTE_WAIT_S:.0f} s: {', '.join(observer.missing_nodes(remote))} "
                    f"(same ROS_DOMAIN_ID and namespace there? discovery: README "
                    f"'Running on several computers')")
            say(f"found {', '.join(remote)}")
        if not spin_until(lambda: client.server_is_ready(), SERVER_WAIT_S):
            raise RuntimeError("the executive's /assembly/assemble action did not come up "
                               f"within {SERVER_WAIT_S:.0f} s")
        # nothing moves before the goal: wait until every topic the report is made of is
        # matched, so that the report and timeline start with the first phase
        if not spin_until(lambda: not observer.unmatched_topics(), SERVER_WAIT_S):
            say(f"warning: no publisher matched on {', '.join(observer.unmatched_topics())} "
                f"within {SERVER_WAIT_S:.0f} s: the report may miss what is sent there")
        goal = Assemble.Goal(target=scenario_to_target_msg(scenario),
                             require_approval=bool(approve),
                             reconfigure=bool(scenario.initial_connections),
                             full_disassembly=getattr(plan, "method", "") == "full")
        state: dict[str, Any] = {"fb": None}
        goal_handle = tracker.send(goal, spin_until, ANSWER_WAIT_S,
                                   feedback_callback=lambda f: state.__setitem__(
                                       "fb", f.feedback))
        if goal_handle is None:
            raise RuntimeError(f"the Assemble goal was not answered within "
                               f"{ANSWER_WAIT_S:.0f} s")
        if not goal_handle.accepted:
            raise RuntimeError("the Assemble goal was rejected (is another assembly running?)")
        res_future = tracker.request_result(goal_handle)
        plan_note = StackPlanNote(plan, lambda: _read_plan(observer.obs.stack_plan))
        if approve and not _approve(node, spin_until, state, res_future, goal_handle, plan,
                                    Trigger, stop, lambda: observer.obs.stack_plan,
                                    plan_note):
            out.declined = True
            out.error = "plan not approved: goal cancelled before any module moved"
            # said once here (the verdict line's NOT APPROVED does not repeat it)
            say("plan not approved: cancelling the goal (no module moved) and shutting "
                "the nodes down ...")
        # every status as it is recorded, up to the observer's end (also those that come
        # after the result, before the report is written): the report's phases, each at
        # its time (sampled here every 0.5 s of wall time, the lines missed short phases)
        observer.obs.status_listeners.append(ProgressPrinter(
            len(plan.stages), plan_note, observer.obs.recorder,
            lambda: state["fb"]).on_status)
        deadline = time.monotonic() + timeout
        while not res_future.done() and not stop.is_set():
            if time.monotonic() > deadline:
                out.error = (f"timed out: the assembly ran longer than --timeout "
                             f"{timeout:.0f} s of wall time")
                break
            spin_until(res_future.done, 0.5)
            res_future = tracker.retry_result(goal_handle, res_future)
        if res_future.done():
            out.result = _result(res_future)
        elif goal_handle is not None:
            # Ctrl-C or timeout: cancel the goal (the executive stops every module) and wait
            # for its result, even if Ctrl-C is pressed again.
            cancel = goal_handle.cancel_goal_async()
            spin_until(cancel.done, CANCEL_WAIT_S, interruptible=False)
            spin_until(res_future.done, CANCEL_WAIT_S, interruptible=False)
            res_future = tracker.retry_result(goal_handle, res_future)
            spin_until(res_future.done, CANCEL_WAIT_S, interruptible=False)
            if res_future.done():
                out.result = _result(res_future)
            if interrupted.is_set():
                by = getattr(interrupted, "what", "Ctrl-C")
                out.error = (f"interrupted ({by}) at the approval prompt: goal cancelled "
                             "before any module moved"
                             if out.declined or state.get("unanswered") else
                             f"interrupted ({by}): assembly cancelled, every module stopped")
        # Let the last ground truth / connections arrive: wait until the fake hardware's
        # connections seen here include every connection the result reports (an event,
        # not a fixed delay: on a loaded machine the latched message can come late).
        if out.result is not None:
            spin_until(lambda: _has_connections(observer.obs.connections,
                                                out.result.connections),
                       RESULT_CONNECTIONS_WAIT_S, interruptible=False)
        t_end = time.monotonic() + 0.2
        spin_until(lambda: time.monotonic() > t_end, 1.0, interruptible=False)
        out.plan_seen = plan_note.seen
    except RuntimeError as exc:
        out.error = out.error or (
            f"interrupted ({getattr(interrupted, 'what', 'Ctrl-C')}) before the assembly "
            "started" if interrupted.is_set() else str(exc))
    return out


def _has_connections(connections_msg, reported) -> bool:
    """True when the observed ``ConnectionArray`` holds every connection in ``reported``
    (a sequence of ``Connection`` messages, as in the Assemble result)."""
    from smores_assembly.run_job.results import connection_key
    want = {connection_key(c.module_a, c.face_a, c.module_b, c.face_b) for c in reported}
    if not want:
        return True
    if connections_msg is None:
        return False
    have = {connection_key(c.module_a, c.face_a, c.module_b, c.face_b)
            for c in connections_msg.connections}
    return want <= have


def _read_plan(msg):
    """The :class:`~smores_assembly.planning.Plan` of an ``AssemblyPlan`` message (None:
    no message, or one that cannot be read)."""
    if msg is None:
        return None
    from smores_assembly.errors import InputError
    from smores_assembly.ros.convert import msg_to_plan
    try:
        return msg_to_plan(msg)
    except InputError:
        return None


def _approve(node, spin_until, state, res_future, goal_handle, plan, trigger_type,
             stop, stack_plan=lambda: None, plan_note: StackPlanNote | None = None) -> bool:
    """Wait for WAITING_APPROVAL, print the plan and ask; approve through
    ``/assembly/approve`` on "y"/"yes", else cancel the goal. Ctrl-C at the prompt
    (``stop`` set) returns at once: the caller cancels the goal.

    Returns False when the user answered no, True otherwise; ``state["unanswered"]`` is
    set when Ctrl-C came at the prompt (nothing moved).
    """
    spin_until(lambda: state["fb"] is not None and state["fb"].state ==
               "WAITING_APPROVAL" or res_future.done(), APPROVAL_WAIT_S)
    if res_future.done():
        return True
    # show the plan the stack will execute (made from the measured poses), not the one
    # made from the file's poses: a near-tie can assign differently
    spin_until(lambda: stack_plan() is not None, PLAN_WAIT_S)
    shown = plan
    if stack_plan() is not None:
        from smores_assembly.errors import InputError
        from smores_assembly.ros.convert import msg_to_plan
        try:
            shown = msg_to_plan(stack_plan())
        except InputError as exc:
            say(f"warning: the stack's plan could not be read ({exc}); showing the file's")
    print_plan(shown)
    if shown is not plan and plan_note is not None:
        plan_note.check(shown)
    answer = ask("Approve this plan and start moving? [y/N] ", stop)
    if answer is None:   # Ctrl-C at the prompt: nothing has moved
        state["unanswered"] = True
        return True
    if answer.strip().lower() in ("y", "yes"):
        from smores_assembly.ros import names
        cli = node.create_client(trigger_type, names.APPROVE)
        cli.wait_for_service(timeout_sec=10.0)
        fut = cli.call_async(trigger_type.Request())
        spin_until(fut.done, 10.0)
        return True
    goal_handle.cancel_goal_async()
    return False
