"""§6 analysis on fixed inputs: health across the section from recorded nvme-cli JSON, and the
parts a case belongs to, read from the JSON's own job options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from analysis.cases import Case
from analysis.fio_json import read_groups
from analysis.sections.wss_burst import fio_bytes_written, health_findings
from tests.conftest import need

FIXTURES = Path(__file__).parent / "fixtures" / "health"


def write_case(fio_runs) -> dict[str, Case]:
    run = need(fio_runs, "randrw")  # a real 70/30 randrw run: it wrote something
    return {"randrw": Case("randrw", [read_groups(run["path"])[0]], [])}


def snapshot(where: Path, doc: dict) -> None:
    where.mkdir(parents=True)
    (where / "nvme-smart-log.json").write_text(json.dumps(doc))


def test_host_writes_against_fio_bytes_and_throttling(tmp_path, fio_runs):
    cases = write_case(fio_runs)
    written = fio_bytes_written(cases)
    doc = json.loads((FIXTURES / "nvme-smart-log-v1.json").read_text())
    # The same real log after the section: 2048 more data units (of 512,000 B) written, 6 °C
    # warmer, a thermal-management transition (the only fields changed).
    after = dict(doc, data_units_written=doc["data_units_written"] + 2048,
                 temperature=doc["temperature"] + 6, thm_temp1_trans_count=1)
    snapshot(tmp_path / "health" / "before", doc)
    snapshot(tmp_path / "health" / "after", after)
    (text,) = health_findings(tmp_path, cases, peak_c=45.0)
    assert f"fio wrote {written / 1e9:,.1f} GB" in text or f"({written / 1e9:,.1f} GB)" in text
    assert f"the drive counted {2048 * 512_000 / 1e9:,.1f} GB of host writes" in text
    assert f"({2048 * 512_000 / written:.2f}× fio's" in text
    assert "temperature 37 → 43 °C, peak 45 °C during the burst" in text
    assert "throttle counters moved: thermal_management_t1_trans_count." in text


def test_nothing_moved_and_unavailable(tmp_path, fio_runs):
    cases = write_case(fio_runs)
    doc = json.loads((FIXTURES / "nvme-smart-log-v2.11.json").read_text())
    snapshot(tmp_path / "a" / "health" / "before", doc)
    snapshot(tmp_path / "a" / "health" / "after", doc)
    (text,) = health_findings(tmp_path / "a", cases, peak_c=None)
    assert "no throttle counter moved." in text and "peak" not in text

    for side in ("before", "after"):
        (tmp_path / "b" / "health" / side).mkdir(parents=True)
        (tmp_path / "b" / "health" / side / "smartctl.err").write_text(
            "smartctl: /dev/vda: Unable to detect device type\n")
    (text,) = health_findings(tmp_path / "b", cases, peak_c=None)
    assert "unavailable on this device" in text and "Unable to detect device type" in text
    shutil.rmtree(tmp_path / "b" / "health")
    (text,) = health_findings(tmp_path / "b", cases, peak_c=None)
    assert text.endswith("no before/after health snapshots were taken.")
