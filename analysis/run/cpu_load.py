"""How busy each CPU was while a repetition ran: the host's limit, measured where it happens.

lib/loop.bash (cpu_snapshot) copies the per-CPU lines of /proc/stat right before and right after
fio into results/<section>/<case>/rep<k>.cpu (a name the analysis never takes for a repetition,
which are rep<k>.json). The difference is each CPU's ticks in user, nice, system, irq, softirq,
idle, iowait and steal over the repetition. A CPU's busy share is

    (user + nice + system + irq + softirq) / (all of them - steal)

that is, of the time the CPU was ours (a hypervisor's steal is time no one on this machine had),
the part spent working. The snapshots also span fio's start and exit (a few tenths of a second
of setup), which would dilute a short repetition's share: a time-based job's busy time is
therefore taken over its own ramp + runtime (io_seconds), capped at 100%. Unlike fio's own usr+sys (getrusage of its job processes), this counts
the kernel's hard- and soft-interrupt time, which on a fast drive is where the I/O path costs,
and it sees a single interrupt CPU saturated while the job's own CPU is not.

A point is host bound when a CPU that ran its jobs or took its interrupts was at least
HOST_BOUND_BUSY busy (analysis.run.host_ceiling.is_host_bound): the CPUs considered are all of
them unless the job was pinned (fio's cpus_allowed), and then its CPUs plus those that spent at
least IRQ_CPU_SHARE of their time in interrupts (the CPUs that served its completions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

CPU_FILE_SUFFIX = ".cpu"
# /proc/stat's per-CPU fields, in order (proc(5)); guest and guest_nice are already in user and
# nice, so they are left out.
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY = ("user", "nice", "system", "irq", "softirq")
# A CPU the job was not pinned to counts as one that took its interrupts when it spent this
# share of its time in hard and soft interrupts (an idle CPU spends well under 1%).
IRQ_CPU_SHARE = 0.05


@dataclass(frozen=True)
class CpuLoad:
    """One repetition: each CPU's busy share (0..1) and interrupt share, and the wall time."""

    busy: dict[int, float]
    irq: dict[int, float]
    seconds: float

    def pool(self, cpus: set[int] | None = None) -> set[int]:
        """The CPUs that count for a job: all of them, or those it was pinned to (`cpus`) and
        those that took interrupts."""
        if not cpus:
            return set(self.busy)
        return (cpus | {c for c, s in self.irq.items() if s >= IRQ_CPU_SHARE}) & set(self.busy)

    def busiest(self, cpus: set[int] | None = None) -> tuple[int, float]:
        """(cpu, busy share) of the busiest CPU among `cpus` (all when None) and the CPUs
        that took interrupts; (-1, nan) when none was measured."""
        pool = self.pool(cpus)
        if not pool:
            return -1, math.nan
        cpu = max(sorted(pool), key=lambda c: self.busy[c])
        return cpu, self.busy[cpu]

    def together(self, cpus: set[int] | None = None) -> float:
        """The busy share of the CPUs that count (pool) taken together: the host as a whole,
        saturated even when the work spreads so that no single CPU is; nan when none."""
        pool = self.pool(cpus)
        return sum(self.busy[c] for c in pool) / len(pool) if pool else math.nan

    def over(self, seconds: float | None) -> CpuLoad:
        """The same busy time as a share of `seconds` (the job's own I/O time, shorter than the
        snapshots' span), capped at 1; unchanged when not known or not shorter."""
        if not seconds or seconds <= 0 or math.isnan(self.seconds) or seconds >= self.seconds:
            return self
        k = self.seconds / seconds
        return CpuLoad({c: min(1.0, b * k) for c, b in self.busy.items()},
                       {c: min(1.0, b * k) for c, b in self.irq.items()}, seconds)


def parse_snapshots(text: str) -> dict[str, tuple[float, dict[int, list[int]]]]:
    """'before'/'after' -> (epoch seconds, {cpu: ticks per FIELDS}) from a rep<k>.cpu file."""
    out: dict[str, tuple[float, dict[int, list[int]]]] = {}
    current = None
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in ("before", "after"):
            current = words[0]
            out[current] = (float(words[1]) if len(words) > 1 else math.nan, {})
        elif current and words[0].startswith("cpu") and words[0][3:].isdigit():
            ticks = [int(w) for w in words[1:1 + len(FIELDS)]]
            out[current][1][int(words[0][3:])] = ticks + [0] * (len(FIELDS) - len(ticks))
    return out


def load_of(text: str) -> CpuLoad | None:
    """The load between the two snapshots; None when the file lacks one of them."""
    snaps = parse_snapshots(text)
    if "before" not in snaps or "after" not in snaps:
        return None
    (t0, before), (t1, after) = snaps["before"], snaps["after"]
    busy, irq = {}, {}
    for cpu in sorted(set(before) & set(after)):
        delta = dict(zip(FIELDS, (b - a for a, b in zip(before[cpu], after[cpu]))))
        ours = sum(delta.values()) - delta["steal"]
        if ours <= 0:
            continue  # an offline CPU, or a snapshot shorter than a tick
        busy[cpu] = sum(delta[f] for f in BUSY) / ours
        irq[cpu] = (delta["irq"] + delta["softirq"]) / ours
    return CpuLoad(busy, irq, t1 - t0)


def read_load(case_dir: Path, k: int) -> CpuLoad | None:
    """rep<k>.cpu of a case folder, or None when the run recorded none (an older run)."""
    path = Path(case_dir) / f"rep{k}{CPU_FILE_SUFFIX}"
    try:
        return load_of(path.read_text())
    except (OSError, ValueError):
        return None


def parse_cpulist(text: str | None) -> set[int]:
    """fio's cpus_allowed and sysfs cpulist syntax: '0-3,6'. Empty for none or unreadable."""
    cpus: set[int] = set()
    for part in (text or "").replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _secs(value: str | None) -> float | None:
    """fio's time option as the toolkit writes it (whole seconds, or with an s / ms suffix)."""
    v = (value or "0").strip().lower()
    scale = 1e-3 if v.endswith("ms") else 1.0
    number = v.removesuffix("ms").removesuffix("s")
    return float(number) * scale if number.replace(".", "", 1).isdigit() else None


def io_seconds(options: dict[str, str]) -> float | None:
    """A time-based job's ramp_time + runtime in seconds; None for a job that stops by size."""
    if options.get("time_based") not in ("1", "") or "runtime" not in options:
        return None
    run, ramp = _secs(options.get("runtime")), ramp_seconds(options)
    return None if run is None or ramp is None else run + ramp


def ramp_seconds(options: dict[str, str]) -> float | None:
    """A job's ramp_time in seconds: its I/O reaches the drive, but not fio's counts."""
    return _secs(options.get("ramp_time"))


def together_over(loads: list[CpuLoad | None], pinned: str | None = None,
                  seconds: list[float | None] | None = None) -> float:
    """A case's CPUs taken together, the mean over its repetitions (each over its own I/O
    time, `seconds`, when known); nan without loads."""
    cpus = parse_cpulist(pinned) or None
    seconds = seconds or [None] * len(loads)
    found = [ld.over(s).together(cpus) for ld, s in zip(loads, seconds) if ld is not None]
    found = [f for f in found if not math.isnan(f)]
    return sum(found) / len(found) if found else math.nan


def busiest_over(loads: list[CpuLoad | None], pinned: str | None = None,
                 seconds: list[float | None] | None = None) -> tuple[int, float]:
    """A case's busiest CPU over its repetitions: the mean of each repetition's busiest share
    (over its own I/O time, `seconds`, when known), and the CPU that was busiest most often (the
    lowest on a tie); (-1, nan) without loads."""
    cpus = parse_cpulist(pinned) or None
    seconds = seconds or [None] * len(loads)
    found = [ld.over(s).busiest(cpus) for ld, s in zip(loads, seconds) if ld is not None]
    found = [(c, s) for c, s in found if c >= 0]
    if not found:
        return -1, math.nan
    ids = [c for c, _ in found]
    return max(sorted(set(ids)), key=ids.count), sum(s for _, s in found) / len(found)
