"""Regimes (analysis.core.regimes.split_regimes): a case's repetitions split by the level of
their per-second write rate. Three repetitions run one after another, each `seconds` long; a
second's rate is the repetition's level times its run offset (normal, sd OFFSET: real runs
differ by a few %) times 1 + noise x AR(1) with phi (clipped at 0, as a rate is).

Rates:
* one level: the case is split (more than one regime, or a cliff) where it held one level: the
  false-alarm rate, at most 5% by the rule's calibration;
* 2x split: two repetitions at L and one at L/2, or one at L and two at L/2, each order in turn
  (six patterns): the case is split (not one level), and the regimes found are exactly these,
  with the right repetitions (power);
* cliff: the middle repetition falls to L/2 halfway through (the one before at L, the one after
  at L/2): the cliff is found in it, within 2 s of where it is;
* crossed: the same at 3 x 4 s, the middle repetition falling after its 1st, 2nd or 3rd second
  in turn (too short for the burst rule: the step rule's case): found at the right second.
"""

from __future__ import annotations

import numpy as np

from analysis.core.regimes import split_regimes
from bench.simulations import models

OFFSET = 0.03
REPS = 3
LEVEL = 200.0
# (levels of the three repetitions as fractions of LEVEL), every order of a 2x split
PATTERNS = ((1, 1, .5), (1, .5, 1), (.5, 1, 1), (1, .5, .5), (.5, 1, .5), (.5, .5, 1))


def grid(quick: bool) -> list[dict]:
    sims = 1000 if quick else 4000
    noises = (0.1, 0.3) if quick else (0.1, 0.15, 0.2, 0.3)
    phis = (0.0, 0.3, 0.6)
    cells = [{"kind": kind, "noise": c, "phi": f, "seconds": s, "sims": sims}
             for kind in ("one level", "2x split") for s in (4, 30)
             for c in noises for f in phis]
    cells += [{"kind": "cliff", "noise": c, "phi": f, "seconds": 30, "sims": sims // 4}
              for c in noises for f in phis]
    # a step in 4 s needs quiet seconds: 5% too (a throttled or quiet drive's noise)
    cells += [{"kind": "crossed", "noise": c, "phi": f, "seconds": 4, "sims": sims // 4}
              for c in (0.05, *noises) for f in phis]
    return cells


def seconds_at(rng: np.random.Generator, cell: dict, levels: np.ndarray) -> np.ndarray:
    """(sims, REPS, seconds) per-second MB/s at each repetition's level (sims, REPS or seconds)."""
    shape = (cell["sims"], REPS, cell["seconds"])
    offset = 1 + OFFSET * rng.standard_normal(shape[:2] + (1,))
    noise = 1 + cell["noise"] * models.ar1(rng, shape, cell["phi"])
    return np.maximum(0.0, levels * offset * noise)


def run(cell: dict) -> dict:
    rng = np.random.default_rng(models.seed_of("regimes", cell["kind"], cell["noise"],
                                               cell["phi"], cell["seconds"]))
    sims, n = cell["sims"], cell["seconds"]
    if cell["kind"] == "one level":
        x = seconds_at(rng, cell, np.full((sims, REPS, 1), LEVEL))
        return {**cell, "rate": float(np.mean([not split_regimes(list(s)).one_level
                                               for s in x]))}
    if cell["kind"] == "2x split":
        pattern = np.array([PATTERNS[i % len(PATTERNS)] for i in range(sims)])
        x = seconds_at(rng, cell, LEVEL * pattern[:, :, None])
        found = [split_regimes(list(s)) for s in x]
        return {**cell, "split": float(np.mean([not r.one_level for r in found])),
                "rate": float(np.mean([_partition(r) == _truth(p)
                                       for r, p in zip(found, pattern)]))}
    # the cliff halfway through a long repetition; a short one's after each second in turn
    at = np.full(sims, n // 2) if cell["kind"] == "cliff" else 1 + np.arange(sims) % (n - 1)
    slack = 2 if cell["kind"] == "cliff" else 0
    levels = np.ones((sims, REPS, n))
    levels[:, 1, :] = np.where(np.arange(n)[None, :] >= at[:, None], 0.5, 1.0)
    levels[:, 2, :] = 0.5
    x = seconds_at(rng, cell, LEVEL * levels)
    found = [any(rep == 1 and abs(t - a) <= slack for rep, t in split_regimes(list(s)).cliffs)
             for s, a in zip(x, at)]
    return {**cell, "rate": float(np.mean(found))}


def _partition(regimes) -> set:
    return {(g.reps, g.cliff is None) for g in regimes.regimes}


def _truth(pattern) -> set:
    return {(tuple(int(i) for i in np.flatnonzero(pattern == v)), True) for v in set(pattern)}


def table(results: list[dict]) -> str:
    lines = [("| per-second noise (CV) | AR(1) φ | one level: split, 3 × 4 s | 3 × 30 s | "
              "2× split: split, 3 × 4 s | right repetitions, 3 × 4 s | right repetitions, "
              "3 × 30 s | a cliff mid-repetition found, 3 × 30 s | a crossing found at its "
              "second, 3 × 4 s |"),
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by = {(r["kind"], r["noise"], r["phi"], r["seconds"]): r for r in results}
    wanted = (("one level", 4, "rate"), ("one level", 30, "rate"), ("2x split", 4, "split"),
              ("2x split", 4, "rate"), ("2x split", 30, "rate"), ("cliff", 30, "rate"),
              ("crossed", 4, "rate"))
    for c, f in sorted({(r["noise"], r["phi"]) for r in results}):
        cells = [by.get((k, c, f, s), {}).get(key) for k, s, key in wanted]
        lines.append(f"| {c:.0%} | {f:g} | " + " | ".join(
            "–" if v is None else f"{v:.1%}" for v in cells) + " |")
    return "\n".join(lines)
