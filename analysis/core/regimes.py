"""A case's write repetitions split by regime: which repetitions measured which state of the drive.

An SSD writes at several speeds (into its write cache, after the cache fills, in steady state),
and a case's repetitions, run one after another, each measure whichever state the drive was in.
One mean over a burst repetition and an after-the-cliff one describes neither. This module reads
each repetition's per-second write rate (MB/s = 10^6 B/s, as
``analysis.fio.log_series.per_second(...).total()`` gives it from fio's 1 s bandwidth log) and
says which repetitions stand at one level.

**The rule.** A repetition's level, for the test, is the mean of its seconds; the repetitions
are sorted by it, fastest first, and cut where the two sides differ most (binary segmentation:
each side is then cut again the same way). A cut stands when the slower side's mean is

* at least ``min_drop_pct`` (25%) below the faster side's: the cliff rule's own drop
  (analysis.core.segments.DEFAULT_CLIFF), so a run-to-run offset of a few % never splits a case
  however long its repetitions; and
* further below it than the per-second noise explains: ln(faster / slower) is at least ``z``
  (Z) standard errors of that log ratio. Each side's mean pools all its seconds, so two
  repetitions at one level weigh against the third with eight seconds, not four. The noise is the
  spread of every repetition's seconds about its own mean, relative to it (CV), and their lag-1
  autocorrelation (phi), pooled over the repetitions: seconds that resemble their neighbours are
  worth fewer independent ones (AR(1): ``mean_variance_factor``). Four seconds cannot estimate
  phi (the lag-1 estimate of four points averages about -0.25 whatever phi is), so the rule
  assumes at least PHI_FLOOR (0.3). One repetition far noisier than the others (an F test at
  99.9%: a 4 s repetition that straddles a cliff holds a drop, not noise) is left out of the
  noise, lest it hide every other gap.

The cut's sides become regimes; the level a regime reports is the median of all its seconds
(one stalled second does not move it). Z is calibrated on seeded simulations
(bench/simulations/regimes_sim.py, `bash bench/statistics --only regimes`; docs/methodology.md
quotes the rates it measured): at 3 repetitions of 4 s, the quick profile's, a one-level case
with 10-30% per-second noise, AR(1) phi up to 0.3 and run offsets of 3% is split in at most
3.8% of cases, and a 2x split is found with its repetitions in 97% or more up to 15% noise, in
86% at 20% and 42-49% at 30%. Four seconds hold little more: with the noise given, not
estimated, the same cut finds 94-97% at 20% and 85% at 30% (bench/README.md).

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
from scipy.stats import f as f_dist

from analysis.core.segments import DEFAULT_CLIFF, Cliff, find_cliffs

# Standard errors a cut between two sides must span (calibrated: see the module docstring)
Z = 3.0
PHI_FLOOR = 0.3  # the autocorrelation assumed at least: a few seconds cannot estimate it
NOISIER = 0.999  # an F test's level: a repetition this much noisier than the rest is a drop
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
    means = [float(np.mean(x)) for x in series]  # what the cut tests
    levels = tuple(float(np.median(x)) for x in series)  # what a regime reports
    # the burst detector's own rule and settings, not a second one
    cliffs = {i: c[0] for i, x in enumerate(series) if (c := find_cliffs(x, **DEFAULT_CLIFF))}
    steady = [i for i in range(len(series)) if i not in cliffs]
    if not any(series[i].size >= MIN_SECONDS for i in steady):
        # no repetition long enough to show its own noise: no gap can be judged beyond it, and
        # one of 25% alone would split a case on a second's jitter (a 1 s repetition of a file)
        return not_judged(levels)
    cv, phi = pooled_noise([series[i] for i in steady], [means[i] for i in steady])
    phi = max(phi, PHI_FLOOR)
    keep = 1.0 - min_drop_pct / 100.0

    def log_var(side: Sequence[int]) -> float:
        """The variance of ln(the side's mean of seconds), each repetition's noise AR(1)."""
        total = sum(series[i].size for i in side)
        return cv * cv * sum(series[i].size * mean_variance_factor(series[i].size, phi)
                             for i in side) / (total * total)

    def cut(side: list[int]) -> list[list[int]]:
        order = sorted(side, key=lambda i: -means[i])
        best: tuple[float, int] | None = None
        for k in range(1, len(order)):
            fast, slow = order[:k], order[k:]
            faster, slower = (float(np.mean(np.concatenate([series[i] for i in g])))
                              for g in (fast, slow))
            if faster <= 0 or slower > keep * faster:
                continue
            se = math.sqrt(log_var(fast) + log_var(slow))
            t = math.inf if slower <= 0 or se == 0 else math.log(faster / slower) / se
            if best is None or t > best[0]:
                best = (t, k)
        if best is None or best[0] < z:
            return [side]
        return cut(order[:best[1]]) + cut(order[best[1]:])

    found = [Regime(tuple(sorted(g)), float(np.median(np.concatenate([series[i] for i in g]))))
             for g in cut(steady)] if steady else []
    found += [Regime((i,), levels[i], c) for i, c in cliffs.items()]
    found.sort(key=lambda g: (-g.level_MBps, g.reps))
    return Regimes(tuple(found), levels, cv, phi, describe(found))


def mean_variance_factor(n: int, phi: float) -> float:
    """n x var(mean of n seconds) / var(ln of one second's share), as the pooled CV measures it,
    for AR(1) seconds: the mean's own inflation 1 + 2 sum (1 - k/n) phi^k, over the within-
    repetition spread's deflation ((n - that) / (n - 1): neighbours alike spread less about
    their mean). 1 at phi = 0; 1.9 at four seconds and phi = 0.3."""
    if n < 2:
        return 1.0
    inflation = 1.0 + 2.0 * sum((1.0 - k / n) * phi ** k for k in range(1, n))
    return inflation * (n - 1) / (n - inflation)


def not_judged(levels: Sequence[float]) -> Regimes:
    """The repetitions as one regime, TOO_SHORT to judge (each repetition's level given, NaN
    where it logged not even one whole second): their row keeps its mean, and says so."""
    whole = Regime(tuple(range(len(levels))), float(np.nanmedian(levels)) if
                   not all(math.isnan(v) for v in levels) else math.nan)
    return Regimes((whole,), tuple(levels), 0.0, 0.0, TOO_SHORT)


def pooled_noise(series: Sequence[np.ndarray], levels: Sequence[float]) -> tuple[float, float]:
    """(CV, phi) of the per-second noise: each repetition's seconds relative to its own level,
    their spread about their mean pooled over the repetitions (n - 1 each), and their lag-1
    autocorrelation pooled the same way, within 0 and MAX_PHI (a few seconds estimate it low,
    never usefully below 0). With three repetitions or more, the noisiest is left out when an F
    test at NOISIER says it is noisier than the rest: one that straddles a cliff too short for
    the burst rule to see holds a drop, not noise, and would hide every other gap. (0, 0) when
    no repetition has two seconds at a positive level."""
    parts = []  # (sum of squares, sum of lag-1 products, degrees of freedom) per repetition
    for x, level in zip(series, levels, strict=True):
        if x.size < 2 or level <= 0:
            continue
        rel = x / level - float(np.mean(x / level))
        parts.append((float(np.sum(rel * rel)), float(np.sum(rel[1:] * rel[:-1])), x.size - 1))
    if len(parts) >= 3:
        worst = max(parts, key=lambda p: p[0] / p[2])
        rest = [p for p in parts if p is not worst]
        ss, df = sum(p[0] for p in rest), sum(p[2] for p in rest)
        if ss <= 0 or worst[0] / worst[2] / (ss / df) > f_dist.ppf(NOISIER, worst[2], df):
            parts = rest
    ss, lag, df = (sum(p[k] for p in parts) for k in range(3))
    if not df or ss <= 0:
        return 0.0, 0.0
    return math.sqrt(ss / df), min(MAX_PHI, max(0.0, lag / ss))


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
