"""What ``smores-assemble run`` prints and asks on the terminal (no ROS imports)."""
from __future__ import annotations

import math
import os
import select
import sys
import threading

from smores_assembly.report import activity_start
from smores_assembly.vocabulary import Phase, counted


#: held while a whole line is written to stdout or stderr (any thread)
_write_lock = threading.Lock()


def _write_line(stream, line: str) -> None:
    """Write ``line`` and its newline to ``stream`` in one write, then flush. ``print``
    writes the text and the newline apart, and on an unbuffered stream
    (``PYTHONUNBUFFERED``) each is a write of its own: a node's WARN echoed from another
    thread landed between a progress line and its newline, on the same console line
    (fresh-user finding)."""
    with _write_lock:
        stream.write(line + "\n")
        stream.flush()


def say(msg: str) -> None:
    """Print one line to stdout at once (the run's output is read live). A reader that
    went away (``run ... | head``) does not end the run: its nodes still have to be
    stopped in order and its report written, so the rest of the output goes to devnull
    (a BrokenPipeError here once left the whole stack running, orphaned)."""
    try:
        _write_line(sys.stdout, msg)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


_held_lock = threading.Lock()
#: node lines held back while a prompt waits for an answer (None: no prompt open)
_held: list[str] | None = None
#: the open prompt's line still waits for its end (an answer, or the newline that
#: :func:`ask` or :func:`notice` writes when the run is stopped at the prompt)
_prompt_line = {"open": False}


def echo(line: str) -> None:
    """Echo one node line (a WARN or worse) to stderr, from any thread; while :func:`ask`
    waits for an answer it is held back and shown after the answer, so that nothing is
    printed onto the prompt's line."""
    with _held_lock:
        if _held is not None:
            _held.append(line)
            return
    _write_line(sys.stderr, line)


def notice(msg: str) -> None:
    """Print one line at once from any thread, also while :func:`ask` waits (unlike
    :func:`echo`, not held back): on a new line of its own when a prompt is open."""
    with _held_lock:
        if _prompt_line["open"]:
            _prompt_line["open"] = False
            msg = "\n" + msg
        say(msg)


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
        _write_line(sys.stderr, line)


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


def started_line(names: list[str], log_path) -> str:
    """The line that says which node processes the run started here (``names``) and where
    their log is; with none (``--nodes none``: the whole stack runs elsewhere) it says so
    (it said "started 0 processes:  (logs: ...)" of a log that stays empty)."""
    if not names:
        return "started no process here (--nodes none): every node of the stack runs elsewhere"
    return f"started {counted(len(names), 'process')}: {', '.join(names)} (logs: {log_path})"


def params_line(path: str, applied: dict[str, dict[str, object]]) -> str:
    """The line that says which ``--params-file`` a run applied and what it set:
    ``applied`` is node -> parameter -> value in force from the file (the report records
    the same, ``params_file`` and ``params_applied``)."""
    if not applied:
        return f"params file {path}: no value of it in force on the nodes started here"
    return f"params file {path} applied: " + "; ".join(
        f"{node} " + ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                               for k, v in sorted(d.items()))
        for node, d in applied.items())


#: relative difference of total travel up to which two plans' assignments are called a
#: near-tie that the measurement noise decides
NEAR_TIE_REL = 0.05


def assignment_note(file_plan, stack_plan) -> str:
    """A note when the plan the stack made from the measured (mocap) poses assigns modules
    differently from ``file_plan``, made from the scenario file's poses (what ``plan``
    prints), with its likely cause: a different physical root module (two modules nearly
    as near the modules' centroid, Sec. root search), a near-tie in travel (within
    :data:`NEAR_TIE_REL`) that the mocap noise tips, or else measured poses that differ
    from the file's. "" when they agree."""
    a, b = dict(file_plan.assignment), dict(stack_plan.assignment)
    differ = sorted(n for n in b if a.get(n) != b[n])
    if not differ:
        return ""
    foreign = sorted(set(b.values()) - set(a.values())
                     - set(getattr(file_plan, "idle", ()) or ()))
    if foreign and not set(b.values()) & set(a.values()):
        # a stack elsewhere (``--nodes``) tracks other modules: no tie of any kind (a
        # fresh user's run against a stack of another scenario was told "the physical
        # root differs ... the measurement noise decides")
        return (f"warning: the stack assigns modules the scenario file does not name "
                f"({', '.join(foreign[:6])}{', ...' if len(foreign) > 6 else ''}): it "
                "tracks another set of modules than the file's (a stack started with "
                "another scenario?); the report names the stack's modules")
    new, old = stack_plan.total_cost_m, file_plan.total_cost_m
    root_new = getattr(stack_plan, "root_module", None)
    root_old = getattr(file_plan, "root_module", None)
    if root_new != root_old:
        why = (f"the physical root differs, {root_new} vs {root_old}: both are nearly as "
               "near the modules' centroid, and the measurement noise decides")
    elif abs(new - old) <= NEAR_TIE_REL * max(new, old, 1e-9):
        why = "a near-tie that the measurement noise decides"
    else:
        why = ("more than a near-tie: the measured start poses differ from the scenario "
               "file's")
    return (f"note: planned from the measured poses, the stack assigns "
            f"{', '.join(f'{n}->{b[n]}' for n in differ)}; the scenario file's poses give "
            f"{', '.join(f'{n}->{a.get(n)}' for n in differ)} (total travel "
            f"{new:.3f} m vs {old:.3f} m: {why})")


class StackPlanNote:
    """Says :func:`assignment_note` once, as soon as the plan the stack made (from the
    measured poses) is known: with the plan at the ``--approve`` prompt, else before the
    first progress line (it was printed only after the run: fresh-user finding).

    ``stack_plan``: returns the stack's plan (a :class:`~smores_assembly.planning.Plan`)
    or None while it is not known.
    """

    def __init__(self, file_plan, stack_plan):
        self.file_plan = file_plan
        self.stack_plan = stack_plan
        #: the stack's plan was seen (and the note said when there was one)
        self.seen = False

    def check(self, plan=None) -> None:
        """Say the note if the stack's plan (``plan``, else ``stack_plan()``) is known
        and not yet seen."""
        if self.seen:
            return
        plan = plan if plan is not None else self.stack_plan()
        if plan is None:
            return
        self.seen = True
        note = assignment_note(self.file_plan, plan)
        if note:
            say(note)


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
    _prompt_line["open"] = True
    _hold(True)   # node lines wait until the answer (they would land on the prompt line)
    try:
        while not stop.is_set():
            try:
                ready, _, _ = select.select([sys.stdin], [], [], poll_s)
            except (OSError, ValueError):  # stdin closed or not selectable: end of input
                return ""
            if ready:
                line = sys.stdin.readline()
                _end_prompt_line(echoed=_is_tty(sys.stdin))
                return line.rstrip("\n") if line else ""
        _end_prompt_line(echoed=False)
        return None
    finally:
        _prompt_line["open"] = False
        _hold(False)


def _end_prompt_line(echoed: bool) -> None:
    """End the open prompt's line: a terminal echoed the answer and its newline
    (``echoed``); else a newline, unless :func:`notice` wrote one already."""
    with _held_lock:
        if _prompt_line["open"] and not echoed:
            sys.stdout.write("\n")
            sys.stdout.flush()
        _prompt_line["open"] = False


def _mm(value: float) -> str:
    """``value`` [mm] to the millimetre as the progress line shows it: ``0`` for a value
    that rounds to zero from below (``-0`` was printed for a gap of -0.3 mm)."""
    text = f"{value:.0f}"
    return "0" if text == "-0" else text


#: An unchanged progress line is printed again (its gaps updated) after this much simulated
#: time without a change [s]: a long NAVIGATE still shows signs of life, and a 10-Hz
#: status stream does not print a line per status.
REPEAT_S = 5.0


class ProgressPrinter:
    """The progress lines of ``run``: a line whenever the stage or any module's phase or
    retry count changes, and the same line again after :data:`REPEAT_S` of simulated time
    without a change, e.g. ``[  22.6 s] stage 3/4 | m4 APPROACH gap 61 mm``.

    Fed with every ``DockingStatusArray`` of the run as it is recorded (:meth:`on_status`,
    an :attr:`Observations.status_listeners` entry), it prints every phase change that the
    report holds, the last DOCKED or UNDOCKED of a run included, at the report's time of
    it (fresh-user finding: fed the last status seen every 0.5 s of wall time, it missed
    the phases shorter than that, e.g. the one-status DOCKED at a stage's end, and timed
    the others by a status up to 1.4 s after their start).

    ``recorder``: the run's :class:`~smores_assembly.report.PhaseRecorder` (the report's
    origin, its first docking activity, is read from it); ``feedback``: returns the last
    ``Assemble`` feedback (None before the first one): its stage stands in for a status
    without an active stage.
    """

    def __init__(self, num_stages: int, plan_note: StackPlanNote | None = None,
                 recorder=None, feedback=lambda: None):
        self.num_stages = num_stages
        #: said before the first progress line (the plan is known by then)
        self.plan_note = plan_note
        self.recorder = recorder
        self.feedback = feedback
        self.last: list | None = None  # stage and phases last shown
        self.t_last = -math.inf        # their line's time [s]
        self.t0: float | None = None   # the report's origin [s, ROS time], once known

    def on_status(self, status) -> None:
        """Show ``status`` (a ``DockingStatusArray``, already given to ``recorder``), timed
        from the report's origin; nothing before the first docking activity (the report
        starts there)."""
        if self.t0 is None and self.recorder is not None:
            # fixed once known: a later phase cannot start before it (stamps in order)
            self.t0 = activity_start(self.recorder, None)
        if self.t0 is not None:
            self.show(self.feedback(), status, self.t0)

    def show(self, fb, status, t0: float | None = None) -> None:
        """Show the ``Assemble`` feedback ``fb`` and the ``DockingStatusArray`` ``status``
        (either may be None).

        ``t0``: the report's time origin [s, ROS time] (its first docking activity); when
        given, the line's time is the status's stamp from ``t0``, the same clock and
        origin as the report's phase times, else the feedback's ``elapsed_s`` (it comes at
        2 Hz of wall time, several simulated seconds apart at full pace, and counts from
        the goal).
        """
        if status is None:
            return
        stage = status.stage + 1 if status.stage >= 0 else (fb.stage if fb is not None else 0)
        mods = []
        key = [stage]
        for s in status.modules:
            key.append((s.module, s.phase_name, s.retries))
            extra = ""
            if s.phase in (Phase.POSE_ADJUST, Phase.APPROACH, Phase.RETRY):
                extra = f" gap {_mm(s.face_gap_mm)} mm"
            if s.retries:
                extra += f" retry {s.retries}"
            mods.append(f"{s.module} {s.phase_name}{extra}")
        if t0 is not None:
            t = status.header.stamp.sec + 1e-9 * status.header.stamp.nanosec - t0
        elif fb is not None:
            t = fb.elapsed_s
        else:
            return
        if not mods:   # nothing to show (planning, or no module active)
            return
        if key != self.last or t - self.t_last > REPEAT_S:
            if self.plan_note is not None:
                self.plan_note.check()
            self.last, self.t_last = key, t
            say(f"[{t:6.1f} s] stage {stage}/{self.num_stages} | " + " | ".join(mods))
