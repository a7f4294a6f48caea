"""§5's peak search: more jobs and more depth until the drive stops giving more.

One job rarely shows a fast drive's peak: on /dev/zram0 one io_uring job topped out at 384 K
4 KiB random reads at QD 128, while two psync jobs did 755 K, and vendors rate NVMe drives at
QD 32 x 4 jobs or so. After the depth sweep, the search climbs from the best configuration
measured so far: it tries twice the jobs (up to the CPUs this host has) and twice the depth (up
to MAX_DEPTH), plus one more synchronous job at QD=1 (where a cheaper engine runs), and moves to
whichever gains at least GAIN_PCT; it stops when no untried neighbour of the best is left.

The run loop asks `python -m analysis peak-next RESULTS_DIR --cpus N` for the next cases after
each round ("name<TAB>fio options" lines; none when the search is over), so a rerun of the same
command takes the same path through the same results and resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.rules.cases import section_frame

GAIN_PCT = 5  # a step must gain at least this much to count as more
MAX_DEPTH = 256  # per job: deeper than any NVMe drive's useful queue
MAX_CASES = 8  # per pattern, a bound on the search's time
PREFIX = "peak-"

# The patterns searched: the report's peak random IOPS and peak sequential MB/s.
PATTERNS = {("randread", 4096): "randread-4k", ("read", 131072): "read-128k"}


@dataclass(frozen=True)
class Config:
    iodepth: int
    numjobs: int
    iops: float
    case: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.iodepth, self.numjobs)


def configs(table: pd.DataFrame, rw: str, bs: int) -> list[Config]:
    """Every measured configuration of one pattern (sweep and search cases alike)."""
    rows = table[(table.rw == rw) & (table.bs == bs) & (table.direction != "total")]
    return [Config(int(r.iodepth), int(r.numjobs), float(r.iops_mean), r.case)
            for r in rows.itertuples()]


def best(found: list[Config]) -> Config:
    """The configuration to climb from: the most IOPS, where one within GAIN_PCT of it with
    fewer I/Os in flight wins (it gives the same for less)."""
    top = max(c.iops for c in found)
    near = [c for c in found if c.iops * (1 + GAIN_PCT / 100) >= top]
    return min(near, key=lambda c: (c.iodepth * c.numjobs, c.numjobs))


def neighbours(c: Config, found: list[Config], cpus: int) -> list[tuple[int, int]]:
    steps = [(c.iodepth, c.numjobs * 2), (c.iodepth * 2, c.numjobs)]
    sync_jobs = max((f.numjobs for f in found if f.iodepth == 1), default=0)
    if sync_jobs:  # the QD=1 line, where a synchronous engine may be cheaper
        steps.append((1, sync_jobs * 2))
    return [(q, j) for q, j in dict.fromkeys(steps) if j <= cpus and q <= MAX_DEPTH]


def case_name(stem: str, iodepth: int, numjobs: int) -> str:
    return f"{PREFIX}{stem}-qd{iodepth}-j{numjobs}"


def next_cases(table: pd.DataFrame, cpus: int) -> list[tuple[str, str]]:
    """(case name, fio options) of the configurations to measure next; [] when done."""
    out = []
    for (rw, bs), stem in PATTERNS.items():
        found = configs(table, rw, bs)
        if not found or sum(c.case.startswith(PREFIX) for c in found) >= MAX_CASES:
            continue
        measured = {c.key for c in found}
        for q, j in neighbours(best(found), found, cpus):
            if (q, j) not in measured:
                opts = f"rw={rw} bs={bs // 1024}k iodepth={q} numjobs={j}"
                out.append((case_name(stem, q, j), opts))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis peak-next",
                                     description="the peak search's next cases")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--cpus", type=int, required=True, help="CPUs the jobs may use")
    args = parser.parse_args(argv)
    table = section_frame(args.results_dir)
    for name, opts in next_cases(table, args.cpus):
        print(f"{name}\t{opts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
