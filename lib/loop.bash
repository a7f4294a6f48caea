# shellcheck shell=bash
# lib/loop.bash: the run loop. Repetitions in their order (rounds shuffled by a seed), progress
# and ETA, atomic result files, resume and --fresh, faults, Ctrl-C, --until-stable, the host's
# ceiling, the prefill and the health snapshots.
# shellcheck disable=SC2034  # LAST_WRITE_END_MS is read by the sections' hooks (§6)
# Sourced by lib/run.bash; never run on its own.

FAILED=() # one line per repetition (or fleet host) that failed
# when this run last wrote to the target (the state, the prefill): a section that idles a stated
# time before a write (§6's burst) counts from it
LAST_WRITE_END_MS=""
RUN_ROUND=0 # run_all's calls so far: more than one when a section adds cases as it goes
# What the toolkit did since the last repetition's fio ended, one "EPOCH<TAB>what it did" per
# step, each stamped as it ends: a section whose next repetition must follow at a stated idle
# (§6's recovery probes) keeps them beside it, so that an idle that came out longer is explained
# from the record, step by step.
GAP_STEPS=()
# A section's after-hook sets CHECK_LATER=1 where its next repetition must follow this one at a
# stated idle: the check of this one's result is then made after that repetition (PENDING_CHECKS:
# "INDEX REP FIO_RC"), out of the idle.
CHECK_LATER="" PENDING_CHECKS=()
# The order of the repetitions (analysis/run/order.py): `rounds` (repetition 1 of every case, then
# 2..., the cases shuffled in each round by the seed); `fixed-first` for a section whose method
# fixes the order of some cases (@fixed=1: first, as declared, each case's repetitions back to
# back; the others in rounds after them); `declared` for every case as declared. Its script sets it.
CASE_ORDER=rounds
ORDER_CASE=() ORDER_REP=() ORDER_KNOWN=0 # the order so far (case_order) and how many cases it covers
ORDER_REPS=() # per case: how many of its repetitions the order holds

# --- results ----------------------------------------------------------------------------------
move_results_aside() { move_folder_aside "$RESULTS_DIR" --fresh; }

move_folder_aside() { # FOLDER WHY: a section's (or the state's) folder, its record entry and steps
    [[ -d $1 ]] || return 0
    local aside
    aside="$1.$(date +%Y%m%d-%H%M%S)"
    mv -- "$1" "$aside"
    step_forget "$1"
    section_aside "$1" "$aside"
    info "$2: earlier results moved to $aside"
}

check_manifest() {
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    manifest_check "$RESULTS_DIR" "" \
        section="$SECTION" target="$TARGET_PATH" target_kind="$TARGET_KIND" \
        target_fs="$([[ $TARGET_KIND != file ]] || file_fs)" \
        profile="$PROFILE" runtime="$RUNTIME" ramp="$RAMP" repeat="$REPEAT" size="$SIZE" \
        region_bytes="$REGION_BYTES" target_bytes="$TARGET_BYTES" state="$STATE_USED" \
        state_note="$STATE_NOTE" steady_rounds="$STEADY_ROUNDS" steady_opts="$STEADY_OPTS" \
        steady_track="$STEADY_TRACK" round_s="$ROUND_S" max_rounds="$MAX_ROUNDS" \
        until_stable="$UNTIL_STABLE" max_repeat="$MAX_REPEAT" \
        engine="$(engine_label)" direct="$DIRECT" \
        engines="$ENGINE_QD1 $ENGINE_DEEP" engine_note="$ENGINE_NOTE" cases="${CASE_NAMES[*]}" \
        engine_from_tree="${ENGINE_FROM_TREE:-}" io_uring_options="$URING_OPTS" \
        io_uring_note="$URING_NOTE" io_uring_from_tree="${URING_FROM_TREE:-}" \
        cpus_allowed="$PLACEMENT_CPUS" placement="$PLACEMENT_NOTE" \
        nines="$NINES" nines_qd1_iops="${NINES_RATE:-}" \
        matrix="$(case_matrix)"
}

prefill() {
    if [[ -n $NO_PREFILL ]] || step_done "$RESULTS_DIR" prefill; then
        return 0
    fi
    info "prefill: writing $(human_bytes "$REGION_BYTES") of $TARGET_PATH once with random data"
    still_safe_to_write
    fill_region "$ENGINE_DEEP" "$DIRECT"
    LAST_WRITE_END_MS=$(now_ms)
    step_set "$RESULTS_DIR" prefill "$(printf 'region %s bytes of %s written at %(%F %T)T' "$REGION_BYTES" "$TARGET_PATH" -1)"
}

health_snapshot() { # before|after
    local dir="$RESULTS_DIR/health/$1"
    # The first "before" of a resumed section is the true before; keep it.
    if [[ $1 == before && -d $dir ]]; then
        rep_counter_disk "$dir"
        return 0
    fi
    mkdir -p "$dir"
    collect_health_raw "$dir" "$TARGET_PATH" || warn "health snapshot ($1) failed; going on"
    [[ $1 != before ]] || rep_counter_disk "$dir"
}

# REP_COUNTER_DISK: the NVMe disk whose host-write counter is read around each writing
# repetition (drive_counter_line), set where the section's first health snapshot found nvme
# smart-log answering; empty otherwise (a file, a loop device, a SATA drive: its counter moves
# in GiB or more, too coarse for a repetition, so only the section's before and after count).
rep_counter_disk() { # HEALTH_DIR
    REP_COUNTER_DISK=""
    [[ -s $1/nvme-smart-log.json && -s $1/health_device.txt ]] || return 0
    REP_COUNTER_DISK=$(<"$1/health_device.txt")
}

# The drive's data units written (nvme smart-log, 512,000 B each) before or after a writing
# repetition, one JSON line: {"when": "before", "t": EPOCH_S, "doc": SMART_LOG}; rep<k>.drive
# holds the two (analysis/rules/write_evidence.py). Nothing when nvme does not answer in 5 s.
drive_counter_line() { # before|after
    local doc
    doc=$(timeout 5 nvme smart-log "$REP_COUNTER_DISK" -o json 2>/dev/null | tr -d '\n') || return 0
    [[ -n $doc ]] || return 0
    printf '{"when": "%s", "t": %s, "doc": %s}\n' "$1" "${EPOCHREALTIME/,/.}" "$doc"
}

# --- the run loop -----------------------------------------------------------------------------

on_interrupt() {
    trap '' INT TERM
    # Nothing asks the helper anything from here on: its input closed first, it ends on its own,
    # and no wait below can hang on its coprocess (lib/process.bash, stop_process)
    service_close_input
    [[ -z ${FIO_PID:-} ]] || stop_process "$FIO_PID"
    # A fio stopped as it started leaves its job process waiting forever (run_fio), holding
    # the target, the lock and the caller's stdout: a test's pipe stayed open 90 s after Ctrl-C.
    # Every fio of this run carries the lock in its environment.
    [[ -z ${TK_LOCK:-} ]] || stop_left_fio TK_FIO_LOCK "$TK_LOCK"
    # the repetition's fio output and its CPU and drive-counter snapshots alike
    [[ -n ${PARTIAL:-} ]] && rm -f -- "$PARTIAL" "${PARTIAL%.json.partial}".{cpu,drive}.partial
    info ""
    info "interrupted: ${DONE_RUNS:-0} finished repetitions are kept in $RESULTS_DIR; rerun the same command to resume"
    exit "$EXIT_INTERRUPTED"
}

on_exit() {
    if declare -F health_sampler_stop >/dev/null; then health_sampler_stop; fi
    if declare -F fleet_watchdog_stop >/dev/null; then fleet_watchdog_stop; fi
    # what a section changed on the device for its run, set back (the pts profile's write cache)
    if declare -F section_on_exit >/dev/null; then section_on_exit; fi
    service_stop
    [[ -n ${TK_TMP:-} ]] && rm -rf -- "$TK_TMP"
}

# run_repetition INDEX REP: one fio run; the result is renamed into place only when it is a good
# repetition of its case (analysis/run/repetition.py). A failure is diagnosed (diagnose_fault): a fault
# that would fail every later run too stops the run here, anything else is listed and the run
# goes on.
run_repetition() {
    local i=$1 k=$2 name=${CASE_NAMES[$1]}
    local dir="$RESULTS_DIR/$name" rc=0 reply
    PARTIAL="$dir/.rep$k.json.partial"
    if [[ $TARGET_KIND == block ]] && case_writes "$i"; then
        reply=$(service_ask safety "$TARGET_PATH" "$DESTROY")
        if [[ $reply != ok ]]; then
            diagnose_fault "$name rep $k" "$TARGET_PATH" 0 1 # a device gone is no safety refusal
            die "$EXIT_UNSAFE" "${reply#refused$'\t'}"
        fi
        gap_step "checking that writing to $TARGET_PATH is still safe"
    fi
    if declare -F section_before_repetition >/dev/null; then section_before_repetition "$i" "$k"; fi
    # Best effort: a full results folder must fail the repetition, and be named, where fio's
    # own output fails (diagnose_fault), not here.
    cpu_snapshot before >"$dir/.rep$k.cpu.partial" 2>/dev/null || true
    rm -f -- "$dir/.rep$k.drive.partial" # a killed run's
    [[ -z ${REP_COUNTER_DISK:-} ]] || ! case_writes "$i" ||
        drive_counter_line before >"$dir/.rep$k.drive.partial" 2>/dev/null || true
    TK_LOG="$dir/rep$k" run_fio "$dir/rep$k.stderr" --output-format=json+ --output="$PARTIAL" \
        "$dir/job.fio" || rc=$?
    GAP_STEPS=()
    gap_step "fio of $name rep $k exiting"
    cpu_snapshot after >>"$dir/.rep$k.cpu.partial" 2>/dev/null || true
    [[ ! -e $dir/.rep$k.drive.partial ]] ||
        drive_counter_line after >>"$dir/.rep$k.drive.partial" 2>/dev/null || true
    if declare -F section_after_repetition >/dev/null; then section_after_repetition "$i" "$k"; fi
    # A failed fio is checked at once: its fault may be one that stops the run (diagnose_fault).
    if [[ -n $CHECK_LATER ]] && ((rc == 0)); then
        PENDING_CHECKS+=("$i $k $rc")
        CHECK_LATER="" PARTIAL=""
        return 0
    fi
    CHECK_LATER=""
    check_repetition "$i" "$k" "$rc"
    gap_step "checking the result of $name rep $k"
    check_pending
}

gap_step() { GAP_STEPS+=("${EPOCHREALTIME/,/.}"$'\t'"$1"); } # WHAT: the step that just ended

check_pending() { # the checks CHECK_LATER put off, in the order their repetitions ran
    local entry
    for entry in "${PENDING_CHECKS[@]}"; do
        # shellcheck disable=SC2086  # "INDEX REP RC", split on purpose
        check_repetition $entry
    done
    PENDING_CHECKS=()
}

# check_repetition INDEX REP FIO_RC: its result renamed into place when it is a good repetition
# of its case (analysis/run/repetition.py), else kept aside and the fault diagnosed.
check_repetition() {
    local i=$1 k=$2 rc=$3 name=${CASE_NAMES[$1]} reply writes=0 why
    local dir="$RESULTS_DIR/$name"
    local final="$dir/rep$k.json"
    PARTIAL="$dir/.rep$k.json.partial"
    reply=$(service_ask check-result "$PARTIAL" "$RESULTS_DIR" "$name")
    if [[ $reply == ok ]]; then
        mv -f -- "$dir/.rep$k.cpu.partial" "$dir/rep$k.cpu" 2>/dev/null || true
        mv -f -- "$dir/.rep$k.drive.partial" "$dir/rep$k.drive" 2>/dev/null || rm -f -- "$dir/rep$k.drive"
        mv -f -- "$PARTIAL" "$final"
        [[ -s $dir/rep$k.stderr ]] || rm -f -- "$dir/rep$k.stderr"
    else
        # Keep what fio wrote for the post-mortem, under a name the analysis never reads.
        [[ -e $PARTIAL ]] && mv -f -- "$PARTIAL" "$dir/rep$k.failed.json"
        mv -f -- "$dir/.rep$k.cpu.partial" "$dir/rep$k.failed.cpu" 2>/dev/null || true
        mv -f -- "$dir/.rep$k.drive.partial" "$dir/rep$k.failed.drive" 2>/dev/null || true
        PARTIAL=""
        case_writes "$i" && writes=1
        diagnose_fault "$name rep $k failed" "$TARGET_PATH" "$rc" "$writes"
        why=${FAULT_GO:-"${reply#bad$'\t'} (fio exit $rc; see $dir/rep$k.stderr)"}
        FAILED+=("$name rep $k: $why")
        warn "$name rep $k failed: $why"
    fi
    PARTIAL=""
}

# Each CPU's ticks from /proc/stat, with the time, before or after a repetition's fio: the
# analysis (analysis/run/cpu_load.py) finds the busiest CPU from the two (host_bound).
cpu_snapshot() { # before|after
    printf '%s %s\n' "$1" "$EPOCHREALTIME"
    grep '^cpu[0-9]' /proc/stat
}

# diagnose_fault WHAT TARGET FIO_RC WRITES(0|1): name what went wrong (analysis/run/faults.py). A fault
# every later run would meet too (the results folder full, the target gone or read-only) ends the
# run here with its one line: exit 1, the finished repetitions kept, the same command resumes.
# Otherwise FAULT_GO is the line for a fault the run goes on after (fio killed), or empty. An
# empty TARGET (a fleet run's hosts) checks the results folder only.
diagnose_fault() {
    local reply
    reply=$(service_ask diagnose "$2" "$RESULTS_DIR" "$3" "$4")
    FAULT_GO=""
    case ${reply%%$'\t'*} in
        stop) die "$EXIT_FAIL" "$1: ${reply#*$'\t'}" ;;
        go) FAULT_GO=${reply#*$'\t'} ;;
    esac
    return 0
}

# results_write_failed WHAT: a file of the results could not be written ($TK_TMP/prepare.stderr
# says why): named as a full results folder when it is one, else with the tool's own words.
results_write_failed() {
    diagnose_fault "writing $1" "" 0 0
    die "$EXIT_FAIL" "cannot write $1 into $RESULTS_DIR: $(head -n 1 "$TK_TMP/prepare.stderr")"
}

# A results file that is not a good repetition of its case (cut short, fio's error, no I/O, another
# case's options: analysis/run/repetition.py) is set aside as rep<k>.rejected.json, never deleted, so
# that run_all runs it again. This is how a rerun of the same command redoes what the analysis
# left out.
set_aside_bad_repetitions() { # RESULTS_DIR
    local i path reply aside n
    for i in "${!CASE_NAMES[@]}"; do
        for path in "$1/${CASE_NAMES[$i]}"/rep*.json; do
            [[ ${path##*/} =~ ^rep[0-9]+\.json$ ]] || continue
            reply=$(service_ask check-result "$path" "$1" "${CASE_NAMES[$i]}")
            [[ $reply != ok ]] || continue
            aside=${path%.json}.rejected.json n=1
            while [[ -e $aside ]]; do
                n=$((n + 1)) aside=${path%.json}.rejected$n.json
            done
            mv -- "$path" "$aside"
            info "set aside ${path#"$RESULTS"/} as ${aside##*/} (${reply#bad$'\t'}); it runs again"
        done
    done
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# The run loop's three steps, on this machine or on the fleet's hosts (lib/fleet.bash).
rep_done() { # INDEX REP
    if [[ -n $HOSTS ]]; then fleet_rep_done "$@"; else [[ -e $RESULTS_DIR/${CASE_NAMES[$1]}/rep$2.json ]]; fi
}

prepare_case() { # INDEX: its folder and jobfile
    if [[ -n $HOSTS ]]; then
        fleet_prepare_case "$1"
        return 0
    fi
    mkdir -p "$RESULTS_DIR/${CASE_NAMES[$1]}"
    render_jobfile "$1" "$(engine_for_case "$1")" "$DIRECT" >"$TK_ROOT/tmp/$SECTION/${CASE_NAMES[$1]}.fio"
    cp -- "$TK_ROOT/tmp/$SECTION/${CASE_NAMES[$1]}.fio" "$RESULTS_DIR/${CASE_NAMES[$1]}/job.fio"
}

run_batch() { # J...: order entries run together; one at a time here, several per call on a fleet
    if [[ -n $HOSTS ]]; then
        fleet_run_batch "$@"
    else
        ramp_before "${ORDER_CASE[$1]}" # a write case's block starts with its ramp (lib/ramp.bash)
        run_repetition "${ORDER_CASE[$1]}" "${ORDER_REP[$1]}"
    fi
}

batch_takes() { # J... NEXT: whether entry NEXT joins the batch J...
    [[ -n $HOSTS ]] && fleet_batch_takes "$@"
}

# --- order and progress ------------------------------------------------------------------------

order_manifests() { # the section folder(s) whose manifest the order is read from and recorded in
    local h
    if [[ -n $HOSTS ]]; then
        for h in "${!FLEET_LABELS[@]}"; do fleet_results_dir "$h"; done
    else
        echo "$RESULTS_DIR"
    fi
}

# ORDER_CASE[j], ORDER_REP[j]: the case index and repetition run j-th, from the seed, the rule and
# the cases' names alone, so a resumed run keeps the first run's order; recorded in the manifest(s).
# Cases a section adds as it goes (§5's peak search) are ordered among themselves and run after
# every repetition ordered before them.
case_order() {
    local i c r cases=() index=() manifests=() reply pair
    # New cases, and cases given more repetitions since they were ordered (a point the peak
    # search measures again, --until-stable): only their new repetitions join the order.
    for i in "${!CASE_NAMES[@]}"; do
        if ((i >= ORDER_KNOWN || $(case_repeat "$i") > ${ORDER_REPS[i]:-0})); then
            cases+=("${CASE_NAMES[$i]}:$(case_repeat "$i"):${ORDER_REPS[i]:-0}:$(case_option "$i" @fixed)") index+=("$i")
        fi
    done
    ((${#cases[@]})) || return 0
    mapfile -t manifests < <(order_manifests)
    reply=$(service_ask order "$ORDER_SEED_USED" "$CASE_ORDER" "$RUN_ROUND" "${cases[*]}" "${manifests[@]}")
    [[ $reply == ok$'\t'* ]] || die "$EXIT_FAIL" "could not order the repetitions: ${reply#bad$'\t'}"
    for pair in ${reply#ok$'\t'}; do
        c=${index[${pair%:*}]} r=${pair#*:}
        ORDER_CASE+=("$c") ORDER_REP+=("$r")
    done
    for c in "${index[@]}"; do ORDER_REPS[c]=$(case_repeat "$c"); done
    ORDER_KNOWN=${#CASE_NAMES[@]}
}

# --until-stable PCT: after the planned repetitions, one more repetition of every point not yet
# certified stable to ±PCT % (analysis/run/stability.py: its 95% interval, the drift over its
# rounds, a trend), round after round, until none is or each has --max-repeat. Deterministic from the results, so a rerun resumes it. §6 keeps its
# fixed order and one-off burst; a fleet run is not judged per host.
until_stable() {
    [[ -n $UNTIL_STABLE && $CASE_ORDER != declared && -z $HOSTS ]] || return 0
    local i name reply names
    while :; do
        names=()
        for i in "${!CASE_NAMES[@]}"; do
            (($(case_repeat "$i") < MAX_REPEAT)) && names+=("${CASE_NAMES[$i]}")
        done
        ((${#names[@]})) || return 0
        reply=$(service_ask unstable "$RESULTS_DIR" "$UNTIL_STABLE" "${names[*]}")
        [[ $reply == ok$'\t'* ]] || die "$EXIT_FAIL" "could not judge the intervals of $RESULTS_DIR: ${reply#bad$'\t'}"
        reply=${reply#ok$'\t'}
        [[ -n $reply ]] || return 0
        for name in $reply; do
            for i in "${!CASE_NAMES[@]}"; do [[ ${CASE_NAMES[$i]} == "$name" ]] && break; done
            set_case_repeat "$i" $(($(case_repeat "$i") + 1))
            # a resumed run finds the repetition done already: it runs nothing, and says nothing
            rep_done "$i" "$(case_repeat "$i")" ||
                info "until stable: $name is not yet stable to ±$UNTIL_STABLE% (its 95% interval, or the drift over its rounds): repetition $(case_repeat "$i") of at most $MAX_REPEAT"
        done
        run_all
    done
}

# Runs every repetition not done yet, in the order of case_order; [n/N] is the repetition's place
# in that order, so a resumed run numbers each repetition as the first run did. A fleet run sends
# consecutive repetitions in batches (lib/fleet.bash); a local run runs them one by one.
run_all() {
    local total i k j todo=0 todo_ms=0 done_ms=0 started h
    DONE_RUNS=0 RAMPED=()
    if [[ -n $HOSTS ]]; then
        for h in $(fleet_live); do set_aside_bad_repetitions "$(fleet_results_dir "$h")"; done
    else
        set_aside_bad_repetitions "$RESULTS_DIR"
    fi
    case_order
    total=${#ORDER_CASE[@]}
    for j in "${!ORDER_CASE[@]}"; do
        i=${ORDER_CASE[j]} k=${ORDER_REP[j]}
        if rep_done "$i" "$k"; then
            DONE_RUNS=$((DONE_RUNS + 1))
        else
            todo=$((todo + 1)) todo_ms=$((todo_ms + $(case_ms "$i")))
        fi
    done
    if ((RUN_ROUND++ > 0)); then
        info "$todo more repetitions to run"
    elif ((DONE_RUNS > 0)); then
        info "resuming: $DONE_RUNS of $total repetitions already done, $todo to run"
    fi
    prepare_cases
    started=$(now_ms)
    local batch=()
    for j in "${!ORDER_CASE[@]}"; do
        rep_done "${ORDER_CASE[j]}" "${ORDER_REP[j]}" && continue
        if ((${#batch[@]})) && ! batch_takes "${batch[@]}" "$j"; then
            run_all_batch "${batch[@]}"
            batch=()
        fi
        batch+=("$j")
    done
    ((${#batch[@]} == 0)) || run_all_batch "${batch[@]}"
    check_pending # a check put off for a repetition that nothing followed
}

# J...: run_all's progress line, the batch, and the bookkeeping after it (run_all's own counters:
# todo_ms, done_ms, started, total).
run_all_batch() {
    local i j n eta listed=""
    # ETA: the plan's time still to run, scaled by how the runs so far kept to the plan.
    eta=$((todo_ms - done_ms))
    ((done_ms == 0)) || eta=$((eta * ($(now_ms) - started) / done_ms))
    if (($# == 1)); then
        i=${ORDER_CASE[$1]}
        info "[$(($1 + 1))/$total] ${CASE_NAMES[$i]} rep ${ORDER_REP[$1]}/$(case_repeat "$i") ... ETA $(human_seconds $(((eta + 500) / 1000)))"
    else
        for j in "$@"; do listed+="${listed:+, }${CASE_NAMES[${ORDER_CASE[j]}]} rep ${ORDER_REP[j]}"; done
        n=$(($1 + 1))-$((${*: -1} + 1))
        info "[$n/$total] $# repetitions in one fio call per host: $listed ... ETA $(human_seconds $(((eta + 500) / 1000)))"
    fi
    run_batch "$@"
    for j in "$@"; do
        done_ms=$((done_ms + $(case_ms "${ORDER_CASE[j]}")))
        if rep_done "${ORDER_CASE[j]}" "${ORDER_REP[j]}"; then DONE_RUNS=$((DONE_RUNS + 1)); fi
    done
}

# Every case's jobfile, then the host's ceiling of the shapes not measured yet. Called before the
# sustained state's rounds, so that the drive goes from its last round to the first case without
# idling, and again by run_all for cases added since (§5's peak search).
CEILING_KNOWN=0 # cases whose ceiling this run measured (or found measured)
prepare_cases() {
    local i
    for i in "${!CASE_NAMES[@]}"; do
        prepare_case "$i" 2>"$TK_TMP/prepare.stderr" || results_write_failed "the jobfile of ${CASE_NAMES[$i]}"
    done
    [[ -z $HOSTS && $HOST_CEILING != 0 ]] && ((CEILING_KNOWN < ${#CASE_NAMES[@]})) || return 0
    measure_host_ceiling
    CEILING_KNOWN=${#CASE_NAMES[@]}
}

# The host's ceiling of every case's shape: its jobfile rendered here (lib/ceiling.bash, every case
# of the section), run by analysis/run/host_ceiling.py with its engine on null_blk, else a zram
# device of its own, else fio's null engine; half a second per shape, no I/O to the target; cases
# measured by an earlier run of these results keep their ceiling.
measure_host_ceiling() {
    render_ceiling "$RESULTS_DIR" 2>"$TK_TMP/prepare.stderr" || results_write_failed "the host ceiling's jobfile"
    tk_python host-ceiling "$RESULTS_DIR" "${CASE_NAMES[@]}" ||
        die "$EXIT_FAIL" "measuring the host's ceiling (null_blk, zram or fio's null engine) failed (see above)"
}
