"""What went wrong when a repetition failed, in one line that says what to do.

The run loop asks this (through analysis.run.runner_service) after a repetition's result is not good,
so that a fault is named for what it is instead of by its symptom ("truncated JSON", "error 30"):

* the results folder is full                       -> stop: nothing more can be kept
* the target is gone (a device detached or removed)  -> stop: every later run would fail too
* the target turned read-only (and the case writes)  -> stop
* fio was killed by a signal (the OOM killer's KILL)  -> go on: the next repetition may well run

Each answer is (action, message): action 'stop' ends the run (exit 1, finished repetitions kept,
the same command resumes), 'go' lets it go on with the next repetition, '' when none of these
explains the failure (the repetition check's own reason then stands).
See docs/faults.md for the whole table, and tests/test_faults.py for each fault made for real.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

# Below this much free space the results folder counts as full: a repetition's json+ output is
# 20-300 KiB, and a filesystem that refused one has at most that much left.
RESULTS_MIN_FREE = 1 << 20
RESUME = "the finished repetitions are kept; rerun the same command to finish"


def human(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} bytes"


def mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path):
        path = path.parent
    return path


def existing(path: Path) -> Path:
    """The path, or its nearest existing parent (a folder not made yet)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def results_full(results_dir: Path) -> str:
    """The message for a full results folder, or '' when it has room."""
    where = existing(Path(results_dir))
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    if free >= RESULTS_MIN_FREE:
        return ""
    return (f"the results folder {results_dir} is full ({human(free)} free on {mount_point(where)}):"
            f" the run stopped; {RESUME}. Free space there (remove or move older results trees, "
            f"or whatever else fills it), then rerun the same command")


def block_name(target: Path) -> str:
    return os.path.basename(os.path.realpath(target))


def target_gone(target: Path) -> str:
    """Why the target is no longer there, or ''."""
    if not target.exists():
        return f"{target} no longer exists"
    if stat.S_ISBLK(target.stat().st_mode):
        size = Path("/sys/class/block", block_name(target), "size")
        try:
            sectors = int(size.read_text())
        except (OSError, ValueError):
            return f"{target} is no longer a block device the kernel knows"
        if sectors == 0:
            return (f"{target} has no media any more (size 0: a loop device detached, or a drive "
                    "that dropped off its bus; see dmesg)")
    return ""


def target_read_only(target: Path) -> str:
    """How the target turned read-only, or ''."""
    if stat.S_ISBLK(target.stat().st_mode):
        ro = Path("/sys/class/block", block_name(target), "ro")
        if ro.exists() and ro.read_text().strip() == "1":
            return f"the block device {target} is read-only now (blockdev --getro says 1)"
        return ""
    if os.statvfs(target).f_flag & os.ST_RDONLY:
        return (f"its filesystem {mount_point(target)} is mounted read-only now (the kernel does "
                "this after I/O errors: see dmesg)")
    return ""


def killed(fio_rc: int) -> str:
    """fio's exit status says a signal ended it (bash: 128 + the signal's number)."""
    if fio_rc <= 128:
        return ""
    number = fio_rc - 128
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    why = (" (the kernel's out-of-memory killer does this when memory runs out: "
           "see dmesg | grep -i oom)" if number == signal.SIGKILL else "")
    return f"fio was killed by {name}{why}"


def diagnose(target: str, results_dir: str, fio_rc: int, writes: bool) -> tuple[str, str]:
    """(action, message) for a repetition whose result is not good; see the module's header."""
    full = results_full(Path(results_dir))
    if full:
        return "stop", full
    if not target:  # a fleet run: the hosts' targets are theirs to check
        return "", ""
    path = Path(target)
    gone = target_gone(path)
    if gone:
        return "stop", (f"the target is gone: {gone}. The run stopped; {RESUME}. Bring the same "
                        "device back at the same path, then rerun the same command")
    read_only = target_read_only(path) if writes else ""
    if read_only:
        return "stop", (f"the target {target} turned read-only under the run: {read_only}. The "
                        f"run stopped; {RESUME}. Make it writable again (check the drive first), "
                        "then rerun the same command")
    signalled = killed(fio_rc)
    if signalled:
        return "go", (f"{signalled}; the run goes on, and rerunning the same command runs this "
                      "repetition again")
    return "", ""
