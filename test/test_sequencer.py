"""Stage sequencing: a stage starts only when every dock of the previous one is confirmed."""
import pytest

from smores_assembly.errors import InputError
from smores_assembly.sequencer import SeqState, StageSequencer
from smores_assembly.vocabulary import Phase

DOCKED, FAILED, APPROACH = Phase.DOCKED, Phase.FAILED, Phase.APPROACH


def test_stages_advance_only_when_all_docked():
    seq = StageSequencer([["a", "b"], ["c"]], stage_timeout_s=100)
    assert seq.start(0.0) == 0
    assert seq.update({"a": DOCKED, "b": APPROACH}, 5.0) == 0
    assert seq.update({"a": DOCKED, "b": DOCKED}, 7.0) == 1
    assert seq.records[0].start == 0.0 and seq.records[0].end == 7.0
    # stale DOCKED reports of the previous stage must not finish stage 2
    assert seq.update({"a": DOCKED, "b": DOCKED}, 8.0) == 1
    assert seq.update({"c": DOCKED}, 12.5) == -1
    assert seq.state is SeqState.SUCCEEDED
    assert seq.elapsed == pytest.approx(12.5)


def test_failure_and_timeout_stop_the_assembly():
    seq = StageSequencer([["a"], ["b"]], stage_timeout_s=10)
    seq.start(0.0)
    assert seq.update({"a": FAILED}, 1.0) == -1
    assert seq.state is SeqState.FAILED and "a" in seq.error
    seq = StageSequencer([["a"], ["b"]], stage_timeout_s=10)
    seq.start(0.0)
    assert seq.update({"a": APPROACH}, 10.5) == -1
    assert seq.state is SeqState.FAILED and "timed out" in seq.error and "a" in seq.error


def test_cancel_and_bad_stages():
    seq = StageSequencer([["a"]])
    seq.start(0.0)
    seq.cancel(2.0)
    assert seq.state is SeqState.CANCELLED and seq.update({"a": DOCKED}, 3.0) == -1
    with pytest.raises(InputError, match="stages"):
        StageSequencer([["a"], []])
