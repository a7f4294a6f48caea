"""§1 environment: results/env.json and out/env.txt from the raw captures of lib/collect.bash.

`build_env(raw_dir)` reads the tools' own outputs (lsblk/findmnt/lscpu JSON, smartctl and nvme-cli
JSON, a few /proc, /etc and sysfs files) and returns the content of env.json;
`analysis.device.env_text` turns it into aligned `key: value` lines for people. Warnings are computed from the data: what
in this setup makes the numbers mean something other than "the device's own speed".

Command: python -m analysis env RAW_DIR [--json results/env.json] [--text out/env.txt]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

from analysis.core import workspace
from analysis.core.workspace import Workspace
from analysis.device.env_text import render_env_text
from analysis.device.health import health_summary
from analysis.device.irq import device_irq_cpus, irq_warning
from analysis.device.nvme_ns import parse_nvme_id_ns

# lsblk TYPE -> target type. zram and brd RAM disks call themselves "disk"; see _device_type.
_LSBLK_TYPES = {
    "part": "partition",
    "disk": "disk",
    "loop": "loop",
    "lvm": "lvm",
    "crypt": "crypt",
    "dm": "dm",
    "md": "raid",
    "mpath": "multipath",
    "rom": "rom",
}
_RAM_DISK = re.compile(r"^(zram|ram)\d+$")

# NVMe critical_warning bits (NVMe base spec, SMART/Health log byte 0).
_CRITICAL_WARNING_BITS = {
    0: "spare below threshold",
    1: "temperature above or below threshold",
    2: "reliability degraded",
    3: "media read-only",
    4: "volatile memory backup failed",
    5: "persistent memory region unreliable",
}


# --- reading the raw directory ------------------------------------------------------------------
def _text(raw: Path, name: str) -> str | None:
    try:
        text = (raw / name).read_text().strip()
    except OSError:
        return None
    return text or None


def _json(raw: Path, name: str) -> dict | None:
    try:
        doc = json.loads((raw / name).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _int(value) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _key_values(text: str | None, sep: str = "=") -> dict[str, str]:
    """KEY=VALUE lines (sysfs.txt); the value keeps everything after the first separator."""
    out = {}
    for line in (text or "").splitlines():
        key, found, value = line.partition(sep)
        if found:
            out[key.strip()] = value.strip()
    return out


def _collection_errors(raw: Path) -> dict[str, str]:
    """Every NAME.err lib/collect.bash left: what could not be captured, and why (one line each)."""
    return {p.stem: " ".join(p.read_text().split()) for p in sorted(raw.glob("*.err"))}


# --- machine ------------------------------------------------------------------------------------
def parse_os_release(text: str | None) -> str | None:
    values = {}
    for line in (text or "").splitlines():
        key, found, value = line.partition("=")
        if found:
            parts = shlex.split(value, comments=False) or [""]
            values[key.strip()] = parts[0]
    return values.get("PRETTY_NAME") or values.get("NAME")


def _lscpu_fields(doc: dict | None) -> dict[str, str]:
    """lscpu -J: {"lscpu": [{"field": "Model name:", "data": ..., "children": [...]}]} -> flat dict.
    Newer util-linux nests fields under "children"; older lists them flat."""
    out: dict[str, str] = {}

    def walk(entries):
        for entry in entries or []:
            if isinstance(entry, dict):
                field = str(entry.get("field", "")).rstrip(":").strip()
                if field and entry.get("data") is not None:
                    out.setdefault(field, str(entry["data"]))
                walk(entry.get("children"))

    walk((doc or {}).get("lscpu"))
    return out


def parse_cpu(doc: dict | None) -> dict:
    fields = _lscpu_fields(doc)
    sockets = _int(fields.get("Socket(s)"))
    per_socket = _int(fields.get("Core(s) per socket"))
    return {
        "model": fields.get("Model name"),
        "architecture": fields.get("Architecture"),
        "logical_cpus": _int(fields.get("CPU(s)")),
        "cores": per_socket * sockets if per_socket and sockets else None,
        "sockets": sockets,
        "threads_per_core": _int(fields.get("Thread(s) per core")),
        "numa_nodes": _int(fields.get("NUMA node(s)")),
    }


def parse_meminfo(text: str | None) -> int | None:
    kib = _key_values(text, ":").get("MemTotal", "").split()
    return int(kib[0]) * 1024 if kib and kib[0].isdigit() else None


def parse_governors(text: str | None) -> dict[str, str] | None:
    """governor.txt: "cpuN GOVERNOR" lines, or "unavailable" -> {cpu: governor} or None."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return dict(sorted(out.items(), key=lambda kv: _int(kv[0][3:]) or 0)) or None


def describe_governors(governors: dict[str, str] | None) -> str:
    """One word when all CPUs agree; else counts ("powersave x6, performance x2")."""
    if not governors:
        return "unavailable"
    counts: dict[str, int] = {}
    for gov in governors.values():
        counts[gov] = counts.get(gov, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{gov} x{n}" for gov, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def parse_engines(text: str | None) -> dict[str, str]:
    """engines.txt: "io_uring=ok,libaio=ok,psync=failed" -> {engine: result}."""
    out = {}
    for item in (text or "").replace("\n", ",").split(","):
        name, _, result = item.partition("=")
        if name.strip():
            out[name.strip()] = result.strip() or "unknown"
    return out


# --- target -------------------------------------------------------------------------------------
def _lsblk_device(doc: dict | None) -> dict:
    devices = (doc or {}).get("blockdevices") or []
    return devices[0] if devices and isinstance(devices[0], dict) else {}


def _device_type(dev: dict) -> str | None:
    kind = dev.get("type")
    if kind is None:
        return None
    if kind == "disk" and _RAM_DISK.match(str(dev.get("kname") or dev.get("name") or "")):
        return "ram"
    if str(kind).startswith("raid"):
        return "raid"
    return _LSBLK_TYPES.get(kind, kind)


def active_scheduler(text: str | None) -> str | None:
    """queue/scheduler lists all, the active one in brackets: "none [mq-deadline] kyber"."""
    if not text:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text.split()[0]


def _link_speed(text: str | None) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*GT/s", text or "")
    return float(match.group(1)) if match else None


def parse_pcie_link(sysfs: dict[str, str]) -> dict | None:
    """The PCI function above the disk: the NVMe controller itself, or a SATA/SAS host adapter."""
    if "pci_device" not in sysfs:
        return None
    return {
        "pci_device": sysfs["pci_device"],
        "speed": sysfs.get("current_link_speed"),
        "width": _int(sysfs.get("current_link_width")),
        "max_speed": sysfs.get("max_link_speed"),
        "max_width": _int(sysfs.get("max_link_width")),
    }


def parse_mount(doc: dict | None) -> dict | None:
    """findmnt -J (-T FILE or --source DEV) -> the first filesystem: where, fstype, source."""
    systems = (doc or {}).get("filesystems") or []
    if not systems or not isinstance(systems[0], dict):
        return None
    fs = systems[0]
    return {
        "where": fs.get("target"),
        "fstype": fs.get("fstype"),
        "source": fs.get("source"),
        "options": fs.get("options"),
    }


def _first(*values):
    return next((v for v in values if v not in (None, "")), None)


def build_target(raw: Path, health: dict) -> dict:
    kind = _text(raw, "target_kind.txt")
    dev = _lsblk_device(_json(raw, "lsblk.json"))
    disk = _lsblk_device(_json(raw, "lsblk-disk.json")) or dev
    sysfs = _key_values(_text(raw, "sysfs.txt"))
    device_type = _device_type(dev)
    ident = health if health.get("available") else {}
    rotational = sysfs.get("rotational", disk.get("rota"))
    return {
        "path": _text(raw, "target_path.txt"),
        "resolved": _text(raw, "target_resolved.txt"),
        "existing_parent": _text(raw, "target_existing_parent.txt"),
        # "missing": §1 ran before the first section created the file (the default tmp/target.img,
        # or a new file --target names); it is that file, on the filesystem that will hold it.
        "type": "file" if kind in ("file", "missing") else device_type if kind == "block" else kind,
        "to_be_created": kind == "missing",
        "device": _text(raw, "device.txt"),
        "device_type": device_type,
        "parent_disk": _text(raw, "disk.txt"),
        "transport": disk.get("tran"),
        "model": _first(ident.get("model"), disk.get("model")),
        "serial": _first(ident.get("serial"), disk.get("serial")),
        "firmware": _first(ident.get("firmware"), disk.get("rev")),
        "capacity_bytes": _int(dev.get("size")),
        "file_size_bytes": _int(_text(raw, "target_size.txt")) if kind == "file" else None,
        "logical_block_size": _int(_first(sysfs.get("logical_block_size"), dev.get("log-sec"))),
        "physical_block_size": _int(_first(sysfs.get("physical_block_size"), dev.get("phy-sec"))),
        "scheduler": active_scheduler(sysfs.get("scheduler")) or dev.get("sched"),
        "rotational": None if rotational is None else str(rotational).lower() in ("1", "true"),
        "write_cache": sysfs.get("write_cache"),
        "numa_node": _int(sysfs.get("numa_node")),
        "pcie_link": parse_pcie_link(sysfs),
        "loop_backing_file": sysfs.get("loop_backing_file"),
        "mounted": parse_mount(_json(raw, "findmnt.json")),
        # CPUs that took the drive's I/O interrupts (analysis.device.irq), None when not known
        "irq_cpus": device_irq_cpus(_text(raw, "interrupts.txt"), _text(raw, "disk.txt")),
        # an NVMe namespace's LBA format in use, size and utilisation (nvme id-ns)
        "namespace": parse_nvme_id_ns(_json(raw, "nvme-id-ns.json")),
    }


# --- warnings -----------------------------------------------------------------------------------
def _critical_warning_text(value: int) -> str:
    bits = [text for bit, text in _CRITICAL_WARNING_BITS.items() if value & (1 << bit)]
    return f"0x{value:02x} ({', '.join(bits) or 'unknown bits'})"


def _location_warnings(target: dict) -> list[str]:
    """A file target puts a filesystem between fio and the device. One not created yet is no
    warning: the sections create it, and §1 describes the filesystem that will hold it."""
    out = []
    if target["type"] == "file":
        fs = target["mounted"] or {}
        out.append(
            f"the target is a file on {fs.get('fstype') or 'an unknown filesystem'} "
            f"({fs.get('source') or '?'} at {fs.get('where') or '?'}): results include the "
            "filesystem's overhead (allocation, metadata, journal) and page-cache effects unless "
            "fio runs with direct=1"
        )
    if target["type"] in ("file", "other") and not target["device"]:
        out.append("no block device under the target (tmpfs, overlay or network filesystem?): "
                   "device identity and health cannot be captured")
    return out


def _direct_warnings(direct: str | None) -> list[str]:
    """direct.txt, written by env.bash's engine probe: "ok" or "refused: why"."""
    if not direct or not direct.lower().startswith("refused"):
        return []
    detail = direct.partition(":")[2].strip() or direct
    text = (f"O_DIRECT was refused on the target ({detail}): I/O goes through the page cache, "
            "so reads may come from RAM and writes be acknowledged before they reach the device")
    return [text]


def _device_warnings(target: dict) -> list[str]:
    out = []
    if target["rotational"]:
        out.append(f"{target['parent_disk'] or target['device']} reports rotational=1: a spinning "
                   "disk, or a virtual disk that does not declare itself non-rotational")
    link = target["pcie_link"] or {}
    now, top = _link_speed(link.get("speed")), _link_speed(link.get("max_speed"))
    slow_speed = now is not None and top is not None and now < top
    narrow = link.get("width") and link.get("max_width") and link["width"] < link["max_width"]
    if slow_speed or narrow:
        out.append(f"PCIe link of {link['pci_device']} runs at {link.get('speed')} "
                   f"x{link.get('width')}, below its maximum {link.get('max_speed')} "
                   f"x{link.get('max_width')}: "
                   "bandwidth is capped by the slot or a power-saving link state")
    return out


def _health_warnings(health: dict) -> list[str]:
    out = []
    if health.get("critical_warning"):
        out.append("the device reports NVMe critical warning "
                   f"{_critical_warning_text(health['critical_warning'])}")
    if health.get("smart_passed") is False:
        out.append("SMART overall health: FAILED")
    if health.get("media_errors"):
        out.append(f"the device has logged {health['media_errors']} media/uncorrectable errors")
    return out


def compute_warnings(env: dict, direct: str | None) -> list[str]:
    """What makes this run's numbers mean something other than the device's own performance."""
    out = []
    governor = env["governor"]
    if governor == "unavailable":
        out.append("CPU frequency governor unavailable (no cpufreq in this kernel or VM): the "
                   "clock may change under load, so latency can vary between runs")
    elif governor != "performance":
        out.append(f"CPU frequency governor is {governor}, not performance on every CPU: "
                   "frequency ramps add latency at low queue depth "
                   "(cpupower frequency-set -g performance)")
    if env.get("fleet"):
        # The orchestrator's own target and drive are not the ones measured.
        return out + [FLEET_WARNING]
    target = env["target"]
    return (out + _location_warnings(target) + _direct_warnings(direct) + _device_warnings(target)
            + irq_warning(target.get("parent_disk"), target.get("irq_cpus"))
            + _health_warnings(env["health"]))


FLEET_WARNING = ("fleet run: this is the orchestrator's environment; the hosts' kernels, CPUs, "
                 "drives and health are not captured here (run 'sudo bash env.bash --target "
                 "PATH' on each host)")


# --- env.json -----------------------------------------------------------------------------------
def build_env(raw_dir) -> dict:
    """The content of results/env.json, from the raw directory collect_env_raw wrote."""
    raw = Path(raw_dir)
    governors = parse_governors(_text(raw, "governor.txt"))
    smartctl = (_json(raw, "smartctl_version.json") or {}).get("smartctl") or {}
    smartctl_version = smartctl.get("version")
    nvme_version = _text(raw, "nvme_version.txt")
    health = health_summary(raw)
    env = {
        "collected_at": _text(raw, "collected_at.txt"),
        "hostname": _text(raw, "hostname.txt"),
        "kernel": _text(raw, "uname.txt"),
        "distribution": parse_os_release(_text(raw, "os-release.txt")),
        "cpu": parse_cpu(_json(raw, "lscpu.json")),
        "governor": describe_governors(governors),
        "governors": governors,
        "memory_bytes": parse_meminfo(_text(raw, "meminfo.txt")),
        "fio_version": _text(raw, "fio_version.txt"),
        "toolkit_revision": _text(raw, "toolkit_revision.txt"),
        "tools": {
            "smartctl": ".".join(map(str, smartctl_version)) if smartctl_version else None,
            "nvme-cli": nvme_version.splitlines()[0] if nvme_version else None,
        },
        "engines": parse_engines(_text(raw, "engines.txt")),
        "direct_io": _text(raw, "direct.txt"),
        "target": build_target(raw, health),
        "health": health,
        "collection_errors": _collection_errors(raw),
        # A fleet run (env.bash with HOSTS): 'host:port target' per host, from fleet.txt.
        "fleet": (_text(raw, "fleet.txt") or "").splitlines(),
    }
    env["warnings"] = compute_warnings(env, env["direct_io"])
    return env


# --- command ------------------------------------------------------------------------------------
def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def main(argv: list[str] | None = None) -> int:
    """python -m analysis env RAW_DIR [--json PATH] [--text PATH]; prints the text when neither.
    Accepts argv with or without the leading "env"."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["env"]:
        args = args[1:]
    parser = argparse.ArgumentParser(
        prog="python -m analysis env",
        description="Build results/env.json and out/env.txt from lib/collect.bash's raw captures.",
    )
    parser.add_argument("raw_dir", help="directory written by collect_env_raw")
    parser.add_argument("--json", dest="json_path", help="write env.json here")
    parser.add_argument("--text", dest="text_path", help="write env.txt here")
    parser.add_argument("--write", action="store_true",
                        help="write env.json into the results tree and env.txt into its out/ "
                             "(see --root, --results)")
    workspace.add_arguments(parser)
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    raw = Path(ns.raw_dir)
    if not raw.is_dir():
        print(f"env: raw directory {raw} does not exist; capture it first "
              "(bash env.bash, or collect_env_raw DIR TARGET ENGINES from lib/collect.bash)",
              file=sys.stderr)
        return 2
    if ns.write:
        ws = Workspace.from_args(ns)
        ns.json_path = ns.json_path or ws.results / "env.json"
        ns.text_path = ns.text_path or ws.path("out/env.txt")
    env = build_env(raw)
    text = render_env_text(env)
    if ns.json_path:
        _write(ns.json_path, json.dumps(env, indent=2) + "\n")
    if ns.text_path:
        _write(ns.text_path, text)
    if not ns.json_path and not ns.text_path:
        sys.stdout.write(text)
    else:
        print(f"wrote {', '.join(str(p) for p in (ns.json_path, ns.text_path) if p)}",
              file=sys.stderr)
    # What skews results is said where the user looks, not only in the file.
    for warning in env.get("warnings", []):
        print(f"env.bash: warning: {warning}", file=sys.stderr)
    return 0
