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
  however long its repetitions;
* as far below it by the median of each side's seconds: one fast or stalled second (a throttle
  that dispatches a slice late on a busy host, a new fio's first writes) moves a 4 s
  repetition's mean by a quarter, never its median, and a regime's level is that median; and
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
4.1% of cases, and a 2x split is found with its repetitions in 97% or more up to 15% noise, in
86% at 20% and 42-49% at 30%. Four seconds hold little more: with the noise given, not
estimated, the same cut finds 94-97% at 20% and 85% at 30% (bench/README.md).

**A cliff inside a repetition** is found by the burst detector's rule, with its defaults
(analysis.core.segments.find_cliffs): a lasting, abrupt drop of at least 25%, with at least 10 s
after it and segments of at least 5 s, so only a repetition of 15 s or more can show one (the
standard profile's 30 s can; the quick profile's 4 s cannot: see below).
A repetition with a cliff measured two states: it is a regime of its own, with its cliff, and
is left out of the noise estimate (its spread is the drop, not noise).

**A repetition too short for that rule** (the quick profile's 4 s) that crossed the cliff is
found from its own seconds, against the other repetitions (three at least: two to judge one
against). Its seconds split into a head and a tail where their spread about their own means is
least, and it crossed when

* the tail is at least ``min_drop_pct`` below the head, by mean and by median (up to
  MAX_GAP_S seconds between them may stand apart from both, each as far as a cliff: the fall
  took them);
* ln(head / tail) spans ``z_step`` (Z_STEP) standard errors of the others' per-second noise
  (pooled_noise, AR(1) as above); higher than Z, as the step is the best of several places in
  each of several repetitions;
* what is left about each side's mean is no noisier than the others' seconds (the F test
  above): a stall in the middle ([200, 200, 40, 200]) is no step; and
* a side of one second stands at a level another repetition measured, or is the first second
  at ALONE_RATIO x the rest: otherwise it is one stalled or fast second, not a state (a late
  throttle slice lifts a second about 2x; a cache an idle refilled, any multiple).

Its cliff is that step (time_s: the seconds before it, and half of those it took to fall), and
it is a regime of its own. Measured (bench): found at the right second in 99.8-100% of cases at
5% noise, 58-73% at 10% and 19-26% at 15% (phi <= 0.3); a crossing it misses stands as a regime
of its own between the two levels, or by its median in the slower one.

Worked example (the sample report's 128 KiB sequential write, three repetitions of 4 s)::

    >>> import numpy as np
    >>> r = split_regimes([np.array([201.0, 199, 200, 200]), np.array([198.0, 202, 200, 201]),
    ...                    np.array([20.0, 21, 19, 20])])
    >>> [(g.reps, g.level_MBps) for g in r.regimes]
    [((0, 1), 200.0), ((2,), 20.0)]
    >>> r.description
    '2 at 200 MB/s (reps 1-2); 1 at 20 MB/s after (rep 3)'

and a model drive's (80 MB/s, then 8) whose cache ran out a second into repetition 2::

    >>> crossed = split_regimes([np.array([80.0, 81, 79, 80]), np.array([80.0, 8.1, 7.9, 8]),
    ...                          np.array([8.0, 8.1, 7.9, 8.1])])
    >>> crossed.description
    '1 at 80 MB/s (rep 1); 1 fell from 80 to 8 MB/s at 1 s (rep 2); 1 at 8.05 MB/s after (rep 3)'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from analysis.core.segments import DEFAULT_CLIFF, Cliff, find_cliffs

# Standard errors a cut between two sides must span (calibrated: see the module docstring)
Z = 3.0
Z_STEP = 5.0  # and a step inside a short repetition (the best of several it could be)
PHI_FLOOR = 0.3  # the autocorrelation assumed at least: a few seconds cannot estimate it
NOISIER = 0.999  # an F test's level: a repetition this much noisier than the rest is a drop
MIN_DROP_PCT = DEFAULT_CLIFF["min_drop_pct"]
MAX_PHI = 0.9  # the autocorrelation the standard error allows for, at most
MIN_SECONDS = 2  # a repetition's own noise needs two seconds at least
MAX_GAP_S = 2  # seconds a short repetition may take to fall (a throttle's queue drains late)
# A first second stands alone at this multiple of the rest: one throttle slice dispatched late
# lifts a second to about 2x (2.2x under load, v34); a cache an idle refilled writes its first
# second at any multiple (10x on the NVMe VM: 200 then 20 MB/s)
ALONE_RATIO = 3.0
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


def split_regimes(reps: Sequence[np.ndarray], *, z: float = Z, z_step: float = Z_STEP,
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
    keep = 1.0 - min_drop_pct / 100.0
    got = crossed([series[i] for i in steady], [means[i] for i in steady], keep, z_step)
    if got is not None:  # crossed the cliff within its few seconds
        cliffs[steady[got[0]]] = got[1]
        steady.pop(got[0])
    cv, phi = pooled_noise([series[i] for i in steady], [means[i] for i in steady])
    phi = max(phi, PHI_FLOOR)

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
            pooled = [np.concatenate([series[i] for i in g]) for g in (fast, slow)]
            faster, slower = (float(np.mean(x)) for x in pooled)
            if faster <= 0 or slower > keep * faster or (
                    np.median(pooled[1]) > keep * np.median(pooled[0])):
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


@lru_cache(maxsize=1024)
def _f_crit(df1: int, df2: int) -> float:
    """The F test's critical ratio at NOISIER (a few pairs of repetition lengths recur: scipy's
    quantile is the rule's slowest step)."""
    from scipy.special import fdtri  # not scipy.stats: its import cost every analysis 1.1 s
    return float(fdtri(df1, df2, NOISIER))


def _noise_parts(series: Sequence[np.ndarray], levels: Sequence[float]) -> dict[int, tuple]:
    """Each repetition's (sum of squares, sum of lag-1 products, degrees of freedom) of its
    seconds relative to its own level, by position; none for one under two seconds or at 0."""
    parts = {}
    for i, (x, level) in enumerate(zip(series, levels, strict=True)):
        if x.size < 2 or level <= 0:
            continue
        rel = x / level - float(np.mean(x / level))
        parts[i] = (float(np.sum(rel * rel)), float(np.sum(rel[1:] * rel[:-1])), x.size - 1)
    return parts


def _noisiest_apart(parts: dict[int, tuple]) -> int | None:
    """The repetition the noise leaves out: with three repetitions or more, the noisiest, when an
    F test at NOISIER says it is noisier than the rest (one that straddles a cliff too short for
    the burst rule to see holds a drop, not noise, and would hide every other gap)."""
    if len(parts) < 3:
        return None
    worst = max(parts, key=lambda i: parts[i][0] / parts[i][2])
    ss = sum(p[0] for i, p in parts.items() if i != worst)
    df = sum(p[2] for i, p in parts.items() if i != worst)
    noisier = ss <= 0 or (parts[worst][0] / parts[worst][2] / (ss / df)
                          > _f_crit(parts[worst][2], df))
    return worst if noisier else None


def _pooled(series: Sequence[np.ndarray], levels: Sequence[float]) -> tuple[float, float, int]:
    """(CV, phi, degrees of freedom) of the per-second noise: pooled_noise, with the degrees of
    freedom its CV rests on."""
    parts = _noise_parts(series, levels)
    parts.pop(_noisiest_apart(parts), None)
    ss, lag, df = (sum(p[k] for p in parts.values()) for k in range(3))
    if not df or ss <= 0:
        return 0.0, 0.0, 0
    return math.sqrt(ss / df), min(MAX_PHI, max(0.0, lag / ss)), df


def pooled_noise(series: Sequence[np.ndarray], levels: Sequence[float]) -> tuple[float, float]:
    """(CV, phi) of the per-second noise: each repetition's seconds relative to its own level,
    their spread about their mean pooled over the repetitions (n - 1 each), and their lag-1
    autocorrelation pooled the same way, within 0 and MAX_PHI (a few seconds estimate it low,
    never usefully below 0), leaving out the one _noisiest_apart names. (0, 0) when no
    repetition has two seconds at a positive level."""
    return _pooled(series, levels)[:2]


def step_in(x: np.ndarray, others: Sequence[np.ndarray], other_levels: Sequence[float],
            keep: float, z: float) -> tuple[float, Cliff] | None:
    """(its t, the step) where repetition `x` crossed a cliff within its few seconds (module
    docstring): its seconds split into head and tail, with up to MAX_GAP_S seconds between
    them that stand apart from both (the fall took them), where their spread about their own
    means is least; the tail at most `keep` x the head by mean and by median; ln(head / tail)
    at least `z` standard errors of the other repetitions' noise (pooled_noise, AR(1) with phi
    at least PHI_FLOOR); and the spread left about each side's mean no noisier than theirs (an
    F test at NOISIER): a stall in the middle is no step. None otherwise."""
    n = x.size
    cv, phi, df_rest = _pooled(others, other_levels)
    if n < 2 or cv <= 0:
        return None
    phi = max(phi, PHI_FLOOR)

    def spread(k: int, gap: int) -> float:
        return sum(float(np.sum((side / np.mean(side) - 1.0) ** 2)) if np.mean(side) > 0 else 0.0
                   for side in (x[:k], x[k + gap:]))

    # (k, gap): head x[:k], tail x[k + gap:]; each second between them stands apart from both
    # as a cliff (min_drop_pct) does, or it belongs to one of them
    steps = [(k, gap) for gap in range(MAX_GAP_S + 1) for k in range(1, n - gap)
             if all(np.mean(x[k + gap:]) / keep <= v <= keep * np.mean(x[:k])
                    for v in x[k:k + gap])]
    k, gap = min(steps, key=lambda s: (spread(*s) / max(1, n - s[1] - 2), s[1]))
    head_s, tail_s = x[:k], x[k + gap:]
    head, tail = float(np.mean(head_s)), float(np.mean(tail_s))
    before, after = float(np.median(head_s)), float(np.median(tail_s))
    if head <= 0 or tail > keep * head or after > keep * before:
        return None
    # a side of one second is a stall or a spike unless another repetition stood at its level,
    # or it is the first second, ALONE_RATIO above the rest, where no late slice reaches: a
    # cache an idle refilled. A lone slow last second stays a stall (allowed, it split one-level
    # cases with 30% noise too often: bench/README.md)
    levels = [float(np.median(o)) for o in others]
    for side, level, alone in ((head_s, before, before >= ALONE_RATIO * after),
                               (tail_s, after, False)):
        if side.size < MIN_SECONDS and not alone and not any(keep * o <= level <= o / keep
                                                              for o in levels):
            return None
    df = n - gap - 2
    if df > 0 and spread(k, gap) / df / (cv * cv) > _f_crit(df, df_rest):
        return None
    se = cv * math.sqrt(mean_variance_factor(head_s.size, phi) / head_s.size
                        + mean_variance_factor(tail_s.size, phi) / tail_s.size)
    t = math.inf if tail <= 0 else math.log(head / tail) / se
    if t < z:
        return None
    return t, Cliff(index=k, time_s=k + gap / 2, before_MBps=before, after_MBps=after,
                    drop_pct=100.0 * (1.0 - after / before) if before > 0 else math.nan,
                    local_before_MBps=before, local_after_MBps=after,
                    written_GiB=float(np.sum(x[:k + gap])) * 1e6 / 2**30)


def crossed(series: Sequence[np.ndarray], means: Sequence[float], keep: float,
            z: float) -> tuple[int, Cliff] | None:
    """(position, its step) of the one repetition that crossed a cliff within its seconds, the
    clearest where several could have (step_in, each against the others); None without one or
    with fewer than three repetitions (no rest to judge one against)."""
    if len(series) < 3:
        return None
    found = []
    for i, x in enumerate(series):
        rest = [j for j in range(len(series)) if j != i]
        got = step_in(x, [series[j] for j in rest], [means[j] for j in rest], keep, z)
        if got is not None:
            found.append((got[0], i, got[1]))
    if not found:
        return None
    _, i, step = max(found, key=lambda f: f[0])
    return i, step


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
