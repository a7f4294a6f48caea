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


@dataclass(frozen=True)
class Change:
    """A mean against a reference mean: pct = value / reference - 1, in %. `spread_pct` is the
    repetitions' spread of that difference (the two sample stds combined, in % of the
    reference), NaN when a std is unknown (a single repetition, or a foreign JSON)."""
    value: float
    reference: float
    pct: float
    spread_pct: float

    @property
    def within_spread(self) -> bool | None:
        """The difference is no larger than the spread: not a measured effect (None: unknown)."""
        return None if math.isnan(self.spread_pct) else bool(abs(self.pct) <= self.spread_pct)


def change(value: float, value_std: float, reference: float, reference_std: float) -> Change:
    if not reference:
        return Change(value, reference, math.nan, math.nan)
    return Change(value, reference, (value / reference - 1) * 100,
                  math.hypot(value_std, reference_std) / reference * 100)


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
