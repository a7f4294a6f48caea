"""Trends of the run history: each device's headlines over its runs, and their step changes.

**Series.** A device is its serial (or, for a target without one, such as a file, its host and
target path). Each headline of a run (analysis.sections.facts: QD=1 latency of 4 KiB random reads, peak
random IOPS, ...) is a point of the series (device, headline kind, section, what it was measured
on, under which settings), in run order, with the 95% interval over its repetitions as the error
bar (the sample std for a run recorded before the intervals). The
settings are the run's --state and region (manifest keys `state`, `region_bytes`, when recorded)
and the headline's own (a peak from the peak search, or the sweep's jobs): runs that differ in
them measure different things and are never one series, so a change of method is never called a
step of the drive.

**Changes** are tested, with a stated false-alarm rate. Per series two statistics: the CUSUM
max_k |S_k - k/n S_n| / (sigma_LR sqrt(n)) over the splits k with MIN_RUNS runs on each side (S_k:
the sum of the first k runs; sigma_LR the long-run sd from the residuals around the two levels
either side of the best split, with their lag-1 autocorrelation phi), which finds a step
anywhere; and the recent-change statistic, the last 1-4 runs against those before
(analysis.history.calibration.recent_stat), which finds a change too late in the series for the
CUSUM's MIN_RUNS. Their p-value is not the Kolmogorov limit the CUSUM was referred to before: for
8-30 series of 8-52 runs with phi up to 0.8 that limit let up to 68% of an unchanged drive's reports
show a step, because short series are far from the limit and phi estimated from them is low.
analysis.history.calibration simulates the null for the series' own length at every phi its
runs cannot rule out and takes the largest p (one p per series for both statistics).

The p-values of all the series of one device's report are then adjusted together
(Benjamini-Hochberg at ALPHA): a report of a drive that did not change shows any alarm with
probability at most ALPHA, however many headlines it has. An alarmed series shows a recent change
(the last k runs, as a step at run n - k) where that test is the stronger evidence, else its
steps: cut at the best split and each side (at least 2 x MIN_RUNS runs) tested again at the same
cut-off, so a series can show several steps. A change must also be at least MIN_STEP_PCT % of the
level before: smaller level changes are real but not worth a lab's attention.

The rates (bench/statistics, quoted in docs/history.md): an unchanged drive's report shows an
alarm in at most 5% of reports over the grid; the power for a step and a recent drop is stated
there, and tests/test_history.py keeps a seeded subset.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from analysis.core.effects import bh_adjust
from analysis.history import calibration

MIN_RUNS = 3  # runs on each side of a step
MIN_STEP_PCT = 3.0  # smaller level changes are not worth a lab's attention
ALPHA = 0.05  # the share of an unchanged drive's reports allowed to show any step
PHI_MAX = 0.9  # beyond, 52 runs cannot tell a slow drift from a level
PHI_SE_MARGIN = 1.5  # phi is taken 1.5 standard errors above its estimate (scan)

# What a change of a run's setting means, in the order the report names them.
CHANGES = {"firmware": "firmware", "kernel": "kernel", "fio_version": "fio",
           "git_revision": "toolkit", "profile": "profile", "engine": "engine",
           "target": "target", "state": "state", "region_bytes": "region"}
# The run's settings that make a different measurement: a series never spans two of them.
SERIES_SETTINGS = ("state", "region_bytes")


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
    ci95: float | None = None  # the half-width of its 95% interval (runs recorded before: None)

    @property
    def error(self) -> float:
        """The figure's error bar: the 95% half-width, else (an older run) the std."""
        return self.ci95 if self.ci95 is not None else (self.std or 0.0)

    @property
    def date(self) -> datetime:
        return parse_date(self.run["run_date"])


@dataclass
class Step:
    index: int  # the first point of the new level (0-based in the series)
    before: float  # mean of the level before
    after: float  # mean of the level after
    noise: float  # sigma_LR: the long-run sd of a run's value (the runs before, for recent)
    p: float = math.nan  # the test's calibrated p-value (before adjustment)
    recent: int = 0  # k: found by the recent test, the last k runs against those before

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
    settings: str = ""  # the run's and the headline's settings ('' when none were recorded)
    points: list[Point] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    p: float = math.nan  # the calibrated p-value of "no change" (NaN: too short to test)

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass(frozen=True)
class Scan:
    """The step test of each row of a (series x runs) array (rows of equal length)."""
    index: np.ndarray  # the best split: the first run of the new level
    p: np.ndarray  # p-value of "no step"
    sigma_lr: np.ndarray  # long-run sd of a run's value
    phi: np.ndarray  # lag-1 autocorrelation used
    before: np.ndarray
    after: np.ndarray
    stat: np.ndarray  # the statistic: max |S_k - k/n S_n| / (sigma_LR sqrt(n))
    phi_raw: np.ndarray  # lag-1 autocorrelation of the residuals, before its corrections


def scan(x: np.ndarray) -> Scan:
    """The CUSUM statistic (module docstring) of every row of x, vectorised over the rows; `p`
    is its asymptotic (Kolmogorov) p-value, which analysis.history.calibration replaces by one
    simulated for the series' own length and autocorrelation."""
    from scipy.special import kolmogorov

    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    m, n = x.shape
    s = np.cumsum(x - x.mean(axis=1, keepdims=True), axis=1)[:, :-1]  # S_k, k = 1 .. n-1
    ks = np.arange(1, n)
    allowed = (ks >= MIN_RUNS) & (ks <= n - MIN_RUNS)
    c = np.where(allowed, np.abs(s), -1.0)
    best = c.argmax(axis=1)
    k = ks[best]
    cmax = c[np.arange(m), best]
    first = np.arange(n) < k[:, None]
    before = np.where(first, x, 0.0).sum(axis=1) / k
    after = np.where(first, 0.0, x).sum(axis=1) / (n - k)
    r = x - np.where(first, before[:, None], after[:, None])
    ss = (r * r).sum(axis=1)
    sigma = np.sqrt(ss / (n - 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(ss > 0, (r[:, 1:] * r[:, :-1]).sum(axis=1) / ss, 0.0)
    corrected = np.clip(raw + (1 + 3 * raw) / n, 0.0, PHI_MAX)
    # An upper bound rather than the estimate: with n = 52 runs phi's standard error is ~0.12,
    # and the runs where phi is underestimated are those that raise false alarms.
    phi = np.clip(corrected + PHI_SE_MARGIN * np.sqrt((1 - corrected ** 2) / n), 0.0, PHI_MAX)
    sigma_lr = sigma * np.sqrt((1 + phi) / (1 - phi))
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(sigma_lr > 0, cmax / (sigma_lr * math.sqrt(n)), 0.0)
    # No noise at all around two levels: any level change is a step (a flat series is not).
    tiny = 1e-9 * np.maximum(np.abs(x).mean(axis=1), 1e-300) * n
    stat = np.where((sigma_lr <= 0) & (cmax > tiny), np.inf, stat)
    return Scan(k, kolmogorov(stat), sigma_lr, phi, before, after, stat, raw)


def bh_cutoff(pvalues: list[float], alpha: float = ALPHA) -> float:
    """Benjamini-Hochberg: the largest p-value declared significant (-1 when none is)."""
    p = np.asarray([v for v in pvalues if not math.isnan(v)], dtype=np.float64)
    if p.size == 0:
        return -1.0
    significant = bh_adjust(p) <= alpha
    return float(p[significant].max()) if significant.any() else -1.0


def series_pvalues(series_values: list[list[float]]) -> list[tuple[float, float, float, int]]:
    """Each series' calibrated (p, p of the step test, p of the recent test, its k); NaN for a
    series too short to test. Series of one length are judged in one vectorised pass."""
    out = [(math.nan, math.nan, math.nan, 0)] * len(series_values)
    by_length: dict[int, list[int]] = {}
    for i, values in enumerate(series_values):
        if len(values) >= 2 * MIN_RUNS:
            by_length.setdefault(len(values), []).append(i)
    for rows in by_length.values():
        c = calibration.pvalues(np.array([series_values[i] for i in rows]))
        for j, i in enumerate(rows):
            out[i] = (float(c.p[j]), float(c.p_step[j]), float(c.p_recent[j]), int(c.k[j]))
    return out


def first_p(series_values: list[list[float]]) -> list[float]:
    """The p-value of "no change" of each whole series (NaN when too short to test)."""
    return [p for p, *_ in series_pvalues(series_values)]


def find_steps(values: list[float], cutoff: float = ALPHA, offset: int = 0,
               forced: bool = False) -> list[Step]:
    """The steps of one series whose calibrated step test's p is at most `cutoff` (a report's BH
    cut-off), found by cutting at each and testing both sides again; `forced` takes the first
    cut whatever its p (the series' alarm was raised already). [] for a series too short."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 * MIN_RUNS:
        return []
    t = scan(x)
    draws = calibration.DRAWS if forced else calibration.SUB_DRAWS
    k, p = int(t.index[0]), float(calibration.pvalues(x, draws).p_step[0])
    step = Step(offset + k, float(t.before[0]), float(t.after[0]), float(t.sigma_lr[0]), p)
    if not (forced or p <= cutoff):
        return []
    steps = find_steps(values[:k], cutoff, offset) + find_steps(values[k:], cutoff, offset + k)
    if abs(step.pct) >= MIN_STEP_PCT:
        steps.append(step)
    return sorted(steps, key=lambda s: s.index)


def recent_change(values: list[float], k: int, p: float) -> list[Step]:
    """The last k runs' level against the runs before, as a step at run n - k; [] below
    MIN_STEP_PCT."""
    x = np.asarray(values, dtype=np.float64)
    before, last = x[:-k], x[-k:]
    step = Step(x.size - k, float(before.mean()), float(last.mean()),
                float(before.std(ddof=1)), p, recent=k)
    return [step] if abs(step.pct) >= MIN_STEP_PCT else []


def report_steps(series_values: list[list[float]], alpha: float = ALPHA) -> list[list[Step]]:
    """The changes of each series of one device's report, their false alarms controlled
    together (Benjamini-Hochberg over the series' calibrated p-values at `alpha`): a recent
    change where the recent test is the stronger evidence, else the steps found."""
    found = series_pvalues(series_values)
    cutoff = bh_cutoff([p for p, *_ in found], alpha)
    out = []
    for values, (p, p_step, p_recent, k) in zip(series_values, found):
        if not p <= cutoff:
            out.append([])
        elif p_recent < p_step and k:
            out.append(recent_change(values, k, p_recent))
        else:
            out.append(find_steps(values, cutoff, forced=True))
    return out


def judge(series: list[Series], alpha: float = ALPHA) -> None:
    """Set the p-value and the changes of each of one device's series (report_steps)."""
    for s, p, steps in zip(series, first_p([s.values for s in series]),
                           report_steps([s.values for s in series], alpha)):
        s.p, s.steps = p, steps


def run_settings(run: dict) -> list[str]:
    """'state purged', 'region 8 GiB': the run's settings that make a different measurement."""
    out = []
    if run.get("state"):
        out.append(f"state {run['state']}")
    if run.get("region_bytes"):
        out.append(f"region {float(run['region_bytes']) / 2**30:g} GiB")
    return out


def build_series(runs: list[dict], headlines: list[dict]) -> list[Series]:
    """Every (device, headline kind, section, label, settings) series with a number; steps found
    with the false alarms of each device's series controlled together."""
    by_run = {r["run_id"]: r for r in runs}
    found: dict[tuple, Series] = {}
    for h in headlines:
        run = by_run.get(h["run_id"])
        if run is None or h["value"] is None:
            continue
        settings = ", ".join([*run_settings(run), *filter(None, [h.get("settings")])])
        key = (device_key(run), h["kind"], h["section"], h["label"])
        series = found.setdefault((*key, settings), Series(*key, h["unit"] or "", settings))
        series.points.append(Point(run, float(h["value"]), h["std"], h.get("ci95")))
    for series in found.values():
        series.points.sort(key=lambda p: (p.run["run_date"], p.run["run_id"]))
    by_device: dict[str, list[Series]] = {}
    for series in found.values():
        by_device.setdefault(series.device, []).append(series)
    for group in by_device.values():
        judge(group)
    return sorted(found.values(), key=lambda s: (s.device, s.kind, s.section, s.label, s.settings))


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
