"""A SNIA PTS test's rounds, judged after each as they run (lib/pts.bash asks the run loop's
helper: `pts-steady`).

lib/pts.bash runs each round of a test as one fio run, RESULTS/<section>/pts/<test>/round<k>.json,
with one stonewalled job per case, named by the case (lib/pts.tsv), in the order PTS runs them.
One fio start per round, not one per case: the round's fixed cost stays a small share of its
time (bench/pts-overhead). After each round:

* a test that stops when steady (``steady``) is judged on its tracking cases' values, all of them
  together over the same 5 rounds (analysis.core.steady.judge_together): steady, or on to
  ``max_rounds`` rounds, after which it stops and says it was not reached;
* the write saturation test (``written:K``) runs until its rounds have written K x its active
  range, or for PTS's 24 hours' worth of rounds at most.

A case's value in a round: IOPS and MB/s of all its directions together (a mix's reads and
writes), its mean latency over all its I/Os, in µs.

>>> r = CaseRound(iops=1000.0, mbps=4.096, lat_us=32.0, written=0, ios=60000)
>>> case_value(r, "iops"), case_value(r, "bw")
(1000.0, 4.096)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.core.pts import PtsTest
from analysis.core.pts import test as pts_test
from analysis.core.steady import SteadyTogether, judge_together
from analysis.fio.output import FioOutputError, read_groups
from analysis.run.steady_rounds import round_paths

UNITS = {"iops": "IOPS", "bw": "MB/s", "lat": "µs"}
WSAT_LIMIT_S = 24 * 3600  # PTS: WSAT ends at 4x the capacity written or after 24 hours


class PtsRoundsError(ValueError):
    """A round's file cannot be read, or lacks a case."""


@dataclass(frozen=True)
class CaseRound:
    iops: float
    mbps: float
    lat_us: float            # mean over all the case's I/Os
    written: int             # bytes written
    ios: int


def case_value(r: CaseRound, track: str) -> float:
    return {"iops": r.iops, "bw": r.mbps, "lat": r.lat_us}[track]


def read_round(path: Path) -> dict[str, CaseRound]:
    """case name -> its numbers in one round (a group per stonewalled job)."""
    try:
        groups = read_groups(path)
    except (FioOutputError, OSError) as e:
        raise PtsRoundsError(f"{path.name}: {e}") from None
    out = {}
    for g in groups:
        ds = list(g.directions.values())
        ios = sum(d.total_ios for d in ds)
        lat = sum(d.lat_mean_ns * d.total_ios for d in ds) / ios / 1000 if ios else math.nan
        written = g.directions["write"].io_bytes if "write" in g.directions else 0
        out[g.jobname] = CaseRound(sum(d.iops for d in ds), sum(d.bw_bytes for d in ds) / 1e6,
                                   lat, int(written), int(ios))
    return out


def read_rounds(folder: Path) -> list[dict[str, CaseRound]]:
    return [read_round(p) for p in round_paths(Path(folder))]


def tracks_of(test: PtsTest, rounds: list[dict[str, CaseRound]]) -> dict[str, list[float]]:
    """Each tracking case's value per round (its label, e.g. '4 KiB 0/100 IOPS', as the name)."""
    out = {}
    for c in test.tracking:
        if any(c.name not in r for r in rounds):
            raise PtsRoundsError(f"a round of {test.name} lacks its tracking case {c.name}")
        out[f"{c.label} {UNITS[c.track]}"] = [case_value(r[c.name], c.track) for r in rounds]
    return out


def judge_rounds(test: PtsTest, rounds: list[dict[str, CaseRound]], round_s: float,
                 window: int = 5, range_pct: float = 20.0,
                 slope_pct: float = 10.0) -> SteadyTogether:
    units = {f"{c.label} {UNITS[c.track]}": UNITS[c.track] for c in test.tracking}
    return judge_together(tracks_of(test, rounds), round_s=round_s, window=window,
                          range_pct=range_pct, slope_pct=slope_pct, units=units)


def verdict(folder: str | Path, test_name: str, round_s: float, max_rounds: int,
            active_bytes: int) -> tuple[str, str]:
    """('steady' | 'stop' | 'more', one sentence) after the rounds in ``folder``."""
    test = pts_test(test_name)
    rounds = read_rounds(Path(folder))
    if test.written_times:
        written = sum(c.written for r in rounds for c in r.values())
        need = test.written_times * active_bytes
        limit = math.ceil(WSAT_LIMIT_S / round_s)
        said = (f"{len(rounds)} rounds wrote {written / 2**30:.2f} GiB of the "
                f"{need / 2**30:.2f} GiB ({test.written_times} x the active range)")
        if written >= need:
            return "stop", f"{said}: done"
        if len(rounds) >= limit:
            return "stop", f"{said}: stopped at PTS's 24 hours ({limit} rounds)"
        return "more", said
    together = judge_rounds(test, rounds, round_s)
    if together.reached:
        return "steady", together.message
    if len(rounds) >= max_rounds:
        return "stop", f"NOT reached in {max_rounds} rounds: {together.message}"
    return "more", together.message


def pts_reply(folder: str, test_name: str, round_s: str, max_rounds: str, active_bytes: str) -> str:
    """The runner service's `pts-steady` request: 'steady|stop|more<TAB>why'."""
    try:
        state, why = verdict(folder, test_name, float(round_s), int(max_rounds), int(active_bytes))
    except (PtsRoundsError, OSError, ValueError, KeyError) as e:
        return f"bad\t{e}"
    return f"{state}\t{why}"
