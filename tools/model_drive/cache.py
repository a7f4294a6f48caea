"""The model drive's write cache: the bookkeeping that decides its write limit, fed the device's
counters (tools.model_drive.drive polls them); it does no I/O, so it is tested on its own.

An SSD with an SLC write cache writes fast until the cache is full, then at the speed of its
native flash (the cliff of §6), and regains cache while it is idle. The model, exactly
(C = cache, in bytes):

1. The cache starts empty of data: C bytes free; the write limit is FAST bytes/s.
2. Every byte written to the device takes a byte of free cache while there is any. When free
   cache reaches 0 the limit becomes SLOW bytes/s (event ``slow``, with ``burst``: the bytes
   written since the cache was last refilled, i.e. the truth a cache estimate is checked against).
3. Writing never regains cache, at either speed (a drive folding SLC at full load has no spare
   time).
4. Idle means no write for at least ``idle_s`` (0.25 s): none completing and none waiting (a
   write the drive has been given and not yet done keeps it busy, as a queued command keeps an
   SSD busy, however long the throttle holds it). Once the device has been idle that long,
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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Idle is judged from completions, and the kernel's throttle dispatches in 100 ms slices: a
# throttled writer's completions come in bursts about one slice apart, so a gap must be well
# above that to be idle.
IDLE_S = 0.25
POLL_S = 0.02
MIN_SLEEP_S = 0.001


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
        self.last_write = t0           # time of the last poll that saw writes, done or waiting
        self.prev_t = t0
        self.quiet = True              # the last poll saw no writes, done or waiting
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

    def step(self, t: float, written: int, discarded: int = 0, waiting: int = 0) -> int:
        """The counters at time t (bytes written and discarded since start, cumulative; bytes of
        writes submitted and not yet done, now): update the cache and return the write limit to
        apply now, in bytes/s."""
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
        if d > 0 or waiting > 0:
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
