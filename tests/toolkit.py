"""Running the toolkit's scripts for real in tests: a private copy, loop devices, zram.

Each test gets its own copy of the toolkit under the repo's tmp/ (on disk, where O_DIRECT works),
so its results/, tables/ and figs/ never touch the user's. Loop devices and mounts a test makes
are removed afterwards, also when the test fails.
"""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from scipy.stats import t as scipy_t

from analysis.core.registry import read_sections, settings
from tools.ram_device import backs  # re-exported: the tests check their own devices with it

REPO = Path(__file__).resolve().parents[1]
COPIED = ["env.bash", "report.bash", "serve.bash", "Makefile", "lib", "analysis", "requirements.txt",
          *(s.script for s in read_sections().values())]

# The smallest honest run is the tiny profile (lib/options.tsv: every case, 1 s, two repetitions
# so a std exists, no ramp, 64M). TINY adds no host ceiling (a second per case shape) and one
# engine, not auto's five probes (about 4 s): the tests of the ceiling and of the engine's choice
# (test_host.py, test_drive_state.py) use TINY_PROBED. libaio keeps the queue depths real (psync
# would run every depth at 1). A later flag overrides an earlier one: [*TINY, "--repeat", "1"].
TINY_PROBED = ["--profile", "tiny"]
TINY = [*TINY_PROBED, "--no-host-ceiling", "--engine", "libaio"]


def teardown_on_sigterm() -> None:
    """SIGTERM (CI's timeout, `kill -- -PGID`, a closed terminal) ends the suite as Ctrl-C does:
    pytest runs no teardown for a signal it does not handle, and the fleet's fio servers, the
    loop devices, mounts and cgroups of the tests then running were left behind. As an
    interrupt, every fixture's finally runs. A second SIGTERM during that cleanup is ignored (it
    would cut the cleanup short); SIGKILL still ends it."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers belong to the main thread

    def interrupted(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}: cleaning up")

    signal.signal(signal.SIGTERM, interrupted)


# Settings the scripts read from the environment: a test sets the ones it means, never inherits.
# Every option's variable (lib/options.tsv), and serve.bash's state folder, which is no option.
SETTINGS = (*settings(), "TK_SERVE_DIR")
# What a make above the suite passes to a make below it: the suite runs under `make test`, and
# that command line's variables (`make test INSTALL=true`) would override a Makefile a test runs.
MAKE_INHERITED = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


def make_copy() -> Path:
    (REPO / "tmp").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="pytest-toolkit-", dir=REPO / "tmp"))
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            # with the bytecode: copy2 keeps each source's mtime, which the bytecode is checked
            # against, and a process that finds none compiles what it imports (under
            # PYTHONDONTWRITEBYTECODE, every process; in the NVMe VM's guest, under TCG)
            shutil.copytree(src, root / name)
        else:
            shutil.copy2(src, root / name)
    (root / ".venv").symlink_to(REPO / ".venv")
    for d in ("results", "tables", "figs", "out", "tmp"):
        (root / d).mkdir()
    return root


@contextlib.contextmanager
def preloaded_analysis():
    """`python -m analysis serve` on a socket of its own (analysis/core/preload.py), for callers
    given TK_ANALYSIS_SERVER: yields (socket, server) once it answers. The server, its calls and
    their workers are killed afterwards, also when a test fails."""
    folder = Path(tempfile.mkdtemp(prefix="tk-analysis-"))  # /tmp: a socket path is short
    sock = folder / "analysis.sock"
    env = {k: v for k, v in os.environ.items() if k != "TK_ANALYSIS_SERVER"}
    env["PYTHONPATH"] = str(REPO)
    with (folder / "server.log").open("w") as log:
        server = subprocess.Popen([sys.executable, "-m", "analysis", "serve", str(sock)], cwd=REPO,
                                  env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not sock.exists():
            assert server.poll() is None, (folder / "server.log").read_text()
            assert time.monotonic() < deadline, "the preloaded analysis did not start in 120 s"
            time.sleep(0.1)
        yield sock, server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def proc_stat(pid: int | str) -> tuple[str, list[str]] | None:
    """A process's name and the fields of /proc/PID/stat after it (the name may hold spaces and
    parentheses, so it ends at the last ')'): [0] state, [1] parent, [11:15] utime, stime, cutime,
    cstime in clock ticks. None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and of every child it has waited for; 0 once it is gone."""
    stat = proc_stat(pid)
    return sum(int(f) for f in stat[1][11:15]) / os.sysconf("SC_CLK_TCK") if stat else 0.0


@contextlib.contextmanager
def fio_workdir(prefix: str):
    """A fresh folder under the repo's tmp/ (on disk, where O_DIRECT works) for short real fio
    runs, with `target.img`, 16 MiB of random data, in it; the test skips without fio. Removed
    afterwards, also when the test fails."""
    if shutil.which("fio") is None:
        unless_installable("fio is not installed")
    (REPO / "tmp").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=REPO / "tmp"))
    try:
        (work / "target.img").write_bytes(os.urandom(16 << 20))
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


# `make test` runs the suite on six workers (pytest-xdist, a file at a time): most tests wait on
# fio's runtime, and two workers kept the two CPUs about half busy. A test that measures an
# answer a neighbour's load could move (whether a CPU is saturated, an engine's latency), or that
# uses /dev/zram0 (the toolkit's lock lets one run at a time on a target), runs alone: every
# other test holds this lock shared, an `alone` one exclusive. The turnstile gives the exclusive
# one precedence: once it waits, no new test starts beside the one still running.
# A second lock, `scripts`, is for the NVMe VM: its guest's CPUs are emulated on the host's, so no
# script, device or `alone` test may run beside it (they hold `scripts` shared, the VM exclusive),
# but the unit tests (no script, no device: a few CPU-seconds each) may, and fill the VM's minutes.
# `scripts` is taken before the turnstile, so a test waiting for the VM to end waits outside it:
# held inside, it kept every unit test on the other workers waiting too.
# The guest's QEMU keeps about one of the two CPUs busy. Once the guest's §6 scenario, whose rates
# are judged, has ended (open_the_slot), functional end-to-end tests (marked `beside_vm`: they judge
# exit codes, files and plans, no rate, no real-time fio) may run beside it, one in each of SLOTS
# slots, a lock file each: the guest's later scenarios judge no rate either. During the boot, two
# such tests beside it had slowed it from 321 s to 580 s, so the slots open only after §6.
LOCKS = REPO / "tmp" / ".tests"
SLOTS = 3  # three of make test's six workers beside the VM (QEMU takes one of the two CPUs)
_SLOT: list = []  # the slots' files while the VM's fixture holds them closed


def _take_scripts(scripts, mode: str | None, slots) -> None:
    if mode == "exclusive":  # the VM: the slots closed first, so no neighbour slips in
        for slot in slots:
            fcntl.flock(slot, fcntl.LOCK_EX)
            _SLOT.append(slot)
        fcntl.flock(scripts, fcntl.LOCK_EX)
    elif mode == "shared":
        fcntl.flock(scripts, fcntl.LOCK_SH)
    elif mode == "beside_vm":  # with the others, or in a slot while the VM holds `scripts`
        while True:
            for lock, how in ((scripts, fcntl.LOCK_SH), *((slot, fcntl.LOCK_EX) for slot in slots)):
                try:
                    fcntl.flock(lock, how | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    pass
            time.sleep(0.2)


def open_the_slot() -> None:
    """The VM's fixture lets a `beside_vm` test run beside the guest in each slot from now on."""
    while _SLOT:
        fcntl.flock(_SLOT.pop(), fcntl.LOCK_UN)


@contextlib.contextmanager
def when_it_exists(path: Path, then, every: float = 0.5):
    """Call `then()` once `path` exists, watching from a thread while the block runs."""
    done = threading.Event()

    def watch():
        while not done.wait(every):
            if path.exists():
                then()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


@contextlib.contextmanager
def beside_others(alone: bool, scripts: str | None = None):
    """Hold the tests' machine lock for the block: exclusive when `alone`, else shared; and the
    scripts lock first when `scripts` is 'shared' (a test that runs scripts or devices, or runs
    alone), 'beside_vm' (such a test that may also take a slot beside the VM) or
    'exclusive' (the NVMe VM). Every holder takes them in one order (slot, scripts, turnstile,
    machine), and one waiting for a slot holds nothing, so no two wait on each other."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as files:
        turnstile, machine, others = (files.enter_context(open(LOCKS / name, "a"))
                                      for name in ("turnstile", "machine", "scripts"))
        slots = [files.enter_context(open(LOCKS / f"beside-vm.{k}", "a")) for k in range(SLOTS)]
        _take_scripts(others, scripts, slots)
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
            fcntl.flock(others, fcntl.LOCK_UN)
            for slot in slots:
                fcntl.flock(slot, fcntl.LOCK_UN)
                if slot in _SLOT:
                    _SLOT.remove(slot)


def unless_installable(why: str | None) -> None:
    """Nothing when `why` is None (what a test needs is here). Else the test fails where make
    test's install step could have added it (root on an amd64 Debian: lib/packages.tsv, the NVMe
    VM), and is skipped, saying why, only where this machine cannot have it."""
    if why is None:
        return
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=False) if shutil.which("dpkg") else None
    if os.geteuid() == 0 and arch is not None and arch.stdout.strip() == "amd64":
        pytest.fail(f"{why}; `make test` installs it (bash env.bash --install-only --for-tests)")
    pytest.skip(why)


def fixture_locks(alone: bool = False, scripts: str | None = "shared"):
    """The locks a module or session fixture's setup holds, where its first test's would not do
    (tests/conftest.py, pytest_fixture_setup, takes them): the NVMe VM's boot (scripts
    exclusive), or a known answer's runs that nothing of the suite may load (alone). Put it
    under @pytest.fixture."""
    def mark(fn):
        fn.tk_locks = (alone, scripts)
        return fn
    return mark


# A rate-capped known answer's fio started through this runs at real-time priority (round-robin,
# so that two such jobs on one CPU still take turns) where the suite may set it (root): the job
# keeps its pace however busy the CPUs are, as a drive would, where at normal priority fourteen
# capped jobs beside the suite's other workers fell 5-11% short of their caps. Without root it
# is empty, and such an answer can be moved by load.
RT_PRIORITY = 10
PUNCTUAL = (["chrt", "--rr", str(RT_PRIORITY)] if os.geteuid() == 0 and shutil.which("chrt")
            else [])


# A CPU-bound pair measured side by side (a null-engine case and its ceiling on one CPU) runs at
# the highest nice level instead: the kernel's fair scheduler splits that CPU between the two in
# milliseconds, and any normal load beside them gets about 1% of it (weight 1024 against 88761).
# At real-time round-robin priority the pair took turns in 100 ms slices, too coarse for a 1 s
# run: their ratio fell to 0.31-0.42 in 3 of 12 runs (1 of 6 with nothing beside them). And two busy
# real-time jobs would hold back a rate-capped job at the same priority.
AHEAD_NICE = -20


@contextlib.contextmanager
def ahead_of_load():
    """AHEAD_NICE for this process and all it starts meanwhile (fio run by the toolkit's Python);
    nothing where the suite may not set it (not root)."""
    if os.geteuid() != 0:
        yield
        return
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, AHEAD_NICE)
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)


@contextlib.contextmanager
def in_ram(name: str, size: int):
    """A file of `size` random bytes in RAM (/dev/shm, else the repo's tmp/), removed after.

    A rate-capped known answer reads and writes it through the page cache with no disk behind:
    on a disk file beside the suite's writers, the kernel's writeback held buffered writes back
    for 130 ms (test_fio_hist_log), and a 2,000 IOPS read job ended 5-9% short (1,811 and 1,855
    IOPS: about 100 I/Os missing near its 1 s end, too late for fio's rate to catch up)."""
    ram = Path("/dev/shm")
    home = ram if ram.is_dir() and os.access(ram, os.W_OK) else REPO / "tmp"
    home.mkdir(exist_ok=True)
    path = home / f"ssd-toolkit-{name}-{os.getpid()}.img"
    path.write_bytes(os.urandom(size))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def script_env(env: dict | None = None) -> dict:
    """The environment a user's shell gives a script or a make: none of the toolkit's settings
    but `env`'s, and nothing of the make the suite runs under."""
    full_env = {k: v for k, v in os.environ.items()
                if k not in SETTINGS and k not in MAKE_INHERITED}
    full_env.update(env or {})
    return full_env


def run(root: Path, script: str, *args: str, env: dict | None = None, timeout: float = 300,
        wrap=None) -> subprocess.CompletedProcess:
    """The script's run; whatever its exit code, bash must not have met an unset variable (set -u
    in a command substitution kills only the substitution: the plan went on without its value).
    `wrap`: a Throttle's wrap, to run it in that cgroup (tools/ram_device.capped_device)."""
    cmd = ["bash", str(root / script), *args]
    result = subprocess.run(wrap(cmd) if wrap else cmd, capture_output=True, text=True,
                            env=script_env(env), timeout=timeout, cwd=root, check=False)
    assert "unbound variable" not in result.stderr, result.stderr
    return result


def start(root: Path, script: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    """A script running in the background, in a session of its own, so that a test can signal
    the whole group as a terminal does (Ctrl-C) or as a crash would (kill -9)."""
    return subprocess.Popen(["bash", str(root / script), *args], cwd=root, env=script_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 60) -> list[str]:
    """The script's stderr lines up to the first that holds `needle`."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never saw {needle!r}; stderr so far: {''.join(seen)}")


def _open_files(pid: str) -> str:
    """'0->/dev/null 1->pipe:[123] ...': a process's descriptors, as far as it still lives."""
    out = []
    with contextlib.suppress(OSError):
        for fd in sorted(Path(f"/proc/{pid}/fd").iterdir(), key=lambda p: int(p.name)):
            with contextlib.suppress(OSError):
                out.append(f"{fd.name}->{os.readlink(fd)}")
    return " ".join(out)


def finish(proc: subprocess.Popen, timeout: float = 120, *, after: str = "") -> str:
    """The stderr of a started script once it ends; killed, with a failure that says what still
    ran (the process table's fio, bash and python lines) and its stderr, when it has not ended
    within `timeout` s `after` what the test did to it (a load-dependent hang is otherwise lost
    with the kill)."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        # -ww: whole command lines (cut at 80 columns, a python's name was lost)
        held = subprocess.run(["ps", "-ewwo", "pid,ppid,pgid,etimes,stat,wchan:20,args"],
                              capture_output=True, text=True, check=False).stdout.splitlines()
        group = [line for line in held[1:] if line.split()[2] == str(proc.pid)]
        pipes = [f"{line.split()[0]}: {_open_files(line.split()[0])}" for line in group]
        os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate(timeout=30)[1]
        pytest.fail(f"the script ran on {timeout:g} s{' after ' + after if after else ''}; "
                    "its process group then:\n" + "\n".join(held[:1] + group)
                    + "\n--- their open files ---\n" + "\n".join(pipes)
                    + "\n--- other fio ---\n"
                    + "\n".join(line for line in held if " fio " in f" {line} "
                                 and line not in group)
                    + "\n--- its stderr ---\n" + err[-4000:])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Something listens on the TCP port (read from /proc: connecting would disturb a server)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def wait_listening(port: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if listening(port):
            return True
        time.sleep(0.05)
    return False


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): sha256_of(p) for p in sorted(root.rglob("*"))
            if p.is_file()}


@contextlib.contextmanager
def loop_device(backing: Path, size_mb: int = 96, fill: bool = True, sector_size: int = 512):
    """A loop device over a file of random data (direct I/O on), detached afterwards unless a
    test detached it already (its name may then be another test's device: backs)."""
    with open(backing, "wb") as f:
        f.writelines(os.urandom(1 << 20) if fill else bytes(1 << 20) for _ in range(size_mb))
    sectors = [] if sector_size == 512 else ["--sector-size", str(sector_size)]
    dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", *sectors, str(backing)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        if backs(dev, backing):
            subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def mounted(dev: str, where: Path, *options: str):
    """DEV mounted at WHERE (with mount's OPTIONS, e.g. "-t", "tmpfs", "-o", "size=16m") for the
    block, and unmounted after it: retried while the mount is busy (a process of the test may
    still be leaving it), and an error naming what holds it if it stays. A filesystem left
    mounted writes its journal and superblock on its own, which a test of unchanged bytes would
    blame on the toolkit."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", *options, dev, str(where)], check=True)
    try:
        yield where
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(where)], capture_output=True,
                              check=False).returncode == 0 or not os.path.ismount(where):
                break
            time.sleep(0.5)
        else:
            holders = (subprocess.run(["fuser", "-vm", str(where)], capture_output=True,
                                      text=True, check=False).stderr.strip()
                       if shutil.which("fuser") else "fuser (psmisc) not installed to name them")
            raise RuntimeError(f"{where} stayed mounted for 10 s: {holders}")


def mkfs_ext4(dev: str) -> None:
    # No lazy init: ext4lazyinit would otherwise zero inode tables in the background after
    # mount, changing the bytes of a device the test proves untouched.
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev],
                   check=True)


def zram_size() -> int:
    """Size of /dev/zram0, giving it 128 MiB if it has none (a fresh RAM disk)."""
    disksize = Path("/sys/block/zram0/disksize")
    if not disksize.exists():
        return 0
    if int(disksize.read_text()) == 0:
        disksize.write_text("128M")
    return int(disksize.read_text())


def fio_reps(tree: Path, case: str, direction: str) -> list[dict]:
    """fio's own numbers for one direction of a case, one per finished repetition: the
    'read' (or 'write') object of rep<k>.json in TREE/<case>/ (not rep<k>.failed.json)."""
    paths = sorted(p for p in tree.joinpath(case).glob("rep*.json") if p.stem[3:].isdigit())
    return [load_json(p)["jobs"][0][direction] for p in paths]


def tree_fio_clock(results: Path) -> str:
    """The clock the results tree chose for fio (run.json's fio_clock: choose_fio_clock in
    lib/engine.bash), after checking that every finished repetition's fio JSON under it was
    timed with it: fio's own record of the run, its global options."""
    chosen = load_json(results / "run.json")["fio_clock"]
    clock = chosen["clocksource"]
    assert clock in ("cpu", "clock_gettime"), chosen
    reps = sorted(p for p in results.glob("*/*/rep*.json") if p.stem[3:].isdigit())
    assert reps, f"no repetition under {results}"
    for rep in reps:
        assert load_json(rep)["global options"].get("clocksource") == clock, rep
    return clock


def assert_row_is_fios(row, reps: list[dict]) -> None:
    """One row of a section's table equals fio's JSON of its repetitions (fio_reps), read here
    with nothing but json and statistics: IOPS and MB/s mean and sample std, mean latency; the
    pooled p99 lies between the runs' own, and the percentiles are in order."""
    assert row.n == len(reps) >= 2
    iops = [r["iops"] for r in reps]
    mbps = [r["bw_bytes"] / 1e6 for r in reps]
    assert row.iops_mean == pytest.approx(statistics.mean(iops), rel=1e-6)
    assert row.iops_std == pytest.approx(statistics.stdev(iops), rel=1e-4, abs=1e-6)
    assert row.bw_MBps_mean == pytest.approx(statistics.mean(mbps), rel=1e-6)
    assert row.bw_MBps_std == pytest.approx(statistics.stdev(mbps), rel=1e-4, abs=1e-6)
    assert row.lat_us_mean == pytest.approx(
        statistics.mean(r["lat_ns"]["mean"] for r in reps) / 1000, rel=1e-6)
    own = [r["lat_ns"]["percentile"]["99.000000"] / 1000 for r in reps]
    assert min(own) <= row.lat_p99_us <= max(own)
    assert row.lat_p50_us <= row.lat_p95_us <= row.lat_p99_us <= row.lat_p99_9_us
    # the slowest I/O of all the runs, as fio measured it
    assert row.lat_max_us == pytest.approx(max(r["lat_ns"]["max"] for r in reps) / 1000,
                                           rel=1e-9)
    # The 95% t-interval of the mean, from scipy's t on fio's own per-run IOPS; the pooled p99
    # inside its interval; the I/Os above p99 are 1% of fio's own latency sample counts.
    t = scipy_t.ppf(0.975, len(reps) - 1)
    assert row.iops_ci95 == pytest.approx(t * statistics.stdev(iops) / len(iops) ** 0.5,
                                          rel=1e-4, abs=1e-6)
    # A slow target (a loop device over a disk busy with other tests' writes) may leave too few
    # I/Os above p99 for an interval: none with no I/O above it, and a count of 0, so that the
    # value is † (NaN would read as a count not known; analysis/rules/cases.py, tail_columns);
    # one-sided (no upper bound) with under about 4 (analysis/core/stats.py, tail_intervals).
    # v180: a 128 KiB write on a loop device, 8 I/Os in one repetition and 49 in the other.
    ios = sum(r["lat_ns"]["N"] for r in reps)
    tail = math.floor(ios * 0.01 + 1e-9)
    if tail == 0:
        assert math.isnan(row.lat_p99_us_lo) and math.isnan(row.lat_p99_us_hi)
        assert row.lat_p99_us_tail_ios == 0
        return
    assert row.lat_p99_us_tail_ios == tail
    if math.isnan(row.lat_p99_us_hi):
        assert tail < 5 and row.lat_p99_us_lo <= row.lat_p99_us
    else:
        assert row.lat_p99_us_lo <= row.lat_p99_us <= row.lat_p99_us_hi


def rep_files(root: Path, section: str = "qd1") -> list[Path]:
    return sorted((root / "results" / section).glob("*/rep*.json"))


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


def table_rows(markdown: str) -> list[list[str]]:
    """Every markdown table row's cells (the rule rows left out), read as a reader does: a
    group's name, which md.table writes on the group's first row only, carried down into the
    leading cells left blank below it."""
    rows, last = [], []
    for line in markdown.splitlines():
        if not line.startswith("|") or not line.strip("|-: "):
            continue
        cells = [c.strip() for c in line.strip()[1:-1].split("|")]
        lead = next((i for i, c in enumerate(cells) if c), len(cells))
        cells = [*last[:lead], *cells[lead:]] if len(last) >= lead else cells
        rows.append(cells)
        last = cells
    return rows


def jobfile_sections(path: Path) -> dict[str, dict[str, str]]:
    """A jobfile's sections as {name: {option: value}} (a bare flag's value is ''), read in the
    test with the standard library: what the jobfile says, not what the toolkit makes of it."""
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, delimiters=("=",),
                                       comment_prefixes=(";", "#"), strict=True)
    parser.optionxform = str
    parser.read_string(path.read_text())
    return {name: {k: v or "" for k, v in parser[name].items()} for name in parser.sections()}
