"""``python -m smores_assembly.launch FILE [name:=value ...]``."""
import sys

from smores_assembly.argtypes import run_cli
from smores_assembly.launch.yaml_launch import main

sys.exit(run_cli(main))
