"""What a section leaves for the whole report: its headline numbers and its anomalies.

Each section's analysis writes tables/<section>_facts.json beside its CSV; `analysis report`
reads them for the conclusion and the "Anomalies and limitations" section, so the report states
what the data say without parsing any snippet's text. The anomalies every section shares
(health counters that moved across the section) are found here; the unstable points in
analysis.sections.common, beside the stability line.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.device.health import THROTTLE_KEYS, health_delta, health_summary
from analysis.render import claims

# Counters whose movement during a run is news (host bytes and power-on hours always move).
ALARM_KEYS = ("media_errors", "error_log_entries", "unsafe_shutdowns", "percentage_used",
              *THROTTLE_KEYS)

# The headline kinds the conclusion lists, in its order: key -> what the number is.
HEADLINE_KINDS = {
    "qd1_latency": "QD=1 latency",
    "peak_random_iops": "Peak random IOPS",
    "peak_seq_MBps": "Peak sequential MB/s",
    "knee": "Queue-depth knee",
    "slc_cache": "Write cache (SLC) estimate",
    "steady_state": "Sustained (steady-state) write MB/s",
    "cache_recovery": "Write-cache recovery",  # its text names the unit: GiB per idle minute
    "pts": "SNIA PTS tracking variables (steady-state window)",
}


@dataclass
class Headline:
    kind: str  # a key of HEADLINE_KINDS
    label: str  # what it is measured on: '4 KiB random read'
    text: str  # the number as the report shows it: '103 µs mean, p99 627 µs'
    value: float | None = None  # the main number, for machines (CI, dashboards)
    unit: str = ""
    std: float | None = None  # its sample std over the repetitions (the history's error bar)
    # How it was measured when that can differ between runs of one label ('peak search',
    # 'jobs 4'): the history keeps such runs in separate series (analysis.history.trends).
    settings: str = ""
    # the half-width of its 95% interval over the repetitions (t), where the number is a mean:
    # the history's error bar (its std is kept for runs recorded before it)
    ci95: float | None = None


@dataclass
class Anomaly:
    kind: str  # 'unstable' | 'little' | 'health' | 'throttle' | ... (for machines)
    text: str  # one sentence for the report


@dataclass
class Facts:
    headlines: list[Headline] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    state: str = ""  # the drive's state before the section, as its setup line says it
    # the snippet's setup line, field by field (analysis.render.markdown.setup_fields), and as
    # written: the report states the fields its sections share once, and puts in place of each
    # section's line only what differs
    setup: dict[str, str] = field(default_factory=dict)
    setup_line: str = ""
    # the snippet's finding lines that its anomalies say again (the Stability and Host-bound
    # lines): the report, whose Anomalies table says them, leaves them out; the section's own
    # page keeps them
    repeated: list[str] = field(default_factory=list)

    def headline(self, kind: str, label: str, text: str, value: float | None = None,
                 unit: str = "", std: float | None = None, settings: str = "",
                 ci95: float | None = None, qualifiers: tuple[str, ...] = ()) -> None:
        """A number for the conclusion. `qualifiers` say what limits it (host-bound, an
        indication only): they stay with the number wherever it is quoted (claims.qualified)."""
        if kind not in HEADLINE_KINDS:
            raise ValueError(f"unknown headline kind {kind!r}")
        self.headlines.append(Headline(kind, label, claims.qualified(text, qualifiers), _plain(value), unit, _plain(std),
                                       settings, _plain(ci95)))

    def anomaly(self, kind: str, text: str) -> None:
        self.anomalies.append(Anomaly(kind, text))


def _plain(value):
    """A JSON-able number: numpy scalars become floats, NaN becomes None."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def health_anomalies(results_dir: Path) -> list[Anomaly]:
    """Counters that moved between the section's before and after health snapshots."""
    before, after = results_dir / "health" / "before", results_dir / "health" / "after"
    if not (before.is_dir() and after.is_dir()):
        return []
    delta = health_delta(health_summary(before), health_summary(after))
    if not delta["available"]:
        return []
    moved = [f"{key} +{delta[key]}" for key in ALARM_KEYS if delta.get(key)]
    out = []
    if delta["throttled"]:
        out.append(Anomaly("throttle", "the drive throttled itself for heat during the section ("
                           + ", ".join(m for m in moved if m.split()[0] in THROTTLE_KEYS)
                           + "): the numbers after it are of a hot drive."))
    other = [m for m in moved if m.split()[0] not in THROTTLE_KEYS]
    if other:
        out.append(Anomaly("health", "health counters moved during the section: "
                           + ", ".join(other) + "."))
    return out


def write(path: Path, section: str, facts: Facts) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"section": section, "headlines": [asdict(h) for h in facts.headlines],
           "anomalies": [asdict(a) for a in facts.anomalies], "state": facts.state,
           "setup": facts.setup, "setup_line": facts.setup_line, "repeated": facts.repeated}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def read(path: Path) -> Facts:
    doc = json.loads(path.read_text())
    return Facts([Headline(**h) for h in doc.get("headlines", [])],
                 [Anomaly(**a) for a in doc.get("anomalies", [])], doc.get("state", ""),
                 doc.get("setup") or {}, doc.get("setup_line") or "", doc.get("repeated") or [])
