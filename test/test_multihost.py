"""The stack split over computers (issue 16, "Beyond one machine").

Two computers are shown on this machine by two network namespaces joined by a veth pair:
each namespace has only its loopback and its end of the veth, so DDS traffic between the
two parts of the stack has to cross the veth (the test checks its byte counters). Discovery
is configured the ROS way: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` with the other
host in ``ROS_STATIC_PEERS``. The namespaces need root and ``ip netns``; without them the
test is skipped, saying why. They are removed (with every process left in them) whatever
happens.

The pure tests check the node selection (``run --nodes``, the launch files' ``hardware``,
``pipeline``, ``planning``, ``control`` arguments) and the namespace handling.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import installed
import pytest

from smores_assembly.errors import InputError
from smores_assembly.run_job.stack import (ALL_NODES, NODE_GROUPS, check_namespace,
                                           select_nodes)

REPO = Path(__file__).resolve().parents[1]
TASK1 = REPO / "config" / "scenarios" / "mobile_manipulator.yaml"


# --- node selection and namespaces (no ROS graph) ------------------------------------------

def _launched(name: str, **args: str) -> list[str]:
    from smores_assembly.launch import launch_file, load_launch
    return [s.name for s in load_launch(launch_file(name), dict(args))]


@pytest.mark.parametrize("launch", ["fake_assembly", "assembly"])
def test_launch_arguments_select_the_groups_run_nodes_names(launch):
    """Each group switched off in the launch file leaves exactly the other nodes; the
    groups are those of ``run --nodes`` (stack.NODE_GROUPS)."""
    every = _launched(launch)
    assert set(every) <= set(ALL_NODES)
    if launch == "fake_assembly":
        assert every == list(ALL_NODES)
    for group in ("hardware", "pipeline", "planning", "control"):
        left = _launched(launch, **{group: "false"})
        assert left == [n for n in every if n not in NODE_GROUPS[group]], group
    assert _launched(launch, hardware="false", pipeline="false") == []


def test_select_nodes_takes_groups_and_node_names_in_launch_order():
    assert select_nodes(None) == ALL_NODES == select_nodes("all")
    assert select_nodes("hardware") == ("fake_hardware", "mocap_bridge")
    assert select_nodes("pipeline") == ("root_search", "task_assignment", "navigation",
                                        "docking_controller", "executive")
    assert sorted(ALL_NODES) == sorted(n for g in ("hardware", "planning", "control")
                                       for n in NODE_GROUPS[g])
    assert select_nodes("docking_controller, hardware") == (
        "fake_hardware", "mocap_bridge", "docking_controller")
    assert set(select_nodes("hardware,pipeline")) == set(ALL_NODES)
    # none: the whole stack runs elsewhere (started by the launch runner); run sends the goal
    assert select_nodes("none") == () == select_nodes(" none ")
    for bad in ("vision", "hardware,", ""):
        with pytest.raises(InputError, match="--nodes: unknown group or node"):
            select_nodes(bad)


def test_the_started_line_of_no_local_node_says_so():
    """Fresh-user finding: ``--nodes none`` printed "started 0 processes:  (logs: ...)"
    (an empty list, and a log that stays empty)."""
    from smores_assembly.run_job.console import started_line
    line = started_line([], "out/x/nodes.log")
    assert line == ("started no process here (--nodes none): every node of the stack runs "
                    "elsewhere")
    assert started_line(list(select_nodes("hardware")), "out/x/nodes.log") == (
        "started 2 processes: fake_hardware, mocap_bridge (logs: out/x/nodes.log)")


def test_check_namespace():
    assert check_namespace("") == "" == check_namespace("/")
    assert check_namespace("swarm1") == "/swarm1" == check_namespace("/swarm1/")
    assert check_namespace("/lab/swarm_2") == "/lab/swarm_2"
    for bad in ("/1swarm", "/swarm 1", "//a", "/a-b"):
        with pytest.raises(InputError, match="--namespace"):
            check_namespace(bad)


def test_every_sim_time_node_takes_its_clock_in_the_namespace():
    """Two swarms on simulated time share a domain only when each has its own clock: every
    node of the fake stack remaps /clock to the relative ``clock`` (``/swarm1/clock``)."""
    from smores_assembly.launch import launch_file, load_launch
    specs = load_launch(launch_file("fake_assembly"), {"namespace": "/swarm1"})
    assert [s.name for s in specs] == list(ALL_NODES)
    for s in specs:
        assert "__ns:=/swarm1" in s.cmd and "/clock:=clock" in s.cmd, s.cmd


def test_run_refuses_bad_nodes_and_namespace_before_starting_anything(tmp_path):
    for extra, field in ((["--nodes", "hardware,vision"], "--nodes"),
                         (["--namespace", "/9lives"], "--namespace")):
        r = subprocess.run([*installed.cli(), "run", str(TASK1),
                            "--out", str(tmp_path / "out"), *extra],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"smores-assemble: error: {field}:"), r.stderr
        assert "started" not in r.stdout


# --- two hosts: network namespaces ---------------------------------------------------------

@dataclass
class Host:
    """One network namespace: its name, its address on the veth and the veth's name."""

    netns: str
    ip: str
    veth: str

    def exec(self, *cmd: str) -> list[str]:
        """``cmd`` run inside this namespace."""
        return ["ip", "netns", "exec", self.netns, *cmd]

    def veth_bytes(self) -> tuple[int, int]:
        """(received, sent) bytes of this host's end of the veth."""
        base = f"/sys/class/net/{self.veth}/statistics"
        out = subprocess.run(self.exec("cat", f"{base}/rx_bytes", f"{base}/tx_bytes"),
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[0]), int(out[1])


def _netns_unavailable() -> str:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    return ""


def _kill_netns(netns: str) -> None:
    """SIGKILL every process still in ``netns`` (the test's own), then delete it."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


@pytest.fixture
def two_hosts():
    """Two network namespaces ``smores_a<pid>``, ``smores_b<pid>`` joined by a veth pair
    (10.231.7.1/24 and .2; each pair is an isolated network, so the addresses never
    clash), loopbacks up. Skipped, with the reason, where namespaces cannot be made;
    removed afterwards with every process left in them, also when the test fails."""
    reason = _netns_unavailable()
    if reason:
        pytest.skip(reason)
    tag = str(os.getpid())
    a = Host(f"smores_a{tag}", "10.231.7.1", f"smva{tag}"[:15])
    b = Host(f"smores_b{tag}", "10.231.7.2", f"smvb{tag}"[:15])
    made: list[str] = []
    try:
        for h in (a, b):
            r = subprocess.run(["ip", "netns", "add", h.netns], capture_output=True,
                               text=True)
            if r.returncode != 0:
                pytest.skip(f"ip netns add failed: {r.stderr.strip()}")
            made.append(h.netns)
        cmds = [["ip", "link", "add", a.veth, "type", "veth", "peer", "name", b.veth]]
        for h in (a, b):
            cmds += [["ip", "link", "set", h.veth, "netns", h.netns],
                     ["ip", "-n", h.netns, "addr", "add", f"{h.ip}/24", "dev", h.veth],
                     ["ip", "-n", h.netns, "link", "set", h.veth, "up"],
                     ["ip", "-n", h.netns, "link", "set", "lo", "up"]]
        for cmd in cmds:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                pytest.skip(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
        yield a, b
    finally:
        for ns in made:
            _kill_netns(ns)  # the veth goes with its namespace
        subprocess.run(["ip", "link", "del", a.veth], capture_output=True)


def _expected(report: dict) -> set:
    return {frozenset({f"{a['module']}.{a['child_face']}",
                       f"{a['parent_module']}.{a['parent_face']}"})
            for a in report["actions"]}


@pytest.mark.ros
def test_task1_split_over_two_hosts(two_hosts, tmp_path, ros_domain):
    """Host A (netns) runs the fake hardware and the mocap bridge from the launch file
    (``pipeline:=false``); host B runs ``smores-assemble run --nodes pipeline``: planning,
    navigation, docking controller and executive, and the run's own node. They find each
    other only through static peers over the veth. Task 1 assembles: the fake hardware's
    connections (host A) reported by host B equal the target's six edges, and the
    stack's traffic crossed the veth both ways."""
    host_a, host_b = two_hosts
    base = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
                PYTHONHASHSEED="0", ROS_LOG_DIR=str(tmp_path / "ros_log"))
    env_a = dict(base, ROS_STATIC_PEERS=host_b.ip)
    env_b = dict(base, ROS_STATIC_PEERS=host_a.ip)
    rx0, tx0 = host_b.veth_bytes()
    log_a = open(tmp_path / "host_a.log", "w")
    hardware = subprocess.Popen(
        host_a.exec(sys.executable, "-m", "smores_assembly.launch", "fake_assembly",
                    f"scenario:={TASK1}", "pipeline:=false", "real_time_factor:=0.0"),
        env=env_a, stdout=log_a, stderr=subprocess.STDOUT, cwd=REPO)
    out = tmp_path / "out"
    try:
        r = installed.run_cli(
            ["run", str(TASK1), "--nodes", "pipeline", "--out", str(out), "--timeout", "600"],
            timeout=900, prefix=tuple(host_b.exec()), env=env_b, cwd=REPO)
    finally:
        hardware.send_signal(signal.SIGINT)  # the launch runner shuts its nodes down
        try:
            hardware.wait(30)
        except subprocess.TimeoutExpired:
            hardware.kill()
        log_a.close()
    rx1, tx1 = host_b.veth_bytes()
    hw_log = (tmp_path / "host_a.log").read_text()
    report_file = out / "report.json"
    assert report_file.exists(), r.stdout[-3000:] + r.stderr[-3000:] + hw_log[-3000:]
    report = json.loads(report_file.read_text())
    assert r.returncode == 0, (report["error"], r.stdout[-3000:], hw_log[-3000:])
    assert report["local_nodes"] == list(NODE_GROUPS["pipeline"])
    assert report["remote_nodes"] == list(NODE_GROUPS["hardware"])
    assert "nodes on other computers: fake_hardware, mocap_bridge" in r.stdout
    formed = {frozenset(c) for c in report["connections"]}
    assert len(report["actions"]) == 6
    assert formed == _expected(report)
    assert report["success"] is True and report["missing_connections"] == []
    # host B started none of the hardware nodes; host A ran them, in lockstep with B's
    nodes_log = (out / "nodes.log").read_text()
    assert "[fake_hardware]" not in nodes_log and "[mocap_bridge]" not in nodes_log
    assert "[executive]" in nodes_log and "[docking_controller]" in nodes_log
    assert "[fake_hardware]" in hw_log and "[executive]" not in hw_log
    assert "every participant is there" in hw_log
    # the stack's messages crossed the veth: mocap states, ground truth and connections
    # into B, wheel/magnet commands and lockstep answers out of B
    assert rx1 - rx0 > 1_000_000, (rx0, rx1)
    assert tx1 - tx0 > 100_000, (tx0, tx1)
    assert hardware.returncode == 0, hw_log[-3000:]
