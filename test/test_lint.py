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


def test_ruff():
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy():
    r = _run("mypy", "--cache-dir", str(REPO / "build" / "mypy_cache"))
    assert r.returncode == 0, r.stdout + r.stderr
