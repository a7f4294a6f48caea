"""§3 block-size sweep: tables/bs_sweep.csv, figs/bs_sweep_{iops,bw,latency}.png,
out/section_3_bs_sweep.md.

At a fixed queue depth, small blocks are bounded by how many commands the drive completes per
second: IOPS stay nearly flat and MB/s grow with the block size. Large blocks are bounded by how
many bytes it moves: MB/s flatten, IOPS halve and latency doubles with each doubling of the block.
The transition is read off the MB/s curve: the smallest block size reaching 90% of the peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from analysis.core.effects import Change, adjusted
from analysis.core.workspace import Workspace
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.claims import NOT_RESOLVED
from analysis.render.plots import COLORS, Highlight, Panel, Series, line_chart
from analysis.rules import sweeps
from analysis.rules.cases import case_rows
from analysis.sections import SECTIONS, snippet_path
from analysis.sections.common import (
    BS_MARKS_LEGEND,
    LATENCY_HEADER,
    P99_LEGEND,
    SectionRun,
    clat_note,
    flag,
    interval,
    interval_note,
    latency_cells,
    reps_label,
    row_change,
    run_section,
    snippet,
    stability_finding,
    standard_note,
)
from analysis.sections.facts import Facts
from analysis.sections.host_part import host_finding

SECTION = "bs_sweep"
TABLE = "tables/bs_sweep.csv"
FIG_IOPS = "figs/bs_sweep_iops.png"
FIG_BW = "figs/bs_sweep_bw.png"
FIG_LATENCY = "figs/bs_sweep_latency.png"
SNIPPET = snippet_path(SECTION)

BOUND_FRACTION = 0.9  # the smallest size reaching this share of peak MB/s: bandwidth-bound
FLAT_PCT = 5.0  # a step or a fall past the peak within this % is a plateau, not a change
IOPS_FLAT_FRACTION = 0.9  # IOPS within 10% of the smallest size's: still IOPS-bound
GAP_CLOSED_PCT = 10.0  # random and sequential MB/s within this % of each other: no gap


@dataclass(frozen=True)
class Transition:
    """Where a MB/s curve over block sizes turns flat, from the means in size order."""
    peak_bs: int
    bound_bs: int  # the smallest size reaching BOUND_FRACTION of the peak
    still_rising: bool  # the peak is the largest size and the last step gained > FLAT_PCT
    last_step_pct: float  # MB/s gained by the last step of the sweep (NaN with one size)
    falls: list  # (bs, % below the peak) past the peak, beyond FLAT_PCT
    # The last step's MB/s by the one test for an effect (analysis.core.effects; None: one size):
    # a rise the test does not show is not called "still rising" (`unresolved`).
    last_step: Change | None = None
    rising: bool = False  # still_rising by the means alone, before the test

    @property
    def unresolved(self) -> bool:
        """The means rise at the largest size, but the test does not show the step."""
        return self.rising and not self.still_rising


def transition(sizes: list[int], bw: list[float], fraction: float = BOUND_FRACTION,
               flat_pct: float = FLAT_PCT) -> Transition:
    peak_bs = sizes[bw.index(max(bw))]
    last_step = sweeps.step_changes(bw)[-1]
    return Transition(
        peak_bs=peak_bs,
        bound_bs=sweeps.first_reaching(sizes, bw, fraction),
        still_rising=len(sizes) > 1 and peak_bs == sizes[-1] and last_step > flat_pct,
        last_step_pct=last_step,
        falls=sweeps.falls_after_peak(sizes, bw, flat_pct))


def iops_flat_until(sizes: list[int], iops: list[float],
                    fraction: float = IOPS_FLAT_FRACTION) -> int:
    """The largest size up to which IOPS stay within `fraction` of the smallest size's IOPS (the
    IOPS-bound range, where a bigger block costs the drive no extra command time)."""
    last = sizes[0]
    for bs, value in zip(sizes, iops):
        if value < fraction * iops[0]:
            break
        last = bs
    return last


def series_label(rw: str, read_pct: int) -> str:
    """'random read', 'sequential write', 'random read/write 70/30'."""
    label = md.pattern(rw, 4096).removeprefix(md.bs_label(4096) + " ")
    return f"{label} {read_pct}/{100 - read_pct}" if 0 < read_pct < 100 else label


@dataclass(frozen=True)
class Sweep:
    """One pattern over the block sizes: its table rows (size ascending) and what was found."""
    label: str  # 'random read'
    rw: str
    rows: pd.DataFrame
    found: Transition

    @property
    def sizes(self) -> list[int]:
        return [int(b) for b in self.rows.bs]

    def at(self, bs: int):
        return self.rows[self.rows.bs == bs].iloc[0]


def analyse(table: pd.DataFrame) -> tuple[pd.DataFrame, list[Sweep]]:
    """The section table (one row per pattern and block size, with the sweep columns) and each
    pattern's sweep, patterns in the order the cases were run."""
    rows = case_rows(table).copy()
    rows.insert(1, "pattern", [md.pattern(r.rw, r.bs) for r in rows.itertuples()])
    rows["series"] = [series_label(r.rw, r.read_pct) + (f" × {r.numjobs} jobs" if r.numjobs > 1
                                                        else "") for r in rows.itertuples()]
    parts, found = [], []
    for label, group in rows.groupby("series", sort=False):
        group = group.sort_values("bs").copy()
        sizes, bw = [int(b) for b in group.bs], list(group.bw_MBps_mean)
        t = transition(sizes, bw)
        if len(group) > 1:
            step = row_change(group.iloc[-1], group.iloc[-2], "bw_MBps_mean")
            t = replace(t, last_step=step, rising=t.still_rising,
                        still_rising=t.still_rising and (step.significant or not step.tested))
        group["bw_pct_of_peak"] = sweeps.pct_of_peak(bw)
        group["bw_gain_pct"] = sweeps.step_changes(bw)
        group["is_90pct_of_peak"] = [bs == t.bound_bs for bs in sizes]
        group["is_peak"] = [bs == t.peak_bs for bs in sizes]
        parts.append(group)
        found.append(Sweep(str(label), group.rw.iloc[0], group, t))
    return pd.concat(parts).drop(columns="series"), found


# --- findings -------------------------------------------------------------------------------
def _kib(bs: int) -> str:
    return md.bs_label(int(bs))


def _shown(c: Change | None) -> bool:
    """The test shows the difference, or cannot test it (one repetition: the means speak)."""
    return c is None or not c.tested or c.significant


def _within(c: Change | None, pct: float) -> bool | None:
    """Is the difference shown to be within ±pct % (its 95% interval inside)? None untested."""
    if c is None or not c.tested:
        return None
    return bool(-pct <= c.low_pct and c.high_pct <= pct)


def bandwidth_finding(s: Sweep) -> str:
    """Where the pattern turns bandwidth-bound; its peak named the host's where the host
    limited it (claims rule 3)."""
    text = _bandwidth_words(s)
    fired = claims.host_rules(s.at(s.found.peak_bs)) if len(s.rows) > 1 else []
    if fired:
        text += f" Its peak is host-bound ({claims.host_reason(fired)}): the host's limit."
    return text


def _bandwidth_words(s: Sweep) -> str:
    t = s.found
    head = f"**{s.label.capitalize()}"
    if len(s.rows) == 1:
        r = s.rows.iloc[0]
        return (f"{head}:** only {_kib(r.bs)} was measured ({md.num(r.bw_MBps_mean)} MB/s); "
                "sweep two or more block sizes to find where it turns bandwidth-bound.")
    peak, bound = s.at(t.peak_bs), s.at(t.bound_bs)
    prev = s.rows.iloc[-2]
    if t.unresolved:
        # one clause, as for any finding whose difference is not resolved (claims.none_resolved)
        return (f"{head}: where it turns bandwidth-bound is {NOT_RESOLVED}.** The largest size "
                f"swept has the most MB/s, {md.pm(peak.bw_MBps_mean, peak.bw_MBps_ci95)} MB/s at "
                f"{_kib(t.peak_bs)}, but the step from {_kib(prev.bs)} is not resolved: MB/s may "
                f"still rise past {_kib(t.peak_bs)}, or have flattened."
                + (f" 90% of the highest MB/s measured is first reached at {_kib(t.bound_bs)} "
                   f"({md.num(bound.bw_MBps_mean)} MB/s)." if t.bound_bs != t.peak_bs else ""))
    if t.still_rising:
        # the sizes' MB/s are in the table: the step and its interval are the evidence
        text = (f"{head}: not bandwidth-bound within the sweep.** MB/s still rises at the "
                f"largest size, {_kib(t.peak_bs)}: {md.signed_pct(t.last_step_pct)}"
                + (f" [{t.last_step.interval_text()}]"
                   if t.last_step is not None and t.last_step.tested else "")
                + f" over {_kib(prev.bs)}, so the peak and the transition lie beyond it.")
        if t.bound_bs != t.peak_bs:
            text += (f" 90% of the highest MB/s measured is first reached at {_kib(t.bound_bs)} "
                     f"({md.num(bound.bw_MBps_mean)} MB/s), a lower bound at best.")
        return text
    text = (f"{head}: bandwidth-bound from {_kib(t.bound_bs)}.** Peak "
            f"{md.pm(peak.bw_MBps_mean, peak.bw_MBps_ci95)} MB/s at {_kib(t.peak_bs)}; "
            f"{_kib(t.bound_bs)} is the smallest block size reaching 90% of it "
            f"({md.num(bound.bw_MBps_mean)} MB/s, {bound.bw_pct_of_peak:.0f}%)")
    below = s.rows[s.rows.bs < t.bound_bs]
    if below.empty:
        text += (f", and the smallest size swept: the drive is bandwidth-bound at every size "
                 f"here (sweep below {_kib(t.bound_bs)} to see it IOPS-bound).")
    else:
        b = below.iloc[-1]
        more = 100 - bound.bw_pct_of_peak
        text += (f", against {b.bw_pct_of_peak:.0f}% at {_kib(b.bs)}: below it the drive is "
                 "IOPS-bound; from it on, larger blocks add "
                 + (f"at most {more:.0f}% more MB/s." if more >= 1 else "less than 1% MB/s."))
        step = row_change(bound, b, "bw_MBps_mean")
        if not _shown(step):
            text += (f" The step from {_kib(b.bs)} itself is {NOT_RESOLVED} (95% interval "
                     f"{step.interval_text()}).")
    past = s.rows[s.rows.bs > t.peak_bs]
    drops = adjusted([row_change(r, peak, "bw_MBps_mean") for r in past.itertuples()])
    by_bs = dict(zip(past.bs, drops))
    falls = [(bs, pct) for bs, pct in t.falls if _shown(by_bs.get(bs))]
    unresolved = [bs for bs, _ in t.falls if not _shown(by_bs.get(bs))]
    if falls:
        listed = ", ".join(f"{_kib(bs)} {md.num(s.at(bs).bw_MBps_mean)} MB/s ({md.signed_pct(-pct)})"
                           for bs, pct in falls)
        text += (f" Past the {_kib(t.peak_bs)} peak MB/s falls again, beyond {FLAT_PCT:.0f}%: "
                 f"{listed}.")
    if unresolved:
        text += (f" Past the peak, a fall at {', '.join(_kib(bs) for bs in unresolved)} is "
                 f"{NOT_RESOLVED}.")
    if t.falls:
        return text
    if t.peak_bs != s.sizes[-1]:
        low = past.bw_pct_of_peak.min()
        if all(_within(c, FLAT_PCT) is not False for c in drops):
            text += (f" Past the peak every size stays within {FLAT_PCT:.0f}% of it (lowest "
                     f"{low:.0f}%): a plateau, no fall.")
        else:
            text += (f" Past the peak every size is within {FLAT_PCT:.0f}% of it by its mean "
                     f"(lowest {low:.0f}%), but whether it is a plateau is {NOT_RESOLVED}.")
    elif _within(t.last_step, FLAT_PCT) is not False:
        text += (f" The largest size is the peak by {md.signed_pct(t.last_step_pct)} over "
                 f"{_kib(prev.bs)}, within {FLAT_PCT:.0f}%: a plateau.")
    else:
        text += (f" The largest size is the peak by {md.signed_pct(t.last_step_pct)} over "
                 f"{_kib(prev.bs)}; whether MB/s has flattened there is {NOT_RESOLVED} (95% "
                 f"interval of that step {t.last_step.interval_text()}).")
    return text


def _growth(sizes: list[int], values: list[float]) -> float:
    ok = [(b, v) for b, v in zip(sizes, values) if not math.isnan(v) and v > 0]
    if len(ok) < 2:
        return math.nan
    return sweeps.growth_per_doubling([b for b, _ in ok], [v for _, v in ok])


def _growth_text(s: Sweep) -> str:
    """'mean 1.18×, p99 1.16×': latency's growth per doubling of the block over the sweep."""
    mean_g = _growth(s.sizes, list(s.rows.lat_us_mean))
    p99_g = _growth(s.sizes, list(s.rows.lat_p99_us))
    return f"mean {mean_g:.2f}×" + ("" if math.isnan(p99_g) else f", p99 {p99_g:.2f}×")


def _growth_details(s: Sweep) -> str:
    """What a pattern's latency finding adds to its growth: the growth on each side of where it
    turns bandwidth-bound, and how far its IOPS stay flat; '' when neither applies."""
    sizes, text = s.sizes, ""
    first, last = s.rows.iloc[0], s.rows.iloc[-1]
    bound = s.found.bound_bs
    if not s.found.still_rising and sizes[0] < bound < sizes[-1]:
        lat = list(s.rows.lat_us_mean)
        i = sizes.index(bound)
        before, after = _growth(sizes[:i + 1], lat[:i + 1]), _growth(sizes[i:], lat[i:])
        text += (f"; up to {_kib(bound)} {before:.2f}× per doubling, beyond it {after:.2f}× "
                 "(1.00× is a fixed cost per command, 2.00× a fixed MB/s: twice the bytes, "
                 "twice the time)")
    flat = iops_flat_until(sizes, list(s.rows.iops_mean))
    if flat != sizes[0]:
        drop = (1 - last.iops_mean / first.iops_mean) * 100
        text += (f". IOPS stay within {100 - IOPS_FLAT_FRACTION * 100:.0f}% of "
                 f"{_kib(first.bs)}'s {md.num(first.iops_mean)} up to {_kib(flat)}, then fall to "
                 f"{md.num(last.iops_mean)} at {_kib(last.bs)} ({md.signed_pct(-drop)})")
    return text


def latency_findings(found: list[Sweep]) -> list[str]:
    """How latency grows with the block, and how far IOPS hold (each size's IOPS and latency
    are in the table, so the IOPS are named only where they stay flat for a while): a finding
    per pattern, or one for all where only their growth is to say."""
    swept = [s for s in found if len(s.rows) >= 2]
    details = [_growth_details(s) for s in swept]
    if len(swept) > 1 and not any(details):
        listed = "; ".join(f"{s.label} {_growth_text(s)}" for s in swept)
        return [f"**Latency per doubling of the block:** {listed}."]
    return [f"**{s.label.capitalize()}, latency per doubling of the block:** {_growth_text(s)}"
            f"{more}." for s, more in zip(swept, details, strict=True)]


def gap_finding(rand: Sweep, seq: Sweep, op: str) -> str | None:
    """Sequential against random MB/s at each block size both swept, each tested and adjusted
    together (Benjamini-Hochberg)."""
    common = [bs for bs in rand.sizes if bs in seq.sizes]
    if not common:
        return None
    changes = adjusted([row_change(seq.at(bs), rand.at(bs), "bw_MBps_mean") for bs in common])
    gaps = [c.pct for c in changes]
    if claims.none_resolved(changes):  # no gap listed: the table has both sweeps' MB/s
        where = (f"at {_kib(common[0])}" if len(common) == 1 else
                 f"at any size from {_kib(common[0])} to {_kib(common[-1])}")
        return (f"**Random vs sequential {op}s:** no gap in MB/s is shown {where} "
                f"{claims.UNRESOLVED}: whether the access pattern matters is {NOT_RESOLVED}.")
    # each gap as the test judged it (‡: not resolved; claims.marked)
    listed = ", ".join(f"{claims.marked(c)} at {_kib(bs)}" for bs, c in zip(common, changes))
    text = f"**Random vs sequential {op}s:** sequential MB/s against random: {listed}."
    if len(common) > 1:
        shown = [i for i, c in enumerate(changes) if _shown(c)]
        if shown:
            widest = max(shown, key=lambda i: abs(gaps[i]))
            text += (f" The widest gap the test shows is at {_kib(common[widest])} "
                     f"({md.signed_pct(gaps[widest])})")
        else:
            text += " No gap is shown at any size"
        within = [_within(c, GAP_CLOSED_PCT) for c in changes]
        closed = next((common[i] for i in range(len(common))
                       if all(w is not False and abs(g) <= GAP_CLOSED_PCT
                              for w, g in zip(within[i:], gaps[i:]))), None)
        last = changes[-1]
        apart = _shown(last) and (last.low_pct > GAP_CLOSED_PCT or last.high_pct < -GAP_CLOSED_PCT
                                  if last.tested else abs(last.pct) > GAP_CLOSED_PCT)
        if closed == common[0]:
            text += f"; at every size the two are within {GAP_CLOSED_PCT:.0f}%."
        elif closed is not None:
            text += (f"; from {_kib(closed)} on the two stay within {GAP_CLOSED_PCT:.0f}%, "
                     "the access pattern no longer matters.")
        elif apart:
            text += (f"; at {_kib(common[-1])} they still differ by more than "
                     f"{GAP_CLOSED_PCT:.0f}%.")
        else:
            text += (f"; whether they still differ by more than {GAP_CLOSED_PCT:.0f}% at "
                     f"{_kib(common[-1])} is {NOT_RESOLVED}.")
    return text


def findings(df: pd.DataFrame, found: list[Sweep]) -> list[str]:
    out = [bandwidth_finding(s) for s in found]
    out += latency_findings(found)
    by_rw = {s.rw: s for s in found}
    for op in ("read", "write"):
        if f"rand{op}" in by_rw and op in by_rw:
            gap = gap_finding(by_rw[f"rand{op}"], by_rw[op], op)
            if gap:
                out.append(gap)
    out.append(stability_finding(df, lambda r: r.pattern))
    out.append(host_finding(df, lambda r: r.pattern))
    out += clat_note(df)
    return out


# --- markdown ---------------------------------------------------------------------------------
def _queue_line(df: pd.DataFrame) -> str:
    depths = sorted({int(d) for d in df.iodepth})
    jobs = sorted({int(j) for j in df.numjobs})
    depth = ", ".join(str(d) for d in depths)
    mixed = bool(((df.read_pct > 0) & (df.read_pct < 100)).any())
    return (f"Queue depth {depth} in every case, {', '.join(str(j) for j in jobs)} "
            f"job{'s' if jobs != [1] else ''}" + ("; a mixed pattern's row is read + write."
                                                 if mixed else "."))


def render_markdown(df: pd.DataFrame, found: list[Sweep], setup: str,
                    link=md.link_from_out) -> str:
    rows = []
    for s in found:
        for r in s.rows.itertuples():
            # still rising at the largest size: the peak and the 90% point lie beyond the
            # sweep, so neither is marked where the findings say they are not
            rising = s.found.still_rising
            marks = flag(r) + (" ● 90%" if r.is_90pct_of_peak and not rising else "") + \
                ((" ▲ still rising" if rising else " ▲ peak") if r.is_peak else "")
            rows.append([s.label, _kib(r.bs) + marks, md.pm(r.iops_mean, r.iops_ci95),
                         md.pm(r.bw_MBps_mean, r.bw_MBps_ci95), *latency_cells(r)])
    # each size's share of the peak MB/s is in the CSV (bw_pct_of_peak): ● and ▲ mark what
    # the findings use of it
    table = md.table(["pattern", "block size", "IOPS", "MB/s", *LATENCY_HEADER],
                     rows, ["l", "l"] + ["r"] * 5, grouped=1)
    note = f"{standard_note(df)} {P99_LEGEND} {BS_MARKS_LEGEND}"
    return snippet(f"## {SECTIONS[SECTION].heading}", setup, [_queue_line(df), table, note],
                   [("IOPS by block size", FIG_IOPS), ("MB/s by block size", FIG_BW),
                    ("Mean and p99 latency by block size", FIG_LATENCY)], findings(df, found), link)


# --- figures ----------------------------------------------------------------------------------
def _size_axis(found: list[Sweep]) -> dict:
    kib = sorted({b / 1024 for s in found for b in s.sizes})
    return {"xscale": "log2", "xticks": kib, "xticklabels": [f"{k:g}" for k in kib],
            "xlabel": "block size (KiB, log2 scale)"}


def _series(found: list[Sweep], col: str, bw_marks: bool = False) -> list[Series]:
    out = []
    for s in found:
        label = s.label
        if bw_marks and len(s.rows) > 1:
            label += (f" (○ highest mean: {_kib(s.found.peak_bs)}, the largest size swept)"
                      if s.found.still_rising else
                      f" (○ 90% of peak from {_kib(s.found.bound_bs)})")
        out.append(Series(label, [b / 1024 for b in s.sizes], list(s.rows[col]),
                          interval(s.rows, col), host_bound=[bool(v) for v in s.rows.host_bound]
                          if "host_bound" in s.rows else None,
                          thin=claims.thin_marks(s.rows, col)))
    return out


def _rings(found: list[Sweep], col: str) -> list[Highlight]:
    """A ring in the series' colour on each pattern's 90%-of-peak size (its highest mean when
    that is the largest size swept); the legend says which size it is, and no more: whether the
    curve still rises beyond the noise is the findings' to say."""
    out = []
    for color, s in zip(COLORS * 3, found):
        if len(s.rows) > 1:
            bs = s.found.peak_bs if s.found.still_rising else s.found.bound_bs
            out.append(Highlight(bs / 1024, s.at(bs)[col], "", color))
    return out


def draw_figures(found: list[Sweep], ws: Workspace, reps: str) -> list[str]:
    axis = _size_axis(found)
    depth = "/".join(sorted({str(int(d)) for s in found for d in s.rows.iodepth}))
    rows = pd.concat([s.rows for s in found])
    note = f"{interval_note(rows)}; QD {depth}"
    means_note = f"{interval_note(rows, percentiles=False)}; QD {depth}"
    line_chart(ws.path(FIG_IOPS), [
        Panel("IOPS by block size", ylabel="IOPS (log scale)", yscale="log", **axis,
              series=_series(found, "iops_mean"))], note=means_note)
    line_chart(ws.path(FIG_BW), [
        Panel("MB/s by block size", ylabel="MB/s (10^6 B/s)", from_zero=True,
              **axis, series=_series(found, "bw_MBps_mean", bw_marks=True),
              highlights=_rings(found, "bw_MBps_mean"))], note=means_note)
    panels = [Panel("mean total latency", ylabel="mean latency (µs, log scale)", yscale="log",
                    **axis, series=_series(found, "lat_us_mean"))]
    with_p99 = [s for s in found if s.rows.lat_p99_us.notna().any()]
    if with_p99:  # fio output without percentiles (json, not json+, of a mix) has none
        clat = any((s.rows.pct_source == "clat").any() for s in with_p99)
        source = "completion" if clat else "total"
        panels.append(Panel(f"p99 {source} latency (pooled repetitions)",
                            ylabel="p99 latency (µs, log scale)", yscale="log", **axis,
                            series=_series(with_p99, "lat_p99_us")))
    line_chart(ws.path(FIG_LATENCY), panels, title="Latency by block size", note=note)
    return [FIG_IOPS, FIG_BW, FIG_LATENCY]


def print_summary(df: pd.DataFrame) -> None:
    print(f"{'case':<16} {'IOPS':>18} {'MB/s':>16} {'of peak':>8} {'mean µs':>10} "
          f"{'p99 µs':>10}")
    for r in df.itertuples():
        flags = (" 90%" if r.is_90pct_of_peak else "") + (" peak" if r.is_peak else "") + \
            (" unstable" if r.unstable else "")
        print(f"{r.case:<16} {md.pm(r.iops_mean, r.iops_ci95):>18} "
              f"{md.pm(r.bw_MBps_mean, r.bw_MBps_ci95):>16} {r.bw_pct_of_peak:>7.0f}% "
              f"{md.num(r.lat_us_mean):>10} {md.num(r.lat_p99_us):>10}{flags}")


def record_facts(found: list[Sweep], facts: Facts) -> None:
    """The peak MB/s of each sequential pattern, for the conclusion."""
    for s in found:
        if s.rw in ("read", "write"):
            peak = s.at(s.found.peak_bs)
            rising = (" (still rising at the largest size)" if s.found.still_rising else
                      " (the most MB/s measured, at the largest size; whether it still rises "
                      f"there is {NOT_RESOLVED})" if s.found.unresolved else "")
            facts.headline("peak_seq_MBps", s.label,
                           f"{claims.with_interval(peak.bw_MBps_mean, peak.bw_MBps_ci95, 'MB/s')}"
                           f" at {md.bs_label(s.found.peak_bs)} "
                           f"blocks, QD {int(peak.iodepth)}{rising}", peak.bw_MBps_mean, "MB/s",
                           peak.bw_MBps_std, ci95=peak.get("bw_MBps_ci95"),
                           qualifiers=(claims.host_qualifier(peak),))


def produce(run: SectionRun) -> list[str]:
    df, found = analyse(run.table)
    record_facts(found, run.facts)
    figures = draw_figures(found, run.ws, reps_label(df))
    written = [run.write_table(TABLE, df), *map(run.ws.show, figures),
               run.write_text(SNIPPET, render_markdown(df, found, run.setup, run.ws.link))]
    print_summary(df)
    return written


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__,
                       produce=produce)
