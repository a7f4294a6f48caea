"""--until-stable: which points of a section are not yet known well enough to stop.

After the planned repetitions, the run loop asks, round after round, which cases are not yet
certified stable (analysis.core.effects.stability): a 95% interval of a mean (IOPS, MB/s or mean
latency, of any direction) wider than ±PCT % of it, a drift over its rounds that cannot yet be
bounded within PCT %, or a trend the rounds show (drifting); and runs one more repetition of
each, up to --max-repeat. Repetition k ran in round k, so the repetitions in order are the
rounds. The interval is the one the tables' `unstable` mark uses (analysis.core.stats
.interval_columns), read here straight from the repetitions' JSON so that the run loop's helper
needs neither pandas nor the rules layer.
"""

from __future__ import annotations

from pathlib import Path

from analysis.core.effects import Stability, stability
from analysis.core.stats import interval_columns, rep_stats
from analysis.fio.output import FioOutputError, read_groups
from analysis.run.repetition import rep_files

ORDER = {"stable": 0, "unstable": 1, "drifting": 2}  # a case is as good as its worst direction


def _groups(case_dir: Path) -> list:
    groups = []
    for path in rep_files(case_dir):
        try:
            groups.append(read_groups(path)[0])
        except (FioOutputError, OSError, IndexError):
            continue  # the run loop sets a bad file aside and reruns it
    return groups


def verdicts(case_dir: Path, pct: float) -> dict[str, Stability]:
    """{direction: its verdict} for every direction the case did I/O in."""
    groups = _groups(case_dir)
    out = {}
    for direction in sorted({d for g in groups for d in g.directions}):
        points = [g.directions[direction] for g in groups if direction in g.directions]
        if sum(p.total_ios for p in points) == 0:
            continue  # a direction the job never issued (the writes of a read-only mix)
        iops = [p.iops for p in points]
        cols = interval_columns(rep_stats(iops), rep_stats([p.bw_bytes / 1e6 for p in points]),
                                rep_stats([p.lat_mean_ns / 1000 for p in points]))
        out[direction] = stability(iops, cols["half_width_pct"], pct)
    return out


def widest_half_width_pct(case_dir: Path) -> float:
    """The widest relative half-width (%) over the case's directions; NaN below 2 repetitions."""
    widest = float("nan")
    for v in verdicts(case_dir, 0.0).values():
        if not widest >= v.half_width_pct:  # NaN-safe max
            widest = v.half_width_pct
    return widest


def verdict(case_dir: Path, pct: float) -> str:
    """stable, unstable or drifting: the worst of the case's directions (unstable: no I/O)."""
    found = [v.word for v in verdicts(case_dir, pct).values()]
    return max(found, key=ORDER.__getitem__) if found else "unstable"


def unstable(results_dir: Path, pct: float, cases: list[str]) -> list[str]:
    """The cases not yet certified stable to ±pct % (unstable or drifting), in the order given."""
    return [c for c in cases if verdict(results_dir / c, pct) != "stable"]
