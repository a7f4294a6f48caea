"""Level changes in a per-interval series: segments of constant mean, plateaus, and cliffs.

Pure functions on a series sampled at a constant step (a per-second bandwidth, IOPS or rate log;
MB/s = 10^6 B/s where it is bandwidth), shared by §6's burst (analysis.rules.burst) and the
sustained state's preconditioning rounds (analysis.run.steady_rounds): both judge SNIA's steady
state only after the last lasting cliff (analysis.core.steady).

**Cliff** (a lasting drop). The series is cut into segments of constant mean by optimal
partitioning (Jackson et al. 2005: the exact least-squares segmentation minimising
SSE + penalty x number of segments), each segment at least ``min_segment_s`` long, with the
penalty ``penalty x sigma^2 x ln(n)`` (a BIC-like penalty; sigma is the noise, estimated robustly
from the median absolute deviation of the first differences, so the level shifts themselves do
not inflate it). A segment boundary b is the cliff when, first in time:

* abrupt: the median of the ``local_s`` seconds after b, and the mean of the segment that b
  starts, are at least ``min_drop_pct`` below the median of the ``local_s`` seconds before it (a
  slow decline or a staircase of small steps is not a cliff, nor a boundary a few seconds before
  the real drop);
* lasting: at least ``min_duration_s`` of the run remain after b, and at least ``min_below_pct``
  (75%) of the seconds from b to the end stay at least ``min_drop_pct`` below that level (the
  bandwidth does not come back for good: a dip that recovers is not the cache running out, but a
  few seconds of regained cache speed later on, as a drive shows after idle-time garbage
  collection, do not move the cliff to the last of them).

Later cliffs: after the first, each later boundary that is an abrupt and lasting drop from the
level just before it (the same two tests) is a further cliff (a staircase: SLC, then TLC, then
folding).

Defaults: ``min_drop_pct=25`` (SLC -> TLC/QLC drops are 50-90%; 25% stays clear of the +-10-15%
wobble of a drive's steady state), ``min_duration_s=10`` (a quick 30 s run can still show a
cliff in its first 20 s), ``min_segment_s=5`` (shorter level changes are noise or stalls),
``local_s=10``, ``penalty=3``, ``min_below_pct=75`` (a quarter of the time after the cliff may
be back at the old speed: ample for regained cache bursts, not for a dip that recovers).

**Data written before the cliff**: the integral of bandwidth over the seconds before it, in GiB
(2^30 B): the estimate of the SLC cache size (what the drive absorbed at burst speed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GIB = 2**30
MB = 1_000_000

DEFAULT_CLIFF = {"min_drop_pct": 25.0, "min_duration_s": 10.0, "min_segment_s": 5.0,
                 "local_s": 10.0, "penalty": 3.0, "skip_first_s": 1.0, "min_below_pct": 75.0}


@dataclass(frozen=True)
class Plateau:
    """Level and spread of a stretch of the run (the burst before the cliff, or after it)."""

    start_s: float          # the stretch covers (start_s, end_s] seconds of the run
    end_s: float
    n: int                  # seconds in it
    median_MBps: float      # the level
    mean_MBps: float
    std_MBps: float         # sample std (ddof=1); NaN for one second
    cv: float               # std / mean, a fraction; NaN if undefined
    p5_MBps: float
    p95_MBps: float


@dataclass(frozen=True)
class Cliff:
    """A lasting drop of bandwidth."""

    index: int              # first sample after the drop (0-based)
    time_s: float           # seconds from the start of the run at which bandwidth drops
    before_MBps: float      # the level before it: median since the previous cliff (the first
                            # second skipped)
    after_MBps: float       # median from the cliff to the end of the run
    drop_pct: float         # 100 x (1 - after / before)
    local_before_MBps: float  # medians of the local_s seconds either side (the abruptness test)
    local_after_MBps: float
    written_GiB: float      # data written before the cliff: the SLC cache estimate


def series(bw, seconds=None) -> tuple[np.ndarray, float, np.ndarray]:
    """(values, step in s, interval ends in s), checked: finite, non-negative, evenly spaced."""
    x = np.asarray(bw, dtype=np.float64).ravel()
    if x.size and not np.all(np.isfinite(x)):
        i = int(np.argmax(~np.isfinite(x)))
        raise ValueError(f"bandwidth series has a non-finite value at index {i}")
    if x.size and np.any(x < 0):
        raise ValueError(f"bandwidth series has a negative value at index {int(np.argmax(x < 0))}")
    if seconds is None:
        return x, 1.0, np.arange(1, x.size + 1, dtype=np.float64)
    s = np.asarray(seconds, dtype=np.float64).ravel()
    if s.size != x.size:
        raise ValueError(f"{x.size} bandwidth values but {s.size} seconds")
    if s.size < 2:
        return x, 1.0, s
    steps = np.diff(s)
    dt = float(np.median(steps))
    if dt <= 0 or not np.allclose(steps, dt, rtol=1e-6, atol=1e-9):
        raise ValueError("seconds must be evenly spaced and increasing (one value per interval)")
    return x, dt, s


def written_GiB(bw, seconds=None, end_index: int | None = None) -> float:
    """Data written in the first ``end_index`` samples (all by default), in GiB (2^30 B)."""
    x, dt, _ = series(bw, seconds)
    end = x.size if end_index is None else max(0, min(int(end_index), x.size))
    return float(np.sum(x[:end]) * dt * MB / GIB)


def plateau(bw, seconds=None, *, start_index: int = 0, end_index: int | None = None,
            skip_first_s: float = 1.0) -> Plateau:
    """Level (median) and spread of samples [start_index, end_index).

    The first ``skip_first_s`` of the run are left out when the stretch starts the run: fio's
    first second holds its start (queue filling) and is no level of the drive. They are kept
    when nothing else would remain.
    """
    x, dt, s = series(bw, seconds)
    end = x.size if end_index is None else max(0, min(int(end_index), x.size))
    start = max(0, int(start_index))
    if start == 0 and skip_first_s > 0:
        skip = round(skip_first_s / dt)
        if end - skip >= 1:
            start = skip
    part = x[start:end]
    if part.size == 0:
        raise ValueError(f"no samples in [{start}, {end})")
    mean = float(np.mean(part))
    std = float(np.std(part, ddof=1)) if part.size >= 2 else math.nan
    cv = std / mean if part.size >= 2 and mean > 0 else math.nan
    p5, p50, p95 = (float(v) for v in np.percentile(part, [5, 50, 95]))
    return Plateau(start_s=float(s[start] - dt), end_s=float(s[end - 1]), n=int(part.size),
                   median_MBps=p50, mean_MBps=mean, std_MBps=std, cv=cv, p5_MBps=p5,
                   p95_MBps=p95)


def noise_sigma(bw) -> float:
    """Robust noise level of a series: 1.4826 x MAD of the first differences / sqrt(2).

    Differences cancel the level, so steps between levels do not count as noise.
    """
    x = np.asarray(bw, dtype=np.float64).ravel()
    if x.size < 3:
        return 0.0
    d = np.diff(x)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2))


# Why this and not ruptures: its Pelt(model="l2") reproduces every known answer of
# tests/test_burst.py but grows as about n^2.2 on long logs (its l2 cost recomputes each
# candidate segment's variance instead of using cumulative sums, and PELT prunes little on a log
# with few changes), and a long burst logs 10,000 samples or more. The timings that decided it
# are in docs/architecture.md (Dependencies).
def change_points(bw, min_segment: int = 5, penalty: float = 3.0) -> list[int]:
    """Boundaries (0-based index of each new segment's first sample) of the least-squares
    optimal partition of ``bw`` into segments of constant mean, each ``min_segment`` samples or
    longer, with a penalty of ``penalty x sigma^2 x ln(n)`` per segment (sigma: noise_sigma).
    """
    x = np.asarray(bw, dtype=np.float64).ravel()
    n = x.size
    m = max(1, int(min_segment))
    if n < 2 * m:
        return []
    sigma = noise_sigma(x)
    floor = 1e-9 * max(1.0, float(np.median(np.abs(x))))
    beta = penalty * max(sigma, floor) ** 2 * math.log(max(n, 3))
    cs = np.concatenate(([0.0], np.cumsum(x)))
    cs2 = np.concatenate(([0.0], np.cumsum(x * x)))
    best = np.full(n + 1, np.inf)
    best[0] = -beta
    last = np.zeros(n + 1, dtype=np.int64)
    for t in range(m, n + 1):
        cand = np.concatenate(([0], np.arange(m, t - m + 1)))
        length = t - cand
        total = cs[t] - cs[cand]
        cost = (cs2[t] - cs2[cand]) - total * total / length
        score = best[cand] + np.maximum(cost, 0.0) + beta
        i = int(np.argmin(score))
        best[t] = score[i]
        last[t] = cand[i]
    cps = []
    t = n
    while t > 0:
        t = int(last[t])
        if t > 0:
            cps.append(t)
    return sorted(cps)


# --------------------------------------------------------------------------- cliffs

def find_cliff(bw, seconds=None, *, min_drop_pct: float = 25.0, min_duration_s: float = 10.0,
               min_segment_s: float = 5.0, local_s: float = 10.0, penalty: float = 3.0,
               skip_first_s: float = 1.0, min_below_pct: float = 75.0) -> Cliff | None:
    """The first lasting, abrupt drop of bandwidth, or None (see the module docstring)."""
    cliffs = find_cliffs(bw, seconds, min_drop_pct=min_drop_pct, min_duration_s=min_duration_s,
                         min_segment_s=min_segment_s, local_s=local_s, penalty=penalty,
                         skip_first_s=skip_first_s, min_below_pct=min_below_pct)
    return cliffs[0] if cliffs else None


def find_cliffs(bw, seconds=None, *, min_drop_pct: float = 25.0, min_duration_s: float = 10.0,
                min_segment_s: float = 5.0, local_s: float = 10.0, penalty: float = 3.0,
                skip_first_s: float = 1.0, min_below_pct: float = 75.0) -> list[Cliff]:
    """Every lasting, abrupt drop in time order: the first is the cache's cliff, later ones a
    staircase (see the module docstring)."""
    x, dt, s = series(bw, seconds)
    if x.size == 0:
        return []
    cps = change_points(x, max(1, round(min_segment_s / dt)), penalty)
    return _cliffs_at(x, dt, s, cps, min_drop_pct, min_duration_s, local_s, skip_first_s,
                      min_below_pct)


def _lasting(x: np.ndarray, b: int, threshold: float, min_below_pct: float) -> bool:
    """At least min_below_pct % of the samples from b on are at or below threshold."""
    return 100.0 * float(np.mean(x[b:] <= threshold)) >= min_below_pct


def _cliffs_at(x: np.ndarray, dt: float, s: np.ndarray, cps: list[int], min_drop_pct: float,
               min_duration_s: float, local_s: float, skip_first_s: float,
               min_below_pct: float = 75.0) -> list[Cliff]:
    """The boundaries in ``cps`` that are abrupt and lasting drops (see find_cliff), each from
    the level since the previous one."""
    n = x.size
    k = max(1, round(local_s / dt))
    need = min_duration_s / dt
    keep = 1.0 - min_drop_pct / 100.0
    out: list[Cliff] = []
    ends = [*cps[1:], n] if cps else []
    for b, nxt in zip(cps, ends, strict=True):
        if n - b < need - 1e-9:
            break                                  # later boundaries leave even less
        start = out[-1].index if out else 0
        before = float(np.median(x[max(start, b - k):b]))
        after = float(np.median(x[b:b + k]))
        if before <= 0:
            continue
        threshold = keep * before
        if after > threshold or float(np.mean(x[b:nxt])) > threshold:
            continue                               # not a drop, not abrupt, or not here
        if not _lasting(x, b, threshold, min_below_pct):
            continue                               # the bandwidth comes back: not lasting
        if start:
            level = float(np.median(x[start:b]))
        else:
            level = plateau(x, s, end_index=b, skip_first_s=skip_first_s).median_MBps
        post = float(np.median(x[b:]))
        out.append(Cliff(index=b, time_s=float(s[b] - dt), before_MBps=level, after_MBps=post,
                         drop_pct=100.0 * (1.0 - post / level) if level > 0 else math.nan,
                         local_before_MBps=before, local_after_MBps=after,
                         written_GiB=written_GiB(x, s, b)))
    return out
