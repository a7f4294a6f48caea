"""§5's figures: the throughput-latency curve, throughput, mean latency and percentiles by depth,
the tails at chosen depths, and the latency distributions (analysis.render.exceedance). Each
draws the sweeps of analysis.sections.qd_sweep (its Sweep: a pattern's rows over the depths and
what was found there).
"""

from __future__ import annotations

import pandas as pd

from analysis.core.workspace import Workspace
from analysis.render import claims, exceedance
from analysis.render import markdown as md
from analysis.render.plots import Highlight, Panel, Series, line_chart
from analysis.sections.common import interval, interval_note
from analysis.sections.peak_part import qd_label

FIG_CURVE = "figs/qd_sweep_curve.png"
FIG_THROUGHPUT = "figs/qd_sweep_throughput.png"
FIG_LATENCY = "figs/qd_sweep_latency.png"
FIG_PERCENTILES = "figs/qd_sweep_percentiles.png"
FIG_TAILS = "figs/qd_sweep_tails.png"
PCTS = [("p50", "lat_p50_us"), ("p95", "lat_p95_us"), ("p99", "lat_p99_us"),
        ("p99.9", "lat_p99_9_us")]


def _depth_ticks(found: list) -> list[int]:
    return sorted({int(d) for s in found for d in s.rows.outstanding})


def _marks(s, y_col: str, x_col: str | None = None) -> list[Highlight]:
    """Rings on the knee and on the first depth at 90% of the peak, each captioned."""
    out = []
    for depth, text, color in ((s.knee.x if s.knee else None, "knee", "#E45756"),
                               (s.outstanding_90, "90% of peak", "#54A24B")):
        if depth is None:
            continue
        r = s.at(depth)
        out.append(Highlight(r[x_col] if x_col else depth, r[y_col], f"{text} ({s.qd(depth)})",
                             color))
    return out


def _short(r) -> str:
    return qd_label(r).replace("QD ", "QD").replace(" × ", "×").replace(" jobs", "j")


def _beyond(s, peaks: pd.DataFrame) -> pd.DataFrame:
    """The configurations of the sweep's pattern measured beyond it (the peak search, other
    job counts), for the curve: none for a pattern the search did not cover."""
    if peaks is None or peaks.empty or s.peak is None:
        return peaks.iloc[0:0] if peaks is not None else pd.DataFrame()
    rows = peaks[(peaks.rw == s.peak.rw) & (peaks.bs == s.peak.bs)]
    return rows[~rows.case.isin(s.rows.case)].sort_values("outstanding")


def _flags(rows: pd.DataFrame) -> list[bool] | None:
    """The table's host_bound column, per point (drawn hollow)."""
    return [bool(v) for v in rows.host_bound] if "host_bound" in rows else None


def _curve_panel(s, peaks: pd.DataFrame) -> Panel:
    """IOPS against mean latency: the sweep as a line, the peak search's configurations as
    squares (one job: triangles, so that QD 32 is not read as QD 16 × 2 jobs where the two
    meet), the knee, the 90% depth, the peak and the efficient configuration ringed. The peak's
    and the efficient configuration's names join their point's own label, so that no caption
    of its own can be read as a neighbour's."""
    ringed = [(r, text, color) for r, text, color in (
        (s.efficient, "efficient", "#9D755D"), (s.peak, "peak", "#B279A2")) if r is not None]
    roles = {r.case: text for r, text, _ in ringed}  # the peak's name wins where they are one

    def labels(rows):
        return [_short(r) + (f" {roles[r.case]}" if r.case in roles else "")
                for r in rows.itertuples()]

    series = [Series("sweep (one job), mean ± 95% interval", list(s.rows.lat_us_mean),
                     list(s.rows.iops_mean), interval(s.rows, "iops_mean"),
                     interval(s.rows, "lat_us_mean"), labels(s.rows),
                     host_bound=_flags(s.rows))]
    more = _beyond(s, peaks)
    for name, part, marker in (("peak search, more jobs", more[more.numjobs > 1], "s"),
                               ("peak search, one job, deeper", more[more.numjobs <= 1], "^")):
        if not part.empty:
            series.append(Series(name, list(part.lat_us_mean), list(part.iops_mean),
                                 interval(part, "iops_mean"), interval(part, "lat_us_mean"),
                                 labels(part), marker=marker, line=False,
                                 host_bound=_flags(part)))
    marks = _marks(s, "iops_mean", "lat_us_mean")
    marks += [Highlight(r.lat_us_mean, r.iops_mean, "", color) for r, text, color in ringed
              if roles[r.case] == text]
    return Panel(s.pattern, "mean total latency (µs)", "IOPS", series, highlights=marks,
                 from_zero=True)


def _tails_panel(s) -> Panel:
    """The percentiles of a few depths against how far into the tail each is (1 − p on a log
    axis: p50, p95, p99, p99.9 as the nines they are), each with its 95% interval."""
    swept = sorted(int(d) for d in s.rows.outstanding)
    depths = {swept[0]: ["shallowest"]}
    for depth, why in ((swept[(len(swept) - 1) // 2], "middle of the sweep"),
                       (s.knee.x if s.knee else None, "knee"),
                       (s.outstanding_90, "first at 90% of peak"),
                       (int(s.rows.outstanding.max()), "deepest")):
        if depth is not None:
            depths.setdefault(int(depth), []).append(why)
    x = [1 / (1 - float(name[1:]) / 100) for name, _ in PCTS]
    series = []
    for depth, why in sorted(depths.items()):
        r = s.rows[s.rows.outstanding == depth]
        below = [float((r[c] - r[c + "_lo"]).iloc[0]) if c + "_lo" in r else 0.0 for _, c in PCTS]
        above = [float((r[c + "_hi"] - r[c]).iloc[0]) if c + "_hi" in r else 0.0 for _, c in PCTS]
        series.append(Series(f"{s.qd(depth)} ({', '.join(why)})", x,
                             [float(r[c].iloc[0]) for _, c in PCTS], (below, above),
                             host_bound=[bool(r.host_bound.iloc[0])] * len(PCTS)
                             if "host_bound" in r else None,
                             thin=[claims.thin_marks(r, c)[0] for _, c in PCTS]))
    return Panel(s.pattern, "percentile (spaced by 1 / (1 − p): one step per nine)",
                 "latency (µs)", series, xscale="log", yscale="log",
                 xticks=x, xticklabels=[name for name, _ in PCTS])


def distribution_panels(found: list, results_dir) -> list[exceedance.Panel]:
    """Per pattern: the shallowest depth (QD 1), the knee and the deepest depth (in I/Os in
    flight, as every rule here)."""
    panels = []
    for s in found:
        depths = {int(s.rows.outstanding.min()): "", int(s.rows.outstanding.max()): " (deepest)"}
        if s.knee is not None:
            depths[int(s.knee.x)] = " (knee)"
        rows = [s.at(d) for d in sorted(depths)]
        panels.append(exceedance.rows_panel(
            results_dir, s.pattern, rows,
            lambda r, depths=depths: qd_label(r) + depths[int(r.outstanding)]))
    return panels


def draw_figures(found: list, settings: dict, ws: Workspace,
                 peaks: pd.DataFrame | None = None) -> list[str]:
    ticks = _depth_ticks(found)
    depth_axis = {"xscale": "log2", "xticks": ticks,
                  "xlabel": "I/Os in flight (queue depth × jobs)"}
    rows = pd.concat([s.rows for s in found])
    note, means_note = interval_note(rows), interval_note(rows, percentiles=False)
    line_chart(ws.path(FIG_CURVE), [_curve_panel(s, peaks) for s in found],
               title="Throughput against latency, one point per configuration", note=means_note)
    line_chart(ws.path(FIG_THROUGHPUT), [
        Panel("IOPS", ylabel="IOPS", **depth_axis, from_zero=True,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.iops_mean),
                             interval(s.rows, "iops_mean"), host_bound=_flags(s.rows))
                      for s in found],
              highlights=[h for s in found for h in _marks(s, "iops_mean")]),
        Panel("MB/s", ylabel="MB/s (10^6 B/s)", **depth_axis, from_zero=True,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.bw_MBps_mean),
                             interval(s.rows, "bw_MBps_mean"), host_bound=_flags(s.rows))
                      for s in found]),
    ], title="Throughput by queue depth", note=means_note)
    line_chart(ws.path(FIG_LATENCY), [
        Panel("mean total latency", ylabel="mean latency (µs)", yscale="log", **depth_axis,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.lat_us_mean),
                             interval(s.rows, "lat_us_mean"), host_bound=_flags(s.rows))
                      for s in found],
              highlights=[h for s in found for h in _marks(s, "lat_us_mean")])], note=means_note)
    line_chart(ws.path(FIG_PERCENTILES), [
        Panel(s.pattern, ylabel="latency (µs)", yscale="log", **depth_axis,
              series=[Series(name, list(s.rows.outstanding), list(s.rows[col]),
                             interval(s.rows, col), host_bound=_flags(s.rows),
                             thin=claims.thin_marks(s.rows, col))
                      for name, col in PCTS],
              hline=(settings["slo_p99_us"], f"objective p99 ≤ {md.num(settings['slo_p99_us'])} µs"))
        for s in found], title="Latency percentiles by queue depth (pooled repetitions)",
        note=note)
    line_chart(ws.path(FIG_TAILS), [_tails_panel(s) for s in found],
               title="Percentiles at a few depths of each sweep (the legend names each depth's "
                     "role)", note=note)
    return [FIG_CURVE, FIG_THROUGHPUT, FIG_LATENCY, FIG_PERCENTILES, FIG_TAILS]
