"""run: flag and environment combinations that cannot work are refused before anything
starts (exit 2, one line naming them)."""
import pytest

pytest.importorskip("rclpy")

from smores_assembly import cli  # noqa: E402

SCENARIO = "config/scenarios/rc_car.yaml"


def test_free_running_with_real_time_factor_zero_is_refused(capsys, tmp_path):
    """Fresh-user finding: accepted silently, then stale mocap, PAUSED and a collision."""
    assert cli.main(["run", SCENARIO, "--free-running", "--real-time-factor", "0",
                     "--out", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.err.startswith("smores-assemble: error: --free-running with "
                              "--real-time-factor 0: ")
    assert out.out == "" and list(tmp_path.iterdir()) == []   # nothing started


@pytest.mark.parametrize("value", ["bogus", "Lean", ""])
def test_an_unknown_executor_kind_is_refused_naming_the_variable(value, monkeypatch,
                                                                  capsys, tmp_path):
    """Fresh-user finding: SMORES_EXECUTOR=bogus silently fell back to the lean one."""
    monkeypatch.setenv("SMORES_EXECUTOR", value)
    assert cli.main(["run", SCENARIO, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"smores-assemble: error: SMORES_EXECUTOR={value!r}: expected one of "
                   f"lean, single, events (or unset: lean)\n")


@pytest.mark.parametrize("value", ["lean", "single", "events"])
def test_the_executor_kinds_are_accepted(value, monkeypatch):
    from smores_assembly.ros.common import executor_kind
    monkeypatch.setenv("SMORES_EXECUTOR", value)
    assert executor_kind() == value
    monkeypatch.delenv("SMORES_EXECUTOR")
    assert executor_kind() == "lean" and executor_kind(events=True) == "events"


def test_free_running_with_the_params_files_real_time_factor_zero_is_refused(capsys,
                                                                             tmp_path):
    """The same pace taken from --params-file (the flag, when given, wins over it)."""
    pf = tmp_path / "p.yaml"
    pf.write_text("/**/fake_hardware:\n  ros__parameters:\n    real_time_factor: 0.0\n")
    out = tmp_path / "out"
    assert cli.main(["run", SCENARIO, "--free-running", "--params-file", str(pf),
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"smores-assemble: error: --free-running with real_time_factor: "
                          f"0 of --params-file {pf}:3: ")
    assert not out.exists()


@pytest.mark.ros
def test_a_node_started_directly_refuses_an_unknown_executor_kind(ros_domain, tmp_path):
    """A node executable started by hand (or by ros2 run/launch) with a bad SMORES_EXECUTOR
    stopped with a ValueError traceback: one FATAL line naming the variable, exit 2, before
    any node is made."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "SMORES_EXECUTOR": "bogus", "ROS_DOMAIN_ID": str(ros_domain)}
    r = subprocess.run([sys.executable, "-m", "smores_assembly.ros.root_search"],
                       capture_output=True, text=True, env=env, timeout=120,
                       cwd=tmp_path)   # the installed package (with its messages)
    assert r.returncode == 2, (r.stdout, r.stderr)
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    assert "SMORES_EXECUTOR='bogus': expected one of lean, single, events" in out
