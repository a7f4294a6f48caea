"""§6 end to end: real fio on the default file target and on loop devices.

Numbers in the tables are checked against the repetitions' own JSON and logs, read here with the
json module and plain line splitting; the preconditioning interlocks are checked on a real loop
device with its bytes checksummed.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from analysis.fio.log_files import find_logs
from analysis.fio.log_series import read_per_second, series_stats
from analysis.run import order, record
from tests.test_order import written_order
from tests.toolkit import TINY, load_json, loop_device, run, sha256_of

QUICK = [*TINY, "--runtime", "3"]  # §6's cases need more than a second


def rep_jobs(root: Path, case: str) -> list[dict]:
    return [load_json(p)["jobs"][0]
            for p in sorted((root / "results" / "wss_burst" / case).glob("rep*.json"))]


def log_values(path: Path) -> list[float]:
    return [float(line.split(",")[1]) for line in path.read_text().splitlines() if line.strip()]


def check_wss(root: Path, sizes: dict[str, int]) -> None:
    table = pd.read_csv(root / "tables" / "wss_burst_wss.csv")
    assert sorted(table.case) == sorted(f"{rw}-4k-wss-{label}" for rw in ("randread", "randwrite")
                                        for label in sizes)
    for row in table.itertuples():
        jobs = rep_jobs(root, row.case)
        direction = "read" if row.rw == "randread" else "write"
        assert row.wss_bytes == sizes[row.case.rsplit("-", 1)[1]]
        assert all(int(j["job options"]["size"]) == row.wss_bytes for j in jobs)
        iops = [j[direction]["iops"] for j in jobs]
        if bool(getattr(row, "regime_split", False)):
            # its two repetitions wrote at separate levels (a file's writeback can do it): the
            # row keeps no mean, and each regime's row has its own repetition's (issue 41)
            assert math.isnan(row.iops_mean) and row.rw == "randwrite"
            regimes = pd.read_csv(root / "tables" / "wss_burst_regimes.csv")
            mine = regimes[regimes.case == row.case]
            assert sorted(mine.iops_mean) == pytest.approx(sorted(iops), rel=1e-6)
            continue
        assert row.iops_mean == pytest.approx(statistics.mean(iops), rel=1e-6)
        # The CV of per-second IOPS within each run, from its own 1 s log (read by fio_logs,
        # tested against fio's own totals in test_fio_logs), then averaged over the runs.
        cvs = []
        for k in (1, 2):
            case_dir = root / "results" / "wss_burst" / row.case
            assert 2 <= len(log_values(case_dir / f"rep{k}_iops.1.log")) <= 4  # 3 s, 1 s rows
            cvs.append(series_stats(read_per_second(find_logs(case_dir, f"rep{k}", "iops"))
                                    .complete().total()).cv)
        assert row.iops_per_s_cv == pytest.approx(statistics.mean(cvs), rel=1e-9)
        assert row.lat_p50_us <= row.lat_p99_us <= row.lat_p99_9_us


def check_compress(root: Path) -> None:
    table = pd.read_csv(root / "tables" / "wss_burst_compress.csv")
    assert list(table.data) == ["random (incompressible)", "50% compressible", "all zeros"]
    regimes = root / "tables" / "wss_burst_regimes.csv"
    for row in table.itertuples():
        jobs = rep_jobs(root, row.case)
        if row.regime_split:  # its repetitions wrote at two levels (a file under load can):
            # no mean, and each regime over its own repetitions, all of them counted once
            split = pd.read_csv(regimes)
            assert math.isnan(row.bw_MBps_mean) and split[split.case == row.case].n.sum() == len(jobs)
        else:
            assert row.bw_MBps_mean == pytest.approx(
                statistics.mean(j["write"]["bw_bytes"] for j in jobs) / 1e6, rel=1e-6)
        options = jobs[0]["job options"]
        assert (options.get("buffer_compress_percentage") == "50") == (row.data == "50% compressible")
        assert (options.get("zero_buffers") == "1") == (row.data == "all zeros")


def check_burst(root: Path, case: str, duration: int) -> pd.DataFrame:
    per_second = pd.read_csv(root / "tables" / "wss_burst_burst.csv")
    (job,) = rep_jobs(root, case)  # one repetition: a time series, not a sample
    assert job["job options"]["runtime"] == str(duration)
    assert duration - 2 <= len(per_second) <= duration
    assert list(per_second.t_s) == list(range(1, len(per_second) + 1))
    # fio's bandwidth log holds its own bandwidth samples (bw_avg_time follows log_avg_msec,
    # init.c): as many rows, with the same mean, minimum and maximum, as its JSON. What ran after
    # the last sample (the partial last second) is in neither, so no bound on it is asserted:
    # load can make that second faster than any logged one (v78: 10.3% faster).
    case_dir = root / "results" / "wss_burst" / case
    (bw_log,) = find_logs(case_dir, "rep1", "bw")  # one job
    samples = log_values(bw_log)  # KiB/s
    write = job["write"]
    assert len(samples) == write["bw_samples"]
    assert statistics.mean(samples) == pytest.approx(write["bw_mean"], abs=0.01)
    assert (min(samples), max(samples)) == (write["bw_min"], write["bw_max"])
    # The toolkit's seconds keep every sample's bytes, and the table is the seconds that every
    # job covers in full, in MB/s.
    logged = read_per_second([bw_log])
    assert logged.total().sum() * 1e6 == pytest.approx(sum(samples) * 1024, rel=1e-3)
    assert len(per_second) == logged.n_complete
    assert list(per_second.bw_MBps) == pytest.approx(logged.total()[:len(per_second)], rel=1e-9)
    assert per_second.bw_MBps.sum() * 1e6 <= 1.05 * write["io_bytes"]
    # A second without a completion has no histogram line (a stall on a loaded machine).
    p99 = per_second.clat_p99_us.dropna()
    assert len(p99) >= len(per_second) / 2 and (p99 > 0).all()
    assert (case_dir / "rep1.start").exists()
    health = case_dir / "health"
    assert (health / "samples.unavailable").exists() or (health / "samples.jsonl").exists()
    # the samples on fio's time axis, drawn by the analysis (none where there were none)
    table = root / "tables" / "wss_burst_health.csv"
    assert (health / "samples.unavailable").exists() or \
        table.read_text().startswith("t_s,temperature_c")
    return per_second


def check_snippet(root: Path, target: str, parts: list[str]) -> str:
    text = (root / "out" / "section_6_wss_burst.md").read_text()
    assert text.startswith("## §6 Working set, burst and compressibility")
    assert f"`{target}`" in text
    headings = {"burst": "### Burst → steady state", "recovery": "### Write-cache recovery",
                "wss": "### Working set", "compress": "### Compressibility"}
    for part, heading in headings.items():
        assert (heading in text) == (part in parts), part
    for link in [line for line in text.splitlines() if line.startswith("![")]:
        path = root / "out" / link.split("](")[1].rstrip(")")
        data = path.resolve().read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert "**Health across the section:**" in text
    return text


def test_default_file_target(toolkit):
    result = run(toolkit, "wss_burst_test.bash", *QUICK, "--duration", "10", "--wss", "16m,all",
                 "--recovery-gaps", "1,2", "--recovery-probe", "3")
    assert result.returncode == 0, result.stderr
    check_wss(toolkit, {"16m": 16 << 20, "all": 64 << 20})
    check_compress(toolkit)
    per_second = check_burst(toolkit, "burst-write-128k", 10)
    text = check_snippet(toolkit, str(toolkit / "tmp" / "target.img"),
                         ["burst", "recovery", "wss", "compress"])
    # the probes ran right after the burst, in the order of the gaps, each after its idle
    recovery = pd.read_csv(toolkit / "tables" / "wss_burst_recovery.csv")
    assert list(recovery.case) == ["recovery-1s", "recovery-2s"]
    assert all(g - 0.05 <= i <= g + 5 for g, i in zip(recovery.gap_s, recovery.idle_s, strict=True))
    if "then a cliff" not in text:  # a file without a write cache: nothing to recover
        assert "**Write-cache recovery:** not measured: the burst showed no cliff" in text
    if "then a cliff" not in text:  # the plateau is the run less its first (ramping) second
        assert f"{per_second[per_second.t_s > 1].bw_MBps.median():,.0f} MB/s" in text
    # 10 s: no SNIA minute rounds, said so
    assert "1 s rounds, shorter than SNIA's 1 minute" in text and "An indication only" in text
    assert "unavailable on this device" in text  # no SMART on these virtual disks
    assert "[1/17] burst-write-128k rep 1/1" in result.stderr
    assert "[2/17] recovery-1s rep 1/1" in result.stderr
    # §6 keeps the order of its burst and probes (CASE_ORDER=fixed-first; test_order.py has the
    # rule): the burst first, after its stated idle, then the probes; the working sets and the
    # compressibility cases after them in shuffled rounds, as the other sections run
    doc = record.section(toolkit / "results" / "wss_burst")
    written = written_order(toolkit, "wss_burst")
    assert doc["order_rule"] == "fixed-first"
    assert [r for stage in doc["order"] for r in stage] == written
    assert len(written) == 17
    assert written[:3] == ["burst-write-128k/rep1", "recovery-1s/rep1", "recovery-2s/rep1"]
    rest = written[3:]
    names = sorted({r.split("/")[0] for r in rest})
    shuffled = order.run_order(doc["order_seed"], "rounds", [(n, 2) for n in names])
    assert rest == [f"{names[i]}/rep{k}" for i, k in shuffled]
    assert (toolkit / "results" / "wss_burst" / "burst-write-128k" / "rep1.idle").is_file()
    assert "burst: the drive idles" in result.stderr or "It began after" in text


@pytest.mark.root
def test_loop_device_burst_and_a_skipped_working_set(toolkit, tmp_path):
    with loop_device(tmp_path / "backing.img", size_mb=96) as dev:
        result = run(toolkit, "wss_burst_test.bash", *QUICK, "--target", dev, "--destroy", dev,
                     "--duration", "10",
                     "--parts", "burst,wss", "--wss", "16m,1g", "--burst-rw", "randwrite",
                     "--burst-bs", "64k")
    assert result.returncode == 0, result.stderr
    assert "working set 1g skipped: the region is 64 MiB" in result.stderr
    check_wss(toolkit, {"16m": 16 << 20})
    check_burst(toolkit, "burst-randwrite-64k", 10)
    text = check_snippet(toolkit, dev, ["burst", "wss"])
    assert f"`{dev}` (block;" in text and "64 KiB random write at QD 32" in text


def test_precondition_needs_a_block_device(toolkit):
    result = run(toolkit, "wss_burst_test.bash", *QUICK, "--precondition")
    assert result.returncode == 2
    assert "--precondition writes a whole device twice over: it needs a block device" \
        in result.stderr
    assert not (toolkit / "tmp" / "target.img").exists()


@pytest.mark.root
def test_precondition_interlocks_then_a_real_precondition(toolkit, tmp_path):
    tree = toolkit / "results" / "drive-a"  # a results tree of its own (--results)
    with loop_device(tmp_path / "backing.img", size_mb=32) as dev:
        before = sha256_of(dev)
        # the compressibility cases only follow the precondition here: one short repetition each
        args = [*QUICK, "--runtime", "1", "--repeat", "1", "--target", dev, "--parts", "compress",
                "--precondition", "--results", str(tree)]
        result = run(toolkit, "wss_burst_test.bash", *args)
        assert result.returncode == 3 and f"add --destroy {dev}" in result.stderr
        # Confirmed with --destroy but not with --yes, and no terminal to ask on.
        result = run(toolkit, "wss_burst_test.bash", *args, "--destroy", dev)
        assert result.returncode == 2 and "add --yes (YES=1)" in result.stderr
        assert "precondition: 128 KiB sequential writes over 2 x 32 MiB" in result.stderr
        assert sha256_of(dev) == before
        assert not list(tree.glob("wss_burst/*/rep*.json"))

        result = run(toolkit, "wss_burst_test.bash", *args, "--destroy", dev, "--yes")
        assert result.returncode == 0, result.stderr
        # Done once in this tree: a rerun neither asks again nor preconditions again.
        result = run(toolkit, "wss_burst_test.bash", *args, "--destroy", dev)
        assert result.returncode == 0, result.stderr
        assert "precondition:" not in result.stderr
    results = tree / "wss_burst"
    job = json.loads((results / "precondition.json").read_text())["jobs"][0]
    assert job["write"]["io_bytes"] == 2 * (32 << 20)  # every byte of the device, twice
    steps = record.load(tree)["steps"]
    assert steps["wss_burst/precondition"] == steps["wss_burst/prefill"]
    assert steps["wss_burst/precondition"].startswith(f"device {dev} written twice sequentially")
