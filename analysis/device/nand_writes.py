"""What the drive wrote to its media (NAND), where it says so, and the write amplification.

The host's writes are in every NVMe SMART log (data units of 512,000 bytes); what the controller
wrote to the flash is not. Datacenter drives report it in the OCP SMART / Health Information
Extended log (log page 0xC0), which nvme-cli prints with `nvme ocp smart-add-log DEV -o json`:
"Physical media units written" is a 128-bit byte count, printed as {"hi": ..., "lo": ...} (the
upper and lower 64 bits; nvme-cli >= 2.12 with `--output-format-version 2` names it
"physical_media_units_written"). Both halves are read as Python ints: a drive's lifetime count
passes 2^53, where a float would round it.

Older drives report it only in their vendor's log, as text: the commands and fields Meta's
CacheLib (cachebench's NandWrites.cpp) reads, each in the unit that code applies, recorded with
their expected byte counts in tests/fixtures/nand-writes/. FioSynth logs whatever such a tool
prints and leaves the reading to its user; Meta's autoval reads the OCP log.

Write amplification (WAF) = NAND bytes written / host bytes written over the same interval, both
read from the drive before and after it; the host's bytes are data_units_written x 512,000.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

OCP_FILE = "nvme-ocp-smart.json"
VENDOR_FILE = "nvme-vendor-log.txt"  # the first line names the command that printed the rest
_OCP_KEYS = ("Physical media units written", "physical_media_units_written")
_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _wide_int(value) -> int | None:
    """A byte counter as nvme-cli prints it: an int, {"hi": H, "lo": L} (H * 2^64 + L), or a
    decimal string. Floats are refused: the counter's low digits would be lost."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, dict) and {"hi", "lo"} <= value.keys():
        hi, lo = _wide_int(value["hi"]), _wide_int(value["lo"])
        return None if hi is None or lo is None else (hi << 64) + lo
    return None


def ocp_media_written(doc: dict | None) -> int | None:
    """Bytes written to the media from `nvme ocp smart-add-log -o json` (either output version)."""
    if not isinstance(doc, dict):
        return None
    for key in _OCP_KEYS:
        if key in doc:
            return _wide_int(doc[key])
    return None


def _number(text: str) -> int:
    return int(text.replace(",", ""), 0)


# (vendor plugin, pattern for the NAND bytes, pattern for the host bytes or None, unit in bytes).
# The units are those CacheLib's NandWrites.cpp applies to each vendor's field.
_VENDOR_RULES = (
    ("samsung", r"^\[\d+:\d+\]\s*PhysicallyWrittenBytes\s*:\s*([\d,]+)\s*$", None, 1),
    ("liteon", r"^Physical\(NAND\) bytes written\s*:\s*([\d,]+)\s*$", None, 1),
    ("seagate", r"^Physical \(NAND\) bytes written\s+\d+\s+(0x[0-9a-fA-F]+)\s*$",
     r"^Physical \(HOST\) bytes written\s+\d+\s+(0x[0-9a-fA-F]+)\s*$", 500 * 1024),
    ("intel", r"^nand_bytes_written\s*:\s*\d+%\s*sectors:\s*(\d+)\s*$",
     r"^host_bytes_written\s*:\s*\d+%\s*sectors:\s*(\d+)\s*$", 32 * 2**20),
    ("skhms", r"^Physical Media Units Written - TLC\s*:\s*(\d+)\s*$", None, 1),
)


def vendor_media_written(text: str | None) -> tuple[int | None, int | None, str | None]:
    """(NAND bytes, host bytes or None, which rule) from a vendor log's text, or Nones."""
    lines = (text or "").splitlines()
    stripped = [line.strip() for line in lines]
    for vendor, nand, host, unit in _VENDOR_RULES:
        found = [m for line in stripped if (m := re.match(nand, line))]
        if found:
            host_found = [m for line in stripped if host and (m := re.match(host, line))]
            host_bytes = _number(host_found[0].group(1)) * unit if host_found else None
            return _number(found[0].group(1)) * unit, host_bytes, vendor
    for line in stripped:
        # wdc: "Physical media units written : HI LO" (two 64-bit halves)
        if m := re.match(r"^Physical media units written\s*:\s*(\d+)\s+(\d+)$", line):
            return (int(m.group(1)) << 64) + int(m.group(2)), None, "wdc"
        # toshiba: "Total data written to NAND : 1133997.9 GiB"; CacheLib counts the whole units
        # (std::stoll stops at the point), so the tenth is dropped here too
        if m := re.match(r"^Total data written to NAND\s*:\s*(\d+)(?:\.\d*)?\s*(KiB|MiB|GiB|TiB)$",
                         line):
            return int(m.group(1)) * _UNITS[m.group(2)], None, "toshiba"
    return None, None, None


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def media_written(raw_dir) -> dict:
    """{"media_written_bytes", "media_bytes_basis"} from a health capture (lib/collect.bash), or
    Nones with the basis saying why the drive reports none."""
    raw = Path(raw_dir)
    ocp = ocp_media_written(_load(raw / OCP_FILE))
    if ocp is not None:
        return {"media_written_bytes": ocp,
                "media_bytes_basis": "OCP SMART extended log (0xC0): physical media units written"}
    try:
        command, _, text = (raw / VENDOR_FILE).read_text(errors="replace").partition("\n")
    except OSError:
        command, text = "", ""
    nand, _, vendor = vendor_media_written(text)
    if nand is not None:
        return {"media_written_bytes": nand, "media_bytes_basis": f"{command.strip()} ({vendor})"}
    why = []
    for name, label in ((OCP_FILE, "nvme ocp smart-add-log"), (VENDOR_FILE, "vendor log")):
        err = raw / (Path(name).stem + ".err")
        if err.exists():
            why.append(f"{label}: {' '.join(err.read_text(errors='replace').split())[:160]}")
    return {"media_written_bytes": None,
            "media_bytes_basis": "the drive reports no NAND writes" + (f" ({'; '.join(why)})"
                                                                        if why else "")}


def write_amplification(before: dict, after: dict) -> dict:
    """WAF between two health summaries (analysis.device.health.health_summary): {"waf",
    "media_bytes", "host_bytes"} or {"waf": None, "reason": why not}."""
    if after.get("media_written_bytes") is None or before.get("media_written_bytes") is None:
        return {"waf": None, "reason": after.get("media_bytes_basis")
                or before.get("media_bytes_basis") or "the drive reports no NAND writes"}
    if before.get("media_bytes_basis") != after.get("media_bytes_basis"):
        return {"waf": None, "reason": "NAND writes were read from different logs before and after"}
    media = after["media_written_bytes"] - before["media_written_bytes"]
    host = (after.get("host_written_bytes") or 0) - (before.get("host_written_bytes") or 0)
    if host <= 0:
        return {"waf": None, "reason": "the drive counted no host writes in between",
                "media_bytes": media}
    return {"waf": media / host, "media_bytes": media, "host_bytes": host}


def describe(what: str, result: dict) -> str:
    """One sentence for a snippet: the WAF of `what`, or why there is none."""
    if result.get("waf") is None:
        return f"write amplification of {what}: not known ({result['reason']})"
    return (f"write amplification of {what}: {result['waf']:.2f} ({result['media_bytes'] / 1e9:,.2f} "
            f"GB to the media for {result['host_bytes'] / 1e9:,.2f} GB from the host)")
