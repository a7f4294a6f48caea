"""Read fio's bandwidth, IOPS and latency logs into per-second series.

fio writes one log per job and type with ``write_bw_log``, ``write_iops_log`` and
``write_lat_log``: ``<prefix>_bw.<n>.log``, ``_iops.<n>.log``, ``_lat.<n>.log``,
``_clat.<n>.log``, ``_slat.<n>.log`` (``<n>`` is the job, 1..numjobs; no ``.<n>`` with
``per_job_logs=0``). A line is (fio's HOWTO, "Log File Formats")::

    time (ms since the job started), value, data direction, block size, [offset,] [priority]

fio 3.33 writes ``"%lu, %ld, %u, %llu, %u"`` (5 columns; 6 with ``log_offset=1``); fio 3.x
before the priority column and fio 2.x write 4 (3 in the oldest). Only the first four are
used here; any further column is accepted and ignored.

Values: bandwidth in KiB/s (1024 B/s), turned into MB/s (10^6 B/s, the report's unit); IOPS
as I/Os per second; latency in ns since fio 2.99/3.0 and in µs before, turned into µs. The
log itself does not say which fio wrote it (fio 3.x before 3.2x and fio 2.x both write four
columns), so the latency unit is an argument: ``latency_unit(fio_version)`` picks it from the
``fio version`` of the JSON written by the same run; ns is the default.

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

Not read: histogram logs (``write_hist_log``, ``_clat_hist.<n>.log``: time, direction, block
size, then hundreds of bins) and compressed logs (``log_store_compressed``, ``.fz``). Values
written with ``log_max_value=1`` are window maxima; summing those over jobs means nothing, and
nothing in the log says so.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.core.stats import rep_stats
from analysis.fio.job_options import fio_release

KINDS = ("bw", "iops", "lat", "clat", "slat")
LATENCY_KINDS = ("lat", "clat", "slat")
DIRECTIONS = ("read", "write", "trim")          # fio's data direction 0, 1, 2
UNITS = {"bw": "MB/s", "iops": "IOPS", "lat": "us", "clat": "us", "slat": "us"}
KIB = 1024
MB = 1_000_000
# A time column above this (ms, ~3 years) is an absolute time: log_unix_epoch=1.
MAX_RELATIVE_MS = 10**11

_NAME = re.compile(r"^(?P<prefix>.*)_(?P<kind>bw|iops|lat|clat|slat)(?:\.(?P<job>\d+))?\.log$")
_HIST_NAME = re.compile(r"_(?:clat_)?hist(?:\.\d+)?\.log(?:\.fz)?$")


class FioLogError(ValueError):
    """A log that cannot be read; str(e) names the file (and line) and what is wrong."""


@dataclass(frozen=True, eq=False)
class LogRows:
    """The rows of one log file, as fio wrote them (no unit conversion)."""

    path: str
    kind: str                 # 'bw' | 'iops' | 'lat' | 'clat' | 'slat'
    columns: int              # columns per line (3..7)
    time_ms: np.ndarray       # int64, ms since the job started
    value: np.ndarray         # float64, fio's unit (KiB/s, IOPS, ns or µs)
    ddir: np.ndarray          # int8: 0 read, 1 write, 2 trim
    bs: np.ndarray            # int64 bytes; 0 in averaged rows (and when there is no column)

    @property
    def averaged(self) -> bool:
        """True for log_avg_msec rows (block size 0), False for per-I/O rows."""
        return not bool(np.any(self.bs))

    def __len__(self) -> int:
        return len(self.time_ms)


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


# --------------------------------------------------------------------------- names

def latency_unit(fio_version: str | None) -> str:
    """'ns' for fio >= 2.99 (fio 3.x logs latency in ns), 'us' for older fio; 'ns' if unknown.

    fio's JSON names its version ("fio version": "fio-3.33"); the logs of the same run do not.
    """
    release = fio_release(fio_version)
    return "ns" if release is None or release >= (2, 99) else "us"


def log_kind(path: str | Path) -> str:
    """The log type from fio's file name: ``x_bw.1.log`` -> 'bw'. Refuses histogram logs."""
    name = Path(path).name
    if _HIST_NAME.search(name):
        raise FioLogError(f"{path}: a latency histogram log (write_hist_log), "
                          "not a bw/iops/lat log; histogram logs are not read here")
    m = _NAME.match(name)
    if not m:
        raise FioLogError(f"{path}: not a fio log name (<prefix>_<bw|iops|lat|clat|slat>"
                          ".<job>.log); give the kind explicitly")
    return m.group("kind")


def find_logs(directory: str | Path, prefix: str, kind: str) -> list[Path]:
    """The logs ``<prefix>_<kind>.<n>.log`` (and ``<prefix>_<kind>.log``) in ``directory``,
    in job order."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    found = []
    for p in Path(directory).iterdir():
        m = _NAME.match(p.name)
        if m and m.group("prefix") == prefix and m.group("kind") == kind and p.is_file():
            found.append((int(m.group("job") or 0), p))
    return [p for _, p in sorted(found)]


# --------------------------------------------------------------------------- parsing

def _columns_error(name: str, lineno: int, line: str, why: str) -> FioLogError:
    shown = line if len(line) <= 70 else line[:67] + "..."
    return FioLogError(f"{name}:{lineno}: {why}: {shown!r}")


def _find_bad_line(text: str, name: str, ncols: int) -> FioLogError:
    """The first line that does not parse, as an error naming it (slow path)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != ncols:
            return _columns_error(name, lineno, line, f"{len(parts)} columns where the first "
                                  f"line has {ncols}")
        for p in parts:
            try:
                float(p)
            except ValueError:
                return _columns_error(name, lineno, line, f"{p!r} is not a number")
    return FioLogError(f"{name}: could not be read as a fio log")


def parse_log_text(text: str, kind: str, name: str = "<log>") -> LogRows:
    """Rows of one fio log given as text (pure). Raises FioLogError naming ``name`` and the
    line when a line is malformed."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if "\0" in text[:4096]:
        raise FioLogError(f"{name}: binary data, not a fio log (a compressed .fz log? "
                          "inflate it with fio --inflate-log)")
    first = next((ln for ln in text.splitlines() if ln.strip()), None)
    if first is None:
        raise FioLogError(f"{name}: empty log (fio logged no I/O)")
    ncols = first.count(",") + 1
    if ncols >= 8:
        raise FioLogError(f"{name}:1: {ncols} columns: a latency histogram log (write_hist_log "
                          "with log_hist_msec), not a bw/iops/lat log; not read here")
    if ncols < 3:
        raise _columns_error(name, 1, first, f"{ncols} column(s); a fio log line is time, "
                             "value, direction[, block size[, offset]][, priority]")
    try:
        arr = np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float64)
    except ValueError:
        raise _find_bad_line(text, name, ncols) from None
    if arr.shape[1] != ncols:  # pragma: no cover - loadtxt already refuses ragged rows
        raise _find_bad_line(text, name, ncols)

    def fail(mask: np.ndarray, why: str) -> FioLogError:
        """The error for the first row in ``mask``, naming its line (blank lines counted)."""
        i = int(np.argmax(mask))
        numbered = [(no, ln) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
        lineno, line = numbered[i]
        return _columns_error(name, lineno, line, why)

    t, v, d = arr[:, 0], arr[:, 1], arr[:, 2]
    bs = arr[:, 3] if ncols >= 4 else np.zeros(len(arr))
    for col, label in ((t, "time"), (v, "value"), (bs, "block size")):
        bad = ~np.isfinite(col) | (col < 0)
        if bad.any():
            raise fail(bad, f"negative or non-finite {label}")
    for col, label in ((t, "time"), (d, "data direction"), (bs, "block size")):
        bad = col != np.floor(col)
        if bad.any():
            raise fail(bad, f"{label} is not an integer")
    bad = ~np.isin(d, (0, 1, 2))
    if bad.any():
        raise fail(bad, "data direction must be 0 (read), 1 (write) or 2 (trim)")
    if t.max() > MAX_RELATIVE_MS:
        raise fail(t > MAX_RELATIVE_MS, "time is absolute (log_unix_epoch?), expected ms since "
                   "the job started")
    return LogRows(path=name, kind=kind, columns=ncols, time_ms=t.astype(np.int64), value=v,
                   ddir=d.astype(np.int8), bs=bs.astype(np.int64))


def read_log(path: str | Path, kind: str | None = None) -> LogRows:
    """Rows of the fio log file at ``path``; the kind comes from its name unless given."""
    path = Path(path)
    if path.suffix == ".fz":
        raise FioLogError(f"{path}: a compressed log (log_store_compressed); inflate it with "
                          "fio --inflate-log first")
    if kind is None:
        kind = log_kind(path)
    elif _HIST_NAME.search(path.name):
        log_kind(path)  # raises the histogram refusal
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FioLogError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_log_text(raw.decode("utf-8", errors="replace"), kind, str(path))


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
    for dd in np.unique(rows.ddir):
        t = np.sort(rows.time_ms[rows.ddir == dd]).astype(np.float64)
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


def _averaged_bins(rows: LogRows, window_ms: int, interval_ms: int) -> list:
    """[(direction, interval index (1-based), value, weight ms)] of averaged rows.

    Each row closes a window (see _window_index) and weighs the time it covers: a full window,
    or, for fio's final flush of a partial window (a last row written before its window could
    close), the time from the window's start or the row before, whichever is later.
    """
    out = []
    for dd in np.unique(rows.ddir):
        sel = rows.ddir == dd
        t = rows.time_ms[sel]
        v = rows.value[sel]
        order = np.argsort(t, kind="stable")
        t, v = t[order], v[order]
        j = _window_index(t, window_ms)
        weight = np.full(len(t), float(window_ms))
        if t[-1] < j[-1] * window_ms - _tolerance(window_ms):   # before its window closed
            start = max(float(t[-2]) if len(t) >= 2 else 0.0, (j[-1] - 1) * window_ms)
            weight[-1] = max(float(t[-1]) - start, 1.0)   # it holds a sample: never 0
        k = np.ceil(j * window_ms / interval_ms).astype(np.int64)
        out.append((int(dd), k, v, weight))
    return out


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
    the_mode = modes.pop()
    latency = kind in LATENCY_KINDS
    scale = _scale(kind, lat_unit)

    # (direction, interval index, value, weight) pieces from every file
    pieces: list = []
    windows = set()
    if the_mode == "averaged":
        for lg in logs:
            w = window_ms or _window_of(lg, interval_ms)
            if w > interval_ms or interval_ms % w:
                raise FioLogError(f"{lg.path}: averaged over {w} ms, which does not divide the "
                                  f"{interval_ms} ms interval; pass window_ms (log_avg_msec) or "
                                  "a coarser interval")
            windows.add(w)
            for dd, k, v, wt in _averaged_bins(lg, w, interval_ms):
                pieces.append((lg, dd, k, v, wt))
    else:
        for lg in logs:
            k = (lg.time_ms // interval_ms + 1).astype(np.int64)
            for dd in np.unique(lg.ddir):
                sel = lg.ddir == dd
                if kind == "bw":
                    if not lg.bs[sel].all():
                        raise FioLogError(f"{lg.path}: per-I/O bandwidth needs the block-size "
                                          "column")
                    val = lg.bs[sel] / KIB                 # KiB, scaled like KiB/s
                elif kind == "iops":
                    val = np.ones(int(sel.sum()))
                else:
                    val = lg.value[sel]
                pieces.append((lg, int(dd), k[sel], val, np.ones(int(sel.sum()))))

    end_ms = int(max(int(lg.time_ms.max()) for lg in logs))
    n = max(int(p[2].max()) for p in pieces)
    # each file covers its intervals up to its last row's, that one only if not cut short
    tol = _tolerance(interval_ms)
    n_complete = n
    for lg in logs:
        last_k = max(int(p[2].max()) for p in pieces if p[0] is lg)
        covered = int(lg.time_ms.max()) - (last_k - 1) * interval_ms
        n_complete = min(n_complete, last_k if covered >= interval_ms - tol else last_k - 1)

    values: dict = {}
    samples: dict = {}
    for dd in sorted({p[1] for p in pieces}):
        name = DIRECTIONS[dd]
        count = np.zeros(n + 1, dtype=np.int64)
        if latency and the_mode == "per_io":
            # pool every job's I/Os: the per-second mean is exact
            total = np.zeros(n + 1)
            for _lg, d2, k, v, _wt in pieces:
                if d2 == dd:
                    np.add.at(total, k, v)
                    np.add.at(count, k, 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                series = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        elif latency:
            # time-weighted mean within a job, then the plain mean over jobs
            job_means = []
            for lg in logs:
                amount = np.zeros(n + 1)
                weight = np.zeros(n + 1)
                for lg2, d2, k, v, wt in pieces:
                    if lg2 is lg and d2 == dd:
                        np.add.at(amount, k, v * wt)
                        np.add.at(weight, k, wt)
                        np.add.at(count, k, 1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    job_means.append(np.where(weight > 0, amount / np.maximum(weight, 1e-300),
                                              np.nan))
            stack = np.vstack(job_means)
            have = ~np.isnan(stack)
            with np.errstate(invalid="ignore", divide="ignore"):
                series = np.where(have.any(axis=0),
                                  np.nansum(stack, axis=0) / np.maximum(have.sum(axis=0), 1),
                                  np.nan)
        else:
            amount = np.zeros(n + 1)
            for _lg, d2, k, v, wt in pieces:
                if d2 == dd:
                    np.add.at(amount, k, v * wt)
                    np.add.at(count, k, 1)
            if the_mode == "averaged":
                series = amount / interval_ms              # rate x covered time / interval
            else:
                series = amount / (interval_ms / 1000)     # per-I/O amounts per second
        values[name] = series[1:] * scale
        samples[name] = count[1:]
    seconds = np.arange(1, n + 1) * (interval_ms / 1000)
    return PerSecond(kind=kind, unit=UNITS[kind], seconds=seconds, values=values,
                     samples=samples, mode=the_mode,
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
