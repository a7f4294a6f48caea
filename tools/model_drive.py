"""A model drive: a block device with a write cache of known size, for tests with known answers.

An SSD with an SLC write cache writes fast until the cache is full, then at the speed of its
native flash (the cliff of §6), and regains cache while it is idle. This module builds such a
device from parts whose behaviour is known exactly, so a test (or a sample report) can check what
the toolkit finds against the truth:

- a RAM-backed loop device whose writes a cgroup throttles for the processes in it
  (tools/ram_device.py; ``wrap`` runs a command there); reads are never throttled;
- a watcher thread that polls the device's ``/sys/block/loopN/stat`` (write sectors, field 7;
  discard sectors, field 14) every ``poll_s`` and moves the throttle between FAST and SLOW by the
  model below (``CacheModel``, pure bookkeeping, tested without a device).

The model, exactly (C = cache, in bytes):

1. The cache starts empty of data: C bytes free; the write limit is FAST bytes/s.
2. Every byte written to the device takes a byte of free cache while there is any. When free
   cache reaches 0 the limit becomes SLOW bytes/s (event ``slow``, with ``burst``: the bytes
   written since the cache was last refilled, i.e. the truth a cache estimate is checked against).
3. Writing never regains cache, at either speed (a drive folding SLC at full load has no spare
   time).
4. Idle means no write for at least ``idle_s`` (0.25 s). Once the device has been idle that long,
   the whole gap counts, from the last write: after idling t seconds, free cache is
   ``min(C, free + RECOVER * t)`` (free being what was left when writing stopped; 0 after a
   cliff). A gap shorter than ``idle_s`` regains nothing. As soon as an idle gap is confirmed and
   free cache is above 0 the limit is FAST again (event ``fast``).
5. When writing resumes after an idle gap, event ``resume`` records the gap (``idle_s``) and the
   free cache it left (``free``): a following full-speed write gets ``free`` bytes at FAST, then
   falls to SLOW (rule 2). So after a full cliff and t seconds of idle, the next write's cache is
   ``min(C, RECOVER * t)``.
6. Discards adding up to the device's size (e.g. ``blkdiscard`` of the whole device) empty the
   cache of data: C bytes free at once (event ``purge``), like a drive's sanitize or full TRIM.

Precision: the kernel's throttle lets writes through in bursts of up to one 100 ms slice's
worth, and the watcher sees them as they complete (it polls every ``poll_s``, sooner when free
cache would run out at FAST before then), so ``burst`` exceeds the free cache by at most about
FAST x 0.1 s (3.8 MB over a 1 GiB cache at 200 MB/s, measured); at a switch, the writes waiting
in the throttle (at most the writer's queue depth) go at once. The true values are in the
events. The start and end of an idle gap are each known to within one poll interval (the gap is
timed from the last poll that saw writes to the middle of the poll interval in which writing
resumed). All writes to the device count, including those of processes outside the cgroup, but
only the cgroup's are throttled. A writer whose every request takes longer than ``idle_s`` at
the throttled speed (e.g. 4 MiB blocks at 10 MB/s) looks idle between them.

Everything made (the mount, the file, the loop device, the cgroup, the watcher) is removed when the
context manager exits, also on an exception, Ctrl-C or SIGTERM (setup and cleanup run with
SIGINT and SIGTERM held back, so a signal cannot leave half of it behind). Processes still in the
cgroup then get a second to exit, then are stopped (SIGTERM, then SIGKILL): they were writing to
a device about to vanish.
After a SIGKILL of the owner, ``python -m tools.model_drive cleanup`` removes what it left.

Standard library only (the toolkit's ``analysis`` package is not imported), so the CLI runs with
any python3:

    python -m tools.model_drive run --cache 1G -- bash wss_burst_test.bash \\
        --target '$MODEL_DRIVE' --destroy '$MODEL_DRIVE'
    python -m tools.model_drive start --size 4G --cache 1G --fast 400M --slow 100M --recover 50M
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.ram_device import (
    PREFIX,
    Terminated,
    Throttle,
    _raise_terminated,
    _signals_held,
    clean_leftovers,
    ram_loop,
    read_stat,
)

# Defaults of the CLI (a drive with a 1 GiB cache) and of the watcher.
DEFAULTS = {"size": "4G", "cache": "1G", "fast": "400M", "slow": "100M", "recover": "50M"}
# Idle is judged from completions, and the kernel's throttle dispatches in 100 ms slices: a
# throttled writer's completions come in bursts up to 0.11 s apart (measured at 50 and 200 MB/s,
# QD 1 and 32), so a gap must be well above that to be idle.
IDLE_S = 0.25
POLL_S = 0.02
MIN_SLEEP_S = 0.001


# --------------------------------------------------------------------------- the cache model

@dataclass(frozen=True)
class Event:
    """One change of the model drive's state. Byte counts are since the model drive started."""

    kind: str                   # start, slow, fast, resume, purge
    t: float                    # seconds since the model drive started (monotonic clock)
    wall: float                 # the same moment, time.time()
    written: int                # bytes written to the device so far (at a resume, with the
                                # poll's writes that showed it)
    free: int                   # free cache after the event, bytes
    limit: int                  # write limit after the event, bytes/s
    burst: int | None = None    # slow: bytes written since the cache was last refilled
    idle_s: float | None = None  # fast, resume: the idle gap counted so far / in all

    def describe(self) -> str:
        if self.kind == "slow":
            what = f"cache full after {self.burst} B written since it was refilled"
        elif self.kind == "fast":
            what = f"idle {self.idle_s:.3f} s, cache regaining"
        elif self.kind == "resume":
            what = f"writing resumed after {self.idle_s:.3f} s idle"
        elif self.kind == "purge":
            what = "discard of the whole device, cache emptied of data"
        else:
            what = "cache empty of data"
        return (f"+{self.t:.3f} s {self.kind}: {what}; free {self.free} B, "
                f"limit {self.limit / 1e6:g} MB/s, written {self.written} B")


class CacheModel:
    """The write cache's bookkeeping (the rules in the module's docstring), fed the device's
    cumulative counters by ``step``; it does no I/O, so it is tested on its own."""

    def __init__(self, cache: int, fast: int, slow: int, recover: int, *,
                 device_bytes: int | None = None, idle_s: float = IDLE_S, poll_s: float = POLL_S,
                 t0: float = 0.0, wall0: float | None = None):
        if not 0 < slow <= fast or cache <= 0 or recover < 0:
            raise ValueError("need cache > 0, 0 < slow <= fast and recover >= 0")
        self.cache, self.fast, self.slow, self.recover = cache, fast, slow, recover
        self.device_bytes, self.idle_s, self.poll_s = device_bytes, idle_s, poll_s
        self.t0 = t0
        self.wall0 = time.time() if wall0 is None else wall0
        self.free = float(cache)       # free cache when writing last stopped (or now, if writing)
        self.limit = fast
        self.written = 0
        self.discarded = 0             # bytes discarded since the last purge
        self._discard_seen = 0
        self.burst = 0                 # bytes written since the cache was last refilled
        self.last_write = t0           # time of the last poll that saw writes
        self.prev_t = t0
        self.quiet = True              # the last poll saw no writes
        self.events: list[Event] = []
        self._event("start", t0)

    def _event(self, kind: str, t: float, **extra) -> None:
        free = self.available(t) if kind == "fast" else self.free
        self.events.append(Event(kind, round(t - self.t0, 6), self.wall0 + (t - self.t0),
                                 self.written, int(free), self.limit, **extra))

    def available(self, t: float) -> float:
        """Free cache at time t: what was left when writing stopped, plus what an idle gap of at
        least idle_s has regained since the last write."""
        gap = t - self.last_write
        if not self.quiet or gap < self.idle_s:
            return self.free
        return min(self.cache, self.free + self.recover * gap)

    def step(self, t: float, written: int, discarded: int = 0) -> int:
        """The counters at time t (bytes written and discarded since start, cumulative): update
        the cache and return the write limit to apply now, in bytes/s."""
        new_discard = discarded - self._discard_seen
        self._discard_seen = discarded
        if new_discard > 0 and self.device_bytes:
            self.discarded += new_discard
            if self.discarded >= self.device_bytes:
                self.discarded = 0
                self.free, self.burst, self.limit = float(self.cache), 0, self.fast
                self._event("purge", t)
        d = written - self.written
        self.written = written
        if d > 0:
            if self.quiet:
                # Writing resumed in (prev_t, t]: the middle is the best guess of when.
                gap = (self.prev_t + t) / 2 - self.last_write
                if gap >= self.idle_s:
                    self.free = min(self.cache, self.free + self.recover * gap)
                    self.burst = 0
                    self._event("resume", t, idle_s=round(gap, 6))
            self.free -= d
            self.burst += d
            self.last_write, self.quiet = t, False
            if self.free <= 0:
                self.free = 0.0
                if self.limit != self.slow:
                    self.limit = self.slow
                    self._event("slow", t, burst=self.burst)
        else:
            self.quiet = True
            if self.limit != self.fast and self.available(t) > 0:
                self.limit = self.fast
                self._event("fast", t, idle_s=round(t - self.last_write, 6))
        self.prev_t = t
        return self.limit

    def next_poll(self, t: float) -> float:
        """Seconds until the next poll: poll_s, or sooner when the free cache could run out at
        FAST before then (so the switch to SLOW is on time)."""
        if self.limit != self.fast:
            return self.poll_s
        return min(self.poll_s, max(MIN_SLEEP_S, self.available(t) / self.fast))


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

    def run(self) -> None:
        try:
            applied = self.model.limit
            seen = len(self.model.events)       # the start event is the owner's to report
            sleep = self.model.next_poll(self.model.t0)
            while not self._stop_flag.wait(sleep):
                t = time.monotonic()
                written, discarded, _ = read_stat(self.block)
                limit = self.model.step(t, written - self._base[0], discarded - self._base[1])
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

    def stop(self) -> None:
        self._stop_flag.set()
        self.join(timeout=5)


# --------------------------------------------------------------------------- the drive

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
    dev, where = ram_loop(stack, size)
    throttle = Throttle(prefix=PREFIX)
    stack.callback(throttle.remove)
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
        stack = contextlib.ExitStack()
        try:
            # A signal held back during setup arrives as the block ends: still inside the try.
            with _signals_held():
                drive = _set_up(stack, size, cache, fast, slow, recover, idle_s, poll_s,
                                on_event)
            yield drive
        finally:
            with _signals_held():
                stack.close()
        drive.check()
    except Terminated:
        terminated = True
        raise
    finally:
        if own_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if terminated:
                os.kill(os.getpid(), signal.SIGTERM)    # end as SIGTERM would have


# --------------------------------------------------------------------------- the CLI

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}     # decimal


def parse_bytes(text: str, *, rate: bool = False) -> int:
    """'1G', '512MiB', '400M', '100MB/s', '4096' -> bytes (or bytes/s). KiB, MiB, GiB, TiB are
    binary and KB, MB, GB, TB decimal; a bare K, M, G, T is binary for a size (like fio's and
    the toolkit's --size) and decimal for a speed (like the report's MB/s)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*(/s)?\s*", text, re.IGNORECASE)
    if not m or (m.group(4) and not rate):
        raise ValueError(f"not a {'speed' if rate else 'size'}: {text!r}")
    number, letter, suffix = float(m.group(1)), m.group(2).lower(), (m.group(3) or "").lower()
    if suffix == "ib" and not letter:
        raise ValueError(f"not a {'speed' if rate else 'size'}: {text!r}")
    binary = suffix == "ib" or (suffix == "" and not rate)
    unit = 1024 ** ("kmgt".index(letter) + 1) if letter and binary else _UNITS[letter]
    value = int(number * unit)
    if value <= 0:
        raise ValueError(f"must be above 0: {text!r}")
    return value


def _human(n: int, rate: bool = False) -> str:
    if rate:
        return f"{n / 1e6:g} MB/s"
    return f"{n / 2**30:g} GiB ({n / 1e9:g} GB)" if n >= 2**30 else f"{n / 2**20:g} MiB"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tools.model_drive",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A model drive: a RAM-backed loop device throttled by a cgroup so that it "
                    "writes like an SSD with a write (SLC) cache of known size.",
        epilog="""\
The model (C = --cache):
  the cache starts with C bytes free and the write limit is --fast; every byte written takes a
  byte of free cache; when none is left the limit is --slow. Writing never regains cache. After
  at least 0.25 s without writes, the whole idle gap regains cache at --recover bytes/s from the
  last write, up to C, and the limit is --fast again: after a cliff and t s of idle the next
  write gets min(C, recover*t) bytes at --fast. A discard of the whole device (blkdiscard) empties
  the cache at once. Reads are never throttled.

Known answers for a sequential write at full speed from a fresh model drive: C bytes at --fast
(C / fast seconds), then --slow. Only processes in the cgroup are throttled: `run` puts CMD
there; every write to the device counts. Events (switches, with bytes written) are printed to
stderr and, with --events FILE, written as JSON lines.

Sizes: 1G = 1 GiB (binary, like fio's --size); speeds: 400M = 400 MB/s = 400e6 bytes/s.
Write GiB/MiB or GB/MB to say it explicitly.

Examples:
  python -m tools.model_drive run --cache 1G -- bash wss_burst_test.bash \\
      --target '$MODEL_DRIVE' --destroy '$MODEL_DRIVE'
  python -m tools.model_drive start --size 4G --cache 1G --fast 400M --slow 100M --recover 50M
  python -m tools.model_drive cleanup     # after the owner was killed with SIGKILL
Needs root. Exit codes: `run` exits with CMD's code; 1 the model drive failed; 2 bad usage;
130 interrupted (SIGINT), 143 terminated (SIGTERM).""")
    sub = p.add_subparsers(dest="command", required=True, metavar="{start,run,cleanup}")

    def params(sp):
        sp.add_argument("--size", default=DEFAULTS["size"],
                        help="device size (default %(default)s); RAM is used only where written")
        sp.add_argument("--cache", default=DEFAULTS["cache"],
                        help="write cache C (default %(default)s)")
        sp.add_argument("--fast", default=DEFAULTS["fast"],
                        help="write speed while the cache has room (default %(default)s)")
        sp.add_argument("--slow", default=DEFAULTS["slow"],
                        help="write speed once the cache is full (default %(default)s)")
        sp.add_argument("--recover", default=DEFAULTS["recover"],
                        help="cache regained per second of idle (default %(default)s)")
        sp.add_argument("--idle", type=float, default=IDLE_S,
                        help="seconds without writes before idle counts (default %(default)s)")
        sp.add_argument("--poll", type=float, default=POLL_S,
                        help="seconds between polls of the device's counters "
                             "(default %(default)s)")
        sp.add_argument("--events", metavar="FILE",
                        help="write the parameters, then each event, as JSON lines to FILE")
        sp.add_argument("--quiet", action="store_true", help="do not print events to stderr")

    start = sub.add_parser(
        "start", help="set up, print MODEL_DRIVE=... lines, run until SIGINT or SIGTERM",
        description="Set up a model drive, print its device and cgroup as KEY=VALUE lines on "
                    "stdout, and keep it until SIGINT or SIGTERM; then remove everything "
                    "(processes still in the cgroup are stopped).")
    params(start)
    run = sub.add_parser(
        "run", help="run CMD in the cgroup with MODEL_DRIVE set, clean up when it exits",
        description="Set up a model drive, run CMD inside its cgroup with MODEL_DRIVE (the "
                    "device) and MODEL_DRIVE_PROCS in the environment, and remove everything when "
                    "CMD exits. An argument '$MODEL_DRIVE' or '${MODEL_DRIVE}' (quoted, so the "
                    "shell leaves it) is replaced by the device. Exits with CMD's code.")
    params(run)
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    sub.add_parser("cleanup", help="remove what model drives of killed owners left behind",
                   description="Remove the cgroups, loop devices and tmpfs mounts of model "
                               "drives whose owner process is gone (e.g. killed with SIGKILL).")
    return p


def _drive_args(args) -> dict:
    return {"size": parse_bytes(args.size), "cache": parse_bytes(args.cache),
            "fast": parse_bytes(args.fast, rate=True), "slow": parse_bytes(args.slow, rate=True),
            "recover": parse_bytes(args.recover, rate=True), "idle_s": args.idle,
            "poll_s": args.poll}


def _stop_child(proc: subprocess.Popen, first: signal.Signals | None) -> int:
    """Stop CMD after a signal, with signals held so a second one cannot cut this short:
    ``first`` now (None: it got the terminal's Ctrl-C itself, so give it 3 s to finish), then
    SIGTERM, then SIGKILL."""
    steps = [(first, 10.0)] if first else [(None, 3.0)]
    steps += [(signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)]
    with _signals_held():
        for sig, wait_s in steps:
            if sig is not None and proc.poll() is None:
                proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=wait_s)
        return proc.wait()


def _run_cmd(drive: ModelDrive, cmd: list[str]) -> int:
    """CMD in the cgroup with MODEL_DRIVE set; its exit code. On a signal CMD is stopped before
    the model drive goes (the exception then propagates to the cleanup)."""
    env = {**os.environ, **drive.env()}
    cmd = [re.sub(r"\$\{MODEL_DRIVE\}|\$MODEL_DRIVE(?![A-Za-z0-9_])", drive.device, a)
           for a in cmd]
    proc = subprocess.Popen(drive.wrap(cmd), env=env)
    try:
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=0.2)
            if drive.watcher.error is not None:     # the throttle no longer follows the model
                _stop_child(proc, signal.SIGTERM)
                drive.check()
    except KeyboardInterrupt:
        _stop_child(proc, None)
        raise
    except Terminated:
        _stop_child(proc, signal.SIGTERM)
        raise


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if os.geteuid() != 0:
        print("model-drive: needs root (loop device, mount, cgroup)", file=sys.stderr)
        return 2
    if args.command == "cleanup":
        found = clean_leftovers()
        for kind, items in found.items():
            for item in items:
                print(f"removed {kind[:-1]} {item}")
        if not any(found.values()):
            print("nothing left behind by a model drive")
        return 0
    try:
        params = _drive_args(args)
    except ValueError as exc:
        print(f"model-drive: {exc}", file=sys.stderr)
        return 2
    if params["slow"] > params["fast"]:
        print("model-drive: --slow must not exceed --fast", file=sys.stderr)
        return 2
    cmd = getattr(args, "cmd", [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.command == "run" and not cmd:
        print("model-drive: run needs a command after --", file=sys.stderr)
        return 2

    events_file = open(args.events, "w") if args.events else None  # noqa: SIM115

    def on_event(e: Event) -> None:
        if not args.quiet:
            print(f"model-drive: {e.describe()}", file=sys.stderr, flush=True)
        if events_file:
            events_file.write(json.dumps(asdict(e)) + "\n")
            events_file.flush()

    signal.signal(signal.SIGTERM, _raise_terminated)   # so the cleanup runs
    try:
        with model_drive(**params, on_event=on_event) as drive:
            if events_file:
                events_file.write(json.dumps({"model_drive": drive.params()}) + "\n")
            print(f"model-drive: {drive.device}: cache {_human(drive.cache)}, "
                  f"fast {_human(drive.fast, True)}, slow {_human(drive.slow, True)}, "
                  f"recover {_human(drive.recover, True)}, size {_human(drive.size)}",
                  file=sys.stderr, flush=True)
            on_event(drive.events[0])
            if args.command == "run":
                return _run_cmd(drive, cmd)
            print(f"MODEL_DRIVE={drive.device}\nMODEL_DRIVE_PROCS={drive.cgroup_procs}",
                  flush=True)
            print("# run a command on it, throttled:\n#   sh -c 'echo $$ > \"$0\" && exec "
                  f"\"$@\"' {drive.cgroup_procs} fio --filename={drive.device} ...\n"
                  f"# stop with Ctrl-C or kill -TERM {os.getpid()}", flush=True)
            while drive.watcher.is_alive():
                time.sleep(0.2)
            drive.check()
            return 1
    except KeyboardInterrupt:
        print("model-drive: interrupted; everything removed", file=sys.stderr)
        return 130
    except Terminated:
        print("model-drive: terminated; everything removed", file=sys.stderr)
        return 143
    except (OSError, RuntimeError) as exc:
        print(f"model-drive: {exc}", file=sys.stderr)
        return 1
    finally:
        if events_file:
            events_file.close()


if __name__ == "__main__":
    sys.exit(main())
