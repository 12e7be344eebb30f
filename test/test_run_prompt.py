"""``run --approve``: the prompt never blocks Ctrl-C (field case: 55 s until Enter)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import installed
import pytest

from smores_assembly.run_job.console import ask
from ros_helpers import HANG_S

REPO = Path(__file__).resolve().parents[1]
FIELD = REPO / "test" / "data" / "field"


@pytest.fixture
def pipe_stdin(monkeypatch):
    r, w = os.pipe()
    reader = os.fdopen(r, "r")
    monkeypatch.setattr(sys, "stdin", reader)
    yield w
    reader.close()
    try:
        os.close(w)
    except OSError:
        pass


def test_ask_returns_none_when_stopped_while_nothing_is_typed(pipe_stdin):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert ask("ok? ", stop) is None


def test_ask_returns_the_typed_line_or_empty_at_end_of_input(pipe_stdin):
    stop = threading.Event()
    os.write(pipe_stdin, b"yes\n")
    assert ask("ok? ", stop) == "yes"
    os.close(pipe_stdin)
    assert ask("ok? ", stop) == ""


def test_node_lines_wait_until_the_prompt_is_answered(pipe_stdin, monkeypatch):
    """A node's WARN echoed while the prompt waits is shown after the answer, not on the
    prompt's line (fresh-user finding)."""
    import io
    from smores_assembly.run_job.console import echo
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    seen_before_answer: list[str] = []

    def node_warns_then_user_answers():
        echo("  [WARN] late")
        seen_before_answer.append(err.getvalue())
        os.write(pipe_stdin, b"n\n")

    stop = threading.Event()
    threading.Timer(0.3, node_warns_then_user_answers).start()
    assert ask("ok? ", stop) == "n"
    assert seen_before_answer == [""]            # held while the prompt was open ...
    assert err.getvalue() == "  [WARN] late\n"   # ... and shown once it was answered
    echo("  [WARN] after")                       # no prompt: at once
    assert err.getvalue().endswith("  [WARN] after\n")


def _ctrl_c_line() -> str:
    from smores_assembly.run_job.stack import INTERRUPT_NOTICE
    return INTERRUPT_NOTICE.format(what="Ctrl-C")


def test_the_first_ctrl_c_is_answered_at_once_with_one_line(capsys):
    """Ctrl-C during ``run`` was silent for ~17 s (cancel, node shut-down, report:
    fresh-user finding). The first signal prints one line before anything else is done;
    a second one says that the shut-down goes on (it was ignored without a word: second
    fresh-user finding), a third nothing more."""
    from smores_assembly.run_job.stack import INTERRUPT_AGAIN_NOTICE, Interrupts
    from smores_assembly.teardown import TEARDOWN_TIMEOUT_S
    signals = Interrupts()
    try:
        os.kill(os.getpid(), signal.SIGINT)   # the handler runs before the next line
        assert signals.interrupted.is_set() and signals.stop.is_set()
        assert signals.wait_said(1, HANG_S)
        first = capsys.readouterr().out
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.wait_said(2, HANG_S)
        second = capsys.readouterr().out
        os.kill(os.getpid(), signal.SIGINT)
    finally:
        signals.restore()
    signals._announcer.join(timeout=HANG_S)
    assert not signals._announcer.is_alive()
    assert first == _ctrl_c_line() + "\n"
    assert second == INTERRUPT_AGAIN_NOTICE.format(what="Ctrl-C",
                                                   bound=TEARDOWN_TIMEOUT_S) + "\n"
    assert "still shutting down" in second
    assert capsys.readouterr().out == ""
    assert signals.said == 2


def test_sigterm_is_named_as_sigterm_and_exits_143(capsys):
    """A SIGTERM was reported as "interrupted (Ctrl-C)" with exit 130 (fresh-user
    finding): the notice, the event's name and the exit status name the signal that came
    first; a later Ctrl-C does not rename it."""
    from smores_assembly.run_job.stack import INTERRUPT_NOTICE, Interrupts
    signals = Interrupts()
    try:
        assert signals.exit_code == 130 and signals.interrupted.what == "Ctrl-C"
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.interrupted.is_set() and signals.wait_said(1, HANG_S)
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.wait_said(2, HANG_S)
    finally:
        signals.restore()
    assert signals.interrupted.what == "SIGTERM" and signals.exit_code == 143
    out = capsys.readouterr().out
    assert out.startswith(INTERRUPT_NOTICE.format(what="SIGTERM") + "\n"), out
    assert "SIGTERM again" in out and "Ctrl-C" not in out, out


def test_a_sigint_ignored_at_the_start_stays_ignored(capsys):
    """A run started with SIGINT ignored (a background job of a non-interactive shell)
    keeps ignoring it once its handlers are in force, as before them (fresh-user finding:
    it was caught once the stack was up); SIGTERM still stops it."""
    from smores_assembly.run_job.stack import Interrupts
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        signals = Interrupts()
        try:
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)     # ignored: discarded at once
            signal.raise_signal(signal.SIGTERM)
            assert signals.wait_said(1, HANG_S)
        finally:
            signals.restore()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert signals.interrupted.what == "SIGTERM" and signals.exit_code == 143
    assert "Ctrl-C" not in capsys.readouterr().out


def test_ctrl_c_at_the_prompt_is_answered_on_a_line_of_its_own(pipe_stdin, capsys,
                                                                monkeypatch):
    """At the approval prompt the line starts on a new line (not after "[y/N] "), and
    the prompt's own line end is not doubled."""
    from smores_assembly.run_job import console
    from smores_assembly.run_job.stack import Interrupts
    real_select = console.select.select

    def select_then_ctrl_c(*a):   # the prompt is written and waits: Ctrl-C now
        if not signals.interrupted.is_set():
            os.kill(os.getpid(), signal.SIGINT)
        return real_select(*a)

    signals = Interrupts()
    monkeypatch.setattr(console.select, "select", select_then_ctrl_c)
    try:
        assert ask("ok? ", signals.stop) is None
    finally:
        signals.restore()
    assert capsys.readouterr().out == "ok? \n" + _ctrl_c_line() + "\n"


def _answer_the_prompt(out: Path, answer) -> tuple[int, str]:
    """``run pair.yaml --approve``; at the prompt, ``answer(proc)``; (exit status, output)."""
    proc = subprocess.Popen(
        [*installed.cli(), "run", str(FIELD / "pair.yaml"),
         "--approve", "--out", str(out), "--real-time-factor", "5"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=REPO)
    seen: list[str] = []
    prompted = threading.Event()

    def pump():
        buf = ""
        while True:
            ch = proc.stdout.read(1)
            if not ch:
                break
            buf += ch
            if "start moving? [y/N]" in buf:
                prompted.set()
        seen.append(buf)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    try:
        assert prompted.wait(HANG_S), "no approval prompt"
        answer(proc)
        rc = proc.wait(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
        t.join(HANG_S)   # the pump reads to the end of the output
    return rc, "".join(seen)


@pytest.mark.ros
def test_answering_no_at_the_prompt_moves_nothing_and_exits_3(tmp_path, ros_domain):
    """Answered after more than ``WAIT_WARNING_S``: the executive holds its turn while the
    prompt waits, on purpose; the fake hardware says so once in the nodes' log instead of
    warning every 10 s that the executive's answer is late (fresh-user finding: "waiting
    10 s for executive's answer ..." shown under the prompt)."""
    from smores_assembly.sim.lockstep import WAIT_WARNING_S

    def no(proc):
        time.sleep(WAIT_WARNING_S + 3.0)
        proc.stdin.write("n\n")
        proc.stdin.flush()
    rc, text = _answer_the_prompt(tmp_path / "out", no)
    assert "for executive's answer" not in text, text[-3000:]
    log = (tmp_path / "out" / "nodes.log").read_text()
    assert "lockstep: executive holds the simulation at t=" in log, log[-3000:]
    assert "for executive's answer" not in log, log[-3000:]
    assert rc == 3, text[-3000:]
    assert "plan not approved" in text and "Traceback" not in text, text[-3000:]
    # said once (fresh-user finding: twice, again on the NOT APPROVED line)
    assert text.count("plan not approved") == 1, text[-3000:]
    assert "NOT APPROVED: 0/" in text and "FAILED" not in text, text[-3000:]
    prompt_line = next(ln for ln in text.splitlines() if "start moving? [y/N]" in ln)
    assert prompt_line.endswith("[y/N] "), prompt_line   # nothing printed onto it
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["success"] is False and "not approved" in report["error"]
    assert report["connections"] == []


@pytest.mark.ros
def test_ctrl_c_at_the_approval_prompt_cancels_at_once(tmp_path, ros_domain):
    rc, text = _answer_the_prompt(tmp_path / "out",
                                  lambda proc: proc.send_signal(signal.SIGINT))
    assert rc == 130, text[-3000:]
    assert "Traceback" not in text
    # nothing moved: the message says so (fresh-user finding: it said "every module
    # stopped"), and the headline names the interrupt, not a failure
    assert "INTERRUPTED: 0/" in text and "FAILED" not in text, text[-3000:]
    # answered at once, on a line of its own, before the run's later lines
    assert f"\n{_ctrl_c_line()}\n" in text, text[-3000:]
    assert text.index(_ctrl_c_line()) < text.index("INTERRUPTED: 0/"), text[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["success"] is False and "interrupted" in report["error"]
    assert "before any module moved" in report["error"], report["error"]
    assert report["connections"] == []


@pytest.mark.ros
def test_a_reader_that_goes_away_does_not_orphan_the_stack(tmp_path, ros_domain):
    """``run ... | head -1``: the closed pipe made the first line after the nodes started
    raise BrokenPipeError; the run exited 0 at once and left all seven nodes running,
    orphaned (field case). Now the run goes on without a console: it assembles, stops every
    node in order (each exit status in the report) and writes its report. The reader is
    gone before the first line, so every line meets the closed pipe."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(
            [*installed.cli(), "run", str(FIELD / "pair.yaml"), "--out", str(tmp_path / "o"),
             "--real-time-factor", "0"], stdout=w, stderr=subprocess.PIPE, text=True,
            cwd=REPO, timeout=600)
    finally:
        os.close(w)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["success"] is True
    assert report["node_exit_codes"] and set(report["node_exit_codes"].values()) == {0}, \
        report["node_exit_codes"]


@pytest.mark.ros
def test_nodes_stop_when_the_run_is_killed(tmp_path, ros_domain):
    """``smores-assemble run`` killed with SIGKILL (no handler can run) must not leave its
    nodes running: each node checks that its launch runner is still its parent
    (``common.launcher_gone``) and stops itself."""
    proc = subprocess.Popen(
        [*installed.cli(), "run", str(FIELD / "pair.yaml"), "--out", str(tmp_path / "o"),
         "--real-time-factor", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:   # the nodes are up once the run says so
            if line.startswith("started "):
                break
        children_file = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        nodes = [int(p) for p in children_file.read_text().split()]
        assert len(nodes) == 7, nodes
    finally:
        proc.kill()
        proc.wait(timeout=HANG_S)

    def alive(pid: int) -> bool:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] != "Z"   # a zombie has exited

    deadline = time.monotonic() + HANG_S
    while any(alive(p) for p in nodes) and time.monotonic() < deadline:
        time.sleep(0.2)   # polling the process table: no event to await
    left = [p for p in nodes if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"nodes still running {HANG_S:.0f} s after the run was killed: {left}"
