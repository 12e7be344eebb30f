"""Differential-drive control laws for docking (pure Python, no ROS imports).

The moving body is modelled generically as *a differential-drive body with a docking face on
its x axis*: the face centre lies ``face_offset`` metres ahead of the body's reference point
(the wheel-axle centre). Three bodies occur (docs/ARCHITECTURE.md, "Helping modules"):

* a module docking with its TOP face: offset ``+w/2``, drives forward;
* a module docking with its BOTTOM face: offset ``-w/2``, drives in reverse;
* a helper carrying a module turned by ``carry_yaw = -angle(child_face)``: offset ``+1.5 w``.

Every law works in the *virtual forward frame* of the body: a body that docks in reverse is
described by its pose turned by pi (:func:`virtual_pose`), in which its face lies ahead at a
positive distance and "forward" closes the gap; :func:`real_command` maps the command back
(``v -> -v``, ``w`` unchanged, since turning the frame by pi leaves yaw rates unchanged).

Laws (all return ``(v [m/s], w [rad/s])`` before saturation by :func:`saturate`):

* :func:`goto_point` / :class:`PoseRegulator`: go to a pose by turn-drive-turn with smooth
  blending (the classic decomposition of unicycle point stabilisation, e.g. Siegwart,
  Nourbakhsh & Scaramuzza, *Introduction to Autonomous Mobile Robots*, Sec. 3.6), with
  hysteresis so that mocap noise does not make the regulator chatter between sub-steps.
* :func:`approach_command`: straight approach along a docking axis, the axle-centre lateral
  error steering a heading reference (a line-following law, ``theta_d = h - atan(k_y e_y)``,
  ``w = k_theta (theta_d - theta)``; Samson-type path following, Siegwart et al. Sec. 3.6.2),
  slowing down with the remaining gap.
* :func:`track_timed_path`: timed pure pursuit (Coulter, *Implementation of the Pure Pursuit
  Path Tracking Algorithm*, CMU-RI-TR-92-01) on the reference point of a time-stamped path:
  the carrot is the path position ``lookahead`` seconds after now, so a module waits where
  the path's timing makes the reference wait.
* :func:`saturate`: per-wheel speed limits (wheel speed cap x radius) that keep curvature.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from smores_assembly.errors import InputError, ParamsError
from smores_assembly.geometry import (MODULE_WIDTH, Face, Pose2D, face_center, segment_projection,
                                      square_overlap,
                                      wrap_angle)
from smores_assembly.params import check_ranges, param_field

# --------------------------------------------------------------------------------------------
# settings


@dataclass
class DockingSettings:
    """Every tunable of the docking controller (ROS parameters of ``docking_controller``).

    Units: metres, seconds, radians unless a name says ``_deg``.
    """

    # --- drive ---
    wheel_radius: float = param_field(0.040, "Wheel radius [m]", 0.005, 0.5)
    track_width: float = param_field(0.0672, "Distance between the wheels [m]", 0.01, 1.0)
    wheel_speed_max: float = param_field(math.pi / 2, "Wheel speed cap [rad/s]", 0.01, 100.0)
    v_max: float = param_field(0.06, "Linear speed limit [m/s]", 0.001, 2.0)
    w_max: float = param_field(1.5, "Angular speed limit [rad/s]", 0.01, 20.0)
    module_width: float = param_field(0.08, "Module width = centre distance of docked modules [m]",
                                      0.01, 1.0)
    # --- navigate ---
    path_wait_timeout_s: float = param_field(
        1.0, "Time to wait for a path on entering NAVIGATE before going straight to "
        "POSE_ADJUST [s]", 0.0, 60.0)
    nav_lookahead_s: float = param_field(1.0, "Pure-pursuit look-ahead along the timed path [s]",
                                         0.0, 10.0)
    nav_k_dist: float = param_field(1.0, "Gain speed/distance-to-carrot [1/s]", 0.01, 20.0)
    nav_k_heading: float = param_field(3.0, "Heading gain while tracking a path [1/s]", 0.1, 50.0)
    nav_turn_in_place_deg: float = param_field(
        50.0, "Heading error above which the module turns in place [deg]", 1.0, 180.0)
    nav_goal_tolerance: float = param_field(0.02, "Distance to the path end that ends NAVIGATE [m]",
                                            0.001, 1.0)
    nav_hold_tolerance: float = param_field(
        0.002, "Where the timed path dwells, the module closes in on its waypoint to this "
        "distance before it stops [m] (the navigation's grid leaves (cell - w sqrt 2) / 2 = "
        "3.4 mm to each of two neighbours turning in place on adjacent cells)", 0.0002, 0.1)
    nav_turn_min_distance: float = param_field(
        0.0, "Closer than this to the carrot [m] the module does not turn towards it: it "
        "creeps along its heading (forward or back) to the carrot's projection (turning in "
        "place to face a point a few mm away swung staging modules through 80 degrees "
        "beside a neighbour); 0: off, the module always turns to face the carrot (the "
        "default: 0.005-0.01 change the scale runs, see docs/RESULTS.md)", 0.0, 0.1)
    nav_approach_min_speed: float = param_field(
        0.02, "NAVIGATE speed floor while farther than nav_hold_tolerance from the carrot "
        "[m/s] (keep below the planned path speeds, 0.05 m/s: above them the module runs "
        "ahead of its timing)", 0.0, 0.5)
    nav_timeout_margin_s: float = param_field(
        30.0, "NAVIGATE ends (to POSE_ADJUST) this long after the path's last stamp [s]",
        0.0, 600.0)
    # --- pose adjust ---
    standoff: float = param_field(0.06, "Face gap at the pre-dock pose [m]", 0.005, 0.5)
    adjust_k_pos: float = param_field(2.0, "Speed gain on the distance to the pre-dock pose [1/s]",
                                      0.01, 50.0)
    adjust_k_yaw: float = param_field(3.0, "Heading gain in POSE_ADJUST [1/s]", 0.1, 50.0)
    adjust_pos_tolerance: float = param_field(0.002, "Pre-dock position tolerance [m]",
                                              0.0002, 0.1)
    adjust_yaw_tolerance_deg: float = param_field(1.0, "Pre-dock heading tolerance [deg]",
                                                  0.05, 30.0)
    adjust_timeout_s: float = param_field(60.0, "POSE_ADJUST timeout (then RETRY) [s]", 1.0, 3600.0)
    waypoint_tolerance: float = param_field(
        0.015, "Pass-through tolerance of detour waypoints around obstacles [m]", 0.001, 0.5)
    obstacle_clearance: float = param_field(
        0.13, "Centre distance kept from other modules by direct moves (detours) [m]",
        0.0, 1.0)
    lane_heading_max_deg: float = param_field(
        1.5, "Bound on the heading reference off the docking axis while sliding along a lane "
        "between flush neighbours (corners, slots) [deg]", 0.0, 30.0)
    escape_distance: float = param_field(
        0.12, "A direct move starting closer than this (centre distance) to another module "
        "first drives straight away from it, without turning [m]", 0.0, 1.0)
    # --- approach ---
    approach_speed: float = param_field(0.025, "Approach speed along the docking axis [m/s]",
                                        0.0005, 0.5)
    approach_min_speed: float = param_field(0.003, "Approach speed floor until the stop gap [m/s]",
                                            0.0001, 0.5)
    approach_k_gap: float = param_field(2.0, "Approach speed per metre of remaining gap [1/s]",
                                        0.01, 50.0)
    approach_k_lateral: float = param_field(
        1.5, "Heading reference per lateral axle error, times the face offset (1 = the face "
        "centre moves straight along the axis) [rad per (m/m)]", 0.0, 20.0)
    approach_k_yaw: float = param_field(3.0, "Heading gain in APPROACH [1/s]", 0.1, 50.0)
    approach_stop_gap: float = param_field(0.001, "Measured gap at which the approach stops "
                                           "pushing and waits for capture [m]", -0.01, 0.05)
    approach_align_gap: float = param_field(
        0.012, "Inside this gap the module stops to realign its heading when it is off by "
        "more than dock_yaw_tolerance_deg [m]", 0.0, 0.2)
    approach_timeout_s: float = param_field(30.0, "APPROACH timeout (then RETRY) [s]", 1.0, 3600.0)
    misalign_lateral_bound: float = param_field(
        0.008, "Lateral face error during APPROACH that triggers a RETRY [m]", 0.0005, 0.1)
    misalign_yaw_bound_deg: float = param_field(
        8.0, "Heading error during APPROACH that triggers a RETRY [deg]", 0.1, 90.0)
    target_moved_bound: float = param_field(
        0.01, "Target displacement since the start of APPROACH that triggers a RETRY [m]",
        0.0005, 1.0)
    target_moved_yaw_deg: float = param_field(
        5.0, "Target rotation since the start of APPROACH that triggers a RETRY [deg]", 0.1, 180.0)
    slow_down_distance: float = param_field(
        0.10, "Within this distance of the target face centre (from the moving face centre) "
        "speed is limited [m]",
        0.0, 5.0)
    near_structure_speed: float = param_field(
        0.03, "Speed limit near the target structure (root protection) [m/s]", 0.001, 2.0)
    # --- capture / confirmation ---
    capture_range: float = param_field(0.004, "EP-magnet capture range (face gap) [m]",
                                       0.0001, 0.05)
    dock_lateral_tolerance: float = param_field(0.002, "Lateral face error accepted at capture [m]",
                                                0.0001, 0.05)
    dock_yaw_tolerance_deg: float = param_field(1.5, "Heading error accepted at capture [deg]",
                                                0.05, 30.0)
    confirm_with_connections: bool = param_field(
        True, "Confirm a dock from the fake hardware's connections (true) or from the measured "
        "gap held inside the capture range for confirm_dwell_s (false, real hardware)")
    confirm_dwell_s: float = param_field(0.5, "Dwell inside capture range that confirms a dock [s]",
                                         0.0, 60.0)
    confirm_timeout_s: float = param_field(
        3.0, "Time stopped at the stop gap without confirmation before a RETRY [s]", 0.1, 600.0)
    # --- retry ---
    max_retries: int = param_field(3, "Approach retries before the action fails", 0, 100)
    retry_timeout_s: float = param_field(20.0, "Back-off (RETRY) timeout [s]", 1.0, 3600.0)
    # --- estimation / tracking ---
    stale_timeout_s: float = param_field(0.3, "A pose older than this is stale (PAUSED) [s]",
                                         0.01, 60.0)
    filter_alpha: float = param_field(
        0.3, "Correction gain of the moving body's pose observer (1 = raw mocap)", 0.01, 1.0)
    target_filter_alpha: float = param_field(
        0.05, "Smoothing gain of the (static) target pose (1 = raw mocap)", 0.001, 1.0)
    target_jump: float = param_field(
        0.005, "Target innovation that resets the target filter (target moved) [m]", 0.0005, 1.0)
    # --- helper ---
    helper_pickup_gap: float = param_field(0.006, "Gap helper TOP face -> module face at LIFT [m]",
                                           -0.01, 0.05)
    lift_timeout_s: float = param_field(3.0, "Time for a LIFT to show in the poses [s]",
                                        0.1, 60.0)
    lift_confirm_tolerance: float = param_field(
        0.01, "Carried module pose error that confirms a LIFT [m]", 0.0005, 0.2)
    helper_timeout_s: float = param_field(
        120.0, "WAIT_HELPER timeout [s] (from the phase start and the last path end)", 1.0,
        3600.0)
    helper_backoff: float = param_field(0.06, "Helper reverse distance after the hand-over [m]",
                                        0.0, 1.0)
    # --- wheel deadband ---
    min_wheel_speed: float = param_field(
        0.006, "Smallest wheel rim speed that moves a module [m/s]: once a stall is noticed "
        "(slow commanded motion, none measured over stall_window_s), every non-zero command "
        "of that body is raised to it (0 = never raise; a stall is then reported)", 0.0, 0.1)
    stall_window_s: float = param_field(
        1.0, "Window over which commanded and measured motion are compared to notice a "
        "stall [s]", 0.2, 60.0)

    def validate(self) -> None:
        """Raise :class:`~smores_assembly.errors.ParamsError` naming the field: a value out
        of range, or
        ``approach_min_speed`` above ``approach_speed``, or ``approach_stop_gap`` not below
        ``capture_range``, or ``module_width`` not wider than ``track_width`` (the wheels
        sit inside the module's square: a 0.03 m scenario was accepted, and every dock
        timed out in POSE_ADJUST, fresh-user finding)."""
        check_ranges(self)
        if self.module_width <= self.track_width:
            raise ParamsError(f"module_width: {self.module_width} m is not wider than "
                              f"track_width {self.track_width} m (the wheels sit inside the "
                              "module)", field="module_width")
        if self.approach_min_speed > self.approach_speed:
            raise ParamsError(f"approach_min_speed: {self.approach_min_speed} > approach_speed "
                              f"{self.approach_speed}", field="approach_min_speed")
        if self.approach_stop_gap >= self.capture_range:
            raise ParamsError(f"approach_stop_gap: {self.approach_stop_gap} must be below "
                              f"capture_range {self.capture_range}", field="approach_stop_gap")


# --------------------------------------------------------------------------------------------
# commands and limits


def saturate(v: float, w: float, s: DockingSettings) -> tuple[float, float]:
    """Limit a unicycle command to ``v_max``, ``w_max`` and the wheel speed cap.

    Wheel rim speeds are ``v -+ w * track/2``; when one exceeds ``wheel_speed_max *
    wheel_radius`` both ``v`` and ``w`` are scaled by the same factor (the curvature is kept).

    Returns:
        ``(v [m/s], w [rad/s])``.
    """
    k = 1.0
    if abs(v) > s.v_max:
        k = min(k, s.v_max / abs(v))
    if abs(w) > s.w_max:
        k = min(k, s.w_max / abs(w))
    v, w = v * k, w * k
    rim = s.wheel_speed_max * s.wheel_radius
    worst = abs(v) + abs(w) * 0.5 * s.track_width
    if worst > rim:
        k = rim / worst
        v, w = v * k, w * k
    return v, w


def virtual_pose(pose: Pose2D, reverse: bool) -> Pose2D:
    """The body's pose in its virtual forward frame (turned by pi when it docks in reverse)."""
    return Pose2D(pose.x, pose.y, wrap_angle(pose.yaw + math.pi)) if reverse else pose


def real_command(v: float, w: float, reverse: bool) -> tuple[float, float]:
    """Map a virtual-frame command back to the body: ``(-v, w)`` when reversing."""
    return (-v, w) if reverse else (v, w)


def wheel_rim_speeds(v: float, w: float, s: DockingSettings) -> tuple[float, float]:
    """``(left, right)`` wheel rim speeds [m/s] of the command ``(v, w)``."""
    half = 0.5 * s.track_width
    return v - w * half, v + w * half


def raise_to_min_wheel_speed(v: float, w: float, s: DockingSettings) -> tuple[float, float]:
    """Scale a non-zero command (curvature kept) so that its faster wheel turns at least at
    ``min_wheel_speed`` (wheel deadband compensation); zero stays zero, faster commands are
    unchanged."""
    peak = max(abs(x) for x in wheel_rim_speeds(v, w, s))
    if peak < 1e-5 or peak >= s.min_wheel_speed:
        return v, w
    k = s.min_wheel_speed / peak
    return v * k, w * k


class StallMonitor:
    """Notices a stalled body: commanded motion and no measured motion over a window.

    Fed once per tick with the command applied since the previous tick and the body's
    measured pose (raw mocap, or None when unknown). Over the last ``stall_window_s`` the
    commands are integrated (unicycle, from the first measured pose) into the motion they
    ask for; the asked-for and the measured displacement (and turn) are each taken between
    the mean poses of the window's first and last quarter (means, so that 1 mm mocap noise
    neither hides nor fakes a stall). A stall is a window in which the command never
    stopped, it asked for a net ``MIN_TRAVEL`` or ``MIN_TURN`` at least, and less than
    ``RATIO`` of each asked-for motion shows. With ``slow_only`` a window counts only when
    every command was slower than ``min_wheel_speed`` at both wheels (a deadband, not a
    body blocked at speed).
    """

    MIN_TRAVEL = 0.002          # [m]
    MIN_TURN = math.radians(2.0)
    RATIO = 0.3

    def __init__(self):
        self._hist: list[tuple[float, float, float, float, Pose2D | None]] = []

    def clear(self) -> None:
        """Forget the window (after a pause: the motion before it says nothing)."""
        self._hist = []

    def update(self, t: float, cmd: tuple[float, float], pose: Pose2D | None,
               s: DockingSettings, slow_only: bool) -> bool:
        """Add this tick; True when the window shows a stall (the window then restarts)."""
        dt = t - self._hist[-1][0] if self._hist else 0.0
        self._hist.append((t, dt, cmd[0], cmd[1], pose))
        while self._hist and self._hist[0][0] < t - s.stall_window_s:
            self._hist.pop(0)
        hist = self._hist
        if len(hist) < 9 or t - hist[0][0] < 0.95 * s.stall_window_s:
            return False
        for _, _, v, w, p in hist[1:]:
            peak = max(abs(x) for x in wheel_rim_speeds(v, w, s))
            if p is None or peak < 1e-5 or (slow_only and peak >= s.min_wheel_speed):
                return False
        if hist[0][4] is None:
            return False
        # the motion asked for: the commands integrated from the first measured pose
        x, y, yaw = 0.0, 0.0, hist[0][4].yaw
        asked = [(x, y, 0.0)]
        for _, dt_k, v, w, _ in hist[1:]:
            h = yaw + 0.5 * w * dt_k
            x, y, yaw = x + v * dt_k * math.cos(h), y + v * dt_k * math.sin(h), yaw + w * dt_k
            asked.append((x, y, yaw - hist[0][4].yaw))
        y0 = hist[0][4].yaw
        seen = [(p.x, p.y, wrap_angle(p.yaw - y0))  # type: ignore[union-attr]  # None: above
                for *_, p in hist]
        q = max(2, len(hist) // 4)

        def shift(pts):
            a = [sum(c) / q for c in zip(*pts[:q])]
            b = [sum(c) / q for c in zip(*pts[-q:])]
            return math.hypot(b[0] - a[0], b[1] - a[1]), abs(b[2] - a[2])

        travel, turn = shift(asked)
        moved, turned = shift(seen)
        if travel < self.MIN_TRAVEL and turn < self.MIN_TURN:
            return False
        if ((travel >= self.MIN_TRAVEL and moved >= self.RATIO * travel)
                or (turn >= self.MIN_TURN and turned >= self.RATIO * turn)):
            return False
        self._hist = self._hist[-1:]
        return True


# --------------------------------------------------------------------------------------------
# docking axis


@dataclass(frozen=True)
class DockAxis:
    """The line along which a face is brought onto its target face (``world`` frame).

    Attributes:
        tx, ty: target face centre [m].
        heading: direction [rad] a body must face (in its virtual frame) when docked: the
            target face's outward normal turned by pi.
    """

    tx: float
    ty: float
    heading: float

    def body_pose(self, face_offset: float, extra: float = 0.0) -> Pose2D:
        """Virtual pose of a body with the face ``face_offset`` ahead, ``extra`` before contact."""
        c, s_ = math.cos(self.heading), math.sin(self.heading)
        back = face_offset + extra
        return Pose2D(self.tx - back * c, self.ty - back * s_, self.heading)

    def errors(self, body: Pose2D, face_offset: float) -> tuple[float, float, float]:
        """Errors of a body (virtual pose) whose face lies ``face_offset`` ahead.

        Returns:
            ``(gap, lateral, yaw)``: gap [m] from the body's face centre to the target face
            centre along the axis (positive while apart), lateral [m] offset of the face
            centre across the axis (positive to the axis' left), yaw [rad] heading error.
        """
        fx = body.x + face_offset * math.cos(body.yaw)
        fy = body.y + face_offset * math.sin(body.yaw)
        c, s_ = math.cos(self.heading), math.sin(self.heading)
        dx, dy = self.tx - fx, self.ty - fy
        gap = dx * c + dy * s_
        lateral = -(-dx * s_ + dy * c)
        return gap, lateral, wrap_angle(body.yaw - self.heading)

    def axle_lateral(self, body: Pose2D) -> float:
        """Lateral offset [m] of the body's reference point (axle centre) from the axis."""
        c, s_ = math.cos(self.heading), math.sin(self.heading)
        return -s_ * (body.x - self.tx) + c * (body.y - self.ty)


def dock_axis(parent: Pose2D, parent_face: Face, width: float) -> DockAxis:
    """The docking axis onto ``parent_face`` of a module at ``parent`` (``world`` frame)."""
    tx, ty = face_center(parent, parent_face, width)
    return DockAxis(tx, ty, wrap_angle(parent.yaw + parent_face.angle + math.pi))


def on_approach_line(axis: DockAxis, body: Pose2D, face_offset: float, s: DockingSettings,
                     standoff: float, nearest: float) -> bool:
    """True when a body (virtual pose) already stands where a pre-dock move would leave it,
    or further along the straight approach: its face gap (see :meth:`DockAxis.errors`) in
    ``[nearest, standoff + adjust_pos_tolerance]``, its axle centre within
    ``adjust_pos_tolerance`` of the axis and its heading within
    ``adjust_yaw_tolerance_deg`` (the POSE_ADJUST tolerances). A body there needs no
    pre-dock move: backing out to the stand-off and coming back gains nothing."""
    gap, _lat, yaw = axis.errors(body, face_offset)
    return (nearest <= gap <= standoff + s.adjust_pos_tolerance
            and abs(axis.axle_lateral(body)) <= s.adjust_pos_tolerance
            and abs(yaw) <= math.radians(s.adjust_yaw_tolerance_deg))


#: A module whose centre lies at least this many module widths off a dock's axis stands
#: flush *beside* its lane (face to face, with a few mm of pose error), not *in* it: the
#: one bound of :func:`lane_neighbours`, :func:`staging_extra` and the navigation's
#: :func:`~smores_assembly.navigation.stage.clear_predock` (bench_targets random_10_68252793:
#: the navigation's bound was a full width; a docked flush neighbour 0.3 mm closer counted
#: as standing in the lane and m4's pre-dock goal stayed where it could not turn).
LANE_FLUSH_WIDTHS = 0.9


def lane_neighbours(axis: DockAxis, face_offset: float, standoff: float, width: float,
                    obstacles: Sequence[tuple[float, float]], reach: float,
                    extent: float | None = None) -> list[tuple[float, float]]:
    """The modules standing flush beside the approach lane of a dock (issue 11: corners).

    The lane is the strip swept by the driven body (and what it carries) sliding along the
    axis from its pre-dock pose (face gap ``standoff`` [m], face ``face_offset`` [m] ahead
    of the body's centre) onto the target face: ``width`` wide, from the face to the back
    of the body at the pre-dock pose. A module whose centre lies ``>= 0.9 width`` (a flush
    neighbour, with a few mm of pose error) but less than ``reach`` [m] off the axis,
    alongside the lane, is passed face to face by the straight slide: legal motion, but
    closer than the usual clearance of direct moves, so the body must reach the lane
    aligned (:func:`staging_extra`) and must not flee from such a neighbour once in it.

    Args:
        obstacles: centres of the other modules [m] (``world``).
        extent: where the lane ends [m out from the target face along the axis]: the back
            of the body sliding in from beyond the pre-dock pose (a staging pose; default:
            the back of the body at the pre-dock pose). The whole wall it slides along is
            flush neighbours (bench_targets random_10_68252793: m4 slid 0.35 m along m8
            and m3, fled them, slid on, fled again: four POSE_ADJUST timeouts).

    Returns:
        The centres (a subset of ``obstacles``) of the lane's flush neighbours.
    """
    c, s_ = math.cos(axis.heading), math.sin(axis.heading)
    end = face_offset + standoff + 0.5 * width
    if extent is not None:
        end = max(end, extent)
    out = []
    for ox, oy in obstacles:
        dx, dy = ox - axis.tx, oy - axis.ty
        u = -(dx * c + dy * s_)              # outward from the target face along the axis
        lat = -s_ * dx + c * dy
        if (LANE_FLUSH_WIDTHS * width <= abs(lat) < reach
                and -0.5 * width < u < end + 0.5 * width):
            out.append((ox, oy))
    return out


#: Farthest distance [m] beyond the pre-dock pose tried for a staging pose on the docking
#: axis (:func:`staging_extra`; the plan refuses a dock that would need more, issue 11).
STAGING_LIMIT = 0.4


def lane_blockers(axis: DockAxis, obstacles: Sequence[tuple[float, float]],
                  width: float) -> list[float]:
    """Distances [m] out from the target face, along the axis, of the obstacle centres
    (``world``) standing in the lane beyond the face (less than
    :data:`LANE_FLUSH_WIDTHS` ``* width`` off the axis): no staging pose lies past them."""
    c, s_ = math.cos(axis.heading), math.sin(axis.heading)
    out = []
    for ox, oy in obstacles:
        dx, dy = ox - axis.tx, oy - axis.ty
        u = -(dx * c + dy * s_)              # outward from the target face along the axis
        if u > 0.0 and abs(-s_ * dx + c * dy) < LANE_FLUSH_WIDTHS * width:
            out.append(u)
    return out


def staging_extra(axis: DockAxis, face_offset: float, standoff: float,
                  obstacles: Sequence[tuple[float, float]], clearance: float,
                  step: float = 0.005, limit: float = STAGING_LIMIT,
                  width: float = MODULE_WIDTH, best_fallback: bool = False) -> float:
    """Extra distance [m] beyond ``standoff`` of the staging pose on the docking axis: the
    nearest pose ``axis.body_pose(face_offset, standoff + extra)`` whose centre is at least
    ``clearance`` [m] from every obstacle centre, so the body can turn there and then slide
    straight in along the lane (``0`` when the pre-dock pose itself is clear; when none
    within ``limit`` is: ``limit``, or with ``best_fallback`` the clearest candidate, the
    one farthest from its nearest obstacle centre).

    ``best_fallback`` is what a lifted pair uses: its turn clearance (0.187 m) is often kept
    nowhere on an axis inside the structure, and the limit pose may then stand next to a
    module (random100 seed 0, stage 11: h2/m83's limit pose lay 0.08 m from the staged m70,
    and the detour to it drove m83, one width ahead of h2, into m70; the clearest
    candidate, 0.26 m out, let the pair turn and dock without a contact).

    Never past a module standing in the lane (centre less than ``0.9 width`` off the axis,
    :func:`lane_neighbours`' flush bound, beyond the target face): from there the body
    could not slide in; the clearest pose before it is returned instead (bench_targets
    random_12_594393859: m5's staging pose lay beyond m9, four POSE_ADJUST timeouts; the
    navigation's :func:`~smores_assembly.navigation.stage.clear_predock` has the same
    rule)."""
    in_lane = lane_blockers(axis, obstacles, width)
    extra, best, best_d = 0.0, 0.0, -math.inf
    while extra < limit:
        back = face_offset + standoff + extra
        if any(u < back + width - 1e-9 for u in in_lane):
            return best
        p = axis.body_pose(face_offset, standoff + extra)
        near = min((math.hypot(p.x - ox, p.y - oy) for ox, oy in obstacles), default=math.inf)
        if near >= clearance:
            return extra
        if near > best_d + 1e-12:
            best, best_d = extra, near
        extra += step
    return best if best_fallback else limit


# --------------------------------------------------------------------------------------------
# helper pick-up (the one rule, used by the docking task and by the navigation)

#: A pick-up spot is free when every other module's centre is at least this many module
#: widths away from it (0.13 m for 0.08 m modules: the helper's square, whose corners reach
#: w/sqrt(2) from its centre, next to another module's square, with a 1.7 cm margin).
PICKUP_CLEARANCE_WIDTHS = 1.625


def free_pickup_faces(module: Pose2D, others: Sequence[tuple[float, float]], width: float,
                      standoff: float) -> list[Face]:
    """The faces of ``module`` from which a helper can pick it up: those whose helper pose
    at ``standoff`` [m] (TOP face that far from the module's face, centre ``width +
    standoff`` out) is farther than ``PICKUP_CLEARANCE_WIDTHS * width`` from every centre
    in ``others`` [m] (``world``). The one rule of :func:`pickup_axis` and of the plan's
    check (a helper dock whose module has no free side is refused, issue 11)."""
    clearance = PICKUP_CLEARANCE_WIDTHS * width
    out = []
    for f in Face:
        p = dock_axis(module, f, width).body_pose(0.5 * width, standoff)
        if all(math.hypot(p.x - ox, p.y - oy) >= clearance for ox, oy in others):
            out.append(f)
    return out


def pair_turn_clearance(width: float) -> float:
    """Centre distance [m] from a helper's centre that another module must keep so that
    the helper, carrying a module one width ahead, can turn in place without touching it:
    the pair's farthest corner (``hypot(1.5 w, 0.5 w)``) plus the other module's corner
    radius ``w / sqrt 2`` (the navigation's ``carry_clearance`` less its
    ``PAIR_TURN_MARGIN``)."""
    return math.hypot(1.5 * width, 0.5 * width) + width / math.sqrt(2.0)


#: Margin [m] on :func:`pair_turn_clearance` where a pair is sent to turn (its pre-dock
#: goal or staging pose, the navigation's ``carry_clearance``): the pose error it stops with.
PAIR_TURN_MARGIN = 0.002


def pair_clearance(helper: Pose2D, point: tuple[float, float], width: float) -> float:
    """Distance [m] from ``point`` (a module centre, ``world``) to the footprint of a
    helper carrying a module one ``width`` ahead: the ``2 w x w`` rectangle from ``-w/2``
    to ``1.5 w`` along the helper's heading and ``+-w/2`` across it (0 inside)."""
    return footprint_clearance(helper, point, width, 1.5 * width)


def footprint_clearance(body: Pose2D, point: tuple[float, float], width: float,
                        front: float) -> float:
    """Distance [m] from ``point`` (``world``) to the rectangle from ``-w/2`` to ``front``
    [m] along ``body``'s heading and ``+-w/2`` across it (0 inside): a module's square
    with ``front = w/2``, a helper carrying one (:func:`pair_clearance`) with ``1.5 w``."""
    dx, dy = point[0] - body.x, point[1] - body.y
    c, s_ = math.cos(body.yaw), math.sin(body.yaw)
    u, v = c * dx + s_ * dy, -s_ * dx + c * dy
    du = max(-0.5 * width - u, 0.0, u - front)
    dv = max(abs(v) - 0.5 * width, 0.0)
    return math.hypot(du, dv)


def pair_turn_shift(helper: Pose2D, obstacles: Sequence[tuple[float, float]], width: float,
                    step: float = 0.005, limit: float = 0.3) -> float | None:
    """Straight move [m] along the heading (signed, + forward) that takes a helper carrying
    a module one ``width`` ahead to where it can turn in place: no obstacle centre within
    :func:`pair_turn_clearance` plus :data:`PAIR_TURN_MARGIN` of the helper's centre
    (issue 11: a carried pair that turned in place at the start of a direct move swept
    its module's corners into a placed module beside it: bench_scale random10, m8 against
    m4). The margin covers where the move stops (``PairRoom`` stops up to 2 mm short:
    without it, bench_targets random_8_190072251's h0 stopped 1.2 mm inside the clearance
    of m4, which turned in place meanwhile, and its turn swept m5 into m4, 0.57 mm).

    The straight move itself must keep the pair's footprint (:func:`pair_clearance`) from
    coming closer to any obstacle than it is at the start, and never within the corner
    radius ``w / sqrt 2`` (+ 2 mm) of one that is farther (obstacle yaws are unknown).
    The shorter of the two directions wins.

    Args:
        helper: the helper's pose (``world``).
        obstacles: module centres [m] (``world``), the docking target included.

    Returns:
        ``0.0`` when the pair can turn where it stands; the shift (``|shift| <= limit``);
        or None when neither direction reaches such a pose within ``limit``.
    """
    return turn_shift(helper, obstacles, width, pair_turn_clearance(width) + PAIR_TURN_MARGIN,
                      1.5 * width, step, limit)


def pair_turn_way(helper: Pose2D, alpha: float, obstacles: Sequence[tuple[float, float]],
                  width: float, step: float = math.radians(3.0)) -> float:
    """Direction (+1 counter-clockwise, -1 clockwise) in which a helper carrying a module
    one ``width`` ahead turns in place to a heading ``alpha`` [rad] off its own: the short
    way, unless its sweep brings the pair's footprint (:func:`pair_clearance`) within the
    corner radius ``w / sqrt 2`` + :data:`PAIR_TURN_MARGIN` of an obstacle centre and the
    long way's does not (an obstacle already closer at the start is judged against where
    it stands then). For a pair with no turning room anywhere near
    (:func:`pair_turn_shift` None): turned the short way at the start of its path, just
    after the lift, its carried module swept into a staging module beside it, while the
    long way round was clear (bench_targets seed 71 random_12_117548902, stage 3: h0
    carrying m0, m2 0.158 m from h0, contact 0.61 mm).

    Args:
        helper: the helper's pose (``world``); alpha: the heading to turn to, relative
            [rad] (its sign is the short way); obstacles: module centres [m] (``world``).

    Returns:
        ``+1.0`` or ``-1.0``.
    """
    short = 1.0 if alpha >= 0.0 else -1.0
    corner = width / math.sqrt(2.0) + PAIR_TURN_MARGIN
    # only modules within the full turn's reach can be swept (this runs every control
    # tick of a turn; at 100 modules the rest cost ~10^4 clearance calls a tick)
    reach = pair_turn_clearance(width) + PAIR_TURN_MARGIN
    obstacles = [o for o in obstacles if math.hypot(o[0] - helper.x, o[1] - helper.y) < reach]
    floor = [min(pair_clearance(helper, o, width), corner) - 1e-4 for o in obstacles]

    def clear(turn: float) -> bool:
        n = max(1, int(math.ceil(abs(turn) / step)))
        for i in range(1, n + 1):
            p = Pose2D(helper.x, helper.y, helper.yaw + turn * i / n)
            if any(pair_clearance(p, o, width) < f for o, f in zip(obstacles, floor)):
                return False
        return True

    if clear(alpha) or not clear(alpha - short * 2.0 * math.pi):
        return short
    return -short


def pair_sweep_clear(helper: Pose2D, turn: float, obstacles: Sequence[tuple[float, float]],
                     width: float, step: float = math.radians(3.0)) -> bool:
    """True when a helper carrying a module one ``width`` ahead can turn in place by
    ``turn`` [rad] (signed, the way it turns) with the pair's footprint
    (:func:`pair_clearance`) never within the corner radius ``w / sqrt 2`` +
    :data:`PAIR_TURN_MARGIN` of an obstacle centre (``world``; their yaws are unknown).
    The partial sweep of that one turn, where :func:`pair_turn_clearance` is the full
    circle's: a pair that must turn 45 degrees with a module beside its helper may turn
    although a full turn would sweep its module through it."""
    corner = width / math.sqrt(2.0) + PAIR_TURN_MARGIN
    reach = pair_turn_clearance(width) + PAIR_TURN_MARGIN
    obstacles = [o for o in obstacles if math.hypot(o[0] - helper.x, o[1] - helper.y) < reach]
    n = max(1, int(math.ceil(abs(turn) / step)))
    for i in range(0, n + 1):
        p = Pose2D(helper.x, helper.y, helper.yaw + turn * i / n)
        if any(pair_clearance(p, o, width) < corner for o in obstacles):
            return False
    return True


#: Margin [m] a lifted pair's straight leg keeps beyond the corner radius ``w / sqrt 2``
#: of every obstacle centre (:func:`pair_leg_clear`): the leg is driven with a heading hold
#: and stops within a few mm, so it keeps more than a turn's :data:`PAIR_TURN_MARGIN`.
PAIR_LEG_MARGIN = 0.005


def pair_leg_clear(helper: Pose2D, length: float, sign: float,
                   obstacles: Sequence[tuple[float, float]], width: float) -> bool:
    """True when a helper carrying a module one ``width`` ahead can drive ``length`` [m]
    straight along its heading (``sign`` +1 forward, -1 backward) with the swept footprint
    (the ``2 w x w`` pair rectangle of :func:`pair_clearance`, stretched by the leg) never
    within ``w / sqrt 2`` + :data:`PAIR_LEG_MARGIN` of an obstacle centre (``world``); an
    obstacle already within that at the start is allowed only behind the move (a pair
    parked nose to a module may back away from it), never beside it."""
    corner = width / math.sqrt(2.0) + PAIR_LEG_MARGIN
    base = helper if sign > 0 else Pose2D(helper.x - length * math.cos(helper.yaw),
                                          helper.y - length * math.sin(helper.yaw), helper.yaw)
    front = length + 1.5 * width
    c, s_ = math.cos(helper.yaw), math.sin(helper.yaw)
    for o in obstacles:
        if footprint_clearance(base, o, width, front) >= corner:
            continue
        # within the corner radius: allowed only behind the move, where the pair only
        # leaves it (beside the leg, an oriented square's corner can reach the pair's
        # side although the centre's distance stays the same)
        u = c * (o[0] - helper.x) + s_ * (o[1] - helper.y)
        behind = u <= -0.5 * width if sign > 0 else u >= 1.5 * width
        if not behind or footprint_clearance(base, o, width, front) < \
                pair_clearance(helper, o, width) - 1e-9:
            return False
    return True


def pair_free_arc(helper: Pose2D, obstacles: Sequence[tuple[float, float]], width: float,
                  step: float = math.radians(3.0)) -> tuple[float, float]:
    """How far [rad] a helper carrying a module one ``width`` ahead can turn in place
    clockwise and counter-clockwise from its heading (each up to a full turn) with the
    pair's footprint never within the corner radius ``w / sqrt 2`` +
    :data:`PAIR_TURN_MARGIN` of an obstacle centre (``world``): the turn to any heading
    inside that arc sweeps clear (:func:`pair_sweep_clear` for one turn), its end and its
    start included; ``(0, 0)`` when the pose itself is not clear."""
    corner = width / math.sqrt(2.0) + PAIR_TURN_MARGIN
    reach = pair_turn_clearance(width) + PAIR_TURN_MARGIN
    near = [o for o in obstacles if math.hypot(o[0] - helper.x, o[1] - helper.y) < reach]
    if any(pair_clearance(helper, o, width) < corner for o in near):
        return 0.0, 0.0   # its own pose is not clear: no turn from (or to) it
    out = []
    for way in (-1.0, 1.0):
        a = 0.0
        while a < 2.0 * math.pi:
            p = Pose2D(helper.x, helper.y, helper.yaw + way * (a + step))
            if any(pair_clearance(p, o, width) < corner for o in near):
                break
            a += step
        out.append(min(a, 2.0 * math.pi))
    return out[0], out[1]


def _arc_turn(yaw: float, arc: tuple[float, float], to: float) -> float | None:
    """The signed turn [rad] from ``yaw`` to ``to`` inside the free ``arc`` (clockwise,
    counter-clockwise extents from ``yaw``; the shorter way when both fit), or None when
    neither way fits."""
    ccw = (to - yaw) % (2.0 * math.pi)
    cw = 2.0 * math.pi - ccw
    if ccw < 1e-6 or cw < 1e-6:
        return 0.0
    ways = [t for t, fits in ((ccw, ccw <= arc[1]), (-cw, cw <= arc[0])) if fits]
    return min(ways, key=abs) if ways else None


def pair_maneuver(helper: Pose2D, spots: Sequence[Pose2D],
                  obstacles: Sequence[tuple[float, float]], width: float,
                  shift_limit: float = 0.3,
                  step: float = 0.01) -> list[tuple[str, float, float, float]] | None:
    """Straight shift, turn, straight leg, turn: a way for a helper carrying a module one
    ``width`` ahead to one of ``spots`` (``world`` poses whose own footprint is clear)
    where every motion's swept footprint keeps clear of the obstacle centres: each turn in
    place inside the free arc where it turns (:func:`pair_free_arc`), the shift along the
    current heading (up to ``shift_limit`` [m] either way) and the leg (forward or
    backward) by :func:`pair_leg_clear`. The search takes the smallest shift that works
    and, for it, the first spot in the given order (then the leg's way nearer the
    heading).

    The pair's own footprint model, where a direct move's detour and the full-circle
    turning room judge the helper's centre as a point (random100 seed 0, stage 13: h0
    carrying m91 stood 12 cm out on its axis, 83 degrees off it, between two helpers;
    the full-circle rule backed it 0.25 m away, its detour ran round the structure and
    pushed m91 into the staged m80: four POSE_ADJUST timeouts).

    Returns:
        Steps ``("drive", x, y, sign)`` and ``("turn", yaw, way, 0)`` (``way`` the sign of
        the turn), the ones not needed left out; None when no such way exists.
    """
    near = [o for o in obstacles if math.hypot(o[0] - helper.x, o[1] - helper.y) < 1.2]
    corner = width / math.sqrt(2.0) + PAIR_TURN_MARGIN
    spots = [sp for sp in spots if all(pair_clearance(sp, o, width) >= corner for o in near)]
    spot_arcs = [pair_free_arc(sp, near, width) for sp in spots]
    shifts = [0.0]
    k = 1
    while k * step <= shift_limit + 1e-9:
        shifts += [k * step, -k * step]
        k += 1
    c, s_ = math.cos(helper.yaw), math.sin(helper.yaw)
    for d in shifts:
        p = Pose2D(helper.x + d * c, helper.y + d * s_, helper.yaw)
        if d and not pair_leg_clear(helper, abs(d), math.copysign(1.0, d), near, width):
            continue
        arc = pair_free_arc(p, near, width)
        for spot, spot_arc in zip(spots, spot_arcs):
            dx, dy = spot.x - p.x, spot.y - p.y
            length = math.hypot(dx, dy)
            if length < 0.003:
                legs = [(p.yaw, 0.0)]
            else:
                bearing = math.atan2(dy, dx)
                legs = [(bearing, 1.0), (wrap_angle(bearing + math.pi), -1.0)]
            for heading, sign in legs:
                t1 = _arc_turn(p.yaw, arc, heading)
                if t1 is None:
                    continue
                # the turn at the spot sweeps the arc between its heading and the leg's
                t2 = _arc_turn(spot.yaw, spot_arc, heading)
                if t2 is None:
                    continue
                if sign and not pair_leg_clear(Pose2D(p.x, p.y, heading), length, sign,
                                               near, width):
                    continue
                plan: list[tuple[str, float, float, float]] = []
                if d:
                    plan.append(("drive", p.x, p.y, math.copysign(1.0, d)))
                if t1:
                    plan.append(("turn", heading, math.copysign(1.0, t1), 0.0))
                if sign:
                    plan.append(("drive", spot.x, spot.y, sign))
                if t2:
                    plan.append(("turn", spot.yaw, -math.copysign(1.0, t2), 0.0))
                return plan
    return None


def turn_shift(body: Pose2D, obstacles: Sequence[tuple[float, float]], width: float,
               turn: float, front: float, step: float = 0.005,
               limit: float = 0.3) -> float | None:
    """Straight move [m] along ``body``'s heading (signed, + forward) to the nearest pose
    where no obstacle centre lies within ``turn`` [m] of the body's centre (where it can
    turn in place), the body's footprint being the rectangle of
    :func:`footprint_clearance` (``front``: a module's square ``w/2``, a carried pair
    ``1.5 w``, :func:`pair_turn_shift`).

    The straight move itself must keep the footprint from coming closer to any obstacle
    than it is at the start, and never within the corner radius ``w / sqrt 2`` (+ 2 mm)
    of one that is farther (obstacle yaws are unknown). The shorter of the two directions
    wins.

    Returns:
        ``0.0`` when the body can turn where it stands; the shift (``|shift| <= limit``);
        or None when neither direction reaches such a pose within ``limit``.
    """

    def turn_clear(p: Pose2D) -> bool:
        return all(math.hypot(p.x - ox, p.y - oy) >= turn for ox, oy in obstacles)

    if turn_clear(body):
        return 0.0
    corner = width / math.sqrt(2.0) + 0.002
    floor = [min(footprint_clearance(body, o, width, front), corner) - 1e-4
             for o in obstacles]
    best: float | None = None
    for sign in (1.0, -1.0):
        d = step
        while d <= limit + 1e-9:
            p = body.compose(sign * d, 0.0)
            if any(footprint_clearance(p, o, width, front) < f
                   for o, f in zip(obstacles, floor)):
                break
            if turn_clear(p):
                if best is None or d < abs(best):
                    best = sign * d
                break
            d += step
    return best


#: gap [m] :func:`turn_sweep_clear` wants between a turning body and every tracked square
TURN_MARGIN = 0.002


def turn_sweep_clear(body: Pose2D, squares: Sequence[Pose2D], width: float,
                     margin: float = TURN_MARGIN) -> bool:
    """True when the disc a ``width`` square sweeps turning in place at ``body`` (radius
    ``w / sqrt 2``) stays ``margin`` [m] from every square of ``squares`` (poses,
    ``world`` frame; the tracked modules with their yaws)."""
    sweep = width / math.sqrt(2.0) + margin
    return all(footprint_clearance(o, (body.x, body.y), width, 0.5 * width) >= sweep
               for o in squares)


def turn_partial_clear(body: Pose2D, turn: float, squares: Sequence[Pose2D], width: float,
                       margin: float = TURN_MARGIN, step: float = math.radians(3.0)) -> bool:
    """True when a ``width`` square at ``body`` turning in place by ``turn`` [rad] (signed,
    the way it turns) stays ``margin`` [m] from every square of ``squares`` (poses,
    ``world``; by the separating bound of :func:`~smores_assembly.geometry.square_overlap`,
    which never overstates the gap), judged every ``step`` [rad]: the partial
    sweep of that one turn, where :func:`turn_sweep_clear` is the full circle's (a turn
    of under 90 degrees moves each corner along an arc of the circle only; from 90 degrees
    on the four corners sweep all of it). A follower's turn escape judges this: escaping for
    a turn that would not touch lags the body's path."""
    n = max(1, int(math.ceil(abs(turn) / step)))
    for i in range(n + 1):
        p = (body.x, body.y, body.yaw + turn * i / n)
        if any(square_overlap(p, (q.x, q.y, q.yaw), width) > -margin for q in squares):
            return False
    return True


def turns_in_place(v: float, w: float, width: float) -> bool:
    """True when the command ``(v [m/s], w [rad/s])`` turns a ``width`` [m] square about a
    point inside it (turning radius ``|v / w|`` under ``w / 2``): its corners then sweep
    the disc of radius ``w / sqrt 2`` round its centre, as in a turn in place."""
    return w != 0.0 and abs(v) < abs(w) * 0.5 * width


class TurnGate:
    """The turns in place granted in one control tick of the bodies one controller drives.

    Two bodies turning in place at once each sweep a disc of radius ``w / sqrt 2``; closer
    than two of those (0.113 m for 0.08 m modules, plus ``margin``) they can touch although
    each one's disc is clear of the other's square as it stands (random 100 seed 0, on
    branch tg2: the followers m70 and m80, 0.1035 m apart, turned at once and touched,
    0.38 mm). A body whose turn would overlap a disc
    granted earlier in the tick holds still for the tick (:meth:`may_turn` False); callers
    let last tick's turners ask first, so a turn once started goes on and the holder turns
    after it. Grid neighbours (0.12 m apart) never hold each other. Pure geometry, no ROS.

    Args:
        width: module width [m].
        margin: gap [m] wanted between the two swept discs.
    """

    def __init__(self, width: float, margin: float = TURN_MARGIN):
        self._reach = math.sqrt(2.0) * width + margin   # two half-diagonals + margin
        self.discs: list[tuple[float, float]] = []

    def note(self, x: float, y: float) -> None:
        """Record a body turning in place at ``(x, y)`` [m, ``world``] this tick."""
        self.discs.append((x, y))

    def may_turn(self, x: float, y: float) -> bool:
        """True when a body at ``(x, y)`` may turn in place this tick (no granted disc
        within reach); it is then recorded."""
        if any(math.hypot(x - dx, y - dy) < self._reach for dx, dy in self.discs):
            return False
        self.note(x, y)
        return True


def pickup_axis(module: Pose2D, helper: Pose2D, others: Sequence[tuple[float, float]],
                width: float, standoff: float, lift_gap: float = 0.006) -> DockAxis:
    """The side from which a helper picks ``module`` up: the docking axis onto one of the
    module's four faces, whose helper pose at ``standoff`` (:func:`pickup_pose`) is free
    of ``others`` (module centres [m], farther than ``PICKUP_CLEARANCE_WIDTHS * width``)
    and nearest ``helper``; the nearest side when none is free. Among free sides, those
    where the pair can turn right after the lift (the helper's centre at ``width +
    lift_gap`` [m] from the module's, :func:`pair_turn_clearance` from every centre in
    ``others``) come first: lifted on another side, the pair's first turn swept its
    module into an idle neighbour (bench_targets random_8_624397381).

    The helper presents its TOP face (face offset ``width / 2``), so on the returned axis
    the helper's pose with its face ``gap`` [m] from the module face is
    ``axis.body_pose(width / 2, gap)``.
    """
    free = free_pickup_faces(module, others, width, standoff)
    turn = pair_turn_clearance(width)
    best: tuple[tuple[bool, bool, float], DockAxis] | None = None
    for f in Face:
        ax = dock_axis(module, f, width)
        p = ax.body_pose(0.5 * width, standoff)
        lift = ax.body_pose(0.5 * width, lift_gap)
        cramped = any(math.hypot(lift.x - ox, lift.y - oy) < turn for ox, oy in others)
        key = (f not in free, cramped, p.distance_to(helper))
        if best is None or key < best[0]:
            best = (key, ax)
    assert best is not None  # Face has four members
    return best[1]


#: A navigation path ends on a side's pick-up pose when its last point is this close [m]
#: to it (the navigation plans the helper's goal at :func:`pickup_pose` of the module's
#: pose when it planned; the module may have been nudged since).
PLANNED_PICKUP_TOLERANCE = 0.03


def planned_pickup_axis(module: Pose2D, path_end: tuple[float, float],
                        others: Sequence[tuple[float, float]], width: float,
                        standoff: float) -> DockAxis | None:
    """The side the navigation planned the helper's pick-up from: the docking axis onto the
    face of ``module`` whose pick-up pose (``standoff`` [m], :func:`pickup_pose`) lies within
    :data:`PLANNED_PICKUP_TOLERANCE` of ``path_end`` (``world`` [m]) and is free of
    ``others`` (:func:`free_pickup_faces`); None when the path ended on no free side.

    A helper that reached the end of its path keeps this side rather than choosing again
    by :func:`pickup_axis`: the navigation planned its way there against every other
    module's path, while a move round the module to another side is planned against none
    (random 50, issue 16: a module staging beside the module made the planned side look
    cramped for the pair's turn while it passed; h1 drove round to another side, across the
    path of m7, which ran into it).
    """
    free = free_pickup_faces(module, others, width, standoff)
    for f in free:
        ax = dock_axis(module, f, width)
        p = ax.body_pose(0.5 * width, standoff)
        if math.hypot(p.x - path_end[0], p.y - path_end[1]) <= PLANNED_PICKUP_TOLERANCE:
            return ax
    return None


def pickup_pose(module: Pose2D, helper: Pose2D, others: Sequence[tuple[float, float]],
                width: float, standoff: float) -> Pose2D:
    """The helper's pick-up pose (``world``): facing ``module`` on the side chosen by
    :func:`pickup_axis`, its TOP face ``standoff`` [m] from the module's face (centre
    distance ``width + standoff``)."""
    return pickup_axis(module, helper, others, width, standoff).body_pose(0.5 * width, standoff)


# --------------------------------------------------------------------------------------------
# go to a point / pose


def goto_point(pose: Pose2D, x: float, y: float, s: DockingSettings, speed: float,
               allow_reverse: bool = True) -> tuple[float, float]:
    """Drive the reference point towards ``(x, y)``: turn towards it, then drive and steer.

    The linear speed is ``min(speed, adjust_k_pos * d) * cos(alpha)`` (zero while the
    heading error ``alpha`` exceeds ``nav_turn_in_place_deg``); with ``allow_reverse`` a
    target behind the body is reached backwards.

    Returns:
        Unsaturated ``(v, w)``.
    """
    dx, dy = x - pose.x, y - pose.y
    d = math.hypot(dx, dy)
    if d < 1e-9:
        return 0.0, 0.0
    alpha = wrap_angle(math.atan2(dy, dx) - pose.yaw)
    sign = 1.0
    if allow_reverse and abs(alpha) > math.pi / 2:
        alpha = wrap_angle(alpha + math.pi)
        sign = -1.0
    v = min(speed, s.adjust_k_pos * d)
    turn_limit = math.radians(s.nav_turn_in_place_deg)
    v = v * max(0.0, math.cos(alpha)) if abs(alpha) < turn_limit else 0.0
    w = s.adjust_k_yaw * alpha
    # Close to the point the bearing is noise: stop steering at it -- unless the point is
    # so far off the heading that the body would not move at all (then turn towards it:
    # a zero command there would stop the body short of the point for good).
    if d < 2.0 * s.adjust_pos_tolerance and v != 0.0:
        w = 0.0
    return sign * v, w


#: Near the goal (within ``NEAR_FACTOR * adjust_pos_tolerance``) the regulator hops: it
#: turns in place to face the goal position (or to put it straight behind) once the
#: bearing is more than ``HOP_START_DEG`` off, until it is within ``HOP_END_DEG``, then
#: drives straight without steering.
NEAR_FACTOR = 2.5
HOP_START_DEG = 20.0
HOP_END_DEG = 5.0


class PoseRegulator:
    """Turn-drive-turn regulation to a pose, through optional pass-through waypoints.

    Sub-steps with hysteresis: DRIVE (towards the position; steering on the bearing) until
    the position error is below ``adjust_pos_tolerance``; then ALIGN (turn in place to the
    goal heading, correcting the along-heading error with ``v``). ALIGN falls back to DRIVE
    when the position error grows past 2.5 x tolerance, or when the heading is reached
    while the position is still outside the tolerance (an error across the heading, which
    turning in place cannot remove).

    Within 2.5 x tolerance of the goal DRIVE *hops*: turn in place until the goal position
    lies within 5 deg of straight ahead (or behind), then drive straight at it without
    steering (the bearing of a point a few mm away is mostly noise); a bearing more than
    20 deg off starts a new turn. A straight drive with the bearing within 20 deg misses
    the point by at most ``d sin 20 deg`` < tolerance, so the regulator cannot stall short
    of the goal with a zero command (as a plain "no steering near the goal" rule does when
    the goal lies beside the body).

    The state (waypoints still to pass, sub-step) is kept across calls, so a caller that
    pauses (stale poses) and resumes keeps its progress.
    """

    def __init__(self, goal: Pose2D, waypoints: Sequence[tuple[float, float]] = ()):
        self.goal = goal
        self.waypoints = list(waypoints)
        self.aligning = False
        self.hop_turning = False

    def done(self, pose: Pose2D, s: DockingSettings) -> bool:
        """True when position and heading are within the POSE_ADJUST tolerances."""
        return (not self.waypoints
                and pose.distance_to(self.goal) <= s.adjust_pos_tolerance
                and abs(wrap_angle(pose.yaw - self.goal.yaw))
                <= math.radians(s.adjust_yaw_tolerance_deg))

    def command(self, pose: Pose2D, s: DockingSettings, speed: float) -> tuple[float, float]:
        """Unsaturated ``(v, w)`` for the current (virtual) pose."""
        while self.waypoints:
            wx, wy = self.waypoints[0]
            if math.hypot(wx - pose.x, wy - pose.y) > s.waypoint_tolerance:
                return goto_point(pose, wx, wy, s, speed)
            self.waypoints.pop(0)
        g = self.goal
        d = pose.distance_to(g)
        tol = s.adjust_pos_tolerance
        e_yaw = wrap_angle(g.yaw - pose.yaw)
        if self.aligning:
            if d > NEAR_FACTOR * tol or (
                    d > tol and abs(e_yaw) <= math.radians(s.adjust_yaw_tolerance_deg)):
                self.aligning = False
        elif d <= tol:
            self.aligning = True
        if self.aligning:
            self.hop_turning = False
            along = (g.x - pose.x) * math.cos(pose.yaw) + (g.y - pose.y) * math.sin(pose.yaw)
            return s.adjust_k_pos * along, s.adjust_k_yaw * e_yaw
        if d >= NEAR_FACTOR * tol:
            self.hop_turning = False
            return goto_point(pose, g.x, g.y, s, speed)
        # near the goal: hop (turn in place to face it, then drive straight)
        alpha = wrap_angle(math.atan2(g.y - pose.y, g.x - pose.x) - pose.yaw)
        sign = 1.0
        if abs(alpha) > math.pi / 2:
            alpha, sign = wrap_angle(alpha + math.pi), -1.0
        if self.hop_turning:
            self.hop_turning = abs(alpha) > math.radians(HOP_END_DEG)
        else:
            self.hop_turning = abs(alpha) > math.radians(HOP_START_DEG)
        if self.hop_turning:
            return 0.0, s.adjust_k_yaw * alpha
        return sign * min(speed, s.adjust_k_pos * d) * math.cos(alpha), 0.0


# --------------------------------------------------------------------------------------------
# approach


def approach_command(body: Pose2D, face_offset: float, axis: DockAxis,
                     s: DockingSettings, speed: float,
                     max_heading_ref: float | None = None) -> tuple[float, float, bool]:
    """Straight approach along ``axis`` with lateral/heading correction (virtual frame).

    ``theta_d = h - atan(k_y * e_axle / d)``, ``w = k_theta * wrap(theta_d - theta)`` where
    ``e_axle`` is the lateral offset of the axle centre and ``d`` the face offset: the face's
    lateral error is ``e_axle + d sin(theta - h) ~ (1 - k_y) e_axle``, and ``e_axle`` decays
    with the distance travelled (decay length ``d / k_y``). Speed ``clip(k_gap * gap,
    approach_min_speed, speed)``, zero once ``gap <= approach_stop_gap``; inside
    ``approach_align_gap`` the body stops to turn in place when the heading is off by more
    than ``dock_yaw_tolerance_deg`` (turning in place leaves the axle lateral unchanged).

    ``max_heading_ref`` [rad] bounds ``|theta_d - h|`` (a lane between flush neighbours,
    issue 11: steering at a lateral error of a few mm with the full law turns the body by
    5-8 deg, and its corner presses into the neighbour it slides past; bounded, the
    lateral error decays more slowly and the capture's lateral range takes the rest).

    Returns:
        ``(v, w, holding)``: unsaturated command; ``holding`` is True when the body stopped
        at the stop gap (waiting for capture).
    """
    gap, _lat, yaw_err = axis.errors(body, face_offset)
    e_axle = axis.axle_lateral(body)
    ref = math.atan(s.approach_k_lateral * e_axle / abs(face_offset))
    if max_heading_ref is not None:
        ref = max(-max_heading_ref, min(max_heading_ref, ref))
    theta_d = axis.heading - ref
    w = s.approach_k_yaw * wrap_angle(theta_d - body.yaw)
    if gap <= s.approach_stop_gap:
        # At contact: keep the heading, do not push.
        return 0.0, s.approach_k_yaw * wrap_angle(axis.heading - body.yaw) * 0.5, True
    if gap <= s.approach_align_gap and abs(yaw_err) > math.radians(s.dock_yaw_tolerance_deg):
        return 0.0, s.approach_k_yaw * wrap_angle(axis.heading - body.yaw), False
    v = min(speed, max(s.approach_min_speed, s.approach_k_gap * gap))
    return v, w, False


# --------------------------------------------------------------------------------------------
# timed paths


@dataclass(frozen=True)
class TimedPath:
    """A module's planned path: waypoints ``(t [s], x [m], y [m])`` with non-decreasing t.

    The reference position at time ``t`` is the linear interpolation of the waypoints
    (before the first stamp: the first point; after the last: the last point).
    """

    points: tuple[tuple[float, float, float], ...]

    def __post_init__(self):
        if not self.points:
            raise InputError("points: a TimedPath needs at least one waypoint")
        for a, b in zip(self.points, self.points[1:]):
            if b[0] < a[0]:
                raise InputError(f"points: stamps decrease ({a[0]} -> {b[0]})")

    @classmethod
    def from_poses(cls, poses: Sequence[tuple[float, float, float]], t_now: float,
                   nominal_speed: float) -> "TimedPath":
        """Build from ``(stamp, x, y)`` samples; when the stamps are not strictly increasing
        somewhere (e.g. all zero: an untimed path) timing is by distance at ``nominal_speed``
        from ``t_now``.

        Raises:
            InputError: empty ``poses`` or non-positive ``nominal_speed``.
        """
        if not poses:
            raise InputError("poses: empty path")
        if nominal_speed <= 0:
            raise InputError(f"nominal_speed: {nominal_speed} must be > 0")
        stamps = [p[0] for p in poses]
        timed = all(b >= a for a, b in zip(stamps, stamps[1:])) and stamps[-1] > 0 and (
            len(stamps) == 1 or stamps[-1] > stamps[0])
        if timed:
            return cls(tuple((float(t), float(x), float(y)) for t, x, y in poses))
        out, t = [], t_now
        prev = None
        for _, x, y in poses:
            if prev is not None:
                t += math.hypot(x - prev[0], y - prev[1]) / nominal_speed
            out.append((t, float(x), float(y)))
            prev = (x, y)
        return cls(tuple(out))

    @property
    def end_time(self) -> float:
        return self.points[-1][0]

    def stands(self, tol: float = 1e-3) -> bool:
        """True when every waypoint lies within ``tol`` [m] of the first (a wait)."""
        x0, y0 = self.points[0][1], self.points[0][2]
        return all(math.hypot(x - x0, y - y0) <= tol for _t, x, y in self.points)

    def leaves_at(self, tol: float = 1e-3) -> float | None:
        """The stamp [s] at which the path leaves its first point: the last waypoint's
        before the first one farther than ``tol`` [m] from it; None when it never leaves
        (:meth:`stands`)."""
        x0, y0 = self.points[0][1], self.points[0][2]
        for (t, _x, _y), (_t, x, y) in zip(self.points, self.points[1:]):
            if math.hypot(x - x0, y - y0) > tol:
                return t
        return None

    @property
    def end(self) -> tuple[float, float]:
        return self.points[-1][1], self.points[-1][2]

    def reference(self, t: float) -> tuple[float, float]:
        """Reference position [m] at time ``t`` [s]."""
        pts = self.points
        if t <= pts[0][0]:
            return pts[0][1], pts[0][2]
        if t >= pts[-1][0]:
            return pts[-1][1], pts[-1][2]
        i = bisect.bisect_right([p[0] for p in pts], t)
        t0, x0, y0 = pts[i - 1]
        t1, x1, y1 = pts[i]
        if t1 <= t0:
            return x1, y1
        a = (t - t0) / (t1 - t0)
        return x0 + a * (x1 - x0), y0 + a * (y1 - y0)


def track_timed_path(pose: Pose2D, path: TimedPath, t: float, s: DockingSettings,
                     speed: float) -> tuple[float, float, bool]:
    """Timed pure pursuit: steer the reference point to the path position at ``t + lookahead``.

    The module drives forward only on the path (turning in place when the carrot is more
    than ``nav_turn_in_place_deg`` off), at
    ``min(speed, max(nav_approach_min_speed, nav_k_dist * distance))``; it stops (waits)
    when it is within ``nav_hold_tolerance`` of the carrot, which happens where the timed
    path dwells. The grid the navigation plans on leaves two modules on adjacent cells
    (0.12 m) 7 mm more than two turning in place need (``w sqrt 2``), 3.4 mm each:
    stopping at half the 20 mm goal tolerance, as before, a module stood ~9 mm short of its
    cell and two neighbours turning onto their final legs touched (issue 16, bench_scale
    random 30 seed 9, stage 1: staging m11 and m16, 0.111 m apart, contact 0.16 mm). The
    speed floor makes the last centimetres linear instead of exponential (``nav_k_dist``
    1/s: 50 mm of lag took ~2.7 s to shrink to 3.4 mm, longer than a one-step wait).

    Closer than ``nav_turn_min_distance`` to the carrot the module does not turn: it
    creeps forward or back along its heading to the carrot's projection (``w = 0``). Where
    the path dwells the carrot stands still, and turning in place to face a point 2-3 mm
    to the side (the bearing of mocap noise and tracking residue) swung a staging module
    through 80 degrees in small bites, into its neighbour (issue 16, random 100 seed 0:
    m63 and m76, 0.105 m apart).

    Returns:
        ``(v, w, finished)``; ``finished`` when ``t`` is past the last stamp and the module
        is within ``nav_goal_tolerance`` of the path end.
    """
    cx, cy = path.reference(t + s.nav_lookahead_s)
    ex, ey = path.end
    finished = t >= path.end_time and math.hypot(ex - pose.x, ey - pose.y) <= s.nav_goal_tolerance
    if finished:
        return 0.0, 0.0, True
    dx, dy = cx - pose.x, cy - pose.y
    d = math.hypot(dx, dy)
    if d < s.nav_hold_tolerance:
        return 0.0, 0.0, False
    if d < s.nav_turn_min_distance:
        # a few mm off: creep along the heading, do not turn to face the point
        along = dx * math.cos(pose.yaw) + dy * math.sin(pose.yaw)
        if abs(along) < s.nav_hold_tolerance:
            return 0.0, 0.0, False
        return math.copysign(min(speed, max(s.nav_approach_min_speed,
                                            s.nav_k_dist * abs(along))), along), 0.0, False
    alpha = wrap_angle(math.atan2(dy, dx) - pose.yaw)
    w = s.nav_k_heading * alpha
    if abs(alpha) > math.radians(s.nav_turn_in_place_deg):
        return 0.0, w, False
    v = min(speed, max(s.nav_approach_min_speed, s.nav_k_dist * d)) * math.cos(alpha)
    return v, w, False


# --------------------------------------------------------------------------------------------
# detours around modules for direct moves


#: a route of :func:`detour_waypoints`' arcs is kept when each of its legs passes every
#: obstacle at this fraction of the distance the obstacle is kept at (or farther); centres
#: 0.9 x 0.13 m apart still leave two module squares clear of each other in any heading
ARC_ROUTE_SLACK = 0.9
#: cell size [m] of :func:`grid_detour`'s search, and its most cells along a side (a
#: move longer than ~1.3 m gets coarser cells: a search of at most 40,000 cells)
DETOUR_GRID = 0.01
GRID_CELLS_MAX = 200
#: centres this far apart [m] keep two module squares apart whatever their headings, with
#: :func:`grid_detour`'s 3 % of slack too (the squares' circumcircles: sqrt(2) x width)
SQUARES_APART = 1.06 * math.sqrt(2.0) * MODULE_WIDTH


def detour_waypoints(start: tuple[float, float], goal: tuple[float, float],
                     obstacles: Sequence[tuple[float, float]], clearance: float,
                     max_step_deg: float = 50.0, touch: float = SQUARES_APART,
                     corner_cut: float = 0.0) -> list[tuple[float, float]]:
    """Pass-through points that keep a straight move ``start -> goal`` (``world`` [m])
    ``clearance`` [m] away from circular obstacles (centres [m]).

    Obstacles that contain the start or the goal are ignored and the others kept at most as
    close as the start and the goal lie to them (:func:`detour_discs`). First the arcs
    round each blocking circle, the shorter way (:func:`_arc_detour`); where their route
    leaves an obstacle closer than ``ARC_ROUTE_SLACK`` of its distance (arcs round one
    module of a cluster run into the next, and chords between two obstacles' arcs cut
    corners: bench pick-ups in clutter drove the helper into the module it fetched or the
    parent, and there it pushed, blocked), a grid route that keeps every distance
    (:func:`grid_detour`), each disc grown by ``corner_cut`` [m] (how far the body's
    regulator cuts a corner: its ``waypoint_tolerance``); with none, one that keeps every
    centre ``touch`` [m] away at least (the body's contact distance with a margin:
    ``SQUARES_APART`` for a module, more for a carried pair), the corner cut added if
    there is room. Of the arcs' route and the
    grid's, the one that keeps the larger fraction of the distances. A local fallback for
    moves without a planned path; the grid search costs up to ~0.1 s.

    Returns:
        The waypoints in order (not including ``start`` and ``goal``); the arcs' route
        when no grid route exists either (the body is walled in).
    """
    wps = _arc_detour(start, goal, obstacles, clearance, max_step_deg)
    discs = detour_discs(start, goal, obstacles, clearance)
    arcs_kept = route_clearance([start, *wps, goal], discs)
    if arcs_kept >= ARC_ROUTE_SLACK:
        return wps
    grid = None
    # the clearance, else the body kept off every module, the corner cut allowed for if
    # there is room for it
    for grow, cap in ((corner_cut, math.inf), (corner_cut, touch), (0.0, touch)):
        grid = grid_detour(start, goal, [(x, y, min(r, cap) + grow) for x, y, r in discs])
        if grid is not None:
            break
    if grid is None or route_clearance([start, *grid, goal], discs) < arcs_kept:
        return wps
    return grid


def detour_discs(start: tuple[float, float], goal: tuple[float, float],
                 obstacles: Sequence[tuple[float, float]], clearance: float
                 ) -> list[tuple[float, float, float]]:
    """The discs ``(x, y, r)`` [m] a detour from ``start`` to ``goal`` keeps out of:
    every obstacle centre at least ``0.8 clearance`` from both ends (one nearer is the
    one the body touches or must reach: ignored), with ``r = min(clearance, 0.97 x`` its
    distance to either end``)``; none with ``r = 0`` (a clearance of 0)."""
    (sx, sy), (gx, gy) = start, goal
    out = []
    for ox, oy in obstacles:
        ds, dg = math.hypot(sx - ox, sy - oy), math.hypot(gx - ox, gy - oy)
        r = min(clearance, 0.97 * ds, 0.97 * dg)
        if min(ds, dg) >= 0.8 * clearance and r > 0.0:
            out.append((ox, oy, r))
    return out


def route_clearance(points: Sequence[tuple[float, float]],
                    discs: Sequence[tuple[float, float, float]]) -> float:
    """The smallest ratio, over the legs of the polyline ``points`` and the ``discs``
    ``(x, y, r)`` (``r > 0``), of a leg's distance from a disc's centre to its radius
    (>= 1: the route keeps out of every disc; ``inf`` without discs or legs)."""
    worst = math.inf
    for a, b in zip(points, points[1:]):
        for ox, oy, r in discs:
            worst = min(worst, segment_projection((ox, oy), a, b)[1] / r)
    return worst


def grid_detour(start: tuple[float, float], goal: tuple[float, float],
                discs: Sequence[tuple[float, float, float]], cell: float = DETOUR_GRID
                ) -> list[tuple[float, float]] | None:
    """A short route from ``start`` to ``goal`` (``world`` [m]) that keeps out of the
    ``discs`` ``(x, y, r)`` [m] (``r > 0``), as waypoints (ends not included), or None
    when the search window (round the two ends, a module width and 2.5 x the largest
    radius wide, 0.35 m at least) has none.

    The shortest path by Dijkstra (:func:`scipy.sparse.csgraph.dijkstra`) on the
    8-connected grid of ``cell`` [m] (coarser for a window wider than ``GRID_CELLS_MAX``
    cells) whose cell centres lie outside every disc, then shortened by line of sight:
    from each kept point the farthest later point of the route whose straight leg stays
    out of every disc (to 0.97 of its radius: the grid's own legs pass a cell's
    half-diagonal closer). An empty list: the straight move keeps out of every disc.
    """
    if route_clearance([start, goal], discs) >= 1.0:
        return []
    margin = max(0.35, MODULE_WIDTH + 2.5 * max(r for *_, r in discs))
    xs, ys = (start[0], goal[0]), (start[1], goal[1])
    x0, y0 = min(xs) - margin, min(ys) - margin
    cell = max(cell, (max(max(xs) - x0, max(ys) - y0) + margin) / GRID_CELLS_MAX)
    nx = int(math.ceil((max(xs) + margin - x0) / cell)) + 1
    ny = int(math.ceil((max(ys) + margin - y0) / cell)) + 1
    gx, gy = np.meshgrid(x0 + cell * np.arange(nx), y0 + cell * np.arange(ny), indexing="ij")
    free = np.ones((nx, ny), dtype=bool)
    for ox, oy, r in discs:
        free &= np.hypot(gx - ox, gy - oy) >= r

    def index(p: tuple[float, float]) -> tuple[int, int]:
        return (min(nx - 1, max(0, round((p[0] - x0) / cell))),
                min(ny - 1, max(0, round((p[1] - y0) / cell))))

    i0, i1 = index(start), index(goal)
    free[i0] = free[i1] = True
    ids = np.arange(nx * ny).reshape(nx, ny)
    rows, cols, cost = [], [], []

    def shifted(d: int, size: int) -> tuple[slice, slice]:
        # the cells k and k + d along one axis, both inside the grid
        return slice(max(0, -d), size - max(0, d)), slice(max(0, d), size + min(0, d))

    for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
        (ax_, bx_), (ay_, by_) = shifted(dx, nx), shifted(dy, ny)
        both = free[ax_, ay_] & free[bx_, by_]
        ia, ib = ids[ax_, ay_][both], ids[bx_, by_][both]
        rows += [ia, ib]
        cols += [ib, ia]
        cost += [np.full(2 * ia.size, cell * math.hypot(dx, dy))]
    n = nx * ny
    graph = coo_matrix((np.concatenate(cost), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(n, n)).tocsr()
    src, dst = int(ids[i0]), int(ids[i1])
    dist, pred = dijkstra(graph, indices=src, return_predecessors=True)
    if not math.isfinite(dist[dst]):
        return None
    chain = [dst]
    while chain[-1] != src:
        chain.append(int(pred[chain[-1]]))
    chain.reverse()
    pts = np.array([start] + [(gx.flat[k], gy.flat[k]) for k in chain[1:-1]] + [goal])
    centres = np.array([(ox, oy) for ox, oy, _ in discs])
    soft = 0.97 * np.array([r for *_, r in discs])
    out: list[tuple[float, float]] = []
    i = 0
    while i < len(pts) - 1:
        # the legs pts[i] -> pts[j] of every later j at once: (j, disc) distances
        d = pts[i + 1:] - pts[i]
        rel = centres[None, :, :] - pts[i][None, None, :]
        l2 = np.maximum((d * d).sum(axis=1), 1e-12)[:, None]
        t = np.clip((rel * d[:, None, :]).sum(axis=2) / l2, 0.0, 1.0)
        gap = np.hypot(rel[..., 0] - t * d[:, None, 0], rel[..., 1] - t * d[:, None, 1])
        ok = np.flatnonzero((gap >= soft[None, :]).all(axis=1))
        i = i + 1 + (int(ok[-1]) if ok.size else 0)
        out.append((float(pts[i][0]), float(pts[i][1])))
    return out[:-1]


def _arc_detour(start: tuple[float, float], goal: tuple[float, float],
                obstacles: Sequence[tuple[float, float]], clearance: float,
                max_step_deg: float = 50.0, depth: int = 3) -> list[tuple[float, float]]:
    """:func:`detour_waypoints`' first try: round each blocking circle the shorter way
    (recursion on the sub-segments handles a few obstacles)."""
    sx, sy = start
    gx, gy = goal
    r_wp = clearance * 1.08 / math.cos(math.radians(max_step_deg) / 2)
    best = None
    # an obstacle nearer than the clearance to the start or the goal is skirted as closely
    # as those allow (or ignored when the body is already touching it)
    for ox, oy, c_eff in detour_discs(start, goal, obstacles, clearance):
        a, d = segment_projection((ox, oy), start, goal)
        if d < c_eff and (best is None or a < best[0]):
            best = (a, ox, oy)
    if best is None or depth <= 0:
        return []
    _, ox, oy = best
    a0 = math.atan2(sy - oy, sx - ox)
    a1 = math.atan2(gy - oy, gx - ox)
    others = [o for o in obstacles if o != (ox, oy)]
    short = wrap_angle(a1 - a0)
    arc = []
    # go round the shorter way unless that arc runs into another obstacle; when both ways
    # do (a cluster: the target with a module flush beside it), go round wider
    found = False
    for scale in (1.0, 1.5, 2.0, 2.5):
        r = r_wp * scale
        for da in (short, short - math.copysign(2.0 * math.pi, short)):
            n = max(1, int(math.ceil(abs(da) / math.radians(max_step_deg))))
            arc = [(ox + r * math.cos(a0 + da * k / n), oy + r * math.sin(a0 + da * k / n))
                   for k in range(0, n + 1)]
            if all(math.hypot(px - qx, py - qy) >= 0.9 * clearance
                   for px, py in arc[1:] for qx, qy in others):
                found = True
                break
        if found:
            break
    if not found:
        n = max(1, int(math.ceil(abs(short) / math.radians(max_step_deg))))
        arc = [(ox + r_wp * math.cos(a0 + short * k / n),
                oy + r_wp * math.sin(a0 + short * k / n)) for k in range(0, n + 1)]
    out = _arc_detour(start, arc[0], others, clearance, max_step_deg, depth - 1)
    out += arc
    out += _arc_detour(arc[-1], goal, others, clearance, max_step_deg, depth - 1)
    return out
