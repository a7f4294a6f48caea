"""make demo: the quick report on an emulated NVMe drive with a write cache that fills, one command,
no spare drive. make sample-report runs the same into results/sample.

The guest (tools/nvme_vm) has one QEMU NVMe controller with a 2 GiB namespace behind QEMU's write
throttle: 200 MB/s until 1.6 GB are in its bucket, then 20 MB/s (WriteCache: about 1.78 GB at the
fast rate from empty, then the cliff). The guest runs §1 and every section on /dev/nvme0n1 in the
quick profile, in the report's order; §6 idles before its burst (--burst-idle) until the bucket
has drained, as a drive regains its cache while idle, so the burst starts on an empty cache. The
tables, figures, snippets and the report are then drawn on the host (`python -m analysis all`),
where Python is not emulated. Everything lands in this checkout (results/demo,
out/demo/report.md), the guest writing it as root through the shared folder.

Command: sudo .venv/bin/python -m tools.nvme_vm.demo [--results results/demo]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from analysis.core.registry import read_sections
from tools.nvme_vm.spec import Controller, Namespace, VmSpec, WriteCache
from tools.nvme_vm.vm import REPO, guarded, nvme_vm

CACHE = WriteCache(fast=200_000_000, slow=20_000_000, burst_s=8)
SPEC = VmSpec(controllers=(Controller(namespaces=(Namespace("2G", 512, CACHE),),
                                      serial="TKDEMO0001"),), cpus=2, memory_mib=2048)
DEVICE = "/dev/nvme0n1"
RECORD = "nvme-vm.json"  # in the results tree: what the emulated drive was (the sample says so)


def describe() -> dict:
    return {"emulator": "QEMU NVMe controller (tools/nvme_vm)", "device": DEVICE,
            "namespace_bytes": SPEC.controllers[0].namespaces[0].size_bytes,
            "write_cache": {"fast_Bps": CACHE.fast, "slow_Bps": CACHE.slow,
                            "burst_s": CACHE.burst_s, "cache_bytes": round(CACHE.cache_bytes)}}


def guest_script(results: str) -> str:
    """§1 and each section in the report's order, §6's burst after the drain (the report is drawn
    on the host afterwards)."""
    common = ["--profile", "quick", "--target", DEVICE, "--destroy", DEVICE, "--results", results]
    drain_s = int(CACHE.bucket_bytes / CACHE.slow) + 5
    # No setting of the caller's changes the run. The sections leave their analysis to the host
    # (TK_ANALYSIS_ELSEWHERE), where Python runs natively: minutes under TCG, seconds here.
    clean = "env -i PATH=\"$PATH\" HOME=/root TK_ANALYSIS_ELSEWHERE=1"
    lines = ["set -u", "failed=0",
             f"{clean} bash env.bash --no-install {shlex.join(common)} || failed=1"]
    for section in read_sections().values():
        # §6 idles before its burst (after its own prefill) until QEMU's bucket has drained
        own = ["--burst-idle", str(drain_s)] if section.id == "wss_burst" else []
        lines.append(f"{clean} bash {section.script} {shlex.join(common + own)} || failed=1")
    lines.append("exit $failed")
    return "\n".join(lines)


def run(results: Path) -> int:
    rel = results.resolve().relative_to(REPO) if results.is_absolute() else results
    tree = REPO / rel
    start = time.monotonic()
    with nvme_vm(SPEC) as vm:
        tree.mkdir(parents=True, exist_ok=True)
        (tree / RECORD).write_text(json.dumps(describe(), indent=2) + "\n")
        print(f"demo: booting the NVMe VM ({vm.accelerator}) with {DEVICE}, a write cache of "
              f"{CACHE.cache_bytes / 1e9:.2f} GB at {CACHE.fast // 10**6} MB/s, then "
              f"{CACHE.slow // 10**6} MB/s", file=sys.stderr)
        result = vm.run(guest_script(str(rel)), rwdirs=[REPO], cwd=REPO, timeout=4 * 3600,
                        follow=True)
    # every table, figure and snippet, and the report, drawn here from the guest's results
    drawn = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "analysis", "all",
                            "--results", str(rel)], cwd=REPO, check=False)
    minutes = (time.monotonic() - start) / 60
    print(f"demo: {minutes:.1f} min in all ({vm.accelerator}); the report: "
          f"out/{rel.name}/report.md and .html. Its speeds are QEMU's emulation on this "
          "machine's CPUs, not an SSD's.", file=sys.stderr)
    return result.returncode or drawn.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nvme_vm.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("results/demo"),
                        help="results tree in this checkout (default results/demo)")
    args = parser.parse_args(argv)
    # interrupted: the finished repetitions are kept, and the same command resumes
    return guarded("demo", lambda: run(args.results), unavailable=2, failed=1)


if __name__ == "__main__":
    sys.exit(main())
