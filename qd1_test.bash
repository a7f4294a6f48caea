#!/usr/bin/env bash
# §2 QD=1 baselines: the drive's intrinsic service time, one I/O in flight at a time.
#
# Usage: sudo bash qd1_test.bash [--target PATH] [--profile quick|standard] [options]
#        (see --help). Results in results/qd1/, then tables/qd1_baseline.csv,
#        figs/qd1_latency.png, figs/qd1_iops.png and out/section_2_qd1.md.
# Run time: standard 4 cases x 3 repetitions x (30 s + 5 s ramp) = about 7 minutes;
#           quick about 1 minute. Both plus a one-time prefill of the region. --mix pts adds 7
#           cases (SNIA PTS's latency set), --nines N lengthens every repetition (the plan says).
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

Section options:
$(usage_options "$SECTION")

EOF
    common_usage
    cat <<EOF

Outputs: results/qd1/<case>/rep<k>.json (fio json+), tables/qd1_baseline.csv,
figs/qd1_latency.png, figs/qd1_iops.png, out/section_2_qd1.md.
Example: sudo bash $TK_PROG --profile quick
         sudo bash $TK_PROG --target /dev/nvme0n1p4 --destroy /dev/nvme0n1p4
         sudo bash $TK_PROG --mix pts --nines 4   # SNIA PTS's latency test, p99.99 quotable
EOF
}

section_cases() {
    add_case randread-4k rw=randread bs=4k iodepth=1
    add_case randwrite-4k rw=randwrite bs=4k iodepth=1
    add_case read-128k rw=read bs=128k iodepth=1
    add_case write-128k rw=write bs=128k iodepth=1
    [[ -z $QD1_MIX ]] || mix_cases
}

# --mix: random read/write mixes at QD=1, as SNIA PTS's latency test runs them (one job, one I/O
# in flight, each mix one randrw job whose reads and writes share the queue). `pts` is its set:
# 512 B, 4 KiB and 8 KiB, each at 100/0, 65/35 and 0/100. A pure read or write is named as the
# baselines name theirs, so 4 KiB at 100/0 is the randread-4k already declared, not a second run.
mix_cases() {
    local sizes=(4k) shares=() bs share name
    if [[ $QD1_MIX == pts ]]; then
        sizes=(512 4k 8k) shares=(100 65 0)
    else
        split_list QD1_MIX "$QD1_MIX"
        for share in "${LIST_ITEMS[@]}"; do
            require_int QD1_MIX "$share" 0
            ((10#$share <= 100)) || die "$EXIT_USAGE" "QD1_MIX: $share is not a read share between 0 and 100 (or give pts for SNIA PTS's set)"
            shares+=("$((10#$share))")
        done
    fi
    for bs in "${sizes[@]}"; do
        for share in "${shares[@]}"; do
            case $share in
                100) name=randread-$bs ;;
                0) name=randwrite-$bs ;;
                *) name=randrw-$bs-r$share ;;
            esac
            [[ " ${CASE_NAMES[*]} " != *" $name "* ]] || continue
            case $share in
                100) add_case "$name" rw=randread "bs=$bs" iodepth=1 ;;
                0) add_case "$name" rw=randwrite "bs=$bs" iodepth=1 ;;
                *) add_case "$name" rw=randrw "rwmixread=$share" "bs=$bs" iodepth=1 ;;
            esac
        done
    done
}

main() {
    section_main "$@"
}

main "$@"
