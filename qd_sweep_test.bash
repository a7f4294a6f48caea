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

SECTION=qd_sweep
SECTION_NUMBER=5
SECTION_TITLE="Queue-depth sweep"
readonly DEFAULT_QD=1,2,4,8,16,32,64,128

section_usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§5 of the report: 4 KiB random read (and 128 KiB sequential read) at queue depths from 1 to 128.
More I/Os in flight buy throughput until the drive's parallelism is used up; past that point (the
knee) each extra I/O only waits in the queue, and latency grows for nothing.

Section options:
  --qd LIST             queue depths, comma-separated (QD_LIST; default $DEFAULT_QD)
  --seq, --no-seq       also sweep 128 KiB sequential read (SEQ=1 or 0; default on)
  --jobs LIST           job counts (fio's numjobs), comma-separated: each a sweep of its own;
                        a point has QD x jobs I/Os in flight (JOBS_LIST; default 1)
  --peak, --no-peak     after the sweep, search for the peak: more jobs and depth around the
                        best point until IOPS gain less than 5%, jobs up to the CPUs (PEAK=1 or 0;
                        default on). The report's peak IOPS and MB/s come from it.
  --slo-p99-us N        latency objective: the deepest queue whose p99 stays within N µs
                        (SLO_P99_US; default 1000)
  --knee-gain PCT       the knee is the first depth whose step from the previous one gains
                        less than PCT % throughput (KNEE_GAIN_PCT; default 5) ...
  --knee-latency PCT    ... while mean latency grows more than PCT % (KNEE_LATENCY_PCT;
                        default 20)
The thresholds change only the analysis: '.venv/bin/python -m analysis qd_sweep --slo-p99-us 500'
redraws the section with another objective without running fio again.

EOF
    common_usage
    cat <<EOF

Outputs: results/qd_sweep/<case>/rep<k>.json (fio json+), tables/qd_sweep.csv,
figs/qd_sweep_curve.png (throughput against latency), figs/qd_sweep_throughput.png,
figs/qd_sweep_latency.png, figs/qd_sweep_percentiles.png, figs/qd_sweep_tails.png,
out/section_5_qd_sweep.md.
Example: sudo bash $TK_PROG --profile quick --qd 1,4,16,64 --no-seq
EOF
}

# Thresholds of the analysis: flag, then environment variable; none means the analysis default
# (or the value a previous analysis of these results stored).
opt_qd="" opt_seq="" opt_slo="" opt_knee_gain="" opt_knee_latency="" opt_jobs="" opt_peak=""
section_option() {
    case "$1" in
        --qd) need_value "$@" && opt_qd=$2 && SECTION_SHIFT=2 ;;
        --seq) opt_seq=1 && SECTION_SHIFT=1 ;;
        --no-seq) opt_seq=0 && SECTION_SHIFT=1 ;;
        --jobs) need_value "$@" && opt_jobs=$2 && SECTION_SHIFT=2 ;;
        --peak) opt_peak=1 && SECTION_SHIFT=1 ;;
        --no-peak) opt_peak=0 && SECTION_SHIFT=1 ;;
        --slo-p99-us) need_value "$@" && opt_slo=$2 && SECTION_SHIFT=2 ;;
        --knee-gain) need_value "$@" && opt_knee_gain=$2 && SECTION_SHIFT=2 ;;
        --knee-latency) need_value "$@" && opt_knee_latency=$2 && SECTION_SHIFT=2 ;;
    esac
}

add_threshold() { # NAME FLAG VALUE: pass a threshold on to the analysis when one was given
    [[ -n $3 ]] || return 0
    require_int "$1" "$3" 1
    ANALYSIS_ARGS+=("$2" "$((10#$3))")
}

section_cases() {
    local qd_list=${opt_qd:-${QD_LIST:-$DEFAULT_QD}} seq=${opt_seq:-${SEQ:-1}} qd jobs
    PEAK=${opt_peak:-${PEAK:-1}}
    require_one_of SEQ "$seq" 0 1
    require_one_of PEAK "$PEAK" 0 1
    jobs_list JOBS_LIST "${opt_jobs:-${JOBS_LIST:-1}}"
    split_list QD_LIST "$qd_list"
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
        if ((seq)); then
            for qd in "${depths[@]}"; do
                # shellcheck disable=SC2046  # no numjobs= for one job: the case as before --jobs
                add_case "read-128k-qd$qd$(jobs_suffix "$jobs")" rw=read bs=128k "iodepth=$qd" $(jobs_option "$jobs")
            done
        fi
    done
    add_threshold SLO_P99_US --slo-p99-us "${opt_slo:-${SLO_P99_US:-}}"
    add_threshold KNEE_GAIN_PCT --knee-gain "${opt_knee_gain:-${KNEE_GAIN_PCT:-}}"
    add_threshold KNEE_LATENCY_PCT --knee-latency "${opt_knee_latency:-${KNEE_LATENCY_PCT:-}}"
}

section_plan_note() {
    ((PEAK)) || return 0
    info "  peak     then a peak search: up to 8 more cases per pattern, more jobs (up to $(nproc), the CPUs)"
    info "           and depth around the best point so far, until IOPS gain less than 5% (--no-peak: none)"
}

# The peak search (analysis/peak_search.py): after the sweep, more jobs and depth around the best
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
