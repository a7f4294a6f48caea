"""§5's figures: the throughput-latency curve, throughput, mean latency and percentiles by depth,
the tails at chosen depths, and the latency distributions (analysis.render.exceedance). Each
draws the sweeps of analysis.sections.qd_sweep (its Sweep: a pattern's rows over the depths and
what was found there).
"""

from __future__ import annotations

from analysis.core.workspace import Workspace
from analysis.render import exceedance
from analysis.render.plots import BarSet, Highlight, Panel, Series, grouped_bars, line_chart
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
    out = []
    # The knee's caption above its ring, the 90% point's below: they are often neighbours.
    for depth, text, color, offset in (
            (s.knee.x if s.knee else None, "knee", "#E45756", (8, 8)),
            (s.depth_90, "90% of peak", "#54A24B", (-30, -22))):
        if depth is None:
            continue
        r = s.at(depth)
        out.append(Highlight(r[x_col] if x_col else depth, r[y_col],
                             f"{text} ({s.qd(depth)})", color, offset))
    return out


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


def draw_figures(found: list, settings: dict, ws: Workspace) -> list[str]:
    ticks = _depth_ticks(found)
    depth_axis = {"xscale": "log2", "xticks": ticks,
                  "xlabel": "I/Os in flight (queue depth × jobs)"}
    line_chart(ws.path(FIG_CURVE), [
        Panel(s.pattern, "mean total latency (µs)", "IOPS",
              [Series("mean ± std over repetitions", list(s.rows.lat_us_mean),
                      list(s.rows.iops_mean), list(s.rows.iops_std), list(s.rows.lat_us_std),
                      [qd_label(r).replace("QD ", "QD") for r in s.rows.itertuples()])],
              highlights=_marks(s, "iops_mean", "lat_us_mean"))
        for s in found], title="Throughput against latency, one point per queue depth")
    line_chart(ws.path(FIG_THROUGHPUT), [
        Panel("IOPS", ylabel="IOPS", **depth_axis,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.iops_mean),
                             list(s.rows.iops_std)) for s in found],
              highlights=[h for s in found for h in _marks(s, "iops_mean")]),
        Panel("MB/s", ylabel="MB/s (10^6 B/s)", **depth_axis,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.bw_MBps_mean),
                             list(s.rows.bw_MBps_std)) for s in found]),
    ], title="Throughput by queue depth")
    line_chart(ws.path(FIG_LATENCY), [
        Panel("mean total latency", ylabel="mean latency (µs)", yscale="log", **depth_axis,
              series=[Series(s.pattern, list(s.rows.outstanding), list(s.rows.lat_us_mean),
                             list(s.rows.lat_us_std)) for s in found],
              highlights=[h for s in found for h in _marks(s, "lat_us_mean")])])
    line_chart(ws.path(FIG_PERCENTILES), [
        Panel(s.pattern, ylabel="latency (µs)", yscale="log", **depth_axis,
              series=[Series(name, list(s.rows.outstanding), list(s.rows[col]),
                             list(s.rows[col + "_std"])) for name, col in PCTS],
              hline=(settings["slo_p99_us"], f"objective p99 ≤ {settings['slo_p99_us']:g} µs"))
        for s in found], title="Latency percentiles by queue depth (pooled repetitions; "
                               "bars: std of the repetitions' own)")
    main = found[0]
    depths = list(main.rows.outstanding)
    chosen = sorted({depths[0], depths[(len(depths) - 1) // 2], depths[-1]}
                    | ({main.knee.x} if main.knee else set()))
    labels = [main.qd(d) + (" (knee)" if main.knee and d == main.knee.x else "") for d in chosen]
    grouped_bars(ws.path(FIG_TAILS), labels, [
        BarSet(name, [main.at(d)[col] for d in chosen], [main.at(d)[col + "_std"] for d in chosen])
        for name, col in PCTS], ylabel="latency (µs)", yscale="log",
        title=f"{main.pattern}: tail percentiles at selected depths")
    return [FIG_CURVE, FIG_THROUGHPUT, FIG_LATENCY, FIG_PERCENTILES, FIG_TAILS]
