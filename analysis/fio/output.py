"""Read fio's JSON output (fio 2.1.4 to 3.41, json and json+) into JobGroup records.

Everything above this module speaks one set of units: bytes, bytes/s, ns. This is
the only place that knows how fio's JSON changed over the years:

* fio 2.x: latency objects are ``slat``/``clat``/``lat`` in microseconds; since
  fio 2.99/3.0 they are ``slat_ns``/``clat_ns``/``lat_ns`` in nanoseconds. The
  unit is decided by which key is present, not by the version string.
* fio 2.x: ``io_bytes`` is in KiB (fio 2.18: 66705 IOs x 4 KiB = 266820). fio
  3.x prints ``io_bytes`` in bytes plus ``io_kbytes``. See ``_io_bytes``.
* fio 2.1.4 has no ``total_ios`` (recovered, see ``_estimate_total_ios``), an
  integer ``iops`` and no job options at all.
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
* fio writes warnings, errors and "fio: terminating on signal 2" to the same
  stream, before and after the JSON; a failed job still gets a JSON entry with
  ``"error": 22`` and zero stats.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from analysis.core.stats import merge_bins, percentiles_from_bins, plat_idx_to_val

DIRECTIONS = ("read", "write", "trim")
RERUN_HINT = "rerun with --output-format=json+"


class FioOutputError(Exception):
    """A file holds no usable fio result; str(e) is a one-line reason."""


@dataclass(frozen=True)
class Direction:
    """One I/O direction of one job group, in bytes, bytes/s and ns."""

    direction: str          # 'read' | 'write' | 'trim' ('mixed' with unified_rw_reporting=mixed)
    total_ios: int
    io_bytes: int           # bytes (fio 2.x KiB converted, see _io_bytes)
    runtime_ms: float
    iops: float             # as fio printed it (sum over merged jobs)
    bw_bytes: float         # bytes per second
    lat_mean_ns: float      # total latency (submission + completion): lat_ns, or 2.x lat in usec
    lat_stddev_ns: float
    lat_min_ns: float
    lat_max_ns: float
    lat_samples: int        # N, or total_ios where fio prints no N
    percentiles_ns: dict    # {99.9: ns} of pct_source's latency; {} if none or not mergeable
    pct_source: str         # 'lat' | 'clat' | '' (no percentiles printed)
    bins: dict | None       # json+ {ns: count} of pct_source's latency; None without json+


@dataclass(frozen=True)
class JobGroup:
    """A fio job (its numjobs clones merged) as the report sees it."""

    jobname: str
    groupid: int
    jobs_merged: int        # jobs[] entries aggregated here (1 with group_reporting)
    options: dict           # 'global options' overlaid by the first job's 'job options'
    rw: str                 # '' if unknown (fio 2.1.4)
    bs: int | str           # bytes for a single size, else the raw option text; '' if unknown
    iodepth: int | None
    numjobs: int | None     # the option; the number of processes fio ran
    rwmixread: int | None   # None unless rw is mixed (or the option is set)
    fio_version: str
    error: int              # always 0: groups with an error are skipped (see parse_groups)
    directions: dict        # {'read': Direction, ...}, only directions that did I/O
    # fio's usr_cpu and sys_cpu: % of one CPU per job process (the mean over merged entries)
    usr_cpu_pct: float = math.nan
    sys_cpu_pct: float = math.nan


# --------------------------------------------------------------------------- text -> JSON

def load_document(path) -> dict:
    """The fio JSON document in ``path``; text around it is ignored."""
    return split_output(_read_text(path))[1]


def _read_text(path) -> str:
    """The file as text. PowerShell's ``fio ... > out.json`` writes UTF-16 with a
    byte-order mark, so BOMs are honoured; anything else is read as UTF-8."""
    raw = Path(path).read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16", errors="replace")
    if b"\0" in raw[:4096]:
        raise FioOutputError("binary file, not fio JSON output")
    return raw.decode("utf-8-sig", errors="replace")


def split_output(text: str) -> tuple[str, dict]:
    """(text that came before the JSON, the JSON document) of fio's output.

    fio's document starts with '{' in the first column, so only those are tried:
    an indented '{' is a nested object, and decoding one after a damaged
    document would report it as "not fio output" instead of as damage. With
    --status-interval fio prints one document per interval; the last one is the
    final result, so the last document with jobs wins.
    """
    decoder = json.JSONDecoder()
    docs: list[tuple[int, dict]] = []
    damage: str | None = None
    pos = 0
    for match in re.finditer(r"^\{", text, flags=re.MULTILINE):
        start = match.start()
        if start < pos:
            continue  # inside a document already decoded
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if damage is None:
                damage = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        pos = end
        if isinstance(doc, dict):
            docs.append((start, doc))
    results = [(s, d) for s, d in docs if "jobs" in d or "client_stats" in d]
    if results:
        start, doc = results[-1]
        if not (doc.get("jobs") or doc.get("client_stats")):
            raise FioOutputError(f"fio output with an empty 'jobs' list (no job ran){_fio_said(text[:start])}")
        return text[:start], doc
    if docs:
        keys = ", ".join(repr(k) for k in list(docs[-1][1])[:4])
        raise FioOutputError(f"JSON without a 'jobs' list, not fio output (top-level keys: {keys})")
    if damage is not None:
        raise FioOutputError(f"truncated or malformed JSON ({damage}); {RERUN_HINT}")
    raise FioOutputError(describe_non_json(text))


def describe_non_json(text: str) -> str:
    """Why a text with no JSON in it is not usable, naming what it looks like."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "empty file"
    if any(re.search(r"\(g(roupid)?=\d+|^Run status group \d", ln) for ln in lines):
        return f"fio normal text output, not JSON; {RERUN_HINT}"
    if re.match(r"^(terse_version_\d|[2-5];fio-)", lines[0]) or any(
        re.match(r"^[2-5];fio-", ln) for ln in lines[:5]
    ):
        return f"fio terse output (semicolon-separated), not JSON; {RERUN_HINT}"
    head = lines[:20]
    if all(re.fullmatch(r"-?\d+(\.\d+)?(\s*,\s*-?\d+(\.\d+)?){2,}", ln) for ln in head):
        return ("fio log file (time, value, direction, ... columns from write_*_log or "
                "write_hist_log), not JSON output")
    if any(re.fullmatch(r"\[[^\]]+\]", ln) for ln in head) and any("=" in ln for ln in head):
        return "fio job file, not fio output; run it with fio --output-format=json+"
    first = lines[0] if len(lines[0]) <= 80 else lines[0][:77] + "..."
    return f"no JSON object in file (it starts with: {first!r})"


# --------------------------------------------------------------------------- options

def _int_option(value) -> int | None:
    """Leading integer of an option value: '01' -> 1, '32,' -> 32 (a real sample)."""
    if value is None:
        return None
    m = re.match(r"\s*(\d+)", str(value))
    return int(m.group(1)) if m else None


_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(value: str, kb_base: int = 1024) -> int | None:
    """fio's size syntax: '4k' -> 4096, '1m' -> 1048576, '512' -> 512.

    fio's default kb_base=1024 is a compatibility mode: K/KB mean 1024 while
    KiB means 1000 (fio parse.c get_mult_bytes; checked with fio 3.33: bs=4KiB
    issues 4000-byte I/Os). kb_base=1000 swaps them. None when not one size.
    """
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(i?)(b?)\s*", str(value), flags=re.IGNORECASE)
    if not m:
        return None
    number, prefix, iec, _ = m.groups()
    power = _POWERS[prefix.lower()]
    if iec and not prefix:
        return None
    if iec:
        mult = 1024 if kb_base == 1000 else 1000
    else:
        mult = kb_base
    return int(number) * mult**power


_BS_KEYS = ("bs", "blocksize")
_OTHER_BS_KEYS = ("bsrange", "blocksize_range", "bssplit")
_MIXED_RW = ("rw", "readwrite", "randrw", "trimwrite", "randtrimwrite")


def _job_parameters(options: dict, has_options: bool) -> dict:
    """rw, bs, iodepth, numjobs, rwmixread from the effective options.

    fio lists only options that were set, so where the JSON has options at all
    an absent one is fio's documented default (rw=read, bs=4096, iodepth=1,
    numjobs=1, rwmixread=50 for mixed rw). fio 2.1.4 prints no options: every
    parameter is unknown ('' or None) there.
    """
    if not has_options:
        return {"rw": "", "bs": "", "iodepth": None, "numjobs": None, "rwmixread": None}
    kb_base = _int_option(options.get("kb_base")) or 1024
    rw = options.get("rw") or options.get("readwrite") or "read"
    bs_raw = next((options[k] for k in _BS_KEYS if k in options), None)
    if bs_raw is None:
        bs_raw = next((options[k] for k in _OTHER_BS_KEYS if k in options), None)
        bs: int | str = 4096 if bs_raw is None else str(bs_raw)
    else:
        size = parse_size(bs_raw, kb_base)
        bs = size if size is not None else str(bs_raw)
    rwmixread = _int_option(options.get("rwmixread"))
    if rwmixread is None and options.get("rwmixwrite") is not None:
        mixwrite = _int_option(options.get("rwmixwrite"))
        rwmixread = None if mixwrite is None else 100 - mixwrite
    if rwmixread is None and rw.split(":")[0] in _MIXED_RW:
        rwmixread = 50
    iodepth = _int_option(options["iodepth"]) if "iodepth" in options else 1
    numjobs = _int_option(options["numjobs"]) if "numjobs" in options else 1
    return {"rw": rw, "bs": bs, "iodepth": iodepth, "numjobs": numjobs, "rwmixread": rwmixread}


# --------------------------------------------------------------------------- one direction

def _num(value, default=0.0) -> float:
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
    raw = int(_num(d.get("io_bytes")))
    if "io_kbytes" in d:
        return raw
    kib_expected = _num(d.get("bw")) * _num(d.get("runtime")) / 1000.0
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
        p = _num(key, default=math.nan)
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
    runtime_ms = _num(d.get("runtime"))
    iops = _num(d.get("iops"))
    io_bytes = _io_bytes(d, fio_major)
    if "total_ios" in d:
        total_ios = int(_num(d["total_ios"]))
    else:
        total_ios = _estimate_total_ios(iops, runtime_ms, io_bytes) if io_bytes else 0
    if "bw_bytes" in d:
        bw_bytes = _num(d["bw_bytes"])
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
        lat_mean_ns=_num(lat.get("mean")) * lat_unit,
        lat_stddev_ns=_num(lat.get("stddev")) * lat_unit,
        lat_min_ns=_num(lat.get("min")) * lat_unit,
        lat_max_ns=_num(lat.get("max")) * lat_unit,
        lat_samples=int(samples) if samples is not None else total_ios,
        percentiles_ns=_parse_percentiles(pct_obj, pct_unit),
        pct_source=source,
        bins=_parse_bins(pct_obj, pct_unit),
    )


# --------------------------------------------------------------------------- merging

def merge_directions(parts: list[Direction]) -> Direction:
    """Aggregate one direction of several jobs, as group_reporting does.

    Counts, bytes, IOPS and bandwidth add up (jobs run concurrently); runtime is
    the longest. fio's group_reporting derives IOPS as sum(total_ios)/max(runtime)
    instead, which differs from the sum of rates only by the runtime skew
    between jobs (0.003% in the 8-job sample). Mean and standard deviation are
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
    return Direction(
        direction=parts[0].direction,
        total_ios=sum(p.total_ios for p in parts),
        io_bytes=sum(p.io_bytes for p in parts),
        runtime_ms=max(p.runtime_ms for p in parts),
        iops=math.fsum(p.iops for p in parts),
        bw_bytes=math.fsum(p.bw_bytes for p in parts),
        lat_mean_ns=mean,
        lat_stddev_ns=stddev,
        lat_min_ns=min(p.lat_min_ns for p in parts),
        lat_max_ns=max(p.lat_max_ns for p in parts),
        lat_samples=n_total,
        percentiles_ns=pcts,
        pct_source=parts[0].pct_source,
        bins=bins,
    )


# --------------------------------------------------------------------------- document -> groups

def fio_release(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a "fio version" string ("fio-3.33" -> (3, 33)); None if it has none."""
    m = re.search(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _fio_major(version: str) -> int | None:
    release = fio_release(version)
    return release[0] if release else None


# fio's time suffixes (parse.c): a bare number is in seconds for runtime and ramp_time.
_TIME_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0,
               "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def time_option_s(value) -> float | None:
    """A fio time option as the JSON's job options hold it ("300", "5m", "1500ms"), in seconds;
    None when it is absent or not a time."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value or "").lower())
    if not m or m.group(2) not in ("", *_TIME_UNITS):
        return None
    return float(m.group(1)) * _TIME_UNITS.get(m.group(2), 1.0)


def _job_directions(job: dict, fio_major: int | None) -> dict[str, Direction]:
    """Directions of one jobs[] entry that did I/O.

    With unified_rw_reporting=mixed fio prints a single 'mixed' object; with
    'both' it prints read/write and 'mixed' too, where 'mixed' would count the
    same I/Os twice, so 'mixed' is used only when nothing else did I/O.
    """
    dirs = {}
    for name in DIRECTIONS:
        if isinstance(job.get(name), dict):
            d = parse_direction(name, job[name], fio_major)
            if d.total_ios > 0:
                dirs[name] = d
    if not dirs and isinstance(job.get("mixed"), dict):
        d = parse_direction("mixed", job["mixed"], fio_major)
        if d.total_ios > 0:
            dirs["mixed"] = d
    return dirs


def _error_text(code: int) -> str:
    text = os.strerror(code) if 0 < code < 200 else ""
    return f"error {code} ({text})" if text and not text.startswith("Unknown") else f"error {code}"


def parse_groups(doc: dict, preamble: str = "") -> tuple[list[JobGroup], list[str]]:
    """(usable job groups, one-line reasons for the groups that were skipped).

    jobs[] entries are grouped by (groupid, jobname): fio gives the numjobs
    clones of a job the same name and groupid, and without group_reporting they
    come as separate entries that are merged here. Different jobs that merely
    share a groupid (no stonewall) stay separate, since merging a reader and a
    writer into one row would mislabel both. fio client/server output has
    ``client_stats`` instead of ``jobs``; its per-job entries from every host
    are merged the same way and fio's own "All clients" sum is dropped.

    A group is skipped when any of its jobs reports an error, or when it did no
    I/O at all; the caller decides whether a partly usable file is acceptable.
    """
    version = str(doc.get("fio version", ""))
    major = _fio_major(version)
    entries = doc.get("jobs")
    if entries is None:
        entries = [e for e in doc.get("client_stats") or [] if e.get("jobname") != "All clients"]
    if not isinstance(entries, list):
        raise FioOutputError("'jobs' is not a list, not fio output")
    global_opts = {k: str(v) for k, v in (doc.get("global options") or {}).items()}

    buckets: dict[tuple, list[dict]] = {}
    for job in entries:
        if isinstance(job, dict):
            buckets.setdefault((job.get("groupid", 0), str(job.get("jobname", ""))), []).append(job)

    said = _fio_said(preamble)
    groups, skipped = [], []
    for (groupid, jobname), jobs in buckets.items():
        error = next((int(_num(j.get("error"))) for j in jobs if _num(j.get("error"))), 0)
        if error:
            skipped.append(f"fio reported {_error_text(error)} for job {jobname!r}{said}")
            continue
        per_job = [_job_directions(j, major) for j in jobs]
        names = [n for n in (*DIRECTIONS, "mixed") if any(n in d for d in per_job)]
        if not names:
            skipped.append(f"job {jobname!r} did no I/O (total_ios is 0){said}")
            continue
        directions = {n: merge_directions([d[n] for d in per_job if n in d]) for n in names}
        has_options = "job options" in jobs[0] or "global options" in doc
        options = {**global_opts, **{k: str(v) for k, v in (jobs[0].get("job options") or {}).items()}}
        groups.append(JobGroup(
            jobname=jobname,
            groupid=int(_num(groupid)),
            jobs_merged=len(jobs),
            options=options,
            fio_version=version,
            error=0,
            directions=directions,
            usr_cpu_pct=_mean_of(jobs, "usr_cpu"),
            sys_cpu_pct=_mean_of(jobs, "sys_cpu"),
            **_job_parameters(options, has_options),
        ))
    return groups, skipped


def _mean_of(jobs: list[dict], key: str) -> float:
    values = [_num(j[key]) for j in jobs if key in j]
    return sum(values) / len(values) if values else math.nan


def _fio_said(preamble: str) -> str:
    """The first message fio printed before the JSON, to quote in an error."""
    for line in preamble.splitlines():
        line = line.strip()
        if line.startswith("fio:") or "error" in line.lower() or "err=" in line:
            return f" (fio said: {line[:120]!r})"
    return ""


def read_groups(path, skipped: list | None = None) -> list[JobGroup]:
    """Job groups of one fio output file.

    Raises FioOutputError when the file has no usable JSON, or when every group
    failed or did no I/O. When only some groups are unusable, the others are
    returned and the reasons for the rest are appended to ``skipped`` (if given),
    so a caller can report them without losing the good rows.
    """
    preamble, doc = split_output(_read_text(path))
    groups, reasons = parse_groups(doc, preamble)
    if not groups:
        if not reasons:
            raise FioOutputError("fio output without usable job entries")
        more = f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
        raise FioOutputError("; ".join(reasons[:3]) + more)
    if skipped is not None:
        skipped.extend(reasons)
    return groups
