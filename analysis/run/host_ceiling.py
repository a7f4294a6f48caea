"""The host's own ceiling: what fio can issue on this machine with no device at all.

On a drive that reads 7-14 GB/s, fio's own work per I/O (filling buffers, bookkeeping, the
engine's system calls) can decide a number as much as the drive does. Each case's shape (pattern,
block size, depth, jobs, buffer options) is run for about a second on fio's null engine, which
completes every I/O at once without touching anything; its IOPS is the most this host could have
shown for that case. `python -m analysis host-ceiling RESULTS_DIR CASE...` measures the cases
that have no ceiling yet (from their results/<section>/<case>/job.fio) into
RESULTS_DIR/host_ceiling.json; the analysis then marks the points the host limited (host_bound).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from analysis.fio.output import FioOutputError, read_groups
from analysis.run.manifest import write_atomically

CEILING_FILE = "host_ceiling.json"
CALIBRATION_SECONDS = 1

# The options that decide fio's own cost per I/O; everything else in a case (target, runtime,
# logs, a rate cap, the engine) is left out, so the ceiling is the shape's, not the device's.
SHAPE_KEYS = ("rw", "readwrite", "rwmixread", "rwmixwrite", "bs", "blocksize", "bssplit",
              "iodepth", "iodepth_batch_submit", "iodepth_batch_complete_min", "numjobs",
              "refill_buffers", "scramble_buffers", "zero_buffers", "buffer_compress_percentage",
              "buffer_compress_chunk", "dedupe_percentage", "buffer_pattern", "norandommap",
              "randrepeat", "lat_percentiles", "clat_percentiles", "percentile_list")

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


def calibration_jobfile(shapes: list[dict[str, str]]) -> str:
    """One null-engine job per shape, one after another (stonewall), each about a second."""
    lines = ["[global]", "ioengine=null", "size=1g", "time_based=1",
             f"runtime={CALIBRATION_SECONDS}", "group_reporting=1", ""]
    for k, shape in enumerate(shapes):
        lines += [f"[shape{k}]", "stonewall", *(f"{key}={v}" for key, v in shape.items()), ""]
    return "\n".join(lines)


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def measure(shapes: list[dict[str, str]]) -> list[dict]:
    """Run the shapes on the null engine: [{iops, cpu_usr_pct, cpu_sys_pct}] in their order."""
    with tempfile.TemporaryDirectory(prefix="host-ceiling-") as tmp:
        job, out = Path(tmp) / "ceiling.fio", Path(tmp) / "ceiling.json"
        job.write_text(calibration_jobfile(shapes))
        proc = subprocess.run(["fio", "--output-format=json", f"--output={out}", str(job)],
                              capture_output=True, text=True, check=False)
        try:
            groups = {g.jobname: g for g in read_groups(out)}
        except (FioOutputError, OSError) as e:
            raise RuntimeError(f"fio's null engine failed ({e}); {proc.stderr.strip()[:200]}")
    found = []
    for k in range(len(shapes)):
        g = groups.get(f"shape{k}")
        if g is None:
            raise RuntimeError(f"the null-engine run has no result for {shape_text(shapes[k])}")
        found.append({"iops": sum(d.iops for d in g.directions.values()),
                      "cpu_usr_pct": g.usr_cpu_pct, "cpu_sys_pct": g.sys_cpu_pct})
    return found


def read_ceilings(results_dir: Path) -> dict:
    path = Path(results_dir) / CEILING_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def calibrate(results_dir: Path, cases: list[str]) -> tuple[dict, list[str]]:
    """Measure the cases that have no ceiling yet (identical shapes once) and store them:
    (the whole file's content, the cases measured now)."""
    doc = read_ceilings(results_dir) or {"cpus": usable_cpus(), "cases": {}}
    todo = {c: case_shape((results_dir / c / "job.fio").read_text())
            for c in cases if c not in doc["cases"]}
    if not todo:
        return doc, []
    shapes = list({shape_text(s): s for s in todo.values()}.values())
    measured = dict(zip((shape_text(s) for s in shapes), measure(shapes)))
    for case, shape in todo.items():
        doc["cases"][case] = {"shape": shape_text(shape), **measured[shape_text(shape)]}
    doc["measured"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_atomically(results_dir / CEILING_FILE, doc)
    return doc, list(todo)


def is_host_bound(iops: float, ceiling: float, usr_pct: float, sys_pct: float, numjobs: int,
                  cpus: int) -> bool:
    """The rule above, in one place."""
    if ceiling and not math.isnan(ceiling) and iops >= HOST_BOUND_SHARE * ceiling:
        return True
    busy = (usr_pct + sys_pct) / 100 * numjobs  # CPUs' worth of time the jobs used
    return not math.isnan(busy) and busy >= HOST_BOUND_CPU * min(numjobs, cpus or numjobs)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m analysis host-ceiling RESULTS_DIR CASE...", file=sys.stderr)
        return 2
    results_dir = Path(argv[0])
    try:
        doc, measured = calibrate(results_dir, argv[1:])
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, OSError) as e:
        print(f"host-ceiling: {e}", file=sys.stderr)
        return 1
    for case in measured:
        c = doc["cases"][case]
        print(f"  ceiling  {case}: {c['iops']:,.0f} IOPS on fio's null engine "
              f"(CPU {c['cpu_usr_pct']:.0f}% usr, {c['cpu_sys_pct']:.0f}% sys per job)",
              file=sys.stderr)
    return 0
