"""SNIA PTS as a profile (issue 44): the tests as data (lib/pts.tsv, analysis/core/pts.py) and
the steady-state rule over several tracking variables (analysis/core/steady.judge_together)."""

from __future__ import annotations

import doctest

import pytest

from analysis.core import pts, steady
from analysis.core.steady import judge, judge_together


def test_docstrings_worked_examples():
    assert doctest.testmod(pts).failed == 0
    assert doctest.testmod(steady).failed == 0


def test_the_iops_matrix_is_ptss_seven_mixes_by_eight_block_sizes():
    iops = pts.test("iops")
    assert sorted({c.read_pct for c in iops.cases}) == [0, 5, 35, 50, 65, 95, 100]
    assert sorted({c.bs_bytes for c in iops.cases}) == [512, 4096, 8192, 16384, 32768, 65536,
                                                         131072, 1048576]
    assert len({(c.read_pct, c.bs) for c in iops.cases}) == 56
    assert {(c.label, c.track) for c in iops.tracking} == {
        ("4 KiB 0/100", "iops"), ("64 KiB 65/35", "iops"), ("1024 KiB 100/0", "iops")}
    # the reduced matrix still holds every tracking variable
    assert set(iops.tracking) <= set(iops.cases_for("reduced"))


def test_classes_and_sections():
    assert pts.pts_class("enterprise").active_range_pct == 100
    assert pts.pts_class("client").write_cache == "enabled"
    assert [t.name for t in pts.tests_of("bs_sweep", "enterprise")] == ["throughput-128k",
                                                                          "throughput-1024k"]
    assert pts.tests_of("qd_sweep", "enterprise") == []
    lat = pts.test("latency")
    assert {(c.bs, c.read_pct) for c in lat.cases} == {
        (bs, r) for bs in ("512", "4k", "8k") for r in (100, 65, 0)}
    assert lat.outstanding == "T1Q1"


def test_together_is_judge_on_each_variable_over_one_window():
    """One variable is judge's verdict; several pass only in a window where each passes."""
    a = [100, 90, 80, 70, 100, 101, 99, 100, 100]
    b = [50.0] * 9
    alone = judge_together({"a": a}, round_s=60)
    assert alone.reached and alone.last_round == judge(a, round_s=60).last_round
    # b steady throughout, a only from round 5: together from round 5 too
    both = judge_together({"a": a, "b": b}, round_s=60)
    assert (both.first_round, both.last_round) == (5, 9)
    # one that never settles holds the test back, and the message names it
    c = [100 * 0.95 ** k for k in range(9)]
    held = judge_together({"a": a, "c": c}, round_s=60)
    assert not held.reached and held.unsteady == ("c",) and "c (range" in held.message
    with pytest.raises(ValueError):
        judge_together({}, round_s=60)
