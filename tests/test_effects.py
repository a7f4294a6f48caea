"""The one test for an effect (analysis.core.effects): Welch's test with and without the spread
between runs, Benjamini-Hochberg, the changes findings state, the trend over rounds and the
--until-stable verdict. Known answers by hand and against scipy; the rates on small seeded
subsets of bench/statistics (the bench prints the whole grid). No fio."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats

from analysis.core.effects import (
    DEFAULT_BETWEEN,
    Between,
    Change,
    adjusted,
    bh_adjust,
    change,
    gap,
    log_change,
    stability,
    trend,
    welch,
    welch_arrays,
)
from bench.simulations import effects_sim, stable_sim


def test_welch_without_a_spread_between_runs_is_scipys():
    for args in [(10.0, 2.0, 8, 12.0, 2.0, 8), (100.0, 3.0, 3, 91.0, 5.0, 3),
                 (5.0, 0.1, 10, 5.2, 0.4, 4)]:
        t, _df, p = welch(*args)
        ref = scipy.stats.ttest_ind_from_stats(*args[3:], *args[:3], equal_var=False)
        assert t == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)


def test_welch_adds_the_spread_between_runs():
    """se² = s_a²/n_a + s_b²/n_b + 2 tau²: by hand, for the default (tau = each side's own sd)
    and for a given tau (infinite degrees of freedom for that part)."""
    t, df, p = welch(100.0, 2.0, 3, 95.0, 2.0, 3, DEFAULT_BETWEEN)
    va = 4.0 * (1 / 3 + 1)
    assert t == pytest.approx(-5 / math.sqrt(2 * va))
    assert df == pytest.approx((2 * va) ** 2 / (2 * va * va / 2))  # 4: as Welch's own
    assert p == pytest.approx(2 * scipy.stats.t.sf(abs(t), df))
    given = Between(rel_sd=0.03, source="given")
    t, df, p = welch(100.0, 2.0, 3, 95.0, 2.0, 3, given)
    se2 = 4 / 3 + 4 / 3 + 2 * 3.0 ** 2
    assert t == pytest.approx(-5 / math.sqrt(se2))
    assert df == pytest.approx(se2 ** 2 / (2 * (4 / 3) ** 2 / 2))
    # estimated from 6 runs: its own 5 degrees of freedom enter Satterthwaite's sum
    est = Between(rel_sd=0.03, df=5, source="history")
    assert welch(100.0, 2.0, 3, 95.0, 2.0, 3, est)[1] == pytest.approx(
        se2 ** 2 / (2 * (4 / 3) ** 2 / 2 + 18.0 ** 2 / 5))
    # vectorised: the same numbers row by row
    ts, _dfs, ps = welch_arrays([100.0, 10.0], [2.0, 1.0], [3, 3], [95.0, 12.0], [2.0, 1.0],
                               [3, 3], given)
    assert ts[0] == pytest.approx(-5 / math.sqrt(se2))
    assert ps[1] == pytest.approx(welch(10.0, 1.0, 3, 12.0, 1.0, 3, given)[2])


def test_welch_not_testable():
    assert all(math.isnan(v) for v in welch(1.0, math.nan, 3, 2.0, 0.1, 3))
    assert all(math.isnan(v) for v in welch(1.0, 0.1, 1, 2.0, 0.1, 3, DEFAULT_BETWEEN))
    assert all(math.isnan(v) for v in welch(5.0, 0.0, 3, 6.0, 0.0, 3, DEFAULT_BETWEEN))
    # no spread within, but a known spread between runs: testable
    assert welch(5.0, 0.0, 3, 6.0, 0.0, 3, Between(rel_sd=0.1))[2] == pytest.approx(
        2 * scipy.stats.norm.sf(1 / math.sqrt(2 * 0.25)))


def test_bh_adjust_is_scipys_and_keeps_untested():
    rng = np.random.default_rng(1)
    p = rng.random((5, 12)) ** 3
    for row in p:
        assert bh_adjust(row) == pytest.approx(scipy.stats.false_discovery_control(row))
    assert bh_adjust(p, axis=1) == pytest.approx(np.array([bh_adjust(r) for r in p]))
    assert bh_adjust(p.T, axis=0) == pytest.approx(bh_adjust(p, axis=1).T)
    q = bh_adjust([0.001, math.nan, 0.8, 0.04])
    assert math.isnan(q[1]) and list(q[[0, 2, 3]]) == pytest.approx([0.003, 0.8, 0.06])
    assert bh_adjust([]).size == 0


def test_a_change_is_claimed_only_when_the_test_shows_it():
    # pandas hands numpy floats over; the verdict must still be a plain bool (callers test
    # `is False`), or None when it cannot be tested.
    beyond = change(np.float64(90), np.float64(1), np.float64(100), np.float64(1), 3, 3)
    assert beyond.pct == pytest.approx(-10) and beyond.spread_pct == pytest.approx(2 ** 0.5)
    assert beyond.within_spread is False and beyond.significant
    assert beyond.low_pct < -10 < beyond.high_pct < 0
    assert change(99.0, 1.0, 100.0, 1.0, 3, 3).within_spread is True
    assert change(99.0, 1.0, 100.0, 1.0).within_spread is None  # no n: not tested
    assert change(99.0, float("nan"), 100.0, 1.0, 3, 3).within_spread is None
    assert math.isnan(change(1.0, 0.0, 0.0, 0.0).pct)
    # several comparisons of one finding are adjusted together
    parts = adjusted([change(96.0, 1.0, 100.0, 1.0, 3, 3), change(99.0, 1.0, 100.0, 1.0, 3, 3)])
    assert parts[0].p_adj == pytest.approx(min(1, 2 * parts[0].p))
    # a percentile on its log: p as Welch's on the logs, the interval back in %
    c = log_change(120.0, 0.05, 3, 100.0, 0.05, 3)
    assert c.p == pytest.approx(welch(math.log(100), 0.05, 3, math.log(120), 0.05, 3)[2])
    assert c.low_pct < 20 < c.high_pct
    # which of two changes is larger: a t-test on their difference
    d, p = gap(change(130.0, 2.0, 100.0, 2.0, 3, 3), change(101.0, 2.0, 100.0, 2.0, 3, 3))
    assert d == pytest.approx(29) and p < 0.01


def test_an_interval_that_leaves_out_no_change_says_when_the_adjusted_test_does_not_show_one():
    """The page prints each test's own 95% interval beside a verdict adjusted over the finding's
    comparisons: an interval clear of zero under a 'not resolved' says it is the unadjusted one."""
    clear = Change(232.0, 8.91, 2504.0, 900.0, p=0.03, p_adj=0.06, low_pct=402.0, high_pct=4611.0)
    assert not clear.significant
    assert clear.interval_text() == "+402% to +4611%, unadjusted; adjusted p 0.06"
    assert replace(clear, p_adj=0.03).interval_text() == "+402% to +4611%"  # shown: no note
    assert replace(clear, low_pct=-5.0).interval_text() == "−5% to +4611%"  # holds zero: none
    # from real tests: a 3-repetition change at raw p < 0.05 beside one far from it
    one, _ = adjusted([change(102.5, 1.0, 100.0, 1.0, 3, 3),
                      change(100.2, 1.0, 100.0, 1.0, 3, 3)])
    assert one.p < 0.05 < one.p_adj and one.low_pct > 0
    assert one.interval_text().endswith(f", unadjusted; adjusted p {one.p_adj:.2g}")


def test_trend_is_least_squares_with_its_t_test():
    x = [100.0, 103.0, 101.0, 106.0, 105.0]
    tr = trend(x)
    ref = scipy.stats.linregress(range(1, 6), x)
    assert tr.slope_pct == pytest.approx(ref.slope / np.mean(x) * 100)
    assert tr.p == pytest.approx(ref.pvalue)
    half = scipy.stats.t.ppf(0.75, 3) * ref.stderr
    assert tr.drift_bound_pct == pytest.approx((abs(ref.slope) + half) * 4 / np.mean(x) * 100)
    assert math.isnan(trend([1.0, 2.0]).p) and trend([5.0, 5.0, 5.0]).p == 1.0


def test_the_smallest_drift_is_named_not_certified():
    """IOPS 100, 102, 104: a half-width of 4.87% passed ±5% as stable; the rounds lie on a
    line, so the point is drifting (+2.0% of its mean per round)."""
    v = stability([100.0, 102.0, 104.0], 4.87, 5.0)
    assert v.word == "drifting" and v.trend.slope_pct == pytest.approx(200 / 102)
    assert stability([100.0, 100.5, 99.8, 100.2], 0.8, 5.0).word == "stable"
    assert stability([100.0, 100.5, 99.8], 0.8, 5.0).word == "unstable"  # a trend needs 4
    assert stability([100.0, 100.5], 0.8, 5.0).word == "unstable"  # no trend from 2 rounds
    assert stability([100.0, 110.0, 95.0], 9.0, 5.0).word == "unstable"


def test_until_stable_rates_on_seeded_points():
    """A subset of bench/statistics (3 planned repetitions, at most 6, ±5%): a point drifting
    2% per round is certified in at most 10% of 600 (measured before: 99.8% at CV 1%); a
    steady point with CV 2% is certified in at least 85% and its interval then holds the true
    mean in at least 92%."""
    point = {"kind": "until", "noise": 0.01, "phi": 0.0, "reps": 6, "sims": 600}
    drift = stable_sim.run({**point, "drift": 0.02})
    assert drift["certified"] <= 0.10, drift
    steady = stable_sim.run({**point, "noise": 0.02, "drift": 0.0})
    assert steady["certified"] >= 0.85 and steady["coverage"] >= 0.92, steady


def test_findings_test_holds_its_rate():
    """No difference between two points of 3 repetitions: the old rule (a difference beyond the
    combined std) claimed one in 15.9%; Welch claims one in about 5% (at most 7% of 4000)."""
    found = effects_sim.run({"rule": "finding", "noise": 0.05, "reps": 3, "sims": 4000})
    assert found["false"] <= 0.07, found
