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
