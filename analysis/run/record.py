"""<results>/run.json: what a results tree holds and decided, as data, and the one module that
reads and writes it.

fio's JSON stays beside it as the raw truth; this record says what each section was measured with
and holds the decisions the tree's sections share and the report run's outcome:

    {"version": 2,
     "engines":     {"target", "direct", "qd1", "deep", "note"},   the engines probed once
     "io_uring":    {"target", "direct", "options", "note"},       io_uring's options probed once
     "write_speed": {"target", "direct", "MBps"},                  the state's sequential write
     "fio_clock":   {"target", "direct", "clocksource", "note"},   fio's clock, chosen once
     "steps":       {"state/purge": "what was done, when", "state/written", "state/precondition",
                     "<section>/prefill": what wrote its region, "wss_burst/precondition",
                     "hosts/<host>/<section>/prefill": a fleet host's},
     "status":      {"<section>": {"exit": int | null (skipped), "started": epoch s,
                                   "error": the last error line or why skipped,
                                   "outside": true where skipped because the profile has no
                                   test in the section (--profile pts's §5), else absent}},
     "sections":    {"<section>": its manifest (analysis.run.manifest: the settings, the case
                                  matrix, the order), "state": the drive state's target and
                     region, "<section>.<time>": a section's set aside by --fresh}}

A section's folder is <tree>/<section> and its entry `sections.<section>` of <tree>/run.json (a
fleet host's tree, results/hosts/<host>, has a record of its own). A choice is kept for one target
and O_DIRECT setting: another target (or --direct) probes anew. A record of a version this module
does not know is refused. What an older toolkit wrote (a run.json of version 1; a
"<section>/manifest.json" per section and state/state.json; before run.json, a "TARGET DIRECT"
file per choice, state/write_speed, a `.done` file per step, report_status.tsv) is read through
`migrate`, the one place that knows that layout; the first change writes the record whole. A
section folder copied out of an older tree keeps its manifest.json, and so reads as before.

Bash reaches it through the run loop's helper process (record-get, record-set, manifest-check...:
see analysis.run.runner_service) and, from report.bash, `python -m analysis record`.
"""

from __future__ import annotations

import fcntl
import json
import sys
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from analysis.core.workspace import write_json
from analysis.run import manifest

VERSION = 2
NAME = "run.json"
# The decisions kept per target: their fields, which bash sets and reads by name.
CHOICES = {"engines": ("qd1", "deep", "note"), "io_uring": ("options", "note"),
           "write_speed": ("MBps",), "fio_clock": ("clocksource", "note")}


class RecordError(ValueError):
    """The record cannot be read or changed; str() says why and what to do."""


def empty() -> dict:
    return {"version": VERSION, **dict.fromkeys(CHOICES), "steps": {}, "status": {},
            "sections": {}}


def path_of(tree: Path) -> Path:
    return Path(tree) / NAME


def load(tree: Path) -> dict:
    """The tree's record: run.json, else what an older toolkit left, either read through
    `migrate`; empty for a tree nothing wrote yet."""
    path = path_of(tree)
    if not path.exists():
        return migrate(Path(tree), None)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"{path} cannot be read ({e}); move it aside (the tree's choices are "
                          "then probed again)") from None
    version = doc.get("version") if isinstance(doc, dict) else None
    if version not in (1, VERSION):
        raise RecordError(
            f"{path} is a record of version {version!r}; this toolkit reads versions 1 and "
            f"{VERSION}: use the toolkit that wrote it, or --fresh to start a new results tree "
            "beside it")
    return migrate(Path(tree), doc)


def save(tree: Path, doc: dict) -> None:
    """Write the record whole, atomically (a crash leaves the old one or the new one)."""
    path = path_of(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, doc)  # unsorted: the sections in the order they ran


@contextmanager
def updating(tree: Path):
    """The record to change in place, saved at the end if it changed (an older tree's, then
    whole, in this version); one writer at a time (a lock beside it), so that report.bash and a
    section, or the sections of a tree, never lose each other's fields."""
    tree = Path(tree)
    tree.mkdir(parents=True, exist_ok=True)
    with open(tree / f".{NAME}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = load(tree)
        before = json.dumps(doc)
        yield doc
        if json.dumps(doc) != before:
            save(tree, doc)


def choice(doc: dict, name: str, target: str, direct: str) -> dict | None:
    """The tree's `name` decision when it was made for this target and O_DIRECT setting."""
    part = doc.get(name)
    if not part or part.get("target") != target or str(part.get("direct")) != str(direct):
        return None
    return part


def set_choice(tree: Path, name: str, target: str, direct: str, fields: dict) -> None:
    if name not in CHOICES or set(fields) != set(CHOICES[name]):
        raise RecordError(f"{name}: expected the fields {', '.join(CHOICES.get(name, ()))}")
    if "MBps" in fields:
        fields = {**fields, "MBps": int(fields["MBps"])}
    with updating(tree) as doc:
        doc[name] = {"target": target, "direct": str(direct), **fields}


def set_step(tree: Path, key: str, what: str) -> None:
    """A step done once for the tree or a section (its key: where an older tree kept its file)."""
    with updating(tree) as doc:
        doc["steps"][key] = what


def forget_steps(tree: Path, prefix: str) -> None:
    """The steps of a folder moved aside (--fresh): its section runs them again."""
    with updating(tree) as doc:
        doc["steps"] = {k: v for k, v in doc["steps"].items()
                        if not (k + "/").startswith(prefix.rstrip("/") + "/")}


def set_status(tree: Path, section: str, exit_code: int | None, started: int, error: str,
               outside: bool = False) -> None:
    """A section's outcome in this report run; `outside`: skipped because the chosen profile
    has nothing to run there (not a section the report lacks)."""
    with updating(tree) as doc:
        doc["status"][section] = {"exit": exit_code, "started": started, "error": error,
                                  **({"outside": True} if outside else {})}


def clear_status(tree: Path) -> None:
    """A new report run: the sections' outcomes of the last one no longer hold."""
    with updating(tree) as doc:
        doc["status"] = {}


# --------------------------------------------------------------------------- sections
def sections(tree: Path) -> dict[str, dict]:
    """{folder: its entry} of the tree: the sections that ran (and state, and those set aside).
    An entry whose folder is gone (removed by hand to start the section over) is none."""
    return {name: entry for name, entry in load(tree)["sections"].items()
            if (Path(tree) / name).is_dir()}


def section(folder: Path) -> dict:
    """The manifest of the section whose folder this is (<tree>/<section>); {} where it never
    ran (or its folder is gone)."""
    folder = Path(folder)
    return sections(folder.parent).get(folder.name, {}) if folder.is_dir() else {}


def check_section(folder: Path, pairs: list[str]) -> tuple[int, str]:
    """Record the section's settings (key=value pairs as bash passes them) as its entry, or
    compare them with the entry there: (0, ""), (2, how they differ or why the settings or the
    record are bad), or (1, why the record could not be written)."""
    folder = Path(folder)
    try:
        settings = manifest.parse_settings(pairs)
    except ValueError as e:
        return 2, f"manifest: {e}"
    try:
        with updating(folder.parent) as doc:
            old = doc["sections"].get(folder.name) if folder.is_dir() else None
            if not old:
                doc["sections"][folder.name] = dict(
                    settings, created=datetime.now(UTC).isoformat(timespec="seconds"))
        folder.mkdir(exist_ok=True)
    except RecordError as e:
        return 2, str(e)
    except OSError as e:
        from analysis.run.faults import results_full  # only on this rare path
        return 1, results_full(folder) or f"cannot write {path_of(folder.parent)}: {e.strerror}"
    diff = manifest.differences(old, settings) if old else []
    if diff:
        return 2, (f"{folder} holds results measured with other settings: " + ", ".join(diff)
                   + ". Rerun with --fresh to move them aside (nothing is deleted), "
                   "or give the same settings to resume.")
    return 0, ""


def add_cases(folder: Path, cases: list[tuple[str, str]], **settings: str) -> None:
    """Record cases a section adds as it goes (§5's peak search: name, options) under `added`,
    so that the repetition check holds them to their options like the planned ones, with
    settings of their own. Not identity keys: a rerun adds the same cases from the same results."""
    folder = Path(folder)
    with updating(folder.parent) as doc:
        entry = doc["sections"].setdefault(folder.name, {})
        entry["added"] = {**(entry.get("added") or {}),
                          **{name: manifest.parse_options(opts) for name, opts in cases}}
        entry.update(settings)


def forget_removed(folder: Path) -> None:
    """A section's folder about to be made: where it is not there (removed by hand to start the
    section over), an entry left for it goes, or the new run would be held to the settings, the
    order and the choices of results that are gone (and refused when they differ)."""
    folder = Path(folder)
    if folder.is_dir() or not path_of(folder.parent).exists():
        return
    with updating(folder.parent) as doc:
        if not folder.is_dir():
            doc["sections"].pop(folder.name, None)


def set_aside(folder: Path, aside: Path) -> None:
    """A section's folder moved aside (--fresh, to `aside` beside it): its entry goes with it,
    so that the folder set aside reads as before and the section starts anew."""
    folder, aside = Path(folder), Path(aside)
    with updating(folder.parent) as doc:
        if folder.name in doc["sections"]:
            doc["sections"][aside.name] = doc["sections"].pop(folder.name)


# --------------------------------------------------------------------------- older trees
def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def _old_choice(path: Path) -> tuple[str, str, list[str]] | None:
    """An older tree's probed choice: 'TARGET DIRECT', then 'CHOICE<TAB>note'."""
    lines = _lines(path)
    if len(lines) < 2:
        return None
    target, _, direct = lines[0].rpartition(" ")
    return target, direct, lines[1].split("\t", 1) + [""]


def migrate(tree: Path, doc: dict | None) -> dict:
    """The record as this version holds it, from what the tree holds: run.json's `doc` (version
    1 or this one), or None for a tree written before run.json (its choices, steps and outcomes
    then read from the files it kept instead); the sections from each folder's manifest.json
    (and state/state.json) where the record has no entry for that folder."""
    doc = older_files(tree) if doc is None else dict(doc, version=VERSION)
    doc["sections"] = dict(doc.get("sections") or {})
    for path in [*sorted(tree.glob(f"*/{manifest.NAME}")), tree / "state" / "state.json"]:
        if path.parent.name not in doc["sections"] and path.is_file():
            doc["sections"][path.parent.name] = _older_manifest(path)
    return doc


def _older_manifest(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"{path} cannot be read ({e})") from None
    try:
        return manifest.migrate(doc)
    except ValueError as e:
        raise RecordError(f"{path} is {e}") from None


def older_files(tree: Path) -> dict:
    """The record of a tree written before run.json, from the files it kept instead."""
    doc = empty()
    if old := _old_choice(tree / "engines"):
        target, direct, (engines, note, *_) = old
        qd1, _, deep = engines.partition(" ")
        doc["engines"] = {"target": target, "direct": direct, "qd1": qd1, "deep": deep or qd1,
                          "note": note}
    if old := _old_choice(tree / "io_uring"):
        target, direct, (options, note, *_) = old
        doc["io_uring"] = {"target": target, "direct": direct, "options": options, "note": note}
    speed = (_lines(tree / "state" / "write_speed") or [""])[0].split("\t")
    if len(speed) == 2 and speed[1].isdigit():
        # an older tree measured it with the run's O_DIRECT setting, which it did not keep
        doc["write_speed"] = {"target": speed[0], "direct": "1", "MBps": int(speed[1])}
    for marker in sorted([*tree.glob("*/*.done"), *tree.glob("hosts/*/*/*.done")]):
        folder = marker.parent.relative_to(tree)
        if "." not in folder.name:                       # not a folder set aside by --fresh
            doc["steps"][f"{folder}/{marker.stem}"] = " ".join(_lines(marker)[:1])
    for line in _lines(tree / "report_status.tsv"):
        section, code, started, error = (line.split("\t", 3) + ["", "", ""])[:4]
        if code != "skipped" and not code.isdigit():
            continue
        doc["status"][section] = {"exit": None if code == "skipped" else int(code),
                                  "started": int(float(started or 0)), "error": error.strip()}
    return doc


def outcomes_table(doc: dict) -> str:
    rows = ["| part | exit code | last error |", "|---|---|---|"]
    for section, st in doc["status"].items():
        code = "skipped" if st["exit"] is None else st["exit"]
        rows.append(f"| {section} | {code} | {st['error'].replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


# --------------------------------------------------------------------------- command line
USAGE = """usage: python -m analysis record TREE show
       python -m analysis record TREE outcomes
       python -m analysis record TREE status SECTION EXIT|skipped|outside STARTED ERROR
       python -m analysis record TREE clear-status"""


def main(argv: list[str]) -> int:
    """report.bash's way in: each section's outcome; `show` prints the record, `outcomes` the
    last report run's as a Markdown table (a CI job's summary)."""
    if len(argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    tree, verb, args = Path(argv[0]), argv[1], argv[2:]
    try:
        if verb == "show" and not args:
            print(json.dumps(load(tree), indent=2, sort_keys=True))
        elif verb == "outcomes" and not args:
            print(outcomes_table(load(tree)))
        elif verb == "status" and len(args) == 4:
            section, code, started, error = args
            set_status(tree, section, None if code in ("skipped", "outside") else int(code),
                       int(started), " ".join(error.split()), outside=code == "outside")
        elif verb == "clear-status" and not args:
            clear_status(tree)
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (RecordError, ValueError) as e:
        print(f"record: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"record: cannot write {path_of(tree)}: {e.strerror}", file=sys.stderr)
        return 1
    return 0
