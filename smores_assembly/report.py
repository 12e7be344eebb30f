"""Assembly report: phase timeline bookkeeping, final errors, JSON and pictures (no ROS).

* :class:`PhaseRecorder` turns a stream of (time, module, phase, retries) samples into
  per-action phase intervals.
* :func:`final_errors` compares final ground-truth poses with the plan's goal poses
  (relative to the root's final pose: the structure's own geometry).
* :func:`plot_trajectories` draws every module's path over the plane with the target
  outline; :func:`plot_timeline` draws one row per docking action coloured by phase.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, overload

from smores_assembly.geometry import MODULE_WIDTH, Pose2D, wrap_angle
from smores_assembly.vocabulary import PHASE_COLOURS, Phase

@dataclass
class PhaseInterval:
    """One phase of one module: ``[start, end]`` in seconds of ROS time."""

    phase: Phase
    start: float
    end: float


@dataclass
class PhaseRecorder:
    """Collects phase intervals per module from periodic status samples."""

    intervals: dict[str, list[PhaseInterval]] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    capture: dict[str, dict] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    def sample(self, t: float, module: str, phase: Phase, retries: int = 0,
               errors: dict | None = None, message: str = "") -> None:
        """Record that ``module`` is in ``phase`` at time ``t`` [s].

        ``errors`` (face gap, lateral, yaw) seen during APPROACH are kept, and replaced by
        those of DOCKED, which the controller freezes at capture: the errors at capture.
        """
        if message and phase in (Phase.FAILED, Phase.RETRY):
            self.messages[module] = message
        if errors is not None and phase in (Phase.APPROACH, Phase.DOCKED) and not any(
                math.isnan(float(v)) for v in errors.values()):
            self.capture[module] = {k: round(float(v), 2) for k, v in errors.items()}
        iv = self.intervals.setdefault(module, [])
        self.retries[module] = max(self.retries.get(module, 0), int(retries))
        if iv and iv[-1].phase == phase:
            iv[-1].end = t
        else:
            if iv:
                iv[-1].end = max(iv[-1].end, t)
            iv.append(PhaseInterval(phase, t, t))

    def to_dict(self, module: str) -> list[dict]:
        """The intervals of ``module`` as report entries (phase by name)."""
        return [{"phase": i.phase.name, "start_s": round(i.start, 3), "end_s": round(i.end, 3)}
                for i in self.intervals.get(module, [])]


@overload
def activity_start(recorder: PhaseRecorder, default: float = 0.0) -> float: ...
@overload
def activity_start(recorder: PhaseRecorder, default: None) -> float | None: ...


def activity_start(recorder: PhaseRecorder, default: float | None = 0.0) -> float | None:
    """Time of the first docking activity [s, ROS time]: t = 0 of the report, the timeline
    and the progress lines of ``run`` (the start of the first recorded phase other than
    IDLE, DOCKED and UNDOCKED); ``default`` when there is none yet."""
    return min((iv.start for ivs in recorder.intervals.values() for iv in ivs
                if iv.phase not in (Phase.IDLE, Phase.DOCKED, Phase.UNDOCKED)),
               default=default)


def final_errors(goals: dict[str, Pose2D], final: dict[str, Pose2D],
                 anchor: str | None = None) -> dict[str, dict]:
    """Position [mm] and yaw [deg] error of each module's final pose against its goal.

    Both in ``world``. With ``anchor`` (the root module), the goals are first moved
    rigidly so that the anchor's goal lands on the anchor's final pose: each error is then
    the module's error *within the structure* (its place relative to the root, the
    unfolding's geometry), independent of where the structure as a whole ended up; the
    anchor itself reads 0 (its own offset is :func:`pose_error`). Without an anchor, or
    when the anchor has no goal or no final pose, the goals are taken as they are. Modules
    without a final pose are reported with ``None`` errors.
    """
    moved = dict(goals)
    if anchor is not None and anchor in goals and anchor in final:
        g, f = goals[anchor], final[anchor]
        dyaw = wrap_angle(f.yaw - g.yaw)
        c, s = math.cos(dyaw), math.sin(dyaw)
        moved = {m: Pose2D(f.x + c * (p.x - g.x) - s * (p.y - g.y),
                           f.y + s * (p.x - g.x) + c * (p.y - g.y), wrap_angle(p.yaw + dyaw))
                 for m, p in goals.items()}
    out: dict[str, dict[str, float | None]] = {}
    for m, g in moved.items():
        p = final.get(m)
        out[m] = ({**pose_error(g, p)} if p is not None
                  else {"position_mm": None, "yaw_deg": None})
    return out


def pose_error(goal: Pose2D, pose: Pose2D) -> dict[str, float]:
    """``{"position_mm", "yaw_deg"}``: distance [mm] and absolute heading difference [deg]
    of ``pose`` from ``goal`` (both in ``world``), rounded to 0.01."""
    return {"position_mm": round(1000.0 * math.hypot(pose.x - goal.x, pose.y - goal.y), 2),
            "yaw_deg": round(math.degrees(abs(wrap_angle(pose.yaw - goal.yaw))), 2)}


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON."""
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def _square(ax, pose: Pose2D, w: float, **kw):
    from matplotlib.patches import Polygon
    c, s = math.cos(pose.yaw), math.sin(pose.yaw)
    pts = [(pose.x + c * dx - s * dy, pose.y + s * dx + c * dy)
           for dx, dy in ((w / 2, w / 2), (-w / 2, w / 2), (-w / 2, -w / 2), (w / 2, -w / 2))]
    patch = ax.add_patch(Polygon(pts, closed=True, **kw))
    # a tick on the TOP face shows the heading
    ax.plot([pose.x, pose.x + c * w / 2], [pose.y, pose.y + s * w / 2], color=kw.get(
        "edgecolor", "k"), lw=0.8)
    return patch


def _direction_arrows(ax, xs: Sequence[float], ys: Sequence[float], color, size: float) -> None:
    """Arrowheads at 1/3 and 2/3 of a path's length showing which way the module drove."""
    import numpy as np
    from matplotlib.patches import FancyArrowPatch
    p = np.column_stack([xs, ys])
    if len(p) < 2:
        return
    seg = np.hypot(*np.diff(p, axis=0).T)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] < 0.05:  # under 5 cm: a nudge, no arrow
        return
    for f in (1 / 3, 2 / 3):
        i = int(np.searchsorted(s, f * s[-1]))
        i = min(max(i, 1), len(p) - 1)
        j = int(np.searchsorted(s, s[i] - 0.01))  # the point ~1 cm back gives the heading
        j = min(j, i - 1)
        ax.add_patch(FancyArrowPatch(tuple(p[j]), tuple(p[i]), arrowstyle="-|>", color=color,
                                     lw=0, mutation_scale=size, shrinkA=0, shrinkB=0))


#: above this many modules the trajectory plot has no legend (each module is named at its
#: cells) and thinner lines; the figure grows with the scene
MANY_MODULES = 20
#: above this many rows the timeline draws one band per stage (a thin row per action)
MANY_ROWS = 40


#: Largest relative luminance (sRGB, 0 black .. 1 white) of a module colour: paler ones
#: (L* above ~76) are hard to see on the white plot as thin lines and small labels.
MAX_LUMINANCE = 0.5


def module_colours(modules: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    """One colour (RGBA) per module, in the given order, all distinct up to 205 modules
    (then repeated): colorcet's ``glasbey_category10`` (matplotlib's ten ``tab10`` colours
    followed by Glasbey et al.'s maximally distinct ones) without those paler than
    :data:`MAX_LUMINANCE` (tab10 alone repeated from the 11th module: fresh-user finding,
    13 modules with h0 and m7 the same blue)."""
    import colorcet
    import numpy as np
    pal = np.asarray(colorcet.glasbey_category10, dtype=float)
    # relative luminance of sRGB (IEC 61966-2-1 linearisation, Rec. 709 weights)
    lin = np.where(pal > 0.04045, ((pal + 0.055) / 1.055) ** 2.4, pal / 12.92)
    pal = pal[lin @ np.array([0.2126, 0.7152, 0.0722]) <= MAX_LUMINANCE]
    out: dict[str, tuple[float, float, float, float]] = {}
    for i, m in enumerate(modules):
        r, g, b = (float(c) for c in pal[i % len(pal)])
        out[m] = (r, g, b, 1.0)
    return out


def plot_trajectories(path: Path, trajectories: dict[str, list[tuple[float, float, float]]],
                      goals: dict[str, Pose2D], edges: list[tuple[str, str]],
                      title: str = "", width: float = MODULE_WIDTH,
                      helpers: Sequence[str] = ()) -> None:
    """Draw each module's trajectory (x, y, yaw samples in ``world``) and the target outline.

    Args:
        path: PNG file to write.
        trajectories: module -> [(x, y, yaw), ...] over time.
        goals: module -> goal pose (target outline, dashed).
        edges: (module, module) pairs of the target's connections, drawn between goals.
        helpers: the helping modules: their final squares are hatched, not filled, and
            their legend entries say "(helper)" (a fresh user took a helper's final
            square for an extra target cell).

    Every module has its own colour (:func:`module_colours`) and is named twice: in bold
    black inside its end square, and in its colour at its dotted start square. Up to
    :data:`MANY_MODULES` modules a legend right of the axes (clear of the scene) lists
    them; beyond (issue 16: 100 modules) the names at the cells do, the lines are thinner
    and the figure grows with the scene. Each path carries two arrowheads (at a third and
    two thirds of its length) showing the direction of travel.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    many = len(trajectories) > MANY_MODULES
    side = 7.5 if not many else min(16.0, 7.5 * math.sqrt(len(trajectories) / MANY_MODULES))
    fig, ax = plt.subplots(figsize=(side + (0 if many else 1.2), side), dpi=110)
    colours = module_colours(sorted(trajectories))
    starts: dict[str, Pose2D] = {}
    cells: dict[str, Any] = {}   # module -> its end square
    for m, pts in sorted(trajectories.items()):
        if not pts:
            continue
        col = colours[m]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        helper = m in helpers
        ax.plot(xs, ys, "-", color=col, lw=0.7 if many else 1.4,
                label=f"{m} (helper)" if helper else m)
        _direction_arrows(ax, xs, ys, col, 8 if many else 14)
        _square(ax, Pose2D(*pts[0]), width, fill=False, edgecolor=col,
                lw=0.6 if many else 1.0, ls=":")
        if helper:
            cells[m] = _square(ax, Pose2D(*pts[-1]), width, fill=False, edgecolor=col,
                               hatch="xx", lw=0.8 if many else 1.2)
        else:
            cells[m] = _square(ax, Pose2D(*pts[-1]), width, facecolor=(*col[:3], 0.35),
                               edgecolor=col, lw=0.8 if many else 1.2)
        if math.hypot(pts[0][0] - pts[-1][0], pts[0][1] - pts[-1][1]) > width / 2:
            starts[m] = Pose2D(*pts[0])   # one that stayed is named at its end only
    for g in goals.values():
        _square(ax, g, width, fill=False, edgecolor="k", lw=0.5 if many else 0.8, ls="--")
    for a, b in edges:
        if a in goals and b in goals:
            ax.plot([goals[a].x, goals[b].x], [goals[a].y, goals[b].y], "k-", lw=0.6, alpha=0.5)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("x [m] (world)")
    ax.set_ylabel("y [m] (world)")
    ax.set_title(title or "module trajectories\n(dotted: start, filled: end with the name "
                          "in bold, dashed: target, arrows: direction)", fontsize=10)
    ax.grid(True, lw=0.3)
    if not many and any(trajectories.values()):
        # right of the axes, one column: it covers nothing of the scene
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fontsize = 5 if many else 7
    for m in cells:
        p = Pose2D(*trajectories[m][-1])
        ax.text(p.x, p.y, m, fontsize=fontsize, fontweight="bold", color="k", ha="center",
                va="center", clip_on=True)
    for m, p in starts.items():
        ax.text(p.x, p.y, m, fontsize=fontsize, color=colours[m], ha="center", va="center",
                clip_on=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def outside(moving: Sequence[Sequence[float]], phases: Sequence[PhaseInterval],
            min_s: float = 0.2) -> list[tuple[float, float]]:
    """The parts of the ``moving`` intervals ``[start, end]`` [s] that no interval of
    ``phases`` other than IDLE covers, each at least ``min_s`` long: what a module did
    outside its docking phases (e.g. a pipelined schedule's staging moves)."""
    busy = sorted((i.start, i.end) for i in phases if i.phase is not Phase.IDLE)
    out: list[tuple[float, float]] = []
    for lo, hi in moving:
        cur = lo
        for b0, b1 in busy:
            if b1 <= cur or b0 >= hi:
                continue
            if b0 > cur:
                out.append((cur, b0))
            cur = max(cur, b1)
        if cur < hi:
            out.append((cur, hi))
    return [(a, b) for a, b in out if b - a >= min_s]


#: how the timeline draws a module moving outside its docking phases
STAGING_STYLE: dict[str, Any] = {"facecolor": "#d8d8d8", "hatch": "////", "edgecolor": "#909090",
                                 "lw": 0.0}
#: how the timeline draws a helping module moving (fetching, carrying, backing off)
HELPING_STYLE: dict[str, Any] = {"facecolor": "#b9d7ea", "hatch": "....",
                                 "edgecolor": "#5a8fb0", "lw": 0.0}


def plot_timeline(path: Path, rows: list[tuple[str, list[PhaseInterval]]],
                  stage_bounds: list[tuple[float, float]] | None = None,
                  title: str = "", groups: list[str] | None = None,
                  stage_labels: Sequence[str] | None = None,
                  staging: Sequence[Sequence[tuple[float, float]]] | None = None,
                  helping: Sequence[Sequence[tuple[float, float]]] | None = None,
                  ended: str = "", ended_at: float | None = None) -> None:
    """One row per docking (or undocking) action, coloured by phase, time on x [s].

    Args:
        rows: (label, intervals) per action, top to bottom; an interval without duration
            draws nothing (and gives its phase no legend entry).
        stage_bounds: (start, end) of each stage, drawn as shaded bands.
        groups: a group label per row (e.g. its stage, ``"stage 3"``), rows of a group
            consecutive. With more than :data:`MANY_ROWS` rows (issue 16: 100 docks made
            a 50-inch figure of unreadable labels) each group is one labelled band, its
            actions thin rows inside it in the given order.
        stage_labels: the stage bands' labels (default ``stage k``); a band too narrow
            for its label shows the stage's number only (``3u`` for an undocking stage,
            then ``3``), or nothing.
        staging: per row, intervals [s] in which the row's module moved outside its
            phases (:func:`outside`), drawn hatched grey ("moving before its stage":
            without them a pipelined schedule's later stages look idle until their turn).
        helping: per row, intervals [s] in which the row's helping module moved
            (fetching, carrying, backing off), drawn dotted blue; a helper's row has no
            phases of its own (the carried module's row has them).
        ended: how a run that did not finish ended (e.g. ``"interrupted"``, ``"failed"``;
            "" when it finished): a red line marks the last recorded moment and the title
            says "<ended> at <t> s" (an interrupted run looked like a finished one).
        ended_at: the time [s] of that moment, as the report gives it (the run's
            ``assembly_time_s``), so the picture and the report say the same number; by
            default the last end of any drawn interval.

    Raises:
        ValueError: ``groups``, ``staging`` or ``helping`` does not have one entry per row.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if groups is not None and len(groups) != len(rows):
        raise ValueError(f"groups: {len(groups)} labels for {len(rows)} rows")
    if staging is not None and len(staging) != len(rows):
        raise ValueError(f"staging: {len(staging)} entries for {len(rows)} rows")
    if helping is not None and len(helping) != len(rows):
        raise ValueError(f"helping: {len(helping)} entries for {len(rows)} rows")
    grouped = groups is not None and len(rows) > MANY_ROWS
    if grouped:
        assert groups is not None
        names: list[str] = []
        for g in groups:
            if not names or names[-1] != g:
                names.append(g)
        # y of each row: its group's band (height 1), spread inside it
        members: dict[str, list[int]] = {}
        for r, g in enumerate(groups):
            members.setdefault(g, []).append(r)
        ys, hs = [0.0] * len(rows), [0.0] * len(rows)
        for k, g in enumerate(names):
            idx = members[g]
            base = len(names) - 1 - k
            h = 0.8 / len(idx)
            for j, r in enumerate(idx):
                ys[r] = base + 0.4 - (j + 0.5) * h
                hs[r] = 0.9 * h
        n_bands = len(names)
    else:
        ys = [float(len(rows) - 1 - r) for r in range(len(rows))]
        hs = [0.6] * len(rows)
        n_bands = len(rows)
    fig, ax = plt.subplots(figsize=(9 if not grouped else 12, 0.5 * n_bands + 1.8), dpi=110)
    band_labels = []   # (text, label, lo, hi): shortened after the layout if too wide
    for k, (lo, hi) in enumerate(stage_bounds or []):
        ax.axvspan(lo, hi, color="#f0f0f0" if k % 2 == 0 else "#e0e0e0", zorder=0)
        if not grouped:
            label = (stage_labels[k] if stage_labels is not None and k < len(stage_labels)
                     else f"stage {k + 1}")
            # inside the axes, above the top row (the y range below leaves room)
            text = ax.text((lo + hi) / 2, len(rows) - 0.35, label, ha="center",
                           va="center", fontsize=7, clip_on=True)
            band_labels.append((text, [f"{k + 1}" + ("u" if "undock" in label else ""),
                                       f"{k + 1}", ""], lo, hi))
    used = set()
    any_staging = False
    for r, moves in enumerate(staging or []):
        for lo, hi in moves:
            any_staging = True
            ax.barh(ys[r], hi - lo, left=lo, height=hs[r], zorder=1.5, **STAGING_STYLE)
    any_helping = False
    for r, moves in enumerate(helping or []):
        for lo, hi in moves:
            any_helping = True
            ax.barh(ys[r], hi - lo, left=lo, height=hs[r], zorder=1.5, **HELPING_STYLE)
    for r, (label, ivs) in enumerate(rows):
        for iv in ivs:
            if iv.phase is Phase.IDLE or iv.end <= iv.start:
                # a phase without duration (e.g. DOCKED at the very end of the run) has no
                # bar, nor a legend entry (fresh-user finding: DOCKED/UNDOCKED listed
                # with nothing drawn)
                continue
            used.add(iv.phase)
            ax.barh(ys[r], max(iv.end - iv.start, 0.05), left=iv.start, height=hs[r],
                    color=iv.phase.colour, zorder=2)
    if grouped:
        ax.set_yticks(range(n_bands))
        ax.set_yticklabels([f"{g} ({len(members[g])})" for g in reversed(names)],
                           fontsize=8)
        ax.set_ylim(-0.6, n_bands - 0.4)
    else:
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([lab for lab, _ in reversed(rows)], fontsize=8)
        # room for the stage labels inside the axes, clear of the title
        ax.set_ylim(-0.6, len(rows) - 0.1 if stage_bounds else len(rows) - 0.4)
    ax.set_xlabel("time [s] (simulated)")
    title = title or "docking actions by phase"
    if ended:
        t_end = ended_at if ended_at is not None else max(
            [iv.end for _, ivs in rows for iv in ivs]
            + [hi for moves in (*(staging or []), *(helping or [])) for _, hi in moves]
            + [hi for _, hi in stage_bounds or []] or [0.0])
        ax.axvline(t_end, color="#c0392b", lw=1.5, ls="--", zorder=3)
        title += f"\n{ended} at {t_end:.1f} s"
    ax.set_title(title)
    handles = [Patch(color=c, label=p.name) for p, c in PHASE_COLOURS.items() if p in used]
    if any_staging:
        handles.append(Patch(label="staging\n(moving before\nits stage)", **STAGING_STYLE))
    if any_helping:
        handles.append(Patch(label="helping module\nmoving", **HELPING_STYLE))
    if handles:
        # right of the axes, one column: clear of the x label whatever the figure's height
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False)
    ax.grid(True, axis="x", lw=0.3)
    fig.tight_layout()
    if band_labels:
        # a stage band too narrow for its label shows the stage's number only
        renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
        x0, x1 = ax.get_xlim()
        ax_px = ax.get_window_extent(renderer).width
        for text, shorter, lo, hi in band_labels:
            for alt in shorter:   # "stage 3 (undock)" -> "3u" -> "3" -> none
                width_s = text.get_window_extent(renderer).width / ax_px * (x1 - x0)
                if width_s <= 0.95 * (hi - lo):
                    break
                text.set_text(alt)
    fig.savefig(path, bbox_inches="tight")   # the legend outside the axes included
    plt.close(fig)
