"""``python -m bench``: its usage lists every benchmark; every bench option has help text."""
import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_help_lists_every_benchmark():
    r = _bench("--help")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("benchmarks (NAME, or bench_NAME):\n")[1].split("\n\n")[0]
    listed = [ln.split()[0] for ln in block.splitlines()]
    assert listed == [b[len("bench_"):] for b in BENCHES]


def test_unknown_benchmark_is_refused_with_the_names():
    r = _bench("nope")
    assert r.returncode == 2
    assert "no benchmark 'nope'" in r.stderr and "planning" in r.stderr
    assert "Traceback" not in r.stderr


def test_name_help_shows_that_benchmarks_options():
    r = _bench("planning", "--help")
    assert r.returncode == 0, r.stderr
    assert "--sizes" in r.stdout and "--repeats" in r.stdout


@pytest.mark.parametrize("name", BENCHES)
def test_every_bench_option_has_help(name, monkeypatch):
    """Each bench's own parser, as its main() builds it (parse_args intercepted)."""
    seen = {}

    def grab(self, *_a, **_k):
        seen["actions"] = list(self._actions)
        raise SystemExit(0)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", grab)
    mod = importlib.import_module(f"bench.{name}")
    with pytest.raises(SystemExit):
        mod.main([])
    undocumented = [a.option_strings or a.dest for a in seen["actions"]
                    if not a.help and a.help is not argparse.SUPPRESS]
    assert undocumented == []


def test_benches_find_the_installed_cli_without_the_venvs_python(monkeypatch, tmp_path):
    """A bare ``python -m bench.bench_targets`` (a python that is not the venv's) starts the
    checkout's ``.venv/bin/smores-assemble``; without one, one clear error says what to do
    (it crashed with FileNotFoundError on ``<sys.prefix>/bin/smores-assemble``)."""
    import bench

    other = tmp_path / "other_python" / "bin"
    other.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(other / "python3"))
    monkeypatch.setattr(sys, "prefix", str(other.parent))
    repo = tmp_path / "clone"
    monkeypatch.setattr(bench, "REPO", repo)
    with pytest.raises(SystemExit) as err:
        bench.smores_assemble()
    msg = str(err.value)
    assert "make setup" in msg and ".venv/bin/python -m bench" in msg and str(repo) in msg
    exe = repo / ".venv" / "bin" / "smores-assemble"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert bench.smores_assemble() == [str(exe)]
    # the venv's own python (or an activated venv) takes the command next to it
    mine = other / "smores-assemble"
    mine.write_text("#!/bin/sh\n")
    mine.chmod(0o755)
    assert bench.smores_assemble() == [str(mine)]

