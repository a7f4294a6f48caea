"""The plain fio side's search and the verdicts: the job counts and the peak's grid, io_uring's
option sets, the best configuration over the trials, the peak's finalists, the trials' order,
and the toolkit judged against the best (pure functions, tests/test_bench_fidelity.py)."""

from __future__ import annotations

import statistics

from bench.lib.fidelity.model import ENGINES, SYNC_ENGINES, TARGETS, Best, Config, Sample


def job_counts(cpus: int) -> list[int]:
    """numjobs to try: 1, 2, 4, ... up to the CPUs, the CPU count itself, and twice it."""
    counts = {cpus, 2 * cpus}
    n = 1
    while n <= cpus:
        counts.add(n)
        n *= 2
    return sorted(counts)


def expand_uring_options(recorded: str, iodepth: int, cpus: int, numjobs: int = 1
                         ) -> tuple[str, ...]:
    """fio options for the toolkit's recorded io_uring choice (manifest io_uring_options), as its
    jobfile renders them for a case of this depth and jobs (lib/uring.bash uring_job_options): QD/4
    is the depth's quarter, left out below 2; sqthread_poll only with 2 x jobs + 1 CPUs."""
    out = []
    for opt in recorded.split():
        if opt == "defaults":
            continue
        key, _, value = opt.partition("=")
        if value.startswith("QD/"):
            value = str(iodepth // int(value[3:]))
            if int(value) < 2:
                continue
        if key == "sqthread_poll" and cpus < 2 * numjobs + 1:
            continue
        out.append(f"{key}={value}")
    return tuple(out)


def t_io_uring_options(iodepth: int, poll: bool) -> tuple[str, ...]:
    """t/io_uring's defaults as fio options: registered buffers and files, a quarter of the depth
    submitted and reaped at a time; polled completions only where the device has poll queues."""
    batch = max(1, iodepth // 4)
    return ("fixedbufs=1", "registerfiles=1", f"iodepth_batch_submit={batch}",
            f"iodepth_batch_complete_min={batch}", *(("hipri=1",) if poll else ()))


def peak_grid(depths: tuple[int, ...], jobs: list[int]) -> list[Config]:
    """The peak's candidates: psync per job count; libaio and io_uring per depth and job count."""
    grid = [Config("psync", 1, j) for j in jobs]
    grid += [Config(e, d, j) for e in ENGINES if e not in SYNC_ENGINES
             for d in depths for j in jobs]
    return grid


def by_config(samples: list[Sample], metric: str) -> dict[Config, list[float]]:
    values: dict[Config, list[float]] = {}
    for s in samples:
        values.setdefault(s.config, []).append(s.measure.get(metric))
    return values


def best_config(samples: list[Sample], metric: str, trials: int,
                lower_is_better: bool = False) -> Best | None:
    """The configuration with the best mean `metric` among those measured in all `trials`
    trials (so a configuration seen once, in a lucky second, cannot win on that alone); ties go
    to the first in sort order. None when no configuration was measured in every trial."""
    complete = {c: v for c, v in by_config([s for s in samples if s.trial >= 1], metric).items()
                if len(v) >= trials}
    if not complete:
        return None
    sign = 1 if lower_is_better else -1
    config = min(sorted(complete), key=lambda c: sign * statistics.fmean(complete[c]))
    v = complete[config]
    return Best(config, statistics.fmean(v), min(v), max(v), len(v))


def finalists(screen: list[Sample], metric: str, k: int) -> list[Config]:
    """The k configurations with the highest screening value of `metric`, best first."""
    values = by_config(screen, metric)
    return sorted(values, key=lambda c: -statistics.fmean(values[c]))[:k]


def judge(kind: str, toolkit: float | None, plain: float | None) -> tuple[float | None, bool]:
    """(toolkit / plain, whether the target for `kind` is met). A missing number fails."""
    if toolkit is None or plain is None or plain <= 0:
        return None, False
    ratio = toolkit / plain
    op, bound = TARGETS[kind]
    return ratio, (ratio >= bound) if op == ">=" else (ratio <= bound)


def trial_order(items: list, trial: int) -> list:
    """Odd trials in the given order, even ones reversed: a drift of the machine over the bench
    then weighs on every item alike instead of always favouring the first."""
    return list(items) if trial % 2 else list(reversed(items))
