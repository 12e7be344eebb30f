"""`smores-assemble plan` as a subprocess: JSON values, readable table, bad input."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import installed
import pytest

from smores_assembly.cli import IDLE_HEAD, build_parser, main
from smores_assembly.geometry import Pose2D
from smores_assembly.planning import plan_assembly
from smores_assembly.scenario import load_scenario
from ros_helpers import HANG_S

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "config" / "scenarios"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*installed.cli(), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=HANG_S)


def test_plan_json_task1():
    r = run_cli("plan", str(SCENARIOS / "mobile_manipulator.yaml"), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["root"] == {"node": "hub", "module": "m1"}
    assert d["goals"]["m1"] == [0.0, 0.0, 0.0]
    assert set(d["assignment"]) == {"hub", "right", "front", "left", "arm1", "arm2", "arm3"}
    assert d["assignment"]["hub"] == "m1"
    # Same as the library's plan, and the cost is the summed travel to the goals.
    sc = load_scenario(SCENARIOS / "mobile_manipulator.yaml")
    plan = plan_assembly(sc)
    assert d["assignment"] == plan.assignment and d["stages"] == plan.stages
    travel = sum(sc.modules[m].distance_to(Pose2D(*d["goals"][m]))
                 for n, m in d["assignment"].items() if n != "hub")
    assert d["total_cost_m"] == pytest.approx(travel, abs=1e-9)
    assert len(d["actions"]) == 6
    first = {a["node"]: a for a in d["actions"]}
    assert first["left"]["parent_module"] == "m1" and first["left"]["parent_face"] == "LEFT"
    assert first["left"]["child_face"] == "BOTTOM" and first["left"]["needs_helper"] is False
    assert first["left"]["stage"] == 0 and first["front"]["stage"] == 1
    assert [sorted(s) for s in d["stages"]] == [
        sorted(a["module"] for a in d["actions"] if a["stage"] == k)
        for k in range(len(d["stages"]))]


def test_plan_json_rc_car_uses_helper():
    r = run_cli("plan", str(SCENARIOS / "rc_car.yaml"), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    helped = [a for a in d["actions"] if a["needs_helper"]]
    assert len(helped) == 4 and all(a["helper"] == "h0" for a in helped)
    assert all(a["child_face"] in ("LEFT", "RIGHT") for a in helped)
    assert "h0" not in d["assignment"].values()


def test_plan_table():
    r = run_cli("plan", str(SCENARIOS / "holonomic_vehicle.yaml"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "root: node hub" in out and "stage" in out and "schedule pipelined" in out
    assert f"{IDLE_HEAD}: -" in out
    assert len(out.splitlines()) == 3 + 1 + 2 + 8  # header lines, table head, 8 actions, idle


def test_plan_table_names_the_helping_module_busy_not_idle():
    """rc_car's h0 carries all four wheel modules: the table says so and does not list it
    as idle (fresh-user finding)."""
    r = run_cli("plan", str(SCENARIOS / "rc_car.yaml"))
    assert r.returncode == 0, r.stderr
    helped = [ln.split()[1] for ln in r.stdout.splitlines()
              if ln[:1].isdigit() and "h0" in ln.split()]
    assert len(helped) == 4
    assert f"helping modules: h0 carries {', '.join(helped)}" in r.stdout
    assert f"{IDLE_HEAD}: -" in r.stdout


def test_json_idle_and_notes_say_what_the_table_says(tmp_path):
    """rc_car's h0 carries: the table's "idle throughout" is empty and so is the JSON's
    idle (it said ["h0"]); a spare module that carries gets the table's note in "notes"."""
    d = json.loads(run_cli("plan", str(SCENARIOS / "rc_car.yaml"), "--json").stdout)
    assert d["helpers"] == ["h0"] and d["idle"] == [] and d["notes"] == []
    import yaml
    data = yaml.safe_load((SCENARIOS / "rc_car.yaml").read_text())
    data.pop("helpers")   # then a spare module carries
    p = tmp_path / "spare.yaml"
    p.write_text(yaml.safe_dump(data))
    table = run_cli("plan", str(p)).stdout.splitlines()
    d = json.loads(run_cli("plan", str(p), "--json").stdout)
    idle_line = next(ln for ln in table if ln.startswith("idle throughout"))
    assert idle_line.split(": ", 1)[1] == (", ".join(d["idle"]) or "-")
    assert [f"note: {n}" for n in d["notes"]] == [ln for ln in table
                                                  if ln.startswith("note: ")]
    assert d["notes"] and "(spare, not under 'helpers:') would carry" in d["notes"][0]


@pytest.mark.parametrize("content, needle", [
    ("name: x\ntarget: {nodes: [a, b], edges: [{parent: a, parent_face: FRONT, child: b, "
     "child_face: TOP}]}\nmodules: {m0: [0, 0, 0], m1: [1, 0, 0]}\n",
     "target.edges[0].parent_face: unknown face 'FRONT'"),
    ("name: x\ntarget: {nodes: [a, b], edges: [{parent: a, parent_face: LEFT, child: b, "
     "child_face: RIGHT}]}\nmodules: {m0: [0, 0, 0], m1: [1, 0, 0]}\n",
     "needs a helping module"),
    ("name: x\ntarget: [\n", "invalid YAML"),
])
def test_bad_input_exit_2_one_line(tmp_path, content, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(content)
    r = run_cli("plan", str(p), "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("smores-assemble: error: ") and needle in lines[0]
    assert "Traceback" not in r.stderr


def test_missing_file_in_process(capsys, tmp_path):
    assert main(["plan", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err


def test_run_arguments_parse():
    args = build_parser().parse_args(["run", "s.yaml", "--out", "o", "--approve", "--record",
                                      "--timeout", "30", "--real-time-factor", "4"])
    assert (args.scenario, args.out, args.approve, args.record, args.timeout,
            args.real_time_factor) == ("s.yaml", "o", True, True, 30.0, 4.0)
    d = build_parser().parse_args(["run", "s.yaml"])
    assert (d.out, d.approve, d.record, d.timeout, d.real_time_factor) == \
        (None, False, False, None, None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "s.yaml", "--timeout", "-1"])


# --- regressions: overlap exit 2, closed stdout, 1-based table stages, help texts ----------

def test_overlapping_modules_exit_2_naming_both(tmp_path):
    p = tmp_path / "overlap.yaml"
    p.write_text("name: x\ntarget: {nodes: [a, b], edges: [{parent: a, parent_face: TOP, "
                 "child: b, child_face: BOTTOM}]}\n"
                 "modules: {m1: [0, 0, 0], m2: [0, 0, 0.5]}\n")
    r = run_cli("plan", str(p))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smores-assemble: error: {p}: modules: ")
    assert "'m1'" in lines[0] and "'m2'" in lines[0] and "overlap by 94.3 mm" in lines[0]


def test_missing_helper_error_has_file_and_field(tmp_path):
    p = tmp_path / "nohelper.yaml"
    p.write_text("name: x\ntarget: {nodes: [a, b], edges: [{parent: a, parent_face: LEFT, "
                 "child: b, child_face: RIGHT}]}\nmodules: {m0: [0, 0, 0], m1: [1, 0, 0]}\n")
    r = run_cli("plan", str(p))
    assert r.returncode == 2
    assert r.stderr.startswith(f"smores-assemble: error: {p}: helpers: action ")


@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_closed_stdout_is_quiet(fmt):
    import os
    rd, wr = os.pipe()
    os.close(rd)  # every write to the pipe fails with EPIPE: the reader is gone
    try:
        r = subprocess.run([*installed.cli(), "plan",
                            str(SCENARIOS / "holonomic_vehicle.yaml"), *fmt], cwd=REPO,
                           stdout=wr, stderr=subprocess.PIPE, text=True, timeout=HANG_S)
    finally:
        os.close(wr)
    assert r.returncode == 0 and r.stderr == ""


def test_table_stages_are_one_based_json_zero_based():
    path = str(SCENARIOS / "holonomic_vehicle.yaml")
    d = json.loads(run_cli("plan", path, "--json").stdout)
    out = run_cli("plan", path).stdout.splitlines()
    rows = out[out.index(next(x for x in out if x.startswith("-----"))) + 1:-1]
    table = {r.split()[1]: int(r.split()[0]) for r in rows}
    assert table == {a["module"]: a["stage"] + 1 for a in d["actions"]}
    assert min(table.values()) == 1 and min(a["stage"] for a in d["actions"]) == 0


def test_help_texts():
    from smores_assembly import cli, run_job
    assert cli.RUN_DEFAULT_TIMEOUT_S == run_job.DEFAULT_TIMEOUT_S
    sub = build_parser()._subparsers._group_actions[0].choices
    run_help = sub["run"].format_help()
    assert "--params-file FILE" in sub["run"].format_usage()
    assert f"{run_job.DEFAULT_TIMEOUT_S:g} s" in " ".join(run_help.split())
    assert "0-based" in " ".join(sub["plan"].format_help().split())


def test_run_help_lists_every_exit_status_run_returns():
    """``run --help`` lists the statuses the code returns, no more, no fewer (it lacked
    143, SIGTERM: fresh-user finding): 0 assembled, 1 failed, 2 bad input (the
    pre-checks, or a node's refusal), 3 not approved, 130 and 143 the signals."""
    import re
    import signal

    from smores_assembly.argtypes import INTERRUPTED_STATUS
    from smores_assembly.entry import INTERRUPTED_EXIT
    sub = build_parser()._subparsers._group_actions[0].choices
    text = " ".join(sub["run"].format_help().split())
    epilog = "exit status:" + text.split("exit status:", 1)[1]
    listed = [int(n) for n in re.findall(r"(?:exit status: |; )(\d+) ", epilog)]
    signals = {128 + signal.SIGINT, 128 + signal.SIGTERM}   # stack.Interrupts.exit_code
    assert INTERRUPTED_STATUS == INTERRUPTED_EXIT == 128 + signal.SIGINT
    assert listed == sorted({0, 1, 2, 3} | signals), text
    assert "143 SIGTERM" in text


def test_run_without_ros_is_one_line_exit_2(monkeypatch, capsys):
    """`pip install .` gives no rclpy: `run` says so in one line (exit 2), no traceback."""
    import sys as _sys

    from smores_assembly import cli
    monkeypatch.setitem(_sys.modules, "rclpy", None)  # import rclpy -> ImportError
    status = cli.main(["run", str(SCENARIOS / "mobile_manipulator.yaml"), "--out",
                       "/nonexistent/never-written"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("smores-assemble: error: run needs ROS 2") and err.count("\n") == 1


@pytest.mark.parametrize("command", ["plan", "run"])
def test_full_disassembly_without_initial_block_is_refused(command, capsys, tmp_path):
    """`--full-disassembly` on a scenario whose modules all start single (no `initial:`)
    is refused before anything is planned or started (exit 2), naming the flag and the
    missing block; with the block it is accepted (plan)."""
    from smores_assembly import run_job

    path = str(SCENARIOS / "mobile_manipulator.yaml")
    out = tmp_path / "out"
    if command == "plan":
        status = main(["plan", path, "--full-disassembly"])
    else:  # the run handler itself (no rclpy needed before its input checks)
        status = run_job.run(build_parser().parse_args(
            ["run", path, "--full-disassembly", "--out", str(out)]))
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    err = " ".join(captured.err.split())
    assert err.startswith("smores-assemble: error: --full-disassembly:")
    assert "mobile_manipulator.yaml has no 'initial:' block" in err
    assert not out.exists()  # nothing started, nothing written
    walker = str(SCENARIOS / "walker_to_manipulator.yaml")
    assert main(["plan", walker, "--full-disassembly", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "full"


def test_run_refuses_a_plan_whose_spare_helper_the_fake_hardware_would_refuse(capsys,
                                                                              tmp_path):
    """rc_car without its `helpers:` line: the planner uses a spare module to carry the
    wheel-face docks, the fake hardware takes helper commands only from declared helpers
    (its LIFT was refused mid-run in bench_reconfig): `run` refuses before starting."""
    from smores_assembly import run_job

    text = (SCENARIOS / "rc_car.yaml").read_text()
    assert "helpers: [h0]\n" in text
    path = tmp_path / "rc_car_spare.yaml"
    path.write_text(text.replace("helpers: [h0]\n", ""))
    # the plan itself is fine (plan shows it): a spare module helps
    assert main(["plan", str(path), "--json"]) == 0
    [spare] = json.loads(capsys.readouterr().out)["helpers"]
    # ... and the table says that `run` on the fake hardware needs it listed
    assert main(["plan", str(path)]) == 0
    assert f"note: {spare} (spare, not under 'helpers:') would carry" in \
        capsys.readouterr().out
    out = tmp_path / "out"
    status = run_job.run(build_parser().parse_args(["run", str(path), "--out", str(out)]))
    err = " ".join(capsys.readouterr().err.split())
    assert status == 2, err
    assert err.startswith(f"smores-assemble: error: {path}: helpers: the plan uses {spare} "
                          f"(spare)")
    assert f"add {spare} to 'helpers:'" in err and not out.exists()


@pytest.mark.parametrize("kind", ["file", "proc"])
def test_run_out_that_cannot_be_a_directory_names_out(kind, capsys, tmp_path):
    """Fresh-user finding: `--out /proc/foo` printed `[Errno 2] No such file or
    directory`, `--out <a file>` `[Errno 17] File exists`, neither naming --out."""
    from smores_assembly import run_job

    if kind == "file":
        out = tmp_path / "taken"
        out.write_text("x")
        want = f"--out: {out} exists and is not a directory"
    else:
        out = Path("/proc/smores-no-such-dir")
        want = f"--out: cannot create the directory {out}: "
    status = run_job.run(build_parser().parse_args(
        ["run", str(SCENARIOS / "mobile_manipulator.yaml"), "--out", str(out)]))
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"smores-assemble: error: {want}")
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["plan", "run"])
def test_unknown_option_shows_the_subcommands_usage(command, capsys):
    """`run X.yaml --bogus` printed the top-level usage (`smores-assemble [-h] COMMAND`)."""
    with pytest.raises(SystemExit) as exc:
        main([command, str(SCENARIOS / "mobile_manipulator.yaml"), "--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith(f"usage: smores-assemble {command} [-h]")
    assert err.rstrip().endswith("error: unrecognized arguments: --bogus")


def test_a_node_exiting_early_is_the_runs_typed_failure(tmp_path):
    """Fresh-user finding: a node that refused its configuration during `run` ended in a
    traceback "RuntimeError: node(s) exited early: {'task_assignment': 2}" and exit 1.
    The failure is typed (StackExited, a RuntimeError as run_goal expects); status 2 of
    every exited node is a refusal, told in one line with the node's FATAL reason."""
    from smores_assembly.run_job.stack import StackExited
    log = tmp_path / "nodes.log"
    log.write_text("[executive] [INFO] [1.0] [executive]: up\n"
                   "[task_assignment] [FATAL] [1.2] [task_assignment]: schedule: 'parallel' "
                   "is not one of sequential, staged, pipelined\n")
    exc = StackExited({"task_assignment": 2}, log)
    assert isinstance(exc, RuntimeError) and exc.refused
    assert str(exc) == f"node(s) exited early: task_assignment (status 2); see {log}"
    line = exc.refusal()
    assert "\n" not in line and line.startswith(
        "task_assignment refused its configuration (exit status 2: task_assignment: "
        "schedule: 'parallel' is not one of sequential, staged, pipelined)")
    assert line.endswith(str(log))
    assert not StackExited({"task_assignment": 2, "executive": 1}, log).refused
    assert not StackExited({}, log).refused


def test_plan_and_run_word_the_missing_helper_refusal_alike(tmp_path, capsys):
    """A wheel-face dock with no helper: plan and run refuse with the same line (file
    name and the 'helpers:' field; run's lacked both)."""
    pytest.importorskip("rclpy")
    from smores_assembly import cli
    p = tmp_path / "nohelper.yaml"
    p.write_text("name: nohelper\ntarget:\n  nodes: [a, b, c]\n  edges:\n"
                 "    - {parent: a, parent_face: TOP, child: b, child_face: BOTTOM}\n"
                 "    - {parent: a, parent_face: LEFT, child: c, child_face: RIGHT}\n"
                 "modules:\n  m0: [0.0, 0.0, 0.0]\n  m1: [0.3, 0.0, 0.0]\n"
                 "  m2: [0.0, 0.3, 0.0]\n")
    assert cli.main(["plan", str(p)]) == 2
    plan_err = capsys.readouterr().err
    assert cli.main(["run", str(p), "--out", str(tmp_path / "out")]) == 2
    run_err = capsys.readouterr().err
    assert plan_err.startswith(f"smores-assemble: error: {p}: helpers: action ")
    assert run_err == plan_err


RECONF = ("name: {name}\ntarget:\n  nodes: [a, b, c]\n  edges:\n"
          "    - {{parent: a, parent_face: TOP, child: b, child_face: BOTTOM}}\n"
          "    - {{parent: b, parent_face: TOP, child: c, child_face: BOTTOM}}\n"
          "modules:\n  m0: [0, 0, 0]\n  m1: [0.08, 0, {yaw}]\n  m2: [0.4, 0.3, 1.0]\n"
          "initial:\n  connections:\n    - [m0.TOP, m1.{face}]\n")


def test_a_reconfiguration_with_nothing_to_undock_says_so(tmp_path):
    """m0.TOP-m1.BOTTOM is the target's a-b edge: kept, nothing undocks; the table said
    only its empty header (fresh-user finding)."""
    p = tmp_path / "r_ok.yaml"
    p.write_text(RECONF.format(name="r_ok", yaw=0, face="BOTTOM"))
    out = run_cli("plan", str(p)).stdout.splitlines()
    assert out[2] == ("reconfiguration (reuse): keeps m0, m1 docked; 0 undocking actions "
                      "in 0 stages")
    assert out[3] == "nothing to undock"
    assert not any(ln.startswith("stage  module  undocks face") for ln in out)


def test_a_reconfiguration_keeping_one_module_says_in_place(tmp_path):
    """A reuse plan that keeps a single module (reconfigure.single_parts) says it stays in
    place, not 'docked' (it has no connection)."""
    import dataclasses

    from smores_assembly.cli import format_plan
    from smores_assembly.reconfigure import plan_reconfiguration

    p = tmp_path / "r_ok.yaml"
    p.write_text(RECONF.format(name="r_ok", yaw=0, face="BOTTOM"))
    sc = load_scenario(p)
    plan = dataclasses.replace(plan_reconfiguration(sc), kept=["m0"])
    assert format_plan(plan, sc).splitlines()[2] == (
        "reconfiguration (reuse): keeps m0 in place (the target is built round it); "
        "0 undocking actions in 0 stages")


def test_a_full_reconfiguration_says_why_it_is_full(tmp_path):
    """m0.TOP-m1.LEFT joins no target edge's faces: no common part. Without
    --full-disassembly the plan is the one of shortest estimated time, here keeping the
    single m0 in place (reconfigure.single_parts; its estimate is below the full
    disassembly's); a full plan of the same scenario says why it is full, and names the
    flag when given."""
    from smores_assembly.cli import format_plan
    from smores_assembly.reconfigure import estimated_time, plan_reconfiguration

    p = tmp_path / "r_undock.yaml"
    p.write_text(RECONF.format(name="r_undock", yaw=1.5707963, face="LEFT"))
    sc = load_scenario(p)
    reuse = plan_reconfiguration(sc)
    full = plan_reconfiguration(sc, method="full")
    assert reuse.method == "reuse" and reuse.kept == ["m0"]
    assert estimated_time(reuse, sc.modules) < estimated_time(full, sc.modules)
    out = run_cli("plan", str(p)).stdout.splitlines()
    assert out[2] == ("reconfiguration (reuse): keeps m0 in place (the target is built "
                      "round it); 1 undocking action in 1 stage")
    assert format_plan(full, sc).splitlines()[2].startswith(
        "reconfiguration (full): full disassembly, then assembly (no part of the start "
        "structure is kept because none is a part of the target: ")
    out = run_cli("plan", str(p), "--full-disassembly").stdout.splitlines()
    assert out[2].startswith("reconfiguration (full): full disassembly, then assembly "
                             "(--full-disassembly); 1 undocking action")


def _poses(d):
    yield from d["goals"].values()
    for a in d["actions"]:
        yield a["goal"]
    for u in d["undocks"]:
        yield u["start"]
        yield u["park"]


def test_plan_json_has_no_float_noise(tmp_path, capsys):
    """Fresh-user finding: ``plan --json`` printed float noise such as 9.8e-18 (a 0 m
    position). Every pose is rounded to 1e-6 (m, rad) and differs from the plan's own
    value by at most half of that. Inputs: the shipped scenarios and random bench
    targets; oracle: the plan's unrounded ``to_dict``, and the JSON text itself."""
    import yaml
    from random_plans import bench_plans
    files = sorted(SCENARIOS.glob("*.yaml"))
    for k, (sc, _plan) in enumerate(bench_plans(4, seed=5)):
        f = tmp_path / f"random_{k}.yaml"
        f.write_text(yaml.safe_dump(sc.to_dict()))
        files.append(f)
    checked = 0
    for f in files:
        assert main(["plan", str(f), "--json"]) == 0
        text = capsys.readouterr().out
        got = json.loads(text)
        for pose in _poses(got):
            for x in pose:
                assert x == round(x, 6) and repr(x) != "-0.0", \
                    (f, pose)
        # the values themselves: the rounded plan, action by action
        parser_plan = plan_of(f)
        want = [a.to_dict()["goal"] for a in parser_plan.actions]
        have = [a["goal"] for a in got["actions"]]
        assert len(want) == len(have)
        for w, h in zip(want, have):
            assert all(abs(a - b) <= 5e-7 + 1e-12 for a, b in zip(w, h)), (f, w, h)
        checked += 1
    assert checked >= len(list(SCENARIOS.glob("*.yaml"))) + 2


def plan_of(path):
    """The plan ``plan --json`` prints for ``path`` (default schedule), unrounded."""
    from argparse import Namespace
    from smores_assembly.cli import plan_scenario
    from smores_assembly.planning import with_schedule
    from smores_assembly.staging import DEFAULT_SCHEDULE
    sc = load_scenario(path)
    return with_schedule(plan_scenario(Namespace(scenario=str(path)), sc), DEFAULT_SCHEDULE)
