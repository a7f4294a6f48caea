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
    note: str               # why not used; for one used, why its idle is not the planned one


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


def explain_gap(steps: list[tuple[float, str]], prev_end_s: float, start_s: float,
                shown: int = 3) -> str:
    """What the toolkit did between a write's end and the probe's start, from the timestamps it
    kept (``steps``: (epoch s, the step that ended then), as lib/loop.bash stamps them): 'the
    toolkit's own steps took 22.6 s: checking the result of ... 12.3 s, ...', the longest
    ``shown`` of them in the order they ran, and fio's own start (the time from the last step
    to the probe's first I/O)."""
    inside = sorted((t, what) for t, what in steps if prev_end_s <= t <= start_s)
    spans, last = [], prev_end_s
    for t, what in inside:
        spans.append((t - last, what))
        last = t
    spans.append((start_s - last, "starting fio"))
    longest = sorted(sorted(range(len(spans)), key=lambda i: -spans[i][0])[:shown])
    listed = ", ".join(f"{spans[i][1]} {spans[i][0]:.1f} s" for i in longest)
    return f"the toolkit's own steps took {start_s - prev_end_s:.1f} s ({listed})"


def analyse_recovery(probes: list[tuple[float, float, np.ndarray]], fast_MBps: float,
                     slow_MBps: float, cache_GiB: float, full_pct: float = 90.0,
                     late_s: float = 5.0, gaps: list[str | None] | None = None) -> Recovery:
    """``probes``: (planned gap s, measured idle s, per-second MB/s) in the order they ran;
    ``gaps``: for each, what the toolkit did between the write before it and its start, from the
    record (explain_gap), or None where the record holds no timestamps (an older tree).
    A probe whose measured idle exceeds its gap by more than ``late_s`` is explained: where the
    record shows the toolkit's own steps filled the gap (nothing writes between a probe and the
    write before it), the drive idled for the whole measured time and the probe counts at it;
    where the record holds nothing, the probe is left out. So are the probes after a censored
    one."""
    out, unsure = [], ""
    for n, (gap, idle, bw) in enumerate(probes):
        r, fell, censored = regained(bw, fast_MBps, slow_MBps)
        note, late = unsure, ""
        why = gaps[n] if gaps else None
        if not note and math.isnan(idle):
            note = "no idle measured: the write before it has no result"
        elif not note and idle > gap + late_s:
            late = f"idle {idle:.0f} s, not the planned {gap:g} s: "
            if why is None:
                note = (late + "the record holds no timestamps of what ran in between (a tree "
                        "written before they were kept): left out")
            else:
                late += f"{why}; nothing wrote in between: counted at its measured idle"
        full = cache_GiB > 0 and r >= full_pct / 100 * cache_GiB
        if not note and censored:
            note = "still at burst speed when the probe ended: a lower bound"
            unsure = "after a probe that ended at burst speed: its starting cache is unknown"
        elif not note and full:
            note = f"regained {100 * r / cache_GiB:.0f}% of the cache: full"
        used = not note
        out.append(Probe(gap, idle, r, r * GIB / MB / fast_MBps if fast_MBps > 0 else math.nan,
                         fell, censored, used, note or late))
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
