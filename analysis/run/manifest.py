"""results/<section>/manifest.json: what a section's results were measured with.

A rerun resumes only when it would measure the same thing: the same target and settings. A rerun
with different settings is refused rather than mixing two experiments in one table; --fresh moves
the old results aside first (the scripts do that, never deleting anything).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

# Settings that change what a number means; a difference in any of them forbids mixing.
IDENTITY_KEYS = ("section", "target", "target_kind", "profile", "runtime", "ramp", "repeat",
                 "size", "region_bytes", "state", "engine", "direct", "cases", "matrix",
                 "io_uring_options", "cpus_allowed")


def parse_settings(pairs: list[str]) -> dict:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {pair!r}")
        settings[key] = value
    return settings


def differences(old: dict, new: dict) -> list[str]:
    return [f"{key}={old.get(key, '')!r} (now {new.get(key, '')!r})"
            for key in IDENTITY_KEYS if str(old.get(key, "")) != str(new.get(key, ""))]


def matrix_entries(manifest: dict) -> dict[str, dict[str, str]]:
    """{case: {option: value}} from the manifest's matrix ("name: rw=randread bs=4k; ..."), as
    lib/run.bash case_matrix writes it, the toolkit's own @options included; then the cases
    added as the run went (`added`, same form: add_cases), which override a planned one."""
    out = {}
    for key in ("matrix", "added"):
        for entry in filter(None, (manifest.get(key) or "").split("; ")):
            name, _, opts = entry.partition(": ")
            out[name.strip()] = dict(opt.partition("=")[::2] for opt in opts.split())
    return out


def case_options(manifest: dict) -> dict[str, dict[str, str]]:
    """{case: {fio option: value}}: the matrix without the toolkit's own @options, and without
    options fio expands (${TK_LOG}), whose value in fio's output is not the one written."""
    return {case: {key: value for key, value in opts.items()
                   if not key.startswith("@") and "${" not in value}
            for case, opts in matrix_entries(manifest).items()}


def planned_repeats(manifest: dict, case: str) -> int | None:
    """How many repetitions the run plans for the case (@repeat=N, else the run's repeat)."""
    value = matrix_entries(manifest).get(case, {}).get("@repeat") or manifest.get("repeat")
    return int(value) if str(value or "").isdigit() else None


def write_atomically(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def check_or_write(path: Path, settings: dict) -> list[str]:
    """Write the manifest if there is none; else return how the stored one differs."""
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            return [f"{path} is not valid JSON ({e})"]
        return differences(old, settings)
    doc = dict(settings, created=datetime.now(UTC).isoformat(timespec="seconds"))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, doc)
    return []


def add_cases(path: Path, cases: list[tuple[str, str]], **settings: str) -> None:
    """Record cases a section adds as it goes (§5's peak search: name, options) under `added`,
    so that the repetition check holds them to their options like the planned ones, with
    settings of their own. Not identity keys: a rerun adds the same cases from the same results."""
    doc = json.loads(path.read_text()) if path.exists() else {}
    added = matrix_entries({"added": doc.get("added", "")})
    for name, opts in cases:
        added[name] = dict(opt.partition("=")[::2] for opt in opts.split())
    doc["added"] = "; ".join(f"{name}: " + " ".join(f"{k}={v}" for k, v in opts.items())
                             for name, opts in added.items())
    doc.update(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, doc)


def main(argv: list[str]) -> int:
    """`python -m analysis manifest PATH key=value...`: 0 if written or matching, 2 if not."""
    if len(argv) < 2:
        print("usage: python -m analysis manifest PATH key=value...", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        diff = check_or_write(path, parse_settings(argv[1:]))
    except ValueError as e:
        print(f"manifest: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        from analysis.run.faults import results_full  # only on this rare path
        print(results_full(path.parent) or f"cannot write {path}: {e.strerror}", file=sys.stderr)
        return 1
    if diff:
        print(f"{path.parent} holds results measured with other settings: " + ", ".join(diff)
              + ". Rerun with --fresh to move them aside (nothing is deleted), "
              "or give the same settings to resume.", file=sys.stderr)
        return 2
    return 0
