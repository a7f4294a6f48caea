"""Burst -> steady state of one sustained write: plateau, cliffs, SLC cache estimate, SNIA
steady state, and what caused each cliff. Pure functions on a per-second bandwidth series (MB/s =
10^6 B/s), as ``analysis.fio.log_series.per_second(...).total()`` gives it.

The cliffs (lasting drops: the first is the write cache's, later ones a staircase) and the data
written before the first are found by analysis.core.segments; the steady state by the one rule of
analysis.core.steady, judged only after the last lasting cliff; this module puts them together
for §6 and says whether a cliff was the cache's or the heat's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.regimes import MIN_DROP_PCT
from analysis.core.segments import (
    Cliff,
    Plateau,
    _cliffs_at,
    change_points,
    plateau,
    series,
    written_GiB,
)
from analysis.core.steady import SteadyState, steady_state
from analysis.device.health_log import counter_moves


@dataclass(frozen=True)
class Burst:
    """Everything the burst -> steady state analysis finds in one run."""

    run_s: float
    written_GiB: float       # all data the series accounts for
    mean_MBps: float
    plateau: Plateau         # the burst: before the cliff, or the whole run without one
    cliff: Cliff | None      # the first cliff: the cache's
    post: Plateau | None     # the level right after the first cliff, up to the next one
    steady: SteadyState
    change_points: tuple     # segment boundaries (0-based sample indices) found
    settings: dict           # every threshold used
    cliffs: tuple = ()       # every lasting cliff, the first being ``cliff``
    levels: tuple = ()       # the level after each cliff, up to the next one or the end: a
                             # staircase's steps, each its own (a median over all of them would
                             # mix them)


# --------------------------------------------------------------------------- all of it

def analyse_burst(bw, seconds=None, *, min_drop_pct: float = 25.0,
                  min_duration_s: float = 10.0, min_segment_s: float = 5.0,
                  local_s: float = 10.0, penalty: float = 3.0, skip_first_s: float = 1.0,
                  min_below_pct: float = 75.0, round_s: float = 60.0, window: int = 5, range_pct: float = 20.0,
                  slope_pct: float = 10.0, planned_s: float | None = None) -> Burst:
    """Plateau, cliff, SLC cache estimate, post-cliff level and steady state of one run
    (``planned_s``: its configured length, see steady_state)."""
    x, dt, s = series(bw, seconds)
    if x.size == 0:
        raise ValueError("empty bandwidth series")
    cps = change_points(x, max(1, round(min_segment_s / dt)), penalty)
    cliffs = _cliffs_at(x, dt, s, cps, min_drop_pct, min_duration_s, local_s, skip_first_s,
                        min_below_pct)
    cliff = cliffs[0] if cliffs else None
    end = cliff.index if cliff else None
    burst = plateau(x, s, end_index=end, skip_first_s=skip_first_s)
    ends = [c.index for c in cliffs[1:]] + [x.size] if cliffs else []
    levels = tuple(plateau(x, s, start_index=c.index, end_index=e) for c, e in
                   zip(cliffs, ends, strict=True))
    post = levels[0] if levels else None
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
                 cliffs=tuple(cliffs), levels=levels)


# --------------------------------------------------------------------------- a later write's state

def state_of_rate(MBps: float, burst: Burst) -> str | None:
    """Which of the burst's states a later write of the same shape measured, from its rate:
    'cache' at the burst's level before its first cliff, 'after' at the level after its last
    one, None at neither or without a cliff to tell them apart. A rate stands at a level when
    it is within the regime rule's drop of it (analysis.core.regimes: 25%), as two repetitions
    at one regime are.

    >>> from analysis.rules.burst import analyse_burst
    >>> b = analyse_burst([200.0] * 20 + [20.0] * 20)
    >>> state_of_rate(20.0, b), state_of_rate(190.0, b), state_of_rate(60.0, b)
    ('after', 'cache', None)
    """
    if burst.cliff is None or not MBps > 0:
        return None
    keep = 1.0 - MIN_DROP_PCT / 100.0
    levels = {"cache": burst.plateau.median_MBps, "after": burst.levels[-1].median_MBps}
    near = [name for name, level in levels.items()
            if level > 0 and keep <= min(MBps, level) / max(MBps, level)]
    return near[0] if len(near) == 1 else None


# --------------------------------------------------------------------------- the cliff's cause

@dataclass(frozen=True)
class CliffCause:
    """Why the bandwidth fell: 'thermal' (the drive throttled for heat), 'cache' (no sign of
    heat at the cliff: a full write cache) or 'unknown' (no health samples around it)."""

    kind: str
    evidence: str           # one clause for the report


def cliff_cause(cliff_s: float, health, *, within_s: float = 10.0, rise_c: float = 5.0,
                fall_c: float = 2.0, fall_within_s: float = 60.0,
                warn_c: float | None = None, counters_kept: bool | None = None) -> CliffCause:
    """Thermal or cache, from the health samples (analysis.device.health_log.samples_table:
    t_s on the burst's time axis, temperature_c, the THROTTLE_KEYS counters) around the cliff.

    Thermal when, within ``within_s`` of the cliff (two of §6's 5 s sampling periods: the
    counters are read every 5 s, so a move is known to within one period either side):
    * a throttle counter moved (thermal-management transitions or time, warning/critical
      temperature time): the drive says it throttled; or
    * the temperature peaked there, at least ``rise_c`` °C above the run's first sample, and
      fell at least ``fall_c`` °C within ``fall_within_s`` after: heat built up until the drop
      and eased once the drive slowed, the signature of throttling on a drive that counts none.
    * the temperature reached the drive's warning threshold (``warn_c``: NVMe's WCTEMP) there:
      a drive throttles at it, whether or not it counts the time;
    Otherwise 'cache' when the samples cover the cliff and could have shown heat: the
    temperature moved during the run, or a throttle counter could be read (``counters_kept``: the
    drive says it keeps them, NVMe HCTMA bit 0; or one of them is above 0, so the drive counts).
    A temperature that never moved beside counters a drive does not keep (QEMU's: 50 °C
    throughout, HCTMA 0, every counter 0) shows nothing either way: 'unknown'. A cache that runs
    out while the drive is hot but not throttling stays 'cache' unless the temperature turns at
    the cliff.
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
    if warn_c is not None and len(temps):
        near = temps[(temps.t_s - cliff_s).abs() <= within_s]
        hot = near[near.temperature_c >= warn_c]
        if len(hot):
            return CliffCause("thermal", (
                f"the temperature reached {hot.temperature_c.iloc[0]:.0f} °C at "
                f"{hot.t_s.iloc[0]:g} s, the drive's warning threshold of {warn_c:.0f} °C, at "
                "the cliff"))
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
    counters = [k for k in health.columns if k not in ("t_s", "temperature_c")]
    read = bool(counters_kept) or any((health[k].fillna(0) > 0).any() for k in counters)
    moved = temps.temperature_c.nunique() > 1
    if moved or read:
        return CliffCause("cache", "no throttle counter moved and the temperature did not turn "
                          "at the cliff")
    if not temps.empty:
        flat = f"the temperature did not move ({temps.temperature_c.iloc[0]:g} °C throughout)"
        kept = ("and the drive keeps no throttle counter (HCTMA bit 0 clear" if counters_kept is
                False else "and no throttle counter could be read (none reported, or all 0")
        return CliffCause("unknown", f"{flat} {kept})")
    return CliffCause("unknown", "the health samples hold no temperature or counter")
