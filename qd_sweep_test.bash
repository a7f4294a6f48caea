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
# The sustained state's rounds (lib/state.bash): 4 KiB random writes at QD 32, tracking IOPS, as
# SNIA PTS's IOPS test does.
STEADY_OPTS="rw=randwrite bs=4k iodepth=32" STEADY_TRACK=iops

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
         sudo bash $TK_PROG --target /dev/nvme0n1 --peak grid --no-seq
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
    [[ $PEAK != grid ]] || grid_jobs
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

# --peak grid: every depth at 1, 2, 4... jobs up to the CPUs (and the --jobs asked for), like
# SNIA's DIRTH test; the analysis reads the peak and the efficient point from the full grid.
grid_jobs() {
    local jobs=1 cpus
    cpus=$(job_cpus)
    while ((jobs <= cpus)); do
        JOBS_ITEMS+=("$jobs")
        jobs=$((jobs * 2))
    done
    mapfile -t JOBS_ITEMS < <(printf '%s\n' "${JOBS_ITEMS[@]}" | sort -nu)
}

section_plan_note() {
    case $PEAK in
        search)
            info "  peak     then a peak search: more jobs (up to $(job_cpus), the CPUs the jobs may use) and depth from the best point"
            info "           until none gains beyond the noise, then fewer, to the fewest I/Os in flight within"
            info "           5% of the peak, within a budget of $PEAK_BUDGET cases' worth of repetitions per pattern (--no-peak: none)"
            ;;
        grid) info "  peak     --peak grid: every depth at jobs ${JOBS_ITEMS[*]} (up to the CPUs), in the cases above" ;;
    esac
}

# The peak search (analysis/rules/peak_search.py): after the sweep, one round at a time, the
# cases the search asks for next: new configurations, or a point measured already under its own
# name with more repetitions (@repeat=N) when a comparison was within the noise. Fails when it
# asks for nothing new (the search is over, or its repetitions failed: the run says which).
section_more_cases() {
    local next name opts i added=1
    case $PEAK in
        off) return 1 ;;
        grid)
            tk_python peak-next "$RESULTS_DIR" --cpus "$(job_cpus)" --grid ||
                die "$EXIT_FAIL" "could not record the grid in ${RESULTS_DIR%/*}/run.json (see above)"
            return 1
            ;;
    esac
    next=$(tk_python peak-next "$RESULTS_DIR" --cpus "$(job_cpus)" --budget "$PEAK_BUDGET") ||
        die "$EXIT_FAIL" "the peak search could not read $RESULTS_DIR (see above); the results so far are kept"
    while IFS=$'\t' read -r name opts; do
        [[ -n $name ]] || continue
        for i in "${!CASE_NAMES[@]}"; do
            [[ ${CASE_NAMES[$i]} == "$name" ]] && break
        done
        if [[ ${CASE_NAMES[$i]} == "$name" ]]; then
            [[ ${CASE_OPTS[$i]} != "$opts" ]] || continue # asked again: its repetitions failed
            CASE_OPTS[i]=$opts
            info "peak search: measuring $name again, $(case_repeat "$i") repetitions in all (within the noise)"
        else
            # shellcheck disable=SC2086  # opts is a list of fio options
            add_case "$name" $opts
            info "peak search: adding $name ($opts)"
        fi
        added=0
    done <<<"$next"
    return "$added"
}

main() {
    section_main "$@"
}

main "$@"
