"""Benchmarks (``python -m bench``); helpers shared by them."""
import os
import sys
from pathlib import Path

#: The checkout's root (``bench/..``).
REPO = Path(__file__).resolve().parents[1]


def smores_assemble() -> list[str]:
    """The command line of the installed ``smores-assemble`` (``make setup``), as the
    benchmarks start it: next to ``sys.executable`` (the venv's python, or an activated
    venv), else in the checkout's ``.venv/bin`` (a bare ``python -m bench...`` from the
    checkout). ``python -m smores_assembly.cli`` from the checkout's root would import the
    checkout's ``smores_assembly``, which has no generated interfaces (they exist only in
    the installed package).

    Raises:
        SystemExit: no installed command found; the message says how to get one.
    """
    places = [Path(sys.executable).parent, Path(sys.prefix) / "bin", REPO / ".venv" / "bin"]
    for place in places:
        exe = place / "smores-assemble"
        if exe.is_file() and os.access(exe, os.X_OK):
            return [str(exe)]
    raise SystemExit(
        f"bench: the installed smores-assemble command is neither next to {sys.executable} "
        f"nor in {REPO / '.venv' / 'bin'}: run `make setup` in {REPO}, then run the "
        f"benchmark with `.venv/bin/python -m bench...` (or `. .venv/bin/activate` first)")
