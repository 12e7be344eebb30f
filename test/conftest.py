"""Shared pytest fixtures.

ROS tests get their own ``ROS_DOMAIN_ID`` (so parallel or back-to-back runs never
cross-talk), localhost-only discovery and a temporary log directory. Subprocesses started by
a test inherit the environment set here.
"""
from __future__ import annotations

import itertools
import os
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

# One package under test: the installed smores_assembly (``make setup``: colcon's symlink
# install, whose modules are this checkout's files, next to the generated msg/action), in
# this process and in every node it starts (the installed executables). The checkout's root,
# which ``python -m pytest`` puts first on sys.path, would shadow it with a copy that has no
# generated interfaces: it moves behind the installed packages (``bench`` is found there).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO] + [str(REPO)]
if "smores_assembly" in sys.modules:  # a plugin imported it before this file ran
    raise pytest.UsageError("smores_assembly was imported before test/conftest.py set sys.path")


def _installed_package() -> Path | None:
    """The package directory ``import smores_assembly`` finds now (None: not importable)."""
    import importlib.util

    spec = importlib.util.find_spec("smores_assembly")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _stale_modules(installed: Path) -> list[str]:
    """The checkout's modules the installed package lacks or holds in another version."""
    stale = []
    for src in sorted((REPO / "smores_assembly").rglob("*.py")):
        rel = src.relative_to(REPO / "smores_assembly")
        dst = installed / rel
        if not dst.is_file() or dst.read_bytes() != src.read_bytes():
            stale.append(rel.as_posix())
    return stale


_PACKAGE = _installed_package()
if _PACKAGE is None or _PACKAGE.resolve() == (REPO / "smores_assembly").resolve():
    raise pytest.UsageError("smores_assembly is not installed in this interpreter "
                            f"({sys.prefix}): run `make setup`")
if _stale := _stale_modules(_PACKAGE):
    raise pytest.UsageError(f"the installed smores_assembly ({_PACKAGE}) is not this checkout "
                            f"({len(_stale)} modules differ or are missing, e.g. "
                            f"{', '.join(_stale[:3])}): run `make setup`")

# The suite runs as from a terminal: Ctrl-C (SIGINT) at Python's default. A suite started as
# a background job of a non-interactive shell (CI's `.ci/run` under `setsid ... &`) inherits
# SIGINT ignored, and so would every process it starts: `smores-assemble run` keeps an
# ignored SIGINT ignored (POSIX; stack.Interrupts), so the tests that stop a run with Ctrl-C
# would wait for it in vain. A test that needs SIGINT ignored sets it itself.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Domain ids 1..232 are valid with the default port mapping; spread by pid, and each is
# reserved while a test uses it (ros_domain), so two pytest processes never share one.
# 101-232: `smores-assemble run` draws from 1-100 (smores_assembly.ros.domain), so a run
# on the same machine never shares a domain with a test
_domains = itertools.cycle(range(101 + os.getpid() % 100, 233))


def pytest_collection_modifyitems(config, items):
    """Every test that joins a ROS graph (uses ``ros_domain``) must carry the ``ros`` marker,
    so that ``make test-fast`` (``-m "not ros"``) never starts a node."""
    unmarked = [item.nodeid for item in items
                if "ros_domain" in getattr(item, "fixturenames", ())
                and item.get_closest_marker("ros") is None]
    if unmarked:
        raise pytest.UsageError("tests using ros_domain/ros_context without "
                                "@pytest.mark.ros: " + ", ".join(unmarked))


@pytest.fixture
def ros_domain(monkeypatch, tmp_path):
    """A fresh ROS domain id, reserved on this machine for the test's duration (so that
    two test suites running at once never share one), exported (with a temp ROS_LOG_DIR)
    for this test's processes."""
    from smores_assembly.ros.domain import reserve_domain
    for _ in range(233 - 101):
        domain = next(_domains)
        held = reserve_domain(domain)   # not used by another test suite or run here
        if held is not None:
            break
    else:
        pytest.fail("every test ROS domain (101-232) is reserved by other processes")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    yield domain
    held.release()


@pytest.fixture
def ros_context(ros_domain):
    """An initialised rclpy Context on the test's own domain; shut down afterwards."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domain)
    yield ctx
    ctx.try_shutdown()


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests (the venv's), for starting node subprocesses."""
    return sys.executable
