"""The toolkit's side: its §2 and §5 from a copy per target, with its own defaults and a short
profile, and its io_uring probe's choice; its numbers read from its tables, its facts, its
manifest and its repetitions."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from analysis.fio.output import FioOutputError
from analysis.run import record
from bench.lib.fidelity.model import QD1_CASES, TK_SRC, URING_QD, ZRAM, Config
from bench.lib.fidelity.plain import read_fio_json
from bench.lib.fidelity.processes import info, run, tail
from bench.lib.fidelity.search import expand_uring_options, t_io_uring_options
from bench.lib.fidelity.state import Bench, Target


def clean_env(bench: Bench) -> dict[str, str]:
    """Settings from flags only: a clean environment, so no PROFILE=, ENGINE=, QD_LIST= ... of
    the caller's shell changes what the toolkit does."""
    return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
            "TMPDIR": str(bench.work / "tmp")}


def destroy_args(target: Target) -> list[str]:
    """--destroy /dev/zram0 when DESTROY= in the environment names it (the bench's own rule)."""
    return ["--destroy", ZRAM] if target.key == "zram" and os.environ.get("DESTROY") == ZRAM \
        else []


def run_toolkit(bench: Bench, target: Target) -> None:
    """§2 and §5 of the toolkit on the target, with its defaults (engine, buffers, jobs) and a
    short profile; then its numbers from tables/qd1_baseline.csv and the §5 facts."""
    s = bench.settings
    common = ["--profile", "quick", "--runtime", str(s.tk_runtime), "--ramp", str(s.tk_ramp),
              "--repeat", str(s.tk_repeat), "--size", f"{target.region >> 20}M",
              "--target", target.path, *destroy_args(target)]
    for script, extra in (("qd1_test.bash", ()), ("qd_sweep_test.bash", s.tk_sweep_args)):
        argv = ["bash", script, *common, *extra]
        log = bench.work / f"toolkit-{target.key}-{script.split('_test')[0]}.log"
        info(f"  {target.key:<5} toolkit: {' '.join(argv)}  [{bench.elapsed()}]")
        bench.machine.check()
        t0 = time.monotonic()
        rc = run(argv, log, 3600, cwd=target.toolkit, env=clean_env(bench))
        info(f"  {target.key:<5} toolkit: {script} exit {rc} after "
             f"{time.monotonic() - t0:.0f} s")
        if rc:
            target.toolkit_ok = False
            bench.failures.append(f"toolkit {script} on {target.key} exited {rc} (command: cd "
                                  f"<copy> && {' '.join(argv)}); its last lines:\n" + tail(log))
    read_toolkit(bench, target)


def run_toolkit_uring(bench: Bench, target: Target) -> None:
    """The toolkit's io_uring choice on the target: §5 at QD URING_QD only, --engine io_uring,
    in a results tree of its own; its manifest names the options the probe kept, its
    repetitions give the toolkit's own number with them. Then the three plain configurations
    of the comparison: fio's defaults, the toolkit's options, t/io_uring's."""
    s = bench.settings
    argv = ["bash", "qd_sweep_test.bash", "--profile", "quick", "--runtime", str(s.runtime_s),
            "--ramp", "1", "--repeat", str(max(1, s.trials)), "--size",
            f"{target.region >> 20}M", "--target", target.path, "--engine", "io_uring",
            "--qd", str(URING_QD), "--no-seq", "--peak", "off", "--no-host-ceiling",
            "--uring-tuning", "on", "--results", "results/uring", *destroy_args(target)]
    log = bench.work / f"toolkit-{target.key}-uring.log"
    info(f"  {target.key:<5} toolkit: {' '.join(argv)}  [{bench.elapsed()}]")
    bench.machine.check()
    rc = run(argv, log, 600, cwd=target.toolkit, env=clean_env(bench))
    tree = target.toolkit / "results/uring/qd_sweep"
    try:
        if rc:
            raise ValueError(f"exit {rc}: {tail(log, 5)}")
        manifest = record.section(tree)
        target.uring_options = manifest.get("io_uring_options") or "defaults"
        target.uring_note = manifest.get("io_uring_note", "")
        reps = [read_fio_json(p.read_text()).iops
                for p in sorted((tree / f"randread-4k-qd{URING_QD}").glob("rep*.json"))
                if p.stem[3:].isdigit()]
        target.uring_toolkit = statistics.fmean(reps) if reps else None
    except (OSError, ValueError, KeyError, FioOutputError) as e:
        bench.failures.append(f"toolkit io_uring run on {target.key}: {e}")
        target.uring_options = "defaults"
    info(f"  {target.key:<5} toolkit's io_uring options: "
         f"{target.uring_note or target.uring_options}")
    cpus = len(os.sched_getaffinity(0))
    chosen = expand_uring_options(target.uring_options, URING_QD, cpus)
    target.uring_configs = [
        Config("io_uring", URING_QD, 1, (), "fio's defaults"),
        Config("io_uring", URING_QD, 1, chosen, "toolkit's options"),
        Config("io_uring", URING_QD, 1, t_io_uring_options(URING_QD, io_poll(target.path)),
               "t/io_uring style"),
    ]


def read_toolkit(bench: Bench, target: Target) -> None:
    """The toolkit's §2 rows (tables/qd1_baseline.csv), each case's engine (its job.fio) and
    §5's peak headline (tables/qd_sweep_facts.json); what is missing is a failure."""
    tk = target.toolkit
    try:
        with open(tk / "tables/qd1_baseline.csv", newline="") as f:
            target.qd1 = {row["case"]: {k: float(v) for k, v in row.items()
                                        if k in ("iops_mean", "bw_MBps_mean", "lat_us_mean")}
                          for row in csv.DictReader(f)}
    except (OSError, KeyError, ValueError) as e:
        bench.failures.append(f"no toolkit §2 numbers on {target.key}: {e}")
    for w in QD1_CASES:
        target.qd1_config[w.name] = jobfile_config(tk / "results/qd1" / w.name / "job.fio")
    try:
        facts = json.loads((tk / "tables/qd_sweep_facts.json").read_text())
        peaks = [h for h in facts["headlines"] if h["kind"] == "peak_random_iops"
                 and h.get("value") is not None]
        if peaks:
            h = max(peaks, key=lambda h: h["value"])
            target.peak = (h["value"], f"{h['label']}: {h['text']}")
        else:
            bench.failures.append(f"no peak_random_iops headline in the toolkit's §5 facts "
                                  f"on {target.key}")
    except (OSError, KeyError, ValueError) as e:
        bench.failures.append(f"no toolkit §5 facts on {target.key}: {e}")


def jobfile_config(path: Path) -> str:
    """The engine (and depth, jobs when not 1) a toolkit case ran with, from its job.fio; the
    last setting wins, as in fio (the case's section after [global])."""
    opts = {}
    try:
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith((";", "#")):
                opts[key.strip()] = value.strip()
    except OSError:
        return ""
    text = opts.get("ioengine", "?")
    if opts.get("iodepth", "1") != "1":
        text += f" QD{opts['iodepth']}"
    if opts.get("numjobs", "1") != "1":
        text += f" x{opts['numjobs']} jobs"
    return text


def io_poll(path: str, toolkit: Path = TK_SRC) -> bool:
    """Whether the block device behind PATH (a partition's disk; a file's device) has poll
    queues, as the toolkit itself reads it (lib/uring.bash target_io_poll)."""
    read = subprocess.run(["bash", "-c", 'source lib/run.bash && TARGET_PATH=$1 && target_io_poll',
                           "bash", path], cwd=toolkit, capture_output=True, text=True,
                          check=False)
    return read.returncode == 0 and read.stdout.strip() == "1"
