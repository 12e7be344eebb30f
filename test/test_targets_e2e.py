"""End to end (issue 11): targets whose docks need corners, flush slides and a helper
carrying its module past idle modules assemble completely, with no collision.

``test/data/pocket.yaml``: m3 docks into the corner between m1 (its parent) and m2 (docked
before it, flush beside its final cell). ``test/data/rc_car_fig12.yaml``: the helping
module carries m5 and m2 past idle modules (m6 stands near m5's pre-dock pose and is
moved aside). ``test/data/random_4_1008411487.yaml`` (bench_targets seed 31): the stage
ends at the helper's hand-over of m3 and the helper stages for its next module at once
(it turned in place flush against m3: two contacts). Each runs the whole stack on the
fake hardware in lockstep at full pace and is judged by the fake hardware's ground truth
(connections formed, collision events)."""
from __future__ import annotations

from pathlib import Path

import pytest

import installed

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "test" / "data"

pytestmark = pytest.mark.ros


@pytest.mark.parametrize("name", ["pocket", "rc_car_fig12", "random_4_1008411487"])
def test_corner_and_carried_pair_targets_assemble_without_collision(name, tmp_path,
                                                                     ros_domain):
    r = installed.run_cli(
        ["run", str(DATA / f"{name}.yaml"), "--out", str(tmp_path), "--timeout", "1500"],
        timeout=1700, cwd=REPO)
    installed.assembled_report(r, tmp_path)
