"""One I/O direction of one fio job, from fio's JSON (fio 2.1.4 to 3.41, json and json+), in
bytes, bytes/s and ns; and several jobs' directions merged as group_reporting merges them.

This is the only place that knows how a direction's numbers changed over fio's versions:

* fio 2.x: latency objects are ``slat``/``clat``/``lat`` in microseconds; since
  fio 2.99/3.0 they are ``slat_ns``/``clat_ns``/``lat_ns`` in nanoseconds. The
  unit is decided by which key is present, not by the version string.
* fio 2.x: ``io_bytes`` is in KiB (fio 2.18: 66705 IOs x 4 KiB = 266820). fio
  3.x prints ``io_bytes`` in bytes plus ``io_kbytes``. See ``_io_bytes``.
* fio 2.1.4 has no ``total_ios`` (recovered, see ``_estimate_total_ios``) and an
  integer ``iops``.
* fio 2.x, 3.1 and 3.6 have no ``N`` in the latency objects: one sample per I/O,
  so N = total_ios. fio 2.x and 3.1 have no ``bw_bytes``: it is derived with
  fio's own formula, 1000 * io_bytes / runtime.
* percentile keys are strings ("99.900000"); old fio pads the list with "0.00"
  entries, dropped here. ``percentile_list`` may change the keys.
* ``lat_ns`` carries percentiles only with lat_percentiles=1; otherwise only
  completion latency (``clat_ns``) has them. ``pct_source`` says which.
* json+ adds ``bins`` ({latency ns as a string: count}) beside the percentiles.
  Early json+ (fio 2.x) keyed bins by bucket index plus FIO_IO_U_PLAT_* entries;
  those are converted to latency values (no such sample exists to test on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.core.stats import merge_bins, percentiles_from_bins, plat_idx_to_val

DIRECTIONS = ("read", "write", "trim")          # fio's data direction 0, 1, 2


@dataclass(frozen=True)
class Direction:
    """One I/O direction of one job group, in bytes, bytes/s and ns."""

    direction: str          # 'read' | 'write' | 'trim' ('mixed' with unified_rw_reporting=mixed)
    total_ios: int
    io_bytes: int           # bytes (fio 2.x KiB converted, see _io_bytes)
    runtime_ms: float
    iops: float             # as fio printed it (merged: fio's formula on the sums)
    bw_bytes: float         # bytes per second
    lat_mean_ns: float      # total latency (submission + completion): lat_ns, or 2.x lat in usec
    lat_stddev_ns: float
    lat_min_ns: float
    lat_max_ns: float
    lat_samples: int        # N, or total_ios where fio prints no N
    percentiles_ns: dict    # {99.9: ns} of pct_source's latency; {} if none or not mergeable
    pct_source: str         # 'lat' | 'clat' | '' (no percentiles printed)
    bins: dict | None       # json+ {ns: count} of pct_source's latency; None without json+


# --------------------------------------------------------------------------- one direction

def to_float(value, default=0.0) -> float:
    """A JSON value as a float; ``default`` when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _latency_object(d: dict, kind: str) -> tuple[dict | None, float]:
    """(the slat/clat/lat object, its unit in ns): '<kind>_ns' in ns, '<kind>' in usec."""
    if isinstance(d.get(kind + "_ns"), dict):
        return d[kind + "_ns"], 1.0
    if isinstance(d.get(kind), dict):
        return d[kind], 1000.0
    return None, 1.0


def _io_bytes(d: dict, fio_major: int | None) -> int:
    """io_bytes in bytes.

    1. ``io_kbytes`` present (fio >= 2.99): io_bytes is bytes.
    2. Otherwise compare with bw (KiB/s in every version) x runtime: fio 2.x
       io_bytes matches bw*runtime/1000 (KiB), a byte count would be 1024x that.
    3. No bw/runtime to compare with: trust the version (< 3 means KiB).
    """
    raw = int(to_float(d.get("io_bytes")))
    if "io_kbytes" in d:
        return raw
    kib_expected = to_float(d.get("bw")) * to_float(d.get("runtime")) / 1000.0
    if kib_expected > 0 and raw > 0:
        in_kib = abs(math.log(raw / kib_expected)) < abs(math.log(raw / (kib_expected * 1024)))
        return raw * 1024 if in_kib else raw
    return raw * 1024 if fio_major is not None and fio_major < 3 else raw


def _estimate_total_ios(iops: float, runtime_ms: float, io_bytes: int) -> int:
    """total_ios for fio 2.1.4, which prints only an integer (truncated) iops.

    fio's iops = total_ios * 1000 // runtime, so total_ios lies in
    [iops*runtime/1000, (iops+1)*runtime/1000). If exactly one count in that
    range divides io_bytes into a whole number of 512-byte sectors, that is the
    count (it recovers 707 x 512 KiB and 9061 x 4 KiB in the 2.1.4 sample);
    otherwise the rounded lower bound.
    """
    lo = iops * runtime_ms / 1000.0
    hi = (iops + 1) * runtime_ms / 1000.0
    fits = [n for n in range(max(1, math.ceil(lo)), math.ceil(hi))
            if io_bytes % n == 0 and (io_bytes // n) % 512 == 0]
    return fits[0] if len(fits) == 1 else round(lo)


def _parse_percentiles(obj: dict, unit: float) -> dict:
    out = {}
    for key, value in (obj.get("percentile") or {}).items():
        p = to_float(key, default=math.nan)
        if p > 0:  # old fio pads its fixed-size list with "0.00" entries
            out[p] = float(value) * unit
    return dict(sorted(out.items()))


def _parse_bins(obj: dict, unit: float) -> dict | None:
    bins = obj.get("bins")
    if not isinstance(bins, dict):
        return None
    if "FIO_IO_U_PLAT_BITS" in bins:
        # early json+ (fio 2.x): keys are bucket indexes, values in usec.
        bits = int(bins["FIO_IO_U_PLAT_BITS"])
        return merge_bins([{
            int(plat_idx_to_val(int(k), bits) * unit): int(c)
            for k, c in bins.items() if k.isdigit() and int(c)
        }])
    return merge_bins([{int(int(k) * unit): int(c) for k, c in bins.items()}])


def parse_direction(name: str, d: dict, fio_major: int | None = None) -> Direction:
    """One read/write/trim object of one jobs[] entry, in bytes and ns."""
    runtime_ms = to_float(d.get("runtime"))
    iops = to_float(d.get("iops"))
    io_bytes = _io_bytes(d, fio_major)
    if "total_ios" in d:
        total_ios = int(to_float(d["total_ios"]))
    else:
        total_ios = _estimate_total_ios(iops, runtime_ms, io_bytes) if io_bytes else 0
    if "bw_bytes" in d:
        bw_bytes = to_float(d["bw_bytes"])
    else:  # fio's own formula: bw_bytes = 1000 * io_bytes / runtime (then floored)
        bw_bytes = 1000.0 * io_bytes / runtime_ms if runtime_ms else 0.0

    lat, lat_unit = _latency_object(d, "lat")
    lat = lat or {}
    clat, clat_unit = _latency_object(d, "clat")
    if lat.get("percentile"):
        source, pct_obj, pct_unit = "lat", lat, lat_unit
    elif clat and clat.get("percentile"):
        source, pct_obj, pct_unit = "clat", clat, clat_unit
    else:
        source, pct_obj, pct_unit = "", {}, 1.0
    samples = lat.get("N")
    return Direction(
        direction=name,
        total_ios=total_ios,
        io_bytes=io_bytes,
        runtime_ms=runtime_ms,
        iops=iops,
        bw_bytes=bw_bytes,
        lat_mean_ns=to_float(lat.get("mean")) * lat_unit,
        lat_stddev_ns=to_float(lat.get("stddev")) * lat_unit,
        lat_min_ns=to_float(lat.get("min")) * lat_unit,
        lat_max_ns=to_float(lat.get("max")) * lat_unit,
        lat_samples=int(samples) if samples is not None else total_ios,
        percentiles_ns=_parse_percentiles(pct_obj, pct_unit),
        pct_source=source,
        bins=_parse_bins(pct_obj, pct_unit),
    )


# --------------------------------------------------------------------------- merging

def merge_directions(parts: list[Direction]) -> Direction:
    """Aggregate one direction of several jobs, as group_reporting does.

    Counts and bytes add up (jobs run concurrently); runtime is the longest; IOPS
    and bandwidth are fio's own formulas on those sums, as group_reporting and a
    client's "All clients" compute them (stat.c: sum_thread_stats keeps the
    longest runtime; add_ddir_status_json: iops = 1000.0 * total_io_u / runtime,
    bw_bytes = 1000 * io_bytes / runtime in integers). The sum of the jobs'
    rates differs from it by the runtime skew between jobs: 0.003% in the 8-job
    sample, 0.25% for two fio clients of a loaded machine. Mean and standard deviation are
    pooled exactly from each job's N, mean and stddev (fio stat.c __sum_stat).
    Percentiles come from the summed bins when every job has bins; without bins
    they cannot be merged honestly (an average of p99s is not a p99), so they
    are left empty while pct_source still names the latency kind.
    """
    if len(parts) == 1:
        return parts[0]
    n_total = sum(p.lat_samples for p in parts)
    if n_total > 0:
        mean = math.fsum(p.lat_mean_ns * p.lat_samples for p in parts) / n_total
        ss = math.fsum(
            p.lat_stddev_ns**2 * max(p.lat_samples - 1, 0) + p.lat_samples * (p.lat_mean_ns - mean) ** 2
            for p in parts
        )
        stddev = math.sqrt(ss / (n_total - 1)) if n_total > 1 else 0.0
    else:
        mean = stddev = 0.0
    if all(p.bins is not None for p in parts):
        bins = merge_bins(p.bins for p in parts)
        pcts = percentiles_from_bins(bins, parts[0].percentiles_ns.keys())
    else:
        bins, pcts = None, {}
    total_ios, io_bytes = sum(p.total_ios for p in parts), sum(p.io_bytes for p in parts)
    runtime_ms = max(p.runtime_ms for p in parts)
    return Direction(
        direction=parts[0].direction,
        total_ios=total_ios,
        io_bytes=io_bytes,
        runtime_ms=runtime_ms,
        iops=1000.0 * total_ios / runtime_ms if runtime_ms else 0.0,
        bw_bytes=float(1000 * io_bytes // runtime_ms) if runtime_ms else 0.0,
        lat_mean_ns=mean,
        lat_stddev_ns=stddev,
        lat_min_ns=min(p.lat_min_ns for p in parts),
        lat_max_ns=max(p.lat_max_ns for p in parts),
        lat_samples=n_total,
        percentiles_ns=pcts,
        pct_source=parts[0].pct_source,
        bins=bins,
    )
