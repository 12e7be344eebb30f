"""A lifted pair at its pre-dock position, off its heading, with a module beside it turns
in place there when that turn's sweep is clear (``PoseAdjust._pair_turn``), instead of
backing off to full-circle turning room and sliding in from a staging pose past that module.

bench_targets random_12_861754307, stage 1 (poses: the recorded run's ground truth at
23.5 s, just before the lift): h0 lifts m4 2.4 mm from its pre-dock position, 45 degrees
off the axis onto m7's LEFT face; m1 stands staged 0.129 m from h0's centre, flush beside
the pair's lane (0.0785 m off the axis: 1.5 mm into the lane). Before: the full-circle
rule (0.185 m) sent the pair 0.15 m straight back, round to a staging pose 0.26 m beyond
its pre-dock pose, and its slide swept m4 into m1 (0.05-0.35 mm contacts at 47.8, 94.5,
154.1, 213.9 s; four POSE_ADJUST timeouts; 'docking failed for m4'). Closed loop in
SimWorld with the docking core (no ROS), judged by the world's collisions.
"""
from __future__ import annotations

from smores_assembly.geometry import Face, Pose2D
from test_docking_core import _scene_docks

POSES = {
    "m0": (-0.58, -0.501, -2.552),
    "m1": (-0.3506398364219341, -0.25052522438459823, 0.5157810706388561),
    "m2": (-0.2958768724991193, 0.14721829679833262, 0.787833391744329),
    "m3": (-0.03532156360266428, -0.14777039801196803, -1.1181507519130705),
    "m4": (-0.217, -0.156, -0.2879999999999998),
    "m5": (0.512, 0.09, 2.982),
    "m6": (-0.26885782915732925, 0.2845554324418405, -2.370485908368619),
    "m7": (-0.105, -0.026, 2.074),
    "m8": (0.21985664052610115, 0.060953916998846995, 0.4787354367436718),
    "m9": (-0.3892483421286244, 0.3379972764669182, -1.0918314988097029),
    "m10": (-0.17091843570278392, 0.09777115890985573, -1.057138193787858),
    "m11": (0.2023527416762672, 0.23210329203114047, 2.0860440506342233),
}
H0 = Pose2D(-0.3029803927935751, -0.13066609848126237, -0.2802063621355275)


class _Act:
    module, parent_module = "m4", "m7"
    parent_face, child_face = Face.LEFT, Face.RIGHT


def test_lifted_pair_turns_at_its_predock_beside_a_staged_module():
    _scene_docks(POSES, _Act, "h0", H0, t_dock=60.0, within=15.0)
