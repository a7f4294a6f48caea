"""python -m tools.nvme_vm: boot a VM with one emulated NVMe controller and run a command there.

    sudo .venv/bin/python -m tools.nvme_vm check
    sudo .venv/bin/python -m tools.nvme_vm run --size 1G --lba 4096 --write-cache 200,20,5 \\
        --rwdir "$PWD" -- bash qd1_test.bash --target /dev/nvme0n1 --destroy /dev/nvme0n1

`run` prints the command's stdout and stderr as they come and exits with its exit code (the guest sees the
host's root read-only, so a toolkit that writes its results must be a --rwdir). 125: the nvme
driver did not load; 3: the VM could not run here (the reason on stderr); 4: the guest reported
no exit code (its console's last lines on stderr). Ctrl-C stops the VM and exits 130.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from tools.nvme_vm.spec import Controller, Namespace, VmSpec, WriteCache
from tools.nvme_vm.vm import guarded, kvm_usable, locate, nvme_vm


def _write_cache(text: str) -> WriteCache:
    try:
        fast, slow, seconds = (int(float(x)) for x in text.split(","))
        return WriteCache(fast=fast * 1_000_000, slow=slow * 1_000_000, burst_s=seconds)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"FAST,SLOW,SECONDS in MB/s and s, e.g. 200,20,5: {exc}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.nvme_vm",
                                     description="An emulated NVMe drive in a small VM.")
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("check", help="say whether the VM can run here, and with KVM or TCG")
    run = sub.add_parser("run", help="boot, run COMMAND in the guest, power off")
    run.add_argument("--size", default="1G", help="each namespace's size (1G)")
    run.add_argument("--lba", type=int, default=512, choices=(512, 4096),
                     help="logical block size in bytes (512)")
    run.add_argument("--namespaces", type=int, default=1, help="namespaces, through nvme-subsys")
    run.add_argument("--write-cache", type=_write_cache, metavar="FAST,SLOW,S",
                     help="a write cache that fills: FAST MB/s for about S s, then SLOW MB/s "
                          "(QEMU's throttling group on the first namespace)")
    run.add_argument("--critical-warning", type=lambda s: int(s, 0), default=0,
                     help="SMART critical warning bits from boot, e.g. 0x2")
    run.add_argument("--numa-node", type=int, help="put the controller on this guest NUMA node "
                     "(the guest gets one node per CPU, at least 2)")
    run.add_argument("--poll-queues", type=int, default=1, help="nvme poll_queues (1; 0: none)")
    run.add_argument("--cpus", type=int, default=2)
    run.add_argument("--memory", type=int, default=2048, help="MiB")
    run.add_argument("--serial", default="TKNVME0001")
    run.add_argument("--rwdir", action="append", default=[], type=Path,
                     help="a host folder the guest may write (repeatable)")
    run.add_argument("--cwd", type=Path, help="the command's folder in the guest")
    run.add_argument("--keep", type=Path, help="keep the VM's shared folder here afterwards")
    run.add_argument("--timeout", type=float, default=3600, help="seconds for the whole VM")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    return parser


def _spec(ns: argparse.Namespace) -> VmSpec:
    namespaces = [Namespace(ns.size, ns.lba) for _ in range(ns.namespaces)]
    if ns.write_cache:
        namespaces[0] = Namespace(ns.size, ns.lba, ns.write_cache)
    nodes = 0 if ns.numa_node is None else max(2, ns.numa_node + 1)
    cpus = ns.cpus if not nodes or ns.cpus % nodes == 0 else nodes
    return VmSpec(controllers=(Controller(tuple(namespaces), ns.serial, ns.critical_warning,
                                          ns.numa_node),), cpus=cpus, memory_mib=ns.memory,
                  numa_nodes=nodes, poll_queues=ns.poll_queues)


def _run(ns: argparse.Namespace) -> int:
    setup = locate()
    if ns.verb == "check":
        print(f"ready: kernel {setup.release}; "
              f"{'KVM' if kvm_usable(setup) else 'TCG (no usable KVM here)'}")
        return 0
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        print("run: no command (… run [options] -- COMMAND)", file=sys.stderr)
        return 2
    with nvme_vm(_spec(ns), keep=ns.keep) as vm:
        result = vm.run(shlex.join(command), rwdirs=ns.rwdir, cwd=ns.cwd, timeout=ns.timeout,
                        follow=True)
    print(f"nvme-vm: {vm.accelerator}, {result.seconds:.1f} s from start to power-off",
          file=sys.stderr)
    return result.returncode


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    return guarded("nvme-vm", lambda: _run(ns), unavailable=3, failed=4)


if __name__ == "__main__":
    sys.exit(main())
