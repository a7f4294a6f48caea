#!/usr/bin/env bash
# §2 QD=1 baselines: the drive's intrinsic service time, one I/O in flight at a time.
#
# Usage: sudo bash qd1_test.bash [--target PATH] [--profile quick|standard] [options]
#        (see --help). Results in results/qd1/, then tables/qd1_baseline.csv,
#        figs/qd1_latency.png, figs/qd1_iops.png and out/section_2_qd1.md.
# Run time: standard 4 cases x 3 repetitions x (30 s + 5 s ramp) = about 7 minutes;
#           quick about 1 minute. Both plus a one-time prefill of the region.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION=qd1 # lib/sections.tsv: §2, QD=1 baselines
# The sustained state's rounds (lib/state.bash): 4 KiB random writes at QD=1, tracking their mean
# latency, the quantity this section reports (SNIA PTS's latency test tracks the same).
STEADY_OPTS="rw=randwrite bs=4k iodepth=1" STEADY_TRACK=lat

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§2 of the report: 4 KiB random read and write, 128 KiB sequential read and write, each at
iodepth=1 with direct I/O. At QD=1 the device never sees two commands at once, so the latency
is its intrinsic service time (plus the software stack) and IOPS x mean latency ~ 1.

EOF
    common_usage
    cat <<EOF

Outputs: results/qd1/<case>/rep<k>.json (fio json+), tables/qd1_baseline.csv,
figs/qd1_latency.png, figs/qd1_iops.png, out/section_2_qd1.md.
Example: sudo bash $TK_PROG --profile quick
         sudo bash $TK_PROG --target /dev/nvme0n1p4 --destroy /dev/nvme0n1p4
EOF
}

main() {
    add_case randread-4k rw=randread bs=4k iodepth=1
    add_case randwrite-4k rw=randwrite bs=4k iodepth=1
    add_case read-128k rw=read bs=128k iodepth=1
    add_case write-128k rw=write bs=128k iodepth=1
    section_main "$@"
}

main "$@"
