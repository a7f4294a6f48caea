"""What an NVMe VM holds: controllers, their namespaces, and the QEMU options that make them.

Pure data in, a list of QEMU arguments out; nothing here starts a process. The options are QEMU's
own (the `nvme`, `nvme-ns` and `nvme-subsys` devices, a `-drive`'s throttling group, a `pxb-pcie`
expander bridge for a NUMA node) so what a test asserts against is what QEMU was told.

The write-cache burst is QEMU's leaky bucket (block/throttle-groups, util/throttle.c): writes run
at `fast` until the bucket, `fast * burst_s` bytes, is full, then at `slow`. The bucket drains at
`slow` all the time, so while writing at `fast` it fills at `fast - slow`, and the bytes written at
the fast rate from an empty bucket are `fast * burst_s * fast / (fast - slow)`. While idle it
drains at `slow` bytes a second: that is the cache regained per idle second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_SIZE = re.compile(r"(?i)^\s*(\d+)\s*([kmgt]?)i?b?\s*$")
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(value: int | str) -> int:
    """Bytes from 1073741824, '1G', '512M' or '64k' (binary units, as qemu-img and fio read them)."""
    if isinstance(value, int):
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"not a size: {value!r} (e.g. 1G, 512M)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class WriteCache:
    """A write cache that fills: `fast` bytes/s for about `burst_s` seconds, then `slow` bytes/s."""

    fast: int = 200_000_000
    slow: int = 20_000_000
    burst_s: int = 5

    def __post_init__(self):
        if not 0 < self.slow < self.fast or self.burst_s < 2:
            raise ValueError("a write cache needs 0 < slow < fast and burst_s >= 2 (QEMU's rule)")

    @property
    def bucket_bytes(self) -> int:
        return self.fast * self.burst_s

    @property
    def cache_bytes(self) -> float:
        """Bytes written at `fast` from an empty bucket before the cliff (see the module's doc)."""
        return self.bucket_bytes * self.fast / (self.fast - self.slow)

    @property
    def recover_bytes_per_s(self) -> int:
        """Cache regained per idle second: the bucket drains at the sustained rate."""
        return self.slow

    def drive_options(self) -> list[str]:
        return [f"throttling.bps-write={self.slow}", f"throttling.bps-write-max={self.fast}",
                f"throttling.bps-write-max-length={self.burst_s}"]


@dataclass(frozen=True)
class Namespace:
    """One namespace: its size and logical block size (512 or 4096 bytes)."""

    size: int | str = "1G"
    lba_size: int = 512
    write_cache: WriteCache | None = None

    def __post_init__(self):
        if self.lba_size not in (512, 4096):
            raise ValueError(f"logical block size {self.lba_size}: 512 or 4096")
        if parse_size(self.size) % self.lba_size:
            raise ValueError(f"size {self.size} is not a multiple of {self.lba_size} B")

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)


@dataclass(frozen=True)
class Controller:
    """One NVMe controller (one PCIe function) with its namespaces. Several namespaces go through
    an `nvme-subsys`; `numa_node` puts the controller behind a `pxb-pcie` bridge on that node;
    `critical_warning` sets the SMART/Health log's byte 0 from boot."""

    namespaces: tuple[Namespace, ...] = (Namespace(),)
    serial: str = "TKNVME0001"
    critical_warning: int = 0
    numa_node: int | None = None

    def __post_init__(self):
        if not self.namespaces:
            raise ValueError("a controller needs at least one namespace")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,20}", self.serial):
            raise ValueError(f"serial {self.serial!r}: 1-20 letters, digits, '-' or '_'")
        if not 0 <= self.critical_warning <= 0xFF:
            raise ValueError("critical_warning is one byte")


@dataclass(frozen=True)
class VmSpec:
    """The whole guest: controllers, CPUs, memory (MiB), NUMA nodes (0 = none) and whether the
    nvme driver gets polled queues (`modprobe nvme poll_queues=N`)."""

    controllers: tuple[Controller, ...] = (Controller(),)
    cpus: int = 2
    memory_mib: int = 2048
    numa_nodes: int = 0
    poll_queues: int = 1
    kvm: bool | None = None  # None: use KVM where the cached probe found it works
    extra: tuple[str, ...] = field(default=())

    def __post_init__(self):
        serials = [c.serial for c in self.controllers]
        if len(set(serials)) != len(serials):
            raise ValueError(f"controllers need distinct serials: {serials}")
        nodes = {c.numa_node for c in self.controllers if c.numa_node is not None}
        if nodes and max(nodes) >= self.numa_nodes:
            raise ValueError(f"a controller on NUMA node {max(nodes)} needs numa_nodes > "
                             f"{max(nodes)} (it is {self.numa_nodes})")
        if self.numa_nodes and (self.cpus % self.numa_nodes or self.memory_mib % self.numa_nodes):
            raise ValueError("cpus and memory_mib must split evenly over the NUMA nodes")

    @property
    def namespace_count(self) -> int:
        return sum(len(c.namespaces) for c in self.controllers)


def image_names(spec: VmSpec) -> list[tuple[int, int, str]]:
    """(controller index, namespace index, image file name) for every namespace."""
    return [(c, n, f"nvme{c}-ns{n + 1}.img")
            for c, ctrl in enumerate(spec.controllers) for n in range(len(ctrl.namespaces))]


def _controller_args(index: int, ctrl: Controller, images: Path, bus: str | None) -> list[str]:
    args = []
    subsys = len(ctrl.namespaces) > 1
    if subsys:
        args += ["-device", f"nvme-subsys,id=subsys{index},nqn=tk-subsys{index}"]
    device = f"nvme,id=ctrl{index},serial={ctrl.serial}"
    if subsys:
        device += f",subsys=subsys{index}"
    if ctrl.critical_warning:
        device += f",smart_critical_warning={ctrl.critical_warning}"
    if bus:
        device += f",bus={bus}"
    args += ["-device", device]
    for n, ns in enumerate(ctrl.namespaces):
        drive = f"file={images / f'nvme{index}-ns{n + 1}.img'},if=none,id=nvm{index}n{n + 1}"
        drive += ",format=raw"
        if ns.write_cache:
            drive += "," + ",".join(ns.write_cache.drive_options())
        namespace = (f"nvme-ns,drive=nvm{index}n{n + 1},bus=ctrl{index},nsid={n + 1},"
                     f"logical_block_size={ns.lba_size},physical_block_size={ns.lba_size}")
        args += ["-drive", drive, "-device", namespace]
    return args


def qemu_args(spec: VmSpec, images: Path) -> list[str]:
    """QEMU's arguments for the controllers (the images named by image_names, in `images`)."""
    args: list[str] = []
    for index, ctrl in enumerate(spec.controllers):
        bus = None
        if ctrl.numa_node is not None:
            # An expander bridge on the node, a root port on it, the controller on the port: the
            # guest's ACPI tables then give the controller's PCI function that node.
            bridge = (f"pxb-pcie,id=pxb{index},bus_nr={64 + 16 * index},"
                      f"numa_node={ctrl.numa_node},bus=pcie.0")
            port = f"pcie-root-port,id=rp{index},bus=pxb{index},chassis={10 + index},slot=0"
            args += ["-device", bridge, "-device", port]
            bus = f"rp{index}"
        args += _controller_args(index, ctrl, images, bus)
    return args + list(spec.extra)


def numa_options(spec: VmSpec) -> list[str]:
    """virtme-ng's --numa options: the memory and CPUs split evenly over the nodes."""
    if not spec.numa_nodes:
        return []
    per_cpu, per_mem = spec.cpus // spec.numa_nodes, spec.memory_mib // spec.numa_nodes
    out = []
    for node in range(spec.numa_nodes):
        first, last = node * per_cpu, (node + 1) * per_cpu - 1
        cpus = f"{first}" if first == last else f"{first}-{last}"
        out += ["--numa", f"{per_mem}M,cpus={cpus}"]
    return out
