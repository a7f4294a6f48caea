"""A lab's targets judged against a section's table, each with the 95% interval of what it names.

A target names a section, a case (its id, or fields of the table's rows: rw, bs, iodepth,
numjobs, mix, direction, phase) and a metric, a column of the section's table (`iops_mean`,
`bw_MBps_mean`, `lat_p99_9_us`, `lat_max_us` ...), with a `min` or a `max`, the threshold
optionally per TB of the target's capacity. Its verdict:

- pass: the 95% interval lies wholly on the right side of the threshold;
- fail: it lies wholly on the wrong side;
- not resolved: it straddles the threshold; the verdict says how many repetitions in all, or
  how much more runtime, would likely resolve it (analysis.core.stats.repetitions_to_clear);
- host-bound: the point the target names is host-bound (the host, not the drive, set it);
- not run: no row of the section's table is the case (or the section did not run);
- unmapped: the target names nothing the toolkit measures (a suite's metric with no column, a
  suite's job with no case given, several cases where one was meant).

The intervals are the tables' own (docs/outputs.md): a mean's `<metric>_ci95` (t over the
repetitions; for §6's levels, over batch means of the seconds), a percentile's `_lo`/`_hi`
(one-sided where `_hi` is empty). A column with no interval (`lat_max_us`, `lat_p50_us`) is
judged on its value, and the verdict says so.

Pure functions of rows; reading the files that hold targets is analysis.rules.target_files', the
outputs analysis.report.targets'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.core.stats import MIN_TAIL_IOS, repetitions_to_clear, t_half_width
from analysis.fio.job_options import parse_size
from analysis.rules.cases import case_rows

PASS, FAIL, NOT_RESOLVED = "pass", "fail", "not resolved"
HOST_BOUND, NOT_RUN, UNMAPPED = "host-bound", "not run", "unmapped"
VERDICTS = (PASS, FAIL, NOT_RESOLVED, HOST_BOUND, NOT_RUN, UNMAPPED)

TB = 10**12  # a TB of capacity, as drive makers and the suites count it
# A target's match field -> the table's column it reads.
FIELD_COLUMNS = {"mix": "read_pct", "case": "case"}


@dataclass(frozen=True)
class Target:
    """One target. `value` is the threshold as written; `per_tb` multiplies it by the target's
    capacity in TB (`tb_rule` 'exact': bytes / 10^12; 'autoval': that rounded to 2 places and at
    least 1, on `min` only, as ocp-diag-autoval-ssd scales its _PER_TB targets)."""

    name: str
    section: str
    metric: str
    bound: str                  # 'min' or 'max'
    value: float
    match: dict = field(default_factory=dict)   # field -> value; 'case' for a case id
    per_tb: bool = False
    tb_rule: str = "exact"
    origin: str = ""            # where it was written: file and entry, or the suite's key
    imported: bool = False      # read from a qualification suite's file, not the toolkit's
    unmapped: str = ""          # why it maps onto nothing the toolkit measures ('' if it does)


@dataclass(frozen=True)
class Verdict:
    target: Target
    verdict: str
    threshold: float = math.nan   # after the per-TB scaling
    value: float = math.nan       # what was measured
    low: float = math.nan         # its 95% interval (NaN where none; high NaN: one-sided)
    high: float = math.nan
    case: str = ""
    direction: str = ""
    detail: str = ""              # one sentence: why, and for not resolved what would resolve it

    def failing(self, unresolved_fails: bool) -> bool:
        """Does it fail a lab's gate? A failed, unmeasured or host-bound target always does, an
        unresolved one when the lab says so, an unmapped one when the lab wrote it in the
        toolkit's own format (a typo there must not pass quietly; a suite's metric the toolkit
        does not measure is listed, not failed)."""
        if self.verdict in (FAIL, NOT_RUN, HOST_BOUND):
            return True
        if self.verdict == NOT_RESOLVED:
            return unresolved_fails
        return self.verdict == UNMAPPED and not self.target.imported


def tb_factor(capacity_bytes: float | None, rule: str) -> float | None:
    """The per-TB multiplier of a capacity (None when unknown).

    >>> tb_factor(3_840_755_982_336, "exact"), tb_factor(3_840_755_982_336, "autoval")
    (3.840755982336, 3.84)
    >>> tb_factor(480_103_981_056, "autoval")   # under 1 TB: autoval keeps the target as is
    1.0
    """
    if not capacity_bytes or capacity_bytes <= 0:
        return None
    tb = capacity_bytes / TB
    return max(math.floor(tb * 100) / 100, 1.0) if rule == "autoval" else tb


def threshold_of(target: Target, capacity_bytes: float | None) -> float | None:
    """The threshold a target's value means on this drive (None: per TB, capacity unknown)."""
    if not target.per_tb or (target.tb_rule == "autoval" and target.bound == "max"):
        return target.value
    factor = tb_factor(capacity_bytes, target.tb_rule)
    return None if factor is None else target.value * factor


# --------------------------------------------------------------------------- finding the row

def _same(cell, wanted, column: str) -> bool:
    if column == "bs":
        size = parse_size(str(wanted)) if not isinstance(wanted, int | float) else wanted
        try:
            return size is not None and float(cell) == float(size)
        except (TypeError, ValueError):
            return False
    try:
        return float(cell) == float(wanted)
    except (TypeError, ValueError):
        return str(cell).strip().lower() == str(wanted).strip().lower()


def matching_rows(table: pd.DataFrame, match: dict) -> pd.DataFrame:
    """The rows of a section's table that the target's fields name. Without `direction`, each
    case stands for itself by its one row (its only direction, or `total` for a mixed job:
    analysis.rules.cases.case_rows)."""
    rows = table
    for name, wanted in match.items():
        column = FIELD_COLUMNS.get(name, name)
        if column not in rows.columns:
            return rows.iloc[0:0]
        rows = rows[[_same(cell, wanted, column) for cell in rows[column]]]
    if "direction" not in match and "direction" in rows.columns and not rows.empty:
        # rows left that are no case's own (§6's levels: one case, several phases) stay, to be
        # named as several
        rows = case_rows(rows) if not case_rows(rows).empty else rows
    return rows


def _described(match: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in match.items()) or "any case"


# --------------------------------------------------------------------------- the interval

@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float              # NaN: one-sided (at least `low`)
    kind: str                # 'mean', 'percentile' or 'none'
    row: pd.Series


def interval_of(row: pd.Series, metric: str) -> Interval:
    """The measured value of `metric` in a table row and its 95% interval, from the row's own
    columns: a mean's `<name>_ci95`, a percentile's `_lo`/`_hi`; else none (the value alone)."""
    value = float(row[metric])
    if metric.endswith("_mean") and metric.removesuffix("_mean") + "_ci95" in row.index:
        half = float(row[metric.removesuffix("_mean") + "_ci95"])
        return Interval(value, value - half, value + half, "mean", row)
    if metric + "_lo" in row.index:
        low, high = float(row[metric + "_lo"]), float(row[metric + "_hi"])
        return Interval(value, low, high, "percentile", row)
    return Interval(value, value, value, "none", row)


# --------------------------------------------------------------------------- what would resolve it

def advice(iv: Interval, metric: str, threshold: float) -> str:
    """How many repetitions in all, or how much more runtime, would likely resolve a target
    whose interval straddles `threshold`: the interval narrows as its repetitions grow (the t
    over them) or, for a percentile resting on few I/Os and for §6's levels, as the run grows."""
    row = iv.row
    n = int(row.get("n", 0) or 0)
    if iv.kind == "mean":
        std = float(row.get(metric.removesuffix("_mean") + "_std", math.nan))
        if n < 2 or math.isnan(std):
            return "one repetition gives no interval: run at least 2 (--repeat 3)"
        needed = repetitions_to_clear(std, n, iv.value - threshold)
        if "batch_s" in row.index and not pd.isna(row.get("batch_s")):
            if needed is None:
                return ("the level sits on the target: no practical length of burst would "
                        "resolve it")
            seconds = needed * float(row["batch_s"])
            return (f"about {seconds:.0f} s at this level instead of {float(row['seconds']):.0f} "
                    "would likely resolve it (a longer --duration)")
        if needed is None:
            return (f"the mean sits on the target ({_pct(iv.value, threshold)}): more than "
                    "100 repetitions would be needed")
        return f"about {needed} repetitions in all would likely resolve it (--repeat {needed})"
    if iv.kind == "percentile":
        tail = int(row.get(metric + "_tail_ios", 0) or 0)
        if math.isnan(iv.high):
            factor = math.ceil(MIN_TAIL_IOS / max(tail, 1))
            return (f"only {tail} I/Os lie above it, too few to bound it from above: about "
                    f"{factor}x the runtime (--runtime) would give {MIN_TAIL_IOS}")
        gap = abs(math.log(iv.value / threshold)) if iv.value > 0 and threshold > 0 else 0.0
        lsd = float(row.get(metric + "_lsd", math.nan))
        side = iv.high if threshold > iv.value else iv.low
        width = abs(math.log(side / iv.value)) if side > 0 and iv.value > 0 else math.inf
        between = t_half_width(lsd, n) if n >= 2 and not math.isnan(lsd) else math.nan
        if gap == 0:
            return "the percentile sits on the target: no practical run would resolve it"
        if not math.isnan(between) and between >= 0.99 * width:
            needed = repetitions_to_clear(lsd, n, gap)
            return (f"about {needed} repetitions in all would likely resolve it "
                    f"(--repeat {needed})" if needed else
                    f"the percentile sits on the target ({_pct(iv.value, threshold)}): more "
                    "than 100 repetitions would be needed")
        factor = math.ceil((width / gap) ** 2 * 10) / 10
        return (f"its interval rests on the {tail} I/Os above it: about {factor:g}x the "
                "runtime (--runtime) would likely resolve it")
    return "no interval to narrow"


def _pct(value: float, threshold: float) -> str:
    return f"{(value / threshold - 1) * 100:+.1f}% from it" if threshold else "at it"


# --------------------------------------------------------------------------- the verdict

def judge(target: Target, table: pd.DataFrame | None, capacity_bytes: float | None = None) -> Verdict:
    """The verdict on one target, given its section's table (None: the section did not run).

    >>> rows = pd.DataFrame([{"case": "randread-4k", "rw": "randread", "bs": 4096,
    ...     "direction": "read", "n": 3, "iops_mean": 1000.0, "iops_std": 10.0,
    ...     "iops_ci95": 24.8, "host_bound": False}])
    >>> judge(Target("x", "qd1", "iops_mean", "min", 900.0, {"rw": "randread"}), rows).verdict
    'pass'
    >>> v = judge(Target("x", "qd1", "iops_mean", "min", 1010.0, {"bs": "4k"}), rows)
    >>> v.verdict, v.detail
    ('not resolved', 'about 7 repetitions in all would likely resolve it (--repeat 7)')
    """
    if target.unmapped:
        return Verdict(target, UNMAPPED, detail=target.unmapped)
    threshold = threshold_of(target, capacity_bytes)
    if threshold is None:
        return Verdict(target, UNMAPPED, detail="a per-TB target, and the target's capacity is "
                       "not recorded in the section's manifest")
    if table is None or table.empty:
        return Verdict(target, NOT_RUN, threshold,
                       detail=f"§ {target.section} has no results in this tree")
    if target.metric not in table.columns:
        return Verdict(target, UNMAPPED, threshold,
                       detail=f"{target.section}'s table has no column {target.metric}")
    rows = matching_rows(table, target.match)
    if rows.empty:
        return Verdict(target, NOT_RUN, threshold,
                       detail=f"no case of {target.section} has {_described(target.match)}")
    if len(rows) > 1:
        names = ", ".join(f"{r.case} {r.direction}" if "direction" in rows.columns else str(r.case)
                          for r in rows.itertuples())
        return Verdict(target, UNMAPPED, threshold,
                       detail=f"{len(rows)} rows match ({names}): name one case")
    row = rows.iloc[0]
    case, direction = str(row.get("case", "")), str(row.get("direction", ""))
    if bool(row.get("regime_split", False)):  # analysis.rules.cases: no one number
        return Verdict(target, NOT_RESOLVED, threshold, case=case, direction=direction,
                       detail=f"its repetitions measured more than one state of the drive "
                              f"({row['regime']}): no one number to judge (the section's "
                              "regimes table has each)")
    if pd.isna(row[target.metric]):
        return Verdict(target, NOT_RUN, threshold, case=case, direction=direction,
                       detail=f"{case} has no {target.metric} (no I/O in that direction)")
    iv = interval_of(row, target.metric)
    measured = {"value": iv.value, "low": iv.low, "high": iv.high, "case": case,
                "direction": direction}
    if row.get("host_bound") is True or row.get("host_bound") is np.True_:
        return Verdict(target, HOST_BOUND, threshold, **measured,
                       detail="the host, not the drive, set this point (docs/methodology.md, "
                              "the host ceiling): not judged")
    verdict, detail = _side(iv, target, threshold)
    return Verdict(target, verdict, threshold, detail=detail, **measured)


def _side(iv: Interval, target: Target, threshold: float) -> tuple[str, str]:
    """(verdict, detail) from where the interval lies."""
    if math.isnan(iv.low):
        return NOT_RESOLVED, advice(iv, target.metric, threshold)
    upper = math.inf if math.isnan(iv.high) else iv.high
    good_side_clear = iv.low >= threshold if target.bound == "min" else upper <= threshold
    bad_side_clear = upper < threshold if target.bound == "min" else iv.low > threshold
    if iv.kind == "none":  # lat_max_us, lat_p50_us: what the run saw, with no interval
        return ((PASS, "the value clears the target (this column has no interval)")
                if good_side_clear else
                (FAIL, "the value is on the wrong side (this column has no interval)"))
    if good_side_clear:
        return PASS, "the interval clears the target"
    if bad_side_clear:
        return FAIL, "the interval lies wholly on the wrong side"
    return NOT_RESOLVED, advice(iv, target.metric, threshold)
