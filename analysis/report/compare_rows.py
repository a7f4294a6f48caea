"""The rows of `compare`: one test per case and metric, B against A, with the spread between
runs added (analysis.core.effects), and the verdict over the whole comparison (Benjamini-
Hochberg). analysis.report.compare reads the trees and writes the outputs."""

from __future__ import annotations

import math

import pandas as pd

from analysis.core.effects import (
    ALPHA,
    DEFAULT_BETWEEN,
    Between,
    bh_adjust,
    difference_interval,
    welch,
)
from analysis.core.stats import MIN_TAIL_IOS, bucket_width_ns

PARAMS = ["rw", "bs", "iodepth", "numjobs", "read_pct"]
# metric column -> (its std column, label, higher is better)
METRICS = {
    "iops_mean": ("iops_std", "IOPS", True),
    "bw_MBps_mean": ("bw_MBps_std", "MB/s", True),
    "lat_us_mean": ("lat_us_std", "mean lat (µs)", False),
    "lat_p95_us": ("lat_p95_us_std", "p95 (µs)", False),
    "lat_p99_us": ("lat_p99_us_std", "p99 (µs)", False),
    "lat_p99_9_us": ("lat_p99_9_us_std", "p99.9 (µs)", False),
}
# pooled from json+ bins (resolved to one fio bucket), each with its tail interval
PERCENTILES = ("lat_p95_us", "lat_p99_us", "lat_p99_9_us")
HALF_WIDTHS = {"iops_mean": "iops_ci95", "bw_MBps_mean": "bw_MBps_ci95",
               "lat_us_mean": "lat_us_ci95"}  # each mean's 95% t half-width



def within_one_bucket(a_us: float, b_us: float) -> bool:
    """Two pooled percentiles (µs) no further apart than one bucket of fio's latency histogram
    at the larger of them: fio cannot tell them apart, so neither can a test on them."""
    return abs(b_us - a_us) * 1000 <= bucket_width_ns(max(a_us, b_us) * 1000) * (1 + 1e-9)


def benjamini_hochberg(p: pd.Series) -> pd.Series:
    """Benjamini–Hochberg adjusted p over every test made (NaN, not tested, stays NaN): the
    chance that a comparison of an unchanged drive shows any significant row is held at ALPHA."""
    return pd.Series(bh_adjust(p.to_numpy(dtype=float)), index=p.index)


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def interval_of(row: pd.Series, col: str) -> tuple[float, float]:
    """(low, high) of a metric's 95% interval: mean ± its t half-width (`<metric>_ci95`), or a
    pooled percentile's own interval (`_lo`, `_hi`; `_hi` NaN where it is one-sided); NaN when
    the table has none (a table from before the intervals, or one repetition)."""
    if col in PERCENTILES:
        return _f(row.get(col + "_lo")), _f(row.get(col + "_hi"))
    half = _f(row.get(HALF_WIDTHS[col]))
    return _f(row.get(col)) - half, _f(row.get(col)) + half


def _test(col: str, a: pd.Series, b: pd.Series, between: Between) -> tuple[str, tuple]:
    """Which test a metric gets, and its (mean, sd, n) per side: the plain values for a mean,
    the log of the pooled percentile with the sd of the repetitions' own log percentiles."""
    ma, mb = _f(a.get(col)), _f(b.get(col))
    sa, sb = _f(a.get(METRICS[col][0])), _f(b.get(METRICS[col][0]))
    na, nb = int(a["n"]), int(b["n"])
    plain = (ma, sa, na, mb, sb, nb)
    if math.isnan(ma) or math.isnan(mb):
        return "no value", plain
    if na < 2 or nb < 2:
        return "not testable (n<2)", plain
    if col in PERCENTILES:
        # a count on either side under the minimum (0: no I/O above it) is †; a side with none
        # (another tool's table) is judged by the other's
        counts = [c for c in (_f(a.get(col + "_tail_ios")), _f(b.get(col + "_tail_ios")))
                  if not math.isnan(c)]
        if counts and min(counts) < MIN_TAIL_IOS:
            return "too few I/Os above", plain
        la, lb = _f(a.get(col + "_lsd")), _f(b.get(col + "_lsd"))
        if not (math.isnan(la) or math.isnan(lb)) and ma > 0 and mb > 0:
            if la == 0 and lb == 0 and not between.rel_sd > 0:
                return ("within one bucket" if within_one_bucket(ma, mb) else
                        "not testable (no spread)"), plain
            return "welch-log", (math.log(ma), la, na, math.log(mb), lb, nb)
        if within_one_bucket(ma, mb):
            return "within one bucket", plain
    if sa == 0 and sb == 0 and not (between.rel_sd > 0):
        return "not testable (no spread)", plain
    return ("welch~" if col in PERCENTILES else "welch"), plain


def compare_rows(a: pd.Series, b: pd.Series,
                 between: dict[str, Between] | None = None) -> list[dict]:
    """One row per metric for one (section, case, direction) present in both trees: the raw
    test, with the spread between runs of `between` (metric -> Between; DEFAULT_BETWEEN for a
    metric it lacks). Whether a change is significant is decided over the whole comparison
    (`judge`)."""
    rows = []
    for col, (std_col, label, higher_better) in METRICS.items():
        if col not in a.index and col not in b.index:
            continue  # neither table has it (another tool's): nothing to compare, no row
        # a column one table lacks (an older table) is "no value" on that side
        ma, mb = _f(a.get(col)), _f(b.get(col))
        sa, sb = _f(a.get(std_col)), _f(b.get(std_col))
        na, nb = int(a["n"]), int(b["n"])
        ratio = mb / ma if ma and not math.isnan(ma) and not math.isnan(mb) else math.nan
        diff = (ratio - 1.0) * 100 if not math.isnan(ratio) else math.nan
        run = (between or {}).get(col, DEFAULT_BETWEEN)
        test, (xa, ya, _, xb, yb, _) = _test(col, a, b, run)
        t = df = p = low = high = math.nan
        spread = math.nan  # the sd between runs used, in % of A's level
        if test.startswith("welch"):
            log = test == "welch-log"
            # a relative spread between runs applies to a log as it is (the log's own sd), not
            # to the log's value, which depends on the unit (ln of 38 µs is 3.6, of 38,000 ns 10.6)
            level = 1.0 if log else xa
            t, df, p = welch(xa, ya, na, xb, yb, nb, run, scale=level)
            spread = (run.rel_sd if run.rel_sd > 0 else
                      run.ratio * math.hypot(ya, yb) / math.sqrt(2) / abs(level)) * 100
            low, high = difference_interval(xa, ya, na, xb, yb, nb, run, scale=level)
            if log:
                low, high = math.expm1(low) * 100, math.expm1(high) * 100
            else:
                low, high = low / xa * 100, high / xa * 100
        (low_a, high_a), (low_b, high_b) = interval_of(a, col), interval_of(b, col)
        rows.append({"metric": col, "label": label, "a": ma, "a_std": sa, "a_n": na, "b": mb,
                     "b_std": sb, "b_n": nb, "a_low": low_a, "a_high": high_a, "b_low": low_b,
                     "b_high": high_b, "ratio": ratio, "diff_pct": diff, "diff_low": low,
                     "diff_high": high, "t": t, "df": df, "p": p,
                     # how much worse B is, in % of A (negative: better)
                     "regression_pct": -diff if higher_better else diff, "test": test,
                     "between_source": run.source if test.startswith("welch") else "",
                     "between_pct": spread})
    return rows


def judge(table: pd.DataFrame) -> pd.DataFrame:
    """Significance over the whole comparison: Benjamini–Hochberg adjusted p (`p_adj`) below
    ALPHA. Testing every case and metric at ALPHA unadjusted would find "significant" rows
    between two trees of the same drive by chance alone; the gate uses p_adj too."""
    table = table.assign(p_adj=benjamini_hochberg(table.p))
    significant = table.p_adj < ALPHA  # NaN compares False: not tested, never significant
    return table.assign(significant=significant,
                        worse=significant & (table.regression_pct > 0),
                        better=significant & (table.regression_pct < 0))[COLUMNS]


COLUMNS = ["section", "case", "direction", *PARAMS, "metric", "label", "a", "a_std", "a_n", "b",
           "b_std", "b_n", "a_low", "a_high", "b_low", "b_high", "ratio", "diff_pct",
           "diff_low", "diff_high", "t", "df", "p", "p_adj", "significant", "worse", "better",
           "regression_pct", "test", "between_source", "between_pct"]


JUDGED = ("p_adj", "significant", "worse", "better")  # set by judge() over the whole table


def regressions(table: pd.DataFrame, pct: float) -> pd.DataFrame:
    """Changes for the worse both significant and larger than pct %, largest first: what
    --fail-if-worse fails on."""
    bad = table[table.worse & (table.regression_pct > pct)]
    return bad.sort_values("regression_pct", ascending=False)


