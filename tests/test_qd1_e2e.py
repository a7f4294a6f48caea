"""§2 end to end: real fio on the default file target, a loop device and a zram device.

Every number in the table is checked against the repetitions' own JSON, read here with nothing
but the json module, so the test does not trust the code it tests.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis.render import markdown as md
from analysis.rules.cases import case_rows
from analysis.run import cpu_load, host_ceiling, record
from tests.toolkit import (
    TINY,
    assert_row_is_fios,
    fio_reps,
    load_json,
    loop_device,
    rep_files,
    run,
    tree_fio_clock,
)

EXPECTED = {  # case -> (rw, bs, direction)
    "randread-4k": ("randread", 4096, "read"),
    "randwrite-4k": ("randwrite", 4096, "write"),
    "read-128k": ("read", 131072, "read"),
    "write-128k": ("write", 131072, "write"),
}



def check_section_outputs(root: Path, target: str) -> None:
    table = pd.read_csv(root / "tables" / "qd1_baseline.csv")
    table = table[table.case.isin(EXPECTED)]  # the baselines; a --mix's rows are checked apart
    assert list(table.case) == list(EXPECTED)
    for col in ("case", "rw", "bs", "iodepth", "numjobs", "direction", "n", "iops_mean",
                "iops_std", "bw_MBps_mean", "bw_MBps_std", "lat_us_mean", "lat_us_std",
                "lat_p50_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "pattern"):
        assert col in table.columns, col
    for row in table.itertuples():
        rw, bs, direction = EXPECTED[row.case]
        assert (row.rw, row.bs, row.direction, row.iodepth, row.n) == (rw, bs, direction, 1, 2)
        assert_row_is_fios(row, fio_reps(root / "results" / "qd1", row.case, direction))
        # QD=1: at most one I/O in flight, so IOPS x mean latency cannot exceed 1.
        assert 0.3 < row.little_product <= 1.02
        assert row.pct_source == "lat"
        job = (root / "results" / "qd1" / row.case / "job.fio").read_text()
        assert f"filename={target}" in job and "iodepth=1" in job and "direct=1" in job
        # every case logs each second (lib/jobfile.bash, second_log_lines): IOPS and latency,
        # and a write its rate (its regime); the per-second view reads them (test_seconds)
        logs = {line.split("=")[0] for line in job.splitlines() if line.endswith("=${TK_LOG}")}
        assert logs == {"write_iops_log", "write_lat_log"} | (
            {"write_bw_log"} if direction == "write" else set())
        assert (root / "results" / "qd1" / row.case / "rep1_iops.1.log").is_file()
    for fig in ("qd1_latency.png", "qd1_iops.png"):
        data = (root / "figs" / fig).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    snippet = (root / "out" / "section_2_qd1.md").read_text()
    assert snippet.startswith("## §2 QD=1 baselines")
    assert f"`{target}`" in snippet
    assert "../figs/qd1_latency.png" in snippet and "../figs/qd1_iops.png" in snippet
    for row in table.itertuples():
        assert md.pm(row.iops_mean, row.iops_ci95) in snippet
    # every pattern's product (the CSV has each, a mix's on its total row): where none misses
    # by 10%, their range
    little = case_rows(pd.read_csv(root / "tables" / "qd1_baseline.csv")).little_product
    lo, hi, n = f"{little.min():.2f}", f"{little.max():.2f}", len(little)
    assert ((f"{lo}–{hi} over the {n} patterns" if lo != hi else
             f"{lo} for each of the {n} patterns") in snippet
            if ((little - 1).abs() <= 0.1).all() else
            all(f"{v:.2f}" in snippet for v in little)), snippet
    assert "Little's Law at QD=1" in snippet


def test_default_file_target(toolkit):
    # with SNIA PTS's 65/35 mix (one case more) and --nines 2 (its QD=1 probe; p99 needs
    # 10,000 I/Os a case: usually fewer than one second's at this target's rate, the floor of
    # --runtime 1, but two seconds' when the disk under the file is busy with other tests)
    result = run(toolkit, "qd1_test.bash", *TINY, "--cpus", "0", "--mix", "65", "--nines", "2")
    assert result.returncode == 0, result.stderr
    target = toolkit / "tmp" / "target.img"
    assert target.stat().st_size == 64 << 20
    # Created full of random data: the first MiB is not zeros. Random bytes are zero 1 time in
    # 256; the section's writes then stamp fio's scrambled offsets and times (about 56 zero bytes
    # in every 512), against all of them in an unwritten (sparse) file.
    assert target.read_bytes()[: 1 << 20].count(0) < 1 << 18
    check_section_outputs(toolkit, str(target))
    # the last repetition run is one of round 2 (lib/run.bash runs them in rounds)
    assert re.search(r"^\[10/10\] \S+ rep 2/2 ", result.stderr, re.MULTILINE)
    check_mix(toolkit)
    # --nines 2: the probe's rate recorded, the runtime the arithmetic gives (usually its floor)
    manifest = record.section(toolkit / "results" / "qd1")
    rate = int(manifest["nines_qd1_iops"])
    assert manifest["nines"] == "2" and rate > 0
    assert int(manifest["runtime"]) == max(1, -(-10_000 // (rate * 2)))
    assert f"nines: p99 needs 10000 I/Os a case; at {rate} IOPS at QD=1" in result.stderr
    assert "nines    --nines 2: --runtime sized for 100 I/Os above p99" in result.stderr
    assert "randread-4k" in result.stdout and "wrote tables/qd1_baseline.csv" in result.stdout
    # fio's clock, chosen once for the tree (fio's TSC test), is the one every repetition ran on
    clock = tree_fio_clock(toolkit / "results")
    assert f"fio's clock: {clock} (" in result.stderr
    # The run loop's per-CPU load (analysis/run/cpu_load.py): rep<k>.cpu beside each
    # rep<k>.json, spanning fio's run, never taken for a repetition; the table names the busiest
    # CPU. --cpus 0: every job pinned, and the placement recorded where a reader looks for it.
    case = toolkit / "results" / "qd1" / "randread-4k"
    for k in (1, 2):
        load = cpu_load.read_load(case, k)
        assert load is not None and load.seconds >= 1.0  # --runtime 1
        assert set(load.busy) == set(range(os.cpu_count()))
    row = pd.read_csv(toolkit / "tables" / "qd1_baseline.csv").set_index("case").loc["randread-4k"]
    assert 0 <= row.cpu_busiest < os.cpu_count() and 0 < row.cpu_busiest_pct <= 100
    assert row.n == 2
    manifest = record.section(toolkit / "results" / "qd1")
    assert manifest["cpus_allowed"] == "0" and manifest["placement"] == "CPUs 0 (--cpus)"
    assert "cpus_allowed=0" in (case / "job.fio").read_text().splitlines()
    assert load_json(case / "rep1.json")["jobs"][0]["job options"]["cpus_allowed"] == "0"
    assert "· jobs on CPUs 0 (--cpus)" in (toolkit / "out" / "section_2_qd1.md").read_text()
    # --no-host-ceiling (in TINY): none measured, the plan and the snippet say so
    assert not (toolkit / "results" / "qd1" / "host_ceiling.json").exists()
    assert "ceiling  not measured (--no-host-ceiling)" in result.stderr
    assert "--no-host-ceiling" in (toolkit / "out" / "section_2_qd1.md").read_text()


def check_mix(root: Path) -> None:
    """--mix 65: one randrw job at QD=1, its reads and writes each equal to fio's, its row of
    all I/O their sum, named as SNIA PTS names the mix; Little's Law checked on that row."""
    table = pd.read_csv(root / "tables" / "qd1_baseline.csv")
    mix = table[table.case == "randrw-4k-r65"].set_index("direction")
    assert list(mix.index) == ["read", "write", "total"]
    for direction in ("read", "write"):
        row = next(mix.loc[[direction]].itertuples())
        assert_row_is_fios(row, fio_reps(root / "results" / "qd1", "randrw-4k-r65", direction))
    assert mix.loc["total", "iops_mean"] == pytest.approx(mix.loc[["read", "write"],
                                                                 "iops_mean"].sum(), rel=1e-9)
    assert mix.loc["total", "pattern"] == "4 KiB random R65/W35"
    assert 0.3 < mix.loc["total", "little_product"] <= 1.02
    job = (root / "results" / "qd1" / "randrw-4k-r65" / "job.fio").read_text().splitlines()
    assert {"rw=randrw", "rwmixread=65", "bs=4k", "iodepth=1"} <= set(job)
    snippet = (root / "out" / "section_2_qd1.md").read_text()
    assert "| 4 KiB random R65/W35 reads" in snippet and "| 4 KiB random R65/W35 " in snippet
    # Little's Law for the mix as a whole, never per direction (each has I/Os of the other
    # direction in flight between its own)
    little = next(line for line in snippet.splitlines() if "**Little's Law at QD=1:**" in line)
    assert "R65/W35 reads" not in little and "R65/W35 writes" not in little, little
    # each pattern's product, or where none misses by 10% their range over the cases (a mix
    # counted once)
    products = case_rows(table).little_product
    ranged = re.search(r"= ([\d.]+)(?:–([\d.]+))? (?:over|for each of) the (\d+) patterns", little)
    if ranged:
        assert int(ranged[3]) == table.case.nunique() == len(products), little
        assert (ranged[1], ranged[2] or ranged[1]) == (f"{products.min():.2f}",
                                                       f"{products.max():.2f}"), little
    else:
        assert "4 KiB random R65/W35 0." in little or "4 KiB random R65/W35 1." in little, little


def test_mix_and_nines_arithmetic():
    """--mix's cases (pts: SNIA PTS's latency set, without measuring a baseline twice) and
    --nines' sizing, from the script and lib/plan.bash themselves."""
    plan = run(Path(__file__).resolve().parents[1], "qd1_test.bash", "--mix", "pts",
               "--dry-run")
    cases = re.findall(r"^  case     (\S+):", plan.stderr, re.MULTILINE)
    assert cases == ["randread-4k", "randwrite-4k", "read-128k", "write-128k", "randread-512",
                     "randrw-512-r65", "randwrite-512", "randrw-4k-r65", "randread-8k",
                     "randrw-8k-r65", "randwrite-8k"]
    bad = run(Path(__file__).resolve().parents[1], "qd1_test.bash", "--mix", "65,120",
              "--dry-run")
    assert bad.returncode == 2 and "120 is not a read share" in bad.stderr
    script = ("source lib/common.bash; source lib/plan.bash; nines_label 5; echo; "
              "nines_ios 5; echo; nines_runtime 10000000 18990 3 30; echo; "
              "nines_runtime 10000 18990 2 1")
    out = subprocess.run(["bash", "-c", script],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    # p99.999 needs 10^7 I/Os: at 18,990 IOPS over 3 repetitions, 176 s each; p99 needs 10^4,
    # under the floor of 1 s
    assert out == ["p99.999", "10000000", "176", "1"]


@pytest.mark.root
def test_loop_device(toolkit):
    with loop_device(toolkit / "tmp" / "loop.img", fill=False) as dev:
        result = run(toolkit, "qd1_test.bash", *TINY, "--target", dev, "--destroy", dev)
        assert result.returncode == 0, result.stderr
        check_section_outputs(toolkit, dev)
        # The zero-filled device was prefilled with random data before the reads (and then
        # carries the writes' scrambled stamps: see test_default_file_target).
        assert "written at" in record.load(toolkit / "results")["steps"]["qd1/prefill"]
        with open(dev, "rb") as f:
            assert f.read(1 << 20).count(0) < 1 << 18


@pytest.mark.root
def test_zram(toolkit):
    """On a zram device of its own (zram-control's hot_add), not /dev/zram0, which the toolkit
    lets one run at a time use: so it runs beside other tests."""
    with host_ceiling.zram_device() as ram:
        if ram is None:
            pytest.skip("no zram-control here to make a zram device")
        result = run(toolkit, "qd1_test.bash", *TINY, "--target", ram, "--destroy", ram)
        assert result.returncode == 0, result.stderr
        check_section_outputs(toolkit, ram)
        manifest = record.section(toolkit / "results" / "qd1")
        assert manifest["target_kind"] == "block" and manifest["region_bytes"] == str(64 << 20)


def test_file_in_ram_under_dev_shm(toolkit):
    """A file on the tmpfs at /dev/shm is a file target, not a missing block device; this
    kernel's tmpfs takes O_DIRECT, so the runs are direct."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    target = shm / f"pytest-toolkit-{os.getpid()}.img"
    try:
        result = run(toolkit, "qd1_test.bash", *TINY, "--target", str(target))
        assert result.returncode == 0, result.stderr
        assert f"target   {target} (file)" in result.stderr
        assert target.stat().st_size == 64 << 20
        check_section_outputs(toolkit, str(target))
    finally:
        target.unlink(missing_ok=True)


def test_dry_run_touches_nothing(toolkit):
    result = run(toolkit, "qd1_test.bash", *TINY, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "runs     8" in result.stderr
    assert result.stdout.count("[global]") == 4 and "rw=randwrite" in result.stdout
    assert not (toolkit / "tmp" / "target.img").exists()
    assert not rep_files(toolkit) and not list((toolkit / "results").iterdir())
