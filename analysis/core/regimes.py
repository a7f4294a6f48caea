"""A case's write repetitions split by regime: which repetitions measured which state of the drive.

An SSD writes at several speeds (into its write cache, after the cache fills, in steady state),
and a case's repetitions, run one after another, each measure whichever state the drive was in.
One mean over a burst repetition and an after-the-cliff one describes neither. This module reads
each repetition's per-second write rate (MB/s = 10^6 B/s, as
``analysis.fio.log_series.per_second(...).total()`` gives it from fio's 1 s bandwidth log) and
says which repetitions stand at one level.

**The rule.** Each repetition's level is the median of its seconds. The levels are sorted,
fastest first, and two neighbours belong to different regimes when the slower one is

* at least ``min_drop_pct`` (25%) below the faster one: the cliff rule's own drop
  (analysis.core.segments.DEFAULT_CLIFF), so a run-to-run offset of a few % never splits a case
  however long its repetitions; and
* further below it than the per-second noise explains: ln(faster / slower) is at least ``z``
  (Z) standard errors. A repetition's standard error is the noise's CV x sqrt((1 + phi) /
  (1 - phi) / its seconds): the CV is the spread of every repetition's seconds about its own
  median, relative to it, pooled over the repetitions but the noisiest (a short repetition's own
  four seconds say little, the case's say more; the noisiest may hold a drop, not noise), and
  phi their lag-1 autocorrelation, pooled the same way (seconds that resemble their neighbours
  are worth fewer independent ones; a long repetition estimates phi, four seconds hardly do).

Neighbours that are not apart join one regime, so a case at one level is one regime. Z is
calibrated on seeded simulations (bench/simulations/regimes_sim.py, `bash bench/statistics
--only regimes`; docs/methodology.md quotes the rates): at 3 repetitions of 4 s, the quick
profile's, a one-level case with 10-30% per-second noise, AR(1) phi up to 0.3 and run offsets
of 3% is split in at most 4.3% of cases, and a 2x split is found with its repetitions in 98% or
more at 10% noise (in 72-73% at 20%: four seconds of such noise are too few).

**A cliff inside a repetition** is found by the burst detector's rule, with its defaults
(analysis.core.segments.find_cliffs): a lasting, abrupt drop of at least 25%, with at least 10 s
after it and segments of at least 5 s, so only a repetition of 15 s or more can show one (the
standard profile's 30 s can; the quick profile's 4 s cannot, and a repetition that straddles the
cliff there stands at a level between the two, and is left out of the noise as the noisiest).
A repetition with a cliff measured two states: it is a regime of its own, with its cliff, and
is left out of the noise estimate (its spread is the drop, not noise).

Worked example (the sample report's 128 KiB sequential write, three repetitions of 4 s)::

    >>> import numpy as np
    >>> r = split_regimes([np.array([201.0, 199, 200, 200]), np.array([198.0, 202, 200, 201]),
    ...                    np.array([20.0, 21, 19, 20])])
    >>> [(g.reps, g.level_MBps) for g in r.regimes]
    [((0, 1), 200.0), ((2,), 20.0)]
    >>> r.description
    '2 at 200 MB/s (reps 1-2); 1 at 20 MB/s after (rep 3)'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.core.segments import DEFAULT_CLIFF, Cliff, find_cliffs

# Standard errors a gap between two levels must span (calibrated: see the module docstring)
Z = 4.5
MIN_DROP_PCT = DEFAULT_CLIFF["min_drop_pct"]
MAX_PHI = 0.9  # the autocorrelation the standard error allows for, at most
MIN_SECONDS = 2  # a repetition's own noise needs two seconds at least
TOO_SHORT = f"not judged: no repetition of {MIN_SECONDS} s or more"


@dataclass(frozen=True)
class Regime:
    """Repetitions at one level, or one repetition that held a cliff."""

    reps: tuple[int, ...]       # 0-based positions in run order, ascending
    level_MBps: float           # median of all their seconds
    cliff: Cliff | None = None  # the first cliff when this is one repetition that held one
                                # (its time_s counts from that repetition's first second)


@dataclass(frozen=True)
class Regimes:
    """The regimes of a case's repetitions (split_regimes)."""

    regimes: tuple[Regime, ...]  # fastest first; one when the case held one level
    rep_levels_MBps: tuple[float, ...]  # each repetition's median, in run order
    noise_cv: float             # the pooled per-second CV the gaps were judged against
    noise_phi: float            # and its pooled lag-1 autocorrelation (0 to MAX_PHI)
    description: str            # plain words for a table row

    @property
    def one_level(self) -> bool:
        """True when every repetition measured one state: one mean over them means something."""
        return len(self.regimes) == 1 and self.regimes[0].cliff is None

    @property
    def cliffs(self) -> tuple[tuple[int, float], ...]:
        """(repetition, second the cliff starts in it) for every repetition that held one."""
        return tuple((g.reps[0], g.cliff.time_s) for g in self.regimes if g.cliff is not None)


def split_regimes(reps: Sequence[np.ndarray], *, z: float = Z,
                  min_drop_pct: float = MIN_DROP_PCT) -> Regimes:
    """The regimes of a case's repetitions, from each one's per-second MB/s in run order (see the
    module docstring). Raises ValueError for no repetitions or a repetition with no seconds."""
    series = [np.asarray(r, dtype=np.float64).ravel() for r in reps]
    if not series:
        raise ValueError("no repetitions")
    for i, x in enumerate(series):
        if x.size == 0:
            raise ValueError(f"repetition {i + 1} has no per-second samples")
    levels = [float(np.median(x)) for x in series]
    # the burst detector's own rule and settings, not a second one
    cliffs = {i: c[0] for i, x in enumerate(series) if (c := find_cliffs(x, **DEFAULT_CLIFF))}
    steady = [i for i in range(len(series)) if i not in cliffs]
    cv, phi = pooled_noise([series[i] for i in steady], [levels[i] for i in steady])
    if not any(series[i].size >= MIN_SECONDS for i in steady):
        # no repetition long enough to show its own noise: no gap can be judged beyond it, and
        # one of 25% alone would split a case on a second's jitter (a 1 s repetition of a file)
        return not_judged(levels)
    # seconds that resemble their neighbours (AR(1) phi) are worth fewer independent ones
    per_second_var = cv * cv * (1.0 + phi) / (1.0 - phi)
    keep = 1.0 - min_drop_pct / 100.0
    groups: list[list[int]] = []
    for i in sorted(steady, key=lambda i: -levels[i]):
        if groups:
            j = groups[-1][-1]
            se = math.sqrt(per_second_var * (1.0 / series[i].size + 1.0 / series[j].size))
            if not _apart(levels[j], levels[i], keep, z * se):
                groups[-1].append(i)
                continue
        groups.append([i])
    found = [Regime(tuple(sorted(g)), float(np.median(np.concatenate([series[i] for i in g]))))
             for g in groups]
    found += [Regime((i,), levels[i], c) for i, c in cliffs.items()]
    found.sort(key=lambda g: (-g.level_MBps, g.reps))
    return Regimes(tuple(found), tuple(levels), cv, phi, describe(found))


def not_judged(levels: Sequence[float]) -> Regimes:
    """The repetitions as one regime, TOO_SHORT to judge (each repetition's level given, NaN
    where it logged not even one whole second): their row keeps its mean, and says so."""
    whole = Regime(tuple(range(len(levels))), float(np.nanmedian(levels)) if
                   not all(math.isnan(v) for v in levels) else math.nan)
    return Regimes((whole,), tuple(levels), 0.0, 0.0, TOO_SHORT)


def pooled_noise(series: Sequence[np.ndarray], levels: Sequence[float]) -> tuple[float, float]:
    """(CV, phi) of the per-second noise: each repetition's seconds relative to its own median,
    their spread about their mean pooled over the repetitions (n - 1 each), and their lag-1
    autocorrelation pooled the same way, within 0 and MAX_PHI (a few seconds estimate it low,
    never usefully below 0). With three repetitions or more the noisiest is left out: one that
    straddles a cliff too short for the burst rule to see holds a drop, not noise, and would
    hide every other gap. (0, 0) when no repetition has two seconds at a positive level."""
    parts = []  # (sum of squares, sum of lag-1 products, degrees of freedom) per repetition
    for x, level in zip(series, levels, strict=True):
        if x.size < 2 or level <= 0:
            continue
        rel = x / level - float(np.mean(x / level))
        parts.append((float(np.sum(rel * rel)), float(np.sum(rel[1:] * rel[:-1])), x.size - 1))
    if len(parts) >= 3:
        parts.remove(max(parts, key=lambda p: p[0] / p[2]))
    ss, lag, df = (sum(p[k] for p in parts) for k in range(3))
    if not df or ss <= 0:
        return 0.0, 0.0
    return math.sqrt(ss / df), min(MAX_PHI, max(0.0, lag / ss))


def _apart(faster: float, slower: float, keep: float, min_log_gap: float) -> bool:
    """Do two levels stand in different regimes: the drop, and a gap beyond the noise."""
    if faster <= 0 or slower > keep * faster:
        return False
    return slower <= 0 or math.log(faster / slower) >= min_log_gap


def _reps_text(reps: Sequence[int]) -> str:
    """1-based, as a reader counts them: 'rep 3', 'reps 1-2', 'reps 1, 3'."""
    numbers = [r + 1 for r in reps]
    if len(numbers) == 1:
        return f"rep {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"reps {numbers[0]}-{numbers[-1]}"
    return "reps " + ", ".join(map(str, numbers))


def mbps_text(value: float) -> str:
    """A rate as the regimes' words print it: three figures, whole MB/s from 100 up, with thousands separated as the tables do."""
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def describe(regimes: Sequence[Regime]) -> str:
    """'2 at 200 MB/s (reps 1-2); 1 at 20 MB/s after (rep 3)': each regime, fastest first, and
    'after' where a slower regime ran wholly after every faster one (the drive fell behind, as
    a write cache that fills does); a repetition that held a cliff says where it fell."""
    parts = []
    for k, g in enumerate(regimes):
        faster = [r for h in regimes[:k] for r in h.reps]
        after = " after" if faster and min(g.reps) > max(faster) else ""
        if g.cliff is not None:
            parts.append(f"1 fell from {mbps_text(g.cliff.before_MBps)} to "
                         f"{mbps_text(g.cliff.after_MBps)} MB/s at {g.cliff.time_s:g} s "
                         f"({_reps_text(g.reps)})")
        else:
            parts.append(f"{len(g.reps)} at {mbps_text(g.level_MBps)} MB/s{after} "
                         f"({_reps_text(g.reps)})")
    return "; ".join(parts)
