"""Handling of ``Assemble`` goals: the executive's logic without ROS (pure Python).

:class:`GoalRunner` owns the executive's goal slot (at most one goal at a time), the goal's
cancel and approval state, and runs one goal from its target to its outcome:

1. wait for tracked module states, convert the target and plan it locally (an invalid
   target or an impossible plan ends the goal before anything moves);
2. publish the target and wait for the pipeline's plan;
3. with ``require_approval`` wait for :meth:`GoalRunner.approve`;
4. sequence the stages with :class:`~smores_assembly.sequencer.StageSequencer`.

Contract (the executive node relies on it):

* :meth:`GoalRunner.execute` always returns an :class:`Outcome` (a code and a message) and
  always leaves the slot free, whatever raises inside the goal handling (code
  :attr:`ErrorCode.INTERNAL`, the exception named in the message);
* a cancel is a state of the goal from the moment it is asked for (:meth:`request_cancel`,
  also between acceptance and execution); a cancel while no goal is held is refused with
  the reason, never silently "accepted";
* a target with no edge (one node) is assembled at once: nothing has to move.

The graph is reached through a :class:`GoalPort` (the ROS node implements it; the unit
tests use a plain-Python fake), so every branch is testable without a ROS graph.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from smores_assembly.errors import InputError, SmoresError
from smores_assembly.geometry import Pose2D
from smores_assembly.sequencer import ExecutiveSettings, SeqState, StageSequencer
from smores_assembly.vocabulary import Phase, counted


class ErrorCode(enum.IntEnum):
    """Result codes of the ``Assemble`` action (``Assemble.Result.ERROR_<name>``)."""

    NONE = 0
    INVALID_TARGET = 1
    NO_STATES = 2
    PLANNING = 3
    NAVIGATION = 4
    DOCKING = 5
    CANCELLED = 6
    APPROVAL_TIMEOUT = 7
    INTERNAL = 8


@dataclass
class Outcome:
    """How one goal ended.

    Attributes:
        code: the result code.
        message: one line for the operator.
        elapsed_s: first stage start to last stage end [s, ROS time] (0 when never started).
        plan: the pipeline's plan (the port's own object) when one was received, else None.
    """

    code: ErrorCode
    message: str
    elapsed_s: float = 0.0
    plan: Any = None

    @property
    def success(self) -> bool:
        return self.code is ErrorCode.NONE


@dataclass
class PlanInfo:
    """What the runner needs of a received plan.

    Attributes:
        stages: ``stages[k]`` = moving modules of stage k (may be empty: nothing to dock);
            a reconfiguration's undocking stages come first.
        summary: one line describing the plan (root, docks, cost).
        msg: the port's plan object, handed back in :attr:`Outcome.plan`.
        undocks: how many of the stages' entries are undocking actions (a
            reconfiguration), counted apart from the docks in the outcome's message.
        undock_stages: how many of the first stages are undocking stages (logged as such).
    """

    stages: list[list[str]]
    summary: str
    msg: Any = None
    undocks: int = 0
    undock_stages: int = 0


def _what(info: PlanInfo, stage: int) -> str:
    """The modules of ``stage`` for the log (``undock m4, m5`` in an undocking stage)."""
    names = ", ".join(info.stages[stage])
    return f"undock {names}" if stage < info.undock_stages else names


class GoalPort(Protocol):
    """What goal handling needs from the graph (implemented by the executive node)."""

    def now(self) -> float:
        """Current ROS time [s] (simulated on the fake stack): stage times."""

    def monotonic(self) -> float:
        """Wall monotonic time [s]: timeouts of waits."""

    async def sleep(self, period_s: float) -> None:
        """Let the graph run for ``period_s`` wall seconds without blocking it."""

    def tracked_poses(self) -> Mapping[str, Pose2D] | None:
        """Latest poses of the tracked modules (None before any state arrived)."""

    def target_to_scenario(self, target: Any, poses: Mapping[str, Pose2D]) -> Any:
        """Scenario of ``target`` on ``poses``; raises an ``InputError`` (``ScenarioError``)
        for an invalid one."""

    def plan_locally(self, scenario: Any, poses: Mapping[str, Pose2D]) -> None:
        """Plan ``scenario``; raises a ``SmoresError`` (``PlanningError``) when it cannot be
        planned."""

    def target_name(self, target: Any) -> str:
        """The target's name."""

    def target_modules(self, target: Any) -> tuple[set[str], int]:
        """The modules ``target`` names (its helpers, the modules of its start connections)
        and the least number of modules it needs (its nodes plus its helpers): planning
        waits until the tracked modules cover both."""

    def publish_target(self, target: Any) -> None:
        """Publish the target; :meth:`received_plan` then waits for its plan."""

    def received_plan(self) -> PlanInfo | None:
        """The plan answering the last published target, None while none arrived."""

    def publish_stage(self, stage: int) -> None:
        """Publish the active stage (-1: every module stops)."""

    def phases(self, stage: int) -> dict[str, Phase]:
        """Docking phase per module as last reported for ``stage`` (empty if none)."""

    def feedback(self, state: str, stage: int, num_stages: int, elapsed_s: float) -> None:
        """Publish goal feedback (``stage`` 1-based, 0 before the first stage)."""

    def log(self, level: str, text: str) -> None:
        """Log ``text`` at ``level`` (``info``, ``warn`` or ``error``)."""


@dataclass
class GoalState:
    """State of the goal held by the runner."""

    require_approval: bool = False
    cancel_requested: bool = False
    approved: bool = False
    phase: str = "ACCEPTED"  # ACCEPTED, PLANNING, WAITING_APPROVAL, EXECUTING, DONE


class GoalRunner:
    """The executive's goal slot and goal handling (see the module docstring).

    Args:
        port: the graph (see :class:`GoalPort`).
        settings: timeouts and rates (the node's live settings object: a change applies
            from the next wait on).
        poll_period_s: how often waits look at the graph [s, wall time].
    """

    def __init__(self, port: GoalPort, settings: ExecutiveSettings,
                 poll_period_s: float = 0.05):
        self.port = port
        self.settings = settings
        self.poll_period_s = poll_period_s
        self.goal: GoalState | None = None

    @property
    def busy(self) -> bool:
        """True while a goal holds the slot (from acceptance to its outcome)."""
        return self.goal is not None

    # --- requests ---------------------------------------------------------------------------
    def accept(self, require_approval: bool = False) -> tuple[bool, str]:
        """Take the slot for a new goal; refused (False, reason) while another holds it."""
        if self.goal is not None:
            return False, f"an assembly goal is already running ({self.goal.phase})"
        self.goal = GoalState(require_approval=bool(require_approval))
        return True, "accepted"

    def request_cancel(self) -> tuple[bool, str]:
        """Mark the held goal cancelled (it ends CANCELLED, every module stopped).

        Returns:
            (True, message) when a goal is held (also when its cancel was already asked),
            (False, "nothing to cancel ...") when no goal is held.
        """
        g = self.goal
        if g is None:
            return False, "nothing to cancel: no assembly goal is running"
        if g.cancel_requested:
            return True, "cancel already requested: every module stops"
        g.cancel_requested = True
        self.port.publish_stage(-1)
        return True, "cancel requested: every module stops"

    def approve(self) -> tuple[bool, str]:
        """Approve the held goal's plan; refused with the reason when there is nothing to
        approve. An approval that arrives before the plan is kept for it."""
        g = self.goal
        if g is None:
            return False, "no assembly is waiting for approval"
        if not g.require_approval:
            return False, "the running assembly does not require approval"
        if g.cancel_requested:
            return False, "the assembly is being cancelled"
        if g.phase not in ("ACCEPTED", "PLANNING", "WAITING_APPROVAL"):
            return False, f"the assembly is already {g.phase.lower()}"
        g.approved = True
        return True, "approved"

    # --- execution --------------------------------------------------------------------------
    async def execute(self, target: Any) -> Outcome:
        """Run the held goal (taken with :meth:`accept`) to its outcome; frees the slot.

        Never raises (except ``BaseException`` such as ``KeyboardInterrupt``): an
        exception inside goal handling becomes ``Outcome(INTERNAL, ...)``.
        """
        if self.goal is None:
            self.goal = GoalState()
        goal = self.goal
        outcome: Outcome | None = None
        try:
            outcome = await self._run(goal, target)
        except Exception as exc:  # noqa: BLE001 - the contract: every goal gets a result
            outcome = Outcome(ErrorCode.INTERNAL,
                              f"internal error in goal handling: {type(exc).__name__}: {exc}")
        finally:
            goal.phase = "DONE"
            self.goal = None
            try:
                if outcome is None or not outcome.success:
                    self.port.publish_stage(-1)
            except Exception:  # noqa: BLE001 - never mask the outcome
                pass
        try:
            # a cancel is what someone asked for (Ctrl-C, a declined plan): not a failure
            level, what = (("info", "succeeded") if outcome.success else
                           ("info", "ended") if outcome.code is ErrorCode.CANCELLED else
                           ("error", "failed"))
            self.port.log(level, f"assembly {what}: {outcome.message}")
        except Exception:  # noqa: BLE001 - logging never changes the outcome
            pass
        return outcome

    async def _wait(self, predicate: Callable[[], bool], timeout_s: float,
                    goal: GoalState | None = None) -> bool:
        """Wait until ``predicate()`` (True), the goal is cancelled or ``timeout_s`` wall
        seconds pass (False)."""
        deadline = self.port.monotonic() + timeout_s
        while True:
            if predicate():
                return True
            if goal is not None and goal.cancel_requested:
                return False
            if self.port.monotonic() > deadline:
                return False
            await self.port.sleep(self.poll_period_s)

    def _cancelled(self, goal: GoalState, where: str, seq=None, plan=None) -> Outcome:
        if seq is not None:
            seq.cancel(self.port.now())
        self.port.publish_stage(-1)
        return Outcome(ErrorCode.CANCELLED, f"cancelled {where}: every module stopped",
                       seq.elapsed if seq is not None else 0.0, plan)

    async def _run(self, goal: GoalState, target: Any) -> Outcome:
        port, st = self.port, self.settings
        t0 = port.now()
        goal.phase = "PLANNING"
        port.publish_stage(-1)
        if goal.cancel_requested:
            return self._cancelled(goal, "before planning")

        named, least = port.target_modules(target)

        def tracked() -> bool:
            # every module the target names, and at least as many as it needs: the
            # first states of a starting stack can hold only the modules whose mocap
            # topics were matched first (a helper missing there refused the target)
            p = port.tracked_poses()
            return p is not None and len(p) >= max(least, 1) and named <= set(p)

        if not await self._wait(tracked, st.states_timeout_s, goal):
            if goal.cancel_requested:
                return self._cancelled(goal, "before planning")
            p = port.tracked_poses() or {}
            missing = sorted(named - set(p))
            return Outcome(ErrorCode.NO_STATES, (
                f"no tracked module states within {st.states_timeout_s:.1f} s" if not p else
                f"modules not tracked within {st.states_timeout_s:.1f} s: {', '.join(missing)}"
                if missing else
                f"{len(p)} modules tracked within {st.states_timeout_s:.1f} s, the target "
                f"needs {least}"))
        poses = dict(port.tracked_poses() or {})  # not None: waited for above
        try:
            scenario = port.target_to_scenario(target, poses)
        except InputError as exc:
            return Outcome(ErrorCode.INVALID_TARGET, f"invalid target: {exc}")
        try:
            port.plan_locally(scenario, poses)
        except SmoresError as exc:
            return Outcome(ErrorCode.PLANNING, f"cannot plan: {exc}")

        name = port.target_name(target)
        port.publish_target(target)
        port.log("info", f"target '{name}' published; waiting for the plan")
        if not await self._wait(lambda: port.received_plan() is not None, st.plan_timeout_s,
                                goal):
            if goal.cancel_requested:
                return self._cancelled(goal, "while planning")
            return Outcome(ErrorCode.PLANNING, f"no plan within {st.plan_timeout_s:.1f} s")
        info = port.received_plan()
        assert info is not None  # waited for above
        plan = info.msg
        stages = [list(s) for s in info.stages]
        port.log("info", f"plan: {info.summary}")

        if goal.require_approval:
            goal.phase = "WAITING_APPROVAL"
            port.log("info", "waiting for operator approval")
            port.feedback("WAITING_APPROVAL", 0, len(stages), port.now() - t0)
            ok = await self._wait(lambda: goal.approved, st.approval_timeout_s, goal)
            if goal.cancel_requested:
                return self._cancelled(goal, "before approval", plan=plan)
            if not ok:
                return Outcome(ErrorCode.APPROVAL_TIMEOUT,
                               f"no approval within {st.approval_timeout_s:.0f} s", plan=plan)

        goal.phase = "EXECUTING"
        seq = StageSequencer(stages, st.stage_timeout_s)
        stage = seq.start(port.now())
        port.publish_stage(stage)
        if stage >= 0:
            port.log("info", f"stage 1/{seq.num_stages}: {_what(info, 0)}")
        last_fb = None
        while True:
            if goal.cancel_requested:
                return self._cancelled(goal, "while executing", seq, plan)
            prev = seq.stage
            stage = seq.update(port.phases(prev) if prev >= 0 else {}, port.now())
            if stage != prev:
                port.publish_stage(stage)
                rec = seq.records[prev] if prev >= 0 else None
                if rec is not None and rec.end is not None and seq.state is not SeqState.FAILED:
                    port.log("info", f"stage {prev + 1}/{seq.num_stages} done in "
                                     f"{rec.end - rec.start:.1f} s")
                if stage >= 0:
                    port.log("info", f"stage {stage + 1}/{seq.num_stages}: "
                                     f"{_what(info, stage)}")
            if seq.state is SeqState.SUCCEEDED:
                docks = sum(len(s) for s in stages) - info.undocks
                what = (counted(docks, "dock")
                        + (f" and {counted(info.undocks, 'undock')}" if info.undocks else "")
                        + f" in {counted(seq.num_stages, 'stage')}" if docks or info.undocks
                        else "nothing to dock (one-module target, or already assembled)")
                return Outcome(ErrorCode.NONE, f"target '{name}' assembled: {what}, "
                                               f"{seq.elapsed:.1f} s", seq.elapsed, plan)
            if seq.state is SeqState.FAILED:
                return Outcome(ErrorCode.DOCKING, seq.error, seq.elapsed, plan)
            now = port.monotonic()
            if last_fb is None or now - last_fb >= 1.0 / st.feedback_rate_hz:
                last_fb = now
                port.feedback("EXECUTING", seq.stage + 1 if seq.stage >= 0 else 0,
                              seq.num_stages, port.now() - t0)
            await port.sleep(self.poll_period_s)
