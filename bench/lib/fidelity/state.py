"""A run of bench/fidelity (Bench): its settings, where it works, its targets (each with the
toolkit's numbers as they come in) and the plain fio samples and failures so far."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib.fidelity.model import ENGINES, QD1_CASES, Config, Sample, Settings
from bench.lib.fidelity.processes import Machine
from bench.lib.fidelity.search import job_counts, peak_grid


@dataclass
class Target:
    key: str  # tmpfs | zram
    path: str  # what fio opens
    region: int  # bytes used by both sides
    desc: str
    toolkit: Path = Path()  # this target's copy of the toolkit
    toolkit_ok: bool = True
    qd1: dict[str, dict[str, float]] = field(default_factory=dict)  # case -> table row
    qd1_config: dict[str, str] = field(default_factory=dict)  # case -> engine etc.
    peak: tuple[float, str] | None = None  # value, text
    uring_options: str = ""  # the toolkit's probed io_uring options (its manifest)
    uring_note: str = ""
    uring_toolkit: float | None = None  # the toolkit's own QD URING_QD IOPS with them
    uring_configs: list[Config] = field(default_factory=list)


@dataclass
class Bench:
    settings: Settings
    target_keys: list[str]
    keep: bool  # keep the temporary directory
    work: Path | None = None  # the temporary directory
    tmpfs_mount: Path | None = None
    zram_sized: bool = False  # /dev/zram0's disksize was 0 and is reset at the end
    targets: list[Target] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    machine: Machine = field(default_factory=Machine)
    runs_done: int = 0  # plain fio runs so far
    t0: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.jobs = job_counts(len(os.sched_getaffinity(0)))
        self.grid = peak_grid(self.settings.peak_depths, self.jobs)

    @property
    def total_runs(self) -> int:
        """Plain fio runs in all: the peak's screening, then per trial §2's cases on every
        engine, the peak's finalists and the three io_uring configurations."""
        per_trial = len(QD1_CASES) * len(ENGINES) + self.settings.finalists + 3
        return len(self.targets) * (len(self.grid) + self.settings.trials * per_trial)

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}m{s % 60:02d}s"
