"""SNIA PTS 2.0's tests as data: lib/pts.tsv read for the analysis (lib/pts.bash reads the same
file to run them).

A PTS test is rounds of access patterns (its cases), each for one round's length, after a purge
and 2x the capacity in 128 KiB sequential writes. A test stops either when its tracking
variables are steady together (SNIA's window, analysis.core.steady.judge_together) or, for the
write saturation test, once it has written a multiple of its active range. The host idle
recovery test (HIR) has no rounds: its wait states, each cycles of writes and idle, run on the
drive the write saturation test left. The two device classes differ in the write cache they ask
for and the share of the LBAs the stimulus uses.

>>> iops = test("iops")
>>> iops.section, len(iops.cases), [c.name for c in iops.tracking]
('mix_rw', 56, ['r100-1024k', 'r65-64k', 'r0-4k'])
>>> [c.name for c in iops.cases_for("reduced")][:3]
['r100-1024k', 'r100-64k', 'r100-4k']
>>> pts_class("client").active_range_pct, pts_class("enterprise").write_cache
(75, 'disabled')
>>> [t.name for t in tests_of("bs_sweep", "client")]
['throughput-1024k']
>>> test("wsat").stop, test("wsat").written_times
('written:4', 4)
>>> test("latency").tracking[0].track, test("latency").outstanding
('lat', 'T1Q1')
>>> hir = test("hir")
>>> hir.after, [w.wait_s for w in hir.waits], hir.waits[0].cycles, hir.waits[0].baseline_s
('wsat', [5, 10, 15, 25, 50], 360, 1800)

Standard library only: the run loop's helper imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.core.registry import LIB, rows

PTS_FILE = LIB / "pts.tsv"
MATRICES = ("full", "reduced")


@dataclass(frozen=True)
class PtsClass:
    name: str               # enterprise | client
    write_cache: str        # what PTS asks of the device's volatile write cache: enabled | disabled
    active_range_pct: int   # share of the LBAs the test stimulus uses
    title: str


@dataclass(frozen=True)
class PtsCase:
    test: str
    name: str               # r65-64k: the read share and the block size
    rw: str                 # fio's rw
    read_pct: int
    bs: str                 # fio's bs (512, 4k, 1024k)
    track: str              # iops | bw | lat for a tracking case, else ''
    reduced: bool           # kept by --pts-matrix reduced

    @property
    def bs_bytes(self) -> int:
        units = {"k": 1024, "m": 1024 ** 2}
        tail = self.bs[-1].lower()
        return int(self.bs[:-1]) * units[tail] if tail in units else int(self.bs)

    @property
    def label(self) -> str:
        """'64 KiB 65/35' as PTS writes a pattern (read/write)."""
        kib = self.bs_bytes / 1024
        return f"{kib:g} KiB {self.read_pct}/{100 - self.read_pct}"


@dataclass(frozen=True)
class WaitState:
    """One wait state of HIR, as PTS gives it (at 60 s rounds: --round scales ``cycles`` and
    ``baseline_s``, lib/pts.bash's pts_hir_scaled, which records what it ran)."""
    wait_s: int             # idle after each write segment
    cycles: int             # write segments, each followed by wait_s idle
    write_s: int            # a write segment
    baseline_s: int         # writes without a pause that bring the drive back to its steady state
    title: str


@dataclass(frozen=True)
class PtsTest:
    name: str
    section: str            # the report section that runs it (lib/sections.tsv)
    classes: tuple[str, ...]
    stop: str               # steady | written:K
    threads: int
    qd: int
    title: str
    cases: tuple[PtsCase, ...]
    waits: tuple[WaitState, ...] = ()

    @property
    def after(self) -> str:
        """The test whose drive a waits:TEST test (HIR) runs on, else ''."""
        return self.stop.split(":", 1)[1] if self.stop.startswith("waits:") else ""

    @property
    def tracking(self) -> tuple[PtsCase, ...]:
        return tuple(c for c in self.cases if c.track)

    @property
    def written_times(self) -> int:
        """K of written:K (WSAT writes K x its active range), 0 for a test that stops when steady."""
        return int(self.stop.split(":")[1]) if self.stop.startswith("written:") else 0

    @property
    def outstanding(self) -> str:
        """PTS's name for the outstanding I/O: T1Q32 (threads, queue depth per thread)."""
        return f"T{self.threads}Q{self.qd}"

    def cases_for(self, matrix: str) -> tuple[PtsCase, ...]:
        """The cases a round runs: all of them, or those --pts-matrix reduced keeps."""
        if matrix not in MATRICES:
            raise ValueError(f"unknown PTS matrix {matrix!r}: one of {', '.join(MATRICES)}")
        return self.cases if matrix == "full" else tuple(c for c in self.cases if c.reduced)


def read_pts(path: Path = PTS_FILE) -> tuple[dict[str, PtsClass], dict[str, PtsTest]]:
    """The classes and the tests (with their cases), in the file's order."""
    classes, tests, cases, waits = {}, {}, {}, {}
    for kind, *f in rows(path, 8):
        if kind == "class":
            classes[f[0]] = PtsClass(f[0], f[1], int(f[2]), f[6])
        elif kind == "test":
            tests[f[0]] = (f[0], f[1], tuple(f[2].split(",")), f[3], int(f[4]), int(f[5]), f[6])
        elif kind == "case":
            cases.setdefault(f[0], []).append(
                PtsCase(f[0], f[1], f[2], int(f[3]), f[4], f[5], f[6] == "yes"))
        elif kind == "wait":
            waits.setdefault(f[0], []).append(
                WaitState(int(f[1]), int(f[2]), int(f[3]), int(f[4]), f[6]))
        else:
            raise ValueError(f"{path}: unknown kind {kind!r} (class, test, case or wait)")
    return classes, {name: PtsTest(*t, cases=tuple(cases.get(name, ())),
                                   waits=tuple(waits.get(name, ())))
                     for name, t in tests.items()}


def test(name: str) -> PtsTest:
    return read_pts()[1][name]


def pts_class(name: str) -> PtsClass:
    return read_pts()[0][name]


def tests_of(section: str, cls: str) -> list[PtsTest]:
    """The tests a section runs for a device class, in the file's order."""
    return [t for t in read_pts()[1].values() if t.section == section and cls in t.classes]
