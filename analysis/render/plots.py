"""Figures shared by the sections. Every point carries its error bar from the repetitions.

Every figure writes its numbers the way the snippets do (13,584 on the axis as on the bar), keeps
its legend outside the axes, where it cannot cover a bar, a point or an error bar, and leaves
headroom above the tallest bar for its error bar and label."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; lab boxes and CI have no display
import matplotlib.pyplot as plt
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator
from matplotlib.transforms import ScaledTranslation

from analysis.render import markdown as md

# Tick labels as the tables write numbers: thousands separators, no trailing zeros.
PLAIN = FuncFormatter(lambda v, _: f"{v:,.10g}")
HEADROOM = 1.15  # the value axis of a bar chart ends 15% above the highest error bar


def _save(fig, path: Path, note: str = "") -> Path:
    """Write the figure (with a small note at the bottom right, if any) and free it."""
    if note:
        fig.text(0.99, 0.01, note, ha="right", va="bottom", fontsize=7, color="#555")
    # tight_layout's engine, run once rather than through fig.tight_layout(): that one leaves a
    # placeholder engine on the figure, for which savefig draws the whole figure once more.
    TightLayoutEngine().execute(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _clean(values):
    return [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


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
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0),
              bbox_transform=anchor, ncol=min(len(handles), 3), fontsize=fontsize,
              frameon=False, borderaxespad=0)


def _bar_headroom(ax, tops: list[float]) -> None:
    """A value axis from zero to 15% above the highest bar top (mean + std, or a marker)."""
    top = max(_clean(tops), default=0)
    if top > 0:
        ax.set_ylim(0, top * HEADROOM)


def bar_chart(path: Path, labels: list[str], means: list[float], stds: list[float], *,
              ylabel: str, title: str, markers: list[float] | None = None,
              marker_label: str = "", note: str = "") -> Path:
    """Bars of means with ±1 std error bars; optional markers (e.g. p99) on each bar."""
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=120)
    x = range(len(labels))
    tops = [m + s for m, s in zip(_clean(means), _clean(stds))]
    ax.bar(x, _clean(means), yerr=_clean(stds), capsize=6, color="#4C78A8",
           label="mean ± std over repetitions")
    if markers is not None:
        ax.scatter(list(x), _clean(markers), marker="D", color="#E45756", zorder=3,
                   label=marker_label)
        tops = [max(t, m) for t, m in zip(tops, _clean(markers))]
    for i, (mean, top) in enumerate(zip(means, tops)):
        # The mean above its error bar (and marker), in the snippet's format.
        ax.annotate(md.num(mean), (i, top), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.yaxis.set_major_formatter(PLAIN)
    _bar_headroom(ax, tops)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return _save(fig, path, note)


COLORS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#9D755D"]


@dataclass(frozen=True)
class Series:
    """One line of points: means with their error bars (± std over the repetitions)."""
    label: str
    x: list
    y: list
    yerr: list | None = None
    xerr: list | None = None
    point_labels: list[str] | None = None  # text beside each point (e.g. its queue depth)


@dataclass(frozen=True)
class Highlight:
    """A point worth a ring and a caption: the knee, the 90%-of-peak size."""
    x: float
    y: float
    text: str
    color: str = "#E45756"
    offset: tuple[int, int] = (8, 8)  # where the caption sits, in points from the ring


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


def log_axis(axis, subs: tuple[float, ...] = (1.0, 2.0, 5.0)) -> None:
    """A log axis with ticks at SUBS of every decade (1-2-5: a latency axis spanning 300 µs to
    5 ms gets 500, 1,000, 2,000 rather than a single 10^3), written as plain numbers, and no
    minor ticks: matplotlib's eight per decade, each a tick with an (empty) label to lay out,
    cost more of `make analysis` than the data did and told nothing the 1-2-5 ticks do not."""
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_locator(NullLocator())


def _axis_scale(set_scale, scale: str, axis=None) -> None:
    if scale == "log2":
        set_scale("log", base=2)
        if axis is not None:
            axis.set_minor_locator(NullLocator())  # the ticks are the panel's own (xticks)
    elif scale != "linear":
        set_scale(scale)
        if scale == "log" and axis is not None:
            log_axis(axis)


def _draw_panel(ax, panel: Panel) -> None:
    for color, s in zip(COLORS * 3, panel.series):
        # A missing mean (NaN) leaves a gap in the line rather than a point at zero.
        ax.errorbar(s.x, s.y, yerr=None if s.yerr is None else _clean(s.yerr),
                    xerr=None if s.xerr is None else _clean(s.xerr), marker="o", ms=4,
                    capsize=3, color=color, label=s.label)
        for x, y, text in zip(s.x, s.y, s.point_labels or []):
            ax.annotate(text, (x, y), xytext=(4, -10), textcoords="offset points", fontsize=7,
                        color=color)
    for h in panel.highlights:
        ax.scatter([h.x], [h.y], s=160, facecolors="none", edgecolors=h.color, linewidths=2,
                   zorder=4)
        ax.annotate(h.text, (h.x, h.y), xytext=h.offset, textcoords="offset points", fontsize=8,
                    color=h.color, fontweight="bold")
    if panel.hline is not None:
        ax.axhline(panel.hline[0], color="#888", linestyle="--", linewidth=1,
                   label=panel.hline[1])
    if panel.xscale == "linear":
        ax.xaxis.set_major_formatter(PLAIN)
    if panel.yscale == "linear":
        ax.yaxis.set_major_formatter(PLAIN)
    _axis_scale(ax.set_xscale, panel.xscale, ax.xaxis)
    _axis_scale(ax.set_yscale, panel.yscale, ax.yaxis)
    if panel.xticks is not None:
        ax.set_xticks(panel.xticks, panel.xticklabels or [str(t) for t in panel.xticks])
        ax.minorticks_off()
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.margins(y=0.08)  # room for the highlights' captions
    _legend_outside(ax)


def line_chart(path: Path, panels: list[Panel], *, title: str = "", note: str = "") -> Path:
    """One or more panels side by side, each with lines of means and ± std error bars."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.8), dpi=120,
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        _draw_panel(ax, panel)
    if title:
        fig.suptitle(title)
    return _save(fig, path, note)


@dataclass(frozen=True)
class BarSet:
    """One bar per group: its means and ± std error bars (the std may be NaN: no bar)."""
    label: str
    means: list[float]
    stds: list[float]


def grouped_bars(path: Path, groups: list[str], sets: list[BarSet], *, ylabel: str, title: str,
                 yscale: str = "linear", note: str = "") -> Path:
    """Bars per group, one per set, side by side (a mix's read, write and total)."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.4 * len(groups) + 2), 4.8), dpi=120)
    x = list(range(len(groups)))
    width = 0.8 / len(sets)
    for i, (color, s) in enumerate(zip(COLORS * 3, sets)):
        pos = [g - 0.4 + width * (i + 0.5) for g in x]
        means = _clean(s.means)
        ax.bar(pos, means, width, color=color, label=s.label)
        ax.errorbar(pos, means, yerr=_clean(s.stds), fmt="none", ecolor="black", capsize=4)
    ax.set_xticks(x, groups)
    if yscale == "linear":
        ax.yaxis.set_major_formatter(PLAIN)
        _bar_headroom(ax, [m + s for st in sets for m, s in zip(_clean(st.means),
                                                                   _clean(st.stds))])
    _axis_scale(ax.set_yscale, yscale, ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
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


def timeseries_chart(path: Path, t: list[float], y: list[float], *, ylabel: str, title: str,
                     label: str = "", spans: list[Span] = (), events: list[Event] = (),
                     levels: list[tuple[float, str]] = (), second: Series | None = None,
                     second_ylabel: str = "", yscale: str = "linear", note: str = "",
                     xlabel: str = "time since the start of the run (s)") -> Path:
    """A per-second series over time, phases shaded, events marked, an optional second series
    (e.g. the drive's temperature) on its own right-hand axis."""
    fig, ax = plt.subplots(figsize=(10, 4.8), dpi=120)
    ax.plot(t, y, color=COLORS[0], linewidth=1, label=label or ylabel)
    for span in spans:
        ax.axvspan(span.start, span.end, color=span.color, alpha=0.12, label=span.label)
    for value, text in levels:
        ax.axhline(value, color="#555", linestyle=":", linewidth=1, label=text)
    for ev in events:
        ax.axvline(ev.t, color=ev.color, linestyle="--", linewidth=1.2, label=ev.label)
    _axis_scale(ax.set_yscale, yscale, ax.yaxis)
    if yscale == "linear":
        ax.set_ylim(bottom=0)  # a rate drawn from zero: a 10% wobble looks like 10%
        ax.yaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if second is not None and second.x:
        ax2 = ax.twinx()
        ax2.plot(second.x, second.y, color=COLORS[1], marker=".", linewidth=1,
                 label=second.label)
        ax2.set_ylabel(second_ylabel)
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
                             figsize=(0.75 * len(xs) * columns + 2.5 * columns,
                                      (0.45 * len(ys) + 1.6) * rows + 0.6))
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, panels):
        grid = [[p.cells.get((x, y), math.nan) for x in xs] for y in ys]
        cmap = plt.get_cmap("viridis_r" if p.reverse else "viridis").with_extremes(bad="#eeeeee")
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap)
        bar = fig.colorbar(image, ax=ax)
        bar.set_label(p.unit)
        bar.ax.yaxis.set_major_formatter(PLAIN)
        for (x, y), v in p.cells.items():
            if not math.isnan(v):
                text = md.num(v) + (f"\n{p.marks[(x, y)]}" if (x, y) in p.marks else "")
                ax.text(xs.index(x), ys.index(y), text, ha="center", va="center", fontsize=6,
                        color="white" if (image.norm(v) < 0.5) != p.reverse else "black")
        for x, y in p.marks:
            ax.add_patch(plt.Rectangle((xs.index(x) - 0.5, ys.index(y) - 0.5), 1, 1,
                                       fill=False, edgecolor="#E45756", linewidth=2))
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [str(y) for y in ys])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(p.title, fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path, note)
