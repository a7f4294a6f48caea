"""Read fio's bandwidth, IOPS and latency log files: their names and their rows, as fio wrote them.

fio writes one log per job and type with ``write_bw_log``, ``write_iops_log`` and
``write_lat_log``: ``<prefix>_bw.<n>.log``, ``_iops.<n>.log``, ``_lat.<n>.log``,
``_clat.<n>.log``, ``_slat.<n>.log`` (``<n>`` is the job, 1..numjobs; no ``.<n>`` with
``per_job_logs=0``). A line is (fio's HOWTO, "Log File Formats")::

    time (ms since the job started), value, data direction, block size, [offset,] [priority]

fio 3.33 writes ``"%lu, %ld, %u, %llu, %u"`` (5 columns; 6 with ``log_offset=1``); fio 3.x
before the priority column and fio 2.x write 4 (3 in the oldest). Only the first four are
used here; any further column is accepted and ignored.

Values are kept in fio's units: bandwidth in KiB/s (1024 B/s), IOPS as I/Os per second,
latency in ns since fio 2.99/3.0 and in µs before. The log itself does not say which fio wrote
it (fio 3.x before 3.2x and fio 2.x both write four columns), so ``latency_unit(fio_version)``
picks the latency unit from the ``fio version`` of the JSON written by the same run; ns is the
default. analysis.fio.log_series turns the rows into per-second series in the report's units.

Not read: histogram logs (``write_hist_log``, ``_clat_hist.<n>.log``: time, direction, block
size, then hundreds of bins; see analysis.fio.hist_log) and compressed logs
(``log_store_compressed``, ``.fz``).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.fio.job_options import fio_release

KINDS = ("bw", "iops", "lat", "clat", "slat")
LATENCY_KINDS = ("lat", "clat", "slat")
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


def logged(directory: str | Path, prefix: str, kind: str) -> list[Path]:
    """find_logs, or none where every file is empty: fio logged nothing (a run of about a
    second can end before its first 1 s average)."""
    logs = find_logs(directory, prefix, kind)
    return [] if all(p.stat().st_size == 0 for p in logs) else logs


# --------------------------------------------------------------------------- rows

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
