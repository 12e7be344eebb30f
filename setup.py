"""The Python side of smores_assembly, declared once: modules, data files, executables.

Two ways install from this declaration:

* ``pip install .`` (no ROS needed): the pure cores and the ``smores-assemble`` command
  (``smores-assemble plan`` works without ROS; ``run`` and the nodes need ROS 2 and the
  generated interfaces, which only the CMake build makes). ``bin/`` is shared with every
  other package, so there each node is ``smores-<node>`` (dashes), see :func:`pip_scripts`.
* ``colcon build`` / CMake (``CMakeLists.txt``, ament_cmake): generates ``msg/`` and
  ``action/`` with rosidl and installs everything declared here. CMake reads this
  declaration with ``python setup.py --cmake-declaration``: the node executables go to
  ``lib/smores_assembly/`` (``ros2 run smores_assembly <node>``), the command to ``bin/``.

The version is package.xml's.
"""
import os
import re
import sys

PACKAGE = "smores_assembly"
HERE = os.path.dirname(os.path.abspath(__file__))

#: command-line tools: ``bin/<name>``.
CLI_SCRIPTS = {
    "smores-assemble": "smores_assembly.entry:assemble",
}
#: ROS 2 nodes, one executable each: ``lib/smores_assembly/<name>`` on a ROS install.
NODE_SCRIPTS = {
    name: f"smores_assembly.entry:{name}"
    for name in ("container", "docking_controller", "executive", "fake_hardware",
                 "gazebo_spawn", "mocap_bridge", "navigation", "root_search",
                 "task_assignment")
}


def pip_scripts() -> dict:
    """``bin/<name>`` -> entry point for ``pip install .``: the command-line tools as they
    are, each node prefixed (``fake_hardware`` -> ``smores-fake-hardware``) so that no
    generic name (``executive``, ``navigation``, ...) lands in a shared ``bin/``. The ROS
    install keeps ``lib/smores_assembly/<node>``, the names ``ros2 run`` and the launch
    files use."""
    nodes = {f"smores-{name.replace('_', '-')}": target for name, target in NODE_SCRIPTS.items()}
    return {**CLI_SCRIPTS, **nodes}


#: share/smores_assembly/<dir>/...: launch files, parameter/scenario files, robot description.
DATA_DIRS = ("launch", "config", "description")


def version() -> str:
    """The package version, read from package.xml (the one place it is written)."""
    with open(os.path.join(HERE, "package.xml"), encoding="utf-8") as f:
        m = re.search(r"<version>\s*([^<\s]+)\s*</version>", f.read())
    if m is None:
        raise RuntimeError("package.xml has no <version>")
    return m.group(1)


def packages() -> list:
    """The Python packages: ``smores_assembly`` and all its subpackages."""
    from setuptools import find_packages

    return sorted(find_packages(where=HERE, include=[PACKAGE, f"{PACKAGE}.*"]))


def data_files() -> list:
    """``(install dir, [files relative to this folder])`` pairs, as setuptools takes them.

    The ament index marker and package.xml make the installed tree an ament package (ROS
    tools, ``find-pkg-share``); under CMake, ``ament_package()`` installs those two itself.
    """
    files = [
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ]
    for top in DATA_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(HERE, top)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            rel = os.path.relpath(dirpath, HERE).replace(os.sep, "/")
            names = sorted(f for f in filenames if not f.endswith(".pyc"))
            if names:
                files.append((f"share/{PACKAGE}/{rel}", [f"{rel}/{n}" for n in names]))
    return files


def cmake_declaration() -> str:
    """The declaration as lines for CMakeLists.txt, fields separated by ``|``.

    ``module|<path of a .py file>``, ``cli|<name>|<module>|<function>``,
    ``node|<name>|<module>|<function>``, ``data|<install dir>|<file>``.
    """
    lines = []
    for pkg in packages():
        folder = os.path.join(HERE, *pkg.split("."))
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                lines.append(f"module|{pkg.replace('.', '/')}/{name}")
    for kind, scripts in (("cli", CLI_SCRIPTS), ("node", NODE_SCRIPTS)):
        for name, target in scripts.items():
            module, func = target.split(":")
            lines.append(f"{kind}|{name}|{module}|{func}")
    for dest, files in data_files():
        lines.extend(f"data|{dest}|{f}" for f in files)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--cmake-declaration"]:
        sys.stdout.write(cmake_declaration())
        sys.exit(0)

    from setuptools import setup

    setup(
        name=PACKAGE,
        version=version(),
        description="Parallel self-assembly of SMORES-EP-style modular robots (ROS 2)",
        license="Apache-2.0",
        python_requires=">=3.10",
        packages=packages(),
        data_files=data_files(),
        install_requires=["numpy", "scipy", "networkx", "transforms3d", "PyYAML"],
        extras_require={"run": ["matplotlib", "colorcet", "mcap", "mcap-ros2-support"]},
        entry_points={
            "console_scripts": [f"{name} = {target}"
                                for name, target in pip_scripts().items()],
        },
        zip_safe=False,
    )
