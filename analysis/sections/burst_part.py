"""§6, burst -> steady state: one long write, logged per second, judged by analysis.rules.burst.

The run's own logs give bandwidth, IOPS and mean latency per second (fio's 1 s averaged logs) and
a p99 per second (its histogram log: completion latency, `clat_p99_us`, or total latency,
`lat_p99_us`, from fio <= 3.17, see analysis.fio.hist_log); the health samples taken while it ran
give the temperature and the throttle counters on the same time axis (t = 0 when fio started).
The steady-state rounds are chosen from the run's configured runtime, not from the seconds
logged: fio does not log the second that closes as the job exits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.stats import batch_interval
from analysis.core.steady import DEFAULT_STEADY, SNIA_ROUND_S
from analysis.core.workspace import Workspace
from analysis.device.health import health_summary
from analysis.device.health_log import counter_moves, samples_table
from analysis.device.health_log import events as health_events
from analysis.device.nvme_ns import nuse_is_fill
from analysis.fio.hist_log import logged_latency, percentile_series, read_hist_log
from analysis.fio.job_options import time_option_s
from analysis.fio.log_files import find_logs, latency_unit
from analysis.fio.log_series import read_per_second
from analysis.fio.output import JobGroup
from analysis.render import markdown as md
from analysis.render.plots import Event, Series, Span, timeseries_chart
from analysis.rules import burst as rules
from analysis.rules.cases import Case, read_manifest
from analysis.run import record
from analysis.sections.facts import Facts

TABLE = "tables/wss_burst_burst.csv"
HEALTH_TABLE = "tables/wss_burst_health.csv"  # the samples on fio's time axis
# The burst's levels, one row per stretch (the plateau before the first cliff, the level after
# each), with the 95% interval of each mean: what a target on the burst is judged against.
LEVELS_TABLE = "tables/wss_burst_levels.csv"
FIG_BW = "figs/wss_burst_burst_bw.png"
FIG_P99 = "figs/wss_burst_burst_p99.png"
SNIA_WINDOW = DEFAULT_STEADY["window"]


@dataclass(frozen=True)
class BurstRun:
    case: Case
    table: pd.DataFrame  # per second: t_s, bw_MBps, iops, lat_us_mean, <p99_latency>_p99_us,
    #                      temperature_c
    result: rules.Burst
    health: pd.DataFrame  # the samples: t_s, temperature_c, throttle counters
    health_reason: str | None  # why there are no samples, if there are none
    health_events: list  # (t_s, what): counters that moved, the temperature peak
    p99_latency: str  # what the histogram log holds: 'clat' or 'lat' (fio <= 3.17)
    cause: rules.CliffCause | None = None  # thermal or cache: the first cliff's
    causes: tuple = ()  # every lasting cliff's, in order (the first is ``cause``)
    idle_s: float | None = None  # how long the drive idled before the burst began
    fill: str = ""  # how full the drive was when the burst began, in words

    @property
    def name(self) -> str:
        return self.case.name

    @property
    def thermal(self) -> bool:
        """The first cliff, the cache's, was the heat's: no cache estimate."""
        return self.cause is not None and self.cause.kind == "thermal"

    @property
    def any_thermal(self) -> bool:
        """Some lasting cliff was the heat's: what followed was a hot drive's."""
        return any(c.kind == "thermal" for c in self.causes)

    @property
    def p99_column(self) -> str:
        return f"{self.p99_latency}_p99_us"

    @property
    def p99_label(self) -> str:
        return "clat p99" if self.p99_latency == "clat" else "total-latency p99"

    @property
    def peak_temperature_c(self) -> float | None:
        temps = self.health.temperature_c.dropna() if not self.health.empty else []
        return float(max(temps)) if len(temps) else None


def round_seconds(run_s: float) -> float:
    """SNIA's 1-minute rounds when the run (its configured runtime) holds 5 of them; a shorter
    run (the quick profile) is judged over 10 shorter rounds, and the snippet says so."""
    return SNIA_ROUND_S if run_s >= SNIA_ROUND_S * SNIA_WINDOW else max(1.0, run_s // 10)


def per_second_table(case_dir: Path, job: JobGroup) -> pd.DataFrame:
    bw = read_per_second(find_logs(case_dir, "rep1", "bw")).complete()
    n = len(bw.seconds)
    table = pd.DataFrame({"t_s": bw.seconds, "bw_MBps": bw.total()})
    iops_logs = find_logs(case_dir, "rep1", "iops")
    if iops_logs:
        table["iops"] = read_per_second(iops_logs).complete().total()[:n]
    lat_logs = find_logs(case_dir, "rep1", "lat")
    if lat_logs:
        lat = read_per_second(lat_logs, lat_unit=latency_unit(job.fio_version)).complete()
        table["lat_us_mean"] = pd.Series(lat.direction("write")[:n])
    hist = sorted(case_dir.glob("rep1_clat_hist.*.log"))
    if hist:
        p99 = {round(t): v for t, v in percentile_series(read_hist_log(hist[0]), 99.0)}
        column = f"{logged_latency(job.fio_version, job.options)}_p99_us"
        table[column] = [p99.get(round(t), math.nan) for t in table.t_s]
    return table


def analyse(results_dir: Path, cases: dict[str, Case]) -> BurstRun | None:
    name = next((n for n, c in cases.items() if n.startswith("burst-") and c.reps
                 and c.reps[0].options.get("write_bw_log")), None)
    if name is None:
        return None
    case_dir = results_dir / name
    job = cases[name].reps[0]
    table = per_second_table(case_dir, job)
    if table.empty:
        return None
    # The configured runtime, not the seconds logged: a run of exactly 5 x 60 s logs 299.
    run_s = time_option_s(job.options.get("runtime")) or float(table.t_s.iloc[-1])
    result = rules.analyse_burst(table.bw_MBps.to_numpy(), table.t_s.to_numpy(),
                                 round_s=round_seconds(run_s), planned_s=run_s)
    start = case_dir / "rep1.start"
    health = samples_table(case_dir / "health",
                           start=float(start.read_text()) if start.exists() else None)
    reason = health.attrs.get("reason")
    if not health.empty:
        temps = health.set_index("t_s").temperature_c
        table["temperature_c"] = [_nearest(temps, t) for t in table.t_s]
    before = results_dir / "health" / "before"
    drive = health_summary(before) if before.is_dir() else {}
    causes = tuple(rules.cliff_cause(c.time_s, health, warn_c=drive.get("warning_temp_c"),
                                     counters_kept=drive.get("thermal_management"))
                   for c in result.cliffs)
    return BurstRun(cases[name], table, result, health, reason,
                    health_events(health, moved_only=True) if not health.empty else [],
                    logged_latency(job.fio_version, job.options),
                    causes[0] if causes else None, causes, _number(case_dir / "rep1.idle"),
                    fill_text(case_dir / "rep1.fill", read_manifest(results_dir),
                              _prefill_step(results_dir)))


def levels_table(b: BurstRun) -> pd.DataFrame:
    """The burst's levels as rows a target can name (`phase`: burst, after_cliff, after_cliff_2
    ...), each the mean MB/s of its seconds with a 95% interval by batch means
    (analysis.core.stats.batch_interval): the seconds of one run are autocorrelated, so the
    interval is taken over five stretches' means, not over the seconds.

    A model drive writing 400 MB/s until its cache fills at 10.7 s, then 100 MB/s, over 30 s
    gives a `burst` row near 400 and an `after_cliff` row near 100, each with its `bw_MBps_ci95`
    and the seconds it rests on (`seconds`, `batch_s`)."""
    r, job = b.result, b.case.reps[0]
    stretches = [("burst", r.plateau)] + [
        ("after_cliff" if k == 0 else f"after_cliff_{k + 1}", level)
        for k, level in enumerate(r.levels)]
    rows = []
    for phase, level in stretches:
        inside = b.table[(b.table.t_s > level.start_s) & (b.table.t_s <= level.end_s)]
        stats = batch_interval(inside.bw_MBps)
        rows.append({
            "case": b.name, "phase": phase, "rw": job.rw, "bs": job.bs, "iodepth": job.iodepth,
            "numjobs": job.numjobs or 1, "read_pct": 0, "direction": "write",
            "start_s": level.start_s, "end_s": level.end_s, "seconds": stats["seconds"],
            "n": stats["n"], "batch_s": stats["batch_s"], "bw_MBps_mean": stats["mean"],
            "bw_MBps_std": stats["std"], "bw_MBps_ci95": stats["ci95"],
            "bw_MBps_median": level.median_MBps})
    return pd.DataFrame(rows)


def thermal_reason(b: BurstRun | None) -> str:
    """Why no recovery can be read after this burst: a lasting cliff the heat caused; ''."""
    for c, cause in zip(b.result.cliffs if b else (), b.causes if b else (), strict=False):
        if cause.kind == "thermal":
            return (f"the burst's cliff at {c.time_s:.0f} s was thermal ({cause.evidence}): the "
                    "probes would see the drive cool down, not a write cache come back")
    return ""


def _prefill_step(results_dir: Path) -> str | None:
    """What wrote the section's region before it measured (its prefill step in the record)."""
    try:
        return record.load(results_dir.parent)["steps"].get(f"{results_dir.name}/prefill")
    except record.RecordError:
        return None


def _number(path: Path) -> float | None:
    try:
        return float(path.read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def fill_text(path: Path, manifest: dict, prefill: str | None = None) -> str:
    """How full the drive was when the burst began: the namespace's utilization (NVMe NUSE of
    NSZE, recorded then) where NSFEAT says it is one (thin provisioning: a namespace without it
    may report NUSE = NSZE whatever was written, as QEMU's does); else what the toolkit wrote (the
    state, else this section's prefill, ``prefill``: its step in the record); else unknown. An
    older tree's rep1.fill holds no NSFEAT: its NUSE is not read as a fill level. Why the drive's
    count was not read is said only where nothing else gives the fill."""
    try:
        fields = [int(v) for v in path.read_text().split()[:3]]
    except (OSError, ValueError):
        fields = []
    nuse, nsze = fields[:2] if len(fields) >= 2 else (0, 0)
    nsfeat = fields[2] if len(fields) > 2 else None
    if nsze and nuse_is_fill({"nsfeat": nsfeat}):
        return (f"{100 * nuse / nsze:.0f}% full (the namespace's utilization: {nuse:,} of "
                f"{nsze:,} blocks)")
    unreported = ("the drive reports no fill level" if not nsze else
                  "its NUSE is no fill level: the namespace reports no thin provisioning "
                  "(NSFEAT bit 0 clear)" if nsfeat is not None else
                  "its NUSE is not read as a fill level: NSFEAT, which says whether it is one, "
                  "was not recorded")
    region, target = int(manifest.get("region_bytes") or 0), int(manifest.get("target_bytes") or 0)
    if target and manifest.get("target_kind") == "block":
        rest = "" if region >= target else ", the rest left as it was"
        share = f"whose region ({md.share(region, target)} of it) was written"
        if manifest.get("state") in ("purged", "sustained"):
            return f"{share} by the state{rest}"
        if prefill:
            return f"{share} once by this section's prefill{rest}"
    return f"of unknown fill ({unreported}, and the state was not set)"


def _nearest(series: pd.Series, t: float, within_s: float = 5.0) -> float:
    """The sample closest to t, if one was taken within `within_s` of it."""
    gaps = np.abs(series.index.to_numpy(dtype=float) - t)
    i = int(np.argmin(gaps))
    return float(series.iloc[i]) if gaps[i] <= within_s else math.nan


# --- text ---------------------------------------------------------------------------------------
def workload(b: BurstRun) -> str:
    g = b.case.reps[0]
    kind = "sequential" if g.rw == "write" else "random"
    return f"{md.bs_label(g.bs)} {kind} write at QD {g.iodepth}"


def blocks(b: BurstRun) -> list[str]:
    r = b.result
    rows = [["burst plateau", f"{r.plateau.start_s:.0f}–{r.plateau.end_s:.0f} s",
             md.num(r.plateau.median_MBps), (f"{md.num(r.plateau.p5_MBps)}–"
             f"{md.num(r.plateau.p95_MBps)}")]]
    for k, (c, level) in enumerate(zip(r.cliffs, r.levels, strict=True)):
        before = r.plateau.median_MBps if k == 0 else r.levels[k - 1].median_MBps
        cause = b.causes[k].kind if k < len(b.causes) else "unknown"
        name = "cliff" if len(r.cliffs) == 1 else f"cliff {k + 1}"
        rows.append([name, f"{c.time_s:.0f} s",
                     f"{md.num(before)} → {md.num(level.median_MBps)}",
                     (f"−{100 * (1 - level.median_MBps / before):.0f}%, after "
                     f"{c.written_GiB:.1f} GiB; cause: {cause}")])
        rows.append([f"after {name}", f"{level.start_s:.0f}–{level.end_s:.0f} s",
                     md.num(level.median_MBps),
                     f"{md.num(level.p5_MBps)}–{md.num(level.p95_MBps)}"])
    s = r.steady
    rows.append(["steady state", (f"rounds {s.first_round}–{s.last_round} of {s.round_s:g} s"
                                  if s.reached else "not reached"),
                 md.num(s.level) if s.reached else "–", s.reason])
    table = md.table(["burst → steady state", "when", "MB/s (median)", "p5–p95 / note"], rows)
    idle = (f"after {b.idle_s:.0f} s idle" if b.idle_s is not None
            else "after an idle time not recorded")
    return ["### Burst → steady state",
            (f"{workload(b)} for {r.run_s:.0f} s, {r.written_GiB:.1f} GiB written; "
             f"it began {idle}, on a drive {b.fill}."),
            table]


def findings(b: BurstRun) -> list[str]:
    r, out = b.result, []
    head = f"**Burst ({workload(b)}, {r.run_s:.0f} s):**"
    if r.cliff is not None and b.thermal:
        c = r.cliff
        out.append(
            f"{head} {md.num(r.plateau.median_MBps)} MB/s for the first {c.time_s:.0f} s, then "
            f"a thermal cliff: bandwidth falls {c.drop_pct:.0f}% to {md.num(c.after_MBps)} MB/s "
            f"after {c.written_GiB:.1f} GiB, and {b.cause.evidence}. The drive slowed down for "
            "heat, not because a write cache was full: this is no cache estimate (cool the "
            "drive, or give it airflow, and run again to measure the cache).")
    elif r.cliff is not None:
        c, after = r.cliff, r.levels[0].median_MBps
        out.append(
            f"{head} {md.num(r.plateau.median_MBps)} MB/s for the first {c.time_s:.0f} s, then "
            f"a cliff: bandwidth falls {100 * (1 - after / r.plateau.median_MBps):.0f}% to "
            f"{md.num(after)} MB/s once {c.written_GiB:.1f} GiB were written. A fast write "
            f"cache (SLC) filling would do this: {c.written_GiB:.1f} GiB is then its estimate "
            "(an upper bound: methodology, §6).")
        if b.cause is not None and b.cause.kind == "cache":
            out[-1] += f" Not thermal: {b.cause.evidence}."
        elif b.cause is not None:
            out[-1] += f" Heat is not ruled out: {b.cause.evidence}."
    else:
        out.append(
            f"{head} no lasting drop of {r.settings['min_drop_pct']:.0f}% or more over "
            f"{r.written_GiB:.1f} GiB written (median {md.num(r.plateau.median_MBps)} MB/s, p5–p95 "
            f"{md.num(r.plateau.p5_MBps)}–{md.num(r.plateau.p95_MBps)}): a write cache, if the "
            "drive has one, holds more than this run wrote, or the drive writes at its sustained "
            "speed from the start.")
    for k, c in enumerate(r.cliffs[1:], start=1):
        level, cause = r.levels[k].median_MBps, b.causes[k] if k < len(b.causes) else None
        out.append(f"**Cliff {k + 1} at {c.time_s:.0f} s:** a further lasting drop, from "
                   f"{md.num(r.levels[k - 1].median_MBps)} to {md.num(level)} MB/s (a "
                   "staircase: each level is its own row above)"
                   + (f"; thermal: {cause.evidence}" if cause and cause.kind == "thermal" else
                      f"; not thermal: {cause.evidence}" if cause and cause.kind == "cache" else
                      f"; its cause is unknown ({cause.evidence})" if cause else
                      "; its cause is unknown (no health samples around it)") + ".")
    s = r.steady
    text = f"**Steady state (SNIA PTS rule):** {s.message.removeprefix('steady state ').rstrip('.')}."
    if s.round_s < SNIA_ROUND_S:
        text += " An indication only."  # the message names the rounds' length against SNIA's
    out.append(text)
    p99 = b.table.get(b.p99_column)
    if p99 is not None and p99.notna().any():
        head = f"**Write latency through the burst:** {b.p99_label} per second, median"
        if r.cliff is not None:
            before = p99[b.table.t_s <= r.cliff.time_s].median()
            after = p99[b.table.t_s > r.cliff.time_s].median()
            out.append(f"{head} {md.num(before)} µs before the cliff and {md.num(after)} µs "
                       f"after ({after / before:.1f}×); worst second {md.num(p99.max())} µs.")
        else:
            out.append(f"{head} {md.num(p99.median())} µs, worst second "
                       f"{md.num(p99.max())} µs.")
        if b.p99_latency == "lat":
            out[-1] += (f" Total latency, not completion latency: "
                        f"{b.case.reps[0].fio_version.replace('-', ' ')} (fio 3.17 and older) "
                        "logs total latency in its histogram log when lat_percentiles=1.")
    if b.health_reason:
        out.append(f"**Temperature and throttling:** {b.health_reason}; the run went on without "
                   "them.")
    elif b.health_events:
        out.append("**Temperature and throttling:** " + "; ".join(
            f"{what} at {t:.0f} s" for t, what in b.health_events) + ".")
    return out


# --- figures --------------------------------------------------------------------------------------
def draw(b: BurstRun, ws: Workspace) -> list[tuple[str, str]]:
    r, t = b.result, list(b.table.t_s)
    end = t[-1] if t else 0
    spans, events = [], []
    if r.cliff is not None:
        spans.append(Span(0, r.cliff.time_s, "burst", "#4C78A8"))
        spans.append(Span(r.cliff.time_s, end, "after the cliff", "#E45756"))
        events.append(Event(r.cliff.time_s, f"cliff ({r.cliff.written_GiB:.1f} GiB written)"))
        events += [Event(c.time_s, f"cliff {k + 2} ({c.written_GiB:.1f} GiB written)", "#F58518")
                   for k, c in enumerate(r.cliffs[1:])]
    if r.steady.reached:
        s = r.steady
        spans.append(Span((s.first_round - 1) * s.round_s, s.last_round * s.round_s,
                          "steady-state window", "#54A24B"))
    events += [Event(ts, what, "#B279A2") for ts, what in b.health_events
               if not what.startswith("temperature peak")]
    temps = (Series("temperature (°C)", list(b.health.t_s), list(b.health.temperature_c))
             if not b.health.empty and b.health.temperature_c.notna().any() else None)
    note = "temperature: unavailable on this device" if temps is None else ""
    timeseries_chart(ws.path(FIG_BW), t, list(b.table.bw_MBps), ylabel="MB/s (10^6 B/s)",
                     title=f"Bandwidth per second: {workload(b)}", label="MB/s per second",
                     spans=spans, events=events, second=temps, second_ylabel="°C",
                     levels=[(r.plateau.median_MBps, "burst plateau (median)")]
                     + [(lv.median_MBps, "after the cliff (median)" if len(r.levels) == 1
                         else f"after cliff {k + 1} (median)") for k, lv in enumerate(r.levels)],
                     note=note)
    figures = [("Bandwidth per second through the burst", FIG_BW)]
    if b.p99_column in b.table and b.table[b.p99_column].notna().any():
        what = "Completion" if b.p99_latency == "clat" else "Total"
        timeseries_chart(ws.path(FIG_P99), t, list(b.table[b.p99_column]),
                         ylabel=f"{b.p99_latency} p99 (µs, log scale)", yscale="log",
                         title=f"{what}-latency p99 per second (fio's histogram log)",
                         label="p99 per second", events=events[:1])
        figures.append(("Latency p99 per second through the burst", FIG_P99))
    return figures


def record_facts(b: BurstRun, facts: Facts) -> None:
    """The write-cache estimate and the sustained speed for the conclusion; throttling."""
    r, label = b.result, workload(b)
    # rounds shorter than SNIA's: the verdict and the cache estimate are indications only
    # (the anomalies say why, once: the burst's length against SNIA's rounds)
    short = (f"an indication only: {r.steady.round_s:g} s rounds, not SNIA's {SNIA_ROUND_S:g} s"
             if r.steady.round_s < SNIA_ROUND_S else "")
    if r.cliff is not None and b.thermal:
        facts.headline("slc_cache", label,
                       f"not measured: a thermal cliff at {r.cliff.time_s:.0f} s "
                       f"({b.cause.evidence})")
        facts.anomaly("thermal_cliff", f"the burst's cliff at {r.cliff.time_s:.0f} s is "
                      f"thermal ({b.cause.evidence}): the drive throttled before any write "
                      "cache was seen to fill.")
    elif r.cliff is not None:
        facts.headline("slc_cache", label,
                       f"{r.cliff.written_GiB:.1f} GiB (a {r.cliff.drop_pct:.0f}% cliff at "
                       f"{r.cliff.time_s:.0f} s: {md.num(r.cliff.before_MBps)} → "
                       f"{md.num(r.cliff.after_MBps)} MB/s)", r.cliff.written_GiB, "GiB",
                       qualifiers=(short,))
    else:
        facts.headline("slc_cache", label,
                       f"no cliff in {r.written_GiB:.1f} GiB written over {r.run_s:.0f} s (a "
                       "cache, if any, holds more)")
    s = r.steady
    if s.reached:
        facts.headline("steady_state", label,
                       f"{md.num(s.level)} MB/s (SNIA rule met over rounds "
                       f"{s.first_round}–{s.last_round} of {s.round_s:g} s)", s.level, "MB/s",
                       qualifiers=(short,))
    else:
        last = r.post or r.plateau
        facts.headline("steady_state", label,
                       f"not reached ({s.reason}); median of the last stretch "
                       f"{md.num(last.median_MBps)} MB/s, an indication only")
    if s.round_s < SNIA_ROUND_S:
        facts.anomaly("short_burst", f"the burst ran {r.run_s:.0f} s, not 5 SNIA rounds of "
                      f"{SNIA_ROUND_S:g} s (the standard profile runs 15 minutes): its steady "
                      "state and cache estimate are indications.")
    moves = counter_moves(b.health) if not b.health.empty else []
    if moves:
        facts.anomaly("throttle", "the drive throttled during the burst: " + "; ".join(
            f"{what} at {t:.0f} s" for t, what in moves) + ".")
