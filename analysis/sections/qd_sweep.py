"""§5 queue-depth sweep: tables/qd_sweep.csv, figs/qd_sweep_*.png, out/section_5_qd_sweep.md.

More I/Os in flight buy throughput while the drive has idle parallelism (channels, dies, queues).
Once it is used up, an extra I/O only waits: throughput stays flat and latency grows with the
queue. The knee is the first step where that happens; Little's Law (I/Os in flight = IOPS x
mean latency) checks that throughput and latency were measured consistently.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pandas as pd

from analysis.core.effects import adjusted
from analysis.core.workspace import Workspace
from analysis.render import exceedance
from analysis.render import markdown as md
from analysis.render.plots import (
    BarSet,
    Heat,
    Highlight,
    Panel,
    Series,
    grouped_bars,
    heatmap,
    line_chart,
)
from analysis.rules import peak_search, sweeps
from analysis.rules.cases import case_rows
from analysis.sections import SECTIONS, snippet_path
from analysis.sections.common import (
    NOT_RESOLVED,
    SectionRun,
    clat_note,
    flag,
    host_finding,
    nines_frame,
    nines_note,
    nines_table,
    row_change,
    run_section,
    snippet,
    stability_finding,
    standard_note,
    stored_settings,
    tail_cell,
)
from analysis.sections.facts import Facts

SECTION = "qd_sweep"
TABLE = "tables/qd_sweep.csv"
PEAK_TABLE = "tables/qd_sweep_peak.csv"
NINES_TABLE = "tables/qd_sweep_nines.csv"
FIG_CURVE = "figs/qd_sweep_curve.png"
FIG_THROUGHPUT = "figs/qd_sweep_throughput.png"
FIG_LATENCY = "figs/qd_sweep_latency.png"
FIG_PERCENTILES = "figs/qd_sweep_percentiles.png"
FIG_TAILS = "figs/qd_sweep_tails.png"
FIG_HEATMAP = "figs/qd_sweep_heatmap.png"  # jobs × depth, when several of each were measured
SNIPPET = snippet_path(SECTION)

DEFAULTS = {"knee_gain_pct": 5, "knee_latency_pct": 20, "slo_p99_us": 1000}
PEAK_FRACTION = 0.9  # "the smallest depth reaching 90% of peak throughput"
LITTLE_TOLERANCE_PCT = 10  # Little's Law misses beyond this point at a measurement problem
PCTS = [("p50", "lat_p50_us"), ("p95", "lat_p95_us"), ("p99", "lat_p99_us"),
        ("p99.9", "lat_p99_9_us")]


@dataclass(frozen=True)
class Sweep:
    """One pattern over the depths: its table rows (depth ascending) and what was found."""
    pattern: str
    rows: pd.DataFrame
    knee: sweeps.Knee | None
    peak_depth: int
    depth_90: int
    slo_depth: int | None

    def at(self, depth: int):
        """The row with `depth` I/Os in flight (iodepth x numjobs), the unit of every rule."""
        return self.rows[self.rows.outstanding == depth].iloc[0]

    def qd(self, depth: int) -> str:
        return _qd_row(self.at(depth))


def analyse(table: pd.DataFrame, settings: dict) -> tuple[pd.DataFrame, list[Sweep]]:
    """The section table with the sweep columns added, and each pattern's findings."""
    rows = case_rows(table)
    rows = rows[~rows.case.str.startswith(peak_search.PREFIX)].copy()
    rows.insert(1, "pattern", [md.pattern(r.rw, r.bs) for r in rows.itertuples()])
    if (rows.read_pct.between(1, 99)).any():  # a mixed job: name its mix
        rows["pattern"] = [f"{p} {r}/{100 - r}" if 0 < r < 100 else p
                           for p, r in zip(rows.pattern, rows.read_pct)]
    rows["outstanding"] = rows.iodepth * rows.numjobs
    if rows.numjobs.nunique() > 1:  # one curve per job count (--jobs): each its own sweep
        rows["pattern"] = [p if n == 1 else f"{p} × {n} jobs"
                           for p, n in zip(rows.pattern, rows.numjobs)]
    parts, found = [], []
    for pattern, group in rows.groupby("pattern", sort=False):
        group = group.sort_values("outstanding").copy()
        depths = list(group.outstanding)
        iops, lat = list(group.iops_mean), list(group.lat_us_mean)
        group["pct_of_peak"] = sweeps.pct_of_peak(iops)
        # Little's Law: I/Os in flight / mean latency predicts IOPS. little_product (measured /
        # predicted) is taken per repetition and averaged, so the prediction is the measured
        # IOPS over that ratio, and the error is the ratio's distance from 1.
        group["little_pred_iops"] = group.iops_mean / group.little_product
        group["little_error_pct"] = (group.little_product - 1) * 100
        group["gain_pct"] = sweeps.step_changes(iops)
        group["latency_growth_pct"] = sweeps.step_changes(lat)
        knee = sweeps.find_knee(depths, iops, lat, settings["knee_gain_pct"],
                                settings["knee_latency_pct"])
        depth_90 = sweeps.first_reaching(depths, iops, PEAK_FRACTION)
        slo = sweeps.slo_point(depths, list(group.lat_p99_us), settings["slo_p99_us"])
        group["is_knee"] = [knee is not None and d == knee.x for d in depths]
        group["is_90pct_of_peak"] = [d == depth_90 for d in depths]
        group["within_slo"] = [p <= settings["slo_p99_us"] for p in group.lat_p99_us]
        parts.append(group)
        found.append(Sweep(pattern, group, knee, depths[iops.index(max(iops))], depth_90, slo))
    return pd.concat(parts), found


# --- findings -------------------------------------------------------------------------------
def _qd(depth) -> str:
    return f"QD {int(depth)}"


def _qd_row(r) -> str:
    """'QD 32', or 'QD 32 × 4 jobs' (128 in flight) for a point of several jobs."""
    return _qd(r.iodepth) + (f" × {int(r.numjobs)} jobs" if r.numjobs > 1 else "")


def _gains(pct: float) -> str:
    return f"gains {pct:.1f}%" if pct >= 0 else f"loses {-pct:.1f}%"


def climb_after_knee(s: Sweep, settings: dict):
    """The row with the most IOPS past the knee when IOPS climb well above the point before it
    again, else None. The rule takes the first such step; a curve that climbs well past it
    afterwards had a dip there (interference, an unstable point), not its knee."""
    base = s.at(s.knee.previous).iops_mean
    later = s.rows[(s.rows.outstanding > s.knee.x)
                   & (s.rows.iops_mean > base * (1 + settings["knee_gain_pct"] / 100))]
    return None if later.empty else later.loc[later.iops_mean.idxmax()]


def knee_finding(s: Sweep, settings: dict) -> str:
    peak = s.at(s.peak_depth)
    at90 = s.at(s.depth_90)
    rule = (f"a step gaining < {settings['knee_gain_pct']:g}% IOPS while mean latency grows "
            f"> {settings['knee_latency_pct']:g}%")
    if s.knee is not None:
        k = s.knee
        text = (f"**Knee ({s.pattern}): {s.qd(k.x)}.** Going from {s.qd(k.previous)} to "
                f"{s.qd(k.x)} {_gains(k.gain_pct)} IOPS ({md.num(s.at(k.previous).iops_mean)}"
                f" → {md.num(s.at(k.x).iops_mean)}) while mean latency grows "
                f"{md.signed_pct(k.latency_growth_pct, 0)} ({md.num(s.at(k.previous).lat_us_mean)} → "
                f"{md.num(s.at(k.x).lat_us_mean)} µs): the first step that buys mostly queueing "
                f"({rule}).")
        gain, growth = adjusted([row_change(s.at(k.x), s.at(k.previous), "iops_mean"),
                                 row_change(s.at(k.x), s.at(k.previous), "lat_us_mean")])
        if (gain.tested and gain.high_pct >= settings["knee_gain_pct"]) or (
                growth.tested and not growth.significant):
            text += (f" By the test the step is {NOT_RESOLVED}: its IOPS gain lies between "
                     f"{gain.low_pct:+.0f}% and {gain.high_pct:+.0f}% and its latency growth "
                     f"between {growth.low_pct:+.0f}% and {growth.high_pct:+.0f}% (95%), so the "
                     "knee is where the means put it, not where the test shows it.")
        top = climb_after_knee(s, settings)
        if top is not None:
            base = s.at(k.previous).iops_mean
            text += (f" Caution: IOPS climb again past it, to {md.num(top.iops_mean)} at "
                     f"{_qd_row(top)} ({md.signed_pct((top.iops_mean / base - 1) * 100, 0)} over "
                     f"{s.qd(k.previous)}), so this step looks like a dip (see the stability "
                     "line) rather than the drive's limit; rerun before quoting it.")
    else:
        last = s.rows.iloc[-1]
        text = (f"**Knee ({s.pattern}): none within the sweep.** No step meets the rule "
                f"({rule}); the last, {_qd_row(s.rows.iloc[-2])} → "
                f"{_qd_row(last)}, {_gains(last.gain_pct)} IOPS for "
                f"{md.signed_pct(last.latency_growth_pct, 0)} latency"
                if len(s.rows) > 1 else
                f"**Knee ({s.pattern}): not defined with one depth.** Sweep two or more depths")
        text += "."
    text += (f" Peak {md.num(peak.iops_mean)} IOPS ({md.num(peak.bw_MBps_mean)} MB/s) at "
             f"{s.qd(s.peak_depth)}; 90% of it is reached at {s.qd(s.depth_90)} "
             f"({md.num(at90.iops_mean)} IOPS, {at90.pct_of_peak:.0f}% of peak).")
    return text


def slo_finding(s: Sweep, slo_us: float) -> str:
    head = f"**Latency objective p99 ≤ {md.num(slo_us)} µs ({s.pattern}):**"
    if s.slo_depth is None:
        first = s.rows.iloc[0]
        return (f"{head} no depth meets it; the shallowest, {_qd_row(first)}, already has "
                f"p99 {md.num(first.lat_p99_us)} µs.")
    r = s.at(s.slo_depth)
    text = (f"{head} the deepest queue within it is {s.qd(s.slo_depth)}, at "
            f"{md.num(r.iops_mean)} IOPS ({md.num(r.bw_MBps_mean)} MB/s, p99 "
            f"{md.num(r.lat_p99_us)} µs, {r.pct_of_peak:.0f}% of peak)")
    deeper = s.rows[s.rows.outstanding > s.slo_depth]
    if not deeper.empty:
        nxt = deeper.iloc[0]
        text += f"; {_qd_row(nxt)} exceeds it (p99 {md.num(nxt.lat_p99_us)} µs)"
    else:
        text += "; every depth swept meets it"
    return text + "." + _p99_not_monotonic(s, slo_us)


def _p99_not_monotonic(s: Sweep, slo_us: float) -> str:
    """A sentence when p99 falls at a deeper queue (by more than fio's bucket), naming the
    depths that meet the objective again past a miss: they are not counted as within it."""
    depths, p99 = list(s.rows.outstanding), list(s.rows.lat_p99_us)
    falls = sweeps.latency_falls(depths, p99)
    if not falls:
        return ""
    text = " p99 is not monotonic in depth: it falls " + ", ".join(
        f"from {md.num(a)} µs at {s.qd(xa)} to {md.num(b)} µs at {s.qd(xb)}"
        for xa, xb, a, b in falls)
    again = sweeps.met_again(depths, p99, slo_us)
    if again:
        text += ("; " + " and ".join(f"{s.qd(x)} ({md.num(p)} µs)" for x, p in again)
                 + " meet the objective again past the first miss; they are not counted as "
                 "within it, since it does not hold all the way up to them (rerun to tell the "
                 "drive from noise)")
    return text + "."


def little_finding(found: list[Sweep]) -> str:
    all_rows = pd.concat([s.rows for s in found])
    worst = all_rows.loc[all_rows.little_error_pct.abs().idxmax()]
    misses = all_rows[all_rows.little_error_pct.abs() > LITTLE_TOLERANCE_PCT]
    text = ("**Little's Law:** predicted IOPS = I/Os in flight / mean latency; the largest miss "
            f"is {md.signed_pct(worst.little_error_pct, 1)} ({worst.pattern}, {_qd_row(worst)}).")
    if misses.empty:
        return text + (f" Every point is within {LITTLE_TOLERANCE_PCT}%: throughput and latency "
                       "were measured consistently and the queue was kept full.")
    listed = ", ".join(f"{r.pattern} {_qd_row(r)} ({md.signed_pct(r.little_error_pct, 0)})"
                       for r in misses.itertuples())
    return text + (f" Off by more than {LITTLE_TOLERANCE_PCT}% at {listed}: a sign of a "
                   "measurement problem. Fewer I/Os were in flight than the depth asked for "
                   "(fio could not submit fast enough, or the engine capped the queue) when "
                   "the measured IOPS fall short; treat these points with care.")


def tail_finding(s: Sweep) -> str:
    first, last = s.rows.iloc[0], s.rows.iloc[-1]
    mid = s.at(s.knee.x) if s.knee is not None else None
    text = (f"**Tails ({s.pattern}):** p99 {md.num(first.lat_p99_us)} µs and p99.9 "
            f"{md.num(first.lat_p99_9_us)} µs at {_qd_row(first)}")
    if mid is not None and mid.outstanding not in (first.outstanding, last.outstanding):
        text += (f"; at the knee ({_qd_row(mid)}) p99 {md.num(mid.lat_p99_us)} µs "
                 f"(×{mid.lat_p99_us / first.lat_p99_us:.1f}), p99.9 "
                 f"{md.num(mid.lat_p99_9_us)} µs (×{mid.lat_p99_9_us / first.lat_p99_9_us:.1f})")
    if len(s.rows) == 1:
        return text + "; one depth swept, so no growth to compare."
    text += (f"; at {_qd_row(last)} p99 {md.num(last.lat_p99_us)} µs "
             f"(×{last.lat_p99_us / first.lat_p99_us:.1f}) and p99.9 "
             f"{md.num(last.lat_p99_9_us)} µs (×{last.lat_p99_9_us / first.lat_p99_9_us:.1f}), "
             f"while IOPS grew ×{last.iops_mean / first.iops_mean:.1f}.")
    names = {"p99": "lat_p99_us", "p99.9": "lat_p99_9_us", "IOPS": "iops_mean"}
    tested = adjusted([row_change(last, first, c) for c in names.values()])
    unresolved = [n for n, c in zip(names, tested) if c.tested and not c.significant]
    if unresolved:
        text += (f" The change of {', '.join(unresolved)} from {_qd_row(first)} is "
                 f"{NOT_RESOLVED} (the test does not show it).")
    return text


def recommendation(s: Sweep, slo_us: float) -> str:
    """Latency-sensitive: the deepest queue before the knee that meets the objective.
    Throughput: the shallowest queue giving 90% of the peak (deeper adds < 10% for latency)."""
    below_knee = [d for d in s.rows.outstanding if s.knee is None or d < s.knee.x]
    # each candidate's own p99 is checked too, not only its place before the objective depth
    candidates = [d for d in below_knee if s.slo_depth is not None and d <= s.slo_depth
                  and s.at(d).lat_p99_us <= slo_us]
    if candidates:
        lat_depth = max(candidates)
        r = s.at(lat_depth)
        why = ("the deepest before the knee" if s.knee is not None else "the deepest")
        lat_text = (f"{s.qd(lat_depth)} ({why} within p99 ≤ {md.num(slo_us)} µs: "
                    f"{md.num(r.iops_mean)} IOPS at {md.num(r.lat_us_mean)} µs mean, "
                    f"p99 {md.num(r.lat_p99_us)} µs)")
    else:
        r = s.rows.iloc[0]
        lat_text = (f"{_qd_row(r)}, and even that misses the objective "
                    f"(p99 {md.num(r.lat_p99_us)} µs)")
    t = s.at(s.depth_90)
    deeper = ("it is also the peak" if s.depth_90 == s.peak_depth else
              f"deeper queues add at most {100 - t.pct_of_peak:.0f}% throughput, and latency")
    return (f"**Recommended depth ({s.pattern}):** for latency-sensitive work {lat_text}; for "
            f"throughput {s.qd(s.depth_90)} ({md.num(t.iops_mean)} IOPS, {t.pct_of_peak:.0f}% of "
            f"peak at {md.num(t.lat_us_mean)} µs mean); {deeper}.")


def findings(df: pd.DataFrame, found: list[Sweep], settings: dict) -> list[str]:
    out = []
    for s in found:
        out.append(knee_finding(s, settings))
    for s in found:
        out.append(slo_finding(s, settings["slo_p99_us"]))
    out.append(little_finding(found))
    for s in found:
        out.append(tail_finding(s))
    for s in found:
        out.append(recommendation(s, settings["slo_p99_us"]))
    out.append(stability_finding(df, lambda r: f"{r.pattern} {_qd_row(r)}"))
    out.append(host_finding(df, lambda r: f"{r.pattern} {_qd_row(r)}"))
    out += clat_note(df)
    return out


# --- markdown ---------------------------------------------------------------------------------
def render_markdown(df: pd.DataFrame, found: list[Sweep], settings: dict, setup: str,
                    link=md.link_from_out, peak_lines: list[str] = (),
                    nines: pd.DataFrame | None = None,
                    more_figures: list[tuple[str, str]] = ()) -> str:
    rows = []
    for r in df.itertuples():
        marks = (flag(r).lstrip() + " " if flag(r) else "") + (" ◆ knee" if r.is_knee else "") + \
            (" ● 90%" if r.is_90pct_of_peak else "")
        rows.append([r.pattern, _qd_row(r).removeprefix("QD ") + marks,
                     md.pm(r.iops_mean, r.iops_ci95), md.pm(r.bw_MBps_mean, r.bw_MBps_ci95),
                     f"{r.pct_of_peak:.0f}%", md.pm(r.lat_us_mean, r.lat_us_ci95),
                     md.num(r.lat_p50_us), tail_cell(r, "lat_p99_us"),
                     tail_cell(r, "lat_p99_9_us"),
                     md.num(r.little_pred_iops), md.signed_pct(r.little_error_pct, 1),
                     md.signed_pct(r.gain_pct, 1),
                     md.signed_pct(r.latency_growth_pct, 0)])
    table = md.table(["pattern", "QD", "IOPS", "MB/s", "of peak", "mean lat (µs)", "p50 (µs)",
                      "p99 (µs)", "p99.9 (µs)", "Little IOPS", "Little err", "Δ IOPS",
                      "Δ mean lat"], rows, ["l", "l"] + ["r"] * 11)
    note = standard_note(df) + (
            f" ◆ the knee (first step gaining < {settings['knee_gain_pct']:g}% IOPS while mean "
            f"latency grows > {settings['knee_latency_pct']:g}%); ● the smallest depth reaching "
            "90% of peak. Little IOPS = QD / mean latency per repetition; Δ from the previous "
            "depth.")
    blocks = [table, note]
    if nines is not None and not nines.empty:
        blocks += [nines_table(nines), nines_note() + " Shown at QD 1, the knee and the deepest "
                   f"depth of each pattern; every point is in `{NINES_TABLE}`."]
    return snippet(f"## {SECTIONS[SECTION].heading}", setup, blocks,
                   [("Throughput against latency", FIG_CURVE),
                    ("Throughput by queue depth", FIG_THROUGHPUT),
                    ("Mean latency by queue depth", FIG_LATENCY),
                    ("Latency percentiles by queue depth", FIG_PERCENTILES),
                    ("Tail percentiles at selected depths", FIG_TAILS),
                    (("Latency distribution at QD 1, the knee and the deepest depth: share of I/Os "
                     "slower than each latency"), exceedance.figure(SECTION)), *more_figures],
                   [*peak_lines, *findings(df, found, settings)], link)


def nines_points(df: pd.DataFrame) -> set[str]:
    """The cases whose nines the snippet shows: each pattern's QD 1, knee and deepest depth."""
    out = set()
    for _, rows in df.groupby("pattern", sort=False):
        out |= {rows.loc[rows.outstanding.idxmin(), "case"],
                rows.loc[rows.outstanding.idxmax(), "case"], *rows[rows.is_knee].case}
    return out


# --- figures ----------------------------------------------------------------------------------
def _depth_ticks(found: list[Sweep]) -> list[int]:
    return sorted({int(d) for s in found for d in s.rows.outstanding})


def _marks(s: Sweep, y_col: str, x_col: str | None = None) -> list[Highlight]:
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


def distribution_panels(found: list[Sweep], results_dir) -> list[exceedance.Panel]:
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
            lambda r, depths=depths: _qd_row(r) + depths[int(r.outstanding)]))
    return panels


def draw_figures(found: list[Sweep], settings: dict, ws: Workspace) -> list[str]:
    ticks = _depth_ticks(found)
    depth_axis = {"xscale": "log2", "xticks": ticks,
                  "xlabel": "I/Os in flight (queue depth × jobs)"}
    line_chart(ws.path(FIG_CURVE), [
        Panel(s.pattern, "mean total latency (µs)", "IOPS",
              [Series("mean ± std over repetitions", list(s.rows.lat_us_mean),
                      list(s.rows.iops_mean), list(s.rows.iops_std), list(s.rows.lat_us_std),
                      [_qd_row(r).replace("QD ", "QD") for r in s.rows.itertuples()])],
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


def print_summary(df: pd.DataFrame) -> None:
    print(f"{'pattern':<26} {'QD':>4} {'IOPS':>18} {'mean µs':>10} {'p99 µs':>10} "
          f"{'Little':>7}")
    for r in df.itertuples():
        flags = (" knee" if r.is_knee else "") + (" 90%" if r.is_90pct_of_peak else "") + \
            (" unstable" if r.unstable else "")
        print(f"{r.pattern:<26} {r.iodepth:>4} {md.pm(r.iops_mean, r.iops_ci95):>18} "
              f"{md.num(r.lat_us_mean):>10} {md.num(r.lat_p99_us):>10} "
              f"{r.little_error_pct:>+6.1f}%{flags}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slo-p99-us", type=float, dest="slo_p99_us",
                        help=f"latency objective in µs (default {DEFAULTS['slo_p99_us']}, or "
                             "the last one used on these results)")
    parser.add_argument("--knee-gain", type=float, dest="knee_gain_pct",
                        help="knee: a step gaining less than this % throughput ... "
                             f"(default {DEFAULTS['knee_gain_pct']})")
    parser.add_argument("--knee-latency", type=float, dest="knee_latency_pct",
                        help="... while mean latency grows more than this % "
                             f"(default {DEFAULTS['knee_latency_pct']})")


def peak_rows(table: pd.DataFrame, outcomes: dict | None = None) -> pd.DataFrame:
    """Every configuration measured of the searched patterns (sweep and peak search), most IOPS
    first within each, with `is_peak` on the peak and `is_efficient` on the fewest I/Os in
    flight within 5% of it (the search's outcome, else by the means), and the search's end."""
    rows = case_rows(table)
    outcomes = outcomes or {}
    parts = []
    for rw, bs in peak_search.PATTERNS:
        got = rows[(rows.rw == rw) & (rows.bs == bs)].copy()
        if got.empty:
            continue
        got.insert(1, "pattern", md.pattern(rw, bs))
        got["outstanding"] = got.iodepth * got.numjobs
        got = got.sort_values("iops_mean", ascending=False)
        keys = list(zip(got.iodepth.astype(int), got.numjobs.astype(int)))
        outcome = outcomes.get((rw, bs))
        if outcome is None or outcome.peak is None:  # no search: by the means
            outcome = peak_search.Outcome(peak=keys[0], stopped="")
            near = [k for k, i in zip(keys, got.iops_mean)
                    if i >= (1 - peak_search.GAIN_PCT / 100) * got.iops_mean.iloc[0]]
            outcome.efficient = min(near, key=peak_search.cheaper)
        got["is_peak"] = [k == outcome.peak for k in keys]
        got["is_efficient"] = [k == outcome.efficient for k in keys]
        got["search_stopped"] = outcome.stopped
        parts.append(got)
    cols = ["case", "pattern", "iodepth", "numjobs", "outstanding", "engine", "n", "iops_mean",
            "iops_std", "bw_MBps_mean", "bw_MBps_std", "lat_us_mean", "lat_p99_us",
            "cpu_usr_pct", "cpu_sys_pct", "host_ceiling_iops", "host_bound", "is_peak",
            "is_efficient", "search_stopped"]
    return pd.concat(parts)[cols] if parts else pd.DataFrame(columns=cols)


def _config(r) -> str:
    return f"{_qd_row(r)}{f' with {r.engine}' if r.engine else ''}"


def _metric(r, pattern: str) -> str:
    return (f"{md.num(r.iops_mean)} IOPS" if "random" in pattern
            else f"{md.num(r.bw_MBps_mean)} MB/s")


def efficient_text(top, eff, pattern: str, bold: str = "**") -> str:
    """'the efficient configuration: ... (mean, p99)', or that the peak is it."""
    lat = f"mean {md.num(eff.lat_us_mean)} µs, p99 {md.num(eff.lat_p99_us)} µs"
    if eff.case == top.case:
        return f"it is also the efficient configuration (the fewest I/Os in flight; {lat})"
    return (f"{bold}efficient configuration (the fewest I/Os in flight within "
            f"{peak_search.GAIN_PCT}% of the peak): {_metric(eff, pattern)} at {_config(eff)}{bold}, "
            f"{int(eff.outstanding)} in flight against {int(top.outstanding)} ({lat}; at the "
            f"peak mean {md.num(top.lat_us_mean)} µs, p99 {md.num(top.lat_p99_us)} µs)")


STOPPED = {
    "plateau": "It stopped on the plateau: no more jobs or depth gained beyond the noise "
               "(a gain counts when larger than twice the combined standard error of the two "
               "means; undecided pairs were measured again), and no fewer stayed within "
               f"{peak_search.GAIN_PCT}% of the peak (jobs up to the CPUs this host has).",
    "budget": f"**Its budget ({peak_search.BUDGET} cases' worth of repetitions) ended it before "
              "the plateau was shown**: more jobs or depth, or fewer, may still change the peak "
              "or the efficient configuration; a run with `--peak grid` (and `--fresh`, or "
              "into another `--results` tree) measures every one.",
    "running": "It was not finished (repetitions failed or the run was stopped): rerun the same "
               "command to go on.",
}


def peak_findings(peaks: pd.DataFrame) -> list[str]:
    """What the peak search (or the grid) found, per pattern, when it ran."""
    out = []
    for pattern, rows in peaks.groupby("pattern", sort=False):
        stopped = rows.search_stopped.iloc[0]
        searched = rows[rows.case.str.startswith(peak_search.PREFIX)]
        if searched.empty and stopped != "grid":
            continue
        top = rows[rows.is_peak].iloc[0]
        eff = rows[rows.is_efficient].iloc[0]
        single = rows[rows.numjobs == 1]
        base = single.iloc[0] if not single.empty else top
        how = (f"The grid measured {len(rows)} configurations of jobs × depth."
               if stopped == "grid" else
               f"The search tried {len(searched)} more configuration(s) of jobs and depth. "
               + STOPPED.get(stopped, ""))
        text = (f"**Peak ({pattern}): {_metric(top, pattern)} at {_config(top)}**, "
                f"{top.iops_mean / base.iops_mean:.2f}× the best single-job point "
                f"({md.num(base.iops_mean)} IOPS at {_config(base)}); "
                f"{efficient_text(top, eff, pattern)}. {how}")
        if top.host_bound:
            text += " The host limited it: a faster host may show more."
        out.append(text)
    return out


def record_facts(found: list[Sweep], settings: dict, facts: Facts,
                 peaks: pd.DataFrame | None = None) -> None:
    """Each pattern's peak (random IOPS, sequential MB/s) with the configuration that gave it,
    and each sweep's knee; Little's Law misses."""
    peaks = peaks if peaks is not None else pd.DataFrame(columns=["case", "pattern"])
    for pattern, rows in peaks.groupby("pattern", sort=False):
        top = rows[rows.is_peak].iloc[0] if "is_peak" in rows else rows.iloc[0]
        eff = rows[rows.is_efficient].iloc[0] if "is_efficient" in rows else top
        note = "; " + efficient_text(top, eff, pattern, "") if eff.case != top.case else ""
        if "search_stopped" in rows and rows.search_stopped.iloc[0] == "budget":
            note += "; the search's budget ended it before the plateau was shown"
        if "random" in pattern:
            facts.headline("peak_random_iops", pattern,
                           f"{md.num(top.iops_mean)} IOPS at {_config(top)} "
                           f"({md.num(top.lat_us_mean)} µs mean, p99 {md.num(top.lat_p99_us)} µs)"
                           + note, top.iops_mean, "IOPS", top.iops_std, settings="peak search",
                           ci95=top.get("iops_ci95"))
        else:
            facts.headline("peak_seq_MBps", pattern,
                           f"{md.num(top.bw_MBps_mean)} MB/s at {_config(top)}" + note,
                           top.bw_MBps_mean, "MB/s", top.bw_MBps_std, settings="peak search",
                           ci95=top.get("bw_MBps_ci95"))
    for s in found:
        peak = s.at(s.peak_depth)
        jobs = f"jobs {int(peak.numjobs)}"  # the sweep's --jobs: a history series never mixes them
        stated = set(peaks.case) & set(s.rows.case)  # above, over every configuration measured
        if not stated and "random" in s.pattern:
            facts.headline("peak_random_iops", s.pattern,
                           f"{md.num(peak.iops_mean)} IOPS at {s.qd(s.peak_depth)} "
                           f"({md.num(peak.lat_us_mean)} µs mean, p99 {md.num(peak.lat_p99_us)} µs)",
                           peak.iops_mean, "IOPS", peak.iops_std, settings=jobs,
                           ci95=peak.get("iops_ci95"))
        elif not stated:
            facts.headline("peak_seq_MBps", s.pattern,
                           f"{md.num(peak.bw_MBps_mean)} MB/s at {s.qd(s.peak_depth)}",
                           peak.bw_MBps_mean, "MB/s", peak.bw_MBps_std, settings=jobs,
                           ci95=peak.get("bw_MBps_ci95"))
        if s.knee is not None:
            text = (f"{s.qd(s.knee.x)}: from {s.qd(s.knee.previous)} {_gains(s.knee.gain_pct)} "
                    f"IOPS for {md.signed_pct(s.knee.latency_growth_pct, 0)} mean latency")
            if climb_after_knee(s, settings) is not None:
                text += " (IOPS climb again past it: looks like a dip, rerun before quoting)"
            facts.headline("knee", s.pattern, text, s.knee.x, "QD")
        elif len(s.rows) > 1:
            facts.headline("knee", s.pattern,
                           f"none up to {_qd_row(s.rows.iloc[-1])} (still gaining)")
    rows = pd.concat([s.rows for s in found])
    misses = rows[rows.little_error_pct.abs() > LITTLE_TOLERANCE_PCT]
    if not misses.empty:
        facts.anomaly("little", f"Little's Law misses by more than {LITTLE_TOLERANCE_PCT}% at "
                      + ", ".join(f"{r.pattern} {_qd_row(r)} ({md.signed_pct(r.little_error_pct, 0)})"
                                  for r in misses.itertuples())
                      + ": fewer I/Os were in flight than asked for, so those points do not "
                      "show what the depth would give.")


def draw_heatmap(peaks: pd.DataFrame, ws: Workspace) -> list[tuple[str, str]]:
    """IOPS (MB/s for a sequential pattern) and p99 over jobs × depth, one pair of panels per
    pattern measured at two or more of each; [] when none was (a sweep at one job count)."""
    panels = []
    for pattern, rows in peaks.groupby("pattern", sort=False):
        if rows.numjobs.nunique() < 2 or rows.iodepth.nunique() < 2:
            continue
        keys = list(zip(rows.iodepth.astype(int), rows.numjobs.astype(int)))
        marks = {}
        for k, peak, eff in zip(keys, rows.is_peak, rows.is_efficient):
            label = ", ".join(n for n, on in (("peak", peak), ("efficient", eff)) if on)
            if label:
                marks[k] = label
        metric, unit = ("iops_mean", "IOPS") if "random" in pattern else ("bw_MBps_mean", "MB/s")
        panels += [Heat(f"{pattern}: {unit}", dict(zip(keys, rows[metric])), unit, marks),
                   Heat(f"{pattern}: p99 latency", dict(zip(keys, rows.lat_p99_us)),
                        "p99 (µs)", marks, reverse=True)]
    if not panels:
        return []
    heatmap(ws.path(FIG_HEATMAP), panels, xlabel="queue depth per job", ylabel="jobs",
            title="Jobs × depth: every configuration measured (blank: not measured)")
    return [("Jobs × depth: throughput and p99 of every configuration measured", FIG_HEATMAP)]


def produce(run: SectionRun) -> list[str]:
    settings = stored_settings(run.results_dir, vars(run.args), DEFAULTS)
    df, found = analyse(run.table, settings)
    peaks = peak_rows(run.table, peak_search.outcomes(run.results_dir))
    record_facts(found, settings, run.facts, peaks)
    figures = draw_figures(found, settings, run.ws)
    figures += exceedance.write(run, SECTION, distribution_panels(found, run.results_dir),
                                "Latency distribution by queue depth")
    nines = nines_frame(run, df, lambda r: f"{r.pattern} {_qd_row(r)}")
    heat = draw_heatmap(peaks, run.ws)
    figures += [path for _, path in heat]
    text = render_markdown(df, found, settings, run.setup, run.ws.link, peak_findings(peaks),
                           nines[nines.case.isin(nines_points(df))], heat)
    written = [run.write_table(TABLE, df), run.write_table(PEAK_TABLE, peaks),
               run.write_table(NINES_TABLE, nines),
               *map(run.ws.show, figures), run.write_text(SNIPPET, text)]
    print_summary(df)
    return written


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__,
                       produce=produce, add_arguments=add_arguments)
