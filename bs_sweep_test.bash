#!/usr/bin/env bash
# §3 block-size sweep: where the drive turns from IOPS-bound to bandwidth-bound.
#
# Usage: sudo bash bs_sweep_test.bash [--rw LIST] [--bs LIST] [--iodepth N] [common options]
#        (see --help). Results in results/bs_sweep/, then tables/bs_sweep.csv,
#        figs/bs_sweep_{iops,bw,latency}.png and out/section_3_bs_sweep.md.
# Run time: standard 2 patterns x 9 sizes x 3 repetitions x (30 s + 5 s ramp) = about 32 minutes;
#           quick about 5 minutes. Both plus a one-time prefill of the region.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION=bs_sweep # lib/sections.tsv: §3, Block-size sweep; its options are in lib/options.tsv
# The sustained state's rounds (lib/state.bash): 128 KiB sequential writes at QD 32, tracking MB/s
# (SNIA PTS's throughput test tracks its large sequential transfers the same way).
STEADY_OPTS="rw=write bs=128k iodepth=32" STEADY_TRACK=bw

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§3 of the report: each pattern at block sizes from 4 KiB to 1 MiB at a fixed queue depth. Small
blocks are bounded by how many commands the drive completes per second (IOPS), large ones by how
many bytes it moves (MB/s); the sweep shows where one turns into the other.

Section options:
$(usage_options "$SECTION")

EOF
    common_usage
    cat <<EOF

Outputs: results/bs_sweep/<case>/rep<k>.json (fio json+), tables/bs_sweep.csv,
figs/bs_sweep_iops.png, figs/bs_sweep_bw.png, figs/bs_sweep_latency.png,
out/section_3_bs_sweep.md.
Example: sudo bash $TK_PROG --profile quick --bs 4k,64k,1m
         sudo bash $TK_PROG --target /dev/nvme0n1p4 --rw randread,read,randwrite,write \\
              --destroy /dev/nvme0n1p4
EOF
}

section_cases() {
    local rw bs jobs
    jobs_list JOBS_LIST "$JOBS_LIST"
    split_list RW_LIST "$RW_LIST"
    local patterns=("${LIST_ITEMS[@]}")
    for rw in "${patterns[@]}"; do require_one_of RW_LIST "$rw" randread read randwrite write; done
    split_list BS_LIST "$BS_LIST"
    local sizes=()
    for bs in "${LIST_ITEMS[@]}"; do sizes+=("$(block_size_token BS_LIST "$bs")"); done
    for jobs in "${JOBS_ITEMS[@]}"; do
        for rw in "${patterns[@]}"; do
            for bs in "${sizes[@]}"; do
                # shellcheck disable=SC2046  # no numjobs= for one job: the case as before --jobs
                add_case "$rw-$bs$(jobs_suffix "$jobs")" "rw=$rw" "bs=$bs" "iodepth=$IODEPTH" $(jobs_option "$jobs")
            done
        done
    done
}

main() {
    section_main "$@"
}

main "$@"
