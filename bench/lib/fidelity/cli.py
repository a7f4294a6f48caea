"""bench/fidelity's command line: its options, the schedule of a run, and main (exit codes:
0 every target met; 1 a target missed or a run failed; 2 bad usage; 3 /dev/zram0 refused for
safety; 130 interrupted)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys

from bench.lib.fidelity.model import (
    DEFAULT,
    ENGINES,
    EXIT_INTERRUPTED,
    EXIT_MISSED,
    EXIT_OK,
    EXIT_USAGE,
    FIO_START_S,
    PROG,
    QD1_CASES,
    QUICK,
    URING_QD,
    MiB,
    Settings,
)
from bench.lib.fidelity.plain import run_trial, screen_peak
from bench.lib.fidelity.processes import Failed, Interrupted, info, on_signal
from bench.lib.fidelity.report import print_report
from bench.lib.fidelity.search import trial_order
from bench.lib.fidelity.state import Bench
from bench.lib.fidelity.targets import cleanup, setup
from bench.lib.fidelity.toolkit import run_toolkit, run_toolkit_uring

HELP = """\
Does the toolkit report the target's numbers or the host's? Compares the toolkit's §2 numbers
(QD=1: randread-4k, randwrite-4k, read-128k, write-128k) and §5 peak random IOPS with the best
plain fio configuration an independent search finds on the same target, on two fast targets
side by side: a file on a private tmpfs (O_DIRECT) and /dev/zram0.

Targets: §2 throughput (IOPS for 4 KiB, MB/s for 128 KiB) >= 0.9x the best plain fio;
§2 mean latency <= 1.25x the best engine's; peak 4 KiB random read IOPS >= 0.9x the best
configuration found.

The toolkit: qd1_test.bash and qd_sweep_test.bash (--no-seq) with a short profile and otherwise
its defaults, from a copy per target in a temporary directory; its numbers are read from
tables/qd1_baseline.csv and tables/qd_sweep_facts.json (headline peak_random_iops).
Plain fio: direct=1, fio's default write buffers, the same block size, pattern and region;
§2: psync, libaio and io_uring at QD 1 in every trial; peak: psync x 1..2*nproc jobs, libaio and
io_uring at depths 8, 32, 128 x jobs, screened once, the best 3 measured again in every trial.
Targets and configurations alternate their order from trial to trial.
io_uring's own options (printed, not judged): the toolkit's §5 at QD 128 with --engine
io_uring names the options its probe kept; then one io_uring job at QD 128 in every trial with
fio's defaults, with those options, and t/io_uring style (fixedbufs, registerfiles, a quarter of
the depth batched; hipri only where the device has poll queues).

Needs root (it mounts a tmpfs and writes /dev/zram0). It WRITES the whole region of /dev/zram0;
it refuses unless DESTROY=/dev/zram0 in the environment names it, and when /dev/zram0 is
mounted, swap or held. When /dev/zram0's disksize is 0 it sets it and
resets the device at the end; otherwise it uses it as it is. On a shared machine hold the device
lock: flock /var/tmp/ssd-device-tests.lock bash bench/fidelity

Options:
  --quick          a smoke run: 1 trial, 1 s runs, a smaller peak grid (depth 32), the
                   toolkit at --runtime 1 --repeat 1 and §5 at --qd 1,4,16,64
  --targets LIST   tmpfs, zram or both, comma-separated (default tmpfs,zram)
  --trials N       trials of the plain fio side (default 3; --quick 1)
  --keep           keep the temporary directory (the toolkit copies, logs, fio JSON)
  -h, --help       this help

Run time: about 10 minutes for both targets; --quick about 3.5 minutes (half for one target).
Exit codes: 0 every target met; 1 a target missed or a run failed; 2 bad usage; 3 refused for
safety; 130 interrupted.
"""



class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"{PROG}: {message}; see --help", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def parse(argv: list[str]) -> argparse.Namespace:
    p = Parser(prog=PROG, add_help=False, usage=argparse.SUPPRESS)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--targets", default="tmpfs,zram")
    p.add_argument("--trials", type=int)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    if args.help:
        print(HELP, end="")
        sys.exit(EXIT_OK)
    keys = [k for k in args.targets.split(",") if k]
    if not keys or any(k not in ("tmpfs", "zram") for k in keys) or len(set(keys)) < len(keys):
        p.error(f"--targets {args.targets}: give tmpfs, zram or tmpfs,zram")
    if args.trials is not None and args.trials < 1:
        p.error("--trials needs a whole number >= 1")
    args.targets = keys
    return args


def estimate_s(bench: Bench, n_targets: int) -> float:
    """The bench's run time, roughly, for the start line."""
    s = bench.settings
    per_run = FIO_START_S + 0.5  # ramp
    plain = n_targets * (len(bench.grid) * (s.screen_runtime_s + per_run) + s.trials * (
        len(QD1_CASES) * len(ENGINES) + s.finalists + 3) * (s.runtime_s + per_run))
    tk_run = s.tk_runtime + s.tk_ramp + FIO_START_S
    # qd1: 4 cases; qd_sweep: its depths and about 4 cases of its peak search; each case
    # shape a 1.3 s null-engine ceiling, each section about 10 s of its own (probes, analysis).
    depths = len(s.tk_sweep_args[s.tk_sweep_args.index("--qd") + 1].split(",")) \
        if "--qd" in s.tk_sweep_args else 8
    toolkit = n_targets * (s.tk_repeat * (4 + depths + 4) * tk_run + 1.3 * (4 + depths) + 20)
    toolkit += n_targets * (s.trials * (s.runtime_s + 1 + FIO_START_S) + 10)  # io_uring's
    return plain + toolkit


def measure(bench: Bench) -> None:
    """The schedule: the peak's screening round on every target; then the trials, targets and
    configurations in alternating order; the toolkit runs once per target in the middle of
    the trials (after trial ceil(N/2)), so a drift of the machine falls on both sides of it."""
    keys = bench.targets
    info(f"io_uring: the toolkit's option probe, §5 at QD {URING_QD} with --engine io_uring")
    for target in keys:
        run_toolkit_uring(bench, target)
    info(f"screening the peak: {len(bench.grid)} configurations per target, "
         f"{bench.settings.screen_runtime_s} s each")
    for target in keys:
        screen_peak(bench, target)
    middle = (bench.settings.trials + 1) // 2
    for t in range(1, bench.settings.trials + 1):
        info(f"trial {t}/{bench.settings.trials}")
        order = trial_order(keys, t)
        for target in order:
            run_trial(bench, target, t)
        if t == middle:
            info("the toolkit, once per target")
            for target in reversed(order):
                run_toolkit(bench, target)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if os.geteuid() != 0:
        print(f"{PROG}: needs root (it mounts a tmpfs and writes /dev/zram0); rerun with sudo",
              file=sys.stderr)
        return EXIT_USAGE
    if not shutil.which("fio"):
        print(f"{PROG}: 'fio' not found on PATH; run 'sudo bash env.bash' first", file=sys.stderr)
        return EXIT_USAGE
    settings = QUICK if args.quick else DEFAULT
    if args.trials:
        settings = Settings(**{**vars(settings), "trials": args.trials})
    region = 256 * MiB
    bench = Bench(settings, args.targets, args.keep)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        info(f"{PROG}: targets {', '.join(args.targets)}; about "
             f"{estimate_s(bench, len(args.targets)) / 60:.0f} min")
        setup(bench, region)
        for target in bench.targets:
            info(f"  {target.key}: {target.desc}")
        measure(bench)
        return EXIT_OK if print_report(bench) else EXIT_MISSED
    except Interrupted:
        info(f"\n{PROG}: interrupted; cleaning up")
        return EXIT_INTERRUPTED
    except Failed as e:
        info(f"{PROG}: {e}")
        return e.code
    finally:
        cleanup(bench)
