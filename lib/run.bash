# shellcheck shell=bash
# lib/run.bash: what every section shares, and section_main, the order of a section's steps. The
# parts live in files of their own, sourced here: the cases (lib/cases.bash), their jobfiles and
# placement (lib/jobfile.bash), the engine (lib/engine.bash), the helper process and the lock
# (lib/service.bash), the plan (lib/plan.bash), the run loop (lib/loop.bash), the write cases'
# ramps (lib/ramp.bash); the target, the drive's state, io_uring's options, the captures and the
# fleet in the files named below.
# Sourced by the section scripts; never run on its own.
#
# A section script sets SECTION (e.g. qd1, its line in lib/sections.tsv), defines usage and
# declares its cases with add_case, then calls section_main "$@". Its options are declared in
# lib/options.tsv and parsed into their variables by section_main; a section whose matrix depends
# on them (a list of block sizes, depths...) declares its cases in section_cases, which
# section_main calls once the options are read.
# Optional hooks, called when defined: section_plan (the target is resolved: cases that depend on
# its size), section_confirm (after the plan, before anything is touched: ask the user),
# section_prepare (before the prefill and the first case), and
# section_before_repetition / section_after_repetition INDEX REP (around each fio run), and
# section_more_cases (after the cases ran: add more with add_case and succeed, or fail), and
# section_plan_note (lines of its own in the plan).
# ANALYSIS_ARGS are passed on to `python -m analysis <section>` (thresholds of the findings).

# shellcheck source=lib/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
# shellcheck source=lib/target.bash
source "$TK_ROOT/lib/target.bash"
# shellcheck source=lib/collect.bash
source "$TK_ROOT/lib/collect.bash"
# shellcheck source=lib/sampler.bash
source "$TK_ROOT/lib/sampler.bash"
# shellcheck source=lib/fleet.bash
source "$TK_ROOT/lib/fleet.bash"
# shellcheck source=lib/state.bash
source "$TK_ROOT/lib/state.bash"
# shellcheck source=lib/uring.bash
source "$TK_ROOT/lib/uring.bash"

# shellcheck source=lib/cases.bash
source "$TK_ROOT/lib/cases.bash"
# shellcheck source=lib/jobfile.bash
source "$TK_ROOT/lib/jobfile.bash"
# shellcheck source=lib/ceiling.bash
source "$TK_ROOT/lib/ceiling.bash"
# shellcheck source=lib/engine.bash
source "$TK_ROOT/lib/engine.bash"
# shellcheck source=lib/service.bash
source "$TK_ROOT/lib/service.bash"
# shellcheck source=lib/plan.bash
source "$TK_ROOT/lib/plan.bash"
# shellcheck source=lib/loop.bash
source "$TK_ROOT/lib/loop.bash"
# shellcheck source=lib/ramp.bash
source "$TK_ROOT/lib/ramp.bash"
# shellcheck source=lib/pts.bash
source "$TK_ROOT/lib/pts.bash"

URING_OPTS="" URING_NOTE="" # io_uring's options (choose_uring_options)
ANALYSIS_ARGS=()

# --- the section ------------------------------------------------------------------------------
section_main() {
    load_section "$SECTION"
    parse_common_options "$@"
    # SNIA PTS's tests in place of the section's own cases (lib/pts.bash)
    [[ $PROFILE != pts ]] || { pts_section_main && return 0; }
    if declare -F section_cases >/dev/null; then section_cases; fi
    ensure_installed
    require_tools fio
    if [[ -n $HOSTS ]]; then
        [[ -z $NINES ]] || die "$EXIT_USAGE" "--nines sizes the runtime from one target's rate at QD=1; on a fleet (--hosts) give --runtime instead"
        fleet_section_main
        return 0
    fi
    resolve_target
    # Cases that depend on the target (a working set as large as the region) are added here.
    if declare -F section_plan >/dev/null; then section_plan; fi
    declare_write_blocks # --write-regime after-cliff (lib/ramp.bash)
    declare_write_blocks
    check_io_alignment
    cd "$TK_ROOT" || exit "$EXIT_FAIL"
    RESULTS_DIR="$RESULTS/$SECTION"
    ENGINE_NOTE="" ENGINE_FROM_TREE="" # the latter 1 where an earlier section's probe is reused
    # from here on: the plan reads the tree's record (the write speed a state measured)
    service_start
    resolve_state
    resolve_purge

    if [[ -n $DRY_RUN ]]; then
        dry_run
        exit "$EXIT_OK"
    fi
    # Refuse before touching anything: no file created, no lock taken, nothing moved.
    refuse_unless_writes_allowed

    print_plan
    if declare -F section_confirm >/dev/null; then section_confirm; fi
    start_run
    redo_state
    [[ -z $FRESH ]] || move_results_aside
    section_folder_removed "$RESULTS_DIR"
    mkdir -p "$RESULTS_DIR"
    # The region is written before any engine is probed or case measured: by the state (once per
    # results tree), by the toolkit creating its file, or by this section's prefill.
    prepare_state
    if [[ -n $TARGET_DEFAULT || -n $TARGET_CREATE ]] && ! step_done "$RESULTS_DIR" prefill; then
        step_set "$RESULTS_DIR" prefill 'the file target, created by the toolkit full of random data'
    fi
    prefill
    if [[ $ENGINE == auto ]]; then
        ENGINE_KEPT=$(stored_engines)
        choose_engines_by_cost
    fi
    info "engine: $ENGINE_NOTE${ENGINE_FROM_TREE:+ (probed once for this results tree)}"
    size_runtime_for_nines
    choose_uring_options
    [[ -z $URING_NOTE ]] || info "io_uring: $URING_NOTE${URING_FROM_TREE:+ (probed once for this results tree)}"
    check_manifest
    health_snapshot before
    if declare -F section_prepare >/dev/null; then section_prepare; fi
    prepare_cases
    steady_rounds
    run_all
    # A section whose next cases depend on the results so far (§5's peak search) adds them in
    # section_more_cases, which fails when it adds none.
    while declare -F section_more_cases >/dev/null && section_more_cases; do run_all; done
    until_stable
    health_snapshot after

    info ""
    if [[ -n ${TK_ANALYSIS_ELSEWHERE:-} ]]; then
        # The tables, figures and snippet are drawn from the results tree by whoever set it: the
        # NVMe VM (tools/nvme_vm) draws them on the host, where Python is not emulated.
        info "analysis left to the caller (TK_ANALYSIS_ELSEWHERE): python -m analysis $SECTION --results $RESULTS"
    else
        # With failed repetitions the analysis may find a point left with none: exit_if_failed says so.
        tk_python "$SECTION" "${ANALYSIS_ARGS[@]}" || ((${#FAILED[@]})) || die "$EXIT_FAIL" "the analysis of $RESULTS_DIR failed (see above); the raw results are kept"
    fi
    exit_if_failed "repetition(s) failed"
    # The lab's targets of this section (--targets): exit 4 when one fails.
    if [[ -z ${TK_ANALYSIS_ELSEWHERE:-} && -n ${TARGETS:-} ]]; then
        local rc=0
        judge_targets "$SECTION" || rc=$?
        ((rc == 0)) || exit "$rc"
    fi
}

# Once the plan is printed and the writes allowed: the run's temporaries and traps, the lock on
# the target, fio's clock, the file target created, the engine that works (a section's and the pts
# profile's).
start_run() {
    TK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssd-toolkit.XXXXXX")
    trap on_exit EXIT
    trap on_interrupt INT TERM
    acquire_lock
    choose_fio_clock
    [[ -z $TK_FIO_CLOCK ]] || info "fio's clock: $TK_FIO_CLOCK ($FIO_CLOCK_NOTE)"
    mkdir -p "$TK_ROOT/tmp/$SECTION"
    [[ -z $TARGET_CREATE ]] || create_file_target
    choose_engine
}

# After the analysis: list what failed (FAILED) and exit 1, the results of the rest being kept.
exit_if_failed() { # WHAT: e.g. "repetition(s) failed"
    ((${#FAILED[@]})) || return 0
    info ""
    info "${#FAILED[@]} $1; rerun the same command to retry what is missing:"
    printf '  %s\n' "${FAILED[@]}" >&2
    exit "$EXIT_FAIL"
}
