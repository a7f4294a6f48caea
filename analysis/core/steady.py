"""SNIA PTS's steady state: one rule, for the sustained state's preconditioning rounds and for
§6's burst.

**Rounds.** Each round is the mean of the tracked variable over one round: the sustained state
runs each round as one fio run of ``--round`` seconds (analysis.run.steady_rounds); §6 cuts its
one long write, logged per second, into rounds of ``round_s`` (60 s, SNIA's minute).

**The window.** ``window`` (5) consecutive rounds are steady when their range (max - min) is
within ``range_pct`` (20%) of their mean and their least-squares line moves at most
``slope_pct`` (10%) of the mean across the window (|slope| x (window - 1) rounds).

**Which windows are judged.** Only those that
* start at or after the last lasting cliff (analysis.core.segments): a transient, such as a write
  cache running out or garbage collection starting once the spare area is used, is never inside
  the window judged, and a drive's fresh level before it is never taken for its steady state;
* end at or after ``min_end``: the round by which the rounds have written what the rule asks for
  before any verdict (the sustained state: the region once, in the rounds' own workload, after
  the sequential fill). Five flat rounds on a fresh drive's fast plateau would pass otherwise.
The verdict is the first window that passes. Judged after every round, as the run loop does, the
first window that passes is the last one, ending at the round just run: the drive is steady when
it is measured, as SNIA's rule asks.

**Several tracking variables** (a SNIA PTS test's: the IOPS test tracks 4 KiB 0/100, 64 KiB
65/35 and 1024 KiB 100/0) are judged together by ``judge_together``: a window is steady when
each variable passes this same rule over the same rounds. Nothing else is added: each variable's
verdict over the window is ``judge``'s.

>>> ok = judge_together({"a": [100, 101, 99, 100, 100], "b": [50, 50, 51, 49, 50]}, round_s=60)
>>> ok.reached, (ok.first_round, ok.last_round)
(True, (1, 5))
>>> late = judge_together({"a": [100, 101, 99, 100, 100, 100],
...                        "b": [80, 55, 50, 50, 50, 50]}, round_s=60)
>>> late.reached, (late.first_round, late.last_round), late.verdicts["b"].level
(True, (2, 6), 51.0)
>>> never = judge_together({"a": [100] * 6, "b": [100, 90, 80, 70, 60, 50]}, round_s=60)
>>> never.reached, never.unsteady
(False, ('b',))

Only complete rounds of a per-second series count, with one allowance: fio does not log the
window that closes as the job exits, so a run of exactly k rounds logs one second less. Given the
run's configured length (``planned_s``), a last round lacking only that final sample counts,
averaged over the samples it has. A quick 30 s run has no complete 1-minute round: the verdict
says so; ``round_s`` can be shortened to judge it, and the verdict then names its rounds as
shorter than SNIA's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

SNIA_ROUND_S = 60.0
DEFAULT_STEADY = {"round_s": SNIA_ROUND_S, "window": 5, "range_pct": 20.0, "slope_pct": 10.0}


@dataclass(frozen=True)
class SteadyState:
    """SNIA PTS steady-state verdict over rounds of round_s."""

    reached: bool
    reason: str             # 'reached' | 'not enough rounds' | 'not enough written' | 'range' |
                            # 'slope' | 'range and slope' (neither ever held) | 'not together'
                            # (each held, apart)
    first_round: int | None  # 1-based rounds of the window judged (the steady one if reached,
    last_round: int | None   # else the one closest to passing); None when none was judged
    level: float | None      # that window's mean, in ``unit``
    range_pct: float | None  # that window's (max - min) / mean, %
    slope_pct: float | None  # that window's |slope| x (window - 1) / mean, %
    best_range_pct: float | None   # the smallest range over all windows judged, %
    best_slope_pct: float | None   # the smallest slope excursion over all windows judged, %
    rounds: tuple           # mean of each complete round, in ``unit``
    n_rounds: int
    round_s: float
    window: int
    range_limit_pct: float
    slope_limit_pct: float
    run_s: float            # length of the series judged
    message: str            # one sentence for the report
    first_judged: int = 1   # 1-based first round a window may start at (after the last cliff)
    min_end: int = 0        # 1-based round a window must end at or after (0: any)
    unit: str = "MB/s"

    @property
    def snia_rounds(self) -> bool:
        """True when the rounds are SNIA's 1-minute rounds."""
        return self.round_s == SNIA_ROUND_S


def window_line(values: Sequence[float]) -> tuple[float, float]:
    """The window's least-squares line through its rounds 0, 1, ...: (its value at the first
    round, its slope per round), the line the rule judges and the PTS page draws.

    >>> window_line([100, 102, 104, 106, 108])
    (100.0, 2.0)
    """
    n = len(values)
    if n < 2:
        raise ValueError("a steady-state window needs at least 2 rounds")
    mean, x_mean = sum(values) / n, (n - 1) / 2
    slope = (sum((i - x_mean) * (v - mean) for i, v in enumerate(values))
             / sum((i - x_mean) ** 2 for i in range(n)))
    return mean - slope * x_mean, slope


def window_stats(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, range %, slope excursion %) of one window of round values (at least 2)."""
    _, slope = window_line(values)
    mean = sum(values) / len(values)
    if not mean > 0:
        return mean, math.inf, math.inf
    excursion = 100.0 * abs(slope) * (len(values) - 1) / mean
    return mean, 100.0 * (max(values) - min(values)) / mean, excursion


def rounds_kind(round_s: float) -> str:
    """'1-minute rounds', or '2 s rounds, shorter than SNIA's 1 minute'."""
    if round_s == SNIA_ROUND_S:
        return "1-minute rounds"
    than = "shorter than" if round_s < SNIA_ROUND_S else "not"
    return f"{round_s:g} s rounds, {than} SNIA's 1 minute"


def _fmt_rounds(first: int, last: int) -> str:
    return f"rounds {first}\u2013{last}"


def judge(rounds: Sequence[float], *, round_s: float, window: int = 5,
          range_pct: float = 20.0, slope_pct: float = 10.0, first: int = 0, min_end: int = 0,
          after: str = "", gate: str = "", run_s: float | None = None, unit: str = "MB/s",
          fmt: Callable[[float], str] | None = None) -> SteadyState:
    """The verdict over round values (see the module docstring). ``first``: 0-based first round
    a window may start at (the first whole round after the last lasting cliff); ``min_end``:
    1-based round a window must end at or after; ``after`` and ``gate``: the clauses that say
    why (" after the cliff at 27 s", "the rounds wrote the region once by round 12")."""
    if window < 2:
        raise ValueError("window must be at least 2 rounds")
    fmt = fmt or (lambda v: f"{v:.0f} {unit}")
    n_rounds = len(rounds)
    run_s = n_rounds * round_s if run_s is None else run_s
    kind = rounds_kind(round_s)
    first = min(max(0, first), n_rounds)
    common = {"rounds": tuple(float(r) for r in rounds), "n_rounds": n_rounds,
              "round_s": float(round_s), "window": int(window),
              "range_limit_pct": float(range_pct), "slope_limit_pct": float(slope_pct),
              "run_s": float(run_s), "first_judged": first + 1, "min_end": int(min_end),
              "unit": unit}
    starts = [s for s in range(first, n_rounds - window + 1) if s + window >= min_end]
    if not starts:
        if n_rounds < window:
            reason = "not enough rounds"
            msg = (f"steady state not judged: the rule needs {window} complete rounds of "
                   f"{round_s:g} s ({window * round_s:g} s); the run has {run_s:g} s "
                   f"({n_rounds} complete)")
        elif n_rounds - first < window:
            reason = "not enough rounds"
            msg = (f"steady state not judged: the rule needs {window} complete rounds of "
                   f"{round_s:g} s{after}; the run has {n_rounds - first} of its {n_rounds} "
                   "rounds there")
        else:
            reason = "not enough written"
            msg = f"steady state not judged: {gate}"
        return SteadyState(reached=False, reason=reason, first_round=None, last_round=None,
                           level=None, range_pct=None, slope_pct=None, best_range_pct=None,
                           best_slope_pct=None, message=msg, **common)
    judged = [(s, *window_stats(rounds[s:s + window])) for s in starts]
    best_range = min(j[2] for j in judged)
    best_slope = min(j[3] for j in judged)
    context = f"{kind}{',' if after else ''}{after}{'; ' + gate if gate else ''}"
    for start, mean, rng, exc in judged:
        if rng <= range_pct and exc <= slope_pct:
            msg = (f"steady state reached at {_fmt_rounds(start + 1, start + window)} of "
                   f"{n_rounds} ({context}): {fmt(mean)}, range {rng:.1f}% \u2264 "
                   f"{range_pct:g}%, slope excursion {exc:.1f}% \u2264 {slope_pct:g}%")
            return SteadyState(reached=True, reason="reached", first_round=start + 1,
                               last_round=start + window, level=mean, range_pct=rng,
                               slope_pct=exc, best_range_pct=best_range,
                               best_slope_pct=best_slope, message=msg, **common)
    ok_range = any(j[2] <= range_pct for j in judged)
    ok_slope = any(j[3] <= slope_pct for j in judged)
    reason = {(False, False): "range and slope", (False, True): "range",
              (True, False): "slope", (True, True): "not together"}[ok_range, ok_slope]
    # the window closest to passing: the smallest worst excess over the two limits
    start, mean, rng, exc = min(judged, key=lambda j: max(j[2] / range_pct, j[3] / slope_pct))
    why = {"range": f"no window's range was within {range_pct:g}% (best {best_range:.1f}%)",
           "slope": f"the range held but no window's line moved less than {slope_pct:g}% "
                    f"(best {best_slope:.1f}%): still trending",
           "range and slope": f"neither held (best range {best_range:.1f}%, best line "
                              f"excursion {best_slope:.1f}%)",
           "not together": "each held in some window but never both in the same one"}[reason]
    msg = (f"steady state not reached in {n_rounds} rounds ({context}): {why}; closest "
           f"{_fmt_rounds(start + 1, start + window)}: {fmt(mean)}, range {rng:.1f}%, "
           f"slope excursion {exc:.1f}%")
    return SteadyState(reached=False, reason=reason, first_round=start + 1,
                       last_round=start + window, level=mean, range_pct=rng, slope_pct=exc,
                       best_range_pct=best_range, best_slope_pct=best_slope, message=msg,
                       **common)


def steady_state(bw, round_s: float = 60.0, window: int = 5, range_pct: float = 20.0,
                 slope_pct: float = 10.0, *, seconds=None, planned_s: float | None = None,
                 from_s: float = 0.0) -> SteadyState:
    """The verdict over a per-second bandwidth series cut into rounds of ``round_s``
    (``planned_s``: the run's configured length, for fio's unlogged final second; ``from_s``:
    the last lasting cliff: the first round judged is the first that starts at or after it)."""
    import numpy as np  # here, not at the top: the run loop's helper imports this module

    from analysis.core.segments import series

    x, dt, _ = series(bw, seconds)
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
    first = math.ceil(round(from_s / dt, 6) / per_round) if from_s > 0 else 0
    after = f" after the cliff at {from_s:g} s" if first else ""
    return judge(list(rounds), round_s=round_s, window=window, range_pct=range_pct,
                 slope_pct=slope_pct, first=first, after=after, run_s=float(x.size * dt))


@dataclass(frozen=True)
class SteadyTogether:
    """Several tracking variables judged over the same windows (judge_together)."""

    reached: bool
    first_round: int | None   # 1-based rounds of the window (the steady one, else the last judged)
    last_round: int | None
    verdicts: dict            # variable -> its SteadyState over that window (judge's)
    n_rounds: int
    message: str

    @property
    def unsteady(self) -> tuple[str, ...]:
        """The variables that did not pass over the window."""
        return tuple(name for name, v in self.verdicts.items() if not v.reached)


def judge_together(tracks: Mapping[str, Sequence[float]], *, round_s: float, window: int = 5,
                   range_pct: float = 20.0, slope_pct: float = 10.0,
                   units: Mapping[str, str] | None = None) -> SteadyTogether:
    """The first window in which every variable of ``tracks`` (name -> its round values, all
    of the same length) passes ``judge``'s rule; not reached: each variable's verdict over the
    last window, and the message names those that failed."""
    if not tracks:
        raise ValueError("judge_together needs at least one tracking variable")
    n_rounds = min(len(v) for v in tracks.values())
    units = units or {}

    def over(end: int) -> dict:
        # each variable judged over the one window ending at round `end` (1-based)
        return {name: judge(list(values[:end]), round_s=round_s, window=window,
                            range_pct=range_pct, slope_pct=slope_pct, first=end - window,
                            unit=units.get(name, "MB/s"))
                for name, values in tracks.items()}

    for end in range(window, n_rounds + 1):
        verdicts = over(end)
        if all(v.reached for v in verdicts.values()):
            msg = (f"steady state reached at {_fmt_rounds(end - window + 1, end)} of {n_rounds} "
                   f"({rounds_kind(round_s)}), all {len(verdicts)} tracking variables together: "
                   + "; ".join(f"{name} {v.level:,.4g} {v.unit} (range {v.range_pct:.1f}%, "
                               f"line {v.slope_pct:.1f}%)" for name, v in verdicts.items()))
            return SteadyTogether(True, end - window + 1, end, verdicts, n_rounds, msg)
    if n_rounds < window:
        verdicts = {name: judge(list(values[:n_rounds]), round_s=round_s, window=window,
                                unit=units.get(name, "MB/s")) for name, values in tracks.items()}
        msg = (f"steady state not judged: the rule needs {window} rounds; {n_rounds} so far")
        return SteadyTogether(False, None, None, verdicts, n_rounds, msg)
    verdicts = over(n_rounds)
    failed = [f"{name} (range {v.range_pct:.1f}%, line {v.slope_pct:.1f}%)"
              for name, v in verdicts.items() if not v.reached]
    msg = (f"steady state not reached in {n_rounds} rounds ({rounds_kind(round_s)}): in "
           f"{_fmt_rounds(n_rounds - window + 1, n_rounds)} not steady: {', '.join(failed)} "
           f"(limits: range {range_pct:g}%, line {slope_pct:g}%)")
    return SteadyTogether(False, n_rounds - window + 1, n_rounds, verdicts, n_rounds, msg)
