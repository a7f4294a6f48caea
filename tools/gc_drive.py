"""A drive whose random writes slow down once its spare area is used: garbage collection.

A full SSD writes at its fresh speed until the free blocks it keeps in reserve are used up; from
then on every write waits for garbage collection, and a sustained random write settles at a lower
level. SNIA PTS's preconditioning exists to reach that level before measuring, and a steady-state
rule that judges too early declares the fresh level steady. This drive has the drop at a known
point, for a test with a known answer:

- a RAM-backed loop device whose writes a cgroup throttles (tools/ram_device.py);
- its write I/Os capped at FAST per second until the device has completed AFTER write I/Os
  (``/sys/block/loopN/stat``, field 5), then at SLOW per second for good.

The count is of I/Os, not bytes, so a sequential fill in 128 KiB writes barely moves it while
4 KiB random writes use it up: the drop comes after AFTER x 4 KiB of random writes. The switch is
seen within one poll (20 ms) and recorded (``switched_at``: the I/O count and the time). Standard
library only.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.ram_device import (
    Throttle,
    _signals_held,
    held_stack,
    read_stat,
    throttled_loop,
)

POLL_S = 0.02


@dataclass
class GcDrive:
    device: str                 # /dev/loopN
    size: int
    fast_iops: int
    slow_iops: int
    after_ios: int              # write I/Os at FAST before the drop
    throttle: Throttle
    # at the drop: {'ios': count, 't': monotonic s, 'wall': epoch s}
    switched_at: dict = field(default_factory=dict)

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` run inside the cgroup (throttled on this device)."""
        return self.throttle.wrap(cmd)


def _watch(drive: GcDrive, stop: threading.Event) -> None:
    name = Path(drive.device).name
    base = read_stat(name)[2]
    while not stop.wait(POLL_S):
        ios = read_stat(name)[2] - base
        if ios >= drive.after_ios:
            drive.throttle.limit_iops(drive.device, drive.slow_iops)
            drive.switched_at = {"ios": ios, "t": time.monotonic(), "wall": time.time()}
            return


@contextlib.contextmanager
def gc_drive(size: int, fast_iops: int, slow_iops: int, after_ios: int) -> Iterator[GcDrive]:
    """A drive (see the module's docstring), removed on exit, also on an exception."""
    stop = threading.Event()
    with held_stack() as stack:
        with _signals_held():
            dev, _, throttle = throttled_loop(stack, size)
            throttle.limit_iops(dev, fast_iops)
            drive = GcDrive(dev, size, fast_iops, slow_iops, after_ios, throttle)
            watcher = threading.Thread(target=_watch, args=(drive, stop), daemon=True,
                                       name=f"gc-drive-{Path(dev).name}")
            watcher.start()
            stack.callback(watcher.join, 5)
            stack.callback(stop.set)
        yield drive
