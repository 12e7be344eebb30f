"""The lockstep protocol in one process (the test gives the turns and takes the answers by
calls, or runs the fake hardware beside the participants, as ``run --single-process``
does), on the pieces that decide whether a run depends on the machine's load or can stand
still (issue 10):

* a turn whose counted input comes late waits for it and says what it waits for and from
  whom: without a bound while its publisher is not matched (endpoint discovery), up to
  ``count_timeout_s`` with it matched (then it goes on without it, and says so);
* a turn or an answer that is lost is given again by the fake hardware, which says what it
  waits for (before, it waited for the answer for ever, without a word);
* the executive holds its first turn with every module tracked while no goal has *entered*:
  an accepted goal whose execution had not started yet let that turn go, and the goal then
  started a turn later (t = 0.10 instead of 0.05 s in Task 1 under load).
"""
from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.ros


class _Answers:
    """Stands in for the fake hardware's answer endpoint (``lockstep.register_local``):
    the answers, without the hellos and, as the fake hardware, without the reports of a
    held turn (``holding``: a turn held for ``HOLD_REPORT_S`` is reported, not answered)."""

    def __init__(self):
        self.acks = []
        self.holding = []

    def _on_ack(self, raw: bytes) -> None:
        from smores_assembly.ros import wire
        ack = wire.read_ack(raw)
        if ack.holding:
            self.holding.append(ack)
        elif not ack.hello:
            self.acks.append(ack)


def _spin(ex, pred, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        ex.spin_once(timeout_sec=0.05)
    return pred()


@pytest.fixture
def executor(ros_context):
    from smores_assembly.ros.executor import LeanExecutor
    ex = LeanExecutor(context=ros_context)
    yield ex
    ex.shutdown()


def _late_turn(executor, node, source, lp):
    """``lp`` (``node``'s participant) subscribed to the counted ``/late``, its answers
    caught in process, ``node`` and ``source`` (the writer to be) in ``executor``, and the
    turn at t = 0.05 s given, which expects one message on ``/late`` that nobody has sent
    yet. Returns ``(data received on /late, answers)``."""
    from std_msgs.msg import Int32

    from smores_assembly.ros import common, lockstep, wire

    got: list[int] = []
    lp.create_subscription(Int32, "/late", lambda m: got.append(m.data), common.LATCHED_QOS)
    answers = _Answers()
    lockstep.register_local(node, lp._ack_pub.topic_name, answers)
    executor.add_node(node)
    executor.add_node(source)
    lp._on_turn(wire.write_turn(0, 50_000_000, ("/late",), [1]))
    return got, answers


@pytest.mark.parametrize("comes", [True, False])
def test_a_turn_waits_for_a_late_counted_message_says_for_what_and_is_bounded(
        ros_context, executor, capfd, comes):
    """A turn whose counted input is late waits for it and says every ``wait_warning_s``
    what it waits for, the counts and the publishers (in the graph, matched); while the
    topic has no matched publisher, without a bound (the next test). The publisher then
    comes; ``comes``: with the message, and the turn runs with it; else the message is
    lost (a matched writer without it: it cannot come) and the turn runs without it
    ``count_timeout_s`` after the last look that found no publisher, saying so."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import Int32

    from smores_assembly.ros import common, lockstep

    node = Node("late_reader", context=ros_context,
                parameter_overrides=[Parameter("use_sim_time", value=True)])
    source = Node("late_writer", context=ros_context)
    try:
        # warnings every 0.2 s of waiting; without the message, the turn runs after 10 s
        lp = lockstep.LockstepParticipant(node, True, count_timeout_s=10.0,
                                          wait_warning_s=0.2)
        got, answers = _late_turn(executor, node, source, lp)
        t0 = time.monotonic()
        log = []   # the warnings come from the participant's 1-s watchdog

        def warned():
            log.append(capfd.readouterr().err)
            return "lockstep: turn at t=0.050 s waiting" in "".join(log)

        assert _spin(executor, warned, 9.0), "".join(log)[-2000:]
        assert not answers.acks and got == [] and lp.turns == 0
        err = "".join(log)
        assert "/late (0/1; publishers in the graph: none; matched here: 0) (no publisher " \
            "of /late matched yet: waiting for discovery, without a bound)" in err, err
        pub = source.create_publisher(Int32, "/late", lockstep.counted(common.LATCHED_QOS))
        if comes:   # it comes: the turn runs with it, at its own time
            pub.publish(Int32(data=7))
        assert _spin(executor, lambda: answers.acks, 60.0)
        assert lp.turns == 1 and answers.acks[0].stamp_ns == 50_000_000
        err = capfd.readouterr().err
        if comes:
            assert got == [7] and "started without" not in err
        else:
            # the bound counts from the last look that found no publisher (the 1-s
            # watchdog's), not from the publisher's creation: at least 10 s from the start
            assert got == [] and time.monotonic() - t0 >= 10.0
            assert "lockstep: turn at t=0.050 s started without the messages it waited" \
                in err and "/late (0/1; publishers in the graph: /late_writer; matched " \
                "here: 1)" in err and "no longer deterministic" in err, err[-2000:]
    finally:
        node.destroy_node()
        source.destroy_node()


def test_a_nodes_turn_waits_for_a_late_counted_message_however_long(
        ros_context, executor, capfd, monkeypatch):
    """A participant as the nodes make it (``lockstep.declare``, the default bound) whose
    counted input has no matched publisher yet (endpoint discovery under load) waits for
    it past any wall time, saying every ``WAIT_WARNING_S`` what it waits for, and runs the
    turn with it when the publisher is matched and its history delivers it. Before, it
    went on without it after 30 s: the docking controller without its /m10/path at
    t = 0.08 s in a loaded run of test_scale_e2e's comb (the CI run of it assembled in
    335.7 s with a contact instead of 260.6 s clean). The participant's wall clock is a
    stand-in moved by the test (no sleeping, no dependence on the machine's speed)."""
    import types

    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import Int32

    from smores_assembly.ros import common, lockstep
    from smores_assembly.sim.lockstep import WAIT_WARNING_S

    waited = [0.0]   # wall seconds the stand-in clock is ahead of the real one
    monkeypatch.setattr(lockstep, "time", types.SimpleNamespace(
        monotonic=lambda: time.monotonic() + waited[0]))
    node = Node("late_reader", context=ros_context, parameter_overrides=[
        Parameter("use_sim_time", value=True), Parameter("lockstep", value=True)])
    source = Node("late_writer", context=ros_context)
    try:
        lp = lockstep.declare(node)
        got, answers = _late_turn(executor, node, source, lp)
        err = ""
        for _ in range(12):   # 12 warning periods: 2 minutes of the stand-in wall clock
            waited[0] += WAIT_WARNING_S
            lp._watchdog()    # the participant's 1-s (wall) watchdog
            executor.spin_once(timeout_sec=0.0)
            err += capfd.readouterr().err
            assert not answers.acks and got == [] and lp.turns == 0, err[-2000:]
        assert "started without" not in err and "no longer deterministic" not in err
        assert err.count("lockstep: turn at t=0.050 s waiting") == 12, err[-2000:]
        last = re.findall(r"waiting (\d+) s for /late \(0/1; publishers in the graph: none; "
                          r"matched here: 0\) \(no publisher of /late matched yet: waiting "
                          r"for discovery, without a bound\)", err)
        assert len(last) == 12 and int(last[-1]) >= 12 * WAIT_WARNING_S, err[-2000:]
        # the writer comes, and discovery matches it: its history brings the message,
        # published before the match, and the turn runs with it
        pub = source.create_publisher(Int32, "/late", lockstep.counted(common.LATCHED_QOS))
        pub.publish(Int32(data=7))
        waited[0] += 10 * WAIT_WARNING_S   # discovery can take long: still no bound
        assert _spin(executor, lambda: answers.acks, 60.0)
        assert lp.turns == 1 and got == [7] and answers.acks[0].stamp_ns == 50_000_000
    finally:
        node.destroy_node()
        source.destroy_node()


class _Dropper:
    """Stands in for an in-process endpoint of the protocol (``lockstep.register_local``)
    and loses the first message that ``lose(raw)`` picks, as a reader whose one-deep
    history was overwritten, or a writer the reader has not matched, would (``every``:
    each message it picks)."""

    def __init__(self, inner, lose, every: bool = False):
        self.inner, self.lose, self.every, self.lost = inner, lose, every, []

    def _drops(self, raw: bytes) -> bool:
        if (self.every or not self.lost) and self.lose(raw):
            self.lost.append(raw)
            return True
        return False

    def _on_turn(self, raw: bytes) -> None:
        if not self._drops(raw):
            self.inner._on_turn(raw)

    def _on_ack(self, raw: bytes) -> None:
        if not self._drops(raw):
            self.inner._on_ack(raw)


@pytest.mark.parametrize("lost", ["turn", "answer", "handed_turn"])
def test_a_lost_turn_or_answer_is_given_again_and_the_turns_stay_those_of_the_timers(
        ros_context, executor, tmp_path, capfd, monkeypatch, lost):
    """The fake hardware and two participants (``a``, ``b``, a 0.05-s timer each: due at
    the same steps, so ``a`` hands ``b`` its turn, chained) in one process; one message of
    the protocol is lost: ``a``'s first turn, the first answer (``b``'s, with ``a``'s in
    it), or the turn ``a`` hands on to ``b``. The fake hardware says (every
    ``WAIT_WARNING_S``) whose answer to which turn it waits for and what has matched, and
    gives the turn again; the run goes on, and each participant runs exactly the turns of
    its timer, t = 0.05 k s, each once (the oracle: the timers' period). Before, the fake
    hardware waited for the answer for ever, without a word (the likely cause of a CI run
    of Task 1 that stood still until its 600-s timeout)."""
    import yaml
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from smores_assembly.ros import fake_hardware, lockstep, wire
    from smores_assembly.ros.fake_hardware import FakeHardwareNode

    monkeypatch.setattr(fake_hardware, "WAIT_WARNING_S", 0.3, raising=False)
    scen = tmp_path / "scenario.yaml"
    scen.write_text(yaml.safe_dump({"name": "t", "module_width": 0.1,
                                    "target": {"nodes": ["n0"], "edges": []},
                                    "modules": {"m0": [0.0, 0.0, 0.0]}}))
    fake = FakeHardwareNode(context=ros_context, parameter_overrides=[
        Parameter("scenario", value=str(scen)), Parameter("lockstep", value=True),
        Parameter("lockstep_participants", value=["a", "b"]),
        Parameter("lockstep_settle_s", value=0.0), Parameter("real_time_factor", value=0.0)])
    nodes, times = {}, {"a": [], "b": []}
    try:
        for name in ("a", "b"):
            n = nodes[name] = Node(name, context=ros_context, parameter_overrides=[
                Parameter("use_sim_time", value=True)])
            n.lp = lockstep.LockstepParticipant(n, True)
            n.lp.create_timer(0.05, lambda n=n, name=name: times[name].append(
                n.get_clock().now().nanoseconds))
        a, b = nodes["a"], nodes["b"]
        ack_topic = fake._ack_sub.topic_name
        if lost == "turn":
            topic = a.lp._turn_sub.topic_name
            drop = _Dropper(a.lp, lambda raw: wire.read_turn(raw).stamp_ns > 0)
        elif lost == "answer":
            topic = ack_topic
            # (b's, with a's in it: a hands b its turn)
            drop = _Dropper(fake, lambda raw: not wire.read_ack(raw).hello)
        else:
            topic = b.lp._turn_sub.topic_name
            drop = _Dropper(b.lp, lambda raw: bool(wire.read_turn(raw).chained))
        lockstep.register_local(fake, topic, drop)   # (the context's endpoint of topic)
        for n in (fake, a, b):
            executor.add_node(n)
        assert _spin(executor, lambda: fake.world.t >= 0.5, 60.0), (
            fake.world.t, drop.lost, capfd.readouterr().err[-3000:])
        assert drop.lost, "nothing was lost: the test did not test anything"
        err = capfd.readouterr().err
        assert "lockstep: waiting 0 s for a's answer to its turn at t=0.050 s" in err \
            or "lockstep: waiting 1 s for a's answer to its turn at t=0.050 s" in err, \
            err[-3000:]
        assert "subscription(s) matched" in err and "giving the turn again" in err
        if lost == "handed_turn":
            assert "to be handed on with b's turn" in err
        if lost != "turn":
            assert "came again after it was answered" in err
        for name in ("a", "b"):
            ticks = [t / 5e7 for t in times[name]]
            assert ticks == list(range(1, len(ticks) + 1)), (name, ticks)
            assert len(ticks) >= 9
    finally:
        for n in nodes.values():
            n.destroy_node()
        fake.destroy_node()


def _states_msg(ids):
    from smores_assembly.msg import ModuleState, ModuleStateArray
    msg = ModuleStateArray()
    msg.modules = [ModuleState(id=m, x=0.2 * i, y=0.0, yaw=0.0, tracked=True)
                   for i, m in enumerate(ids)]
    return msg


@pytest.mark.parametrize("goal_first", [False, True])
def test_the_first_tracked_turn_stays_held_until_a_goal_has_entered(ros_context, executor,
                                                                  goal_first):
    """``goal_first``: the goal was accepted (the action server's goal callback) before the
    turn came, but its execution (a task of its own) has not started: the turn stays held
    all the same (before: answered at once, the goal entered one turn later), and the goal's
    entry continues in that very turn."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from smores_assembly.action import Assemble
    from smores_assembly.msg import ModuleStateArray
    from smores_assembly.ros import common, lockstep, names, wire
    from smores_assembly.ros.executive import ExecutiveNode

    exe = ExecutiveNode(context=ros_context,
                        parameter_overrides=[Parameter("lockstep", value=True),
                                             Parameter("use_sim_time", value=True)])
    source = Node("states_source", context=ros_context)
    try:
        lp = exe.lockstep
        answers = _Answers()
        lockstep.register_local(exe, lp._ack_pub.topic_name, answers)
        executor.add_node(exe)
        executor.add_node(source)
        pub = source.create_publisher(ModuleStateArray, names.STATES,
                                      lockstep.counted(common.STATES_PUB_QOS, depth=1))
        states = exe.resolve_topic_name(names.STATES)
        # a first turn before the states: not every module tracked, answered
        lp._on_turn(wire.write_turn(0, 0, (), []))
        assert _spin(executor, lambda: len(answers.acks) == 1, 30.0)
        pub.publish(_states_msg(["m0", "m1", "m2"]))
        if goal_first:
            assert exe._on_goal(Assemble.Goal()).name == "ACCEPT"
            assert exe.runner.busy
        lp._on_turn(wire.write_turn(0, 50_000_000, (states,), [1]))
        assert _spin(executor, lambda: lp.turns == 2, 30.0)   # the states came: it runs
        assert not _spin(executor, lambda: len(answers.acks) > 1, 2.0), \
            "the first turn with every module tracked was answered without a goal"
        # the goal's execution starts now: it continues in the held turn of t = 0.05 s
        task = executor.create_task(exe._waiter.enter(exe._all_tracked))
        assert _spin(executor, task.done, 10.0)
        assert lp.in_turn and exe.get_clock().now().nanoseconds == 50_000_000
        assert len(answers.acks) == 1
        exe._waiter.release()   # no goal entered (_goal_entered is False): still held
        assert not _spin(executor, lambda: len(answers.acks) > 1, 1.0)
    finally:
        exe.destroy_node()
        source.destroy_node()


@pytest.mark.parametrize("case", ["held", "held_handed_on", "reports_lost"])
def test_a_held_turn_is_said_once_without_warnings_and_a_lost_answer_still_recovered(
        ros_context, executor, tmp_path, capfd, monkeypatch, case):
    """The fake hardware and two participants (``a``, ``b``, a 0.05-s timer each: ``a``
    hands ``b`` its turn, chained) in one process; one of them holds its turn at
    t = 0.10 s on purpose (as the executive while a goal is prepared or awaits approval)
    for three of the fake hardware's ``WAIT_WARNING_S`` periods, then answers, and that
    answer is lost. The holder reports the hold (``LockstepAck.holding``) and the fake hardware
    says once, as info, that it holds the simulation, instead of warning every period that
    the answer is late (fresh-user finding: "waiting 10 s for executive's answer ..."
    every 10 s at the approval prompt), and keeps giving the turn again: the lost answer is
    given again and the run goes on, each participant running exactly the turns of its
    timer. ``held``: ``a`` holds (the awaited one); ``held_handed_on``: ``b`` holds the
    turn ``a`` handed on (the fake hardware awaits ``a``'s answer in ``b``'s); with
    ``reports_lost``: ``a`` holds, and every report after the first is lost: the fake
    hardware warns again as before."""
    import yaml
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from smores_assembly.ros import fake_hardware, lockstep, wire
    from smores_assembly.ros.fake_hardware import FakeHardwareNode

    period = 2.0
    monkeypatch.setattr(fake_hardware, "WAIT_WARNING_S", period, raising=False)
    scen = tmp_path / "scenario.yaml"
    scen.write_text(yaml.safe_dump({"name": "t", "module_width": 0.1,
                                    "target": {"nodes": ["n0"], "edges": []},
                                    "modules": {"m0": [0.0, 0.0, 0.0]}}))
    fake = FakeHardwareNode(context=ros_context, parameter_overrides=[
        Parameter("scenario", value=str(scen)), Parameter("lockstep", value=True),
        Parameter("lockstep_participants", value=["a", "b"]),
        Parameter("lockstep_settle_s", value=0.0), Parameter("real_time_factor", value=0.0)])
    holder = "b" if case == "held_handed_on" else "a"
    held_ns = 100_000_000
    released = [False]
    nodes, times = {}, {"a": [], "b": []}
    try:
        for name in ("a", "b"):
            n = nodes[name] = Node(name, context=ros_context, parameter_overrides=[
                Parameter("use_sim_time", value=True)])
            # the hold is reported after 0.1 s (at the 1-s watchdog): before the first
            # warning of the fake hardware, at `period`
            n.lp = lockstep.LockstepParticipant(n, True, hold_report_s=0.1)
            n.lp.create_timer(0.05, lambda n=n, name=name: times[name].append(
                n.get_clock().now().nanoseconds))
        hn = nodes[holder]
        hn.lp.hold(lambda: hn.get_clock().now().nanoseconds == held_ns and not released[0])
        reports, answers_lost = [], []

        def lose(raw):
            ack = wire.read_ack(raw)
            if ack.holding:
                reports.append(ack)
                return case == "reports_lost" and len(reports) > 1
            # the first answer to the held turn (b's, with a's in it, or a's own)
            if released[0] and ack.stamp_ns == held_ns and not answers_lost:
                answers_lost.append(raw)
                return True
            return False

        losing = _Dropper(fake, lose, every=True)
        lockstep.register_local(fake, fake._ack_sub.topic_name, losing)
        for n in (fake, *nodes.values()):
            executor.add_node(n)

        def step():
            if not released[0] and fake._answer_warned >= 3:   # three periods held
                released[0] = True
                hn.lp.poke()
            return fake.world.t >= 0.5

        assert _spin(executor, step, 60.0), (fake.world.t, capfd.readouterr().err[-3000:])
        assert released[0] and answers_lost, "the answer after the hold was not lost"
        assert reports and {(r.node, r.stamp_ns) for r in reports} == {(holder, held_ns)}
        err = capfd.readouterr().err
        said = f"lockstep: {holder} holds the simulation at t=0.100 s (its turn is held " \
               "on purpose"
        # (any answer, any turn: "lockstep: waiting for b" is the start-up's wait for hellos)
        warned = re.findall(r"lockstep: waiting \d+ s for \w+'s answer", err)
        if case == "reports_lost":   # the second period got no report: a warning again
            assert warned and err.count(said) == 1, err[-3000:]
            assert re.search(r"lockstep: waiting \d+ s for a's answer to its turn at "
                             r"t=0\.100 s", err), err[-3000:]
        else:
            assert err.count(said) == 1 and not warned, err[-3000:]
            assert f"lockstep: {holder} released the simulation at t=0.100 s" in err
        # the lost answer was given again (the holder answers the repeated turn again)
        assert "came again after it was answered" in err, err[-3000:]
        for name in ("a", "b"):
            ticks = [t / 5e7 for t in times[name]]
            assert ticks == list(range(1, len(ticks) + 1)), (name, ticks)
            assert len(ticks) >= 9
    finally:
        for n in nodes.values():
            n.destroy_node()
        fake.destroy_node()
