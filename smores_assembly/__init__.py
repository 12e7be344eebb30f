"""smores_assembly: parallel self-assembly of SMORES-EP-style modular robots.

The planning, navigation, docking and simulation cores are plain Python (no ROS imports);
``smores_assembly.ros`` holds the rclpy nodes, thin adapters over those cores. The
generated interfaces (``smores_assembly.msg``, ``.action``) exist only in the installed
package (colcon/CMake generates them next to the modules): ROS code runs from the install
(``make setup`` installs with symlinks to the checkout's files), not from a checkout's root.
"""
__version__ = "0.1.0"
