# shellcheck shell=bash
# lib/service.bash: the run loop's helper process (one Python for the whole section: is this
# result good, is writing still safe, what went wrong...) and the lock that lets one run at a time
# use a target.
# Sourced by lib/run.bash; never run on its own.

# One Python process for the whole section answers "is this result good?" and "is writing still
# safe?" in milliseconds (see analysis/run/runner_service.py).
service_start() {
    coproc TK_SERVICE { tk_python runner; }
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

# The helper ends at the end of its input. That end comes only once every process holding the
# pipe's write side has closed it: a child that inherited it and lives on would hold the helper,
# and an unbounded wait the script with it (once, after Ctrl-C under load, a test's script stayed
# 90 s in this wait). So the wait is bounded, and what held the pipe is named.
SERVICE_INPUT="" # the helper's input pipe (pipe:[INODE]) once service_close_input closed it

service_close_input() { # the helper's end of input: it answers what it was asked, then ends
    local fd=${TK_SERVICE[1]:-}
    [[ -n $fd && -e /proc/$BASHPID/fd/$fd ]] || return 0
    SERVICE_INPUT=$(readlink "/proc/$BASHPID/fd/$fd" 2>/dev/null) || SERVICE_INPUT=""
    exec {fd}>&-
}

service_stop() {
    [[ -n ${TK_SERVICE_PID:-} ]] || return 0
    # kept: bash unsets TK_SERVICE_PID as soon as it reaps the helper
    local pid=$TK_SERVICE_PID pipe i holders
    service_close_input
    pipe=$SERVICE_INPUT
    for ((i = 0; i < 50; i++)); do
        process_running "$pid" || break
        sleep 0.1
    done
    if process_running "$pid"; then
        holders=$(pipe_holders "$pipe")
        warn "the toolkit's helper had not ended 5 s after its input closed${holders:+ (that pipe is still open in $holders)}; stopped it"
        pkill -KILL -P "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

pipe_holders() { # PIPE (as /proc/PID/fd names it: pipe:[INODE]) -> "pid 12 (fio), pid 34 (sleep)"
    local link pid out=""
    [[ -n $1 ]] || return 0
    for link in /proc/[0-9]*/fd/*; do
        [[ $(readlink "$link" 2>/dev/null) == "$1" ]] || continue
        pid=${link#/proc/} pid=${pid%%/*}
        [[ $out == *"pid $pid "* ]] || out+="${out:+, }pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null))"
    done
    printf '%s' "$out"
}

# Write a folder's manifest (a section's, or the tree's drive state: results/state) into the
# tree's record, or compare the settings with the one there (analysis/run/record.py): other
# settings exit 2 saying how they differ (WAS, e.g. "was prepared with", in place of "holds
# results measured with"); a manifest not written exits 1.
manifest_check() { # FOLDER WAS KEY=VALUE...
    local reply
    reply=$(service_ask manifest-check "$1" "${@:3}")
    case $reply in
        ok) ;;
        refused$'\t'*) reply=${reply#*$'\t'} && die "$EXIT_USAGE" "${reply/holds results measured with/${2:-holds results measured with}}" ;;
        *) die "$EXIT_FAIL" "${reply#*$'\t'}" ;;
    esac
}

# A step done once for the tree or a section (the state's purge and writes, a section's prefill):
# a field of the tree's record (run.json), keyed by where it belongs: state/purge, qd1/prefill,
# hosts/<host>/qd1/prefill (a folder under RESULTS, then the step).
step_key() { # FOLDER STEP
    local folder=${1#"$RESULTS"}
    printf '%s/%s' "${folder#/}" "$2"
}

step_done() { # FOLDER STEP
    [[ $(service_ask step-get "$RESULTS" "$(step_key "$1" "$2")") == ok$'\t'* ]]
}

step_what() { # FOLDER STEP: what was done, when
    local reply
    reply=$(service_ask step-get "$RESULTS" "$(step_key "$1" "$2")")
    [[ $reply != ok$'\t'* ]] || printf '%s' "${reply#ok$'\t'}"
}

# A change to the record of TREE through the helper (REQUEST: its verb and fields); the run stops
# when it cannot be made, saying what and why.
record_change() { # TREE WHAT REQUEST...
    local reply
    reply=$(service_ask "${@:3}")
    [[ $reply == ok ]] || die "$EXIT_FAIL" "could not record $2 in $1/run.json: ${reply#bad$'\t'}"
}

step_forget() { # FOLDER: its steps, the folder being moved aside (--fresh)
    record_change "$RESULTS" "that $1 was moved aside" step-forget "$RESULTS" "$(step_key "$1" "")"
}

section_aside() { # FOLDER ASIDE: the folder moved aside (--fresh); its manifest goes with it
    record_change "${1%/*}" "that $1 was moved aside" section-aside "$1" "$2"
}

# FOLDER (a section's, or the state's), before it is made: where it is not there (removed by hand
# to start over), the tree's record forgets its manifest, which would hold the new run to the
# settings of results that are gone.
section_folder_removed() {
    [[ -d $1 ]] || record_change "${1%/*}" "that $1 was removed" section-removed "$1"
}

step_set() { # FOLDER STEP WHAT
    record_change "$RESULTS" "the $2" step-set "$RESULTS" "$(step_key "$1" "$2")" "$3"
}

manifest_value() { # KEY: what this section's manifest records for KEY; nothing when it has none
    local reply
    reply=$(service_ask manifest-value "$RESULTS_DIR" "$1")
    [[ $reply != ok$'\t'* ]] || printf '%s' "${reply#ok$'\t'}"
}

section_has_manifest() { # whether this section ($RESULTS_DIR) has run into the tree's record
    [[ -n $(manifest_value created) ]]
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
    stop_left_fio TK_FIO_LOCK "$TK_LOCK" # an earlier run's, killed whole (lib/common.bash run_fio)
}
