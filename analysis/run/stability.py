"""--until-stable: which points of a section are not yet known well enough to stop.

After the planned repetitions, the run loop asks, round after round, which cases still have a
95% interval of a mean (IOPS, MB/s or mean latency, of any direction) wider than ±PCT % of it,
and runs one more repetition of each, up to --max-repeat. The rule is the one the tables'
`unstable` mark uses (analysis.core.stats.interval_columns), read here straight from the
repetitions' JSON so that the run loop's helper needs neither pandas nor the rules layer.
"""

from __future__ import annotations

from pathlib import Path

from analysis.core.stats import interval_columns, rep_stats
from analysis.fio.output import FioOutputError, read_groups
from analysis.run.repetition import rep_files


def widest_half_width_pct(case_dir: Path) -> float:
    """The widest relative half-width (%) over the case's directions; NaN below 2 repetitions."""
    groups = []
    for path in rep_files(case_dir):
        try:
            groups.append(read_groups(path)[0])
        except (FioOutputError, OSError, IndexError):
            continue  # the run loop sets a bad file aside and reruns it
    widest = float("nan")
    for direction in sorted({d for g in groups for d in g.directions}):
        points = [g.directions[direction] for g in groups if direction in g.directions]
        if sum(p.total_ios for p in points) == 0:
            continue  # a direction the job never issued (the writes of a read-only mix)
        cols = interval_columns(rep_stats([p.iops for p in points]),
                                rep_stats([p.bw_bytes / 1e6 for p in points]),
                                rep_stats([p.lat_mean_ns / 1000 for p in points]))
        if not widest >= cols["half_width_pct"]:  # NaN-safe max
            widest = cols["half_width_pct"]
    return widest


def unstable(results_dir: Path, pct: float, cases: list[str]) -> list[str]:
    """The cases whose widest half-width is above pct %, in the order given."""
    return [c for c in cases if widest_half_width_pct(results_dir / c) > pct]
