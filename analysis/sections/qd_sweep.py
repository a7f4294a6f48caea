"""§5 queue-depth sweep: tables/qd_sweep.csv, figs/qd_sweep_*.png, out/section_5_qd_sweep.md.

More I/Os in flight buy throughput while the drive has idle parallelism (channels, dies, queues).
Once it is used up, an extra I/O only waits: throughput stays flat and latency grows with the
queue. The knee is the first step where that happens; Little's Law (I/Os in flight = IOPS x
mean latency) checks that throughput and latency were measured consistently.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import pandas as pd

from analysis.core.effects import adjusted
from analysis.render import claims, exceedance
from analysis.render import markdown as md
from analysis.render.claims import NOT_RESOLVED
from analysis.rules import peak_search, sweeps
from analysis.rules.cases import case_rows, read_manifest
from analysis.sections import SECTIONS, snippet_path
from analysis.sections.common import (
    LATENCY_HEADER,
    MAX_LEGEND,
    NINES_POINTER,
    QD_MARKS_LEGEND,
    SectionRun,
    clat_note,
    flag,
    interval_text,
    latency_cells,
    nines_frame,
    row_change,
    run_section,
    snippet,
    stability_finding,
    standard_note,
    stored_settings,
)
from analysis.sections.facts import Facts
from analysis.sections.host_part import host_finding
from analysis.sections.peak_part import (
    PEAK_TABLE,
    config_text,
    draw_heatmap,
    metric_text,
    pattern_peaks,
    peak_facts,
    peak_findings,
    peak_rows,
    qd_label,
)
from analysis.sections.qd_figures import (
    FIG_CURVE,
    FIG_LATENCY,
    FIG_PERCENTILES,
    FIG_TAILS,
    FIG_THROUGHPUT,
    distribution_panels,
    draw_figures,
)

SECTION = "qd_sweep"
TABLE = "tables/qd_sweep.csv"
NINES_TABLE = "tables/qd_sweep_nines.csv"
SNIPPET = snippet_path(SECTION)

DEFAULTS = {"knee_gain_pct": sweeps.KNEE_GAIN_PCT, "knee_latency_pct": sweeps.KNEE_LATENCY_PCT,
            "slo_p99_us": 1000}
PEAK_FRACTION = 0.9  # "the smallest depth reaching 90% of peak throughput"
LITTLE_TOLERANCE_PCT = 10  # Little's Law misses beyond this point at a measurement problem

@dataclass(frozen=True)
class Sweep:
    """One pattern over the depths: its table rows (I/Os in flight ascending) and what was found.
    Every point is named by its I/Os in flight, iodepth x numjobs (the rows' `outstanding`)."""
    pattern: str
    rows: pd.DataFrame
    knee: sweeps.Knee | None
    best_outstanding: int  # the point with the sweep's most IOPS
    outstanding_90: int | None  # the fewest reaching 90% of the peak; None when none does
    slo_outstanding: int | None  # the most whose p99 is within the SLO; None when none is
    # the pattern's peak and efficient configuration among every one measured (peak_part), where
    # the peak search or a grid measured beyond the sweep; None: the sweep's best is the peak
    peak: pd.Series | None = None
    efficient: pd.Series | None = None

    def at(self, depth: int):
        """The row with `depth` I/Os in flight (iodepth x numjobs), the unit of every rule."""
        return self.rows[self.rows.outstanding == depth].iloc[0]

    def qd(self, depth: int) -> str:
        return qd_label(self.at(depth))

    @property
    def top(self):
        """The peak's row: the search's, or the sweep's best."""
        return self.peak if self.peak is not None else self.at(self.best_outstanding)


def analyse(table: pd.DataFrame, settings: dict,
            peaks: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[Sweep]]:
    """The section table with the sweep columns added, and each pattern's findings; `peaks`
    (peak_part.peak_rows) gives a searched pattern's peak, of which each depth's share is taken."""
    beyond = pattern_peaks(peaks) if peaks is not None and not peaks.empty else {}
    rows = case_rows(table)
    searched = rows[rows.case.str.startswith(peak_search.PREFIX)]
    rows = rows[~rows.case.str.startswith(peak_search.PREFIX)].copy()
    rows = with_searched_depths(rows, searched)
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
        top, eff, searched = beyond.get((group.rw.iloc[0], int(group.bs.iloc[0])),
                                        (None, None, False))
        if not searched:
            top = eff = None
        peak = None if top is None else top.iops_mean
        group["pct_of_peak"] = sweeps.pct_of_peak(iops, peak)
        # Little's Law: I/Os in flight / mean latency predicts IOPS. little_product (measured /
        # predicted) is taken per repetition and averaged, so the prediction is the measured
        # IOPS over that ratio, and the error is the ratio's distance from 1.
        group["little_pred_iops"] = group.iops_mean / group.little_product
        group["little_error_pct"] = (group.little_product - 1) * 100
        group["gain_pct"] = sweeps.step_changes(iops)
        group["latency_growth_pct"] = sweeps.step_changes(lat)
        knee = sweeps.find_knee(depths, iops, lat, settings["knee_gain_pct"],
                                settings["knee_latency_pct"])
        outstanding_90 = sweeps.first_reaching(depths, iops, PEAK_FRACTION, peak)
        slo = sweeps.slo_point(depths, list(group.lat_p99_us), settings["slo_p99_us"])
        group["is_knee"] = [knee is not None and d == knee.x for d in depths]
        group["is_90pct_of_peak"] = [d == outstanding_90 for d in depths]
        group["within_slo"] = [p <= settings["slo_p99_us"] for p in group.lat_p99_us]
        parts.append(group)
        found.append(Sweep(pattern, group, knee, depths[iops.index(max(iops))], outstanding_90, slo,
                           top, eff))
    return pd.concat(parts), found


SHAPE = ["rw", "bs", "numjobs", "engine"]


def with_searched_depths(rows: pd.DataFrame, searched: pd.DataFrame) -> pd.DataFrame:
    """The sweep's rows and the peak search's points of the same shape (pattern, jobs, engine)
    at depths the sweep skipped: the knee is judged on every point measured on that engine and
    job count, not on the sweep's depths alone (issue 42: a QD 32 the search measured lay
    between the sweep's QD 16 and QD 64). `from_search` marks them."""
    rows = rows.assign(from_search=False)
    if searched.empty or rows.empty:
        return rows
    keys = rows[SHAPE].drop_duplicates()
    same = searched.merge(keys, on=SHAPE)
    have = set(zip(*(rows[c] for c in [*SHAPE, "iodepth"])))
    same = same[[k not in have for k in zip(*(same[c] for c in [*SHAPE, "iodepth"]))]]
    return pd.concat([rows, same.assign(from_search=True)], ignore_index=True)


# --- findings -------------------------------------------------------------------------------
_qd_row = qd_label  # 'QD 32 × 4 jobs'


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


def peak_sentence(s: Sweep) -> str:
    """The pattern's peak and the depth that first reaches 90% of it. Where the peak search
    measured beyond the sweep, its finding states the peak and the table each depth's share of
    it: this says only which depth of the sweep reaches 90% of it."""
    best = s.at(s.best_outstanding)
    own = s.peak is None or s.peak.case == best.case  # the sweep's best is the peak
    if s.outstanding_90 is None:
        reached = "no depth of the sweep reaches 90% of the peak."
    else:
        at90 = s.at(s.outstanding_90)
        reached = (f"90% of {'it' if own else 'the peak'} is reached at "
                   f"{s.qd(s.outstanding_90)} ({md.num(at90.iops_mean)} IOPS, "
                   f"{at90.pct_of_peak:.0f}% of peak).")
    if own:
        return (f" Peak {md.num(best.iops_mean)} IOPS ({md.num(best.bw_MBps_mean)} MB/s) at "
                f"{s.qd(s.best_outstanding)}; {reached}")
    return f" {reached[0].upper()}{reached[1:]}"


def knee_finding(s: Sweep, settings: dict) -> str:
    """The knee (◆, its rule stated once in the table's note) or why there is none."""
    if s.knee is not None and knee_unresolved(s, settings):
        # one clause, as for any finding whose difference is not resolved (claims.none_resolved)
        host = knee_host(s)
        text = (f"**Knee ({s.pattern}): not established.** The means put it at "
                f"{unresolved_knee(s)}" + (f"; both points are {host}." if host else "."))
    elif s.knee is not None:
        k = s.knee
        text = (f"**Knee ({s.pattern}): {s.qd(k.x)}.** Going from {s.qd(k.previous)} to "
                f"{s.qd(k.x)} {_gains(k.gain_pct)} IOPS ({md.num(s.at(k.previous).iops_mean)}"
                f" → {md.num(s.at(k.x).iops_mean)}) while mean latency grows "
                f"{md.signed_pct(k.latency_growth_pct, 0)} ({md.num(s.at(k.previous).lat_us_mean)} → "
                f"{md.num(s.at(k.x).lat_us_mean)} µs).")
        host = knee_host(s)
        if host:
            text += (f" Both points are {host}: the knee is this host's, not shown to be "
                     "the drive's.")
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
                f"(◆); the last, {_qd_row(s.rows.iloc[-2])} → "
                f"{_qd_row(last)}, {_gains(last.gain_pct)} IOPS for "
                f"{md.signed_pct(last.latency_growth_pct, 0)} latency"
                if len(s.rows) > 1 else
                f"**Knee ({s.pattern}): not defined with one depth.** Sweep two or more depths")
        text += "."
    return text + peak_sentence(s)


def unresolved_knee(s: Sweep) -> str:
    """'QD 128 (from QD 64, gains 4.4% IOPS for +93% mean latency), a step not resolved by
    this run': where the means put a knee the test does not show."""
    k = s.knee
    return (f"{s.qd(k.x)} (from {s.qd(k.previous)}, {_gains(k.gain_pct)} IOPS for "
            f"{md.signed_pct(k.latency_growth_pct, 0)} mean latency), a step {NOT_RESOLVED}")


def knee_unresolved(s: Sweep, settings: dict) -> bool:
    """The knee's step by the test: its gain may reach the rule's bound, or its latency growth
    is not shown. Then the knee is where the means put it, not where the test does."""
    k = s.knee
    gain, growth = adjusted([row_change(s.at(k.x), s.at(k.previous), "iops_mean"),
                             row_change(s.at(k.x), s.at(k.previous), "lat_us_mean")])
    return bool((gain.tested and gain.high_pct >= settings["knee_gain_pct"])
                or (growth.tested and not growth.significant))


def knee_host(s: Sweep) -> str:
    """'host-bound (…)' where both points of the knee's step are (claims rule 3), else ''."""
    ends = [s.at(s.knee.previous), s.at(s.knee.x)]
    if not all(claims.host_rules(r) for r in ends):
        return ""
    fired = dict.fromkeys(k for r in ends for k in claims.host_rules(r))
    return f"host-bound ({claims.host_reason(fired)})"


def objective_text(r, slo_us: float) -> str:
    """'p99 3,129 µs [966–10,159], not resolved': a depth's p99 against the objective, judged
    with its 95% interval (claims rule 5)."""
    low, high = getattr(r, "lat_p99_us_lo", math.nan), getattr(r, "lat_p99_us_hi", math.nan)
    said = claims.objective(r.lat_p99_us, low, high, slo_us)
    interval = "" if math.isnan(low) else f" [{interval_text(low, high)}]"
    return f"p99 {md.num(r.lat_p99_us)} µs{interval}" + (
        f": its interval holds {md.num(slo_us)} µs, so {NOT_RESOLVED}"
        if said == "not resolved" else "")


def slo_finding(s: Sweep, slo_us: float) -> str:
    head = f"**Latency objective p99 ≤ {md.num(slo_us)} µs ({s.pattern}):**"
    if s.slo_outstanding is None:
        first = s.rows.iloc[0]
        return (f"{head} no depth is shown to meet it; the shallowest, {_qd_row(first)}, has "
                f"{objective_text(first, slo_us)}.")
    r = s.at(s.slo_outstanding)
    text = (f"{head} the deepest queue within it is {s.qd(s.slo_outstanding)}, at "
            f"{md.num(r.iops_mean)} IOPS ({md.num(r.bw_MBps_mean)} MB/s, "
            f"{objective_text(r, slo_us)}, {r.pct_of_peak:.0f}% of peak)")
    deeper = s.rows[s.rows.outstanding > s.slo_outstanding]
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
    miss = md.signed_pct(worst.little_error_pct, 1)
    if misses.empty:
        return (f"**Little's Law:** every point within {LITTLE_TOLERANCE_PCT}% of I/Os in flight / "
                f"mean latency (largest miss {miss}, {worst.pattern}, {_qd_row(worst)}): the "
                "queue was kept full.")
    text = ("**Little's Law:** predicted IOPS = I/Os in flight / mean latency; the largest miss "
            f"is {miss} ({worst.pattern}, {_qd_row(worst)}).")
    listed = ", ".join(f"{r.pattern} {_qd_row(r)} ({md.signed_pct(r.little_error_pct, 0)})"
                       for r in misses.itertuples())
    return text + (f" Off by more than {LITTLE_TOLERANCE_PCT}% at {listed}: a sign of a "
                   "measurement problem. Fewer I/Os were in flight than the depth asked for "
                   "(fio could not submit fast enough, or the engine capped the queue) when "
                   "the measured IOPS fall short; treat these points with care.")


def tail_finding(s: Sweep) -> str:
    """p99 at QD 1, then its growth at the knee and the deepest depth (their p99s are in the
    table); a † p99 is left out (claims rule 1). The deeper nines are in the CSV and the
    figures."""
    first, last = s.rows.iloc[0], s.rows.iloc[-1]
    mid = s.at(s.knee.x) if s.knee is not None else None

    def nines(r, growth: bool) -> str:
        parts = []
        for name, col in (("p99", "lat_p99_us"),):
            value, base = claims.row_tail(r, col), claims.row_tail(first, col)
            if value is not None:
                # a growth names its nine where QD 1's is stated: "p99 3,228 µs at QD 1, ×2.3"
                parts.append(f"×{value / base:.1f}" if growth and base is not None
                             else f"{name} {md.num(value)} µs")
        return " and ".join(parts) or "no percentile with enough I/Os above it"

    text = f"**Tails ({s.pattern}):** {nines(first, False)} at {_qd_row(first)}"
    if mid is not None and mid.outstanding not in (first.outstanding, last.outstanding):
        text += f", {nines(mid, True)} at the knee ({_qd_row(mid)})"
    if len(s.rows) == 1:
        return text + "; one depth swept, so no growth to compare."
    text += (f", {nines(last, True)} at {_qd_row(last)}, while IOPS grew "
             f"×{last.iops_mean / first.iops_mean:.1f}.")
    names = {"p99": "lat_p99_us", "IOPS": "iops_mean"}
    names = {n: c for n, c in names.items() if c == "iops_mean" or (
        claims.row_tail(first, c) is not None and claims.row_tail(last, c) is not None)}
    tested = adjusted([row_change(last, first, c) for c in names.values()])
    unresolved = [n for n, c in zip(names, tested) if claims.unresolved(c)]
    if unresolved:
        text += (f" The change of {', '.join(unresolved)} from {_qd_row(first)} is "
                 f"{NOT_RESOLVED} (the test does not show it).")
    return text


def recommendation(s: Sweep, slo_us: float) -> str:
    """Latency-sensitive: the deepest queue before the knee that meets the objective.
    Throughput: the peak search's efficient configuration where it ran (the fewest I/Os in
    flight within 5% of the peak), else the shallowest depth giving 90% of the peak. Each in
    the pattern's own quantity (IOPS, or MB/s for a sequential pattern)."""
    below_knee = [d for d in s.rows.outstanding if s.knee is None or d < s.knee.x]
    # each candidate's own p99 is checked too, not only its place before the objective depth
    candidates = [d for d in below_knee if s.slo_outstanding is not None and d <= s.slo_outstanding
                  and s.at(d).lat_p99_us <= slo_us]
    if candidates:
        lat_depth = max(candidates)
        r = s.at(lat_depth)
        why = ("the deepest before the knee" if s.knee is not None else "the deepest")
        lat_text = (f"{s.qd(lat_depth)} ({why} within p99 ≤ {md.num(slo_us)} µs: "
                    f"{metric_text(r, s.pattern)} at {md.num(r.lat_us_mean)} µs mean, "
                    f"p99 {md.num(r.lat_p99_us)} µs)")
    elif s.slo_outstanding is None:  # the objective's finding is folded in here
        r = s.rows.iloc[0]
        lat_text = (f"{_qd_row(r)} (no depth is shown to meet p99 ≤ {md.num(slo_us)} µs; its "
                    f"{objective_text(r, slo_us)})")
    else:
        r = s.rows.iloc[0]
        lat_text = f"{_qd_row(r)} (no depth before the knee is shown to meet the objective)"
    head = f"**Recommended depth ({s.pattern}):** for latency-sensitive work {lat_text}; for "
    top = s.top
    if s.efficient is not None:
        e = s.efficient
        if e.case == top.case:  # the peak's finding has its numbers and its configuration
            return f"{head}throughput the peak (above)."
        share = e.iops_mean / top.iops_mean * 100
        deeper = (f"the peak, {metric_text(top, s.pattern)} at {config_text(top)}, adds "
                  f"{(top.iops_mean / e.iops_mean - 1) * 100:.1f}% for a mean latency of "
                  f"{md.num(top.lat_us_mean)} µs and p99 {md.num(top.lat_p99_us)} µs")
        return (f"{head}throughput {config_text(e)} (the peak search's efficient configuration: "
                f"{metric_text(e, s.pattern)}, {share:.0f}% of the peak, at "
                f"{md.num(e.lat_us_mean)} µs mean, p99 {md.num(e.lat_p99_us)} µs); {deeper}.")
    t = s.at(s.outstanding_90)
    deeper = ("it is also the peak" if s.outstanding_90 == s.best_outstanding else
              f"deeper queues add at most {100 - t.pct_of_peak:.0f}% throughput, and latency")
    return (f"{head}throughput {s.qd(s.outstanding_90)} ({metric_text(t, s.pattern)}, "
            f"{t.pct_of_peak:.0f}% of peak at {md.num(t.lat_us_mean)} µs mean); {deeper}.")


def _unmet_at_the_peak(s: Sweep) -> bool:
    """No depth is shown to meet the objective and the peak is the efficient configuration:
    the recommendation is the shallowest depth and the peak, which says nothing of its own."""
    return (s.slo_outstanding is None and s.efficient is not None
            and s.efficient.case == s.top.case)


def recommendations(found: list[Sweep], slo_us: float) -> list[str]:
    """A recommendation per pattern; one for all where each is the shallowest depth (none
    meeting the objective) and its peak, its p99 judged per pattern."""
    shallowest = {_qd_row(s.rows.iloc[0]) for s in found}
    if len(found) < 2 or len(shallowest) > 1 or not all(map(_unmet_at_the_peak, found)):
        return [recommendation(s, slo_us) for s in found]
    p99s = "; ".join(f"{s.pattern} {objective_text(s.rows.iloc[0], slo_us)}" for s in found)
    text = (f"**Recommended depth:** for latency-sensitive work {shallowest.pop()} (no depth is "
            f"shown to meet p99 ≤ {md.num(slo_us)} µs: {p99s}); for throughput each pattern's "
            "peak (above).")
    return [text]


def findings(df: pd.DataFrame, found: list[Sweep], settings: dict) -> list[str]:
    out = []
    for s in found:
        out.append(knee_finding(s, settings))
    # where no depth meets the objective, the recommendation says so (one sentence, not two)
    out += [slo_finding(s, settings["slo_p99_us"]) for s in found if s.slo_outstanding is not None]
    out.append(little_finding(found))
    for s in found:
        out.append(tail_finding(s))
    out += recommendations(found, settings["slo_p99_us"])
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
    # a knee whose step the test does not resolve is where the means put it, not established
    # (its finding says so): its mark carries ‡ as any unresolved difference does
    unresolved = {s.at(s.knee.x).case for s in found
                  if s.knee is not None and knee_unresolved(s, settings)}
    for r in df.itertuples():
        knee = ("◆ knee" + f" {claims.UNRESOLVED}" * (r.case in unresolved)) * bool(r.is_knee)
        marks = " ".join(m for m in (flag(r).strip(), "(search)" * bool(r.from_search), knee,
                                     "● 90%" * bool(r.is_90pct_of_peak)) if m)
        rows.append([r.pattern, " ".join([_qd_row(r).removeprefix("QD "), marks]).strip(),
                     md.pm(r.iops_mean, r.iops_ci95), md.pm(r.bw_MBps_mean, r.bw_MBps_ci95),
                     *latency_cells(r)])
    # each depth's share of the peak is in the CSV (pct_of_peak); ● and the knee's finding
    # say what the rules make of it
    table = md.table(["pattern", "QD", "IOPS", "MB/s", *LATENCY_HEADER], rows,
                     ["l", "l"] + ["r"] * 5, grouped=1)
    note = (f"{standard_note(df)} " + QD_MARKS_LEGEND.format(
        gain=f"{settings['knee_gain_pct']:g}", latency=f"{settings['knee_latency_pct']:g}")
            + f" {MAX_LEGEND}")
    blocks = [table, note]
    if nines is not None and not nines.empty:
        # the tails' intervals are evidence the findings quote where they judge (the objective);
        # the page points to them rather than printing a second table
        blocks[-1] += " " + NINES_POINTER.format(table=NINES_TABLE)
    return snippet(f"## {SECTIONS[SECTION].heading}", setup, blocks,
                   [("Throughput against latency", FIG_CURVE),
                    ("Throughput by queue depth", FIG_THROUGHPUT),
                    ("Mean latency by queue depth", FIG_LATENCY),
                    ("Latency percentiles by queue depth", FIG_PERCENTILES),
                    ("Tail percentiles at selected depths", FIG_TAILS),
                    ("Share of I/Os slower than each latency: QD 1, knee, deepest",
                     exceedance.figure(SECTION)), *more_figures],
                   [*peak_lines, *findings(df, found, settings)], link)


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


def record_facts(found: list[Sweep], settings: dict, facts: Facts,
                 peaks: pd.DataFrame | None = None) -> None:
    """Each pattern's peak (random IOPS, sequential MB/s) with the configuration that gave it,
    and each sweep's knee; Little's Law misses."""
    stated = peak_facts(peaks, facts) if peaks is not None else set()
    for s in found:
        peak = s.at(s.best_outstanding)
        jobs = f"jobs {int(peak.numjobs)}"  # the sweep's --jobs: a history series never mixes them
        if stated & set(s.rows.case):  # above, over every configuration measured
            pass
        elif "random" in s.pattern:
            facts.headline("peak_random_iops", s.pattern,
                           f"{claims.with_interval(peak.iops_mean, peak.get('iops_ci95'), 'IOPS')}"
                           f" at {s.qd(s.best_outstanding)} "
                           f"({md.num(peak.lat_us_mean)} µs mean, p99 {md.num(peak.lat_p99_us)} µs)",
                           peak.iops_mean, "IOPS", peak.iops_std, settings=jobs,
                           ci95=peak.get("iops_ci95"), qualifiers=(claims.host_qualifier(peak),))
        else:
            facts.headline("peak_seq_MBps", s.pattern,
                           f"{claims.with_interval(peak.bw_MBps_mean, peak.get('bw_MBps_ci95'), 'MB/s')}"
                           f" at {s.qd(s.best_outstanding)}",
                           peak.bw_MBps_mean, "MB/s", peak.bw_MBps_std, settings=jobs,
                           ci95=peak.get("bw_MBps_ci95"), qualifiers=(claims.host_qualifier(peak),))
        if s.knee is not None:
            if knee_unresolved(s, settings):
                text = f"not established: the means put it at {unresolved_knee(s)}"
            else:
                text = (f"{s.qd(s.knee.x)}: from {s.qd(s.knee.previous)} "
                        f"{_gains(s.knee.gain_pct)} IOPS for "
                        f"{md.signed_pct(s.knee.latency_growth_pct, 0)} mean latency")
                if climb_after_knee(s, settings) is not None:
                    text += " (IOPS climb again past it: looks like a dip, rerun before quoting)"
            host = knee_host(s)
            facts.headline("knee", s.pattern, text, s.knee.x, "QD",
                           qualifiers=(f"{host}: the host's knee" if host else "",))
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


def produce(run: SectionRun) -> list[str]:
    settings = stored_settings(run.results_dir, vars(run.args), DEFAULTS)
    peaks = peak_rows(run.table, peak_search.outcomes(run.results_dir))
    df, found = analyse(run.table, settings, peaks)
    record_facts(found, settings, run.facts, peaks)
    figures = draw_figures(found, settings, run.ws, peaks)
    figures += exceedance.write(run, SECTION, distribution_panels(found, run.results_dir),
                                "Latency distribution by queue depth")
    nines = nines_frame(run, df, lambda r: f"{r.pattern} {_qd_row(r)}")
    heat = draw_heatmap(peaks, run.ws)
    figures += [path for _, path in heat]
    budget = peak_search.run_budget(read_manifest(run.results_dir))
    text = render_markdown(df, found, settings, run.setup, run.ws.link,
                           peak_findings(peaks, budget),
                           nines, heat)
    written = [run.write_table(TABLE, df), run.write_table(PEAK_TABLE, peaks),
               run.write_table(NINES_TABLE, nines),
               *map(run.ws.show, figures), run.write_text(SNIPPET, text)]
    print_summary(df)
    return written


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__,
                       produce=produce, add_arguments=add_arguments)
