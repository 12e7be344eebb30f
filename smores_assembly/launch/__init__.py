"""Runner for the YAML launch-file subset used by this package (see :mod:`.yaml_launch`)."""
from smores_assembly.launch.yaml_launch import (LaunchError, LaunchRunner, ProcessSpec,
                                                find_pkg_share, launch_file, load_launch)

__all__ = ["LaunchError", "LaunchRunner", "ProcessSpec", "find_pkg_share", "launch_file",
           "load_launch"]
