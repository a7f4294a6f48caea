# shellcheck shell=bash
# lib/plan.bash: the plan printed before anything is touched (target, region, state, cases, time,
# order, what is written), --dry-run, and the refusal of writes that --destroy does not name.
# shellcheck disable=SC2153  # ENGINE is an option's variable, set by parse_common_options
# Sourced by lib/run.bash; never run on its own.

print_plan() {
    local runs=0 ms=0 i
    info "§$SECTION_NUMBER $SECTION_TITLE: plan"
    info "  target   $TARGET_PATH ($TARGET_KIND$([[ -n $TARGET_DEFAULT ]] && echo ", the toolkit's default file"))"
    info "  region   $(region_share)${REGION_NOTE:+ ($REGION_NOTE)}"
    local misaligned
    misaligned=$(partition_misalignment)
    [[ -z $misaligned ]] || warn "$misaligned"
    state_plan_lines
    info "  profile  $PROFILE: ${RUNTIME}s after ${RAMP}s ramp, $REPEAT repetitions"
    if [[ -n ${ENGINE_NOTE:-} || $ENGINE != auto ]]; then
        info "  engine   ${ENGINE_NOTE:-$ENGINE}"
    else
        info "  engine   auto: per queue depth, the engine that costs least in short read-only probes"
        info "           (lowest mean latency at QD=1; most IOPS at QD 32 for deeper queues)"
    fi
    [[ $ENGINE != auto && $ENGINE != io_uring ]] || uring_plan_line
    for i in "${!CASE_NAMES[@]}"; do
        info "  case     ${CASE_NAMES[$i]}: ${CASE_OPTS[$i]}$(case_writes "$i" && echo "  (writes)")"
        runs=$((runs + $(case_repeat "$i")))
        ms=$((ms + $(case_repeat "$i") * $(case_ms "$i")))
    done
    ms=$((ms + $(ramp_ms)))
    info "  runs     $runs, about $(human_seconds $(((ms + 500) / 1000)))$( (($(ramp_cases))) && echo " with the ramps")"
    ramp_plan_lines
    if [[ -n $UNTIL_STABLE && $CASE_ORDER != declared && -z $HOSTS ]]; then
        local extra=0 extra_ms=0
        for i in "${!CASE_NAMES[@]}"; do
            ((MAX_REPEAT > $(case_repeat "$i"))) || continue
            extra=$((extra + MAX_REPEAT - $(case_repeat "$i")))
            extra_ms=$((extra_ms + (MAX_REPEAT - $(case_repeat "$i")) * $(case_ms "$i")))
        done
        info "  until    stable: a point not yet stable to ±$UNTIL_STABLE% (a 95% interval or a drift over its rounds wider, or a trend) gets one more repetition"
        info "           per round, up to $MAX_REPEAT in all: at most $extra more runs, $(human_seconds $(((extra_ms + 500) / 1000)))"
    fi
    plan_order
    [[ -z $NINES ]] || nines_plan_line
    if [[ -z $HOSTS && $HOST_CEILING == 0 ]]; then
        info "  ceiling  not measured (--no-host-ceiling): a point is marked host-bound by the CPUs' load alone"
    elif [[ -z $HOSTS ]]; then
        info "  ceiling  first, each case's shape on a RAM device with no media (null_blk, zram or fio's null engine): half a second each, none of it on the target"
    fi
    if declare -F section_plan_note >/dev/null; then section_plan_note; fi
    [[ $TARGET_KIND != block ]] || writes_plan_lines
    if [[ $STATE_USED != as-is ]]; then
        info "  prefill  none beyond the state's: it leaves the region written"
    elif [[ -n $TARGET_CREATE ]]; then
        info "  prefill  creates $TARGET_PATH full of random data first"
    elif [[ -n $TARGET_DEFAULT ]]; then
        info "  prefill  none needed: the default file was created full of random data"
    elif [[ -n $NO_PREFILL ]]; then
        info "  prefill  skipped (--no-prefill): reads may hit never-written space and measure nothing"
    else
        info "  prefill  writes the region once with random data before the first case"
    fi
}

# What this run would write to the block device, "" when nothing: the state, the prefill, the
# write cases. Any of it needs --destroy naming the device.
planned_writes() {
    local parts=() names=() i part out=""
    [[ $TARGET_KIND == block ]] || return 0
    parts+=("$(state_writes)")
    prefill_pending && parts+=("the prefill: the region ($(human_bytes "$REGION_BYTES")) written once with random data")
    for i in "${!CASE_NAMES[@]}"; do case_writes "$i" && names+=("${CASE_NAMES[$i]}"); done
    ((${#names[@]} == 0)) || parts+=("the write cases ${names[*]}")
    for part in "${parts[@]}"; do [[ -z $part ]] || out+="${out:+; }$part"; done
    printf '%s' "$out"
}

prefill_pending() { # the section's own prefill is still to run
    [[ -z $NO_PREFILL && $STATE_USED == as-is ]] || return 1
    [[ -n $FRESH ]] || ! step_done "$RESULTS/$SECTION" prefill
}

# WRITES_STATE: the bytes the tree's state writes first (its sequential fill, once per tree);
# WRITES_MIN: the bytes this run writes for sure, the state's included (then the rounds' minimum,
# the prefill); WRITES_TIMED_S: seconds of time-based writing on top (the rounds past their
# minimum at most, the write cases), whose bytes depend on the drive's speed.
write_estimate() {
    local i
    WRITES_STATE=0 WRITES_MIN=0 WRITES_TIMED_S=0
    [[ $TARGET_KIND == block ]] || return 0
    if [[ $STATE_USED != as-is ]] && ! state_step_done written && ! state_step_done precondition; then
        WRITES_STATE=$(state_write_bytes)
    fi
    WRITES_MIN=$WRITES_STATE
    if [[ $STATE_USED == sustained ]] && ((STEADY_ROUNDS)); then
        WRITES_MIN=$((WRITES_MIN + REGION_BYTES)) WRITES_TIMED_S=$((MAX_ROUNDS * ROUND_S))
    fi
    prefill_pending && WRITES_MIN=$((WRITES_MIN + REGION_BYTES))
    for i in "${!CASE_NAMES[@]}"; do
        case_writes "$i" || continue
        WRITES_TIMED_S=$((WRITES_TIMED_S + $(case_repeat "$i") * $(case_ms "$i") / 1000))
    done
}

# "at least 1.8 TiB, and up to 25m of time-based writes (at most 2.0 TiB at the 1200 MB/s this
# target wrote): 103% of its capacity". With TK_PLAN_WRITES (report.bash's plan of the whole
# run), the numbers also go there, a line per section.
write_estimate_text() {
    local speed
    write_estimate
    speed=$(stored_write_speed)
    [[ -z ${TK_PLAN_WRITES:-} ]] ||
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$SECTION" "$WRITES_STATE" "$WRITES_MIN" \
            "$WRITES_TIMED_S" "${speed:-0}" "$TARGET_BYTES" >>"$TK_PLAN_WRITES"
    writes_text "$WRITES_MIN" "$WRITES_TIMED_S" "${speed:-0}" "$TARGET_BYTES"
}

writes_plan_lines() { # the plan's account of what is written to the device, and whether it may be
    local writes reason
    writes=$(planned_writes)
    if [[ -z $writes ]]; then
        info "  writes   none: this run only reads $TARGET_PATH"
        [[ -z ${TK_PLAN_WRITES:-} ]] || printf '%s\t0\t0\t0\t0\t%s\n' "$SECTION" "$TARGET_BYTES" >>"$TK_PLAN_WRITES"
        return 0
    fi
    info "  writes   $writes"
    info "           in all $(write_estimate_text)"
    [[ -n $DRY_RUN ]] || return 0
    reason=$(service_ask safety "$TARGET_PATH" "$DESTROY")
    if [[ $reason == ok ]]; then
        info "           allowed: --destroy names $TARGET_PATH and nothing on it is in use"
    else
        info "           REFUSED as given: ${reason#refused$'\t'}"
    fi
}

# Nothing is written to a block device that --destroy does not name, and nothing in use at all:
# refused (exit 3) before anything is touched, saying what the run would write and how to go on.
refuse_unless_writes_allowed() {
    local writes reason hint=""
    writes=$(planned_writes)
    [[ -n $writes ]] || return 0
    reason=$(service_ask safety "$TARGET_PATH" "$DESTROY")
    [[ $reason != ok ]] || return 0
    reason=${reason#refused$'\t'}
    section_writes ||
        hint=" To only read it, add --state as-is --no-prefill (reads may then hit never-written space, which measures nothing)."
    die "$EXIT_UNSAFE" "${reason:-refusing to write to $TARGET_PATH}. This run would write: $writes.$hint"
}

dry_run() { # the plan and the jobfiles (of the first host, in a fleet run)
    local engine=$ENGINE i whose=""
    [[ $ENGINE == auto ]] && engine=io_uring
    if [[ -n $HOSTS ]]; then fleet_print_plan && whose=" of $(fleet_name 0)"; else print_plan; fi
    info ""
    info "Nothing was touched (--dry-run). Jobfiles$whose:"
    for i in "${!CASE_NAMES[@]}"; do
        printf '\n'
        [[ $ENGINE == auto ]] && printf '; ioengine auto: chosen at run time by short read-only probes (io_uring shown)\n'
        [[ $engine != io_uring ]] || ! uring_probes ||
            printf "; io_uring's options (fixedbufs, registerfiles, batching...): probed at run time (the plan says which)\n"
        render_jobfile "$i" "$engine" 1 ${HOSTS:+0}
    done
}

# The plan's order line, and the seed of this run (ORDER_SEED_USED): the one the results being
# resumed began with, else --seed, else a new one (analysis/run/order.py). A --seed that is not
# the stored one is refused here, before anything is touched.
fixed_cases() { # the cases marked @fixed=1, in declared order
    local i out=""
    for i in "${!CASE_NAMES[@]}"; do
        [[ $(case_option "$i" @fixed) != 1 ]] || out+="${out:+, }${CASE_NAMES[$i]}"
    done
    printf '%s' "${out:-none}"
}

plan_order() {
    local reply manifests=()
    mapfile -t manifests < <(order_manifests)
    reply=$(service_ask order-seed "$ORDER_SEED" "$FRESH" "${manifests[@]}")
    [[ $reply == ok$'\t'* ]] || die "$EXIT_USAGE" "${reply#bad$'\t'}"
    reply=${reply#ok$'\t'}
    ORDER_SEED_USED=${reply%%$'\t'*}
    if [[ $CASE_ORDER == declared ]]; then
        info "  order    as the section declares its cases, each case's repetitions back to back"
        return 0
    fi
    if [[ $CASE_ORDER == fixed-first ]] && (($(ramp_cases))); then
        info "  order    first the write cases, as declared, each one block (its ramp, then its repetitions): $(fixed_cases)"
        info "           then the others in rounds: repetition 1 of every case, then repetition 2...; shuffled"
    elif [[ $CASE_ORDER == fixed-first ]]; then
        info "  order    first the cases whose order is part of the method, as declared: $(fixed_cases)"
        info "           then the others in rounds: repetition 1 of every case, then repetition 2...; shuffled"
    else
        info "  order    in rounds: repetition 1 of every case, then repetition 2...; the cases shuffled"
    fi
    case ${reply#*$'\t'} in
        kept) info "           anew in each round, seed $ORDER_SEED_USED (kept: the order these results began with)" ;;
        given) info "           anew in each round, seed $ORDER_SEED_USED (given with --seed)" ;;
        *) info "           anew in each round, seed $ORDER_SEED_USED (new; --seed $ORDER_SEED_USED gives this order again)" ;;
    esac
    if declare -F section_more_cases >/dev/null; then
        info "           cases the section adds after its sweep run after all of it, in rounds of their own"
    fi
}

# --- --nines N: runs long enough to quote the Nth nine ------------------------------------------
# A percentile is quotable when at least NINES_TAIL_IOS I/Os lie above it (analysis/core/stats.py
# MIN_TAIL_IOS): p99.99 needs 100 x 10^4 I/Os of a case, its repetitions pooled. The rate is the
# target's own at QD=1 (4 KiB random reads, a read-only probe of NINES_PROBE_S on the engine the
# QD=1 cases run on), the slowest depth a section runs, so deeper cases get more I/Os than that.
readonly NINES_TAIL_IOS=100 NINES_PROBE_S=2

nines_label() { # N: "p99.99" for 4
    local n=$1 digits=""
    while ((${#digits} < n - 2)); do digits+=9; done
    printf 'p99%s' "${digits:+.$digits}"
}

nines_ios() { # N: the I/Os a case needs for NINES_TAIL_IOS above its Nth nine
    printf '%d' "$((NINES_TAIL_IOS * 10 ** $1))"
}

nines_runtime() { # NEED IOPS REPEAT FLOOR: seconds per repetition for NEED I/Os over REPEAT runs
    local per_rep=$((($1 + $2 * $3 - 1) / ($2 * $3)))
    printf '%d' "$((per_rep > $4 ? per_rep : $4))"
}

nines_plan_line() {
    info "  nines    --nines $NINES: --runtime sized for $NINES_TAIL_IOS I/Os above $(nines_label "$NINES") ($(nines_ios "$NINES") I/Os a case over its repetitions)"
    info "           at this target's QD=1 rate, probed for ${NINES_PROBE_S}s before the first case; ${RUNTIME}s at the least"
}

# Sets RUNTIME for --nines from the QD=1 probe, or keeps the runtime these results began with (a
# resumed run measures with the same runtime, an identity of the manifest).
size_runtime_for_nines() {
    [[ -n $NINES ]] || return 0
    ((NINES <= 7)) || die "$EXIT_USAGE" "NINES=$NINES: at most 7 nines (p99.99999)"
    local need reply iops per_rep
    need=$(nines_ios "$NINES")
    if [[ $(manifest_value nines) == "$NINES" ]]; then
        RUNTIME=$(manifest_value runtime)
        NINES_RATE=$(manifest_value nines_qd1_iops)
        info "nines: --runtime $RUNTIME, as these results began (--nines $NINES at $NINES_RATE IOPS at QD=1)"
        return 0
    fi
    reply=$(probe_engine_cost "$ENGINE_QD1" 1 --runtime="${NINES_PROBE_S}") ||
        die "$EXIT_FAIL" "the QD=1 probe for --nines failed on $TARGET_PATH (fio's messages: $TK_TMP/probe.stderr)"
    iops=${reply%%$'\t'*}
    ((iops > 0)) || die "$EXIT_FAIL" "the QD=1 probe for --nines did no I/O on $TARGET_PATH"
    NINES_RATE=$iops
    RUNTIME=$(nines_runtime "$need" "$iops" "$REPEAT" "$RUNTIME")
    local runs=0 i
    for i in "${!CASE_NAMES[@]}"; do runs=$((runs + $(case_repeat "$i") * $(case_ms "$i"))); done
    info "nines: $(nines_label "$NINES") needs $need I/Os a case; at $iops IOPS at QD=1 ($ENGINE_QD1, 4 KiB random read, ${NINES_PROBE_S}s)"
    info "       over $REPEAT repetitions: --runtime ${RUNTIME}s, about $(human_seconds $(((runs + 500) / 1000))) in all"
}
