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

SECTION=bs_sweep
SECTION_NUMBER=3
SECTION_TITLE="Block-size sweep"
readonly DEFAULT_RW=randread,read
readonly DEFAULT_BS=4k,8k,16k,32k,64k,128k,256k,512k,1m
readonly DEFAULT_IODEPTH=32

section_usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§3 of the report: each pattern at block sizes from 4 KiB to 1 MiB at a fixed queue depth. Small
blocks are bounded by how many commands the drive completes per second (IOPS), large ones by how
many bytes it moves (MB/s); the sweep shows where one turns into the other.

Section options:
  --rw LIST          patterns, comma-separated, from randread, read, randwrite, write
                     (RW_LIST; default $DEFAULT_RW)
  --bs LIST          block sizes, comma-separated, multiples of 512 (BS_LIST;
                     default $DEFAULT_BS)
  --iodepth N        I/Os in flight per job in every case (IODEPTH; default $DEFAULT_IODEPTH)
  --jobs LIST        job counts (fio's numjobs), comma-separated: each a sweep of its own, with
                     N x iodepth I/Os in flight (JOBS_LIST; default 1). A fast drive may need
                     several submitting jobs to show its MB/s at small blocks.

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

opt_rw="" opt_bs="" opt_iodepth="" opt_jobs=""
section_option() {
    case "$1" in
        --rw) need_value "$@" && opt_rw=$2 && SECTION_SHIFT=2 ;;
        --bs) need_value "$@" && opt_bs=$2 && SECTION_SHIFT=2 ;;
        --iodepth) need_value "$@" && opt_iodepth=$2 && SECTION_SHIFT=2 ;;
        --jobs) need_value "$@" && opt_jobs=$2 && SECTION_SHIFT=2 ;;
    esac
}

section_cases() {
    local rw_list=${opt_rw:-${RW_LIST:-$DEFAULT_RW}} bs_list=${opt_bs:-${BS_LIST:-$DEFAULT_BS}}
    local iodepth=${opt_iodepth:-${IODEPTH:-$DEFAULT_IODEPTH}} rw bs jobs
    jobs_list JOBS_LIST "${opt_jobs:-${JOBS_LIST:-1}}"
    require_int IODEPTH "$iodepth" 1
    split_list RW_LIST "$rw_list"
    local patterns=("${LIST_ITEMS[@]}")
    for rw in "${patterns[@]}"; do require_one_of RW_LIST "$rw" randread read randwrite write; done
    split_list BS_LIST "$bs_list"
    local sizes=()
    for bs in "${LIST_ITEMS[@]}"; do sizes+=("$(block_size_token BS_LIST "$bs")"); done
    for jobs in "${JOBS_ITEMS[@]}"; do
        for rw in "${patterns[@]}"; do
            for bs in "${sizes[@]}"; do
                # shellcheck disable=SC2046  # no numjobs= for one job: the case as before --jobs
                add_case "$rw-$bs$(jobs_suffix "$jobs")" "rw=$rw" "bs=$bs" "iodepth=$((10#$iodepth))" $(jobs_option "$jobs")
            done
        done
    done
}

main() {
    section_main "$@"
}

main "$@"
