"""`python -m analysis summarize FILE...`: one CSV row per job group and direction.

A quick look at any fio JSON output, ours or someone else's, in the project's
units (MB/s = 10^6 B/s, microseconds). Files that hold no usable result are named
on stderr with the reason and the rest are still summarised; the exit code is 2
when anything was refused or skipped, 0 when everything was read.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterable

from analysis.core.stats import PCT_COLUMNS
from analysis.fio.output import FioOutputError, JobGroup, read_groups

COLUMNS = [
    "file", "jobname", "rw", "bs", "iodepth", "numjobs", "direction",
    "iops", "bw_MBps", "lat_us_mean",
    "lat_p50_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us",
    "pct_source", "fio_version",
]

USAGE = """\
usage: python -m analysis summarize FILE...

Print one CSV row per fio job group and direction: iops, bw_MBps (10^6 B/s),
mean and p50/p95/p99/p99.9 latency in microseconds (total latency where fio
reported it, else completion latency; see pct_source).
Reads fio --output-format=json or json+ from any fio version 2.1.4 to 3.x;
text around the JSON is ignored. A percentile fio did not report is left empty.
Exit status: 0 all files read, 2 a file was refused or a job in it skipped.
"""


def _cell(value) -> str:
    """CSV text of a value: '' for missing, whole numbers without '.0'."""
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        value = round(value, 9)  # drop float noise from unit conversion (ns -> us)
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def group_rows(file: str, groups: Iterable[JobGroup]) -> list[dict]:
    """Rows for one file's job groups, values in the CSV's units."""
    rows = []
    for g in groups:
        for d in g.directions.values():
            row = {
                "file": file, "jobname": g.jobname, "rw": g.rw, "bs": g.bs,
                "iodepth": g.iodepth, "numjobs": g.numjobs, "direction": d.direction,
                "iops": d.iops, "bw_MBps": d.bw_bytes / 1e6, "lat_us_mean": d.lat_mean_ns / 1e3,
                "pct_source": d.pct_source, "fio_version": g.fio_version,
            }
            for pct, column in PCT_COLUMNS.items():
                ns = d.percentiles_ns.get(pct)
                row[column] = None if ns is None else ns / 1e3
            rows.append(row)
    return rows


def _notes(file: str, groups: Iterable[JobGroup]) -> list[str]:
    """Informational notes: merged jobs whose percentiles could not be merged."""
    notes = []
    for g in groups:
        for d in g.directions.values():
            if g.jobs_merged > 1 and d.pct_source and not d.percentiles_ns:
                notes.append(
                    f"summarize: {file}: note: job {g.jobname!r} {d.direction}: {g.jobs_merged} jobs "
                    f"merged without json+ bins, so no percentiles (rerun with --output-format=json+ "
                    f"or group_reporting)"
                )
    return notes


def write_csv(rows: list[dict], out) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in COLUMNS])


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write(USAGE)
        return 2
    if argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    files = argv[1:] if argv[0] == "--" else argv
    unknown = [a for a in argv if a.startswith("-") and a != "--" and argv[0] != "--"]
    if unknown:
        sys.stderr.write(f"summarize: unknown option {unknown[0]!r}\n{USAGE}")
        return 2

    status = 0
    rows: list[dict] = []
    for file in files:
        skipped: list[str] = []
        try:
            groups = read_groups(file, skipped)
        except FioOutputError as exc:
            print(f"summarize: {file}: {exc}", file=sys.stderr)
            status = 2
            continue
        except OSError as exc:
            print(f"summarize: {file}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            status = 2
            continue
        for reason in skipped:
            print(f"summarize: {file}: skipped: {reason}", file=sys.stderr)
            status = 2
        for note in _notes(file, groups):
            print(note, file=sys.stderr)
        rows.extend(group_rows(file, groups))
    write_csv(rows, sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
