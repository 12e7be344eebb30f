"""The executive's goal handling (smores_assembly.goal_runner) without a ROS graph.

A fake port stands in for the graph: its clock advances only when the runner sleeps, and a
scripted "pipeline" answers the published target with a plan and the docks with phases.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from smores_assembly.geometry import Pose2D
from smores_assembly.goal_runner import ErrorCode, GoalRunner, PlanInfo
from smores_assembly.sequencer import ExecutiveSettings
from smores_assembly.planning import plan_assembly
from smores_assembly.scenario import scenario_from_dict
from smores_assembly.vocabulary import Phase

DATA = Path(__file__).resolve().parent / "data" / "field"


class FakePort:
    """Graph stand-in: module poses, a planner answering targets, docks taking ``dock_s``."""

    def __init__(self, poses, dock_s: float = 3.0, plan_delay_s: float = 0.2,
                 fail_module: str | None = None):
        self.t = 100.0
        self.poses = dict(poses)
        self.dock_s = dock_s
        self.plan_delay_s = plan_delay_s
        self.fail_module = fail_module
        self.stages_published: list[int] = []
        self.logs: list[tuple[str, str]] = []
        self.feedbacks: list[str] = []
        self.targets = 0
        self._plan_at = None
        self._plan = None
        self._stage_start: dict[int, float] = {}
        self.on_sleep = None  # optional hook(port) run at each sleep

    # clocks
    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, period_s: float) -> None:
        self.t += period_s
        if self.on_sleep is not None:
            self.on_sleep(self)
        await asyncio.sleep(0)

    # inputs
    def tracked_poses(self):
        return self.poses if self.poses else None

    def target_to_scenario(self, target, poses):
        # as the executive: the target's modules are the tracked ones
        return scenario_from_dict({**target, "modules": {
            m: [p.x, p.y, p.yaw] for m, p in poses.items()}})

    def plan_locally(self, scenario, poses) -> None:
        self._plan = plan_assembly(scenario, poses)

    def target_name(self, target) -> str:
        return target["name"]

    def target_modules(self, target):
        helpers = set(target.get("helpers") or [])
        return helpers, len(target["target"]["nodes"]) + len(helpers)

    def publish_target(self, target) -> None:
        self.targets += 1
        self._plan_at = self.t + self.plan_delay_s

    def received_plan(self):
        if self._plan_at is None or self.t < self._plan_at:
            return None
        stages = [[a.module for a in self._plan.actions if a.stage == k]
                  for k in range(len(self._plan.stages))]
        return PlanInfo(stages, "fake", self._plan)

    def publish_stage(self, stage: int) -> None:
        self.stages_published.append(stage)
        if stage >= 0:
            self._stage_start[stage] = self.t

    def phases(self, stage: int) -> dict[str, str]:
        start = self._stage_start.get(stage)
        out = {}
        for a in self._plan.actions:
            if a.stage != stage or start is None:
                continue
            if a.module == self.fail_module and self.t - start > 1.0:
                out[a.module] = Phase.FAILED
            else:
                out[a.module] = Phase.DOCKED if self.t - start >= self.dock_s else Phase.APPROACH
        return out

    def feedback(self, state, stage, num_stages, elapsed_s) -> None:
        self.feedbacks.append(state)

    def log(self, level: str, text: str) -> None:
        self.logs.append((level, text))


PAIR = {"name": "pair", "module_width": 0.08,
        "target": {"nodes": ["a", "b"],
                   "edges": [{"parent": "a", "parent_face": "TOP", "child": "b",
                              "child_face": "BOTTOM"}]},
        "modules": {"m0": [0.0, 0.0, 0.0], "m1": [0.30, 0.10, 1.0], "m2": [-0.4, 0.0, 0.0]}}
INVALID = {**PAIR, "target": {"nodes": ["a", "b"],
                              "edges": [{"parent": "a", "parent_face": "TOP", "child": "zz",
                                         "child_face": "BOTTOM"}]}}


def _poses(d):
    return {m: Pose2D(*p) for m, p in d["modules"].items()}


def _run(runner: GoalRunner, target, require_approval=False, before=None):
    ok, why = runner.accept(require_approval)
    assert ok, why
    if before is not None:
        before(runner)
    return asyncio.run(runner.execute(target))


def _settings(**kw):
    return ExecutiveSettings(**{"states_timeout_s": 1.0, "plan_timeout_s": 1.0,
                             "approval_timeout_s": 5.0, "stage_timeout_s": 20.0, **kw})


def test_valid_pair_succeeds_and_times_the_stage():
    port = FakePort(_poses(PAIR), dock_s=3.0)
    out = _run(GoalRunner(port, _settings()), PAIR)
    assert out.code is ErrorCode.NONE, out.message
    assert out.elapsed_s == pytest.approx(3.0, abs=0.06)
    assert port.stages_published[-2:] == [0, -1]
    assert not GoalRunner(port, _settings()).busy


def test_goal_sequence_never_wedges_the_slot():
    """invalid, valid, one-node, invalid, valid: each ends with its own code."""
    port = FakePort(_poses(PAIR))
    runner = GoalRunner(port, _settings())
    one = {"name": "single_node", "module_width": 0.08,
           "target": {"nodes": ["s"], "edges": []}, "modules": PAIR["modules"]}
    codes = []
    for target in (INVALID, PAIR, one, INVALID, PAIR):
        out = _run(runner, target)
        codes.append(out.code)
        assert not runner.busy
        assert out.message
    assert codes == [ErrorCode.INVALID_TARGET, ErrorCode.NONE, ErrorCode.NONE,
                     ErrorCode.INVALID_TARGET, ErrorCode.NONE]


def test_invalid_target_names_the_unknown_node():
    out = _run(GoalRunner(FakePort(_poses(PAIR)), _settings()), INVALID)
    assert out.code is ErrorCode.INVALID_TARGET and "zz" in out.message


@pytest.mark.parametrize("where", ["target_to_scenario", "publish_target", "phases",
                                   "received_plan", "feedback", "sleep"])
def test_an_exception_anywhere_ends_the_goal_with_a_result_and_frees_the_slot(where):
    port = FakePort(_poses(PAIR))
    original = getattr(port, where)
    calls = {"n": 0}

    def boom(*a, **k):
        calls["n"] += 1
        raise RuntimeError(f"boom in {where}")

    if where == "sleep":
        async def boom_async(*a, **k):
            boom()
        setattr(port, where, boom_async)
    else:
        setattr(port, where, boom)
    runner = GoalRunner(port, _settings())
    out = _run(runner, PAIR)
    assert calls["n"] >= 1
    assert out.code is ErrorCode.INTERNAL
    assert f"boom in {where}" in out.message and "RuntimeError" in out.message
    assert not runner.busy
    assert port.stages_published[-1] == -1  # every module told to stop
    setattr(port, where, original)
    assert _run(runner, PAIR).code is ErrorCode.NONE  # and the next goal runs


def test_a_failing_log_does_not_change_the_outcome():
    port = FakePort(_poses(PAIR))

    def bad_log(level, text):
        raise ValueError("Logger severity cannot be changed between calls.")

    port.log = bad_log
    runner = GoalRunner(port, _settings())
    assert _run(runner, INVALID).code is ErrorCode.INVALID_TARGET  # final log raises
    assert not runner.busy
    out = _run(runner, PAIR)  # the progress log raises inside goal handling
    assert out.code is ErrorCode.INTERNAL and "severity" in out.message
    assert not runner.busy


def test_one_node_target_is_assembled_at_once():
    one = {"name": "single_node", "module_width": 0.08,
           "target": {"nodes": ["s"], "edges": []}, "modules": {"m0": [0.0, 0.0, 0.0]}}
    port = FakePort(_poses(one))
    out = _run(GoalRunner(port, _settings()), one)
    assert out.code is ErrorCode.NONE, out.message
    assert out.elapsed_s == 0.0 and "nothing to dock" in out.message


def test_docking_failure_then_success():
    port = FakePort(_poses(PAIR), fail_module="m1")
    runner = GoalRunner(port, _settings())
    out = _run(runner, PAIR)
    assert out.code is ErrorCode.DOCKING and "m1" in out.message
    port.fail_module = None
    assert _run(runner, PAIR).code is ErrorCode.NONE


def test_second_goal_is_refused_while_one_is_held():
    runner = GoalRunner(FakePort(_poses(PAIR)), _settings())
    assert runner.accept()[0]
    ok, why = runner.accept()
    assert not ok and "already running" in why


def test_cancel_while_idle_is_refused_truthfully():
    runner = GoalRunner(FakePort(_poses(PAIR)), _settings())
    ok, why = runner.request_cancel()
    assert not ok and "nothing to cancel" in why


def test_cancel_between_acceptance_and_execution_is_not_forgotten():
    port = FakePort(_poses(PAIR))
    runner = GoalRunner(port, _settings())
    out = _run(runner, PAIR, before=lambda r: r.request_cancel())
    assert out.code is ErrorCode.CANCELLED
    assert 0 not in port.stages_published  # no stage ever started
    assert port.targets == 0


@pytest.mark.parametrize("at", [0.1, 0.5, 1.5])
def test_cancel_at_any_moment_ends_cancelled_and_stops(at):
    port = FakePort(_poses(PAIR), dock_s=3.0, plan_delay_s=0.3)
    runner = GoalRunner(port, _settings())
    t0 = port.t
    answers = []

    def hook(p):
        if not answers and p.t - t0 >= at:
            answers.append(runner.request_cancel())
    port.on_sleep = hook
    out = _run(runner, PAIR)
    assert answers and answers[0][0]
    assert out.code is ErrorCode.CANCELLED
    assert port.t - t0 < at + 0.2  # acted on at the next poll
    assert port.stages_published[-1] == -1
    assert not runner.busy


def test_approval_gate_and_approval_before_the_plan():
    port = FakePort(_poses(PAIR))
    runner = GoalRunner(port, _settings())
    # nothing approves: times out without any stage started
    out = _run(runner, PAIR, require_approval=True)
    assert out.code is ErrorCode.APPROVAL_TIMEOUT and 0 not in port.stages_published
    # approval sent right with the goal is kept
    out = _run(runner, PAIR, require_approval=True, before=lambda r: r.approve())
    assert out.code is ErrorCode.NONE
    assert "WAITING_APPROVAL" in port.feedbacks
    ok, why = runner.approve()
    assert not ok and "no assembly" in why
    assert runner.accept(False)[0]
    ok, why = runner.approve()
    assert not ok and "does not require approval" in why


def test_no_states_is_reported():
    port = FakePort({})
    out = _run(GoalRunner(port, _settings(states_timeout_s=0.5)), PAIR)
    assert out.code is ErrorCode.NO_STATES


def test_planning_waits_until_every_named_module_is_tracked():
    """Field case (a reconfiguration bench run): the first states of a starting stack held
    m0..m5 but not the helper h0, whose mocap topic matched later; the goal was refused
    as 'unknown helper h0'. Planning now waits for every module the target names (and
    for as many modules as it needs), and says which are missing when they never come."""
    helped = {**PAIR, "modules": {**PAIR["modules"], "h0": [0.5, 0.5, 0.0]}, "helpers": ["h0"]}
    full = _poses(helped)
    port = FakePort({m: p for m, p in full.items() if m != "h0"})

    def h0_tracked_later(port):
        if port.t >= 100.3:
            port.poses = dict(full)
    port.on_sleep = h0_tracked_later
    out = _run(GoalRunner(port, _settings()), helped)
    assert out.code is ErrorCode.NONE, out.message
    assert port.targets == 1
    # never tracked: refused naming it, no target published
    port = FakePort({m: p for m, p in full.items() if m != "h0"})
    out = _run(GoalRunner(port, _settings(states_timeout_s=0.5)), helped)
    assert out.code is ErrorCode.NO_STATES and "h0" in out.message, out.message
    assert port.targets == 0
    # fewer modules tracked than the target has nodes
    port = FakePort({"m0": full["m0"]})
    out = _run(GoalRunner(port, _settings(states_timeout_s=0.5)), PAIR)
    assert out.code is ErrorCode.NO_STATES and "needs 2" in out.message, out.message


class ReconfPort(FakePort):
    """A reconfiguration's plan: undocking stages first, undocks end UNDOCKED."""

    def plan_locally(self, scenario, poses) -> None:
        from smores_assembly.reconfigure import plan_reconfiguration
        self._plan = plan_reconfiguration(scenario, modules=poses, method="full")

    def received_plan(self):
        info = super().received_plan()
        if info is None:
            return None
        plan = self._plan
        for u in plan.undocks:
            info.stages[u.stage].append(u.module)
        return PlanInfo(info.stages, "fake", plan, undocks=len(plan.undocks),
                        undock_stages=plan.num_undock_stages)

    def phases(self, stage: int) -> dict[str, str]:
        out = super().phases(stage)
        start = self._stage_start.get(stage)
        for u in self._plan.undocks:
            if u.stage == stage and start is not None:
                out[u.module] = (Phase.UNDOCKED if self.t - start >= self.dock_s
                                 else Phase.UNDOCK)
        return out


def test_undocks_are_counted_apart_from_docks():
    """A full disassembly of a two-module structure (m1's LEFT face on m0's TOP) into a
    TOP/BOTTOM pair: 1 undock then 1 dock; the outcome and the stage log say which is
    which ("1 dock and 1 undock in 2 stages", "undock m1")."""
    conn = {**PAIR, "modules": {"m0": [0.0, 0.0, 0.0], "m1": [0.08, 0.0, 1.5707963267948966],
                                "m2": [-0.4, 0.0, 0.0]},
            "initial": {"connections": [["m0.TOP", "m1.LEFT"]]}}
    port = ReconfPort(_poses(conn), dock_s=3.0)
    out = _run(GoalRunner(port, _settings()), conn)
    assert out.code is ErrorCode.NONE, out.message
    assert len(port._plan.undocks) == 1 and len(port._plan.actions) == 1
    assert "1 dock and 1 undock in 2 stages" in out.message, out.message
    assert out.elapsed_s == pytest.approx(6.0, abs=0.12)
    [undock_line] = [t for _, t in port.logs if t.startswith("stage 1/2: ")]
    assert undock_line == f"stage 1/2: undock {port._plan.undocks[0].module}"
    assert any(t.startswith("stage 2/2: ") and "undock" not in t for _, t in port.logs)
