"""§5, the peak: every configuration measured of the searched patterns (tables/qd_sweep_peak.csv),
the peak and the efficient configuration in the findings and the report's headlines, and the
jobs × depth heatmap. The search itself is analysis.rules.peak_search.

One peak per pattern: the configuration the search (or, without one, the means) names, among every
configuration measured, sweep and search alike. The sweep's table gives each depth's share of that
peak ("of peak"), and the knee, the recommendation, the findings and the conclusion quote the same
number. A sequential pattern's peak is stated in MB/s throughout (the same ratio as IOPS at one
block size); a random pattern's in IOPS.
"""

from __future__ import annotations

import pandas as pd

from analysis.core.workspace import Workspace
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.plots import Heat, heatmap
from analysis.rules import peak_search
from analysis.rules.cases import case_rows
from analysis.sections.facts import Facts

PEAK_TABLE = "tables/qd_sweep_peak.csv"
FIG_HEATMAP = "figs/qd_sweep_heatmap.png"  # jobs × depth, when several of each were measured
# A peak whose p99 is more than this many times the efficient configuration's buys its last few
# percent with a tail the efficient configuration does not have: flagged, never quoted bare.
PEAK_TAIL_RATIO = 10
PEAK_COLUMNS = ["case", "pattern", "rw", "bs", "iodepth", "numjobs", "outstanding", "engine", "n",
                "iops_mean", "iops_std", "iops_ci95", "bw_MBps_mean", "bw_MBps_std",
                "bw_MBps_ci95", "lat_us_mean", "lat_us_ci95", "lat_p99_us", "lat_max_us", "cpu_usr_pct",
                "cpu_sys_pct", "host_ceiling_iops", "host_bound", "host_rule", "is_peak", "is_efficient",
                "search_stopped"]


def qd_label(r) -> str:
    """'QD 32', or 'QD 32 × 4 jobs' (128 in flight) for a point of several jobs."""
    return f"QD {int(r.iodepth)}" + (f" × {int(r.numjobs)} jobs" if r.numjobs > 1 else "")


def config_text(r) -> str:
    """'QD 64 × 2 jobs with io_uring'."""
    return f"{qd_label(r)}{f' with {r.engine}' if r.engine else ''}"


def metric_text(r, pattern: str) -> str:
    """The pattern's own quantity: IOPS for a random pattern, MB/s for a sequential one."""
    return (f"{md.num(r.iops_mean)} IOPS" if "random" in pattern
            else f"{md.num(r.bw_MBps_mean)} MB/s")


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
    cols = [c for c in PEAK_COLUMNS if not parts or c in parts[0]]
    return pd.concat(parts)[cols] if parts else pd.DataFrame(columns=PEAK_COLUMNS)


def pattern_peaks(peaks: pd.DataFrame) -> dict[tuple[str, int], tuple]:
    """(rw, bs) -> (the peak's row, the efficient configuration's row, searched: whether the
    search or a grid measured more than the sweep)."""
    out = {}
    for _, rows in peaks.groupby("pattern", sort=False):
        top, eff = rows[rows.is_peak].iloc[0], rows[rows.is_efficient].iloc[0]
        searched = (rows.case.str.startswith(peak_search.PREFIX).any()
                    or rows.search_stopped.iloc[0] == "grid")
        out[(top.rw, int(top.bs))] = (top, eff, searched)
    return out


def tail_ratio(top, eff) -> float:
    """The peak's p99 over the efficient configuration's (1 when they are one point)."""
    return top.lat_p99_us / eff.lat_p99_us if eff.lat_p99_us else float("nan")


def efficient_text(top, eff, pattern: str, bold: str = "**") -> str:
    """'the efficient configuration: ... (mean, p99)', or the peak's own latency when the peak
    is it (nothing cheaper within reach: no second configuration to name)."""
    lat = f"mean {md.num(eff.lat_us_mean)} µs, p99 {md.num(eff.lat_p99_us)} µs"
    if eff.case == top.case:
        return lat
    return (f"{bold}efficient configuration (the fewest I/Os in flight within "
            f"{peak_search.GAIN_PCT}% of the peak): {metric_text(eff, pattern)} at "
            f"{config_text(eff)}{bold}, {int(eff.outstanding)} in flight against "
            f"{int(top.outstanding)} ({lat}; at the peak mean {md.num(top.lat_us_mean)} µs, "
            f"p99 {md.num(top.lat_p99_us)} µs)")


def tail_warning(top, eff, pattern: str) -> str:
    """A sentence when the peak's p99 is more than PEAK_TAIL_RATIO times the efficient
    configuration's; empty otherwise."""
    ratio = tail_ratio(top, eff)
    if eff.case == top.case or not ratio > PEAK_TAIL_RATIO:
        return ""
    unit = "IOPS" if "random" in pattern else "MB/s"
    gain = (top.iops_mean / eff.iops_mean - 1) * 100
    return (f" ⚠ **The peak's p99 is {ratio:.0f}× the efficient configuration's** "
            f"({md.num(top.lat_p99_us)} µs against {md.num(eff.lat_p99_us)} µs) for "
            f"{gain:.1f}% more {unit}: quote the efficient configuration, and rerun before "
            "quoting the peak's tail.")


def stopped_text(stopped: str, budget: int) -> str:
    """How the search ended, with the budget the run was given (the manifest's peak_budget, in
    cases' worth of repetitions)."""
    return {
        # the plateau's rule is the methodology's (the peak search), stated there once
        "plateau": "It stopped on the plateau.",
        "budget": f"**Its budget ({budget} cases) ended it before a plateau**: the peak may "
                  "lie elsewhere.",
        "running": "It was not finished (repetitions failed or the run was stopped): rerun the "
                   "same command to go on.",
    }.get(stopped, "")


def peak_findings(peaks: pd.DataFrame, budget: int) -> list[str]:
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
               f"The search tried {len(searched)} more. "
               + stopped_text(stopped, budget))
        against = ("one job's best" if base.case == top.case else
                   f"{top.iops_mean / base.iops_mean:.2f}× the best single-job point "
                   f"({metric_text(base, pattern)} at {config_text(base)})")
        text = (f"**Peak ({pattern}): {metric_text(top, pattern)} at {config_text(top)}**, "
                f"{against}; "
                f"{efficient_text(top, eff, pattern)}.{tail_warning(top, eff, pattern)} {how}")
        if claims.host_rules(top):
            text += f" It is {claims.host_qualifier(top)}."
        out.append(text)
    return out


def peak_facts(peaks: pd.DataFrame, facts: Facts) -> set[str]:
    """Each searched pattern's peak (random IOPS, sequential MB/s) with the configuration that
    gave it, for the conclusion; a peak with a tail PEAK_TAIL_RATIO times the efficient
    configuration's is an anomaly too. Returns the cases stated."""
    for pattern, rows in peaks.groupby("pattern", sort=False):
        top = rows[rows.is_peak].iloc[0]
        eff = rows[rows.is_efficient].iloc[0]
        note = "; " + efficient_text(top, eff, pattern, "") if eff.case != top.case else ""
        if tail_warning(top, eff, pattern):
            note += (f"; the peak's p99 is {tail_ratio(top, eff):.0f}× the efficient "
                     "configuration's")
            facts.anomaly("peak_tail", (
                f"{pattern}: the peak ({config_text(top)}) has a p99 of "
                f"{md.num(top.lat_p99_us)} µs, {tail_ratio(top, eff):.0f}× the efficient "
                f"configuration's ({md.num(eff.lat_p99_us)} µs at {config_text(eff)}), for "
                f"{(top.iops_mean / eff.iops_mean - 1) * 100:.1f}% more throughput: quote the "
                "efficient configuration."))
        if rows.search_stopped.iloc[0] == "budget":
            note += "; the search's budget ended it before the plateau was shown"
        if "random" in pattern:
            facts.headline("peak_random_iops", pattern,
                           f"{claims.with_interval(top.iops_mean, top.get('iops_ci95'), 'IOPS')}"
                           f" at {config_text(top)} "
                           f"({md.num(top.lat_us_mean)} µs mean, p99 {md.num(top.lat_p99_us)} µs)"
                           + note, top.iops_mean, "IOPS", top.iops_std, settings="peak search",
                           ci95=top.get("iops_ci95"), qualifiers=(claims.host_qualifier(top),))
        else:
            facts.headline("peak_seq_MBps", pattern,
                           f"{claims.with_interval(top.bw_MBps_mean, top.get('bw_MBps_ci95'), 'MB/s')}"
                           f" at {config_text(top)}" + note,
                           top.bw_MBps_mean, "MB/s", top.bw_MBps_std, settings="peak search",
                           ci95=top.get("bw_MBps_ci95"), qualifiers=(claims.host_qualifier(top),))
    return set(peaks.case)


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
    return [("Jobs × depth: throughput and p99", FIG_HEATMAP)]
