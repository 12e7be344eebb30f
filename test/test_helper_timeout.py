"""WAIT_HELPER's timeout counts from the end of the helper's last path, not through a wait
the navigation planned (issue 16, random 50 stage 3: the stage's paths waited 126 s for a
carried pair; h1, told to wait, failed at ``helper_timeout_s`` = 120 s and the run ended).

Judged on the task alone: the helper stands where its path holds it (poses do not move),
so the task must still be waiting when the plain budget is over, and fail once the budget
has run past the path's end."""
from __future__ import annotations

import pytest

from smores_assembly.docking import DockingSettings, DockingSpec, DockingTask, PoseSample
from smores_assembly.docking.control import TimedPath
from smores_assembly.geometry import Face, Pose2D
from smores_assembly.vocabulary import ErrorCode, Phase

DT = 0.1
POSES = {"p": Pose2D(0.0, 0.0, 0.0), "m1": Pose2D(0.5, 0.0, 0.0), "h0": Pose2D(1.0, 0.4, 0.0)}


def _run(path_end: float | None, t_end: float,
         replan: tuple[float, float] | None = None) -> tuple[DockingTask, float | None]:
    """Tick a wheel-face dock of m1 (helper h0) to ``t_end`` [s]; a path holding h0 where it
    stands until ``path_end`` [s] is given at the start (None: no path, direct);
    ``replan`` = (t, end): at t a new path replaces it, ending at ``end``. Returns the task
    and when it failed."""
    s = DockingSettings()
    task = DockingTask(DockingSpec("m1", "p", Face.TOP, Face.LEFT, "h0"), s)
    h = POSES["h0"]
    path = None if path_end is None else TimedPath(((0.0, h.x, h.y), (path_end, h.x, h.y)))
    if path is None:
        task.path_unavailable()
    failed, t = None, 0.0
    while t <= t_end and failed is None:
        samples = {m: PoseSample(p, t) for m, p in POSES.items()}
        new = path if t == 0.0 else None
        if replan is not None and t == replan[0]:
            new = TimedPath(((t, h.x, h.y), (replan[1], h.x, h.y)))
        task.tick(t, samples, False, new)
        if task.phase is Phase.FAILED:
            failed = t
        t = round(t + DT, 6)
    return task, failed


@pytest.mark.parametrize("wait", [126.0, 300.0])
def test_a_planned_wait_longer_than_the_budget_is_no_failure(wait):
    s = DockingSettings()
    task, failed = _run(wait, s.helper_timeout_s + 10.0)
    assert failed is None and task.phase is Phase.WAIT_HELPER
    # the budget then runs from the path's end
    task, failed = _run(wait, wait + s.helper_timeout_s + 5.0)
    assert failed is not None and task.error is ErrorCode.TIMEOUT
    assert wait + s.helper_timeout_s <= failed <= wait + s.helper_timeout_s + 2 * DT


def test_without_a_path_the_budget_runs_from_the_phase_start():
    s = DockingSettings()
    _task, failed = _run(None, s.helper_timeout_s + 5.0)
    assert failed is not None and s.helper_timeout_s <= failed <= s.helper_timeout_s + 2 * DT


def test_the_budget_runs_from_the_last_path_not_the_longest():
    """A replan that shortens the wait (300 s -> 20 s) moves the deadline back."""
    s = DockingSettings()
    _task, failed = _run(300.0, 300.0, replan=(10.0, 20.0))
    assert failed is not None and abs(failed - (20.0 + s.helper_timeout_s)) <= 2 * DT
