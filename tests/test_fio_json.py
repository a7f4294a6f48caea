"""analysis.fio.output against real fio output: every committed sample (tests/fixtures/fio-samples), and fio runs made here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis.fio.job_options import parse_size
from analysis.fio.output import (
    FioOutputError,
    finished_s,
    load_document,
    parse_groups,
    read_groups,
    split_output,
)
from tests.conftest import SAMPLES, need

ALL_FILES = sorted(p for p in SAMPLES.rglob("*") if p.is_file())

# What each known sample must give: ("read", number of job groups) or
# ("refused", a phrase the reason must contain). Files added later are not in
# this table; they still have to be either read or refused with a reason.
PKB = "GoogleCloudPlatform__PerfKitBenchmarker/tests/data/fio/"
MMN = "MMN0001__Repo-for-Advanced-Computer-Systems/Project3/log&json data/"
NH = "NightHydra__AdvancedComputerSystemsProjects/Project3/"
LW = "louwrentius__fio-plot/"
SAM = LW + "benchmark_data/HPMICROSERVERG8/SATA300/FULL/SAMSUNG860PRO/"
STACK = "stackhpc__stackhpc-io-tools/fiotools/tests/"
VS = "vsalvaggio__Advanced-Computer-Systems-Projects/Project3/results/"
LOG = "fio log file"
JOBFILE = "fio job file, not fio output"
NO_JSON = "no JSON object in file (it starts with: "
EXPECTED = {
    "README.md": ("refused", NO_JSON + "'# Real fio outputs"),
    PKB + "fio-parser-sample-result.json": ("read", 5),
    PKB + "fio.job": ("refused", JOBFILE),
    PKB + "hist/bin_vals": ("refused", NO_JSON + "'0.5')"),
    PKB + "hist/expected_read.json": ("refused", "JSON without a 'jobs' list"),
    PKB + "hist/expected_write.json": ("refused", "JSON without a 'jobs' list"),
    PKB + "hist/pkb-7fb0c9d8-0_fio.job": ("refused", JOBFILE),
    PKB + "hist/pkb-7fb0c9d8-0_fio.json": ("read", 2),
    **{PKB + f"hist/pkb_fio_avg_1506559526.49_clat_hist.{i}.log": ("refused", LOG) for i in range(1, 5)},
    MMN + "4K_RandRead.log": ("refused", "fio normal text output, not JSON; rerun with --output-format=json+"),
    MMN + "NJ_32,_run1.json": ("read", 1),
    MMN + "NJ_64_run1.json": ("read", 1),
    **{NH + f: ("refused", JOBFILE) for f in (
        "block_size_sweep_random.fio", "queue_depth.fio", "read_write_sweep.fio",
        "tail_latency.fio", "zq_baseline_jobs.fio")},
    NH + "raw_data/data_analysis/block_size_sweep_random.json": ("read", 7),
    NH + "raw_data/data_analysis/queue_depth.json": ("read", 6),
    NH + "raw_data/data_analysis/read_write_sweep.json": ("read", 4),
    NH + "raw_data/data_analysis/tail_latency.json": ("read", 1),
    NH + "raw_data/data_analysis/zero_queue_baseline_data.json": ("read", 2),
    NH + "raw_data/data_analysis/zero_queue_baseline_data.txt": ("refused", "fio terse output"),
    NH + "raw_data/plots/tail_alignment_table_read.txt": ("refused", NO_JSON + "'| |50th"),
    NH + "raw_data/plots/tail_alignment_table_write.txt": ("refused", NO_JSON + "'| |50th"),
    NH + "raw_data/plots/zero_queue_table.txt": ("refused", NO_JSON + "'| |4Ki"),
    SAM + "jobtemplate.fio": ("refused", JOBFILE),
    **{SAM + f"randrw-iodepth-1-numjobs-1_{k}.1.log": ("refused", LOG) for k in ("bw", "clat", "iops")},
    LW + "benchmark_script/RAID5_7k2_SEQ/tmp/4k/randread-1-1.json":
        ("refused", NO_JSON + "'error: failed to setup shm segment')"),
    LW + "benchmark_script/test/zda/randread-1-1.json":
        ("refused", NO_JSON + "'fio: engine libaio not loadable')"),
    LW + "deleteme/fio/4k/randread-1-1.json": ("read", 1),
    LW + "party/fio/1m/run-1/write-64-1.json":
        ("refused", ("fio reported error 22 (Invalid argument) for job '1m' "
                     "(fio said: 'fio: time_based requires a runtime/timeout setting')")),
    LW + "test-data02/randread-01-01.json": ("read", 1),
    LW + "test-data02/randread-32-01.json": ("read", 1),
    LW + "test-data02/randwrite-01-01.json": ("read", 1),
    LW + "testdata250ssdcrucial/randread-1-4.json": ("read", 1),
    LW + "testdata250ssdcrucial/randread-16-8.json": ("read", 1),
    "samisrana__SSD-Performance-Profiling/fio_results/fio_randrw_4k_iodepth_64.json": ("read", 1),
    STACK + "beegfs-write/2/beegfs-write-97njm/4096.json": ("read", 1),
    STACK + "beegfs-write/2/beegfs-write-jfsx9/4096.json": ("read", 1),
    STACK + "ceph-randread/2/ceph-randread-2-8zdn4/1048576.json": ("read", 1),
    VS + "mix_70R.json": ("read", 1),
    VS + "tail_lat_qd16.json": ("read", 1),
    VS + "zeroq_randread_4k.json": ("read", 1),
    VS + "zeroq_write_128k.json": ("read", 1),
}


def rel(path: Path) -> str:
    return path.relative_to(SAMPLES).as_posix()


def raw_doc(path: Path) -> dict:
    """The JSON as fio wrote it, found independently of the code under test."""
    text = path.read_text()
    return json.loads(text[text.index("{\n"):])


def test_samples_present():
    assert SAMPLES.is_dir(), f"fio samples not found at {SAMPLES}"
    missing = sorted(set(EXPECTED) - {rel(p) for p in ALL_FILES})
    assert not missing


@pytest.mark.parametrize("path", ALL_FILES, ids=rel)
def test_every_sample_is_read_or_refused(path):
    expected = EXPECTED.get(rel(path))
    try:
        groups = read_groups(path)
    except FioOutputError as exc:
        reason = str(exc)
        assert reason and "\n" not in reason and len(reason) < 300
        if expected is not None:
            assert expected[0] == "refused", f"refused: {reason}"
            assert expected[1] in reason
        return
    if expected is not None:
        assert expected == ("read", len(groups))
    assert groups
    for g in groups:
        assert g.fio_version.startswith("fio-")
        assert g.directions
        for d in g.directions.values():
            assert d.total_ios > 0 and d.io_bytes > 0 and d.runtime_ms > 0
            assert d.iops > 0 and d.bw_bytes > 0
            assert 0 < d.lat_min_ns <= d.lat_mean_ns <= d.lat_max_ns
            assert d.lat_samples == d.total_ios
            assert d.pct_source in ("lat", "clat")
            pcts = list(d.percentiles_ns.values())
            assert pcts == sorted(pcts)  # percentiles never decrease


# --------------------------------------------------------------------------- numbers equal fio's own

def check_direction(d, raw: dict, *, lat_unit: float, kib: bool, pct_key: str):
    """Direction d carries exactly the numbers of fio's raw direction object."""
    lat_key = "lat_ns" if lat_unit == 1 else "lat"
    assert d.iops == raw["iops"]
    assert d.io_bytes == raw["io_bytes"] * (1024 if kib else 1)
    assert d.runtime_ms == raw["runtime"]
    if "bw_bytes" in raw:
        assert d.bw_bytes == raw["bw_bytes"]
    else:  # fio prints bw in KiB/s, floored from its bytes/s
        assert raw["bw"] * 1024 - 1024 <= d.bw_bytes <= raw["bw"] * 1024 + 1024
    assert d.lat_mean_ns == pytest.approx(raw[lat_key]["mean"] * lat_unit, rel=1e-15)
    assert d.lat_stddev_ns == pytest.approx(raw[lat_key]["stddev"] * lat_unit, rel=1e-15)
    assert d.lat_min_ns == raw[lat_key]["min"] * lat_unit
    assert d.lat_max_ns == raw[lat_key]["max"] * lat_unit
    printed = {float(k): v * lat_unit for k, v in raw[pct_key]["percentile"].items() if float(k) > 0}
    assert d.percentiles_ns == printed
    assert d.pct_source == pct_key.removesuffix("_ns")
    if "total_ios" in raw:
        assert d.total_ios == raw["total_ios"]


def test_fio_2_1_4_usec_kib_no_total_ios():
    path = SAMPLES / PKB / "fio-parser-sample-result.json"
    groups = read_groups(path)
    raw = raw_doc(path)["jobs"]
    assert [g.jobname for g in groups] == [j["jobname"] for j in raw]
    for g, job in zip(groups, raw):
        assert (g.rw, g.bs, g.iodepth, g.numjobs, g.options) == ("", "", None, None, {})
        (name, d), = g.directions.items()
        check_direction(d, job[name], lat_unit=1000, kib=True, pct_key="clat")
        assert len(d.percentiles_ns) == 19  # the three "0.00" padding entries are dropped
    # 2.1.4 has no total_ios: recovered from iops x runtime and io_bytes, it must
    # split io_bytes into the job file's block sizes (512k sequential, 4k random).
    sizes = [d.io_bytes / d.total_ios for g in groups for d in g.directions.values()]
    assert sizes == [512 * 1024] * 2 + [4096] * 3
    assert [d.total_ios for g in groups for d in g.directions.values()] == [707, 707, 9061, 9061, 9061]


def test_fio_2_17_group_reporting():
    path = SAMPLES / PKB / "hist/pkb-7fb0c9d8-0_fio.json"
    groups = read_groups(path)
    raw = raw_doc(path)["jobs"]
    assert [(g.rw, g.bs, g.iodepth, g.numjobs, g.jobs_merged) for g in groups] == [
        ("randread", 16384, 1, 2, 1), ("randwrite", 16384, 1, 2, 1)]
    for g, job, name in zip(groups, raw, ("read", "write")):
        assert list(g.directions) == [name]
        check_direction(g.directions[name], job[name], lat_unit=1000, kib=True, pct_key="clat")
        assert g.directions[name].io_bytes == g.directions[name].total_ios * 16384


@pytest.mark.parametrize("name", ["randread-01-01.json", "randread-32-01.json", "randwrite-01-01.json"])
def test_fio_2_18_usec_and_kib(name):
    path = SAMPLES / LW / "test-data02" / name
    (g,) = read_groups(path)
    direction = "write" if "write" in name else "read"
    check_direction(g.directions[direction], raw_doc(path)["jobs"][0][direction],
                    lat_unit=1000, kib=True, pct_key="clat")
    d = g.directions[direction]
    assert d.io_bytes == d.total_ios * 4096  # 266820 KiB = 66705 x 4 KiB
    assert (g.bs, g.numjobs) == (4096, 1)  # "01" in the job options
    assert g.iodepth == int(name.split("-")[1])


@pytest.mark.parametrize("path", sorted((SAMPLES / STACK).rglob("*.json")), ids=rel)
def test_fio_3_1_json_plus(path):
    (g,) = read_groups(path)
    raw = raw_doc(path)["jobs"][0]
    (name, d), = g.directions.items()
    check_direction(d, raw[name], lat_unit=1, kib=False, pct_key="clat_ns")
    assert "N" not in raw[name]["clat_ns"]  # 3.1 has no N: samples come from total_ios
    assert d.bins == {int(k): v for k, v in raw[name]["clat_ns"]["bins"].items()}
    assert sum(d.bins.values()) == d.total_ios == d.lat_samples
    assert g.bs == int(path.stem)  # the bs sweep is named by bs in bytes; bs is in global options


def test_fio_3_1_two_clients_sum():
    """Two pods writing at once are two files; merging them is a sum (README)."""
    paths = sorted((SAMPLES / STACK / "beegfs-write/2").rglob("*.json"))
    ds = [read_groups(p)[0].directions["write"] for p in paths]
    assert sum(d.total_ios for d in ds) == 806665 + 806098


def test_finished_s_reads_fios_own_stamp_local_or_client(tmp_path):
    """A local run's stamp is in ms; a client/server run has only ``timestamp``, in seconds
    (its absence broke every fleet run's analysis once). A copy's mtime is never used."""
    local = SAMPLES / "louwrentius__fio-plot/test-data02/randread-01-01.json"
    client = Path(__file__).parent / "fixtures/fio-client/randread-1s.json"
    assert finished_s(local) == load_document(local)["timestamp_ms"] / 1000.0
    copy = tmp_path / "client.json"
    copy.write_bytes(client.read_bytes())
    assert "timestamp_ms" not in load_document(copy)
    assert finished_s(copy) == 1795813888.0  # fio's "timestamp", not the copy's mtime


def test_fio_3_34_signal_2_before_json():
    path = SAMPLES / LW / "deleteme/fio/4k/randread-1-1.json"
    assert path.read_text().startswith("\nfio: terminating on signal 2\n{")
    (g,) = read_groups(path)
    check_direction(g.directions["read"], raw_doc(path)["jobs"][0]["read"],
                    lat_unit=1, kib=False, pct_key="clat_ns")
    assert g.fio_version == "fio-3.34"


def test_fio_3_33_error_22_after_stderr_lines():
    path = SAMPLES / LW / "party/fio/1m/run-1/write-64-1.json"
    doc = load_document(path)  # the JSON itself loads ...
    assert doc["jobs"][0]["error"] == 22
    with pytest.raises(FioOutputError, match=r"error 22 \(Invalid argument\) for job '1m'"):
        read_groups(path)  # ... but holds no result


@pytest.mark.parametrize("name,lat_pct", [("tail_lat_qd16.json", True), ("mix_70R.json", False),
                                          ("zeroq_randread_4k.json", False),
                                          ("zeroq_write_128k.json", False)])
def test_fio_3_36(name, lat_pct):
    path = SAMPLES / VS / name
    (g,) = read_groups(path)
    raw = raw_doc(path)["jobs"][0]
    for direction, d in g.directions.items():
        check_direction(d, raw[direction], lat_unit=1, kib=False,
                        pct_key="lat_ns" if lat_pct else "clat_ns")
    if name == "mix_70R.json":
        assert (g.rw, g.rwmixread, g.iodepth, list(g.directions)) == ("randrw", 70, 32, ["read", "write"])


def test_fio_3_36_numjobs_with_trailing_comma():
    (g,) = read_groups(SAMPLES / MMN / "NJ_32,_run1.json")
    assert g.options["numjobs"] == "32,"
    assert (g.numjobs, g.jobs_merged) == (32, 1)  # group_reporting: one entry


def test_fio_3_41_windows_percentile_list():
    path = SAMPLES / NH / "raw_data/data_analysis/queue_depth.json"
    groups = read_groups(path)
    raw = raw_doc(path)["jobs"]
    assert [g.iodepth for g in groups] == [1, 2, 4, 8, 16, 32]
    for g, job in zip(groups, raw):
        assert (g.rw, g.bs, g.rwmixread, g.options["percentile_list"]) == ("randrw", 4096, 50, "50:95:99:99.9")
        for direction in ("read", "write"):
            check_direction(g.directions[direction], job[direction], lat_unit=1, kib=False, pct_key="clat_ns")
            assert list(g.directions[direction].percentiles_ns) == [50.0, 95.0, 99.0, 99.9]


def _author_table(path: Path) -> list[list[float]]:
    rows = [line.strip("|").split("|") for line in path.read_text().splitlines()[2:]]
    return [[float(x) for x in row[1:]] for row in rows]


@pytest.mark.parametrize("direction", ["read", "write"])
def test_fio_3_41_author_tail_table_reproduced(direction):
    """The author's tail table is queue_depth.json's clat percentiles in us (README)."""
    groups = read_groups(SAMPLES / NH / "raw_data/data_analysis/queue_depth.json")
    ours = [[round(v / 1000, 2) for v in g.directions[direction].percentiles_ns.values()] for g in groups]
    assert ours == _author_table(SAMPLES / NH / f"raw_data/plots/tail_alignment_table_{direction}.txt")


def test_fio_3_41_zero_queue_defaults():
    """Options fio did not print are fio's defaults: the '128 Seq' job ran 4 KiB I/O."""
    groups = read_groups(SAMPLES / NH / "raw_data/data_analysis/zero_queue_baseline_data.json")
    seq = groups[1]
    assert (seq.jobname, seq.rw, seq.bs, seq.iodepth, seq.numjobs) == ("Zero Queue 128 Seq", "rw", 4096, 1, 1)
    assert all(d.io_bytes == 4096 * d.total_ios for d in seq.directions.values())
    # The author's zero-queue table (rows: mean, stddev, p95, p99 of clat in us;
    # columns: the random job's read and write, then the "128Ki" job's): its
    # percentiles are these groups' clat percentiles.
    table = _author_table(SAMPLES / NH / "raw_data/plots/zero_queue_table.txt")
    ours = [[round(g.directions[d].percentiles_ns[p] / 1000, 2) for g in groups for d in ("read", "write")]
            for p in (95.0, 99.0)]
    assert ours == table[2:4]


# --------------------------------------------------------------------------- merging jobs

def test_merge_8_jobs_without_group_reporting():
    path = SAMPLES / LW / "testdata250ssdcrucial/randread-16-8.json"
    (g,) = read_groups(path)
    raw = [j["read"] for j in raw_doc(path)["jobs"]]
    d = g.directions["read"]
    assert (g.jobs_merged, g.numjobs, g.iodepth) == (8, 8, 16)
    assert d.total_ios == sum(r["total_ios"] for r in raw)
    assert d.io_bytes == sum(r["io_bytes"] for r in raw)
    # as group_reporting would: fio's formulas on the sums and the longest runtime (stat.c,
    # sum_thread_stats and add_ddir_status_json), within 0.003% of the sum of the jobs' rates
    runtime = max(r["runtime"] for r in raw)
    assert d.runtime_ms == runtime
    assert d.iops == 1000.0 * sum(r["total_ios"] for r in raw) / runtime
    assert d.bw_bytes == 1000 * sum(r["io_bytes"] for r in raw) // runtime
    assert d.iops == pytest.approx(sum(r["iops"] for r in raw), rel=3e-5)
    n = [r["total_ios"] for r in raw]  # fio 3.6 prints no N: one sample per I/O
    mean = sum(r["lat_ns"]["mean"] * k for r, k in zip(raw, n)) / sum(n)
    assert d.lat_mean_ns == pytest.approx(mean, rel=1e-14)
    # pooled variance: within-job sums of squares plus between-job spread
    ss = sum(r["lat_ns"]["stddev"] ** 2 * (k - 1) + k * (r["lat_ns"]["mean"] - mean) ** 2
             for r, k in zip(raw, n))
    assert d.lat_stddev_ns == pytest.approx(math.sqrt(ss / (sum(n) - 1)), rel=1e-12)
    assert d.lat_min_ns == min(r["lat_ns"]["min"] for r in raw)
    assert d.lat_max_ns == max(r["lat_ns"]["max"] for r in raw)
    # no bins: percentiles of 8 jobs cannot be merged, but the kind is kept
    assert (d.percentiles_ns, d.bins, d.pct_source) == ({}, None, "clat")


def test_client_server_merge_matches_fios_all_clients(fio_runs):
    """fio's client prints each job and its own "All clients" sum: ours must agree."""
    run = need(fio_runs, "client")
    entries = run["doc"]["client_stats"]
    fio_sum = next(e for e in entries if e["jobname"] == "All clients")["read"]
    (g,) = read_groups(run["path"])
    d = g.directions["read"]
    assert (g.jobname, g.jobs_merged, g.numjobs) == ("clients", 2, 2)
    assert d.total_ios == fio_sum["total_ios"]
    assert d.io_bytes == fio_sum["io_bytes"]
    assert d.runtime_ms == fio_sum["runtime"]
    # fio's formulas on the sums (stat.c, add_ddir_status_json), to the last digit: the sum of
    # the clients' own rates was 0.25% off when their runtimes differed
    assert d.iops == pytest.approx(fio_sum["iops"], abs=5e-7)  # fio prints 6 decimals
    assert d.bw_bytes == fio_sum["bw_bytes"]
    assert d.lat_mean_ns == pytest.approx(fio_sum["lat_ns"]["mean"], abs=1e-6)
    assert d.lat_stddev_ns == pytest.approx(fio_sum["lat_ns"]["stddev"], abs=1e-5)
    assert (d.lat_min_ns, d.lat_max_ns) == (fio_sum["lat_ns"]["min"], fio_sum["lat_ns"]["max"])
    # each client entry is json+, so the merged group has percentiles from summed bins
    assert d.pct_source == "lat" and sum(d.bins.values()) == d.total_ios
    assert set(d.percentiles_ns) == {float(k) for k in entries[0]["read"]["lat_ns"]["percentile"]}


def test_different_jobs_in_one_group_stay_apart(fio_runs):
    """Jobs sharing a groupid but not a name (no stonewall) are not merged."""
    a, b = need(fio_runs, "psync")["doc"], need(fio_runs, "randrw")["doc"]
    doc = {**a, "jobs": a["jobs"] + b["jobs"]}
    groups, skipped = parse_groups(doc)
    assert [(g.jobname, g.groupid, g.jobs_merged) for g in groups] == [("psync", 0, 1), ("randrw", 0, 1)]
    assert skipped == []


def test_partly_failed_file_keeps_good_groups(fio_runs):
    good = need(fio_runs, "psync")["doc"]
    failed = raw_doc(SAMPLES / LW / "party/fio/1m/run-1/write-64-1.json")["jobs"][0]
    groups, skipped = parse_groups({**good, "jobs": good["jobs"] + [{**failed, "groupid": 1}]})
    assert [g.jobname for g in groups] == ["psync"]
    assert skipped == ["fio reported error 22 (Invalid argument) for job '1m'"]


# --------------------------------------------------------------------------- real fio runs

@pytest.mark.parametrize("name", ["psync", "io_uring", "randrw"])
def test_real_run_equals_fio_json(fio_runs, name):
    run = need(fio_runs, name)
    (g,) = read_groups(run["path"])
    raw = run["doc"]["jobs"][0]
    assert g.fio_version == run["doc"]["fio version"]
    assert (g.bs, g.iodepth, g.numjobs) == (4096, 8 if name == "io_uring" else 1, 1)
    expected_dirs = ["read", "write"] if name == "randrw" else ["read"]
    assert list(g.directions) == expected_dirs
    for direction, d in g.directions.items():
        check_direction(d, raw[direction], lat_unit=1, kib=False, pct_key="lat_ns")
        assert d.lat_samples == raw[direction]["lat_ns"]["N"]
        assert d.bins == {int(k): v for k, v in raw[direction]["lat_ns"]["bins"].items()}
    if name == "randrw":
        assert g.rwmixread == 70


def test_text_around_json(fio_runs):
    """fio's stderr lines before and after the JSON do not matter."""
    text = need(fio_runs, "psync")["text"]
    noisy = "fio: terminating on signal 2\n\n" + text + "fio: file hash not empty on exit\n"
    preamble, doc = split_output(noisy)
    assert doc == json.loads(text)
    assert preamble.startswith("fio: terminating on signal 2")


def test_last_of_several_documents_wins(fio_runs):
    """With --status-interval fio prints one document per interval; the last is final."""
    run = need(fio_runs, "psync")
    earlier = json.loads(run["text"])
    earlier["jobs"][0]["read"]["total_ios"] = 1
    _, doc = split_output(json.dumps(earlier, indent=2) + "\n" + run["text"])
    assert doc == run["doc"]


def test_truncated_json_is_refused(fio_runs, tmp_path):
    text = need(fio_runs, "psync")["text"]
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(FioOutputError, match=r"^truncated or malformed JSON \(.* at line \d+ column \d+\); rerun"):
        read_groups(cut)


def test_empty_jobs_list(fio_runs, tmp_path):
    doc = {**need(fio_runs, "psync")["doc"], "jobs": []}
    path = tmp_path / "nojobs.json"
    path.write_text("fio: failed parsing bs=4x\n" + json.dumps(doc, indent=2))
    with pytest.raises(FioOutputError, match=r"^fio output with an empty 'jobs' list \(no job ran\) "
                                             r"\(fio said: 'fio: failed parsing bs=4x'\)$"):
        read_groups(path)


def test_utf16_from_powershell_redirect(tmp_path):
    """`fio.exe ... > out.json` in Windows PowerShell writes UTF-16 with a BOM."""
    src = SAMPLES / NH / "raw_data/data_analysis/tail_latency.json"
    utf16 = tmp_path / "tail_latency.json"
    utf16.write_bytes(src.read_text().encode("utf-16"))
    assert read_groups(utf16) == read_groups(src)


def test_empty_and_binary_files(tmp_path):
    (tmp_path / "empty.json").write_text("\n\n")
    (tmp_path / "bin.json").write_bytes(b"\x7fELF\x00\x01")
    with pytest.raises(FioOutputError, match="^empty file$"):
        read_groups(tmp_path / "empty.json")
    with pytest.raises(FioOutputError, match="^binary file"):
        read_groups(tmp_path / "bin.json")


# --------------------------------------------------------------------------- option parsing

@pytest.mark.parametrize("text,kb_base,expected", [
    ("4k", 1024, 4096), ("128K", 1024, 131072), ("1m", 1024, 1048576), ("512", 1024, 512),
    ("4kb", 1024, 4096), ("1g", 1024, 1 << 30), ("1048576", 1024, 1048576),
    # fio's default kb_base=1024 is a compatibility mode where KiB means 1000
    # (checked: fio 3.33 with bs=4KiB issues 4000-byte I/Os); kb_base=1000 swaps.
    ("4KiB", 1024, 4000), ("4KiB", 1000, 4096), ("4k", 1000, 4000),
    ("4k-16k", 1024, None), ("4k,8k", 1024, None), ("${BLOCKSIZE}", 1024, None),
])
def test_parse_size(text, kb_base, expected):
    assert parse_size(text, kb_base) == expected


def test_bs_range_stays_a_string(fio_runs):
    doc = need(fio_runs, "psync")["doc"]
    job = {**doc["jobs"][0], "job options": {**doc["jobs"][0]["job options"], "bs": "4k-16k"}}
    (g,), _ = parse_groups({**doc, "jobs": [job]})
    assert g.bs == "4k-16k"
