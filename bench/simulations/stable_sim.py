"""--until-stable (analysis.core.effects.stability, as analysis.run.stability applies it): 3
planned repetitions, then one more per round while the point is not certified, up to
--max-repeat 6, at ±5%. A point's IOPS per round: its level, a drift per round (0, 1 or 2% of
the level), and noise (CV 1-3%) that is independent or AR(1) with phi 0.6 from round to round.
MB/s is IOPS x the block; latency 1 / IOPS.

Rates: certified (stable), named drifting, the repetitions spent, and for points that do not
drift the share of certified points whose interval of the mean IOPS holds the true mean.

The tables' `drifting` mark (analysis.rules.cases.mark_drifting: the trend tests of a table's
points adjusted together): how often a table of 16 steady points (CV 2%) marks any of them, with
3 and 6 repetitions, and how often it marks one point that drifts 2% per round among them.
"""

from __future__ import annotations

import numpy as np

from analysis.core.effects import ALPHA, bh_adjust, stability, trend
from analysis.core.stats import interval_columns, rep_stats
from bench.simulations import models

PCT = 5.0
PLANNED, MAX_REPEAT = 3, 6
POINTS = 16


def grid(quick: bool) -> list[dict]:
    sims = 500 if quick else 4000
    cells = [{"kind": "until", "noise": n, "drift": d, "phi": f, "reps": MAX_REPEAT, "sims": sims}
             for n in ((0.01, 0.03) if quick else (0.01, 0.02, 0.03))
             for d in (0.0, 0.01, 0.02) for f in (0.0, 0.6)]
    cells += [{"kind": "table", "noise": 0.02, "drift": d, "phi": 0.0, "reps": k, "sims": sims // 2}
              for d in (0.0, 0.02) for k in (3, 6)]
    return cells


def verdict(iops: np.ndarray) -> tuple[str, float]:
    """The project's verdict on the rounds so far: (stable|unstable|drifting, IOPS half-width)."""
    cols = interval_columns(rep_stats(iops), rep_stats(iops * 4096 / 1e6),
                            rep_stats(1e6 / iops))
    return stability(iops, cols["half_width_pct"], PCT).word, cols["iops_ci95"]


def until(cell: dict, values: np.ndarray) -> dict:
    done = drifting = spent = held = 0
    for v in values:
        n = PLANNED
        while True:
            word, half = verdict(v[:n])
            if word == "stable" or n == MAX_REPEAT:
                break
            n += 1
        spent += n
        drifting += word == "drifting"
        if word == "stable":
            done += 1
            held += abs(v[:n].mean() - 10_000) <= half
    sims = len(values)
    return {"certified": done / sims, "drifting": drifting / sims, "spent": spent / sims,
            "coverage": held / done if done else float("nan")}


def table_marks(cell: dict, values: np.ndarray) -> dict:
    """values: (sims, POINTS, reps); the first point drifts when the cell says so."""
    marked = np.zeros(values.shape[:2], dtype=bool)
    for i, table in enumerate(values):
        p = [trend(point).p for point in table]
        marked[i] = bh_adjust(p) < ALPHA
    return {"any": float(marked.any(axis=1).mean()), "first": float(marked[:, 0].mean())}


def run(cell: dict) -> dict:
    rng = np.random.default_rng(models.seed_of("stable", cell["kind"], cell["noise"],
                                               cell["drift"], cell["phi"], cell["reps"]))
    rounds = np.arange(cell["reps"])
    if cell["kind"] == "until":
        noise = models.ar1(rng, (cell["sims"], cell["reps"]), cell["phi"])
        values = 10_000 * (1 + cell["drift"] * rounds + cell["noise"] * noise)
        return {**cell, **until(cell, values)}
    noise = rng.standard_normal((cell["sims"], POINTS, cell["reps"]))
    values = 10_000 * (1 + cell["noise"] * noise)
    values[:, 0, :] += 10_000 * cell["drift"] * rounds
    return {**cell, **table_marks(cell, values)}


def table(results: list[dict]) -> str:
    lines = [("| noise (CV) | drift per round | φ | certified stable | named drifting | "
             "repetitions | certified intervals holding the mean |"),
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["kind"] != "until":
            continue
        cover = "–" if r["drift"] or r["coverage"] != r["coverage"] else f"{r['coverage']:.1%}"
        lines.append(f"| {r['noise']:.0%} | {r['drift']:.0%} | {r['phi']:g} | "
                     f"{r['certified']:.1%} | {r['drifting']:.1%} | {r['spent']:.2f} | {cover} |")
    lines += ["", (f"| the tables' drifting mark, {POINTS} points, CV 2% | repetitions | any "
              "point marked | the drifting point marked |"), "|---|---:|---:|---:|"]
    for r in results:
        if r["kind"] == "table":
            first = f"{r['first']:.1%}" if r["drift"] else "–"
            lines.append(f"| {'one point drifting 2%/round' if r['drift'] else 'all steady'} | "
                         f"{r['reps']} | {r['any']:.1%} | {first} |")
    return "\n".join(lines)
