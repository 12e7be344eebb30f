"""argtypes.bounded: the one bounded-number type of every CLI (run, plan, navigation)."""
import argparse
import math

import pytest

from smores_assembly.argtypes import bounded


@pytest.mark.parametrize("kind,lo,hi,lo_open,good,bad", [
    (float, 0.0, None, True, ["1e-9", "3", "2.5"], ["0", "-1", "nan", "inf", "x"]),
    (float, 0.0, None, False, ["0", "7.5"], ["-0.1", "inf", "nan", ""]),
    (float, 1.0, None, False, ["1", "1.3"], ["0.99", "-inf"]),
    (int, 0, 2**31 - 1, False, ["0", str(2**31 - 1)], [str(2**31), "-1", "1.5", "x"]),
])
def test_accepts_exactly_the_range(kind, lo, hi, lo_open, good, bad):
    parse = bounded(kind, lo=lo, hi=hi, lo_open=lo_open)
    for text in good:
        v = parse(text)
        assert type(v) is kind and v == kind(text)
        assert (v > lo if lo_open else v >= lo) and (hi is None or v <= hi)
        assert math.isfinite(v)
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace("(", r"\(")):
            parse(text)


def test_the_refusal_names_the_range_through_argparse(capsys):
    ap = argparse.ArgumentParser(prog="p")
    ap.add_argument("--timeout", type=bounded(float, lo=0.0, lo_open=True))
    with pytest.raises(SystemExit):
        ap.parse_args(["--timeout", "-3"])
    err = capsys.readouterr().err
    assert "--timeout" in err and "expected a number > 0, got '-3'" in err


def test_integer_bounds_are_printed_whole():
    with pytest.raises(argparse.ArgumentTypeError,
                       match=r"expected an integer in \[0, 2147483647\], got '-1'"):
        bounded(int, lo=0, hi=2**31 - 1)("-1")


def test_run_cli_ctrl_c_is_one_line_and_130(capsys):
    from smores_assembly.argtypes import run_cli

    def main():
        raise KeyboardInterrupt
    assert run_cli(main, prog="p", interrupted="interrupted before X") == 130
    err = capsys.readouterr().err
    assert err == "p: interrupted before X\n"


def test_plan_ctrl_c_prints_one_line_no_traceback(monkeypatch, capsys):
    """Ctrl-C while `plan` computes (here: while the scenario loads)."""
    from smores_assembly import cli, scenario

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(scenario, "load_scenario", interrupted)
    assert cli.main(["plan", "config/scenarios/rc_car.yaml"]) == 130
    out = capsys.readouterr()
    assert out.err == "smores-assemble: interrupted\n"
    assert "Traceback" not in out.out + out.err


def test_run_ctrl_c_while_picking_a_domain(monkeypatch, capsys, tmp_path):
    """Ctrl-C in `run` before the stack starts (pick_free_domain sleeps between probes):
    one line, 130; a progress line came before the slow part."""
    pytest.importorskip("rclpy")
    from smores_assembly import cli
    from smores_assembly.ros import domain

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(domain, "pick_free_domain", interrupted)
    import os
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items()
                                        if k != "ROS_DOMAIN_ID"})  # run sets defaults
    assert cli.main(["run", "config/scenarios/rc_car.yaml", "--out", str(tmp_path)]) == 130
    out = capsys.readouterr()
    assert out.err == "smores-assemble: interrupted before any module moved\n"
    assert "picking a ROS domain and starting the stack" in out.out.splitlines()[0]


def test_run_ctrl_c_after_the_stack_stopped_does_not_claim_nothing_moved(monkeypatch, capsys,
                                                                        tmp_path):
    """A Ctrl-C that reaches the CLI after the run started its nodes (the run's own handlers
    are restored before the results are written) must not say 'before any module moved'."""
    pytest.importorskip("rclpy")
    import os

    import smores_assembly.run_job as run_job
    from smores_assembly import cli
    monkeypatch.setitem(run_job._STARTED, "stack", False)

    def started_then_interrupted(*_a, **_k):
        run_job._STARTED["stack"] = True   # as _run_stack does when it starts the nodes
        raise KeyboardInterrupt
    monkeypatch.setattr(run_job, "_run_stack", started_then_interrupted)
    monkeypatch.setattr(os, "environ", {**os.environ, "ROS_DOMAIN_ID": "77"})
    assert cli.main(["run", "config/scenarios/rc_car.yaml", "--out", str(tmp_path)]) == 130
    out = capsys.readouterr()
    err = out.err
    assert err.startswith("smores-assemble: interrupted after the stack stopped")
    # ROS_DOMAIN_ID given: no domain is picked, and the progress line does not claim it
    first = out.out.splitlines()[0]
    assert "starting the stack" in first and "picking a ROS domain" not in first
    assert "before any module moved" not in err and "Traceback" not in err


def test_run_removes_its_own_previous_outputs_only(monkeypatch, capsys, tmp_path):
    """A reused --out: the earlier run's files (recording, ros_log/, report ...) are gone
    when the run starts, with one line naming them; a file the run does not write stays."""
    pytest.importorskip("rclpy")
    import os

    from smores_assembly import cli
    from smores_assembly.ros import domain
    from smores_assembly.run_job.stack import RUN_OUTPUTS

    for name in RUN_OUTPUTS:
        if name == "ros_log":
            (tmp_path / name / "python_1").mkdir(parents=True)
            (tmp_path / name / "python_1" / "x.log").write_text("run 1")
        else:
            (tmp_path / name).write_text("run 1")
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "mine").mkdir()

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(domain, "pick_free_domain", interrupted)
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items()
                                        if k != "ROS_DOMAIN_ID"})
    assert cli.main(["run", "config/scenarios/rc_car.yaml", "--out", str(tmp_path)]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine"
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "previous run" in ln]
    assert lines == [f"removed the previous run's outputs from {tmp_path}/: report.json, "
                     f"trajectories.png, timeline.png, nodes.log, assembly.mcap, ros_log/"]
