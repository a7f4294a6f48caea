"""A SNIA PTS test's numbers over its measurement window: what its page reports.

PTS reports each access pattern's average over the steady-state window (the 5 rounds in which
the tracking variables were steady together: analysis.core.steady.judge_together, the rule the
run loop stopped on). Here each average carries its 95% interval over those rounds (the rounds
are the independent units: analysis.core.stats.t_half_width), and the Latency test's p99.999 is
read from the window's histogram bins pooled, with its interval and the I/Os above it
(analysis.core.stats.tail_intervals: † on the page where fewer than 100 back it). A test that
stopped without a steady window is reported over its last 5 rounds and says so. WSAT has no
window: it is the rounds in order, with the GiB written by the end of each.

>>> window_of(None, 12)
(8, 12)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.core.pts import PtsTest
from analysis.core.pts import test as pts_test
from analysis.core.stats import merge_bins, rep_stats, t_half_width, tail_intervals
from analysis.core.steady import SteadyTogether
from analysis.fio.output import read_groups
from analysis.run.pts_rounds import judge_rounds, read_round
from analysis.run.steady_rounds import round_paths

WINDOW = 5
P5 = 99.999  # PTS's "five nines" response time


@dataclass(frozen=True)
class TestResult:
    test: PtsTest
    folder: Path
    conditions: dict          # conditions.tsv: what the page's header states
    rounds: list              # per round: case name -> analysis.run.pts_rounds.CaseRound
    ends_s: list              # each round's end, seconds since the first round's start
    together: SteadyTogether | None   # None for WSAT
    window: tuple[int, int]   # 1-based first and last round of the measurement window
    verdict: str              # the run loop's last word (RESULTS/.../verdict)
    table: pd.DataFrame       # one row per case over the window (or per round for WSAT)

    @property
    def deviations(self) -> list[str]:
        return [d for d in self.conditions.get("deviations", "").split(";") if d]

    @property
    def steady(self) -> bool:
        return bool(self.together and self.together.reached)


def window_of(together: SteadyTogether | None, n_rounds: int) -> tuple[int, int]:
    """The steady window, else the last WINDOW rounds (or all, when fewer)."""
    if together is not None and together.reached:
        return together.first_round, together.last_round
    return max(1, n_rounds - WINDOW + 1), n_rounds


def read_conditions(folder: Path) -> dict:
    path = folder / "conditions.tsv"
    if not path.is_file():
        return {}
    return dict(line.split("\t", 1) for line in path.read_text().splitlines() if "\t" in line)


def _latency_columns(paths: list[Path], case: str) -> dict:
    """Max latency, p99.999 with its interval and tail, from the window's rounds of one case."""
    bins, lat_max, total = [], 0.0, 0
    for path in paths:
        for g in read_groups(path):
            if g.jobname != case:
                continue
            ds = list(g.directions.values())
            lat_max = max([lat_max, *(d.lat_max_ns for d in ds)])
            total += sum(d.total_ios for d in ds)
            per = [d.bins for d in ds if d.bins]
            if per:
                bins.append(merge_bins(per))
    out = {"lat_max_us": lat_max / 1000, "ios": total, "p99_999_us": math.nan,
           "p99_999_low_us": math.nan, "p99_999_high_us": math.nan, "p99_999_tail_ios": 0,
           "p99_999_quotable": False}
    if len(bins) == len(paths) and bins:
        t = tail_intervals(bins, [P5]).get(P5)
        if t is not None:
            out.update(p99_999_us=t.value / 1000, p99_999_low_us=t.low / 1000,
                       p99_999_high_us=t.high / 1000, p99_999_tail_ios=t.tail,
                       p99_999_quotable=t.quotable)
    return out


def window_table(test: PtsTest, rounds: list, paths: list[Path],
                 window: tuple[int, int]) -> pd.DataFrame:
    """One row per case over the window's rounds: each mean with its 95% half-width."""
    first, last = window
    rows = []
    for c in test.cases:
        values = [r[c.name] for r in rounds[first - 1:last] if c.name in r]
        if not values:
            continue   # left out of this run (the reduced matrix, or under the logical block)
        row = {"case": c.name, "pattern": c.label, "rw": c.rw, "read_pct": c.read_pct,
               "bs_bytes": c.bs_bytes, "tracking": bool(c.track), "rounds": len(values)}
        for col, key in (("iops", "iops"), ("bw_MBps", "mbps"), ("lat_us", "lat_us")):
            s = rep_stats(getattr(v, key) for v in values)
            row[f"{col}_mean"], row[f"{col}_ci95"] = s["mean"], t_half_width(s["std"], s["n"])
        if test.name == "latency":
            row.update(_latency_columns(paths[first - 1:last], c.name))
        rows.append(row)
    return pd.DataFrame(rows)


def wsat_table(rounds: list, ends_s: list) -> pd.DataFrame:
    """WSAT's rounds in order: IOPS, and the GiB written by the end of each."""
    written = 0
    rows = []
    for k, (r, end) in enumerate(zip(rounds, ends_s, strict=True), 1):
        (case,) = r.values()
        written += case.written
        rows.append({"round": k, "end_s": end, "iops": case.iops, "bw_MBps": case.mbps,
                     "lat_us": case.lat_us, "written_GiB": written / 2**30})
    return pd.DataFrame(rows)


def _ends(paths: list[Path], round_s: float, cases: int) -> list[float]:
    """Each round's end (fio's timestamp_ms), in seconds since the first round started (its end
    less its planned length: ``cases`` jobs of ``round_s``)."""
    import json

    stamps = [json.loads(p.read_text())["timestamp_ms"] / 1000 for p in paths]
    start = stamps[0] - round_s * cases if stamps else 0.0
    return [s - start for s in stamps]


def load_test(folder: Path) -> TestResult:
    """The test whose rounds are in ``folder`` (RESULTS/<section>/pts/<test>)."""
    test = pts_test(folder.name)
    conditions = read_conditions(folder)
    paths = round_paths(folder)
    rounds = [read_round(p) for p in paths]
    round_s = float(conditions.get("round_s") or 60)
    ends = _ends(paths, round_s, len(rounds[0]) if rounds else 0)
    verdict_file = folder / "verdict"
    verdict = verdict_file.read_text().strip() if verdict_file.is_file() else "not finished"
    if test.written_times:
        return TestResult(test, folder, conditions, rounds, ends, None, (1, len(rounds)),
                          verdict, wsat_table(rounds, ends))
    together = judge_rounds(test, rounds, round_s) if rounds else None
    window = window_of(together, len(rounds))
    return TestResult(test, folder, conditions, rounds, ends, together, window, verdict,
                      window_table(test, rounds, paths, window))
