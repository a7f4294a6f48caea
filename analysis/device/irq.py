"""Which CPUs take a drive's interrupts (§1), from /proc/interrupts as env.bash copied it.

An NVMe controller nvme<N> names its interrupt vectors nvme<N>q<k> (k=0 the admin queue): each
line counts, per CPU, the interrupts that CPU took. At high IOPS the CPU that takes a queue's
completions does the kernel's half of every I/O on it; when it is also the CPU a job submits
from, the two saturate it together, and analysis.run.cpu_load then finds it the busiest. Loop,
zram and other bio devices take no interrupts of their own; virtio disks name theirs by virtio
index (virtio<i>-req.<q>), which the disk's name does not give, so they are not matched here.
"""

from __future__ import annotations

import re

# When a drive's interrupts all land on at most this share of the CPUs, say so: jobs there
# compete with the completions (a warning in §1; --cpus can keep jobs elsewhere).
FEW_IRQ_CPUS = 0.5


def controller_of(disk: str) -> str | None:
    """nvme0n1 -> nvme0 (namespaces share their controller's queues); None for other disks."""
    m = re.fullmatch(r"(nvme\d+)(?:n\d+)?", disk.removeprefix("/dev/"))
    return m.group(1) if m else None


def device_irq_cpus(interrupts: str | None, disk: str | None) -> tuple[list[int], int] | None:
    """(the CPUs that took any of the disk's I/O queue interrupts, the CPUs /proc/interrupts
    lists), or None when the disk's driver names no interrupts this knows."""
    ctrl = controller_of(disk or "")
    if not interrupts or not ctrl:
        return None
    lines = interrupts.splitlines()
    ncpus = len(lines[0].split()) if lines else 0
    queue = re.compile(rf"{ctrl}q([1-9]\d*)$")  # q0 is the admin queue: no I/O completes there
    cpus: set[int] = set()
    found = False
    for line in lines[1:]:
        words = line.split()
        if not words or not queue.match(words[-1]):
            continue
        found = True
        counts = words[1:1 + ncpus]
        cpus.update(k for k, c in enumerate(counts) if c.isdigit() and int(c) > 0)
    return (sorted(cpus), ncpus) if found else None


def irq_warning(disk: str | None, found: tuple[list[int], int] | None) -> list[str]:
    if not found:
        return []
    cpus, ncpus = found
    if not cpus or len(cpus) > FEW_IRQ_CPUS * ncpus:
        return []
    listed = ",".join(map(str, cpus))
    return [(f"{disk}'s I/O interrupts all go to CPU {listed} of {ncpus}: at high IOPS a job "
            "running there shares that CPU with the completions and saturates it first (the "
            "sections' cpu_busiest and host_bound show it); --cpus can keep the jobs elsewhere")]
