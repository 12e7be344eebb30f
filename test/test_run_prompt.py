"""``run --approve``: the prompt never blocks Ctrl-C (field case: 55 s until Enter)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import installed
import pytest

from smores_assembly.run_job.console import ask

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


@pytest.mark.ros
def test_ctrl_c_at_the_approval_prompt_cancels_at_once(tmp_path, ros_domain):
    out = tmp_path / "out"
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
        assert prompted.wait(120), "no approval prompt"
        proc.send_signal(signal.SIGINT)  # stdin stays open: nothing typed
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
        t.join(5)
    text = "".join(seen)
    assert rc == 130, text[-3000:]
    assert "Traceback" not in text
    report = json.loads((out / "report.json").read_text())
    assert report["success"] is False and "interrupted" in report["error"]
