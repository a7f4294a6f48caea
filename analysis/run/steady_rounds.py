"""The sustained state's preconditioning rounds, judged by SNIA's rule (analysis.core.steady).

lib/state.bash runs a section's rounds, each one fio run of ``--round`` seconds of the section's
own workload (STEADY_OPTS: its stimulus), in RESULTS/<section>/steady/round<k>.json, with a
per-second log of the tracked variable beside it (round<k>_iops.1.log, _bw or _lat). After every
round the run loop's helper asks this module for the verdict over all rounds so far:

* each round's value is fio's own mean of the tracked variable: IOPS, MB/s, or the mean total
  latency in µs (STEADY_TRACK: iops | bw | lat);
* the rounds' per-second logs, end to end, are searched for lasting cliffs (analysis.core.
  segments): a window is judged only from the first whole round after the last one. A latency is
  searched as its inverse (I/Os per second per I/O in flight), so a lasting rise of latency is a
  cliff too;
* no verdict until the rounds have written ``min_bytes`` (the region once, after the sequential
  fill): a window must end at or after the round that completes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.core.steady import SteadyState, judge
from analysis.core.units import human_size
from analysis.fio.output import FioOutputError, read_groups

TRACKED = {  # STEADY_TRACK -> (what is judged, unit, the per-second log fio writes)
    "iops": ("IOPS", "IOPS", "iops"),
    "bw": ("MB/s", "MB/s", "bw"),
    "lat": ("mean latency", "µs", "lat"),
}


class RoundsError(ValueError):
    """A round's files cannot be read."""


@dataclass(frozen=True)
class Round:
    number: int             # 1-based
    value: float            # the tracked variable, fio's mean over the round
    written: int            # bytes the round wrote
    rates: tuple            # per-second rate-like series for the cliff search (higher = faster)


@dataclass(frozen=True)
class Rounds:
    """Every round so far and the verdict over them."""

    track: str
    rounds: tuple           # Round, in order
    min_bytes: int
    verdict: SteadyState
    cliff_s: float | None   # the last lasting cliff, seconds into the rounds
    gate_round: int         # 1-based round by which the rounds wrote min_bytes (0: not yet)

    @property
    def written(self) -> int:
        return sum(r.written for r in self.rounds)

    @property
    def judged_past_gate(self) -> int:
        """Rounds run since the gate was met, the gate's own included (0 before it)."""
        return len(self.rounds) - self.gate_round + 1 if self.gate_round else 0


def round_paths(folder: Path) -> list[Path]:
    """round<k>.json in round order."""
    found = [p for p in folder.glob("round*.json") if p.stem[5:].isdigit()]
    return sorted(found, key=lambda p: int(p.stem[5:]))


def read_round(path: Path, track: str) -> Round:
    # numpy: only when judged
    from analysis.fio.log_files import FioLogError
    from analysis.fio.log_series import read_per_second

    try:
        (group, *_) = read_groups(path)
    except (FioOutputError, OSError) as e:
        raise RoundsError(f"{path.name}: {e}") from None
    d = group.directions.get("write") or next(iter(group.directions.values()))
    value = {"iops": d.iops, "bw": d.bw_bytes / 1e6, "lat": d.lat_mean_ns / 1000}[track]
    logs = sorted(path.parent.glob(f"{path.stem}_{TRACKED[track][2]}.*log"))
    rates: tuple = ()
    if logs:
        try:
            per = read_per_second(logs).complete()
            x = per.direction("write")
            rates = tuple(1e6 / v if v > 0 else math.nan for v in x) if track == "lat" \
                else tuple(float(v) for v in x)
        except (FioLogError, ValueError):
            rates = ()
    return Round(int(path.stem[5:]), float(value), int(d.io_bytes), rates)


def judge_rounds(folder: str | Path, track: str, min_bytes: int, round_s: float,
                 window: int = 5, range_pct: float = 20.0, slope_pct: float = 10.0) -> Rounds:
    """The verdict over every round in ``folder`` (see the module docstring)."""
    from analysis.core.segments import find_cliffs  # numpy: only when judged

    if track not in TRACKED:
        raise RoundsError(f"unknown tracked variable {track!r}: one of {', '.join(TRACKED)}")
    rounds = tuple(read_round(p, track) for p in round_paths(Path(folder)))
    gate, total = 0, 0
    for r in rounds:
        total += r.written
        if total >= min_bytes:
            gate = r.number
            break
    # the last lasting cliff of the rounds' per-second series, end to end
    cliff_s, first = None, 0
    series = [v for r in rounds for v in r.rates]
    if all(r.rates for r in rounds) and len(series) >= 2 and not any(map(math.isnan, series)):
        cliffs = find_cliffs(series)
        if cliffs:
            cliff_s = cliffs[-1].time_s
            starts, at = [], 0
            for r in rounds:
                starts.append(at)
                at += len(r.rates)
            index = cliffs[-1].index
            first = next((k for k, s in enumerate(starts) if s >= index), len(rounds))
    name, unit, _ = TRACKED[track]
    after = f" after the cliff {cliff_s:g} s into the rounds" if cliff_s is not None else ""
    need = human_size(min_bytes)
    if gate:
        gate_text = f"the rounds wrote {need}, the region once, by round {gate}"
    else:
        gate_text = (f"the rounds have written {human_size(total)} of the {need} (the region "
                     "once) they must write first")
    fmt = (lambda v: f"{v:,.1f} µs {name}") if track == "lat" else (lambda v: f"{v:,.0f} {unit}")
    verdict = judge([r.value for r in rounds], round_s=round_s, window=window,
                    range_pct=range_pct, slope_pct=slope_pct, first=first,
                    min_end=gate or len(rounds) + 1, after=after, gate=gate_text, unit=unit,
                    fmt=fmt)
    return Rounds(track, rounds, int(min_bytes), verdict, cliff_s, gate)


def steady_reply(folder: str, track: str, min_bytes: str, round_s: str, window: str,
                 range_pct: str, slope_pct: str) -> str:
    """The runner service's `steady` request: 'steady<TAB>verdict' when reached, else
    'more<TAB>ROUNDS PAST THE GATE<TAB>why not yet'."""
    try:
        r = judge_rounds(folder, track, int(min_bytes), float(round_s), int(window),
                         float(range_pct), float(slope_pct))
    except (RoundsError, OSError, ValueError) as e:
        return f"bad\t{e}"
    if r.verdict.reached:
        return f"steady\t{r.verdict.message}"
    return f"more\t{r.judged_past_gate}\t{r.verdict.message}"
