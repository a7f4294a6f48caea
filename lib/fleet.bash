# shellcheck shell=bash
# lib/fleet.bash: one section on many lab machines at once, through fio's client/server mode.
# Each lab machine runs serve.bash (fio --server, after the safety checks of its own target); with
# HOSTS=host1,host2 (and --target) or --hosts FILE ('host[:port] target' per line) the section's
# run loop sends every repetition of a case to all hosts at once with fio --client, splits fio's
# client output per host (analysis/run/fleet.py) and keeps each host's results in a results tree of
# its own, $RESULTS/hosts/<host>/<section>/..., which the section's analysis reads as it reads any
# tree. `python -m analysis hosts <section>` then compares the hosts.
# Sourced by lib/run.bash; never run on its own.
# shellcheck disable=SC2034,SC2153  # ENGINE_USED, DIRECT, ENGINE_NOTE are read by lib/run.bash; HOSTS is set by lib/common.bash

readonly FLEET_DEFAULT_PORT=8765

# Where serve.bash keeps its vouch and the check its jobs call. The orchestrator knows a server
# only by address and port, so the check's path is fixed by the port (same TK_SERVE_DIR on both).
serve_state_dir() { echo "${TK_SERVE_DIR:-/run/ssd-toolkit}"; }

FLEET_LABELS=() FLEET_ADDRS=() FLEET_PORTS=() FLEET_TARGETS=() FLEET_DROPPED=()

fleet_add_host() { # SPEC TARGET WHERE
    local spec=$1 target=$2 where=$3 addr port=$FLEET_DEFAULT_PORT label other
    addr=${spec%:*}
    [[ $spec == *:* ]] && port=${spec##*:}
    if [[ -z $addr || ! $port =~ ^[0-9]+$ ]] || ((port == 0 || port > 65535)); then
        die "$EXIT_USAGE" "$where: '$spec' is not host[:port] (e.g. 10.0.0.12 or lab3:8766)"
    fi
    [[ -n $target ]] || die "$EXIT_USAGE" "$where: no target for $spec; give --target PATH (its path on every host) or a hosts file with 'host[:port] target' lines"
    [[ $target == /* ]] || die "$EXIT_USAGE" "$where: target '$target' of $spec must be an absolute path on that host"
    label=$addr
    ((port == FLEET_DEFAULT_PORT)) || label+="-$port"
    label=${label//[^A-Za-z0-9._-]/_}
    for other in "${FLEET_LABELS[@]}"; do
        [[ $other != "$label" ]] || die "$EXIT_USAGE" "$where: host $spec is named twice"
    done
    FLEET_LABELS+=("$label") FLEET_ADDRS+=("$addr") FLEET_PORTS+=("$port")
    FLEET_TARGETS+=("$target") FLEET_DROPPED+=("")
}

# HOSTS is a file of 'host[:port] target' lines (# comments) or a list host[:port],... that all use
# --target.
load_hosts() {
    local n=0 host target rest
    if [[ -f $HOSTS ]]; then
        while read -r host target rest || [[ -n $host ]]; do
            n=$((n + 1))
            [[ -z $host || $host == \#* ]] && continue
            [[ -z $rest ]] || die "$EXIT_USAGE" "$HOSTS line $n: expected 'host[:port] target', got more"
            fleet_add_host "$host" "$target" "$HOSTS line $n"
        done <"$HOSTS"
    else
        [[ $HOSTS != */* ]] || die "$EXIT_USAGE" "HOSTS=$HOSTS: no such hosts file"
        split_list HOSTS "$HOSTS"
        for host in "${LIST_ITEMS[@]}"; do fleet_add_host "$host" "${TARGET:-}" "HOSTS"; done
    fi
    ((${#FLEET_LABELS[@]})) || die "$EXIT_USAGE" "$HOSTS names no host"
}

fleet_results_dir() { echo "$RESULTS/hosts/${FLEET_LABELS[$1]}/$SECTION"; }
fleet_client() { echo "${FLEET_ADDRS[$1]},${FLEET_PORTS[$1]}"; }
fleet_name() { echo "${FLEET_ADDRS[$1]}:${FLEET_PORTS[$1]}"; }
fleet_live() { # the indexes of the hosts still in the run
    local h
    for h in "${!FLEET_LABELS[@]}"; do [[ -n ${FLEET_DROPPED[$h]} ]] || echo "$h"; done
}

# The line that makes the host's server check a job right before fio starts it (serve.bash
# --check): fio skips the job when the check fails.
fleet_prerun() { # HOST read|write
    printf 'exec_prerun=%s/serve-%s.check %s %s %s\n' "$(serve_state_dir)" "${FLEET_PORTS[$1]}" \
        "${FLEET_TARGETS[$1]}" "$REGION_BYTES" "$2"
}
fleet_check_log() { # HOST JOB: where the server keeps the check's output
    echo "tmp/serve-${FLEET_PORTS[$1]}/$2.prerun.txt in the toolkit folder on $(fleet_name "$1")"
}

fleet_drop() { # HOST REASON: the host leaves the run; its finished repetitions stay
    FLEET_DROPPED[$1]=$2
    printf '%s\n' "$2" >"$(fleet_results_dir "$1")/dropped.txt"
    FAILED+=("$(fleet_name "$1"): $2")
    warn "$(fleet_name "$1") drops out: $2; its finished repetitions are kept, the other hosts go on"
}

# --- checks before the run: reachable, same fio, the server vouches for the target --------------
# The probe job only reads, but asks the server's check for what the run will do: a server that
# would refuse the run's writes (read-only, or its target failed the safety check since) refuses
# the probe, and nothing has been written anywhere yet.
fleet_run_mode() {
    if [[ -z $NO_PREFILL ]] || section_writes; then echo write; else echo read; fi
}

fleet_probe_host() { # HOST ENGINE DIRECT -> VERSION<TAB>ok|refused|failed[<TAB>reason]
    local h=$1 job="$TK_TMP/probe-$1.fio" out="$TK_TMP/probe-$1.txt" first
    {
        printf '[probe]\nfilename=%s\nrw=randread\nbs=4k\nio_size=256k\n' "$(fio_filename "${FLEET_TARGETS[$h]}")"
        printf 'ioengine=%s\ndirect=%s\n' "$2" "$3"
        fleet_prerun "$h" "$(fleet_run_mode)"
    } >"$job"
    rm -f -- "$out"
    if ! run_fio "$out.stderr" --client="$(fleet_client "$h")" --output-format=json,normal \
        --output="$out" "$job" >/dev/null && [[ ! -s $out ]]; then
        first=$(grep -m1 -i 'fio:' "$out.stderr" || head -n 1 "$out.stderr")
        printf '\tunreachable\t%s' "${first:-the fio client failed}"
        return 0
    fi
    tk_python fleet probe "$out"
}

# Probe every host with ENGINE: 0 when it works on all. Stops the run when a host cannot be
# reached, runs another fio version or refuses the run (its server vouches for something else).
# The hosts are probed all at once: a client call costs about a second, whatever it runs.
fleet_engine_works() { # ENGINE DIRECT
    local h line version status detail mine pids=()
    mine=$(fio --version)
    for h in "${!FLEET_LABELS[@]}"; do
        fleet_probe_host "$h" "$1" "$2" >"$TK_TMP/probe-$h.line" &
        pids+=("$!")
    done
    wait "${pids[@]}" || true # each probe's answer is in its file, a failed one's included
    for h in "${!FLEET_LABELS[@]}"; do
        # Split by hand: read would merge the empty version of an unreachable host into the tab.
        line=$(<"$TK_TMP/probe-$h.line")
        [[ -n $line ]] || line=$'\tunreachable\tits probe gave no answer'
        version=${line%%$'\t'*} line=${line#*$'\t'}
        status=${line%%$'\t'*} detail=""
        [[ $line != *$'\t'* ]] || detail=${line#*$'\t'}
        if [[ $status == unreachable ]]; then
            die "$EXIT_FAIL" "cannot reach $(fleet_name "$h") ($detail); start 'sudo bash serve.bash --listen $(fleet_name "$h") --target ${FLEET_TARGETS[$h]}' there, or leave it out of HOSTS"
        fi
        [[ $version == "$mine" ]] ||
            die "$EXIT_USAGE" "$(fleet_name "$h") runs ${version:-an unknown fio version}, this machine $mine: client and server fio must be the same version; install the same fio on both"
        if [[ $status == refused ]]; then
            die "$EXIT_UNSAFE" "$(fleet_name "$h") refused to $(fleet_run_mode) $(human_bytes "$REGION_BYTES") of ${FLEET_TARGETS[$h]}: its server vouches for another target or a smaller size, serves read-only, or its target failed the safety check; the reason is in $(fleet_check_log "$h" probe)"
        fi
        [[ $status == ok ]] || return 1
    done
}

# --- one fio call on all hosts ------------------------------------------------------------------
# fio's client and server cost about a second per call beyond the jobs' runtime (the server polls
# its connection at up to 1 s), against 0.3 s for a local fio. So the run loop sends each host
# several repetitions at once (a batch): one jobfile per host, one job per repetition named
# CASE@REP (a case may come twice, from successive rounds), each `stonewall`ed so they run one
# after the other in the run's order, as separate runs would. fio's output is split per host and
# per job back into rep<REP>.json files (analysis/run/fleet.py).

# The most repetitions in one call: --fleet-batch (16). The most planned time in one call, which is
# what an interrupt or a lost host costs at worst:
readonly FLEET_BATCH_MAX_MS=180000

declare -gA FLEET_JOBS=() # HOST -> "CASE@REP ..." that host runs in this call, in order

fleet_batch_takes() { # J... NEXT: whether order entry NEXT joins the batch J...
    local j ms=0
    (($# <= FLEET_BATCH)) || return 1
    for j in "$@"; do ms=$((ms + $(case_ms "${ORDER_CASE[j]}"))); done
    ((ms <= FLEET_BATCH_MAX_MS))
}

fleet_batch_new() { # HOST: an empty call for the host
    FLEET_JOBS[$1]=""
    : >"$TK_TMP/batch-$1.fio"
}

fleet_batch_add() { # HOST CASE REP: the case's own jobfile joins the host's call, its job named CASE@REP
    local job
    job=$'\n'$(<"$(fleet_results_dir "$1")/$2/job.fio")
    printf '%s\nstonewall\n\n' "${job/$'\n'"[$2]"$'\n'/$'\n'"[$2@$3]"$'\n'}" >>"$TK_TMP/batch-$1.fio"
    FLEET_JOBS[$1]+=" $2@$3"
}

fleet_run_batch() { # J...: the order's entries J, on every host still in the run that lacks them
    local h j case hosts=()
    for h in $(fleet_live); do
        fleet_batch_new "$h"
        for j in "$@"; do
            case=${CASE_NAMES[${ORDER_CASE[j]}]}
            [[ -e $(fleet_results_dir "$h")/$case/rep${ORDER_REP[j]}.json ]] ||
                fleet_batch_add "$h" "$case" "${ORDER_REP[j]}"
        done
        [[ -z ${FLEET_JOBS[$h]} ]] || hosts+=("$h")
    done
    ((${#hosts[@]})) || return 0
    fleet_run_all_hosts "${hosts[@]}"
}

fleet_batch_text() { # HOST: "randread-4k rep 2, randwrite-4k rep 2"
    local job text=""
    for job in ${FLEET_JOBS[$1]}; do text+="${text:+, }${job%@*} rep ${job##*@}"; done
    echo "$text"
}

# fleet_run_all_hosts HOST...: runs each host's $TK_TMP/batch-<HOST>.fio on it, all hosts at once,
# and keeps each job's result as <host dir>/<CASE>/rep<REP>.json when it is good (FLEET_JOBS names
# them); a host whose result is missing or bad drops out, keeping what earlier calls finished.
fleet_run_all_hosts() {
    local h rc=0 label status written job case k dir partial reply reason
    local -a args=() split=()
    for h in "$@"; do
        args+=(--client="$(fleet_client "$h")" "$TK_TMP/batch-$h.fio")
        split+=("$h=${FLEET_ADDRS[$h]},${FLEET_PORTS[$h]}=$(fleet_results_dir "$h")/{case}/.rep{rep}.json.partial")
    done
    PARTIAL="$TK_TMP/fleet.json"
    rm -f -- "$PARTIAL"
    fleet_watchdog "$@" &
    FLEET_WATCHDOG=$!
    run_fio "$TK_TMP/fleet.stderr" --output-format=json+ --output="$PARTIAL" "${args[@]}" >/dev/null || rc=$?
    fleet_watchdog_stop
    while IFS=$'\t' read -r label status written; do
        h=$label
        if [[ $status != ok ]]; then
            fleet_drop "$h" "$(fleet_batch_text "$h"): $(fleet_why_missing "$h" "$written (fio's client exit $rc)")"
            continue
        fi
        for job in ${FLEET_JOBS[$h]}; do
            case=${job%@*} k=${job##*@}
            dir="$(fleet_results_dir "$h")/$case" partial="$(fleet_results_dir "$h")/$case/.rep$k.json.partial"
            if [[ " $written " != *" $job "* || ! -e $partial ]]; then
                fleet_drop "$h" "$case rep $k: $(fleet_why_missing "$h" "no result for it in fio's output (fio's client exit $rc)")"
                break
            fi
            reply=$(service_ask check-result "$partial" "$(fleet_results_dir "$h")" "$case")
            if [[ $reply == ok ]]; then
                mv -f -- "$partial" "$dir/rep$k.json"
                continue
            fi
            mv -f -- "$partial" "$dir/rep$k.failed.json"
            diagnose_fault "$case rep $k on $(fleet_name "$h")" "" 0 0
            reason=${reply#bad$'\t'}
            [[ $reason != *"did no I/O"* ]] || reason+="; if its server refused the job, the reason is in $(fleet_check_log "$h" "$job")"
            fleet_drop "$h" "$case rep $k: $reason"
            break
        done
        # what followed a bad repetition in the same call is not kept
        rm -f -- "$(fleet_results_dir "$h")"/{*,.prefill}/.rep*.json.partial
    done < <(tk_python fleet split "$PARTIAL" "${split[@]}")
    PARTIAL=""
}

# --- a host that stops answering during a call -------------------------------------------------
# A knock is one TCP connection to a host's server port (the server takes it as a client that
# leaves without a job). A stopped server refuses it at once; a cut link (the server may still
# run) does not answer at all.
FLEET_LINK_TIMEOUT=${FLEET_LINK_TIMEOUT:-3} # seconds a knock waits for an answer

fleet_knock() { # HOST: 0 answered, 1 refused (no server), 124 no answer (timed out, or no route)
    local said rc=0
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    said=$(LC_ALL=C timeout "$FLEET_LINK_TIMEOUT" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ \
        "${FLEET_ADDRS[$1]}" "${FLEET_PORTS[$1]}" 2>&1) || rc=$?
    ((rc == 0 || rc == 124)) && return "$rc"
    [[ $said != *"Connection refused"* ]] || return 1
    return 124
}

# fio's client notices a silent server only while it asks that server for a running job's
# progress. A link cut as the call connects, or before the host's first job has started, left it
# waiting: in connect() until the kernel gave up (about 2 minutes), or in poll() for good (180 s
# and more here). So beside every call a watchdog knocks on each host every FLEET_KNOCK_S s; a
# host that misses FLEET_SILENT_KNOCKS knocks in a row has the client's connection to it closed
# (ss -K), and fio's client then leaves it and finishes with the others. fleet_why_missing names
# the cause afterwards.
readonly FLEET_KNOCK_S=5 FLEET_SILENT_KNOCKS=2
FLEET_WATCHDOG=""

fleet_watchdog() { # HOST...: until fio's client ends (fleet_watchdog_stop), or this run does
    local h rc pause="" closing=0 stopping=0
    local -A missed=()
    # stopped as the call ends, which closing a connection may have just made it do: the line
    # that says why is still written
    trap '[[ -z $pause ]] || kill "$pause" 2>/dev/null; ((closing)) && stopping=1 || exit 0' TERM
    while kill -0 "$$" 2>/dev/null; do
        sleep "$FLEET_KNOCK_S" &
        pause=$!
        wait "$pause"
        pause=""
        for h; do
            ((${missed[$h]:-0} >= 0)) || continue # closed already
            rc=0
            fleet_knock "$h" || rc=$?
            if ((rc == 0)); then
                missed[$h]=0
                continue
            fi
            missed[$h]=$((${missed[$h]:-0} + 1))
            ((missed[$h] >= FLEET_SILENT_KNOCKS)) || continue
            missed[$h]=-1
            closing=1
            fleet_close_connection "$h" "$rc"
            closing=0
            ((!stopping)) || exit 0
        done
    done
}

fleet_connection() { # HOST [SS_OPTION...]: fio's client's live TCP connections to the host (ss)
    ss -H -t "${@:2}" state connected exclude time-wait dst "${FLEET_ADDRS[$1]}" dport = "${FLEET_PORTS[$1]}"
}

fleet_close_connection() { # HOST KNOCK_RC: close fio's client's connection to a host that stopped answering
    local h=$1 why how="refused" err="$TK_TMP/ss-$1.stderr"
    # none left: the client has let that host go already (a stopped server resets its connection)
    [[ -n $(fleet_connection "$h" 2>/dev/null) ]] || return 0
    ((${2} != 124)) || how="did not answer"
    why="$(fleet_name "$h") $how $FLEET_SILENT_KNOCKS knocks in a row, $FLEET_KNOCK_S s apart"
    fleet_connection "$h" -K >/dev/null 2>"$err" || true
    if [[ -z $(fleet_connection "$h" 2>/dev/null) ]]; then
        info "$why: its connection is closed so that fio's client goes on with the other hosts"
    else # a kernel without CONFIG_INET_DIAG_DESTROY closes none
        warn "$why, but its connection could not be closed (ss -K: $(head -n 1 "$err" 2>/dev/null || true)); fio's client waits until the kernel gives it up"
    fi
}

fleet_watchdog_stop() {
    [[ -n $FLEET_WATCHDOG ]] || return 0
    kill "$FLEET_WATCHDOG" 2>/dev/null || true
    wait "$FLEET_WATCHDOG" 2>/dev/null || true
    FLEET_WATCHDOG=""
}

# fleet_why_missing HOST REASON: why a host's result is missing, named for what it is (one knock).
fleet_why_missing() {
    local h=$1 rc=0
    fleet_knock "$h" || rc=$?
    if ((rc == 124)); then
        echo "the link to $(fleet_name "$h") is cut: no answer within ${FLEET_LINK_TIMEOUT} s, while its server may still run; check the network between here and there"
    elif ((rc != 0)); then
        echo "its server is gone: nothing listens on $(fleet_name "$h") any more; start serve.bash there again"
    else
        echo "$2"
    fi
}

fleet_prefill() {
    local h hosts=()
    [[ -z $NO_PREFILL ]] || return 0
    for h in $(fleet_live); do
        step_done "$(fleet_results_dir "$h")" prefill || hosts+=("$h")
    done
    ((${#hosts[@]})) || return 0
    info "prefill: writing $(human_bytes "$REGION_BYTES") of the target of ${#hosts[@]} host(s) once with random data"
    for h in "${hosts[@]}"; do
        mkdir -p "$(fleet_results_dir "$h")/.prefill"
        {
            printf '[.prefill]\nfilename=%s\nsize=%s\nrw=write\nbs=1m\niodepth=16\n' \
                "$(fio_filename "${FLEET_TARGETS[$h]}")" "$REGION_BYTES"
            printf 'ioengine=%s\ndirect=%s\nrefill_buffers=1\nend_fsync=1\n' "$ENGINE_USED" "$DIRECT"
            fleet_prerun "$h" write
        } >"$(fleet_results_dir "$h")/.prefill/job.fio"
    done
    # A hidden case folder: the analysis never takes it for a case.
    for h in "${hosts[@]}"; do
        fleet_batch_new "$h"
        fleet_batch_add "$h" .prefill 1
    done
    fleet_run_all_hosts "${hosts[@]}"
    for h in "${hosts[@]}"; do
        [[ -n ${FLEET_DROPPED[$h]} ]] && continue
        step_set "$(fleet_results_dir "$h")" prefill "$(printf 'region %s bytes of %s written at %(%F %T)T' \
            "$REGION_BYTES" "${FLEET_TARGETS[$h]}" -1)"
    done
}

# --- the run loop's fleet side (called by lib/run.bash) ----------------------------------------
fleet_rep_done() { # INDEX REP: every host still in the run has it
    local h
    for h in $(fleet_live); do
        [[ -e $(fleet_results_dir "$h")/${CASE_NAMES[$1]}/rep$2.json ]] || return 1
    done
    return 0
}

fleet_prepare_case() { # INDEX
    local h dir
    for h in $(fleet_live); do
        dir="$(fleet_results_dir "$h")/${CASE_NAMES[$1]}"
        mkdir -p "$dir"
        render_jobfile "$1" "$ENGINE_USED" "$DIRECT" "$h" >"$dir/job.fio"
    done
}

fleet_print_plan() {
    local h
    print_plan
    info "  hosts    ${#FLEET_LABELS[@]}, each case on all at once (fio --client), results in $RESULTS/hosts/<host>/$SECTION:"
    for h in "${!FLEET_LABELS[@]}"; do
        info "           $(fleet_name "$h")  ${FLEET_TARGETS[$h]}  -> hosts/${FLEET_LABELS[$h]}"
    done
    info "  calls    up to $FLEET_BATCH repetitions in one fio call per host (--fleet-batch), in the run's order"
    info "  safety   each host's server checks its own target before every job (serve.bash)"
    info "  health   not captured from the hosts: run env.bash on each one for §1"
}

# Everything the section does on the fleet, after its options are read (section_main).
fleet_section_main() {
    load_hosts
    if declare -F section_plan >/dev/null || declare -F section_prepare >/dev/null ||
        declare -F section_before_repetition >/dev/null; then
        die "$EXIT_USAGE" "§$SECTION_NUMBER $SECTION_TITLE runs on one machine only: it sizes its cases from the local target or samples the drive between runs; run it on each host"
    fi
    [[ -z $DESTROY ]] || die "$EXIT_USAGE" "--destroy is each server's decision: give it to serve.bash on that host, not to the orchestrator"
    [[ $SIZE != all ]] || die "$EXIT_USAGE" "--size all: the hosts' targets differ in size; give a size, which each server caps at its own --size"
    # auto: the size serve.bash allows by default (each server caps the region at its own --size)
    REGION_BYTES=$(size_bytes "${SIZE/#auto/$AUTO_FILE_REGION}") REGION_NOTE="" TARGET_DEFAULT="" TARGET_CREATE=""
    TARGET_KIND=hosts TARGET_PATH="each host's own target" TARGET_BYTES=0
    cd "$TK_ROOT" || exit "$EXIT_FAIL"
    service_start # from here on: the plan asks it (the order's seed)
    resolve_state
    ENGINE_NOTE=""
    [[ -z $DRY_RUN ]] || { dry_run && exit "$EXIT_OK"; }
    fleet_print_plan
    TK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssd-toolkit.XXXXXX")
    trap on_exit EXIT
    trap on_interrupt INT TERM
    TARGET_PATH="hosts ${FLEET_ADDRS[*]}" acquire_lock
    choose_engine fleet_engine_works "the hosts"
    info "engine: $ENGINE_NOTE"
    local h
    for h in "${!FLEET_LABELS[@]}"; do
        RESULTS_DIR=$(fleet_results_dir "$h")
        [[ -z $FRESH ]] || move_results_aside
        section_folder_removed "$RESULTS_DIR"
        mkdir -p "$RESULTS_DIR"
        rm -f -- "$RESULTS_DIR/dropped.txt"
        TARGET_PATH="$(fleet_name "$h") ${FLEET_TARGETS[$h]}" TARGET_KIND=remote check_manifest
    done
    RESULTS_DIR="$RESULTS/hosts"
    fleet_prefill
    run_all

    info ""
    # Each host's own analysis, then the hosts side by side, in one Python process (pandas and
    # matplotlib imported once, not once per host). A host that dropped out may have a point left
    # with none: its analysis says so, excused. The process names what failed.
    local analyse=()
    for h in "${!FLEET_LABELS[@]}"; do
        RESULTS_DIR=$(fleet_results_dir "$h") section_has_manifest || continue
        analyse+=(--analyse "${FLEET_LABELS[$h]}")
        [[ -z ${FLEET_DROPPED[$h]} ]] || analyse+=(--excused "${FLEET_LABELS[$h]}")
    done
    tk_python hosts "$SECTION" "${analyse[@]}" -- "${ANALYSIS_ARGS[@]}" ||
        die "$EXIT_FAIL" "the analysis failed (named above); the raw results are kept"
    exit_if_failed "host(s) dropped out"
}
