"""Tail intervals (analysis.core.stats.tail_intervals): how often the 95% interval of a pooled
p95, p99 and p99.9 holds the true percentile, with 3, 6 and 10 repetitions whose level moves
from repetition to repetition by 0-10% (sd of the log level), for lognormal latencies and for a
bursty slow mode (bench/simulations/models.py). The truth is the percentile of every run's I/Os
pooled over infinitely many runs, which is what a pooled percentile estimates.

The nines: p99.99 and p99.999 of 3 repetitions of 50,000 I/Os have 15 and 1 I/Os above them; how
often their interval (two-sided, or a one-sided lower bound) holds the truth, and on which side
it misses.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.core.stats import tail_intervals
from bench.simulations import models

PCTS = (95.0, 99.0, 99.9)
NINES = (99.99, 99.999)


def grid(quick: bool) -> list[dict]:
    spreads = (0.0, 0.10) if quick else (0.0, 0.02, 0.05, 0.10)
    reps = (3, 10) if quick else (3, 6, 10)
    sims = 200 if quick else 1000
    cells = [{"model": m, "spread": s, "reps": k, "sims": sims, "pcts": PCTS}
             for m in ("lognormal", "bursty") for s in spreads for k in reps]
    cells += [{"model": "lognormal", "spread": s, "reps": 3, "sims": sims, "pcts": NINES}
              for s in (0.0, 0.10)]
    return cells


def covers(t, truth: float) -> tuple[bool, bool]:
    """(held, missed on the high side: the truth above the interval)."""
    high = t.high if t.high == t.high else math.inf  # NaN: no upper bound
    return t.low <= truth <= high, truth > high


def run(cell: dict) -> dict:
    rng = np.random.default_rng(models.seed_of("tails", cell["model"], cell["spread"],
                                               cell["reps"], cell["pcts"]))
    truth = {p: models.true_percentile(p, cell["spread"], cell["model"]) for p in cell["pcts"]}
    held = dict.fromkeys(truth, 0)
    high = dict.fromkeys(truth, 0)
    seen = dict.fromkeys(truth, 0)
    width = dict.fromkeys(truth, 0.0)
    for _ in range(cell["sims"]):
        levels = models.MU + rng.normal(0, cell["spread"], cell["reps"])
        bins = [models.as_bins(models.rep_histogram(rng, level, cell["model"]))
                for level in levels]
        found = tail_intervals(bins, list(truth))
        for p, true in truth.items():
            if p not in found:
                continue
            ok, above = covers(found[p], true)
            seen[p] += 1
            held[p] += ok
            high[p] += above
            t = found[p]
            if t.high == t.high and math.isfinite(t.high):
                width[p] += (t.high - t.low) / 2 / t.value
    return {**cell, "coverage": {p: held[p] / max(seen[p], 1) for p in truth},
            "high_misses": {p: high[p] / max(seen[p] - held[p], 1) for p in truth},
            "half_width": {p: width[p] / max(seen[p], 1) for p in truth}, "seen": seen}


def table(results: list[dict]) -> str:
    lines = [("| latencies | run-to-run | reps | p95 covered | p99 covered | p99.9 covered | "
             "p99 half-width |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["pcts"] != PCTS:
            continue
        c = r["coverage"]
        lines.append(f"| {r['model']} | {r['spread']:.0%} | {r['reps']} | {c[95.0]:.1%} | "
                     f"{c[99.0]:.1%} | {c[99.9]:.1%} | ±{r['half_width'][99.0]:.1%} |")
    lines += ["", ("| nines, 3 x 50,000 I/Os | run-to-run | p99.99 covered (15 I/Os above) | "
              "its misses high | p99.999 covered (1 I/O above) | its misses high |"),
              "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["pcts"] != NINES:
            continue
        c, h = r["coverage"], r["high_misses"]
        lines.append(f"| {r['model']} | {r['spread']:.0%} | {c[99.99]:.1%} | {h[99.99]:.0%} | "
                     f"{c[99.999]:.1%} | {h[99.999]:.0%} |")
    return "\n".join(lines)
