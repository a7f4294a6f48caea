"""The summarize command: CSV rows equal to fio's own numbers, refusals on stderr, exit codes."""

from __future__ import annotations

import csv
import io
import json

import pytest

from analysis.fio.summarize import COLUMNS, main
from tests.conftest import SAMPLES, need

VS = SAMPLES / "vsalvaggio__Advanced-Computer-Systems-Projects/Project3/results"
QD = SAMPLES / "NightHydra__AdvancedComputerSystemsProjects/Project3/raw_data/data_analysis/queue_depth.json"
EIGHT_JOBS = SAMPLES / "louwrentius__fio-plot/testdata250ssdcrucial/randread-16-8.json"
PKB_214 = SAMPLES / "GoogleCloudPlatform__PerfKitBenchmarker/tests/data/fio/fio-parser-sample-result.json"
NO_ENGINE = SAMPLES / "louwrentius__fio-plot/benchmark_script/test/zda/randread-1-1.json"
ERROR_22 = SAMPLES / "louwrentius__fio-plot/party/fio/1m/run-1/write-64-1.json"
PCT_CELLS = {"lat_p50_us": "50.000000", "lat_p95_us": "95.000000",
             "lat_p99_us": "99.000000", "lat_p99_9_us": "99.900000"}


def run(capsys, *args) -> tuple[int, list[dict], str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out))) if out.startswith("file,") else []
    return code, rows, out, err


def check_row(row: dict, raw: dict, pct_key: str):
    """A CSV row holds the JSON's own numbers, converted to MB/s and microseconds."""
    assert float(row["iops"]) == pytest.approx(raw["iops"], rel=1e-12)
    assert float(row["bw_MBps"]) == pytest.approx(raw["bw_bytes"] / 1e6, rel=1e-12)
    assert float(row["lat_us_mean"]) == pytest.approx(raw["lat_ns"]["mean"] / 1e3, rel=1e-12)
    for column, key in PCT_CELLS.items():
        printed = raw[pct_key]["percentile"].get(key)
        if printed is None:
            assert row[column] == ""
        else:
            assert float(row[column]) == pytest.approx(printed / 1e3, rel=1e-12)
    assert row["pct_source"] == pct_key.removesuffix("_ns")


def test_good_files(capsys):
    code, rows, out, err = run(capsys, VS / "tail_lat_qd16.json", VS / "mix_70R.json", QD)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == ",".join(COLUMNS)
    assert len(rows) == 1 + 2 + 6 * 2
    tail = rows[0]
    assert {k: tail[k] for k in ("jobname", "rw", "bs", "iodepth", "numjobs", "direction", "fio_version")} == {
        "jobname": "tail_lat_qd16", "rw": "randread", "bs": "4096", "iodepth": "16", "numjobs": "1",
        "direction": "read", "fio_version": "fio-3.36"}
    check_row(tail, json.loads((VS / "tail_lat_qd16.json").read_text())["jobs"][0]["read"], "lat_ns")
    assert tail["lat_p99_us"] == "272.384" and tail["lat_p99_9_us"] == "374.784"
    mix = json.loads((VS / "mix_70R.json").read_text())["jobs"][0]
    assert [r["direction"] for r in rows[1:3]] == ["read", "write"]
    for row, direction in zip(rows[1:3], ("read", "write")):
        check_row(row, mix[direction], "clat_ns")
    qd = json.loads(QD.read_text())["jobs"]
    assert [int(r["iodepth"]) for r in rows[3::2]] == [1, 2, 4, 8, 16, 32]
    for i, job in enumerate(qd):
        check_row(rows[3 + 2 * i], job["read"], "clat_ns")
        check_row(rows[4 + 2 * i], job["write"], "clat_ns")


def test_bad_and_good_file(capsys):
    code, rows, _, err = run(capsys, NO_ENGINE, VS / "zeroq_write_128k.json")
    assert code == 2
    assert [(r["jobname"], r["direction"], r["bs"]) for r in rows] == [("zeroq_write_128k", "write", "131072")]
    assert err == (f"summarize: {NO_ENGINE}: no JSON object in file "
                   f"(it starts with: 'fio: engine libaio not loadable')\n")


def test_error_job_and_missing_file(capsys, tmp_path):
    code, rows, out, err = run(capsys, ERROR_22, tmp_path / "nope.json")
    assert code == 2 and rows == [] and out == ",".join(COLUMNS) + "\n"
    lines = err.splitlines()
    assert lines[0].startswith(f"summarize: {ERROR_22}: fio reported error 22 (Invalid argument) for job '1m'")
    assert lines[1] == f"summarize: {tmp_path / 'nope.json'}: cannot read: No such file or directory"


def test_merged_jobs_without_bins_leave_percentiles_empty(capsys):
    code, rows, _, err = run(capsys, EIGHT_JOBS)
    assert code == 0
    (row,) = rows
    raw = [j["read"] for j in json.loads(EIGHT_JOBS.read_text())["jobs"]]
    runtime = max(r["runtime"] for r in raw)  # fio's group_reporting formulas on the sums
    assert float(row["iops"]) == pytest.approx(1000 * sum(r["total_ios"] for r in raw) / runtime,
                                               rel=1e-12)
    assert float(row["bw_MBps"]) == pytest.approx(
        1000 * sum(r["io_bytes"] for r in raw) // runtime / 1e6, rel=1e-12)
    assert [row[c] for c in PCT_CELLS] == ["", "", "", ""]
    assert (row["pct_source"], row["numjobs"]) == ("clat", "8")
    assert "8 jobs merged without json+ bins, so no percentiles" in err


def test_old_fio_without_options(capsys):
    code, rows, _, _ = run(capsys, PKB_214)
    assert code == 0 and len(rows) == 5
    first = rows[0]
    assert [first[c] for c in ("rw", "bs", "iodepth", "numjobs")] == ["", "", "", ""]
    raw = json.loads(PKB_214.read_text())["jobs"][0]["write"]  # usec in fio 2.1.4
    assert float(first["lat_us_mean"]) == raw["lat"]["mean"]
    assert float(first["lat_p99_9_us"]) == raw["clat"]["percentile"]["99.900000"]


def test_percentile_list_without_standard_percentiles(capsys, fio_runs):
    """percentile_list=30:60: fio printed none of p50..p99.9, so the cells are empty."""
    path = need(fio_runs, "n25")["path"]
    code, rows, _, _ = run(capsys, path)
    assert code == 0
    assert [rows[0][c] for c in PCT_CELLS] == ["", "", "", ""]
    assert rows[0]["pct_source"] == "lat"


def test_real_run(capsys, fio_runs):
    r = need(fio_runs, "randrw")
    code, rows, _, _ = run(capsys, r["path"])
    assert code == 0 and [row["direction"] for row in rows] == ["read", "write"]
    for row, direction in zip(rows, ("read", "write")):
        check_row(row, r["doc"]["jobs"][0][direction], "lat_ns")


def test_usage(capsys):
    code, _, out, err = run(capsys)
    assert code == 2 and out == "" and err.startswith("usage: python -m analysis summarize FILE...")
    code, _, out, err = run(capsys, "--help")
    assert code == 0 and err == "" and out.startswith("usage: python -m analysis summarize FILE...")
    code, _, _, err = run(capsys, "--bogus", QD)
    assert code == 2 and err.startswith("summarize: unknown option '--bogus'")
