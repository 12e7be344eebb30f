"""Differential-drive kinematics of the simulated modules, vectorised over modules (no ROS).

Pure functions of numpy arrays; :class:`~.world.SimWorld` caches their results between
steps, :func:`~.reference.reference_step` recomputes them every step. Rows are modules in
:meth:`SimWorld.modules` order; wheel columns are (left, right) [rad/s].
"""
from __future__ import annotations

import math

import numpy as np

from smores_assembly.geometry import wrap_angle
from smores_assembly.sim.model import SimParams


def wheel_targets(cmd: np.ndarray, driving: np.ndarray, p: SimParams) -> np.ndarray:
    """Wheel-speed targets (N, 2) [rad/s] of body twists ``cmd`` (N, 2) = (v [m/s],
    w [rad/s]): ``wl = (v - w track/2) / r``, ``wr = (v + w track/2) / r``; zero where not
    ``driving``; a pair whose faster wheel exceeds ``wheel_speed_max`` is scaled down by one
    ratio (curvature kept).

    Then the wheel effects of real modules, per wheel: a wheel commanded slower than
    ``wheel_deadband`` [m/s at the rim, ``|w_i| r``] does not turn (target 0); a turning
    wheel runs at ``wheel_gain_left`` / ``wheel_gain_right`` times its command.
    """
    r, half_track = p.wheel_radius, 0.5 * p.track
    target = np.empty((len(cmd), 2))
    target[:, 0] = (cmd[:, 0] - cmd[:, 1] * half_track) / r
    target[:, 1] = (cmd[:, 0] + cmd[:, 1] * half_track) / r
    target[~driving] = 0.0
    peak = np.abs(target).max(axis=1)
    over = peak > p.wheel_speed_max
    if over.any():
        target[over] *= (p.wheel_speed_max / peak[over])[:, None]
    if p.wheel_deadband > 0.0:
        target[np.abs(target) * r < p.wheel_deadband] = 0.0
    if p.wheel_gain_left != 1.0 or p.wheel_gain_right != 1.0:
        target *= np.array([p.wheel_gain_left, p.wheel_gain_right])
    return target


def effects_key(p: SimParams) -> tuple:
    """The parameters :func:`wheel_targets` and :func:`arc_terms` depend on (cache key)."""
    return (p.wheel_radius, p.track, p.wheel_speed_max, p.wheel_deadband,
            p.wheel_gain_left, p.wheel_gain_right, p.wheel_slip)


def ramp_wheels(old: np.ndarray, target: np.ndarray, accel_max: float,
                dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Linear wheel ramps towards ``target`` at ``accel_max`` [rad/s^2] for the wheel with
    the larger change (both wheels of a module scaled by one ratio).

    Returns ``(new, mean)``: wheel speeds at the end of the step and their mean over the
    step (a ramp of duration tau <= dt then constant speed: ``old + delta (1 - tau/(2 dt))``).
    """
    delta = target - old
    dpeak = np.abs(delta).max(axis=1)
    amax = accel_max * dt
    fast = dpeak > amax
    if fast.any():
        delta[fast] *= (amax / dpeak[fast])[:, None]
    tau_frac = np.minimum(dpeak / amax, 1.0)
    mean = old + delta * (1.0 - 0.5 * tau_frac)[:, None]
    return old + delta, mean


def arc_terms(mean: np.ndarray, driving: np.ndarray, p: SimParams, dt: float):
    """Per-module terms of the exact arc driven in ``dt`` with mean wheel speeds ``mean``
    (N, 2): ``(yaw change, half yaw change, chord length [m], moving mask)``, all None when
    no module moves. The ground moves under each wheel at ``(1 - wheel_slip) r w_i``."""
    r = p.wheel_radius * (1.0 - p.wheel_slip)
    mean = np.where(driving[:, None], mean, 0.0)
    v = 0.5 * r * (mean[:, 0] + mean[:, 1])
    om = r * (mean[:, 1] - mean[:, 0]) / p.track
    moving = driving & ((v != 0) | (om != 0))
    if not moving.any():
        return None, None, None, None
    dyaw = om * dt
    half_turn = 0.5 * dyaw
    chord = v * dt * np.sinc(half_turn / math.pi)
    return dyaw, half_turn, chord, moving


def arc_poses(pose: np.ndarray, dyaw: np.ndarray, half_turn: np.ndarray,
              chord: np.ndarray) -> np.ndarray:
    """Poses (N, 3) after driving the arcs of :func:`arc_terms` from ``pose`` (N, 3)."""
    prop = pose.copy()
    heading = pose[:, 2] + half_turn
    prop[:, 0] += chord * np.cos(heading)
    prop[:, 1] += chord * np.sin(heading)
    prop[:, 2] = (pose[:, 2] + dyaw + math.pi) % (2 * math.pi) - math.pi
    return prop


def carried_pose(helper_pose, rel: float, width: float) -> tuple[float, float, float]:
    """Pose of a module carried one ``width`` ahead of a helper at ``helper_pose``, turned
    by ``rel`` [rad] relative to the helper's heading."""
    c, s = math.cos(helper_pose[2]), math.sin(helper_pose[2])
    return (helper_pose[0] + c * width, helper_pose[1] + s * width,
            wrap_angle(helper_pose[2] + rel))


def carry_turn(rel: float, goal: float, rate: float, dt: float) -> float:
    """Relative yaw of a carried module after turning from ``rel`` towards ``goal`` at
    ``rate`` [rad/s] for ``dt`` [s] (shortest way)."""
    step_max = rate * dt
    d = wrap_angle(goal - rel)
    return rel + max(-step_max, min(step_max, d))
