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

`python -m analysis host-ceiling RESULTS_DIR CASE...` measures the cases that have no ceiling yet
(from their results/<section>/<case>/job.fio) into RESULTS_DIR/host_ceiling.json; the analysis
then marks the points the host limited (host_bound).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from analysis.fio.output import FioOutputError, read_groups
from analysis.run.manifest import write_atomically

CEILING_FILE = "host_ceiling.json"
PUNTED = "zram-punted"  # the device of a punted io_uring shape, which has no ceiling
# Half a second per shape: on zram, 4 KiB to 128 KiB shapes gave the same means at 1 s and 0.5 s,
# with as little spread (docs/methodology.md, "The host ceiling").
CALIBRATION_SECONDS = 0.5
# The two runs that only compare: fio's own cost of a write shape's buffers on the null engine
# (millions of I/Os a second, so a quarter second counts hundreds of thousands), and io_uring
# against psync on zram (the hand-off costs 20 times a RAM disk's I/O, never a close call).
COMPARISON_SECONDS = 0.25

# The options that decide fio's own cost per I/O; everything else in a case (target, runtime,
# logs, a rate cap, the engine) is left out, so the ceiling is the shape's, not the device's.
SHAPE_KEYS = ("rw", "readwrite", "rwmixread", "rwmixwrite", "bs", "blocksize", "bssplit",
              "iodepth", "iodepth_batch_submit", "iodepth_batch_complete_min", "numjobs",
              "refill_buffers", "scramble_buffers", "zero_buffers", "buffer_compress_percentage",
              "buffer_compress_chunk", "dedupe_percentage", "buffer_pattern", "norandommap",
              "randrepeat", "lat_percentiles", "clat_percentiles", "percentile_list",
              "ioengine", "direct", "cpus_allowed", "cpus_allowed_policy", "hipri",
              "fixedbufs", "registerfiles", "sqthread_poll")
# What only a device has: left out when the ceiling falls back to the null engine.
DEVICE_KEYS = ("ioengine", "direct", "hipri", "fixedbufs", "registerfiles", "sqthread_poll")
# Buffer contents: on zram a write of random data costs a compression, which is the RAM disk's
# "media", not the host's I/O path; zero-filled buffers are stored as same-filled pages at no cost.
BUFFER_KEYS = ("refill_buffers", "scramble_buffers", "zero_buffers", "buffer_compress_percentage",
               "buffer_compress_chunk", "dedupe_percentage", "buffer_pattern")
CEILING_BYTES = 1 << 30
NULLB_CONFIG = Path("/sys/kernel/config/nullb")
ZRAM_CONTROL = Path("/sys/class/zram-control")

# A point is host-bound when it reached this share of what fio alone can issue for its shape:
# then at least half of each I/O's time went to fio's own work, and a faster host would have
# shown a faster drive. Measured here (fio 3.33, 2 vCPUs, docs/methodology.md): 128 KiB QD=1
# writes on a tmpfs file reached 0.59 of their ceiling with refill_buffers=1 (and 2.5x the IOPS
# once fio stopped refilling), a rate-capped job 0.001.
HOST_BOUND_SHARE = 0.5
# ... or when its jobs kept nearly all of the CPUs they could use busy (fio's usr + sys time per
# job, over min(numjobs, CPUs)): a RAM-backed device such as zram or a tmpfs file makes the CPU
# the device, and the point then measures the host however far it is from the ceiling.
HOST_BOUND_CPU = 0.9
# ... or when a CPU that ran its jobs or took their interrupts was this busy over the repetition
# (analysis.run.cpu_load, from /proc/stat: user+system+irq+softirq): a job that saturates its CPU
# by construction reads 100%, a rate-capped one under 13% (docs/methodology.md, "The host
# ceiling", bench/host-busy).
HOST_BOUND_BUSY = 0.95
# ... or when those CPUs taken together were this busy: work spread over every CPU (a kernel
# worker per I/O, interrupts on one CPU and the job on another) saturates the host while no
# single CPU crosses HOST_BOUND_BUSY. The threshold and its measurement: docs/methodology.md.
HOST_BOUND_ALL = 0.80


def parse_jobfile(text: str) -> dict[str, dict[str, str]]:
    """fio's job file format: [section] headers, key=value or bare flags, ';' and '#' comments."""
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        if current is not None:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip() if _ else "1"
    return sections


def case_shape(jobfile_text: str) -> dict[str, str]:
    """The shape of a case's job file: its [global] options overlaid by its job's, kept to
    SHAPE_KEYS, in a stable order."""
    sections = parse_jobfile(jobfile_text)
    merged = dict(sections.get("global", {}))
    for name, opts in sections.items():
        if name != "global":
            merged.update(opts)
    return {k: merged[k] for k in SHAPE_KEYS if k in merged}


def shape_text(shape: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in shape.items())


def calibration_jobfile(shapes: list[dict[str, str]], device: str | None = None,
                        zram: bool = False, seconds: float = CALIBRATION_SECONDS) -> str:
    """One job per shape, one after another (stonewall), each `seconds` long: against `device`
    with the case's engine, or on fio's null engine when there is none."""
    where = [f"filename={device}"] if device else ["ioengine=null"]
    lines = ["[global]", *where, "size=1g", "time_based=1", f"runtime={round(seconds * 1000)}ms",
             "group_reporting=1", ""]
    for k, shape in enumerate(shapes):
        opts = {key: v for key, v in shape.items()
                if device or key not in DEVICE_KEYS}
        if zram:
            opts = zeroed(opts)
        lines += [f"[shape{k}]", "stonewall", *(f"{key}={v}" for key, v in opts.items()), ""]
    return "\n".join(lines)


CONFIGFS = NULLB_CONFIG.parent
BLK_MQ_MAX_DEPTH = 10240  # the block layer's deepest queue


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
    module's defaults are one queue of 64), removed on exit; None when the kernel has no
    null_blk (or we may not load it)."""
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
                                ("hw_queue_depth", min(max(64, depth), BLK_MQ_MAX_DEPTH)),
                                ("power", 1)):
                (node / attr).write_text(str(value))
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


def in_flight(shape: dict[str, str]) -> int:
    """The I/Os a shape keeps in flight: iodepth x numjobs."""
    def number(key: str) -> int:
        value = shape.get(key, "1")
        return int(value) if value.isdigit() else 1
    return number("iodepth") * number("numjobs")


def measure(shapes: list[dict[str, str]], prefer: str = "auto") -> tuple[str, list[dict], dict]:
    """Run the shapes on the best ceiling device there is (`prefer`: auto, null_blk, zram or
    null): (its name, [{iops, cpu_usr_pct, cpu_sys_pct, ...}] in the shapes' order, what was
    measured of the device itself: zram's io_uring hand-off). A device whose run fails gives
    way to the next."""
    order = ["null_blk", "zram", "null"]
    order = order[order.index(prefer):] if prefer in order else order
    deepest = max((in_flight(s) for s in shapes), default=1)
    for name in order:
        if name == "null":
            return name, run_shapes(shapes, None), {}
        maker = (null_blk_device(usable_cpus(), deepest) if name == "null_blk" else
                 zram_device())
        with maker as dev:
            if dev is None:
                continue
            try:
                if name != "zram":
                    return name, run_shapes(shapes, dev), {}
                # first whether zram hands io_uring's I/O to a worker: then an io_uring shape's
                # ceiling there would be the worker's, not used, and is not measured at all
                punt = punt_probe(dev) if any(map(uring, shapes)) else {}
                kept = [s for s in shapes if not (uring(s) and punt.get("punted"))]
                found = dict(zip(map(shape_text, kept), run_shapes(kept, dev, zram=True))) \
                    if kept else {}
            except RuntimeError as e:
                print(f"host-ceiling: {name} ({dev}) failed, trying the next: {e}",
                      file=sys.stderr)
                continue
        return name, with_buffer_costs(shapes, found), punt
    raise AssertionError("unreachable: the null engine ends the order")


# io_uring hands an I/O to a kernel worker when the device cannot take it without blocking;
# at QD 1 that worker's hand-off is most of an I/O's time on a RAM disk. A device on which
# io_uring at QD 1 reaches less than this share of psync's IOPS hands its I/O to a worker.
PUNT_SHARE = 0.5
PUNT_SHAPE = {"rw": "randread", "bs": "4k", "iodepth": "1", "direct": "1"}


def punt_probe(device: str) -> dict:
    """Whether io_uring hands this device's I/O to a kernel worker: io_uring against psync, 4 KiB
    random reads at QD 1, a quarter second each."""
    uring, psync = run_shapes([{**PUNT_SHAPE, "ioengine": "io_uring"},
                               {**PUNT_SHAPE, "ioengine": "psync"}], device, zram=True,
                              seconds=COMPARISON_SECONDS)
    return {"io_uring_qd1_iops": uring["iops"], "psync_qd1_iops": psync["iops"],
            "punted": uring["iops"] < PUNT_SHARE * psync["iops"]}


def uring(shape: dict[str, str]) -> bool:
    return shape.get("ioengine") == "io_uring"


def writes(shape: dict[str, str]) -> bool:
    rw = shape.get("rw") or shape.get("readwrite") or "read"
    return rw not in ("read", "randread") and not (
        rw in ("rw", "readwrite", "randrw") and shape.get("rwmixread") == "100")


def with_buffer_costs(shapes: list[dict[str, str]], found: dict[str, dict]) -> list[dict]:
    """zram's results (by shape_text) as ceilings, in the shapes' order: a write shape ran there
    with zero-filled buffers (no compression, zram's media); fio's own cost of the case's
    buffers, measured on the null engine (the case's buffer options against zero-filled ones, in
    one fio run), is added per I/O. A shape zram did not run (an io_uring shape on a zram that
    hands io_uring's I/O to a worker) is marked `punted`, with no ceiling."""
    out = [dict(f, zram_iops=f["iops"]) if (f := found.get(shape_text(s))) else
           {"iops": None, "cpu_usr_pct": None, "cpu_sys_pct": None, "punted": True}
           for s in shapes]
    costly = [k for k, s in enumerate(shapes)
              if writes(s) and set(s) & set(BUFFER_KEYS) and not out[k].get("punted")]
    if costly:
        both = run_shapes([shapes[k] for k in costly] + [zeroed(shapes[k]) for k in costly], None,
                          seconds=COMPARISON_SECONDS)
        own, zero = both[:len(costly)], both[len(costly):]
        for k, a, b in zip(costly, own, zero):
            # time per I/O adds up: 1/ceiling = 1/zram + (1/null with the case's buffers -
            # 1/null with zero-filled ones); per job, in µs
            extra = max(0.0, 1 / a["iops"] - 1 / b["iops"]) if a["iops"] and b["iops"] else 0.0
            jobs = in_flight({"numjobs": shapes[k].get("numjobs", "1")})
            out[k]["buffer_us"] = round(extra * jobs * 1e6, 4)
            if out[k]["iops"]:
                out[k]["iops"] = 1 / (1 / out[k]["iops"] + extra)
    return out


def zeroed(shape: dict[str, str]) -> dict[str, str]:
    """The shape with zero-filled buffers in place of its own buffer options."""
    return {**{k: v for k, v in shape.items() if k not in BUFFER_KEYS},
            "zero_buffers": "1", "scramble_buffers": "0"}


def run_shapes(shapes: list[dict[str, str]], device: str | None,
               zram: bool = False, seconds: float = CALIBRATION_SECONDS) -> list[dict]:
    """One fio run of every shape (calibration_jobfile), its results in the shapes' order."""
    what = device or "fio's null engine"
    with tempfile.TemporaryDirectory(prefix="host-ceiling-") as tmp:
        job, out = Path(tmp) / "ceiling.fio", Path(tmp) / "ceiling.json"
        job.write_text(calibration_jobfile(shapes, device, zram, seconds))
        proc = subprocess.run(["fio", "--output-format=json", f"--output={out}", str(job)],
                              capture_output=True, text=True, check=False)
        try:
            groups = {g.jobname: g for g in read_groups(out)}
        except (FioOutputError, OSError) as e:
            raise RuntimeError(f"fio on {what} failed ({e}); {proc.stderr.strip()[:200]}")
    found = []
    for k in range(len(shapes)):
        g = groups.get(f"shape{k}")
        if g is None:
            raise RuntimeError(f"the run on {what} has no result for {shape_text(shapes[k])}")
        found.append({"iops": sum(d.iops for d in g.directions.values()),
                      "cpu_usr_pct": g.usr_cpu_pct, "cpu_sys_pct": g.sys_cpu_pct})
    return found


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
    todo = {c: case_shape((results_dir / c / "job.fio").read_text())
            for c in cases if c not in doc["cases"]}
    if not todo:
        return doc, []
    shapes = list({shape_text(s): s for s in todo.values()}.values())
    device, results, punt = measure(shapes, prefer)
    measured = dict(zip((shape_text(s) for s in shapes), results))
    for case, shape in todo.items():
        doc["cases"][case] = {"shape": shape_text(shape), "device": device,
                              **measured[shape_text(shape)]}
    doc["device"] = device
    if punt:
        doc["punt"] = punt
    doc["measured"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_atomically(results_dir / CEILING_FILE, doc)
    return doc, list(todo)


def is_host_bound(iops: float, ceiling: float, usr_pct: float, sys_pct: float, numjobs: int,
                  cpus: int, busiest_pct: float = math.nan,
                  together_pct: float = math.nan) -> bool:
    """The rules above, in one place: any of them marks the point."""
    if not math.isnan(busiest_pct) and busiest_pct >= HOST_BOUND_BUSY * 100:
        return True
    if not math.isnan(together_pct) and together_pct >= HOST_BOUND_ALL * 100:
        return True
    if ceiling and not math.isnan(ceiling) and iops >= HOST_BOUND_SHARE * ceiling:
        return True
    busy = (usr_pct + sys_pct) / 100 * numjobs  # CPUs' worth of time the jobs used
    return not math.isnan(busy) and busy >= HOST_BOUND_CPU * min(numjobs, cpus or numjobs)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m analysis host-ceiling RESULTS_DIR CASE...", file=sys.stderr)
        return 2
    results_dir = Path(argv[0])
    prefer = os.environ.get("TK_CEILING_DEVICE", "auto")  # tests force one: null_blk|zram|null
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
