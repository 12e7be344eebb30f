"""What ``smores-assemble run`` prints and asks on the terminal (no ROS imports)."""
from __future__ import annotations

import os
import select
import sys
import threading
import time

from smores_assembly.vocabulary import Phase


def say(msg: str) -> None:
    """Print one line to stdout at once (the run's output is read live). A reader that
    went away (``run ... | head``) does not end the run: its nodes still have to be
    stopped in order and its report written, so the rest of the output goes to devnull
    (a BrokenPipeError here once left the whole stack running, orphaned)."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


_held_lock = threading.Lock()
#: node lines held back while a prompt waits for an answer (None: no prompt open)
_held: list[str] | None = None


def echo(line: str) -> None:
    """Echo one node line (a WARN or worse) to stderr, from any thread; while :func:`ask`
    waits for an answer it is held back and shown after the answer, so that nothing is
    printed onto the prompt's line."""
    with _held_lock:
        if _held is not None:
            _held.append(line)
            return
    print(line, file=sys.stderr, flush=True)


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _hold(on: bool) -> None:
    global _held
    with _held_lock:
        held, _held = _held, ([] if on else None)
    for line in held or []:
        print(line, file=sys.stderr, flush=True)


def print_plan(plan) -> None:
    """Print the plan's root, total travel [m] and each stage's docks, or undocks in a
    reconfiguration's undocking stage (``--approve``)."""
    say(f"plan: root {plan.root_module} ({plan.root_node}), total travel "
        f"{plan.total_cost_m:.3f} m")
    for k, stage in enumerate(plan.stages):
        undocks = [u for u in getattr(plan, "undocks", ()) if u.stage == k]
        if undocks:
            say(f"  stage {k + 1} (undocking): " + "; ".join(
                f"{u.module} {u.face.value} off {u.from_module} {u.from_face.value}"
                for u in undocks))
            continue
        acts = [a for a in plan.actions if a.stage == k]
        say(f"  stage {k + 1}: " + "; ".join(
            f"{a.module} {a.child_face.value} -> {a.parent_module} {a.parent_face.value}"
            + (f" (helper {a.helper})" if a.needs_helper else "") for a in acts))


def assignment_note(file_plan, stack_plan) -> str:
    """A note when the plan the stack made from the measured (mocap) poses assigns modules
    differently from ``file_plan``, made from the scenario file's poses (what ``plan``
    prints): a near-tie in travel that the mocap noise tips. "" when they agree."""
    a, b = dict(file_plan.assignment), dict(stack_plan.assignment)
    differ = sorted(n for n in b if a.get(n) != b[n])
    if not differ:
        return ""
    return (f"note: planned from the measured poses, the stack assigns "
            f"{', '.join(f'{n}->{b[n]}' for n in differ)}; the scenario file's poses give "
            f"{', '.join(f'{n}->{a.get(n)}' for n in differ)} (total travel "
            f"{stack_plan.total_cost_m:.3f} m vs {file_plan.total_cost_m:.3f} m: a near-tie "
            f"that the measurement noise decides)")


def ask(prompt: str, stop=None, poll_s: float = 0.1) -> str | None:
    """One line from stdin; "" at end of input.

    With ``stop`` (a ``threading.Event``, set by the run's Ctrl-C / SIGTERM handler) the
    prompt never blocks a stop: stdin is waited on in steps of ``poll_s`` [s] and None is
    returned as soon as ``stop`` is set. (``input()`` would resume reading after the
    signal handler ran and hold Ctrl-C until Enter or end of input.)
    """
    if stop is None:
        try:
            return input(prompt)
        except EOFError:
            return ""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    _hold(True)   # node lines wait until the answer (they would land on the prompt line)
    try:
        while not stop.is_set():
            try:
                ready, _, _ = select.select([sys.stdin], [], [], poll_s)
            except (OSError, ValueError):  # stdin closed or not selectable: end of input
                return ""
            if ready:
                line = sys.stdin.readline()
                if not _is_tty(sys.stdin):   # a terminal echoed the answer and its newline
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                return line.rstrip("\n") if line else ""
        sys.stdout.write("\n")
        sys.stdout.flush()
        return None
    finally:
        _hold(False)


class ProgressPrinter:
    """Prints a line whenever the stage or any module's phase changes (at most 1/s else)."""

    def __init__(self, num_stages: int):
        self.num_stages = num_stages
        self.last: list | None = None  # stage and phases last shown
        self.t_last = 0.0

    def show(self, fb, status, t0: float | None = None) -> None:
        """Show the ``Assemble`` feedback ``fb`` and the last ``DockingStatusArray`` ``status``
        (either may be None).

        ``t0``: the report's time origin [s, ROS time] (its first docking activity); when
        given, the line's time is the status sample's stamp from ``t0``, the same clock and
        origin as the report's phase times (the feedback's ``elapsed_s`` comes at 2 Hz of
        wall time, several simulated seconds apart at full pace, and counts from the goal).
        """
        if status is None and fb is None:
            return
        stage = status.stage + 1 if status is not None and status.stage >= 0 else (
            fb.stage if fb is not None else 0)
        mods = []
        key = [stage]
        if status is not None:
            for s in status.modules:
                key.append((s.module, s.phase_name, s.retries))
                extra = ""
                if s.phase in (Phase.POSE_ADJUST, Phase.APPROACH, Phase.RETRY):
                    extra = f" gap {s.face_gap_mm:.0f} mm"
                if s.retries:
                    extra += f" retry {s.retries}"
                mods.append(f"{s.module} {s.phase_name}{extra}")
        now = time.monotonic()
        if fb is None or not mods:   # nothing to show yet (planning, or no module active)
            return
        if key != self.last or now - self.t_last > 5.0:
            self.last, self.t_last = key, now
            t = fb.elapsed_s
            if status is not None and t0 is not None:
                t = status.header.stamp.sec + 1e-9 * status.header.stamp.nanosec - t0
            elapsed = f"{t:6.1f} s"
            say(f"[{elapsed}] stage {stage}/{self.num_stages} | " + " | ".join(mods))
