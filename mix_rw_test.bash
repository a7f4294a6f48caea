#!/usr/bin/env bash
# §4 read/write mix: what writes in the mix cost, 4 KiB random at a fixed queue depth.
#
# Usage: sudo bash mix_rw_test.bash [--mix LIST] [--bs SIZE] [--iodepth N] [common options]
#        (see --help). Results in results/mix_rw/, then tables/mix_rw.csv,
#        figs/mix_rw_bw.png, figs/mix_rw_latency.png and out/section_4_mix_rw.md.
# Run time: standard 4 mixes x 3 repetitions x (30 s + 5 s ramp) = about 7 minutes;
#           quick about 1 minute. Both plus a one-time prefill of the region.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION=mix_rw
SECTION_NUMBER=4
SECTION_TITLE="Read/write mix"
readonly DEFAULT_MIX=100,70,50,0
readonly DEFAULT_BS=4k
readonly DEFAULT_IODEPTH=32

section_usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§4 of the report: 4 KiB random I/O at a fixed queue depth with read shares from all reads to all
writes. Every mix runs as one randrw job (rwmixread = the read share), so reads and writes share
the queue as they do in an application, and each direction is measured on its own.

Section options:
  --mix LIST         read shares in %, comma-separated, 0 to 100 (MIX_LIST; default $DEFAULT_MIX)
  --bs SIZE          block size (BS; default $DEFAULT_BS)
  --iodepth N        I/Os in flight (IODEPTH; default $DEFAULT_IODEPTH)

EOF
    common_usage
    cat <<EOF

Outputs: results/mix_rw/<case>/rep<k>.json (fio json+), tables/mix_rw.csv (rows read, write and
total per mix), figs/mix_rw_bw.png, figs/mix_rw_latency.png, out/section_4_mix_rw.md.
Example: sudo bash $TK_PROG --profile quick --mix 100,50,0
EOF
}

opt_mix="" opt_bs="" opt_iodepth=""
section_option() {
    case "$1" in
        --mix) need_value "$@" && opt_mix=$2 && SECTION_SHIFT=2 ;;
        --bs) need_value "$@" && opt_bs=$2 && SECTION_SHIFT=2 ;;
        --iodepth) need_value "$@" && opt_iodepth=$2 && SECTION_SHIFT=2 ;;
    esac
}

section_cases() {
    local mix_list=${opt_mix:-${MIX_LIST:-$DEFAULT_MIX}} bs=${opt_bs:-${BS:-$DEFAULT_BS}}
    local iodepth=${opt_iodepth:-${IODEPTH:-$DEFAULT_IODEPTH}} read_pct
    require_int IODEPTH "$iodepth" 1
    bs=$(block_size_token BS "$bs")
    split_list MIX_LIST "$mix_list"
    for read_pct in "${LIST_ITEMS[@]}"; do
        require_int MIX_LIST "$read_pct" 0
        ((10#$read_pct <= 100)) || die "$EXIT_USAGE" "MIX_LIST: $read_pct is not a read share between 0 and 100"
        read_pct=$((10#$read_pct))
        add_case "randrw-$bs-r$read_pct" rw=randrw "rwmixread=$read_pct" "bs=$bs" "iodepth=$((10#$iodepth))"
    done
}

main() {
    section_main "$@"
}

main "$@"
