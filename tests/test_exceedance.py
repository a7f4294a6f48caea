"""Latency distributions: the exceedance curve's data, read back, gives fio's own percentiles, and
its markers are the section table's percentiles."""

from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import pytest

from analysis.core.stats import merge_bins, percentiles_from_bins
from analysis.render import exceedance


def read_back(csv_path: Path, curve: str, p: float) -> float:
    """The latency (µs) at which the curve's data crosses percentile p, by fio's rule: the first
    point where at least p% of the samples are at or below it (exactly, in integers)."""
    with csv_path.open() as f:
        for row in csv.DictReader(f):
            if row["curve"] != curve:
                continue
            below, n = int(row["samples"]) - int(row["above"]), int(row["samples"])
            if 100 * below >= Fraction(p) * n:
                return float(row["latency_us"])
    raise AssertionError(f"{curve}: never reaches p{p}")


def test_curve_read_back_equals_fios_own_percentiles(fio_runs, tmp_path):
    run = fio_runs["psync"]
    if run is None:
        pytest.skip("the psync fio run failed")
    # One real fio run as a section's one repetition, laid out as the toolkit lays it out.
    (tmp_path / "randread").mkdir()
    (tmp_path / "randread" / "rep1.json").write_text(run["text"])
    curve = exceedance.case_curve(tmp_path, "randread", "read", "4 KiB random read")
    panels = [exceedance.Panel("QD=1", [curve])]
    figure = exceedance.draw(tmp_path / "figs" / "x_exceedance.png", panels, "test")
    data = exceedance.write_data(tmp_path / "x_exceedance.csv", panels)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    fio_pcts = run["doc"]["jobs"][0]["read"]["lat_ns"]["percentile"]
    for p in (50.0, 99.0, 99.9):
        fio_us = fio_pcts[f"{p:.6f}"] / 1000
        assert read_back(data, "4 KiB random read", p) == pytest.approx(fio_us, abs=1e-9), p
        # the figure's dots are the same numbers (where at least one I/O lies above p)
        if curve.samples * (100 - p) >= 100:
            assert curve.markers()[p] == pytest.approx(fio_us, abs=1e-9)
    # the curve falls from (almost) 1 to the last I/O, never rising
    shares = [s for _, _, s in curve.points()]
    assert shares == sorted(shares, reverse=True) and shares[-1] == 0.0


def test_markers_stop_where_the_samples_stop():
    few = exceedance.Curve("few", {1000: 60, 2000: 40}, "lat")  # 100 I/Os: p99 has 1 above
    assert set(few.markers()) == {50.0, 99.0}
    many = exceedance.Curve("many", {1000: 9990, 2000: 10}, "lat")
    assert set(many.markers()) == {50.0, 99.0, 99.9, 99.99}
    # 9990 of 10000 at or below 1 µs: p99 is 1 µs; p99.9 is 2 µs, as fio says (the double 99.9
    # is a hair above 99.9, so 9990 samples fall just short of it)
    assert many.markers()[99.0] == 1.0 and many.markers()[99.9] == 2.0


def test_merged_curve_is_the_pooled_histogram():
    a, b = {1000: 3, 5000: 1}, {1000: 1, 9000: 3}
    curve = exceedance.Curve("x", merge_bins([a, b]), "lat")
    assert curve.samples == 8
    assert [(lat, above) for lat, above, _ in curve.points()] == [(1.0, 4), (5.0, 3), (9.0, 0)]
    # 8 I/Os: no I/O lies above p99, so only p50 gets a dot
    assert curve.markers() == {50.0: percentiles_from_bins(merge_bins([a, b]), (50.0,))[50.0]
                               / 1000}
