"""The one test for an effect: is B's mean different from A's beyond the noise?

Every comparison the toolkit states goes through here: `compare`'s rows (two results trees), the
findings of a section (two points of one run: a mix against pure read, sequential against
random), and the drift of a point's rounds (--until-stable, the tables' `drifting` mark).

**Welch's t-test** over the repetitions (`welch`): t = (mean_b - mean_a) / se, se² = s_a²/n_a +
s_b²/n_b, degrees of freedom by Welch-Satterthwaite, p from Student's t. Two points of one run
are judged on their repetitions alone: they ran in the same shuffled rounds, so a drift of the
machine weighs on both.

**Between runs.** Two results trees are two runs, on different days, after different idle
times, in different thermal states: each tree's level moves by more than its repetitions show.
A tree's mean then varies by s²/n plus the variance between runs, tau², and se² = s_a²/n_a +
s_b²/n_b + 2 tau² (`Between`): tau² either known (a lab's measured figure, infinite degrees of
freedom), estimated from the history's runs of the drive (a random-effects estimate with its own
degrees of freedom, analysis.history.between), or, where neither is there, assumed as large as
the repetitions' own spread (`ratio` = 1: tau = 1 x each side's own sd), which holds the false-
alarm rate for any spread between runs up to the repetitions' own (bench/statistics).

**Many tests.** A comparison or a finding makes several tests; their p-values are adjusted
together by Benjamini-Hochberg (`bh_adjust`) and a difference is significant when its adjusted p
is below ALPHA. For a drive that did not change (every null true) that holds the chance of any
false "significant" at ALPHA.

**Trend** (`trend`): the least-squares slope of a point's values over its rounds (repetition k
runs in round k), in % of the mean per round, with the t-test of "no slope" on n - 2 degrees of
freedom, and an upper bound of the drift over the rounds measured.

Only scipy.special (Student's t), not scipy.stats: the run loop's helper imports this and must
start in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

ALPHA = 0.05
CONFIDENCE = 0.95
# Where neither the history nor the user gives the spread between runs: tau = this x each side's
# own repetition sd (per metric, so the default follows each metric's own noise).
BETWEEN_RATIO = 1.0


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom (fractional or inf: normal)."""
    from scipy.special import stdtr

    t, df = np.asarray(t, dtype=float), np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        p = np.where(np.isnan(t) | np.isnan(df) | (df <= 0), np.nan,
                     2.0 * stdtr(np.where(df > 0, df, 1.0), -np.abs(np.nan_to_num(t))))
    return float(p) if p.ndim == 0 else p


def t_quantile(df, q: float = 0.5 + CONFIDENCE / 2):
    from scipy.special import stdtrit

    return stdtrit(df, q)


@dataclass(frozen=True)
class Between:
    """The spread between runs added to a comparison of two trees: either `ratio` x each side's
    own repetition sd, or `rel_sd` (sd of a run's level, as a fraction of the mean) with its
    degrees of freedom (inf: given). `source` says where it came from, for the output."""
    ratio: float = 0.0
    rel_sd: float = 0.0
    df: float = math.inf
    source: str = "none"

    def label(self) -> str:
        if self.rel_sd > 0 or self.ratio == 0:
            return f"{self.rel_sd * 100:.1f}% ({self.source})"
        return f"{self.ratio:g} × the repetitions' sd ({self.source})"


NO_BETWEEN = Between()
DEFAULT_BETWEEN = Between(ratio=BETWEEN_RATIO, source="default: as large as the repetitions' spread")


def _parts(mean_a, std_a, n_a, mean_b, std_b, n_b, between: Between, scale):
    """(difference, its standard error, Welch-Satterthwaite df, not testable), vectorised."""
    ma, sa, na, mb, sb, nb = (np.asarray(v, dtype=float)
                              for v in (mean_a, std_a, n_a, mean_b, std_b, n_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        va = sa * sa * (1 / na + between.ratio ** 2)
        vb = sb * sb * (1 / nb + between.ratio ** 2)
        level = np.abs(ma if scale is None else np.asarray(scale, dtype=float))
        vr = 2 * (between.rel_sd * level) ** 2
        se2 = va + vb + vr
        terms = va * va / (na - 1) + vb * vb / (nb - 1)
        if math.isfinite(between.df):
            terms = terms + vr * vr / max(between.df, 1e-9)
        df = np.where(terms > 0, se2 * se2 / np.where(terms > 0, terms, 1.0), np.inf)
    bad = (np.isnan(ma) | np.isnan(sa) | np.isnan(mb) | np.isnan(sb) | (na < 2) | (nb < 2)
           | ~(se2 > 0))
    return mb - ma, np.sqrt(np.where(bad, np.nan, se2)), np.where(bad, np.nan, df), bad


def welch_arrays(mean_a, std_a, n_a, mean_b, std_b, n_b, between: Between = NO_BETWEEN,
                 scale=None):
    """Welch's test of B against A, vectorised: (t, df, two-sided p), NaN where not testable
    (a value missing, n < 2 on a side, or no spread at all). `scale` is the level a relative
    between-run sd applies to (default: A's mean)."""
    diff, se, df, bad = _parts(mean_a, std_a, n_a, mean_b, std_b, n_b, between, scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(bad, np.nan, diff / se)
    p = t_two_sided_p(t, df)
    if np.ndim(t) == 0:
        return float(t), float(df), float(p)
    return t, df, p


def difference_interval(mean_a: float, std_a: float, n_a: float, mean_b: float, std_b: float,
                        n_b: float, between: Between = NO_BETWEEN,
                        scale: float | None = None) -> tuple[float, float]:
    """The 95% interval of mean_b - mean_a that Welch's test (with the spread between runs, at
    `scale` as in welch_arrays) stands on; NaN where it is not testable."""
    diff, se, df, bad = _parts(mean_a, std_a, n_a, mean_b, std_b, n_b, between, scale)
    if bool(bad):
        return math.nan, math.nan
    half = float(t_quantile(float(df))) * float(se)
    return float(diff) - half, float(diff) + half


def welch(mean_a: float, std_a: float, n_a: float, mean_b: float, std_b: float, n_b: float,
          between: Between = NO_BETWEEN, scale: float | None = None) -> tuple[float, float, float]:
    """Welch's unequal-variance t-test of B against A: (t, df, two-sided p); NaN throughout when
    not testable: a value missing, n < 2 on either side (no sample std), or neither side has any
    spread (pooled percentiles snap to fio's buckets: two constants would make a one-bucket move
    infinitely significant). On logs, `scale` is 1: a relative spread between runs is a spread
    of the log itself (log(1.05) = 0.049), whatever unit the values were in."""
    values = (mean_a, std_a, n_a, mean_b, std_b, n_b)
    if any(v is None for v in values):
        return math.nan, math.nan, math.nan
    return welch_arrays(*values, between=between, scale=scale)


def bh_adjust(p, axis: int = -1):
    """Benjamini-Hochberg adjusted p-values along `axis`; NaN (not tested) stays NaN and is not
    counted among the tests. The textbook step-up: p_(i) m / i, made monotone from the largest
    down, capped at 1."""
    p = np.asarray(p, dtype=float)
    if p.size == 0:
        return p.copy()
    moved = np.moveaxis(p, axis, -1)
    tested = ~np.isnan(moved)
    m = tested.sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(tested, moved, np.inf), axis=-1, kind="stable")
    ranked = np.take_along_axis(np.where(tested, moved, np.inf), order, axis=-1)
    rank = np.arange(1, moved.shape[-1] + 1)
    with np.errstate(invalid="ignore"):
        scaled = ranked * m / rank
    scaled = np.minimum.accumulate(scaled[..., ::-1], axis=-1)[..., ::-1]
    out = np.empty_like(scaled)
    np.put_along_axis(out, order, np.minimum(scaled, 1.0), axis=-1)
    out = np.where(tested, out, np.nan)
    return np.moveaxis(out, -1, axis)


@dataclass(frozen=True)
class Change:
    """A mean against a reference mean, two points of one run: pct = value / reference - 1, in
    %; `spread_pct` the repetitions' spread of that difference (the two sample stds combined, in
    % of the reference); Welch's raw p, its p adjusted over the finding's comparisons (`p_adj`,
    the raw p until `adjusted`), the 95% interval of pct and its standard error. p is NaN, not
    tested, when a std or an n is unknown (a single repetition, a foreign JSON)."""
    value: float
    reference: float
    pct: float
    spread_pct: float
    p: float = math.nan
    p_adj: float = math.nan
    low_pct: float = math.nan
    high_pct: float = math.nan
    se_pct: float = math.nan
    df: float = math.nan

    @property
    def tested(self) -> bool:
        return not math.isnan(self.p)

    @property
    def significant(self) -> bool:
        """A difference the test shows (adjusted p < ALPHA); False when untested."""
        return bool(self.p_adj < ALPHA)

    @property
    def within_spread(self) -> bool | None:
        """The test does not show a difference: not a measured effect, "not resolved by this
        run" (None: not testable)."""
        return None if not self.tested else not self.significant

    def interval_text(self) -> str:
        """'+12% to +66%': the 95% interval of the difference. It is the test's own, before the
        finding's comparisons are adjusted for: where it leaves out no change and yet the
        adjusted test does not show one, it says so, lest the page read a difference into it."""
        text = f"{self.low_pct:+.0f}% to {self.high_pct:+.0f}%"
        if self.tested and not self.significant and (self.low_pct > 0 or self.high_pct < 0):
            text += f", unadjusted; adjusted p {self.p_adj:.2g}"
        return text.replace("-", "−")


def change(value: float, value_std: float, reference: float, reference_std: float,
           value_n: float | None = None, reference_n: float | None = None) -> Change:
    """`value` against `reference`, with Welch's test where both n are given (two points of one
    run: no spread between runs to add)."""
    if not reference or any(math.isnan(v) for v in (value, reference)):
        return Change(value, reference, math.nan, math.nan)
    pct = (value / reference - 1) * 100
    spread = math.hypot(value_std, reference_std) / reference * 100
    if value_n is None or reference_n is None:
        return Change(value, reference, pct, spread)
    _, df, p = welch(reference, reference_std, reference_n, value, value_std, value_n)
    if math.isnan(p):
        return Change(value, reference, pct, spread)
    se = math.hypot(value_std / math.sqrt(value_n), reference_std / math.sqrt(reference_n))
    se_pct = se / abs(reference) * 100
    half = float(t_quantile(df)) * se_pct
    return Change(value, reference, pct, spread, p, p, pct - half, pct + half, se_pct, df)


def log_change(value: float, value_sd: float, value_n: float, reference: float,
               reference_sd: float, reference_n: float) -> Change:
    """A pooled percentile against another of the same run: Welch's test on their logs, from the
    sd of each side's repetitions' own log percentiles (the tables' `_lsd`), as compare tests
    them; pct and its interval back on the linear scale."""
    if not (value > 0 and reference > 0):
        return Change(value, reference, math.nan, math.nan)
    pct = (value / reference - 1) * 100
    spread = math.hypot(value_sd, reference_sd) * 100
    lv, lr = math.log(value), math.log(reference)
    _, df, p = welch(lr, reference_sd, reference_n, lv, value_sd, value_n)
    if math.isnan(p):
        return Change(value, reference, pct, spread)
    se = math.hypot(value_sd / math.sqrt(value_n), reference_sd / math.sqrt(reference_n))
    half = float(t_quantile(df)) * se
    return Change(value, reference, pct, spread, p, p, math.expm1(lv - lr - half) * 100,
                  math.expm1(lv - lr + half) * 100, se * 100, df)


def adjusted(changes: Sequence[Change]) -> list[Change]:
    """The changes of one finding with their p adjusted together (Benjamini-Hochberg)."""
    if not changes:
        return []
    p_adj = bh_adjust([c.p for c in changes])
    return [replace(c, p_adj=float(q)) for c, q in zip(changes, p_adj)]


def gap(a: Change, b: Change) -> tuple[float, float]:
    """Is a's change larger than b's? (a.pct - b.pct, two-sided p): the same t-test on the
    difference of two independent changes, df the smaller of theirs; NaN when either is
    untested."""
    if not (a.tested and b.tested):
        return a.pct - b.pct, math.nan
    se = math.hypot(a.se_pct, b.se_pct)
    if se == 0:
        return a.pct - b.pct, math.nan
    return a.pct - b.pct, float(t_two_sided_p((a.pct - b.pct) / se, min(a.df, b.df)))


# --- trend over rounds --------------------------------------------------------------------------
# --until-stable: a trend is tested from MIN_ROUNDS rounds on (from 3, its t-test has one degree
# of freedom and finds nothing), and the drift a certified point's rounds allow is bounded at
# DRIFT_CONFIDENCE, one-sided. Why 75% and not 95%: a bound that tight certifies only the points
# whose rounds happened to agree, and their intervals then held the mean in 61-82% of steady
# points (CV 2-3%); at 75% they hold it in 91-95% while a point drifting 2% a round is certified
# in 5-19% of cases, not 99.8% (bench/statistics).
MIN_ROUNDS = 4
DRIFT_CONFIDENCE = 0.75


@dataclass(frozen=True)
class Trend:
    """The slope of a point's values over its rounds, in % of their mean per round; its p (no
    slope), its standard error, and the upper DRIFT_CONFIDENCE bound of |slope| x (rounds - 1):
    how far the level may have moved over the rounds measured. NaN with fewer than 3 rounds."""
    slope_pct: float
    p: float
    drift_bound_pct: float
    rounds: int
    se_pct: float = math.nan


def trend(values: Iterable[float]) -> Trend:
    """Least squares of the values on their round (1, 2, ...)."""
    y = [float(v) for v in values]
    n = len(y)
    mean = math.fsum(y) / n if n else math.nan
    if n < 3 or not mean or math.isnan(mean):
        return Trend(math.nan, math.nan, math.nan, n)
    xm = (n + 1) / 2
    sxx = math.fsum((i + 1 - xm) ** 2 for i in range(n))
    slope = math.fsum((i + 1 - xm) * (v - mean) for i, v in enumerate(y)) / sxx
    resid = math.fsum((v - mean - slope * (i + 1 - xm)) ** 2 for i, v in enumerate(y))
    se = math.sqrt(resid / (n - 2) / sxx)
    scale = 100 / abs(mean)
    if se == 0:
        p = 1.0 if slope == 0 else 0.0
    else:
        p = float(t_two_sided_p(slope / se, n - 2))
    bound = (abs(slope) + float(t_quantile(n - 2, DRIFT_CONFIDENCE)) * se) * (n - 1) * scale
    return Trend(slope * scale, p, bound, n, se * scale)


@dataclass(frozen=True)
class Stability:
    """Whether a point is known well enough to stop measuring it (--until-stable PCT):

    - drifting: its rounds show a trend (the slope's test, p < ALPHA): the level moved while it
      was measured, so no mean of these rounds stands for it;
    - stable: MIN_ROUNDS rounds at least, its 95% interval within ±PCT % of the mean, and the
      drift over its rounds bounded within PCT % (Trend.drift_bound_pct);
    - unstable: neither yet: more rounds narrow both."""
    word: str
    half_width_pct: float
    trend: Trend


def stability(values: Sequence[float], half_width_pct: float, pct: float) -> Stability:
    """The verdict on one point's values in round order, given its widest half-width (%)."""
    tr = trend(values)
    if tr.p < ALPHA:
        return Stability("drifting", half_width_pct, tr)
    certain = (tr.rounds >= MIN_ROUNDS and half_width_pct <= pct
               and tr.drift_bound_pct <= pct)  # NaN: not certain
    return Stability("stable" if certain else "unstable", half_width_pct, tr)
