"""A section's manifest: what its results were measured with (the target, the settings, the case
matrix), as data. It is the section's entry in the tree's record (results/run.json,
`sections.<section>`: analysis.run.record reads and writes it); this module holds what an entry
means: its settings as bash passes them, how two differ, the cases and their options.

A rerun resumes only when it would measure the same thing: the same target and settings. A rerun
with different settings is refused rather than mixing two experiments in one table; --fresh moves
the old results aside first (the scripts do that, never deleting anything).

The case matrix is data, {case: {option: value}} (`matrix`, and `added`: the cases a section added
as it went). An older toolkit wrote the entry as `<section>/manifest.json`: version 2 like this
entry, or no `version` (its matrix a string "name: rw=randread bs=4k; ...", one `engine` where the
engines are now per depth, the "probed once" fact in the notes' prose). `migrate` turns either
into an entry, for the record's migration; another version is refused.
"""

from __future__ import annotations

VERSION = 2  # of the manifest.json files an older toolkit wrote (record.py's migration reads them)
NAME = "manifest.json"
# Settings that change what a number means; a difference in any of them forbids mixing.
IDENTITY_KEYS = ("section", "target", "target_kind", "profile", "runtime", "ramp", "repeat",
                 "size", "region_bytes", "state", "engine", "direct", "cases", "matrix",
                 "io_uring_options", "cpus_allowed")
# What an older toolkit appended to a note where a probe of an earlier section was reused.
PROBED_ONCE = "; probed once for this results tree"


def parse_settings(pairs: list[str]) -> dict:
    """key=value pairs as bash passes them; the matrix ("name: k=v ...; ...") becomes data."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {pair!r}")
        settings[key] = parse_matrix(value) if key in ("matrix", "added") else value
    return settings


def parse_matrix(text: str) -> dict[str, dict[str, str]]:
    """{case: {option: value}} from lib/cases.bash case_matrix's "name: k=v k=v; name: ..."."""
    out = {}
    for entry in filter(None, text.split("; ")):
        name, _, opts = entry.partition(": ")
        out[name.strip()] = parse_options(opts)
    return out


def parse_options(text: str) -> dict[str, str]:
    """{option: value} from "rw=randread bs=4k"."""
    return dict(opt.partition("=")[::2] for opt in text.split())


def migrate(doc: dict) -> dict:
    """A section's entry from a manifest.json an older toolkit wrote (version 1 or 2); ValueError
    for a version this module does not know."""
    version = doc.get("version", 1) if isinstance(doc, dict) else None
    if version not in (1, VERSION):
        raise ValueError(f"a manifest of version {version!r}; this toolkit reads versions 1 "
                         f"and {VERSION}: use the toolkit that wrote it, or --fresh")
    doc = {k: v for k, v in doc.items() if k != "version"}
    if version == VERSION:
        return doc
    for key in ("matrix", "added"):
        if isinstance(doc.get(key), str):
            doc[key] = parse_matrix(doc[key])
    if not doc.get("engines") and doc.get("engine"):
        doc["engines"] = doc["engine"]  # one engine at every depth
    for note, fact in (("engine_note", "engine_from_tree"), ("io_uring_note", "io_uring_from_tree")):
        if PROBED_ONCE in str(doc.get(note) or ""):
            doc[note] = doc[note].replace(PROBED_ONCE, "")
            doc[fact] = "1"
    return doc


def _case_changes(old: dict, new: dict) -> str:
    """'randrw-4k: iodepth=4 (now 8)', case by case."""
    parts = []
    for case in sorted(set(old) | set(new), key=lambda c: (c not in old, c)):
        if case not in new:
            parts.append(f"{case} (not measured now)")
        elif case not in old:
            parts.append(f"{case} (new)")
        elif old[case] != new[case]:
            keys = sorted(set(old[case]) | set(new[case]))
            parts.append(f"{case}: " + " ".join(
                f"{k}={old[case].get(k, '')} (now {new[case].get(k, '')})" for k in keys
                if old[case].get(k) != new[case].get(k)))
    return "; ".join(parts)


def differences(old: dict, new: dict) -> list[str]:
    out = []
    for key in IDENTITY_KEYS:
        a, b = old.get(key, ""), new.get(key, "")
        if isinstance(a, dict) or isinstance(b, dict):
            if (a or {}) != (b or {}):
                out.append(f"{key}: {_case_changes(a or {}, b or {})}")
        elif str(a) != str(b):
            out.append(f"{key}={a!r} (now {b!r})")
    return out


def matrix_entries(manifest: dict) -> dict[str, dict[str, str]]:
    """{case: {option: value}}: the matrix, the toolkit's own @options included, then the cases
    added as the run went (`added`), which override a planned one."""
    return {**(manifest.get("matrix") or {}), **(manifest.get("added") or {})}


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
