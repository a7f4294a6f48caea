"""An NVMe namespace's volatile write cache: read and set, for SNIA PTS's device classes.

PTS-E (enterprise) measures with the drive's volatile write cache disabled, PTS-C (client) with it
enabled. NVMe names it Feature 06h (Volatile Write Cache), bit 0 of its dword: WCE. The toolkit
reads and sets it with the controller's own admin commands, Get Features (0Ah) and Set Features
(09h), through the kernel's NVMe passthrough ioctl: nvme-cli 2.3's get-feature prints no JSON,
and its text is not read here. The setting is not saved (Set Features' SV bit clear), so a power
cycle brings back the drive's own; lib/pts.bash restores the one it found when the run ends.
A controller whose Identify Controller says no volatile write cache (VWC bit 0 clear) has
nothing to set: its writes are durable when they complete, which is what "disabled" asks for.

Worked example (`python -m analysis write-cache`), on the emulated NVMe drive (tools/nvme_vm),
whose QEMU controller has a write cache and starts with it enabled::

    # python -m analysis write-cache /dev/nvme1n1
    {"present": true, "enabled": true}
    # python -m analysis write-cache /dev/nvme1n1 off --record /tmp/wc.json
    {"present": true, "enabled": false, "was": true}
    # python -m analysis write-cache /dev/nvme1n1 --restore /tmp/wc.json
    {"present": true, "enabled": true, "was": false}

A target that is no whole NVMe namespace (a SATA disk, a partition, a file) exits 2, saying so.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import sys
from pathlib import Path

from analysis.device.purge import PurgeError, inspect

FEATURE = 0x06  # Volatile Write Cache
GET_FEATURES, SET_FEATURES = 0x0A, 0x09
# struct nvme_passthru_cmd (linux/nvme_ioctl.h): opcode, flags, rsvd1, nsid, cdw2, cdw3,
# metadata, addr, metadata_len, data_len, cdw10-15, timeout_ms, result; 72 bytes
PASSTHRU = struct.Struct("<BBHIIIQQIIIIIIIIII")
# NVME_IOCTL_ADMIN_CMD = _IOWR('N', 0x41, struct nvme_admin_cmd)
ADMIN_CMD = (3 << 30) | (PASSTHRU.size << 16) | (ord("N") << 8) | 0x41
RESULT = PASSTHRU.size - 4  # the command's completion dword 0, filled in by the kernel


class WriteCacheError(Exception):
    """The cache cannot be read or set here; str() says why. ``code``: the exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def admin(controller: str, opcode: int, cdw10: int, cdw11: int = 0) -> int:
    """One admin command without data; its completion's dword 0. Raises WriteCacheError with the
    controller's status (a positive ioctl return) or the kernel's error."""
    buf = bytearray(PASSTHRU.pack(opcode, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                  cdw10, cdw11, 0, 0, 0, 0, 0, 0))
    fd = os.open(controller, os.O_RDONLY)
    try:
        status = fcntl.ioctl(fd, ADMIN_CMD, buf, True)
    except OSError as e:
        raise WriteCacheError(f"{controller}: admin command {opcode:#04x} failed: {e}") from None
    finally:
        os.close(fd)
    if status:
        raise WriteCacheError(f"{controller}: admin command {opcode:#04x} for feature "
                              f"{cdw10 & 0xFF:#04x} returned NVMe status {status:#x}")
    return struct.unpack_from("<I", buf, RESULT)[0]


def controller_of(path: str) -> tuple[str, bool]:
    """(controller, has a volatile write cache) of a whole NVMe namespace."""
    try:
        t = inspect(path)
    except PurgeError as e:
        raise WriteCacheError(str(e), e.code) from None
    if not t.nvme:
        raise WriteCacheError(f"{t.path} is no whole NVMe namespace: the toolkit sets the write "
                              "cache of NVMe drives only (Feature 06h)", 2)
    return t.controller, bool(int(t.id_ctrl.get("vwc", 0)) & 0x1)


def state(path: str) -> dict:
    """{"present": bool, "enabled": bool or None (no cache)}."""
    controller, present = controller_of(path)
    if not present:
        return {"present": False, "enabled": None}
    return {"present": True, "enabled": bool(admin(controller, GET_FEATURES, FEATURE) & 0x1)}


def set_enabled(path: str, enabled: bool) -> dict:
    """Set WCE (not saved), read it back; the state before as "was". Raises WriteCacheError when
    the drive kept another value."""
    controller, present = controller_of(path)
    if not present:
        return {"present": False, "enabled": None, "was": None}
    was = bool(admin(controller, GET_FEATURES, FEATURE) & 0x1)
    admin(controller, SET_FEATURES, FEATURE, int(enabled))
    now = bool(admin(controller, GET_FEATURES, FEATURE) & 0x1)
    if now != enabled:
        raise WriteCacheError(f"{controller}: the write cache stayed "
                              f"{'enabled' if now else 'disabled'} after Set Features")
    return {"present": True, "enabled": now, "was": was}


def record_and_set(path: str, enabled: bool, record: Path) -> dict:
    """Set the cache for a run and keep, in `record`, the state the run found ("was"), to be
    restored at its end. A record left by an earlier run of the same tree keeps its "was": a run
    killed before it restored found the cache as that run had set it, not as the drive was."""
    out = set_enabled(path, enabled)
    if record.exists():
        out["was"] = json.loads(record.read_text()).get("was", out["was"])
    record.write_text(json.dumps(out) + "\n")
    return out


def restore(path: str, record: Path) -> dict:
    """Set the cache back to the record's "was" (nothing when the drive has none)."""
    was = json.loads(record.read_text()).get("was")
    return set_enabled(path, was) if was is not None else {"present": False, "enabled": None}


def describe(record: dict) -> str:
    """The record in words, for the plan and the PTS page's conditions."""
    if not record.get("present"):
        return "the drive has no volatile write cache (Identify Controller: VWC 0): none to set"
    now = "enabled" if record["enabled"] else "disabled"
    was = "enabled" if record.get("was") else "disabled"
    return (f"{now} for the run (NVMe Feature 06h, not saved; the drive had it {was}, "
            "set back when the run ends)")


USAGE = """usage: python -m analysis write-cache TARGET [on|off --record FILE | --restore FILE]
       python -m analysis write-cache --describe FILE
  TARGET's volatile write cache (a whole NVMe namespace) as JSON. With on|off, set it (not saved:
  a power cycle restores the drive's own) and keep the state found in FILE; with --restore, set
  it back to FILE's; --describe says FILE's in words. Exit 0 done, 1 the drive refused, 2 no
  NVMe namespace or bad usage."""


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        if len(argv) == 2 and argv[0] == "--describe":
            print(describe(json.loads(Path(argv[1]).read_text())))
            return 0
        if len(argv) == 1:
            out = state(argv[0])
        elif len(argv) == 4 and argv[1] in ("on", "off") and argv[2] == "--record":
            out = record_and_set(argv[0], argv[1] == "on", Path(argv[3]))
        elif len(argv) == 3 and argv[1] == "--restore":
            out = restore(argv[0], Path(argv[2]))
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except WriteCacheError as e:
        print(f"write-cache: {e}", file=sys.stderr)
        return e.code
    print(json.dumps(out))
    return 0
