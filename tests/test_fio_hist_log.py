"""fio's clat histogram logs: read back from a real fio run and checked against its json+ bins."""

from __future__ import annotations

import json
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from analysis.core.stats import merge_bins, percentiles_from_bins
from analysis.fio.hist_log import HistLogError, percentile_series, read_hist_log
from tests.toolkit import PUNCTUAL, fixture_locks, in_ram


@pytest.fixture(scope="module")
@fixture_locks(scripts="shared")  # real-time fio: never beside the NVMe guest
def hist_run(tmp_path_factory):
    """4 s of 128 KiB sequential writes at QD 8, 2,000 a second, with a 1 s histogram log; no
    lat_percentiles, so the json+ bins are of clat, as the histogram log is.

    The target is in RAM (/dev/shm) and fio runs at real-time priority (PUNCTUAL): on a disk
    file, the kernel's writeback held the buffered writes back for seconds while the NVMe VM's
    images and a browser loaded the machine (latencies of 130 ms, one log line in 4 s)."""
    work = tmp_path_factory.mktemp("hist", numbered=True)
    with in_ram("hist", 32 << 20) as target:
        _run_hist_job(work, target)
    doc = json.loads((work / "rep1.json").read_text())
    completions = [int(line.split(",", 1)[0]) for line in
                   (work / "rep1_clat.1.log").read_text().splitlines() if line.strip()]
    return (read_hist_log(work / "rep1_clat_hist.1.log"), doc["jobs"][0]["write"]["clat_ns"],
            completions)


def _run_hist_job(work: Path, target: Path) -> None:
    subprocess.run([*PUNCTUAL, "fio", "--name=h", f"--filename={target}", "--rw=write",
                    "--bs=128k", "--iodepth=8", "--ioengine=libaio", "--direct=0", "--time_based",
                    "--rate_iops=2000",
                    "--runtime=4", f"--write_hist_log={work / 'rep1'}", "--log_hist_msec=1000",
                    # and every I/O's completion time, to know which ones the histogram log holds
                    f"--write_lat_log={work / 'rep1'}", "--log_avg_msec=0",
                    "--output-format=json+", f"--output={work / 'rep1.json'}"],
                   check=True, capture_output=True, cwd=work)


def test_intervals_add_up_to_the_jobs_histogram(hist_run):
    intervals, clat, completions = hist_run
    assert 3 <= len(intervals) <= 5 and {iv.direction for iv in intervals} == {"write"}
    times = [iv.t_ms for iv in intervals]
    assert times == sorted(times) and all(900 <= b - a <= 1100 for a, b in pairwise(times))
    merged = merge_bins([iv.bins for iv in intervals])
    job_bins = {int(k): v for k, v in clat["bins"].items()}
    # Every logged bucket is a json+ bucket of the job, never holding more I/Os than the job's;
    # only the I/Os completed after the last log line are missing from the log. How many those
    # are depends on the disk (buffered writes come in bursts), so they are counted, from the
    # per-I/O latency log; its millisecond stamps blur the boundary by a few I/Os.
    assert set(merged) <= set(job_bins)
    assert all(merged[k] <= job_bins[k] for k in merged)
    assert len(completions) == clat["N"]
    logged = sum(1 for t in completions if t <= times[-1])
    assert sum(merged.values()) == pytest.approx(logged, rel=0.01, abs=50)


def test_percentile_per_second_is_a_bucket_of_that_second(hist_run):
    intervals, _, _ = hist_run
    series = percentile_series(intervals, 99.0)
    assert len(series) == len(intervals)
    for (t, p99), iv in zip(series, intervals):
        assert t == iv.t_ms / 1000
        assert p99 * 1000 == percentiles_from_bins(iv.bins, [99.0])[99.0]
        assert p99 * 1000 in iv.bins
    assert percentile_series(intervals, 99.0, direction="read") == []


def test_a_coarse_or_broken_log_is_refused(tmp_path):
    coarse = tmp_path / "coarse.log"
    coarse.write_text("1000, 1, 131072, " + ", ".join(["0"] * 928) + "\n")
    with pytest.raises(HistLogError, match="928 bins, expected 1856"):
        read_hist_log(coarse)
    broken = tmp_path / "broken.log"
    broken.write_text("1000, 1, 131072, x\n")
    with pytest.raises(HistLogError, match="broken.log:1: not a fio histogram log line"):
        read_hist_log(broken)
