# shellcheck shell=bash
# lib/run.bash: everything a section shares. The engine probe, jobfile rendering, the plan, the
# run loop (repetitions, progress and ETA, atomic result files, resume, --fresh, one run per
# target, Ctrl-C), health snapshots, and the hand-over to the analysis.
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

# Milliseconds fio itself adds to each run (start, layout, stop), measured on the lab machines;
# used only for the time estimates.
readonly FIO_RUN_OVERHEAD_MS=300
# The engine probes of `auto` (choose_engines_by_cost): each runs this long after a 100 ms ramp,
# and an engine this close to the best counts as a tie.
readonly ENGINE_PROBE_MS=400 ENGINE_TIE_PCT=5

CASE_NAMES=()
CASE_OPTS=()
URING_OPTS="" URING_NOTE="" # io_uring's options (choose_uring_options)
ANALYSIS_ARGS=()
FAILED=() # one line per repetition (or fleet host) that failed
RUN_ROUND=0 # run_all's calls so far: more than one when a section adds cases as it goes
# The order of the repetitions (analysis/run/order.py): `rounds` (repetition 1 of every case, then
# 2..., the cases shuffled in each round by the seed), or `declared` for a section whose order is
# part of its method (each case's repetitions back to back, as declared): its script sets it.
CASE_ORDER=rounds
ORDER_CASE=() ORDER_REP=() ORDER_KNOWN=0 # the order so far (case_order) and how many cases it covers
ORDER_REPS=() # per case: how many of its repetitions the order holds

# add_case NAME OPTION=VALUE...: one case of the section's matrix, in fio's own option names
# (a job-level runtime=, ramp_time= or size= overrides the profile's for this case). Options
# starting with @ are the toolkit's, never given to fio: @repeat=N runs the case N times instead
# of --repeat (a 15-minute burst is one long time series, not a sample to repeat).
# ${TK_LOG} in an option is fio's environment expansion: rep<k> in the case's results folder,
# the prefix of the logs (write_iops_log=${TK_LOG}) of the repetition being run.
add_case() {
    local name=$1
    shift
    CASE_NAMES+=("$name")
    CASE_OPTS+=("$*")
}

case_option() { # INDEX KEY: the value of a fio option in the case, empty if not set
    local opt
    for opt in ${CASE_OPTS[$1]}; do
        [[ $opt == "$2="* ]] && printf '%s' "${opt#*=}" && return 0
    done
    return 0
}

# set_case_repeat INDEX N: the case gets N repetitions in all (--until-stable adds them).
set_case_repeat() {
    local opt kept=()
    for opt in ${CASE_OPTS[$1]}; do [[ $opt == @repeat=* ]] || kept+=("$opt"); done
    CASE_OPTS[$1]="${kept[*]} @repeat=$2"
}

case_repeat() { # INDEX: how many repetitions the case gets
    local r
    r=$(case_option "$1" @repeat)
    echo "${r:-$REPEAT}"
}

case_ms() { # INDEX: planned milliseconds of one repetition (runtime, ramp, fio's own overhead)
    local runtime ramp
    runtime=$(case_option "$1" runtime)
    ramp=$(case_option "$1" ramp_time)
    echo $(((${runtime:-$RUNTIME} + ${ramp:-$RAMP}) * 1000 + FIO_RUN_OVERHEAD_MS))
}

case_writes() { # INDEX: true when the case writes (anything but a pure read pattern)
    local rw
    rw=$(case_option "$1" rw)
    [[ $rw != read && $rw != randread && -n $rw ]]
}

section_writes() {
    local i
    for i in "${!CASE_NAMES[@]}"; do case_writes "$i" && return 0; done
    return 1
}

# --- jobfiles ---------------------------------------------------------------------------------
# One [global] base shared by every case of every section, then the case's own options. A fleet
# host's jobfile (HOST given) names that host's target, has no [global] section (fio's client
# output merges the hosts' [global] options; see analysis/run/fleet.py) and starts with the server's
# check.
render_jobfile() { # INDEX ENGINE DIRECT [HOST]
    local i=$1 engine=$2 direct=$3 host=${4:-} target=$TARGET_PATH opt
    [[ -z $host ]] || target=${FLEET_TARGETS[$host]}
    printf '; %s case %s, rendered by %s (profile %s)%s\n' "$SECTION" "${CASE_NAMES[$i]}" "$TK_PROG" \
        "$PROFILE" "${host:+ for $(fleet_name "$host")}"
    if [[ -z $host ]]; then
        printf '[global]\n'
    else
        printf '[%s]\n' "${CASE_NAMES[$i]}"
        if case_writes "$i"; then fleet_prerun "$host" write; else fleet_prerun "$host" read; fi
    fi
    cat <<EOF
filename=$(fio_filename "$target")
size=$REGION_BYTES
ioengine=$engine
direct=$direct
time_based=1
runtime=$RUNTIME
ramp_time=$RAMP
; a new random offset sequence each repetition, so repetitions are independent samples
randrepeat=0
norandommap=1
invalidate=1
; write data: each buffer is filled with random data once, then scrambled before every write
; (fio writes the offset and time into every 512 bytes), so each block is incompressible and
; unique to a naive dedupe, at no cost per I/O. refill_buffers=1 (new random data before every
; write) is not used: it caps one job near 4.9 GB/s and halves QD=1 write IOPS on a fast target
; (docs/methodology.md, "Write data"). A case may override these (§6's compressibility part).
refill_buffers=0
scramble_buffers=1
group_reporting=1
; percentiles and json+ histogram bins of total latency (submission + completion)
lat_percentiles=1
EOF
    [[ -n $host ]] || printf '\n[%s]\n' "${CASE_NAMES[$i]}"
    for opt in ${CASE_OPTS[$i]}; do [[ $opt == @* ]] || printf '%s\n' "$opt"; done
    job_stripes "$i"
    [[ -n $host || $engine != io_uring ]] || uring_job_options "$i"
    [[ -n $host ]] || placement_options
}

# Several jobs of one case: sequential jobs each get a stripe of their own (size and
# offset_increment), or they would read the same offsets in near lockstep and the drive could
# serve the duplicates from its buffer; random jobs each cover the whole region.
job_stripes() { # INDEX
    local jobs rw size stripe
    jobs=$(case_option "$1" numjobs)
    ((${jobs:-1} > 1)) || return 0
    rw=$(case_option "$1" rw)
    if [[ $rw == read || $rw == write || $rw == rw || $rw == readwrite ]]; then
        size=$(case_option "$1" size)
        stripe=$(((${size:-$REGION_BYTES} / jobs) >> 20 << 20))
        printf '; %s sequential jobs, each in a disjoint stripe of %s: job k starts at k x %s\n' \
            "$jobs" "$(human_bytes "$stripe")" "$(human_bytes "$stripe")"
        printf 'size=%s\noffset_increment=%s\n' "$stripe" "$stripe"
    else
        printf '; %s random jobs, each over the whole region with its own random offsets (randrepeat=0)\n' "$jobs"
    fi
}

# --- engine -----------------------------------------------------------------------------------
# A tiny read-only job tells whether an engine (and O_DIRECT) works on this target. fio can exit 0
# while refusing a job, so the JSON is checked too. No size= on purpose: fio would lay out (write)
# a file smaller than size= before reading it; without it, fio reads the existing file or device.
probe_engine_works() { # ENGINE DIRECT
    local out="$TK_TMP/probe.json"
    run_fio "$TK_TMP/probe.stderr" --name=probe --filename="$(fio_filename "$TARGET_PATH")" \
        --rw=randread --bs=4k --io_size=256k --ioengine="$1" --direct="$2" \
        --output-format=json --output="$out" >/dev/null || return 1
    [[ $(service_ask "check-result" "$out") == ok ]]
}

# Sets ENGINE_USED and DIRECT. `auto`: io_uring when it works, else libaio. When O_DIRECT is
# refused (tmpfs, some network filesystems) the runs fall back to buffered I/O, loudly.
# choose_engine [PROBE WHERE]: PROBE ENGINE DIRECT succeeds when the engine works (default: a job
# on the local target); WHERE names what was probed (a fleet run probes every host).
# Every case then runs on ENGINE_USED (ENGINE_QD1 = ENGINE_DEEP) unless choose_engines_by_cost
# picks an engine per queue depth.
choose_engine() {
    local probe=${1:-probe_engine_works} where=${2:-$TARGET_PATH} candidates=("$ENGINE") direct
    [[ $ENGINE == auto ]] && candidates=(io_uring libaio)
    for direct in 1 0; do
        for ENGINE_USED in "${candidates[@]}"; do
            if "$probe" "$ENGINE_USED" "$direct"; then
                DIRECT=$direct
                ENGINE_QD1=$ENGINE_USED ENGINE_DEEP=$ENGINE_USED
                ENGINE_NOTE="$ENGINE_USED"
                [[ $ENGINE == auto ]] && ENGINE_NOTE="$ENGINE_USED (auto: probe job worked${2:+ on $where})"
                if ((direct == 0)); then
                    warn "O_DIRECT is refused on $where: running buffered; reads may come from the page cache and the numbers will be optimistic. Put the target on a disk filesystem or a block device."
                    ENGINE_BUFFERED=", buffered (O_DIRECT refused)"
                    ENGINE_NOTE+=$ENGINE_BUFFERED
                fi
                return 0
            fi
        done
    done
    [[ ! -s $TK_TMP/probe.stderr ]] || cat "$TK_TMP/probe.stderr" >&2
    die "$EXIT_FAIL" "no I/O engine works on $where (tried ${candidates[*]}, direct and buffered; fio's messages above)"
}

# A short read-only 4 KiB random-read job at depth QD: "IOPS<TAB>mean latency in ns" on stdout.
# Reads only, so it is safe anywhere. It runs after the region was written (state or prefill) and
# reads inside it: on a trimmed drive, reads of deallocated LBAs never touch the media.
probe_engine_cost() { # ENGINE QD [--FIO-OPTION=VALUE...]
    local out="$TK_TMP/cost-$1-$2-$BASHPID.json" reply
    run_fio "$TK_TMP/probe.stderr" --name=cost --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=randread --bs=4k --iodepth="$2" --ioengine="$1" --direct="$DIRECT" --time_based \
        --runtime="${ENGINE_PROBE_MS}ms" --ramp_time=100ms --randrepeat=0 --norandommap=1 "${@:3}" \
        --output-format=json --output="$out" >/dev/null || return 1
    reply=$(service_ask probe-cost "$out")
    [[ $reply == ok$'\t'* ]] || return 1
    printf '%s' "${reply#ok$'\t'}"
}

# `auto` on this machine: the engine each queue depth costs least with. Which engine works says
# nothing about what it adds: io_uring hands I/O to a worker thread on a device that cannot take
# it without blocking (zram, loop devices), which on zram made a 4 KiB QD=1 read 44 µs instead of
# psync's 2.6 µs. So QD=1 cases get the engine with the lowest mean latency in a short QD=1 probe,
# deeper queues the asynchronous engine with the most IOPS at QD 32. An engine within
# ENGINE_TIE_PCT of the best counts as a tie, won by the earlier of io_uring, libaio, psync, so
# that noise does not flip the choice between runs. A resumed run keeps the first run's choice
# (ENGINE_KEPT, from the manifest): one case is never measured with two engines.
choose_engines_by_cost() {
    local engine cost iops lat qd1_costs=() deep_costs=() best_lat="" best_iops=""
    if [[ -n ${ENGINE_KEPT:-} ]]; then
        ENGINE_QD1=${ENGINE_KEPT% *} ENGINE_DEEP=${ENGINE_KEPT#* }
        ENGINE_NOTE="$(engine_label) (auto, chosen by the first run of these results)${ENGINE_BUFFERED:-}"
        return 0
    fi
    local tree
    tree=$(stored_tree_engines)
    if [[ -n $tree ]]; then
        ENGINE_KEPT=${tree%%$'\t'*}
        ENGINE_QD1=${ENGINE_KEPT% *} ENGINE_DEEP=${ENGINE_KEPT#* } ENGINE_NOTE=${tree#*$'\t'}
        [[ $ENGINE_NOTE == *"probed once for this results tree"* ]] ||
            ENGINE_NOTE="${ENGINE_NOTE%)*}; probed once for this results tree)${ENGINE_NOTE##*)}"
        return 0
    fi
    declare -A lat_of=() iops_of=()
    for engine in io_uring libaio psync; do
        cost=$(probe_engine_cost "$engine" 1) || continue
        lat=${cost#*$'\t'} lat_of[$engine]=$lat
        qd1_costs+=("$engine $(human_ns "$lat")")
        [[ -n $best_lat ]] && ((lat >= best_lat)) || best_lat=$lat
    done
    for engine in io_uring libaio; do
        cost=$(probe_engine_cost "$engine" 32) || continue
        iops=${cost%%$'\t'*} iops_of[$engine]=$iops
        deep_costs+=("$engine $(human_count "$iops")")
        [[ -n $best_iops ]] && ((iops <= best_iops)) || best_iops=$iops
    done
    for engine in io_uring libaio psync; do
        [[ -n ${lat_of[$engine]:-} ]] || continue
        if ((lat_of[$engine] * 100 <= best_lat * (100 + ENGINE_TIE_PCT))); then ENGINE_QD1=$engine && break; fi
    done
    for engine in io_uring libaio; do
        [[ -n ${iops_of[$engine]:-} ]] || continue
        if ((iops_of[$engine] * (100 + ENGINE_TIE_PCT) >= best_iops * 100)); then ENGINE_DEEP=$engine && break; fi
    done
    ENGINE_NOTE="$(engine_label) (auto: QD=1 probe mean latency ${qd1_costs[*]/%/,}"
    ENGINE_NOTE="${ENGINE_NOTE%,}; QD 32 probe IOPS ${deep_costs[*]/%/,}"
    ENGINE_NOTE="${ENGINE_NOTE%,})${ENGINE_BUFFERED:-}"
    remember_tree_engines
}

engine_label() { # "psync" or "psync at QD=1, io_uring deeper"
    if [[ $ENGINE_QD1 == "$ENGINE_DEEP" ]]; then
        printf '%s' "$ENGINE_QD1"
    else
        printf '%s at QD=1, %s deeper' "$ENGINE_QD1" "$ENGINE_DEEP"
    fi
}

engine_for_case() { # INDEX: the engine its jobfile names
    local qd
    qd=$(case_option "$1" iodepth)
    if ((${qd:-1} <= 1)); then printf '%s' "$ENGINE_QD1"; else printf '%s' "$ENGINE_DEEP"; fi
}

human_ns() { # NS: "2.6 µs"
    printf '%d.%d µs' $(($1 / 1000)) $(($1 % 1000 / 100))
}

human_count() { # N: "384 K"
    if (($1 >= 1000000)); then printf '%d.%d M' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); else printf '%d K' $(($1 / 1000)); fi
}

# --- the helper process -----------------------------------------------------------------------
# One Python process for the whole section answers "is this result good?" and "is writing still
# safe?" in milliseconds (see analysis/run/runner_service.py).
service_start() {
    coproc TK_SERVICE { tk_python serve; }
}
service_ask() { # FIELD... -> the reply line on stdout
    local IFS=$'\t' reply
    printf '%s\n' "$*" >&"${TK_SERVICE[1]}" || die "$EXIT_FAIL" "the toolkit's helper process is gone"
    read -r reply <&"${TK_SERVICE[0]}" || die "$EXIT_FAIL" "the toolkit's helper process is gone"
    printf '%s' "$reply"
}
# Right before a write that is not a repetition (the state's purge and writes, §6's
# preconditioning): is writing to the block device still safe? Exit 3 with the reason if not.
still_safe_to_write() {
    [[ $TARGET_KIND == block ]] || return 0
    local reply
    reply=$(service_ask safety "$TARGET_PATH" "$DESTROY")
    [[ $reply == ok ]] || die "$EXIT_UNSAFE" "${reply#refused$'\t'}"
}
service_stop() {
    if [[ -n ${TK_SERVICE_PID:-} ]]; then
        local fd=${TK_SERVICE[1]:-}
        [[ -z $fd ]] || exec {fd}>&-
        wait "$TK_SERVICE_PID" 2>/dev/null || true
    fi
}

# --- one run per target ---------------------------------------------------------------------
acquire_lock() {
    local dir=/run/lock
    [[ -w $dir ]] || dir=${TMPDIR:-/tmp}
    TK_LOCK="$dir/ssd-toolkit.$(printf '%s' "$TARGET_PATH" | md5sum | cut -c1-16).lock"
    exec {TK_LOCK_FD}>>"$TK_LOCK"
    if ! flock -n "$TK_LOCK_FD"; then
        die "$EXIT_UNSAFE" "another run is using $TARGET_PATH ($(cat "$TK_LOCK" 2>/dev/null)); wait for it to finish or stop it"
    fi
    printf 'pid %s, %s, since %(%F %T)T\n' "$$" "$TK_PROG" -1 >"$TK_LOCK"
}

# --- plan -------------------------------------------------------------------------------------
print_plan() {
    local runs=0 ms=0 i
    info "§$SECTION_NUMBER $SECTION_TITLE: plan"
    info "  target   $TARGET_PATH ($TARGET_KIND$([[ -n $TARGET_DEFAULT ]] && echo ", the toolkit's default file"))"
    info "  region   $(region_share)${REGION_NOTE:+ ($REGION_NOTE)}"
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
    info "  runs     $runs, about $(human_seconds $(((ms + 500) / 1000)))"
    if [[ -n $UNTIL_STABLE && $CASE_ORDER != declared && -z $HOSTS ]]; then
        local extra=0 extra_ms=0
        for i in "${!CASE_NAMES[@]}"; do
            ((MAX_REPEAT > $(case_repeat "$i"))) || continue
            extra=$((extra + MAX_REPEAT - $(case_repeat "$i")))
            extra_ms=$((extra_ms + (MAX_REPEAT - $(case_repeat "$i")) * $(case_ms "$i")))
        done
        info "  until    stable: a point whose 95% interval is wider than ±$UNTIL_STABLE% gets one more repetition"
        info "           per round, up to $MAX_REPEAT in all: at most $extra more runs, $(human_seconds $(((extra_ms + 500) / 1000)))"
    fi
    plan_order
    if [[ -z $HOSTS && $HOST_CEILING == 0 ]]; then
        info "  ceiling  not measured (--no-host-ceiling): a point is marked host-bound by the CPUs' load alone"
    elif [[ -z $HOSTS ]]; then
        info "  ceiling  first, each case's shape on a RAM device with no media (null_blk, zram or fio's null engine): about a second each, none of it on the target"
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
    [[ -n $FRESH || ! -e $RESULTS/$SECTION/prefill.done ]]
}

writes_plan_lines() { # the plan's account of what is written to the device, and whether it may be
    local writes reason
    writes=$(planned_writes)
    if [[ -z $writes ]]; then
        info "  writes   none: this run only reads $TARGET_PATH"
        return 0
    fi
    info "  writes   $writes"
    [[ -n $DRY_RUN ]] || return 0
    if reason=$(tk_python safety "$TARGET_PATH" "$DESTROY" 2>&1); then
        info "           allowed: --destroy names $TARGET_PATH and nothing on it is in use"
    else
        info "           REFUSED as given: $reason"
    fi
}

# Nothing is written to a block device that --destroy does not name, and nothing in use at all:
# refused (exit 3) before anything is touched, saying what the run would write and how to go on.
refuse_unless_writes_allowed() {
    local writes reason hint=""
    writes=$(planned_writes)
    [[ -n $writes ]] || return 0
    reason=$(tk_python safety "$TARGET_PATH" "$DESTROY" 2>&1) && return 0
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

# --- results ----------------------------------------------------------------------------------
move_results_aside() {
    [[ -d $RESULTS_DIR ]] || return 0
    local aside
    aside="$RESULTS_DIR.$(date +%Y%m%d-%H%M%S)"
    mv -- "$RESULTS_DIR" "$aside"
    info "--fresh: earlier results moved to $aside"
}

case_matrix() { # every case with its fio options: "name: opt=v ...; name: ..."
    local i sep=""
    for i in "${!CASE_NAMES[@]}"; do
        printf '%s%s: %s' "$sep" "${CASE_NAMES[$i]}" "${CASE_OPTS[$i]}"
        sep="; "
    done
}

check_manifest() {
    local reason
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    if ! reason=$(tk_python manifest "$RESULTS_DIR/manifest.json" \
        section="$SECTION" target="$TARGET_PATH" target_kind="$TARGET_KIND" \
        profile="$PROFILE" runtime="$RUNTIME" ramp="$RAMP" repeat="$REPEAT" size="$SIZE" \
        region_bytes="$REGION_BYTES" target_bytes="$TARGET_BYTES" state="$STATE_USED" \
        state_note="$STATE_NOTE" until_stable="$UNTIL_STABLE" max_repeat="$MAX_REPEAT" \
        engine="$(engine_label)" direct="$DIRECT" \
        engines="$ENGINE_QD1 $ENGINE_DEEP" engine_note="$ENGINE_NOTE" cases="${CASE_NAMES[*]}" \
        io_uring_options="$URING_OPTS" io_uring_note="$URING_NOTE" \
        cpus_allowed="$PLACEMENT_CPUS" placement="$PLACEMENT_NOTE" \
        matrix="$(case_matrix)" 2>&1); then
        die "$EXIT_USAGE" "$reason"
    fi
}

prefill() {
    local marker="$RESULTS_DIR/prefill.done"
    if [[ -n $NO_PREFILL || -e $marker ]]; then
        return 0
    fi
    info "prefill: writing $(human_bytes "$REGION_BYTES") of $TARGET_PATH once with random data"
    still_safe_to_write
    fill_region "$ENGINE_DEEP" "$DIRECT"
    printf 'region %s bytes of %s written at %(%F %T)T\n' "$REGION_BYTES" "$TARGET_PATH" -1 >"$marker"
}

health_snapshot() { # before|after
    local dir="$RESULTS_DIR/health/$1"
    # The first "before" of a resumed section is the true before; keep it.
    [[ $1 == before && -d $dir ]] && return 0
    mkdir -p "$dir"
    collect_health_raw "$dir" "$TARGET_PATH" || warn "health snapshot ($1) failed; going on"
}

# --- the run loop -----------------------------------------------------------------------------
on_interrupt() {
    trap '' INT TERM
    if [[ -n ${FIO_PID:-} ]]; then
        kill -TERM "$FIO_PID" 2>/dev/null || true
        wait "$FIO_PID" 2>/dev/null || true
    fi
    # the repetition's fio output and its CPU snapshots (cpu_snapshot) alike
    [[ -n ${PARTIAL:-} ]] && rm -f -- "$PARTIAL" "${PARTIAL%.json.partial}.cpu.partial"
    info ""
    info "interrupted: ${DONE_RUNS:-0} finished repetitions are kept in $RESULTS_DIR; rerun the same command to resume"
    exit "$EXIT_INTERRUPTED"
}

on_exit() {
    if declare -F health_sampler_stop >/dev/null; then health_sampler_stop; fi
    service_stop
    [[ -n ${TK_TMP:-} ]] && rm -rf -- "$TK_TMP"
}

# run_repetition INDEX REP: one fio run; the result is renamed into place only when it is a good
# repetition of its case (analysis/run/repetition.py). A failure is diagnosed (diagnose_fault): a fault
# that would fail every later run too stops the run here, anything else is listed and the run
# goes on.
run_repetition() {
    local i=$1 k=$2 name=${CASE_NAMES[$1]}
    local dir="$RESULTS_DIR/$name" rc=0 reply writes=0 why
    local final="$dir/rep$k.json"
    PARTIAL="$dir/.rep$k.json.partial"
    if [[ $TARGET_KIND == block ]] && case_writes "$i"; then
        reply=$(service_ask safety "$TARGET_PATH" "$DESTROY")
        if [[ $reply != ok ]]; then
            diagnose_fault "$name rep $k" "$TARGET_PATH" 0 1 # a device gone is no safety refusal
            die "$EXIT_UNSAFE" "${reply#refused$'\t'}"
        fi
    fi
    if declare -F section_before_repetition >/dev/null; then section_before_repetition "$i" "$k"; fi
    # Best effort: a full results folder must fail the repetition, and be named, where fio's
    # own output fails (diagnose_fault), not here.
    cpu_snapshot before >"$dir/.rep$k.cpu.partial" 2>/dev/null || true
    TK_LOG="$dir/rep$k" run_fio "$dir/rep$k.stderr" --output-format=json+ --output="$PARTIAL" \
        "$dir/job.fio" || rc=$?
    cpu_snapshot after >>"$dir/.rep$k.cpu.partial" 2>/dev/null || true
    if declare -F section_after_repetition >/dev/null; then section_after_repetition "$i" "$k"; fi
    reply=$(service_ask check-result "$PARTIAL" "$RESULTS_DIR/manifest.json" "$name")
    if [[ $reply == ok ]]; then
        mv -f -- "$dir/.rep$k.cpu.partial" "$dir/rep$k.cpu" 2>/dev/null || true
        mv -f -- "$PARTIAL" "$final"
        [[ -s $dir/rep$k.stderr ]] || rm -f -- "$dir/rep$k.stderr"
    else
        # Keep what fio wrote for the post-mortem, under a name the analysis never reads.
        [[ -e $PARTIAL ]] && mv -f -- "$PARTIAL" "$dir/rep$k.failed.json"
        mv -f -- "$dir/.rep$k.cpu.partial" "$dir/rep$k.failed.cpu" 2>/dev/null || true
        PARTIAL=""
        case_writes "$i" && writes=1
        diagnose_fault "$name rep $k failed" "$TARGET_PATH" "$rc" "$writes"
        why=${FAULT_GO:-"${reply#bad$'\t'} (fio exit $rc; see $dir/rep$k.stderr)"}
        FAILED+=("$name rep $k: $why")
        warn "$name rep $k failed: $why"
    fi
    PARTIAL=""
}

# diagnose_fault WHAT TARGET FIO_RC WRITES(0|1): name what went wrong (analysis/run/faults.py). A fault
# every later run would meet too (the results folder full, the target gone or read-only) ends the
# run here with its one line: exit 1, the finished repetitions kept, the same command resumes.
# Otherwise FAULT_GO is the line for a fault the run goes on after (fio killed), or empty. An
# empty TARGET (a fleet run's hosts) checks the results folder only.
# Each CPU's ticks from /proc/stat, with the time, before or after a repetition's fio: the
# analysis (analysis/run/cpu_load.py) finds the busiest CPU from the two (host_bound).
cpu_snapshot() { # before|after
    printf '%s %s\n' "$1" "$EPOCHREALTIME"
    grep '^cpu[0-9]' /proc/stat
}

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
            reply=$(service_ask check-result "$path" "$1/manifest.json" "${CASE_NAMES[$i]}")
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
    if [[ -n $HOSTS ]]; then fleet_run_batch "$@"; else run_repetition "${ORDER_CASE[$1]}" "${ORDER_REP[$1]}"; fi
}
batch_takes() { # J... NEXT: whether entry NEXT joins the batch J...
    [[ -n $HOSTS ]] && fleet_batch_takes "$@"
}

# --- order and progress ------------------------------------------------------------------------
order_manifests() { # the manifest(s) the order is read from and recorded in
    local h
    if [[ -n $HOSTS ]]; then
        for h in "${!FLEET_LABELS[@]}"; do echo "$(fleet_results_dir "$h")/manifest.json"; done
    else
        echo "$RESULTS_DIR/manifest.json"
    fi
}

# The plan's order line, and the seed of this run (ORDER_SEED_USED): the one the results being
# resumed began with, else --seed, else a new one (analysis/run/order.py). A --seed that is not
# the stored one is refused here, before anything is touched.
plan_order() {
    local reply manifests=()
    mapfile -t manifests < <(order_manifests)
    reply=$(tk_python order seed "$ORDER_SEED" "$FRESH" "${manifests[@]}" 2>&1) || die "$EXIT_USAGE" "$reply"
    ORDER_SEED_USED=${reply%%$'\t'*}
    if [[ $CASE_ORDER == declared ]]; then
        info "  order    as the section declares its cases, each case's repetitions back to back"
        return 0
    fi
    info "  order    in rounds: repetition 1 of every case, then repetition 2...; the cases shuffled"
    case ${reply#*$'\t'} in
        kept) info "           anew in each round, seed $ORDER_SEED_USED (kept: the order these results began with)" ;;
        given) info "           anew in each round, seed $ORDER_SEED_USED (given with --seed)" ;;
        *) info "           anew in each round, seed $ORDER_SEED_USED (new; --seed $ORDER_SEED_USED gives this order again)" ;;
    esac
    if declare -F section_more_cases >/dev/null; then
        info "           cases the section adds after its sweep run after all of it, in rounds of their own"
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
            cases+=("${CASE_NAMES[$i]}:$(case_repeat "$i"):${ORDER_REPS[i]:-0}") index+=("$i")
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

# --until-stable PCT: after the planned repetitions, one more repetition of every point whose 95%
# interval is still wider than ±PCT % (analysis/run/stability.py), round after round, until none
# is or each has --max-repeat. Deterministic from the results, so a rerun resumes it. §6 keeps its
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
                info "until stable: $name's 95% interval is wider than ±$UNTIL_STABLE%: repetition $(case_repeat "$i") of at most $MAX_REPEAT"
        done
        run_all
    done
}

# Runs every repetition not done yet, in the order of case_order; [n/N] is the repetition's place
# in that order, so a resumed run numbers each repetition as the first run did. A fleet run sends
# consecutive repetitions in batches (lib/fleet.bash); a local run runs them one by one.
run_all() {
    local total i k j todo=0 todo_ms=0 done_ms=0 started h
    DONE_RUNS=0
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
    for i in "${!CASE_NAMES[@]}"; do
        prepare_case "$i" 2>"$TK_TMP/prepare.stderr" || results_write_failed "the jobfile of ${CASE_NAMES[$i]}"
    done
    [[ -n $HOSTS || $HOST_CEILING == 0 ]] || measure_host_ceiling
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

# The host's ceiling of every case's shape (analysis/run/host_ceiling.py): its engine on null_blk,
# else a zram device of its own, else fio's null engine; about a second per shape, no I/O to the
# target; cases measured by an earlier run of these results keep their ceiling.
measure_host_ceiling() {
    tk_python host-ceiling "$RESULTS_DIR" "${CASE_NAMES[@]}" ||
        die "$EXIT_FAIL" "measuring the host's ceiling (null_blk, zram or fio's null engine) failed (see above)"
}

# --- placement: the CPUs the jobs run on ----------------------------------------------------
# The NUMA node of the device behind the target (a block device, or the one holding a file):
# the first numa_node file from its sysfs device up; empty when unknown (none, or -1).
target_numa_node() {
    local dev sys node=""
    if [[ -b $TARGET_PATH ]]; then
        dev=$(stat -L -c '%Hr:%Lr' -- "$TARGET_PATH" 2>/dev/null) || return 0
    else
        dev=$(stat -L -c '%Hd:%Ld' -- "$TARGET_PATH" 2>/dev/null) || return 0
    fi
    sys=$(readlink -f "/sys/dev/block/$dev" 2>/dev/null) || return 0
    while [[ $sys == /sys/devices/* ]]; do
        if [[ -r $sys/numa_node ]]; then
            node=$(<"$sys/numa_node")
            break
        fi
        sys=${sys%/*}
    done
    [[ -z $node || $node == -1 ]] || printf '%s' "$node"
}

# PLACEMENT_CPUS (fio's cpus_allowed, empty for any CPU) and PLACEMENT_NOTE (why, for the jobfile
# and the plan): --cpus, else the target's NUMA node's CPUs on a machine of several nodes. The
# host ceiling (analysis/run/host_ceiling.py) reads cpus_allowed from the jobfile and so is
# measured on the same CPUs.
resolve_placement() {
    local node nodes
    PLACEMENT_CPUS="" PLACEMENT_NOTE=""
    if [[ -n ${CPUS:-} ]]; then
        PLACEMENT_CPUS=$CPUS PLACEMENT_NOTE="CPUs $CPUS (--cpus)"
        return 0
    fi
    node=$(target_numa_node)
    nodes=$(compgen -G '/sys/devices/system/node/node[0-9]*' | wc -l)
    if [[ -z $node ]]; then
        PLACEMENT_NOTE="any CPU (the target's NUMA node is unknown)"
    elif ((nodes < 2)) || [[ ! -r /sys/devices/system/node/node$node/cpulist ]]; then
        PLACEMENT_NOTE="any CPU (NUMA node $node, the only one)"
    else
        PLACEMENT_CPUS=$(</sys/devices/system/node/node"$node"/cpulist)
        PLACEMENT_NOTE="CPUs $PLACEMENT_CPUS, those of the target's NUMA node $node"
    fi
}

cpulist_count() { # LIST: how many CPUs "0-3,8" names
    local part n=0 IFS=,
    for part in $1; do
        if [[ $part == *-* ]]; then n=$((n + ${part#*-} - ${part%-*} + 1)); else n=$((n + 1)); fi
    done
    echo "$n"
}

job_cpus() { # how many CPUs a job may run on: --cpus or the NUMA node's, else this process's (the
    # peak search's and the grid's most jobs, sqthread_poll's room)
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    if [[ -n $PLACEMENT_CPUS ]]; then cpulist_count "$PLACEMENT_CPUS"; else nproc; fi
}

placement_options() { # the jobfile's lines: a comment saying where the jobs run, cpus_allowed
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    printf '; jobs run on %s\n' "$PLACEMENT_NOTE"
    [[ -z $PLACEMENT_CPUS ]] || printf 'cpus_allowed=%s\n' "$PLACEMENT_CPUS"
}

manifest_value() { # KEY: what this section's manifest records for KEY; nothing when it has none
    local reply
    reply=$(service_ask manifest-value "$RESULTS_DIR/manifest.json" "$1")
    [[ $reply != ok$'\t'* ]] || printf '%s' "${reply#ok$'\t'}"
}

stored_engines() { # the engines a first run of these results chose (auto), if any
    [[ -z $FRESH ]] || return 0
    manifest_value engines
}

# --- the section ------------------------------------------------------------------------------
section_main() {
    load_section "$SECTION"
    parse_common_options "$@"
    if declare -F section_cases >/dev/null; then section_cases; fi
    require_tools fio
    if [[ -n $HOSTS ]]; then
        fleet_section_main
        return 0
    fi
    resolve_target
    # Cases that depend on the target (a working set as large as the region) are added here.
    if declare -F section_plan >/dev/null; then section_plan; fi
    cd "$TK_ROOT" || exit "$EXIT_FAIL"
    RESULTS_DIR="$RESULTS/$SECTION"
    ENGINE_NOTE=""
    resolve_state

    if [[ -n $DRY_RUN ]]; then
        dry_run
        exit "$EXIT_OK"
    fi
    # Refuse before touching anything: no file created, no lock taken, nothing moved.
    refuse_unless_writes_allowed

    print_plan
    if declare -F section_confirm >/dev/null; then section_confirm; fi
    TK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssd-toolkit.XXXXXX")
    trap on_exit EXIT
    trap on_interrupt INT TERM
    acquire_lock
    mkdir -p "$TK_ROOT/tmp/$SECTION"
    [[ -z $TARGET_CREATE ]] || create_file_target
    service_start
    choose_engine
    [[ -z $FRESH ]] || move_results_aside
    mkdir -p "$RESULTS_DIR"
    # The region is written before any engine is probed or case measured: by the state (once per
    # results tree), by the toolkit creating its file, or by this section's prefill.
    prepare_state
    if [[ -n $TARGET_DEFAULT || -n $TARGET_CREATE ]] && [[ ! -e $RESULTS_DIR/prefill.done ]]; then
        printf 'the file target, created by the toolkit full of random data\n' >"$RESULTS_DIR/prefill.done"
    fi
    prefill
    if [[ $ENGINE == auto ]]; then
        ENGINE_KEPT=$(stored_engines)
        choose_engines_by_cost
    fi
    info "engine: $ENGINE_NOTE"
    choose_uring_options
    [[ -z $URING_NOTE ]] || info "io_uring: $URING_NOTE"
    check_manifest
    health_snapshot before
    if declare -F section_prepare >/dev/null; then section_prepare; fi
    steady_rounds
    run_all
    # A section whose next cases depend on the results so far (§5's peak search) adds them in
    # section_more_cases, which fails when it adds none.
    while declare -F section_more_cases >/dev/null && section_more_cases; do run_all; done
    until_stable
    health_snapshot after

    info ""
    # With failed repetitions the analysis may find a point left with none: exit_if_failed says so.
    tk_python "$SECTION" "${ANALYSIS_ARGS[@]}" || ((${#FAILED[@]})) || die "$EXIT_FAIL" "the analysis of $RESULTS_DIR failed (see above); the raw results are kept"
    exit_if_failed "repetition(s) failed"
}

# After the analysis: list what failed (FAILED) and exit 1, the results of the rest being kept.
exit_if_failed() { # WHAT: e.g. "repetition(s) failed"
    ((${#FAILED[@]})) || return 0
    info ""
    info "${#FAILED[@]} $1; rerun the same command to retry what is missing:"
    printf '  %s\n' "${FAILED[@]}" >&2
    exit "$EXIT_FAIL"
}
