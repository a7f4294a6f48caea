"""What a write repetition's regime rests on: the bytes written before it, and the drive's count.

A write cache fills with the bytes written since it last drained, so each regime row of a
section's regimes table (analysis.rules.cases.frame_of_regimes) carries, for its first
repetition in run order:

* ``written_before_GiB``: what this section wrote before it (its ramps and repetitions, fio's
  own io_bytes), in GiB (2^30 B);
* ``written_since_idle_GiB``: of those, what it wrote since the drive last went IDLE_GAP_S
  without a write from this section (a read case between two writes is such a gap);
* ``written_since_purge_GiB``: what the whole results tree wrote to the target since its state
  was prepared (lib/state.bash: the purge, then the fill): the fill, every other section's
  repetitions, ramps, rounds and preconditioning that ended after the fill (tree_writes), and
  this section's before it. Empty for a tree whose state is as-is: nothing was purged, and
  what was written before the tree is not known;
* ``drive_written_GiB`` beside ``fio_written_GiB``: the drive's own host-write counter over the
  row's repetitions (lib/loop.bash reads NVMe smart-log's data units written, 512,000 B each,
  before and after each writing repetition: rep<k>.drive), next to what fio wrote in them;
  empty where the drive has no NVMe counter (a file, a loop device, a SATA drive). fio leaves
  its ramp_time's I/O out of its counts, which the drive's counter includes: ``fio_ramp_s``
  gives those seconds. The sample's 128 KiB write (docs/sample, §2): fio counted 0.22 GiB in
  three repetitions of 4 s at 20 MB/s, the drive 0.41 GiB between the snapshots; the three 1 s
  ramps at that rate would add 0.06 GiB, so the drive took more than the rate fio measured
  (its cache refilling between repetitions would do it; this record cannot say);
* ``section_drive_written_GiB`` beside ``section_fio_written_GiB``: the same over the whole
  section (its health before and after: NVMe data units, or the ATA attribute
  analysis.device.health reads), next to what the section's fio wrote in the same span.

A run's end is when fio wrote its JSON output (analysis.fio.output.finished_s: fio's own stamp,
as a file's mtime moves with every copy and clone), its start that less its planned seconds.

Worked example (two writing runs back to back, then a read, then a third)::

    >>> runs = [Written("a", 1, 0.0, 4.0, 2**30), Written("a", 2, 4.5, 8.5, 2**30),
    ...         Written("b", 1, 20.0, 24.0, 2**29)]
    >>> before_and_since_idle(runs, runs[2])
    (2.0, 0.0)
    >>> before_and_since_idle(runs, runs[1])
    (1.0, 1.0)

and the tree's: a 4 GiB fill by the state, then 1 GiB by another section, before "b"::

    >>> tree = [TreeWrite("state", "state", -95.0, 4 * 2**30), TreeWrite("qd1", "rep", 19.0, 2**30)]
    >>> since_purge_GiB(tree, runs, runs[2])
    7.0
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from analysis.device.health import health_delta, health_summary, parse_nvme_smart_log
from analysis.fio.output import FioOutputError, load_document, stamp_s
from analysis.rules.write_ramp import IDLE_GAP_S, RAMP_JSON, kept_ramp

GIB = 2**30
EVIDENCE_COLUMNS = ["written_before_GiB", "written_since_idle_GiB", "written_since_purge_GiB",
                    "drive_written_GiB", "fio_written_GiB", "fio_ramp_s",
                    "section_drive_written_GiB",
                    "section_fio_written_GiB"]
DRIVE_SUFFIX = ".drive"  # rep<k>.drive: the drive's counter before and after (lib/loop.bash)


@dataclass(frozen=True)
class Written:
    """One writing run of the section: a repetition (rep >= 1) or a ramp (rep 0)."""

    case: str
    rep: int
    start_s: float  # epoch seconds
    end_s: float
    bytes: float
    drive_bytes: float = math.nan  # the drive's counter over it (rep_drive_bytes)
    ramp_s: float = 0.0            # fio's ramp_time before it: written, not in `bytes`


def before_and_since_idle(runs: list[Written], this: Written) -> tuple[float, float]:
    """(GiB written before `this` started, GiB of those since the last gap of IDLE_GAP_S)."""
    earlier = sorted((r for r in runs if r.end_s <= this.start_s + 1.0 and r is not this),
                     key=lambda r: r.end_s)
    since, edge = 0.0, this.start_s
    for r in reversed(earlier):
        if edge - r.end_s > IDLE_GAP_S:
            break
        since += r.bytes
        edge = r.start_s
    return sum(r.bytes for r in earlier) / GIB, since / GIB


@dataclass(frozen=True)
class TreeWrite:
    """One fio run of the results tree that wrote, as its JSON output has it."""

    section: str    # the folder under the tree: qd1, state, ...
    kind: str       # rep | ramp | round | precondition | state
    end_s: float    # epoch seconds: when fio wrote its output
    bytes: int


@lru_cache(maxsize=4096)
def _fio_written(path: Path, mtime_ns: int) -> tuple[float, int] | None:
    """(end, bytes written) of one fio JSON output, None when it is not one."""
    try:
        doc = load_document(path)
    except (FioOutputError, OSError, ValueError):
        return None
    end = stamp_s(doc)
    if end is None:
        return None
    written = sum(int((j.get("write") or {}).get("io_bytes") or 0) for j in doc.get("jobs") or [])
    return end, written


def fio_written(path: Path) -> tuple[float, int] | None:
    """(end in epoch seconds, bytes written) of one fio JSON output, None when it is not one."""
    path = Path(path)
    return _fio_written(path, path.stat().st_mtime_ns)


def tree_writes(results: Path) -> list[TreeWrite]:
    """Every fio run of the tree that wrote: the sections' repetitions, ramps and rounds, §6's
    preconditioning, the state's own writes. A repetition file that is not rep<k>.json (failed,
    rejected, superseded) did not count."""
    results = Path(results)
    # rounds set aside by a resume (steady.<n>/) wrote too; the state's own files are the
    # state's, whatever their name (its precondition.json is not a section's)
    kinds = {"state": "state/*.json", "rep": "*/*/rep*.json", "ramp": "*/*/ramp*.json",
             "round": "*/steady*/round*.json", "precondition": "*/precondition.json"}
    out, seen = [], set()
    for kind, pattern in kinds.items():
        for path in results.glob(pattern):
            if path in seen:
                continue
            seen.add(path)
            if (kind == "rep" and not path.name[3:-5].isdigit()) or (
                    kind == "ramp" and path.name != RAMP_JSON and kept_ramp(path.name) is None):
                continue
            got = fio_written(path)
            if got and got[1] > 0:
                out.append(TreeWrite(path.relative_to(results).parts[0], kind, *got))
    return out


def since_state(results: Path, section: str, prepared_end_s: float | None) -> list[TreeWrite] | None:
    """The tree's writes that count toward written_since_purge_GiB for `section`: the state's
    own, and everything after the state's fill (prepared_end_s) but this section's repetitions
    and ramps, which its own runs (Written) count: its rounds and preconditioning are here.
    None when the tree's state was not prepared (as-is): nothing to count from."""
    if prepared_end_s is None:
        return None
    return [w for w in tree_writes(results) if w.section == "state"
            or (w.end_s > prepared_end_s
                and not (w.section == section and w.kind in ("rep", "ramp")))]


def since_purge_GiB(tree: list[TreeWrite] | None, runs: list[Written], this: Written) -> float:
    """GiB written since the purge before `this` started: the tree's (since_state) and the
    section's own runs before it."""
    if tree is None:
        return math.nan
    others = sum(w.bytes for w in tree if w.end_s <= this.start_s + 1.0)
    return others / GIB + before_and_since_idle(runs, this)[0]


def drive_written_GiB(results_dir: Path) -> float:
    """The drive's host-write counter over the section (health/before to health/after), in GiB;
    NaN where either snapshot lacks it."""
    before, after = (Path(results_dir) / "health" / w for w in ("before", "after"))
    if not (before.is_dir() and after.is_dir()):
        return math.nan
    moved = health_delta(health_summary(before), health_summary(after)).get("host_written_bytes")
    return math.nan if moved is None else moved / GIB


def rep_drive_bytes(path: Path) -> float:
    """Bytes the drive counted as written between the two lines of a rep<k>.drive file; NaN
    without both, or without the counter."""
    counts = {}
    try:
        for line in Path(path).read_text().splitlines():
            entry = json.loads(line)
            counts[entry["when"]] = parse_nvme_smart_log(entry["doc"]).get("host_written_bytes")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return math.nan
    before, after = counts.get("before"), counts.get("after")
    return math.nan if before is None or after is None else float(after - before)


def evidence(runs: list[Written], first: Written | None, drive_GiB: float,
             tree: list[TreeWrite] | None = None, reps: list[Written] = ()) -> dict:
    """The evidence columns of a regime row whose first repetition is `first` and whose
    repetitions are `reps`; `tree` the tree's writes since its state (since_state), None where
    it was not prepared; `drive_GiB` the drive's counter over the section."""
    before, since = before_and_since_idle(runs, first) if first else (math.nan, math.nan)
    return {"written_before_GiB": before, "written_since_idle_GiB": since,
            "written_since_purge_GiB": since_purge_GiB(tree, runs, first) if first else math.nan,
            # a sum over the row's repetitions, NaN unless the drive counted every one
            "drive_written_GiB": (sum(r.drive_bytes for r in reps) / GIB if reps
                                  else math.nan),
            "fio_written_GiB": sum(r.bytes for r in reps) / GIB if reps else math.nan,
            "fio_ramp_s": sum(r.ramp_s for r in reps) if reps else math.nan,
            "section_drive_written_GiB": drive_GiB,
            "section_fio_written_GiB": sum(r.bytes for r in runs) / GIB if runs else math.nan}
