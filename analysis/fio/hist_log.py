"""fio's latency histogram logs (write_hist_log, log_hist_msec): a percentile per interval.

Each line is `msec, direction, block size, bin0, bin1, ...` with the latency histogram of that
interval only (fio logs the difference since the previous line; the bins of all
lines add up to the job's clat N, less the last partial interval). With log_hist_coarseness=0 (the
default, and what the toolkit writes) there are 1856 bins, the same buckets as json+ `bins`, so a
bucket's latency is stats.plat_idx_to_val(index) and the percentiles are fio's own algorithm.

Which latency the histogram holds depends on the fio that wrote it (`logged_latency`): the log
copies fio's per-direction histogram, which is completion latency (clat) since fio 3.18. Up to
fio 3.17 there was a single histogram per direction, filled with total latency (lat: submission
+ completion) instead when lat_percentiles=1 (stat.c add_lat_sample; init.c then turns
clat_percentiles off), as the toolkit's jobs set it. fio 3.16 is Ubuntu 20.04's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.core.stats import percentiles_from_bins, plat_idx_to_val
from analysis.fio.job_options import fio_release

PLAT_NR = 1856  # FIO_IO_U_PLAT_NR of fio 3.x: 29 groups of 64 buckets
DIRECTIONS = {0: "read", 1: "write", 2: "trim"}


def logged_latency(fio_version: str | None, options: dict) -> str:
    """'lat' (total latency) or 'clat' (completion latency): what the histogram log of a job
    holds, from the fio version and the job's options as its JSON records them."""
    release = fio_release(fio_version)
    lat_percentiles = str(options.get("lat_percentiles", "0")).strip() not in ("0", "")
    return "lat" if lat_percentiles and release is not None and release <= (3, 17) else "clat"


class HistLogError(ValueError):
    """A histogram log the toolkit cannot read, with the file and line."""


@dataclass(frozen=True)
class HistInterval:
    t_ms: int  # end of the interval, ms since the job started
    direction: str
    bins: dict[int, int]  # {latency ns: count}, as json+ bins


def read_hist_log(path: Path) -> list[HistInterval]:
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            fields = [int(f) for f in line.split(",")]
        except ValueError as e:
            raise HistLogError(f"{path}:{number}: not a fio histogram log line ({e})") from None
        counts = fields[3:]
        if len(counts) != PLAT_NR:
            raise HistLogError(
                f"{path}:{number}: {len(counts)} bins, expected {PLAT_NR} (a log written with "
                "log_hist_coarseness > 0, or not a fio 3.x histogram log)")
        bins = {plat_idx_to_val(i): c for i, c in enumerate(counts) if c}
        out.append(HistInterval(fields[0], DIRECTIONS.get(fields[1], str(fields[1])), bins))
    return out


def percentile_series(intervals: list[HistInterval], pct: float = 99.0,
                      direction: str = "write") -> list[tuple[float, float]]:
    """(t in seconds, the pct-th percentile in µs) for each interval that had I/O."""
    series = []
    for iv in intervals:
        if iv.direction != direction or not iv.bins:
            continue
        value = percentiles_from_bins(iv.bins, [pct])[pct]
        series.append((iv.t_ms / 1000, value / 1000))
    return series
