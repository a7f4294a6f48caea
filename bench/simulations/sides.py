"""A case's repetitions on one results tree, as fio's json+ would give them, summarised by the
project's own row builder (analysis.rules.cases.summarize_direction): the same table row a
section and `compare` read."""

from __future__ import annotations

import numpy as np

from analysis.core.stats import percentiles_from_bins
from analysis.fio.output import Direction, JobGroup
from analysis.rules.cases import Case, summarize_direction
from bench.simulations import models

BS = 4096


def direction(counts: np.ndarray) -> Direction:
    """One QD=1 repetition: IOPS = 1 / mean latency (one I/O always in flight)."""
    bins = models.as_bins(counts)
    mean = models.mean_ns(counts)
    ios = int(counts.sum())
    iops = 1e9 / mean
    return Direction("read", ios, ios * BS, ios / iops * 1000, iops, iops * BS, mean, 0.0, 0.0,
                     0.0, ios, percentiles_from_bins(bins), "lat", bins)


def group(counts: np.ndarray) -> JobGroup:
    return JobGroup("randread-4k", 0, 1, {"ioengine": "psync"}, "randread", BS, 1, 1, None,
                    "fio-3.33", 0, {"read": direction(counts)})


def row(rep_counts: list[np.ndarray]) -> dict:
    """The summary row of one case's repetitions (bucket counts per repetition)."""
    return summarize_direction(Case("randread-4k", [group(c) for c in rep_counts]), "read")


def levels(rng: np.random.Generator, reps: int, noise: float, offset: float,
           shift: float = 0.0) -> np.ndarray:
    """Each repetition's log latency level: the tree's own offset (shared by its repetitions),
    each repetition's own move, and a change of the drive (`shift`, log of the factor)."""
    return models.MU + shift + rng.normal(0, offset) + rng.normal(0, noise, reps)


def side(rng: np.random.Generator, reps: int, noise: float, offset: float,
         shift: float = 0.0, model: str = "lognormal") -> dict:
    return row([models.rep_histogram(rng, level, model)
                for level in levels(rng, reps, noise, offset, shift)])
