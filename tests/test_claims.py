"""analysis.render.claims: each rule a finding's sentence obeys, checked on its own (issue 42).

The evidence here is the sample's own (docs/sample/report.md, recomputed from docs/sample/results):
§5's QD 1 p99 of 3,129 µs [966–10,159] with 368 I/Os above it, its p99.9 with 36; §6's
compressibility at 20.0 MB/s, whose repetitions differ in the third decimal.
"""

from __future__ import annotations

import doctest
import math
from types import SimpleNamespace

import pytest

from analysis.core.effects import Change, change
from analysis.core.stats import MIN_TAIL_IOS
from analysis.render import claims


def test_the_module_docstring_is_true():
    assert doctest.testmod(claims).failed == 0


# --- rule 1: a † value is never quoted -------------------------------------------------------------
def test_a_thin_tail_is_not_quoted_and_a_thick_one_is():
    row = SimpleNamespace(lat_p99_us=3129.0, lat_p99_us_tail_ios=368.0,
                          lat_p99_9_us=4227.0, lat_p99_9_us_tail_ios=36.0)
    assert claims.row_tail(row, "lat_p99_us") == 3129.0
    assert claims.row_tail(row, "lat_p99_9_us") is None
    assert claims.tail_cell(row, "lat_p99_9_us") == "4,227 †"
    assert claims.tail_cell(row, "lat_p99_us") == "3,129"


def test_the_bound_is_min_tail_ios_exactly():
    assert claims.quotable(MIN_TAIL_IOS) and not claims.quotable(MIN_TAIL_IOS - 1)
    assert claims.quotable(math.nan)  # a foreign JSON's percentile carries no count


# --- rule 2: a straddling interval is not resolved ---------------------------------------------------
def test_a_difference_the_test_shows_carries_its_interval():
    c = change(130, 5, 100, 5, 3, 3)
    assert claims.verdict(c) == "resolved"
    assert claims.difference(c) == "+30% (95% interval +19% to +41%)"


def test_a_straddling_interval_is_not_resolved_and_marked():
    c = change(104, 8, 100, 8, 3, 3)
    assert c.low_pct < 0 < c.high_pct
    assert claims.verdict(c) == "not resolved"
    assert claims.difference(c) == "+4.0% ‡"
    assert claims.comparison_note([c]).startswith(", not resolved by this run (95% interval −")


def test_identical_means_are_no_difference_not_unresolved():
    """§6's compressibility: 20.0 ± 0.0 MB/s three ways; the run held them equal."""
    c = change(20.001, 0.004, 20.0, 0.006, 3, 3)
    assert -claims.EQUAL_PCT <= c.low_pct and c.high_pct <= claims.EQUAL_PCT
    assert claims.verdict(c) == "no difference"
    assert claims.difference(c) == "no difference"
    same = Change(20.0, 20.0, 0.0, 0.0)  # no spread at all: untestable, and equal
    assert claims.verdict(same) == "no difference"
    assert claims.verdict(Change(21.0, 20.0, 5.0, 0.0)) == "untested"


def test_a_narrow_interval_off_zero_is_still_resolved_not_equal():
    c = Change(100.5, 100, 0.5, 0.1, p=0.001, p_adj=0.001, low_pct=0.2, high_pct=0.8)
    assert claims.verdict(c) == "resolved"


# --- rule 3: a host-bound point names its rule --------------------------------------------------------
def test_a_host_bound_point_names_the_rule_that_fired():
    """randrw-4k-r70: 32% of its ceiling, busiest CPU 90%, all 56%: only fio's CPU rule held."""
    row = SimpleNamespace(host_bound=True, host_rule="fio_cpu")
    assert claims.host_qualifier(row) == "host-bound (fio's CPU): the host's limit"
    assert claims.host_mark(row) == " ⌂"
    both = SimpleNamespace(host_bound=True, host_rule="ceiling all_cpus")
    assert claims.host_reason(claims.host_rules(both)) == (
        "the ceiling, all CPUs busy")


def test_a_free_point_says_nothing():
    row = SimpleNamespace(host_bound=False, host_rule="")
    assert claims.host_qualifier(row) == "" and claims.host_mark(row) == ""


# --- rule 4: a headline keeps its qualifiers -----------------------------------------------------------
def test_qualifiers_are_kept_and_empty_ones_dropped():
    assert claims.qualified("20.0 MB/s", ["", "an indication only"]) == (
        "20.0 MB/s [an indication only]")
    assert claims.qualified("20.0 MB/s", []) == "20.0 MB/s"
    assert claims.with_interval(3194, 1311, "MB/s") == "3,194 ± 1,311 MB/s"


# --- rule 5: an objective judged with its interval -----------------------------------------------------
@pytest.mark.parametrize("value, low, high, said", [
    (3129, 966, 10159, "not resolved"),  # §5's QD 1 p99: the interval holds 1,000 µs
    (3457, 3119, 3827, "misses"),
    (800, 700, 950, "meets"),
    (3000, 1200, math.nan, "misses"),  # one-sided, and its floor is above the limit
    (3000, 900, math.nan, "not resolved"),
])
def test_an_objective_is_judged_with_its_interval(value, low, high, said):
    assert claims.objective(value, low, high, 1000) == said
