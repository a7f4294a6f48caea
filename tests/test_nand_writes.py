"""NAND writes and write amplification from recorded drive outputs (tests/fixtures/nand-writes/,
SOURCES.md there): each byte count equal to the one its source states, the WAF equal to the
source's formula applied to the same numbers, and 128-bit counters kept exact past 2^53."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.device.health import health_delta, health_summary
from analysis.device.nand_writes import (
    OCP_FILE,
    VENDOR_FILE,
    describe,
    media_written,
    ocp_media_written,
    vendor_media_written,
    write_amplification,
)

FIXTURES = Path(__file__).parent / "fixtures" / "nand-writes"
HEALTH = Path(__file__).parent / "fixtures" / "health"
EXPECTED = json.loads((FIXTURES / "cachelib-expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_vendor_log_gives_the_bytes_cachelib_expects(name):
    nand, _, vendor = vendor_media_written((FIXTURES / name).read_text())
    assert nand == EXPECTED[name]["stated_nand_write_bytes"], (name, vendor)
    # the rule that read it is the plugin the source ran
    assert vendor == EXPECTED[name]["command"].split()[1]


def test_vendor_logs_that_carry_host_writes_give_their_waf():
    seagate = vendor_media_written((FIXTURES / "cachelib-seagate.txt").read_text())
    assert seagate[1] == 0xefb8d568 * 512_000
    assert seagate[0] / seagate[1] == pytest.approx(0x2d0cdc01b / 0xefb8d568, rel=1e-12)
    intel = vendor_media_written((FIXTURES / "cachelib-intel.txt").read_text())
    assert intel[1] == 172_365_270 * 32 * 2**20
    assert intel[0] / intel[1] == pytest.approx(224_943_088 / 172_365_270, rel=1e-12)
    assert round(seagate[0] / seagate[1], 3) == 3.007 and round(intel[0] / intel[1], 3) == 1.305


def test_autoval_ocp_log_and_its_lifetime_waf():
    doc = json.loads((FIXTURES / "autoval-nvme_ocp_command.json").read_text())
    assert ocp_media_written(doc) == 39_074_645_999_616
    # autoval's calculate_waf: (NAND / 1024^3) / (data units x 512 x 1000 / 1024^3), with the
    # same drive's data_units_written from its test_nvme_drive.py
    before = {"media_written_bytes": 0, "host_written_bytes": 0, "media_bytes_basis": "ocp"}
    after = {"media_written_bytes": ocp_media_written(doc),
             "host_written_bytes": 21_210_849 * 512_000, "media_bytes_basis": "ocp"}
    result = write_amplification(before, after)
    autoval = (39_074_645_999_616 / 1024**3) / (21_210_849 * 512 * 1000 / 1024**3)
    assert result["waf"] == pytest.approx(autoval, rel=1e-12)
    assert round(result["waf"], 3) == 3.598
    assert describe("the drive's life", result).startswith(
        "write amplification of the drive's life: 3.60 (39,074.65 GB to the media")


def test_counters_past_2_to_the_53_stay_exact():
    # nvme-cli >= 2.12 --output-format-version 2: snake_case, and the hi half of a 128-bit count
    big = {"physical_media_units_written": {"hi": 1, "lo": 2**63 + 1}}
    assert ocp_media_written(big) == 2**64 + 2**63 + 1
    assert ocp_media_written({"physical_media_units_written": 2**53 + 1}) == 2**53 + 1
    # a float has already lost the low digits: refused rather than rounded
    assert ocp_media_written({"Physical media units written": 39074645999616.0}) is None
    text = json.dumps({"Physical media units written": {"hi": 0, "lo": 9007199254740993}})
    assert ocp_media_written(json.loads(text)) == 9_007_199_254_740_993


def _capture(tmp: Path, smart_units: int, ocp_lo: int | None) -> Path:
    """A health capture as lib/collect.bash leaves it: a recorded nvme-cli smart-log with its
    data units set, and the OCP log (or its .err, as a drive without it leaves)."""
    tmp.mkdir(parents=True)
    doc = json.loads((HEALTH / "nvme-smart-log-v2.11.json").read_text())
    doc["data_units_written"] = smart_units
    (tmp / "nvme-smart-log.json").write_text(json.dumps(doc))
    if ocp_lo is None:
        (tmp / "nvme-ocp-smart.err").write_text("nvme: exit 1\nInvalid Log Page\n")
        (tmp / "nvme-vendor-log.err").write_text("no vendor log known for PCI vendor 0x1b36\n")
    else:
        ocp = json.loads((FIXTURES / "autoval-nvme_ocp_command.json").read_text())
        ocp["Physical media units written"]["lo"] = ocp_lo
        (tmp / OCP_FILE).write_text(json.dumps(ocp))
    return tmp


def test_waf_between_two_snapshots_of_a_drive(tmp_path):
    before = health_summary(_capture(tmp_path / "b", 21_210_849, 39_074_645_999_616))
    # 1.024 GB more from the host (2,000 data units of 512,000 B), 2.56 GB more to the media
    after = health_summary(_capture(tmp_path / "a", 21_212_849, 39_077_205_999_616))
    assert after["media_written_bytes"] == 39_077_205_999_616
    assert health_delta(before, after)["media_written_bytes"] == 2_560_000_000
    result = write_amplification(before, after)
    assert result == {"waf": 2.5, "media_bytes": 2_560_000_000, "host_bytes": 1_024_000_000}


def test_a_drive_without_nand_counters_says_so(tmp_path):
    before = health_summary(_capture(tmp_path / "b", 100, None))
    after = health_summary(_capture(tmp_path / "a", 300, None))
    assert after["media_written_bytes"] is None
    result = write_amplification(before, after)
    assert result["waf"] is None
    assert "reports no NAND writes" in result["reason"] and "Invalid Log Page" in result["reason"]
    assert "0x1b36" in result["reason"]
    assert describe("the burst", result).startswith("write amplification of the burst: not known")


def test_a_vendor_log_capture_is_read_when_there_is_no_ocp_log(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(FIXTURES / "cachelib-intel.txt", raw / "log")
    (raw / VENDOR_FILE).write_text("nvme intel smart-log-add /dev/nvme0n1\n"
                                   + (raw / "log").read_text())
    got = media_written(raw)
    assert got["media_written_bytes"] == 7_547_837_550_166_016
    assert got["media_bytes_basis"] == "nvme intel smart-log-add /dev/nvme0n1 (intel)"


def test_section_6_states_the_waf_of_each_span_or_why_not(tmp_path):
    from analysis.sections.wss_burst import waf_findings
    tree = tmp_path / "results"
    section = tree / "wss_burst"
    units, lo = 21_210_849, 39_074_645_999_616
    # §1, then the burst (2,000 data units from the host, 2.56 GB to the media: WAF 2.5), then
    # the section's end (2,000 more, 5.12 GB more: 5.0 over the section, 3.75 over the run)
    _capture(tree / "env-raw", units, lo)
    _capture(section / "health" / "before", units, lo)
    (section / "burst-write-128k" / "health").mkdir(parents=True)
    _capture(section / "burst-write-128k" / "health" / "first", units, lo)
    _capture(section / "burst-write-128k" / "health" / "last", units + 2000, lo + 2_560_000_000)
    _capture(section / "health" / "after", units + 4000, lo + 7_680_000_000)
    [text] = waf_findings(section, "burst-write-128k")
    assert "the burst (burst-write-128k): 2.50 (2.56 GB to the media for 1.02 GB" in text
    assert "this section: 3.75 (7.68 GB" in text
    assert "the whole run (§1 to the end of this section): 3.75" in text
    assert "preconditioning" not in text  # none ran
    # a drive with health but no NAND counters: said once, plainly
    plain = tmp_path / "plain" / "wss_burst"
    _capture(plain / "health" / "before", 100, None)
    _capture(plain / "health" / "after", 300, None)
    [text] = waf_findings(plain, None)
    assert text.startswith("**Write amplification:** not known: the drive reports no NAND writes")
