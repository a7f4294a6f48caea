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

SECTION=mix_rw # lib/sections.tsv: §4, Read/write mix; its options are in lib/options.tsv
# The sustained state's rounds (lib/state.bash): 4 KiB random writes at QD 32, tracking IOPS, as
# SNIA PTS's IOPS test does.
STEADY_OPTS="rw=randwrite bs=4k iodepth=32" STEADY_TRACK=iops

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§4 of the report: 4 KiB random I/O at a fixed queue depth with read shares from all reads to all
writes. Every mix runs as one randrw job (rwmixread = the read share), so reads and writes share
the queue as they do in an application, and each direction is measured on its own.

Section options:
$(usage_options "$SECTION")

EOF
    common_usage
    cat <<EOF

Outputs: results/mix_rw/<case>/rep<k>.json (fio json+), tables/mix_rw.csv (rows read, write and
total per mix), figs/mix_rw_bw.png, figs/mix_rw_latency.png, out/section_4_mix_rw.md.
Example: sudo bash $TK_PROG --profile quick --mix 100,50,0
EOF
}

section_cases() {
    local read_pct
    split_list MIX_LIST "$MIX_LIST"
    for read_pct in "${LIST_ITEMS[@]}"; do
        require_int MIX_LIST "$read_pct" 0
        ((10#$read_pct <= 100)) || die "$EXIT_USAGE" "MIX_LIST: $read_pct is not a read share between 0 and 100"
        read_pct=$((10#$read_pct))
        add_case "randrw-$BS-r$read_pct" rw=randrw "rwmixread=$read_pct" "bs=$BS" "iodepth=$IODEPTH"
    done
}

main() {
    section_main "$@"
}

main "$@"
