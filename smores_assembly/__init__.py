"""smores_assembly: parallel self-assembly of SMORES-EP-style modular robots.

The planning, navigation, docking and simulation cores are plain Python (no ROS imports);
``smores_assembly.ros`` holds the rclpy nodes, thin adapters over those cores.
"""
# The generated interfaces (``smores_assembly.msg``/``.action``) are installed next to the
# Python sources by CMake. When the sources are imported from a checkout, extend the package
# path so that the installed generated modules are still found.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
__version__ = "0.1.0"
