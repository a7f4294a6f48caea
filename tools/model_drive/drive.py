"""A model drive: a block device with a write cache of known size, for tests with known answers.

It is built from parts whose behaviour is known exactly, so a test (or a sample report) can
check what the toolkit finds against the truth:

- a RAM-backed loop device whose writes a cgroup throttles for the processes in it
  (tools/ram_device.py; ``wrap`` runs a command there); reads are never throttled;
- a watcher thread that polls the device's ``/sys/block/loopN/stat`` (write sectors, field 7;
  discard sectors, field 14) every ``poll_s`` and moves the throttle between FAST and SLOW by the
  model (``CacheModel``, tools/model_drive/cache.py, which states its rules).

Precision: the kernel's throttle lets writes through in bursts of up to one 100 ms slice's
worth, and a writer the host held back catches up by less than two more (the slices its trim
keeps: block/blk-throttle.c, throtl_trim_slice), so one second at a cap may hold up to 1.3 x it
and t seconds rate x (t + 0.3 s): 84.5 MB/s was the median second of a loaded run at 80. The
watcher sees the writes as they complete (it polls every ``poll_s``, sooner when free
cache would run out at FAST before then), so ``burst`` exceeds the free cache by at most about
FAST x 0.1 s (3.8 MB over a 1 GiB cache at 200 MB/s, measured); at a switch, the writes waiting
in the throttle (at most the writer's queue depth) go at once, and those the device had not yet
completed when the watcher read its counters went at the old limit without counting in the
event's ``burst`` (at most another queue depth: 1 MiB at QD 1 of 1 MiB, whose FAST slices
complete in pairs 1 ms apart). The true values are in the
events. The start and end of an idle gap are each known to within one poll interval (the gap is
timed from the last poll that saw writes to the middle of the poll interval in which writing
resumed). All writes to the device count, including those of processes outside the cgroup, but
only the cgroup's are throttled. A write waiting in the throttle is not idle (rule 4): the
watcher sees it as the cgroup's submitted bytes (``Throttle.submitted``) less the device's
written ones. Only cgroup v1 counts a bio before the throttle lets it go; under v2, a writer
whose every request waits longer than ``idle_s`` (1 MiB at 1 MB/s) looks idle between them, and
so does one whose writes a loaded host held back that long (0.26 s, once in the suite). A writer
that submits nothing for ``idle_s`` (held off the CPU) leaves the drive idle under either.

Everything made (the mount, the file, the loop device, the cgroup, the watcher) is removed when the
context manager exits, also on an exception, Ctrl-C or SIGTERM (setup and cleanup run with
SIGINT and SIGTERM held back, so a signal cannot leave half of it behind). Processes still in the
cgroup then get a second to exit, then are stopped (SIGTERM, then SIGKILL): they were writing to
a device about to vanish.
After a SIGKILL of the owner, ``python -m tools.model_drive cleanup`` removes what it left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.model_drive.cache import IDLE_S, POLL_S, CacheModel, Event
from tools.ram_device import (
    Terminated,
    Throttle,
    _raise_terminated,
    _signals_held,
    held_stack,
    read_stat,
    throttled_loop,
)


class Watcher(threading.Thread):
    """Polls the device's counters, feeds the model and applies its write limit."""

    def __init__(self, dev: str, throttle: Throttle, model: CacheModel,
                 on_event: Callable[[Event], None] | None = None):
        super().__init__(name=f"model-drive-watcher-{Path(dev).name}", daemon=True)
        self.dev, self.block, self.throttle, self.model = dev, Path(dev).name, throttle, model
        self.on_event = on_event
        self.error: BaseException | None = None
        self._stop_flag = threading.Event()
        self._base = read_stat(self.block)[:2]
        self._sent0 = throttle.submitted(dev)
        # submitted - written, at its lowest so far: the level with nothing waiting. Writes by
        # processes outside the cgroup count only as written and lower it for good.
        self._lag_floor = 0

    def run(self) -> None:
        try:
            applied = self.model.limit
            seen = len(self.model.events)       # the start event is the owner's to report
            sleep = self.model.next_poll(self.model.t0)
            while not self._stop_flag.wait(sleep):
                t = time.monotonic()
                written, discarded, _ = read_stat(self.block)
                written -= self._base[0]
                limit = self.model.step(t, written, discarded - self._base[1],
                                        self._waiting(written))
                if limit != applied:
                    self.throttle.limit(self.dev, limit, afresh=True)
                    applied = limit
                if self.on_event:
                    for e in self.model.events[seen:]:
                        self.on_event(e)
                seen = len(self.model.events)
                sleep = self.model.next_poll(t)
        except BaseException as exc:  # noqa: BLE001 - kept and re-raised by the owner
            self.error = exc

    def _waiting(self, written: int) -> int:
        """Bytes the cgroup's writers have submitted that the device has not yet written: the
        writes waiting in the throttle (0 where the cgroup cannot say, v2)."""
        sent = self.throttle.submitted(self.dev)
        if sent is None:
            return 0
        lag = (sent - self._sent0) - written
        self._lag_floor = min(self._lag_floor, lag)
        return lag - self._lag_floor

    def stop(self) -> None:
        self._stop_flag.set()
        self.join(timeout=5)


@dataclass
class ModelDrive:
    """A running model drive: its device, its cgroup, its parameters and its event record."""

    device: str                 # /dev/loopN
    cgroup_procs: Path          # write a pid here to throttle that process (and its children)
    size: int                   # device size, bytes
    cache: int                  # C, bytes
    fast: int                   # bytes/s while the cache has room
    slow: int                   # bytes/s once it is full
    recover: int                # bytes/s of cache regained while idle
    idle_s: float
    poll_s: float
    mount: Path                 # the private tmpfs holding the file
    throttle: Throttle
    model: CacheModel
    watcher: Watcher

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` run inside the cgroup (throttled on this device)."""
        return self.throttle.wrap(cmd)

    @property
    def events(self) -> list[Event]:
        """The events so far (a copy; the watcher appends to the model's list)."""
        return list(self.model.events)

    def env(self) -> dict[str, str]:
        return {"MODEL_DRIVE": self.device, "MODEL_DRIVE_PROCS": str(self.cgroup_procs)}

    def params(self) -> dict:
        return {"device": self.device, "size": self.size, "cache": self.cache, "fast": self.fast,
                "slow": self.slow, "recover": self.recover, "idle_s": self.idle_s,
                "poll_s": self.poll_s, "cgroup": str(self.throttle.path),
                "mount": str(self.mount)}

    def check(self) -> None:
        """Raise the watcher's error, if it stopped on one (the throttle no longer follows the
        model)."""
        if self.watcher.error is not None:
            raise RuntimeError(f"model drive watcher failed: {self.watcher.error!r}")


def _set_up(stack: contextlib.ExitStack, size: int, cache: int, fast: int, slow: int,
            recover: int, idle_s: float, poll_s: float,
            on_event: Callable[[Event], None] | None) -> ModelDrive:
    dev, where, throttle = throttled_loop(stack, size)
    throttle.limit(dev, fast)
    t0 = time.monotonic()
    model = CacheModel(cache, fast, slow, recover, device_bytes=size, idle_s=idle_s,
                       poll_s=poll_s, t0=t0)
    watcher = Watcher(dev, throttle, model, on_event)
    watcher.start()
    stack.callback(watcher.stop)
    return ModelDrive(dev, throttle.procs, size, cache, fast, slow, recover, idle_s, poll_s,
                      where, throttle, model, watcher)


@contextlib.contextmanager
def model_drive(size: int = 1 << 30, cache: int = 1 << 30, fast: int = 400_000_000,
                slow: int = 100_000_000, recover: int = 50_000_000, *, idle_s: float = IDLE_S,
                poll_s: float = POLL_S,
                on_event: Callable[[Event], None] | None = None) -> Iterator[ModelDrive]:
    """A model drive (see the module's docstring), removed on exit. Sizes in bytes, speeds in
    bytes/s. ``on_event`` is called from the watcher thread for each event after ``start`` as
    it happens (the whole record is ``.events``).

    SIGTERM, while it is up, raises ``Terminated`` in the main thread so the cleanup runs; when
    nothing else handled SIGTERM before, the process then ends by SIGTERM as it would have."""
    own_sigterm = (threading.current_thread() is threading.main_thread()
                   and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    if own_sigterm:
        signal.signal(signal.SIGTERM, _raise_terminated)
    terminated = False
    try:
        with held_stack() as stack:
            # A signal held back during setup arrives as the block ends: still inside the with.
            with _signals_held():
                drive = _set_up(stack, size, cache, fast, slow, recover, idle_s, poll_s,
                                on_event)
            yield drive
        drive.check()
    except Terminated:
        terminated = True
        raise
    finally:
        if own_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if terminated:
                os.kill(os.getpid(), signal.SIGTERM)    # end as SIGTERM would have
