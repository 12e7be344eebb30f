"""What ``smores-assemble run`` writes on the terminal: whole lines, from any thread."""
from __future__ import annotations

import sys
from types import SimpleNamespace as NS

from smores_assembly.run_job.console import ProgressPrinter, echo, notice, say
from smores_assembly.vocabulary import Phase


class Terminal:
    """The one terminal behind stdout and stderr, written through as a stream of
    ``PYTHONUNBUFFERED=1`` is: each ``write`` is a write(2) of its own, after which
    another thread's write may come."""

    def __init__(self):
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_every_write_is_whole_lines_so_a_node_warn_never_joins_a_progress_line(
        monkeypatch):
    """Fresh-user finding: a node's WARN (echoed to stderr by a log reader thread) landed
    on the progress line's console line: ``print`` wrote the line and its newline apart,
    and the WARN came in between. Each line is one write, ended by its newline, on
    stdout (progress, notices) and stderr (node lines) alike."""
    term = Terminal()
    monkeypatch.setattr(sys, "stdout", term)
    monkeypatch.setattr(sys, "stderr", term)
    status = NS(stage=0, header=NS(stamp=NS(sec=12, nanosec=0)), modules=[
        NS(module="m4", phase=Phase.APPROACH, phase_name="APPROACH", face_gap_mm=61.0,
           retries=0)])
    ProgressPrinter(4).show(None, status, t0=0.0)
    echo("  [executive] [WARN] [12.1] [executive]: late")
    say("a line")
    notice("Ctrl-C: cancelling")
    assert term.writes == [
        "[  12.0 s] stage 1/4 | m4 APPROACH gap 61 mm\n",
        "  [executive] [WARN] [12.1] [executive]: late\n",
        "a line\n", "Ctrl-C: cancelling\n"]
