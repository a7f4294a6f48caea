# shellcheck shell=bash
# lib/state.bash: the drive's state before a section measures (--state), and the engine probe
# that every section of a results tree shares.
#
#   as-is      nothing is done: the drive is measured in whatever state it is in ("state not
#              controlled"); a section still writes its region once before reading it (prefill)
#   purged     the region is discarded (blkdiscard; a file's blocks are punched out), then written
#              once sequentially with random data: every LBA mapped, none overwritten yet
#   sustained  SNIA PTS: purged, then workload-independent preconditioning (the region written
#              twice in 128 KiB sequential writes), then before each section its own
#              workload-dependent rounds (STEADY_OPTS, --round seconds each) until SNIA's
#              5-round window holds (range <= 20%, line excursion <= 10%) after the rounds wrote
#              the region once and after the last lasting cliff (analysis/core/steady.py), or
#              --max-rounds rounds past that minimum ran out, which the snippet then says
#
# The purge and the sequential writes are done once per results tree (before its first section),
# recorded in RESULTS/state/; the rounds before each section measures, in RESULTS/<section>/steady/.
# The tree's steps resume; a section with repetitions still to run runs its rounds again, from the
# first (the earlier ones set aside): the state it is measured in is the one its rounds just set.
# docs/methodology.md says why and what it costs.
# shellcheck disable=SC2034  # STATE_USED, STATE_NOTE... are read by lib/run.bash
# Sourced by lib/run.bash; never run on its own.

# SNIA PTS's steady-state window, and each section's rounds: their workload (STEADY_OPTS, fio's
# options: the section's own stimulus) and the variable they track (STEADY_TRACK: iops, bw, or
# lat, the mean total latency). Each section script declares both (methodology.md says why
# each); §6 sets STEADY_ROUNDS=0: its burst is itself a long write whose steady state it reports.
readonly STEADY_WINDOW=5 STEADY_RANGE_PCT=20 STEADY_SLOPE_PCT=10
STEADY_OPTS="rw=randwrite bs=4k iodepth=32"
STEADY_TRACK=iops
STEADY_ROUNDS=1
# The folders --fresh-state moves aside before the state is prepared anew (check_state_asked).
STATE_REDO=()
# The short sequential write that measures the target's write speed for the time estimates.
readonly SPEED_PROBE_S=3

# resolve_state: STATE_USED (as-is|purged|sustained) from --state, and STATE_NOTE saying why when
# auto chose. Called after resolve_target, before the plan. Whether the state's writes are allowed
# (--destroy naming the device) is checked with every other write of the run (section_main).
resolve_state() {
    STATE_NOTE=""
    STATE_USED=$STATE
    if [[ $STATE == auto ]]; then
        STATE_USED=as-is
        if [[ -n $HOSTS ]]; then
            STATE_NOTE="auto: a fleet run measures each host's target as it is"
        elif [[ $TARGET_KIND != block ]]; then
            STATE_NOTE="auto: a file's state is its filesystem's, not the drive's"
        elif [[ $PROFILE != standard ]]; then
            STATE_NOTE="auto: the $PROFILE profile does not set the drive's state; --state sustained does"
        elif [[ -n $NO_PREFILL ]]; then
            STATE_NOTE="auto: --no-prefill writes nothing, so the state is not set"
        else
            STATE_USED=sustained STATE_NOTE="auto: a block device in the standard profile"
        fi
        return 0
    fi
    [[ $STATE_USED == as-is ]] && return 0
    [[ -z $HOSTS ]] || die "$EXIT_USAGE" "--state $STATE_USED: a fleet run cannot purge or precondition the hosts' targets; run the section on each host, or use --state as-is"
    [[ -z $NO_PREFILL ]] || die "$EXIT_USAGE" "--state $STATE_USED writes the region; --no-prefill contradicts it (use --state as-is to leave the region as it is)"
}

# PURGE_METHOD, PURGE_WHAT (for the plan) and PURGE_CMD (the command) from --purge and what the
# target supports (analysis/device/purge.py); a method it does not support, or one that would
# erase more than the target, is refused here, before anything is touched. It is resolved also
# when the tree's purge is done: a --purge the target cannot do is refused, not passed over, and
# one the tree was not purged with is refused or, with --fresh-state, done (check_state_asked).
resolve_purge() {
    PURGE_METHOD="" PURGE_WHAT="" PURGE_CMD=() STATE_REDO=()
    [[ $STATE_USED != as-is ]] || return 0
    plan_purge
    check_state_asked
}

# PURGE_METHOD, PURGE_WHAT and PURGE_CMD from --purge (the pts profile's purge before each test
# too: lib/pts.bash), or the refusal.
plan_purge() {
    local reply code
    reply=$(service_ask purge-plan "$TARGET_PATH" "$PURGE" "$REGION_BYTES" "$TARGET_BYTES")
    case $reply in
        ok$'\t'*)
            IFS=$'\t' read -r -a PURGE_CMD <<<"${reply#ok$'\t'}"
            PURGE_METHOD=${PURGE_CMD[0]} PURGE_WHAT=${PURGE_CMD[1]} PURGE_CMD=("${PURGE_CMD[@]:2}") ;;
        refused$'\t'*)
            code=${reply#refused$'\t'} && code=${code%%$'\t'*}
            die "$code" "${reply#refused$'\t'"$code"$'\t'}" ;;
        *) die "$EXIT_FAIL" "could not plan the purge of $TARGET_PATH: ${reply#*$'\t'}" ;;
    esac
}

# The tree's state is prepared once, and every section of it is measured in that state: a run
# asking for another --state or --purge (or target, or region) than it was prepared with is
# refused with exit 2, before anything is touched (analysis/run/tree_state.py says how it was
# prepared and the ways out). Exit 2, not 3: nothing is unsafe, the options contradict the
# tree's record, as another section's settings do (docs/architecture.md). With --fresh-state,
# STATE_REDO lists the folders to move aside first (the state, the sections measured in it), and
# the state is then prepared anew (redo_state).
check_state_asked() {
    local reply
    reply=$(service_ask state-check "$RESULTS" "$STATE_USED" "$TARGET_PATH" "$REGION_BYTES" \
        "$PURGE" "$PURGE_METHOD" "$FRESH_STATE")
    case $reply in
        ok) ;;
        redo$'\t'*) read -r -a STATE_REDO <<<"${reply#redo$'\t'}" ;;
        refused$'\t'*) die "$EXIT_USAGE" "${reply#refused$'\t'}" ;;
        *) die "$EXIT_FAIL" "could not read how the drive state of $RESULTS was prepared: ${reply#*$'\t'}" ;;
    esac
}

# --fresh-state, where the tree's state was prepared otherwise: the state and the sections
# measured in it moved aside (never deleted, their record entries and steps with them), so that
# this run prepares the state anew and no section of the tree claims a state it was not
# measured in.
redo_state() {
    ((${#STATE_REDO[@]})) || return 0
    local folder
    for folder in "${STATE_REDO[@]}"; do move_folder_aside "$RESULTS/$folder" --fresh-state; done
    STATE_REDO=()
}

# What the state still has to write, "" when nothing: for the plan and a refusal.
state_writes() {
    local what=""
    [[ $STATE_USED != as-is ]] || return 0
    if ! state_step_done purge; then
        [[ -n $(stored_write_speed) ]] || what="a ${SPEED_PROBE_S} s sequential write that measures its speed, then "
        what+="$PURGE_WHAT, then "
    fi
    if [[ $STATE_USED == purged ]]; then
        state_step_done written || what+="$(human_bytes "$REGION_BYTES") of sequential writes (the region once), "
    else
        state_step_done precondition || what+="$(human_bytes $((2 * REGION_BYTES))) of sequential writes (the region twice), "
        ((STEADY_ROUNDS)) && what+="this section's rounds ($STEADY_OPTS): at least $(human_bytes "$REGION_BYTES"), then up to $MAX_ROUNDS rounds of ${ROUND_S}s, "
    fi
    [[ -z $what ]] || printf -- '--state %s: %s' "$STATE_USED" "${what%, }"
}

# The measured write speed of this target, MB/s, if a run of this tree measured it.
stored_write_speed() { stored_tree_choice write_speed; }

# What the state will write, in bytes (the purge writes nothing).
state_write_bytes() {
    case $STATE_USED in
        purged) echo "$REGION_BYTES" ;;
        sustained) echo $((2 * REGION_BYTES)) ;;
        *) echo 0 ;;
    esac
}

# "about 4m10s at the 1234 MB/s measured ..." or how it will be measured.
write_time_text() { # BYTES
    local speed
    speed=$(stored_write_speed)
    if [[ -n $speed ]] && ((speed > 0)); then
        printf 'about %s at the %s MB/s this target wrote when measured (longer where a write cache fills)' \
            "$(human_seconds $(($1 / (speed * 1000000) + 1)))" "$speed"
    else
        printf 'its time is stated before it starts, from a %s s write that measures the target' "$SPEED_PROBE_S"
    fi
}

state_plan_lines() {
    local bytes rounds_s
    bytes=$(state_write_bytes)
    info "  state    $STATE_USED${STATE_NOTE:+ ($STATE_NOTE)}"
    case $STATE_USED in
        as-is) info "           not controlled: the numbers describe the drive in whatever state it is in" ;;
        purged | sustained)
            ((${#STATE_REDO[@]} == 0)) ||
                info "           prepared anew (--fresh-state): first moved aside: ${STATE_REDO[*]}"
            if state_step_done purge; then
                info "           done for this results tree: $(state_step_line purge)"
            else
                info "           purge: $PURGE_WHAT (--purge $PURGE), checked after (sampled"
                info "           blocks read back as purged; on NVMe the namespace's utilization falls); then"
                info "           write the region with random data:"
                info "           $(human_bytes "$bytes") of 128 KiB sequential writes, $(write_time_text "$bytes")"
            fi
            ;;
    esac
    if [[ $STATE_USED == sustained ]] && ((STEADY_ROUNDS)); then
        rounds_s=$((MAX_ROUNDS * ROUND_S))
        info "           then this section's rounds, ${STEADY_OPTS} for ${ROUND_S}s each, tracking $(track_label):"
        info "           no verdict before they wrote the region once ($(human_bytes "$REGION_BYTES") of $(track_workload));"
        info "           then until $STEADY_WINDOW rounds after the last lasting cliff hold steady (range <= ${STEADY_RANGE_PCT}%,"
        info "           line excursion <= ${STEADY_SLOPE_PCT}%), at most $MAX_ROUNDS rounds more ($(human_seconds "$rounds_s"))"
        ((ROUND_S >= 60)) || info "           rounds shorter than SNIA's 60 s: the verdict is indicative"
    fi
}


# A step of the tree's state is done, unless --fresh-state is about to prepare it anew.
state_step_done() { ((${#STATE_REDO[@]} == 0)) && step_done "$RESULTS/state" "$1"; } # STEP
state_step_line() { step_what "$RESULTS/state" "$1"; }  # STEP

# The state of a results tree is set once, for one target and region: a section of the same tree
# asking for another is refused before anything is written (manifest.py compares them).
check_tree_state() {
    section_folder_removed "$RESULTS/state"
    mkdir -p "$RESULTS/state" 2>"$TK_TMP/prepare.stderr" || results_write_failed "the state folder"
    manifest_check "$RESULTS/state" "was prepared with" state="$STATE_USED" \
        target="$TARGET_PATH" region_bytes="$REGION_BYTES"
}

# A short sequential write at the start of the region: its MB/s, remembered for later plans.
measure_write_speed() {
    local out="$TK_TMP/speed.json" reply iops
    still_safe_to_write
    run_fio "$TK_TMP/speed.stderr" --name=speed --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=write --bs=1m --iodepth=16 --ioengine="$ENGINE_DEEP" \
        --direct="$DIRECT" --time_based --runtime="$SPEED_PROBE_S" --output-format=json \
        --output="$out" >/dev/null || return 0
    reply=$(service_ask probe-cost "$out")
    [[ $reply == ok$'\t'* ]] || return 0
    iops=${reply#ok$'\t'} iops=${iops%%$'\t'*}
    remember_tree_choice write_speed $((iops * 1048576 / 1000000))
}

# The purge (resolve_purge chose it), then its check: sampled blocks read back as purged, the
# namespace's utilization fell (NVMe); both recorded in RESULTS/state/purge.json with the method,
# the device and its serial. A purge the check cannot confirm is said so, and the run goes on: the
# state line carries it.
purge_region() {
    info "state: purge: $PURGE_WHAT"
    purge_and_check "$RESULTS/state/purge.json"
    step_set "$RESULTS/state" purge "$(printf '%s: %s (%s): %s at %(%F %T)T' "$TARGET_PATH" \
        "$PURGE_METHOD" "$PURGE_WHAT" "$PURGE_SUMMARY" -1)"
}

# The purge (PURGE_CMD) and its check, recorded in RECORD; PURGE_SUMMARY says what the check
# found (the state's purge, and the pts profile's before each test: lib/pts.bash).
purge_and_check() { # RECORD
    local nuse="" reply
    still_safe_to_write
    if [[ $TARGET_KIND == block ]]; then
        reply=$(service_ask purge-fill "$TARGET_PATH")
        [[ $reply != ok$'\t'* ]] || nuse=${reply#ok$'\t'} nuse=${nuse%% *}
    fi
    "${PURGE_CMD[@]}" >"$TK_TMP/purge.out" 2>"$TK_TMP/purge.stderr" ||
        die "$EXIT_FAIL" "purging $TARGET_PATH failed ($PURGE_METHOD: ${PURGE_CMD[*]}): $(head -n 1 "$TK_TMP/purge.stderr"); choose another --purge, or --state as-is"
    [[ $PURGE_METHOD != sanitize ]] || tk_python purge wait "$TARGET_PATH" ||
        die "$EXIT_FAIL" "the sanitize of $TARGET_PATH did not complete (see above)"
    reply=$(service_ask purge-check "$TARGET_PATH" "$PURGE_METHOD" "$REGION_BYTES" "$1" "$nuse")
    PURGE_SUMMARY=${reply#*$'\t'}
    case $reply in
        ok$'\t'*) info "purge checked: $PURGE_SUMMARY" ;;
        unverified$'\t'*) warn "purge: $PURGE_SUMMARY; going on, and the state line (or the PTS page) says so" ;;
        *) die "$EXIT_FAIL" "could not check the purge of $TARGET_PATH: $PURGE_SUMMARY" ;;
    esac
}

# The region written LOOPS times in 128 KiB sequential writes of random data, QD 32: the purged
# state's single pass, or SNIA's workload-independent preconditioning (twice).
write_region_sequentially() { # LOOPS STEP
    local bytes=$(($1 * REGION_BYTES))
    info "state: writing $(human_bytes "$bytes") of $TARGET_PATH sequentially ($1 x the region), $(write_time_text "$bytes")"
    still_safe_to_write
    run_fio "$RESULTS/state/$2.stderr" --name="$2" --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=write --bs=128k --iodepth=32 --ioengine="$ENGINE_DEEP" \
        --direct="$DIRECT" --loops="$1" --refill_buffers=0 --scramble_buffers=1 --end_fsync=1 \
        --output-format=json --output="$RESULTS/state/$2.json" ||
        die "$EXIT_FAIL" "writing the region for --state $STATE_USED failed (see $RESULTS/state/$2.stderr); rerun the same command to start that step again"
    LAST_WRITE_END_MS=$(now_ms)
    step_set "$RESULTS/state" "$2" "$(printf '%s: %s bytes written sequentially (%s x the region) at %(%F %T)T' \
        "$TARGET_PATH" "$bytes" "$1" -1)"
}

# Once per results tree, before its first section measures: the purge and the sequential writes
# of the state. Every section of the tree then finds its region written (its prefill).
prepare_state() {
    [[ $STATE_USED != as-is ]] || return 0
    check_tree_state
    if ! state_step_done purge; then
        [[ -n $(stored_write_speed) ]] || measure_write_speed
        purge_region
    fi
    if [[ $STATE_USED == purged ]]; then
        state_step_done written || write_region_sequentially 1 written
    else
        state_step_done precondition || write_region_sequentially 2 precondition
    fi
    step_set "$RESULTS_DIR" prefill "region written by --state $STATE_USED: $(state_step_line \
        "$([[ $STATE_USED == purged ]] && echo written || echo precondition)")"
}

track_workload() { # "4 KiB random writes at QD 32", from STEADY_OPTS
    local opt rw="" bs="" qd=1
    for opt in $STEADY_OPTS; do
        case $opt in
            rw=*) rw=${opt#rw=} ;;
            bs=*) bs=${opt#bs=} ;;
            iodepth=*) qd=${opt#iodepth=} ;;
        esac
    done
    bs=${bs^^}
    printf '%s KiB %s writes at QD %s' "${bs%K}" "$([[ $rw == rand* ]] && echo random || echo sequential)" "$qd"
}

track_label() { # what the rounds track, for the plan
    case $STEADY_TRACK in
        iops) printf 'IOPS' ;;
        bw) printf 'MB/s' ;;
        lat) printf 'mean latency' ;;
    esac
}

# fio's per-second log of the tracked variable, beside each round's JSON: the cliffs are searched
# in it (analysis/run/steady_rounds.py).
round_log_options() { # PREFIX
    case $STEADY_TRACK in
        iops) printf '%s\n' "--write_iops_log=$1" ;;
        bw) printf '%s\n' "--write_bw_log=$1" ;;
        lat) printf '%s\n' "--write_lat_log=$1" ;;
    esac
    printf '%s\n' --log_avg_msec=1000
}

section_measured() { # every planned repetition of the section is done already
    local i k
    for i in "${!CASE_NAMES[@]}"; do
        for ((k = 1; k <= $(case_repeat "$i"); k++)); do rep_done "$i" "$k" || return 1; done
    done
}

# Sustained state, right before the section measures: rounds of STEADY_OPTS (--round seconds each,
# over the region), judged after each (analysis/run/steady_rounds.py): steady once the rounds wrote
# the region once and a 5-round window after the last lasting cliff holds, else on after up to
# MAX_ROUNDS rounds past that minimum. The rounds and the verdict stay in RESULTS/<section>/steady/
# for the snippet, with the time the last round ended (the idle time before the cases is stated).
steady_rounds() {
    [[ $STATE_USED == sustained ]] && ((STEADY_ROUNDS)) || return 0
    local dir="$RESULTS_DIR/steady" k=0 reply opt past aside
    local -a opts=() logs=()
    if [[ -e $dir ]]; then
        section_measured && return 0
        aside="$dir.$(date +%Y%m%d-%H%M%S)"
        mv -- "$dir" "$aside"
        info "state: repetitions remain to be measured: this section's rounds run again (the earlier ones kept in ${aside#"$RESULTS"/})"
    fi
    mkdir -p "$dir"
    for opt in $STEADY_OPTS; do opts+=("--$opt"); done
    while :; do
        k=$((k + 1))
        info "state: round $k: ${STEADY_OPTS}, ${ROUND_S}s"
        still_safe_to_write
        mapfile -t logs < <(round_log_options "$dir/round$k")
        run_fio "$dir/round$k.stderr" --name="steady-round$k" \
            --filename="$(fio_filename "$TARGET_PATH")" --size="$REGION_BYTES" "${opts[@]}" \
            --ioengine="$ENGINE_DEEP" --direct="$DIRECT" --time_based --runtime="$ROUND_S" \
            --randrepeat=0 --norandommap=1 --refill_buffers=0 --scramble_buffers=1 "${logs[@]}" \
            --output-format=json --output="$dir/.round$k.partial" ||
            die "$EXIT_FAIL" "steady-state round $k failed (see $dir/round$k.stderr); rerun the same command to start the rounds again"
        mv -f -- "$dir/.round$k.partial" "$dir/round$k.json"
        [[ -s $dir/round$k.stderr ]] || rm -f -- "$dir/round$k.stderr"
        reply=$(service_ask steady "$dir" "$STEADY_TRACK" "$REGION_BYTES" "$ROUND_S" \
            "$STEADY_WINDOW" "$STEADY_RANGE_PCT" "$STEADY_SLOPE_PCT")
        case ${reply%%$'\t'*} in
            steady)
                printf '%s\n' "${reply#steady$'\t'}" >"$dir/verdict"
                info "state: ${reply#steady$'\t'}"
                break
                ;;
            more)
                reply=${reply#more$'\t'} past=${reply%%$'\t'*}
                if ((past >= MAX_ROUNDS)); then
                    printf 'NOT reached: %s\n' "${reply#*$'\t'}" >"$dir/verdict"
                    warn "steady state not reached in $MAX_ROUNDS rounds past the region written once (${reply#*$'\t'}); measuring anyway, and the snippet says so"
                    break
                fi
                ;;
            *) die "$EXIT_FAIL" "could not judge the rounds in $dir: ${reply#*$'\t'}" ;;
        esac
    done
    printf '%s\n' "$EPOCHREALTIME" >"$dir/end"
    LAST_WRITE_END_MS=$(now_ms)
}

# --- the engine probe, once per results tree ---------------------------------------------------
# Probed after the state or the prefill, inside the region (a trimmed drive answers reads of
# deallocated LBAs without touching NAND), and shared by every section of the tree, so that §2
# and §5 measure the same shape with the same engine. The tree's record (run.json) holds the choice.
# A decision kept this way (the engines; io_uring's options, lib/uring.bash; the write speed) is
# a field of the tree's record, RESULTS/run.json (analysis/run/record.py), kept for one target and
# O_DIRECT setting; --fresh or another target forgets it.
# The plan asks for the write speed before the engine probe has set DIRECT: a block device (the
# only target the plan states writes for) is written with O_DIRECT unless it refuses it, so the
# speed the plan states is one recorded with O_DIRECT, or none.
stored_tree_choice() { # NAME: its fields, tab-separated, when this tree decided it for this target
    local reply
    [[ -z $FRESH ]] || return 0
    reply=$(service_ask record-get "$RESULTS" "$1" "$TARGET_PATH" "${DIRECT:-1}")
    case $reply in
        ok$'\t'*) printf '%s' "${reply#ok$'\t'}" ;;
        none) ;;
        *) die "$EXIT_FAIL" "${reply#bad$'\t'}" ;;
    esac
}

remember_tree_choice() { # NAME FIELD...
    record_change "$RESULTS" "the $1" record-set "$RESULTS" "$1" "$TARGET_PATH" "$DIRECT" "${@:2}"
}

stored_tree_engines() { stored_tree_choice engines; } # "QD1<TAB>DEEP<TAB>note"
remember_tree_engines() { remember_tree_choice engines "$ENGINE_QD1" "$ENGINE_DEEP" "$ENGINE_NOTE"; }
