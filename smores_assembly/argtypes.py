"""Command-line value types with bounds (``argparse`` ``type=`` callables) and the
entry-point wrapper, one definition for every CLI of the package (no ROS imports)."""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Callable


#: Exit status of a command ended by Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED_STATUS = 130


def run_cli(main: Callable[[], int | None], prog: str | None = None,
            interrupted: str | Callable[[], str] = "interrupted") -> int:
    """Run a CLI's ``main`` and return its exit status; a reader that went away (``| head``)
    ends it quietly with 0 instead of a BrokenPipeError traceback: stdout is pointed at
    devnull so the interpreter's final flush does not raise again (Python docs, "Note on
    SIGPIPE"). Ctrl-C (a ``KeyboardInterrupt`` that ``main`` did not handle itself) prints
    one line ``<prog>: <interrupted>`` on stderr, no traceback, and returns 130
    (``interrupted`` may be a callable giving the line at that moment)."""
    try:
        status = int(main() or 0)
        sys.stdout.flush()   # a closed pipe shows up here, inside the handler below
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        name = prog or os.path.basename(sys.argv[0] or "") or "python"
        line = interrupted() if callable(interrupted) else interrupted
        print(f"{name}: {line}", file=sys.stderr, flush=True)
        return INTERRUPTED_STATUS


def bounded(kind: type = float, lo: float | None = None, hi: float | None = None,
            lo_open: bool = False) -> Callable[[str], float]:
    """An ``argparse`` type that parses ``kind`` (``float`` or ``int``) and accepts values
    in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``; an absent bound is unbounded; floats
    must be finite). A refusal names the allowed range and the text given, e.g.
    ``expected a number > 0, got 'x'``.

    Raises:
        argparse.ArgumentTypeError: from the returned callable, on a bad value.
    """
    noun = "an integer" if kind is int else "a number"

    def fmt(v: float) -> str:
        return str(int(v)) if kind is int else f"{v:g}"
    if lo is not None and hi is not None:
        left = "(" if lo_open else "["
        want = f"{noun} in {left}{fmt(lo)}, {fmt(hi)}]"
    elif lo is not None:
        want = f"{noun} {'>' if lo_open else '>='} {fmt(lo)}"
    elif hi is not None:
        want = f"{noun} <= {fmt(hi)}"
    else:
        want = noun

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        ok = (math.isfinite(v)
              and (lo is None or (v > lo if lo_open else v >= lo))
              and (hi is None or v <= hi))
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return v
    parse.__name__ = kind.__name__  # argparse names the type in "invalid <name> value"
    return parse
