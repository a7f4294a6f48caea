"""Boot a small VM with QEMU's NVMe controllers and run a command in it.

virtme-ng boots Debian's kernel with the host's root filesystem shared read-only (9p); the guest's
/tmp, /etc and /var are overlays of its own. Folders named as `rwdirs` (the VM's shared folder
always) are the host's, writable. The guest's command writes its exit code, stdout and stderr into
the shared folder, so none of it depends on virtme-ng's console plumbing (which needs udev in the
guest for its I/O ports; the host's root has none).

    with nvme_vm(VmSpec(controllers=(Controller(namespaces=(Namespace("1G", 4096),)),))) as vm:
        result = vm.run("nvme id-ns /dev/nvme0n1 -o json > id-ns.json")
        result.returncode, result.stdout, (vm.shared / "id-ns.json").read_text()

The namespaces' images stay for the whole `with` (several boots see the same data); everything
the VM made is removed at its end, also on failure and Ctrl-C, and no QEMU is left running.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.nvme_vm.spec import VmSpec, image_names, numa_options, qemu_args

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("NVME_VM_CACHE", "/var/cache/ssd-toolkit/nvme-vm"))
SETUP_HINT = "sudo bash env.bash --nvme-vm"
# The guest's own PATH: virtme-ng's init gives a short one, and modprobe, nvme and blkdiscard
# live in sbin.
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KVM_PROBE_TIMEOUT = 60
MPL_CACHE = CACHE / "matplotlib"
# Folders the guest only reads, shared by 9p devices of our own and mounted with cache=loose:
# virtme-ng mounts its shares without a cache, so every file the guest opens is a round trip
# through the emulated virtio ring. Measured here under TCG (one boot each): a bare Python start
# 2.0-3.4 s uncached, 1.0-1.5 s cached; `import numpy` 19 s, then 6.6 s; `python -m analysis
# write-cache --help` 9 s, then 5.6-7.3 s. The toolkit copies the guest writes into stay
# virtme-ng's (uncached: the host reads what the guest wrote).
NINEP_CACHED = "ro,trans=virtio,version=9p2000.L,msize=524288,cache=loose"
# the cached shares' 9p tags (_cached_shares): the venv, /usr, and the venv's base Python where
# /usr does not hold it (pyenv's, here and in this CI: its standard library was read uncached,
# a bare Python start 1.3-2.4 s in the guest)
VENV_TAG, USR_TAG, BASE_TAG = "tkvenv", "tkusr", "tkbase"


class Unavailable(RuntimeError):
    """The VM cannot run on this machine; the message says what is missing and how to add it."""


class GuestFailed(RuntimeError):
    """The guest did not report an exit code (it did not boot, or timed out); the boot log says."""


@dataclass(frozen=True)
class Setup:
    vng: Path
    vmlinuz: Path
    release: str


@dataclass
class VmResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from starting the VM to its end (boot, the command, power-off)
    boot_log: str


def locate(root: Path = REPO) -> Setup:
    """What tools/nvme_vm/setup.bash installed, or Unavailable saying what is missing."""
    missing = [tool for tool in ("qemu-system-x86_64", "modprobe") if not shutil.which(tool)]
    if missing:
        raise Unavailable(f"{' and '.join(missing)} not installed; run {SETUP_HINT}")
    vng = root / ".venv" / "bin" / "vng"
    if not vng.exists():
        raise Unavailable(f"virtme-ng is not in {root / '.venv'}; run {SETUP_HINT}")
    try:
        release = (CACHE / "kernel").read_text().strip()
    except OSError:
        raise Unavailable(f"no guest kernel in {CACHE}; run {SETUP_HINT}") from None
    vmlinuz = CACHE / f"vmlinuz-{release}"
    if not vmlinuz.is_file() or not Path(f"/lib/modules/{release}/modules.dep").is_file():
        raise Unavailable(f"guest kernel {release} is incomplete (vmlinuz in {CACHE}, modules in "
                          f"/lib/modules/{release}); run {SETUP_HINT}")
    if os.geteuid() != 0:
        raise Unavailable("the NVMe VM runs as root (the guest is root on the host's root "
                          "filesystem and writes the shared folders as root)")
    return Setup(vng=vng, vmlinuz=vmlinuz, release=release)


def available(root: Path = REPO) -> str | None:
    """None when the VM can boot here, else why not (for a test's skip reason)."""
    try:
        locate(root)
    except Unavailable as exc:
        return str(exc)
    return None


def _vng_command(setup: Setup, spec: VmSpec, shared: Path, images: Path, rwdirs, kvm: bool,
                 guest_command: str, venv: Path) -> list[str]:
    # The toolkit's venv, /usr (fio, the tools, the distribution's Python) and the venv's base
    # Python where it is elsewhere (pyenv's), shared read-only by devices of our own, which the
    # guest mounts cached (NINEP_CACHED, _guest_script): the venv wherever it is, as the guest
    # mounts its own /tmp, /var/tmp and /run over the host's, so a clone under one of them (CI's
    # is under /var/tmp) would find no Python there otherwise.
    qemu = qemu_args(spec, images) + _cached_shares(venv)
    if not kvm:
        # One host thread emulates both guest CPUs in turn, not one thread each: the guest runs
        # one process at a time, and with a thread per CPU a guest CPU waiting on a lock the
        # other holds spins on a host CPU (in turn, its PAUSE hands the turn over). Beside two
        # busy loops the NVMe tests took 283 and 254 CPU-s against 355 and 340, in 433 and 384 s
        # against 427 and 412 (alternated; docs/nvme-vm.md).
        qemu += ["-accel", "tcg,thread=single"]
    if any(any(c.isspace() for c in arg) for arg in qemu):
        # virtme-ng joins --qemu-opts with spaces and splits them again
        raise ValueError(f"QEMU arguments may not hold whitespace: {qemu}")
    cmd = [str(setup.vng), "-v", "-r", str(setup.vmlinuz), "--force-9p",
           "--cpus", str(spec.cpus), "--memory", f"{spec.memory_mib}M", *numa_options(spec),
           "--rwdir", str(shared)]
    MPL_CACHE.mkdir(parents=True, exist_ok=True)
    for path in (MPL_CACHE, *rwdirs):
        cmd += ["--rwdir", str(path)]
    if not kvm:
        cmd.append("--disable-kvm")
    if qemu:
        cmd.append("--qemu-opts=" + " ".join(qemu))
    return cmd + ["--exec", guest_command]


def base_prefix(venv: Path) -> Path | None:
    """Where the venv's base Python lives (pyvenv.cfg's ``home``, its bin folder, up one), the
    standard library under it; None where /usr holds it (shared cached already) or the venv does
    not say."""
    cfg = venv / "pyvenv.cfg"
    lines = cfg.read_text().splitlines() if cfg.is_file() else []
    home = next((v.strip() for k, _, v in (line.partition("=") for line in lines)
                 if k.strip() == "home"), "")
    prefix = Path(home).parent if home else None
    if prefix is None or prefix == Path("/usr") or Path("/usr") in prefix.parents:
        return None
    return prefix


def _cached_shares(venv: Path) -> list[str]:
    """QEMU's arguments for the read-only shares the guest mounts cached: the venv (VENV_TAG),
    /usr (USR_TAG) and the venv's base Python outside /usr (BASE_TAG), on the root bus of the q35
    machine virtme-ng starts without KVM (QEMU would otherwise pick the last bus, a controller's
    NUMA bridge, which takes no device)."""
    out = []
    base = base_prefix(venv)
    shares = [(VENV_TAG, venv), (USR_TAG, Path("/usr"))] + ([(BASE_TAG, base)] if base else [])
    for tag, path in shares:
        out += ["-fsdev", f"local,id={tag},path={path},security_model=none,readonly=on",
                "-device", f"virtio-9p-pci,fsdev={tag},mount_tag={tag},bus=pcie.0"]
    return out


def _guest_script(spec: VmSpec, shared: Path, command: str, cwd: Path | None,
                  env: dict[str, str], venv: Path) -> str:
    """The guest's side: mount the cached shares, load the nvme driver, wait for every
    namespace, run the command with its output and exit code in the shared folder."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    want = spec.namespace_count
    base = base_prefix(venv)
    base_mount = "" if base is None else (
        f"{{ mkdir -p {shlex.quote(str(base))} &&\n"
        f"  mount -t 9p -o {NINEP_CACHED} {BASE_TAG} {shlex.quote(str(base))}; }} ||\n"
        f"    echo \"nvme-vm: {base} left uncached (its cached mount failed)\" >&2")
    return f"""#!/bin/bash
# Written by tools/nvme_vm/vm.py; runs inside the guest.
shared={shlex.quote(str(shared))}
export PATH={GUEST_PATH}
# the venv, where the toolkit's scripts look for it, /usr over the root's, and the venv's base
# Python where /usr does not hold it, all cached
if ! {{ mkdir -p {shlex.quote(str(venv))} &&
       mount -t 9p -o {NINEP_CACHED} {VENV_TAG} {shlex.quote(str(venv))}; }}; then
    echo "nvme-vm: could not mount the toolkit's venv at {venv} in the guest" >"$shared/stderr"
    echo 125 >"$shared/rc"
    exit 125
fi
mount -t 9p -o {NINEP_CACHED} {USR_TAG} /usr ||
    echo "nvme-vm: /usr left uncached (its cached mount failed)" >&2
{base_mount}
# the host's root is read-only here: matplotlib's font cache is the one setup.bash built (a
# shared folder), which matplotlib would otherwise build anew in each guest (a minute under TCG)
export MPLCONFIGDIR={shlex.quote(str(MPL_CACHE))}
exec >"$shared/stdout" 2>"$shared/stderr"
if ! modprobe nvme poll_queues={spec.poll_queues}; then
    echo "nvme-vm: modprobe nvme failed" >&2
    echo 125 >"$shared/rc"
    exit 125
fi
# no udev in the guest: the nodes appear in devtmpfs as the driver scans each controller
for _ in $(seq 300); do
    found=$(ls /sys/class/block | grep -cE '^nvme[0-9]+n[0-9]+$')
    ((found >= {want})) && break
    sleep 0.1
done
if ((found < {want})); then
    echo "nvme-vm: $found of {want} NVMe namespaces appeared" >&2
fi
{exports}cd {shlex.quote(str(cwd or shared))} || exit 126
bash "$shared/command.sh"
rc=$?
echo "$rc" >"$shared/rc.partial" && mv "$shared/rc.partial" "$shared/rc"
sync
"""


def _stop(proc: subprocess.Popen) -> None:
    """TERM then KILL the whole session virtme-ng and QEMU run in, until none of it is left.
    Waiting on vng alone is not enough: it dies at once on TERM while QEMU, under load, may take
    seconds more to exit (CI on 5d0b782 found QEMU still running after the CLI had returned)."""
    def over() -> bool:  # poll() reaps vng, the session's leader, once it has exited
        return proc.poll() is not None and not _group_alive(proc.pid)

    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if over():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + wait
        while not over() and time.monotonic() < deadline:
            time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs. A zombie does not count: one reparented to
    init waits on init to reap it, and is gone in all but name."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            text = stat.read_text()
            state, _ppid, pgrp = text[text.rindex(")") + 2:].split()[:3]  # proc(5): comm may hold spaces
            if int(pgrp) == pgid and state != "Z":
                return True
    return False


def _wait(proc: subprocess.Popen, timeout: float, follow: Path | None) -> None:
    """Until the VM ends or `timeout` passes; with `follow`, the guest's stdout and stderr (in
    that shared folder) are copied to ours as they grow, for a long run's progress."""
    deadline = time.monotonic() + timeout
    offsets = {"stdout": 0, "stderr": 0}
    while time.monotonic() < deadline:
        try:
            proc.wait(timeout=0.5)
            ended = True
        except subprocess.TimeoutExpired:
            ended = False
        for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)) if follow else ():
            with contextlib.suppress(OSError), open(follow / name, "rb") as f:
                f.seek(offsets[name])
                chunk = f.read()
                offsets[name] += len(chunk)
                stream.write(chunk.decode(errors="replace"))
                stream.flush()
        if ended:
            return


def _boot(setup: Setup, spec: VmSpec, shared: Path, images: Path, command: str, *, rwdirs=(),
          cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600,
          kvm: bool = False, follow: bool = False) -> VmResult:
    for name in ("rc", "stdout", "stderr"):
        (shared / name).unlink(missing_ok=True)
    (shared / "command.sh").write_text(command + "\n")
    venv = setup.vng.parent.parent.resolve()
    (shared / "guest.sh").write_text(_guest_script(spec, shared, command, cwd, env or {}, venv))
    cmd = _vng_command(setup, spec, shared, images, rwdirs, kvm, f"bash {shared / 'guest.sh'}",
                       venv)
    path = f"{setup.vng.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    log_path = shared / "boot.log"
    start = time.monotonic()
    with open(log_path, "w") as log:
        # its own session, so the whole tree (vng, virtme-run, QEMU) stops with one killpg
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=shared, env={**os.environ, "PATH": path},
                                start_new_session=True)
        try:
            _wait(proc, timeout, shared if follow else None)
        finally:
            _stop(proc)
    seconds = time.monotonic() - start
    boot_log = log_path.read_text(errors="replace")
    rc_file = shared / "rc"
    if not rc_file.exists():
        raise GuestFailed(f"the guest reported no exit code after {seconds:.0f} s (timeout "
                          f"{timeout:.0f} s); its console's last lines:\n"
                          + "\n".join(boot_log.splitlines()[-25:]))
    out, err = (shared / "stdout", shared / "stderr")
    return VmResult(int(rc_file.read_text()), out.read_text(errors="replace") if out.exists() else "",
                    err.read_text(errors="replace") if err.exists() else "", seconds, boot_log)


def kvm_usable(setup: Setup) -> bool:
    """Whether a guest boots under KVM here: a short probe (a guest that runs `true`, with a
    timeout), its verdict cached per kernel. NVME_VM_KVM=0 or 1 overrides. A nested guest can hang
    at boot where /dev/kvm exists, so the device's presence alone is not enough."""
    forced = os.environ.get("NVME_VM_KVM")
    if forced in ("0", "1"):
        return forced == "1"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    verdict = CACHE / f"kvm-{setup.release}"
    with contextlib.suppress(OSError):
        return verdict.read_text().strip() == "yes"
    spec = VmSpec(poll_queues=0)
    with tempfile.TemporaryDirectory(prefix="nvme-vm-kvm-", dir=_work_root()) as tmp:
        shared, images = _make_dirs(Path(tmp), spec)
        try:
            ok = _boot(setup, spec, shared, images, "true", timeout=KVM_PROBE_TIMEOUT,
                       kvm=True).returncode == 0
        except GuestFailed:
            ok = False
    with contextlib.suppress(OSError):
        verdict.write_text("yes\n" if ok else "no\n")
    return ok


def _work_root() -> Path:
    """Where VMs keep images and shared folders: the repository's tmp/ (on disk)."""
    root = REPO / "tmp"
    root.mkdir(exist_ok=True)
    return root


def _make_dirs(work: Path, spec: VmSpec) -> tuple[Path, Path]:
    shared, images = work / "shared", work / "images"
    shared.mkdir()
    images.mkdir()
    for c, n, name in image_names(spec):
        with open(images / name, "wb") as img:  # sparse: reads of unwritten blocks give zeros
            img.truncate(spec.controllers[c].namespaces[n].size_bytes)
    return shared, images


class Vm:
    """A VM's images and shared folder; `run` boots it, runs one command and powers it off."""

    def __init__(self, spec: VmSpec, work: Path, setup: Setup):
        self.spec, self.work, self.setup = spec, work, setup
        self.shared, self.images = _make_dirs(work, spec)
        self.kvm = spec.kvm if spec.kvm is not None else kvm_usable(setup)
        self.boots: list[float] = []  # seconds of each run, boot and power-off included

    @property
    def accelerator(self) -> str:
        return "KVM" if self.kvm else "TCG (emulated CPU)"

    def run(self, command: str, *, rwdirs=(), cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 600,
            follow: bool = False) -> VmResult:
        """Boot, run `command` with bash in the guest (cwd: the shared folder unless given), and
        return its exit code and output (`follow`: also copied to ours while it runs).
        GuestFailed when it reported none."""
        result = _boot(self.setup, self.spec, self.shared, self.images, command, rwdirs=rwdirs,
                       cwd=cwd, env=env, timeout=timeout, kvm=self.kvm, follow=follow)
        self.boots.append(result.seconds)
        return result


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def guarded(who: str, body, *, unavailable: int, failed: int) -> int:
    """A command's body() -> exit code, with SIGTERM taken as Ctrl-C (the VM is stopped either
    way: 130) and the VM's own failures said in one line: `unavailable` when it cannot run here,
    `failed` when the guest reported no exit code."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # A script's background job starts with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: the VM is to stop on Ctrl-C however this was started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return body()
    except Unavailable as exc:
        print(f"{who}: the NVMe VM cannot run here: {exc}", file=sys.stderr)
        return unavailable
    except GuestFailed as exc:
        print(f"{who}: {exc}", file=sys.stderr)
        return failed
    except KeyboardInterrupt:
        print(f"{who}: interrupted; the VM was stopped", file=sys.stderr)
        return 130


@contextlib.contextmanager
def nvme_vm(spec: VmSpec, *, root: Path = REPO, keep: Path | None = None):
    """A Vm for the `with` block; its folder (images, shared) is removed at the end, or moved to
    `keep` (the shared folder only) when given. Unavailable when this machine cannot run it."""
    setup = locate(root)
    work = Path(tempfile.mkdtemp(prefix="nvme-vm-", dir=_work_root()))
    try:
        yield Vm(spec, work, setup)
    finally:
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.move(str(work / "shared"), keep)
        shutil.rmtree(work, ignore_errors=True)
