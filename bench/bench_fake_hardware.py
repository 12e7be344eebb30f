"""Fake-hardware benchmark: real-time factor of the ``fake_hardware`` node.

Run ``python -m bench.bench_fake_hardware [--modules 9 50] [--seconds 5]
[--backend kinematic|mujoco]``. For each module
count it builds a scenario (modules on a 0.3 m grid, every other one driving a circle), runs
the node in-process with ``real_time_factor = 0`` (as fast as possible), 100 Hz physics and
100 Hz mocap (one PoseStamped per module per step), ``/clock`` every step, ground truth at
50 Hz and joint states at 20 Hz, spinning a single-threaded executor for ``--seconds`` of
wall time, and prints the simulated seconds per wall second (the real-time factor), the
simulated seconds per CPU second of the process (the factor on an otherwise idle core) and,
for reference, the physics alone (:meth:`SimWorld.step`, no ROS).

Goal (issue 4): >= 20x real time with 9 modules on the project machine (2 cores).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml


def _scenario(n: int) -> dict:
    side = math.ceil(math.sqrt(n))
    modules = {f"m{i}": [0.3 * (i % side), 0.3 * (i // side), 0.3 * i] for i in range(n)}
    return {"name": f"bench{n}", "target": {"nodes": ["n0"], "edges": []},
            "modules": modules}


def _physics_only(n: int, seconds: float, backend: str = "kinematic") -> tuple[float, float]:
    """(simulated s per wall s, simulated s per CPU s) of the world alone (no ROS)."""
    from smores_assembly.sim.backend import make_world

    world = make_world(backend, {m: tuple(p) for m, p in _scenario(n)["modules"].items()})
    for i, m in enumerate(world.modules()):
        if i % 2 == 0:
            world.set_cmd_vel(m, 0.03, 1.0)
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        for _ in range(100):
            world.step(0.01)
        steps += 100
    return (steps * 0.01 / (time.perf_counter() - t0),
            steps * 0.01 / max(time.process_time() - c0, 1e-9))


def _node_rtf(n: int, seconds: float, workdir: Path,
              backend: str = "kinematic") -> tuple[float, float, int]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from smores_assembly.ros.fake_hardware import FakeHardwareNode

    path = workdir / f"bench{n}.yaml"
    path.write_text(yaml.safe_dump(_scenario(n)))
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=int(os.environ.get("ROS_DOMAIN_ID", "0") or 0))
    try:
        node = FakeHardwareNode(context=ctx, parameter_overrides=[
            Parameter("scenario", value=str(path)), Parameter("real_time_factor", value=0.0),
            Parameter("physics_rate_hz", value=100.0), Parameter("mocap_rate_hz", value=100.0),
            Parameter("cmd_vel_timeout_s", value=1e6)]
            + ([Parameter("backend", value=backend)] if backend != "kinematic" else []))
        for i, m in enumerate(node.ids):
            if i % 2 == 0:
                node.world.set_cmd_vel(m, 0.03, 1.0)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        ex.spin_once(timeout_sec=0.1)     # warm-up
        t_sim0, steps0 = node.world.t, node.steps
        t0, cpu0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds:
            ex.spin_once(timeout_sec=0.1)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        rtf = (node.world.t - t_sim0) / wall
        rtf_cpu = (node.world.t - t_sim0) / cpu
        steps = node.steps - steps0
        ex.shutdown()
        node.destroy_node()
    finally:
        ctx.try_shutdown()
    return rtf, rtf_cpu, steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_fake_hardware",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", type=int, nargs="+", default=[9, 50],
                    help="module counts, one scenario each")
    ap.add_argument("--seconds", type=float, default=5.0, help="wall time per run [s]")
    ap.add_argument("--backend", choices=("kinematic", "mujoco"), default="kinematic",
                    help="the fake hardware's physics (default: kinematic)")
    args = ap.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 50))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("ROS_LOG_DIR", str(Path(tmp) / "log"))
        print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        print(f"backend: {args.backend}")
        print(f"{'modules':>7} | {'node rtf (wall)':>15} | {'node sim-s per CPU-s':>20} | "
              f"{'steps/s':>8} | {'physics only rtf':>16} | {'physics sim-s/CPU-s':>19}")
        for n in args.modules:
            rtf, rtf_cpu, steps = _node_rtf(n, args.seconds, Path(tmp), args.backend)
            phys, phys_cpu = _physics_only(n, min(args.seconds, 2.0), args.backend)
            print(f"{n:>7} | {rtf:>15.1f} | {rtf_cpu:>20.1f} | {steps / args.seconds:>8.0f} | "
                  f"{phys:>16.1f} | {phys_cpu:>19.1f}", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f} (other processes on the machine "
              "slow the wall-clock figure; sim-s per CPU-s is what one free core gives)")
    print("goal: >= 20x real time with 9 modules (100 Hz physics, 100 Hz mocap, rtf=0)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
