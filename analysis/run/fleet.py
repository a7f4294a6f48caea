"""fio's client/server output: the fleet run's probe of each host, and the split of a run's
output into one ordinary fio JSON document per host.

`python -m analysis fleet probe FILE` reads the output of a tiny read job sent to one host with
`--output-format=json,normal` and prints `VERSION<TAB>ok`, `VERSION<TAB>refused<TAB>reason`,
`VERSION<TAB>failed<TAB>reason` or `<TAB>unreachable<TAB>reason`. VERSION is the server's fio version from the line fio's client
prints when it connects (`hostname=..., fio=fio-3.33, flags=1`; fio gives it only in its normal
output, hence the second format). "refused" is a job that ran without error and without I/O:
fio skips a job whose exec_prerun fails, and the server's check is that prerun.

`python -m analysis fleet split COMBINED LABEL=HOST,PORT=OUT ...` reads the output of one
`fio --client=HOST,PORT job.fio --client=...` run and writes, for each host, the document that
host would have written running its job locally: the same top-level keys ("fio version",
"timestamp", ...) with that host's `client_stats` entries as `jobs` and its `disk_util`. fio's own
"All clients" sum is dropped: a fleet's hosts are compared, never added up.

An OUT that contains `{case}` and `{rep}` splits the host's document once more, by job: the run
loop sends a host several repetitions in one jobfile (a batch: one `stonewall`ed job per repetition,
so fio's client and server start once for all of them), and names each job `CASE@REP`, since a
case may run twice in one batch (in successive rounds). Each job's document goes to OUT with CASE
and REP put in, written in the order the jobs ran (their groupid), with the job named CASE again:
the document a local run of that repetition would have written. The host's `disk_util` covers the
whole batch and goes with each.

A host with no entry in the output (its server stopped, or it never connected) gets no file; the
exit code is 0 when at least one host got a file, 1 when none did (or the output is unusable), 2
for bad arguments. One line per
host on stdout: `LABEL<TAB>ok` or `LABEL<TAB>missing<TAB>reason`.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from analysis.fio.output import FioOutputError, _read_text, split_output

ALL_CLIENTS = "All clients"


@dataclass(frozen=True)
class Host:
    label: str
    hostname: str
    port: int
    out: Path


def parse_host(arg: str) -> Host:
    """'LABEL=HOST,PORT=OUT' -> Host."""
    m = re.fullmatch(r"([^=]+)=(.+),(\d+)=(.+)", arg)
    if not m:
        raise ValueError(f"{arg!r}: expected LABEL=HOST,PORT=OUT")
    return Host(m[1], m[2], int(m[3]), Path(m[4]))


def _belongs(entry: dict, host: Host, port_unique: bool) -> bool:
    if not isinstance(entry, dict) or str(entry.get("port", "")) != str(host.port):
        return False
    return port_unique or str(entry.get("hostname", "")) == host.hostname


def host_document(doc: dict, host: Host, port_unique: bool) -> dict | None:
    """The fio document of one host, or None when the output has nothing from it."""
    jobs = [e for e in doc.get("client_stats") or []
            if e.get("jobname") != ALL_CLIENTS and _belongs(e, host, port_unique)]
    if not jobs:
        return None
    out = {k: v for k, v in doc.items() if k not in ("client_stats", "disk_util", "global options")}
    glob = doc.get("global options")
    if isinstance(glob, list):
        mine = [g for g in glob if _belongs(g, host, port_unique)]
        if mine:
            out["global options"] = {k: v for k, v in mine[0].items() if k not in ("hostname", "port")}
    out["jobs"] = jobs
    disks = [d for d in doc.get("disk_util") or [] if _belongs(d, host, port_unique)]
    if disks:
        out["disk_util"] = disks
    return out


BATCH_JOB = re.compile(r"([^/@]+)@(\d+)")


def job_documents(hdoc: dict) -> list[tuple[str, str, dict]]:
    """A batch host's document split by job, in the order the jobs ran: (CASE, REP, document) for
    every job named CASE@REP, named CASE again. numjobs clones share their job's name and stay
    together; a job named otherwise is no repetition of the batch and is left out."""
    by_name: dict[str, list[dict]] = {}
    for job in sorted(hdoc["jobs"], key=lambda j: int(j.get("groupid") or 0)):
        by_name.setdefault(str(job.get("jobname", "")), []).append(job)
    docs = []
    for name, jobs in by_name.items():
        m = BATCH_JOB.fullmatch(name)
        if m and m[1] not in (".", ".."):
            docs.append((m[1], m[2], dict(hdoc, jobs=[dict(j, jobname=m[1]) for j in jobs])))
    return docs


def write_host(host: Host, hdoc: dict) -> str:
    """Writes a host's document(s); the reply line's tail: "" or the CASE@REP jobs written."""
    if "{case}" not in str(host.out):
        host.out.write_text(json.dumps(hdoc, indent=2) + "\n")
        return ""
    written = []
    for case, rep, jdoc in job_documents(hdoc):
        path = Path(str(host.out).replace("{case}", case).replace("{rep}", rep))
        path.write_text(json.dumps(jdoc, indent=2) + "\n")
        written.append(f"{case}@{rep}")
    return "\t" + " ".join(written)


def disconnect_reason(preamble: str, host: Host) -> str:
    """What fio said about a host that gave no result."""
    for line in preamble.splitlines():
        if ("disconnected" in line or "connect" in line) and (host.hostname in line or str(host.port) in line):
            return f"fio said: {line.strip()[:160]}"
    return "no result from this host in fio's output (its server stopped or never answered)"


def split(text: str, hosts: list[Host]) -> list[tuple[Host, dict | None, str]]:
    preamble, doc = split_output(text)
    if "client_stats" not in doc:
        raise FioOutputError("not fio client/server output (no 'client_stats')")
    ports = [h.port for h in hosts]
    result = []
    for host in hosts:
        hdoc = host_document(doc, host, ports.count(host.port) == 1)
        result.append((host, hdoc, "" if hdoc else disconnect_reason(preamble, host)))
    return result


SERVER_VERSION = re.compile(r"^hostname=.*?, fio=(\S+?),", re.MULTILINE)


def probe(text: str) -> str:
    """One line: the server's fio version and whether a probe job ran there."""
    m = SERVER_VERSION.search(text)
    version = m[1] if m else ""
    if not version:
        # fio writes a failed connection into --output ("fio: failed to connect to HOST:PORT").
        errors = [line for line in text.splitlines() if line.startswith("fio: ")]
        if errors:
            return f"\tunreachable\t{errors[-1][5:]}"
    try:
        _, doc = split_output(text)
    except FioOutputError as exc:
        return f"{version}\tfailed\t{exc}"
    entries = [e for e in doc.get("client_stats") or doc.get("jobs") or []
               if e.get("jobname") != ALL_CLIENTS]
    if not entries:
        return f"{version}\tfailed\tno job result in fio's output"
    job = entries[0]
    if job.get("error"):
        return f"{version}\tfailed\tfio reported error {job['error']}"
    ios = sum(int((job.get(d) or {}).get("total_ios") or 0) for d in ("read", "write", "trim"))
    if ios == 0:
        return f"{version}\trefused\tthe server's check before the job failed"
    return f"{version}\tok"


def main(argv: list[str]) -> int:
    if argv[:1] == ["probe"] and len(argv) == 2:
        try:
            print(probe(_read_text(argv[1])).replace("\n", " "))
        except OSError as exc:
            print(f"\tfailed\tcannot read {argv[1]}: {exc.strerror}")
        return 0
    if argv[:1] != ["split"]:
        print(__doc__, file=sys.stderr)
        return 2
    argv = argv[1:]
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        hosts = [parse_host(a) for a in argv[1:]]
    except ValueError as exc:
        print(f"fleet split: {exc}", file=sys.stderr)
        return 2
    try:
        text = _read_text(argv[0])
        parts = split(text, hosts)
    except (OSError, FioOutputError) as exc:
        # Nothing usable from any host: each is reported missing with the reason.
        reason = str(exc).replace("\t", " ")
        for arg in argv[1:]:
            print(f"{arg.split('=', 1)[0]}\tmissing\t{reason}")
        return 1
    for host, hdoc, reason in parts:
        if hdoc is None:
            print(f"{host.label}\tmissing\t{reason}")
            continue
        print(f"{host.label}\tok{write_host(host, hdoc)}")
    return 0 if any(hdoc for _, hdoc, _ in parts) else 1
