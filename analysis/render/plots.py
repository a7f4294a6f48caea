"""Figures shared by the sections (lines, time series, heatmaps; the bar charts are in bars.py)
and the helpers every figure uses. Every point carries its error bar from the repetitions: the 95%
interval of the mean, as the tables print it (a percentile's own interval where it has one).

Every figure writes its numbers the way the snippets do (13,584 on the axis as on the bar), keeps
its legend outside the axes, where it cannot cover a bar, a point or an error bar, starts a bar's
or a rate's value axis at zero, and leaves headroom above the tallest bar for its error bar and
label. A label beside a point (its depth, a knee's caption, a bar's value) is placed once the
layout is final, at the first of a few offsets where it stays inside the axes and covers no
marker, error bar, line or other label (`_place_labels`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; lab boxes and CI have no display
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import LogNorm
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator
from matplotlib.transforms import Bbox, ScaledTranslation

from analysis.render import markdown as md
from analysis.render.claims import THIN

# Tick labels as the tables write numbers: thousands separators, no trailing zeros.
PLAIN = FuncFormatter(lambda v, _: f"{v:,.10g}")


def _save(fig, path: Path, note: str = "") -> Path:
    """Write the figure (with a small note at the bottom right, if any) and free it."""
    if _mark_clipped(fig):
        note = f"{note}; {CLIPPED_NOTE}" if note else CLIPPED_NOTE
    _enough_log_ticks(fig)
    if note:
        fig.text(0.99, 0.01, note, ha="right", va="bottom", fontsize=7, color="#555", wrap=True)
    # tight_layout's engine, run once rather than through fig.tight_layout(): that one leaves a
    # placeholder engine on the figure, for which savefig draws the whole figure once more.
    TightLayoutEngine().execute(fig)
    _place_labels(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# --- error bars that run off the axis ------------------------------------------------------------
CLIPPED = "clipped"  # the gid of the mark at the end of an error bar the axis cuts
CLIPPED_NOTE = "▲ ▼: an interval that runs off the axis"
# A segment's end off the axis: the marker drawn at the axis's edge, pointing where it runs.
_ARROWS = {("y", 0): "v", ("y", 1): "^", ("x", 0): "<", ("x", 1): ">"}


def _mark_clipped(fig) -> bool:
    """An error bar whose interval runs beyond its axis (off the top, below zero, below a log
    axis's bottom, where a lower end at or below zero cannot be drawn at all) gets an arrowhead
    at the edge it leaves by, so that a cut interval never reads as a short one. True if any."""
    marked = False
    for ax in fig.axes:
        limits = {"x": sorted(ax.get_xlim()), "y": sorted(ax.get_ylim())}
        logs = {"x": ax.get_xscale() == "log", "y": ax.get_yscale() == "log"}
        ends = []
        for coll in ax.collections:
            if not isinstance(coll, LineCollection) or not coll.get_visible():
                continue
            color = coll.get_colors()[0] if len(coll.get_colors()) else "black"
            for seg in coll.get_segments():
                if len(seg) != 2 or not all(math.isfinite(v) for p in seg for v in p):
                    continue
                (x0, y0), (x1, y1) = seg
                axis, fixed, values = ("y", x0, (y0, y1)) if x0 == x1 else ("x", y0, (x0, x1))
                low, high = limits[axis]
                if min(values) < low or (logs[axis] and min(values) <= 0):
                    ends.append((axis, 0, fixed, low, color))
                if max(values) > high:
                    ends.append((axis, 1, fixed, high, color))
        for axis, side, fixed, edge, color in ends:
            xy = ([fixed], [edge]) if axis == "y" else ([edge], [fixed])
            ax.plot(*xy, _ARROWS[(axis, side)], color=color, ms=7, clip_on=False, zorder=5,
                    gid=CLIPPED, scalex=False, scaley=False)
        if ends:
            ax.set_xlim(ax.get_xlim())
            ax.set_ylim(ax.get_ylim())
        marked = marked or bool(ends)
    return marked


def _clean(values):
    return [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


def _errors(err):
    """Error bars as matplotlib takes them: None, one half-width per point, or (below, above)
    per point for an asymmetric interval; a missing one (NaN) draws no bar."""
    if err is None:
        return None
    if isinstance(err, tuple):
        return [_clean(err[0]), _clean(err[1])]
    return _clean(err)


# --- labels beside points, placed where they cover nothing ---------------------------------------
MOVABLE = "movable"  # the gid of a label _place_labels may move
# Offsets (points from the anchor) and alignments tried in order: right and above first.
OFFSETS = [((6, 5), "left", "bottom"), ((6, -5), "left", "top"), ((-6, 5), "right", "bottom"),
           ((-6, -5), "right", "top"), ((0, 9), "center", "bottom"), ((0, -9), "center", "top"),
           ((10, 0), "left", "center"), ((-10, 0), "right", "center"),
           ((14, 14), "left", "bottom"), ((-14, -14), "right", "top"),
           ((14, -14), "left", "top"), ((-14, 14), "right", "bottom")]


def marker_boxes(ax) -> list[Bbox]:
    """Display-space boxes of every marker drawn in the axes: the points of lines with a marker
    (error-bar caps included) and of scatter plots (rings, diamonds)."""
    dpi, boxes = ax.figure.dpi, []
    for line in ax.lines:
        if not line.get_visible() or line.get_marker() in (None, "None", "", " "):
            continue
        r = (line.get_markersize() + line.get_markeredgewidth()) * dpi / 72 / 2
        for x, y in line.get_transform().transform(line.get_xydata()):
            if math.isfinite(x) and math.isfinite(y):
                boxes.append(Bbox([[x - r, y - r], [x + r, y + r]]))
    for coll in ax.collections:
        if not isinstance(coll, PathCollection) or not coll.get_visible():
            continue
        sizes = list(coll.get_sizes()) or [36.0]
        points = coll.get_offset_transform().transform(coll.get_offsets())
        for k, (x, y) in enumerate(points):
            r = math.sqrt(sizes[k % len(sizes)]) * dpi / 72 / 2
            if math.isfinite(x) and math.isfinite(y):
                boxes.append(Bbox([[x - r, y - r], [x + r, y + r]]))
    return boxes


def _bar_boxes(ax) -> list[Bbox]:
    """Error bars' lines (a LineCollection per series), as thin boxes."""
    boxes = []
    for coll in ax.collections:
        if isinstance(coll, LineCollection) and coll.get_visible():
            for seg in coll.get_segments():
                pts = coll.get_transform().transform(seg)
                if len(pts) and all(math.isfinite(v) for p in pts for v in p):
                    boxes.append(Bbox([pts.min(axis=0) - 1, pts.max(axis=0) + 1]))
    return boxes


def _line_paths(ax) -> list:
    """The drawn lines (a series' line between its points), in display space: a label over a
    line reads as the line's, and hides where it goes."""
    return [line.get_transform().transform_path(line.get_path()) for line in ax.lines
            if line.get_visible() and line.get_linestyle() not in ("None", "none", "", " ")
            and len(line.get_xydata()) > 1]


def _crossed(box: Bbox, paths: list) -> float:
    """A cost for each line the box lies over: as much as a marker's."""
    return sum(box.width * box.height for p in paths if p.intersects_bbox(box, filled=False))


def _overlap(box: Bbox, others: list[Bbox]) -> float:
    area = 0.0
    for o in others:
        w = min(box.x1, o.x1) - max(box.x0, o.x0)
        h = min(box.y1, o.y1) - max(box.y0, o.y0)
        if w > 0 and h > 0:
            area += w * h
    return area


def _outside(box: Bbox, frame: Bbox) -> float:
    inside = Bbox.intersection(box, frame)
    whole = box.width * box.height
    return whole if inside is None else whole - inside.width * inside.height


def _place_labels(fig) -> None:
    """Each movable label at the first offset where it stays inside its axes and overlaps no
    marker, error bar, line or label placed before it; where none is clear, the least covered."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_gid() == MOVABLE]
        if not labels:
            continue
        frame = ax.get_window_extent(renderer)
        obstacles, lines = marker_boxes(ax) + _bar_boxes(ax), _line_paths(ax)
        placed: list[Bbox] = []
        for label in labels:
            best = None
            for offset, ha, va in OFFSETS:
                label.xyann = offset
                label.set_ha(ha)
                label.set_va(va)
                box = label.get_window_extent(renderer)
                cost = (4 * _outside(box, frame) + _overlap(box, obstacles)
                        + _overlap(box, placed) + _crossed(box, lines) / 2)
                if best is None or cost < best[0]:
                    best = (cost, offset, ha, va, box)
                if cost == 0:
                    break
            _, offset, ha, va, box = best
            label.xyann = offset
            label.set_ha(ha)
            label.set_va(va)
            placed.append(box)


def label_point(ax, text: str, x: float, y: float, **style) -> None:
    """A label beside the point (x, y), placed by _place_labels."""
    ax.annotate(text, (x, y), xytext=OFFSETS[0][0], textcoords="offset points",
                gid=MOVABLE, **style)


def _legend_outside(ax, handles=None, labels=None, fontsize: int = 8) -> None:
    """The legend under the axes, below the x tick labels and the x label: outside the data,
    whatever the data. The gap is in inches (the height of what is under the axes), so it holds
    when tight_layout resizes the axes afterwards."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    fig = ax.figure
    # The x axis alone is laid out (its ticks, labels and label placed for the current limits):
    # a draw of the whole figure here cost a full render per panel, most of `make analysis`.
    under = (ax.bbox.y0 - ax.xaxis.get_tightbbox(fig.canvas.get_renderer()).y0) / fig.dpi + 0.08
    anchor = ax.transAxes + ScaledTranslation(0, -under, fig.dpi_scale_trans)
    longest = max(len(str(label)) for label in labels)
    ncol = min(len(handles), 3 if longest < 24 else 2 if longest < 44 else 1)
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0),
              bbox_transform=anchor, ncol=ncol, fontsize=fontsize,
              frameon=False, borderaxespad=0)


COLORS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#9D755D"]


@dataclass(frozen=True)
class Series:
    """One line of points: means with their error bars (a 95% interval: one half-width per
    point, or (below, above) per point for an asymmetric one)."""
    label: str
    x: list
    y: list
    yerr: list | tuple | None = None
    xerr: list | tuple | None = None
    point_labels: list[str] | None = None  # text beside each point (e.g. its queue depth)
    marker: str = "o"
    line: bool = True  # False: points only (configurations that are not a sweep)
    host_bound: list[bool] | None = None  # per point: drawn hollow (the host's limit, not the drive's)
    thin: list[bool] | None = None  # per point: a † percentile, marked so it is not read off


@dataclass(frozen=True)
class Highlight:
    """A point worth a ring and a caption: the knee, the 90%-of-peak size."""
    x: float
    y: float
    text: str
    color: str = "#E45756"


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    xscale: str = "linear"  # linear | log2 | log
    yscale: str = "linear"  # linear | log
    xticks: list | None = None  # positions, labelled with xticklabels
    xticklabels: list[str] | None = None
    highlights: list[Highlight] = field(default_factory=list)
    hline: tuple[float, str] | None = None  # a dashed level across the panel: (y, label)
    from_zero: bool = False  # a linear value axis from 0 (a rate: a 10% wobble looks like 10%)
    whole_x: bool = False  # x counts whole seconds: ticks on whole numbers (not 1.25 s on 1 s data)


def log_axis(axis, subs: tuple[float, ...] = (1.0, 2.0, 5.0)) -> None:
    """A log axis with ticks at SUBS of every decade (1-2-5: a latency axis spanning 300 µs to
    5 ms gets 500, 1,000, 2,000 rather than a single 10^3), written as plain numbers, and no
    minor ticks: matplotlib's eight per decade, each a tick with an (empty) label to lay out,
    cost more of `make analysis` than the data did and told nothing the 1-2-5 ticks do not."""
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_locator(NullLocator())


FINE_SUBS = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)  # a log axis within a decade or so: 30k, 50k, 70k, 100k
MIN_LOG_TICKS = 4


def _enough_log_ticks(fig) -> None:
    """A base-10 log axis showing fewer than MIN_LOG_TICKS labelled ticks (a p99 from 30,000 to
    210,000 µs got 50,000, 100,000, 200,000 alone) gets the finer FINE_SUBS, so that every stretch
    of it can be read."""
    for ax in fig.axes:
        for axis, scale, (low, high) in ((ax.xaxis, ax.get_xscale(), sorted(ax.get_xlim())),
                                         (ax.yaxis, ax.get_yscale(), sorted(ax.get_ylim()))):
            locator = axis.get_major_locator()
            if scale != "log" or not isinstance(locator, LogLocator) or locator._base != 10:
                continue
            shown = [v for v in locator.tick_values(low, high) if low <= v <= high]
            if len(shown) < MIN_LOG_TICKS:
                log_axis(axis, subs=FINE_SUBS)


def log_label(label: str, scale: str) -> str:
    """An axis label that says its scale is logarithmic, unless it already does."""
    if scale == "linear" or "log" in label:
        return label
    return f"{label[:-1]}, log scale)" if label.endswith(")") else f"{label} (log scale)"


def _axis_scale(set_scale, scale: str, axis=None) -> None:
    if scale == "log2":
        set_scale("log", base=2)
        if axis is not None:
            axis.set_minor_locator(NullLocator())  # the ticks are the panel's own (xticks)
    elif scale != "linear":
        set_scale(scale)
        if scale == "log" and axis is not None:
            log_axis(axis)


DODGE = 2 ** 0.06  # on a log x axis, series with error bars sit this factor apart


def _dodged(panel: Panel, k: int, x: list) -> list:
    """Series k's x, moved a little aside on a log axis where several series with error bars
    share their x values, so that their bars do not lie on one another (the ticks stay)."""
    shared = sum(1 for s in panel.series if s.yerr is not None and list(s.x) == list(x))
    if panel.xscale not in ("log", "log2") or shared < 2 or panel.series[k].yerr is None:
        return x
    return [v * DODGE ** (k - (len(panel.series) - 1) / 2) for v in x]


def _on_its_point(panel: Panel, h: Highlight) -> Highlight:
    """A highlight moved with the point it rings, where that point's series was dodged."""
    for k, s in enumerate(panel.series):
        for x, dx, y in zip(s.x, _dodged(panel, k, s.x), s.y):
            if x == h.x and y == h.y:
                return Highlight(dx, h.y, h.text, h.color)
    return h


def series_colors(labels) -> dict[str, str]:
    """One colour per series label, in the order the labels first appear across a figure's
    panels: a series keeps its colour in every panel (R70/W30 is not blue in one and orange in
    the next because another panel lacks R100/W0)."""
    return {label: color for label, color in zip(dict.fromkeys(labels), COLORS * 3)}


HOST_BOUND = "hollow: host-bound (the host's limit, not the drive's)"
THIN_POINT = f"{THIN} too few I/Os above it to quote"


def _thin_points(ax, x: list, s: Series, color: str) -> bool:
    """A † beside each of the series' † points (a table marks the same value); True if any."""
    flagged = [(px, py) for px, py, f in zip(x, s.y, s.thin or []) if f]
    for px, py in flagged:
        ax.annotate(THIN, (px, py), xytext=(3, 3), textcoords="offset points", color=color,
                    fontsize=10, fontweight="bold")
    return bool(flagged)


def _host_bound_points(ax, x: list, s: Series, color: str) -> bool:
    """The series' host-bound points drawn again hollow over their filled marker; True if any."""
    flagged = [(px, py) for px, py, f in zip(x, s.y, s.host_bound or []) if f]
    if flagged:
        ax.plot(*zip(*flagged), s.marker, ms=7 if s.marker == "o" else 8, mfc="white",
                mec=color, mew=1.5, linestyle="none", zorder=3)
    return bool(flagged)


def _any_positive(panel: Panel) -> bool:
    """Whether any series of the panel has a value a log axis can show."""
    return any(0 < float(v) < math.inf for s in panel.series for v in s.y if v is not None)


def _draw_panel(ax, panel: Panel, colors: dict[str, str] | None = None) -> None:
    colors = colors or series_colors(s.label for s in panel.series)
    host_bound = thin = False
    for k, s in enumerate(panel.series):
        color, x = colors[s.label], _dodged(panel, k, s.x)
        # A missing mean (NaN) leaves a gap in the line rather than a point at zero.
        ax.errorbar(x, s.y, yerr=_errors(s.yerr), xerr=_errors(s.xerr), marker=s.marker,
                    ms=4 if s.marker == "o" else 6, capsize=3, color=color, label=s.label,
                    linestyle="-" if s.line else "none")
        host_bound = _host_bound_points(ax, x, s, color) or host_bound
        thin = _thin_points(ax, x, s, color) or thin
        for px, py, text in zip(x, s.y, s.point_labels or []):
            label_point(ax, text, px, py, fontsize=7, color=color)
    for h in panel.highlights:
        h = _on_its_point(panel, h)
        ax.scatter([h.x], [h.y], s=160, facecolors="none", edgecolors=h.color, linewidths=2,
                   zorder=4)
        if h.text:
            label_point(ax, h.text, h.x, h.y, fontsize=8, color=h.color, fontweight="bold")
    if panel.hline is not None:
        ax.axhline(panel.hline[0], color="#888", linestyle="--", linewidth=1,
                   label=panel.hline[1])
    if panel.xscale == "linear":
        ax.xaxis.set_major_formatter(PLAIN)
    if panel.yscale == "linear":
        ax.yaxis.set_major_formatter(PLAIN)
    _axis_scale(ax.set_xscale, panel.xscale, ax.xaxis)
    if panel.yscale == "log" and not _any_positive(panel):
        # nothing to draw (every value missing: a case that did not run, a column never
        # measured); a log axis over no data cannot be laid out, so the panel says so instead
        ax.text(0.5, 0.5, "no value to draw", transform=ax.transAxes, ha="center",
                va="center", color="#555")
        panel = replace(panel, yscale="linear")
        ax.yaxis.set_major_locator(NullLocator())
    _axis_scale(ax.set_yscale, panel.yscale, ax.yaxis)
    if panel.xticks is not None:
        ax.set_xticks(panel.xticks, panel.xticklabels or [str(t) for t in panel.xticks])
        ax.minorticks_off()
    elif panel.whole_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(log_label(panel.xlabel, panel.xscale))
    ax.set_ylabel(log_label(panel.ylabel, panel.yscale))
    ax.set_title(panel.title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.margins(x=0.06, y=0.12)  # room for the labels beside the outermost points
    if panel.from_zero and panel.yscale == "linear":
        ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    if host_bound:
        handles.append(Line2D([], [], marker="o", ms=7, mfc="white", mec="#555", mew=1.5,
                              linestyle="none"))
        labels.append(HOST_BOUND)
    if thin:
        handles.append(Line2D([], [], marker=f"${THIN}$", ms=8, color="#555", linestyle="none"))
        labels.append(THIN_POINT)
    _legend_outside(ax, handles, labels)


def line_chart(path: Path, panels: list[Panel], *, title: str = "", note: str = "") -> Path:
    """One or more panels side by side, each with lines of means and ± std error bars."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.8), dpi=120,
                             squeeze=False)
    colors = series_colors(s.label for p in panels for s in p.series)
    for ax, panel in zip(axes[0], panels):
        _draw_panel(ax, panel, colors)
    if title:
        fig.suptitle(title)
    return _save(fig, path, note)


@dataclass(frozen=True)
class Span:
    """A shaded stretch of the time axis (a phase: the burst, the steady-state window)."""
    start: float
    end: float
    label: str
    color: str = "#54A24B"


@dataclass(frozen=True)
class Event:
    """A moment on the time axis: a vertical line with its caption (the cliff, a throttle)."""
    t: float
    label: str
    color: str = "#E45756"


# Reference levels across a time series: each its own colour and dash, told apart in the legend.
LEVEL_STYLES = [("#555555", ":"), ("#B279A2", "-.")]
HEADROOM_SECOND = 1.25  # a second (right-hand) axis ends 25% above its highest value


def timeseries_chart(path: Path, t: list[float], y: list[float], *, ylabel: str, title: str,
                     label: str = "", spans: list[Span] = (), events: list[Event] = (),
                     levels: list[tuple[float, str]] = (), second: Series | None = None,
                     second_ylabel: str = "", yscale: str = "linear", note: str = "",
                     xlabel: str = "time since the start of the run (s)") -> Path:
    """A per-second series over time, phases shaded, events marked, an optional second series
    (e.g. the drive's temperature) on its own right-hand axis."""
    fig, ax = plt.subplots(figsize=(10, 4.8), dpi=120)
    ax.plot(t, y, color=COLORS[0], linewidth=1, label=label or ylabel)
    shaded: list[Span] = []
    for span in spans:
        # A shading over another would blend into a colour the legend lacks: a span that
        # overlaps one already shaded is hatched in its colour instead, over a clear face.
        if any(span.start < o.end and o.start < span.end for o in shaded):
            ax.axvspan(span.start, span.end, facecolor="none", edgecolor=span.color,
                       hatch="//", linewidth=0, alpha=0.6, label=span.label)
        else:
            ax.axvspan(span.start, span.end, color=span.color, alpha=0.12, label=span.label)
            shaded.append(span)
    for (value, text), (color, style) in zip(levels, LEVEL_STYLES * 3):
        ax.axhline(value, color=color, linestyle=style, linewidth=1.2, label=text)
    for ev in events:
        ax.axvline(ev.t, color=ev.color, linestyle="--", linewidth=1.2, label=ev.label)
    _axis_scale(ax.set_yscale, yscale, ax.yaxis)
    if yscale == "linear":
        ax.set_ylim(bottom=0)  # a rate drawn from zero: a 10% wobble looks like 10%
        ax.yaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(log_label(ylabel, yscale))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if second is not None and second.x:
        ax2 = ax.twinx()
        ax2.plot(second.x, second.y, color=COLORS[1], marker=".", linewidth=1,
                 label=second.label)
        ax2.set_ylabel(second_ylabel)
        # from zero, as a rate: a flat 50 °C is a flat line, not noise zoomed to 48-52 °C
        finite = [v for v in second.y if v is not None and math.isfinite(v)]
        if finite:
            ax2.set_ylim(min(0.0, *finite), max(finite) * HEADROOM_SECOND or 1.0)
        more = ax2.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    _legend_outside(ax, handles, labels, fontsize=7)
    return _save(fig, path, note)


@dataclass
class Heat:
    """One heatmap panel: a value per (column, row) cell; cells not measured stay blank."""
    title: str
    cells: dict[tuple[int, int], float]  # (x, y) -> value
    unit: str  # what the colour bar says
    marks: dict[tuple[int, int], str] = field(default_factory=dict)  # cell -> label ("peak")
    reverse: bool = False  # True: a low value is the good one (latency)


LOG_SPAN = 100  # a colour scale whose values span more than this factor is logarithmic


def color_norm(cells: dict) -> LogNorm | None:
    """A log colour scale when the values span more than LOG_SPAN (one 291 ms p99 would
    otherwise paint every other cell the same colour); None: linear."""
    values = [v for v in cells.values() if not math.isnan(v) and v > 0]
    if values and max(values) > LOG_SPAN * min(values):
        return LogNorm(min(values), max(values))
    return None


def heatmap(path: Path, panels: list[Heat], *, xlabel: str, ylabel: str, title: str = "",
            note: str = "", columns: int = 2) -> Path:
    """Panels over the same grid (e.g. jobs × depth, as SNIA's DIRTH test draws it), `columns`
    to a row: each cell's value written in it, a blank where nothing was measured, marked
    cells outlined and labelled."""
    xs = sorted({x for p in panels for x, _ in p.cells})
    ys = sorted({y for p in panels for _, y in p.cells})
    columns = min(columns, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, squeeze=False,
                             figsize=(1.0 * len(xs) * columns + 2.8 * columns,
                                      (0.6 * len(ys) + 1.8) * rows + 0.6))
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, panels):
        grid = [[p.cells.get((x, y), math.nan) for x in xs] for y in ys]
        cmap = plt.get_cmap("viridis_r" if p.reverse else "viridis").with_extremes(bad="#eeeeee")
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, norm=color_norm(p.cells))
        bar = fig.colorbar(image, ax=ax)
        # the unit above the bar, level: a rotated label on the right read upside down
        bar.ax.set_title(p.unit, fontsize=8)
        if isinstance(image.norm, LogNorm):
            log_axis(bar.ax.yaxis)
        else:
            bar.ax.yaxis.set_major_formatter(PLAIN)
        for (x, y), v in p.cells.items():
            if not math.isnan(v):
                text = md.num(v) + (f"\n{p.marks[(x, y)]}" if (x, y) in p.marks else "")
                ax.text(xs.index(x), ys.index(y), text, ha="center", va="center", fontsize=8,
                        color="white" if (image.norm(v) < 0.5) != p.reverse else "black")
        for x, y in p.marks:
            ax.add_patch(plt.Rectangle((xs.index(x) - 0.5, ys.index(y) - 0.5), 1, 1,
                                       fill=False, edgecolor="#E45756", linewidth=2))
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [str(y) for y in ys])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(p.title + (" (colour: log scale)" if isinstance(image.norm, LogNorm)
                                else ""), fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path, note)


@dataclass(frozen=True)
class SecondsRow:
    """One case of a per-second grid: its title and, per repetition, (label, seconds, IOPS,
    mean latency in µs); a repetition that logged no latency has NaNs there."""
    title: str
    reps: list[tuple[str, list[float], list[float], list[float]]]


def seconds_grid(path: Path, rows: list[SecondsRow], *, title: str, note: str = "") -> Path:
    """A row per case: IOPS each second (left) and mean latency each second (right), a line per
    repetition in one colour for all rows, so a stall, a drift or a cliff inside a mean shows.
    Each panel's y axis starts at 0: a 10% wobble looks like 10%. Where no case logged its
    latency (results from before every case did), IOPS alone, one column."""
    latency = any(not math.isnan(v) for row in rows for *_, lat in row.reps for v in lat)
    fig, axes = plt.subplots(len(rows), 1 + latency, figsize=(5 + 5 * latency,
                             0.9 + 1.9 * len(rows)), dpi=100, squeeze=False)
    colors = series_colors(label for row in rows for label, *_ in row.reps)
    for panels, row in zip(axes, rows):
        left, right = panels[0], panels[-1] if latency else None
        for label, t, iops, lat in row.reps:
            left.plot(t, iops, color=colors[label], linewidth=1)
            if right is not None and not all(math.isnan(v) for v in lat):
                right.plot(t, lat, color=colors[label], linewidth=1)
        unlogged = right is not None and not right.lines  # this case logged none (an older run)
        if unlogged:
            right.set_visible(False)
        for ax, ylabel in [(left, "IOPS")] + [(right, "mean latency (µs)")] * latency:
            if ax.lines:
                ax.set_ylim(bottom=0)
                ax.margins(y=0.1)
                ax.yaxis.set_major_formatter(PLAIN)
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
                ax.grid(alpha=0.3)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.set_title(row.title + (" (no latency logged)" if unlogged else ""), fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("second of the repetition", fontsize=8)
    # one legend for every row (the colours are the repetitions'), above the first row's titles
    handles = [Line2D([], [], color=c, linewidth=1) for c in colors.values()]
    axes[0][-1].legend(handles, list(colors), loc="lower right", bbox_to_anchor=(1, 1.12),
                       fontsize=8, ncols=len(colors), frameon=False)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    return _save(fig, path, note)
