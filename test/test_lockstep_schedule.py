"""The lockstep schedule (pure): turn order, due times, wake-ups and message counts."""
from __future__ import annotations

import math

import pytest

from smores_assembly.sim.lockstep import HISTORY_DEPTH, LockstepSchedule, chained_counts

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


# --- chained turns (issue 10) -----------------------------------------------------------
TOPICS = ["/states", "/stage", "/status", "/path", "/cmd"]


def _simulate(seed: int, chained: bool, use_stop: bool = True):
    """Drive a schedule of the four participants through 100 steps of random behaviour (timers,
    subscriptions, wake topics; per turn random messages, loud or quiet, some of them on
    topics that wake a participant ordered between two that turn one after the other) as
    the fake hardware does: unchained (each turn given and answered one by one) or chained
    (:meth:`LockstepSchedule.chain`, the handing participant computing the next one's counts
    with :func:`chained_counts` and falling back to its own answer on a ``stop`` topic).

    A participant's behaviour in a turn depends only on who it is, the time and the counts
    it was given, so both drivers must see the same turns in the same order with the same
    counts. Returns ``(turns, handed, fell back)``: the turns ``(name, t, counts)``, how many
    were handed over, how many chains fell back."""
    import random
    rng0 = random.Random(seed)
    s = LockstepSchedule(ORDER)
    subs = {n: rng0.sample(TOPICS, rng0.randint(0, 4)) for n in ORDER}
    wakes = {n: [t for t in subs[n] if rng0.random() < 0.5] for n in ORDER}
    sent = {n: {} for n in ORDER}
    for n in ORDER:
        s.on_ack(n, True, 0.0, {}, subs[n] or [""], wakes[n])
    turns, handed, fell_back = [], 0, 0

    def act(name: str, t: float, counts: dict):
        """The participant's turn: (next due, cumulative counts, published, loud, quiet)."""
        r = random.Random(f"{seed} {name} {t:.6f} {sorted(counts.items())}")
        published = {}
        for topic in r.sample(TOPICS, r.randint(0, 2)):
            published[topic] = r.randint(1, 3)
            sent[name][topic] = sent[name].get(topic, 0) + published[topic]
        quiet = [topic for topic in published if r.random() < 0.4]
        loud = [topic for topic in published if topic not in quiet]
        due = t + r.choice([0.01, 0.01, 0.02, 0.02, 0.05, 0.5, math.inf])
        return due, dict(sent[name]), published, loud, quiet

    t = 0.0
    for _ in range(100):
        t = round(t + 0.01, 6)
        s.start_step(t)
        name = s.next_turn()
        while name is not None:
            chain = s.chain(name) if chained else None
            counts = s.expected(name)
            turns.append((name, t, counts))
            due, cum, published, loud, quiet = act(name, t, counts)
            nxt_counts = None
            if chain is not None:
                nxt_counts = chained_counts(chain.topics, chain.counts, published, loud,
                                            chain.stop if use_stop else ())
                fell_back += nxt_counts is None
            s.on_ack(name, False, due, cum, None, None, quiet)
            if nxt_counts is None:
                name = s.next_turn()
                continue
            # handed over: the next one's turn with the counts the chain gives, and then
            # its answer (with the handing one's, handled just above) to the fake hardware
            handed += 1
            got = s.next_turn()   # what the fake hardware pops (it logs an error if not it)
            assert got == chain.next or not use_stop
            name = chain.next
            turns.append((name, t, nxt_counts))
            due, cum, published, loud, quiet = act(name, t, nxt_counts)
            s.on_ack(name, False, due, cum, None, None, quiet)
            name = s.next_turn()
    return turns, handed, fell_back


@pytest.mark.parametrize("seed", range(40))
def test_chained_turns_are_the_unchained_turns(seed):
    """Random participants (oracle: the unchained protocol, each turn given and answered by
    the fake hardware one after the other): with chained turns the same participants get
    the same turns at the same times with the same message counts, including when a chain
    falls back because the handing participant woke someone ordered in between."""
    plain, _, _ = _simulate(seed, chained=False)
    chained, handed, _ = _simulate(seed, chained=True)
    assert handed > 0
    assert chained == plain


def test_chains_fall_back_on_a_stop_topic_and_would_differ_without():
    """The ``stop`` rule matters: over the random runs some chains fall back, and ignoring
    ``stop`` (handing over although someone in between was woken) changes the turns."""
    fell_back = differ = 0
    for seed in range(40):
        plain, _, _ = _simulate(seed, chained=False)
        fell_back += _simulate(seed, chained=True)[2]
        differ += _simulate(seed, chained=True, use_stop=False)[0] != plain
    assert fell_back > 0 and differ > 0


def test_chain_names_the_next_queued_participant_and_the_topics_that_stop_it():
    s = LockstepSchedule(ORDER)
    s.on_ack("bridge", True, 0.0, {}, [""], [])
    s.on_ack("executive", True, 1.0, {}, ["/status", "/states"], ["/status"])
    s.on_ack("navigation", True, math.inf, {}, ["/stage", "/status"], ["/stage", "/status"])
    s.on_ack("controller", True, 0.0, {}, ["/states", "/stage"], [])
    s.start_step(0.01)
    assert s.next_turn() == "bridge"
    chain = s.chain("bridge")
    assert chain is not None and chain.next == "controller"
    assert chain.stop == ("/stage", "/status")
    assert dict(zip(chain.topics, chain.counts)) == {"/states": 0, "/stage": 0}
    # the bridge published 1 state: the controller's counts
    assert chained_counts(chain.topics, chain.counts, {"/states": 1}, ["/states"],
                          chain.stop) == {"/states": 1}
    # a waking message on a stop topic: no chain; a quiet one: the chain holds
    assert chained_counts(chain.topics, chain.counts, {"/status": 1}, ["/status"],
                          chain.stop) is None
    assert chained_counts(chain.topics, chain.counts, {"/status": 1}, [],
                          chain.stop) == {}
    assert s.next_turn() == "controller" and s.chain("controller") is None
    with pytest.raises(ValueError, match="2 topics but 1 counts"):
        chained_counts(("/a", "/b"), (1,), {}, [], ())


@pytest.mark.parametrize("seed", range(20))
def test_a_wait_for_late_messages_warns_while_short_and_expires_at_its_bound(seed):
    """A turn (or a step) waiting for announced messages is done exactly when the last one
    has arrived, expires at its bound ``timeout_s`` (the caller then goes on without them:
    it never waits for ever), and meanwhile warns once per ``warn_every_s`` of waiting,
    naming every topic still short with its counts and who publishes it. Oracle: the
    arrival times themselves (the wait is done at the latest arrival of the messages it
    expects; a topic is short at ``now`` while fewer of its messages have arrived than
    expected) and the bound."""
    import random

    from smores_assembly.sim.lockstep import CountWait

    rng = random.Random(seed)
    topics = [f"/t{i}" for i in range(rng.randint(1, 5))]
    expected = {t: rng.randint(1, 4) for t in topics}
    arrivals = sorted((rng.uniform(0.0, 300.0), t) for t in topics for _ in range(expected[t]))
    period = rng.choice([1.0, 5.0, 30.0])
    timeout = rng.uniform(1.0, 400.0)
    since = 1000.0
    wait = CountWait(expected, since, timeout, period)
    received: dict[str, int] = {}
    warnings = []
    periods_seen = {0}   # a warning per period of waiting (the first after 1 period)
    now, i = since, 0
    while True:
        now += rng.uniform(0.01, 2.0)   # polled at random wall times (the 1-s watchdog)
        while i < len(arrivals) and since + arrivals[i][0] <= now:
            received[arrivals[i][1]] = received.get(arrivals[i][1], 0) + 1
            i += 1
        short = {t for t in topics if sum(1 for a, u in arrivals if u == t
                                          and since + a <= now) < expected[t]}
        assert set(wait.missing(received)) == short
        assert wait.done(received) == (not short) == (now >= since + arrivals[-1][0])
        assert wait.expired(now) == (now - since >= timeout)
        text = wait.warning(now, received, lambda t: f"from node_{t[2:]}")
        k = int((now - since) // period)
        assert (text is not None) == (bool(short) and k not in periods_seen)
        if short:
            periods_seen.add(k)
        if text is not None:
            warnings.append(now)
            assert short and f"waiting {now - since:.0f} s for" in text
            assert f"goes on without them after {timeout:.0f} s" in text
            for t in topics:
                assert (f"{t} ({received.get(t, 0)}/{expected[t]}; from node_{t[2:]})" in text) \
                    == (t in short)
        if wait.done(received):
            break
    # a wait of n periods warned about n times (a poll every <= 2 s: none skipped when
    # the period is longer)
    if period > 2.0 and warnings:
        assert len(warnings) == int((warnings[-1] - since) // period)
    if arrivals[-1][0] < period:
        assert not warnings
    if arrivals[-1][0] > period + 2.0:
        assert warnings
    assert wait.warning(now + 10 * period, received) is None   # nothing missing: silent


def test_a_wait_has_no_bound_while_a_topic_still_short_has_no_matched_publisher():
    """A wait (a participant's turn, the fake hardware's step) does not go on without
    messages whose publisher it has not matched (endpoint discovery under load: they come
    with the writer's history once matched), however long that takes, and says so; the
    bound counts from the last time one was unmatched. Before, it counted from the start:
    the docking controller went on without /m10/path, unmatched for 30 s, at t = 0.08 s of
    a loaded comb run (test_scale_e2e's; its CI run assembled in 335.7 s with a contact
    instead of 260.6 s clean). Oracle: the times at which the caller said a topic was
    unmatched."""
    from smores_assembly.sim.lockstep import COUNT_TIMEOUT_S, CountWait

    since = 1000.0
    wait = CountWait({"/m10/path": 1, "/states": 2}, since)
    received = {"/states": 1}
    now = since
    for now in (since + 10.0, since + 31.0, since + 300.0, since + 3600.0):
        wait.unmatched(now, ["/m10/path"])   # as the participant says at each look
        assert not wait.expired(now)
        text = wait.warning(now, received, lambda _t: "matched here: 0")
        assert text is not None and "/m10/path (0/1; matched here: 0)" in text, text
        assert "/states (1/2; matched here: 0)" in text
        assert "no publisher of /m10/path matched yet: waiting for discovery, without " \
            "a bound" in text and "goes on" not in text
    matched = now + 0.5   # matched now; /states still short (a message lost for good)
    received["/m10/path"] = 1
    wait.unmatched(matched, [])
    assert not wait.expired(matched + COUNT_TIMEOUT_S - 1.0)
    text = wait.warning(matched + COUNT_TIMEOUT_S - 1.0, received)
    assert "/m10/path" not in text and "/states (1/2)" in text
    assert f"goes on without them after {COUNT_TIMEOUT_S:.0f} s with every publisher " \
        "matched" in text
    assert wait.expired(now + COUNT_TIMEOUT_S) and not wait.done(received)
    received["/states"] = 2
    assert wait.done(received) and wait.warning(now + 10 * COUNT_TIMEOUT_S, received) is None


def test_a_wait_refuses_a_bound_or_period_that_is_not_positive():
    from smores_assembly.sim.lockstep import CountWait

    with pytest.raises(ValueError, match="warn_every_s"):
        CountWait({"/a": 1}, 0.0, 30.0, 0.0)
    with pytest.raises(ValueError, match="timeout_s"):
        CountWait({"/a": 1}, 0.0, -1.0)


@pytest.mark.parametrize("seed", range(10))
def test_the_turns_do_not_depend_on_the_order_of_the_hellos(seed):
    """Participants announce themselves in whatever order their processes come up; a hello
    that counts messages on a topic another participant wakes on (the executive's first
    active_stage, published before its first turn) gives nobody a turn, so the turns before
    and at the first steps are the same for every order. Before, the navigation got a turn
    before the first step when its hello came before the executive's."""
    import itertools
    import random

    rng = random.Random(seed)
    hellos = {
        "bridge": (0.02, {"/states": 0}, ["/mocap"], []),
        "executive": (0.05, {"/stage": rng.randint(1, 3)}, ["/states", "/status"],
                      ["/status"]),
        "navigation": (0.5, {}, ["/stage", "/states", "/status"], ["/stage", "/status"]),
        "controller": (0.02, {"/status": rng.randint(0, 2)}, ["/states", "/stage"], ["/stage"]),
    }
    seen = set()
    for order in itertools.permutations(ORDER):
        s = LockstepSchedule(ORDER)
        for n in order:
            due, counts, subs, wake = hellos[n]
            s.on_ack(n, True, due, counts, subs, wake)
        before = []
        while (n := s.next_turn()) is not None:   # turns before the first step
            before.append(n)
        steps = [tuple(_turns(s, t)) for t in (0.01, 0.02, 0.05)]
        seen.add((tuple(before), tuple(steps),
                  tuple(tuple(sorted(s.expected(n).items())) for n in ORDER)))
    assert len(seen) == 1, seen
    (before, steps, _), = seen
    assert before == ()
    assert steps == ((), ("bridge", "controller"), ("bridge", "executive", "controller"))
