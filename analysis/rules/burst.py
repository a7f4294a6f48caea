"""Burst -> steady state of one sustained write: plateau, cliff, SLC cache estimate, SNIA steady
state. Pure functions on a per-second bandwidth series (MB/s = 10^6 B/s), as
``analysis.fio.logs.per_second(...).total()`` gives it.

**Cliff** (the first lasting drop). The series is cut into segments of constant mean by optimal
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
folding). The steady state is judged after the last of them.

Defaults: ``min_drop_pct=25`` (SLC -> TLC/QLC drops are 50-90%; 25% stays clear of the +-10-15%
wobble of a drive's steady state), ``min_duration_s=10`` (a quick 30 s run can still show a
cliff in its first 20 s), ``min_segment_s=5`` (shorter level changes are noise or stalls),
``local_s=10``, ``penalty=3``, ``min_below_pct=75`` (a quarter of the time after the cliff may
be back at the old speed: ample for regained cache bursts, not for a dip that recovers).

**Data written before the cliff**: the integral of bandwidth over the seconds before it, in GiB
(2^30 B): the estimate of the SLC cache size (what the drive absorbed at burst speed).

**Steady state** (SNIA SSS PTS): the run is cut into rounds of ``round_s`` (60 s), each
round's mean bandwidth taken; steady state is reached at the first window of ``window`` (5)
consecutive rounds that start at or after the last lasting cliff (``from_s``; the run's start
without a cliff: SNIA's rounds begin after preconditioning, so a cache's transient is never among
them; a window of the burst itself would report the cache's speed as the steady state) whose range (max - min) is within ``range_pct`` (20%) of the window's mean
and whose least-squares line moves at most ``slope_pct`` (10%) of the mean across the window
(|slope| x (window - 1) rounds). Only complete rounds count, with one allowance: fio does not log
the window that closes as the job exits, so a run of exactly k rounds logs one second less.
Given the run's configured length (``planned_s``), a last round lacking only that final sample
counts, averaged over the samples it has. A quick 30 s run has no complete 1-minute round: the
verdict says so; ``round_s`` can be shortened to judge it, and the verdict then names its rounds
as shorter than SNIA's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.device.health_log import counter_moves

GIB = 2**30
MB = 1_000_000

DEFAULT_CLIFF = {"min_drop_pct": 25.0, "min_duration_s": 10.0, "min_segment_s": 5.0,
                 "local_s": 10.0, "penalty": 3.0, "skip_first_s": 1.0, "min_below_pct": 75.0}
DEFAULT_STEADY = {"round_s": 60.0, "window": 5, "range_pct": 20.0, "slope_pct": 10.0}
SNIA_ROUND_S = 60.0


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
    """The first lasting drop of bandwidth."""

    index: int              # first sample after the drop (0-based)
    time_s: float           # seconds from the start of the run at which bandwidth drops
    before_MBps: float      # plateau level: median before the cliff (first second skipped)
    after_MBps: float       # post-cliff level: median from the cliff to the end of the run
    drop_pct: float         # 100 x (1 - after / before)
    local_before_MBps: float  # medians of the local_s seconds either side (the abruptness test)
    local_after_MBps: float
    written_GiB: float      # data written before the cliff: the SLC cache estimate


@dataclass(frozen=True)
class SteadyState:
    """SNIA PTS steady-state verdict over rounds of round_s."""

    reached: bool
    reason: str             # 'reached' | 'not enough rounds' | 'range' | 'slope' | 'range and
                            # slope' (neither ever held) | 'not together' (each held, apart)
    first_round: int | None  # 1-based rounds of the window judged (the steady one if reached,
    last_round: int | None   # else the one closest to passing); None with too few rounds
    level_MBps: float | None  # that window's mean
    range_pct: float | None   # that window's (max - min) / mean, %
    slope_pct: float | None   # that window's |slope| x (window - 1) / mean, %
    best_range_pct: float | None   # the smallest range over all windows, %
    best_slope_pct: float | None   # the smallest line excursion over all windows, %
    rounds_MBps: tuple      # mean of each complete round
    n_rounds: int
    round_s: float
    window: int
    range_limit_pct: float
    slope_limit_pct: float
    run_s: float            # length of the series judged
    message: str            # one sentence for the report
    first_judged: int = 1   # 1-based first round a window may start at (after the last cliff)

    @property
    def snia_rounds(self) -> bool:
        """True when the rounds are SNIA's 1-minute rounds."""
        return self.round_s == SNIA_ROUND_S


@dataclass(frozen=True)
class Burst:
    """Everything the burst -> steady state analysis finds in one run."""

    run_s: float
    written_GiB: float       # all data the series accounts for
    mean_MBps: float
    plateau: Plateau         # the burst: before the cliff, or the whole run without one
    cliff: Cliff | None      # the first cliff: the cache's
    post: Plateau | None     # after the cliff
    steady: SteadyState
    change_points: tuple     # segment boundaries (0-based sample indices) found
    settings: dict           # every threshold used
    cliffs: tuple = ()       # every lasting cliff, the first being ``cliff``


# --------------------------------------------------------------------------- helpers

def _series(bw, seconds=None) -> tuple[np.ndarray, float, np.ndarray]:
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
    x, dt, _ = _series(bw, seconds)
    end = x.size if end_index is None else max(0, min(int(end_index), x.size))
    return float(np.sum(x[:end]) * dt * MB / GIB)


def plateau(bw, seconds=None, *, start_index: int = 0, end_index: int | None = None,
            skip_first_s: float = 1.0) -> Plateau:
    """Level (median) and spread of samples [start_index, end_index).

    The first ``skip_first_s`` of the run are left out when the stretch starts the run: fio's
    first second holds its start (queue filling) and is no level of the drive. They are kept
    when nothing else would remain.
    """
    x, dt, s = _series(bw, seconds)
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


# Why this and not ruptures (issue 15): ruptures 1.1.10's Pelt(model="l2", min_size=m, jump=1)
# with the same penalty (its pen is per change point, as beta is here) was tried. It reproduces
# every known answer of tests/test_burst.py (the synthetic logs, the 860 PRO's 10,011 s log, the
# throttled loop device's cliff at 6 s), but it is far slower on long logs, measured with
# time.perf_counter on this 2-vCPU machine: the 860 PRO log, 1.3 s here against 113.5 s (the
# same 33 change points); a 10,000 s synthetic log (2000 -> 600 MB/s at 3000 s, 20 MB/s noise),
# 1.2 s here against more than 400 s (stopped); with 2% noise, 0.65 s here against more than 18
# minutes (stopped), and the same shape over 2,000 and 4,000 s, 0.10 and 0.28 s here against
# 37.2 and 167.5 s (the same change points; ruptures grows as about n^2.2). Its l2 cost
# recomputes each candidate segment's variance from the samples instead of from cumulative
# sums, and PELT prunes little on a log with few changes. A 15-minute burst is 900 samples, a
# long one 10,000 or more: this implementation stays, ruptures is not a dependency.
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


# --------------------------------------------------------------------------- cliff

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
    x, dt, s = _series(bw, seconds)
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


# --------------------------------------------------------------------------- steady state

def _fmt_rounds(first: int, last: int) -> str:
    return f"rounds {first}\u2013{last}"


def steady_state(bw, round_s: float = 60.0, window: int = 5, range_pct: float = 20.0,
                 slope_pct: float = 10.0, *, seconds=None, planned_s: float | None = None,
                 from_s: float = 0.0) -> SteadyState:
    """SNIA PTS steady state of a per-second bandwidth series (see the module docstring;
    ``planned_s``: the run's configured length, for fio's unlogged final second; ``from_s``:
    the last lasting cliff, the first round judged is the first that starts at or after it)."""
    x, dt, _ = _series(bw, seconds)
    if window < 2:
        raise ValueError("window must be at least 2 rounds")
    per_round = round_s / dt
    if round_s <= 0 or abs(per_round - round(per_round)) > 1e-6:
        raise ValueError(f"round_s ({round_s}) must be a positive multiple of the sample step "
                         f"({dt} s)")
    per_round = round(per_round)
    n_rounds = x.size // per_round
    rounds = (x[:n_rounds * per_round].reshape(n_rounds, per_round).mean(axis=1)
              if n_rounds else np.zeros(0))
    unlogged = round(planned_s / dt) - x.size if planned_s is not None else 0
    # A round that lacks only that sample counts, over the rest; a one-sample round then has none
    if per_round > 1 and unlogged == 1 and x.size - n_rounds * per_round == per_round - 1:
        rounds = np.append(rounds, np.mean(x[n_rounds * per_round:]))
        n_rounds += 1
    run_s = x.size * dt
    common = {"rounds_MBps": tuple(float(r) for r in rounds), "n_rounds": int(n_rounds),
              "round_s": float(round_s), "window": int(window),
              "range_limit_pct": float(range_pct), "slope_limit_pct": float(slope_pct),
              "run_s": float(run_s)}
    if round_s == SNIA_ROUND_S:
        kind = "1-minute rounds"
    else:
        than = "shorter than" if round_s < SNIA_ROUND_S else "not"
        kind = f"{round_s:g} s rounds, {than} SNIA's 1 minute"
    # the first round judged: the first whole round after the last cliff (0-based)
    first = min(n_rounds, math.ceil(round(from_s / dt, 6) / per_round)) if from_s > 0 else 0
    common["first_judged"] = first + 1
    after = f" after the cliff at {from_s:g} s" if first else ""
    if n_rounds < window:
        msg = (f"steady state not judged: the rule needs {window} complete rounds of "
               f"{round_s:g} s ({window * round_s:g} s); the run has {run_s:g} s "
               f"({n_rounds} complete)")
    elif n_rounds - first < window:
        msg = (f"steady state not judged: the rule needs {window} complete rounds of "
               f"{round_s:g} s{after}; the run has {n_rounds - first} of its {n_rounds} "
               "rounds there")
    if n_rounds - first < window:
        return SteadyState(reached=False, reason="not enough rounds", first_round=None,
                           last_round=None, level_MBps=None, range_pct=None, slope_pct=None,
                           best_range_pct=None, best_slope_pct=None, message=msg, **common)

    xs = np.arange(window, dtype=np.float64)
    judged = []   # (start, mean, range %, slope %)
    for start in range(first, n_rounds - window + 1):
        w = rounds[start:start + window]
        mean = float(np.mean(w))
        if mean > 0:
            rng = 100.0 * float(np.max(w) - np.min(w)) / mean
            slope = float(np.polyfit(xs, w, 1)[0])
            exc = 100.0 * abs(slope) * (window - 1) / mean
        else:
            rng = exc = math.inf
        judged.append((start, mean, rng, exc))
    ok_range = [j for j in judged if j[2] <= range_pct]
    ok_slope = [j for j in judged if j[3] <= slope_pct]
    best_range = min(j[2] for j in judged)
    best_slope = min(j[3] for j in judged)
    for start, mean, rng, exc in judged:
        if rng <= range_pct and exc <= slope_pct:
            first, last = start + 1, start + window  # 1-based, as reported
            msg = (f"steady state reached at {_fmt_rounds(first, last)} of {n_rounds} "
                   f"({kind}{after}): {mean:.0f} MB/s, range {rng:.1f}% \u2264 {range_pct:g}%, "
                   f"line excursion {exc:.1f}% \u2264 {slope_pct:g}%")
            return SteadyState(reached=True, reason="reached", first_round=first,
                               last_round=last, level_MBps=mean, range_pct=rng, slope_pct=exc,
                               best_range_pct=best_range, best_slope_pct=best_slope,
                               message=msg, **common)
    if not ok_range and not ok_slope:
        reason = "range and slope"
    elif not ok_range:
        reason = "range"
    elif not ok_slope:
        reason = "slope"
    else:
        reason = "not together"
    # the window closest to passing: the smallest worst excess over the two limits
    start, mean, rng, exc = min(judged, key=lambda j: max(j[2] / range_pct, j[3] / slope_pct))
    why = {"range": f"no window's range was within {range_pct:g}% (best {best_range:.1f}%)",
           "slope": f"the range held but no window's line moved less than {slope_pct:g}% "
                    f"(best {best_slope:.1f}%): still trending",
           "range and slope": f"neither held (best range {best_range:.1f}%, best line "
                              f"excursion {best_slope:.1f}%)",
           "not together": "each held in some window but never both in the same one"}[reason]
    msg = (f"steady state not reached in {n_rounds} rounds ({kind}{after}): {why}; closest "
           f"{_fmt_rounds(start + 1, start + window)}: {mean:.0f} MB/s, range {rng:.1f}%, "
           f"line excursion {exc:.1f}%")
    return SteadyState(reached=False, reason=reason, first_round=start + 1,
                       last_round=start + window, level_MBps=mean, range_pct=rng, slope_pct=exc,
                       best_range_pct=best_range, best_slope_pct=best_slope, message=msg,
                       **common)


# --------------------------------------------------------------------------- all of it

def analyse_burst(bw, seconds=None, *, min_drop_pct: float = 25.0,
                  min_duration_s: float = 10.0, min_segment_s: float = 5.0,
                  local_s: float = 10.0, penalty: float = 3.0, skip_first_s: float = 1.0,
                  min_below_pct: float = 75.0, round_s: float = 60.0, window: int = 5, range_pct: float = 20.0,
                  slope_pct: float = 10.0, planned_s: float | None = None) -> Burst:
    """Plateau, cliff, SLC cache estimate, post-cliff level and steady state of one run
    (``planned_s``: its configured length, see steady_state)."""
    x, dt, s = _series(bw, seconds)
    if x.size == 0:
        raise ValueError("empty bandwidth series")
    cps = change_points(x, max(1, round(min_segment_s / dt)), penalty)
    cliffs = _cliffs_at(x, dt, s, cps, min_drop_pct, min_duration_s, local_s, skip_first_s,
                        min_below_pct)
    cliff = cliffs[0] if cliffs else None
    end = cliff.index if cliff else None
    burst = plateau(x, s, end_index=end, skip_first_s=skip_first_s)
    post = plateau(x, s, start_index=cliff.index) if cliff else None
    steady = steady_state(x, round_s, window, range_pct, slope_pct, seconds=s,
                          planned_s=planned_s, from_s=cliffs[-1].time_s if cliffs else 0.0)
    settings = {"min_drop_pct": min_drop_pct, "min_duration_s": min_duration_s,
                "min_segment_s": min_segment_s, "local_s": local_s, "penalty": penalty,
                "skip_first_s": skip_first_s, "min_below_pct": min_below_pct,
                "round_s": round_s, "window": window, "range_pct": range_pct,
                "slope_pct": slope_pct}
    return Burst(run_s=float(x.size * dt), written_GiB=written_GiB(x, s),
                 mean_MBps=float(np.mean(x)), plateau=burst, cliff=cliff, post=post,
                 steady=steady, change_points=tuple(cps), settings=settings,
                 cliffs=tuple(cliffs))


# --------------------------------------------------------------------------- the cliff's cause

@dataclass(frozen=True)
class CliffCause:
    """Why the bandwidth fell: 'thermal' (the drive throttled for heat), 'cache' (no sign of
    heat at the cliff: a full write cache) or 'unknown' (no health samples around it)."""

    kind: str
    evidence: str           # one clause for the report


def cliff_cause(cliff_s: float, health, *, within_s: float = 10.0, rise_c: float = 5.0,
                fall_c: float = 2.0, fall_within_s: float = 60.0) -> CliffCause:
    """Thermal or cache, from the health samples (analysis.device.health_log.samples_table:
    t_s on the burst's time axis, temperature_c, the THROTTLE_KEYS counters) around the cliff.

    Thermal when, within ``within_s`` of the cliff (two of §6's 5 s sampling periods: the
    counters are read every 5 s, so a move is known to within one period either side):
    * a throttle counter moved (thermal-management transitions or time, warning/critical
      temperature time): the drive says it throttled; or
    * the temperature peaked there, at least ``rise_c`` °C above the run's first sample, and
      fell at least ``fall_c`` °C within ``fall_within_s`` after: heat built up until the drop
      and eased once the drive slowed, the signature of throttling on a drive that counts none.
    Otherwise 'cache' when samples cover the cliff, else 'unknown'. A cache that runs out while
    the drive is hot but not throttling stays 'cache' unless the temperature turns at the cliff.
    """
    if health is None or len(health) == 0:
        return CliffCause("unknown", "no health samples were taken")
    t = health["t_s"].to_numpy(dtype=float)
    if not (t.min() - within_s <= cliff_s <= t.max() + within_s):
        return CliffCause("unknown", "the health samples do not cover the cliff")
    times = list(t)
    for at, what in counter_moves(health):
        i = times.index(at)
        earlier = times[i - 1] if i else at
        if earlier - within_s <= cliff_s <= at + within_s:
            return CliffCause("thermal", f"a throttle counter moved at the cliff: {what}")
    temps = health[["t_s", "temperature_c"]].dropna()
    if len(temps) >= 3:
        tt = temps["t_s"].to_numpy(dtype=float)
        tc = temps["temperature_c"].to_numpy(dtype=float)
        near = np.abs(tt - cliff_s) <= within_s
        if near.any():
            peak_i = int(np.argmax(np.where(near, tc, -np.inf)))
            peak = tc[peak_i]
            later = tc[(tt > tt[peak_i]) & (tt <= tt[peak_i] + fall_within_s)]
            if (peak >= tc.max() and peak - tc[0] >= rise_c and later.size
                    and peak - later.min() >= fall_c):
                return CliffCause("thermal", (
                    f"the temperature rose {peak - tc[0]:.0f} °C to its peak of {peak:.0f} °C "
                    f"at {tt[peak_i]:g} s, at the cliff, and fell {peak - later.min():.0f} °C "
                    "after it"))
    if not temps.empty or any(health[k].notna().any() for k in health.columns if k != "t_s"):
        return CliffCause("cache", "no throttle counter moved and the temperature did not turn "
                          "at the cliff")
    return CliffCause("unknown", "the health samples hold no temperature or counter")
