"""Statistics over repetitions and over fio's latency histograms.

Two kinds of numbers come out of a set of repetitions:

* per-run scalars (IOPS, bandwidth, mean latency): summarised by ``rep_stats``
  as mean, sample standard deviation, n and coefficient of variation;
* latency percentiles: never averaged. The json+ histogram bins of all runs are
  summed (``merge_bins``) and the percentiles are read off the merged histogram
  with fio's own algorithm (``percentiles_from_bins``), so a percentile over
  repetitions is exact to fio's bin resolution.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

STANDARD_PCTS = (50.0, 95.0, 99.0, 99.9)
# The table column of each standard percentile (the names in docs/outputs.md).
PCT_COLUMNS = dict(zip(STANDARD_PCTS, ["lat_p50_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us"]))

# fio's histogram layout (stat.h): FIO_IO_U_PLAT_BITS=6, 64 buckets per group.
PLAT_BITS = 6


def rep_stats(values: Iterable[float]) -> dict:
    """Mean, sample standard deviation (ddof=1), n and CV of per-run values.

    With fewer than two values the spread is unknown, so ``std`` and ``cv`` are
    NaN (not 0.0: one run says nothing about stability, and a 0 would pass a
    "CV above 5%" check by accident). ``cv`` is also NaN when the mean is 0.
    NaN inputs are kept, so they propagate: a missing value is not silently
    dropped from n.
    """
    data = [float(v) for v in values]
    n = len(data)
    mean = math.fsum(data) / n if n else math.nan
    if n < 2:
        return {"mean": mean, "std": math.nan, "n": n, "cv": math.nan}
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / (n - 1))
    cv = std / mean if mean != 0 else math.nan
    return {"mean": mean, "std": std, "n": n, "cv": cv}


# A difference between two means counts when it is larger than this many combined standard
# errors (the peak search's moves, io_uring's options). With the standard errors estimated from
# the few repetitions a decision rests on, that is not the normal 2.3% one-sided: a false gain
# is counted in 9.1%, 5.9%, 3.7% and 2.9% of comparisons at 2, 3, 6 and 12 repetitions a side
# (bench/statistics, 20,000 seeded pairs of normal repetitions each). The searches re-measure
# an undecided comparison, and their own rates are stated where they are tested
# (tests/test_peak_search.py, tests/test_uring_options.py).
NOISE_SE = 2


def mean_se(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (inf with fewer than two values: nothing is known)."""
    s = rep_stats(values)
    return s["mean"], (s["std"] / math.sqrt(s["n"]) if s["n"] >= 2 else math.inf)


def gains(base: Iterable[float], other: Iterable[float], gain_pct: float,
          last: bool = False) -> bool | None:
    """Is `other`'s mean higher than `base`'s? True when by more than NOISE_SE combined standard
    errors; False when surely by less than gain_pct % of base's (or, when `last`, not shown);
    None when it cannot tell yet: measure both again."""
    (mb, sb), (mo, so) = mean_se(base), mean_se(other)
    se = math.hypot(sb, so)
    if mo - mb > NOISE_SE * se:
        return True
    if last or mo - mb + NOISE_SE * se < mb * gain_pct / 100:
        return False
    return None


def merge_bins(list_of_bins: Iterable[Mapping[int, int]]) -> dict:
    """Sum json+ histograms ({latency ns: count}); keys come out ascending."""
    merged: dict[int, int] = {}
    for bins in list_of_bins:
        for value, count in bins.items():
            merged[int(value)] = merged.get(int(value), 0) + int(count)
    return dict(sorted(merged.items()))


def plat_idx_to_val(idx: int, bits: int = PLAT_BITS) -> int:
    """The latency that fio reports for histogram bucket ``idx``.

    Mirrors fio stat.c plat_idx_to_val(): the first 2*2^bits buckets are one
    unit wide; after that each group of 2^bits buckets doubles in width and a
    bucket is represented by the middle of its range (truncated to an integer).
    json+ ``bins`` keys and printed percentiles are both this value.
    """
    val = 1 << bits
    if idx < (val << 1):
        return idx
    error_bits = (idx >> bits) - 1
    base = 1 << (error_bits + bits)
    k = idx % val
    return int(base + (k + 0.5) * (1 << error_bits))


def bucket_width_ns(value_ns: float, bits: int = PLAT_BITS) -> int:
    """The width (ns) of fio's histogram bucket holding ``value_ns``: the resolution of any
    percentile fio or json+ bins give there.

    Mirrors fio stat.c plat_val_to_idx(): values whose most significant bit is at most ``bits``
    are their own bucket (1 ns wide); above, the lowest msb - bits bits are dropped, so a bucket
    is 2^(msb - bits) ns wide: 1/64 to 1/128 of the value (0.8-1.6%).
    """
    msb = max(int(value_ns), 1).bit_length() - 1
    return 1 if msb <= bits else 1 << (msb - bits)


def percentiles_from_bins(bins: Mapping[int, int], pcts: Iterable[float] = STANDARD_PCTS) -> dict:
    """Percentiles of a json+ histogram, computed as fio computes them.

    fio stat.c calc_clat_percentiles() walks the buckets in ascending order,
    keeps a running count ``sum``, and for each percentile p (ascending) takes
    the first bucket where ``sum >= p / 100 * nr``. The value reported is
    plat_idx_to_val(bucket), which is also the bucket's json+ key, so walking
    the sparse {value: count} dict gives the same answer (an empty bucket
    cannot meet a threshold that the bucket before it did not).

    Two details decide bit-exact agreement:
    * ``nr`` is the sample count N of the latency stat. N equals the sum of the
      bins in every fio output checked (see tests), and for merged histograms
      the sum is the only N there is, so nr = sum(bins).
    * the threshold is evaluated exactly (rational arithmetic on the double p).
      fio's source writes ``(long double) p / 100.0 * nr``, but the shipped
      binary is built with -ffast-math: Debian's fio 3.33 computes
      ``p * (nr * 0.01L)`` in x87 extended precision (seen in its disassembly),
      which equals the exact result for every N tried (all N <= 200000 and 10^5
      random N up to 10^10, 24 percentiles). Plain double arithmetic, or the
      source formula taken literally, is off by one sample in thousands of
      those cases (e.g. p=60, N=25; p=99.95, N=2000), which moves a percentile
      by a bucket; the real-fio tests include such cases.

    Returns {p: value} in the order of ``pcts``; an empty dict for empty bins.
    """
    wanted = [float(p) for p in pcts]
    for p in wanted:
        if not 0.0 < p <= 100.0:
            raise ValueError(f"percentile {p} outside (0, 100]")
    items = sorted((int(v), int(c)) for v, c in bins.items())
    nr = sum(c for _, c in items)
    if nr == 0 or not wanted:
        return {}
    order = sorted(set(wanted))
    # sum >= p/100*nr  <=>  100*sum >= p*nr, with p as the exact binary value
    # of the double (Fraction(float) is exact).
    thresholds = [Fraction(p) * nr for p in order]
    found: dict[float, float] = {}
    j = 0
    cum = 0
    for value, count in items:
        cum += count
        while j < len(order) and 100 * cum >= thresholds[j]:
            found[order[j]] = float(value)
            j += 1
        if j == len(order):
            break
    return {p: found[p] for p in wanted if p in found}


# --- intervals ----------------------------------------------------------------------------------
CONFIDENCE = 0.95
# A percentile with fewer I/Os above it than this is not quoted as a number: its value rests on
# a handful of the slowest I/Os, and the next run may move it by a histogram bucket or more.
MIN_TAIL_IOS = 100


def t_half_width(std: float, n: int, confidence: float = CONFIDENCE) -> float:
    """Half-width of the t-based confidence interval of a mean of n runs: t(1-a/2, n-1) s / sqrt(n).

    The repetitions are the independent units (each a fresh fio run), so the mean of n of them
    has n - 1 degrees of freedom: with 3 repetitions t = 4.30, with 2 it is 12.7. A CV alone says
    nothing about how well the mean is known; this does. NaN with fewer than two values."""
    # scipy.special's inverse of Student's t CDF: the same quantile as scipy.stats.t.ppf, without
    # importing scipy.stats (0.8 s, longer than the rest of a section's analysis).
    from scipy.special import stdtrit

    if n < 2 or math.isnan(std):
        return math.nan
    return float(stdtrit(n - 1, 0.5 + confidence / 2) * std / math.sqrt(n))


def interval_columns(iops: dict, bw: dict, lat: dict) -> dict:
    """The 95% half-widths of the three means (rep_stats of IOPS, MB/s, mean latency), and the
    widest relative to its mean (in %): above 5 marks a point unstable, and --until-stable
    reruns it (analysis.run.stability)."""
    halves = {name: t_half_width(s["std"], s["n"])
              for name, s in (("iops_ci95", iops), ("bw_MBps_ci95", bw), ("lat_us_ci95", lat))}
    rel = [h / s["mean"] * 100 for h, s in zip(halves.values(), (iops, bw, lat))
           if not math.isnan(h) and s["mean"]]
    return {**halves, "half_width_pct": max(rel) if rel else math.nan}


def tail_ios(total: int, pct: float) -> int:
    """How many of `total` I/Os lie above the p-th percentile: what the percentile rests on."""
    return math.floor(total * (100.0 - pct) / 100.0 + 1e-9)


@dataclass(frozen=True)
class TailInterval:
    """A pooled percentile (fio's algorithm on the merged bins) with its 95% interval, in ns.

    `low`/`high` hold both the spread between repetitions (`log_sd`, the sd of the repetitions'
    own log percentiles) and which I/Os happened to be slow (order statistics of the pooled
    I/Os); `high` is NaN where the interval is one-sided (too few I/Os above it, under about 4,
    for even the slowest I/O to bound it: the percentile is at least `low`). `tail` is the number of
    I/Os above the percentile; `quotable` is False under MIN_TAIL_IOS."""
    pct: float
    value: float
    low: float
    high: float
    tail: int
    total: int
    log_sd: float = math.nan  # sd of the repetitions' log percentiles (NaN with one)
    reps: int = 1

    @property
    def quotable(self) -> bool:
        return self.tail >= MIN_TAIL_IOS

    @property
    def one_sided(self) -> bool:
        return math.isnan(self.high)


def _order_statistic(cum, values, k: float) -> float:
    """The k-th smallest I/O (1-based) of a histogram given as cumulative counts."""
    import numpy as np

    i = int(np.searchsorted(cum, max(k, 1.0), side="left"))
    return float(values[min(i, len(values) - 1)])


def tail_intervals(bins_per_rep: list[Mapping[int, int]], pcts: Iterable[float],
                   confidence: float = CONFIDENCE) -> dict[float, TailInterval]:
    """The pooled percentiles of a case's repetitions with a 95% interval that covers the spread
    between runs.

    Two parts, and the interval is the wider of them on each side:

    1. Between repetitions, on the log scale: each repetition's own percentile (fio's algorithm
       on its bins), their sd s of log values, and log(pooled) +- t(0.975, n - 1) s / sqrt(n).
       The repetitions are the independent units, as for a mean: with 3 of them t = 4.30, which
       is what makes the interval hold when runs differ (a bootstrap over 3 runs can show no
       spread wider than theirs, and covered 76% where runs moved 10%: bench/statistics).
    2. Within the pooled I/Os (distribution-free): the number of I/Os under the true percentile
       is binomial(N, p), so the k_lo-th and k_hi-th smallest I/Os bound it, k from the
       binomial's 2.5% and 97.5% points. This is the whole interval with one repetition, and the
       floor when the repetitions happen to agree. Where k_hi lies past the slowest I/O (fewer
       than about 4 I/Os above the percentile: with 3.7 expected above it, even the slowest
       misses it 2.5% of the time) nothing bounds it from above: the interval is one-sided, at
       least the k-th smallest I/O at the binomial's 5% point (`high` NaN).

    The interval is then widened from fio's bucket values to their buckets' edges: a bucket
    stands for any latency within half its width (0.4-0.8%). Deterministic: no random draws.

    Returns {p: TailInterval} for every p with at least one I/O above it; {} without bins.
    """
    import numpy as np
    from scipy.special import bdtrik, stdtrit

    reps = [b for b in bins_per_rep if b]
    if not reps or len(reps) != len(bins_per_rep):
        return {}
    merged = merge_bins(reps)
    values = np.array(list(merged), dtype=np.float64)
    cum = np.cumsum(np.array(list(merged.values()), dtype=np.float64))
    total = int(cum[-1])
    pooled = percentiles_from_bins(merged, pcts)
    per_rep = [percentiles_from_bins(b, list(pooled)) for b in reps]
    alpha = 1.0 - confidence
    out = {}
    for p, value in pooled.items():
        tail = tail_ios(total, p)
        if tail < 1:
            continue
        q = p / 100.0
        k_hi = math.ceil(float(bdtrik(1 - alpha / 2, total, q))) + 1
        one_sided = k_hi > total
        k_lo = math.floor(float(bdtrik(alpha if one_sided else alpha / 2, total, q)))
        low = _order_statistic(cum, values, k_lo)
        high = math.nan if one_sided else _order_statistic(cum, values, k_hi)
        logs = [math.log(r[p]) for r in per_rep if r.get(p, 0) > 0]
        log_sd = math.nan
        if len(logs) >= 2 and len(logs) == len(reps):
            log_sd = float(np.std(logs, ddof=1))
            t = float(stdtrit(len(logs) - 1, 1 - (alpha if one_sided else alpha / 2)))
            half = t * log_sd / math.sqrt(len(logs))
            low, high = min(low, value * math.exp(-half)), max(high, value * math.exp(half))
        if one_sided:
            low = min(low, value)
            out[p] = TailInterval(p, value, low - bucket_width_ns(low) / 2, math.nan, tail,
                                  total, log_sd, len(reps))
            continue
        low, high = min(low, value), max(high, value)
        # From bucket values to the latencies they stand for: a bucket of width w holds anything
        # within w/2 of its value, and the true percentile may lie anywhere in it.
        out[p] = TailInterval(p, value, low - bucket_width_ns(low) / 2,
                              high + bucket_width_ns(high) / 2, tail, total, log_sd, len(reps))
    return out


# The most repetitions a target's advice names: past it the measured value sits on the target,
# and no practical number of runs would tell which side it is on.
MOST_REPETITIONS = 100


def repetitions_to_clear(std: float, n: int, gap: float, most: int = MOST_REPETITIONS) -> int | None:
    """How many repetitions in all would likely make a mean's 95% interval clear a target `gap`
    away from it, if the next repetitions spread as these `n` did (sample std `std`): the
    smallest N > n with t_half_width(std, N) < |gap|. None when even `most` would not (the mean
    sits on the target) or nothing is known of the spread (std NaN: one repetition).

    >>> repetitions_to_clear(std=10.0, n=3, gap=8.0)   # 3 runs: ±24.8; 8: ±8.36; 9: ±7.69
    9
    >>> repetitions_to_clear(std=10.0, n=3, gap=0.5) is None
    True
    """
    gap = abs(gap)
    if math.isnan(std) or n < 2 or gap == 0:
        return None
    if std == 0:
        return n + 1
    for total in range(n + 1, most + 1):
        if t_half_width(std, total) < gap:
            return total
    return None


def batch_interval(values: Iterable[float], batches: int = 5) -> dict:
    """The mean of a per-second series and its 95% interval by batch means: the series is cut
    into `batches` equal stretches (the last seconds that do not fill one are left out) and the
    t-interval is taken over their means, which are nearly independent where the seconds are not
    (a drive's per-second bandwidth is autocorrelated: a t over the seconds themselves would be
    too narrow). Returns rep_stats of the batch means plus `ci95` (t_half_width, NaN under two
    batches), `batch_s` (seconds per batch) and `seconds` (all of the series).

    >>> r = batch_interval([100, 102, 98, 101, 99, 100, 103, 97, 100, 100], batches=5)
    >>> r["mean"], r["n"], r["batch_s"]
    (100.0, 5, 2)
    """
    data = [float(v) for v in values]
    size = len(data) // batches if batches > 0 else 0
    if size < 1:
        means = [math.fsum(data) / len(data)] if data else []
        size = len(data)
    else:
        means = [math.fsum(data[i * size:(i + 1) * size]) / size for i in range(batches)]
    s = rep_stats(means)
    return {**s, "ci95": t_half_width(s["std"], s["n"]), "batch_s": size, "seconds": len(data)}
