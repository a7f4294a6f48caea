"""Trends of the run history: each device's headlines over its runs, and their step changes.

**Series.** A device is its serial (or, for a target without one, such as a file, its host and
target path). Each headline of a run (analysis.sections.facts: QD=1 latency of 4 KiB random reads, peak
random IOPS, ...) is a point of the series (device, headline kind, section, what it was measured
on), in run order, with its repetitions' sample std as the error bar.

**Step changes** are found, not eyeballed, with §6's change-point method
(analysis.rules.burst.change_points: the exact least-squares optimal partition of the series into
segments of constant mean, penalty 3 x sigma^2 x ln(n)), on the series of per-run values, each
segment at least MIN_RUNS runs long: a level needs three runs to be a level, one odd run is an
outlier. A boundary is reported as a step when its size (the mean of the segment after against
the mean of the segment before) is at least MIN_STEP_PCT % of the level before and at least
NOISE_FACTOR x the noise, where the noise is the larger of the run-to-run noise (burst.noise_sigma:
MAD of the first differences, which a step does not inflate) and the median spread of the runs'
own repetitions. The method was chosen over a Welch test between sliding windows because it gives
the step's run directly, needs no window length, and tests no series many times over; the
known-answer tests (tests/test_history.py) hold it to a step at run 8 of 15 found at run 8, and to
no step in the same noise without one.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from analysis.rules.burst import change_points, noise_sigma

MIN_RUNS = 3  # runs on each side of a step
MIN_STEP_PCT = 3.0  # smaller level changes are not worth a lab's attention
NOISE_FACTOR = 3.0
PENALTY = 3.0

# What a change of a run's setting means, in the order the report names them.
CHANGES = {"firmware": "firmware", "kernel": "kernel", "fio_version": "fio",
           "git_revision": "toolkit", "profile": "profile", "engine": "engine",
           "target": "target"}


def device_key(run: dict) -> str:
    """The device a run measured: its serial, else host and target (a file has no serial)."""
    return run.get("serial") or f"{run.get('hostname') or '?'}:{run.get('target') or '?'}"


def parse_date(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass
class Point:
    run: dict  # the run's row of the runs table
    value: float
    std: float | None

    @property
    def date(self) -> datetime:
        return parse_date(self.run["run_date"])


@dataclass
class Step:
    index: int  # the first point of the new level (0-based in the series)
    before: float  # mean of the level before
    after: float  # mean of the level after
    noise: float

    @property
    def pct(self) -> float:
        return (self.after / self.before - 1) * 100 if self.before else math.nan


@dataclass
class Series:
    device: str
    kind: str
    section: str
    label: str
    unit: str
    points: list[Point] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


def find_steps(values: list[float], stds: list[float | None] = ()) -> list[Step]:
    """The step changes of a per-run series (see the module docstring); [] for a short one."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 * MIN_RUNS:
        return []
    spreads = [s for s in stds if s is not None and not math.isnan(s)]
    noise = max(noise_sigma(x), statistics.median(spreads) if spreads else 0.0)
    bounds = [0, *change_points(x, MIN_RUNS, PENALTY), x.size]
    steps = []
    for a, b, c in zip(bounds, bounds[1:], bounds[2:]):
        step = Step(b, float(np.mean(x[a:b])), float(np.mean(x[b:c])), noise)
        size = abs(step.after - step.before)
        if size >= NOISE_FACTOR * noise and abs(step.pct) >= MIN_STEP_PCT:
            steps.append(step)
    return steps


def build_series(runs: list[dict], headlines: list[dict]) -> list[Series]:
    """Every (device, headline kind, section, label) series with a number, steps found."""
    by_run = {r["run_id"]: r for r in runs}
    found: dict[tuple, Series] = {}
    for h in headlines:
        run = by_run.get(h["run_id"])
        if run is None or h["value"] is None:
            continue
        key = (device_key(run), h["kind"], h["section"], h["label"])
        series = found.setdefault(key, Series(*key, h["unit"] or ""))
        series.points.append(Point(run, float(h["value"]), h["std"]))
    for series in found.values():
        series.points.sort(key=lambda p: (p.run["run_date"], p.run["run_id"]))
        series.steps = find_steps(series.values, [p.std for p in series.points])
    return sorted(found.values(), key=lambda s: (s.device, s.kind, s.section, s.label))


def setting_changes(runs: list[dict]) -> list[tuple[int, str, str]]:
    """(index of the run, setting, 'old → new') wherever a run's setting differs from the run
    before it (runs of one device, in time order)."""
    out = []
    for i, (prev, run) in enumerate(itertools.pairwise(runs), start=1):
        for key, name in CHANGES.items():
            if prev.get(key) and run.get(key) and prev[key] != run[key]:
                out.append((i, name, f"{prev[key]} → {run[key]}"))
    return out


def around(step_run: dict, device_runs: list[dict], reach: int = 1) -> list[str]:
    """What changed within `reach` runs of the run that started a step: 'firmware 1.0 → 2.0 at
    this run' / '... one run before'."""
    ids = [r["run_id"] for r in device_runs]
    at = ids.index(step_run["run_id"])
    out = []
    for i, name, change in setting_changes(device_runs):
        offset = i - at
        if abs(offset) <= reach:
            when = ("at this run" if offset == 0 else
                    f"{abs(offset)} run{'s' if abs(offset) > 1 else ''} "
                    f"{'before' if offset < 0 else 'after'}")
            out.append(f"{name} {change} {when}")
    return out
