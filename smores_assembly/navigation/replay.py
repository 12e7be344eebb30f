"""One active stage's navigation problem, planned as the navigation node plans it, written
to a YAML file and read back (no ROS imports).

:func:`plan_problem` is the node's planning call (the carried pairs first with
:func:`smores_assembly.staging.plan_stage_carrying`, then the helpers' back-offs as their
first moves, :func:`~smores_assembly.navigation.problem.wait_for_backoffs`). When it fails,
the node writes every input of that call with :func:`dump_problem` (the
:class:`~smores_assembly.navigation.problem.NavProblem`, every
:class:`~smores_assembly.navigation.stage.NavSettings` field, whether the search bounds
count work (lockstep), and the error), and a test or a developer replays it offline::

    from smores_assembly.navigation.replay import load_problem, plan_problem
    fp = load_problem("out/ros_log/navigation_failed_stage1_001.yaml")
    plan_problem(fp.problem, fp.settings, work_clock=fp.work_clock)

Floats are written with ``repr`` (PyYAML's float), so the replay plans from the very
numbers the node had. Poses are ``[x, y, yaw]`` (``world``, m and rad), points ``[x, y]``,
zones ``[x, y, yaw, hx, hy]`` (:class:`~smores_assembly.staging.Rect`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from smores_assembly.errors import InputError
from smores_assembly.geometry import Pose2D
from smores_assembly.navigation.problem import NavProblem, wait_for_backoffs
from smores_assembly.navigation.stage import NavSettings, StagePlan, WorkClock
from smores_assembly.staging import Rect, plan_stage_carrying
from smores_assembly.yaml_io import read_yaml_file

#: The ``format`` key of a written problem (a reader refuses any other).
FORMAT = "smores_assembly/nav_problem/1"


def plan_problem(prob: NavProblem, settings: NavSettings, work_clock: bool = False,
                 defer_failed_pairs: bool = False) -> tuple[StagePlan, list[str]]:
    """The stage plan of ``prob`` as the navigation node makes it.

    Args:
        prob: the active stage's problem (:func:`~smores_assembly.navigation.problem.nav_problem`).
        settings: the node's navigation settings.
        work_clock: the search bounds count work (:class:`WorkClock`, as in lockstep),
            else wall time.
        defer_failed_pairs: a carried pair whose plan fails waits where it stands and the
            rest of the stage is planned (:func:`plan_stage_carrying`; the node sets it,
            and plans again later); without it (a replay of a failure) the pair's error is
            raised.

    Returns:
        ``(stage plan, staged modules)`` (:func:`plan_stage_carrying`), the plan timed for
        the back-offs.

    Raises:
        NavigationError, InputError: as :func:`plan_stage_carrying`.
    """
    sp, staged = plan_stage_carrying(prob.moving, prob.staging, prob.carried, prob.obstacles,
                                     prob.zones, settings, fixed=prob.fixed,
                                     width=settings.module_width,
                                     clock_factory=WorkClock if work_clock else None,
                                     keep_clear=prob.keep_clear, slides=prob.slides,
                                     defer_failed_pairs=defer_failed_pairs)
    sp = wait_for_backoffs(sp, prob.backoffs, settings.helper_backoff_speed,
                           settings.module_width)
    return sp, staged


@dataclass
class FailedProblem:
    """A problem read back by :func:`load_problem`.

    Attributes:
        problem, settings, work_clock: the arguments of :func:`plan_problem`.
        stage: the stage (1-based); reason: why the node planned; error: what failed;
        time_s: the node's clock when it planned [s]; extra: any other key of the file.
    """

    problem: NavProblem
    settings: NavSettings
    work_clock: bool = False
    stage: int = 0
    reason: str = ""
    error: str = ""
    time_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _pose(p: Pose2D) -> list[float]:
    return [float(p.x), float(p.y), float(p.yaw)]


def _xy(p) -> list[float]:
    return [float(p[0]), float(p[1])]


def problem_to_dict(prob: NavProblem, settings: NavSettings, work_clock: bool = False,
                    **meta: Any) -> dict[str, Any]:
    """``prob`` and ``settings`` as plain data (:func:`problem_from_dict` reads it back);
    ``meta`` (e.g. ``stage``, ``reason``, ``error``, ``time_s``) goes in as it is."""
    return {
        "format": FORMAT,
        **meta,
        "work_clock": bool(work_clock),
        "settings": {f.name: getattr(settings, f.name)
                     for f in dataclasses.fields(settings)},
        "moving": {m: [_pose(a), _pose(b)] for m, (a, b) in sorted(prob.moving.items())},
        "carried": {h: [_pose(a), _pose(b), str(c)]
                    for h, (a, b, c) in sorted(prob.carried.items())},
        "staging": {m: [_pose(a), _pose(b)] for m, (a, b) in sorted(prob.staging.items())},
        "obstacles": {m: _pose(p) for m, p in sorted(prob.obstacles.items())},
        "fixed": sorted(prob.fixed),
        "missing": sorted(prob.missing),
        "direct": sorted(prob.direct),
        "zones": [[float(z.x), float(z.y), float(z.yaw), float(z.hx), float(z.hy)]
                  for z in prob.zones],
        "helper_targets": dict(sorted(prob.helper_targets.items())),
        "keep_clear": {o: [_xy(p) for p in pts] for o, pts in sorted(prob.keep_clear.items())},
        "slides": {o: [_xy(a), _xy(b)] for o, (a, b) in sorted(prob.slides.items())},
        "backoffs": {h: [_pose(a), _pose(b)] for h, (a, b) in sorted(prob.backoffs.items())},
    }


def problem_from_dict(data: dict[str, Any], source: str = "<dict>") -> FailedProblem:
    """The problem of :func:`problem_to_dict`'s ``data``.

    Raises:
        InputError: another format, a missing key or a malformed value (naming ``source``).
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{source}: not a navigation problem (format {FORMAT!r})")

    def pose(v) -> Pose2D:
        return Pose2D(float(v[0]), float(v[1]), float(v[2]))

    def xy(v) -> tuple[float, float]:
        return (float(v[0]), float(v[1]))

    try:
        known = {f.name for f in dataclasses.fields(NavSettings)}
        unknown = sorted(set(data["settings"]) - known)
        if unknown:
            raise InputError(f"{source}: settings: unknown {unknown}")
        settings = NavSettings(**data["settings"])
        prob = NavProblem(
            moving={m: (pose(a), pose(b)) for m, (a, b) in data["moving"].items()},
            obstacles={m: pose(p) for m, p in data["obstacles"].items()},
            fixed=set(data["fixed"]),
            missing=list(data.get("missing", [])),
            staging={m: (pose(a), pose(b)) for m, (a, b) in data["staging"].items()},
            zones=[Rect(*map(float, z)) for z in data["zones"]],
            direct=set(data.get("direct", [])),
            carried={h: (pose(a), pose(b), str(c)) for h, (a, b, c) in data["carried"].items()},
            helper_targets=dict(data.get("helper_targets", {})),
            keep_clear={o: [xy(p) for p in pts] for o, pts in data["keep_clear"].items()},
            slides={o: (xy(a), xy(b)) for o, (a, b) in data["slides"].items()},
            backoffs={h: (pose(a), pose(b)) for h, (a, b) in data["backoffs"].items()},
        )
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}: malformed navigation problem ({exc!r})") from exc
    settings.validate()
    own = {"format", "work_clock", "settings", "moving", "carried", "staging", "obstacles",
           "fixed", "missing", "direct", "zones", "helper_targets", "keep_clear", "slides",
           "backoffs", "stage", "reason", "error", "time_s"}
    return FailedProblem(prob, settings, bool(data.get("work_clock", False)),
                         int(data.get("stage", 0)), str(data.get("reason", "")),
                         str(data.get("error", "")), float(data.get("time_s", 0.0)),
                         {k: v for k, v in data.items() if k not in own})


class _Dumper(yaml.SafeDumper):
    """Block mappings, flow-style lists of numbers (a pose or a point on one line)."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flat = all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _represent_list)


def dump_problem(path: str | Path, prob: NavProblem, settings: NavSettings,
                 work_clock: bool = False, **meta: Any) -> Path:
    """Write ``prob``, ``settings`` and ``meta`` (:func:`problem_to_dict`) to the YAML file
    ``path`` (its directory made if need be); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.dump(problem_to_dict(prob, settings, work_clock, **meta), Dumper=_Dumper,
                     sort_keys=False, width=100)
    path.write_text("# a navigation problem: smores_assembly.navigation.replay.load_problem\n"
                    + text)
    return path


def load_problem(path: str | Path) -> FailedProblem:
    """The problem written by :func:`dump_problem` to ``path``.

    Raises:
        InputError: the file cannot be read or is not such a problem.
    """
    return problem_from_dict(read_yaml_file(path), str(path))


def replay(path: str | Path) -> tuple[StagePlan, list[str]]:
    """:func:`plan_problem` of the problem in ``path`` (raises as the node's call did)."""
    fp = load_problem(path)
    return plan_problem(fp.problem, fp.settings, work_clock=fp.work_clock)


__all__ = ["FORMAT", "FailedProblem", "dump_problem", "load_problem", "plan_problem",
           "problem_from_dict", "problem_to_dict", "replay"]
