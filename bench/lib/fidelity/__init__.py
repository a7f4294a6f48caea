"""bench/fidelity: does the toolkit report the drive's numbers or its own?

It compares the toolkit's §2 (QD=1) numbers and §5 peak random IOPS with the best plain fio
configuration an independent search finds on the same target: engines psync, libaio, io_uring;
depths up to 128; 1 to 2×nproc jobs; fio's default write buffers. Two fast targets, where the
host's own costs show: a file on a private tmpfs (O_DIRECT, kernel >= 6.6) and /dev/zram0. The
targets it checks: §2 throughput >= 0.9x the best plain fio; §2 mean latency <= 1.25x the best
engine's; §5 peak random IOPS >= 0.9x the best configuration found.

The toolkit runs from copies in a temporary directory (one per target), so nothing under the
work tree (results/, tables/, figs/, out/, tmp/) is touched. Everything the bench sets up (the
tmpfs mount, the size of /dev/zram0 when it was 0, the copies) is undone on exit and on Ctrl-C.

Run as `bash bench/fidelity` (or `.venv/bin/python -m bench.lib.fidelity`). The parts:
model.py (what is measured: workloads, configurations, settings), search.py (the plain side's
grid, its best configuration and the verdicts), processes.py (children, Ctrl-C, the machine's
quiet), state.py (a run's targets and samples), targets.py (the tmpfs and zram targets, the
toolkit's copies, the clean-up), plain.py (plain fio runs), toolkit.py (the toolkit's runs and
numbers), report.py (the table), cli.py (the options, the schedule, main).
"""
