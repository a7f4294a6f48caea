"""The drive's state before a section measured it: the setup line's state clause, the sustained
state's rounds (SNIA PTS's convergence: a table and a figure with the window marked) and the
anomaly when steady state was not reached.

What a section says the drive went through, from the results tree alone (lib/state.bash):
* the tree's purge and sequential fill, once, before its first section (RESULTS/state/);
* what the other sections of the tree wrote after that fill and before this section began to
  measure (their repetitions, ramps, rounds and preconditioning, by fio's own end stamp:
  analysis.rules.write_evidence.tree_writes);
* its own rounds, judged again here from their files by the rule the run loop used
  (analysis.run.steady_rounds), and the idle time from the last round to the first repetition.
A file target's state is its filesystem's: the clause says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.core.steady import SNIA_ROUND_S
from analysis.core.units import human_size
from analysis.render.plots import Event, Series, Span, timeseries_chart
from analysis.rules.write_evidence import fio_written, since_state
from analysis.run.steady_rounds import TRACKED, Rounds, RoundsError, judge_rounds
from analysis.sections import SECTIONS

STATE_WORDS = {
    "as-is": "state as-is (not controlled)",
    "purged": "state purged",
    "sustained": "state sustained",
}


@dataclass
class StateStory:
    state: str | None               # as-is | purged | sustained; None: not recorded
    kind: str                       # the target's: file | block
    purge: str = ""                 # the tree's purge, in a few words
    prepared: str = ""              # the tree's purge and fill, in a sentence
    prepared_end_s: float | None = None  # when the state's fill ended (epoch seconds)
    earlier: dict = field(default_factory=dict)  # section -> bytes written since the fill
    rounds: Rounds | None = None
    rounds_run: bool = True         # False: the section runs none (§6: its burst is the write)
    idle_s: float | None = None     # from the last round to the first repetition
    reruns: int = 0                 # earlier rounds set aside: the section resumed

    @property
    def not_reached(self) -> bool:
        return self.rounds is not None and not self.rounds.verdict.reached

    @property
    def indicative(self) -> bool:
        return self.rounds is not None and self.rounds.verdict.round_s < SNIA_ROUND_S


def _start_s(results_dir: Path, manifest: dict) -> float | None:
    """When this section began to measure: its rounds' start, else its first repetition's."""
    rounds = [fio_written(p) for p in (results_dir / "steady").glob("round*.json")]
    round_s = float(manifest.get("round_s") or manifest.get("runtime") or 0)
    ends = [r[0] - round_s for r in rounds if r]
    if not ends:
        length = float(manifest.get("runtime") or 0) + float(manifest.get("ramp") or 0)
        ends = [r[0] - length for p in results_dir.glob("*/rep*.json")
                if p.name[3:-5].isdigit() and (r := fio_written(p))]
    return min(ends) if ends else None


def _first_rep_after(results_dir: Path, t: float) -> float | None:
    """The start (epoch s) of the first repetition after t, from rep<k>.cpu's 'before' line."""
    starts = []
    for cpu in results_dir.glob("*/rep*.cpu"):
        try:
            first = cpu.read_text().split("\n", 1)[0].split()
            start = float(first[1]) if first[0] == "before" else math.nan
        except (OSError, IndexError, ValueError):
            continue
        if start >= t:
            starts.append(start)
    return min(starts) if starts else None


PURGED = {"format": "namespace formatted (user data erase)",
          "sanitize": "controller sanitized", "discard": "region discarded",
          "punch-hole": "region freed (punch-hole)"}


def _prepared(results: Path, state: str) -> tuple[str, str, float | None]:
    """The tree's purge and fill: (the purge in a few words, the whole in a sentence, when the
    fill ended)."""
    folder = results / "state"
    record = folder / "purge.json"
    purge = json.loads(record.read_text()) if record.is_file() else {}
    short = PURGED.get(purge.get("method", ""), "region discarded")
    if purge.get("problems"):
        short += f" (purge NOT verified: {'; '.join(purge['problems'])})"
    fill = folder / ("written.json" if state == "purged" else "precondition.json")
    got = fio_written(fill) if fill.is_file() else None
    times = "once" if state == "purged" else "twice"
    device = f" of {purge['model']} (serial {purge['serial']})" if purge.get("serial") else ""
    long = (f"the {short}{device}, then the region written {times} sequentially "
            f"({human_size(got[1]) if got else '?'}) before the tree's first section")
    return short, long, got[0] if got else None


def story(results: Path, results_dir: Path, manifest: dict) -> StateStory:
    state = manifest.get("state") or None
    out = StateStory(state, manifest.get("target_kind", "?"))
    if state in ("purged", "sustained"):
        out.purge, out.prepared, out.prepared_end_s = _prepared(results, state)
        start = _start_s(results_dir, manifest)
        if out.prepared_end_s is not None and start is not None:
            for w in since_state(results, results_dir.name, out.prepared_end_s) or []:
                if w.section not in ("state", results_dir.name) and w.end_s <= start:
                    out.earlier[w.section] = out.earlier.get(w.section, 0) + w.bytes
    if state == "sustained":
        out.rounds_run = str(manifest.get("steady_rounds", "1")) != "0"
        folder = results_dir / "steady"
        out.reruns = len(list(results_dir.glob("steady.*")))
        track = manifest.get("steady_track") or "iops"
        if out.rounds_run and folder.is_dir() and any(folder.glob("round*.json")):
            try:
                out.rounds = judge_rounds(folder, track, int(manifest.get("region_bytes") or 0),
                                          float(manifest.get("round_s") or
                                                manifest.get("runtime") or 60))
            except (RoundsError, OSError, ValueError):
                out.rounds = None
            end = folder / "end"
            if end.is_file():
                t = float(end.read_text().strip() or "nan")
                first = _first_rep_after(results_dir, t)
                out.idle_s = first - t if first is not None else None
    return out


def _heading(section: str) -> str:
    info = SECTIONS.get(section)
    return f"§{info.number}" if info else section


def _since(s: StateStory) -> str:
    if s.earlier:
        return ", ".join(f"{_heading(k)} wrote {human_size(v)}"
                         for k, v in sorted(s.earlier.items(), key=lambda kv: _order(kv[0]))) \
            + " since"
    return "no other section wrote since" if s.prepared_end_s is not None else ""


def _order(section: str) -> int:
    info = SECTIONS.get(section)
    return info.number if info else 99


def clause(s: StateStory) -> str:
    """The setup line's state clause, short: what the drive went through before this section."""
    if s.state is None:
        return "state not recorded (a run before --state existed: not controlled)"
    words = STATE_WORDS.get(s.state, f"state {s.state}")
    if s.state == "as-is":
        return words + (": a file's state is its filesystem's" if s.kind == "file" else "")
    times = "once" if s.state == "purged" else "twice"
    parts = [f"{s.purge}, written {times} at the results tree's start", _since(s)]
    if s.state == "sustained" and not s.rounds_run:
        parts.append("no rounds of its own: its burst is the sustained write")
    elif s.state == "sustained" and s.rounds is not None:
        v = s.rounds.verdict
        parts.append(f"then {len(s.rounds.rounds)} rounds of its own: "
                     + (f"steady at {v.level:,.{1 if s.rounds.track == 'lat' else 0}f} {v.unit}"
                        if v.reached else "steady state NOT reached")
                     + (" (indicative)" if s.indicative else ""))
    elif s.state == "sustained":
        parts.append("its rounds' record is missing")
    return f"{words}: {', '.join(p for p in parts if p)}"


def details(s: StateStory) -> list[str]:
    """The Drive state part's sentences: the fill, what other sections wrote, the rounds'
    verdict in full, the idle time, a resumption."""
    if s.state not in ("purged", "sustained"):
        return []
    out = [f"Before this section: {s.prepared}; {_since(s) or 'what other sections wrote since is not known'}."]
    if s.rounds is not None:
        r, v = s.rounds, s.rounds.verdict
        out.append(f"Then {len(r.rounds)} rounds of the section's own workload "
                   f"({human_size(r.written)} written): "
                   + ("" if v.reached else "steady state NOT reached: ") + v.message + "."
                   + (" The rounds are shorter than SNIA's 60 s: the verdict is indicative."
                      if s.indicative else ""))
        if s.idle_s is not None:
            out.append(f"The first repetition began {s.idle_s:.1f} s after the last round.")
        if s.reruns:
            out.append("The section resumed after an interruption: its rounds ran again, from "
                       "the first, before the repetitions still to run (the earlier rounds are "
                       "kept beside them).")
    return out


def _label(track: str) -> str:
    """'IOPS', 'MB/s', 'mean latency (µs)'."""
    name, unit, _ = TRACKED[track]
    return name if name == unit else f"{name} ({unit})"


def rounds_table(r: Rounds) -> pd.DataFrame:
    v = r.verdict
    written = 0
    rows = []
    _name, unit, _ = TRACKED[r.track]
    for k, rd in enumerate(r.rounds, start=1):
        written += rd.written
        in_window = v.first_round is not None and v.first_round <= k <= v.last_round
        rows.append({"round": k, "value": rd.value, "unit": unit, "written_bytes": rd.written,
                     "written_total_bytes": written, "judged": k >= v.first_judged,
                     "window": in_window, "steady": in_window and v.reached})
    return pd.DataFrame(rows)


def draw_rounds(r: Rounds, path: Path, title: str) -> None:
    """SNIA's convergence plot: the tracked variable per round, the window shaded, the last
    lasting cliff and the round that completed the minimum written marked, the bytes written
    on the right-hand axis."""
    v = r.verdict
    t = [k * v.round_s for k in range(1, len(r.rounds) + 1)]
    total, written = 0, []
    for rd in r.rounds:
        total += rd.written
        written.append(total / 2**30)
    spans = []
    if v.first_round is not None:
        spans.append(Span((v.first_round - 1) * v.round_s, v.last_round * v.round_s,
                          "steady-state window" if v.reached else "closest window (NOT steady)",
                          "#54A24B" if v.reached else "#E45756"))
    events = []
    if r.cliff_s is not None:
        events.append(Event(r.cliff_s, f"last lasting cliff ({r.cliff_s:g} s)"))
    if r.gate_round:
        events.append(Event(r.gate_round * v.round_s, "the region written once", "#4C78A8"))
    timeseries_chart(path, t, [rd.value for rd in r.rounds], ylabel=_label(r.track),
                     title=title, label="mean of each round", spans=spans, events=events,
                     second=Series("written (GiB)", t, written), second_ylabel="GiB written",
                     xlabel="time since the first round (s): one point per round")


def blocks(s: StateStory, run, table: str, fig: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The snippet's 'Drive state' part and its figure; the rounds' table and figure written."""
    text = details(s)
    if not text:
        return [], []
    if s.rounds is None:
        return [" ".join(text)], []
    shown = run.write_table(table, rounds_table(s.rounds))
    draw_rounds(s.rounds, run.ws.path(fig),
                f"Preconditioning rounds: {_label(s.rounds.track)} per round")
    return [" ".join(text) + f" Each round: `{shown}`."], [
        ("Preconditioning rounds: the tracked variable per round, the window judged shaded", fig)]


def anomaly_text(s: StateStory) -> str | None:
    if not s.not_reached:
        return None
    return ("steady state NOT reached before measuring: " + s.rounds.verdict.message
            + ". The numbers describe a drive still changing.")
