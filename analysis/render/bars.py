"""Bar charts: one bar per case (bar_chart) and bars side by side per group (grouped_bars). A
bar's value axis starts at zero, since a bar's length is its value, and ends with room above the
tallest error bar for it and its label. The rules every figure keeps, and the helpers that keep
them, are in plots.py."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

from matplotlib.patches import Patch

from analysis.render import markdown as md
from analysis.render.claims import THIN
from analysis.render.plots import (
    COLORS,
    PLAIN,
    _clean,
    _errors,
    _legend_outside,
    _save,
    label_point,
    log_axis,
    log_label,
    plt,
)

HEADROOM = 1.15  # the value axis of a bar chart ends 15% above the highest error bar
# ... unless an interval reaches beyond REACH times the highest value: the axis then ends there,
# and the interval runs off it with a mark (plots._mark_clipped), rather than one wide interval
# squeezing every bar into the bottom of the chart.
REACH = 2.0


def _bar_headroom(ax, tops: list[float], values: list[float]) -> None:
    """A value axis from zero to 15% above the highest bar top (mean + its interval, or a
    marker), or above REACH times the highest value where an interval runs further."""
    top = max(_clean(tops), default=0)
    highest = max(_clean(values), default=0)
    if highest > 0:
        top = min(top, REACH * highest)
    if top > 0:
        ax.set_ylim(0, top * HEADROOM)


def wrapped(label: str, width: int = 12) -> str:
    """A tick label in lines of at most `width` characters where words allow: side by side,
    '4 KiB random write' and '128 KiB sequential read' ran into each other. A word longer
    than the width stays whole ("(incompressible)" had been cut "(incompressi" / "ble)")."""
    return "\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
                     for line in label.split("\n"))


INTERVAL = "mean ± 95% interval"  # what a bar's or point's error bar is, in every legend
LABEL_BOX = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8}


def _marker_panel(ax, labels: list[str], markers: list[float], errors, *, name: str,
                  legend: str, ylabel: str, flagged: list[bool], flag_label: str,
                  thin: list[bool]) -> None:
    """The markers (a p99 per case) as points with their intervals on a log axis of their own:
    on the bars' linear axis one p99 interval to 26,000 µs left the means a sliver at the
    bottom."""
    x = list(range(len(labels)))
    # a case without a value (NaN) has no point: drawn at 0, a log axis cut it to an arrow
    have = [i for i, m in enumerate(markers) if m is not None and math.isfinite(m)]
    errs = _errors(errors)
    if errs is not None:
        errs = ([[side[i] for i in have] for side in errs] if isinstance(errs[0], list)
                else [errs[i] for i in have])
    ax.errorbar([x[i] for i in have], [markers[i] for i in have], yerr=errs, fmt="D",
                color="#E45756", capsize=3, label=legend)
    for i, m in enumerate(markers):
        if m is None or not math.isfinite(m):  # no value (a row split by regime): no label
            continue
        # a percentile too few I/Os back keeps its mark (claims rule 1: never quoted bare)
        label_point(ax, f"{name} {md.num(m)}" + (f" {THIN}" if thin[i] else ""), i,
                    _clean([m])[0], fontsize=8, color="#E45756", bbox=LABEL_BOX)
    hollow = [(i, markers[i]) for i in have if flagged[i]]
    if hollow:  # a host-bound case's point hollow, as the hatched bar beside it
        ax.plot(*zip(*hollow), "D", ms=8, mfc="white", mec="#E45756", mew=1.5,
                linestyle="none", zorder=3, label=flag_label)
    ax.set_yscale("log")
    log_axis(ax.yaxis)
    ax.set_xticks(x, labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.margins(y=0.15)
    ax.set_ylabel(log_label(ylabel, "log"))
    ax.set_title(name, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)


def bar_chart(path: Path, labels: list[str], means: list[float], errors, *,
              ylabel: str, title: str, markers: list[float] | None = None, marker_errors=None,
              marker_name: str = "", marker_label: str = "", flagged: list[bool] | None = None,
              flag_label: str = "", note: str = "", marker_thin: list[bool] | None = None) -> Path:
    """Bars of means with their 95% interval; optional markers (e.g. p99, with its own
    interval) in a panel of their own, on a log axis; `flagged` bars hatched and named in the
    legend (host-bound); a `marker_thin` marker's label carries † (too few I/Os above it)."""
    width = max(7.5, 1.3 * len(labels) + 2.0)
    flagged = flagged or [False] * len(labels)
    labels = [wrapped(label) for label in labels]
    if markers is None:
        fig, ax = plt.subplots(figsize=(width, 4.6), dpi=120)
    else:
        fig, (ax, right) = plt.subplots(1, 2, figsize=(2 * width * 0.75, 4.6), dpi=120)
        _marker_panel(right, labels, markers, marker_errors, name=marker_name,
                      legend=marker_label, ylabel=ylabel, flagged=flagged,
                      flag_label=f"hollow: {flag_label}",
                      thin=marker_thin or [False] * len(labels))
        fig.suptitle(title)
    x = list(range(len(labels)))
    errs = _errors(errors)
    high = errs[1] if errs and isinstance(errs[0], list) else errs or [0.0] * len(x)
    tops = [m + e for m, e in zip(_clean(means), high)]
    ax.bar(x, _clean(means), yerr=errs, capsize=6, color="#4C78A8", label=INTERVAL,
           hatch=[("//" if f else None) for f in flagged], edgecolor="white")
    for i, mean in enumerate(means):
        label_point(ax, f"mean {md.num(mean)}" if markers is not None else md.num(mean),
                    i, _clean([mean])[0], fontsize=8, bbox=LABEL_BOX)
    ax.set_xticks(x, labels)
    ax.yaxis.set_major_formatter(PLAIN)
    _bar_headroom(ax, tops, means)
    ax.set_ylabel(ylabel)
    ax.set_title("mean" if markers is not None else title,
                 fontsize=10 if markers is not None else None)
    ax.grid(axis="y", alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    if any(flagged):  # the legend's bar is the plain one, and the hatched one says what it is
        handles = [Patch(color="#4C78A8", label=INTERVAL), *handles[1:],
                   Patch(facecolor="#4C78A8", hatch="//", edgecolor="white", label=flag_label)]
        names = [INTERVAL, *names[1:], flag_label]
    _legend_outside(ax, handles, names)
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
                                                               _clean(st.errors))],
                  [m for st in sets for m in st.means])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return _save(fig, path, note)
