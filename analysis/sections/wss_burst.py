"""§6 working set, burst -> steady state, compressibility: tables/wss_burst_*.csv,
figs/wss_burst_*.png, out/section_6_wss_burst.md.

Four parts, each present only when its cases ran (`--parts`):
- working set: 4 KiB random read and write at QD 32 over growing address ranges. A drive's
  caches (DRAM mapping table, SLC) cover a hot set up to some size; beyond it latency rises and
  per-second throughput wavers.
- burst: one long write logged per second (analysis.sections.burst_part).
- recovery: right after it, full-speed probes after idle gaps: the write cache regained per
  idle minute (analysis.sections.recovery_part).
- compressibility: the same 128 KiB sequential write of random, 50% compressible and zero data.
Across the section: the host writes the drive counted against the bytes fio wrote.
"""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import pandas as pd

from analysis.core.effects import adjusted
from analysis.core.stats import rep_stats
from analysis.core.workspace import Workspace
from analysis.device.health import THROTTLE_KEYS, UNAVAILABLE, health_delta, health_summary
from analysis.device.nand_writes import describe, write_amplification
from analysis.fio.job_options import time_option_s
from analysis.fio.log_files import logged
from analysis.fio.log_series import read_per_second, series_stats
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.bars import bar_chart
from analysis.render.claims import NOT_RESOLVED
from analysis.render.plots import Panel, Series, line_chart
from analysis.rules.burst import state_of_rate
from analysis.rules.cases import Case, load_section, one_state, read_manifest
from analysis.sections import SECTIONS, burst_part, recovery_part, snippet_path
from analysis.sections.common import (
    LATENCY_HEADER,
    SectionRun,
    clat_note,
    flag,
    interval,
    interval_note,
    latency_cells,
    row_change,
    run_section,
    snippet,
    stability_finding,
    standard_note,
)
from analysis.sections.host_part import host_finding

SECTION = "wss_burst"
SNIPPET = snippet_path(SECTION)
TABLE_WSS = "tables/wss_burst_wss.csv"
TABLE_COMPRESS = "tables/wss_burst_compress.csv"
FIG_WSS_LATENCY = "figs/wss_burst_wss_latency.png"
FIG_WSS_TIME = "figs/wss_burst_wss_iops_time.png"
FIG_COMPRESS_BW = "figs/wss_burst_compress_bw.png"
FIG_COMPRESS_LATENCY = "figs/wss_burst_compress_latency.png"
WSS_PCTS = [("mean", "lat_us_mean"), ("p99", "lat_p99_us"), ("p99.9", "lat_p99_9_us")]
STEP_PCT = 20  # a latency rise above this between neighbouring working sets is called a step


# --- case parameters, from the JSON's own job options --------------------------------------------
def job_option(case: Case, key: str):
    return case.reps[0].options.get(key)


def part_of(case: Case) -> str:
    """Which part a case belongs to: a recovery probe is named recovery-<gap>s; the burst alone
    logs a latency histogram; a working set is random (4 KiB), the compressibility cases
    sequential. Every case logs its IOPS, latency and, writing, its bandwidth each second
    (lib/jobfile.bash, second_log_lines), so those tell none apart."""
    if recovery_part.is_probe(case.name):
        return "recovery"
    if job_option(case, "write_hist_log"):
        return "burst"
    if case.reps[0].rw.startswith("rand"):
        return "wss"
    return "compress"


def wss_bytes(case: Case) -> int:
    return int(job_option(case, "size"))


def point_label(row, cases: dict[str, Case]) -> str:
    """A row as the reader knows it, not by its case id: '4 KiB random read, working set
    256 MiB', '128 KiB sequential write, all zeros', '128 KiB sequential write, burst'."""
    case = cases.get(row.case)
    label = md.pattern(row.rw, row.bs)
    part = part_of(case) if case is not None else ""
    if part == "wss":
        return f"{label}, working set {md.human_size(wss_bytes(case))}"
    if part == "compress":
        return f"{label}, {data_kind(case)}"
    return f"{label}, {part}" if part else label


def data_kind(case: Case) -> str:
    """What the write buffers held: the data pattern a compressing drive would see."""
    if str(job_option(case, "zero_buffers") or "0") not in ("0", ""):
        return "all zeros"
    pct = job_option(case, "buffer_compress_percentage")
    if pct not in (None, "", "0"):
        return f"{pct}% compressible"
    return "random (incompressible)"


def per_second_iops_cv(case_dir: Path, numbers: tuple[int, ...]) -> tuple[float, float]:
    """The CV of per-second IOPS within each repetition (from its 1 s IOPS log), averaged over
    the repetitions that loaded (`Case.numbers`: a failed one's logs are still on disk), and its
    std: how steady the drive is within a run, not between runs."""
    cvs = []
    for k in numbers:
        logs = logged(case_dir, f"rep{k}", "iops")
        if not logs:
            continue
        values = read_per_second(logs).complete().total()
        if len(values) >= 2:
            cvs.append(series_stats(values).cv)
    stats = rep_stats(cvs)
    return stats["mean"], stats["std"]


# --- the working-set part ---------------------------------------------------------------------
def wss_table(table: pd.DataFrame, cases: dict[str, Case], results_dir: Path) -> pd.DataFrame:
    names = [n for n, c in cases.items() if part_of(c) == "wss"]
    rows = table[table.case.isin(names)].copy()
    if rows.empty:
        return rows
    rows["wss_bytes"] = [wss_bytes(cases[c]) for c in rows.case]
    cv = [per_second_iops_cv(results_dir / c, cases[c].numbers) for c in rows.case]
    rows["iops_per_s_cv"] = [c[0] for c in cv]
    rows["iops_per_s_cv_std"] = [c[1] for c in cv]
    rows.insert(1, "pattern", [md.pattern(r.rw, r.bs) for r in rows.itertuples()])
    return rows.sort_values(["rw", "wss_bytes"], kind="stable")


def wss_findings(df: pd.DataFrame, target_kind: str = "") -> list[str]:
    df = one_state(df)
    out = []
    # the patterns whose working sets changed nothing the test shows, said in one finding per
    # range and quantities: {(range, quantities): [pattern, ...]}
    quiet = {}
    for pattern, part in df.groupby("pattern", sort=False):
        first, last = part.iloc[0], part.iloc[-1]
        size = f"{md.human_size(first.wss_bytes)} → {md.human_size(last.wss_bytes)}"
        if len(part) == 1:
            out.append(f"**{pattern}:** one working set ({md.human_size(first.wss_bytes)}): "
                       f"{md.num(first.iops_mean)} IOPS, mean {md.num(first.lat_us_mean)} µs, "
                       f"p99 {md.num(first.lat_p99_us)} µs.")
            continue
        # what the table shows (p99.9 is in the CSV, as the methodology says once)
        metrics = {"IOPS": "iops_mean", "mean latency": "lat_us_mean", "p99": "lat_p99_us"}
        tested = dict(zip(metrics, adjusted([row_change(last, first, c)
                                             for c in metrics.values()])))
        # each change as the test judged it (claims: ‡ where its interval straddles zero); a
        # † percentile is not quoted at all
        said = {name: (claims.marked(c) if c.tested else _change(getattr(first, col),
                                                                      getattr(last, col)))
                for (name, c), col in zip(tested.items(), metrics.values())}
        thin = {n for n, col in metrics.items() if col.startswith("lat_p") and None in (
            claims.row_tail(first, col), claims.row_tail(last, col))}
        quoted = [c for name, c in tested.items() if name not in thin]
        pairs = list(pairwise(part.itertuples()))
        changes = adjusted([row_change(b, a, "lat_us_mean") for a, b in pairs])
        # none listed (the table has every working set's), nor a step between neighbours
        if claims.none_resolved(quoted) and claims.none_resolved(changes):
            names = [n for n in metrics if n not in thin]
            key = (size, tuple(names))
            if key not in quiet:  # the first of its kind holds the place of them all
                out.append(key)
            quiet.setdefault(key, []).append(pattern)
            continue
        text = (f"**{pattern}, working set {size}:** IOPS {said['IOPS']}"
                f" ({md.num(first.iops_mean)} → {md.num(last.iops_mean)}), mean latency "
                f"{said['mean latency']}")
        if "p99" not in thin:
            text += (f", p99 {said['p99']} ({md.num(first.lat_p99_us)} → "
                     f"{md.num(last.lat_p99_us)} µs)")
        text += "."
        steps = [(a, b) for (a, b), c in zip(pairs, changes)
                 if c.pct > STEP_PCT and (c.significant or not c.tested)]
        unsure = [(a, b, c) for (a, b), c in zip(pairs, changes)
                  if c.tested and (c.high_pct > STEP_PCT) and not (c.pct > STEP_PCT and
                                                                  c.significant)]
        if steps:
            text += " Latency steps up " + ", ".join(
                f"from {md.human_size(a.wss_bytes)} to {md.human_size(b.wss_bytes)} "
                f"({_change(a.lat_us_mean, b.lat_us_mean)})" for a, b in steps) + (
                ": a hot set that no longer fits a cache would do this (of the drive"
                + (", or of the filesystem and the storage under this file target"
                   if target_kind == "file" else "")
                + "); this run measures the latency, not which cache.")
        elif unsure:
            a, b, c = unsure[0]
            text += (f" Whether latency steps up by more than {STEP_PCT}% between neighbouring "
                     f"working sets is {NOT_RESOLVED} (from {md.human_size(a.wss_bytes)} to "
                     f"{md.human_size(b.wss_bytes)}: 95% interval {c.interval_text()}).")
        else:
            text += (f" No step between neighbouring working sets exceeds {STEP_PCT}% in mean "
                     "latency: nothing measured here caches a small hot set better than the "
                     "whole range.")
        out.append(text)
    return [f"**{' and '.join(quiet[k])}, working set {k[0]}:** no change in "
            f"{', '.join(k[1][:-1])} or {k[1][-1]} is shown {claims.UNRESOLVED}."
            if isinstance(k, tuple) else k for k in out]


def _change(a: float, b: float) -> str:
    if not a or math.isnan(a) or math.isnan(b):
        return "–"
    pct = (b / a - 1) * 100
    return md.signed_pct(pct, 0) if abs(pct) < 1000 else f"×{b / a:.0f}"


def draw_wss(df: pd.DataFrame, cases: dict[str, Case], results_dir: Path,
             ws: Workspace) -> list[str]:
    sizes = sorted(set(df.wss_bytes))
    axis = {"xscale": "log2", "xticks": sizes, "xticklabels": [md.human_size(s) for s in sizes],
            "xlabel": "working set (log2 scale)"}
    panels = [Panel(pattern, ylabel="latency (µs, log scale)", yscale="log", **axis,
                    series=[Series(name, list(part.wss_bytes), list(part[col]),
                                   interval(part, col),
                                   host_bound=[bool(v) for v in part.get("host_bound", [])],
                                   thin=claims.thin_marks(part, col))
                            for name, col in WSS_PCTS])
              for pattern, part in df.groupby("pattern", sort=False)]
    line_chart(ws.path(FIG_WSS_LATENCY), panels, title="Latency by working set",
               note=interval_note(df))
    time_panels = []
    for pattern, part in df.groupby("pattern", sort=False):
        series = []
        for r in part.itertuples():
            logs = logged(results_dir / r.case, f"rep{cases[r.case].numbers[0]}", "iops")
            if logs:
                per_s = read_per_second(logs).complete()
                series.append(Series(md.human_size(r.wss_bytes), list(per_s.seconds),
                                     list(per_s.total())))
        time_panels.append(Panel(pattern, "time (s)", "IOPS (per second)", series,
                                 from_zero=True, whole_x=True))
    line_chart(ws.path(FIG_WSS_TIME), time_panels,
               title="Per-second IOPS over time, first good repetition of each working set")
    return [FIG_WSS_LATENCY, FIG_WSS_TIME]


# --- the compressibility part -------------------------------------------------------------------
def compress_table(table: pd.DataFrame, cases: dict[str, Case]) -> pd.DataFrame:
    names = [n for n, c in cases.items() if part_of(c) == "compress"]
    rows = table[table.case.isin(names)].copy()
    rows.insert(1, "data", [data_kind(cases[c]) for c in rows.case])
    return rows


def compress_findings(df: pd.DataFrame, target_kind: str,
                      burst: burst_part.BurstRun | None = None) -> list[str]:
    # a pattern at two levels is left out of the comparison, saying so (issue 41)
    apart = df.drop(one_state(df).index).drop_duplicates("case")
    split = apart[apart.data.str.startswith("random")]
    apart = apart[~apart.case.isin(split.case[:1])]
    # each level is in the write regimes' table, not said again here
    left_out = "".join(f" {r.data.capitalize()}: not compared, its repetitions wrote at "
                       "separate levels (write regimes below)."
                       for r in apart.itertuples())
    if not split.empty:  # random data at two levels: nothing to compare the others against
        ref = split.iloc[0]
        others = one_state(df[df.case != ref.case])
        shown = "; ".join(f"{r.data} {md.num(r.bw_MBps_mean)} MB/s" for r in others.itertuples())
        return [f"**Compressibility:** not compared: random data's repetitions wrote at "
                f"separate levels ({ref.regime}; write regimes below), so it has no one level "
                f"to hold the others against" + (f" ({shown})" if shown else "") + "."
                + compress_state(others, burst, "Each of those") + left_out]
    df = one_state(df)
    base = df[df.data.str.startswith("random")]
    if base.empty or len(df) < 2:
        return [f"**Compressibility:**{left_out}"] if left_out else []
    ref = base.iloc[0]
    others = list(df[df.case != ref.case].itertuples())
    changes = adjusted([row_change(r, ref, "bw_MBps_mean") for r in others])
    parts, faster, slower = [], False, False
    for r, c in zip(others, changes):
        measurable = claims.resolved(c)
        faster |= measurable and c.pct > 0
        slower |= measurable and c.pct < 0
        parts.append(f"{r.data} {md.num(r.bw_MBps_mean)} MB/s ({claims.difference(c, 1)})")
    text = (f"**Compressibility:** against {md.num(ref.bw_MBps_mean)} MB/s of random data, "
            + "; ".join(parts) + ". ")
    if faster:
        text += ("Compressible data is written faster: compression or deduplication of what "
                 "is written (by the drive, or by the layer under the target) would do this, "
                 "so benchmarks with compressible buffers would overstate its speed for real, "
                 "incompressible data; the run shows the speed, not the cause.")
    elif slower:
        text += ("Compressible data is written slower, which compression would not cause: "
                 "read this as run-to-run variation (see the stability line) and repeat with "
                 "longer runs before drawing a conclusion.")
    elif changes and all(claims.verdict(c) == claims.NO_DIFFERENCE for c in changes):
        text += (f"Every pattern wrote at the same speed (each difference's 95% interval within "
                 f"±{claims.EQUAL_PCT:g}%): this drive shows no compression at this run's "
                 "precision.")
    elif not any(c.tested for c in changes):  # a tested change not shown carries ‡: no more
        text += ("No measurable difference: a drive without compression writes every pattern "
                 "at the same speed, which is what this run shows.")
    # each part above and below opens with its space: none trails a sentence that ends here
    text = text.rstrip() + compress_state(df, burst,
                                          "Every pattern" if apart.empty else "Every one compared")
    text += left_out
    if target_kind == "file":
        text += (" On a file target the filesystem and any virtual disk under it sit between "
                 "fio and the drive.")
    return [text]


STATE_WORDS = {"cache": "before the burst's cliff, into the write cache",
               "after": "after the burst's cliff, with the write cache full"}


def compress_state(df: pd.DataFrame, burst: burst_part.BurstRun | None,
                   who: str = "Every pattern") -> str:
    """' Every pattern was written with the write cache full, ...': which of the burst's states
    the patterns measured, where the burst wrote the same shape and had a cliff to tell them
    apart (analysis.rules.burst.state_of_rate); '' otherwise."""
    if burst is None or burst.result.cliff is None:
        return ""
    shape = burst.case.reps[0]
    first = df.iloc[0]
    if (first.rw, int(first.bs), int(first.iodepth)) != (shape.rw, shape.bs, shape.iodepth):
        return ""
    r = burst.result
    levels = (f"{md.num(r.plateau.median_MBps)} MB/s before it, "
              f"{md.num(r.levels[-1].median_MBps)} MB/s after")
    states = {row.data: state_of_rate(row.bw_MBps_mean, r) for row in df.itertuples()}
    if len(set(states.values())) == 1 and None not in states.values():
        state = next(iter(states.values()))
        text = f" {who} was written {STATE_WORDS[state]}"  # the burst's finding has the levels
        return text + (": compression only inside the cache would not show."
                       if state == "after" else ".")
    named = "; ".join(f"{data}: {STATE_WORDS[st] if st else 'at neither of its levels'}"
                      for data, st in states.items())
    return (f" The patterns measured different states of the drive ({named}; the burst: "
            f"{levels}), so their difference is not the data's alone.")


def _write_job(df: pd.DataFrame) -> str:
    """'128 KiB sequential write, QD 32', from the compressibility cases' own job options."""
    first = df.iloc[0]
    return f"{md.pattern(first.rw, int(first.bs))}, QD {first.iodepth}"


def draw_compress(df: pd.DataFrame, ws: Workspace) -> list[str]:
    kept = set(one_state(df).index)
    labels = [d.replace(" (", "\n(") + ("" if i in kept else "\n(two levels: no bar)")
              for i, d in zip(df.index, df.data)]
    flags = {"flagged": list(df.host_bound), "flag_label": "host-bound (see the Host line)"}
    bar_chart(ws.path(FIG_COMPRESS_BW), labels, list(df.bw_MBps_mean),
              interval(df, "bw_MBps_mean"), ylabel="MB/s (10^6 B/s)",
              title=f"{_write_job(df)} by data pattern",
              note=interval_note(df, percentiles=False), **flags)
    bar_chart(ws.path(FIG_COMPRESS_LATENCY), labels, list(df.lat_us_mean),
              interval(df, "lat_us_mean"), ylabel="total latency (µs)",
              title="Write latency by data pattern: mean and p99", markers=list(df.lat_p99_us),
              marker_errors=interval(df, "lat_p99_us"), marker_name="p99",
              marker_label="p99 (pooled repetitions) ± its 95% interval",
              marker_thin=claims.thin_marks(df, "lat_p99_us"),
              note=interval_note(df), **flags)
    return [FIG_COMPRESS_BW, FIG_COMPRESS_LATENCY]


# --- health across the section -----------------------------------------------------------------
def fio_bytes_written(cases: dict[str, Case]) -> int:
    return sum(g.directions["write"].io_bytes for c in cases.values() for g in c.reps
               if "write" in g.directions)


def ramp_bytes_written(cases: dict[str, Case]) -> tuple[float, float]:
    """(bytes the ramps wrote, estimated; the longest ramp_time in s). fio resets its byte
    counters when ramp_time ends, but the drive counts the ramp's writes too: left out, they
    overstate the drive's count against fio's by up to (runtime + ramp) / runtime (1.17x in the
    standard profile, 1.25x in quick). Each repetition's ramp is counted at its measured write
    rate (io_bytes / runtime): the same job ran, only fio was not counting yet."""
    total, longest = 0.0, 0.0
    for g in (g for c in cases.values() for g in c.reps):
        ramp_s = time_option_s(g.options.get("ramp_time")) or 0.0
        write = g.directions.get("write")
        if ramp_s and write is not None and write.runtime_ms > 0:
            total += write.io_bytes / write.runtime_ms * ramp_s * 1000
            longest = max(longest, ramp_s)
    return total, longest


def health_findings(results_dir: Path, cases: dict[str, Case], peak_c: float | None) -> list[str]:
    before, after = results_dir / "health" / "before", results_dir / "health" / "after"
    measured = fio_bytes_written(cases)
    ramp, ramp_s = ramp_bytes_written(cases)
    written = measured + ramp
    head = f"**Health across the section:** fio wrote {written / 1e9:,.1f} GB"
    if ramp:  # fio's counters leave its ramp_time out: each ramp at its repetition's rate
        head += f", {ramp / 1e9:,.1f} GB of it in the ramps ({ramp_s:g} s each, estimated)"
    if not (before.is_dir() and after.is_dir()):
        return [head + "; no before/after health snapshots were taken."]
    b, a = health_summary(before), health_summary(after)
    if not (b.get("available") and a.get("available")):
        reason = a.get("reason") or b.get("reason") or UNAVAILABLE
        return [head + f"; the drive's own counters: {reason}."]
    delta = health_delta(b, a)
    host = delta.get("host_written_bytes")
    text = head
    if host:
        text += (f"; the drive counted {host / 1e9:,.1f} GB of host writes "
                 f"({host / written:.2f}×: its count also holds the prefill and any other "
                 "writer)" if written else "")
    temps = [t for t in (b.get("temperature_c"), a.get("temperature_c"), peak_c) if t is not None]
    if len(set(temps)) == 1:  # one figure, said once
        text += f"; temperature {temps[0]:g} °C throughout"
    elif temps:
        text += f"; temperature {b.get('temperature_c')} → {a.get('temperature_c')} °C"
        if peak_c is not None:
            text += f", peak {peak_c:.0f} °C during the burst"
    moved = [k for k in THROTTLE_KEYS if delta.get(k)]
    # a drive that keeps no throttle counter (HCTMA bit 0 clear, which §1 and the burst's
    # finding say) moves none: "no throttle counter moved" would tell nothing
    text += (f"; throttle counters moved: {', '.join(moved)}." if moved else
             "." if a.get("thermal_management") is False else "; no throttle counter moved.")
    return [text]


def waf_findings(results_dir: Path, burst_name: str | None) -> list[str]:
    """The write amplification of the burst, the preconditioning, the section and the whole run
    (from §1's capture to the section's end), each from the drive's counters captured around it;
    one sentence saying why not when the drive reports health but no NAND writes."""
    health = results_dir / "health"
    spans = [(f"the burst ({burst_name})", results_dir / str(burst_name) / "health" / "first",
              results_dir / str(burst_name) / "health" / "last"),
             ("the preconditioning", results_dir / "precondition-health" / "before",
              results_dir / "precondition-health" / "after"),
             ("this section", health / "before", health / "after"),
             ("the whole run (§1 to the end of this section)", results_dir.parent / "env-raw",
              health / "after")]
    parts = []
    for what, first, last in spans:
        if not (first.is_dir() and last.is_dir()):
            continue
        before, after = health_summary(first), health_summary(last)
        if not (before["available"] and after["available"]):
            continue  # no health at all: the health finding says why
        result = write_amplification(before, after)
        if result["waf"] is None and "reports no NAND writes" in result["reason"]:
            # the tools' own error lines (the OCP log page's, a vendor log's) stay in the
            # health snapshots: the reader needs the outcome, not nvme-cli's messages
            return [("**Write amplification:** not known: the drive reports no NAND writes "
                    "(no OCP cloud-SSD log page 0xC0, no vendor log).")]
        parts.append(describe(what, result))
    if not parts:
        return []
    return [("**Write amplification** (NAND bytes / host bytes, both the drive's own counters): "
             + "; ".join(parts) + ".")]


# --- the section --------------------------------------------------------------------------------
def produce(run: SectionRun) -> list[str]:
    manifest = read_manifest(run.results_dir)
    cases = {c.name: c for c in load_section(run.results_dir)}
    written, blocks, findings = [], [], []

    # Each part: its heading, table and figures in the snippet, its findings in the list.
    burst = burst_part.analyse(run.results_dir, cases)
    if burst is not None:
        written.append(run.write_table(burst_part.TABLE, burst.table))
        written.append(run.write_table(burst_part.LEVELS_TABLE, burst_part.levels_table(burst)))
        if not burst.health.empty:
            written.append(run.write_table(burst_part.HEALTH_TABLE, burst.health))
        figures = burst_part.draw(burst, run.ws)
        blocks += burst_part.blocks(burst) + [md.image(alt, run.ws.link(path)) for alt, path in figures]
        written += [run.ws.show(path) for _, path in figures]
        findings += burst_part.findings(burst)
        burst_part.record_facts(burst, run.facts)

    recovery = recovery_part.analyse(run.results_dir, cases, manifest,
                                     burst.name if burst else None,
                                     burst.result if burst else None,
                                     burst_part.thermal_reason(burst))
    if recovery is not None:
        written.append(run.write_table(recovery_part.TABLE, recovery.table))
        figures = recovery_part.draw(recovery, run.ws)
        blocks += recovery_part.blocks(recovery) + [md.image(alt, run.ws.link(path))
                                                    for alt, path in figures]
        written += [run.ws.show(path) for _, path in figures]
        findings += recovery_part.findings(recovery)
        recovery_part.record_facts(recovery, burst_part.workload(burst) if burst else "",
                                   run.facts)

    wss = wss_table(run.table, cases, run.results_dir)
    run.titles.update({r.case: f"{r.pattern}, QD {int(r.iodepth)}, working set "
                               f"{md.human_size(r.wss_bytes)}" for r in wss.itertuples()})
    if not wss.empty:
        written.append(run.write_table(TABLE_WSS, wss))
        latency, over_time = draw_wss(wss, cases, run.results_dir, run.ws)
        blocks += ["### Working set", _wss_markdown(wss),
                   md.image("Latency by working set", run.ws.link(latency)),
                   md.image("IOPS per second by working set", run.ws.link(over_time))]
        written += [run.ws.show(latency), run.ws.show(over_time)]
        findings += wss_findings(wss, manifest.get("target_kind", ""))

    compress = compress_table(run.table, cases)
    run.titles.update({r.case: f"{_write_job(compress)}, {r.data}" for r in compress.itertuples()})
    if not compress.empty:
        written.append(run.write_table(TABLE_COMPRESS, compress))
        bw_figure, latency_figure = draw_compress(compress, run.ws)
        blocks += ["### Compressibility", _compress_markdown(compress),
                   md.image("Write speed by data pattern", run.ws.link(bw_figure)),
                   md.image("Write latency by data pattern", run.ws.link(latency_figure))]
        written += [run.ws.show(bw_figure), run.ws.show(latency_figure)]
        findings += compress_findings(compress, manifest.get("target_kind", ""), burst)

    findings += health_findings(run.results_dir, cases, burst.peak_temperature_c if burst else None)
    findings += waf_findings(run.results_dir, burst.name if burst else None)
    repeated = run.table[~run.table.case.str.startswith(("burst", recovery_part.PREFIX))]
    if not repeated.empty:
        findings.append(stability_finding(repeated, lambda r: point_label(r, cases)))
    findings.append(host_finding(run.table, lambda r: point_label(r, cases)))
    findings += clat_note(run.table)
    notes = [standard_note(repeated if not repeated.empty else run.table)]
    text = snippet(f"## {SECTIONS[SECTION].heading}", run.setup, notes + blocks, [],
                   findings)
    written.append(run.write_text(SNIPPET, text))
    return written


def _wss_markdown(df: pd.DataFrame) -> str:
    # a point's marks in its own cell, so that md.table names each pattern once
    rows = [[r.pattern, md.human_size(r.wss_bytes) + flag(r),
             md.pm(r.iops_mean, r.iops_ci95), *latency_cells(r),
             "–" if math.isnan(r.iops_per_s_cv) else f"{r.iops_per_s_cv * 100:.1f}%"]
            for r in df.itertuples()]
    return md.table(["pattern (QD 32)", "working set", "IOPS", *LATENCY_HEADER,
                     "per-second IOPS CV"], rows, ["l", "r"] + ["r"] * 5, grouped=1)


def _compress_markdown(df: pd.DataFrame) -> str:
    rows = [[r.data + flag(r), md.pm(r.bw_MBps_mean, r.bw_MBps_ci95), *latency_cells(r)]
            for r in df.itertuples()]
    return md.table([f"data written ({_write_job(df)})", "MB/s", *LATENCY_HEADER], rows)


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__,
                       produce=produce)
