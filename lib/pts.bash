# shellcheck shell=bash
# lib/pts.bash: the pts profile (--profile pts): SNIA PTS 2.0's tests in place of a section's own
# cases. Which section runs which test, its access patterns, tracking variables and the device
# classes are data, lib/pts.tsv (analysis/core/pts.py reads the same file). Each test:
#
#   1. its own purge (--purge, analysis/device/purge.py): PTS asks for Format NVM or Sanitize; a
#      target purged otherwise (discard, a file's punched holes) runs "PTS-like, not conformant";
#   2. workload-independent preconditioning: 2x the region in 128 KiB sequential writes;
#   3. rounds: one fio run per round, each case one stonewalled job of --round seconds over the
#      active range (the class's share of the region), in PTS's order; after each round the run
#      loop's helper judges them (analysis/run/pts_rounds.py): the tracking variables steady
#      together in SNIA's 5-round window, at most --max-rounds rounds; WSAT until 4x the active
#      range is written.
#
# HIR (host idle recovery, --pts-hir) is the exception: no purge, no preconditioning, no rounds.
# It runs on the drive WSAT left, one fio run per wait state (pts_run_hir).
#
# Everything lands in RESULTS/<section>/pts/<test>/: purge.json, precondition.json,
# round<k>.json, conditions.tsv (the test's conditions, for the page's header) and verdict (HIR:
# wait<W>.json and its per-second logs). A rerun resumes where it stopped: a finished step is not
# redone, the rounds go on from the next one, a finished wait state is not run again.
# The pages: analysis/sections/pts_page.py. Sourced by lib/run.bash (and report.bash, for which
# sections have a test); never run on its own.
# shellcheck disable=SC2034  # PURGE_* are shared with lib/state.bash's helpers

# The data lines of lib/pts.tsv of one kind.
pts_rows() { registry_rows "$TK_ROOT/lib/pts.tsv" | awk -F'\t' -v k="$1" '$1 == k'; }

pts_tests_of() { # SECTION CLASS: the tests the section runs for the class, in the file's order
    # a waits test (HIR) is optional in PTS: run only when --pts-hir asks for it
    pts_rows test | awk -F'\t' -v s="$1" -v c="$2" -v hir="${PTS_HIR:-}" \
        '$3 == s && index("," $4 ",", "," c ",") && ($5 !~ /^waits:/ || hir != "") { print $2 }'
}

pts_waits_test() { [[ $(pts_test_field "$1" 5) == waits:* ]]; } # TEST: HIR, no rounds

pts_test_field() { # TEST N: field N (1-based) of the test's line
    pts_rows test | awk -F'\t' -v t="$1" -v n="$2" '$2 == t { print $n }'
}

pts_class_field() { # CLASS N
    pts_rows class | awk -F'\t' -v c="$1" -v n="$2" '$2 == c { print $n }'
}

# The cases a round of TEST runs, one a line: NAME RW READ% BS, tab-separated; those smaller than
# the target's logical block (PTS_LBS) are left out (PTS_SKIPPED says which).
pts_cases() { # TEST
    local name rw read bs track reduced
    while IFS=$'\t' read -r _ _ name rw read bs track reduced; do
        [[ $PTS_MATRIX == full || $reduced == yes ]] || continue
        (($(size_bytes "$bs") >= PTS_LBS)) || continue
        printf '%s\t%s\t%s\t%s\n' "$name" "$rw" "$read" "$bs"
    done < <(pts_rows case | awk -F'\t' -v t="$1" '$2 == t')
}

pts_skipped_cases() { # TEST: the cases left out for the logical block, space-separated
    pts_rows case | awk -F'\t' -v t="$1" '$2 == t { print $3 "\t" $6 }' |
        while IFS=$'\t' read -r name bs; do
            (($(size_bytes "$bs") >= PTS_LBS)) || printf '%s ' "$name"
        done
}

pts_case_count() { pts_cases "$1" | wc -l; } # TEST

# Whether --pts-matrix reduced leaves out any of TEST's access patterns (Latency and Throughput
# keep all theirs).
pts_reduced() { # TEST
    [[ $PTS_MATRIX != full ]] &&
        pts_rows case | awk -F'\t' -v t="$1" '$2 == t && $8 != "yes" { found = 1 } END { exit !found }'
}

# What makes this run (or TEST in it) not conformant, one reason a line ("" when conformant).
pts_deviations() { # [TEST]
    local test reduced="" hir=""
    # shellcheck disable=SC2153  # ROUND_S: lib/options.tsv's --round
    ((ROUND_S >= 60)) || echo "rounds of ${ROUND_S} s, shorter than PTS's 60 s"
    for test in "${@:-${PTS_TESTS[@]}}"; do pts_waits_test "$test" && hir=$test; done
    [[ -z $hir ]] || pts_hir_deviations "$hir"
    [[ $PURGE_METHOD == format || $PURGE_METHOD == sanitize ]] ||
        echo "purged by ${PURGE_METHOD:-nothing} ($PURGE_WHAT), not PTS's Format NVM or Sanitize"
    for test in "${@:-${PTS_TESTS[@]}}"; do pts_reduced "$test" && reduced=1; done
    [[ -z $reduced ]] || echo "the reduced matrix (--pts-matrix reduced), not PTS's"
    [[ $DIRECT == 1 ]] || echo "buffered I/O (O_DIRECT refused)"
    pts_cache_deviation
    return 0
}

# The device's volatile write cache as the kernel reports it (sysfs: write back | write through).
pts_write_cache() {
    local sys
    [[ $TARGET_KIND == block ]] || { echo "a file: its filesystem's page cache is bypassed (O_DIRECT), the device's is not known" && return 0; }
    if sys=$(target_disk_sysfs) && [[ -r $sys/queue/write_cache ]]; then
        cat "$sys/queue/write_cache"
    else
        echo "not reported"
    fi
}

pts_nvme_namespace() { # whether the target is a whole NVMe namespace, whose cache the toolkit sets
    [[ $TARGET_KIND == block && $(basename "$(readlink -f "$TARGET_PATH")") =~ ^nvme[0-9]+n[0-9]+$ ]]
}

# The write cache the class asks for (enabled | disabled): set on a whole NVMe namespace for the
# run (analysis/device/write_cache.py: Feature 06h, not saved) and set back when the run ends
# (section_on_exit), the state found kept in pts/write_cache.json; elsewhere stated, not changed,
# and a deviation where the device reports another. PTS_CACHE_REFUSED: why the drive kept its own.
PTS_CACHE_RECORD="" PTS_CACHE_REFUSED=""
pts_set_write_cache() {
    local want rc=0
    want=$(pts_class_field "$PTS_CLASS" 3)
    pts_nvme_namespace || return 0
    PTS_CACHE_RECORD="$RESULTS_DIR/pts/write_cache.json"
    tk_python write-cache "$TARGET_PATH" "$([[ $want == enabled ]] && echo on || echo off)" \
        --record "$PTS_CACHE_RECORD" >/dev/null 2>"$TK_TMP/write-cache.err" || rc=$?
    if ((rc == 0)); then
        info "pts: write cache: $(tk_python write-cache --describe "$PTS_CACHE_RECORD")"
    else
        PTS_CACHE_REFUSED=$(<"$TK_TMP/write-cache.err") PTS_CACHE_RECORD=""
        PTS_CACHE_REFUSED=${PTS_CACHE_REFUSED#write-cache: }
        warn "the write cache stays as the drive has it: $PTS_CACHE_REFUSED; the run is not conformant"
    fi
}

section_on_exit() { # the write cache as the run found it (lib/loop.bash, on_exit)
    [[ -n $PTS_CACHE_RECORD && -e $PTS_CACHE_RECORD ]] || return 0
    tk_python write-cache "$TARGET_PATH" --restore "$PTS_CACHE_RECORD" >/dev/null ||
        warn "the write cache could not be set back as the run found it (see above; $PTS_CACHE_RECORD has it); a power cycle restores the drive's own"
}

pts_write_cache_text() { # what the run does with the write cache, for the plan and the page
    local want
    want=$(pts_class_field "$PTS_CLASS" 3)
    if [[ -n $PTS_CACHE_RECORD && -e $PTS_CACHE_RECORD ]]; then
        tk_python write-cache --describe "$PTS_CACHE_RECORD"
    elif pts_nvme_namespace && [[ -z $PTS_CACHE_REFUSED ]]; then
        echo "set $want for the run (NVMe Feature 06h, not saved) and set back when it ends"
    else
        echo "the class asks it $want; the device reports: $(pts_write_cache) (not changed)"
    fi
}

pts_cache_deviation() { # the write cache's part of pts_deviations
    local want state
    want=$(pts_class_field "$PTS_CLASS" 3)
    if [[ -n $PTS_CACHE_REFUSED ]]; then
        echo "the write cache is not $want: $PTS_CACHE_REFUSED"
        return 0
    fi
    pts_nvme_namespace && return 0
    state=$(pts_write_cache)
    case $state in
        "write back") [[ $want == enabled ]] || echo "the write cache is enabled (write back), where $(pts_class_field "$PTS_CLASS" 8) asks it disabled: the toolkit sets an NVMe drive's only" ;;
        "write through") [[ $want == disabled ]] || echo "the write cache is disabled (write through), where $(pts_class_field "$PTS_CLASS" 8) asks it enabled: the toolkit sets an NVMe drive's only" ;;
        *) echo "the write cache, which $(pts_class_field "$PTS_CLASS" 8) asks $want, is not known: $state" ;;
    esac
}

# --- HIR: host idle recovery (--pts-hir) ---------------------------------------------------------
# Fewer cycles than this and a wait state's mean has no interval worth quoting (t over 2 cycles).
HIR_MIN_CYCLES=3

# The wait states --pts-hir asks for, one a line: WAIT_S CYCLES WRITE_S BASELINE_S, tab-separated.
# CYCLES and BASELINE_S are PTS's at 60 s rounds and in proportion to --round under them (at least
# HIR_MIN_CYCLES cycles): a smoke test shortens how long each wait state lasts, never the write
# segment or the wait, which are what HIR measures.
pts_waits() { # TEST
    local wait cycles write baseline
    while IFS=$'\t' read -r _ _ wait cycles write baseline _ _; do
        [[ $PTS_HIR == pts || ,$PTS_HIR, == *,$wait,* ]] || continue
        cycles=$((cycles * ROUND_S / 60))
        ((cycles >= HIR_MIN_CYCLES)) || cycles=$HIR_MIN_CYCLES
        printf '%s\t%s\t%s\t%s\n' "$wait" "$cycles" "$write" $((baseline * ROUND_S / 60))
    done < <(pts_rows wait | awk -F'\t' -v t="$1" '$2 == t')
}

# The cycles job's length: fio 3.33 writes for thinktime_iotime + thinktime before its first
# pause (later versions for thinktime_iotime alone), so one lead segment of WRITE_S + WAIT_S
# comes first (it continues the writes without a pause before it and is not a cycle), and WAIT_S
# more at the end absorb the pauses' drift (each waits for the I/Os in flight) so the last cycle
# is whole.
pts_cycles_seconds() { echo $((($2 + 1) * ($1 + $3) + $1)); } # WAIT CYCLES WRITE

pts_wait_seconds() { echo $(($4 + $(pts_cycles_seconds "$1" "$2" "$3"))); } # WAIT CYCLES WRITE BASELINE

# --pts-hir: pts or wait states of lib/pts.tsv, enterprise only (PTS-E's optional test).
pts_check_hir() {
    [[ -n $PTS_HIR ]] || return 0
    local known wait
    known=$(pts_rows wait | cut -f3 | paste -sd, -)
    [[ $PTS_CLASS == enterprise ]] ||
        die "$EXIT_USAGE" "--pts-hir: host idle recovery is PTS-E's test (--pts enterprise), not $PTS_CLASS's"
    [[ $PTS_HIR == pts ]] && return 0
    split_list PTS_HIR "$PTS_HIR"
    for wait in "${LIST_ITEMS[@]}"; do
        [[ ,$known, == *,$wait,* ]] ||
            die "$EXIT_USAGE" "--pts-hir: $wait is not one of PTS's wait states ($known s), nor pts for all of them"
    done
}

pts_hir_deviations() { # TEST
    local all chosen resumed
    all=$(pts_rows wait | awk -F'\t' -v t="$1" '$2 == t' | wc -l)
    chosen=$(pts_waits "$1" | wc -l)
    ((chosen == all)) || echo "HIR runs $chosen of PTS's $all wait states (--pts-hir $PTS_HIR)"
    resumed=$(awk -F'\t' '$1 == "resumed" && $2 == 1 { sub(/.*wait/, "", FILENAME); sub(/\.tsv$/, " s", FILENAME); print FILENAME }' \
        "$RESULTS_DIR/pts/$1"/wait*.tsv 2>/dev/null | paste -sd, -)
    [[ -z $resumed ]] || echo "HIR's wait state(s) $resumed did not follow the writes before them (a resumed run): a return to steady state ran first"
}

# HIR_WARM: the drive has just been written without a pause by this run (the test HIR follows,
# or HIR's previous wait state), so the next wait state starts from steady state as PTS's do;
# otherwise (a rerun that resumes, HIR asked for after WSAT finished) it has idled since, and a
# return to steady state runs first.
HIR_WARM=""

# One wait state's jobfile: its cycles as one job (thinktime: WAIT s idle after every WRITE s of
# writes), then BASELINE_S of writes without a pause (PTS's return to steady state before the
# next wait state); after a pause of the run, the same return first. Each logs IOPS per second.
pts_hir_jobfile() { # TEST DIR WAIT CYCLES WRITE BASELINE RESUMED
    local name rw bs
    IFS=$'\t' read -r name rw _ bs < <(pts_cases "$1")
    printf '# SNIA PTS %s (%s): wait state %s s, %s cycles of %s s %s (%s), then %s s of them without a pause\n' \
        "$1" "$PTS_CLASS" "$3" "$4" "$5" "$rw" "$bs" "$6"
    printf '[global]\nfilename=%s\nsize=%s\nioengine=%s\ndirect=%s\n' "$(fio_filename "$TARGET_PATH")" \
        "$PTS_ACTIVE_BYTES" "$ENGINE_DEEP" "$DIRECT"
    printf 'rw=%s\nbs=%s\niodepth=%s\nnumjobs=%s\ngroup_reporting=1\nstonewall=1\ntime_based=1\n' \
        "$rw" "$bs" "$(pts_test_field "$1" 7)" "$(pts_test_field "$1" 6)"
    printf 'randrepeat=0\nnorandommap=1\nrefill_buffers=0\nscramble_buffers=1\nlog_avg_msec=1000\n'
    [[ -z $7 ]] || printf '\n[return]\nruntime=%s\nwrite_iops_log=%s/wait%s-return\n' "$6" "$2" "$3"
    printf '\n[cycles]\nruntime=%s\nthinktime=%ss\nthinktime_iotime=%ss\nwrite_iops_log=%s/wait%s-cycles\n' \
        "$(pts_cycles_seconds "$3" "$4" "$5")" "$3" "$5" "$2" "$3"
    printf '\n[baseline]\nruntime=%s\nwrite_iops_log=%s/wait%s-baseline\n' "$6" "$2" "$3"
}

# HIR: each wait state not yet done, on the drive WSAT left (no purge, no preconditioning).
pts_run_hir() { # TEST
    local test=$1 dir="$RESULTS_DIR/pts/$1" after wait cycles write baseline resumed s ran=()
    after=$(pts_test_field "$test" 5) && after=${after#waits:}
    [[ -e $RESULTS_DIR/pts/$after/verdict ]] ||
        die "$EXIT_FAIL" "$test runs on the drive $after left, and $after has not finished"
    [[ -e $dir/start ]] || printf '%(%F %T %z)T\n' -1 >"$dir/start"
    while IFS=$'\t' read -r wait cycles write baseline; do
        ran+=("$wait s")
        if [[ -e $dir/wait$wait.json ]]; then
            info "pts: $test wait state $wait s done already"
            continue
        fi
        resumed=1 s=$(pts_wait_seconds "$wait" "$cycles" "$write" "$baseline")
        [[ -z $HIR_WARM ]] || resumed=""
        [[ -z $resumed ]] || s=$((s + baseline))
        pts_hir_jobfile "$test" "$dir" "$wait" "$cycles" "$write" "$baseline" "$resumed" >"$dir/wait$wait.fio"
        # the wait state as run, for the analysis (the cycles it looks for in the log)
        printf 'wait_s\t%s\ncycles\t%s\nwrite_s\t%s\nbaseline_s\t%s\nresumed\t%s\n' "$wait" "$cycles" \
            "$write" "$baseline" "${resumed:-0}" >"$dir/wait$wait.tsv"
        info "pts: $test wait state $wait s: $cycles cycles of ${write} s writes and ${wait} s idle, then $baseline s back to steady state${resumed:+ (and as long before it: the drive has idled since its last writes)}: $(human_seconds "$s")"
        still_safe_to_write
        rm -f -- "$dir/wait$wait"-*.log # an interrupted run's, rewritten whole
        run_fio "$dir/wait$wait.stderr" "$dir/wait$wait.fio" --output-format=json \
            --output="$dir/.wait$wait.partial" ||
            die "$EXIT_FAIL" "$test wait state $wait s failed (see $dir/wait$wait.stderr); rerun the same command to run it again"
        mv -f -- "$dir/.wait$wait.partial" "$dir/wait$wait.json"
        [[ -s $dir/wait$wait.stderr ]] || rm -f -- "$dir/wait$wait.stderr"
        HIR_WARM=1
    done < <(pts_waits "$test")
    pts_conditions "$dir" "$test" # its deviations now name the wait states that were resumed
    local IFS=,
    printf 'wait states %s done\n' "${ran[*]}" >"$dir/verdict"
    printf '%(%F %T %z)T\n' -1 >"$dir/end"
    info "pts: $test finished: $(cat "$dir/verdict")"
}

# --- the section under --profile pts ----------------------------------------------------------
pts_section_main() {
    pts_check_hir
    mapfile -t PTS_TESTS < <(pts_tests_of "$SECTION" "$PTS_CLASS")
    ((${#PTS_TESTS[@]})) || die "$EXIT_USAGE" "SNIA PTS has no $PTS_CLASS test in §$SECTION_NUMBER ($SECTION_TITLE): the pts profile runs $(pts_rows test | cut -f3 | sort -u | tr '\n' ' ')"
    ensure_installed
    require_tools fio
    [[ -z $HOSTS ]] || die "$EXIT_USAGE" "--profile pts purges and preconditions its target before each test; run it on each host, not on a fleet (--hosts)"
    resolve_target
    check_io_alignment
    cd "$TK_ROOT" || exit "$EXIT_FAIL"
    RESULTS_DIR="$RESULTS/$SECTION"
    PTS_LBS=512
    [[ $TARGET_KIND != block ]] || PTS_LBS=$(blockdev --getss "$TARGET_PATH")
    PTS_ACTIVE_PCT=$(pts_class_field "$PTS_CLASS" 4)
    # the active range: the class's share of the region, in whole MiB
    PTS_ACTIVE_BYTES=$((REGION_BYTES * PTS_ACTIVE_PCT / 100 >> 20 << 20))
    service_start
    PURGE_METHOD="" PURGE_WHAT="" PURGE_CMD=()
    plan_purge
    DIRECT=${DIRECT:-1}
    if [[ -n $DRY_RUN ]]; then
        pts_plan
        exit "$EXIT_OK"
    fi
    if [[ $TARGET_KIND == block ]]; then
        local reason
        reason=$(service_ask safety "$TARGET_PATH" "$DESTROY")
        [[ $reason == ok ]] || die "$EXIT_UNSAFE" "${reason#refused$'\t'}. The pts profile writes: each test's purge, 2 x the region sequentially, then its rounds."
    fi
    start_run
    [[ -n $(stored_write_speed) ]] || measure_write_speed
    pts_plan
    [[ -z $FRESH ]] || move_results_aside
    section_folder_removed "$RESULTS_DIR"
    mkdir -p "$RESULTS_DIR/pts"
    manifest_check "$RESULTS_DIR" "" section="$SECTION" target="$TARGET_PATH" \
        target_kind="$TARGET_KIND" profile=pts pts_class="$PTS_CLASS" pts_matrix="$PTS_MATRIX" \
        round_s="$ROUND_S" max_rounds="$MAX_ROUNDS" region_bytes="$REGION_BYTES" \
        target_bytes="$TARGET_BYTES" purge="$PURGE_METHOD" engine="$ENGINE_DEEP" direct="$DIRECT" \
        cases="" tests="$(pts_manifest_tests)"
    pts_set_write_cache
    local test
    for test in "${PTS_TESTS[@]}"; do pts_run_test "$test"; done
    info ""
    if [[ -n ${TK_ANALYSIS_ELSEWHERE:-} ]]; then
        info "analysis left to the caller (TK_ANALYSIS_ELSEWHERE): python -m analysis $SECTION --results $RESULTS"
    else
        tk_python "$SECTION" || die "$EXIT_FAIL" "the analysis of $RESULTS_DIR failed (see above); the raw results are kept"
    fi
}

# The tests a rerun must match: HIR left out, so that it can be asked for on a tree whose WSAT
# has finished (it runs on the drive WSAT left) and its wait states added one run at a time.
pts_manifest_tests() {
    local test out=()
    for test in "${PTS_TESTS[@]}"; do pts_waits_test "$test" || out+=("$test"); done
    echo "${out[*]}"
}

pts_hir_plan() { # TEST: the plan's lines for HIR; sets HIR_PLAN_S
    local wait cycles write baseline s writing=0
    HIR_PLAN_S=0
    info "           after $(pts_test_field "$(pts_test_field "$1" 5 | cut -d: -f2)" 8), on the drive it left: no purge, no preconditioning; each wait state $(pts_test_field "$1" 6) thread x QD $(pts_test_field "$1" 7)"
    while IFS=$'\t' read -r wait cycles write baseline; do
        s=$(pts_wait_seconds "$wait" "$cycles" "$write" "$baseline")
        HIR_PLAN_S=$((HIR_PLAN_S + s))
        # writing: the baseline, the lead segment (pts_cycles_seconds) and the cycles' segments
        writing=$((writing + baseline + write + wait + cycles * write))
        info "           wait ${wait}s: $cycles cycles of ${write} s writes and ${wait} s idle, then ${baseline} s back to steady state: $(human_seconds "$s")"
    done < <(pts_waits "$1")
    info "           (a wait state that does not follow writes of this run, as when resumed, gets its return to steady state before it too)"
    # its bytes: the writing time at the 4 KiB random-write rate WSAT leaves, known only then
    info "           $(human_seconds "$HIR_PLAN_S") in all, $(human_seconds "$writing") of it writing at the rate WSAT leaves the drive at (its bytes, not known before WSAT, are not in the sum below)"
}

# The plan: per test, what it writes and how long it takes, before anything starts.
pts_plan() {
    local test n round_s min_s max_s written speed deviations total_min=0 total_max=0 bytes=0
    speed=$(stored_write_speed)
    info "§$SECTION_NUMBER $SECTION_TITLE: plan (SNIA PTS 2.0, $(pts_class_field "$PTS_CLASS" 8))"
    info "  target   $TARGET_PATH ($TARGET_KIND), region $(human_bytes "$REGION_BYTES"), active range $PTS_ACTIVE_PCT%: $(human_bytes "$PTS_ACTIVE_BYTES")"
    info "  purge    before each test: ${PURGE_WHAT:-none} (--purge $PURGE)"
    info "  cache    $(pts_write_cache_text)"
    for test in "${PTS_TESTS[@]}"; do
        n=$(pts_case_count "$test")
        round_s=$((n * ROUND_S))
        if pts_waits_test "$test"; then
            info "  test     $(pts_test_field "$test" 8): $(pts_waits "$test" | wc -l) wait states (--pts-hir $PTS_HIR)"
            pts_hir_plan "$test"
            total_min=$((total_min + HIR_PLAN_S)) total_max=$((total_max + HIR_PLAN_S))
            continue
        fi
        info "  test     $(pts_test_field "$test" 8): $n access patterns of ${ROUND_S}s a round ($(human_seconds "$round_s")), $(pts_test_field "$test" 6) thread(s) x QD $(pts_test_field "$test" 7)"
        if [[ $(pts_test_field "$test" 5) != written:* ]]; then
            written=$((2 * REGION_BYTES))
            bytes=$((bytes + written))
            info "           writes $(human_bytes "$written") preconditioning (128 KiB sequential, 2 x the region), $(write_time_text "$written")"
        fi
        if [[ $(pts_test_field "$test" 5) == written:* ]]; then
            local times
            times=$(pts_test_field "$test" 5) && times=${times#written:}
            info "           then rounds until $times x the active range ($(human_bytes $((times * PTS_ACTIVE_BYTES)))) is written, $(write_time_text $((times * PTS_ACTIVE_BYTES)))"
            bytes=$((bytes + times * PTS_ACTIVE_BYTES))
        else
            min_s=$((5 * round_s)) max_s=$((MAX_ROUNDS * round_s))
            total_min=$((total_min + min_s)) total_max=$((total_max + max_s))
            info "           then rounds until its tracking variables are steady together: 5 to $MAX_ROUNDS rounds, $(human_seconds "$min_s") to $(human_seconds "$max_s")"
        fi
        [[ -z $(pts_skipped_cases "$test") ]] ||
            info "           left out (smaller than the $PTS_LBS B logical block): $(pts_skipped_cases "$test")"
    done
    info "  in all   $(human_bytes "$bytes") of preconditioning and saturation writes; rounds $(human_seconds "$total_min") to $(human_seconds "$total_max") besides"
    deviations=$(pts_deviations)
    if [[ -n $deviations ]]; then
        info "  PTS-like, NOT conformant:"
        while IFS= read -r line; do info "           $line"; done <<<"$deviations"
    fi
    [[ -z ${TK_PLAN_WRITES:-} ]] ||
        printf '%s\t0\t%s\t%s\t%s\t%s\n' "$SECTION" "$bytes" "$total_max" "${speed:-0}" "$TARGET_BYTES" >>"$TK_PLAN_WRITES"
}

pts_conditions() { # DIR TEST: the test's conditions, for the header of its page
    local deviations
    deviations=$(pts_deviations "$2" | paste -sd ';' -)
    {
        printf 'test\t%s\n' "$2"
        printf 'class\t%s\n' "$PTS_CLASS"
        printf 'device\t%s (%s, %s)\n' "$TARGET_PATH" "$TARGET_KIND" "$(human_bytes "$TARGET_BYTES")"
        if pts_waits_test "$2"; then
            printf 'purge\tnone: it runs on the drive %s left (purged before it: %s)\n' \
                "$(pts_test_field "$(pts_test_field "$2" 5 | cut -d: -f2)" 8)" "${PURGE_WHAT:-none}"
        else
            printf 'purge\t%s\n' "${PURGE_WHAT:-none}"
        fi
        printf 'purge_method\t%s\n' "${PURGE_METHOD:-none}"
        if pts_waits_test "$2"; then
            printf 'preconditioning\tnone: the drive as %s left it, brought back to steady state after each wait state\n' \
                "$(pts_test_field "$(pts_test_field "$2" 5 | cut -d: -f2)" 8)"
        elif [[ $(pts_test_field "$2" 5) == written:* ]]; then
            printf 'preconditioning\tnone: WSAT starts from the purged drive\n'
        else
            printf 'preconditioning\t%s of 128 KiB sequential writes at QD 32 (2 x the region)\n' "$(human_bytes $((2 * REGION_BYTES)))"
        fi
        printf 'active_range\t%s%% (%s of %s)\n' "$PTS_ACTIVE_PCT" "$(human_bytes "$PTS_ACTIVE_BYTES")" "$(human_bytes "$REGION_BYTES")"
        printf 'outstanding\tT%sQ%s (threads x queue depth per thread)\n' "$(pts_test_field "$2" 6)" "$(pts_test_field "$2" 7)"
        printf 'data_pattern\trandom (fio scramble_buffers: each block written differs)\n'
        printf 'write_cache\t%s\n' "$(pts_write_cache_text)"
        printf 'engine\t%s, direct=%s\n' "$ENGINE_DEEP" "$DIRECT"
        printf 'round_s\t%s\n' "$ROUND_S"
        printf 'max_rounds\t%s\n' "$MAX_ROUNDS"
        printf 'matrix\t%s\n' "$PTS_MATRIX"
        printf 'skipped\t%s\n' "$(pts_skipped_cases "$2")"
        printf 'deviations\t%s\n' "$deviations"
    } >"$1/conditions.tsv"
}

# One round's jobfile: the cases in PTS's order, one stonewalled job each.
pts_jobfile() { # TEST
    local name rw read bs
    printf '# SNIA PTS %s (%s, %s matrix): one round, each access pattern %s s\n' "$1" "$PTS_CLASS" "$PTS_MATRIX" "$ROUND_S"
    printf '[global]\nfilename=%s\nsize=%s\nioengine=%s\ndirect=%s\n' "$(fio_filename "$TARGET_PATH")" \
        "$PTS_ACTIVE_BYTES" "$ENGINE_DEEP" "$DIRECT"
    printf 'time_based=1\nruntime=%s\niodepth=%s\nnumjobs=%s\ngroup_reporting=1\nstonewall=1\n' \
        "$ROUND_S" "$(pts_test_field "$1" 7)" "$(pts_test_field "$1" 6)"
    printf 'randrepeat=0\nnorandommap=1\nrefill_buffers=0\nscramble_buffers=1\n'
    while IFS=$'\t' read -r name rw read bs; do
        printf '\n[%s]\nrw=%s\nbs=%s\n' "$name" "$rw" "$bs"
        [[ $rw != randrw ]] || printf 'rwmixread=%s\n' "$read"
    done < <(pts_cases "$1")
}

pts_purge() { # DIR
    info "pts: purge: $PURGE_WHAT"
    purge_and_check "$1/purge.json"
}

pts_precondition() { # DIR
    info "pts: preconditioning: $(human_bytes $((2 * REGION_BYTES))) of 128 KiB sequential writes, $(write_time_text $((2 * REGION_BYTES)))"
    still_safe_to_write
    run_fio "$1/precondition.stderr" --name=precondition --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=write --bs=128k --iodepth=32 --ioengine="$ENGINE_DEEP" \
        --direct="$DIRECT" --loops=2 --refill_buffers=0 --scramble_buffers=1 --end_fsync=1 \
        --output-format=json --output="$1/.precondition.partial" ||
        die "$EXIT_FAIL" "the preconditioning failed (see $1/precondition.stderr); rerun the same command to start it again"
    mv -f -- "$1/.precondition.partial" "$1/precondition.json"
    rm -f -- "$1/precondition.stderr"
}

# A test: its purge and preconditioning (unless done), then its rounds from the next one.
pts_run_test() { # TEST
    local test=$1 dir="$RESULTS_DIR/pts/$1" k reply state started took left
    mkdir -p "$dir"
    if pts_waits_test "$test"; then
        pts_conditions "$dir" "$test"
        pts_run_hir "$test"
        return 0
    fi
    if [[ -e $dir/verdict ]]; then
        info "pts: $test done already: $(cat "$dir/verdict")"
        return 0
    fi
    pts_conditions "$dir" "$test"
    pts_jobfile "$test" >"$dir/round.fio"
    [[ -e $dir/start ]] || printf '%(%F %T %z)T\n' -1 >"$dir/start"
    [[ -e $dir/purge.json ]] || pts_purge "$dir"
    # WSAT starts from the purged drive (fresh out of the box): no preconditioning before it
    [[ -e $dir/precondition.json || $(pts_test_field "$test" 5) == written:* ]] || pts_precondition "$dir"
    k=$(find "$dir" -maxdepth 1 -name 'round*.json' | wc -l)
    ((k == 0)) || info "pts: $test resumes after round $k"
    while :; do
        k=$((k + 1))
        info "pts: $test round $k: $(pts_case_count "$test") access patterns of ${ROUND_S}s"
        still_safe_to_write
        started=$EPOCHSECONDS
        run_fio "$dir/round$k.stderr" "$dir/round.fio" --output-format=json+ \
            --output="$dir/.round$k.partial" ||
            die "$EXIT_FAIL" "$test round $k failed (see $dir/round$k.stderr); rerun the same command to go on from it"
        mv -f -- "$dir/.round$k.partial" "$dir/round$k.json"
        HIR_WARM=1
        [[ -s $dir/round$k.stderr ]] || rm -f -- "$dir/round$k.stderr"
        reply=$(service_ask pts-steady "$dir" "$test" "$ROUND_S" "$MAX_ROUNDS" "$PTS_ACTIVE_BYTES")
        state=${reply%%$'\t'*}
        if ((k == 1)); then
            took=$((EPOCHSECONDS - started))
            [[ $(pts_test_field "$test" 5) == written:* ]] ||
                info "pts: a round takes ${took}s: this test ends in $(human_seconds $((4 * took))) at the soonest (5 rounds), $(human_seconds $(((MAX_ROUNDS - 1) * took))) at the latest"
        fi
        case $state in
            steady | stop)
                printf '%s\n' "${reply#*$'\t'}" >"$dir/verdict"
                info "pts: $test: ${reply#*$'\t'}"
                break
                ;;
            more) info "pts: $test: ${reply#*$'\t'}" ;;
            *) die "$EXIT_FAIL" "could not judge $test's rounds in $dir: ${reply#*$'\t'}" ;;
        esac
    done
    printf '%(%F %T %z)T\n' -1 >"$dir/end"
    left=""
    [[ $state == steady ]] || [[ $(pts_test_field "$test" 5) == written:* ]] ||
        left=" (not steady: the page says so)"
    info "pts: $test finished$left"
}
