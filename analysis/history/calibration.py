"""The p-values of the history's alarms, calibrated to each series' own length and autocorrelation.

A series of n runs is judged by two statistics (analysis.history.trends): the CUSUM step
statistic (a level change anywhere, MIN_RUNS runs either side) and the recent-change statistic
(the last k runs against those before, k in RECENT, the largest of the k's standardised
differences). Their distribution under "no change" depends on n and on how much consecutive runs
resemble each other (lag-1 autocorrelation phi): the Kolmogorov limit the CUSUM was referred to
before is a limit for long series, and an estimate of phi from a few runs is biased low, so a
short, autocorrelated series raised alarms 4-11 times too often.

The null is simulated instead (a parametric bootstrap): for each phi of PHI_GRID, DRAWS
stationary AR(1) series of length n, put through the same statistics (and the same estimate of
phi) as the data. A series' p-value is the largest over the phi the data cannot rule out:

    C = {phi in PHI_GRID : phi_hat >= the PHI_LEVEL quantile of phi_hat under phi}

(a one-sided confidence set for phi at 1 - PHI_LEVEL: only underestimating phi raises false
alarms; PHI_LEVEL is small against a report's thresholds, 0.05 / 30 and up, because a series
judged at a phi below its own can get a p-value far too small: at 1 - 0.01 the rate at
phi = 0.8 was 1.5-1.9 times the stated one), and at each phi the two statistics' p-values are combined as their minimum, itself
referred to the simulated minimum, so one p-value per series holds both tests. A report's
Benjamini-Hochberg step needs tails near 0.05 / 30: with fewer draws than DRAWS a table's own
Monte Carlo error moved the false-alarm rate by half of itself. Deterministic: the simulations
are seeded per n, and cached (about a second per length of series).

What it covers: series whose runs are a level plus AR(1) noise with phi up to 0.8 (the grid
goes to 0.9, a margin: phi at the grid's top is where its estimate errs most), 8-52 runs, any
noise scale (the statistics are scale-free). What it does not: a stronger dependence than
phi = 0.8 (a slow wander over weeks looks like a step), or noise whose tails are much heavier
than the simulation's normal ones (bench/statistics measures Student-t with 3 degrees of
freedom too).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

PHI_GRID = tuple(round(0.1 * i, 1) for i in range(10))  # 0.0 .. 0.9: a margin over 0.8
DRAWS = 20000  # simulated series per phi: tails known to about ±20% at p = 0.0017 (0.05 / 30)
SUB_DRAWS = 2000  # for the further steps of a series already alarmed
PHI_LEVEL = 0.003  # phi in the confidence set unless phi_hat is below its 0.3% point under it
RECENT = (1, 2, 3, 4)  # the last k runs against those before
MIN_BEFORE = 4  # runs before the last k, at least
CLIP = 3.0  # runs are clipped this many robust sds from the median of those before
SEED = 20260


@dataclass(frozen=True)
class Stats:
    """The statistics of each row of a (series x runs) array."""
    step: np.ndarray  # the CUSUM statistic (analysis.history.trends.scan)
    recent: np.ndarray  # the largest standardised difference of the last k runs
    k: np.ndarray  # the k that gave it (0 where the series is too short)
    phi: np.ndarray  # lag-1 autocorrelation of the residuals about the two levels


def recent_stat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """max over k of |mean(last k) - mean(before)| / (sd(before) sqrt(1/k + 1/(n - k))), on
    runs clipped to the median of the runs before +- CLIP robust sds (1.4826 MAD): one
    outlying run of heavy-tailed noise then weighs no more than a run CLIP sds off (Student-t
    noise with 3 degrees of freedom tripled the alarms of the unclipped statistic), while a
    real change of the last runs still moves all of them."""
    m, n = x.shape
    best, best_k = np.zeros(m), np.zeros(m, dtype=int)
    for k in RECENT:
        if n - k < MIN_BEFORE:
            break
        med = np.median(x[:, :n - k], axis=1, keepdims=True)
        mad = 1.4826 * np.median(np.abs(x[:, :n - k] - med), axis=1, keepdims=True)
        y = np.clip(x, med - CLIP * mad, med + CLIP * mad)
        before, last = y[:, :n - k], y[:, n - k:]
        sd = before.std(axis=1, ddof=1)
        diff = np.abs(last.mean(axis=1) - before.mean(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(sd > 0, diff / (sd * math.sqrt(1 / k + 1 / (n - k))),
                         np.where(diff > 0, np.inf, 0.0))
        better = z > best
        best, best_k = np.where(better, z, best), np.where(better, k, best_k)
    return best, best_k


def statistics(x: np.ndarray) -> Stats:
    from analysis.history.trends import scan  # the step test's own statistic, one definition

    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    s = scan(x)
    recent, k = recent_stat(x)
    return Stats(s.stat, recent, k, s.phi_raw)


def ar1(rng: np.random.Generator, shape: tuple[int, ...], phi: float) -> np.ndarray:
    """Stationary AR(1) noise with unit marginal sd along the last axis."""
    e = rng.standard_normal(shape)
    x = np.empty(shape)
    x[..., 0] = e[..., 0]
    scale = math.sqrt(1 - phi * phi)
    for t in range(1, shape[-1]):
        x[..., t] = phi * x[..., t - 1] + scale * e[..., t]
    return x


@dataclass(frozen=True)
class Null:
    step: np.ndarray  # (phi, draws), each row sorted
    recent: np.ndarray
    min_p: np.ndarray  # the smaller of the two p-values of each draw, sorted
    phi_hat: np.ndarray  # (phi, draws): phi's estimate in each draw, sorted


def _upper_p(null_sorted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """P(null >= observed) with the observed value counted: (1 + #) / (draws + 1), per row of
    null (phi) against every observed value: (phi, values)."""
    draws = null_sorted.shape[-1]
    above = np.stack([draws - np.searchsorted(row, observed, side="left")
                      for row in null_sorted])
    return (1 + above) / (draws + 1)


@functools.lru_cache(maxsize=128)
def null(n: int, draws: int = DRAWS) -> Null:
    """The simulated null of series of n runs, for each phi of PHI_GRID."""
    rng = np.random.default_rng([SEED, n, draws])
    steps, recents, min_ps, phis = [], [], [], []
    for phi in PHI_GRID:
        s = statistics(ar1(rng, (draws, n), phi))
        step, recent = np.sort(s.step), np.sort(s.recent)
        p_step = _upper_p(step[None, :], s.step)[0]
        p_recent = _upper_p(recent[None, :], s.recent)[0]
        steps.append(step)
        recents.append(recent)
        min_ps.append(np.sort(np.minimum(p_step, p_recent)))
        phis.append(np.sort(s.phi))
    return Null(np.array(steps), np.array(recents), np.array(min_ps), np.array(phis))


@dataclass(frozen=True)
class Calibrated:
    """Per series: the p-value of "no change" (both tests), and each test's own."""
    p: np.ndarray
    p_step: np.ndarray
    p_recent: np.ndarray
    k: np.ndarray  # the recent test's k


def pvalues(x: np.ndarray, draws: int = DRAWS) -> Calibrated:
    """The calibrated p-values of every row of x (rows of one length n >= 2 x MIN_RUNS); fewer
    `draws` for the tests after a report's first (the further steps of an alarmed series),
    whose cut-off is the report's and needs no finer tail."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    s = statistics(x)
    table = null(x.shape[1], draws)
    p_step = _upper_p(table.step, s.step)  # (phi, series)
    p_recent = _upper_p(table.recent, s.recent)
    observed = np.minimum(p_step, p_recent)
    draws = table.min_p.shape[-1]
    p = np.stack([(1 + np.searchsorted(row, obs, side="right")) / (draws + 1)
                  for row, obs in zip(table.min_p, observed)])
    # phi the data cannot rule out: phi_hat at or above its PHI_LEVEL point under that phi
    low = np.quantile(table.phi_hat, PHI_LEVEL, axis=1)
    allowed = s.phi[None, :] >= low[:, None]
    allowed[0] |= ~allowed.any(axis=0)  # below even phi = 0's: judged at phi = 0

    def worst(v: np.ndarray) -> np.ndarray:
        return np.where(allowed, v, 0.0).max(axis=0)

    return Calibrated(np.minimum(worst(p), 1.0), worst(p_step), worst(p_recent), s.k)
