"""The YAML launch runner resolves the package's launch files like ros2 launch would."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from smores_assembly.launch import LaunchError, LaunchRunner, ProcessSpec, launch_file, load_launch
from ros_helpers import HANG_S

REPO = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _ros_args(spec: ProcessSpec) -> list[str]:
    return spec.cmd[spec.cmd.index("--ros-args"):]


def test_fake_assembly_starts_every_node_with_its_parameters():
    scen = str(REPO / "config/scenarios/rc_car.yaml")
    specs = load_launch(launch_file("fake_assembly"), {"scenario": scen, "real_time_factor": "7.5"})
    names = [s.name for s in specs]
    assert names == ["fake_hardware", "mocap_bridge", "root_search", "task_assignment",
                     "navigation", "docking_controller", "executive"]
    fh = specs[0]
    # the installed executable, as `ros2 launch` starts it
    assert Path(fh.cmd[0]).parts[-3:] == ("lib", "smores_assembly", "fake_hardware")
    assert os.access(fh.cmd[0], os.X_OK)
    args = _ros_args(fh)
    assert f"scenario:={scen}" in args and "real_time_factor:=7.5" in args
    assert str(REPO / "config/fake_hardware.yaml") in args
    for spec in specs[2:]:
        a = _ros_args(spec)
        # own config first, lab overrides second, sim time on
        own = a.index(str(REPO / f"config/{spec.name}.yaml"))
        over = a.index(str(REPO / "config/overrides.yaml"))
        assert own < over
        assert "use_sim_time:=true" in a
        assert f"__node:={spec.name}" in a



@pytest.mark.parametrize("launch,args", [
    ("fake_assembly", {}), ("assembly", {}), ("pipeline", {})])
def test_namespace_argument_puts_every_node_under_it(launch, args):
    """namespace:=swarm1 (relative, as ros2 launch accepts it) -> __ns:=/swarm1 for every
    node; the default (empty) starts them in the root namespace."""
    for given, want in (("swarm1", "/swarm1"), ("/lab/swarm2", "/lab/swarm2")):
        specs = load_launch(launch_file(launch), {**args, "namespace": given})
        assert specs
        for spec in specs:
            assert f"__ns:={want}" in _ros_args(spec), spec.name
    for spec in load_launch(launch_file(launch), args):
        assert not any(a.startswith("__ns:=") for a in _ros_args(spec)), spec.name


def test_real_assembly_launch_uses_wall_time_and_the_chosen_mocap_source():
    specs = load_launch(launch_file("assembly"), {"mocap_source": "vrpn"})
    assert [s.name for s in specs] == ["mocap_bridge", "root_search", "task_assignment",
                                       "navigation", "docking_controller", "executive"]
    assert "source:=vrpn" in _ros_args(specs[0])
    assert all("use_sim_time:=false" in _ros_args(s) for s in specs[1:])


def test_substitutions_conditions_groups_and_includes(tmp_path, monkeypatch):
    monkeypatch.setenv("SMORES_TEST_ENV", "from-env")
    inner = _write(tmp_path, "inner.launch.yaml", """
        launch:
        - arg: {name: who}
        - node: {pkg: smores_assembly, exec: executive, name: "exec_$(var who)"}
    """)
    outer = _write(tmp_path, "outer.launch.yaml", f"""
        launch:
        - arg: {{name: flag, default: "false"}}
        - let: {{name: who, value: "$(env SMORES_TEST_ENV)"}}
        - node:
            pkg: smores_assembly
            exec: navigation
            if: "$(var flag)"
        - group:
            - let: {{name: who, value: scoped}}
            - node: {{pkg: smores_assembly, exec: navigation, name: "nav_$(var who)",
                      param: [{{name: gains, value: [1.5, 2]}}], remap: [{{from: a, to: b}}]}}
        - include:
            file: "{inner}"
            arg: [{{name: who, value: "$(var who)"}}]
    """)
    specs = load_launch(outer)
    assert [s.name for s in specs] == ["nav_scoped", "exec_from-env"]
    a = _ros_args(specs[0])
    assert "gains:=[1.5, 2]" in a and "a:=b" in a
    assert [s.name for s in load_launch(outer, {"flag": "true"})][0] == "navigation"


@pytest.mark.parametrize("text,fragment", [
    ("launch:\n- node: {pkg: smores_assembly, exec: x, bogus: 1}\n", "unsupported key"),
    ("launch:\n- timer: {period: 1}\n", "unsupported launch action 'timer'"),
    ("launch:\n- node: {pkg: smores_assembly, exec: \"$(var nope)\"}\n", "'nope' is not set"),
    ("launch:\n- arg: {name: needed}\n", "'needed' is required"),
    ("nodes: []\n", "top-level 'launch:'"),
    ("launch:\n- node: {pkg: smores_assembly, exec: x, if: maybe}\n", "neither true nor false"),
])
def test_malformed_launch_files_are_refused_with_the_place(tmp_path, text, fragment):
    f = _write(tmp_path, "bad.launch.yaml", text)
    with pytest.raises(LaunchError, match=fragment.replace("(", r"\(").replace("'", "'")):
        load_launch(f)


def test_unknown_launch_argument_is_refused():
    with pytest.raises(LaunchError, match="unknown launch argument"):
        load_launch(launch_file("fake_assembly"), {"scenaro": "x"})


def test_runner_prefixes_output_and_stops_processes_cleanly():
    lines: list[str] = []
    code = ("import signal, sys, time\n"
            "print('hello', flush=True)\n"
            "signal.signal(signal.SIGINT, lambda *a: (print('bye', flush=True), sys.exit(0)))\n"
            "time.sleep(60)\n")
    runner = LaunchRunner([ProcessSpec("a", [sys.executable, "-c", code])], sink=lines.append)
    runner.start()
    proc = runner.procs["a"]
    # wait for the child's first line (the pump thread delivers it)
    for _ in range(200):
        if lines:
            break
        runner._threads[0].join(0.05)
    codes = runner.shutdown(timeout=HANG_S)
    assert codes == {"a": 0}
    assert lines[:2] == ["[a] hello", "[a] bye"]
    assert proc.poll() == 0


def _started(runner: LaunchRunner, lines: list[str], n: int = 1) -> None:
    """Wait until the children printed ``n`` lines (their handlers are in place then)."""
    for _ in range(int(HANG_S / 0.05)):
        if len(lines) >= n:
            return
        runner._threads[0].join(0.05)
    raise AssertionError(f"children printed {lines}")


def test_runner_waits_out_a_slow_teardown_instead_of_killing_it():
    """A node whose teardown takes longer than ``timeout`` (a Fast DDS teardown hang is
    bounded by the node itself, TEARDOWN_TIMEOUT_S) and that ignores further signals meanwhile
    ends with its own status: a CI run failed on ``mocap_bridge: -9`` when the runner
    killed it 10 s after the SIGINT."""
    lines: list[str] = []
    code = ("import signal, sys, time\n"
            "def stop(*a):\n"
            "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "    time.sleep(1.5)\n"
            "    print('torn down', flush=True)\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGINT, stop)\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")
    runner = LaunchRunner([ProcessSpec("a", [sys.executable, "-c", code])], sink=lines.append)
    runner.start()
    _started(runner, lines)
    assert runner.shutdown(timeout=0.5) == {"a": 0}
    assert lines == ["[a] up", "[a] torn down"]


def test_runner_kills_what_ignores_every_stop_and_says_so():
    lines: list[str] = []
    code = ("import signal, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")
    runner = LaunchRunner([ProcessSpec("a", [sys.executable, "-c", code])], sink=lines.append)
    runner.start()
    _started(runner, lines)
    assert runner.shutdown(timeout=0.3, grace=0.3) == {"a": -9}
    assert any(ln.startswith("[launch] a did not stop on SIGINT and SIGTERM") for ln in lines)


def test_launch_cli_reports_errors_without_traceback(tmp_path):
    f = _write(tmp_path, "bad.launch.yaml", "launch:\n- timer: {}\n")
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", str(f)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("launch: error:") and "Traceback" not in r.stderr


def test_launch_cli_help_lists_the_launch_files_and_show_args_their_arguments():
    """``--help`` names every launch file of the package; ``NAME --show-args`` every
    argument of that file with its default (fresh-user finding: neither was listed)."""
    from smores_assembly.launch.yaml_launch import launch_arguments
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "--help"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name.removesuffix(".launch.yaml")
                   for p in (REPO / "launch").glob("*.launch.yaml"))
    listed = [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("  ") and
              not ln.startswith("   ")]
    assert listed == names, r.stdout
    declared = launch_arguments(REPO / "launch" / "fake_assembly.launch.yaml")
    assert ("lockstep", "true", "lockstep (deterministic, load-independent) or free-running "
            "on the wall clock") in declared
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "fake_assembly", "-s"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    shown = [ln.split()[0] for ln in r.stdout.splitlines()[1:] if ln.startswith("  ") and
             not ln.startswith("   ")]
    assert shown == [n for n, _, _ in declared] and len(shown) >= 15, r.stdout
    assert "real_time_factor  (default: '4.0')" in r.stdout


def test_every_launch_argument_has_a_description():
    """``ros2 launch --show-args`` shows an argument's ``description``, not the comments
    above it (fresh-user finding: 9 of fake_assembly's arguments showed none)."""
    from smores_assembly.launch.yaml_launch import launch_arguments
    files = sorted((REPO / "launch").glob("*.launch.yaml"))
    assert len(files) == 4
    bare = [(f.name, n) for f in files for n, _, d in launch_arguments(f) if len(d) < 10]
    assert bare == []
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "--show-args"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "FILE|NAME --show-args" in r.stderr, r.stderr


def test_launch_cli_names_the_launch_files_and_checks_arguments_with_show_args():
    """Fresh-user findings: `launch nonsense` did not list the valid names; `fake_assembly
    bogus:=1 -s` ignored `bogus` (exit 0) while it is refused without `-s`."""
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "nonsense"],
                       capture_output=True, text=True, cwd=REPO)
    names = sorted(p.name.removesuffix(".launch.yaml")
                   for p in (REPO / "launch").glob("*.launch.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"(launch files of smores_assembly: {', '.join(names)};" in r.stderr
    for extra in ([], ["-s"]):
        r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "fake_assembly",
                            "bogus:=1", *extra], capture_output=True, text=True, cwd=REPO)
        assert r.returncode == 2, (extra, r.stdout)
        assert "unknown launch argument(s) ['bogus']" in r.stderr
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "fake_assembly",
                        "backend:=mujoco", "-s"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0 and "backend  (default: 'kinematic')" in r.stdout


@pytest.mark.ros
@pytest.mark.parametrize("node,param,line", [
    ("docking_controller", "approach_speed:=5.0", "approach_speed: 5.0 outside [0.0005, 0.5]"),
    ("docking_controller", "approach_speed:=fast", "approach_speed: expected float, got 'fast'"),
    ("fake_hardware", "backend:=bullet", "backend: 'bullet' is not one of kinematic, mujoco"),
])
def test_a_node_refusing_a_start_up_value_logs_one_line_under_its_name(
        ros_domain, node, param, line):
    """Fresh-user findings: an out-of-range value was logged as `[smores_assembly]:
    parameter approach_speed: Invalid parameter value (5.0) for parameter. Reason: ...:
    approach_speed`; backend:=bullet crashed fake_hardware with a ValueError traceback
    (exit 1); a wrong type got through to a TypeError. Now: exit 2, one FATAL line under
    the node's own name (also without a launch's __node remap)."""
    import installed
    r = subprocess.run([*installed.node(node), "--ros-args", "-p", param],
                       capture_output=True, text=True, timeout=HANG_S)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out
    fatal = [ln for ln in out.splitlines() if "[FATAL]" in ln]
    assert len(fatal) == 1 and fatal[0].endswith(f"[{node}]: {line}"), out


@pytest.mark.ros
def test_launch_with_a_value_a_node_refuses_exits_2_with_one_line(ros_domain):
    """Fresh-user finding: `launch fake_assembly backend:=bullet` crashed fake_hardware
    with a ValueError traceback, exit 1. Now: its one FATAL line, the launch exits 2."""
    r = subprocess.run([sys.executable, "-m", "smores_assembly.launch", "fake_assembly",
                        "backend:=bullet", "pipeline:=false"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out
    assert "[fake_hardware]: backend: 'bullet' is not one of kinematic, mujoco" in out
    assert "launch: error: fake_hardware refused its configuration (exit status 2" in out


def test_a_closed_pipe_ends_the_argument_listing_quietly():
    """``python -m smores_assembly.launch fake_assembly -s | head -1``: exit 0, no
    BrokenPipeError traceback (fresh-user finding). The reader is gone before the listing
    is written, so every write meets the closed pipe."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "smores_assembly.launch",
                               "fake_assembly", "-s"], stdout=w, stderr=subprocess.PIPE,
                              timeout=HANG_S)
    finally:
        os.close(w)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in err and "Broken" not in err, err
