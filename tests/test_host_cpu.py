"""The host's limit measured where it happens (issue 22): per-CPU load from /proc/stat around each
repetition (analysis.run.cpu_load), the host_bound rule that reads it, and the ceiling measured
through the kernel's I/O path on a RAM block device (analysis.run.host_ceiling).

Known answers from real fio runs on /dev/zram0: a job forced onto CPU 0 at depth 64 keeps that
CPU saturated (it must be host_bound); a job capped at 200 IOPS leaves every CPU nearly idle (it
must not be). The parsing tests use /proc/stat lines written here, whose answers are exact.
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis.rules.cases import section_frame
from analysis.run import cpu_load, host_ceiling
from tests.toolkit import REPO, load_json, zram_size

BEFORE = """before 100.0
cpu0 1000 0 500 8000 100 0 0 0 0 0
cpu1 1000 0 500 8000 100 0 0 0 0 0
"""
# cpu0: 60 user + 30 system + 5 irq + 5 softirq busy, 0 idle -> 100% busy
# cpu1: 10 user, 80 idle, 10 steal -> 10 / 90 busy (steal is not ours)
AFTER = """after 101.0
cpu0 1060 0 530 8000 100 5 5 0 0 0
cpu1 1010 0 500 8080 100 0 0 10 0 0
"""


def test_cpu_load_from_two_snapshots():
    load = cpu_load.load_of(BEFORE + AFTER)
    assert load.seconds == pytest.approx(1.0)
    assert load.busy[0] == pytest.approx(1.0)
    assert load.busy[1] == pytest.approx(10 / 90)
    assert load.irq[0] == pytest.approx(0.1)
    assert load.busiest() == (0, pytest.approx(1.0))
    # pinned to CPU 1: CPU 0 still counts, for it took interrupts (10% >= IRQ_CPU_SHARE)
    assert load.busiest({1}) == (0, pytest.approx(1.0))
    assert cpu_load.load_of(BEFORE) is None  # fio never finished: no 'after'


def test_the_run_loops_snapshots_parse():
    """What lib/loop.bash cpu_snapshot writes (a busy loop of 0.5 s between the two) is a load
    over every CPU, spanning the time between, with the loop's CPU busy."""
    out = subprocess.run(["bash", "-c", ("source lib/common.bash; source lib/run.bash; "
                          "cpu_snapshot before; t0=${EPOCHREALTIME/./}; "
                          "while ((${EPOCHREALTIME/./} - t0 < 500000)); do :; done; "
                          "cpu_snapshot after")],
                         capture_output=True, text=True, check=True, cwd=REPO).stdout
    load = cpu_load.load_of(out)
    assert set(load.busy) == set(range(os.cpu_count()))
    assert 0.3 < load.seconds < 3
    assert load.busiest()[1] >= 0.5  # the loop kept one CPU busy however the others were


def test_busy_time_over_the_jobs_own_seconds():
    """Busy time over a span of 2.5 s taken over the job's 2 s of I/O: 0.76 becomes 0.95, and
    nothing exceeds 1; a job that stops by size keeps the span."""
    load = cpu_load.CpuLoad({0: 0.76, 1: 0.9}, {0: 0.1, 1: 0.0}, 2.5)
    assert load.over(2).busy == {0: pytest.approx(0.95), 1: 1.0}
    assert load.over(None) is load and load.over(3) is load
    assert cpu_load.io_seconds({"time_based": "1", "runtime": "30", "ramp_time": "5"}) == 35
    assert cpu_load.io_seconds({"time_based": "1", "runtime": "400ms"}) == pytest.approx(0.4)
    assert cpu_load.io_seconds({"runtime": "30"}) is None


def test_busiest_over_repetitions_and_cpulists():
    quiet = cpu_load.CpuLoad({0: 0.2, 1: 0.9}, {0: 0.0, 1: 0.0}, 1.0)
    assert cpu_load.busiest_over([quiet, quiet]) == (1, pytest.approx(0.9))
    assert cpu_load.busiest_over([quiet], pinned="0") == (0, pytest.approx(0.2))
    assert cpu_load.busiest_over([None]) == (-1, pytest.approx(math.nan, nan_ok=True))
    assert cpu_load.parse_cpulist("0-2,5") == {0, 1, 2, 5}
    assert cpu_load.parse_cpulist("") == set()


def test_host_bound_rule_with_the_busiest_cpu():
    rule = host_ceiling.is_host_bound
    busy = host_ceiling.HOST_BOUND_BUSY * 100
    assert rule(10, 1000, 5, 5, 1, 2, busy)  # a CPU saturated, fio's own CPU not
    assert not rule(10, 1000, 5, 5, 1, 2, busy - 1)
    assert not rule(10, math.nan, math.nan, math.nan, 1, 2, math.nan)


def test_host_line_says_when_no_ceiling_was_measured():
    """Without a ceiling (--no-host-ceiling, a fleet) a point is marked host-bound by the CPUs'
    load alone: the Host line says so whether or not a point was marked."""
    from analysis.sections.common import host_finding
    rows = pd.DataFrame({"case": ["a", "b"], "direction": ["read", "read"],
                         "iops_mean": [1000.0, 50.0], "host_ceiling_iops": [math.nan] * 2,
                         "host_bound": [True, False], "cpu_usr_pct": [40.0, 1.0],
                         "cpu_sys_pct": [58.0, 1.0], "cpu_busiest": [0, 1],
                         "cpu_busiest_pct": [99.0, 3.0]})
    bound = host_finding(rows, lambda r: r.case)
    assert bound.startswith("**Host-bound:** a (CPU 98% per job, CPU 0 99% busy)")
    assert "--no-host-ceiling" in bound and "marked by the CPUs' load alone" in bound
    free = host_finding(rows.assign(host_bound=False), lambda r: r.case)
    assert free.startswith("**Host:** no host ceiling was measured") and "--no-host-ceiling" in free
    measured = host_finding(rows.assign(host_ceiling_iops=[2000.0, 2000.0]), lambda r: r.case)
    assert "--no-host-ceiling" not in measured


def snapshot(when: str) -> str:
    """What lib/loop.bash cpu_snapshot writes."""
    lines = [ln for ln in Path("/proc/stat").read_text().splitlines()
             if ln.startswith("cpu") and ln[3:4].isdigit()]
    return f"{when} {time.time()}\n" + "\n".join(lines) + "\n"


def fio_rep(results: Path, case: str, job: str) -> None:
    """results/<case>/rep1.json and rep1.cpu as run_repetition leaves them."""
    folder = results / case
    folder.mkdir(parents=True)
    (folder / "job.fio").write_text(job)
    before = snapshot("before")
    subprocess.run(["fio", "--output-format=json+", f"--output={folder / 'rep1.json'}",
                    str(folder / "job.fio")], check=True, capture_output=True)
    (folder / "rep1.cpu").write_text(before + snapshot("after"))


def idle_share(seconds: float) -> float:
    """The busiest CPU's share over `seconds` of this process sleeping: the other tenants' load."""
    before = snapshot("before")
    time.sleep(seconds)
    return cpu_load.load_of(before + snapshot("after")).busiest()[1]


@pytest.mark.root
@pytest.mark.alone  # /dev/zram0, and whether any CPU is saturated
def test_pinned_deep_job_is_host_bound_and_capped_job_is_not(tmp_path):
    """On /dev/zram0 the kernel does the whole I/O in the submitting thread: 64 I/Os in flight
    from one job pinned to CPU 0 keep CPU 0 busy throughout, so the point is host bound. A
    job capped at 200 IOPS is the 'device's' pace: no CPU near saturation, not host bound. A
    machine already busy from other tenants (an idle second measured just before) could make
    any point look host bound: then the second half is skipped, saying so."""
    if zram_size() < 64 << 20:
        pytest.skip("/dev/zram0 is missing or smaller than 64 MiB")
    results = tmp_path / "qd_sweep"
    common = ("[global]\nfilename=/dev/zram0\nsize=64m\ndirect=1\ntime_based=1\nruntime=2\n"
              "group_reporting=1\nlat_percentiles=1\nrw=randread\nbs=4k\n")
    fio_rep(results, "pinned", common + "[pinned]\nioengine=libaio\niodepth=64\ncpus_allowed=0\n")
    baseline = idle_share(2)
    fio_rep(results, "capped", common + "[capped]\nioengine=psync\nrate_iops=200\n")
    table = section_frame(results).set_index("case")
    pinned = table.loc["pinned"]
    # CPU 0 itself was saturated (another tenant may load CPU 1 as much: either is the busiest)
    load = cpu_load.read_load(results / "pinned", 1)
    assert load.seconds > 2  # the snapshots span fio's start and exit too ...
    assert load.over(2).busy[0] >= host_ceiling.HOST_BOUND_BUSY  # ... its 2 s of I/O saturated it
    assert pinned.cpu_busiest_pct >= host_ceiling.HOST_BOUND_BUSY * 100
    assert pinned.host_bound
    raw = load_json(results / "capped" / "rep1.json")["jobs"][0]["read"]
    assert table.loc["capped", "iops_mean"] == pytest.approx(raw["iops"])
    if baseline >= host_ceiling.HOST_BOUND_BUSY / 2:
        pytest.skip(f"a CPU was {baseline:.0%} busy with nothing of ours running: the capped "
                    "job's known answer needs a quieter machine")
    assert table.loc["capped", "cpu_busiest_pct"] < host_ceiling.HOST_BOUND_BUSY * 100
    assert not table.loc["capped", "host_bound"]


@pytest.mark.root
@pytest.mark.alone  # compares /dev before and after: another test's loop or zram would show
def test_kernel_path_ceiling_on_a_zram_of_its_own(tmp_path):
    """The ceiling through the kernel's I/O path runs on a zram device made for it and removed
    after (never /dev/zram0): it is below fio's null engine for the same shape, which makes no
    system call, and above the job itself."""
    if not (host_ceiling.ZRAM_CONTROL / "hot_add").exists():
        pytest.skip("no zram-control here")
    devices = sorted(os.listdir("/dev"))
    for name, prefer in (("kernel", "zram"), ("null", "null")):
        folder = tmp_path / name / "c"
        folder.mkdir(parents=True)
        (folder / "job.fio").write_text("[global]\nfilename=/dev/zram0\nioengine=psync\n"
                                        "direct=1\nrw=randread\nbs=4k\n[c]\n")
    kernel, _ = host_ceiling.calibrate(tmp_path / "kernel", ["c"], "zram")
    null, _ = host_ceiling.calibrate(tmp_path / "null", ["c"], "null")
    assert sorted(os.listdir("/dev")) == devices, "the ceiling's zram device was left behind"
    assert kernel["device"] == kernel["cases"]["c"]["device"] == "zram"
    assert null["device"] == "null"
    assert "ioengine=psync" in kernel["cases"]["c"]["shape"]
    assert 0 < kernel["cases"]["c"]["iops"] < null["cases"]["c"]["iops"]


@pytest.mark.root
def test_a_ceiling_zram_held_open_is_removed_once_released():
    """The kernel refuses to remove a zram device while it is open (EBUSY), as it is while a fio
    exits after an interrupt or udev probes the new device: the ceiling's own device is still
    removed once it is released, not left behind (two were, after loaded test runs)."""
    if not (host_ceiling.ZRAM_CONTROL / "hot_add").exists():
        pytest.skip("no zram-control here")
    with host_ceiling.zram_device() as dev:
        assert dev is not None
        fd = os.open(dev, os.O_RDONLY)
        threading.Timer(0.5, os.close, [fd]).start()  # still open when the block ends
    assert not Path(dev).exists()


# The run loop's per-repetition CPU snapshots and --cpus's placement are checked on §2's own
# default-target run (test_qd1_e2e.py::test_default_file_target), not on a run of their own.


def test_the_setup_line_states_a_placement_only_where_jobs_were_pinned():
    from analysis.render import markdown as md
    pinned = {"cpus_allowed": "0-7", "placement": "CPUs 0-7, those of the target's NUMA node 0"}
    assert md.setup_line(pinned, "m").endswith(" · jobs on CPUs 0-7, those of the target's NUMA node 0")
    anywhere = {"cpus_allowed": "", "placement": "any CPU (the target's NUMA node is unknown)"}
    assert "jobs on" not in md.setup_line(anywhere, "m")
    assert "jobs on" not in md.setup_line({}, "m")  # results from before placement was recorded


INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
 36:          0          0         12          0  PCI-MSIX-0000:01:00.0    0-edge      nvme0q0
 37:     900000          0          0          0  PCI-MSIX-0000:01:00.0    1-edge      nvme0q1
 38:          0          0          0          0  PCI-MSIX-0000:01:00.0    2-edge      nvme0q2
 39:          0     512345          0          0  PCI-MSIX-0000:02:00.0    1-edge      nvme1q1
 40:          0          0          0      10000  PCI-MSIX-0000:00:02.0    1-edge      virtio1-req.0
"""


def test_device_interrupt_cpus():
    """/proc/interrupts lines of nvme0's I/O queues (not its admin queue q0, nor nvme1's): all
    on CPU 0 of 4, which §1 warns about; a disk whose interrupts are not named gives None."""
    from analysis.device import irq
    assert irq.device_irq_cpus(INTERRUPTS, "/dev/nvme0n1") == ([0], 4)
    assert irq.device_irq_cpus(INTERRUPTS, "nvme1") == ([1], 4)
    assert irq.device_irq_cpus(INTERRUPTS, "/dev/vda") is None
    assert irq.device_irq_cpus(INTERRUPTS, "/dev/nvme2n1") is None
    (warning,) = irq.irq_warning("/dev/nvme0n1", ([0], 4))
    assert "CPU 0 of 4" in warning and "--cpus" in warning
    assert irq.irq_warning("/dev/nvme0n1", ([0, 1, 2, 3], 4)) == []
