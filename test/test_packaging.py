"""setup.py is the Python side's one declaration; the installed tree matches it.

The declaration (modules, node executables, the CLI, data files) is checked against the
source tree and the launch files, and against what ``make setup`` (colcon/CMake) installed
into this interpreter's prefix. The CMake build reads the same declaration; these tests
prove the result, not the mechanism.
"""
from __future__ import annotations

import ast
import os
import runpy
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from ros_helpers import HANG_S

REPO = Path(__file__).resolve().parents[1]
SETUP = runpy.run_path(str(REPO / "setup.py"), run_name="declaration")
PACKAGE = SETUP["PACKAGE"]


def _declared() -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for line in SETUP["cmake_declaration"]().splitlines():
        kind, *fields = line.split("|")
        out.setdefault(kind, []).append(fields)
    return out


def _defines_main(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)


def test_every_node_module_is_an_executable_and_every_executable_exists():
    ros = REPO / PACKAGE / "ros"
    with_main = {p.stem for p in ros.glob("*.py") if _defines_main(p)}
    nodes = SETUP["NODE_SCRIPTS"]
    assert set(nodes) == with_main
    # every executable goes through smores_assembly.entry's import guard (a Ctrl-C while
    # it imports prints one line), which runs the module's own main()
    from smores_assembly import entry
    assert set(entry.NODES) == set(nodes)
    real = {**{n: f"{PACKAGE}.ros.{n}" for n in nodes}, "smores-assemble": f"{PACKAGE}.cli"}
    for name, target in {**nodes, **SETUP["CLI_SCRIPTS"]}.items():
        module, func = target.split(":")
        assert module == f"{PACKAGE}.entry" and callable(getattr(entry, func)), name
        path = REPO.joinpath(*real[name].split(".")).with_suffix(".py")
        assert path.is_file(), f"{name}: {path} missing"
        assert _defines_main(path), name


def test_launch_files_start_only_declared_executables():
    nodes = set(SETUP["NODE_SCRIPTS"])
    seen = set()

    def walk(actions):
        for action in actions or []:
            for kind, body in action.items():
                if kind == "node" and body.get("pkg") == PACKAGE:
                    seen.add(body["exec"])
                elif kind == "group":
                    walk(body.get("launch") if isinstance(body, dict) else body)

    for f in sorted((REPO / "launch").glob("*.launch.yaml")):
        walk(yaml.safe_load(f.read_text(encoding="utf-8"))["launch"])
    assert seen and seen <= nodes, sorted(seen - nodes)


def test_declaration_covers_every_module_and_data_file():
    declared = _declared()
    modules = {f[0] for f in declared["module"]}
    on_disk = {p.relative_to(REPO).as_posix() for p in (REPO / PACKAGE).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules == on_disk
    data = {f[1] for f in declared["data"]}
    for top in SETUP["DATA_DIRS"]:
        for p in (REPO / top).rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts:
                assert p.relative_to(REPO).as_posix() in data
    assert {"package.xml", f"resource/{PACKAGE}"} <= data
    # the ament index marker is installed under the package's name, as ament_package() does
    assert ["share/ament_index/resource_index/packages", f"resource/{PACKAGE}"] \
        in declared["data"]


def test_version_is_package_xml_version():
    text = (REPO / "package.xml").read_text(encoding="utf-8")
    assert f"<version>{SETUP['version']()}</version>" in text


def _prefix() -> Path:
    return Path(sys.prefix)


def _installed_package_dir() -> Path:
    return Path(sysconfig.get_path("purelib")) / PACKAGE


@pytest.fixture(scope="module")
def installed() -> Path:
    pkg = _installed_package_dir()
    if not (pkg / "msg" / "__init__.py").is_file():
        pytest.fail(f"{PACKAGE} is not installed in {sys.prefix} (run `make setup`)")
    return pkg


def test_installed_tree_has_every_declared_module_and_data_file(installed):
    declared = _declared()
    site = installed.parent
    for (module,) in declared["module"]:
        assert (site / module).is_file(), module
    for dest, f in declared["data"]:
        target = _prefix() / dest / Path(f).name
        assert target.is_file(), target


@pytest.mark.parametrize("kind,folder", [("node", f"lib/{PACKAGE}"), ("cli", "bin")])
def test_installed_executables_are_the_declared_entry_points(installed, kind, folder):
    for name, module, func in _declared()[kind]:
        exe = _prefix() / folder / name
        assert exe.is_file() and os.access(exe, os.X_OK), exe
        text = exe.read_text(encoding="utf-8")
        assert f"from {module} import {func}\n" in text, exe
        assert text.startswith("#!") and "python" in text.splitlines()[0], exe


def test_one_package_the_installed_one(installed):
    """No path extension: ``smores_assembly`` is one folder, the installed one, holding both
    the declared modules and the generated interfaces (test/conftest.py moves the checkout's
    root behind it and refuses an install that is not this checkout's)."""
    import smores_assembly
    import smores_assembly.action
    import smores_assembly.msg

    assert list(smores_assembly.__path__) == [str(installed)]
    for sub in (smores_assembly.msg, smores_assembly.action):
        assert Path(sub.__file__).parent.parent == installed
    assert "extend_path" not in (REPO / PACKAGE / "__init__.py").read_text(encoding="utf-8")


def test_pip_install_puts_no_generic_name_in_bin(tmp_path):
    """``pip install .`` installs the entry points setuptools writes into the egg-info's
    entry_points.txt: there, every name in the shared ``bin/`` carries the package's prefix
    (the CLI as it is, each node as ``smores-<node>``), one per declared executable, each
    pointing at its node's ``main``; the ROS install keeps ``lib/smores_assembly/<node>``
    (test_installed_executables_are_the_declared_entry_points)."""
    import configparser
    import shutil
    import subprocess

    src = tmp_path / "src"  # a copy: setuptools writes its build files next to setup.py
    src.mkdir()
    for name in ("setup.py", "package.xml", "pyproject.toml"):
        shutil.copy(REPO / name, src / name)
    for top in (PACKAGE, "resource", *SETUP["DATA_DIRS"]):
        shutil.copytree(REPO / top, src / top, ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base",
                        str(tmp_path)], cwd=src, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.read(tmp_path / f"{PACKAGE}.egg-info" / "entry_points.txt")
    scripts = {k: v.strip() for k, v in entry_points["console_scripts"].items()}
    nodes, cli = SETUP["NODE_SCRIPTS"], SETUP["CLI_SCRIPTS"]
    assert scripts == {**cli, **{f"smores-{n.replace('_', '-')}": t for n, t in nodes.items()}}
    assert all(name.startswith("smores-") for name in scripts)
    assert not set(scripts) & set(nodes)


def test_make_setup_says_what_it_does_before_each_silent_step(tmp_path):
    """The first ``make demo`` was silent for ~15 min under load (fresh-user finding): pip
    runs with ``-q`` and colcon's output goes to ``build.log``. Each of the two slow steps
    is announced by an ``echo`` before it runs (``make -n``: the recipes in order, nothing
    executed)."""
    import shutil
    import subprocess
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    venv, build = tmp_path / "venv", tmp_path / "build"
    out = subprocess.run([make, "-n", "-B", "-C", str(REPO), "setup", f"VENV={venv}",
                          f"BUILD={build}"], capture_output=True, text=True, check=True,
                         timeout=HANG_S).stdout.splitlines()

    def first(pred) -> int:
        return next(i for i, line in enumerate(out) if pred(line.strip()))

    pip = first(lambda ln: " -m pip install " in ln)
    colcon = first(lambda ln: "/bin/colcon " in ln)
    says_pip = first(lambda ln: ln.startswith("echo ") and "requirements" in ln)
    says_colcon = first(lambda ln: ln.startswith("echo ") and "colcon" in ln)
    assert says_pip < pip and says_colcon < colcon, "\n".join(out)
    assert pip < says_colcon, "\n".join(out)   # each line right before its own step
    assert f"{build}.log" in out[says_colcon], out[says_colcon]   # where to follow it
