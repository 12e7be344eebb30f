"""The lockstep schedule (pure): turn order, due times, wake-ups and message counts."""
from __future__ import annotations

import math

import pytest

from smores_assembly.sim.lockstep import HISTORY_DEPTH, LockstepSchedule

ORDER = ["bridge", "executive", "navigation", "controller"]


def _turns(s: LockstepSchedule, t: float) -> list[str]:
    s.start_step(t)
    out = []
    while (n := s.next_turn()) is not None:
        out.append(n)
    return out


def test_refuses_duplicate_or_empty_names():
    with pytest.raises(ValueError, match="unique"):
        LockstepSchedule(["a", "a"])
    with pytest.raises(ValueError, match="non-empty"):
        LockstepSchedule(["a", ""])


def test_waits_for_every_hello_then_turns_follow_timers_in_order():
    s = LockstepSchedule(ORDER)
    for n in ORDER[:-1]:
        s.on_ack(n, True, 0.0, {}, [""], [])
    assert not s.all_hello() and s.missing() == ["controller"]
    s.on_ack("controller", True, 0.0, {}, [""], [])
    assert s.all_hello()
    # everyone is due at the first step, in the configured order
    assert _turns(s, 0.01) == ORDER
    s.on_ack("bridge", False, 0.02, {}, None, None)
    s.on_ack("executive", False, 0.05, {}, None, None)
    s.on_ack("navigation", False, math.inf, {}, None, None)
    s.on_ack("controller", False, 0.02, {}, None, None)
    assert _turns(s, 0.01 + 0.005) == []
    assert _turns(s, 0.02) == ["bridge", "controller"]
    assert s.next_due() == pytest.approx(0.02)
    assert _turns(s, 0.05) == ["bridge", "executive", "controller"]


def test_messages_are_counted_per_topic_and_wake_subscribers():
    s = LockstepSchedule(ORDER)
    s.on_ack("bridge", True, 0.02, {"/states": 0}, [""], [])
    s.on_ack("executive", True, 0.05, {"/stage": 1}, ["/states"], [])
    s.on_ack("navigation", True, math.inf, {}, ["/stage", "/states"], ["/stage"])
    s.on_ack("controller", True, 0.02, {}, ["/states", "/stage"], [])
    # the executive's hello counted its one stage message: both subscribers expect it
    assert s.expected("navigation") == {"/stage": 1}
    assert s.expected("controller") == {"/stage": 1}
    assert _turns(s, 0.02) == ["bridge", "controller"]
    s.on_ack("bridge", False, 0.05, {}, None, None)
    s.on_ack("controller", False, 0.06, {}, None, None)
    s.start_step(0.05)
    assert s.next_turn() == "bridge"
    s.on_ack("bridge", False, 0.06, {"/states": 3}, None, None)   # cumulative counts
    assert s.next_turn() == "executive"
    s.on_ack("executive", False, 0.10, {"/stage": 2}, None, None)
    # a new stage woke the navigation (later in the order): its turn in this very step
    assert s.next_turn() == "navigation"
    assert s.expected("navigation") == {"/stage": 2, "/states": 3}
    s.on_ack("navigation", False, math.inf, {}, None, None)
    assert s.next_turn() is None  # the controller is next due at 0.06
    # a topic subscribed later also counts what was published on it before: the writers'
    # history delivers it, and the subscriber must have it before its next turn (not at
    # whichever turn discovery happens to bring it)
    s.on_ack("navigation", False, math.inf, {"/path": 2}, None, None)
    s.on_ack("controller", False, 0.06, {}, ["/states", "/stage", "/path"], [])
    assert s.expected("controller") == {"/states": 3, "/stage": 2, "/path": 2}
    s.on_ack("navigation", False, math.inf, {"/path": 3}, None, None)
    assert s.expected("controller") == {"/states": 3, "/stage": 2, "/path": 3}
    # ... at most the history a counted writer keeps
    s.on_ack("navigation", False, math.inf, {"/other": HISTORY_DEPTH + 7}, None, None)
    s.on_ack("controller", False, 0.06, {}, ["/states", "/stage", "/path", "/other"], [])
    assert s.expected("controller")["/other"] == HISTORY_DEPTH
    s.on_ack("navigation", False, math.inf, {"/other": HISTORY_DEPTH + 8}, None, None)
    assert s.expected("controller")["/other"] == HISTORY_DEPTH + 1


def test_wake_of_an_earlier_participant_waits_for_the_next_step():
    s = LockstepSchedule(ORDER)
    for n in ORDER:
        s.on_ack(n, True, math.inf, {}, [""], [])
    s.parts["controller"].next_turn_s = 0.0
    s.on_ack("navigation", False, math.inf, {}, ["/status"], ["/status"])
    assert _turns(s, 0.01) == ["controller"]
    s.on_ack("controller", False, math.inf, {"/status": 1}, None, None)
    assert s.next_due() == -math.inf   # someone is woken: step at once
    assert _turns(s, 0.02) == ["navigation"]
    assert _turns(s, 0.03) == []


def test_a_quiet_message_is_counted_but_wakes_nobody():
    """A status refresh with unchanged phases (``quiet``) gives the nodes that wake on its
    topic no turn, yet their next turn still waits for it; a loud one in the same answer
    (the topic not in ``quiet``) wakes them as before."""
    s = LockstepSchedule(ORDER)
    for n in ORDER:
        s.on_ack(n, True, math.inf, {}, [""], [])
    s.parts["controller"].next_turn_s = 0.0
    s.on_ack("navigation", False, math.inf, {}, ["/status"], ["/status"])
    s.on_ack("executive", False, 1.0, {}, ["/status"], ["/status"])
    assert _turns(s, 0.01) == ["controller"]
    s.on_ack("controller", False, 0.02, {"/status": 1}, None, None, quiet=["/status"])
    assert s.next_due() == pytest.approx(0.02)   # nobody woken
    assert _turns(s, 0.02) == ["controller"]
    assert s.expected("navigation") == {"/status": 1}
    s.on_ack("controller", False, 0.03, {"/status": 2}, None, None, quiet=[])
    assert s.next_due() == -math.inf
    assert _turns(s, 0.03) == ["executive", "navigation", "controller"]
    assert s.expected("executive") == {"/status": 2}
