"""A run draws a ROS domain in which nothing runs yet (smores_assembly.ros.domain)."""
from __future__ import annotations

import random

import pytest

from smores_assembly.ros.domain import RUN_DOMAINS, pick_free_domain


def test_pick_free_domain_skips_busy_domains_and_stays_in_the_run_range():
    busy = set(range(1, 96))  # all but five of the run's domains are taken
    for seed in range(20):
        domain, n_busy = pick_free_domain(random.Random(seed), tries=200,
                                          in_use=busy.__contains__)
        assert domain in RUN_DOMAINS and domain not in busy
        assert n_busy < 200
    # every draw busy: the last draw is returned and the count says so
    domain, n_busy = pick_free_domain(random.Random(0), tries=3, in_use=lambda d: True)
    assert n_busy == 3 and domain in RUN_DOMAINS


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
