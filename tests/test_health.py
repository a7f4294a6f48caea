"""analysis.device.health against recorded smartctl / nvme-cli JSON of real drives (tests/fixtures/health,
see SOURCES.md there): every parsed value must equal the tool's own field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.device.health import (
    NVME_DATA_UNIT_BYTES,
    SUMMARY_KEYS,
    health_delta,
    health_summary,
    parse_nvme_id_ctrl,
    parse_nvme_smart_log,
    parse_smartctl,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "health"
SMARTCTL_NVME = ["smartctl-nvme-seagate-firecuda530.json", "smartctl-nvme-samsung-970evoplus.json"]
SMART_LOGS = ["nvme-smart-log-v1.json", "nvme-smart-log-v2.11.json"]


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def attribute(doc: dict, attr_id: int) -> int:
    """Raw value of ATA attribute attr_id, straight from smartctl's table."""
    return next(a["raw"]["value"] for a in doc["ata_smart_attributes"]["table"] if a["id"] == attr_id)


def raw_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    """A raw directory as collect_health_raw leaves it: {file name there: fixture file}."""
    for name, fixture in files.items():
        shutil.copy(FIXTURES / fixture, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("name", SMARTCTL_NVME)
def test_smartctl_nvme_fields_equal_the_log(name):
    doc = load(name)
    log = doc["nvme_smart_health_information_log"]
    got = parse_smartctl(doc)
    assert got["available"] is True
    assert got["protocol"] == "NVMe"
    assert got["temperature_c"] == log["temperature"] == doc["temperature"]["current"]
    assert got["percentage_used"] == log["percentage_used"]
    assert got["data_units_read"] == log["data_units_read"]
    assert got["data_units_written"] == log["data_units_written"]
    assert got["host_read_bytes"] == log["data_units_read"] * 512_000
    assert got["host_written_bytes"] == log["data_units_written"] * 512_000
    assert got["media_errors"] == log["media_errors"]
    assert got["critical_warning"] == log["critical_warning"]
    assert got["power_on_hours"] == log["power_on_hours"] == doc["power_on_time"]["hours"]
    assert got["unsafe_shutdowns"] == log["unsafe_shutdowns"]
    assert got["warning_temp_time_min"] == log["warning_temp_time"]
    assert got["available_spare"] == log["available_spare"] == 100
    assert got["available_spare_threshold"] == log["available_spare_threshold"]
    assert got["model"] == doc["model_name"]
    assert got["capacity_bytes"] == doc["user_capacity"]["bytes"]
    assert got["smart_passed"] is True
    # smartctl 7.3 has no thermal-management counters in its JSON: None, not 0.
    assert got["thermal_management_t1_trans_count"] is None


def test_smartctl_nvme_known_values():
    """One drive's numbers written out, so a parser that reads the wrong field cannot pass."""
    got = parse_smartctl(load("smartctl-nvme-samsung-970evoplus.json"))
    assert (got["temperature_c"], got["data_units_written"], got["error_log_entries"]) == (35, 1969459, 22)
    assert got["host_written_bytes"] == 1_008_363_008_000


def test_smartctl_sata_total_lbas_times_logical_block():
    doc = load("smartctl-sata-samsung-mz7wd240.json")
    got = parse_smartctl(doc)
    assert got["available"] is True and got["protocol"] == "ATA"
    assert got["temperature_c"] == doc["temperature"]["current"] == 27
    assert got["host_written_bytes"] == attribute(doc, 241) * doc["logical_block_size"]
    assert got["host_written_bytes"] == 218759569150 * 512
    assert got["host_read_bytes"] is None  # this drive has no read counter
    assert got["power_on_hours"] == doc["power_on_time"]["hours"] == attribute(doc, 9)
    assert got["media_errors"] == attribute(doc, 187)  # Uncorrectable_Error_Cnt
    assert got["capacity_bytes"] == doc["user_capacity"]["bytes"]
    # NVMe-only notions stay None on SATA.
    assert got["critical_warning"] is None
    assert got["data_units_written"] is None
    assert got["percentage_used"] is None


def test_smartctl_sata_intel_counts_in_32mib():
    """Total_LBAs_* hold the Host_Writes_32MiB count on this Intel: 32 MiB units, not 512 B."""
    doc = load("smartctl-sata-intel-s3520.json")
    got = parse_smartctl(doc)
    assert attribute(doc, 241) == attribute(doc, 225)  # the premise, from the drive itself
    assert got["host_written_bytes"] == attribute(doc, 225) * 32 * 2**20
    assert got["host_read_bytes"] == attribute(doc, 242) * 32 * 2**20
    assert "Host_Writes_32MiB" in got["host_bytes_basis"]
    assert got["unsafe_shutdowns"] == attribute(doc, 174) == 167
    assert got["media_errors"] == attribute(doc, 195)
    assert got["temperature_c"] == attribute(doc, 194) == 47


@pytest.mark.parametrize("name", SMART_LOGS)
def test_nvme_smart_log_fields_equal_raw(name):
    doc = load(name)
    got = parse_nvme_smart_log(doc)
    warning = doc["critical_warning"]
    assert got["temperature_c"] == doc["temperature"] - 273
    assert got["percentage_used"] == doc["percent_used"]
    assert got["available_spare"] == doc["avail_spare"]
    assert got["available_spare_threshold"] == doc["spare_thresh"] == 5
    assert got["data_units_read"] == doc["data_units_read"]
    assert got["data_units_written"] == doc["data_units_written"]
    assert got["host_written_bytes"] == doc["data_units_written"] * NVME_DATA_UNIT_BYTES
    assert got["media_errors"] == doc["media_errors"]
    assert got["critical_warning"] == (warning["value"] if isinstance(warning, dict) else warning)
    assert got["power_on_hours"] == doc["power_on_hours"]
    assert got["unsafe_shutdowns"] == doc["unsafe_shutdowns"]
    assert got["warning_temp_time_min"] == doc["warning_temp_time"]
    assert got["critical_comp_time_min"] == doc["critical_comp_time"]
    assert got["thermal_management_t1_trans_count"] == doc["thm_temp1_trans_count"]
    assert got["thermal_management_t2_trans_count"] == doc["thm_temp2_trans_count"]
    assert got["thermal_management_t1_total_time_s"] == doc["thm_temp1_total_time"]
    assert got["thermal_management_t2_total_time_s"] == doc["thm_temp2_total_time"]


def test_nvme_smart_log_v211_known_values():
    got = parse_nvme_smart_log(load("nvme-smart-log-v2.11.json"))
    assert got["temperature_c"] == 51  # 324 K
    assert got["percentage_used"] == 30
    assert got["thermal_management_t1_trans_count"] == 3
    assert got["thermal_management_t1_total_time_s"] == 1474


def test_nvme_smart_log_numbers_as_strings_or_floats():
    """Some nvme-cli builds print the 128-bit counters as floats or strings: same result."""
    doc = load("nvme-smart-log-v1.json")
    as_floats = {k: float(v) for k, v in doc.items()}
    as_strings = {k: str(v) for k, v in doc.items()}
    assert parse_nvme_smart_log(as_floats) == parse_nvme_smart_log(doc)
    assert parse_nvme_smart_log(as_strings) == parse_nvme_smart_log(doc)


def test_nvme_id_ctrl_identity_is_stripped():
    doc = load("nvme-id-ctrl-wdc-sn730.json")
    got = parse_nvme_id_ctrl(doc)
    assert got == {
        "model": doc["mn"].strip(),
        "serial": doc["sn"].strip(),
        "firmware": doc["fr"],
        "capacity_bytes": doc["tnvmcap"],
        "warning_temp_c": 84,  # WCTEMP 357 K
        "thermal_management": True,  # HCTMA 1: it keeps the thermal-management counters
    }
    assert got["model"] == "WDC PC SN730 SDBQNTY-256G-1001"
    # QEMU's controller (the committed sample's id-ctrl): HCTMA 0, no such counters kept
    qemu = json.loads((FIXTURES.parents[2] / "docs/sample/results/env-raw/nvme-id-ctrl.json")
                      .read_text())
    assert qemu["hctma"] == 0 and parse_nvme_id_ctrl(qemu)["thermal_management"] is False


def test_summary_prefers_nvme_smart_log_and_keeps_smartctl_identity(tmp_path):
    raw = raw_dir(tmp_path, {"smartctl.json": "smartctl-nvme-samsung-970evoplus.json",
                             "nvme-smart-log.json": "nvme-smart-log-v2.11.json"})
    (raw / "health_device.txt").write_text("/dev/nvme0n1\n")
    log = load("nvme-smart-log-v2.11.json")
    got = health_summary(raw)
    assert set(got) == set(SUMMARY_KEYS)
    assert got["available"] is True and got["reason"] == ""
    assert got["source"] == "nvme smart-log"
    assert got["device"] == "/dev/nvme0n1"
    assert got["model"] == "Samsung SSD 970 EVO Plus 250GB"  # identity from smartctl
    assert got["data_units_written"] == log["data_units_written"]  # counters from smart-log
    assert got["thermal_management_t1_trans_count"] == log["thm_temp1_trans_count"]


def test_summary_nvme_identity_from_id_ctrl_without_smartctl(tmp_path):
    raw = raw_dir(tmp_path, {"nvme-smart-log.json": "nvme-smart-log-v1.json",
                             "nvme-id-ctrl.json": "nvme-id-ctrl-wdc-sn730.json"})
    got = health_summary(raw)
    assert got["source"] == "nvme smart-log" and got["protocol"] == "NVMe"
    assert got["model"] == "WDC PC SN730 SDBQNTY-256G-1001"
    assert got["serial"] == "1951B3444502"
    assert got["capacity_bytes"] == 256060514304


def test_summary_sata_from_smartctl(tmp_path):
    raw = raw_dir(tmp_path, {"smartctl.json": "smartctl-sata-samsung-mz7wd240.json"})
    got = health_summary(raw)
    assert got["available"] is True and got["source"] == "smartctl"
    assert got["model"] == "SAMSUNG MZ7WD240HAFV-00003"
    assert got["smartctl_exit_status"] == 0 and got["smartctl_exit_bits"] == []


def test_summary_unavailable_gives_smartctls_reason(tmp_path):
    """smartctl's answer on a virtio disk, as it prints it (exit status 1, a message, no data)."""
    doc = {
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "exit_status": 1,
                     "messages": [{"string": "/dev/vda: Unable to detect device type",
                                   "severity": "error"}]},
    }
    (tmp_path / "smartctl.json").write_text(json.dumps(doc))
    (tmp_path / "smartctl.err").write_text("smartctl: exit 1\n")
    got = health_summary(tmp_path)
    assert got["available"] is False and got["source"] == ""
    assert got["reason"] == "unavailable on this device: smartctl: /dev/vda: Unable to detect device type"
    assert all(got[k] is None for k in ("temperature_c", "model", "host_written_bytes"))


def test_summary_of_an_empty_directory_says_why(tmp_path):
    (tmp_path / "smartctl.err").write_text("smartctl: no block device to query for tmpfs\n")
    got = health_summary(tmp_path)
    assert got["available"] is False
    assert got["reason"] == "unavailable on this device: smartctl: no block device to query for tmpfs"
    assert "unavailable on this device" in health_summary(tmp_path / "absent")["reason"]


def _summary_of(tmp_path: Path, name: str, doc: dict) -> dict:
    (tmp_path / name).mkdir()
    (tmp_path / name / "nvme-smart-log.json").write_text(json.dumps(doc))
    return health_summary(tmp_path / name)


def test_delta_counts_what_moved(tmp_path):
    doc = load("nvme-smart-log-v1.json")
    after_doc = dict(doc, data_units_written=doc["data_units_written"] + 2048,
                     temperature=doc["temperature"] + 6, thm_temp1_trans_count=2,
                     thm_temp1_total_time=40)
    before = _summary_of(tmp_path, "before", doc)
    after = _summary_of(tmp_path, "after", after_doc)
    got = health_delta(before, after)
    assert got["available"] is True
    assert got["host_written_bytes"] == 2048 * 512_000
    assert got["data_units_written"] == 2048
    assert got["host_read_bytes"] == 0 and got["media_errors"] == 0
    assert got["temperature_change_c"] == 6
    assert (got["temperature_c_before"], got["temperature_c_after"]) == (37, 43)
    assert got["throttled"] is True
    assert got["moved"] == ["host_written_bytes", "data_units_written",
                            "thermal_management_t1_trans_count", "thermal_management_t1_total_time_s"]


def test_delta_of_unavailable_or_mixed_units_is_none(tmp_path):
    nvme = _summary_of(tmp_path, "nvme", load("nvme-smart-log-v1.json"))
    sata = parse_smartctl(load("smartctl-sata-samsung-mz7wd240.json"))
    got = health_delta(nvme, sata)
    assert got["host_written_bytes"] is None  # data units vs LBAs: not comparable
    empty = health_summary(tmp_path / "absent")
    got = health_delta(empty, empty)
    assert got["available"] is False and got["moved"] == [] and got["throttled"] is False
    assert got["temperature_change_c"] is None
