"""Docking benchmark: closed-loop DockingTask on the simulated world under mocap noise.

Run ``python -m bench.bench_docking [--trials 100] [--seed 1] [--noise-mm 1.0]
[--backend kinematic|mujoco] [--cases 0,1,...]``: for each
target face of a fixed parent module (TOP, BOTTOM, LEFT, RIGHT, each with a child face, and
helper-carried wheel-face docks) it docks a module from ``--trials`` random start poses
(within 0.5 m of its goal, any heading) and prints the success rate, the time per dock and
the final errors from the simulator's ground truth (face gap mm, lateral mm, yaw deg:
median / p95 / max). Success = connection formed, final face-centre gap <= 4 mm and yaw
error <= 2 deg.

The same harness (:func:`run_trial`) drives the core closed-loop tests.
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field

from smores_assembly.docking.control import DockingSettings, TimedPath
from smores_assembly.docking.task import (DockingSpec, DockingTask, ErrorCode, Phase,
                                          PoseSample, dock_axis, face_errors)
from smores_assembly.vocabulary import HelperOp
from smores_assembly.geometry import Face, Pose2D, child_pose, face_center, wrap_angle
from smores_assembly.sim import Connection, SimError, SimParams, square_overlap
from smores_assembly.sim.backend import BACKENDS, make_world

PARENT = "p"
MODULE = "m"
HELPER = "h"

#: (parent face, child face, helper?) cases: one child face per parent face, plus wheel faces.
CASES = [
    (Face.TOP, Face.TOP, False),
    (Face.BOTTOM, Face.BOTTOM, False),
    (Face.LEFT, Face.TOP, False),
    (Face.RIGHT, Face.BOTTOM, False),
    (Face.LEFT, Face.LEFT, True),
    (Face.TOP, Face.RIGHT, True),
]


@dataclass
class TrialResult:
    """Outcome of one closed-loop docking trial (errors from ground truth)."""

    phase: Phase
    connected: bool
    time_s: float
    retries: int
    gap_mm: float            # distance between the two face centres
    axial_gap_mm: float
    lateral_mm: float
    yaw_deg: float
    collisions: int
    message: str = ""
    max_motion_while_stale_m: float = 0.0
    paused_seen: bool = False
    sim_errors: list = field(default_factory=list)
    capture_gap_mm: float = math.nan      # ground truth (face centres, along the axis) in
                                          # the step before the capture snapped the faces
    capture_lateral_mm: float = math.nan
    capture_yaw_deg: float = math.nan
    max_cmd_while_paused: float = 0.0
    messages: set = field(default_factory=set)
    error_code: ErrorCode = ErrorCode.NONE
    helper_carries: str | None = None
    final_poses: dict = field(default_factory=dict)
    durations: dict = field(default_factory=dict)
    max_gap_mm: float = math.nan          # largest ground-truth face gap along the axis
    travel_m: float = 0.0                 # path length of the docking module (ground truth)
    raised_to_min_speed: bool = False     # the task noticed a stall and raised its commands
    # what the controller's status reports once DOCKED: its own face errors at capture
    reported_capture: tuple = (math.nan, math.nan, math.nan)   # gap mm, lateral mm, yaw deg
    # deepest ground-truth overlap [mm] of the docking module or the helper with any
    # neighbour (``neighbours``), by the separating-axis test on the world's poses at every
    # step, independent of the world's own collision events (<= 0: apart or flush)
    neighbour_overlap_mm: float = -math.inf
    # steps in which the docking module or the helper touched a neighbour or the parent
    # (squares closer than 1 mm: the world blocks a move before it overlaps) other than
    # face to face (relative heading more than 3 deg off a multiple of 90 deg): a corner
    # pressed against it (ground truth, separating-axis test)
    neighbour_corner_touches: int = 0

    @property
    def success(self) -> bool:
        """Docked and connected, final face gap <= 4 mm and yaw error <= 2 deg, and the
        moving face was already within 2 deg and 4 mm laterally in the step before the
        magnets captured it (the snap does not hide a poor approach)."""
        return (self.phase is Phase.DOCKED and self.connected and self.gap_mm <= 4.0
                and abs(self.yaw_deg) <= 2.0 and abs(self.capture_lateral_mm) <= 4.0
                and abs(self.capture_yaw_deg) <= 2.0)


def random_start(rng: random.Random, goal: Pose2D, avoid: list[Pose2D], radius: float = 0.5,
                 clear: float = 0.01, width: float = 0.08) -> Pose2D:
    """A pose uniformly within ``radius`` of ``goal`` (any heading) whose square is at least
    ``clear`` [m] away from every pose in ``avoid``."""
    while True:
        r = radius * math.sqrt(rng.random())
        a = rng.uniform(-math.pi, math.pi)
        p = Pose2D(goal.x + r * math.cos(a), goal.y + r * math.sin(a),
                   rng.uniform(-math.pi, math.pi))
        if all(square_overlap(p.as_tuple(), q.as_tuple(), width) < -clear for q in avoid):
            return p


def run_trial(parent_face: Face, child_face: Face, seed: int, use_helper: bool = False,
              noise_xy: float = 0.001, noise_yaw: float = 0.01, dt: float = 0.02,
              t_max: float = 150.0, settings: DockingSettings | None = None,
              dropout: tuple[float, float] | None = None, start: Pose2D | None = None,
              helper_start: Pose2D | None = None, trace: list | None = None,
              dropout_phase: tuple[Phase, float] | None = None,
              path: TimedPath | None = None, parent_magnets: bool = True,
              kick_parent: tuple[Phase, float, float] | None = None,
              latency: float = 0.0, backend: str = "kinematic",
              sim_params: SimParams | None = None,
              neighbours: dict[str, Pose2D] | None = None,
              carried: bool = False) -> TrialResult:
    """Dock module ``m`` onto ``parent_face`` of a fixed module ``p`` at the origin.

    Args:
        parent_face, child_face: the edge.
        seed: seeds the start poses and the noise.
        use_helper: a helping module ``h`` carries ``m`` (wheel-face docks).
        noise_xy: std of the Gaussian mocap noise on x and y [m]; ``noise_yaw`` on yaw [rad].
        dt: control and simulation period [s].
        t_max: simulated time budget [s].
        dropout: ``(t0, t1)``: the driven body's track is lost (tracked=False) in [t0, t1).
        start, helper_start: fixed start poses instead of random ones.
        trace: if a list, ``(t, (phase, sub-step), poses, message)`` is appended at changes.
        dropout_phase: ``(phase, length)``: the track is lost for ``length`` s from the
            moment the task first enters ``phase``.
        path: a timed path handed to the task at the start.
        parent_magnets: False keeps the parent's magnets off (no capture can happen).
        kick_parent: ``(phase, v, duration)``: the parent drives at ``v`` for ``duration`` s
            when the task first enters ``phase`` (the target moves).
        latency: mocap latency [s]: the task sees samples that old (stamped with their
            capture time).
        backend: the world's physics, ``kinematic`` or ``mujoco``
            (:func:`smores_assembly.sim.backend.make_world`).
        sim_params: the kinematic world's parameters (e.g. its wheel deadband, gains and
            slip); defaults when None.
        neighbours: further modules standing still (e.g. flush beside the approach lane:
            a corner or a slot), passed to the task as obstacles; random starts avoid them.
        carried: (with ``use_helper`` and ``helper_start``) the helper starts with the
            module already lifted, as the stack hands the pair over after the lift: the
            world's LIFT at t = 0 (``start`` is ignored: the module stands at the lift gap
            in front of the helper), the task in NAVIGATE with no path (the navigation's
            empty path: the pair stands in its goal cell), so POSE_ADJUST starts from
            ``helper_start``.

    Returns:
        A :class:`TrialResult` (errors from the world's ground truth).
    """
    rng = random.Random(seed)
    s = settings or DockingSettings()
    w = s.module_width
    parent = Pose2D(0.0, 0.0, 0.0)
    goal = child_pose(parent, parent_face, child_face, w)
    others = dict(neighbours or {})
    if carried:
        if not (use_helper and helper_start is not None):
            raise ValueError("carried: needs use_helper and helper_start")
        start = helper_start.compose(w + 0.006, 0.0)
    if start is None:
        start = random_start(rng, goal, [parent, *others.values()])
    poses = {PARENT: parent, MODULE: start, **others}
    helpers = ()
    if use_helper:
        if helper_start is None:
            helper_start = random_start(rng, goal, [parent, start, *others.values()])
        poses[HELPER] = helper_start
        helpers = (HELPER,)
    world = make_world(backend, poses, sim_params, helpers=helpers)
    spec = DockingSpec(MODULE, PARENT, parent_face, child_face, HELPER if use_helper else "")
    task = DockingTask(spec, s)
    want = Connection.make(MODULE, child_face, PARENT, parent_face)
    if carried:
        world.helper_command(HELPER, HelperOp.LIFT, MODULE, task.ctx.carry_yaw)
        for _ in range(int(round(3.0 / dt))):   # the module turns to its carried pose
            world.step(dt)                      # (the trial's clock starts at 3 s)
        held = helper_start.compose(w, 0.0, task.ctx.carry_yaw)
        if (world.pose(MODULE).distance_to(held) > 0.002
                or abs(wrap_angle(world.pose(MODULE).yaw - held.yaw)) > 0.01):
            raise ValueError(f"carried: the module did not reach its carried pose {held} "
                             f"(blocked at {world.pose(MODULE)})")
        task.ctx.lifted = True
        task._go(Phase.NAVIGATE)   # the pick-up is done: the stack's hand-over
        task.path_unavailable()
    driven = HELPER if use_helper else MODULE
    collisions = 0
    sim_errors: list[str] = []
    connected = False
    stale_motion = 0.0
    paused_seen = False
    stale_ref: Pose2D | None = None
    n = int(round(t_max / dt))
    max_cmd_paused = 0.0
    messages: set[str] = set()
    kick_until = None
    capture = None
    prev_poses = world.poses()
    max_gap = -math.inf
    travel = 0.0
    overlap = -math.inf
    corner_touches = 0
    movers = [MODULE, HELPER] if use_helper else [MODULE]
    queue: list[dict] = []
    for _ in range(n):
        t = world.t
        if dropout_phase and dropout is None and task.phase is dropout_phase[0]:
            dropout = (t, t + dropout_phase[1])
        if kick_parent and kick_until is None and task.phase is kick_parent[0]:
            kick_until = t + kick_parent[2]
        fresh = {}
        for mid, p in world.poses().items():
            tracked = not (dropout and mid == driven and dropout[0] <= t < dropout[1])
            z = Pose2D(p.x + rng.gauss(0, noise_xy), p.y + rng.gauss(0, noise_xy),
                       wrap_angle(p.yaw + rng.gauss(0, noise_yaw)))
            fresh[mid] = PoseSample(z, t, tracked)
        queue.append(fresh)
        while len(queue) > 1 and queue[1][MODULE].stamp <= t - latency + 1e-9:
            queue.pop(0)
        samples = queue[0]
        out = task.tick(t, samples, connected, path if t == 0.0 else None,
                        [(samples[o].pose.x, samples[o].pose.y) for o in others])
        if out.status.message:
            messages.add(out.status.message)
        if trace is not None:
            key = (out.status.phase, task.step_name)
            if not trace or trace[-1][1] != key:
                trace.append((round(t, 2), key, world.poses(), out.status.message))
        for mid, (v, om) in out.cmd.items():
            world.set_cmd_vel(mid, v, om)
            if out.status.phase is Phase.PAUSED:
                max_cmd_paused = max(max_cmd_paused, abs(v), abs(om))
        if kick_until is not None:
            world.set_cmd_vel(PARENT, kick_parent[1] if t < kick_until else 0.0, 0.0)
        mags: dict[str, set] = {PARENT: set(), MODULE: set()}
        for c in world.connections():
            mags.setdefault(c.module_a, set()).add(c.face_a)
            mags.setdefault(c.module_b, set()).add(c.face_b)
        for mid, faces in out.magnets.items():
            mags.setdefault(mid, set()).update(faces)
        if not parent_magnets:
            mags[PARENT] = set()
        for mid, faces in mags.items():
            world.set_magnets(mid, faces)
        for hc in out.helper_commands:
            try:
                world.helper_command(hc.helper, hc.command, hc.module, hc.carry_yaw)
            except SimError as exc:
                sim_errors.append(str(exc))
        if out.status.phase is Phase.PAUSED:
            paused_seen = True
            # allow the wheels' deceleration ramp (< 0.1 s) before measuring the stop
            if stale_ref is None and dropout and t >= dropout[0] + 0.2 - 1e-9:
                stale_ref = world.pose(driven)
        else:
            stale_ref = None
        for ev in world.step(dt):
            if ev.kind == "collision":
                collisions += 1
        if stale_ref is not None:
            stale_motion = max(stale_motion, world.pose(driven).distance_to(stale_ref))
        connected = want in world.connections()
        gt = world.poses()
        touched = False
        for a in movers:
            for b in (*others, PARENT):
                d = square_overlap(gt[a].as_tuple(), gt[b].as_tuple(), w)
                if b != PARENT:
                    overlap = max(overlap, d)
                rel = (gt[a].yaw - gt[b].yaw) % (0.5 * math.pi)
                if d > -1e-3 and min(rel, 0.5 * math.pi - rel) > math.radians(3.0):
                    touched = True
        corner_touches += touched
        cur = world.pose(MODULE)
        travel += cur.distance_to(prev_poses[MODULE])
        max_gap = max(max_gap, face_errors(cur, child_face,
                                           dock_axis(world.pose(PARENT), parent_face, w), w)[0])
        if connected and capture is None:
            # ground truth of the moving face just before the magnets snapped it flush
            ax0 = dock_axis(prev_poses[PARENT], parent_face, w)
            capture = face_errors(prev_poses[MODULE], child_face, ax0, w)
        prev_poses = world.poses()
        if task.done:
            break
    # a few more steps: the helper backs off after the hand-over; on a physics backend the
    # weld pulls the captured faces flush over a few steps
    if task.phase is Phase.DOCKED and (use_helper or backend != "kinematic"):
        for _ in range(int((3.0 if use_helper else 0.5) / dt)):
            samples = {mid: PoseSample(p, world.t) for mid, p in world.poses().items()}
            out = task.tick(world.t, samples, True)
            for mid, (v, om) in out.cmd.items():
                world.set_cmd_vel(mid, v, om)
            world.step(dt)
    st = task.status()
    gt_parent, gt_mod = world.pose(PARENT), world.pose(MODULE)
    ax = dock_axis(gt_parent, parent_face, w)
    gap, lat, yaw = face_errors(gt_mod, child_face, ax, w)
    fc = face_center(gt_mod, child_face, w)
    fp = face_center(gt_parent, parent_face, w)
    cap = capture if capture is not None else (math.nan, math.nan, math.nan)
    return TrialResult(task.phase, want in world.connections(), world.t, task.retries,
                       math.hypot(fc[0] - fp[0], fc[1] - fp[1]) * 1e3, gap * 1e3, lat * 1e3,
                       math.degrees(yaw), collisions, task.message, stale_motion,
                       paused_seen, sim_errors, cap[0] * 1e3, cap[1] * 1e3,
                       math.degrees(cap[2]), max_cmd_paused, messages, task.error,
                       world.carried_by(HELPER) if use_helper else None,
                       world.poses(), task.durations, max_gap * 1e3, travel,
                       task.raised_to_min_speed,
                       (st.face_gap_mm, st.lateral_error_mm, st.yaw_error_deg),
                       overlap * 1e3, corner_touches)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return math.nan
    k = min(len(xs) - 1, max(0, int(math.ceil(q * len(xs))) - 1))
    return xs[k]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=100,
                    help="random start poses per case (within 0.5 m of the goal, any heading)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the start poses and the mocap noise")
    ap.add_argument("--noise-mm", type=float, default=1.0,
                    help="mocap position noise, standard deviation [mm]")
    ap.add_argument("--noise-yaw-deg", type=float, default=math.degrees(0.01),
                    help="mocap yaw noise, standard deviation [deg]")
    ap.add_argument("--backend", choices=BACKENDS, default="kinematic",
                    help="the simulated world's physics (default: kinematic)")
    ap.add_argument("--cases", default="",
                    help="comma-separated case numbers 0-5 (default: all), in the order "
                         "TOP-TOP, BOTTOM-BOTTOM, LEFT-TOP, RIGHT-BOTTOM, helper LEFT-LEFT, "
                         "helper TOP-RIGHT")
    a = ap.parse_args(argv)
    try:
        cases = ([CASES[int(k)] for k in a.cases.split(",")] if a.cases else CASES)
    except (ValueError, IndexError):
        ap.error(f"--cases: {a.cases!r} is not a comma-separated list of 0-{len(CASES) - 1}")
    print(f"docking benchmark ({a.backend}): {a.trials} trials per case, mocap noise "
          f"{a.noise_mm} mm / {a.noise_yaw_deg:.2f} deg (1 sigma), success = connected, "
          f"gap <= 4 mm, yaw <= 2 deg, capture lateral <= 4 mm and yaw <= 2 deg")
    all_ok = True
    for pf, cf, helper in cases:
        t0 = time.perf_counter()
        c0 = time.process_time()
        res = [run_trial(pf, cf, a.seed * 100000 + i, helper, a.noise_mm * 1e-3,
                         math.radians(a.noise_yaw_deg), backend=a.backend)
               for i in range(a.trials)]
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        ok = [r for r in res if r.success]
        all_ok &= len(ok) == len(res)
        times = [r.time_s for r in ok]
        gaps = [r.gap_mm for r in res]
        yaws = [abs(r.yaw_deg) for r in res]
        lats = [abs(r.lateral_mm) for r in res]
        retries = [r.retries for r in res]
        name = f"{cf.value}->p.{pf.value}" + (" (helper)" if helper else "")
        sim_s = sum(r.time_s for r in res)
        print(f"\n{name}: success {len(ok)}/{len(res)}  (wall {wall:.1f} s, cpu {cpu:.1f} s, "
              f"{sim_s / max(cpu, 1e-9):.0f} simulated s per cpu s)")
        if times:
            print(f"  time/dock s     median {statistics.median(times):7.2f}  p95 "
                  f"{_pct(times, .95):7.2f}  max {max(times):7.2f}")
        cg = [r.capture_gap_mm for r in res if r.connected]
        cl = [abs(r.capture_lateral_mm) for r in res if r.connected]
        cy = [abs(r.capture_yaw_deg) for r in res if r.connected]
        for label, xs in (("final gap mm", gaps), ("final lat mm", lats),
                          ("final |yaw|deg", yaws), ("capture gap mm", cg),
                          ("capture lat mm", cl), ("capture yaw deg", cy)):
            if not xs:
                continue
            print(f"  {label:15s} median {statistics.median(xs):7.3f}  p95 {_pct(xs, .95):7.3f}"
                  f"  max {max(xs):7.3f}")
        print(f"  retries       total {sum(retries)}  max {max(retries)}  collisions "
              f"{sum(r.collisions for r in res)}  stalls noticed "
              f"{sum(r.raised_to_min_speed for r in res)}")
        for i, r in enumerate(res):
            if not r.success:
                print(f"  FAIL trial {i}: phase {r.phase.name} connected {r.connected} "
                      f"gap {r.gap_mm:.2f} mm yaw {r.yaw_deg:.2f} deg retries {r.retries} "
                      f"{r.message} {r.sim_errors[:1]}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
