"""The spread between runs of one drive and case, from the history: what `compare` adds to the
repetitions' own spread when it judges two results trees.

Each recorded run holds, per case and direction, every metric's mean, sample std and n over its
repetitions (and, for a percentile, the sd of the repetitions' own log percentiles, `_lsd`). On
the log scale (a relative spread, the same for IOPS as for the latency it implies), a run's mean
y_r varies about the drive's level by tau² (between runs) plus v_r = s_r² / n_r (its own
repetitions). The one-way random-effects estimate (method of moments, as a two-level model has):

    tau² = max(0, var(y_r) - mean(v_r))

with N - 1 degrees of freedom, from the N runs of this drive, case, direction and settings
(--state, region) that the history holds, leaving out the two trees being compared. With fewer
than MIN_RUNS runs nothing is estimated, and compare uses its default.

What it covers: the spread between the runs the history holds (their days, idle times, thermal
states, the toolkit and kernel versions they ran). What it does not: a change the history has
not seen (a firmware update, another host); and a step or a drift in the history inflates tau,
which makes compare more cautious, never less.
"""

from __future__ import annotations

import json
import math

import numpy as np

from analysis.core.effects import Between
from analysis.history.trends import device_key

# Runs of the drive and case before the history's spread between runs is used: with 5 a
# comparison of an unchanged drive flagged 5.5% where runs differ as much as repetitions
# (bench/statistics), with 10 and 20 3.3% and 2.9%.
MIN_RUNS = 10
# metric column -> its sd column in the summary rows; percentiles use their log sd (`_lsd`)
MEANS = {"iops_mean": "iops_std", "bw_MBps_mean": "bw_MBps_std", "lat_us_mean": "lat_us_std"}
PERCENTILES = ("lat_p95_us", "lat_p99_us", "lat_p99_9_us")


def _number(row: dict, extra: dict, col: str) -> float:
    value = row.get(col, extra.get(col))
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def run_levels(rows: list[dict], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(y_r, v_r) of every run's row that has the metric: the log of its level and the variance
    of that log from its own repetitions."""
    ys, vs = [], []
    for row in rows:
        extra = json.loads(row.get("extra") or "{}")
        value, n = _number(row, extra, metric), _number(row, extra, "n")
        if not value > 0 or not n >= 2:
            continue
        if metric in MEANS:
            sd = _number(row, extra, MEANS[metric]) / value
        else:
            sd = _number(row, extra, metric + "_lsd")
            if math.isnan(sd):  # a run recorded before the log sd: the relative std is close
                sd = _number(row, extra, metric + "_std") / value
        if math.isnan(sd):
            continue
        ys.append(math.log(value))
        vs.append(sd * sd / n)
    return np.array(ys), np.array(vs)


def estimate(rows: list[dict], metric: str) -> Between | None:
    """The spread between runs of one metric from the runs' rows; None below MIN_RUNS runs."""
    y, v = run_levels(rows, metric)
    if y.size < MIN_RUNS:
        return None
    tau2 = max(0.0, float(np.var(y, ddof=1) - v.mean()))
    return Between(rel_sd=math.sqrt(tau2), df=float(y.size - 1),
                   source=f"history: {y.size} runs of this drive")


def same_runs(store, tree_run: dict, exclude: set[str]) -> list[dict]:
    """The history's runs of the tree's drive in the same state and region, but the trees'."""
    key = device_key(tree_run)
    return [r for r in store.runs() if device_key(r) == key and r["run_id"] not in exclude
            and str(r.get("state") or "") == str(tree_run.get("state") or "")
            and str(r.get("region_bytes") or "") == str(tree_run.get("region_bytes") or "")]


def between_runs(store, tree_run: dict, exclude: set[str]):
    """A function (section, case, direction) -> {metric: Between} over the history's runs of the
    tree's drive (the metrics it can estimate; compare's default for the others)."""
    runs = same_runs(store, tree_run, exclude)
    rows = store.of_runs("summary_rows", [r["run_id"] for r in runs])
    by_case: dict[tuple, list[dict]] = {}
    for row in rows:
        by_case.setdefault((row["section"], row["case_name"], row["direction"]), []).append(row)

    def lookup(section: str, case: str, direction: str) -> dict[str, Between]:
        found = by_case.get((section, case, direction), [])
        out = {}
        for metric in (*MEANS, *PERCENTILES):
            b = estimate(found, metric)
            if b is not None:
                out[metric] = b
        return out

    return lookup
