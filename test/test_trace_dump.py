"""``python -m bench.trace_dump``: a run's step dump read back (poses at a time, the closest
approach of two modules), judged against poses written here."""
import json
import math

import numpy as np

from bench import trace_dump

LOG = ("[container] [INFO] [1.0] [fake_hardware]: fake hardware: 3 modules (h0, m0, m1), "
       "helpers ['h0'], physics 50.0 Hz, mocap 100.0 Hz\n")


def _write(tmp_path):
    """Three modules for 2 s at 50 Hz: m1 drives at 0.1 m/s along x from the origin towards
    m0 at (0.3, 0), 0.1 m from it at the end; h0 stands far off."""
    rows = []
    for k in range(1, 101):
        t = k / 50.0
        x1 = 0.1 * t
        poses = np.array([[-1.0, -1.0, 0.0], [0.3, 0.0, math.pi / 2], [x1, 0.0, 0.0]],
                         dtype="<f8")
        rows.append(f"{k} {'ab' if k % 7 == 0 else ''} {poses.tobytes().hex()}\n")
    dump = tmp_path / "run.dump"
    dump.write_text("".join(rows))
    log = tmp_path / "nodes.log"
    log.write_text(LOG)
    return dump, log


def test_modules_and_rate_come_from_the_log(tmp_path):
    _dump, log = _write(tmp_path)
    assert trace_dump.modules_and_rate(log) == (["h0", "m0", "m1"], 50.0)


def test_at_prints_the_poses_of_that_step(tmp_path, capsys):
    dump, log = _write(tmp_path)
    assert trace_dump.main([str(dump), str(log), "at", "1.0", "m1", "m0"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["t"] == 1.0
    assert got["poses"] == {"m1": [0.1, 0.0, 0.0], "m0": [0.3, 0.0, round(math.pi / 2, 5)]}


def test_closest_finds_the_smallest_distance_and_its_time(tmp_path, capsys):
    dump, log = _write(tmp_path)
    assert trace_dump.main([str(dump), str(log), "closest", "0", "2", "--below", "0.15"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1          # h0 is never within 0.15 m of anyone
    a, b, d, _m, _at, t, _s = lines[0].split()
    assert (a, b) == ("m0", "m1") and abs(float(d) - 0.1) < 1e-4 and float(t) == 2.0


def test_a_dump_cut_short_ends_at_its_last_whole_line(tmp_path, capsys):
    """A run still going (or killed) leaves the last line cut: it is not read."""
    dump, log = _write(tmp_path)
    text = dump.read_text()
    dump.write_text(text[: len(text) - 40])
    assert trace_dump.main([str(dump), str(log), "track", "m1", "0", "2", "--every", "1"]) == 0
    times = [float(ln.split()[0]) for ln in capsys.readouterr().out.splitlines()]
    assert times == [0.02, 1.02]
