"""Read fio's JSON output (fio 2.1.4 to 3.41, json and json+) into JobGroup records.

Everything above this module speaks one set of units: bytes, bytes/s, ns. How each direction's
numbers changed over fio's versions is analysis.fio.direction's; the job's parameters come from
its options (analysis.fio.job_options). Here, the document and its jobs:

* fio writes warnings, errors and "fio: terminating on signal 2" to the same
  stream, before and after the JSON; a failed job still gets a JSON entry with
  ``"error": 22`` and zero stats.
* fio 2.1.4 prints no job options at all.
* without group_reporting the numjobs clones of a job come as separate entries (merged here);
  fio's client/server output has ``client_stats`` instead of ``jobs``.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from analysis.fio.direction import (
    DIRECTIONS,
    Direction,
    merge_directions,
    parse_direction,
    to_float,
)
from analysis.fio.job_options import fio_release, job_parameters

RERUN_HINT = "rerun with --output-format=json+"


class FioOutputError(Exception):
    """A file holds no usable fio result; str(e) is a one-line reason."""


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


def finished_s(path) -> float:
    """When fio wrote this JSON output, in epoch seconds: its own stamp (stamp_s), because the
    file's mtime moves with every copy and clone and fio's stamp does not; the mtime only for
    output with no stamp at all (fio before 2.2)."""
    stamp = stamp_s(load_document(path))
    return Path(path).stat().st_mtime if stamp is None else stamp


def stamp_s(doc: dict) -> float | None:
    """fio's own end stamp of a JSON document, in epoch seconds: ``timestamp_ms`` for a local
    run; fio's client/server output has only ``timestamp``, to the second."""
    if "timestamp_ms" in doc:
        return doc["timestamp_ms"] / 1000.0
    if "timestamp" in doc:
        return float(doc["timestamp"])
    return None


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


# --------------------------------------------------------------------------- document -> groups

def _fio_major(version: str) -> int | None:
    release = fio_release(version)
    return release[0] if release else None


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
        error = next((int(to_float(j.get("error"))) for j in jobs if to_float(j.get("error"))), 0)
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
            groupid=int(to_float(groupid)),
            jobs_merged=len(jobs),
            options=options,
            fio_version=version,
            error=0,
            directions=directions,
            usr_cpu_pct=_mean_of(jobs, "usr_cpu"),
            sys_cpu_pct=_mean_of(jobs, "sys_cpu"),
            **job_parameters(options, has_options),
        ))
    return groups, skipped


def _mean_of(jobs: list[dict], key: str) -> float:
    values = [to_float(j[key]) for j in jobs if key in j]
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
