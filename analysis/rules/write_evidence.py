"""What a write repetition's regime rests on: the bytes written before it, and the drive's count.

A write cache fills with the bytes written since it last drained, so each regime row of a
section's regimes table (analysis.rules.cases.frame_of_regimes) carries, for its first
repetition in run order:

* ``written_before_GiB``: what this section wrote before it (its ramps and repetitions, fio's
  own io_bytes and, for a ramp, its 1 s log), in GiB (2^30 B). The state's fill, the prefill
  and earlier sections' writes are not counted: the section's own record is what it reads;
* ``written_since_idle_GiB``: of those, what it wrote since the drive last went IDLE_GAP_S
  without a write from this section (a read case between two writes is such a gap);
* ``drive_written_GiB`` beside ``fio_written_GiB``: the drive's own host-write counter over the
  whole section (its health before and after: NVMe data units written x 512,000 B, or the ATA
  attribute analysis.device.health reads), next to what the section's fio wrote in the same
  span; empty where the drive has no counter (a file, a loop device).

A run's end is when fio wrote its JSON output (its own `timestamp_ms`: a file's mtime moves with
every copy and clone), its start that less its planned seconds.

Worked example (two writing runs back to back, then a read, then a third)::

    >>> runs = [Written("a", 1, 0.0, 4.0, 2**30), Written("a", 2, 4.5, 8.5, 2**30),
    ...         Written("b", 1, 20.0, 24.0, 2**29)]
    >>> before_and_since_idle(runs, runs[2])
    (2.0, 0.0)
    >>> before_and_since_idle(runs, runs[1])
    (1.0, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.device.health import health_delta, health_summary
from analysis.rules.write_ramp import IDLE_GAP_S

GIB = 2**30
EVIDENCE_COLUMNS = ["written_before_GiB", "written_since_idle_GiB", "drive_written_GiB",
                    "fio_written_GiB"]


@dataclass(frozen=True)
class Written:
    """One writing run of the section: a repetition (rep >= 1) or a ramp (rep 0)."""

    case: str
    rep: int
    start_s: float  # epoch seconds
    end_s: float
    bytes: float


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


def drive_written_GiB(results_dir: Path) -> float:
    """The drive's host-write counter over the section (health/before to health/after), in GiB;
    NaN where either snapshot lacks it."""
    before, after = (Path(results_dir) / "health" / w for w in ("before", "after"))
    if not (before.is_dir() and after.is_dir()):
        return math.nan
    moved = health_delta(health_summary(before), health_summary(after)).get("host_written_bytes")
    return math.nan if moved is None else moved / GIB


def evidence(runs: list[Written], first: Written | None, drive_GiB: float) -> dict:
    """The evidence columns of a regime row whose first repetition is `first`."""
    before, since = before_and_since_idle(runs, first) if first else (math.nan, math.nan)
    return {"written_before_GiB": before, "written_since_idle_GiB": since,
            "drive_written_GiB": drive_GiB,
            "fio_written_GiB": sum(r.bytes for r in runs) / GIB if runs else math.nan}
