"""The purge that starts the purged and sustained states (--purge): which methods the target
supports, the one used, and the check that it took effect.

- format: NVMe Format NVM with Secure Erase Settings 1 (user data erase), keeping the LBA format
  in use. A whole namespace, where the controller supports Format NVM (id-ctrl OACS bit 1); where
  the format applies to every namespace of the controller (FNA bit 0), only when the target is
  its one namespace.
- sanitize: NVMe Sanitize, block erase (SANICAP bit 1), else crypto erase (bit 0); never
  overwrite, which writes the whole drive. Sanitize acts on the whole controller: only when the
  target is its one namespace.
- discard: blkdiscard of the region. Any block device, a partition or a part of a namespace:
  the drive's FTL forgets the region's mappings. It is what PTS allows where no device-level
  purge can be had, and what a region smaller than its namespace needs.
- punch-hole: a file's region freed (fallocate --punch-hole): a file's state is its filesystem's.

``auto``: format where it is possible and the region is the whole namespace, else discard (a file:
punch-hole). Sanitize is used only when asked: it acts on the whole controller and can run for
hours in the background.

**The check.** 64 blocks spread evenly over the region are read back with O_DIRECT: a purged
block reads as deallocated blocks do, all zeros (or all 0xFF where the namespace's DLFEAT says
so). On NVMe the namespace's utilization (id-ns NUSE) is read before and after: it falls where
the drive tracks it. The record (state/purge.json) names the method, the device, its model and
serial, the time, and what the check found.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

METHODS = ("auto", "format", "sanitize", "discard")
SAMPLES = 64
BLOCK = 4096
NVME_NS = re.compile(r"^nvme(\d+)n(\d+)$")


class PurgeError(Exception):
    """The method cannot be used here; str() says why and what can. ``code``: the exit code."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass
class Target:
    path: str                       # the resolved device or file
    kind: str                       # block | file
    namespace: str = ""             # nvme0n1 for a whole NVMe namespace, else ""
    controller: str = ""            # /dev/nvme0
    nsid: int = 0
    id_ctrl: dict = field(default_factory=dict)
    id_ns: dict = field(default_factory=dict)
    namespaces: int = 0             # active namespaces of the controller

    @property
    def nvme(self) -> bool:
        return bool(self.namespace)

    def supports(self) -> list[str]:
        """The methods this target supports, most thorough first."""
        if self.kind == "file":
            return ["punch-hole"]
        out = []
        if self.nvme and int(self.id_ctrl.get("oacs", 0)) & 0x2:
            out.append("format")
        if self.nvme and int(self.id_ctrl.get("sanicap", 0)) & 0x3:
            out.append("sanitize")
        return out + ["discard"]


def _json(argv: list[str]) -> dict:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PurgeError(f"cannot run {' '.join(argv)}: {e}", 1) from None
    if out.returncode != 0:
        raise PurgeError(f"{' '.join(argv)} failed: {out.stderr.strip() or out.returncode}", 1)
    return json.loads(out.stdout or "{}")


def inspect(path: str) -> Target:
    """What the target is, and for a whole NVMe namespace what its controller says (JSON of
    nvme id-ctrl, id-ns and list-ns)."""
    real = os.path.realpath(path)
    if not os.path.exists(real) or not stat.S_ISBLK(os.stat(real).st_mode):
        return Target(real, "file")             # a file, or one the toolkit is about to create
    name = os.path.basename(real)
    m = NVME_NS.match(name)
    if not m or (Path("/sys/class/block") / name / "partition").exists():
        return Target(real, "block")
    ctrl = f"/dev/nvme{m.group(1)}"
    t = Target(real, "block", name, ctrl, int(m.group(2)))
    t.id_ctrl = _json(["nvme", "id-ctrl", ctrl, "-o", "json"])
    t.id_ns = _json(["nvme", "id-ns", real, "-o", "json"])
    listed = _json(["nvme", "list-ns", ctrl, "-o", "json"])
    ids = listed.get("nsid_list") or listed.get("nsid") or []
    t.namespaces = len(ids) if isinstance(ids, list) else 1
    return t


def lba_format(id_ns: dict) -> int:
    """The LBA format in use: FLBAS bits 3:0, with bits 6:5 above them (NVMe 2.0)."""
    flbas = int(id_ns.get("flbas", 0))
    return (flbas & 0xF) | ((flbas >> 1) & 0x30)


def choose(t: Target, method: str, region_bytes: int, capacity: int) -> tuple[str, str]:
    """(method, what it does, for the plan); PurgeError when it cannot be used here."""
    supported = t.supports()
    if method == "auto":
        if t.kind == "file":
            return "punch-hole", "the file's region freed (fallocate --punch-hole)"
        method = "format" if "format" in supported and region_bytes >= capacity \
            and _format_alone(t) else "discard"
    if t.kind == "file":
        raise PurgeError(f"--purge {method}: {t.path} is a file; a file's region is freed with "
                         "--purge auto")
    if method not in supported:
        why = ("it is not a whole NVMe namespace" if not t.nvme else
               f"its controller {t.controller} does not support it (OACS "
               f"{int(t.id_ctrl.get('oacs', 0)):#x}, SANICAP {int(t.id_ctrl.get('sanicap', 0)):#x})")
        raise PurgeError(f"--purge {method}: {t.path} cannot be purged that way: {why}; it "
                         f"supports {', '.join(supported)}")
    if method in ("format", "sanitize") and not _format_alone(t, method):
        raise PurgeError(
            f"--purge {method} would erase every namespace of {t.controller} ({t.namespaces}), "
            f"not only {t.path}; use --purge discard, or a controller whose only namespace is "
            "the target", 3)
    if method == "format":
        extra = (f", all {capacity / 2**30:.1f} GiB of it, not only the region"
                 if region_bytes < capacity else "")
        return "format", (f"the whole namespace formatted (nvme format --ses=1, user data erase, "
                          f"LBA format {lba_format(t.id_ns)} kept){extra}")
    if method == "sanitize":
        kind = "block erase" if int(t.id_ctrl.get("sanicap", 0)) & 0x2 else "crypto erase"
        return "sanitize", f"the whole controller sanitized (nvme sanitize, {kind})"
    return "discard", "the region discarded (blkdiscard)"


def _format_alone(t: Target, method: str = "format") -> bool:
    """The format or sanitize would touch only the target's namespace."""
    if method == "format" and not int(t.id_ctrl.get("fna", 0)) & 0x1:
        return True
    return t.namespaces == 1


def command(t: Target, method: str, region_bytes: int) -> list[str]:
    if method == "format":
        return ["nvme", "format", t.path, f"--namespace-id={t.nsid}", "--ses=1",
                f"--lbaf={lba_format(t.id_ns)}", "--force"]
    if method == "sanitize":
        action = 2 if int(t.id_ctrl.get("sanicap", 0)) & 0x2 else 4
        return ["nvme", "sanitize", t.controller, f"--sanact={action}"]
    if method == "discard":
        return ["blkdiscard", "--offset", "0", "--length", str(region_bytes), t.path]
    return ["fallocate", "--punch-hole", "--offset", "0", "--length", str(region_bytes), t.path]


def sample(path: str, region_bytes: int) -> dict:
    """Read SAMPLES blocks spread over the region with O_DIRECT: how many are all zeros, all
    0xFF, or hold data."""
    count = {"sampled": 0, "zeros": 0, "ones": 0, "data": 0}
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)
    try:
        step = max(BLOCK, (region_bytes // SAMPLES) // BLOCK * BLOCK)
        for offset in range(0, region_bytes - BLOCK + 1, step):
            if count["sampled"] == SAMPLES:
                break
            n = os.preadv(fd, [buf], offset)
            block = buf[:n]
            count["sampled"] += 1
            if block.count(0) == n:
                count["zeros"] += 1
            elif block.count(0xFF) == n:
                count["ones"] += 1
            else:
                count["data"] += 1
    finally:
        buf.close()
        os.close(fd)
    return count


def nuse(t: Target) -> int | None:
    if not t.nvme:
        return None
    return int(_json(["nvme", "id-ns", t.path, "-o", "json"]).get("nuse", 0))


def verify(t: Target, method: str, region_bytes: int, nuse_before: int | None) -> dict:
    """The record of a purge just done: the method, the device, the check's findings."""
    found = sample(t.path, region_bytes)
    after = nuse(t)
    record = {
        "method": method, "device": t.path, "region_bytes": region_bytes,
        "model": str(t.id_ctrl.get("mn", "")).strip(), "serial": str(t.id_ctrl.get("sn", "")).strip(),
        "firmware": str(t.id_ctrl.get("fr", "")).strip(), "ended": time.time(),
        "samples": found, "nuse_before": nuse_before, "nuse_after": after,
    }
    problems = []
    if found["data"]:
        problems.append(f"{found['data']} of {found['sampled']} sampled blocks still hold data")
    if after is not None and nuse_before is not None and after >= nuse_before and \
            nuse_before < int(t.id_ns.get("nsze", 0) or 0):
        problems.append(f"the namespace's utilization did not fall (NUSE {nuse_before} -> {after})")
    record["verified"] = not problems
    record["problems"] = problems
    return record


def wait_sanitize(t: Target, timeout_s: float = 24 * 3600, poll_s: float = 5.0) -> None:
    """Until the controller's sanitize completes (sanitize-log SSTAT bits 2:0: 1 or 4 done,
    2 in progress, 3 failed), printing its progress now and then."""
    deadline, last = time.monotonic() + timeout_s, -1.0
    while time.monotonic() < deadline:
        log = _json(["nvme", "sanitize-log", t.controller, "-o", "json"])
        entry = log.get(t.controller.removeprefix("/dev/"), log)
        status = int(entry.get("sstat", 0)) & 0x7
        if status in (1, 4):
            return
        if status == 3:
            raise PurgeError(f"the sanitize of {t.controller} failed (sanitize-log SSTAT 3)", 1)
        progress = 100.0 * int(entry.get("sprog", 0)) / 65536
        if progress - last >= 5:
            print(f"sanitize of {t.controller}: {progress:.0f}%", file=sys.stderr)
            last = progress
        time.sleep(poll_s)
    raise PurgeError(f"the sanitize of {t.controller} did not complete in {timeout_s:g} s", 1)


def plan(path: str, method: str, region_bytes: int, capacity: int) -> tuple[str, str, list[str]]:
    """(method, what it does, for the plan, and its command); PurgeError when it cannot be used."""
    if method not in METHODS:
        raise PurgeError(f"--purge {method}: expected one of {', '.join(METHODS)}")
    t = inspect(path)
    chosen, what = choose(t, method, region_bytes, capacity)
    return chosen, what, command(t, chosen, region_bytes)


def fill(path: str) -> str:
    """'NUSE NSZE NSFEAT' of a whole NVMe namespace (in blocks; NSFEAT says whether NUSE is a
    fill level: analysis.device.nvme_ns.nuse_is_fill), else ''."""
    t = inspect(path)
    value = nuse(t)
    return "" if value is None else \
        f"{value} {int(t.id_ns.get('nsze', 0))} {int(t.id_ns.get('nsfeat', 0))}"


def check(path: str, method: str, region_bytes: int, record_path: Path,
          nuse_before: int | None) -> tuple[bool, str]:
    """The purge just done checked and recorded in `record_path` (JSON): (verified, what the
    check found, in a line)."""
    record = verify(inspect(path), method, region_bytes, nuse_before)
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    s = record["samples"]
    return record["verified"], (
        f"{s['zeros'] + s['ones']} of {s['sampled']} sampled blocks read as purged"
        + (f", NUSE {nuse_before} -> {record['nuse_after']}" if nuse_before is not None else "")
        + ("" if record["verified"] else ": NOT verified: " + "; ".join(record["problems"])))


def main(argv: list[str]) -> int:
    """`python -m analysis purge wait TARGET`: until the controller's sanitize completes. It runs
    as a process of its own because it can last hours; the run loop asks its helper
    (analysis/run/runner_service.py) for the purge's plan, fill and check."""
    usage = "usage: python -m analysis purge wait TARGET"
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    if argv[0] == "wait" and len(argv) == 2:
        try:
            wait_sanitize(inspect(argv[1]))
        except PurgeError as e:
            print(e, file=sys.stderr)
            return e.code
        return 0
    print(usage, file=sys.stderr)
    return 2
