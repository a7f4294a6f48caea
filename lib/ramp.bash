# shellcheck shell=bash
# lib/ramp.bash: --write-regime after-cliff. Each writing case runs as one block: a ramp of its own
# workload (--write-ramp seconds, <case>/ramp.json and its 1 s write log ramp_bw.<n>.log, never a
# repetition), then its repetitions back to back, so that they measure the drive after its write
# cache filled where the ramp passes the cliff. In the shuffled rounds a write case's repetitions
# are parted by reads, during which a write cache drains: its first repetitions measure the
# cache, the later ones the drive after it (issue 41). The analysis reads the ramp's log for the
# cliff (analysis/rules/write_ramp.py) and says in each write row which regime it measured.
# Reads keep the rounds. Not on a fleet (its repetitions go in batches to every host), nor in a
# section whose order is its method (§6: CASE_ORDER other than rounds).
# Sourced by lib/run.bash; never run on its own.

RAMPED=() # per case index: 1 once its ramp ran in this run_all call (run_all empties it)

# Marks each writing case @fixed=1 (its repetitions back to back, before the reads' rounds: the
# order's fixed-first rule, analysis/run/order.py) and @ramp=S, and sets CASE_ORDER. Called once
# the cases are declared, before the plan. Both marks are in the manifest's matrix: a resumed run
# with another --write-regime is refused (what a number means changed).
declare_write_blocks() {
    local i
    [[ $WRITE_REGIME == after-cliff && $CASE_ORDER == rounds && -z $HOSTS ]] || return 0
    for i in "${!CASE_NAMES[@]}"; do
        case_writes "$i" || continue
        [[ -n $(case_option "$i" @ramp) ]] || CASE_OPTS[i]+=" @fixed=1 @ramp=$WRITE_RAMP"
    done
    section_writes && CASE_ORDER=fixed-first
    return 0
}

ramp_cases() { # how many cases get a ramp
    local i n=0
    for i in "${!CASE_NAMES[@]}"; do [[ -z $(case_option "$i" @ramp) ]] || n=$((n + 1)); done
    echo "$n"
}

# The plan's line: the time the ramps cost, before anything runs.
ramp_plan_lines() {
    local n
    n=$(ramp_cases)
    if ((n == 0)); then
        section_writes || return 0
        info "  regime   writes as found: each write case's repetitions in the rounds among the reads (--write-regime $WRITE_REGIME)"
        return 0
    fi
    info "  ramps    $n write case(s), each one block: a ${WRITE_RAMP}s ramp of its own workload, then its repetitions"
    info "           back to back (the drive after its write cache filled, where the ramp passes the cliff): $n x ${WRITE_RAMP}s = $(human_seconds $((n * WRITE_RAMP))) more"
}

ramp_ms() { # planned milliseconds of the ramps still to run (the ETA's and the plan's share)
    local i ms=0
    for i in "${!CASE_NAMES[@]}"; do
        [[ -n $(case_option "$i" @ramp) ]] || continue
        ms=$((ms + $(case_option "$i" @ramp) * 1000 + FIO_RUN_OVERHEAD_MS))
    done
    echo "$ms"
}

# ramp_before INDEX: the case's ramp, unless it ran already in this run_all call. A resumed run
# reruns it before the first repetition it runs of the case (the interruption let the cache
# drain); a case whose repetitions are all done runs none. The earlier run's ramp is kept as
# ramp.<k>.json (and ramp.<k>_bw.*.log): its bytes came before the repetitions that run measured,
# and the regime rows count them (analysis/rules/write_evidence.py). The ramp's JSON is the case's
# job with runtime=@ramp and no ramp_time of fio's own; a failed ramp is named and kept aside
# (ramp.failed.json), and the repetitions run all the same (their rows then say no ramp was
# recorded).
ramp_before() {
    local i=$1 name=${CASE_NAMES[$1]} seconds dir rc=0 reply
    seconds=$(case_option "$i" @ramp)
    [[ -n $seconds && -z ${RAMPED[i]:-} ]] || return 0
    RAMPED[i]=1
    dir="$RESULTS_DIR/$name"
    if [[ $TARGET_KIND == block ]]; then
        reply=$(service_ask safety "$TARGET_PATH" "$DESTROY")
        [[ $reply == ok ]] || die "$EXIT_UNSAFE" "${reply#refused$'\t'}"
    fi
    info "      ramp of $name: ${seconds}s of its own workload before its repetitions (--write-regime after-cliff)"
    { cat -- "$dir/job.fio" && printf '; the ramp: the case itself, time-bounded, not a repetition\nruntime=%s\nramp_time=0\n' "$seconds"; } >"$dir/ramp.fio"
    keep_earlier_ramp "$dir"
    rm -f -- "$dir"/ramp_bw.*log
    PARTIAL="$dir/.ramp.json.partial"
    TK_LOG="$dir/ramp" run_fio "$dir/ramp.stderr" --output-format=json --output="$PARTIAL" "$dir/ramp.fio" || rc=$?
    if ((rc == 0)) && [[ -s $PARTIAL ]]; then
        mv -f -- "$PARTIAL" "$dir/ramp.json"
        [[ -s $dir/ramp.stderr ]] || rm -f -- "$dir/ramp.stderr"
    else
        [[ ! -e $PARTIAL ]] || mv -f -- "$PARTIAL" "$dir/ramp.failed.json"
        warn "the ramp of $name failed (fio exit $rc; see $dir/ramp.stderr); its repetitions run without one"
    fi
    PARTIAL=""
}

# An earlier run's ramp.json and its logs, moved to the first free ramp.<k>.* (k from 1).
keep_earlier_ramp() { # DIR
    local dir=$1 k=1 log
    [[ -e $dir/ramp.json ]] || return 0
    while [[ -e $dir/ramp.$k.json ]]; do k=$((k + 1)); done
    for log in "$dir"/ramp_bw.*log; do
        [[ -e $log ]] && mv -f -- "$log" "$dir/ramp.${k}_${log##*/ramp_}"
    done
    mv -f -- "$dir/ramp.json" "$dir/ramp.$k.json"
}
