"""§2's quick profile on a fresh cache model drive (tools/model_drive: a RAM-backed loop device,
its cgroup throttle at FAST until C bytes are written, then at SLOW; it regains cache at RECOVER
bytes/s while idle, here almost nothing): the run the write regimes' end-to-end files judge
(tests/test_write_regimes_e2e.py as found, tests/test_write_regimes_after_cliff_e2e.py after
the cliff). Two files, so that their module fixtures (about one and two minutes of throttled
writes) run on two workers at once.
"""

from __future__ import annotations

import subprocess

from tests.toolkit import make_copy, script_env
from tools.model_drive.drive import model_drive

MB = 1_000_000
FAST = 80 * MB     # 20 K IOPS of 4 KiB at QD 1: reached with a CPU to spare, a cap under load
SLOW = 8 * MB
RECOVER = 100_000  # idle between the writes (the reads' turns) regains next to nothing
SLICE_S = 0.1  # the kernel's throttle slice (tools/model_drive/drive.py, "Precision")


def most_MBps(rate: float, seconds: float) -> float:
    """The most MB/s a writer at the throttle's cap ``rate`` (B/s) shows over ``seconds``: the
    cap kept to within three slices (tools/model_drive/drive.py, "Precision"), so one second may
    hold 1.3 x it, which a loaded host reaches (CI on ce7a711: the seconds before a ramp's cliff
    at a median of 84.5 MB/s under 80, slow seconds between them), and 6 s 1.05 x."""
    return rate * (1 + 3 * SLICE_S / seconds) / MB


def cache_found_bounds(truth: float, fast: float, slow: float) -> tuple[float, float]:
    """(low, high) bytes for a cache estimate, the log's whole seconds before its cliff, against
    the model's `truth`: the second in which the cache ran out goes to either side, so up to one
    second at the `fast` cap short or one at the `slow` cap over (docs/methodology.md); a found
    value must lie in (low, high]."""
    return truth - most_MBps(fast, 1) * MB, truth + most_MBps(slow, 1) * MB


def run_section_2(cache: float, regime: str, ramp: str, fast: float = FAST):
    """§2 quick on a fresh model drive, its cache taking `cache` bytes at `fast` B/s: (the
    toolkit's copy, the script's result, the model's events); the caller removes the copy."""
    tk = make_copy()
    with model_drive(size=512 * 2**20, cache=cache, fast=fast, slow=SLOW,
                     recover=RECOVER) as drive:
        dev = drive.device
        cmd = ["bash", str(tk / "qd1_test.bash"), "--profile", "quick", "--target", dev,
               "--destroy", dev, "--size", "256M", "--no-prefill", "--state", "as-is",
               "--repeat", "3", "--runtime", "4", "--ramp", ramp, "--no-host-ceiling",
               "--engine", "libaio", "--seed", "1", "--write-regime", regime]
        result = subprocess.run(drive.wrap(cmd), capture_output=True, text=True,
                                env=script_env(), timeout=400, cwd=tk, check=False)
        return tk, result, drive.events


def kept_run(cache: float, regime: str, ramp: str, fast: float = FAST):
    """run_section_2's result for a module fixture, its copy removed after the module."""
    tk = None
    try:
        tk, result, events = run_section_2(cache, regime, ramp, fast)
        yield tk, result, events
    finally:
        if tk is not None:
            subprocess.run(["rm", "-rf", str(tk)], check=False)
