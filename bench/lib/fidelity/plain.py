"""The plain side: fio with nothing of the toolkit's, each configuration on each target, read
through the toolkit's own reader of fio's JSON (analysis.fio.output)."""

from __future__ import annotations

from analysis.fio.output import FioOutputError, parse_groups, split_output
from bench.lib.fidelity.model import (
    ENGINES,
    PEAK_WORKLOAD,
    QD1_CASES,
    URING_WORKLOAD,
    Config,
    Measure,
    Sample,
    Workload,
)
from bench.lib.fidelity.processes import info, run, tail
from bench.lib.fidelity.report import num
from bench.lib.fidelity.search import finalists, trial_order
from bench.lib.fidelity.state import Bench, Target


def read_fio_json(text: str) -> Measure:
    """IOPS, MB/s and mean total latency of a fio JSON output, all jobs and directions together
    (latency weighted by each direction's I/O count). Anything fio printed before the JSON is
    skipped; a job fio reports an error for, or one that did no I/O, is refused."""
    preamble, doc = split_output(text)
    groups, skipped = parse_groups(doc, preamble)
    if not groups:
        raise FioOutputError("; ".join(skipped) or "fio output without usable job entries")
    directions = [d for g in groups for d in g.directions.values()]
    ios = sum(d.total_ios for d in directions)
    return Measure(iops=sum(d.iops for d in directions),
                   bw_MBps=sum(d.bw_bytes for d in directions) / 1e6,
                   lat_us=sum(d.lat_mean_ns * d.total_ios for d in directions) / ios / 1e3)


def run_plain(bench: Bench, target: Target, w: Workload, config: Config, trial: int,
              runtime: int) -> None:
    """One plain fio run; its sample, or its failure, joins the bench's."""
    name = (f"{target.key}-{w.name}-{config.engine}-qd{config.iodepth}-j{config.numjobs}"
            f"{'-' + config.tag.replace(' ', '_').replace('/', '_') if config.tag else ''}"
            f"-t{trial}")
    out, log = bench.work / "plain" / f"{name}.json", bench.work / "plain" / f"{name}.log"
    out.parent.mkdir(exist_ok=True)
    bench.machine.check()
    rc = run(["fio", f"--name={w.name}", f"--filename={target.path}",
              f"--size={target.region}", f"--rw={w.rw}", f"--bs={w.bs}",
              f"--ioengine={config.engine}", f"--iodepth={config.iodepth}",
              f"--numjobs={config.numjobs}", *(f"--{o}" for o in config.options),
              "--direct=1", "--time_based=1",
              f"--runtime={runtime}", f"--ramp_time={bench.settings.ramp}", "--randrepeat=0",
              "--norandommap=1", "--group_reporting=1", "--output-format=json",
              f"--output={out}"], log, runtime + 120)
    bench.runs_done += 1
    try:
        if rc:
            raise ValueError(f"fio exit {rc}")
        measure = read_fio_json(out.read_text())
    except (OSError, ValueError, FioOutputError) as e:
        bench.failures.append(f"plain fio {w.name} {config} on {target.key}: {e}; "
                              f"{tail(log, 3)}")
        info(f"  {target.key} {w.name:<12} {config!s:<24} FAILED ({e})")
        return
    bench.samples.append(Sample(target.key, w.name, config, trial, measure))
    info(f"  {target.key:<5} {w.name:<12} {config!s:<24} {num(measure.iops):>7} IOPS "
         f"{num(measure.bw_MBps):>6} MB/s {num(measure.lat_us):>6} µs"
         f"  [{bench.runs_done}/{bench.total_runs}, {bench.elapsed()}]")


def screen_peak(bench: Bench, target: Target) -> None:
    """The peak's screening round: every configuration of the grid once."""
    for config in bench.grid:
        run_plain(bench, target, PEAK_WORKLOAD, config, 0, bench.settings.screen_runtime_s)


def run_trial(bench: Bench, target: Target, trial: int) -> None:
    """One trial on a target: §2's cases on every engine, the peak's finalists and the io_uring
    configurations, in the trial's order."""
    screened = [s for s in bench.samples if s.target == target.key and s.trial == 0]
    runs = [(w, Config(e)) for w in QD1_CASES for e in ENGINES]
    runs += [(PEAK_WORKLOAD, c) for c in finalists(screened, "iops", bench.settings.finalists)]
    runs += [(URING_WORKLOAD, c) for c in target.uring_configs]
    for w, config in trial_order(runs, trial):
        run_plain(bench, target, w, config, trial, bench.settings.runtime_s)
