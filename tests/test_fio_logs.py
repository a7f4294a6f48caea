"""fio's bw/iops/lat logs into per-second series: real fio runs made here checked against fio's
own JSON totals, a real drive's 10,011-second log from the samples checked row by row, logs
built in fio's line format for the edge cases, and refusals with the file and line.

The oracles:
* per-I/O logs (no log_avg_msec) hold one row per I/O, so the per-second sums must equal the
  JSON exactly: rows = total_ios, sum of block sizes = io_bytes, count-weighted mean latency =
  lat_ns/clat_ns/slat_ns mean.
* averaged logs (log_avg_msec=1000, bwavgtime=iopsavgtime=1000) hold one row per second per
  direction per job, and fio's JSON bw_mean/iops_mean are the mean of the very same samples
  (bw_samples of them): equal to the rows' mean. Against the totals (total_ios, io_bytes)
  the log misses only the tail after the last full second: fio logs no partial window for
  bw/iops. The jobs are rate-capped (rate_iops), and fio's rate limiter never runs ahead of
  rate x time, so the tail is at most rate x (runtime - logged seconds) + the I/Os in flight,
  when the device kept up with the rate: the file is read and written through the page cache
  and fio runs at real-time priority, so that it does however busy the disk and the CPUs are;
  the same job on fio's null engine is checked beside it.
* averaged latency rows are means of some of fio's samples: within fio's min and max.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from analysis.fio.log_files import (
    FioLogError,
    find_logs,
    latency_unit,
    log_kind,
    parse_log_text,
    read_log,
)
from analysis.fio.log_series import per_second, read_per_second, series_stats
from analysis.fio.output import load_document
from tests.conftest import SAMPLES
from tests.toolkit import PUNCTUAL, fio_workdir, fixture_locks

SSD860 = (SAMPLES / "louwrentius__fio-plot" / "benchmark_data" / "HPMICROSERVERG8" / "SATA300"
          / "FULL" / "SAMSUNG860PRO")
SSD860_LOG = "randrw-iodepth-1-numjobs-1_{}.1.log"
PKB_HIST = (SAMPLES / "GoogleCloudPlatform__PerfKitBenchmarker" / "tests" / "data" / "fio"
            / "hist" / "pkb_fio_avg_1506559526.49_clat_hist.1.log")
MMN_TEXT = (SAMPLES / "MMN0001__Repo-for-Advanced-Computer-Systems" / "Project3"
            / "log&json data" / "4K_RandRead.log")

AVG_JOBS, AVG_QD, AVG_RATE, AVG_RUNTIME = 2, 2, 20, 3
PER_QD, PER_RATE, PER_RUNTIME = 2, 200, 2
DIRS = ("read", "write")


@pytest.fixture(scope="module")
@fixture_locks(scripts="shared")  # real-time fio: never beside the NVMe guest
def runs():
    """Three real fio runs, in parallel, two on a file under the repo's tmp/:

    avg: randrw 50/50 4 KiB, 2 jobs, QD 2, 20 IOPS per direction per job, 3 s, bw/iops/lat
         logs averaged per second (log_offset=1: 6 columns);
    null: the same on fio's null engine (no device: it always keeps up with the rate, so the
         tail bound below always applies, however busy the disk is);
    per: randrw 50/50 4 KiB, 1 job, QD 2, 200 IOPS per direction, 2 s, per-I/O logs.
    """
    with fio_workdir("pytest-fio-logs-") as work:
        target = work / "target.img"
        # Through the page cache (the file was just written) at real-time priority: the rates
        # are then the job's, not a shared disk's or a busy CPU's (the tail bound below needs
        # fio to keep up with them).
        direct = "0"
        common = [f"--filename={target}", "--size=16M", "--rw=randrw", "--rwmixread=50",
                  "--bs=4k", "--ioengine=libaio", f"--direct={direct}", "--time_based",
                  "--randrepeat=0", "--output-format=json"]
        averaged = [f"--numjobs={AVG_JOBS}", f"--iodepth={AVG_QD}", f"--rate_iops={AVG_RATE}",
                    f"--runtime={AVG_RUNTIME}", "--log_avg_msec=1000", "--bwavgtime=1000",
                    "--iopsavgtime=1000"]
        cmds = {
            "avg": ["fio", "--name=avg", *common, *averaged, "--write_bw_log=avg",
                    "--write_iops_log=avg", "--write_lat_log=avg", "--log_offset=1"],
            "null": ["fio", "--name=null", "--ioengine=null", "--size=16M", "--rw=randrw",
                     "--rwmixread=50", "--bs=4k", "--time_based", "--output-format=json",
                     *averaged, "--write_bw_log=null", "--write_iops_log=null"],
            "per": ["fio", "--name=per", *common, f"--iodepth={PER_QD}",
                    f"--rate_iops={PER_RATE}", f"--runtime={PER_RUNTIME}",
                    "--write_bw_log=per", "--write_iops_log=per", "--write_lat_log=per"],
        }
        procs = {}
        for name, cmd in cmds.items():
            with open(work / f"{name}.json", "wb") as out:
                procs[name] = subprocess.Popen([*PUNCTUAL, *cmd], stdout=out,
                                               stderr=subprocess.PIPE, cwd=work)
        docs = {}
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, f"fio {name} failed: {err.decode()[-500:]}"
            docs[name] = load_document(work / f"{name}.json")
        yield {"dir": work, **docs}


def raw_rows(path: Path) -> list[list[int]]:
    """The log's rows read with nothing but str.split (the oracle for the parser)."""
    return [[int(f) for f in line.split(",")] for line in path.read_text().splitlines()
            if line.strip()]


def closing_seconds(rows: list[list[int]], code: int) -> dict[int, int]:
    """{second: value} of one direction's averaged rows, the rule written out plainly: a row
    closes the last second ending no later than 50 ms after its time, or the next one free."""
    out, last = {}, 0
    for t, v, dd, *_ in sorted(rows, key=lambda r: r[0]):   # file order at equal times
        if dd != code:
            continue
        k = max((t + 50) // 1000, 1, last + 1)
        out[k], last = v, k
    return out


def json_dir(doc: dict) -> dict:
    """{direction: {total_ios, io_bytes, runtime (max), jobs: [per-job direction dicts]}}."""
    out = {}
    for d in DIRS:
        jobs = [j[d] for j in doc["jobs"]]
        out[d] = {"total_ios": sum(j["total_ios"] for j in jobs),
                  "io_bytes": sum(j["io_bytes"] for j in jobs),
                  "runtime": max(j["runtime"] for j in jobs), "jobs": jobs}
    return out


# --------------------------------------------------------------------------- per-I/O logs

def test_per_io_logs_sum_to_fio_totals(runs):
    work, doc = runs["dir"], runs["per"]
    js = json_dir(doc)
    iops = read_per_second(find_logs(work, "per", "iops"))
    bw = read_per_second(find_logs(work, "per", "bw"))
    assert iops.mode == bw.mode == "per_io"
    assert read_log(find_logs(work, "per", "bw")[0]).columns == 5   # fio 3.33, no log_offset
    for d in DIRS:
        assert js[d]["total_ios"] > 0
        # one row per I/O: the per-second counts add up to fio's total exactly
        assert int(iops.values[d].sum()) == js[d]["total_ios"]
        assert int(iops.samples[d].sum()) == js[d]["total_ios"]
        # bytes: sum of MB/s over 1 s intervals = io_bytes / 10^6 exactly
        assert bw.values[d].sum() == pytest.approx(js[d]["io_bytes"] / 1e6, rel=1e-12)
        # so the mean bandwidth over fio's runtime is fio's own bw_bytes
        mean_bps = bw.values[d].sum() * 1e6 / (js[d]["runtime"] / 1000)
        assert mean_bps == pytest.approx(js[d]["jobs"][0]["bw_bytes"], rel=1e-3)
    # the seconds reach the last completion; fio's runtime is about 2 s
    last_ms = max(r[0] for r in raw_rows(find_logs(work, "per", "iops")[0]))
    assert len(iops.seconds) == last_ms // 1000 + 1 == pytest.approx(PER_RUNTIME, abs=1)


def test_per_io_seconds_bin_by_completion_time(runs):
    path = find_logs(runs["dir"], "per", "iops")[0]
    rows = raw_rows(path)
    iops = read_per_second([path])
    for d, code in (("read", 0), ("write", 1)):
        for k in range(len(iops.seconds)):
            expect = sum(1 for r in rows if r[2] == code and k * 1000 <= r[0] < (k + 1) * 1000)
            assert iops.values[d][k] == expect


@pytest.mark.parametrize("kind", ["lat", "clat", "slat"])
def test_per_io_latency_means_are_fios(runs, kind):
    work, doc = runs["dir"], runs["per"]
    lat = read_per_second(find_logs(work, "per", kind), lat_unit=latency_unit(doc["fio version"]))
    assert lat.unit == "us"
    for d in DIRS:
        v, n = lat.values[d], lat.samples[d]
        have = n > 0
        pooled = float(np.sum(v[have] * n[have]) / np.sum(n))
        fio_mean_us = doc["jobs"][0][d][f"{kind}_ns"]["mean"] / 1000
        assert pooled == pytest.approx(fio_mean_us, rel=1e-9)
        assert int(n.sum()) == doc["jobs"][0][d][f"{kind}_ns"]["N"]


# --------------------------------------------------------------------------- averaged logs

@pytest.mark.parametrize("kind,json_key", [("bw", "bw"), ("iops", "iops")])
def test_averaged_rows_are_fios_samples(runs, kind, json_key):
    """Each job's rows are the samples behind fio's own bw_mean / iops_mean."""
    work, doc = runs["dir"], runs["avg"]
    files = find_logs(work, "avg", kind)
    assert [f.name for f in files] == [f"avg_{kind}.1.log", f"avg_{kind}.2.log"]
    for job, path in zip(doc["jobs"], files, strict=True):
        rows = read_log(path)
        assert rows.columns == 6 and rows.averaged and rows.kind == kind
        for d, code in (("read", 0), ("write", 1)):
            vals = rows.value[rows.ddir == code]
            assert len(vals) == job[d][f"{json_key}_samples"]
            assert float(vals.mean()) == pytest.approx(job[d][f"{json_key}_mean"], rel=1e-6)


def test_averaged_jobs_summed_per_second(runs):
    work = runs["dir"]
    files = find_logs(work, "avg", "bw")
    bw = read_per_second(files)
    assert bw.mode == "averaged" and bw.window_ms == 1000 and bw.unit == "MB/s"
    expect = {d: {} for d in DIRS}
    for path in files:
        for code, d in enumerate(DIRS):
            for k, v in closing_seconds(raw_rows(path), code).items():
                expect[d][k] = expect[d].get(k, 0) + v * 1024 / 1e6
    for d in DIRS:
        got = {int(s): float(v) for s, v in zip(bw.seconds, bw.values[d], strict=True)}
        assert got == pytest.approx(expect[d], rel=1e-12)
    assert np.allclose(bw.total(), bw.values["read"] + bw.values["write"])


@pytest.mark.parametrize("run", ["avg", "null"])
@pytest.mark.parametrize("kind,unit_bytes", [("iops", 1), ("bw", 4096)])
def test_averaged_sums_against_fio_totals(runs, run, kind, unit_bytes):
    """The log never holds more than fio did (fio truncates each rate, and a window may be
    999-1002 ms: 0.5% + 1 per row of slack). It misses only each job's tail after its last
    logged second (fio often does not log the window closing as the job exits): at most
    rate x tail + the I/Os in flight, when the device kept up with the rate (fio's IOPS within
    5% of it); a device that fell behind lets fio catch up in the tail."""
    work, doc = runs["dir"], runs[run]
    js = json_dir(doc)
    files = find_logs(work, run, kind)
    series = read_per_second(files)
    last = [max(max(closing_seconds(raw_rows(f), c)) for c in (0, 1)) for f in files]
    assert len(series.seconds) == max(last)
    assert series.n_complete == min(last) and series.last_partial == (min(last) < max(last))
    assert all(k in (AVG_RUNTIME - 1, AVG_RUNTIME) for k in last)
    unit = unit_bytes / 1e6 if kind == "bw" else 1
    for d in DIRS:
        total = js[d]["total_ios"] * unit
        assert js[d]["io_bytes"] == js[d]["total_ios"] * 4096
        logged = float(series.values[d].sum())
        slack = 0.005 * total + sum(last) * (1024 / 1e6 if kind == "bw" else 1)
        assert logged <= total + slack, (d, total, logged)
        tail = sum((AVG_RATE * (j["runtime"] - k * 1000) / 1000 + AVG_QD + 1) * unit
                   for j, k in zip(js[d]["jobs"], last, strict=True))
        assert all(j["iops"] >= 0.95 * AVG_RATE for j in js[d]["jobs"]), js[d]["jobs"]
        assert total - logged <= tail + slack, (d, total, logged, tail)


@pytest.mark.parametrize("kind", ["lat", "clat", "slat"])
def test_averaged_latency(runs, kind):
    """Per second: the plain mean of the jobs' rows, in µs. Each row is the mean of some of the
    job's latencies, so every per-second value lies within fio's own min and max of the
    direction (a wrong unit would be 1000x off)."""
    work, doc = runs["dir"], runs["avg"]
    files = find_logs(work, "avg", kind)
    lat = read_per_second(files, lat_unit=latency_unit(doc["fio version"]))
    assert lat.unit == "us" and lat.mode == "averaged"
    rows = [raw_rows(p) for p in files]
    for d, code in (("read", 0), ("write", 1)):
        per_job = [closing_seconds(r, code) for r in rows]
        shared = set.intersection(*(set(p) for p in per_job))   # a stall can leave one out
        assert shared
        for k in shared:
            assert lat.values[d][k - 1] == pytest.approx(
                np.mean([p[k] for p in per_job]) / 1000, rel=1e-12)
        lo = min(j[d][f"{kind}_ns"]["min"] for j in doc["jobs"]) / 1000
        hi = max(j[d][f"{kind}_ns"]["max"] for j in doc["jobs"]) / 1000
        v = lat.values[d][~np.isnan(lat.values[d])]
        assert len(v) >= AVG_RUNTIME - 1
        assert np.all((v >= lo * (1 - 1e-9)) & (v <= hi * (1 + 1e-9))), (v, lo, hi)


# --------------------------------------------------------------------------- a real drive

def test_ssd860_bandwidth_log():
    path = SSD860 / SSD860_LOG.format("bw")
    rows = raw_rows(path)
    bw = read_per_second([path])
    assert read_log(path).columns == 4          # fio 3.x before the priority column
    assert bw.mode == "averaged" and bw.window_ms == 1000
    assert len(bw.seconds) == 10011 and bw.directions == ("read", "write")
    assert not bw.last_partial
    assert np.all(bw.samples["read"] == 1) and np.all(bw.samples["write"] == 1)
    # spot rows, values equal to the file's (KiB/s -> MB/s)
    assert bw.values["read"][0] == 24848 * 1024 / 1e6       # "1000, 24848, 0, 0"
    assert bw.values["write"][0] == 25016 * 1024 / 1e6      # "1000, 25016, 1, 0"
    assert rows[126] == [63999, 25633, 0, 0]               # a row written 1 ms early
    assert bw.values["read"][63] == 25633 * 1024 / 1e6
    assert bw.values["write"][-1] == 25792 * 1024 / 1e6     # "10011000, 25792, 1, 0"
    for d, code in (("read", 0), ("write", 1)):
        assert bw.values[d].sum() == pytest.approx(
            sum(r[1] for r in rows if r[2] == code) * 1024 / 1e6, rel=1e-12)
    assert np.allclose(bw.total(), bw.values["read"] + bw.values["write"])


def test_ssd860_iops_and_latency_logs():
    iops = read_per_second([SSD860 / SSD860_LOG.format("iops")])
    assert len(iops.seconds) == 10011
    assert (iops.values["read"][0], iops.values["write"][0]) == (6212, 6254)
    assert (iops.values["read"][-1], iops.values["write"][-1]) == (6429, 6448)
    # 4 KiB I/Os: the bandwidth log is the IOPS log x 4 KiB within fio's rounding
    bw = read_per_second([SSD860 / SSD860_LOG.format("bw")])
    ratio = bw.values["read"] * 1e6 / 1024 / iops.values["read"]
    assert np.median(ratio) == pytest.approx(4.0, rel=0.01)

    clat = read_per_second([SSD860 / SSD860_LOG.format("clat")], lat_unit="ns")
    assert clat.unit == "us"
    assert len(clat.seconds) == 10012                     # fio's final flush at 10011.881 s
    assert clat.last_partial and len(clat.complete().seconds) == 10011
    assert clat.values["read"][0] == pytest.approx(95.228)       # "1000, 95228, 0, 0"
    assert clat.values["write"][0] == pytest.approx(36.498)      # "1000, 36498, 1, 0"
    assert clat.values["read"][193] == pytest.approx(105.026)    # "194002, 105026, 0, 0"
    assert clat.values["write"][10010] == pytest.approx(35.041)  # "10011000, 35041, 1, 0"
    assert clat.values["write"][10011] == pytest.approx(39.317)  # "10011881, 39317, 1, 0"
    # directions kept apart: this SATA drive reads at ~95 µs and writes at ~35 µs at QD 1
    assert np.median(clat.values["read"]) > 2 * np.median(clat.values["write"])
    with pytest.raises(ValueError, match="do not add"):
        clat.total()


# --------------------------------------------------------------------------- built logs

def test_averaged_edge_cases_in_fios_format():
    # second 2 has no row (no I/O: fio writes none); the last row is fio's final flush of 1 ms
    # into second 4
    bw = per_second([parse_log_text("1000, 1000, 1, 0, 0\n3000, 2000, 1, 0, 0\n"
                                    "3001, 500, 1, 0, 0\n", "bw")])
    assert list(bw.seconds) == [1, 2, 3, 4] and bw.last_partial and bw.n_complete == 3
    assert list(bw.values["write"]) == pytest.approx(
        [1000 * 1024 / 1e6, 0, 2000 * 1024 / 1e6, 500 * 0.001 * 1024 / 1e6])
    assert "read" not in bw.values and list(bw.direction("read")) == [0, 0, 0, 0]
    lat = per_second([parse_log_text("1000, 100000, 0, 0, 0\n3000, 200000, 0, 0, 0\n"
                                     "3001, 500000, 0, 0, 0\n", "clat")])
    assert list(lat.values["read"]) == pytest.approx([100, math.nan, 200, 500], nan_ok=True)
    # a slow device: latency rows come at the first completion after their window closed
    late = per_second([parse_log_text("1412, 400000, 0, 0, 0\n2003, 300000, 0, 0, 0\n"
                                      "3390, 500000, 0, 0, 0\n", "lat")])
    assert list(late.values["read"]) == pytest.approx([400, 300, 500]) and not late.last_partial
    # fio 2.x latency in µs
    us = per_second([parse_log_text("1000, 250, 0, 0\n", "lat")], lat_unit="us")
    assert us.values["read"][0] == 250
    # a partial last window (run ended at 2.5 s) is weighted by the time it covers
    part = per_second([parse_log_text("1000, 100, 0, 0, 0\n2000, 100, 0, 0, 0\n"
                                      "2500, 100, 0, 0, 0\n", "iops")])
    assert list(part.values["read"]) == pytest.approx([100, 100, 50]) and part.last_partial
    # 500 ms windows into seconds: the mean rate over each second
    half = per_second([parse_log_text("500, 10, 0, 0, 0\n1000, 30, 0, 0, 0\n"
                                      "1501, 40, 0, 0, 0\n2000, 60, 0, 0, 0\n", "iops")])
    assert half.window_ms == 500 and list(half.values["read"]) == pytest.approx([20, 50])


def test_several_jobs_and_directions_in_fios_format():
    job1 = parse_log_text("1000, 100, 0, 0, 0\n1000, 50, 1, 0, 0\n2001, 110, 0, 0, 0\n", "iops",
                          "x_iops.1.log")
    job2 = parse_log_text("999, 7, 0, 0, 0\n2000, 9, 0, 0, 0\n2000, 3, 2, 0, 0\n", "iops",
                          "x_iops.2.log")
    s = per_second([job1, job2])
    assert s.directions == ("read", "write", "trim")
    assert list(s.values["read"]) == [107, 119]
    assert list(s.values["write"]) == [50, 0]
    assert list(s.values["trim"]) == [0, 3]
    assert list(s.total()) == [157, 122]
    lat = per_second([parse_log_text("1000, 1000, 0, 0, 0\n", "lat"),
                      parse_log_text("1000, 3000, 0, 0, 0\n2000, 5000, 0, 0, 0\n", "lat")])
    assert list(lat.values["read"]) == pytest.approx([2.0, 5.0])   # mean over jobs
    # job 2's window closing at 2 s went unlogged (fio often skips the one closing at exit):
    # the second is not complete, and complete() drops it
    assert lat.last_partial and lat.n_complete == 1
    assert list(lat.complete().values["read"]) == [2.0] and not lat.complete().last_partial
    assert not s.last_partial


def test_per_io_rows_in_fios_format():
    text = ("3, 1165, 0, 4096, 4046848, 0\n998, 1131, 0, 4096, 0, 0\n"
            "1002, 539, 1, 131072, 5976064, 0\n")
    bw = per_second([parse_log_text(text, "bw")])
    assert bw.mode == "per_io"
    assert list(bw.values["read"]) == pytest.approx([8192 / 1e6, 0])
    assert list(bw.values["write"]) == pytest.approx([0, 131072 / 1e6])
    with pytest.raises(FioLogError, match="mixes averaged rows"):
        per_second([parse_log_text("1000, 5, 0, 0, 0\n1500, 1, 0, 4096, 0\n", "iops")])


def test_latency_unit_from_fio_version():
    assert latency_unit("fio-3.33") == "ns"
    assert latency_unit("fio-2.99") == "ns"
    assert latency_unit("fio-2.18") == "us"
    assert latency_unit("fio-2.1.4") == "us"
    assert latency_unit(None) == "ns"


def test_series_stats():
    st = series_stats([90, 100, 110, float("nan")])
    assert (st.n, st.mean, st.std) == (3, 100, 10)
    assert st.cv == pytest.approx(0.1) and (st.min, st.max, st.p50) == (90, 110, 100)
    assert math.isnan(series_stats([5]).std) and series_stats([]).n == 0


# --------------------------------------------------------------------------- refusals

def test_histogram_log_refused():
    with pytest.raises(FioLogError, match="histogram"):
        read_log(PKB_HIST)
    with pytest.raises(FioLogError, match="histogram"):
        read_log(PKB_HIST, "clat")
    with pytest.raises(FioLogError, match=r"<log>:1: .* columns: a latency histogram"):
        parse_log_text(PKB_HIST.read_text(), "clat")


def test_fio_text_output_refused():
    with pytest.raises(FioLogError, match="not a fio log name"):
        log_kind(MMN_TEXT)
    with pytest.raises(FioLogError, match=r"4K_RandRead\.log:1: '4K_RandRead: .*' is not a number"):
        read_log(MMN_TEXT, "bw")


@pytest.mark.parametrize("text,where,why", [
    ("1000, 5, 0, 0, 0\n2000, abc, 0, 0, 0\n", ":2:", "'abc' is not a number"),
    ("1000, 5, 0, 0, 0\n\n2000, 6, 0, 0\n", ":3:", "4 columns where the first line has 5"),
    ("1000, 5, 0, 0\n2000, 6, 5, 0\n", ":2:", "data direction must be 0"),
    ("1000, 5, 0, 0\n2000, -6, 1, 0\n", ":2:", "negative or non-finite value"),
    ("1000.5, 5, 0, 0\n", ":1:", "time is not an integer"),
    ("1000\n", ":1:", "1 column"),
    ("1700000000000, 5, 0, 0\n", ":1:", "absolute"),
    ("", "", "empty log"),
])
def test_malformed_logs_refused_with_file_and_line(tmp_path, text, where, why):
    path = tmp_path / "bad_bw.1.log"
    path.write_text(text)
    with pytest.raises(FioLogError) as err:
        read_log(path)
    assert str(err.value).startswith(f"{path}{where}")
    assert why in str(err.value)


def test_other_refusals(tmp_path):
    fz = tmp_path / "x_bw.1.log.fz"
    fz.write_bytes(b"\x78\x9c\0\0")
    with pytest.raises(FioLogError, match="inflate"):
        read_log(fz)
    with pytest.raises(FioLogError, match="cannot read"):
        read_log(tmp_path / "missing_bw.1.log")
    with pytest.raises(ValueError, match="several kinds"):
        per_second([parse_log_text("1000, 1, 0, 0\n", "bw"),
                    parse_log_text("1000, 1, 0, 0\n", "iops")])
    with pytest.raises(FioLogError, match="does not divide"):
        per_second([parse_log_text("1000, 1, 0, 0\n", "bw")], window_ms=300)
    (tmp_path / "j_bw.2.log").write_text("1000, 1, 0, 0\n")
    (tmp_path / "j_bw.1.log").write_text("1000, 1, 0, 0\n")
    (tmp_path / "j_clat.1.log").write_text("1000, 1, 0, 0\n")
    (tmp_path / "jj_bw.1.log").write_text("1000, 1, 0, 0\n")
    assert [p.name for p in find_logs(tmp_path, "j", "bw")] == ["j_bw.1.log", "j_bw.2.log"]
    assert [p.name for p in find_logs(tmp_path, "j", "lat")] == []
    assert json.dumps(log_kind("a_b_slat.3.log")) == '"slat"'
