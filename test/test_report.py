"""Report helpers: phase intervals, final errors, pictures, MCAP schemas."""
import math
import random
import re

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
    drawn), the trajectory plot no legend but each module's name at its end cell; below
    the thresholds both stay as they were."""
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
    plot_trajectories(tmp_path / "t.png", traj, {}, [])
    fig = figs[-1]
    # no 105-entry legend: each module is named in bold at its end cell instead
    assert fig.axes[0].get_legend() is None and len(fig.axes) == 1
    assert {t.get_text() for t in fig.axes[0].texts if t.get_fontweight() == "bold"} \
        == set(traj)
    # few modules: a legend too
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


def test_a_gap_that_rounds_to_zero_is_0_mm_not_minus_0(capsys):
    """Fresh-user finding: a face gap just below zero (the faces pressed together, e.g.
    -0.3 mm) showed as "gap -0 mm"; a gap that rounds to a negative number keeps its
    sign."""
    from types import SimpleNamespace as NS
    from smores_assembly.run_job.console import ProgressPrinter
    status = NS(stage=0, header=NS(stamp=NS(sec=3, nanosec=0)), modules=[
        NS(module=m, phase=Phase.APPROACH, phase_name="APPROACH", face_gap_mm=gap, retries=0)
        for m, gap in (("m1", -0.3), ("m2", -0.0), ("m3", -1.6), ("m4", 0.4))])
    ProgressPrinter(1).show(None, status, t0=0.0)
    assert capsys.readouterr().out == ("[   3.0 s] stage 1/1 | m1 APPROACH gap 0 mm | "
                                       "m2 APPROACH gap 0 mm | m3 APPROACH gap -2 mm | "
                                       "m4 APPROACH gap 0 mm\n")


def _random_status_stream(rng: random.Random) -> list:
    """A run's ``DockingStatusArray`` stream at 10 Hz (stamps from a random origin): a few
    IDLE statuses, then stages (an undocking one first, sometimes) whose modules each go
    through random phase lengths (1 to 80 statuses, retries now and then), end DOCKED or
    UNDOCKED and hold it until the stage's last module is done: so one-status DOCKED and
    UNDOCKED ends, as in a real run's last stage."""
    from types import SimpleNamespace as NS
    t_ns = rng.randint(0, 50) * 100_000_000 + 3 * 10 ** 9
    out = []

    def emit(stage, mods):
        out.append(NS(header=NS(stamp=NS(sec=t_ns // 10 ** 9, nanosec=t_ns % 10 ** 9)),
                      stage=stage, modules=[
                          NS(module=m, phase=int(ph), phase_name=ph.name, retries=r,
                             face_gap_mm=rng.uniform(0.0, 150.0), lateral_error_mm=1.0,
                             yaw_error_deg=0.5, message="") for m, ph, r in mods]))

    names = [f"m{i}" for i in range(rng.randint(2, 7))]
    rng.shuffle(names)
    undocking = rng.random() < 0.5
    stages = []
    while names:
        k = rng.randint(1, min(3, len(names)))
        stages.append(names[:k])
        names = names[k:]
    if undocking:
        stages.insert(0, rng.sample(stages[-1], 1))
    for _ in range(rng.randint(1, 4)):
        emit(0, [(m, Phase.IDLE, 0) for m in stages[0]])
        t_ns += 100_000_000
    for k, mods in enumerate(stages):
        undock = undocking and k == 0
        plans = {}
        for m in mods:
            seq = [(Phase.UNDOCK, 0), (Phase.NAVIGATE, 0), (Phase.UNDOCKED, 0)] if undock else []
            if not undock:
                retries = 0
                seq = [(Phase.NAVIGATE, 0)] if rng.random() < 0.8 else []
                seq += [(Phase.POSE_ADJUST, 0), (Phase.APPROACH, 0)]
                while rng.random() < 0.3:
                    retries += 1
                    seq += [(Phase.RETRY, retries), (Phase.POSE_ADJUST, retries),
                            (Phase.APPROACH, retries)]
                seq.append((Phase.DOCKED, retries))
            plans[m] = [(ph, r, rng.randint(1, 80)) for ph, r in seq]
        while True:
            row = [(m, plans[m][0][0], plans[m][0][1]) for m in mods]
            emit(k, row)
            t_ns += 100_000_000
            if all(len(plans[m]) == 1 for m in mods):
                break       # every module of the stage done: its end shows once
            for m in mods:
                ph, r, n = plans[m][0]
                if len(plans[m]) > 1:
                    plans[m][0] = (ph, r, n - 1)
                    if n <= 1:
                        plans[m].pop(0)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_progress_lines_show_every_phase_change_of_the_report_at_its_time(
        seed, capsys, monkeypatch):
    """Fresh-user finding: the progress lines missed the last DOCKED / UNDOCKED of a run
    (and other short phases) and lagged the report by up to 1.4 s: they showed the status
    seen every 0.5 s of wall time. Fed with a random run's statuses as ``run`` wires it
    (every status, as the report's recorder gets it), every phase change is a line, at the
    time the report gives (oracle: the generated stream itself, and the recorder the
    report is made of). An unchanged line is repeated after 5 s of simulated time, not of
    wall time (lockstep: the lines do not depend on the machine's pace)."""
    import time

    from progress_lines import changes, parse

    from smores_assembly.run_job.console import REPEAT_S, ProgressPrinter
    from smores_assembly.run_job.observer import Observations
    from smores_assembly.run_job.results import activity_start
    rng = random.Random(seed)
    stream = _random_status_stream(rng)
    wall = [0.0]

    def slow_machine() -> float:   # 6 s of wall time between any two looks at the clock
        wall[0] += 6.0
        return wall[0]
    monkeypatch.setattr(time, "monotonic", slow_machine)
    outputs = []
    for _ in range(2):
        obs = Observations()
        obs.status_listeners.append(ProgressPrinter(4, None, obs.recorder).on_status)
        for msg in stream:
            obs.on_status(msg, msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]      # deterministic
    lines = parse(outputs[0])
    assert len(lines) == len(outputs[0].splitlines())
    # oracle: each module's phase changes in the generated stream, from its first activity
    stamp = [(m.header.stamp.sec * 10 ** 9 + m.header.stamp.nanosec, m) for m in stream]
    t0 = min(ns for ns, m in stamp if any(s.phase not in (
        Phase.IDLE, Phase.DOCKED, Phase.UNDOCKED) for s in m.modules))
    last: dict = {}
    expected = []
    for ns, m in stamp:
        for s in m.modules:
            if last.get(s.module) != s.phase_name and s.phase != Phase.IDLE:
                expected.append((s.module, s.phase_name, round((ns - t0) * 1e-9, 1)))
            last[s.module] = s.phase_name
    assert changes(lines) == expected
    # the report's phases (made of the same recorder) are those, at the same times
    rec = obs.recorder
    report = sorted((m, iv.phase.name, round(iv.start - activity_start(rec), 3))
                    for m, ivs in rec.intervals.items() for iv in ivs
                    if iv.phase is not Phase.IDLE)
    assert [(m, p, round(t, 1)) for m, p, t in report] == sorted(expected)
    # the throttle: an unchanged line comes again after REPEAT_S of simulated time
    text = [re.sub(r"^\[[^]]*\]| gap \d+ mm", "", ln) for ln in outputs[0].splitlines()]
    for (ta, _, _), (tb, _, _), a, b in zip(lines, lines[1:], text, text[1:]):
        assert tb >= ta
        if a == b:
            assert REPEAT_S < tb - ta + 1e-6 <= REPEAT_S + 0.1 + 2e-6, (ta, tb, a)
        else:
            assert tb - ta <= REPEAT_S + 0.1 + 1e-6, (ta, tb, a, b)


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
    assert note.endswith("a near-tie that the measurement noise decides)"), note
    # 24 % apart is no near-tie (fresh-user finding): a root that changed is named ...
    file_plan = NS(assignment={"hub": "m3", "a": "m5"}, total_cost_m=1.000, root_module="m3")
    stack = NS(assignment={"hub": "m5", "a": "m3"}, total_cost_m=1.240, root_module="m5")
    assert assignment_note(file_plan, stack).endswith(
        "(total travel 1.240 m vs 1.000 m: the physical root differs, m5 vs m3: both are "
        "nearly as near the modules' centroid, and the measurement noise decides)")
    # ... and with the same root the poses are said to differ
    stack.root_module = "m3"
    assert assignment_note(file_plan, stack).endswith(
        "more than a near-tie: the measured start poses differ from the scenario file's)")
    # a stack elsewhere that tracks other modules altogether (a fresh user's run --nodes
    # none against a stack of another scenario was told of a root tie)
    stack = NS(assignment={"hub": "n5", "a": "n3"}, total_cost_m=1.0, root_module="n5")
    assert assignment_note(file_plan, stack).startswith(
        "warning: the stack assigns modules the scenario file does not name (n3, n5): it "
        "tracks another set of modules than the file's")


def test_the_assignment_note_comes_with_the_plan_not_after_the_run(capsys):
    """Fresh-user finding: the walker's note was printed only after the run. It comes
    once, before the first progress line (the stack's plan is known once modules move),
    or with the plan at the approval prompt; not when the plans agree."""
    from types import SimpleNamespace as NS
    from smores_assembly.run_job.console import ProgressPrinter, StackPlanNote
    from smores_assembly.vocabulary import Phase
    file_plan = NS(assignment={"hub": "m3", "arm2": "m5", "arm3": "m4"}, total_cost_m=0.647)
    stack = NS(assignment={"hub": "m3", "arm2": "m4", "arm3": "m5"}, total_cost_m=0.646)
    known: list = [None]   # the stack's plan, once it arrives

    def status(phase):
        return NS(stage=0, modules=[NS(module="m4", phase=phase, phase_name=phase.name,
                                       face_gap_mm=9.0, retries=0)])

    printer = ProgressPrinter(2, StackPlanNote(file_plan, lambda: known[0]))
    printer.show(NS(stage=0, elapsed_s=0.0), None)   # planning: nothing to show yet
    known[0] = stack
    printer.show(NS(stage=1, elapsed_s=0.5), status(Phase.NAVIGATE))
    printer.show(NS(stage=1, elapsed_s=1.5), status(Phase.POSE_ADJUST))
    lines = capsys.readouterr().out.splitlines()
    assert [ln[:5] for ln in lines] == ["note:", "[   0", "[   1"], lines
    assert lines[0].startswith("note: planned from the measured poses, the stack assigns "
                               "arm2->m4, arm3->m5")
    # at the prompt: said with the plan, and not again before the progress lines
    note = StackPlanNote(file_plan, lambda: stack)
    note.check(stack)
    printer = ProgressPrinter(2, note)
    printer.show(NS(stage=1, elapsed_s=0.5), status(Phase.NAVIGATE))
    assert [ln[:5] for ln in capsys.readouterr().out.splitlines()] == ["note:", "[   0"]
    # plans that agree: no note, but seen (the run does not look again at its end)
    agree = StackPlanNote(file_plan, lambda: file_plan)
    agree.check()
    assert agree.seen and capsys.readouterr().out == ""


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


def test_the_timeline_legend_lists_only_phases_with_a_bar(tmp_path, saved_figures):
    """Fresh-user finding: the legend listed DOCKED/UNDOCKED with no bar of them drawn
    (a terminal phase reached at the run's end has no duration). Random rows of phase
    intervals, some without duration; oracle: the phases that have an interval of
    positive duration, and the bars drawn in each legend colour."""
    from matplotlib.colors import to_hex
    from smores_assembly.report import PhaseInterval
    from smores_assembly.vocabulary import PHASE_COLOURS
    rng = random.Random(8)
    phases = [p for p in PHASE_COLOURS if p is not Phase.IDLE]
    for _ in range(20):
        rows = []
        for r in range(rng.randint(1, 6)):
            t, ivs = 0.0, []
            for _ in range(rng.randint(1, 5)):
                d = rng.choice([0.0, 0.0, rng.uniform(0.1, 20.0)])
                ivs.append(PhaseInterval(rng.choice(phases), t, t + d))
                t += d
            rows.append((f"r{r}", ivs))
        plot_timeline(tmp_path / "l.png", rows, [(0.0, 50.0)])
        ax = saved_figures[-1].axes[0]
        with_bar = {iv.phase.name for _, ivs in rows for iv in ivs if iv.end > iv.start}
        legend = ax.get_legend()
        names = {t.get_text() for t in legend.get_texts()} if legend else set()
        assert names == with_bar, (rows, names)
        drawn = {to_hex(p.get_facecolor()) for p in ax.patches if p.get_width() > 0}
        assert {to_hex(PHASE_COLOURS[Phase[n]]) for n in names} <= drawn


def test_a_staging_move_is_drawn_on_one_row_only(tmp_path, saved_figures):
    """The walker's full disassembly: a module that undocks (stages 1-3) and docks again
    later moves to its staging pose in between. Fresh-user finding: that move was drawn
    hatched on its undock row (after its UNDOCKED) and again on its dock row. Random
    phase times and moves; oracle: each move's bar on the module's dock row, none on an
    undock row, one bar per move."""
    from pathlib import Path
    from types import SimpleNamespace as NS

    from smores_assembly.reconfigure import plan_reconfiguration
    from smores_assembly.report import STAGING_STYLE
    from smores_assembly.run_job import results
    from smores_assembly.scenario import load_scenario
    root = Path(__file__).resolve().parents[1]
    scenario = load_scenario(root / "config/scenarios/walker_to_manipulator.yaml")
    plan = plan_reconfiguration(scenario, method="full")
    both = sorted({u.module for u in plan.undocks} & {a.module for a in plan.actions})
    assert len(both) >= 3
    rng = random.Random(11)
    for _ in range(5):
        rec, motion, want = PhaseRecorder(), {}, {}
        for u in plan.undocks:
            a = 8.0 * u.stage + rng.uniform(0.0, 1.0)
            rec.sample(a, u.module, Phase.UNDOCK)
            rec.sample(a + 2.0, u.module, Phase.NAVIGATE)
            rec.sample(a + 5.0, u.module, Phase.UNDOCKED)
            motion[u.module] = [[a + 2.0, a + 5.0]]
        for act in plan.actions:
            b = 40.0 + 10.0 * act.stage
            rec.sample(b, act.module, Phase.NAVIGATE)
            rec.sample(b + 4.0, act.module, Phase.APPROACH)
            rec.sample(b + 6.0, act.module, Phase.DOCKED)
            if act.module in both:   # a staging move between its undock and its dock
                lo = rng.uniform(26.0, 30.0)
                hi = lo + rng.uniform(1.0, 8.0)
                motion[act.module].append([lo, hi])
                want[act.module] = (lo, hi)
            motion.setdefault(act.module, []).append([b, b + 6.0])
        obs = NS(recorder=rec, motion=motion, traj={})
        results.draw_pictures(tmp_path, scenario, plan, obs)
        ax = saved_figures[-1].axes[0]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        t0 = results.activity_start(rec)
        drawn = sorted((labels[round(p.get_y() + p.get_height() / 2)],
                        round(p.get_x() + t0, 6), round(p.get_x() + p.get_width() + t0, 6))
                       for p in ax.patches if p.get_hatch() == STAGING_STYLE["hatch"])
        rows = {a.module: f"s{a.stage + 1} {a.module}->{a.parent_module} "
                          f"{a.child_face.value}/{a.parent_face.value}" for a in plan.actions}
        assert drawn == sorted((rows[m], round(lo, 6), round(hi, 6))
                               for m, (lo, hi) in want.items()), drawn


def _drawn_modules(ax, traj):
    """Per module of ``traj``: the colour (hex) of its path and of its end cell's edge and
    fill, read from the artists of the drawn axes (the path: the line labelled with its
    name; the end cell: the solid square centred on its last point)."""
    from matplotlib.colors import to_hex
    from matplotlib.patches import Polygon
    lines = {ln.get_label().split(" ")[0]: to_hex(ln.get_color()) for ln in ax.lines}
    cells = {}
    for p in ax.patches:
        if isinstance(p, Polygon) and p.get_linestyle() == "solid":
            xy = p.get_xy()[:4]
            cells[(round(xy[:, 0].mean(), 4), round(xy[:, 1].mean(), 4))] = p
    out = {}
    for m, pts in traj.items():
        cell = cells[(round(pts[-1][0], 4), round(pts[-1][1], 4))]
        out[m] = (lines[m], to_hex(cell.get_edgecolor()), to_hex(cell.get_facecolor()))
    return out


@pytest.mark.parametrize("n", [5, 13, 37, 100])
def test_every_module_has_its_own_colour_at_any_count(tmp_path, saved_figures, n):
    """Fresh-user finding: beyond 10 modules the colours repeated (13 modules: h0 and m7
    the same blue, m0 and m8 orange, m1 and m9 green) in legend and end cells, and the
    legend covered a start label; at 100 modules (issue 16) the paths were coloured by
    stage. Random scenes; oracle: the drawn artists. Every module's path has a colour no
    other module's has (at least 0.08 apart in RGB), its end cell is drawn in it, and
    it is named in bold at that cell; with a legend, the legend lies right of the axes
    (it covers nothing of the scene)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgb
    from smores_assembly.report import MANY_MODULES
    rng = random.Random(n)
    traj = {}
    for i in range(n):
        x0, y0 = rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)
        gx, gy = 0.08 * (i % 10), 0.08 * (i // 10)
        traj[f"m{i}" if i < n - 2 else f"h{i}"] = [(x0, y0, rng.uniform(-3, 3)),
                                                   (x0, gy, 0.0), (gx, gy, 0.0)]
    plot_trajectories(tmp_path / "t.png", traj, {}, [], helpers=[m for m in traj if m[0] == "h"])
    fig = saved_figures[-1]
    ax = fig.axes[0]
    drawn = _drawn_modules(ax, traj)
    for m, (line, edge, face) in drawn.items():
        assert edge == line and (m[0] == "h" or face == line), (m, line, edge, face)
    rgb = np.array([to_rgb(line) for line, _, _ in drawn.values()])
    gap = np.sqrt(((rgb[:, None] - rgb[None]) ** 2).sum(-1)) + 9 * np.eye(n)
    assert gap.min() >= 0.08, [(m, o) for (i, m), (j, o) in
                                 ((a, b) for a in enumerate(drawn) for b in enumerate(drawn))
                                 if i < j and gap[i, j] < 0.08][:5]
    bold = {t.get_text(): t.get_position() for t in ax.texts if t.get_fontweight() == "bold"}
    assert {m: tuple(round(v, 6) for v in bold[m]) for m in traj} == {
        m: (round(pts[-1][0], 6), round(pts[-1][1], 6)) for m, pts in traj.items()}
    legend = ax.get_legend()
    assert (legend is None) == (n > MANY_MODULES)
    if legend is not None:
        renderer = FigureCanvasAgg(fig).get_renderer()
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_the_report_waits_for_the_last_docking_statuses_of_a_successful_goal():
    """``ObserverNode.await_docked`` spins until every docked module's last recorded phase
    is DOCKED (a CI run's Task 1 report, recorded at full pace on a loaded machine, kept m3
    in POSE_ADJUST: its later statuses came after the goal's result), and names the
    modules still short when the bound passes."""
    from smores_assembly.report import PhaseRecorder
    from smores_assembly.run_job.observer import ObserverNode
    from smores_assembly.vocabulary import Phase

    class Stub:
        def __init__(self, late):
            self.obs = type("Obs", (), {"recorder": PhaseRecorder()})()
            self.late, self.spins = late, 0
            for m in ("m3", "m4"):
                self.obs.recorder.sample(0.5, m, Phase.POSE_ADJUST)
            self.obs.recorder.sample(0.9, "m4", Phase.DOCKED)

        def spin_until(self, pred, timeout, interruptible=True):
            for t, m, phase in self.late:   # what arrives while it spins
                self.obs.recorder.sample(t, m, phase)
            self.spins += 1
            return pred()

    s = Stub([(1.0, "m3", Phase.APPROACH), (2.0, "m3", Phase.DOCKED)])
    assert ObserverNode.await_docked(s, ["m3", "m4"], timeout=1.0) == []
    assert [i.phase for i in s.obs.recorder.intervals["m3"]] == [
        Phase.POSE_ADJUST, Phase.APPROACH, Phase.DOCKED]
    assert ObserverNode.await_docked(Stub([]), ["m3", "m4"], timeout=0.01) == ["m3"]
