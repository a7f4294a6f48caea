"""Write-cache recovery: how much fast cache a drive regains per minute of idle, from probes.

After the burst has filled the cache and reached its post-cliff speed, §6 idles for gaps of
growing length and after each writes at full speed (a probe) until the speed falls again. Pure
functions on each probe's per-second bandwidth (MB/s) and the burst's two levels.

**Regained cache of one probe.** A probe writes the regained cache R at the burst's speed FAST,
then runs at the post-cliff speed SLOW. Its bytes above SLOW, E = sum(bw - SLOW) x 1 s, are
(FAST - SLOW) x R / FAST, so R = E x FAST / (FAST - SLOW). The whole probe is summed (noise
around SLOW cancels; fio's 1 s averaging of a fall inside a second does not matter), so R is
resolved well below one second of FAST writing.

**Censored probe.** A probe whose last ``tail_s`` seconds (median) are still above the midpoint
of FAST and SLOW never fell: R is a lower bound, and the next probe starts with cache left over,
so it and all later probes are left out of the fit.

**Rate.** The least-squares line through the origin of R (GiB) against the idle time (minutes)
over the probes that are neither censored nor full (R at least ``full_pct`` = 90% of the cache
estimate: recovery has stopped there, the line would flatten): GiB regained per idle minute.

**Idle time to a full cache.** Observed: the shortest idle after which a probe regained at least
``full_pct`` of the cache estimate. Otherwise extrapolated: cache / rate, a straight line beyond
the longest gap measured (a drive may recover slower as it fills: a lower bound on the time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GIB = 2**30
MB = 1_000_000


@dataclass(frozen=True)
class Probe:
    """One probe after an idle gap."""

    gap_s: float            # the idle planned before it
    idle_s: float           # the idle measured (fio's end of the previous write to its start)
    regained_GiB: float     # R, from the bytes above the post-cliff speed
    fast_s: float           # R / FAST: how long it wrote at burst speed
    fell_at_s: float | None  # the first second at or below the midpoint, None if never
    censored: bool          # still fast at its end: R is a lower bound
    used: bool              # in the rate's fit
    note: str               # why not used, '' when used


@dataclass(frozen=True)
class Recovery:
    probes: tuple
    rate_GiB_per_min: float | None  # None without two usable probes... or one (through 0)
    full_idle_s: float | None       # idle to a full cache
    full_how: str                   # 'observed' | 'extrapolated' | 'unknown'
    cache_GiB: float
    fast_MBps: float
    slow_MBps: float
    message: str


def regained(bw, fast_MBps: float, slow_MBps: float, tail_s: int = 2) -> tuple[float, float | None,
                                                                              bool]:
    """(R in GiB, first second at or below the midpoint or None, censored) of one probe."""
    x = np.asarray(bw, dtype=np.float64).ravel()
    if x.size == 0 or fast_MBps <= slow_MBps:
        return math.nan, None, False
    excess_MB = max(0.0, float(np.sum(x - slow_MBps)))
    r = excess_MB * fast_MBps / (fast_MBps - slow_MBps) * MB / GIB
    mid = (fast_MBps + slow_MBps) / 2
    below = np.flatnonzero(x <= mid)
    fell = float(below[0] + 1) if below.size else None
    censored = float(np.median(x[-tail_s:])) > mid
    return r, fell, censored


def analyse_recovery(probes: list[tuple[float, float, np.ndarray]], fast_MBps: float,
                     slow_MBps: float, cache_GiB: float, full_pct: float = 90.0,
                     late_s: float = 5.0) -> Recovery:
    """``probes``: (planned gap s, measured idle s, per-second MB/s) in the order they ran.
    A probe whose measured idle exceeds its gap by more than ``late_s`` did not follow the one
    before it (a resumed run): left out with a note, as are the probes after a censored one."""
    out, unsure = [], ""
    for gap, idle, bw in probes:
        r, fell, censored = regained(bw, fast_MBps, slow_MBps)
        note = unsure
        if not note and (math.isnan(idle) or idle > gap + late_s):
            note = (f"idle {idle:.0f} s, not the planned {gap:g} s: the probe did not follow the "
                    "write before it (a resumed run?)")
        full = cache_GiB > 0 and r >= full_pct / 100 * cache_GiB
        if not note and censored:
            note = "still at burst speed when the probe ended: a lower bound"
            unsure = "after a probe that ended at burst speed: its starting cache is unknown"
        elif not note and full:
            note = f"regained {100 * r / cache_GiB:.0f}% of the cache: full"
        out.append(Probe(gap, idle, r, r * GIB / MB / fast_MBps if fast_MBps > 0 else math.nan,
                         fell, censored, not note, note))
    used = [p for p in out if p.used]
    rate = None
    if used:
        t = np.array([p.idle_s / 60 for p in used])
        r = np.array([p.regained_GiB for p in used])
        rate = float(np.sum(t * r) / np.sum(t * t)) if np.sum(t * t) > 0 else None
    full = [p for p in out if p.note.endswith(": full") and not math.isnan(p.idle_s)]
    if full:
        how, full_s = "observed", min(p.idle_s for p in full)
    elif rate and rate > 0 and cache_GiB > 0:
        how, full_s = "extrapolated", cache_GiB / rate * 60
    else:
        how, full_s = "unknown", None
    if rate is None:
        msg = "no probe could be used to measure the recovery rate"
    else:
        msg = (f"{rate:.3g} GiB of fast cache regained per idle minute ({len(used)} of "
               f"{len(out)} probes)")
        if full_s is not None:
            msg += (f"; a full cache ({cache_GiB:.2f} GiB) after {full_s:.0f} s idle ({how}"
                    + (", beyond the longest gap" if how == "extrapolated" else "") + ")")
    return Recovery(tuple(out), rate, full_s, how, cache_GiB, fast_MBps, slow_MBps, msg)
