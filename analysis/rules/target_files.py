"""Files that hold targets, read into analysis.rules.targets.Target: the toolkit's own YAML, and
the formats two qualification suites already use, mapped onto the toolkit's cases and columns.

The toolkit's file is a YAML list; each entry one target (examples/targets.yaml):

    - name: 4 KiB random read at QD 32          # optional: made from the fields
      section: qd_sweep                         # a section id (lib/sections.tsv)
      case: {rw: randread, bs: 4k, iodepth: 32} # or a case id: randread-4k-qd32
      metric: iops_mean                         # a column of the section's table
      min: 400000                               # or max:
      per_tb: false                             # the threshold per TB of the target's capacity

or an `include` of a suite's file, with where its workloads or jobs are measured here:

    - include: benchmark_targets.json           # Google's ocp-diag-ssd-qual
      section: qd_sweep
      case: {bs: 4k, iodepth: 32}               # added to each workload's ioType (its rw)
    - include: fiosynth_targets.json            # Meta's ocp-diag-autoval-ssd
      jobs:
        HE_Flash_Short_wTRIM_1H22/4K_L2R6DWPD_wTRIM: {section: mix_rw, case: {mix: 70}}

A suite's file may also be given alone (`python -m analysis targets RESULTS FILE.json`): its
targets are then listed as unmapped, each saying what the include must add (a section for
ocp-diag-ssd-qual's workloads, a case for each of autoval's jobs).

- ocp-diag-ssd-qual (pydiags/libs/performance.py): `{"workloads": [{"ioType": "randread",
  "targets": {"lat999thUsec": "7000"}}]}`. Its latencies are fio's completion-latency
  percentiles in µs, upper bounds; `bwMbytesPerSec` a lower bound in MiB/s (it compares
  1024 x the value with fio's KiB/s). Here: lat50thUsec, lat95thUsec, lat99thUsec, lat999thUsec
  -> lat_p50_us ... lat_p99_9_us, latMeanUsec -> lat_us_mean, latMaxUsec -> lat_max_us (each a
  max), bwMbytesPerSec -> bw_MBps_mean (a min, x 1.048576); lat9999thUsec is unmapped (the
  tables stop at p99.9).
- ocp-diag-autoval-ssd (fio_synth_flash_utils.py, its `synth_verify`): `{suite: {job:
  {"P99_Read_Latency_MAX": "<1500", "Read_BW_PER_TB_MIN": ">68000"}}}`, keys `<Metric>[_PER_TB]
  _<MIN|MAX>` over fiosynth's CSV columns (fio's numbers: bandwidth in KiB/s, latency in µs);
  a _PER_TB minimum is multiplied by the capacity in TB rounded down to 2 places and at least 1.
  Here: Read_/Write_IOPS -> iops_mean, Read_/Write_BW -> bw_MBps_mean (x 0.001024),
  Mean_/Max_/P50_/P95_/P99_/P99.9_<Read|Write>_Latency -> lat_us_mean, lat_max_us,
  lat_p50_us ... lat_p99_9_us; Trim, the other percentiles and the latency monitor's counters
  are unmapped.

Both suites judge completion latency, fio's `clat`; the toolkit's columns are total latency
(`lat`: submission and completion), never shorter, so a latency maximum judged here is at least
as strict as the suite's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from analysis.core.registry import read_sections
from analysis.rules.targets import Target

KIB_PER_S_IN_MB_PER_S = 1024 / 1e6
MIB_PER_S_IN_MB_PER_S = 1024 * 1024 / 1e6

QUAL_KEYS = {  # ocp-diag-ssd-qual key -> (column, bound, factor to the column's unit)
    "lat50thUsec": ("lat_p50_us", "max", 1.0),
    "lat95thUsec": ("lat_p95_us", "max", 1.0),
    "lat99thUsec": ("lat_p99_us", "max", 1.0),
    "lat999thUsec": ("lat_p99_9_us", "max", 1.0),
    "latMeanUsec": ("lat_us_mean", "max", 1.0),
    "latMaxUsec": ("lat_max_us", "max", 1.0),
    "bwMbytesPerSec": ("bw_MBps_mean", "min", MIB_PER_S_IN_MB_PER_S),
}
AUTOVAL_METRICS = {  # fiosynth's column, less its direction -> (column, factor)
    "IOPS": ("iops_mean", 1.0),
    "BW": ("bw_MBps_mean", KIB_PER_S_IN_MB_PER_S),
    "Mean_Latency": ("lat_us_mean", 1.0),
    "Max_Latency": ("lat_max_us", 1.0),
    "P50_Latency": ("lat_p50_us", 1.0),
    "P95_Latency": ("lat_p95_us", 1.0),
    "P99_Latency": ("lat_p99_us", 1.0),
    "P99.9_Latency": ("lat_p99_9_us", 1.0),
}
AUTOVAL_KEY = re.compile(r"^(?P<metric>.+?)(?P<per_tb>_PER_TB)?_(?P<bound>MIN|MAX)$")
AUTOVAL_DIRECTIONS = {"Read": "read", "Write": "write"}
OWN_KEYS = {"name", "section", "case", "direction", "metric", "min", "max", "per_tb"}


class TargetFileError(ValueError):
    """A targets file the toolkit cannot read: bad usage (exit 2), with what to fix."""


def read(path: Path) -> list[Target]:
    """Every target of a file, in its order, whatever its format (by content: a YAML list is the
    toolkit's, a JSON object with `workloads` ocp-diag-ssd-qual's, any other object of objects
    autoval's)."""
    path = Path(path)
    return from_data(load(path, str(path)), path)


def load(path: Path, where: str):
    """A file's data: JSON as JSON (the suites indent theirs with tabs, which YAML refuses),
    anything else as YAML."""
    try:
        text = path.read_text()
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as e:
        raise TargetFileError(f"{where}: cannot read it as JSON or YAML ({e})") from e


def from_data(data, path: Path, context: dict | None = None) -> list[Target]:
    context = context or {}
    if isinstance(data, list):
        return own_targets(data, path)
    if isinstance(data, dict) and isinstance(data.get("workloads"), list):
        return qual_targets(data, path, context)
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        return autoval_targets(data, path, context)
    raise TargetFileError(f"{path}: neither a YAML list of targets nor a suite's targets "
                          "(see examples/targets.yaml)")


# --------------------------------------------------------------------------- the toolkit's own

def own_targets(entries: list, path: Path) -> list[Target]:
    sections = read_sections()
    out = []
    for k, entry in enumerate(entries, 1):
        where = f"{path}: entry {k}"
        if not isinstance(entry, dict):
            raise TargetFileError(f"{where}: expected a mapping (section, case, metric, min or max)")
        if "include" in entry:
            out += include(entry, path, where)
            continue
        unknown = set(entry) - OWN_KEYS
        if unknown:
            raise TargetFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; a "
                                  f"target takes {', '.join(sorted(OWN_KEYS))}")
        section = str(entry.get("section", ""))
        if section not in sections:
            raise TargetFileError(f"{where}: section {section!r}: choose one of "
                                  f"{', '.join(sections)}")
        if not entry.get("metric"):
            raise TargetFileError(f"{where}: no metric (a column of the section's table, e.g. "
                                  "iops_mean, bw_MBps_mean, lat_p99_9_us)")
        bounds = [b for b in ("min", "max") if b in entry]
        if len(bounds) != 1:
            raise TargetFileError(f"{where}: give exactly one of min and max")
        try:
            value = float(entry[bounds[0]])
        except (TypeError, ValueError) as e:
            raise TargetFileError(f"{where}: {bounds[0]} {entry[bounds[0]]!r} is not a number") from e
        match = case_match(entry.get("case"), where)
        if "direction" in entry:
            match["direction"] = entry["direction"]
        name = entry.get("name") or default_name(section, match, entry["metric"], bounds[0],
                                                 value, bool(entry.get("per_tb")))
        out.append(Target(str(name), section, str(entry["metric"]), bounds[0], value, match,
                          per_tb=bool(entry.get("per_tb")), origin=where))
    return out


def case_match(case, where: str) -> dict:
    if case is None:
        return {}
    if isinstance(case, str | int):
        return {"case": str(case)}
    if isinstance(case, dict):
        return dict(case)
    raise TargetFileError(f"{where}: case is a case id or a mapping of fields (rw, bs, "
                          "iodepth, numjobs, mix, direction, phase)")


def default_name(section: str, match: dict, metric: str, bound: str, value: float,
                 per_tb: bool) -> str:
    """'qd_sweep randread 4k iodepth 32: iops_mean >= 400000'"""
    fields = " ".join(str(v) if k in ("case", "rw", "bs", "direction", "phase") else f"{k} {v}"
                      for k, v in match.items())
    sign = ">=" if bound == "min" else "<="
    return f"{section} {fields}: {metric} {sign} {value:g}{' per TB' if per_tb else ''}".replace(
        "  ", " ")


def include(entry: dict, path: Path, where: str) -> list[Target]:
    included = (path.parent / str(entry["include"])).resolve()
    data = load(included, f"{where}: include {entry['include']}")
    if isinstance(data, list):
        raise TargetFileError(f"{where}: include names a suite's file (JSON), not a list")
    return from_data(data, included, {k: v for k, v in entry.items() if k != "include"})


# --------------------------------------------------------------------------- ocp-diag-ssd-qual

def qual_targets(data: dict, path: Path, context: dict) -> list[Target]:
    """Google ocp-diag-ssd-qual's benchmark targets: each workload's ioType is the case's rw,
    with the include's section and fields; each of its targets one Target."""
    section = context.get("section")
    extra = case_match(context.get("case"), f"{path}: include")
    out = []
    for k, workload in enumerate(data["workloads"], 1):
        io_type = str(workload.get("ioType", ""))
        label = f"workload {workload.get('workloadNum', k)} ({io_type})"
        match = {"rw": io_type, **extra}
        for key, raw in (workload.get("targets") or {}).items():
            origin = f"{path.name}: {label}: {key}"
            name = f"{label} {key} {raw}"
            mapped = QUAL_KEYS.get(key)
            value = _number(raw)
            if mapped is None or value is None:
                why = (f"{key}: no column of the toolkit's tables holds it" if mapped is None
                       else f"{key}: {raw!r} is not a number")
                out.append(Target(name, section or "", key, "max", value or 0.0, match,
                                  origin=origin, imported=True, unmapped=why))
                continue
            column, bound, factor = mapped
            why = "" if section else "no section given for it (include it with section:)"
            out.append(Target(name, section or "", column, bound, value * factor, match,
                              origin=origin, imported=True, unmapped=why))
    return out


# --------------------------------------------------------------------------- ocp-diag-autoval-ssd

def autoval_targets(data: dict, path: Path, context: dict) -> list[Target]:
    """Meta ocp-diag-autoval-ssd's `<Metric>[_PER_TB]_<MIN|MAX>` targets per suite and job; a
    job is measured here where the include's `jobs` names its section and case."""
    jobs = context.get("jobs") or {}
    out = []
    for suite, suite_jobs in data.items():
        for job, targets in suite_jobs.items():
            if not isinstance(targets, dict):
                continue
            place = jobs.get(f"{suite}/{job}") or jobs.get(job)
            for key, raw in targets.items():
                out.append(autoval_target(suite, job, key, str(raw), place, path))
    return out


def autoval_target(suite: str, job: str, key: str, raw: str, place: dict | None,
                   path: Path) -> Target:
    """One autoval key: `P99_Read_Latency_MAX` "<1500" -> lat_p99_us of the read row, at most
    1500; `Read_BW_PER_TB_MIN` ">68000" -> bw_MBps_mean of the read row, at least 69.632 MB/s
    per TB."""
    name, origin = f"{job} {key} {raw}", f"{path.name}: {suite}/{job}: {key}"
    parsed = AUTOVAL_KEY.match(key)
    value = _number(raw.strip().lstrip("<>"))
    words = parsed["metric"].split("_") if parsed else []
    direction = next((w for w in words if w in ("Read", "Write", "Trim")), "")
    kind = "_".join(w for w in words if w != direction)       # P99_Latency, BW, Max_Latency
    mapped = AUTOVAL_METRICS.get(kind) if direction in AUTOVAL_DIRECTIONS else None
    why = ""
    if parsed is None or value is None:
        why = f"{key}: {raw!r} is not <Metric>[_PER_TB]_<MIN|MAX> with a number"
    elif mapped is None:
        why = f"{parsed['metric']}: no column of the toolkit's tables holds it"
    elif place is None:
        why = f"job {suite}/{job}: no case named for it (jobs: in the targets file)"
    elif "section" not in place:
        why = f"job {suite}/{job}: its jobs: entry names no section"
    column, factor = mapped or (key, 1.0)
    place = place or {}
    match = {**case_match(place.get("case"), origin),
             "direction": AUTOVAL_DIRECTIONS.get(direction, direction.lower())}
    return Target(name, str(place.get("section", "")), column,
                  parsed["bound"].lower() if parsed else "max", (value or 0.0) * factor, match,
                  per_tb=bool(parsed and parsed["per_tb"]), tb_rule="autoval", origin=origin,
                  imported=True, unmapped=why)


def _number(raw) -> float | None:
    try:
        return float(str(raw).strip())
    except ValueError:
        return None

