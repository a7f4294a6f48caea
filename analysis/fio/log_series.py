"""fio's bandwidth, IOPS and latency logs (analysis.fio.log_files) as per-second series.

Values: bandwidth in KiB/s (1024 B/s), turned into MB/s (10^6 B/s, the report's unit); IOPS
as I/Os per second; latency in ns since fio 2.99/3.0 and in µs before (``lat_unit``, see
analysis.fio.log_files.latency_unit), turned into µs.

Two kinds of rows, told apart by the block-size column:

* averaged (``log_avg_msec`` > 0): block size and offset are always 0. fio aligns windows to
  multiples of ``log_avg_msec``; the bw/iops timer writes a row a few ms early or late, and a
  latency row waits for the first completion after its window closed (on a slow device, much
  later). So a row at t closes the window ending at or just after t (up to 5% of a window
  early) or any time before it, and two rows of a direction never close the same window: a
  row whose window is taken closes the next one. A window with no I/O has no row (fio skips a
  direction whose byte count did not move), so a missing second between rows is zero
  bandwidth, not a gap. A latency log's last row may be fio's final flush of a partial window:
  a row written before its window could close, weighted by the time it covers.
* per I/O (no ``log_avg_msec``): one row per completed I/O with its block size. The I/O
  completed at t ms (truncated) and belongs to the second containing t. Bandwidth per second
  is the sum of the block sizes completed in it; IOPS the number of rows; latency the mean.
  (fio 2.x wrote its bw/iops logs without ``log_avg_msec`` as rate samples every
  ``bwavgtime`` with a block size; pass ``mode="averaged"`` for those.)

Per-second value k (k = 1, 2, ...) covers (k-1, k] seconds after the job started, and is the
amount done in that second. bw and IOPS of several jobs (files) are summed per second; latency
is the plain mean of the jobs' per-second means (per-I/O logs are pooled, so their mean is
exact). Directions are kept apart (``read``, ``write``, ``trim``). Missing rows between rows
are seconds without I/O (zero); after a job's last row nothing is known: fio often does not
log the window that closes as the job exits, and the second in which the run ended is partial.
So the last seconds may not be covered by every job (``last_partial``); ``complete()`` cuts
the series to the seconds every job covers in full.

Values written with ``log_max_value=1`` are window maxima; summing those over jobs means
nothing, and nothing in the log says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from analysis.core.stats import rep_stats
from analysis.fio.direction import DIRECTIONS
from analysis.fio.log_files import LATENCY_KINDS, FioLogError, LogRows, read_log

UNITS = {"bw": "MB/s", "iops": "IOPS", "lat": "us", "clat": "us", "slat": "us"}
KIB = 1024
MB = 1_000_000


@dataclass(frozen=True, eq=False)
class PerSecond:
    """A per-second series of one log type, per direction, summed (bw, iops) over jobs."""

    kind: str
    unit: str                      # 'MB/s' | 'IOPS' | 'us'
    seconds: np.ndarray            # float: end of each interval (1, 2, ... for 1 s intervals)
    values: dict                   # {'read'|'write'|'trim': float array}; directions seen only
    samples: dict                  # {direction: int array}: log rows per interval (all jobs)
    mode: str                      # 'averaged' | 'per_io'
    window_ms: int | None          # the log's averaging window (averaged logs)
    interval_ms: int               # 1000: per second
    end_ms: int                    # the last row's time
    n_complete: int                # leading intervals every file covers in full
    files: tuple = field(default_factory=tuple)

    @property
    def last_partial(self) -> bool:
        """True when the last interval(s) are not covered by every job: the run ended inside
        them, or a job's last window went unlogged (fio often does not log the window that
        ends as the job exits), so their sums are short."""
        return self.n_complete < len(self.seconds)

    @property
    def directions(self) -> tuple:
        return tuple(d for d in DIRECTIONS if d in self.values)

    def direction(self, name: str) -> np.ndarray:
        """One direction's series; zeros (bw, iops) or NaN (latency) if it did no I/O."""
        if name not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {name!r}")
        if name in self.values:
            return self.values[name]
        fill = math.nan if self.kind in LATENCY_KINDS else 0.0
        return np.full(len(self.seconds), fill)

    def total(self) -> np.ndarray:
        """Read + write + trim per interval (bw and IOPS only: latencies do not add)."""
        if self.kind in LATENCY_KINDS:
            raise ValueError("latency series do not add over directions; use direction()")
        out = np.zeros(len(self.seconds))
        for arr in self.values.values():
            out = out + arr
        return out

    def complete(self) -> PerSecond:
        """The series cut to the intervals every job covers in full (see last_partial)."""
        if not self.last_partial:
            return self
        n = self.n_complete
        return PerSecond(self.kind, self.unit, self.seconds[:n],
                         {d: v[:n] for d, v in self.values.items()},
                         {d: s[:n] for d, s in self.samples.items()},
                         self.mode, self.window_ms, self.interval_ms,
                         round(self.seconds[n - 1] * 1000) if n else 0, n, self.files)


@dataclass(frozen=True)
class SeriesStats:
    """Spread of a per-second series (e.g. the CV of per-second IOPS)."""

    n: int
    mean: float
    std: float        # sample standard deviation (ddof=1); NaN with fewer than 2 values
    cv: float         # std / mean, a fraction as in analysis.core.stats.rep_stats; NaN if mean is 0
    min: float
    max: float
    p5: float
    p50: float
    p95: float


# --------------------------------------------------------------------------- binning

def _tolerance(ms: int) -> float:
    """How early fio writes a row: its bw/iops timer fires a few ms before the window closes.
    5% of a window (50 ms of a second), at most a quarter."""
    return min(ms / 4, max(5.0, ms * 0.05))


def _window_index(t: np.ndarray, window_ms: int) -> np.ndarray:
    """1-based index of the window each row (sorted times of one direction) closes.

    A row closes the window ending at or just after its time (early by at most _tolerance) or
    any time before it: latency rows are written at the first completion after the window
    closed, so on a slow device they come late. Two rows never close the same window: a row
    whose window is taken closes the next one (fio's final flush of a partial window).
    """
    e = _tolerance(window_ms)
    j = np.maximum(np.floor((t + e) / window_ms), 1).astype(np.int64)
    for i in range(1, len(j)):
        if j[i] <= j[i - 1]:
            j[i] = j[i - 1] + 1
    return j


def _window_of(rows: LogRows, interval_ms: int) -> int:
    """The averaging window (log_avg_msec) of an averaged log, from the rows' times.

    The median step between a direction's rows (from 0, each direction's last row left out:
    it may be fio's final flush) is the window: snapped to the nearest divisor of the interval
    (interval/1, /2, ... /10) within -30%/+45%. Latency rows come late and a late row may be
    followed at once by the next, but the median holds. A median beyond that (more than half
    the windows without I/O, or a window longer than the interval) is taken as the interval
    when 90% of the rows sit on its multiples and the rows are not all (three steps or more)
    1.5 intervals apart or more; otherwise window_ms must be given.
    """
    times, steps = [], []
    for ddir in np.unique(rows.ddir):
        t = np.sort(rows.time_ms[rows.ddir == ddir]).astype(np.float64)
        t = t[:-1] if len(t) >= 2 else t
        times.append(t)
        steps.extend(np.diff(np.concatenate(([0.0], t))).tolist())
    median_step = float(np.median(steps))
    divisors = [interval_ms // q for q in range(1, 11) if interval_ms % q == 0]
    best = min(divisors, key=lambda w: abs(math.log(max(median_step, 1.0) / w)))
    if 0.7 * best <= median_step <= 1.45 * best:
        return best
    if median_step > 1.45 * interval_ms:
        t = np.concatenate(times)
        off = t - np.round(t / interval_ms) * interval_ms
        on_grid = np.mean((off >= -_tolerance(interval_ms)) & (off <= interval_ms / 4))
        spread = len(steps) >= 4 and min(steps[1:]) >= 1.5 * interval_ms
        if on_grid >= 0.9 and not spread:
            return interval_ms
    raise FioLogError(f"{rows.path}: cannot tell the averaging window from the rows' times "
                      f"(median step {median_step:.0f} ms); pass window_ms (log_avg_msec) and an "
                      "interval_ms it divides")


class _Piece(NamedTuple):
    """One log's rows of one direction, binned: each row's interval and what it adds there."""

    log: LogRows
    ddir: int               # fio's data direction: 0 read, 1 write, 2 trim
    interval: np.ndarray    # 1-based index of the interval each row falls in
    value: np.ndarray       # the row's amount, in fio's unit
    weight: np.ndarray      # ms of the interval the row covers (averaged rows), else 1


def _averaged_pieces(rows: LogRows, window_ms: int, interval_ms: int) -> list[_Piece]:
    """The pieces of averaged rows, one per direction.

    Each row closes a window (see _window_index) and weighs the time it covers: a full window,
    or, for fio's final flush of a partial window (a last row written before its window could
    close), the time from the window's start or the row before, whichever is later.
    """
    out = []
    for ddir in np.unique(rows.ddir):
        sel = rows.ddir == ddir
        t = rows.time_ms[sel]
        v = rows.value[sel]
        order = np.argsort(t, kind="stable")
        t, v = t[order], v[order]
        j = _window_index(t, window_ms)
        weight = np.full(len(t), float(window_ms))
        if t[-1] < j[-1] * window_ms - _tolerance(window_ms):   # before its window closed
            start = max(float(t[-2]) if len(t) >= 2 else 0.0, (j[-1] - 1) * window_ms)
            weight[-1] = max(float(t[-1]) - start, 1.0)   # it holds a sample: never 0
        interval = np.ceil(j * window_ms / interval_ms).astype(np.int64)
        out.append(_Piece(rows, int(ddir), interval, v, weight))
    return out


def _per_io_pieces(rows: LogRows, kind: str, interval_ms: int) -> list[_Piece]:
    """The pieces of per-I/O rows, one per direction: bandwidth counts each I/O's block size
    (in KiB, scaled like KiB/s), IOPS each I/O once, latency each I/O's own."""
    interval = (rows.time_ms // interval_ms + 1).astype(np.int64)
    out = []
    for ddir in np.unique(rows.ddir):
        sel = rows.ddir == ddir
        if kind == "bw":
            if not rows.bs[sel].all():
                raise FioLogError(f"{rows.path}: per-I/O bandwidth needs the block-size column")
            value = rows.bs[sel] / KIB
        elif kind == "iops":
            value = np.ones(int(sel.sum()))
        else:
            value = rows.value[sel]
        out.append(_Piece(rows, int(ddir), interval[sel], value, np.ones(int(sel.sum()))))
    return out


def _rows_mode(logs: list[LogRows], mode: str) -> str:
    """'averaged' or 'per_io', the one way every log wrote its rows ('auto': from each log's
    block-size column)."""
    modes = set()
    for lg in logs:
        if mode != "auto":
            modes.add(mode)
            continue
        has_bs = lg.bs > 0
        if has_bs.any() and not has_bs.all():
            i = int(np.argmax(~has_bs))
            raise FioLogError(f"{lg.path}: mixes averaged rows (block size 0, row {i + 1}) and "
                              "per-I/O rows (a block size)")
        modes.add("averaged" if lg.averaged else "per_io")
    if len(modes) != 1:
        raise FioLogError("averaged and per-I/O logs given together: "
                          + ", ".join(lg.path for lg in logs))
    return modes.pop()


def _complete_intervals(logs: list[LogRows], pieces: list[_Piece], n: int,
                        interval_ms: int) -> int:
    """Leading intervals every file covers in full: each covers its intervals up to its last
    row's, that one only if not cut short."""
    tol = _tolerance(interval_ms)
    n_complete = n
    for lg in logs:
        last = max(int(p.interval.max()) for p in pieces if p.log is lg)
        covered = int(lg.time_ms.max()) - (last - 1) * interval_ms
        n_complete = min(n_complete, last if covered >= interval_ms - tol else last - 1)
    return n_complete


def _pooled_latency(pieces: list[_Piece], count: np.ndarray) -> np.ndarray:
    """Per-I/O latency rows of every job pooled: the exact mean per interval (NaN without I/O)."""
    total = np.zeros(len(count))
    for p in pieces:
        np.add.at(total, p.interval, p.value)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _mean_of_job_latencies(logs: list[LogRows], pieces: list[_Piece], n: int) -> np.ndarray:
    """Averaged latency rows: the time-weighted mean within each job, then the plain mean over
    the jobs that have one in the interval (NaN where none does)."""
    job_means = []
    for lg in logs:
        amount = np.zeros(n + 1)
        weight = np.zeros(n + 1)
        for p in pieces:
            if p.log is lg:
                np.add.at(amount, p.interval, p.value * p.weight)
                np.add.at(weight, p.interval, p.weight)
        with np.errstate(invalid="ignore", divide="ignore"):
            job_means.append(np.where(weight > 0, amount / np.maximum(weight, 1e-300), np.nan))
    stack = np.vstack(job_means)
    have = ~np.isnan(stack)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(have.any(axis=0),
                        np.nansum(stack, axis=0) / np.maximum(have.sum(axis=0), 1), np.nan)


def _amount_per_interval(pieces: list[_Piece], n: int, rows_mode: str,
                         interval_ms: int) -> np.ndarray:
    """Bandwidth or IOPS summed over the jobs, per interval: averaged rates times the time
    they cover over the interval, or per-I/O amounts per second."""
    amount = np.zeros(n + 1)
    for p in pieces:
        np.add.at(amount, p.interval, p.value * p.weight)
    if rows_mode == "averaged":
        return amount / interval_ms
    return amount / (interval_ms / 1000)


def per_second(logs: Sequence[LogRows], *, lat_unit: str = "ns", mode: str = "auto",
               window_ms: int | None = None, interval_ms: int = 1000) -> PerSecond:
    """Per-interval (default per-second) series of logs of one kind (one file per job).

    ``lat_unit``: 'ns' (fio >= 3.0) or 'us' (fio 2.x), see ``latency_unit``. ``mode``: 'auto'
    (block size 0 = averaged rows, else per-I/O), 'averaged' or 'per_io'. ``window_ms``: the
    log_avg_msec of averaged logs (inferred from the rows when None); it must divide
    ``interval_ms``.
    """
    logs = list(logs)
    if not logs:
        raise ValueError("no logs given")
    kinds = {lg.kind for lg in logs}
    if len(kinds) != 1:
        raise ValueError(f"logs of several kinds given together: {sorted(kinds)}")
    kind = kinds.pop()
    if lat_unit not in ("ns", "us"):
        raise ValueError(f"lat_unit must be 'ns' or 'us', not {lat_unit!r}")
    if mode not in ("auto", "averaged", "per_io"):
        raise ValueError(f"mode must be 'auto', 'averaged' or 'per_io', not {mode!r}")
    if interval_ms <= 0:
        raise ValueError("interval_ms must be positive")
    rows_mode = _rows_mode(logs, mode)
    latency = kind in LATENCY_KINDS
    scale = _scale(kind, lat_unit)

    pieces: list[_Piece] = []
    windows = set()
    for lg in logs:
        if rows_mode == "per_io":
            pieces += _per_io_pieces(lg, kind, interval_ms)
            continue
        window = window_ms or _window_of(lg, interval_ms)
        if window > interval_ms or interval_ms % window:
            raise FioLogError(f"{lg.path}: averaged over {window} ms, which does not divide the "
                              f"{interval_ms} ms interval; pass window_ms (log_avg_msec) or "
                              "a coarser interval")
        windows.add(window)
        pieces += _averaged_pieces(lg, window, interval_ms)

    end_ms = int(max(int(lg.time_ms.max()) for lg in logs))
    n = max(int(p.interval.max()) for p in pieces)
    n_complete = _complete_intervals(logs, pieces, n, interval_ms)

    values: dict = {}
    samples: dict = {}
    for ddir in sorted({p.ddir for p in pieces}):
        mine = [p for p in pieces if p.ddir == ddir]
        count = np.zeros(n + 1, dtype=np.int64)
        for p in mine:
            np.add.at(count, p.interval, 1)
        if latency and rows_mode == "per_io":
            series = _pooled_latency(mine, count)
        elif latency:
            series = _mean_of_job_latencies(logs, mine, n)
        else:
            series = _amount_per_interval(mine, n, rows_mode, interval_ms)
        values[DIRECTIONS[ddir]] = series[1:] * scale
        samples[DIRECTIONS[ddir]] = count[1:]
    seconds = np.arange(1, n + 1) * (interval_ms / 1000)
    return PerSecond(kind=kind, unit=UNITS[kind], seconds=seconds, values=values,
                     samples=samples, mode=rows_mode,
                     window_ms=(min(windows) if windows else None), interval_ms=interval_ms,
                     end_ms=end_ms, n_complete=n_complete,
                     files=tuple(lg.path for lg in logs))


def _scale(kind: str, lat_unit: str) -> float:
    """From fio's log unit to the series unit (MB/s, IOPS, µs). Per-I/O bw rows are summed as
    bytes, averaged bw rows as KiB/s; both are scaled here (see per_second)."""
    if kind == "bw":
        return KIB / MB
    if kind == "iops":
        return 1.0
    return 1e-3 if lat_unit == "ns" else 1.0


def read_per_second(paths: Iterable[str | Path], kind: str | None = None, **kw) -> PerSecond:
    """``per_second`` of the log files at ``paths`` (one per job); see ``per_second``."""
    logs = [read_log(p, kind) for p in paths]
    if not logs:
        raise ValueError("no log files given")
    return per_second(logs, **kw)


def series_stats(values: Sequence[float] | np.ndarray) -> SeriesStats:
    """Mean, sample std, CV and percentiles of a per-second series (NaN seconds dropped)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        nan = math.nan
        return SeriesStats(0, nan, nan, nan, nan, nan, nan, nan, nan)
    spread = rep_stats(x)  # the same mean, sample std and CV as over repetitions
    mean, std, cv = spread["mean"], spread["std"], spread["cv"]
    p5, p50, p95 = (float(q) for q in np.percentile(x, [5, 50, 95]))
    return SeriesStats(n, mean, std, cv, float(x.min()), float(x.max()), p5, p50, p95)
