"""bench/fidelity's targets and what it sets up for them: a file on a private tmpfs, /dev/zram0
(sized by the bench when its disksize is 0, and only after the toolkit's own interlock says it
may be written), a copy of the toolkit per target, a prefill of each region; all of it undone by
``cleanup``."""

from __future__ import annotations

import mmap
import os
import shutil
import signal
import subprocess
import tempfile
import time
from hashlib import md5
from pathlib import Path

from analysis.device.safety import Refusal, check_write
from bench.lib.fidelity.model import EXIT_UNSAFE, EXIT_USAGE, PROG, TK_SRC, ZRAM, MiB
from bench.lib.fidelity.processes import Failed, info, run, tail
from bench.lib.fidelity.state import Bench, Target

ZRAM_SYS = Path("/sys/block/zram0")
# What the toolkit copy needs (the .venv is symlinked, not copied); every top-level *.bash too.
TK_DIRS = ("lib", "analysis", "requirements.txt")


def setup(bench: Bench, region: int) -> None:
    base = os.environ.get("TMPDIR", "/tmp")
    bench.work = Path(tempfile.mkdtemp(prefix="ssd-toolkit-fidelity.", dir=base))
    (bench.work / "tmp").mkdir()
    for key in bench.target_keys:
        target = setup_tmpfs(bench, region) if key == "tmpfs" else setup_zram(bench, region)
        target.toolkit = copy_toolkit(bench, key)
        if key == "zram":
            check_zram_safe()
        bench.targets.append(target)
    for target in bench.targets:
        fill(bench, target)


def setup_tmpfs(bench: Bench, region: int) -> Target:
    mount = bench.work / "tmpfs"
    mount.mkdir()
    rc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={region + 64 * MiB},mode=0700",
                         "bench-fidelity", str(mount)],
                        capture_output=True, text=True, check=False)
    if rc.returncode:
        raise Failed(f"cannot mount a tmpfs on {mount}: {rc.stderr.strip()}")
    bench.tmpfs_mount = mount
    path = mount / "target.img"
    # tmpfs takes O_DIRECT from kernel 6.6 on; before that both sides would run buffered and
    # the comparison would mean nothing.
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
        try:
            os.pwrite(fd, mmap.mmap(-1, 4096), 0)  # mmap: page-aligned, as O_DIRECT needs
        finally:
            os.close(fd)
    except OSError as e:
        raise Failed(f"tmpfs refuses O_DIRECT on this kernel ({os.uname().release}: {e}); "
                     "it takes it from 6.6 on. Run with --targets zram") from None
    return Target("tmpfs", str(path), region,
                  f"{path} on a private tmpfs ({(region + 64 * MiB) >> 20} MiB, O_DIRECT)")


def setup_zram(bench: Bench, region: int) -> Target:
    if not ZRAM_SYS.is_dir():
        raise Failed(f"no {ZRAM}: load the module (sudo modprobe zram) or run with "
                     "--targets tmpfs", EXIT_USAGE)
    size = int((ZRAM_SYS / "disksize").read_text())
    note = f"disksize {size >> 20} MiB as found"
    if size == 0:
        (ZRAM_SYS / "disksize").write_text(str(region))
        bench.zram_sized = True
        size = region
        note = f"disksize set to {region >> 20} MiB by the bench, reset at the end"
    elif size < region:
        region = size >> 20 << 20  # as the toolkit caps its region
        note += f": region capped at {region >> 20} MiB"
    algo = (ZRAM_SYS / "comp_algorithm").read_text().split()
    algo = next((a.strip("[]") for a in algo if a.startswith("[")), "?")
    return Target("zram", ZRAM, region, f"{ZRAM} ({algo}, {note})")


def check_zram_safe() -> None:
    """The toolkit's own interlock (mounted, swap, holders, --destroy naming it) before
    anything writes to /dev/zram0: plain fio writes there too, with no interlock of its own.
    DESTROY=/dev/zram0 in the environment names it, as --destroy does for the toolkit."""
    try:
        check_write(ZRAM, os.environ.get("DESTROY", ""))
    except Refusal as e:
        raise Failed(f"{ZRAM} may not be written: {e}", EXIT_UNSAFE) from None


def copy_toolkit(bench: Bench, key: str) -> Path:
    if not (TK_SRC / ".venv/bin/python").exists():
        raise Failed(f"no {TK_SRC}/.venv: run 'bash env.bash --install-only' first", EXIT_USAGE)
    tk = bench.work / f"tk-{key}"
    tk.mkdir()
    for f in [*TK_SRC.glob("*.bash"), *(TK_SRC / d for d in TK_DIRS)]:
        if f.is_dir():
            shutil.copytree(f, tk / f.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(f, tk / f.name)
    (tk / ".venv").symlink_to(TK_SRC / ".venv")
    for d in ("results", "tables", "figs", "out", "tmp"):
        (tk / d).mkdir(exist_ok=True)
    return tk


def fill(bench: Bench, target: Target) -> None:
    """Write the region once with unique random data, so plain fio's first reads find data
    (zram reads a never-written page as a hole, far faster) and both sides read the same."""
    info(f"prefill: {target.region >> 20} MiB of {target.path}")
    log = bench.work / f"fill-{target.key}.log"
    rc = run(["fio", "--name=fill", f"--filename={target.path}", f"--size={target.region}",
              "--rw=write", "--bs=1M", "--direct=1", "--ioengine=psync", "--refill_buffers=1",
              "--output-format=json", f"--output={bench.work / 'fill.json'}"], log, 600)
    if rc:
        raise Failed(f"prefill of {target.path} failed (fio exit {rc}): {tail(log, 5)}")


def cleanup(bench: Bench) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if bench.tmpfs_mount:
        target = bench.tmpfs_mount / "target.img"
        # The toolkit's per-target lock file (lib/service.bash acquire_lock) for our own file.
        digest = md5(str(target).encode()).hexdigest()[:16]
        for d in ("/run/lock", str(bench.work / "tmp")):
            Path(d, f"ssd-toolkit.{digest}.lock").unlink(missing_ok=True)
        for umount in (["umount"], ["umount", "--lazy"]):  # lazy: a straggler still in it
            if subprocess.run([*umount, str(bench.tmpfs_mount)], capture_output=True,
                              check=False).returncode == 0:
                break
    if bench.zram_sized:
        for _ in range(10):  # EBUSY while a process still has it open
            try:
                (ZRAM_SYS / "reset").write_text("1")
                break
            except OSError:
                time.sleep(1)
        else:
            info(f"{PROG}: could not reset {ZRAM} (busy); reset it with: "
                 f"echo 1 > {ZRAM_SYS}/reset")
    if bench.work and not bench.keep:
        shutil.rmtree(bench.work, ignore_errors=True)
    elif bench.work:
        info(f"{PROG}: kept {bench.work} (--keep)")
