"""SNIA PTS's host idle recovery test (HIR): what each wait state gives back after idling.

lib/pts.bash (pts_run_hir) runs each wait state as one fio run, RESULTS/<section>/pts/hir/
wait<W>.json, on the drive WSAT left: a ``cycles`` job (thinktime: W s idle after every 5 s of
4 KiB random writes), then a ``baseline`` job (writes without a pause that bring the drive back
to its steady state before the next wait state); after a pause of the run (a resume) a
``return`` job of the same length comes first. Each job logs IOPS per second
(``wait<W>-<job>_iops.*.log``); ``wait<W>.tsv`` holds the wait state as run (its cycles, scaled
to --round).

The numbers:

* the cycles: the seconds with writes, split where the log has at least W - 2 seconds without
  (an idle of W s holds W - 1 whole seconds, one fewer where fio's pause ends a hair early, and
  a row of fio's log can land in the second beside its own; a stall of the drive inside a
  segment is shorter).
  The first segment is no cycle: it starts the job, after writes without a pause, and fio 3.33
  writes W s longer before its first idle. The next ``cycles`` segments are the cycles; a last
  extra one (later fio versions pause after the first 5 s) is left out;
* a cycle's IOPS: its I/Os (the per-second IOPS summed: analysis.fio.log_series) over the 5 s
  segment PTS gives it (fio's segment is that plus the wait for its last I/Os: milliseconds);
* a wait state's IOPS: the mean over its cycles, with its 95% interval over them (t: the
  cycles as the units), set against the baseline;
* the baseline: WSAT's steady-state rate, the mean of its last 5 rounds with their interval
  (WSAT has no window of its own: it stops when written, not when steady). Its rounds are fio
  runs with a pause between them (fio's start, the judging: about 0.3 s); a drive that regains
  speed in so short an idle is lifted by it, the more the shorter the rounds. The return to
  steady state after each wait state writes without a pause: its level (``return_iops``) is
  given beside it.

>>> split_segments([5, 0, 0, 7, 8, 0, 0, 0, 9, 9, 0, 1], min_gap=3)
[(0, 4), (8, 12)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.pts import test as pts_test
from analysis.core.stats import rep_stats, t_half_width
from analysis.fio.log_series import read_per_second
from analysis.rules.pts_window import WINDOW, load_test, read_conditions

JOBS = ("return", "cycles", "baseline")  # a wait state's fio jobs, in the order they run


@dataclass(frozen=True)
class Baseline:
    iops: float
    ci95: float
    rounds: tuple[int, int]   # 1-based first and last round of WSAT it is the mean of


@dataclass(frozen=True)
class WaitResult:
    wait_s: int
    write_s: int
    cycles_planned: int
    baseline_s: int
    resumed: bool             # a return to steady state ran before it (the run had paused)
    cycle_iops: tuple[float, ...]
    series: pd.DataFrame      # per second of the fio run: t_s, iops, job

    @property
    def return_iops(self) -> float:
        """The level the return to steady state after the cycles reached: the mean of its
        per-second IOPS over its second half, its last second left out (fio may not log it
        whole). Writes without a pause: no idle between rounds lifts it, as it can WSAT's."""
        x = self.series.iops[self.series.job == "baseline"].to_numpy()[:-1]
        return float(x[len(x) // 2:].mean()) if len(x) >= 2 else math.nan

    @property
    def stats(self) -> tuple[float, float]:
        """Mean IOPS over the cycles and its 95% half-width."""
        s = rep_stats(self.cycle_iops)
        return s["mean"], t_half_width(s["std"], s["n"])


@dataclass(frozen=True)
class HirResult:
    folder: Path
    conditions: dict
    waits: list[WaitResult]
    baseline: Baseline | None
    verdict: str
    table: pd.DataFrame

    @property
    def deviations(self) -> list[str]:
        return [d for d in self.conditions.get("deviations", "").split(";") if d]


def split_segments(per_second, min_gap: int) -> list[tuple[int, int]]:
    """(first, end) second indexes of each run of seconds with I/O, runs closer than
    ``min_gap`` seconds without I/O joined."""
    busy = [i for i, v in enumerate(per_second) if v > 0]
    out: list[list[int]] = []
    for i in busy:
        if out and i - out[-1][1] < min_gap:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return [(a, b) for a, b in out]


def min_gap(wait_s: int) -> int:
    """Seconds without I/O that part two write segments (see the module's docstring)."""
    return max(1, wait_s - 2)


def cycle_iops(per_second, wait_s: int, write_s: int, cycles: int) -> list[float]:
    """Each cycle's IOPS from the cycles job's per-second IOPS (see the module's docstring)."""
    x = np.asarray(per_second, dtype=float)
    segments = split_segments(x, min_gap(wait_s))[1:cycles + 1]
    return [float(x[a:b].sum()) / write_s for a, b in segments]


def read_wait(folder: Path, wait_s: int) -> WaitResult:
    run = dict(line.split("\t", 1) for line in
               (folder / f"wait{wait_s}.tsv").read_text().splitlines() if "\t" in line)
    write_s, cycles = int(run["write_s"]), int(run["cycles"])
    parts, offset, cycles_series = [], 0.0, None
    for job in JOBS:
        logs = sorted(folder.glob(f"wait{wait_s}-{job}_iops.*.log"))
        if not logs:
            continue
        series = read_per_second(logs, "iops")
        iops = series.direction("write")
        if job == "cycles":
            cycles_series = iops
        parts.append(pd.DataFrame({"t_s": series.seconds + offset, "iops": iops, "job": job}))
        offset += float(series.seconds[-1]) if len(series.seconds) else 0.0
    if cycles_series is None:
        raise ValueError(f"{folder}: no IOPS log of wait state {wait_s} s's cycles")
    return WaitResult(wait_s, write_s, cycles, int(run["baseline_s"]), run.get("resumed") == "1",
                      tuple(cycle_iops(cycles_series, wait_s, write_s, cycles)),
                      pd.concat(parts, ignore_index=True))


def wsat_baseline(folder: Path) -> Baseline | None:
    """WSAT's steady rate: the mean of its last WINDOW rounds' IOPS, with their interval."""
    if not (folder / "round1.json").is_file():
        return None
    t = load_test(folder).table
    last = t.iops.iloc[-WINDOW:]
    s = rep_stats(last)
    return Baseline(s["mean"], t_half_width(s["std"], s["n"]),
                    (int(t["round"].iloc[-len(last)]), int(t["round"].iloc[-1])))


def hir_table(waits: list[WaitResult], baseline: Baseline | None) -> pd.DataFrame:
    rows = []
    for w in waits:
        mean, half = w.stats
        rows.append({"wait_s": w.wait_s, "write_s": w.write_s, "cycles": len(w.cycle_iops),
                     "cycles_planned": w.cycles_planned, "iops_mean": mean, "iops_ci95": half,
                     "iops_min": min(w.cycle_iops, default=math.nan),
                     "iops_max": max(w.cycle_iops, default=math.nan),
                     "baseline_iops": baseline.iops if baseline else math.nan,
                     "vs_baseline": mean / baseline.iops if baseline and baseline.iops else math.nan,
                     "return_iops": w.return_iops,
                     "resumed": w.resumed})
    return pd.DataFrame(rows)


def load_hir(folder: Path) -> HirResult:
    """HIR's wait states in ``folder`` (RESULTS/<section>/pts/hir), in PTS's order."""
    test = pts_test(folder.name)
    waits = [read_wait(folder, w.wait_s) for w in test.waits
             if (folder / f"wait{w.wait_s}.json").is_file()]
    baseline = wsat_baseline(folder.parent / test.after)
    verdict_file = folder / "verdict"
    verdict = verdict_file.read_text().strip() if verdict_file.is_file() else "not finished"
    return HirResult(folder, read_conditions(folder), waits, baseline, verdict,
                     hir_table(waits, baseline))
