#!/usr/bin/env bash
# The whole report: §1 and every section, then out/report.md and out/report.html.
#
# Usage: sudo bash report.bash [OPTIONS] (the options every section takes; see --help)
# `make report` runs this. Every section runs even when an earlier one failed, so one failure
# costs only its own section; finished repetitions are kept, so a rerun does only what is missing.
set -uo pipefail

# shellcheck source=lib/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
# shellcheck source=lib/pts.bash
source "$TK_ROOT/lib/pts.bash"

# The sections, SECTION_IDS, and which run on a fleet: lib/sections.tsv (read by lib/registry.bash).
LOCAL_ONLY=() # sections that refuse --hosts (they size their cases from the local drive)
SECTION_SCRIPTS=()
for id in "${SECTION_IDS[@]}"; do
    SECTION_SCRIPTS+=("${SECTION_SCRIPT_OF[$id]}")
    [[ ${SECTION_FLEET_OF[$id]} == yes ]] || LOCAL_ONLY+=("$id")
done

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [OPTIONS]

Runs env.bash (§1), then each section with the same options:
  ${SECTION_SCRIPTS[*]}
then assembles out/report.md and out/report.html (figures embedded) and prints a one-screen
summary. A section that fails or is refused does not stop the others; its reason goes
into the report's "Anomalies and limitations". Ctrl-C stops all (finished repetitions are kept).

Options: those every section takes (bash qd1_test.bash --help), e.g.
  --profile quick|standard   --target PATH   --destroy DEVICE   --results DIR   --dry-run
and one of its own:
$(usage_options report)
A section's own settings go in the environment (QD_LIST=1,4,16 bash $TK_PROG): the options are
given to every section.

With --hosts (HOSTS), a fleet run: every section runs on all hosts at once (see docs/fleet.md),
except ${LOCAL_ONLY[*]}, which is skipped with the reason; §1 records this machine.
With --results DIR (RESULTS), the results go to DIR and the report to out/<name of DIR>/.
Each section's messages are kept in DIR/report-logs/<section>.log, and the exit codes in the
tree's record DIR/run.json, which the report reads (a section that failed or was skipped is named
in the report with the reason).

With --targets FILE (TARGETS; make report TARGETS=FILE), a lab's targets are judged once every
section has run, each with its 95% interval: the Targets table at the top of the report and in
out/targets.md, out/junit.xml for the CI server (--unresolved pass: a target not resolved does
not fail the run). The sections themselves are not given the targets.

Exit codes: 0 every section ran (and every target passed); 1 a section failed (the report holds
the others, and the targets are still judged); 2 bad usage; 4 every section ran and a target
failed, was not run or was host-bound; 130 interrupted.
EOF
}

# The error a section ended with: the last line its script wrote as "<script>: ...".
last_error() { # LOG SCRIPT
    grep -a "^$2: " "$1" 2>/dev/null | grep -av ': warning: ' | tail -n 1 | cut -d' ' -f2- |
        tr '\t' ' '
}

run_part() { # NAME SCRIPT ARGS...: run it, log its stderr, record its exit code
    local name=$1 script=$2 rc=0 log="$RESULTS/report-logs/$1.log" started
    shift 2
    started=$(date +%s)
    info ""
    info "=== $name: bash $script${*:+ $*} ==="
    # stderr through tee into the log, stdout straight to ours (fd 3). tee -i ignores Ctrl-C, so the
    # section's last words after an interruption still reach the terminal and the log.
    bash "$TK_ROOT/$script" "$@" 2>&1 >&3 | tee -i "$log" >&2
    rc=${PIPESTATUS[0]}
    record_status "$name" "$rc" "$started" "$( ((rc == 0)) || last_error "$log" "$script")"
    return "$rc"
}

record_status() { # SECTION EXIT|skipped|outside STARTED ERROR: into the tree's record, which the report reads
    tk_python record "$RESULTS" status "$@" || die "$EXIT_FAIL" "could not record $1's outcome in $RESULTS/run.json (see above)"
}

# The sections chosen: --sections takes them out of the arguments; the rest go to every script.
choose_sections() { # ARGS...: sets CHOSEN and PASSED
    local chosen=${SECTIONS:-} id
    PASSED=()
    while (($#)); do
        case "$1" in
            -h | --help) usage && exit "$EXIT_OK" ;;
            --sections=*) chosen=${1#--sections=} ;;
            --sections) need_value "$@" && chosen=$2 && shift ;;
            --history=*) export HISTORY=${1#--history=} ;;
            --history) need_value "$@" && export HISTORY=$2 && shift ;;
            # The targets are judged once, on the whole tree, at the end: not by each section.
            --targets=*) TARGETS=${1#--targets=} ;;
            --targets) need_value "$@" && TARGETS=$2 && shift ;;
            --unresolved=*) TARGETS_UNRESOLVED=${1#--unresolved=} ;;
            --unresolved) need_value "$@" && TARGETS_UNRESOLVED=$2 && shift ;;
            *) PASSED+=("$1") ;;
        esac
        shift
    done
    CHOSEN=("${SECTION_IDS[@]}")
    # Kept here, never passed on: the sections would each judge (and fail) their own.
    resolve_targets_file # checked before anything runs
    LAB_TARGETS=${TARGETS:-} LAB_UNRESOLVED=${TARGETS_UNRESOLVED:-fail}
    unset TARGETS TARGETS_UNRESOLVED
    [[ $LAB_UNRESOLVED == fail || $LAB_UNRESOLVED == pass ]] ||
        die "$EXIT_USAGE" "--unresolved $LAB_UNRESOLVED: expected fail or pass"
    [[ -n $chosen ]] || return 0
    split_list --sections "$chosen"
    for id in "${LIST_ITEMS[@]}"; do
        [[ " ${SECTION_IDS[*]} " == *" $id "* ]] ||
            die "$EXIT_USAGE" "--sections: unknown section '$id'; choose from ${SECTION_IDS[*]}"
    done
    CHOSEN=("${LIST_ITEMS[@]}")
}

# What the whole report writes to a block device, per section and in all, before anything runs:
# each chosen section's plan (its --dry-run, which touches nothing) adds its line to a file
# (TK_PLAN_WRITES, lib/plan.bash); the state's fill is done once per tree, so counted once.
plan_writes() { # ARGS...
    local plan id section state min timed speed capacity total_state=0 total_min=0 total_timed=0
    local fastest=0 whole=0
    plan=$(mktemp)
    for id in "${CHOSEN[@]}"; do
        TK_PLAN_WRITES=$plan bash "$TK_ROOT/${SECTION_SCRIPT_OF[$id]}" "$@" --dry-run >/dev/null 2>&1 || true
    done
    if [[ ! -s $plan ]]; then
        rm -f -- "$plan"
        return 0
    fi
    info "=== what this report writes to its target ==="
    while IFS=$'\t' read -r section state min timed speed capacity; do
        ((state > total_state)) && total_state=$state
        total_min=$((total_min + min - state)) total_timed=$((total_timed + timed))
        ((speed > fastest)) && fastest=$speed
        whole=$capacity
        info "  $(printf '%-6s' "§${SECTION_NUMBER_OF[$section]}") $(writes_text "$((min - state))" "$timed" "$speed" 0)"
    done <"$plan"
    rm -f -- "$plan"
    ((total_state == 0)) || info "  state  $(human_bytes "$total_state"): the state's sequential fill, once for the results tree"
    info "  in all $(writes_text "$((total_min + total_state))" "$total_timed" "$fastest" "$whole")"
}

main() {
    choose_sections "$@"
    set -- "${PASSED[@]}"
    # A fresh clone: install before the first step that needs Python (the record, just below).
    ensure_installed
    # --results DIR: the word after it (the sections check the rest of the options themselves).
    # And whether it is a fleet run (--hosts, HOSTS=): the sections that run on one machine only
    # are then skipped with the reason, not failed.
    local results="" fleet=${HOSTS:-} i profile=${PROFILE:-} pts_class=${PTS_CLASS:-enterprise}
    for ((i = 1; i <= $#; i++)); do
        case "${!i}" in
            --results=*) results=${!i#--results=} ;;
            --results) ((i < $#)) && { i=$((i + 1)) && results=${!i}; } ;;
            --hosts | --hosts=*) fleet=1 ;;
            --profile=*) profile=${!i#--profile=} ;;
            --profile) ((i < $#)) && { i=$((i + 1)) && profile=${!i}; } ;;
            --pts=*) pts_class=${!i#--pts=} ;;
            --pts) ((i < $#)) && { i=$((i + 1)) && pts_class=${!i}; } ;;
        esac
    done
    resolve_results_tree "${results:-${RESULTS:-}}"
    mkdir -p "$RESULTS/report-logs"
    exec 3>&1
    tk_python record "$RESULTS" clear-status || die "$EXIT_FAIL" "could not write $RESULTS/run.json (see above)"
    # Ctrl-C reaches every process of the terminal; the section stops itself (exit 130) and this
    # loop then stops too, after recording it. A handler, not '': an ignored signal would stay
    # ignored in the sections, and they could not be interrupted.
    trap ':' INT

    local failed=0 rc id
    [[ -n $fleet ]] || plan_writes "$@"
    run_part env env.bash "$@" || failed=1
    for id in "${SECTION_IDS[@]}"; do
        if [[ " ${CHOSEN[*]} " != *" $id "* ]]; then
            record_status "$id" skipped "$(date +%s)" "not among --sections ${CHOSEN[*]}"
            continue
        fi
        # --profile pts: SNIA PTS's tests run in the sections that have one (lib/pts.tsv)
        if [[ $profile == pts && -z $(pts_tests_of "$id" "$pts_class") ]]; then
            record_status "$id" outside "$(date +%s)" "SNIA PTS has no $pts_class test in this section (--profile pts)"
            continue
        fi
        if [[ -n $fleet && " ${LOCAL_ONLY[*]} " == *" $id "* ]]; then
            record_status "$id" skipped "$(date +%s)" \
                "runs on one machine only (it sizes its cases from the local drive); run ${SECTION_SCRIPT_OF[$id]} on each host"
            continue
        fi
        rc=0
        run_part "$id" "${SECTION_SCRIPT_OF[$id]}" "$@" || rc=$?
        ((rc == EXIT_INTERRUPTED)) && { info "interrupted: the report is assembled from what finished"; failed=$rc; break; }
        ((rc == 0)) || failed=1
    done
    local arg
    for arg in "$@"; do [[ $arg == --dry-run ]] && exit "$failed"; done

    info ""
    # The lab's targets first (out/targets.md, out/junit.xml; without them the last run's are
    # removed), so that the history records each verdict and the report opens with them.
    local targets_rc=0
    TARGETS=$LAB_TARGETS TARGETS_UNRESOLVED=$LAB_UNRESOLVED judge_targets "" || targets_rc=$?
    ((targets_rc == 0 || targets_rc == EXIT_TARGET)) || failed=1
    # Into the run history (HISTORY, else results/history.sqlite), so that the report can show
    # this drive's earlier runs beside this one; 'make history' shows every drive's trends.
    tk_python history add "$RESULTS" || failed=1
    tk_python report || failed=1
    ((failed != 0 || targets_rc != EXIT_TARGET)) || failed=$EXIT_TARGET
    exit "$failed"
}

main "$@"
