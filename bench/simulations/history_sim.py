"""The history's alarms (analysis.history.trends): the share of reports of an unchanged drive
that show any alarm, for 8 and 30 series of 8 to 52 runs with AR(1) noise (phi 0 to 0.8, 2%
marginal sd around 100; Student-t noise with 3 degrees of freedom too); and how often one
series' change is found: a 3 sigma step half-way, or a 10% drop (5 sigma) in the last 4 runs.

A report is judged by the project's rule (trends.report_steps). The p-values of every report's
series are computed together first (calibration.pvalues, Benjamini-Hochberg per report), and
report_steps is run on the reports where that finds an alarm: the others show none.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.core.effects import bh_adjust
from analysis.history import calibration, trends
from bench.simulations import models

NOISE = 2.0  # % of the level


def grid(quick: bool) -> list[dict]:
    reports = 200 if quick else 2000
    series = (8, 30)
    runs = (8, 26, 52) if quick else (8, 12, 26, 52)
    phis = (0.0, 0.6) if quick else (0.0, 0.3, 0.6, 0.8)
    cells = [{"kind": "unchanged", "series": m, "runs": n, "phi": f, "reports": reports}
             for m in series for n in runs for f in phis]
    cells += [{"kind": "unchanged-t3", "series": 8, "runs": n, "phi": 0.0, "reports": reports}
              for n in (12, 52)]
    cells += [{"kind": k, "series": 8, "runs": n, "phi": f, "reports": reports // 2}
              for k in ("step", "recent") for n in ((12, 52) if quick else (12, 26, 52))
              for f in ((0.0, 0.6) if quick else (0.0, 0.3, 0.6))]
    return cells


def candidates(x: np.ndarray) -> np.ndarray:
    """(reports, series): the series the Benjamini-Hochberg step of each report alarms."""
    reports, series, runs = x.shape
    p = calibration.pvalues(x.reshape(-1, runs)).p.reshape(reports, series)
    return bh_adjust(p, axis=-1) <= trends.ALPHA


def run(cell: dict) -> dict:
    rng = np.random.default_rng(models.seed_of("history", cell["kind"], cell["series"],
                                               cell["runs"], cell["phi"]))
    shape = (cell["reports"], cell["series"], cell["runs"])
    if cell["kind"] == "unchanged-t3":
        noise = rng.standard_t(3, shape) / math.sqrt(3)
    else:
        noise = models.ar1(rng, shape, cell["phi"])
    x = 100 + NOISE * noise
    n = cell["runs"]
    if cell["kind"] == "step":
        x[:, 0, n // 2:] += 3 * NOISE
    elif cell["kind"] == "recent":
        x[:, 0, n - 4:] *= 0.9
    alarmed = candidates(x)
    shown = np.zeros(alarmed.shape, dtype=bool)
    for r in np.nonzero(alarmed.any(axis=1))[0]:
        shown[r] = [bool(s) for s in trends.report_steps([list(v) for v in x[r]])]
    if cell["kind"].startswith("unchanged"):
        rate = float(shown.any(axis=1).mean())
    else:
        rate = float(shown[:, 0].mean())
    return {**cell, "rate": rate}


def table(results: list[dict]) -> str:
    phis = sorted({r["phi"] for r in results if r["kind"] == "unchanged"})
    lines = ["| unchanged drive: reports with any alarm | " + " | ".join(
        f"φ = {f:g}" for f in phis) + " |", "|---|" + "---:|" * len(phis)]
    rows: dict[tuple, dict] = {}
    for r in results:
        if r["kind"] == "unchanged":
            rows.setdefault((r["series"], r["runs"]), {})[r["phi"]] = r["rate"]
    for (m, n), by_phi in sorted(rows.items()):
        lines.append(f"| {n} runs × {m} series | " +
                     " | ".join(f"{by_phi.get(f, float('nan')):.1%}" for f in phis) + " |")
    heavy = [r for r in results if r["kind"] == "unchanged-t3"]
    if heavy:
        lines.append("| Student-t (3 dof) noise, 8 series: " + ", ".join(
            f"{r['runs']} runs {r['rate']:.1%}" for r in sorted(heavy, key=lambda r: r["runs"]))
            + " |" + " |" * (len(phis) - 1))
    for kind, what in (("step", "3σ step half-way found"),
                       ("recent", "10% drop in the last 4 runs (5σ) found")):
        found = [r for r in results if r["kind"] == kind]
        kphis = sorted({r["phi"] for r in found})
        lines += ["", f"| {what}, 8 series | " + " | ".join(f"φ = {f:g}" for f in kphis) + " |",
                  "|---|" + "---:|" * len(kphis)]
        by_n: dict[int, dict] = {}
        for r in found:
            by_n.setdefault(r["runs"], {})[r["phi"]] = r["rate"]
        for n, by_phi in sorted(by_n.items()):
            lines.append(f"| {n} runs | " + " | ".join(f"{by_phi[f]:.1%}" for f in kphis) + " |")
    return "\n".join(lines)
