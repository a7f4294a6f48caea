"""Where `compare` takes the spread between runs from, per metric: `--between-run` (a lab's
measured figure), else the history's runs of the drive (analysis.history.between), else the
default (analysis.core.effects.DEFAULT_BETWEEN: as large as the repetitions' own spread)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.core.effects import Between
from analysis.core.workspace import Workspace
from analysis.history import between as history_between
from analysis.history.db import HistoryError, is_postgres, location, open_store, shown
from analysis.history.record import tree_run

# metric column -> the short name --between-run takes for it
NAMES = {"iops_mean": "iops", "bw_MBps_mean": "bw", "lat_us_mean": "lat",
         "lat_p95_us": "p95", "lat_p99_us": "p99", "lat_p99_9_us": "p99.9"}
GIVEN = "given: --between-run"


def parse(text: str | None) -> dict[str, Between]:
    """'3' (every metric: a run's level moves by 3% sd) or 'iops=2,p99=6' (those metrics) into
    {metric column: Between}; ValueError with the reason for anything else."""
    if not text:
        return {}
    by_name = {v: k for k, v in NAMES.items()}
    out = {}
    for part in text.split(","):
        name, eq, value = part.strip().rpartition("=")
        try:
            pct = float(value)
        except ValueError:
            raise ValueError(f"--between-run {text!r}: {value!r} is not a number (a sd in % of "
                             "the mean, such as 3 or iops=2,p99=6)") from None
        if not (pct >= 0 and math.isfinite(pct)):
            raise ValueError(f"--between-run {text!r}: a spread is 0 or more")
        metrics = list(NAMES) if not eq else [by_name.get(name.strip())]
        if metrics == [None]:
            raise ValueError(f"--between-run {text!r}: {name!r} is not a metric (one of "
                             f"{', '.join(NAMES.values())})")
        out.update({m: Between(rel_sd=pct / 100, source=GIVEN) for m in metrics})
    return out


def resolver(given: dict[str, Between], history: str | None, tree_a: Path, tree_b: Path):
    """(between(section, case, direction) -> {metric: Between}, a note for the output). The
    history is read where it exists; one that cannot be read is said, and not used."""
    spec = location(history, Workspace.of(Path("."), tree_a))
    from_history = None
    note = ""
    if is_postgres(spec) or Path(spec).is_file():
        try:
            runs = [tree_run(t) for t in (tree_a, tree_b)]
            with open_store(spec, create=False) as store:
                from_history = history_between.between_runs(
                    store, runs[0], {r["run_id"] for r in runs})
            note = f"history `{shown(spec)}`"
        except (HistoryError, ValueError, OSError) as e:
            note = f"the history at `{shown(spec)}` could not be read ({e}); not used"
    else:
        note = f"no history at `{shown(spec)}`"

    def between(section: str, case: str, direction: str) -> dict[str, Between]:
        found = from_history(section, case, direction) if from_history else {}
        return {**found, **given}

    return between, note


def summary(table: pd.DataFrame, note: str) -> str:
    """'Spread between runs: ...': which rows took it from where, for the snippet."""
    tested = table[table.between_source.fillna("").astype(str) != ""]
    if tested.empty:
        return ""
    counts = tested.groupby("between_source").size().sort_values(ascending=False)
    parts = [f"{source} for {n} row{'s' if n != 1 else ''}" for source, n in counts.items()]
    return (f"Spread between runs (added to the repetitions' own in every test): "
            f"{'; '.join(parts)} ({note}; at least {history_between.MIN_RUNS} runs of this "
            f"drive and case are needed to use the history).")
