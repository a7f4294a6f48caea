"""Bar charts: one bar per case (bar_chart) and bars side by side per group (grouped_bars). A
bar's value axis starts at zero, since a bar's length is its value, and ends with room above the
tallest error bar for it and its label; in bar_chart, an error bar reaching past REACH × the
tallest bar (or below zero) is cut at the axis and marked with its true end. The rules every figure keeps, and the helpers that keep
them, are in plots.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.render import markdown as md
from analysis.render.plots import (
    COLORS,
    PLAIN,
    _clean,
    _errors,
    _legend_outside,
    _save,
    label_point,
    log_axis,
    plt,
)

HEADROOM = 1.15  # the value axis of a bar chart ends 15% above the highest error bar
# An error bar reaching past this many times the tallest bar is cut at the axis' end, with a
# mark and its true end written there: one wide interval must not flatten every bar (issue 42:
# §2's 128 KiB write, 2,585 ± 8,406 µs, left the others at 1% of the height)
REACH = 2.0
CLIPPED = "interval cut at the axis (its end written)"


def _bar_headroom(ax, tops: list[float]) -> None:
    """A value axis from zero to 15% above the highest bar top (mean + std, or a marker)."""
    top = max(_clean(tops), default=0)
    if top > 0:
        ax.set_ylim(0, top * HEADROOM)


INTERVAL = "mean ± 95% interval"  # what a bar's or point's error bar is, in every legend
LABEL_BOX = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8}


def _intervals(means: list[float], errors) -> tuple[list[float], list[float]]:
    """Each bar's interval as (low, high) ends; a mean without an interval has both at it."""
    errs = _errors(errors)
    n = len(means)
    low = errs[0] if errs and isinstance(errs[0], list) else errs or [0.0] * n
    high = errs[1] if errs and isinstance(errs[0], list) else errs or [0.0] * n
    return ([m - e for m, e in zip(means, low)], [m + e for m, e in zip(means, high)])


def _cut_intervals(ax, x: list[float], means: list[float], errors) -> list[str]:
    """The bars' error bars drawn within a value axis from 0 to REACH × the tallest bar: an end
    beyond it is cut there and marked (▲ above, ▼ at 0) with its true value written beside the
    mark. Returns the marks drawn (none: nothing was cut)."""
    lows, highs = _intervals(means, errors)
    top = max([m for m in means if m > 0] or [1.0]) * REACH
    top = max(top, *[h for h in highs if h <= top], 0.0)
    cut: list[str] = []
    for xi, m, lo, hi in zip(x, means, lows, highs):
        shown_lo, shown_hi = max(lo, 0.0), min(hi, top)
        if hi > lo:
            ax.errorbar([xi], [m], yerr=[[m - shown_lo], [shown_hi - m]], fmt="none",
                        ecolor="black", capsize=6, zorder=2)
        for end, shown, mark in ((hi, shown_hi, "^"), (lo, shown_lo, "v")):
            if end != shown:
                cut.append(mark)
                ax.plot([xi], [shown], mark, color="black", ms=7, zorder=4, clip_on=False)
                ax.annotate(f"{md.num(end)}", (xi, shown), xytext=(7, -3 if mark == "^" else 3),
                            textcoords="offset points", fontsize=7, bbox=LABEL_BOX)
    ax.set_ylim(0, top * HEADROOM)
    return cut


def bar_chart(path: Path, labels: list[str], means: list[float], errors, *,
              ylabel: str, title: str, markers: list[float] | None = None, marker_errors=None,
              marker_name: str = "", marker_label: str = "", flagged: list[bool] | None = None,
              flag_label: str = "", note: str = "") -> Path:
    """Bars of means with their 95% interval; `flagged` bars hatched and named in the legend
    (host-bound). Optional markers (a p99, with its own interval) go in a panel of their own
    on a log axis: a tail ten times the mean on the bars' linear axis would flatten them. Each
    value is written beside its own bar top or marker, so a mean never reads as a p99."""
    width = max(7.5, 1.3 * len(labels) + 2.0)
    if markers is None:
        fig, ax = plt.subplots(figsize=(width, 4.6), dpi=120)
        tail_ax = None
    else:
        fig, (ax, tail_ax) = plt.subplots(1, 2, figsize=(width * 1.6, 4.6), dpi=120)
    x = list(range(len(labels)))
    clean = _clean(means)
    flagged = flagged or [False] * len(x)
    ax.bar(x, clean, color="#4C78A8", label=INTERVAL,
           hatch=[("//" if f else None) for f in flagged], edgecolor="white")
    cut = _cut_intervals(ax, x, clean, errors)
    for i, mean in enumerate(means):
        label_point(ax, md.num(mean), i, _clean([mean])[0], fontsize=8, bbox=LABEL_BOX)
    ax.set_xticks(x, labels)
    ax.yaxis.set_major_formatter(PLAIN)
    ax.set_ylabel(ylabel)
    ax.set_title(title if tail_ax is None else "mean")
    ax.grid(axis="y", alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    if any(flagged):  # the legend's bar is the plain one, and the hatched one says what it is
        handles = [Patch(color="#4C78A8", label=INTERVAL), *handles[1:],
                   Patch(facecolor="#4C78A8", hatch="//", edgecolor="white", label=flag_label)]
        names = [INTERVAL, *names[1:], flag_label]
    if cut:
        handles.append(Line2D([], [], marker=cut[0], color="black", ls="none", ms=6))
        names.append(CLIPPED)
    _legend_outside(ax, handles, names)
    if tail_ax is not None:
        tail_ax.errorbar(x, _clean(markers), yerr=_errors(marker_errors), fmt="D",
                         color="#E45756", capsize=3, zorder=3, label=marker_label)
        for i, m in enumerate(markers):
            label_point(tail_ax, f"{marker_name} {md.num(m)}", i, _clean([m])[0],
                        fontsize=8, color="#E45756", bbox=LABEL_BOX)
        tail_ax.set_yscale("log")
        log_axis(tail_ax.yaxis)
        tail_ax.set_xticks(x, labels)
        tail_ax.set_xlim(-0.5, len(x) - 0.5)
        tail_ax.set_ylabel(f"{ylabel}, log scale")
        tail_ax.set_title(marker_name)
        tail_ax.grid(axis="y", alpha=0.3)
        _legend_outside(tail_ax)
        fig.suptitle(title)
    return _save(fig, path, note)


@dataclass(frozen=True)
class BarSet:
    """One bar per group: its means and the half-widths of their 95% intervals (NaN: no bar)."""
    label: str
    means: list[float]
    errors: list[float]


def grouped_bars(path: Path, groups: list[str], sets: list[BarSet], *, ylabel: str, title: str,
                 note: str = "") -> Path:
    """Bars per group, one per set, side by side (a mix's read, write and total), from zero: a
    bar's length is its value, which a log axis would not keep (draw points there instead)."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.4 * len(groups) + 2), 4.8), dpi=120)
    x = list(range(len(groups)))
    width = 0.8 / len(sets)
    for i, (color, s) in enumerate(zip(COLORS * 3, sets)):
        pos = [g - 0.4 + width * (i + 0.5) for g in x]
        means = _clean(s.means)
        ax.bar(pos, means, width, color=color, label=s.label)
        drawn = [(p, m, e) for p, m, e in zip(pos, means, s.errors)
                 if e is not None and not math.isnan(e)]  # no interval (no I/O): no bar
        if drawn:
            ax.errorbar(*zip(*[(p, m) for p, m, _ in drawn]), yerr=[e for *_, e in drawn],
                        fmt="none", ecolor="black", capsize=4)
    ax.set_xticks(x, groups)
    ax.yaxis.set_major_formatter(PLAIN)
    _bar_headroom(ax, [m + e for st in sets for m, e in zip(_clean(st.means),
                                                               _clean(st.errors))])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return _save(fig, path, note)
