"""One results tree as a run of the history: its identity, device, host, every section's summary
rows and its facts (headlines and anomalies), ready for analysis.history.db.Store.record.

The run id is derived from the tree's content, never from where it lies: §1's collection time and
host name (env.json), or without §1 the creation times of the sections' manifests. Recording the
same tree twice, or a copy of it moved elsewhere, therefore keeps one run; a new `make report`
into the same tree collects §1 again and is a new run.

The summary rows and facts are those the sections' analyses wrote (tables/<section>*.csv and
tables/<section>_facts.json of the tree's workspace); a section whose facts are missing (an old
tree never analysed) is analysed first, as `make analysis` would.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from analysis.core.workspace import Workspace
from analysis.history.db import ROW_NUMBERS, ROW_TEXT
from analysis.rules.cases import read_manifest
from analysis.run import record as tree_record
from analysis.sections import SECTIONS
from analysis.sections import facts as facts_file

# Each section's summary tables (module, constant names): read from the modules, one place.
SECTION_TABLES = {
    "qd1": [("analysis.sections.qd1", "TABLE")],
    "bs_sweep": [("analysis.sections.bs_sweep", "TABLE")],
    "mix_rw": [("analysis.sections.mix_rw", "TABLE")],
    "qd_sweep": [("analysis.sections.qd_sweep", "TABLE")],
    "wss_burst": [("analysis.sections.wss_burst", "TABLE_WSS"),
                  ("analysis.sections.wss_burst", "TABLE_COMPRESS"),
                  ("analysis.sections.burst_part", "TABLE"),
                  ("analysis.sections.burst_part", "LEVELS_TABLE")],
}


@dataclass
class RunRecord:
    run: dict  # analysis.history.db.RUN_COLUMNS
    rows: list[dict] = field(default_factory=list)
    headlines: list[dict] = field(default_factory=list)
    anomalies: list[dict] = field(default_factory=list)
    targets: list[dict] = field(default_factory=list)  # the last judgment of the lab's targets
    sections: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be read, for the user


def iso_utc(text: str | None) -> str | None:
    """'2026-03-02T10:00:00Z' from any ISO 8601 time (manifests write +00:00, §1 writes Z)."""
    if not text:
        return None
    when = datetime.fromisoformat(text)
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def sections_in(tree: Path) -> list[str]:
    """The sections that ran into the tree (its record's entries)."""
    ran = tree_record.sections(tree)
    return [s for s in SECTIONS if s in ran]


def identity(tree: Path, env: dict, manifests: dict[str, dict]) -> tuple[str, str]:
    """(run id, run date): from §1 when the tree has it, else from the sections' manifests."""
    created = sorted(filter(None, (iso_utc(m.get("created")) for m in manifests.values())))
    if env.get("collected_at"):
        key = f"env|{env.get('hostname')}|{iso_utc(env['collected_at'])}"
        date = iso_utc(env["collected_at"])
    elif created:
        key = "sections|" + "|".join(f"{s}={iso_utc(m.get('created'))}"
                                     for s, m in sorted(manifests.items()))
        date = created[0]
    else:
        raise ValueError(f"{tree}: no env.json and no section results: not a results tree")
    return hashlib.sha256(key.encode()).hexdigest()[:16], date


def common(manifests: dict[str, dict], key: str) -> str | None:
    """The sections' shared setting (profile, engine, target), or all of them when they differ."""
    values = list(dict.fromkeys(str(m[key]) for m in manifests.values() if m.get(key)))
    return ", ".join(values) if values else None


def _region(manifests: dict[str, dict]) -> int | None:
    """The sections' region in bytes when they share one; None when unrecorded or mixed."""
    values = {m.get("region_bytes") for m in manifests.values()} - {None, ""}
    if len(values) != 1:
        return None
    try:
        return int(float(values.pop()))
    except ValueError:
        return None


def _plain(value):
    """A value for the database: numbers as float (NaN as NULL), booleans as 0/1, text as is."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return None if math.isnan(number) else number


def table_rows(run_id: str, section: str, name: str, df: pd.DataFrame) -> list[dict]:
    """A section table's rows: the standard columns as columns, the others as JSON in extra."""
    df = df.rename(columns={"case": "case_name"})
    own = set(ROW_TEXT) | set(ROW_NUMBERS)
    rows = []
    for i, record in enumerate(df.to_dict("records")):
        values = {k: _plain(v) for k, v in record.items()}
        row = {"run_id": run_id, "section": section, "table_name": name, "row_no": i}
        row.update({col: None if values.get(col) is None else str(values[col]) for col in ROW_TEXT})
        # A number column holding text (a bs of '4k-64k') stays in extra with the sweep columns.
        row.update({col: None if isinstance(values.get(col), str) else values.get(col)
                    for col in ROW_NUMBERS})
        extra = {k: v for k, v in values.items()
                 if k not in own or (k in ROW_NUMBERS and isinstance(v, str))}
        row["extra"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
        rows.append(row)
    return rows


def stale(facts_path: Path, results_dir: Path) -> bool:
    """No facts, or facts older than the section's newest result (a rerun not analysed yet)."""
    if not facts_path.is_file():
        return True
    newest = max((p.stat().st_mtime for p in results_dir.rglob("*.json")), default=0.0)
    return facts_path.stat().st_mtime < newest


def analyse_section(ws: Workspace, section: str) -> None:
    """Run the section's analysis (as `make analysis` does), its chatter kept off the terminal."""
    module = importlib.import_module(f"analysis.sections.{section}")
    with contextlib.redirect_stdout(io.StringIO()):
        module.main(["--root", str(ws.root), "--results", str(ws.results)])


def tree_run(tree: Path) -> dict:
    """A results tree's row of the runs table (analysis.history.db.RUN_COLUMNS): who, what and
    when, from §1's env.json and the sections' manifests; nothing is analysed."""
    env_path = tree / "env.json"
    env = json.loads(env_path.read_text()) if env_path.is_file() else {}
    manifests = {s: read_manifest(tree / s) for s in sections_in(tree)}
    run_id, date = identity(tree, env, manifests)
    target = env.get("target") or {}
    return {
        "run_id": run_id, "run_date": date,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tree": str(tree.resolve()), "git_revision": env.get("toolkit_revision"),
        "profile": common(manifests, "profile"), "engine": common(manifests, "engine"),
        "target": common(manifests, "target") or target.get("path"),
        "target_kind": common(manifests, "target_kind") or target.get("type"),
        # A fleet host's tree (results/hosts/<host>) has no §1 of its own: the host is its name.
        "hostname": env.get("hostname") or (tree.name if tree.parent.name == "hosts" else None),
        "model": target.get("model"),
        "serial": target.get("serial"), "firmware": target.get("firmware"),
        "capacity_bytes": target.get("capacity_bytes"), "kernel": env.get("kernel"),
        "fio_version": env.get("fio_version"),
        # How the drive was prepared and how much of it was measured (absent before they were
        # recorded): runs that differ in them are never one trend series.
        "state": common(manifests, "state"), "region_bytes": _region(manifests),
    }


def read_tree(ws: Workspace, *, analyse: bool = True) -> RunRecord:
    tree = ws.results
    env = (tree / "env.json").is_file()
    sections = sections_in(tree)
    record = RunRecord(tree_run(tree), sections=sections)
    run_id = record.run["run_id"]
    if not env:
        record.notes.append(f"{tree}: no env.json (§1 did not run): device and host unknown")
    for section in sections:
        facts_path = ws.path(f"tables/{section}_facts.json")
        if analyse and stale(facts_path, tree / section):
            try:
                analyse_section(ws, section)
            except Exception as e:  # noqa: BLE001 - one section's failure must not lose the run
                record.notes.append(f"{section}: its analysis failed ({e}); recorded without it")
        for module, constant in SECTION_TABLES[section]:
            relpath = getattr(importlib.import_module(module), constant)
            path = ws.path(relpath)
            if path.is_file():
                record.rows += table_rows(run_id, section, Path(relpath).stem, pd.read_csv(path))
        if not facts_path.is_file():
            record.notes.append(f"{section}: no {ws.show(f'tables/{section}_facts.json')}; "
                                "its headlines are not in the history")
            continue
        facts = facts_file.read(facts_path)
        record.headlines += [
            {"run_id": run_id, "section": section, "seq": i, "kind": h.kind, "label": h.label,
             "text": h.text, "value": h.value, "std": h.std, "unit": h.unit,
             "settings": h.settings or None, "ci95": h.ci95}
            for i, h in enumerate(facts.headlines)]
        record.anomalies += [{"run_id": run_id, "section": section, "seq": i, "kind": a.kind,
                              "text": a.text} for i, a in enumerate(facts.anomalies)]
    record.targets = target_rows(ws, run_id)
    return record


def target_rows(ws: Workspace, run_id: str) -> list[dict]:
    """Each target's verdict, where the run was judged against a lab's targets: the report's
    `tables/targets.json` (analysis.report.targets writes it; read here as a file, the history
    being below the report)."""
    path = ws.path("tables/targets.json")
    if not path.is_file():
        return []
    verdicts = json.loads(path.read_text()).get("verdicts", [])
    return [{"run_id": run_id, "seq": i, **{k: v.get(k) for k in (
                "name", "section", "direction", "metric", "bound", "threshold", "value", "low",
                "high", "verdict", "detail", "origin")},
             "case_name": v.get("case"), "failing": int(bool(v.get("failing")))}
            for i, v in enumerate(verdicts)]
