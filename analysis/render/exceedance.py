"""Latency distributions as exceedance curves: figs/<section>_exceedance.png and its data,
tables/<section>_exceedance.csv.

The exceedance of a latency x is the share of I/Os slower than x, 1 - CDF(x), drawn on a log y
axis so the tail gets as much room as the median (the form of ezFIO's plots): the curve crosses
10^-2 at p99, 10^-3 at p99.9, 10^-4 at p99.99. It is read from the json+ histogram bins of all
the case's repetitions summed (analysis.core.stats.merge_bins), the same pooled bins the tables'
percentiles come from, so a marker at p50/p99/p99.9 (and p99.99, where the samples reach it)
sits exactly on the table's number. The y axis goes down to 10^-4 when some curve has 10,000
samples or more, else to one sample's share: below that, a histogram says nothing.

The CSV holds each curve point: latency_us (a bin's value), above (I/Os slower than it), samples
(N) and exceedance (above / N), so the curve can be checked against fio's own percentiles.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from matplotlib.ticker import NullLocator

from analysis.core.stats import merge_bins, percentiles_from_bins
from analysis.render.plots import COLORS, _legend_outside, _save, log_axis, plt
from analysis.rules.cases import load_case

MARKER_PCTS = (50.0, 99.0, 99.9, 99.99)
FLOOR = 1e-4  # p99.99: the deepest tail the figure shows


@dataclass(frozen=True)
class Curve:
    label: str
    bins: dict  # merged json+ bins {ns: count}, ascending
    source: str  # 'lat' (total latency) or 'clat' (completion only)

    @property
    def samples(self) -> int:
        return sum(self.bins.values())

    def points(self) -> list[tuple[float, int, float]]:
        """(latency µs, I/Os slower, exceedance) at each bin's value."""
        n, seen, out = self.samples, 0, []
        for value, count in self.bins.items():
            seen += count
            out.append((value / 1000, n - seen, (n - seen) / n))
        return out

    def markers(self) -> dict[float, float]:
        """{p: latency µs} of the percentiles the samples reach (at least one I/O above p)."""
        reached = [p for p in MARKER_PCTS if self.samples * (1 - p / 100) >= 1]
        return {p: v / 1000 for p, v in percentiles_from_bins(self.bins, reached).items()}


@dataclass(frozen=True)
class Panel:
    title: str
    curves: list[Curve]


def case_curve(results_dir: Path, case: str, direction: str, label: str) -> Curve | None:
    """The merged bins of one case's direction over its repetitions; None without json+ bins."""
    reps = [g.directions[direction] for g in load_case(Path(results_dir) / case).reps
            if direction in g.directions]
    if not reps or not all(d.bins for d in reps):
        return None
    return Curve(label, merge_bins(d.bins for d in reps), reps[0].pct_source)


def rows_panel(results_dir: Path, title: str, rows, label) -> Panel:
    """A panel with a curve per table row (its case and direction), labelled by label(row)."""
    curves = [case_curve(results_dir, r.case, r.direction, label(r)) for r in rows]
    return Panel(title, [c for c in curves if c is not None])


def draw(path: Path, panels: list[Panel], title: str) -> Path | None:
    """One panel per group of curves, side by side; None when there is no curve at all."""
    panels = [p for p in panels if p.curves]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.0), dpi=120,
                             squeeze=False)
    # one colour per series over every panel: a mix is the same colour in reads and writes
    names = list(dict.fromkeys(c.label for panel in panels for c in panel.curves))
    colour = dict(zip(names, COLORS * 3))
    for ax, panel in zip(axes[0], panels):
        most = max(c.samples for c in panel.curves)
        floor = max(FLOOR, 1 / most)
        for c in panel.curves:
            color = colour[c.label]
            pts = [p for p in c.points() if p[2] > 0]  # the last bin: nothing above, log(0)
            first = c.points()[0][0]
            ax.step([first] + [p[0] for p in pts], [1.0] + [p[2] for p in pts], where="post",
                    color=color, linewidth=1.4, label=f"{c.label} ({c.samples:,} I/Os)")
            markers = c.markers()
            ax.plot(list(markers.values()), [1 - p / 100 for p in markers], "o", ms=4,
                    color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        # 1-2-5 latency ticks where they fit; over more than two decades their labels would
        # run into each other: 1-3 up to four, so a p50 of 253 µs between 100 and 1,000 can
        # still be read (issue 42), then each decade alone
        low, high = ax.get_xlim()
        log_axis(ax.xaxis, subs=(1.0, 2.0, 5.0) if high <= 300 * low else
                 (1.0, 3.0) if high <= 1e4 * low else (1.0,))
        log_axis(ax.yaxis, subs=(1.0,))  # 1, 0.1, 0.01...: the nines
        ax.set_ylim(floor * 0.7, 1.3)
        levels = [p for p in MARKER_PCTS if 1 - p / 100 >= floor * 0.99]
        for p in levels:  # each percentile's level, named on a right-hand axis
            ax.axhline(1 - p / 100, color="#bbb", linewidth=0.6, linestyle=":")
        right = ax.secondary_yaxis("right")
        right.set_yticks([1 - p / 100 for p in levels], [f"p{p:g}" for p in levels],
                         fontsize=7, color="#777")
        right.yaxis.set_minor_locator(NullLocator())
        kind = "total" if all(c.source == "lat" for c in panel.curves) else "completion"
        ax.set_xlabel(f"{kind} latency (µs)")
        ax.set_ylabel("share of I/Os slower (1 − CDF)")
        ax.set_title(panel.title, fontsize=10)
        ax.grid(alpha=0.3, which="major")
        # under the axes: inside, it covered the tail where the curves part (1e-4 to 1e-3)
        _legend_outside(ax, fontsize=7)
    fig.suptitle(title)
    return _save(fig, path, "merged json+ bins of all repetitions; dots: the table's p50, p99, "
                            "p99.9 (and p99.99 where the samples reach it)")


def write_data(path: Path, panels: list[Panel]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["panel", "curve", "latency_us", "above", "samples", "exceedance"])
        for panel in panels:
            for c in panel.curves:
                for latency, above, share in c.points():
                    out.writerow([panel.title, c.label, f"{latency:.10g}", above, c.samples,
                                  f"{share:.10g}"])
    return path


def figure(section: str) -> str:
    return f"figs/{section}_exceedance.png"


def write(run, section: str, panels: list[Panel], title: str) -> list[str]:
    """The figure and its CSV for a section's analysis run (an analysis.sections.common.SectionRun):
    the paths written (figs/..., tables/...), none without json+ bins."""
    data = f"tables/{section}_exceedance.csv"
    if draw(run.ws.path(figure(section)), panels, title) is None:
        return []
    write_data(run.ws.path(data), panels)
    return [figure(section), data]
