"""Safety interlocks before writing to a block device.

The device may hold someone's data. Before any write the scripts ask this module about the
resolved device, its parent disk, its partitions and its parent disk's other partitions. It
refuses when any of them is mounted, is
swap, has holders (LVM, md, dm) or carries /, /boot or /boot/efi; nothing overrides that. It also
refuses unless `destroy` names that same device: a missing signature proves nothing (a plain
dm-crypt volume, a raw database volume or a fresh namespace shows none), so only the user's own
word allows a write; a signature found is named in the refusal. fio's own allow_mounted_write is
not enough: it compares path strings and exits 0 when it refuses.

Facts come from the tools' JSON (lsblk -J, findmnt -J, wipefs -J) and the kernel's own files
(/proc/swaps, /sys/class/block/*/holders). A fact that cannot be read is a refusal, never a pass.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CRITICAL_MOUNTS = ("/", "/boot", "/boot/efi")


class Refusal(Exception):
    """Writing is refused; str() says why and how to proceed."""


@dataclass
class Family:
    """The devices a write to `device` could harm."""

    device: str  # kernel name, e.g. loop0 or sda2
    path: str  # /dev/loop0
    maj_min: str
    parent: str | None  # kernel name of the parent disk, for a partition
    children: list[str] = field(default_factory=list)  # partitions and stacked devices
    # The parent disk's other partitions (and what is stacked on them): a disk with a partition
    # mounted or held is a disk in use, and the wrong one of its partitions is one digit away.
    siblings: list[str] = field(default_factory=list)

    def members(self) -> list[str]:
        return [self.device, *([self.parent] if self.parent else []), *self.children,
                *self.siblings]


def _run_json(argv: list[str]) -> dict:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise Refusal(f"cannot run {argv[0]} to check the device: {e}") from None
    if out.returncode != 0:
        reason = out.stderr.strip() or f"exit code {out.returncode}"
        raise Refusal(f"cannot check the device: {' '.join(argv)}: {reason}")
    return json.loads(out.stdout) if out.stdout.strip() else {}


def _walk(nodes: list[dict]):
    for node in nodes:
        yield node
        yield from _walk(node.get("children") or [])


def family_of(path: str) -> Family:
    """Kernel names of the device, its parent disk and everything below it, from lsblk -J."""
    cols = "NAME,KNAME,PKNAME,PATH,TYPE,MAJ:MIN"
    tree = _run_json(["lsblk", "-J", "-o", cols, path])["blockdevices"]
    top = tree[0]
    children = [n["kname"] for n in _walk(top.get("children") or [])]
    siblings = []
    if top.get("pkname"):
        disk = _run_json(["lsblk", "-J", "-o", cols, f"/dev/{top['pkname']}"])["blockdevices"][0]
        siblings = [n["kname"] for n in _walk(disk.get("children") or [])
                    if n["kname"] not in (top["kname"], *children)]
    return Family(
        device=top["kname"],
        path=top.get("path") or path,
        maj_min=top["maj:min"],
        parent=top.get("pkname"),
        children=children,
        siblings=list(dict.fromkeys(siblings)),
    )


def mounts_by_device() -> dict[str, list[str]]:
    """Mount points keyed by both the source's kernel name and maj:min, from findmnt -J."""
    doc = _run_json(["findmnt", "-J", "-l", "-o", "SOURCE,TARGET,MAJ:MIN"])
    found: dict[str, list[str]] = {}
    for fs in doc.get("filesystems", []):
        source = fs.get("source") or ""
        # btrfs and bind mounts carry a [subvolume] suffix; maj:min of btrfs is anonymous,
        # so the source path is the fact that names the device.
        source = source.split("[", 1)[0]
        keys = [fs.get("maj:min") or ""]
        if source.startswith("/dev/"):
            keys.append(os.path.basename(os.path.realpath(source)))
        for key in keys:
            found.setdefault(key, []).append(fs["target"])
    return found


def swap_devices() -> set[str]:
    """Kernel names of active swap devices. /proc/swaps is the kernel's own table."""
    names = set()
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return names
    for line in lines:
        if line.split():
            names.add(os.path.basename(os.path.realpath(line.split()[0])))
    return names


def holders_of(kname: str) -> list[str]:
    holders = Path("/sys/class/block") / kname / "holders"
    return sorted(p.name for p in holders.iterdir()) if holders.is_dir() else []


def maj_min_of(kname: str) -> str:
    try:
        return (Path("/sys/class/block") / kname / "dev").read_text().strip()
    except OSError:
        return ""


def signatures_of(path: str) -> list[str]:
    """Filesystem, RAID and partition-table signatures wipefs finds (it probes the bytes)."""
    doc = _run_json(["wipefs", "--no-act", "--json", path])
    return [s.get("type") or "unknown" for s in doc.get("signatures", [])]


def in_use_reasons(family: Family) -> list[str]:
    """Why writing would harm something in use: these refusals have no override."""
    mounts = mounts_by_device()
    swaps = swap_devices()
    reasons = []
    for kname in family.members():
        role = ("" if kname == family.device else " (its parent disk)"
                if kname == family.parent else " (a partition on it)"
                if kname in family.children else " (another partition of its disk)")
        points = mounts.get(kname, []) + mounts.get(maj_min_of(kname), [])
        for point in dict.fromkeys(points):
            if point in CRITICAL_MOUNTS:
                reasons.append(f"/dev/{kname}{role} holds {point}, the running system")
            else:
                reasons.append(f"/dev/{kname}{role} is mounted at {point}; unmount it first")
        if kname in swaps:
            reasons.append(f"/dev/{kname}{role} is in use as swap; swapoff it first")
        holders = holders_of(kname)
        if holders:
            reasons.append(
                f"/dev/{kname}{role} is held by {', '.join(holders)} (LVM, md or dm); "
                "release it first")
    return reasons


def check_write(target: str, destroy: str = "") -> str:
    """Return the resolved device path when writing to it is allowed, else raise Refusal."""
    resolved = os.path.realpath(target)
    try:
        mode = os.stat(resolved).st_mode
    except OSError as e:
        raise Refusal(f"cannot check {target}: {e.strerror}") from None
    if not stat.S_ISBLK(mode):
        raise Refusal(f"{target} is not a block device")
    family = family_of(resolved)
    reasons = in_use_reasons(family)
    if reasons:
        raise Refusal(f"refusing to write to {target}: " + "; ".join(reasons)
                      + ". No option overrides this.")
    if destroy and os.path.realpath(destroy) != resolved:
        raise Refusal(
            f"refusing to write to {target}: --destroy names {destroy}, not this device; "
            f"--destroy must name the target itself ({target})")
    if not destroy:
        signatures = signatures_of(resolved)
        if signatures:
            found = (f"it carries a filesystem or partition signature ({', '.join(signatures)}; "
                     "someone's data may be there)")
        else:
            found = ("no filesystem or partition signature was found, but an encrypted or raw "
                     "volume, or a namespace about to be used, shows none")
        raise Refusal(
            f"refusing to write to {target} without --destroy naming it: {found}; if it may be "
            f"overwritten, pass --destroy {target}")
    return resolved


def main(argv: list[str]) -> int:
    """`python -m analysis safety DEVICE [DESTROY]`: exit 0 if writing is allowed, 3 if not."""
    if not argv or argv[0] in ("-h", "--help") or len(argv) > 2:
        print("usage: python -m analysis safety DEVICE [DESTROY_DEVICE]")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        check_write(argv[0], argv[1] if len(argv) > 1 else "")
    except Refusal as e:
        print(e, file=sys.stderr)
        return 3
    return 0
