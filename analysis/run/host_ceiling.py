"""The host's own ceiling: what fio and the kernel's I/O path can do here with a device that
takes no time.

On a drive that reads 7-14 GB/s, fio's own work per I/O (filling buffers, bookkeeping, the
engine's system calls) and the kernel's (block layer, completions, interrupts) can decide a
number as much as the drive does. Each case's shape (pattern, block size, depth, jobs, engine,
direct, CPUs, buffer options) is run for half a second against a RAM block device with no media,
made for the purpose and removed after: null_blk (memory_backed=0, a submit queue per CPU and a
queue deeper than any shape's I/Os in flight) when the kernel has it, otherwise a zram device of
its own (never /dev/zram0 nor the target: a new one from zram-control), otherwise fio's null
engine, which makes no system call at all. Its IOPS is the most this host could have shown for
that case; host_ceiling.json says which device gave it (`device`).

zram is a stand-in with two costs of its own, each kept out of a ceiling:
- it compresses what it stores, which is its media and not the host's path: a write shape runs
  there with zero-filled buffers (stored as same-filled pages, no compression), and fio's own
  cost of the case's buffers (refill, scramble, compressible data) is measured on the null engine,
  the case's buffer options against zero-filled ones, and added per I/O (`buffer_us`);
- it cannot take io_uring's I/O without blocking, so io_uring hands every I/O to a kernel worker
  there. Whether this zram does is measured first (io_uring against psync at QD 1, `punt`): where
  it does, an io_uring shape's ceiling would be the worker's, not the host's path, so it is not
  measured (`punted`); such a point is judged by the CPUs' load alone.

The jobs are bash's: lib/ceiling.bash renders results/<section>/ceiling.fio from the same cases
and the same shared lines as each case's job.fio, every shape and the variants above (zero-filled
buffers, the null engine, the hand-off probe), with ceiling.tsv saying per case which job is its
shape, its engine, its I/Os in flight, its jobs and whether it writes. This module makes the
device, picks the jobs (fio's --section) and names the device, its size and the seconds in the
environment fio expands in the jobfile (TK_CEILING_DEVICE, TK_CEILING_BYTES, TK_CEILING_RUNTIME,
TK_CEILING_LOG: the per-second logs every case writes, which cost fio time on each I/O, written to
a folder removed after the run).

`python -m analysis host-ceiling RESULTS_DIR CASE...` measures the cases that have no ceiling yet
into RESULTS_DIR/host_ceiling.json; the analysis then marks the points the host limited
(host_bound).
"""

from __future__ import annotations

import csv
import errno
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from analysis.core.workspace import write_json
from analysis.fio.output import FioOutputError, read_groups

CEILING_FILE = "host_ceiling.json"
PUNTED = "zram-punted"  # the device of a punted io_uring shape, which has no ceiling
# Half a second per shape: on zram, 4 KiB to 128 KiB shapes gave the same means at 1 s and 0.5 s,
# with as little spread (docs/methodology.md, "The host ceiling").
CALIBRATION_SECONDS = 0.5
# The two runs that only compare: fio's own cost of a write shape's buffers on the null engine
# (millions of I/Os a second, so a quarter second counts hundreds of thousands), and io_uring
# against psync on zram (the hand-off costs 20 times a RAM disk's I/O, never a close call).
COMPARISON_SECONDS = 0.25

# What lib/ceiling.bash renders beside a section's cases (the jobs, and the index of them).
JOBFILE = "ceiling.fio"
INDEX = "ceiling.tsv"
CEILING_BYTES = 1 << 30
NULLB_CONFIG = Path("/sys/kernel/config/nullb")
ZRAM_CONTROL = Path("/sys/class/zram-control")

# A point is host-bound when it reached this share of what fio alone can issue for its shape:
# then at least half of each I/O's time went to fio's own work, and a faster host would have
# shown a faster drive (the measurements behind it: docs/methodology.md, "The host ceiling").
HOST_BOUND_SHARE = 0.5
# ... or when its jobs kept nearly all of the CPUs they could use busy (fio's usr + sys time per
# job, over min(numjobs, CPUs)): a RAM-backed device such as zram or a tmpfs file makes the CPU
# the device, and the point then measures the host however far it is from the ceiling.
HOST_BOUND_CPU = 0.9
# ... or when a CPU that ran its jobs or took their interrupts was this busy over the repetition
# (analysis.run.cpu_load, from /proc/stat: user+system+irq+softirq): a job that saturates its CPU
# by construction reads 100%, a rate-capped one a small fraction (docs/methodology.md, "The host
# ceiling", bench/host-busy).
HOST_BOUND_BUSY = 0.95
# ... or when those CPUs taken together were this busy: work spread over every CPU (a kernel
# worker per I/O, interrupts on one CPU and the job on another) saturates the host while no
# single CPU crosses HOST_BOUND_BUSY. The threshold and its measurement: docs/methodology.md.
HOST_BOUND_ALL = 0.80


@dataclass(frozen=True)
class Shape:
    """A job of ceiling.fio, as ceiling.tsv describes it: the facts the ceiling decides with."""
    job: str  # its name in ceiling.fio; NAME@null, NAME@zeroed, NAME@null-zeroed beside it
    engine: str
    in_flight: int  # iodepth x numjobs
    numjobs: int
    writes: bool


def read_index(results_dir: Path) -> dict[str, Shape]:
    """{case: its shape} from the section's ceiling.tsv."""
    with open(Path(results_dir) / INDEX, newline="") as f:
        return {row["case"]: Shape(row["job"], row["engine"], int(row["in_flight"]),
                                   int(row["numjobs"]), row["writes"] == "1")
                for row in csv.DictReader(f, delimiter="\t")}


# A ceiling's fio gets this long before it is stopped and the next device tried: its jobs' own
# time many times over, plus its start (seconds under an emulated CPU). A fio that hangs must not
# hang the section.
FIO_GRACE_S = 60.0
FIO_SLACK = 20


def _kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment holds `marker` (VAR=VALUE): fio's job processes
    inherit fio's environment, and each makes a session of its own (so no process group holds
    them), as lib/common.bash's stop_left_fio finds them for the sections' own fio runs."""
    want = marker.encode()
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if want in env.read_bytes().split(b"\0"):
                os.kill(int(env.parent.name), signal.SIGKILL)
        except (OSError, ValueError):  # gone meanwhile, or not ours to read
            pass


def _stop(proc: subprocess.Popen, marker: str) -> None:
    """TERM to fio (it passes it to its jobs), then KILL to fio and to every job of it still
    there 5 s later. A job stuck in the kernel (an io_uring hipri read whose completion is never
    reaped: fio issue #1598, and an emulated guest's null_blk) outlives fio's own process, which
    gives up on it, and holds fio's stderr open: stopping fio alone left the section waiting for
    good."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    proc.kill()
    _kill_marked(marker)
    proc.communicate()


def fio_clock() -> list[str]:
    """fio's clock as the results tree chose it (TK_FIO_CLOCK, set by the section's script:
    choose_fio_clock in lib/engine.bash), so that the ceiling is timed as the cases it judges are.

    >>> os.environ["TK_FIO_CLOCK"] = "clock_gettime"; fio_clock()
    ['--clocksource=clock_gettime']
    >>> del os.environ["TK_FIO_CLOCK"]; fio_clock()
    []
    """
    clock = os.environ.get("TK_FIO_CLOCK")
    return [f"--clocksource={clock}"] if clock else []


def run_jobs(jobfile: Path, jobs: list[str], device: str | None,
             seconds: float = CALIBRATION_SECONDS) -> dict[str, dict]:
    """One fio run of these jobs of the jobfile (one after another: each is stonewalled), on
    `device` (the jobs that run on one) for `seconds` each: {job: {iops, cpu_usr_pct,
    cpu_sys_pct}}. RuntimeError when fio fails or has not finished in FIO_GRACE_S plus
    FIO_SLACK times the jobs' seconds."""
    what = device or "fio's null engine"
    run = f"ceiling.{os.getpid()}.{time.monotonic_ns()}"  # in its jobs' environment too (_stop)
    marker = f"TK_FIO_RUN={run}"
    env = {**os.environ, "TK_CEILING_DEVICE": device or "", "TK_CEILING_BYTES": str(CEILING_BYTES),
           "TK_CEILING_RUNTIME": f"{round(seconds * 1000)}ms", "TK_FIO_RUN": run}
    limit = FIO_GRACE_S + FIO_SLACK * seconds * len(jobs)
    with tempfile.TemporaryDirectory(prefix="host-ceiling-") as tmp:
        out = Path(tmp) / "ceiling.json"
        env["TK_CEILING_LOG"] = str(Path(tmp) / "log")  # the jobs' per-second logs, thrown away
        with subprocess.Popen(["fio", *fio_clock(), "--output-format=json", f"--output={out}",
                               *(f"--section={j}" for j in jobs), str(jobfile)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env) as proc:
            try:
                _, stderr = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                _stop(proc, marker)
                raise RuntimeError(f"fio on {what} had not finished after {limit:.0f} s "
                                   f"({len(jobs)} jobs of {seconds} s each); it was stopped, "
                                   "with its jobs") from None
            except BaseException:  # interrupted: no job of it is left holding the device
                _stop(proc, marker)
                raise
        try:
            groups = {g.jobname: g for g in read_groups(out)}
        except (FioOutputError, OSError) as e:
            raise RuntimeError(f"fio on {what} failed ({e}); {stderr.strip()[:200]}")
    missing = [j for j in jobs if j not in groups]
    if missing:
        raise RuntimeError(f"the run on {what} has no result for {', '.join(missing)} of {jobfile}")
    return {j: {"iops": sum(d.iops for d in groups[j].directions.values()),
                "cpu_usr_pct": groups[j].usr_cpu_pct, "cpu_sys_pct": groups[j].sys_cpu_pct}
            for j in jobs}


CONFIGFS = NULLB_CONFIG.parent
BLK_MQ_MAX_DEPTH = 10240  # the block layer's deepest queue
NULLB_MAX_SECTORS = 2560  # BLK_DEF_MAX_SECTORS: 1280 KiB, the most null_blk takes


def null_blk_disk(node: Path) -> str:
    """The disk a configfs null_blk device is: named after its configfs folder since Linux
    5.17 (`ssd-ceiling-<pid>`), nullb<index> before. Looking for nullb<index> alone found no
    device on Debian's 6.1 kernel, and the ceiling fell back to fio's null engine."""
    named = node.name
    return named if (Path("/sys/block") / named).exists() else \
        f"nullb{(node / 'index').read_text().strip()}"


@contextmanager
def device_node(dev: str | None) -> Iterator[str | None]:
    """The block device `dev` (/dev/nullb0) as a path fio can open: its /dev node, which
    devtmpfs or udev makes a moment after the device appears, else one made here from sysfs'
    major:minor in a folder of its own, removed after (a minimal guest's /dev gets no node for
    a device made after boot); None when the kernel shows no such device."""
    if dev is None:
        yield None
        return
    deadline = time.monotonic() + 1
    while not Path(dev).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    numbers = Path("/sys/block") / Path(dev).name / "dev"
    if Path(dev).exists() or not numbers.is_file():
        yield dev if Path(dev).exists() else None
        return
    major, _, minor = numbers.read_text().strip().partition(":")
    with tempfile.TemporaryDirectory(prefix="host-ceiling-dev-") as folder:
        node = Path(folder) / Path(dev).name
        os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(int(major), int(minor)))
        yield str(node)


@contextmanager
def configfs_mounted() -> Iterator[bool]:
    """configfs at /sys/kernel/config, where null_blk's devices are made: mounted for the
    block when it is not (a minimal guest's init, virtme-ng's, mounts no configfs, and Debian's
    kernel builds it as a module that loading null_blk pulls in: the module then loads with no
    way to make a device), and unmounted after. Whether it is mounted, yielded."""
    mounted = False
    if not CONFIGFS.is_dir() and shutil.which("modprobe"):
        subprocess.run(["modprobe", "configfs"], capture_output=True, check=False)
    if CONFIGFS.is_dir() and not os.path.ismount(CONFIGFS) and shutil.which("mount"):
        done = subprocess.run(["mount", "-t", "configfs", "configfs", str(CONFIGFS)],
                              capture_output=True, text=True, check=False)
        mounted = done.returncode == 0
        if not mounted:
            print(f"host-ceiling: could not mount configfs on {CONFIGFS}: "
                  f"{done.stderr.strip()}", file=sys.stderr)
    try:
        yield os.path.ismount(CONFIGFS)
    finally:
        if mounted:
            subprocess.run(["umount", str(CONFIGFS)], capture_output=True, check=False)


@contextmanager
def null_blk_device(queues: int = 1, depth: int = 64) -> Iterator[str | None]:
    """/dev/nullb<N> from null_blk's configfs (memory_backed=0: I/O completes with no copy),
    with `queues` submit queues (one per CPU the jobs may use, so that no CPU shares one) each
    `depth` deep (more than any shape keeps in flight, so the ceiling's queue never binds: the
    module's defaults are one queue of 64) and a poll queue where the kernel offers one, removed
    on exit; None when the kernel has no null_blk (or we may not load it)."""
    if os.geteuid() != 0:
        yield None
        return
    if not NULLB_CONFIG.is_dir() and shutil.which("modprobe"):  # loads configfs too
        subprocess.run(["modprobe", "null_blk", "nr_devices=0"], capture_output=True,
                       check=False)
    with configfs_mounted():
        if not NULLB_CONFIG.is_dir():
            yield None
            return
        node = NULLB_CONFIG / f"ssd-ceiling-{os.getpid()}"
        try:
            node.mkdir()
            for attr, value in (("size", CEILING_BYTES >> 20), ("memory_backed", 0),
                                ("submit_queues", max(1, queues)),
                                ("hw_queue_depth", min(max(64, depth), BLK_MQ_MAX_DEPTH))):
                (node / attr).write_text(str(value))
            # Requests of 1280 KiB (the block layer's default cap), not null_blk's 127.5 KiB: a
            # 128 KiB shape would be split in two, and a split hipri read hangs Linux 6.1's
            # polling (lib/uring.bash, hipri_fits)
            if (node / "max_sectors").exists():
                (node / "max_sectors").write_text(str(NULLB_MAX_SECTORS))
            # A poll queue, where the kernel's null_blk has them (configfs poll_queues): a case with
            # io_uring's hipri polls its drive's poll queue, and its ceiling must poll too. On a
            # device without one the kernel completes a polled I/O by its usual path while fio
            # polls, which is not the case's path (and such a ceiling hung in an emulated guest).
            if (node / "poll_queues").exists():
                (node / "poll_queues").write_text("1")
            (node / "power").write_text("1")
            dev = f"/dev/{null_blk_disk(node)}"
        except OSError as e:
            print(f"host-ceiling: null_blk refused a device ({e})", file=sys.stderr)
            dev = None
        try:
            with device_node(dev) as path:
                yield path
        finally:
            if node.exists():
                try:
                    (node / "power").write_text("0")
                except OSError:
                    pass
                node.rmdir()


@contextmanager
def zram_device() -> Iterator[str | None]:
    """A zram device of its own (zram-control's hot_add), never /dev/zram0 nor a target, removed
    on exit; None without zram-control or root."""
    if not (ZRAM_CONTROL / "hot_add").exists() or os.geteuid() != 0:
        yield None
        return
    try:
        index = (ZRAM_CONTROL / "hot_add").read_text().strip()
    except OSError:
        yield None
        return
    try:
        try:
            Path(f"/sys/block/zram{index}/disksize").write_text(str(CEILING_BYTES))
        except OSError:
            yield None
        else:
            yield f"/dev/zram{index}"
    finally:
        _hot_remove(index)


def _hot_remove(index: str, wait_s: float = 5.0) -> None:
    """Remove zram device `index`. The kernel refuses (EBUSY) while anything holds it open: a fio
    still exiting after an interrupt, or udev probing the device its size change announced; so
    a refusal is tried again for a few seconds before the device is reported as left behind
    (two such devices were found after loaded test runs)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            (ZRAM_CONTROL / "hot_remove").write_text(index)
            return
        except OSError as e:
            if e.errno == errno.EBUSY and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            print(f"host-ceiling: could not remove /dev/zram{index} ({e}); remove it with "
                  f"'echo {index} > {ZRAM_CONTROL}/hot_remove'", file=sys.stderr)
            return


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def measure(jobfile: Path, shapes: list[Shape], prefer: str = "auto") -> tuple[str, dict, dict]:
    """Run the shapes on the best ceiling device there is (`prefer`: auto, null_blk, zram or
    null): (its name, {job: {iops, cpu_usr_pct, cpu_sys_pct, ...}}, what was measured of the
    device itself: zram's io_uring hand-off). A device whose run fails gives way to the next."""
    order = ["null_blk", "zram", "null"]
    order = order[order.index(prefer):] if prefer in order else order
    deepest = max((s.in_flight for s in shapes), default=1)
    for name in order:
        if name == "null":
            found = run_jobs(jobfile, [f"{s.job}@null" for s in shapes], None)
            return name, {s.job: found[f"{s.job}@null"] for s in shapes}, {}
        maker = (null_blk_device(usable_cpus(), deepest) if name == "null_blk" else
                 zram_device())
        with maker as dev:
            if dev is None:
                continue
            try:
                if name != "zram":
                    return name, run_jobs(jobfile, [s.job for s in shapes], dev), {}
                # first whether zram hands io_uring's I/O to a worker: then an io_uring shape's
                # ceiling there would be the worker's, not used, and is not measured at all
                uring = any(s.engine == "io_uring" for s in shapes)
                punt = punt_probe(jobfile, dev) if uring else {}
                kept = {s.job: f"{s.job}@zeroed" if s.writes else s.job for s in shapes
                        if not (s.engine == "io_uring" and punt.get("punted"))}
                ran = run_jobs(jobfile, list(kept.values()), dev) if kept else {}
                found = {job: ran[run] for job, run in kept.items()}
            except RuntimeError as e:
                print(f"host-ceiling: {name} ({dev}) failed, trying the next: {e}",
                      file=sys.stderr)
                continue
        return name, with_buffer_costs(jobfile, shapes, found), punt
    raise AssertionError("unreachable: the null engine ends the order")


# io_uring hands an I/O to a kernel worker when the device cannot take it without blocking;
# at QD 1 that worker's hand-off is most of an I/O's time on a RAM disk. A device on which
# io_uring at QD 1 reaches less than this share of psync's IOPS hands its I/O to a worker.
PUNT_SHARE = 0.5


def punt_probe(jobfile: Path, device: str) -> dict:
    """Whether io_uring hands this device's I/O to a kernel worker: io_uring against psync, 4 KiB
    random reads at QD 1 (the jobfile's punt@io_uring and punt@psync), a quarter second each."""
    found = run_jobs(jobfile, ["punt@io_uring", "punt@psync"], device, COMPARISON_SECONDS)
    uring, psync = found["punt@io_uring"]["iops"], found["punt@psync"]["iops"]
    return {"io_uring_qd1_iops": uring, "psync_qd1_iops": psync,
            "punted": uring < PUNT_SHARE * psync}


def with_buffer_costs(jobfile: Path, shapes: list[Shape], found: dict[str, dict]) -> dict:
    """zram's results ({job: result}) as ceilings: a write shape ran there with zero-filled
    buffers (no compression, zram's media); fio's own cost of the case's buffers, measured on the
    null engine (NAME@null against NAME@null-zeroed, in one fio run), is added per I/O. A shape
    zram did not run (an io_uring shape on a zram that hands io_uring's I/O to a worker) is
    marked `punted`, with no ceiling."""
    out = {s.job: dict(f, zram_iops=f["iops"]) if (f := found.get(s.job)) else
           {"iops": None, "cpu_usr_pct": None, "cpu_sys_pct": None, "punted": True}
           for s in shapes}
    costly = [s for s in shapes if s.writes and not out[s.job].get("punted")]
    if costly:
        both = run_jobs(jobfile, [f"{s.job}@{v}" for s in costly for v in ("null", "null-zeroed")],
                        None, COMPARISON_SECONDS)
        for s in costly:
            a, b = both[f"{s.job}@null"], both[f"{s.job}@null-zeroed"]
            # time per I/O adds up: 1/ceiling = 1/zram + (1/null with the case's buffers -
            # 1/null with zero-filled ones); per job, in µs
            extra = max(0.0, 1 / a["iops"] - 1 / b["iops"]) if a["iops"] and b["iops"] else 0.0
            out[s.job]["buffer_us"] = round(extra * s.numjobs * 1e6, 4)
            if out[s.job]["iops"]:
                out[s.job]["iops"] = 1 / (1 / out[s.job]["iops"] + extra)
    return out


DEVICE_NAMES = {"null_blk": "null_blk (no media)", "zram": "a zram RAM disk",
                "null": "fio's null engine"}
# How the Host line names each (analysis.sections.common): "measured on <label>".
CEILING_LABELS = {"null_blk": "null_blk, the kernel's I/O path with no media",
                  "zram": "a zram RAM disk of its own, the kernel's I/O path",
                  "null": "fio's null engine, fio alone with no system call",
                  PUNTED: "none used for its io_uring shapes (the zram device the ceiling "
                          "runs on hands io_uring's I/O to a kernel worker, whose cost is not "
                          "the host's: those points are judged by the CPUs' load)"}


def read_ceilings(results_dir: Path) -> dict:
    path = Path(results_dir) / CEILING_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def calibrate(results_dir: Path, cases: list[str], prefer: str = "auto") -> tuple[dict, list[str]]:
    """Measure the cases that have no ceiling yet (identical shapes once) and store them:
    (the whole file's content, the cases measured now). Each case records its `device`; the
    file's own `device` is the last one used."""
    doc = read_ceilings(results_dir) or {"cpus": usable_cpus(), "cases": {}}
    index = read_index(results_dir)
    if unknown := [c for c in cases if c not in index]:
        raise RuntimeError(f"{Path(results_dir) / INDEX} has no job for {', '.join(unknown)}")
    todo = {c: index[c] for c in cases if c not in doc["cases"]}
    if not todo:
        return doc, []
    shapes = list({s.job: s for s in todo.values()}.values())
    device, results, punt = measure(Path(results_dir) / JOBFILE, shapes, prefer)
    for case, shape in todo.items():
        doc["cases"][case] = {"job": shape.job, "device": device, **results[shape.job]}
    doc["device"] = device
    if punt:
        doc["punt"] = punt
    doc["measured"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(results_dir / CEILING_FILE, doc, sort_keys=True)
    return doc, list(todo)


# The rules' names, as the tables' `host_rule` column records which fired (analysis.rules.cases)
# and the report words them (analysis.render.claims.HOST_RULE_WORDS).
RULE_SHARE, RULE_CPU, RULE_BUSY, RULE_ALL = "ceiling", "fio_cpu", "cpu_busy", "all_cpus"


def host_bound_rules(iops: float, ceiling: float, usr_pct: float, sys_pct: float, numjobs: int,
                     cpus: int, busiest_pct: float = math.nan,
                     together_pct: float = math.nan) -> tuple[str, ...]:
    """The rules above that fired for a point, in their order; empty: the drive set the pace.

    >>> host_bound_rules(9_000, 30_000, 60.0, 38.0, 1, 2, 90.0, 56.0)
    ('fio_cpu',)
    >>> host_bound_rules(20_000, 30_000, 20.0, 10.0, 1, 2, 97.0, 56.0)
    ('ceiling', 'cpu_busy')
    """
    busy = (usr_pct + sys_pct) / 100 * numjobs  # CPUs' worth of time the jobs used
    fired = {
        RULE_SHARE: bool(ceiling) and not math.isnan(ceiling) and iops >= HOST_BOUND_SHARE * ceiling,
        RULE_CPU: not math.isnan(busy) and busy >= HOST_BOUND_CPU * min(numjobs, cpus or numjobs),
        RULE_BUSY: not math.isnan(busiest_pct) and busiest_pct >= HOST_BOUND_BUSY * 100,
        RULE_ALL: not math.isnan(together_pct) and together_pct >= HOST_BOUND_ALL * 100,
    }
    return tuple(rule for rule, hit in fired.items() if hit)


def is_host_bound(iops: float, ceiling: float, usr_pct: float, sys_pct: float, numjobs: int,
                  cpus: int, busiest_pct: float = math.nan,
                  together_pct: float = math.nan) -> bool:
    """The rules above, in one place: any of them marks the point."""
    return bool(host_bound_rules(iops, ceiling, usr_pct, sys_pct, numjobs, cpus, busiest_pct,
                                 together_pct))


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m analysis host-ceiling RESULTS_DIR CASE...", file=sys.stderr)
        return 2
    results_dir = Path(argv[0])
    # which device to try first (null_blk, zram or null): by hand, to compare them; not the
    # TK_CEILING_DEVICE the jobfile expands, which run_jobs sets to the device made
    prefer = os.environ.get("TK_CEILING_PREFER", "auto")
    try:
        doc, measured = calibrate(results_dir, argv[1:], prefer)
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, OSError) as e:
        print(f"host-ceiling: {e}", file=sys.stderr)
        return 1
    for case in measured:
        c = doc["cases"][case]
        if c.get("punted"):
            print(f"  ceiling  {case}: none: on {DEVICE_NAMES[c['device']]} io_uring's I/O goes "
                  "to a kernel worker, whose cost is not the host's (judged by the CPUs' load)",
                  file=sys.stderr)
            continue
        print(f"  ceiling  {case}: {c['iops']:,.0f} IOPS on {DEVICE_NAMES[c['device']]} "
              f"(CPU {c['cpu_usr_pct']:.0f}% usr, {c['cpu_sys_pct']:.0f}% sys per job)",
              file=sys.stderr)
    return 0
