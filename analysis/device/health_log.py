"""The drive's temperature and throttle counters over a long run, from lib/sampler.bash's samples.

lib/sampler.bash leaves in its directory:
- `samples.jsonl`: one line per sample, `{"t": EPOCH_S, "source": "nvme"|"smartctl", "rc": N,
  "doc": {...}}`, doc being the tool's own JSON (`nvme smart-log -o json` or `smartctl -j -a`),
  missing when the tool printed nothing;
- `samples.unavailable`: instead, when the first attempt found no health to sample, the reason;
- `first/`: that first attempt, as lib/collect.bash's collect_health_raw leaves it.

Each doc is read with analysis.device.health's parsers, so units are decided there once (kelvin from
nvme-cli, Celsius from smartctl). A sample the tool could not answer, or a line cut short (the
sampler killed while writing), is left out: the table has a gap there, never a made-up value.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from analysis.device.health import (
    THROTTLE_KEYS,
    UNAVAILABLE,
    health_summary,
    parse_nvme_smart_log,
    parse_smartctl,
)

SAMPLES = "samples.jsonl"
UNAVAILABLE_FILE = "samples.unavailable"
FIRST = "first"
COLUMNS = ("t_s", "temperature_c", *THROTTLE_KEYS)


def read_samples(raw_dir) -> list[dict]:
    """The samples of samples.jsonl that carry a tool's JSON object, in file order."""
    path = Path(raw_dir) / SAMPLES
    out = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            sample = json.loads(line)
        except ValueError:
            continue
        if (isinstance(sample, dict) and isinstance(sample.get("t"), int | float)
                and isinstance(sample.get("doc"), dict)):
            out.append(sample)
    return out


def parse_sample(sample: dict) -> dict | None:
    """temperature_c and the THROTTLE_KEYS counters of one sample; None when the doc holds no
    health (smartctl answered, but without any SMART data)."""
    if sample.get("source") == "nvme":
        fields = parse_nvme_smart_log(sample["doc"])
    else:
        fields = parse_smartctl(sample["doc"])
        if not fields["available"]:
            return None
    return {key: fields.get(key) for key in ("temperature_c", *THROTTLE_KEYS)}


def unavailable_reason(raw_dir) -> str | None:
    """"unavailable on this device: <reason>" when the sampler wrote samples.unavailable, with
    the tools' own words from its first attempt when they add to it; None otherwise."""
    raw = Path(raw_dir)
    try:
        reason = " ".join((raw / UNAVAILABLE_FILE).read_text().split())
    except OSError:
        return None
    if (raw / FIRST).is_dir():
        words = health_summary(raw / FIRST)["reason"].removeprefix(UNAVAILABLE).lstrip(": ")
        if words and words != "no health data was collected" and words not in reason:
            reason = f"{reason}; {words}" if reason else words
    return f"{UNAVAILABLE}: {reason or 'no reason recorded'}"


def _no_data_reason(raw: Path, samples: list[dict]) -> str:
    """Why a directory without samples.unavailable still gave no row."""
    if not (raw / SAMPLES).is_file():
        return f"no health samples in {raw} (lib/sampler.bash writes {SAMPLES} there)"
    messages = [m for s in samples if s.get("source") != "nvme"
                for m in parse_smartctl(s["doc"])["messages"]]
    if messages:
        return f"{UNAVAILABLE}: smartctl: {messages[-1]}"
    if samples:
        return f"{UNAVAILABLE}: no sample held a temperature or a SMART counter"
    return f"no sample in {raw / SAMPLES} holds a tool's JSON"


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({col: pd.Series(dtype="float64" if col == "t_s" else "Int64")
                         for col in COLUMNS})


def samples_table(raw_dir, start: float | None = None) -> pd.DataFrame:
    """One row per sample: t_s (seconds since `start`, an epoch time such as the run's start;
    since the first sample when None), temperature_c, and each counter of THROTTLE_KEYS (<NA>
    where the source does not report it: smartctl has no thermal-management counters).

    With no row, the table is empty and `table.attrs["reason"]` says why ("unavailable on this
    device: ..." when the device has no health to sample); it is None otherwise.
    """
    raw = Path(raw_dir)
    reason = unavailable_reason(raw)
    if reason is not None:
        table = _empty_table()
        table.attrs["reason"] = reason
        return table
    samples = read_samples(raw)
    rows = []
    for sample in samples:
        fields = parse_sample(sample)
        if fields is not None:
            rows.append({"t": float(sample["t"]), **fields})
    if not rows:
        table = _empty_table()
        table.attrs["reason"] = _no_data_reason(raw, samples)
        return table
    rows.sort(key=lambda row: row["t"])
    origin = rows[0]["t"] if start is None else float(start)
    table = pd.DataFrame({
        "t_s": [round(row["t"] - origin, 3) for row in rows],
        **{key: pd.array([row[key] for row in rows], dtype="Int64") for key in COLUMNS[1:]},
    })
    table.attrs["reason"] = None
    return table


def _fmt_s(t: float) -> str:
    return f"{t:g} s"


def counter_moves(table: pd.DataFrame) -> list[tuple[float, str]]:
    """(t_s, what) of each throttle counter that moved between two samples, placed at the later
    sample: the first time the move could be seen."""
    out: list[tuple[float, str]] = []
    times = table["t_s"].tolist()
    for key in THROTTLE_KEYS:
        values = table[key].tolist()
        for i in range(1, len(values)):
            before, after = values[i - 1], values[i]
            if pd.isna(before) or pd.isna(after) or before == after:
                continue
            between = f"between {_fmt_s(times[i - 1])} and {_fmt_s(times[i])}"
            out.append((times[i], f"{key} {before} -> {after} ({between})"))
    return out


def temperature_peak(table: pd.DataFrame) -> tuple[float, str] | None:
    """(t_s, what) of the highest temperature (its first sample), None without temperatures."""
    temps = table["temperature_c"]
    if not temps.notna().any():
        return None
    peak = temps.idxmax()
    context = f"first sample {temps.dropna().iloc[0]} °C, lowest {temps.min()} °C"
    return float(table["t_s"][peak]), f"temperature peak {temps[peak]} °C ({context})"


def events(table: pd.DataFrame, moved_only: bool = False) -> list[tuple[float, str]]:
    """(t_s, what) of each throttle counter that moved between samples (counter_moves) and of
    the temperature peak, sorted by time (a move before the peak at the same time); with
    `moved_only`, no peak for a temperature that never moved (a report says that once)."""
    if table.empty:
        return []
    peak = temperature_peak(table)
    if moved_only and table["temperature_c"].nunique() <= 1:
        peak = None
    return sorted(counter_moves(table) + ([peak] if peak else []), key=lambda event: event[0])


def summary_lines(table: pd.DataFrame) -> list[str]:
    """What the table says, in a few lines for the terminal."""
    if table.empty:
        return [table.attrs.get("reason") or "no health samples"]
    span = table["t_s"].iloc[-1] - table["t_s"].iloc[0]
    lines = [f"{len(table)} health samples over {_fmt_s(round(span, 3))}"]
    lines += [f"  {_fmt_s(t)}: {what}" for t, what in events(table)]
    if not counter_moves(table):
        reported = any(table[key].notna().any() for key in THROTTLE_KEYS)
        lines.append("  no throttle counter moved" + ("" if reported else
                                                      " (the device reports none)"))
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis health-log",
        description="CSV of the drive's temperature and throttle counters from the samples "
                    "lib/sampler.bash took (samples.jsonl); events and the reason on stderr.")
    parser.add_argument("dir", help="the directory given to health_sampler_start")
    parser.add_argument("--start", type=float, default=None, metavar="EPOCH",
                        help="time zero, in epoch seconds (default: the first sample)")
    parser.add_argument("--csv", default=None, metavar="OUT",
                        help="write the CSV to OUT (default: stdout)")
    args = parser.parse_args(argv)
    raw = Path(args.dir)
    if not raw.is_dir():
        print(f"health-log: {raw} is not a directory; give the DIR health_sampler_start wrote to",
              file=sys.stderr)
        return 2
    if not (raw / SAMPLES).is_file() and not (raw / UNAVAILABLE_FILE).is_file():
        print(f"health-log: {raw} has neither {SAMPLES} nor {UNAVAILABLE_FILE}; "
              "health_sampler_start (lib/sampler.bash) writes them", file=sys.stderr)
        return 2
    table = samples_table(raw, args.start)
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.10g")
    else:
        table.to_csv(sys.stdout, index=False, float_format="%.10g")
    for line in summary_lines(table):
        print(line, file=sys.stderr)
    return 0
