"""analysis.core.stats: repetition statistics and fio's percentile algorithm on real histograms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.core.stats import (
    STANDARD_PCTS,
    bucket_width_ns,
    merge_bins,
    percentiles_from_bins,
    plat_idx_to_val,
    rep_stats,
)
from analysis.fio.output import read_groups
from tests.conftest import RUNS, SAMPLES, need

STACKHPC = sorted((SAMPLES / "stackhpc__stackhpc-io-tools").rglob("*.json"))
# fio 3.x: FIO_IO_U_PLAT_GROUP_NR=29 groups of 64 buckets
BUCKET_VALUES = {plat_idx_to_val(i) for i in range(29 * 64)}


def latency_objects(doc: dict):
    """Every (json+ latency object with percentiles and bins) in a fio document."""
    for job in doc.get("jobs") or doc.get("client_stats"):
        for direction in ("read", "write", "trim"):
            for kind in ("slat_ns", "clat_ns", "lat_ns"):
                obj = job.get(direction, {}).get(kind, {})
                if obj.get("bins"):
                    yield f"{job['jobname']}/{direction}/{kind}", obj


def read_json(path) -> dict:
    return json.loads(path.read_text())


def fio_percentiles(obj: dict) -> dict:
    """As printed; old fio pads the list with "0.00": 0 entries, which are no percentile."""
    return {float(k): float(v) for k, v in obj["percentile"].items() if float(k) > 0}


def int_bins(obj: dict) -> dict:
    return {int(k): v for k, v in obj["bins"].items()}


# --------------------------------------------------------------------------- rep_stats

def test_rep_stats_known_values():
    s = rep_stats([10.0, 12.0, 14.0])
    assert s == {"mean": 12.0, "std": 2.0, "n": 3, "cv": 2.0 / 12.0}
    s = rep_stats([1, 2, 3, 4])
    assert s["mean"] == 2.5 and s["n"] == 4
    assert s["std"] == pytest.approx(math.sqrt(5 / 3), rel=1e-15)  # ddof=1
    assert s["std"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1), rel=1e-15)
    assert s["cv"] == pytest.approx(math.sqrt(5 / 3) / 2.5, rel=1e-15)


def test_rep_stats_spread_unknown_below_two_values():
    one = rep_stats([52924.7])
    assert (one["mean"], one["n"]) == (52924.7, 1)
    assert math.isnan(one["std"]) and math.isnan(one["cv"])
    none = rep_stats([])
    assert none["n"] == 0 and all(math.isnan(none[k]) for k in ("mean", "std", "cv"))


def test_rep_stats_cv_nan_for_zero_mean():
    s = rep_stats([0.0, 0.0, 0.0])
    assert (s["mean"], s["std"]) == (0.0, 0.0) and math.isnan(s["cv"])


def test_rep_stats_of_real_runs(fio_runs):
    """Two real runs' IOPS: the statistics of two known numbers."""
    a = need(fio_runs, "psync")["doc"]["jobs"][0]["read"]["iops"]
    b = need(fio_runs, "n2000")["doc"]["jobs"][0]["read"]["iops"]
    s = rep_stats([a, b])
    assert s["mean"] == pytest.approx((a + b) / 2, rel=1e-15)
    assert s["std"] == pytest.approx(abs(a - b) / math.sqrt(2), rel=1e-12)


# --------------------------------------------------------------------------- bins

def test_bin_keys_are_fio_bucket_values(fio_runs):
    """json+ keys are plat_idx_to_val(bucket): the check that ties keys to buckets."""
    docs = [run["doc"] for run in fio_runs.values() if run]
    docs += [read_json(p) for p in STACKHPC]
    keys = {k for doc in docs for _, obj in latency_objects(doc) for k in int_bins(obj)}
    assert len(keys) > 100
    assert keys <= BUCKET_VALUES


def test_merge_bins_of_two_real_runs_is_their_sum(fio_runs):
    a = int_bins(need(fio_runs, "psync")["doc"]["jobs"][0]["read"]["lat_ns"])
    b = int_bins(need(fio_runs, "io_uring")["doc"]["jobs"][0]["read"]["lat_ns"])
    merged = merge_bins([a, b])
    assert list(merged) == sorted(set(a) | set(b))
    assert all(merged[k] == a.get(k, 0) + b.get(k, 0) for k in merged)
    assert sum(merged.values()) == sum(a.values()) + sum(b.values())
    assert merge_bins([a]) == dict(sorted(a.items())) and merge_bins([]) == {}


def test_merged_percentiles_equal_numpy_on_the_samples(fio_runs):
    """Percentiles of merged bins are those of all the runs' samples pooled.

    fio's rule (the first value whose cumulative count reaches p% of N) is
    numpy's 'inverted_cdf' method on the sample values.
    """
    bins = merge_bins(int_bins(need(fio_runs, n)["doc"]["jobs"][0]["read"]["lat_ns"])
                      for n in ("psync", "io_uring", "randrw"))
    samples = np.repeat(np.array(list(bins), dtype=np.int64), list(bins.values()))
    pcts = (1.0, 10.0, *STANDARD_PCTS, 99.99, 100.0)
    expected = np.percentile(samples, pcts, method="inverted_cdf")
    assert percentiles_from_bins(bins, pcts) == dict(zip(pcts, expected.astype(float).tolist()))


# --------------------------------------------------------------------------- fio's own percentiles

@pytest.mark.parametrize("path", STACKHPC, ids=lambda p: p.parent.name)
def test_percentiles_from_bins_fio_3_1(path):
    objs = list(latency_objects(read_json(path)))
    assert objs
    for _, obj in objs:
        assert percentiles_from_bins(int_bins(obj), fio_percentiles(obj)) == fio_percentiles(obj)


@pytest.mark.parametrize("name", [*RUNS, "client"])
def test_percentiles_from_bins_real_fio(fio_runs, name):
    """Every percentile fio printed (clat and lat, each direction) is reproduced."""
    objs = list(latency_objects(need(fio_runs, name)["doc"]))
    assert objs
    for where, obj in objs:
        bins = int_bins(obj)
        assert sum(bins.values()) == obj["N"], where  # fio's nr is N; here it is the bins' sum
        assert percentiles_from_bins(bins, fio_percentiles(obj)) == fio_percentiles(obj), where


def test_merged_job_groups_get_percentiles_from_bins(fio_runs):
    """Client/server: two jobs merged by read_groups, percentiles from summed bins."""
    run = need(fio_runs, "client")
    (g,) = read_groups(run["path"])
    d = g.directions["read"]
    jobs = [e for e in run["doc"]["client_stats"] if e["jobname"] != "All clients"]
    bins = merge_bins(int_bins(e["read"]["lat_ns"]) for e in jobs)
    assert d.bins == bins
    assert d.percentiles_ns == percentiles_from_bins(bins, d.percentiles_ns)
    assert len(d.percentiles_ns) == len(fio_percentiles(jobs[0]["read"]["lat_ns"]))


def test_percentiles_from_bins_edges():
    assert percentiles_from_bins({}, STANDARD_PCTS) == {}
    assert percentiles_from_bins({750: 3}, (50.0, 100.0)) == {50.0: 750.0, 100.0: 750.0}
    # exact threshold: 60% of 25 samples is reached at the 15th, not the 16th
    bins = {100: 15, 200: 10}
    assert percentiles_from_bins(bins, (60.0,)) == {60.0: 100.0}
    assert list(percentiles_from_bins({1: 1, 2: 1}, (99.0, 50.0))) == [99.0, 50.0]
    with pytest.raises(ValueError):
        percentiles_from_bins(bins, (0.0,))
    with pytest.raises(ValueError):
        percentiles_from_bins(bins, (100.5,))


def test_bucket_width_is_fios_resolution():
    # Neighbouring json+ bucket values (plat_idx_to_val) within a group are one bucket apart,
    # and bucket_width_ns gives that width for any value in the bucket.
    for idx in range(128, 1855):
        if idx % 64 == 63:
            continue  # the step into the next, twice as wide, group
        low, high = plat_idx_to_val(idx), plat_idx_to_val(idx + 1)
        assert bucket_width_ns(low) == bucket_width_ns(high - 1) == high - low
    assert bucket_width_ns(2_932_736) == 32_768  # 2932.736 µs: 1.1% wide
    assert bucket_width_ns(100) == 1 and bucket_width_ns(0) == 1
