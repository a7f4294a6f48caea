"""A RAM-backed loop device whose writes a cgroup throttles: the base of the model drives.

- a sparse file on a private tmpfs (RAM) attached as a loop device with direct I/O; it writes at
  several GB/s, so the device itself is never the limit;
- a cgroup (v1 blkio, else v2 io) whose write throttle (bytes/s or I/Os per second) caps this
  one device for the processes in it (``wrap`` runs a command there); reads only where asked.

tools/model_drive/ moves the bandwidth cap as a write cache fills and empties; tools/gc_drive.py
moves the IOPS cap once the drive's spare area is used; ``capped_device`` caps both directions
for good, a target of known speed for tests. Everything made here is removed by the
owner's ExitStack, with SIGINT and SIGTERM held back meanwhile; ``clean_leftovers`` removes what
an owner killed with SIGKILL left. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

SECTOR = 512                      # the unit of the stat file's sector counts
PREFIX = "model-drive"            # names of the cgroup, the tmpfs and its mount point
BLKIO = Path("/sys/fs/cgroup/blkio")
CGROUP2 = Path("/sys/fs/cgroup")


# --------------------------------------------------------------------------- the cgroup throttle

def _maj_min(dev: str) -> str:
    """The device's number as the cgroup files name it (MAJ:MIN)."""
    rdev = os.stat(dev).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


class Throttle:
    """A cgroup that caps write bandwidth per block device (v1 blkio, else v2 io), removed
    afterwards. Commands given through ``wrap`` run in it."""

    def __init__(self, prefix: str = "ssd-toolkit-test"):
        name = f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        if (BLKIO / "blkio.throttle.write_bps_device").exists():
            self.path, self.v2 = BLKIO / name, False
        elif (CGROUP2 / "cgroup.controllers").exists() and \
                "io" in (CGROUP2 / "cgroup.controllers").read_text().split():
            (CGROUP2 / "cgroup.subtree_control").write_text("+io")
            self.path, self.v2 = CGROUP2 / name, True
        else:
            raise OSError("no blkio (v1) or io (v2) cgroup controller")
        self.path.mkdir()

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join the cgroup."""
        return self.path / "cgroup.procs"

    def limit(self, dev: str, bytes_per_s: int, afresh: bool = False,
              direction: str = "write") -> None:
        """Cap writes to ``dev`` at ``bytes_per_s`` (its reads: ``direction="read"``). ``afresh``
        removes the old cap first: the
        kernel dispatches up to one 100 ms slice ahead of the rate, and a new, lower cap alone
        would make that advance be paid back at the new rate, a pause of up to 0.1 s x old/new
        (0.36 s measured from 200 to 50 MB/s); without a cap for a moment, the bios waiting in
        the throttle (at most the queue depth) go at once instead."""
        mm = _maj_min(dev)
        if self.v2:
            if afresh:
                (self.path / "io.max").write_text(f"{mm} {direction[0]}bps=max")
            (self.path / "io.max").write_text(f"{mm} {direction[0]}bps={int(bytes_per_s)}")
        else:
            knob = self.path / f"blkio.throttle.{direction}_bps_device"
            if afresh:
                knob.write_text(f"{mm} 0")
            knob.write_text(f"{mm} {int(bytes_per_s)}")

    def limit_iops(self, dev: str, ios_per_s: int, direction: str = "write") -> None:
        """Cap write I/Os to ``dev`` at ``ios_per_s`` (whatever their size); or its reads, with
        ``direction="read"`` (a RAM device reads as fast as the CPUs copy, which moves with the
        machine's load; capped, its reads have a known level)."""
        mm = _maj_min(dev)
        if self.v2:
            (self.path / "io.max").write_text(f"{mm} {direction[0]}iops={int(ios_per_s)}")
        else:
            (self.path / f"blkio.throttle.{direction}_iops_device").write_text(
                f"{mm} {int(ios_per_s)}")

    def submitted(self, dev: str) -> int | None:
        """Bytes of writes to ``dev`` that processes in the cgroup have submitted so far, counted
        as each bio reaches the throttle, before it waits there (v1's
        ``blkio.throttle.io_service_bytes``; under a cap it leads the device's own count by the
        writes waiting: queue depth x block size, 4 MiB at QD 32 of 128 KiB, measured). None on
        v2, whose io.stat counts a bio only when the throttle lets it go."""
        if self.v2:
            return None
        row = f"{_maj_min(dev)} Write "
        for line in (self.path / "blkio.throttle.io_service_bytes").read_text().splitlines():
            if line.startswith(row):
                return int(line.split()[2])
        return 0                                    # nothing submitted yet: no row

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` run inside the cgroup (the shell joins it, then execs the command)."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs), *cmd]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs.read_text().split()]
        except FileNotFoundError:
            return []

    def remove(self, wait_s: float = 1.0, grace_s: float = 5.0) -> None:
        """Remove the cgroup (possible only once it is empty). Processes still in it get
        ``wait_s`` to exit, then SIGTERM and ``grace_s``, then SIGKILL and ``grace_s``."""
        for sig, within in ((None, wait_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
            if sig is not None:
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
            deadline = time.monotonic() + within
            while True:
                try:
                    self.path.rmdir()
                    return
                except FileNotFoundError:
                    return
                except OSError:                     # EBUSY: not empty yet
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
        raise OSError(f"cannot remove cgroup {self.path}: processes {self.pids()} remain")


# --------------------------------------------------------------------------- the device

def read_stat(name: str) -> tuple[int, int, int]:
    """Bytes written, bytes discarded and write I/Os completed so far by block device ``name``
    (e.g. loop3), from its stat file (Documentation/block/stat.rst: field 5 write I/Os, field 7
    write sectors, field 14 discard sectors)."""
    fields = Path(f"/sys/block/{name}/stat").read_text().split()
    discard = int(fields[13]) if len(fields) > 13 else 0
    return int(fields[6]) * SECTOR, discard * SECTOR, int(fields[4])


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM while a model drive is up (cleanup then runs)."""


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM back (main thread only): setup and cleanup run to the end, then
    a signal that came meanwhile is acted on."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(cmd)}: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout.strip()


def backing_file(dev: str) -> Path | None:
    """The file loop device ``dev`` is attached to (the kernel's path, " (deleted)" dropped once
    the file is removed), or None for a free name."""
    try:
        text = (Path("/sys/block") / Path(dev).name / "loop" / "backing_file").read_text()
    except OSError:
        return None
    return Path(text.strip().removesuffix(" (deleted)"))


def backs(dev: str, backing: Path) -> bool:
    """Whether loop device ``dev`` is still attached to ``backing``. A name alone says nothing:
    once a device is detached, another process may attach its own under the same name (losetup
    -f takes the first free), and detaching that one by name breaks its owner (v104: one test
    saw, then detached, another's /dev/loop0)."""
    return backing_file(dev) == backing.resolve()


def _detach(dev: str, backing: Path) -> None:
    """Detach loop device ``dev`` if it is still ours (attached to ``backing``) and wait until it
    is gone (udev's probes may hold it a moment, and the file system under it cannot be unmounted
    before). A device another process attached under the freed name is neither detached nor
    waited for."""
    if not backs(dev, backing):
        return
    subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
    deadline = time.monotonic() + 10
    while backs(dev, backing) and time.monotonic() < deadline:
        time.sleep(0.05)


def _unmount(where: Path) -> None:
    for _ in range(100):                        # busy for a moment after a loop detach
        if subprocess.run(["umount", str(where)], check=False,
                          capture_output=True).returncode == 0:
            break
        if not os.path.ismount(where):
            break
        time.sleep(0.1)
    else:
        raise OSError(f"cannot unmount {where}")


def ram_loop(stack: contextlib.ExitStack, size: int) -> tuple[str, Path]:
    """A loop device (direct I/O) over a sparse file of ``size`` bytes on a private tmpfs, each
    removed by ``stack``: (device, mount point)."""
    if os.geteuid() != 0:
        raise PermissionError("a model drive needs root (loop device, mount, cgroup)")
    where = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-{os.getpid()}-"))
    stack.callback(where.rmdir)
    # A private tmpfs: its size bounds the RAM used, and unmounting it frees everything. Its
    # source names the owner, so `cleanup` can tell a dead owner's mount.
    _run("mount", "-t", "tmpfs", "-o", f"size={size + (1 << 20)},mode=0700",
         f"{PREFIX}-{os.getpid()}", str(where))
    stack.callback(_unmount, where)
    backing = where / "drive.img"
    with open(backing, "wb") as f:             # sparse: RAM is used only where written
        f.truncate(size)
    dev = _run("losetup", "-f", "--show", "--direct-io=on", str(backing))
    stack.callback(_detach, dev, backing)
    whole_requests(dev)
    return dev, where


def whole_requests(dev: str) -> None:
    """The loop device's requests as large as it can take (max_sectors_kb = max_hw_sectors_kb).
    A loop device keeps the size an earlier user set after it is detached, and a write split in
    two is charged twice by the cgroup's throttle (Linux 6.1): 128 KiB writes on a loop device
    left at 64 KiB ran at exactly half its caps (200 MB/s of 400, 50 of 100), a model drive's
    known answers all wrong."""
    queue = Path("/sys/block") / Path(dev).name / "queue"
    (queue / "max_sectors_kb").write_text((queue / "max_hw_sectors_kb").read_text().strip())


def throttled_loop(stack: contextlib.ExitStack, size: int) -> tuple[str, Path, Throttle]:
    """``ram_loop``'s device and a cgroup of its own to throttle it (named with PREFIX, so that
    ``clean_leftovers`` finds it), each removed by ``stack``: (device, mount point, throttle)."""
    dev, where = ram_loop(stack, size)
    throttle = Throttle(prefix=PREFIX)
    stack.callback(throttle.remove)
    return dev, where, throttle


@contextlib.contextmanager
def held_stack() -> Iterator[contextlib.ExitStack]:
    """An ExitStack for a drive's parts, closed with SIGINT and SIGTERM held back so that the
    cleanup runs to the end; set the parts up under ``_signals_held()`` too."""
    stack = contextlib.ExitStack()
    try:
        yield stack
    finally:
        with _signals_held():
            stack.close()


@contextlib.contextmanager
def capped_device(size: int, iops: int, bytes_per_s: int) -> Iterator[tuple[str, Throttle]]:
    """A RAM loop device of ``size`` bytes whose reads and writes are each capped at ``iops`` I/Os
    and ``bytes_per_s`` per second for the commands its Throttle wraps: (device, throttle),
    removed on exit, also on an exception.

    A target of known speed that the machine's load does not move, as long as the CPUs can
    issue that many I/Os, and on which fio waits for the throttle instead of copying RAM flat
    out: a test that needs one drive faster than another, but not any particular speed, uses
    a pair of these rather than a RAM device against a file.

        with capped_device(64 << 20, 2_000, 32_000_000) as (dev, throttle):
            subprocess.run(throttle.wrap(["fio", "--filename", dev, ...]))
    """
    with held_stack() as stack:
        with _signals_held():
            dev, _, throttle = throttled_loop(stack, size)
            for direction in ("read", "write"):
                throttle.limit_iops(dev, iops, direction=direction)
                throttle.limit(dev, bytes_per_s, direction=direction)
        yield dev, throttle


# --------------------------------------------------------------------------- leftovers

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(name: str) -> int | None:
    m = re.match(rf"{PREFIX}-(\d+)-", name + "-")
    return int(m.group(1)) if m else None


def leftovers() -> dict[str, list[str]]:
    """Cgroups, loop devices and mounts of model drives whose owner process is gone."""
    found: dict[str, list[str]] = {"cgroups": [], "loops": [], "mounts": []}
    for root in (BLKIO, CGROUP2):
        for p in sorted(root.glob(f"{PREFIX}-*")) if root.is_dir() else ():
            if p.is_dir() and (pid := _owner(p.name)) and not _alive(pid):
                found["cgroups"].append(str(p))
    for line in Path("/proc/self/mounts").read_text().splitlines():
        source, target = line.split()[:2]
        if (pid := _owner(source)) and not _alive(pid):
            found["mounts"].append(target)
    for attached in sorted(Path("/sys/block").glob("loop*/loop/backing_file")):
        dev = "/dev/" + attached.parent.parent.name
        path = backing_file(dev)
        if path and any(str(path).startswith(m + "/") for m in found["mounts"]):
            found["loops"].append(dev)
    return found


def clean_leftovers() -> dict[str, list[str]]:
    """Remove what model drives of dead owners left (processes in their cgroups are stopped)."""
    found = leftovers()
    for path in found["cgroups"]:
        t = Throttle.__new__(Throttle)
        t.path, t.v2 = Path(path), not path.startswith(str(BLKIO))
        t.remove(wait_s=0, grace_s=1.0)
    for dev in found["loops"]:
        if backing := backing_file(dev):
            _detach(dev, backing)
    for where in found["mounts"]:
        _unmount(Path(where))
        Path(where).rmdir()
    return found
