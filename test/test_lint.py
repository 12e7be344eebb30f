"""Code habits as tests, as ROS 2 packages run ament_flake8/ament_pep257/ament_mypy.

ruff checks pycodestyle, pyflakes and pep257 docstrings (rules in pyproject.toml) over the
package, the tests, the benchmarks and setup.py; mypy type-checks the package modules listed
in pyproject.toml. Both are pinned in requirements.txt; where they are not installed (a ROS
install's ``colcon test``), these tests skip.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    pytest.importorskip(tool)
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=REPO,
                          capture_output=True, text=True)


#: what is linted outside a git checkout (an unpacked sdist, a ROS install's source)
LINTED_DIRS = ("smores_assembly", "test", "bench", "setup.py")


def lint_targets() -> list[str]:
    """The Python files the project tracks (``git ls-files``, existing ones), so that a
    user's untracked scratch file (a fresh user's my/goal_client.py failed
    ``make test-fast``) is not linted; outside a git checkout, :data:`LINTED_DIRS`."""
    try:
        r = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=REPO,
                           capture_output=True, text=True)
    except OSError:   # no git
        r = None
    if r is None or r.returncode != 0:
        return [d for d in LINTED_DIRS if (REPO / d).exists()]
    return [f for f in r.stdout.split("\0") if f and (REPO / f).is_file()]


def test_ruff():
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", "--",
             *lint_targets())
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_untracked_scratch_file_is_not_linted():
    """Only tracked files: an untracked ``*.py`` in the checkout is not among them."""
    if subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=REPO,
                      capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    scratch = REPO / f"scratch_lint_{id(REPO)}.py"
    scratch.write_text("import os\n")   # unused import: F401 if it were linted
    try:
        targets = lint_targets()
    finally:
        scratch.unlink()
    assert scratch.name not in targets
    assert "smores_assembly/cli.py" in targets and "test/test_lint.py" in targets


def test_mypy():
    r = _run("mypy", "--cache-dir", str(REPO / "build" / "mypy_cache"))
    assert r.returncode == 0, r.stdout + r.stderr
