"""Stage sequencing of a parallel assembly (pure Python, no ROS).

Paper: SMORES-EP parallel self-assembly, Sec. IV-C: the docking actions of one stage run in
parallel; a stage starts only when every dock of the previous stage is confirmed.

:class:`StageSequencer` is the executive's state machine. It is fed the docking phase of each
module (as reported on ``/assembly/docking_status``) and the current time, and says which
stage should be active, whether the assembly has finished, and why it failed.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from smores_assembly.errors import InputError
from smores_assembly.params import param_field
from smores_assembly.vocabulary import Phase


@dataclass
class ExecutiveSettings:
    """Tunables of the executive (ROS parameters of the ``executive`` node)."""

    states_timeout_s: float = param_field(
        10.0, "How long to wait for module states before refusing a goal [s]", 0.1, 600.0)
    plan_timeout_s: float = param_field(
        60.0, "How long to wait for /assembly/plan after publishing the target [s] (wall "
        "time: nothing moves meanwhile; a 0.8 CPU s plan took over 15 s on a loaded "
        "machine)", 0.1, 600.0)
    approval_timeout_s: float = param_field(
        300.0, "How long require_approval waits for /assembly/approve [s]", 1.0, 86400.0)
    stage_timeout_s: float = param_field(
        400.0, "A stage still running after this fails the assembly [s, ROS time]", 1.0, 1e5)
    feedback_rate_hz: float = param_field(2.0, "Action feedback rate [Hz]", 0.1, 50.0)
    marker_rate_hz: float = param_field(
        2.0, "Rate of the module/goal/connection markers on /assembly/markers/modules [Hz] "
             "(read at start-up)", 0.1, 30.0, start_only=True)


class SeqState(str, enum.Enum):
    """Where the assembly is."""

    IDLE = "IDLE"
    EXECUTING = "EXECUTING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@dataclass
class StageRecord:
    """Timing of one stage [s, ROS time]; ``end`` is None while it runs."""

    index: int
    modules: list[str]
    start: float
    end: float | None = None


@dataclass
class StageSequencer:
    """Sequence ``stages`` (list of lists of moving module ids, in execution order).

    Args:
        stages: ``stages[k]`` = modules whose docking actions form stage k.
        stage_timeout_s: a stage running longer than this fails the assembly [s].
    """

    stages: list[list[str]]
    stage_timeout_s: float = 600.0
    state: SeqState = SeqState.IDLE
    stage: int = -1
    records: list[StageRecord] = field(default_factory=list)
    error: str = ""

    def __post_init__(self) -> None:
        if any(not s for s in self.stages):
            raise InputError(f"stages: every stage needs at least one module, "
                             f"got {self.stages!r}", field="stages")

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    def start(self, now: float) -> int:
        """Begin the assembly at time ``now`` [s]; returns the first active stage (0).

        With no stage at all (a one-module target: nothing to dock) the assembly has
        succeeded at once and -1 (no active stage) is returned."""
        if not self.stages:
            self.state = SeqState.SUCCEEDED
            self.stage = -1
            return -1
        self.state = SeqState.EXECUTING
        self._enter(0, now)
        return self.stage

    def _enter(self, k: int, now: float) -> None:
        self.stage = k
        self.records.append(StageRecord(k, list(self.stages[k]), now))

    def update(self, phases: dict[str, Phase], now: float) -> int:
        """Advance on the latest docking phases.

        Args:
            phases: module id -> :class:`~smores_assembly.vocabulary.Phase`, for the modules
                of the active stage as last reported.
            now: current time [s].

        Returns:
            The stage that should be active now (-1 once finished, failed or cancelled).
        """
        if self.state is not SeqState.EXECUTING:
            return -1
        active = self.stages[self.stage]
        failed = [m for m in active if phases.get(m) is Phase.FAILED]
        if failed:
            return self._fail(now, f"stage {self.stage + 1}: docking failed for "
                                   f"{', '.join(sorted(failed))}")
        if now - self.records[-1].start > self.stage_timeout_s:
            waiting = [m for m in active if not _succeeded(phases.get(m))]
            return self._fail(now, f"stage {self.stage + 1}: timed out after "
                                   f"{self.stage_timeout_s:.0f} s waiting for "
                                   f"{', '.join(sorted(waiting))}")
        if all(_succeeded(phases.get(m)) for m in active):
            self.records[-1].end = now
            if self.stage + 1 == self.num_stages:
                self.state = SeqState.SUCCEEDED
                self.stage = -1
                return -1
            self._enter(self.stage + 1, now)
        return self.stage

    def _fail(self, now: float, message: str) -> int:
        self.records[-1].end = now
        self.state = SeqState.FAILED
        self.error = message
        self.stage = -1
        return -1

    def cancel(self, now: float) -> None:
        """Stop the assembly (every module must stop)."""
        if self.records and self.records[-1].end is None:
            self.records[-1].end = now
        if self.state is SeqState.EXECUTING or self.state is SeqState.IDLE:
            self.state = SeqState.CANCELLED
        self.stage = -1

    @property
    def elapsed(self) -> float:
        """Time from the first stage's start to the last stage's end [s] (0 before start)."""
        if not self.records or self.records[-1].end is None:
            return 0.0
        return self.records[-1].end - self.records[0].start


def _succeeded(phase: Phase | None) -> bool:
    """DOCKED for a dock, UNDOCKED for a reconfiguration's undock."""
    return phase is not None and phase.succeeded
