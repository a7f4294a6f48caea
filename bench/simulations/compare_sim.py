"""`compare` on two results trees of a simulated drive: how often a whole comparison of an
unchanged drive flags a row, how often --fail-if-worse 5 fails it, and how often a 10% change is
found.

A comparison is CASES cases x 6 metrics (IOPS, MB/s, mean latency, p95, p99, p99.9), each case's
repetitions on each tree drawn as bench/simulations/sides.py draws them: the tree's own offset
(shared by its repetitions: a run on another day) and each repetition's own move. Sides are
costly (a histogram per repetition, the project's row builder with its tail intervals), so each
cell draws a pool of sides and every comparison takes CASES x 2 distinct sides from it (a side
serves about 2 x CASES x COMPARISONS / POOL comparisons; the rates are unbiased, their spread a
little wider than the binomial se quoted).

The spread between runs compare adds (`between`): "default" (none given, no history: as large
as the repetitions' own), "history N" (estimated from N more sides of each case, the runs a
history would hold: analysis.history.between.estimate), "given" (--between-run at the true
offset).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.core.effects import Between
from analysis.history import between as history_between
from analysis.report import compare
from bench.simulations import models, sides

CASES = 6
CHANGE = 0.10  # the change whose power is stated: 10% fewer IOPS (latency x 1/0.9)
MARGIN = 5.0  # --fail-if-worse 5


def grid(quick: bool) -> list[dict]:
    noises = (0.02, 0.10) if quick else (0.02, 0.05, 0.10)
    ratios = (0.0, 1.0) if quick else (0.0, 0.5, 1.0)
    reps = (3, 6) if quick else (3, 6, 10)
    pool, comparisons = (120, 300) if quick else (300, 1000)
    cells = [{"noise": n, "ratio": r, "reps": k, "pool": pool, "comparisons": comparisons,
              "between": "default"} for n in noises for r in ratios for k in reps]
    # a history of h runs of each case takes CASES x h more sides a comparison
    cells += [{"noise": n, "ratio": r, "reps": 3, "pool": max(pool, 4 * CASES * (2 + h)),
               "comparisons": comparisons, "between": f"history {h}"}
              for n in noises[:2] for r in (0.0, 1.0) for h in ((10,) if quick else (10, 20))]
    cells += [{"noise": n, "ratio": 1.0, "reps": 3, "pool": pool, "comparisons": comparisons,
               "between": "given"} for n in noises]
    return cells


def _judge(rows_a: list[dict], rows_b: list[dict], between: list[dict | None]) -> pd.DataFrame:
    """The project's verdict on one comparison (compare_rows per case, judge over them all)."""
    out = []
    for i, (a, b) in enumerate(zip(rows_a, rows_b)):
        head = {"section": "qd1", "case": f"case-{i}", "direction": "read", "rw": "randread",
                "bs": 4096, "iodepth": 1, "numjobs": 1, "read_pct": 100}
        out += [{**head, **r} for r in compare.compare_rows(pd.Series(a), pd.Series(b),
                                                            between[i])]
    raw = pd.DataFrame(out, columns=[c for c in compare.COLUMNS if c not in compare.JUDGED])
    return compare.judge(raw)


def run(cell: dict) -> dict:
    # the default cells draw what the grid drew before compare knew of runs (the same seeds)
    key = () if cell["between"] == "default" else (cell["between"],)
    rng = np.random.default_rng(models.seed_of("compare", cell["noise"], cell["ratio"],
                                               cell["reps"], *key))
    offset = cell["ratio"] * cell["noise"]

    def draw(shift: float = 0.0) -> dict:
        return sides.side(rng, cell["reps"], cell["noise"], offset, shift)

    pool = [draw() for _ in range(cell["pool"])]
    slower = [draw(-math.log(1 - CHANGE)) for _ in range(cell["pool"] // 3)]
    flagged = gated = found = gate_found = 0
    mean_rows = mean_hits = pct_rows = pct_hits = 0
    history = int(cell["between"].split()[1]) if cell["between"].startswith("history") else 0
    given = {m: Between(rel_sd=offset, source="given") for m in compare.METRICS}
    for _ in range(cell["comparisons"]):
        pick = rng.choice(len(pool), CASES * (2 + history), replace=False)
        a, b = [pool[i] for i in pick[:CASES]], [pool[i] for i in pick[CASES:2 * CASES]]
        spread: list[dict | None] = [None] * CASES
        if history:
            runs = [pool[i] for i in pick[2 * CASES:]]
            spread = [{m: e for m in compare.METRICS if (e := history_between.estimate(
                runs[c * history:(c + 1) * history], m)) is not None} for c in range(CASES)]
        elif cell["between"] == "given":
            spread = [given] * CASES
        t = _judge(a, b, spread)
        flagged += bool(t.significant.any())
        gated += not compare.regressions(t, MARGIN).empty
        tested = t[t.p.notna()]
        means = tested[~tested.metric.isin(compare.PERCENTILES)]
        pcts = tested[tested.metric.isin(compare.PERCENTILES)]
        mean_rows += len(means)
        mean_hits += int((means.p < 0.05).sum())
        pct_rows += len(pcts)
        pct_hits += int((pcts.p < 0.05).sum())
        # the same comparison with case 0 of B 10% slower
        b[0] = slower[rng.integers(len(slower))]
        t = _judge(a, b, spread)
        iops = t[(t.case == "case-0") & (t.metric == "iops_mean")]
        found += bool(iops.worse.any())
        gate_found += not compare.regressions(t, MARGIN).empty
    n = cell["comparisons"]
    return {**cell, "flagged": flagged / n, "gate": gated / n, "power": found / n,
            "gate_power": gate_found / n,
            "mean_row": mean_hits / max(mean_rows, 1), "pct_row": pct_hits / max(pct_rows, 1)}


def table(results: list[dict]) -> str:
    lines = [("| spread between runs | noise | run offset | reps | comparison flags a row | "
             "--fail-if-worse 5 fails | a mean row p < 0.05 | a percentile row p < 0.05 | "
             "10% fewer IOPS found | gate fails on it |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['between']} | {r['noise']:.0%} | {r['ratio']:.0%} | {r['reps']} | "
                     f"{r['flagged']:.1%} | "
                     f"{r['gate']:.1%} | {r['mean_row']:.1%} | {r['pct_row']:.1%} | "
                     f"{r['power']:.1%} | {r['gate_power']:.1%} |")
    return "\n".join(lines)
