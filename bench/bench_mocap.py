"""Mocap bridge at scale (issue 16): what ``mocap_bridge`` sustains with many subjects.

A driver process publishes one ``geometry_msgs/PoseStamped`` topic per subject (as VICON's
vicon_receiver does: ``vicon/<id>/<id>``, best effort) at ``--rate`` Hz for ``--seconds``
wall seconds; after half the time the first ``--occlude`` subjects stop (occluded bodies).
The bridge runs in this process (free-running, wall clock, default parameters), with one
subscriber counting ``modules/states``. Reported:

* offered: samples the driver published per second (the driver itself may fall short of
  subjects x rate on a loaded machine; it is the real input);
* processed: samples the bridge's filter saw per second, and the share of the offered;
* bridge CPU: CPU seconds of this process per wall second (the bridge and the counter);
* states: ``modules/states`` messages per second (parameter ``publish_rate_hz``, 50);
* age: over the states messages of the second half, for the visible subjects, the age of
  each module's last accepted sample (message stamp - sample stamp), median and p99, and
  the share of (message, visible module) pairs reported tracked;
* occluded: for the occluded subjects, the time from their last sample to the first states
  message that reports them untracked (``stale_timeout_s`` 0.5 s + at most one publish
  period when the bridge keeps up), and whether any was still reported tracked at the end.

    .venv/bin/python bench/bench_mocap.py [--subjects 100] [--rate 100] [--seconds 10]
        [--occlude 10]

(run as a script: the installed package, with its generated messages, is imported.)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time


def _driver(subjects: int, rate: float, seconds: float, occlude: int) -> int:
    """The driver process: publish, then print per-subject counts and last stamps as JSON."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import qos_profile_sensor_data

    rclpy.init()
    node = rclpy.create_node("bench_vicon_driver")
    ids = [f"m{i}" for i in range(subjects)]
    pubs = [node.create_publisher(PoseStamped, f"vicon/{m}/{m}", qos_profile_sensor_data)
            for m in ids]
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and not all(p.get_subscription_count() for p in pubs):
        time.sleep(0.05)
    msg = PoseStamped()
    msg.header.frame_id = "mocap"
    msg.pose.orientation.w = 1.0
    sent = [0] * subjects
    last = [0.0] * subjects
    t0 = time.monotonic()
    k = 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        wall = time.time()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(wall * 1e9), 10**9)
        for i, p in enumerate(pubs):
            if i < occlude and now - t0 >= seconds / 2:
                continue
            msg.pose.position.x = 0.2 * i + 0.001 * (k % 10)
            msg.pose.position.y = 0.1
            p.publish(msg)
            sent[i] += 1
            last[i] = wall
        k += 1
        nxt = t0 + k / rate
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(json.dumps({"sent": sent, "last": last, "elapsed": time.monotonic() - t0}),
          flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


def _run(subjects: int, rate: float, seconds: float, occlude: int) -> dict:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from smores_assembly.msg import ModuleStateArray
    from smores_assembly.ros import common, names
    from smores_assembly.ros.mocap_bridge import MocapBridgeNode

    ids = [f"m{i}" for i in range(subjects)]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    bridge = MocapBridgeNode(context=ctx, parameter_overrides=[
        Parameter("module_ids", value=ids)])
    counter = rclpy.create_node("bench_states_counter", context=ctx)
    states: list[tuple[float, float, list[bool], list[float]]] = []

    def on_states(msg) -> None:
        stamp = common.time_to_sec(msg.header.stamp)
        states.append((time.time(), stamp, [s.tracked for s in msg.modules],
                       [common.time_to_sec(s.stamp) for s in msg.modules]))

    counter.create_subscription(ModuleStateArray, names.STATES, on_states,
                                common.STATES_PUB_QOS)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(bridge)
    ex.add_node(counter)
    drv = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--driver",
                            "--subjects", str(subjects), "--rate", str(rate),
                            "--seconds", str(seconds), "--occlude", str(occlude)],
                           stdout=subprocess.PIPE, text=True)
    try:
        while not any(bridge.filter.accepted.values()) and drv.poll() is None:
            ex.spin_once(timeout_sec=0.05)
        t0, c0 = time.monotonic(), time.process_time()
        seen0 = sum(bridge.filter.accepted.values())
        n_states0 = len(states)
        while drv.poll() is None:
            ex.spin_once(timeout_sec=0.05)
        t_end = time.monotonic() + 1.5  # let the occluded tracks go stale, drain queues
        while time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        wall = time.monotonic() - t0
        cpu = time.process_time() - c0
        out = json.loads(drv.stdout.read())
    finally:
        if drv.poll() is None:
            drv.kill()
        drv.wait()
    processed = (sum(bridge.filter.accepted.values()) - seen0
                 + sum(sum(c.values()) for c in bridge.filter.rejected.values()))
    ex.shutdown()
    bridge.destroy_node()
    counter.destroy_node()
    ctx.try_shutdown()

    sent = sum(out["sent"])
    st = states[n_states0:]
    half = st[0][0] + (st[-1][0] - st[0][0]) * 0.5 if st else 0.0
    ages, tracked = [], 0
    for wall_t, stamp, tr, stamps in st:
        if wall_t < half - 0.5 or wall_t > st[-1][0] - 1.5:
            continue  # before the occlusion / after the driver stopped
        for i in range(occlude, subjects):
            ages.append(stamp - stamps[i])
            tracked += tr[i]
    detect = []
    still_tracked = False
    for i in range(occlude):
        last = out["last"][i]
        first_untracked = next((s[1] for s in st if s[1] > last and not s[2][i]), None)
        if first_untracked is None:
            still_tracked = True
        else:
            detect.append(first_untracked - last)
    return {"subjects": subjects, "rate": rate, "offered_per_s": sent / out["elapsed"],
            "processed_per_s": processed / wall, "processed_share": processed / max(sent, 1),
            "bridge_cpu_per_s": cpu / wall, "states_per_s": len(st) / wall,
            "age_median_s": statistics.median(ages) if ages else float("nan"),
            "age_p99_s": sorted(ages)[int(0.99 * (len(ages) - 1))] if ages else float("nan"),
            "tracked_share": tracked / max(len(ages), 1),
            "occluded_detect_max_s": max(detect) if detect else float("nan"),
            "occluded_still_tracked": still_tracked}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_mocap",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--subjects", type=int, nargs="+", default=[100],
                    help="subject counts, one run each")
    ap.add_argument("--rate", type=float, default=100.0,
                    help="samples per second per subject [Hz]")
    ap.add_argument("--seconds", type=float, default=10.0,
                    help="wall seconds per run")
    ap.add_argument("--occlude", type=int, default=10,
                    help="subjects that stop publishing after half the time")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.driver:
        return _driver(args.subjects[0], args.rate, args.seconds, args.occlude)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random().randint(101, 200)))
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    for n in args.subjects:
        r = _run(n, args.rate, args.seconds, min(args.occlude, n))
        print(f"{n} subjects at {args.rate:g} Hz: offered {r['offered_per_s']:.0f}/s, "
              f"processed {r['processed_per_s']:.0f}/s ({100 * r['processed_share']:.0f} %), "
              f"bridge CPU {r['bridge_cpu_per_s']:.2f} s/s, states {r['states_per_s']:.1f}/s, "
              f"sample age median {1e3 * r['age_median_s']:.0f} ms p99 "
              f"{1e3 * r['age_p99_s']:.0f} ms, visible tracked "
              f"{100 * r['tracked_share']:.1f} %, occluded untracked after <= "
              f"{r['occluded_detect_max_s']:.2f} s"
              + (" (SOME STILL TRACKED)" if r["occluded_still_tracked"] else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
