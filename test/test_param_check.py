"""Parameter files are checked against the nodes' declared parameters before launch."""
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import installed
import pytest
import yaml

from smores_assembly.errors import ParamsError
from smores_assembly.param_check import ParamsFileError, check_params_file
from smores_assembly.params import NODE_SETTINGS, config_text, node_settings
from smores_assembly.params import main as params_main
from ros_helpers import HANG_S

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("text", [
    "docking_controller:\n  ros__parameters:\n    approach_speed: 0.01\n",
    "/**:\n  ros__parameters:\n    stale_timeout_s: 0.5\n",
    "/**/mocap_bridge:\n  ros__parameters:\n    use_sim_time: true\n",
    "task_assignment: {ros__parameters: {schedule: sequential}}\n",
    "mocap_bridge: {ros__parameters: {module_ids: [a], marker_offsets: {a: [0, 0, 0, 0, 0, 0]}}}\n",
    "# only comments\n",
    "/**/executive: {ros__parameters: {plan_timeout_s: 20.0}}\n",
    "/swarm1/executive: {ros__parameters: {plan_timeout_s: 20.0}}\n",
])
def test_good_files_pass(tmp_path, text):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    check_params_file(f)


@pytest.mark.parametrize("text,fragment", [
    ("docking_controller: {ros__parameters: {approach_speed: -5.0}}",
     "approach_speed: -5.0 outside"),
    ("docking_controller: {ros__parameters: {approach_speed: .nan}}", "not a finite number"),
    ("docking_controller: {ros__parameters: {approach_speed: fast}}", "expected float, got 'fast'"),
    ("docking_controller: {ros__parameters: {max_retries: 2.5}}", "max_retries: expected int"),
    ("docking_controler: {ros__parameters: {approach_speed: 0.01}}",
     "did you mean 'docking_controller'"),
    ("docking_controller: {ros__parameters: {approach_sped: 0.01}}",
     "did you mean 'approach_speed'"),
    ("docking_controller: {approach_speed: 0.01}", "expected {ros__parameters"),
    ("docking_controller: [\n", "invalid YAML (line 2)"),
    ("/**/executiv: {ros__parameters: {plan_timeout_s: 20.0}}", "did you mean 'executive'"),
    ("/**/executive: {ros__parameters: {plan_timeout: 20.0}}", "did you mean 'plan_timeout_s'"),
    ("- a\n- b\n", "expected a mapping of node names"),
])
def test_bad_files_name_node_parameter_and_value(tmp_path, text, fragment):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(ParamsFileError, match=re.escape(fragment)):
        check_params_file(f)


def test_shipped_configs_pass():
    for f in sorted((REPO / "config").glob("*.yaml")):
        check_params_file(f)


@pytest.mark.parametrize("text,fragment", [
    ("docking_controller: {ros__parameters: {approach_speed: -5.0}}\n",
     "p.yaml:1: /docking_controller.approach_speed: -5.0 outside"),
    # fresh-user finding: accepted ("applied: fake_hardware use_sim_time=True"), then
    # fake_hardware died FATAL at start-up and the run failed after ~17 s
    ("/**: {ros__parameters: {use_sim_time: true}}\n",
     "p.yaml:1: /**.use_sim_time: fake_hardware is the time source (it publishes /clock); "
     "it must run with use_sim_time:=false"),
])
def test_run_refuses_a_bad_params_file_before_starting_anything(tmp_path, text, fragment):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    out = tmp_path / "out"
    r = subprocess.run([*installed.cli(), "run",
                        str(REPO / "config/scenarios/mobile_manipulator.yaml"),
                        "--params-file", str(f), "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 2, r.stderr
    assert fragment in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (out / "nodes.log").exists()


@pytest.mark.ros
@pytest.mark.parametrize("text", [
    "/**:\n  ros__parameters:\n    use_sim_time: true\n",
    "/**/fake_hardware: {ros__parameters: {use_sim_time: true, random_seed: 3}}\n",
])
def test_what_the_fake_hardware_refuses_at_start_up_is_refused_before(tmp_path, ros_context,
                                                                       text):
    """One rule: the pre-check refuses a file exactly when the fake hardware node, given
    the file's values, refuses to start (oracle: the node itself, constructed with them),
    naming file, line, section and parameter."""
    from rclpy.parameter import Parameter

    from smores_assembly.params_file import parse_params_file
    from smores_assembly.ros.fake_hardware import FakeHardwareNode
    f = tmp_path / "p.yaml"
    f.write_text(text)
    given = {k: v for sec in parse_params_file(f) if sec.matches("/fake_hardware")
             for k, v in sec.params.items()}
    with pytest.raises(ParamsError) as node_err:
        FakeHardwareNode(context=ros_context, parameter_overrides=[
            Parameter("scenario", value=str(REPO / "config/scenarios/mobile_manipulator.yaml")),
            *(Parameter(k, value=v) for k, v in given.items())])
    with pytest.raises(ParamsFileError) as check_err:
        check_params_file(f)
    line = 3 if text.startswith("/**:") else 1
    pattern = text.split(":", 1)[0]
    assert str(check_err.value) == f"{f}:{line}: {pattern}.{str(node_err.value)}"


def test_the_overrides_example_passes_the_check_as_written(tmp_path):
    """config/overrides.yaml's commented example, uncommented as a user does, passes the
    pre-check (fresh-user finding: its ``/**: use_sim_time: true`` also reached
    fake_hardware, which refuses it at start-up), and every section of it names a node."""
    lines = (REPO / "config/overrides.yaml").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith("Example:"))
    example = [ln.removeprefix("#   ") for ln in lines[start + 1:] if ln.startswith("#   ")]
    assert example, "no example in config/overrides.yaml"
    f = tmp_path / "p.yaml"
    f.write_text("\n".join(example) + "\n")
    sections = check_params_file(f)
    assert sections and all(sec.params for sec in sections)


def test_settings_and_check_import_no_ros():
    """The settings live next to the cores: checking a file loads every node's settings
    classes without importing rclpy or any generated interface."""
    code = ("import sys; from smores_assembly import param_check, params\n"
            "for n in params.NODE_SETTINGS: params.node_settings(n)\n"
            "param_check.check_params_file(sys.argv[1])\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('rclpy', 'rcl_interfaces') or m.startswith('smores_assembly.msg') or ("
            "m.startswith('smores_assembly.ros') and m not in "
            "('smores_assembly.ros', 'smores_assembly.ros.names')))\n"
            "print(bad)\n")
    r = subprocess.run([sys.executable, "-c", code, str(REPO / "config/overrides.yaml")],
                       capture_output=True, text=True, cwd=REPO, timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("node", sorted(NODE_SETTINGS))
def test_shipped_config_is_the_dataclass_defaults(node):
    """One parameter source: config/<node>.yaml holds exactly the settings dataclasses'
    defaults, same names, same types (read back as ROS reads YAML), nothing else."""
    data = yaml.safe_load((REPO / "config" / f"{node}.yaml").read_text())
    assert list(data) == [f"/**/{node}"]  # the node in any namespace
    given = data[f"/**/{node}"]["ros__parameters"]
    want = {}
    for s in node_settings(node):
        for f in dataclasses.fields(s):
            v = getattr(s, f.name)
            want[f.name] = list(v) if isinstance(v, tuple) else v
    assert list(given) == list(want)
    for name, v in want.items():
        assert type(given[name]) is type(v) and given[name] == v, (name, given[name], v)
    # and the file is the generator's text (descriptions, ranges): regenerate, don't edit
    assert (REPO / "config" / f"{node}.yaml").read_text() == config_text(node)


def test_check_config_names_a_stale_file(tmp_path):
    assert params_main(["--write-config", str(tmp_path)]) == 0
    assert params_main(["--check-config", str(tmp_path)]) == 0
    f = tmp_path / "navigation.yaml"
    f.write_text(f.read_text().replace("nominal_speed: 0.05", "nominal_speed: 0.03"))
    assert params_main(["--check-config", str(tmp_path)]) == 1


@pytest.mark.parametrize("text,fragment", [
    ("/**/task_assignment:\n  ros__parameters:\n    schedule: parallel\n",
     "p.yaml:3: /**/task_assignment.schedule: 'parallel' is not one of sequential, staged, "
     "pipelined"),
    ("/**/fake_hardware: {ros__parameters: {backend: bullet}}",
     "/**/fake_hardware.backend: 'bullet' is not one of kinematic, mujoco"),
    ("/**/navigation: {ros__parameters: {algorithm: astar}}",
     "/**/navigation.algorithm: 'astar' is not one of cbs, ecbs, prioritized, lacam"),
    ("/swarm1/mocap_bridge: {ros__parameters: {source: optitrack}}",
     "/swarm1/mocap_bridge.source: 'optitrack' is not one of vicon, vrpn, mocap4r2"),
    ("/**/mocap_bridge: {ros__parameters: {vicon_topic_format: vicon/x}}",
     "vicon_topic_format: 'vicon/x' must contain {id}"),
    # inconsistent with a default: the file's value is named
    ("/**/docking_controller: {ros__parameters: {approach_speed: 0.001}}",
     "/**/docking_controller.approach_speed: approach_min_speed: 0.003 > approach_speed"),
])
def test_values_the_node_refuses_are_refused_up_front(tmp_path, text, fragment):
    """Fresh-user finding: schedule: parallel passed the check, then task_assignment died
    after the whole stack had started."""
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(ParamsFileError, match=re.escape(fragment)):
        check_params_file(f)


@pytest.mark.parametrize("node", sorted(NODE_SETTINGS))
def test_every_text_parameter_is_checked_as_the_node_checks_it(tmp_path, node):
    """Oracle: the node's own start-up check (validate_settings on its settings with the
    value). Every text field of every node, with a nonsense value and its default: the
    file is refused exactly when the node would refuse the value."""
    from smores_assembly.errors import InputError
    from smores_assembly.param_check import launch_pinned
    from smores_assembly.params import validate_settings
    (tmp_path / "p.yaml").write_text("")
    # the launch's own values after the file are refused for that (test below)
    pinned = launch_pinned(tmp_path / "p.yaml").get(node, {})
    tried = 0
    for settings in node_settings(node):
        for fld in dataclasses.fields(settings):
            default = getattr(settings, fld.name)
            if not isinstance(default, str) or fld.name in pinned:
                continue
            for value in ("no_such_value", default):
                candidate = dataclasses.replace(settings, **{fld.name: value})
                try:
                    validate_settings(candidate)
                    refused = None
                except InputError as exc:
                    refused = str(exc).removeprefix(f"{fld.name}: ")
                f = tmp_path / "p.yaml"
                f.write_text(f"/**/{node}:\n  ros__parameters:\n"
                             f"    {fld.name}: '{value}'\n")
                if refused is None:
                    check_params_file(f)
                else:
                    with pytest.raises(ParamsFileError) as err:
                        check_params_file(f)
                    assert str(err.value) == f"{f}:3: /**/{node}.{fld.name}: {refused}"
                tried += 1
    assert tried > 0 or node in ("root_search", "docking_controller", "executive")


def test_settings_refuse_bad_text_with_input_errors():
    """Bad input raises InputError naming the field (a node then exits 2 with one line),
    never a plain ValueError (a traceback): fake_hardware backend: bullet crashed."""
    from smores_assembly.errors import InputError
    from smores_assembly.mocap.settings import BridgeSettings
    from smores_assembly.navigation.stage import NavSettings
    from smores_assembly.sim.settings import FakeHardwareSettings
    cases = [(FakeHardwareSettings(backend="bullet"), "backend"),
             (FakeHardwareSettings(lockstep=True, lockstep_participants=["a", "a"]),
              "lockstep_participants"),
             (FakeHardwareSettings(mocap_topic_format="x"), "mocap_topic_format"),
             (BridgeSettings(source="optitrack"), "source"),
             (BridgeSettings(vrpn_topic_format="x"), "vrpn_topic_format"),
             (NavSettings(algorithm="astar"), "algorithm")]
    for settings, field in cases:
        with pytest.raises(InputError) as err:
            settings.validate()
        assert err.value.field == field and str(err.value).startswith(f"{field}: ")


def _effective(spec, node_fqn):
    """The parameters a node's command line gives it, applied in order as rcl does
    (--params-file sections for the node and -p values; the last one wins)."""
    from smores_assembly.params_file import params_for, parse_params_file, rcl_scalar
    cmd, out = spec.cmd, {}
    for i, a in enumerate(cmd[:-1]):
        if a == "--params-file":
            out.update(params_for(parse_params_file(cmd[i + 1]), node_fqn))
        elif a == "-p":
            name, text = cmd[i + 1].split(":=", 1)
            out[name] = rcl_scalar(text)
    return out


@pytest.mark.parametrize("flags,want", [
    ([], {"backend": "mujoco", "random_seed": 7, "real_time_factor": 2.0,
          "mocap_rate_hz": 20.0, "mocap_noise_std_m": 0.002}),
    (["--backend", "kinematic", "--seed", "3", "--real-time-factor", "0"],
     {"backend": "kinematic", "random_seed": 3, "real_time_factor": 0.0,
      "mocap_rate_hz": 20.0, "mocap_noise_std_m": 0.002}),
])
def test_run_uses_the_params_files_fake_hardware_values_unless_a_flag_is_given(
        tmp_path, capsys, flags, want):
    """Fresh-user finding: fake_hardware values of --params-file (backend, seed, mocap
    rate and noise, real-time factor) were silently overridden by the launch's own -p
    values. Oracle: the node's command line applied in rcl's order."""
    from smores_assembly.cli import build_parser
    from smores_assembly.run_job.stack import effective_seed, launch_specs
    f = tmp_path / "p.yaml"
    f.write_text("/**/fake_hardware:\n  ros__parameters:\n    backend: mujoco\n"
                 "    random_seed: 7\n    real_time_factor: 2.0\n    mocap_rate_hz: 20.0\n"
                 "    mocap_noise_std_m: 0.002\n")
    check_params_file(f)
    args = build_parser().parse_args(
        ["run", str(REPO / "config/scenarios/mobile_manipulator.yaml"), "--params-file",
         str(f), *flags])
    [fake] = [s for s in launch_specs(args) if s.name == "fake_hardware"]
    got = _effective(fake, "/fake_hardware")
    assert {k: got[k] for k in want} == want
    assert got["lockstep"] is True
    assert effective_seed(args) == want["random_seed"]
    out = capsys.readouterr().out
    if flags:
        assert f"--backend kinematic wins over backend: mujoco of {f}:3" in out
        assert f"--seed 3 wins over random_seed: 7 of {f}:4" in out
    else:
        assert "wins over" not in out


@pytest.mark.parametrize("record", [False, True])
def test_run_without_a_recording_takes_the_ground_truth_at_the_reports_rate(tmp_path, record):
    """Issue 10: a run without ``--record`` asks the fake hardware for the ground truth at
    the rate its report needs (REPORT_TRUTH_RATE_HZ: a fifth of the messages); with
    ``--record`` the recording keeps the configured 50 Hz; a params file's value wins
    either way. Oracle: the node's command line applied in rcl's order."""
    from smores_assembly.cli import build_parser
    from smores_assembly.run_job.observer import REPORT_TRUTH_RATE_HZ
    from smores_assembly.run_job.stack import launch_specs
    from smores_assembly.sim.settings import FakeHardwareSettings
    scenario = str(REPO / "config/scenarios/mobile_manipulator.yaml")
    extra = ["--record"] if record else []
    f = tmp_path / "p.yaml"
    f.write_text("/**/fake_hardware:\n  ros__parameters:\n    ground_truth_rate_hz: 25.0\n")
    for cli, want in ((["run", scenario, *extra],
                       FakeHardwareSettings().ground_truth_rate_hz if record
                       else REPORT_TRUTH_RATE_HZ),
                      (["run", scenario, "--params-file", str(f), *extra], 25.0)):
        [fake] = [s for s in launch_specs(build_parser().parse_args(cli))
                  if s.name == "fake_hardware"]
        assert _effective(fake, "/fake_hardware")["ground_truth_rate_hz"] == want
    assert REPORT_TRUTH_RATE_HZ < FakeHardwareSettings().ground_truth_rate_hz


def test_a_stack_wide_value_equal_to_the_default_is_noted_like_lockstep(tmp_path):
    """use_sim_time: false under /** equals rclpy's default, as lockstep: false equals
    fake_hardware's: both are noted (ignored, the run's launch sets them), neither refused
    (fresh-user finding: lockstep was noted, use_sim_time refused)."""
    f = tmp_path / "p.yaml"
    f.write_text("/**:\n  ros__parameters:\n    use_sim_time: false\n")
    notes: list[str] = []
    check_params_file(f, notes=notes)
    assert len(notes) == 1, notes   # one line for all the nodes
    assert notes[0].startswith(f"note: {f}:3: /**.use_sim_time: ")
    assert notes[0].endswith("get use_sim_time from the launch, after this file (True): "
                             "False here is ignored; the fake stack runs on the fake "
                             "hardware's simulated time"), notes
    # a value that asks for something else than the launch and the default is refused
    f.write_text("/**/fake_hardware:\n  ros__parameters:\n    lockstep: true\n")
    with pytest.raises(ParamsFileError, match="use run --free-running"):
        check_params_file(f, pinned={"fake_hardware": {"lockstep": False}})


@pytest.mark.parametrize("text,fragment", [
    ("/**/fake_hardware: {ros__parameters: {lockstep: false, scenario: ''}}", None),
    ("/**/fake_hardware: {ros__parameters: {scenario: x.yaml}}",
     "fake_hardware gets scenario from the launch, after this file ("),
    ("/**/mocap_bridge: {ros__parameters: {source: vrpn}}",
     "mocap_bridge gets source from the launch"),
])
def test_a_value_the_launch_would_override_is_refused_naming_the_flag(tmp_path, text,
                                                                       fragment):
    """A value the launch sets after the params file would be ignored: refused (a value
    equal to the node's default asks for nothing and passes, as config/<node>.yaml)."""
    f = tmp_path / "p.yaml"
    f.write_text(text)
    if fragment is None:
        notes: list[str] = []
        check_params_file(f, notes=notes)
        # not refused, but not silently ignored either (fresh-user finding: lockstep:
        # false in a params file did nothing, with no word): the run prints the note
        assert notes == [f"note: {f}:1: /**/fake_hardware.lockstep: fake_hardware gets "
                         f"lockstep from the launch, after this file (True): False here is "
                         f"ignored; use run --free-running (launch argument "
                         f"lockstep:=false); every node of the stack must agree"], notes
        return
    with pytest.raises(ParamsFileError, match=re.escape(fragment)):
        check_params_file(f)


@pytest.mark.parametrize("flags", [[], ["--seed", "3"], ["--single-process"]])
def test_run_says_and_records_which_params_file_values_are_in_force(tmp_path, flags):
    """Fresh-user finding: a --params-file override was neither echoed nor recorded in
    report.json. ``launch_specs`` gives, per node, the file's values the node runs with
    (``params_applied`` of the report, the line the run prints). Oracle: the nodes'
    command lines applied in rcl's order, once with the file and once with a file that
    gives every parameter another value: a value is in force when the node's value
    follows the file's (a flag or the launch's own value after the file wins)."""
    from smores_assembly.cli import build_parser
    from smores_assembly.run_job.console import params_line
    from smores_assembly.run_job.stack import launch_specs
    text = ("/**/docking_controller:\n  ros__parameters:\n    approach_speed: 0.01\n"
            "/**/fake_hardware:\n  ros__parameters:\n    random_seed: 7\n"
            "    mocap_rate_hz: 20.0\n    backend: kinematic\n/**:\n  ros__parameters:\n"
            "    use_sim_time: false\n")
    f, g = tmp_path / "p.yaml", tmp_path / "other" / "p.yaml"
    f.write_text(text)
    g.parent.mkdir()
    g.write_text(text.replace("0.01", "0.02").replace(": 7", ": 8").replace("20.0", "25.0")
                 .replace("kinematic", "mujoco").replace("false", "true"))
    check_params_file(f)

    def specs(path, applied=None, single=False):
        args = build_parser().parse_args(
            ["run", str(REPO / "config/scenarios/mobile_manipulator.yaml"), "--params-file",
             str(path), *flags])
        args.single_process = single and args.single_process
        return launch_specs(args, applied)

    applied: dict = {}
    specs(f, applied, single=True)
    with_f = {s.name: _effective(s, s.node) for s in specs(f)}
    with_g = {s.name: _effective(s, s.node) for s in specs(g)}
    for name, got in with_f.items():
        want = {k: v for k, v in got.items() if with_g[name].get(k) != v}
        assert applied.get(name, {}) == want, name
    assert applied["docking_controller"] == {"approach_speed": 0.01}
    # the launch gives fake_hardware no use_sim_time (it is the clock): the file's holds
    # (false: true is refused, the node's own rule, test_what_the_fake_hardware_refuses...)
    assert applied["fake_hardware"] == (
        {"mocap_rate_hz": 20.0, "backend": "kinematic", "use_sim_time": False}
        | ({} if "--seed" in flags else {"random_seed": 7}))
    line = params_line(str(f), applied)
    assert line.startswith(f"params file {f} applied: ")
    assert "docking_controller approach_speed=0.01" in line


def test_a_stack_wide_value_is_in_force_only_on_the_nodes_that_declare_it(tmp_path):
    """Fresh-user finding: ``/**: approach_speed`` was reported applied to all 7 nodes;
    rcl leaves an undeclared value unused, so only the docking controller runs with it.
    Oracle: the shipped config/<node>.yaml files, which list every parameter a node
    declares (test_shipped_config_is_the_dataclass_defaults)."""
    from smores_assembly.cli import build_parser
    from smores_assembly.run_job.stack import launch_specs
    f = tmp_path / "p.yaml"
    f.write_text("/**:\n  ros__parameters:\n    approach_speed: 0.02\n")
    check_params_file(f)
    declaring = {c.stem for c in (REPO / "config").glob("*.yaml")
                 if re.search(r"^\s+approach_speed:", c.read_text(), re.M)}
    applied: dict = {}
    launch_specs(build_parser().parse_args(
        ["run", str(REPO / "config/scenarios/mobile_manipulator.yaml"), "--params-file",
         str(f)]), applied)
    assert declaring == {"docking_controller"}
    assert applied == {n: {"approach_speed": 0.02} for n in declaring}


@pytest.mark.parametrize("text,note,error", [
    # every lockstep participant declares lockstep (default false): false is noted for
    # all of them in one line, not refused for the first participant without it in its
    # settings (fresh-user finding), nor "unknown" under the participant's own name
    ("/**: {ros__parameters: {lockstep: false}}",
     "/**.lockstep: docking_controller, executive, fake_hardware, mocap_bridge, navigation "
     "get lockstep from the launch", None),
    ("/**/mocap_bridge: {ros__parameters: {lockstep: false}}",
     "/**/mocap_bridge.lockstep: mocap_bridge gets lockstep from the launch", None),
    ("/**/mocap_bridge: {ros__parameters: {lockstep: true}}", None, None),  # as launched
    ("/**/mocap_bridge: {ros__parameters: {lockstep: 1}}", None, "expected a bool, got 1"),
    ("/**/root_search: {ros__parameters: {lockstep: false}}", None,
     "root_search.lockstep: unknown parameter"),   # no participant
])
def test_lockstep_is_a_parameter_of_every_participant(tmp_path, text, note, error):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    notes: list[str] = []
    if error is not None:
        with pytest.raises(ParamsFileError, match=re.escape(error)):
            check_params_file(f, notes=notes)
        return
    check_params_file(f, notes=notes)
    assert notes == ([] if note is None else [notes[0]]), notes
    if note is not None:
        assert notes[0].startswith(f"note: {f}:1: {note}"), notes
    # with --free-running the launch sets false: true there would be ignored, so refused
    if "true" in text:
        with pytest.raises(ParamsFileError, match="use run --free-running"):
            check_params_file(f, pinned={"mocap_bridge": {"lockstep": False}})


def test_run_help_names_every_node_the_params_file_is_passed_to(tmp_path):
    """Fresh-user finding: ``run --help`` said --params-file is "overrides for the pipeline
    nodes", but the run passes it to fake_hardware and mocap_bridge too. Oracle: the
    nodes the run's launch file passes the file to (``default_readers``)."""
    from smores_assembly.cli import build_parser
    from smores_assembly.param_check import default_readers
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    [action] = [a for a in run._actions if "--params-file" in a.option_strings]
    f = tmp_path / "p.yaml"
    f.write_text("# only comments\n")
    readers = set(default_readers(f).values())
    assert {"fake_hardware", "mocap_bridge"} <= readers
    assert "pipeline nodes" not in action.help
    assert all(exe in action.help for exe in readers), (sorted(readers), action.help)


@pytest.mark.parametrize("file_width", [None, 0.08])
def test_every_node_runs_at_the_scenarios_module_width(tmp_path, capsys, file_width):
    """Fresh-user finding: a scenario of 0.1 m modules was simulated at 0.1 m (the fake
    hardware takes the scenario's width) but navigated and docked at the parameters' 0.08 m:
    3 POSE_ADJUST timeouts, 3 collisions, FAILED. Every node now runs at the scenario's
    width, over a params file's (said, and not listed as applied). Oracle: each node's
    command line applied in rcl's order."""
    import yaml

    from smores_assembly.cli import build_parser
    from smores_assembly.run_job.stack import launch_specs
    data = yaml.safe_load((REPO / "config/scenarios/mobile_manipulator.yaml").read_text())
    data["module_width"] = 0.1
    sc = tmp_path / "wide.yaml"
    sc.write_text(yaml.safe_dump(data))
    cli = ["run", str(sc)]
    if file_width is not None:
        f = tmp_path / "p.yaml"
        f.write_text(f"/**:\n  ros__parameters:\n    module_width: {file_width}\n")
        check_params_file(f)
        cli += ["--params-file", str(f)]
    applied: dict = {}
    specs = launch_specs(build_parser().parse_args(cli), applied)
    widths = {s.name: _effective(s, s.node)["module_width"] for s in specs}
    assert {"navigation", "docking_controller", "fake_hardware"} <= set(widths)
    assert set(widths.values()) == {0.1}
    out = capsys.readouterr().out
    if file_width is None:
        assert "wins over module_width" not in out
    else:
        assert f"the scenario's module_width 0.1 m wins over module_width: {file_width}" in out
        assert out.count("wins over module_width") == 1, out   # once, naming the nodes
        assert "navigation" in out and "docking_controller" in out
        assert all("module_width" not in v for v in applied.values()), applied
