"""Device health from the tools' own JSON: `smartctl -j -a`, `nvme smart-log -o json` and
`nvme id-ctrl -o json`.

lib/collect.bash (collect_health_raw) leaves those outputs in a directory; `health_summary` turns
the directory into one flat dict with the same keys for every device, None where the device does
not report a value. `health_delta` compares two summaries taken before and after a run.

Units are decided here, once:
- NVMe "data units" are 1000 x 512 bytes by the NVMe spec, whatever the LBA format.
- nvme-cli reports temperatures in kelvin, smartctl in Celsius; both convert with 273.
- ATA has no standard byte counter. Attribute names that state their unit (Host_Writes_32MiB,
  Host_Writes_GiB...) are trusted first; Total_LBAs_Written/Read are counted in logical blocks
  unless the same drive's unit-named counter carries the very same number (Intel firmware counts
  241/242 in 32 MiB while smartctl still calls them Total_LBAs_*).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from analysis.device.nand_writes import media_written

NVME_DATA_UNIT_BYTES = 1000 * 512
KELVIN_OFFSET = 273
UNAVAILABLE = "unavailable on this device"

# Counters health_delta subtracts (after - before); the thermal ones rise only while the drive is
# above its warning/critical temperature or throttling itself.
THROTTLE_KEYS = (
    "warning_temp_time_min",
    "critical_comp_time_min",
    "thermal_management_t1_trans_count",
    "thermal_management_t2_trans_count",
    "thermal_management_t1_total_time_s",
    "thermal_management_t2_total_time_s",
)

# Every key health_summary returns, in the order out/env.txt shows them.
SUMMARY_KEYS = (
    "available",
    "reason",
    "source",
    "device",
    "protocol",
    "model",
    "serial",
    "firmware",
    "capacity_bytes",
    "smart_passed",
    "critical_warning",
    "temperature_c",
    "warning_temp_c",  # the temperature at which the drive starts to throttle (NVMe WCTEMP)
    # NVMe HCTMA bit 0: the drive keeps the thermal-management counters (throttling it counts)
    "thermal_management",
    "percentage_used",
    "available_spare",
    "available_spare_threshold",  # below it, the drive warns (critical warning bit 0)
    "data_units_read",
    "data_units_written",
    "host_read_bytes",
    "host_written_bytes",
    "host_bytes_basis",
    "media_written_bytes",
    "media_bytes_basis",
    "media_errors",
    "error_log_entries",
    "power_on_hours",
    "power_cycles",
    "unsafe_shutdowns",
    *THROTTLE_KEYS,
    "smartctl_exit_status",
    "smartctl_exit_bits",
)

# nvme-cli smart-log key -> summary key (counters copied as they are).
_NVME_CLI_KEYS = {
    "percent_used": "percentage_used",
    "avail_spare": "available_spare",
    "spare_thresh": "available_spare_threshold",
    "data_units_read": "data_units_read",
    "data_units_written": "data_units_written",
    "media_errors": "media_errors",
    "critical_warning": "critical_warning",
    "num_err_log_entries": "error_log_entries",
    "power_on_hours": "power_on_hours",
    "power_cycles": "power_cycles",
    "unsafe_shutdowns": "unsafe_shutdowns",
    # The spec counts these two in minutes and the thermal-management times in seconds.
    "warning_temp_time": "warning_temp_time_min",
    "critical_comp_time": "critical_comp_time_min",
    "thm_temp1_trans_count": "thermal_management_t1_trans_count",
    "thm_temp2_trans_count": "thermal_management_t2_trans_count",
    "thm_temp1_total_time": "thermal_management_t1_total_time_s",
    "thm_temp2_total_time": "thermal_management_t2_total_time_s",
}

# smartctl's nvme_smart_health_information_log key -> summary key. smartctl (7.3) does not put the
# thermal-management counters in its JSON, which is why NVMe devices also get nvme smart-log.
# smartctl's names for the same counters: two renamed, and no thermal-management ones.
_SMARTCTL_RENAMED = {"percent_used": "percentage_used", "avail_spare": "available_spare",
                     "spare_thresh": "available_spare_threshold"}
_SMARTCTL_NVME_KEYS = {_SMARTCTL_RENAMED.get(key, key): summary
                       for key, summary in _NVME_CLI_KEYS.items() if not key.startswith("thm_")}

# ATA attributes by name (ids differ between vendors; smartctl's drive database names them).
_ATA_COUNTER_NAMES = {
    "unsafe_shutdowns": ("Unsafe_Shutdown_Count",),
    "media_errors": ("Reported_Uncorrect", "Uncorrectable_Error_Cnt"),
}
_ATA_UNIT_NAME = re.compile(r"^(?:Host|Lifetime|Total)_(Writes|Reads)_(32MiB|GiB|MiB)$")
_ATA_UNIT_BYTES = {"32MiB": 32 * 2**20, "GiB": 2**30, "MiB": 2**20}
_ATA_LBA_NAMES = {"Writes": "Total_LBAs_Written", "Reads": "Total_LBAs_Read"}
_ATA_LBA_PREFERRED_ID = {"Writes": 241, "Reads": 242}

# smartctl exit status bits 2..7 (bits 0/1 mean it could not talk to the device at all).
_SMARTCTL_EXIT_BITS = {
    2: "a SMART or ATA command failed",
    3: "SMART status says DISK FAILING",
    4: "prefail attributes at or below threshold",
    5: "attributes were at or below threshold in the past",
    6: "the error log has records",
    7: "the self-test log has errors",
}

DELTA_KEYS = (
    "host_written_bytes",
    "media_written_bytes",
    "host_read_bytes",
    "data_units_written",
    "data_units_read",
    "media_errors",
    "error_log_entries",
    "unsafe_shutdowns",
    "power_on_hours",
    "percentage_used",
    *THROTTLE_KEYS,
)


def as_int(value) -> int | None:
    """An integer from the shapes tools print: int, float (some nvme-cli builds print counters as
    floats), digit strings, or nvme-cli's {"value": N, ...} breakdown of critical_warning."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    if isinstance(value, dict) and "value" in value:
        return as_int(value["value"])
    return None


def _strip(value) -> str | None:
    """Identity strings come space-padded from the drive (NVMe mn/sn are fixed-width fields)."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _empty() -> dict:
    return {key: None for key in SUMMARY_KEYS}


def _host_bytes_from_units(out: dict) -> dict:
    units_r, units_w = out.get("data_units_read"), out.get("data_units_written")
    out["host_read_bytes"] = None if units_r is None else units_r * NVME_DATA_UNIT_BYTES
    out["host_written_bytes"] = None if units_w is None else units_w * NVME_DATA_UNIT_BYTES
    if units_r is not None or units_w is not None:
        out["host_bytes_basis"] = "NVMe data units x 512000 B"
    return out


def parse_nvme_smart_log(doc: dict) -> dict:
    """`nvme smart-log DEV -o json` -> summary fields (temperature from kelvin to Celsius)."""
    out = {key: as_int(doc.get(src)) for src, key in _NVME_CLI_KEYS.items()}
    kelvin = as_int(doc.get("temperature"))
    # 0 K means the controller reports no composite temperature (smartctl reads it the same way).
    out["temperature_c"] = kelvin - KELVIN_OFFSET if kelvin else None
    return _host_bytes_from_units(out)


def _exit_bits(status: int | None) -> list[str]:
    if not status:
        return []
    return [text for bit, text in _SMARTCTL_EXIT_BITS.items() if status & (1 << bit)]


def _ata_attributes(table: list) -> list[dict]:
    """(id, name, raw value) of each attribute; raw.value is smartctl's decoded raw counter."""
    rows = []
    for attr in table:
        if isinstance(attr, dict):
            raw = attr.get("raw") if isinstance(attr.get("raw"), dict) else {}
            rows.append({"id": attr.get("id"), "name": attr.get("name"),
                         "raw": as_int(raw.get("value"))})
    return rows


def _first_named(rows: list[dict], names: tuple[str, ...]) -> int | None:
    for name in names:
        for row in rows:
            if row["name"] == name and row["raw"] is not None:
                return row["raw"]
    return None


def _lba_row(rows: list[dict], direction: str) -> dict | None:
    """Total_LBAs_Written/Read; some drives list the name twice (Intel: 233 and 241)."""
    matches = [r for r in rows if r["name"] == _ATA_LBA_NAMES[direction] and r["raw"] is not None]
    preferred = [r for r in matches if r["id"] == _ATA_LBA_PREFERRED_ID[direction]]
    return (preferred or matches or [None])[0]


def _ata_host_bytes(rows: list[dict], block_size: int | None) -> dict:
    """host_read_bytes / host_written_bytes and the basis they were computed on."""
    unit_rows = {}
    for row in rows:
        match = _ATA_UNIT_NAME.match(row["name"] or "")
        if match and row["raw"] is not None and match.group(1) not in unit_rows:
            unit_rows[match.group(1)] = (row, _ATA_UNIT_BYTES[match.group(2)])
    # The LBA counters' unit: a logical block, unless the drive's unit-named write counter holds
    # the same number as Total_LBAs_Written, which shows the firmware counts in that unit.
    lba_unit, lba_note = block_size, f"{block_size} B logical blocks"
    lba_written = _lba_row(rows, "Writes")
    named_writes, named_unit = unit_rows.get("Writes", (None, None))
    if named_writes and lba_written and lba_written["raw"] == named_writes["raw"]:
        lba_unit = named_unit
        lba_note = f"{lba_unit} B, the unit of {named_writes['name']} which holds the same count"
    out, basis = {}, []
    for direction, key in (("Writes", "host_written_bytes"), ("Reads", "host_read_bytes")):
        if direction in unit_rows:
            row, unit = unit_rows[direction]
            out[key] = row["raw"] * unit
            basis.append(f"{key}: ATA {row['id']} {row['name']} x {unit} B")
            continue
        row = _lba_row(rows, direction)
        if row is not None and lba_unit:
            out[key] = row["raw"] * lba_unit
            basis.append(f"{key}: ATA {row['id']} {row['name']} x {lba_note}")
    out["host_bytes_basis"] = "; ".join(basis) or None
    return out


def _smartctl_messages(doc: dict) -> list[str]:
    messages = (doc.get("smartctl") or {}).get("messages") or []
    return [m["string"] for m in messages if isinstance(m, dict) and m.get("string")]


def parse_smartctl(doc: dict) -> dict:
    """`smartctl -j -a DEV` -> summary fields, plus `available` (the device gave health data) and
    `messages` (smartctl's own words when it could not)."""
    out = _empty()
    device = doc.get("device") or {}
    capacity = (doc.get("user_capacity") or {}).get("bytes") or doc.get("nvme_total_capacity")
    status = (doc.get("smart_status") or {}).get("passed")
    exit_status = as_int((doc.get("smartctl") or {}).get("exit_status"))
    out.update(
        protocol=device.get("protocol"),
        model=_strip(doc.get("model_name")),
        serial=_strip(doc.get("serial_number")),
        firmware=_strip(doc.get("firmware_version")),
        capacity_bytes=as_int(capacity),
        smart_passed=status if isinstance(status, bool) else None,
        temperature_c=as_int((doc.get("temperature") or {}).get("current")),
        power_on_hours=as_int((doc.get("power_on_time") or {}).get("hours")),
        power_cycles=as_int(doc.get("power_cycle_count")),
        percentage_used=as_int((doc.get("endurance_used") or {}).get("current_percent")),
        smartctl_exit_status=exit_status,
        smartctl_exit_bits=_exit_bits(exit_status),
    )
    nvme_log = doc.get("nvme_smart_health_information_log")
    if isinstance(nvme_log, dict):
        for src, key in _SMARTCTL_NVME_KEYS.items():
            if src in nvme_log:
                out[key] = as_int(nvme_log[src])
        if out["temperature_c"] is None:
            out["temperature_c"] = as_int(nvme_log.get("temperature"))
        _host_bytes_from_units(out)
    table = (doc.get("ata_smart_attributes") or {}).get("table")
    if isinstance(table, list):
        rows = _ata_attributes(table)
        for key, names in _ATA_COUNTER_NAMES.items():
            out[key] = _first_named(rows, names)
        out.update(_ata_host_bytes(rows, as_int(doc.get("logical_block_size"))))
    out["available"] = bool(
        isinstance(nvme_log, dict)
        or isinstance(table, list)
        or out["temperature_c"] is not None
        or out["power_on_hours"] is not None
        or out["smart_passed"] is not None
    )
    out["messages"] = _smartctl_messages(doc)
    return out


def parse_nvme_id_ctrl(doc: dict) -> dict:
    """`nvme id-ctrl DEV -o json` -> identity. mn/sn/fr are space-padded; tnvmcap 0 means the
    controller does not report it."""
    wctemp = as_int(doc.get("wctemp"))  # kelvin; 0: not reported
    hctma = as_int(doc.get("hctma"))
    return {
        "model": _strip(doc.get("mn")),
        "serial": _strip(doc.get("sn")),
        "firmware": _strip(doc.get("fr")),
        "capacity_bytes": as_int(doc.get("tnvmcap")) or None,
        "warning_temp_c": wctemp - KELVIN_OFFSET if wctemp else None,
        "thermal_management": None if hctma is None else bool(hctma & 0x1),
    }


def _load_json(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _err_line(path: Path) -> str | None:
    """A .err file from lib/collect.bash, folded into one line."""
    try:
        text = " ".join(path.read_text().split())
    except OSError:
        return None
    return text or None


def _unavailable_reason(raw: Path, smart: dict | None) -> str:
    # smartctl explains itself in its JSON; its .err ("exit 1") only matters when it printed none.
    reasons = [f"smartctl: {m}" for m in (smart or {}).get("messages", [])]
    for name, tool, label in (
        ("smartctl.err", "smartctl", "smartctl"),
        ("nvme-smart-log.err", "nvme", "nvme smart-log"),
    ):
        line = _err_line(raw / name)
        if line and not (tool == "smartctl" and reasons):
            reasons.append(f"{label}: {line.removeprefix(tool + ': ')}")
    return f"{UNAVAILABLE}: " + ("; ".join(reasons) or "no health data was collected")


def health_summary(raw_dir) -> dict:
    """Flat health summary of what collect_health_raw left in raw_dir.

    nvme smart-log is the source for NVMe (it alone has the thermal-management counters); smartctl
    fills identity and everything for SATA/SAS. `reason` says why when nothing is available and
    always contains "unavailable on this device" then.
    """
    raw = Path(raw_dir)
    out = _empty()
    device = raw / "health_device.txt"
    out["device"] = device.read_text().strip() if device.is_file() else None
    smart_doc = _load_json(raw / "smartctl.json")
    smart = parse_smartctl(smart_doc) if smart_doc else None
    nvme_doc = _load_json(raw / "nvme-smart-log.json")
    id_doc = _load_json(raw / "nvme-id-ctrl.json")
    if smart:
        out.update({k: v for k, v in smart.items() if k in out and k != "device"})
    if nvme_doc:
        out.update({k: v for k, v in parse_nvme_smart_log(nvme_doc).items() if v is not None})
        out["protocol"] = out["protocol"] or "NVMe"
    if id_doc:
        for key, value in parse_nvme_id_ctrl(id_doc).items():
            out[key] = out[key] if out[key] is not None else value
    if nvme_doc:
        out.update(media_written(raw))
        out.update(available=True, source="nvme smart-log", reason="")
    elif smart and smart["available"]:
        out.update(available=True, source="smartctl", reason="")
    else:
        out.update(available=False, source="", reason=_unavailable_reason(raw, smart))
    out["smartctl_exit_bits"] = out["smartctl_exit_bits"] or []
    return out


def _sub(after, before):
    return None if after is None or before is None else after - before


def health_delta(before: dict, after: dict) -> dict:
    """What moved between two health summaries: each counter's after - before (None when either
    side lacks it), the temperature change, `moved` (counters that changed) and `throttled`
    (a thermal counter went up during the run)."""
    out = {key: _sub(after.get(key), before.get(key)) for key in DELTA_KEYS}
    # Byte counters in different units (another source, another ATA attribute) do not subtract.
    if before.get("host_bytes_basis") != after.get("host_bytes_basis"):
        out["host_written_bytes"] = out["host_read_bytes"] = None
    out["temperature_c_before"] = before.get("temperature_c")
    out["temperature_c_after"] = after.get("temperature_c")
    out["temperature_change_c"] = _sub(after.get("temperature_c"), before.get("temperature_c"))
    out["available"] = bool(before.get("available") and after.get("available"))
    out["moved"] = [key for key in DELTA_KEYS if out[key]]
    out["throttled"] = any((out[key] or 0) > 0 for key in THROTTLE_KEYS)
    return out
