"""Whether a run's --state and --purge are how its results tree's drive state was prepared.

The state (the purge, then the sequential writes) is done once per results tree, before its first
section, and every section of the tree is measured in it (lib/state.bash). A later run that asks
for another state or another purge is not measured in what it asked for; it is refused before
anything is touched, naming how the tree was prepared and the ways out (issue 41: an option is
never silently overridden by the record), or, with --fresh-state, the state is prepared anew once
the old one and every section measured in it are moved aside.

What the tree was prepared with is read from the record (sections.state: state, target,
region_bytes) and from the purge's own record, state/purge.json (`method`): the purge done, not
the one asked for (an interrupted purge left no purge.json, and nothing was purged). `--purge
auto` asks for no method: it goes on in the method the tree was purged with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.run import record

STATE = "state"


@dataclass(frozen=True)
class Prepared:
    """How the tree's drive state was prepared: its settings, and the purge done (or '')."""

    state: str
    target: str
    region_bytes: str
    purge: str          # the method done: format, sanitize, discard, punch-hole; '' if unknown


def prepared(tree: Path) -> Prepared | None:
    """The tree's state as prepared, None where no state was prepared (or its folder is gone)."""
    entry = record.sections(Path(tree)).get(STATE)
    if not entry:
        return None
    purge = ""
    try:
        purge = str(json.loads((Path(tree) / STATE / "purge.json").read_text()).get("method", ""))
    except (OSError, ValueError):
        pass  # no purge done yet (or an older tree's): no method to hold a run to
    return Prepared(str(entry.get("state", "")), str(entry.get("target", "")),
                    str(entry.get("region_bytes", "")), purge)


def differences(p: Prepared, state: str, target: str, region_bytes: str, purge_asked: str,
                purge_method: str) -> list[str]:
    """How the run's settings differ from the tree's: ['--purge discard (now format)', ...]."""
    out = []
    if p.state != state:
        out.append(f"--state {p.state} (now {state})")
    if p.purge and purge_asked != "auto" and purge_method != p.purge:
        out.append(f"--purge {p.purge} (now {purge_method})")
    if p.target != target:
        out.append(f"target {p.target} (now {target})")
    if p.region_bytes != region_bytes:
        out.append(f"a region of {p.region_bytes} bytes (now {region_bytes})")
    return out


def measured_in(tree: Path) -> list[str]:
    """The sections of the tree measured in its prepared state (not those set aside, nor those
    measured as-is, whose numbers do not claim a state)."""
    return [name for name, entry in record.sections(Path(tree)).items()
            if name != STATE and "." not in name and entry.get("state") not in (None, "", "as-is")]


def check(tree: Path, state: str, target: str, region_bytes: str, purge_asked: str,
          purge_method: str, fresh_state: bool) -> tuple[str, str]:
    """('ok', ''), ('redo', the folders to move aside, space-separated: state first) or
    ('refused', what happened and the ways out)."""
    p = prepared(tree)
    if p is None or state == "as-is":
        return "ok", ""
    diff = differences(p, state, target, region_bytes, purge_asked, purge_method)
    if not diff:
        return "ok", ""
    sections = measured_in(tree)
    if fresh_state:
        return "redo", " ".join([STATE, *sections])
    how = f"--state {p.state}" + (f" --purge {p.purge}" if p.purge else "")
    same = how if p.target == target and p.region_bytes == region_bytes else \
        f"its target ({p.target}), its region ({p.region_bytes} bytes) and {how}"
    held = (f"; {', '.join(sections)} {'holds' if len(sections) == 1 else 'hold'} results "
            "measured in it" if sections else "")
    return "refused", (
        f"{Path(tree) / STATE} was prepared with other settings: {', '.join(diff)}; its drive "
        f"state is {how}{held}. This run would not be measured in the state it asks for. "
        f"Give --results DIR for a results tree of its own; or add --fresh-state to prepare "
        f"the state anew in this tree (the state and the sections measured in it are moved "
        f"aside, never deleted); or give {same} to go on in the state it has.")
