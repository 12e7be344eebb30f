"""Shared pytest fixtures.

ROS tests get their own ``ROS_DOMAIN_ID`` (so parallel or back-to-back runs never
cross-talk), localhost-only discovery and a temporary log directory. Subprocesses started by
a test inherit the environment set here.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
# Nodes started as subprocesses import the sources of this checkout, as the tests do.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

# Domain ids 1..232 are valid with the default port mapping; spread by pid so that two
# pytest processes on one machine are unlikely to share one.
_domains = itertools.cycle(range(1 + os.getpid() % 100, 233))


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
def ros_domain(monkeypatch, tmp_path) -> int:
    """A fresh ROS domain id, exported (with a temp ROS_LOG_DIR) for this test's processes."""
    domain = next(_domains)
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    return domain


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
