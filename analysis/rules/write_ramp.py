"""The regime a write case declares from its ramp (--write-regime after-cliff, lib/ramp.bash).

Under after-cliff each writing case runs as one block: a ramp of its own workload
(``<case>/ramp.json`` and its 1 s write log ``ramp_bw.<n>.log``, never a repetition), then its
repetitions back to back, the blocks one after another in declared order before the reads.
The ramp's per-second write rate (MB/s = 10^6 B/s) is searched for a lasting cliff by the burst
detector's rule (analysis.core.segments.find_cliffs, its defaults: 5 s before the cliff and 10 s
after it at least, so a 20 s ramp sees a cliff in its seconds 5 to 10). The row then says:

* a cliff in its own ramp: "after the write cache filled (the ramp fell from 80 to 8 MB/s at
  0.45 GiB)";
* none, but the block just before it (no idle between: its last repetition ended within
  IDLE_GAP_S of this ramp's start) declared the cliff: the drive was past it already, "after the
  write cache filled (randwrite-4k's ramp, just before, fell from 80 to 8 MB/s at 0.45 GiB; this
  ramp held 8.0 MB/s)";
* none: "no cliff in the ramp's 1.6 GiB at 80 MB/s (any write cache is larger)".

What the repetitions then measured is still judged from their own seconds
(analysis.core.regimes.split_regimes): a ramp that stopped short of the cliff may leave them
straddling it, and a split still blanks the row.

Worked example (a ramp at 80 MB/s for 6 s, then 8 MB/s)::

    >>> import numpy as np
    >>> ramp = ramp_of(np.array([80.0] * 6 + [8.0] * 14), 20, end_s=100.0)
    >>> declared([("write-128k", ramp, None)])["write-128k"]
    'after the write cache filled (the ramp fell from 80 to 8 MB/s at 0.45 GiB)'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.core.regimes import mbps_text
from analysis.core.segments import DEFAULT_CLIFF, Cliff, find_cliffs, written_GiB
from analysis.fio.log_files import FioLogError, find_logs
from analysis.fio.log_series import read_per_second
from analysis.fio.output import finished_s

RAMP_JSON = "ramp.json"
RAMP_PREFIX = "ramp"


def kept_ramp(name: str) -> int | None:
    """k of a ramp kept from a run before a resume (lib/ramp.bash: ramp.<k>.json), else None."""
    k = name[5:-5] if name.startswith("ramp.") and name.endswith(".json") else ""
    return int(k) if k.isdigit() else None


def earlier_ramps(case_dir: Path) -> list[Path]:
    """The case's ramps from runs before a resume, in the order they ran."""
    found = [(kept_ramp(p.name), p) for p in Path(case_dir).glob("ramp.*.json")]
    return [p for k, p in sorted(f for f in found if f[0] is not None)]
# Seconds between two writing runs beyond which the drive had time to drain its cache: the
# toolkit's own steps between back-to-back runs (fio's start and exit, the checks) take about one.
IDLE_GAP_S = 5.0
NOT_RECORDED = "no ramp recorded: its repetitions ran without one"
# how each declared regime begins (analysis.render.claims.write_state shortens them to these)
AFTER_CLIFF = "after the write cache filled"
NO_CLIFF = "no cliff in the ramp's"


@dataclass(frozen=True)
class Ramp:
    """A write case's ramp: its seconds, the cliff in them, when it started and ended."""

    MBps: np.ndarray        # MB/s written each whole second
    seconds: float          # planned (@ramp)
    cliff: Cliff | None     # the first lasting cliff, None when the ramp held its level
    written_GiB: float      # all it wrote (2^30 B)
    level_MBps: float       # median of its seconds after the cliff, or of all of them
    end_s: float            # epoch seconds: ramp.json written (fio ended)

    @property
    def start_s(self) -> float:
        return self.end_s - self.seconds


def ramp_of(rate: np.ndarray, seconds: float, end_s: float) -> Ramp:
    """The ramp of a per-second series (the cliff by the burst detector's rule)."""
    rate = np.asarray(rate, dtype=np.float64)
    cliffs = find_cliffs(rate, **DEFAULT_CLIFF) if rate.size else []
    cliff = cliffs[0] if cliffs else None
    after = rate[cliff.index:] if cliff else rate
    return Ramp(rate, float(seconds), cliff, written_GiB(rate) if rate.size else 0.0,
                float(np.median(after)) if after.size else float("nan"), end_s)


def read_ramp(case_dir: Path, seconds: float) -> Ramp | None:
    """The case's ramp from its JSON and 1 s write log; None where it has none (or a damaged
    log: then nothing is declared from it)."""
    done = Path(case_dir) / RAMP_JSON
    paths = find_logs(case_dir, RAMP_PREFIX, "bw")
    if not done.is_file() or not paths:
        return None
    try:
        rate = read_per_second(paths, "bw").complete().values.get("write")
    except (FioLogError, ValueError):
        return None
    if rate is None:
        return None
    return ramp_of(rate, seconds, finished_s(done))


def _fell(cliff: Cliff) -> str:
    return (f"fell from {mbps_text(cliff.before_MBps)} to {mbps_text(cliff.after_MBps)} MB/s at "
            f"{cliff.written_GiB:.2g} GiB")


def declared(blocks: list[tuple[str, Ramp | None, float | None]]) -> dict[str, str]:
    """{case: the regime its ramp declares}, from the section's write blocks in the order they
    ran: (case, its ramp or None, epoch seconds its last repetition ended or None)."""
    out: dict[str, str] = {}
    before: tuple[str, Cliff, float | None] | None = None  # the last block's cliff, its end
    for name, ramp, last_end in blocks:
        if ramp is None:
            out[name], before = NOT_RECORDED, None
            continue
        follows = (before is not None and before[2] is not None
                   and ramp.start_s - before[2] <= IDLE_GAP_S)
        if ramp.cliff is not None:
            out[name] = f"{AFTER_CLIFF} (the ramp {_fell(ramp.cliff)})"
            before = (name, ramp.cliff, last_end)
        elif follows:
            out[name] = (f"{AFTER_CLIFF} ({before[0]}'s ramp, just before, "
                         f"{_fell(before[1])}; this ramp held {mbps_text(ramp.level_MBps)} MB/s)")
            before = (before[0], before[1], last_end)
        else:
            out[name] = (f"{NO_CLIFF} {ramp.written_GiB:.2g} GiB at "
                         f"{mbps_text(ramp.level_MBps)} MB/s (any write cache is larger)")
            before = None
    return out
