"""The report's methodology table (issue 24): each section's row shows how long its cases run,
including a case that sets its own runtime (§6's burst runs --duration, not the profile's)."""

from __future__ import annotations

import json

from analysis.report.build import SectionState, methodology
from analysis.sections.facts import Facts
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results"


def row(section: str, manifest: dict) -> list[str]:
    lines = methodology([SectionState(section, manifest, "", 0.0, Facts(), None)])
    table = [line for line in "\n".join(lines).splitlines() if line.startswith("|")]
    return [cell.strip() for cell in table[-1].strip("|").split("|")]


def test_wss_burst_row_shows_the_bursts_duration():
    # the fixture's §6 ran the quick profile (runtime 1 s) with a 10 s burst
    manifest = json.loads((FIXTURE / "wss_burst" / "manifest.json").read_text())
    cells = row("wss_burst", manifest)
    assert cells[2] == "1 s + 0 s ramp; burst-write-128k 10 s"


def test_a_section_without_own_runtimes_keeps_its_row():
    manifest = json.loads((FIXTURE / "qd1" / "manifest.json").read_text())
    cells = row("qd1", manifest)
    assert cells[2] == f"{manifest['runtime']} s + {manifest['ramp']} s ramp"
