#!/usr/bin/env bash
# §5 queue-depth sweep: the throughput-latency curve, its knee, Little's Law and the tails.
#
# Usage: sudo bash qd_sweep_test.bash [--qd LIST] [--no-seq] [--slo-p99-us N] [common options]
#        (see --help). Results in results/qd_sweep/, then tables/qd_sweep.csv,
#        figs/qd_sweep_*.png and out/section_5_qd_sweep.md.
# Run time: standard 2 patterns x 8 depths x 3 repetitions x (30 s + 5 s ramp) = about 28 minutes;
#           quick about 4 minutes. Both plus a one-time prefill of the region.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION=qd_sweep # lib/sections.tsv: §5, Queue-depth sweep; its options are in lib/options.tsv

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§5 of the report: 4 KiB random read (and 128 KiB sequential read) at queue depths from 1 to 128.
More I/Os in flight buy throughput until the drive's parallelism is used up; past that point (the
knee) each extra I/O only waits in the queue, and latency grows for nothing.

Section options:
$(usage_options "$SECTION")
The thresholds change only the analysis: '.venv/bin/python -m analysis qd_sweep --slo-p99-us 500'
redraws the section with another objective without running fio again.

EOF
    common_usage
    cat <<EOF

Outputs: results/qd_sweep/<case>/rep<k>.json (fio json+; the peak search's cases are peak-*),
results/qd_sweep/host_ceiling.json, tables/qd_sweep.csv, tables/qd_sweep_peak.csv (every
configuration, best first), figs/qd_sweep_curve.png (throughput against latency),
figs/qd_sweep_throughput.png, figs/qd_sweep_latency.png, figs/qd_sweep_percentiles.png,
figs/qd_sweep_tails.png, out/section_5_qd_sweep.md.
Example: sudo bash $TK_PROG --profile quick --qd 1,4,16,64 --no-seq
         sudo bash $TK_PROG --target /dev/nvme0n1 --jobs 1,4 --no-peak
EOF
}

# Thresholds of the analysis: none given means the analysis default (or the value a previous
# analysis of these results stored).
add_threshold() { # FLAG VALUE: pass a threshold on to the analysis when one was given
    [[ -z $2 ]] || ANALYSIS_ARGS+=("$1" "$2")
}

section_cases() {
    local qd jobs
    jobs_list JOBS_LIST "$JOBS_LIST"
    split_list QD_LIST "$QD_LIST"
    local depths=()
    for qd in "${LIST_ITEMS[@]}"; do
        require_int QD_LIST "$qd" 1
        depths+=("$((10#$qd))")
    done
    for jobs in "${JOBS_ITEMS[@]}"; do
        for qd in "${depths[@]}"; do
            # shellcheck disable=SC2046  # no numjobs= for one job: the case as before --jobs
            add_case "randread-4k-qd$qd$(jobs_suffix "$jobs")" rw=randread bs=4k "iodepth=$qd" $(jobs_option "$jobs")
        done
        if ((SEQ)); then
            for qd in "${depths[@]}"; do
                # shellcheck disable=SC2046  # no numjobs= for one job: the case as before --jobs
                add_case "read-128k-qd$qd$(jobs_suffix "$jobs")" rw=read bs=128k "iodepth=$qd" $(jobs_option "$jobs")
            done
        fi
    done
    add_threshold --slo-p99-us "$SLO_P99_US"
    add_threshold --knee-gain "$KNEE_GAIN_PCT"
    add_threshold --knee-latency "$KNEE_LATENCY_PCT"
}

section_plan_note() {
    ((PEAK)) || return 0
    info "  peak     then a peak search: up to 8 more cases per pattern, more jobs (up to $(nproc), the CPUs)"
    info "           and depth around the best point so far, until IOPS gain less than 5% (--no-peak: none)"
}

# The peak search (analysis/rules/peak_search.py): after the sweep, more jobs and depth around the best
# point so far, one round at a time, until IOPS gain less than 5% (bounded by the CPUs).
section_more_cases() {
    local next name opts added=1
    ((PEAK)) || return 1
    next=$(tk_python peak-next "$RESULTS_DIR" --cpus "$(nproc)") ||
        die "$EXIT_FAIL" "the peak search could not read $RESULTS_DIR (see above); the results so far are kept"
    while IFS=$'\t' read -r name opts; do
        [[ -n $name ]] || continue
        # shellcheck disable=SC2086  # opts is a list of fio options
        add_case "$name" $opts
        info "peak search: adding $name ($opts)"
        added=0
    done <<<"$next"
    return "$added"
}

main() {
    section_main "$@"
}

main "$@"
