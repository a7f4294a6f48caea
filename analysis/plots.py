"""Figures shared by the sections. Every point carries its error bar from the repetitions."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; lab boxes and CI have no display
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter


def _save(fig, path: Path, note: str = "") -> Path:
    """Write the figure (with a small note at the bottom right, if any) and free it."""
    if note:
        fig.text(0.99, 0.01, note, ha="right", va="bottom", fontsize=7, color="#555")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _clean(values):
    return [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


def bar_chart(path: Path, labels: list[str], means: list[float], stds: list[float], *,
              ylabel: str, title: str, markers: list[float] | None = None,
              marker_label: str = "", note: str = "") -> Path:
    """Bars of means with ±1 std error bars; optional markers (e.g. p99) on each bar."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    x = range(len(labels))
    bars = ax.bar(x, _clean(means), yerr=_clean(stds), capsize=6, color="#4C78A8",
                  label="mean ± std over repetitions")
    if markers is not None:
        ax.scatter(list(x), _clean(markers), marker="D", color="#E45756", zorder=3,
                   label=marker_label)
    for bar, mean in zip(bars, means):
        ax.annotate(f"{mean:,.0f}" if mean >= 100 else f"{mean:,.1f}",
                    (bar.get_x() + bar.get_width() / 2, 0), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", color="white",
                    fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
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


def _axis_scale(set_scale, scale: str, axis=None) -> None:
    if scale == "log2":
        set_scale("log", base=2)
    elif scale != "linear":
        set_scale(scale)
        if scale == "log" and axis is not None:
            # 1-2-5 ticks written as plain numbers: a latency axis spanning 300 µs to 5 ms
            # gets 500, 1,000, 2,000 rather than a single 10^3.
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1
                                                   else f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())


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
    _axis_scale(ax.set_xscale, panel.xscale)
    _axis_scale(ax.set_yscale, panel.yscale, ax.yaxis)
    if panel.xticks is not None:
        ax.set_xticks(panel.xticks, panel.xticklabels or [str(t) for t in panel.xticks])
        ax.minorticks_off()
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)


def line_chart(path: Path, panels: list[Panel], *, title: str = "", note: str = "") -> Path:
    """One or more panels side by side, each with lines of means and ± std error bars."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.4), dpi=120,
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
    fig, ax = plt.subplots(figsize=(max(6.5, 1.4 * len(groups) + 2), 4.4), dpi=120)
    x = list(range(len(groups)))
    width = 0.8 / len(sets)
    for i, (color, s) in enumerate(zip(COLORS * 3, sets)):
        pos = [g - 0.4 + width * (i + 0.5) for g in x]
        means = _clean(s.means)
        ax.bar(pos, means, width, color=color, label=s.label)
        ax.errorbar(pos, means, yerr=_clean(s.stds), fmt="none", ecolor="black", capsize=4)
    ax.set_xticks(x, groups)
    _axis_scale(ax.set_yscale, yscale, ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
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
                     second_ylabel: str = "", yscale: str = "linear", note: str = "") -> Path:
    """A per-second series over time, phases shaded, events marked, an optional second series
    (e.g. the drive's temperature) on its own right-hand axis."""
    fig, ax = plt.subplots(figsize=(10, 4.4), dpi=120)
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
    ax.set_xlabel("time since the start of the run (s)")
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
    ax.legend(handles, labels, fontsize=7, loc="lower left")
    return _save(fig, path, note)
