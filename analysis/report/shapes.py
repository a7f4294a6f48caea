"""One shape, several sections: where two sections measured the same I/O (random or sequential,
block size, queue depth, jobs, engine, read share, direction), tables/shapes.csv sets their
numbers side by side. Their means differ by more than their intervals allow when the drive's state, the
working set or the time moved the level between sections: that spread between sections is the
only between-run estimate one report has, and the conclusion quotes it.

Worked example (the sample issue 41 read, made on the emulated NVMe drive,
`tests/fixtures/older-sample/results`):
4 KiB random read at QD 32, one job, io_uring was measured in §3 (14,017 ± 5,683 IOPS), §4's
100% read mix (14,355 ± 8,073), §5's peak search (17,344 ± 474) and §6 (16,346 ± 1,157 and
15,564 ± 1,880, two working sets)::

    >>> shapes = shared_shapes(load_frames(Path("tests/fixtures/older-sample/results")))
    >>> s = next(s for s in shapes if s.label.startswith("4 KiB random read, QD 32"))
    >>> [(p.section, round(p.mean)) for p in s.points]
    [('bs_sweep', 14017), ('mix_rw', 14355), ('qd_sweep', 17344), ('wss_burst', 16346), ('wss_burst', 15564)]
    >>> round(s.spread_pct, 1), s.apart.significant  # sd of the means, % of their mean
    (8.9, False)
"""

from __future__ import annotations

import contextlib
import io
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.core.effects import Change, adjusted
from analysis.render import markdown as md
from analysis.report.compare import BadInput, load_tree
from analysis.rules.cases import one_state
from analysis.sections import SECTIONS
from analysis.sections.common import row_change

# What makes two rows the same measurement of the drive (issue 41: rw, bs, depth, jobs,
# engine): a 100% read mix of §4 is the random read of the other sections.
KEY = ["random", "bs", "iodepth", "numjobs", "engine", "read_pct", "direction"]
METRIC = "iops_mean"
SHAPES_CSV = "tables/shapes.csv"


@dataclass(frozen=True)
class Point:
    section: str
    case: str
    mean: float
    ci95: float
    n: int
    row: object  # the section table's row (row_change reads its spread and count)


@dataclass(frozen=True)
class Shape:
    label: str
    points: list[Point]   # in section order
    spread_pct: float     # sd of the points' means, % of their mean
    apart: Change         # the highest mean against the lowest (Welch), adjusted over shapes

    @property
    def sections(self) -> str:
        # §6 measures a shape at each working set: its section is named once
        return ", ".join(dict.fromkeys(f"§{SECTIONS[p.section].number}" for p in self.points))


def load_frames(results: Path) -> dict[str, pd.DataFrame]:
    """{section: its summary table, recomputed from the raw results}: compare's reading of a
    tree, quietly (each section's own analysis named its files left out), and none for a tree
    where no section ran yet."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return load_tree(results)
    except BadInput:
        return {}


def _label(r) -> str:
    what = md.pattern(r.rw if r.read_pct in (0, 100) else "randread", r.bs)
    if 0 < r.read_pct < 100:
        what += f" R{r.read_pct}/W{100 - r.read_pct} {r.direction}s"
    elif r.rw in ("randrw", "rw", "readwrite"):  # a mix of one direction names it as such
        what = md.pattern(("rand" if r.rw == "randrw" else "") +
                          ("read" if r.read_pct == 100 else "write"), r.bs)
    jobs = f", {int(r.numjobs)} jobs" if r.numjobs > 1 else ""
    return f"{what}, QD {int(r.iodepth)}{jobs}, {r.engine}"


def shared_shapes(frames: dict[str, pd.DataFrame]) -> list[Shape]:
    """The shapes measured by two sections or more, each with at least two repetitions in every
    point, one state each (a case split by regime is no one number), in section order."""
    rows = []
    for section, table in frames.items():
        part = one_state(table)
        part = part[(part.n >= 2) & (part[METRIC] > 0)].copy()
        if part.empty:
            continue
        part["random"] = part.rw.str.startswith("rand")
        part["section"] = section
        rows.append(part)
    if not rows:
        return []
    every = pd.concat(rows, ignore_index=True)
    found = []
    for _, group in every.groupby(KEY, sort=False):
        if group.section.nunique() < 2:
            continue
        points = [Point(r.section, r.case, r.iops_mean, r.iops_ci95, int(r.n), r)
                  for r in group.itertuples()]
        means = [p.mean for p in points]
        high = max(points, key=lambda p: p.mean)
        low = min(points, key=lambda p: p.mean)
        found.append((points, 100 * statistics.stdev(means) / statistics.fmean(means),
                      row_change(high.row, low.row, METRIC)))
    tests = adjusted([c for _, _, c in found])
    return [Shape(_label(points[0].row), points, spread, test)
            for (points, spread, _), test in zip(found, tests)]


def shapes_frame(shapes: list[Shape]) -> pd.DataFrame:
    """tables/shapes.csv: a row per shape and section, its IOPS there, the spread between the
    sections and whether the highest and lowest differ beyond their repetitions' own spread. The
    page quotes only the widest spread (largest_spread); each section's table has its own row."""
    rows = [{"shape": s.label, "section": f"§{SECTIONS[p.section].number}", "case": p.case,
             "iops_mean": p.mean, "iops_ci95": p.ci95, "n": p.n, "spread_pct": s.spread_pct,
             "highest_vs_lowest": ("differ" if s.apart.significant else
                                   "within their intervals" if s.apart.tested else "untested"),
             "p_adj": s.apart.p_adj}
            for s in shapes for p in s.points]
    return pd.DataFrame(rows, columns=["shape", "section", "case", "iops_mean", "iops_ci95", "n",
                                       "spread_pct", "highest_vs_lowest", "p_adj"])


def largest_spread(shapes: list[Shape]) -> str:
    """The conclusion's line: the widest spread between sections, or nothing."""
    if not shapes:
        return ""
    s = max(shapes, key=lambda s: s.spread_pct if not math.isnan(s.spread_pct) else -1)
    return (f"Between sections, one shape's mean moved by up to {s.spread_pct:.1f}% (sd; "
            f"{s.label}: {s.sections}; each shape: `{SHAPES_CSV}`): allow that much between runs "
            "in each headline.")
