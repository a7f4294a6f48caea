"""The arithmetic of a sweep: a metric measured at increasing values of one parameter (block
size, queue depth). Plain functions of plain lists, so each rule can be checked on its own.

Every function takes the points in sweep order (x ascending) and their means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

from analysis.core.stats import bucket_width_ns


def step_changes(values: list[float]) -> list[float]:
    """% change of each point from the one before; NaN for the first."""
    return [math.nan] + [(b / a - 1) * 100 if a else math.nan for a, b in pairwise(values)]


def pct_of_peak(values: list[float], peak: float | None = None) -> list[float]:
    """Each value as % of the peak: the values' own maximum, or a peak measured beyond them (§5's
    peak search, with more jobs or depth than the sweep)."""
    peak = max(values) if peak is None else peak
    return [v / peak * 100 if peak else math.nan for v in values]


def first_reaching(xs: list, values: list[float], fraction: float = 0.9,
                   peak: float | None = None):
    """The smallest x whose value reaches `fraction` of the peak (the values' own maximum, or
    one given); None when none does (a peak measured beyond the sweep)."""
    peak = max(values) if peak is None else peak
    return next((x for x, v in zip(xs, values) if v >= fraction * peak), None)


@dataclass(frozen=True)
class Knee:
    x: int  # the depth (or size) where the curve turns
    previous: int  # the point before it
    gain_pct: float  # throughput gained by the step from `previous` to `x`
    latency_growth_pct: float  # mean latency added by that step


# The knee's defaults (qd_sweep's --knee-gain and --knee-latency change them per run)
KNEE_GAIN_PCT = 5
KNEE_LATENCY_PCT = 20


def find_knee(xs: list, throughput: list[float], latency: list[float],
              max_gain_pct: float = KNEE_GAIN_PCT,
              min_latency_growth_pct: float = KNEE_LATENCY_PCT) -> Knee | None:
    """The first step that buys less than `max_gain_pct` % throughput while mean latency grows
    more than `min_latency_growth_pct` %: past it, more I/Os in flight only queue. None when no
    step meets both (the curve is still climbing, or latency does not pay for it)."""
    gains, growths = step_changes(throughput), step_changes(latency)
    for i in range(1, len(xs)):
        if gains[i] < max_gain_pct and growths[i] > min_latency_growth_pct:
            return Knee(xs[i], xs[i - 1], gains[i], growths[i])
    return None


def slo_point(xs: list, p99_us: list[float], slo_us: float):
    """The deepest x before the first point whose p99 misses the objective, or None when the
    first point already misses it. Points past a miss that meet it again (p99 is not always
    monotonic in depth) do not count: the objective is not met all the way to them."""
    deepest = None
    for x, p in zip(xs, p99_us):
        if math.isnan(p) or p > slo_us:
            break
        deepest = x
    return deepest


def latency_falls(xs: list, lat_us: list[float]) -> list:
    """(x before, x, value before, value) for each step where a latency percentile falls by
    more than one bucket of fio's histogram (its resolution) as x grows: it is not monotonic."""
    return [(xa, xb, a, b) for (xa, a), (xb, b) in pairwise(zip(xs, lat_us))
            if a - b > bucket_width_ns(a * 1000) / 1000]


def met_again(xs: list, p99_us: list[float], slo_us: float) -> list:
    """(x, p99) of the points past the first miss whose p99 meets the objective again."""
    first_miss = next((i for i, p in enumerate(p99_us) if math.isnan(p) or p > slo_us), None)
    if first_miss is None:
        return []
    return [(x, p) for x, p in zip(xs[first_miss + 1:], p99_us[first_miss + 1:]) if p <= slo_us]


def growth_per_doubling(xs: list[int], values: list[float]) -> float:
    """The factor a value grows by per doubling of x, from the first point to the last
    (geometric mean over the doublings between them)."""
    doublings = math.log2(xs[-1] / xs[0])
    return (values[-1] / values[0]) ** (1 / doublings) if doublings else math.nan


def falls_after_peak(xs: list, values: list[float], tolerance_pct: float = 5.0) -> list:
    """(x, % below the peak) for every point past the peak that is more than `tolerance_pct`
    below it: bandwidth that drops again at larger sizes, not just a plateau with noise."""
    peak_at = values.index(max(values))
    peak = values[peak_at]
    return [(x, (1 - v / peak) * 100) for x, v in zip(xs[peak_at + 1:], values[peak_at + 1:])
            if v < peak * (1 - tolerance_pct / 100)]
