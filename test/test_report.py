"""Report helpers: phase intervals, final errors, pictures, MCAP schemas."""
import math
import random

import pytest

from smores_assembly.geometry import Pose2D
from smores_assembly.record import message_definition
from smores_assembly.report import (PhaseRecorder, final_errors, plot_timeline,
                                    plot_trajectories)
from smores_assembly.vocabulary import Phase

NAVIGATE, POSE_ADJUST, APPROACH, DOCKED = (Phase.NAVIGATE, Phase.POSE_ADJUST, Phase.APPROACH,
                                           Phase.DOCKED)



@pytest.fixture
def saved_figures(monkeypatch) -> list:
    """Every matplotlib figure the code under test saves, in order (to inspect it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figs: list = []
    real_savefig = plt.Figure.savefig

    def keep(fig, *a, **kw):
        figs.append(fig)
        return real_savefig(fig, *a, **kw)
    monkeypatch.setattr(plt.Figure, "savefig", keep)
    return figs

def test_phase_recorder_builds_contiguous_intervals():
    r = PhaseRecorder()
    for t, ph in [(0, NAVIGATE), (1, NAVIGATE), (2, POSE_ADJUST), (3, APPROACH),
                  (4, APPROACH), (5, DOCKED)]:
        r.sample(t, "m1", ph, retries=1 if t == 4 else 0)
    assert [(i.phase, i.start, i.end) for i in r.intervals["m1"]] == [
        (NAVIGATE, 0, 2), (POSE_ADJUST, 2, 3), (APPROACH, 3, 5), (DOCKED, 5, 5)]
    assert r.retries["m1"] == 1
    assert [d["phase"] for d in r.to_dict("m1")] == ["NAVIGATE", "POSE_ADJUST", "APPROACH",
                                                     "DOCKED"]


def test_final_errors_in_mm_and_degrees():
    goals = {"a": Pose2D(0.0, 0.0, 0.0), "b": Pose2D(1.0, 0.0, math.pi - 0.01)}
    final = {"a": Pose2D(0.003, 0.004, math.radians(1.5)), "b": Pose2D(1.0, 0.0, -math.pi + 0.01)}
    e = final_errors(goals, final)
    assert e["a"] == {"position_mm": pytest.approx(5.0), "yaw_deg": pytest.approx(1.5)}
    assert e["b"]["yaw_deg"] == pytest.approx(math.degrees(0.02), abs=0.01)
    assert final_errors({"c": Pose2D(0, 0, 0)}, {}) == {"c": {"position_mm": None, "yaw_deg": None}}


def test_final_errors_judge_the_structure_relative_to_its_root():
    """A structure that ended up shifted and turned as a whole reads 0 within itself; a
    module 3 mm out of its place in the structure reads 3 mm wherever the structure is."""
    rng = random.Random(4)
    goals = {f"m{i}": Pose2D(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-3, 3))
             for i in range(6)}
    for _ in range(20):
        dx, dy, th = rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02), rng.uniform(-0.2, 0.2)
        c, s = math.cos(th), math.sin(th)
        final = {m: Pose2D(c * g.x - s * g.y + dx, s * g.x + c * g.y + dy, g.yaw + th)
                 for m, g in goals.items()}
        e = final_errors(goals, final, anchor="m0")
        assert all(v["position_mm"] == pytest.approx(0.0, abs=0.011) and
                   v["yaw_deg"] == pytest.approx(0.0, abs=0.011) for v in e.values()), e
        f3 = final["m3"]
        final["m3"] = Pose2D(f3.x + 0.003 * math.cos(f3.yaw), f3.y + 0.003 * math.sin(f3.yaw),
                             f3.yaw)
        e = final_errors(goals, final, anchor="m0")
        assert e["m3"]["position_mm"] == pytest.approx(3.0, abs=0.011)
        # against the plan's own world poses the whole shift shows instead
        assert final_errors(goals, final)["m0"]["position_mm"] == pytest.approx(
            1000 * math.hypot(c * goals["m0"].x - s * goals["m0"].y + dx - goals["m0"].x,
                              s * goals["m0"].x + c * goals["m0"].y + dy - goals["m0"].y),
            abs=0.011)
    # an anchor without a final pose leaves the goals as they are
    assert final_errors(goals, {"m1": goals["m1"]}, anchor="m0")["m1"]["position_mm"] == 0.0


def test_pictures_are_written(tmp_path):
    from smores_assembly.report import PhaseInterval
    plot_trajectories(tmp_path / "t.png", {"m1": [(0, 0, 0), (0.1, 0.05, 0.3)]},
                      {"m1": Pose2D(0.1, 0.05, 0.3), "m0": Pose2D(0.02, 0.05, 0.3)},
                      [("m1", "m0")])
    plot_timeline(tmp_path / "l.png", [("m1", [PhaseInterval(NAVIGATE, 0, 3),
                                              PhaseInterval(APPROACH, 3, 4)])], [(0, 4)])
    for name in ("t.png", "l.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_mcap_schema_contains_every_dependency_once():
    text = message_definition("smores_assembly/msg/DockingStatusArray")
    assert text.startswith("std_msgs/Header header")
    for dep in ("std_msgs/Header", "builtin_interfaces/Time", "smores_assembly/DockingStatus"):
        assert text.count(f"MSG: {dep}\n") == 1


def test_pictures_of_a_hundred_modules_stay_readable(tmp_path, saved_figures):
    """Issue 16: 100 docks in 27 stages: the timeline draws one labelled band per stage
    (27 tick labels, figure height from the stages, not the docks; every action's bars
    drawn), the trajectory plot no legend and no per-module labels (colour by stage with
    a colour bar); below the thresholds both stay as they were."""
    from smores_assembly.report import MANY_MODULES, MANY_ROWS, PhaseInterval
    figs = saved_figures

    stage_of = {f"m{i}": i // 4 for i in range(100)}          # 25 stages of 4 docks
    stage_of.update({f"m{i}": 25 + (i - 100) // 2 for i in range(100, 104)})
    rows, groups = [], []
    for m, k in sorted(stage_of.items(), key=lambda x: (x[1], x[0])):
        rows.append((f"s{k + 1} {m}", [PhaseInterval(NAVIGATE, k, k + 2),
                                        PhaseInterval(APPROACH, k + 2, k + 3)]))
        groups.append(f"stage {k + 1}")
    assert len(rows) > MANY_ROWS and len(set(groups)) == 27
    plot_timeline(tmp_path / "l.png", rows, [(k, k + 3) for k in range(27)], groups=groups)
    ax = figs[-1].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 27 and labels[-1] == "stage 1 (4)" and labels[0] == "stage 27 (2)"
    assert figs[-1].get_size_inches()[1] == pytest.approx(0.5 * 27 + 1.8)
    assert len(ax.patches) == 2 * len(rows) + 27              # every bar, 27 stage spans
    with pytest.raises(ValueError, match="groups"):
        plot_timeline(tmp_path / "x.png", rows, groups=groups[:-1])

    traj = {m: [(0.3 * (i % 11), 0.3 * (i // 11), 0.0), (0.08 * (i % 10), 0.08 * (i // 10), 0.0)]
            for i, m in enumerate(stage_of)}
    traj["idle"] = [(-0.5, -0.5, 0.0)]
    assert len(traj) > MANY_MODULES
    plot_trajectories(tmp_path / "t.png", traj, {}, [], stage_of=stage_of)
    fig = figs[-1]
    assert fig.axes[0].get_legend() is None and not fig.axes[0].texts
    assert len(fig.axes) == 2                                  # the stage colour bar
    # few modules: legend and labels as before
    plot_trajectories(tmp_path / "s.png", {"m1": traj["m1"], "m2": traj["m2"]}, {}, [])
    assert figs[-1].axes[0].get_legend() is not None and figs[-1].axes[0].texts


def test_staging_moves_are_the_motion_outside_the_docking_phases():
    """A module of stage 2 drives to its staging pose during stage 1 (moving while IDLE):
    the observer's ground-truth motion minus its phases is that drive, and the timeline
    draws it (fresh-user finding: later stages looked idle until their turn)."""
    from types import SimpleNamespace as NS
    from smores_assembly.report import PhaseInterval, outside
    from smores_assembly.run_job.observer import Observations
    obs = Observations()
    speed = {(0.0, 2.0): 0.0, (2.0, 6.0): 0.05, (6.0, 10.0): 0.0, (10.0, 14.0): 0.03}
    x, t = 0.0, 0.0
    while t <= 14.0 + 1e-9:
        v = next(v for (lo, hi), v in speed.items() if lo <= t < hi) if t < 14.0 else 0.0
        obs.on_truth(NS(stamp_s=t, modules=[NS(id="m3", x=x, y=0.0, yaw=0.0),
                                            NS(id="m0", x=0.0, y=0.0, yaw=0.0)]))
        x += v * 0.02
        t = round(t + 0.02, 6)
    assert "m0" not in obs.motion
    [(a0, a1), (b0, b1)] = obs.motion["m3"]
    assert (a0, a1) == (pytest.approx(2.02, abs=0.03), pytest.approx(6.0, abs=0.03))
    assert (b0, b1) == (pytest.approx(10.02, abs=0.03), pytest.approx(14.0, abs=0.03))
    phases = [PhaseInterval(Phase.IDLE, 0.0, 10.0), PhaseInterval(Phase.NAVIGATE, 10.0, 12.0),
              PhaseInterval(Phase.POSE_ADJUST, 12.0, 14.5)]
    staging = outside(obs.motion["m3"], phases)
    assert staging == [(pytest.approx(2.02, abs=0.03), pytest.approx(6.0, abs=0.03))]
    assert outside([(0.0, 1.0)], [PhaseInterval(Phase.NAVIGATE, 0.0, 0.9)]) == []  # < 0.2 s
    assert outside([(0.0, 3.0)], [PhaseInterval(Phase.NAVIGATE, 1.0, 2.0)]) == [
        (0.0, 1.0), (2.0, 3.0)]


def test_timeline_draws_staging_and_checks_its_rows(tmp_path):
    from smores_assembly.report import PhaseInterval
    rows = [("s2 m3->m1", [PhaseInterval(Phase.NAVIGATE, 10, 12)])]
    plot_timeline(tmp_path / "l.png", rows, [(0, 10), (10, 14)], staging=[[(2.0, 6.0)]])
    assert (tmp_path / "l.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="staging: 2 entries for 1 rows"):
        plot_timeline(tmp_path / "x.png", rows, staging=[[], []])


def test_short_stage_labels_do_not_overlap(tmp_path, saved_figures):
    """Three 1-s undocking stages before a long docking stage (the walker's full
    disassembly): the stage labels' drawn boxes do not overlap (fresh-user finding)."""
    from smores_assembly.report import PhaseInterval
    figs = saved_figures
    bounds = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 60.0)]
    labels = ["stage 1 (undock)", "stage 2 (undock)", "stage 3 (undock)", "stage 4"]
    rows = [(f"r{k}", [PhaseInterval(Phase.NAVIGATE, lo, hi)]) for k, (lo, hi) in
            enumerate(bounds)]
    plot_timeline(tmp_path / "l.png", rows, bounds, stage_labels=labels)
    plot_timeline(tmp_path / "l.png", rows, [(0.0, 5.0), (5.0, 10.0), (10.0, 15.0),
                                             (15.0, 60.0)], stage_labels=labels)
    assert [t.get_text() for t in figs[-1].axes[0].texts][:3] == ["1u", "2u", "3u"]
    plot_timeline(tmp_path / "l.png", rows, bounds, stage_labels=labels)
    fig = figs[-1]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    renderer = FigureCanvasAgg(fig).get_renderer()
    texts = [t for t in fig.axes[0].texts]
    shown = [t.get_text() for t in texts]
    assert shown[3] == "stage 4" and all(t in (f"{k}u", f"{k}", "") for k, t in
                                         zip((1, 2, 3), shown)), shown
    texts = [t for t in texts if t.get_text()]
    boxes = sorted((t.get_window_extent(renderer) for t in texts), key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:])), [(b.x0, b.x1) for b in boxes]


def test_progress_lines_use_the_status_stamp_on_the_reports_clock(capsys):
    """The progress line's time is the status sample's stamp from the report's origin
    (fresh-user finding: the 2-Hz-wall feedback's elapsed time was up to 1.7 s off the
    report's phase times); without an origin it falls back to the feedback's time."""
    from types import SimpleNamespace as NS
    from smores_assembly.run_job.console import ProgressPrinter
    p = ProgressPrinter(4)
    fb = NS(stage=4, elapsed_s=25.9)
    status = NS(stage=3, header=NS(stamp=NS(sec=127, nanosec=600_000_000)), modules=[
        NS(module="m3", phase=Phase.POSE_ADJUST, phase_name="POSE_ADJUST", face_gap_mm=126.0,
           retries=0)])
    p.show(fb, status, t0=100.0)
    assert capsys.readouterr().out == "[  27.6 s] stage 4/4 | m3 POSE_ADJUST gap 126 mm\n"
    status.modules[0].phase_name = "APPROACH"
    p.show(fb, status)
    assert capsys.readouterr().out.startswith("[  25.9 s] stage 4/4 | m3 APPROACH")


def test_helping_modules_get_a_timeline_row_with_their_motion(tmp_path, saved_figures):
    """rc_car's helping module fetches and carries four modules: the timeline gives it a
    row with its ground-truth motion, drawn in the helping style (fresh-user finding: the
    helpers' moves were nowhere on the timeline)."""
    from types import SimpleNamespace as NS
    from smores_assembly.report import HELPING_STYLE, PhaseInterval
    from smores_assembly.run_job.results import helper_rows
    acts = [NS(module="m5", stage=1, helper="h0"), NS(module="m2", stage=0, helper="h0"),
            NS(module="m1", stage=0, helper=None), NS(module="m3", stage=1, helper="h1")]
    plan = NS(actions=acts, helpers=["h0", "h1", "h2"])
    assert helper_rows(plan) == [("h0", ["m2", "m5"]), ("h1", ["m3"])]
    rows = [("s1 m2->m0", [PhaseInterval(Phase.NAVIGATE, 4.0, 9.0)]), ("h0 helping m2, m5", [])]
    plot_timeline(tmp_path / "l.png", rows, [(0.0, 12.0)], staging=[[], []],
                  helping=[[], [(1.0, 8.5)]])
    ax = saved_figures[-1].axes[0]
    helper_bars = [p for p in ax.patches if p.get_hatch() == HELPING_STYLE["hatch"]]
    assert [(b.get_x(), b.get_width(), b.get_y() + b.get_height() / 2) for b in helper_bars] \
        == [(1.0, 7.5, 0.0)]   # bottom row, 1.0-8.5 s
    assert "helping module\nmoving" in [t.get_text() for t in ax.get_legend().get_texts()]
    with pytest.raises(ValueError, match="helping: 1 entries for 2 rows"):
        plot_timeline(tmp_path / "x.png", rows, helping=[[]])


def test_a_run_that_did_not_finish_is_marked_on_its_timeline(tmp_path, saved_figures):
    """An interrupted run's timeline says so in its title and draws a red line at its last
    recorded moment (fresh-user finding: it looked like a finished run)."""
    from smores_assembly.report import PhaseInterval
    rows = [("s1 m1->m0", [PhaseInterval(Phase.DOCKED, 5.0, 9.0)]),
            ("s2 m2->m1", [PhaseInterval(Phase.NAVIGATE, 9.0, 14.5)])]
    plot_timeline(tmp_path / "l.png", rows, [(0.0, 9.0), (9.0, 14.0)], title="t",
                  ended="interrupted")
    ax = saved_figures[-1].axes[0]
    assert ax.get_title() == "t\ninterrupted at 14.5 s"
    assert [tuple(ln.get_xdata()) for ln in ax.lines] == [(14.5, 14.5)]
    plot_timeline(tmp_path / "l.png", rows, [(0.0, 9.0), (9.0, 14.0)], title="t")
    ax = saved_figures[-1].axes[0]
    assert ax.get_title() == "t" and len(ax.lines) == 0
    # the report's time when given: the picture and report.json say the same number
    # (fresh-user finding: 20.9 s on the timeline, 21.0 s in the report)
    plot_timeline(tmp_path / "l.png", rows, [(0.0, 9.0), (9.0, 14.0)], title="t",
                  ended="interrupted", ended_at=14.96)
    ax = saved_figures[-1].axes[0]
    assert ax.get_title() == "t\ninterrupted at 15.0 s"
    assert [tuple(ln.get_xdata()) for ln in ax.lines] == [(14.96, 14.96)]


def test_the_run_names_an_assignment_the_measured_poses_changed():
    """Fresh-user finding: on the walker scenario `plan` (file poses) gave arm2->m5,
    arm3->m4 and `run` (mocap poses, 1 mm noise) arm2->m4, arm3->m5, with nothing saying so."""
    from types import SimpleNamespace as NS
    from smores_assembly.run_job.console import assignment_note
    file_plan = NS(assignment={"hub": "m3", "arm2": "m5", "arm3": "m4"}, total_cost_m=0.647)
    stack = NS(assignment={"hub": "m3", "arm2": "m4", "arm3": "m5"}, total_cost_m=0.646)
    note = assignment_note(file_plan, stack)
    assert note.startswith("note: planned from the measured poses, the stack assigns "
                           "arm2->m4, arm3->m5; the scenario file's poses give arm2->m5, "
                           "arm3->m4 (total travel 0.646 m vs 0.647 m"), note
    assert assignment_note(file_plan, file_plan) == ""


def test_a_helpers_end_is_not_drawn_like_a_placed_module(tmp_path, saved_figures):
    """Fresh-user finding: rc_car's helper ended as a filled square beside the structure,
    read as an extra target cell. Its end is hatched and unfilled, its legend says so."""
    from matplotlib.patches import Polygon
    traj = {"m1": [(0.0, 0.0, 0.0), (0.2, 0.0, 0.0)], "h0": [(0.5, 0.5, 0.0), (0.3, 0.1, 0.0)]}
    plot_trajectories(tmp_path / "t.png", traj, {"m1": Pose2D(0.2, 0.0, 0.0)}, [],
                      helpers=["h0"])
    ax = saved_figures[-1].axes[0]
    ends = {(round(p.get_xy()[:4, 0].mean(), 3), round(p.get_xy()[:4, 1].mean(), 3)):
            (p.get_fill(), p.get_hatch()) for p in ax.patches if isinstance(p, Polygon)
            and p.get_linestyle() == "solid"}
    assert ends[(0.3, 0.1)] == (False, "xx")            # the helper's end
    assert ends[(0.2, 0.0)] == (True, None)             # a module's end, filled
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["h0 (helper)", "m1"]


def test_trajectory_arrows_point_the_way_each_module_drove(tmp_path, saved_figures):
    """A fresh user could not tell start from end along a path: two arrowheads per path,
    at a third and two thirds of its length, pointing from the start towards the end;
    a path shorter than 5 cm gets none."""
    from matplotlib.patches import FancyArrowPatch
    rng = random.Random(7)
    traj = {}
    for k in range(6):
        a, n = rng.uniform(-math.pi, math.pi), rng.randint(5, 60)
        x0, y0, length = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0.1, 1.0)
        traj[f"m{k}"] = [(x0 + length * i / n * math.cos(a), y0 + length * i / n * math.sin(a),
                          a) for i in range(n + 1)]
    traj["m9"] = [(0.0, 0.0, 0.0), (0.02, 0.0, 0.0)]
    plot_trajectories(tmp_path / "t.png", traj, {}, [])
    arrows = [p for p in saved_figures[-1].axes[0].patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == 2 * 6
    for m, pts in traj.items():
        if m == "m9":
            continue
        (x0, y0, a), (x1, y1, _) = pts[0], pts[-1]
        mine = [p for p in arrows if any(
            abs((q[0] - x0) * math.sin(a) - (q[1] - y0) * math.cos(a)) < 1e-9
            for q in p._posA_posB)]
        assert len(mine) == 2, m
        along = sorted(math.hypot(p._posA_posB[1][0] - x0, p._posA_posB[1][1] - y0)
                       for p in mine)
        length = math.hypot(x1 - x0, y1 - y0)
        assert along[0] == pytest.approx(length / 3, abs=length / (len(pts) - 1) + 1e-9)
        assert along[1] == pytest.approx(2 * length / 3, abs=length / (len(pts) - 1) + 1e-9)
        for p in mine:  # tail to head along the direction of travel
            (ax_, ay_), (bx, by) = p._posA_posB
            assert (bx - ax_) * math.cos(a) + (by - ay_) * math.sin(a) > 0


def test_a_listed_helper_that_carried_nothing_is_drawn_as_a_helper(monkeypatch, tmp_path):
    """A module under ``helpers:`` that carried nothing (it only moved aside) is still a
    helper in trajectories.png (hatched, "(helper)"), not a placed module; a spare module
    that carries is one too."""
    from types import SimpleNamespace

    from smores_assembly.run_job import results

    seen = {}

    def capture(*_a, helpers=(), **_k):
        seen["helpers"] = list(helpers)
        raise RuntimeError("stop after the trajectories")
    monkeypatch.setattr(results, "plot_trajectories", capture)
    carried = SimpleNamespace(module="m1", parent_module="m0", stage=0, helper="s9")
    plan = SimpleNamespace(goals={}, actions=[carried], helpers=["s9"])
    scenario = SimpleNamespace(name="blocker", helpers=("h0",))
    results.draw_pictures(tmp_path, scenario, plan, SimpleNamespace(traj={}, recorder=None))
    assert seen["helpers"] == ["h0", "s9"]


def test_the_trajectories_of_a_run_that_did_not_finish_say_so(monkeypatch, tmp_path):
    """Fresh-user finding: an interrupted run's timeline said "interrupted", its
    trajectories.png (ends drawn as filled squares) did not."""
    from types import SimpleNamespace

    from smores_assembly.run_job import results

    seen = []

    def capture(*_a, title="", **_k):
        seen.append(title)
        raise RuntimeError("stop after the trajectories")
    monkeypatch.setattr(results, "plot_trajectories", capture)
    plan = SimpleNamespace(goals={}, actions=[], helpers=[])
    scenario = SimpleNamespace(name="wheel", helpers=())
    for ended in ("interrupted", ""):
        results.draw_pictures(tmp_path, scenario, plan,
                              SimpleNamespace(traj={}, recorder=None), ended=ended)
    assert seen[0].splitlines()[0] == ("wheel: trajectories (interrupted: ends are where "
                                       "the modules stopped)")
    assert seen[1].splitlines()[0] == "wheel: trajectories"
