"""A run draws a ROS domain in which nothing runs yet (smores_assembly.ros.domain)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from smores_assembly.ros.domain import RUN_DOMAINS, pick_free_domain

REPO = Path(__file__).resolve().parents[1]


def test_pick_free_domain_skips_busy_domains_and_stays_in_the_run_range(tmp_path):
    from smores_assembly.ros.domain import reserve_domain
    busy = set(range(1, 96))  # all but five of the run's domains are taken
    for seed in range(20):
        domain, n_busy, held = pick_free_domain(
            random.Random(seed), tries=200, in_use=busy.__contains__,
            reserve=lambda d: reserve_domain(d, tmp_path))
        assert domain in RUN_DOMAINS and domain not in busy
        assert n_busy < 200 and held is not None and held.domain == domain
        held.release()
    # every draw busy: the last draw is returned, without a reservation, and the count
    # says so
    domain, n_busy, held = pick_free_domain(random.Random(0), tries=3, in_use=lambda d: True,
                                            reserve=lambda d: reserve_domain(d, tmp_path))
    assert n_busy == 3 and domain in RUN_DOMAINS and held is None


def test_a_domain_reserved_by_another_process_is_never_drawn(tmp_path):
    """Field case: two runs drew the same domain at the same moment (the graph probe saw
    nothing yet) and one run's goal reached the other's executive. A domain another
    process holds is taken whatever the probe says, and is free again when that process
    ends, however it ends."""
    import subprocess
    import sys
    from smores_assembly.ros.domain import reserve_domain
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from smores_assembly.ros.domain import "
         f"reserve_domain; h = reserve_domain(7, {str(tmp_path)!r}); print(h is not None, "
         "flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        assert reserve_domain(7, tmp_path) is None
        only_seven = random.Random(0)
        only_seven.choice = lambda seq: 7   # every draw is 7
        domain, n_busy, held = pick_free_domain(only_seven, tries=4, in_use=lambda d: False,
                                                reserve=lambda d: reserve_domain(d, tmp_path))
        assert (n_busy, held) == (4, None)
    finally:
        holder.kill()   # SIGKILL: the kernel drops the lock
        holder.wait()
    held = reserve_domain(7, tmp_path)
    assert held is not None
    assert reserve_domain(7, tmp_path) is None   # also within one process (per open file)
    held.release()
    again = reserve_domain(7, tmp_path)
    assert again is not None
    again.release()


def test_run_and_test_domains_are_disjoint():
    import conftest
    assert min(next(conftest._domains) for _ in range(300)) > max(RUN_DOMAINS)


@pytest.mark.ros
def test_domain_in_use_sees_a_node_of_the_domain(ros_context, ros_domain):
    import rclpy

    from smores_assembly.ros.domain import domain_in_use

    node = rclpy.create_node("someone_else", context=ros_context)
    try:
        assert domain_in_use(ros_domain, probe_s=10.0)  # returns as soon as it sees it
    finally:
        node.destroy_node()
    assert not domain_in_use(next(__import__("conftest")._domains), probe_s=0.5)


def test_run_gives_its_nodes_a_fastdds_profile_without_type_propagation(tmp_path):
    """``run`` points the nodes' ``FASTDDS_DEFAULT_PROFILES_FILE`` at
    ``config/fastdds_profile.xml`` (unless the environment names its own file), whose
    default participant profile disables type propagation: with it, a node that had not
    registered an announced endpoint's type yet discovered the endpoint only after a
    TypeLookup request and reply, and under load a path publisher stayed unmatched for
    more than 30 s (a loaded comb_5x6 run then went on without its path and became another
    run). Measured (docs/RESULTS.md): with the file no endpoint announcement of a run
    carries type information (534 of 534 before: all). Oracle: the file as Fast DDS reads
    it (its XML schema)."""
    import xml.etree.ElementTree as ET

    from smores_assembly.run_job import dds_environment

    env: dict[str, str] = {}
    dds_environment(env)
    profile = env["FASTDDS_DEFAULT_PROFILES_FILE"]
    ns = {"f": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}
    root = ET.parse(profile).getroot()
    defaults = [p for p in root.findall("f:participant", ns)
                if p.get("is_default_profile") == "true"]
    assert len(defaults) == 1, profile
    props = {p.findtext("f:name", namespaces=ns): p.findtext("f:value", namespaces=ns)
             for p in defaults[0].findall("f:rtps/f:propertiesPolicy/f:properties/f:property",
                                          ns)}
    assert props == {"fastdds.type_propagation": "disabled"}
    own = tmp_path / "mine.xml"
    env = {"FASTDDS_DEFAULT_PROFILES_FILE": str(own)}
    dds_environment(env)
    assert env == {"FASTDDS_DEFAULT_PROFILES_FILE": str(own)}   # the user's file is kept


def test_the_launch_files_give_their_nodes_the_same_fastdds_profile(tmp_path, monkeypatch):
    """Nodes started from a launch file (``ros2 launch``, the multi-host set-up, tests that
    start a stack with LaunchRunner) get the profile ``run`` gives its nodes; a profile
    file that the environment names is kept."""
    from smores_assembly.launch.yaml_launch import load_launch
    from smores_assembly.run_job import dds_environment

    env: dict[str, str] = {}
    dds_environment(env)
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE", raising=False)
    files = sorted((REPO / "launch").glob("*.launch.yaml"))
    assert len(files) == 4
    for f in files:
        if f.name.startswith("gazebo"):
            continue   # resolves only where ros_gz is installed
        specs = load_launch(f, {})
        assert specs and {s.env.get("FASTDDS_DEFAULT_PROFILES_FILE") for s in specs} == \
            {env["FASTDDS_DEFAULT_PROFILES_FILE"]}, f.name
    own = str(tmp_path / "mine.xml")
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", own)
    specs = load_launch(REPO / "launch" / "fake_assembly.launch.yaml", {})
    assert {s.env.get("FASTDDS_DEFAULT_PROFILES_FILE") for s in specs} == {own}
    assert "FASTDDS_DEFAULT_PROFILES_FILE" in (REPO / "launch" / "gazebo_assembly.launch.yaml"
                                               ).read_text()
