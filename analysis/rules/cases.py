"""A section's results as one summary row per case and direction, over the repetitions.

results/<section>/<case>/rep<k>.json are fio json+ outputs of the same job. Each metric gets
mean, sample std, n and CV over the repetitions; percentiles come from the repetitions' merged
json+ histogram bins (exact to fio's bin resolution), never from averaging percentiles.
Parameters (rw, bs, iodepth, numjobs) are read from the JSON's own job options. A file that is not
a good repetition of its case (analysis.run.repetition: unreadable, an error, no I/O, or the job options
of another case) is left out, and named: read_section keeps the reasons.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.effects import ALPHA, bh_adjust, trend
from analysis.core.regimes import TOO_SHORT, Regimes, describe, not_judged, split_regimes
from analysis.core.stats import (
    PCT_COLUMNS,
    STANDARD_PCTS,
    interval_columns,
    merge_bins,
    percentiles_from_bins,
    rep_stats,
    tail_intervals,
    tail_ios,
)
from analysis.fio.direction import Direction
from analysis.fio.log_files import FioLogError, find_logs
from analysis.fio.log_series import read_per_second
from analysis.fio.output import JobGroup, finished_s
from analysis.rules.write_evidence import (
    DRIVE_SUFFIX,
    EVIDENCE_COLUMNS,
    GIB,
    TreeWrite,
    Written,
    evidence,
    fio_written,
    rep_drive_bytes,
)
from analysis.rules.write_ramp import RAMP_JSON, Ramp, declared, earlier_ramps, read_ramp
from analysis.run import cpu_load, record, repetition
from analysis.run.host_ceiling import PUNTED, host_bound_rules, read_ceilings
from analysis.run.manifest import matrix_entries
from analysis.run.repetition import rep_files

# A point is marked unstable when the 95% confidence interval of its mean IOPS, MB/s or mean
# latency is wider than this share of the mean on either side: the number is not known to
# +-5%. (Not the CV of 3 runs: with 2 degrees of freedom that estimate is itself so noisy that a
# "CV above 5%" flag fired in 6% of points whose true CV is 3%, and says nothing of how well the
# mean is known.) More repetitions narrow the interval; a noisier point needs more of them.
UNSTABLE_HALF_WIDTH = 0.05

# What the host allowed (analysis.run.host_ceiling): fio's CPU time per job (% of one CPU), the
# ceiling IOPS of the case's shape, the busiest CPU while it ran (analysis.run.cpu_load: its busy
# share in %, and which), and whether the point measured the host, not the drive.
HOST_COLUMNS = ["cpu_usr_pct", "cpu_sys_pct", "host_ceiling_iops", "host_ceiling_device",
                "cpu_busiest_pct", "cpu_busiest", "cpu_together_pct", "host_bound", "host_rule"]

# The columns of docs/outputs.md, in order; `read_pct` is the read share of the job (100 for a pure
# read pattern, 0 for a pure write, rwmixread for a mix). Each percentile also gets the sample std
# of the repetitions' own percentiles (`lat_p99_us_std`): the error bar of a pooled percentile.
# `<metric>_ci95` is the half-width of the 95% t-interval of the mean over the repetitions
# (analysis.core.stats.t_half_width). The tail percentiles (TAIL_PCTS) get an interval
# `_lo`/`_hi` (`_hi` empty where it is one-sided), the count of I/Os above them `_tail_ios` and
# the sd of the repetitions' own log percentiles `_lsd`, which compare tests them on
# (analysis.core.stats.tail_intervals).
CASE_COLUMNS = ["case", "rw", "bs", "iodepth", "numjobs", "engine", "read_pct", "direction", "n"]
PCT_STD_COLUMNS = {p: col + "_std" for p, col in PCT_COLUMNS.items()}
TAIL_PCTS = (95.0, 99.0, 99.9)
TAIL_COLUMNS = [PCT_COLUMNS[p] + suffix for p in TAIL_PCTS
                for suffix in ("_lo", "_hi", "_tail_ios", "_lsd")]
CI_COLUMNS = ["iops_ci95", "bw_MBps_ci95", "lat_us_ci95"]
# A point's IOPS over its rounds (repetition k ran in round k): the slope in % of the mean per
# round, the p of "no slope" (analysis.core.effects.trend), and `drifting` where that p, adjusted
# over the table's rows (Benjamini-Hochberg), is below 0.05: the level moved while it was
# measured. Three repetitions at least.
DRIFT_COLUMNS = ["drift_pct", "drift_p", "drifting"]
# What the case's writes measured (analysis.core.regimes, from each repetition's per-second
# write rate): "one level"; the regimes, where its repetitions stood at several levels or one
# held a cliff (then the row's statistics are empty: one mean over two states describes neither,
# and each regime's own row is in the section's regimes table); "not logged" for a tree whose
# repetitions logged no write rate; empty for a case that only reads.
REGIME_COLUMNS = ["regime", "regime_split"]
ONE_LEVEL = "one level"  # a row's regime: its writes held one level, no ramp declared it
METRIC_COLUMNS = ["iops_mean", "iops_std", "iops_cv", "bw_MBps_mean", "bw_MBps_std",
                  "lat_us_mean", "lat_us_std", *PCT_COLUMNS.values(), "lat_max_us",
                  *PCT_STD_COLUMNS.values(),
                  "unstable", "pct_source", "little_product", *HOST_COLUMNS, *CI_COLUMNS,
                  "half_width_pct", *TAIL_COLUMNS, *DRIFT_COLUMNS, *REGIME_COLUMNS]
# The statistics a split case's rows leave empty (NaN): every measured value, not its shape
SPLIT_BLANKS = [c for c in METRIC_COLUMNS if c not in ("unstable", "pct_source", "drifting",
                                                        "host_ceiling_device", "host_bound",
                                                        "host_rule", *REGIME_COLUMNS)]


@dataclass(frozen=True)
class LeftOut:
    """A repetition file the analysis did not count, and why (analysis.run.repetition)."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Case:
    name: str
    reps: list[JobGroup]  # one job group per good repetition, in repetition order
    left_out: list[LeftOut] = field(default_factory=list)  # files that are not good repetitions
    # k of each rep<k>.json in reps: the prefix of its logs (rep<k>_iops.1.log). A failed
    # repetition's logs stay on disk beside rep<k>.failed.json, so logs are found from these.
    # Empty for job groups read elsewhere (frame_of_groups), which have no logs.
    numbers: tuple[int, ...] = ()
    # Each good repetition's per-CPU load (rep<k>.cpu), None where the run recorded none.
    cpu_loads: tuple[cpu_load.CpuLoad | None, ...] = ()
    # Each good repetition's MB/s written each second (its 1 s bandwidth log, lib/jobfile.bash
    # second_log_lines), None where it wrote nothing or logged none: the regime it measured.
    write_MBps: tuple[np.ndarray | None, ...] = ()
    # What those rates show (case_regimes), judged once as the case is loaded; None for a case
    # that only reads, or whose repetitions did not all log their writes.
    regimes: Regimes | None = None
    # --write-regime after-cliff (lib/ramp.bash): the case's ramp, None without one, and the
    # regime it declares (analysis.rules.write_ramp), "" for a case run without a block
    ramp: Ramp | None = None
    declared: str = ""
    # Its writing runs, ramp included, with their times and bytes (analysis.rules.write_evidence)
    runs: tuple[Written, ...] = ()


def load_case(case_dir: Path, expected: dict[str, str] | None = None,
              ramp_s: float | None = None) -> Case:
    """Every good repetition of a case; `expected` holds the job options its manifest gives it
    (analysis.run.repetition.expected_options), None to check only that each file is a good run;
    `ramp_s` the seconds of its ramp where the run gave it one (@ramp in the matrix)."""
    reps, left_out, numbers = [], [], []
    for path in rep_files(case_dir):
        try:
            reps.append(repetition.check(path, expected))
        except repetition.BadRepetition as e:
            left_out.append(LeftOut(path, str(e)))
            continue
        numbers.append(int(path.stem.removeprefix("rep")))
    loads = tuple(cpu_load.read_load(case_dir, k) for k in numbers)
    rates = tuple(write_rate(case_dir, k) for k in numbers)
    ramp = read_ramp(case_dir, ramp_s) if ramp_s else None
    case = Case(case_dir.name, reps, left_out, tuple(numbers), loads, rates, ramp=ramp)
    return replace(case, regimes=case_regimes(case), runs=written_runs(case_dir, case))


def written_runs(case_dir: Path, case: Case) -> tuple[Written, ...]:
    """The case's writing runs: its ramp, then each repetition that wrote, each ending when fio
    wrote its output (analysis.rules.write_evidence)."""
    runs = []
    if case.ramp is not None:  # fio's own count of the ramp's bytes, as for a repetition
        got = fio_written(case_dir / RAMP_JSON)
        runs.append(Written(case.name, 0, case.ramp.start_s, case.ramp.end_s,
                            float(got[1]) if got else case.ramp.written_GiB * GIB))
        for path in earlier_ramps(case_dir):  # a resumed block's earlier ramps wrote too
            if got := fio_written(path):
                runs.append(Written(case.name, 0, got[0] - case.ramp.seconds, got[0],
                                    float(got[1])))
    for k, g in zip(case.numbers, case.reps, strict=False):
        wrote = g.directions.get("write")
        if wrote is None or not wrote.io_bytes:
            continue
        end = finished_s(case_dir / f"rep{k}.json")
        runs.append(Written(case.name, k, end - (cpu_load.io_seconds(g.options) or 0.0), end,
                            float(wrote.io_bytes),
                            rep_drive_bytes(case_dir / f"rep{k}{DRIVE_SUFFIX}"),
                            cpu_load.ramp_seconds(g.options) or 0.0))
    return tuple(runs)


def write_rate(case_dir: Path, k: int) -> np.ndarray | None:
    """MB/s written in each whole second of repetition k, from its 1 s bandwidth log; None
    without a log, or where the repetition wrote nothing."""
    paths = find_logs(case_dir, f"rep{k}", "bw")
    if not paths:
        return None
    try:
        rate = read_per_second(paths, "bw").complete()
    except (FioLogError, ValueError):
        return None  # a damaged log: the repetition's regime is unknown, its JSON still counts
    return rate.values.get("write")


def read_section(results_dir: Path) -> list[Case]:
    """Every case folder holding repetition files, in the manifest's case order, each checked
    against the manifest; a case whose files are all left out is there with no reps. A hidden
    folder (.prefill of a fleet run) is the toolkit's own, never a case."""
    manifest = read_manifest(results_dir)
    order = (manifest.get("cases") or "").split()
    dirs = {p.name: p for p in Path(results_dir).iterdir()
            if p.is_dir() and not p.name.startswith(".") and rep_files(p)}
    names = [n for n in order if n in dirs] + sorted(set(dirs) - set(order))
    ramps = {n: float(v) for n, opts in matrix_entries(manifest).items()
             if (v := opts.get("@ramp"))}
    cases = [load_case(dirs[n], repetition.expected_options(manifest, n), ramps.get(n))
             for n in names]
    # the write blocks ran one after another in declared order: a block that follows another
    # with no idle between finds the drive as that one left it
    said = declared([(c.name, c.ramp, max((r.end_s for r in c.runs), default=None))
                     for c in cases if c.name in ramps])
    return [replace(c, declared=said.get(c.name, "")) for c in cases]


def load_section(results_dir: Path) -> list[Case]:
    """The cases of read_section that kept at least one good repetition."""
    return [c for c in read_section(results_dir) if c.reps]


def report_left_out(cases: list[Case], prog: str) -> None:
    """Name every file left out on stderr, with its path and reason: none goes in silence."""
    for case in cases:
        for bad in case.left_out:
            print(f"{prog}: left out {bad}", file=sys.stderr)


def combined(directions: list[Direction]) -> dict:
    """Read + write of one repetition as one stream: IOPS and bytes add, latency is N-weighted."""
    samples = sum(d.lat_samples for d in directions)
    return {
        "iops": sum(d.iops for d in directions),
        "bw_bytes": sum(d.bw_bytes for d in directions),
        "lat_mean_ns": sum(d.lat_mean_ns * d.lat_samples for d in directions) / samples
        if samples else math.nan,
    }


def rep_percentiles(directions: list[Direction]) -> dict:
    """One repetition's percentiles (ns): fio's own for one direction, from merged bins for all."""
    if len(directions) == 1:
        return directions[0].percentiles_ns
    if directions and all(d.bins for d in directions):
        return percentiles_from_bins(merge_bins([d.bins for d in directions]), STANDARD_PCTS)
    return {}


def percentile_columns(directions_per_rep: list[list[Direction]]) -> tuple[dict, str]:
    """Percentiles of the pooled repetitions from merged bins; fio's own numbers for one run.
    Beside each, the sample std of the repetitions' own percentiles (their spread)."""
    flat = [d for ds in directions_per_rep for d in ds]
    source = flat[0].pct_source if flat else ""
    if flat and all(d.bins for d in flat):
        pcts = percentiles_from_bins(merge_bins([d.bins for d in flat]), STANDARD_PCTS)
    elif len(directions_per_rep) == 1:
        pcts = rep_percentiles(directions_per_rep[0])
    else:
        pcts = {}  # several runs without json+ bins cannot be pooled honestly
    cols = {col: pcts[p] / 1000 if p in pcts else math.nan for p, col in PCT_COLUMNS.items()}
    per_rep = [rep_percentiles(ds) for ds in directions_per_rep]
    for p, col in PCT_STD_COLUMNS.items():
        cols[col] = rep_stats([r[p] / 1000 if p in r else math.nan for r in per_rep])["std"]
    cols.update(tail_columns(directions_per_rep))
    return cols, source


def rep_bins(directions_per_rep: list[list[Direction]]) -> list[dict]:
    """Each repetition's json+ bins (its directions merged); [] when a run has none."""
    if not directions_per_rep or not all(d.bins for ds in directions_per_rep for d in ds):
        return []
    return [merge_bins([d.bins for d in ds]) for ds in directions_per_rep]


def tail_columns(directions_per_rep: list[list[Direction]]) -> dict:
    """The tail percentiles' interval (µs) and the I/Os above them; NaN without json+ bins.
    A percentile with no I/O above it (p99.9 of fewer than 1,000 I/Os) has no interval and a
    count of 0: it is †, where NaN would read as a count not known, and be quoted."""
    bins = rep_bins(directions_per_rep)
    found = tail_intervals(bins, TAIL_PCTS)
    total = sum(sum(b.values()) for b in bins)
    cols = {}
    for p in TAIL_PCTS:
        col, t = PCT_COLUMNS[p], found.get(p)
        cols[col + "_lo"] = t.low / 1000 if t else math.nan
        cols[col + "_hi"] = t.high / 1000 if t else math.nan
        cols[col + "_tail_ios"] = t.tail if t else (tail_ios(total, p) if bins else math.nan)
        cols[col + "_lsd"] = t.log_sd if t else math.nan
    return cols


NINES = (99.0, 99.9, 99.99, 99.999)


def nines(case: Case, direction: str) -> dict:
    """The "nines" of a case's direction (`total` pools them): {p: TailInterval} for each of
    NINES with at least one I/O above it, from the repetitions' json+ bins; {} without bins."""
    per_rep = [list(g.directions.values()) if direction == "total" else [g.directions[direction]]
               for g in case.reps if direction == "total" or direction in g.directions]
    return tail_intervals(rep_bins(per_rep), NINES)


def read_share(rw: str, rwmixread: int | None) -> int:
    """% of the I/Os that are reads: what fio does for the pattern (rwmixread defaults to 50)."""
    if rw in ("read", "randread"):
        return 100
    if rw in ("write", "randwrite", "trim", "randtrim"):
        return 0
    return 50 if rwmixread is None else int(rwmixread)


def empty_direction_row(case: Case, direction: str) -> dict:
    """A direction the job never issued (writes of a 100% read mix): zero I/O, no latency."""
    row = summarize_direction(case, "total")
    row.update({col: math.nan for col in METRIC_COLUMNS
                if col not in ("unstable", "pct_source", "drifting", *REGIME_COLUMNS)})
    row.update(direction=direction, iops_mean=0.0, iops_std=0.0, bw_MBps_mean=0.0,
               bw_MBps_std=0.0, unstable=False, pct_source="", drifting=False)
    return row


def summarize_direction(case: Case, direction: str) -> dict:
    """One summary row: `direction` is read, write, trim, or total (all directions pooled)."""
    per_rep = [list(g.directions.values()) if direction == "total"
               else [g.directions[direction]] for g in case.reps
               if direction == "total" or direction in g.directions]
    points = [combined(ds) for ds in per_rep]
    iops = rep_stats([p["iops"] for p in points])
    bw = rep_stats([p["bw_bytes"] / 1e6 for p in points])
    lat = rep_stats([p["lat_mean_ns"] / 1000 for p in points])
    pcts, source = percentile_columns(per_rep)
    first = case.reps[0]
    # Little's Law, L = X x W: IOPS x mean latency / I/Os kept in flight is 1.0 when the queue
    # never runs dry. Taken per repetition, then averaged: the product of the means is biased
    # upwards when repetitions differ (a fast run's IOPS times a slow run's latency).
    outstanding = (first.iodepth or 1) * (first.numjobs or 1)
    little = rep_stats([p["iops"] * p["lat_mean_ns"] / 1e9 / outstanding for p in points])
    intervals = interval_columns(iops, bw, lat)
    unstable = bool(intervals["half_width_pct"] > UNSTABLE_HALF_WIDTH * 100)  # NaN: False
    drift = trend([p["iops"] for p in points])
    return {
        "case": case.name, "rw": first.rw, "bs": first.bs, "iodepth": first.iodepth,
        "numjobs": first.numjobs or 1, "engine": first.options.get("ioengine", ""),
        "read_pct": read_share(first.rw, first.rwmixread),
        "direction": direction, "n": iops["n"],
        "iops_mean": iops["mean"], "iops_std": iops["std"], "iops_cv": iops["cv"],
        "bw_MBps_mean": bw["mean"], "bw_MBps_std": bw["std"],
        "lat_us_mean": lat["mean"], "lat_us_std": lat["std"],
        **pcts, "lat_max_us": max_latency_us(per_rep), "unstable": unstable,
        "pct_source": source, "little_product": little["mean"],
        "cpu_usr_pct": rep_stats([g.usr_cpu_pct for g in case.reps])["mean"],
        "cpu_sys_pct": rep_stats([g.sys_cpu_pct for g in case.reps])["mean"],
        "host_ceiling_iops": math.nan, "host_ceiling_device": "", **busiest_columns(case),
        "host_bound": False, "host_rule": "", **intervals, "drift_pct": drift.slope_pct, "drift_p": drift.p,
        "drifting": False, "regime": "", "regime_split": False,
    }


def max_latency_us(directions_per_rep: list[list[Direction]]) -> float:
    """The slowest I/O of all the repetitions (fio's lat max, after the ramp), in µs: the
    maximum SNIA PTS reports beside the mean; NaN where fio printed none."""
    found = [d.lat_max_ns for ds in directions_per_rep for d in ds
             if d.lat_max_ns is not None and not math.isnan(d.lat_max_ns)]
    return max(found) / 1000 if found else math.nan


def busiest_columns(case: Case) -> dict:
    """cpu_busiest_pct and cpu_busiest: the busiest CPU that ran the jobs or took their
    interrupts (analysis.run.cpu_load); cpu_together_pct: those CPUs taken together. nan and -1
    without rep<k>.cpu files."""
    pinned = case.reps[0].options.get("cpus_allowed")
    seconds = [cpu_load.io_seconds(g.options) for g in case.reps]
    cpu, share = cpu_load.busiest_over(list(case.cpu_loads), pinned, seconds)
    together = cpu_load.together_over(list(case.cpu_loads), pinned, seconds)
    return {"cpu_busiest_pct": share * 100, "cpu_busiest": cpu,
            "cpu_together_pct": together * 100}


def summary_rows(case: Case, always: tuple[str, ...] = ()) -> list[dict]:
    """A row per direction that did I/O; a mixed case also gets a `total` row. Directions in
    `always` get a row even without I/O (zero IOPS), and then `total` does too. A case whose
    writes stood at several levels keeps its rows, their statistics empty (REGIME_COLUMNS)."""
    rows = direction_rows(case, always)
    text = regime_text(case)
    for row in rows:
        row["regime"] = text
        if is_split(case):
            row.update({col: math.nan for col in SPLIT_BLANKS}, regime_split=True,
                       unstable=False, drifting=False)
    return rows


def is_split(case: Case) -> bool:
    """Repetitions of one case that measured more than one state. A single repetition that held
    a cliff (§6's burst, one long series its section analyses itself) keeps its mean, its
    regime text naming the cliff."""
    return case.regimes is not None and not case.regimes.one_level and len(case.reps) > 1


def direction_rows(case: Case, always: tuple[str, ...] = ()) -> list[dict]:
    directions = list(dict.fromkeys(d for g in case.reps for d in g.directions))
    rows = {d: summarize_direction(case, d) for d in directions}
    for d in always:
        if d != "total" and d not in rows:
            rows[d] = empty_direction_row(case, d)
    order = [d for d in always if d != "total"] + [d for d in directions if d not in always]
    out = [rows[d] for d in order]
    if len(directions) > 1 or always:
        out.append(summarize_direction(case, "total"))
    return out


def writes(case: Case) -> bool:
    return any(g.directions.get("write") is not None and g.directions["write"].io_bytes > 0
               for g in case.reps)


def case_regimes(case: Case) -> Regimes | None:
    """The regimes of a case's writes, from every repetition's per-second write rate (load_case
    keeps them in Case.regimes); None for a case that only reads, or whose repetitions did not
    all log their writes."""
    rates = case.write_MBps
    if not writes(case) or len(rates) != len(case.reps) or any(r is None for r in rates):
        return None
    if any(len(r) == 0 for r in rates):  # under a whole second logged: nothing to judge
        return not_judged([float(np.median(r)) if len(r) else math.nan for r in rates])
    return split_regimes(rates)


def regime_text(case: Case) -> str:
    """What the row's writes measured: the declared regime of its ramp (a block of
    --write-regime after-cliff), unless its repetitions split all the same."""
    found = case.regimes
    if not writes(case):
        return ""
    if case.declared and not is_split(case):
        return case.declared
    if found is None:
        return "not logged" if writes(case) else ""
    return ONE_LEVEL if found.one_level and found.description != TOO_SHORT else \
        found.description


def regime_rows(case: Case, runs: tuple[Written, ...] = (), drive_GiB: float = math.nan,
                tree: list[TreeWrite] | None = None) -> list[dict]:
    """A split case's rows per regime, each over its own repetitions only, and a declared
    case's (a block with its ramp) one regime; none for a case at one level otherwise. A row
    per direction the case did (a pure write gets no empty read row, as the section's `always`
    would give it), and a mixed job's total. `regime` names the regime (its repetitions and
    level), `regimes` the case's; the evidence columns (analysis.rules.write_evidence) come from
    `runs`, the section's writing runs."""
    if not writes(case):  # a 100/0 mix among the write blocks (an older run) wrote nothing
        return []
    if case.declared and not is_split(case):
        level = case.regimes.regimes[0].level_MBps if case.regimes else math.nan
        return [{**row, "regime": case.declared, "regime_rank": 1, "regime_MBps": level,
                 "regimes": case.declared,
                 **evidence(list(runs), first_run(case, 0, runs), drive_GiB, tree,
                            reps_of(case, range(len(case.numbers)), runs))}
                for row in direction_rows(case)]
    if not is_split(case):
        return []
    found, out = case.regimes, []
    for k, regime in enumerate(found.regimes):
        part = Case(case.name, [case.reps[i] for i in regime.reps], [],
                    tuple(case.numbers[i] for i in regime.reps if i < len(case.numbers)),
                    tuple(case.cpu_loads[i] for i in regime.reps if i < len(case.cpu_loads)),
                    tuple(case.write_MBps[i] for i in regime.reps))
        for row in direction_rows(part):
            row.update(regime=describe([regime]), regime_split=True, regime_rank=k + 1,
                       regime_MBps=regime.level_MBps, regimes=found.description,
                       **evidence(list(runs), first_run(case, min(regime.reps), runs),
                                  drive_GiB, tree, reps_of(case, regime.reps, runs)))
            if regime.cliff is not None:  # a repetition that fell: two states, no one level
                row.update({col: math.nan for col in SPLIT_BLANKS}, regime_MBps=math.nan)
            out.append(row)
    return out


def reps_of(case: Case, indices, runs: tuple[Written, ...]) -> list[Written]:
    """The writing runs of the case's repetitions at `indices` (0-based, run order)."""
    numbers = {case.numbers[i] for i in indices if i < len(case.numbers)}
    return [r for r in runs if r.case == case.name and r.rep in numbers]


def first_run(case: Case, index: int, runs: tuple[Written, ...]) -> Written | None:
    """The writing run of the case's repetition at `index` (0-based, run order)."""
    if index >= len(case.numbers):
        return None
    return next((r for r in runs if r.case == case.name and r.rep == case.numbers[index]), None)


def one_state(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose repetitions measured one state of the drive: what a finding may compare
    or quote (a split case's rows have no mean; its regimes are in the regimes table)."""
    if "regime_split" not in table:
        return table
    return table[~table.regime_split.astype(bool)]


def case_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The row that stands for each case: its only direction, or `total` for a mixed job."""
    counts = table.groupby("case").direction.transform("count")
    return table[(counts == 1) | (table.direction == "total")]


def frame_of_cases(cases: list[Case], always: tuple[str, ...] = (),
                   ceilings: dict | None = None) -> pd.DataFrame:
    """The summary rows of the cases that kept a good repetition, in their order; `ceilings`
    (a section's host_ceiling.json) marks the host-bound ones."""
    rows = [row for case in cases if case.reps for row in summary_rows(case, always)]
    return mark_host_bound(mark_drifting(pd.DataFrame(rows, columns=CASE_COLUMNS + METRIC_COLUMNS)),
                           ceilings or {})


# regime_MBps: the regime's level, the median of its repetitions' seconds; empty, with the
# statistics, for a repetition that fell at a cliff inside it (its `regime` says from and to)
REGIME_TABLE_COLUMNS = [*CASE_COLUMNS, "regime_rank", "regime_MBps", "regimes", *METRIC_COLUMNS,
                        *EVIDENCE_COLUMNS]


def frame_of_regimes(cases: list[Case], drive_GiB: float = math.nan,
                     tree: list[TreeWrite] | None = None) -> pd.DataFrame:
    """Each split case's rows per regime and each declared case's one (regime_rows), fastest
    regime first: the section's regimes table, with each regime's evidence (drive_GiB: the
    drive's own host-write counter over the section; tree: the results tree's writes since its
    state was prepared, write_evidence.since_state). Empty when every case that writes held
    one level, undeclared."""
    runs = tuple(r for case in cases for r in case.runs)
    rows = [row for case in cases if case.reps
            for row in regime_rows(case, runs, drive_GiB, tree)]
    return pd.DataFrame(rows, columns=REGIME_TABLE_COLUMNS)


def mark_drifting(table: pd.DataFrame) -> pd.DataFrame:
    """`drifting`: the rows whose trend over their rounds is significant, the table's trend tests
    adjusted together (so a section of steady points shows a drifting one in at most 5% of
    runs)."""
    if table.empty:
        return table
    return table.assign(drifting=bh_adjust(table.drift_p.to_numpy(dtype=float)) < ALPHA)


def mark_host_bound(table: pd.DataFrame, ceilings: dict) -> pd.DataFrame:
    """Fill host_ceiling_iops and host_bound from a section's host_ceiling.json. A case is
    judged on all its I/O (its total row, or its only one); each of its rows carries the mark."""
    cases = ceilings.get("cases", {})
    if table.empty:
        return table
    table = table.copy()
    for row in case_rows(table).itertuples():
        ceiling = cases.get(row.case, {}).get("iops", math.nan)
        # null_blk, zram or null (fio's null engine: the only one before the kernel-path ceiling)
        device = cases.get(row.case, {}).get("device", "null" if row.case in cases else "")
        if cases.get(row.case, {}).get("punted"):  # a kernel worker's ceiling, not the host's
            ceiling, device = math.nan, PUNTED
        fired = host_bound_rules(row.iops_mean, ceiling, row.cpu_usr_pct, row.cpu_sys_pct,
                                 int(row.numjobs), int(ceilings.get("cpus", 0)),
                                 row.cpu_busiest_pct, row.cpu_together_pct)
        table.loc[table.case == row.case, ["host_ceiling_iops", "host_ceiling_device",
                                           "host_bound", "host_rule"]] = [
            ceiling, device, bool(fired), " ".join(fired)]
    table["host_bound"] = table.host_bound.astype(bool)
    return table


def section_frame(results_dir: Path, always: tuple[str, ...] = (),
                  prog: str = "analysis") -> pd.DataFrame:
    """The summary rows of every case of a section, in the manifest's case order; the files
    left out are named on stderr."""
    cases = read_section(results_dir)
    report_left_out(cases, prog)
    return frame_of_cases(cases, always, read_ceilings(results_dir))


def frame_of_groups(groups: list[JobGroup], always: tuple[str, ...] = ()) -> pd.DataFrame:
    """Summary rows of job groups read elsewhere (one repetition each, named by job name): how
    fio output from other tools, or the fio-samples, enters a section's analysis."""
    names = [g.jobname for g in groups]
    # Several files often share one job name ("random-io"): number them to keep cases apart.
    names = [f"{n} #{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]
    rows = [row for name, g in zip(names, groups)
            for row in summary_rows(Case(name, [g]), always)]
    return pd.DataFrame(rows, columns=CASE_COLUMNS + METRIC_COLUMNS)


def read_manifest(results_dir: Path) -> dict:
    """The section's manifest: its entry in the tree's record (analysis.run.record, which
    migrates an older tree's manifest.json); {} where the section never ran."""
    return record.section(results_dir)
