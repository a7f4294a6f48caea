"""The simulated drives of bench/statistics: latencies binned as fio bins them, runs that differ
from run to run, histories with autocorrelated runs.

Latencies. A run's I/Os are drawn from a lognormal (median 60 µs, sigma 0.5: p99 192 µs) whose
level moves from repetition to repetition (`noise`, the sd of log level between repetitions) and
from results tree to results tree (`offset`, the sd of a tree's own level, shared by its
repetitions). The histogram of N I/Os is drawn in one step: a multinomial over fio's buckets
(stat.h: 64 per power of two, each keyed by its middle) with the lognormal's mass in each bucket,
which is the histogram N independent I/Os give, without drawing them one by one.

"bursty" adds a slow mode: 0.5% of I/Os on average are 10 times slower and arrive in bursts (a
Poisson number of bursts per run, each a geometric run of mean BURST I/Os), so the share of slow
I/Os itself changes from run to run (its CV is about 45% at 50,000 I/Os).

Truth: the percentile of the population over runs (every run's I/Os pooled, over infinitely
many runs): what a pooled percentile estimates.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from scipy import optimize, special

from analysis.history.calibration import ar1  # noqa: F401 - the simulations' AR(1) noise

MU = math.log(60_000.0)  # ns: median 60 µs
SIGMA_LAT = 0.5
SLOW_SHARE = 0.005
SLOW_FACTOR = 10.0
BURST = 25.0  # mean I/Os per burst of slow I/Os
IOS = 50_000  # I/Os per repetition (a 30 s run at ~1,700 IOPS; a quick-profile QD=1 run)

# fio's buckets up to 2^34 ns (17 s): lower edge, width, the value json+ keys it by
_IDX = np.arange(64 * 29)
_EB = np.maximum((_IDX >> 6) - 1, 0)
_BASE = 1 << (_EB + 6)
_K = _IDX % 64
LOWER = np.where(_IDX < 128, _IDX, _BASE + _K * (1 << _EB)).astype(np.float64)
WIDTH = np.where(_IDX < 128, 1, 1 << _EB).astype(np.float64)
VALUE = np.where(_IDX < 128, _IDX, (_BASE + (_K + 0.5) * (1 << _EB)).astype(np.int64))
_LOG_EDGES = np.log(np.append(np.maximum(LOWER, 1e-3), LOWER[-1] + WIDTH[-1]))


def seed_of(*key) -> int:
    """A cell's seed: the same cell draws the same numbers whatever ran before it."""
    return zlib.crc32(repr(key).encode())


def bucket_mass(mu: float, sigma: float = SIGMA_LAT) -> np.ndarray:
    """The share of a lognormal(mu, sigma)'s mass in each of fio's buckets."""
    cdf = special.ndtr((_LOG_EDGES - mu) / sigma)
    mass = np.diff(cdf)
    return mass / mass.sum()


def as_bins(counts: np.ndarray) -> dict[int, int]:
    nz = np.nonzero(counts)[0]
    return dict(zip(VALUE[nz].tolist(), counts[nz].tolist()))


def slow_ios(rng: np.random.Generator, ios: int) -> int:
    """How many of a run's I/Os fall in bursts of the slow mode (mean SLOW_SHARE of them)."""
    bursts = rng.poisson(ios * SLOW_SHARE / BURST)
    return int(min(ios, rng.geometric(1 / BURST, bursts).sum())) if bursts else 0


def rep_histogram(rng: np.random.Generator, level: float, model: str = "lognormal",
                  ios: int = IOS) -> np.ndarray:
    """One repetition's bucket counts at log level `level` (MU plus the run's offsets)."""
    if model == "lognormal":
        return rng.multinomial(ios, bucket_mass(level))
    slow = slow_ios(rng, ios)
    return (rng.multinomial(ios - slow, bucket_mass(level)) +
            rng.multinomial(slow, bucket_mass(level + math.log(SLOW_FACTOR))))


def mean_ns(counts: np.ndarray) -> float:
    """A repetition's mean latency, from its histogram (fio's own mean is of the raw samples:
    the two differ by a fraction of a bucket)."""
    return float((counts * VALUE).sum() / counts.sum())


def true_percentile(p: float, spread: float, model: str = "lognormal") -> float:
    """The p-th percentile (ns) of every run's I/Os pooled, runs' log levels ~ N(MU, spread)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    share = 0.0 if model == "lognormal" else SLOW_SHARE

    def above(x: float) -> float:
        z = (math.log(x) - MU - spread * nodes) / SIGMA_LAT
        slow = (math.log(x) - MU - math.log(SLOW_FACTOR) - spread * nodes) / SIGMA_LAT
        return float((weights * ((1 - share) * special.ndtr(-z) + share * special.ndtr(-slow)))
                     .sum())

    target = 1 - p / 100
    log_x = optimize.brentq(lambda lx: above(math.exp(lx)) - target, MU - 5, MU + 15, xtol=1e-10)
    return math.exp(log_x)
