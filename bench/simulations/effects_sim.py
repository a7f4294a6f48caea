"""The test for an effect that findings use (two points of one run: a mix against pure read, a
data pattern against random data, random against sequential: analysis.core.effects.effect,
Welch), and the gain rule of the peak search and the io_uring probe (analysis.core.stats.gains,
NOISE_SE). Normal repetitions, n a side; a false effect is one claimed where the two points are
the same, power is the share of 10% differences (higher on the second point) claimed. One
comparison each: a finding adjusts its several comparisons together (Benjamini-Hochberg), which
holds its false claims lower still.
"""

from __future__ import annotations

import numpy as np

from analysis.core.effects import change
from analysis.core.stats import gains
from bench.simulations import models


def grid(quick: bool) -> list[dict]:
    sims = 2000 if quick else 20000
    cells = [{"rule": "finding", "noise": s, "reps": n, "sims": sims}
             for s in (0.02, 0.05, 0.10) for n in (3, 6, 10)]
    cells += [{"rule": "gain", "noise": s, "reps": n, "sims": sims}
              for s in (0.02, 0.05, 0.10) for n in (2, 3, 6, 12)]
    return cells


def finding(a: np.ndarray, b: np.ndarray) -> bool:
    """Does the finding claim a difference between the two points?"""
    return change(b.mean(), b.std(ddof=1), a.mean(), a.std(ddof=1), b.size, a.size).significant


def gain(a: np.ndarray, b: np.ndarray) -> bool:
    """Does the rule count b as a gain over a?"""
    return gains(list(a), list(b), 5) is True


def run(cell: dict) -> dict:
    rng = np.random.default_rng(models.seed_of("effects", cell["rule"], cell["noise"],
                                               cell["reps"]))
    rule = finding if cell["rule"] == "finding" else gain
    shape = (cell["sims"], cell["reps"])
    out = {}
    for name, effect in (("false", 0.0), ("power", 0.10)):
        a = 100 * (1 + cell["noise"] * rng.standard_normal(shape))
        b = 100 * (1 + effect) * (1 + cell["noise"] * rng.standard_normal(shape))
        out[name] = float(np.mean([rule(x, y) for x, y in zip(a, b)]))
    return {**cell, **out}


def table(results: list[dict]) -> str:
    lines = []
    for rule, what in (("finding", "findings: a difference between two points of one run"),
                       ("gain", "gains (peak search, io_uring probe): a gain counted")):
        rows = [r for r in results if r["rule"] == rule]
        reps = sorted({r["reps"] for r in rows})
        lines += [f"| {what} | " + " | ".join(f"{n} v {n}" for n in reps) + " |",
                  "|---|" + "---:|" * len(reps)]
        by_noise: dict[float, dict] = {}
        for r in rows:
            by_noise.setdefault(r["noise"], {})[r["reps"]] = r
        first = next(iter(by_noise.values()))
        lines.append("| no difference: claimed (any noise) | " + " | ".join(
            f"{first[n]['false']:.1%}" for n in reps) + " |")
        for noise, by_n in sorted(by_noise.items()):
            lines.append(f"| 10% difference, noise {noise:.0%}: found | " + " | ".join(
                f"{by_n[n]['power']:.1%}" for n in reps) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()

