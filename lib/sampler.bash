# shellcheck shell=bash
# lib/sampler.bash - the drive's temperature and throttle counters, sampled while a long run goes
# on (report §6: the burst write of wss_burst_test.bash).
#
# Sourced by lib/run.bash; never run on its own. A background loop asks the disk under the target
# for its health every INTERVAL seconds - one tool call per sample - and appends the tool's own
# JSON to DIR/samples.jsonl, one line per sample:
#     {"t": 1795328259.123, "source": "nvme", "rc": 0, "doc": {...}}
# t: wall time in epoch seconds (ms), taken right before the call (for the first sample, before
# the first attempt's capture); source: "nvme" (doc is
# `nvme smart-log DISK -o json`, the one with the thermal-management counters) or "smartctl"
# (doc is `smartctl -j -a DISK`); rc: the tool's exit code (smartctl's is a bit mask); doc: the
# JSON as the tool printed it, with its line breaks removed (JSON strings cannot hold one), and
# missing when the tool printed nothing. analysis/device/health_log.py turns the file into a CSV; nothing
# here parses a tool's output.
#
# Usage (after `source lib/sampler.bash`):
#   health_sampler_start DIR TARGET [INTERVAL_S]   # INTERVAL_S: whole seconds, default 5
#   health_sampler_stop                            # safe to call any time, also from traps
#
# health_sampler_start first captures DIR/first/ with collect_health_raw (lib/collect.bash): the
# same resolution of a file or partition to its whole disk, the same commands. That first attempt
# decides: nvme smart-log answered -> the loop samples it; else smartctl could open and identify
# the disk -> the loop samples smartctl; else the device has no health to sample (a virtual disk,
# loop, zram, a file on tmpfs...): DIR/samples.unavailable gets the reason in one line, no loop is
# started, and the run goes on. Either way one line on stderr says what happens. It removes the
# samples of an earlier start in DIR (an unfinished repetition being run again).
# HEALTH_SAMPLER_PID is the loop's pid while it runs; HEALTH_SAMPLER_NOTE the line printed.
#
# Neither function ever fails (both return 0, also under `set -euo pipefail`). The loop does not
# outlive the script: health_sampler_stop ends it (and the tool call it is waiting for) and reaps
# it; call it from the section's EXIT handler. Should the script die without calling it (kill -9),
# the loop notices within one interval and exits. The loop and its tools ignore SIGINT and
# SIGQUIT: Ctrl-C is the script's to handle (and then to call health_sampler_stop). Call
# health_sampler_start in the script's own shell, not in a pipeline or $(...), or
# health_sampler_stop cannot find the loop.
# Cost while fio runs: one tool call (a few ms) and one `sleep` per interval.

# shellcheck source=lib/collect.bash
declare -F collect_health_raw >/dev/null || source "$(dirname -- "${BASH_SOURCE[0]}")/collect.bash"
# shellcheck source=lib/process.bash
declare -F stop_process >/dev/null || source "$(dirname -- "${BASH_SOURCE[0]}")/process.bash"

HEALTH_SAMPLER_PID=""
HEALTH_SAMPLER_DIR=""
HEALTH_SAMPLER_NOTE=""

# _sampler_note TEXT - say what the sampler does (stderr, and HEALTH_SAMPLER_NOTE).
_sampler_note() {
    HEALTH_SAMPLER_NOTE="health sampler: $*"
    printf '%s\n' "$HEALTH_SAMPLER_NOTE" >&2
}

# _sampler_epoch - wall time in epoch seconds with milliseconds (EPOCHREALTIME has microseconds,
# and the locale's decimal separator).
_sampler_epoch() {
    local t=${EPOCHREALTIME/,/.}
    printf '%s\n' "${t%???}"
}

# _sampler_source FIRST - which tool answered in collect_health_raw's capture FIRST: "nvme" when
# nvme smart-log exited 0 with output; "smartctl" when smartctl printed JSON and could open and
# identify the device (exit status bits 0 and 1 clear; bits 2-7 report the drive's state, with
# the data printed). Fails when neither did.
_sampler_source() {
    local first=$1 rc
    if [[ -s $first/nvme-smart-log.json ]] && rc=$(cat -- "$first/nvme-smart-log.rc" 2>/dev/null) &&
        [[ $rc == 0 ]]; then
        echo nvme
    elif [[ -s $first/smartctl.json ]] && rc=$(cat -- "$first/smartctl.rc" 2>/dev/null) &&
        [[ $rc =~ ^[0-9]+$ ]] && (((rc & 3) == 0)); then
        echo smartctl
    else
        return 1
    fi
}

# _sampler_reason FIRST TARGET - one line: why FIRST holds no health to sample. Only exit codes
# and collect.bash's own .err lines are read here; the tools' own words (smartctl's messages in
# its JSON) are added by analysis/device/health_log.py from FIRST/smartctl.json.
_sampler_reason() {
    local first=$1 target=$2 disk rc line part
    local -a parts=()
    if [[ ! -s $first/health_device.txt ]]; then
        line=$(head -n 1 -- "$first/smartctl.err" 2>/dev/null) || line=""
        printf '%s\n' "${line:-no block device under $target to query}"
        return 0
    fi
    disk=$(cat -- "$first/health_device.txt")
    if [[ -s $first/smartctl.json ]]; then
        rc=$(cat -- "$first/smartctl.rc" 2>/dev/null) || rc="?"
        parts+=("smartctl -j -a could not open or identify it (exit $rc)")
    elif line=$(head -n 1 -- "$first/smartctl.err" 2>/dev/null) && [[ -n $line ]]; then
        parts+=("$line")
    fi
    if line=$(head -n 1 -- "$first/nvme-smart-log.err" 2>/dev/null) && [[ -n $line ]]; then
        parts+=("nvme smart-log: ${line#nvme: }")
    fi
    ((${#parts[@]})) || parts+=("no tool answered")
    line=${parts[0]}
    for part in "${parts[@]:1}"; do line+="; $part"; done
    printf '%s: %s\n' "$disk" "$line"
}

# _sampler_append DIR T SOURCE RC FILE - one line of samples.jsonl: the tool's JSON in FILE (its
# line breaks removed: a JSON text holds them only between tokens) wrapped with its time.
_sampler_append() {
    local dir=$1 t=$2 src=$3 rc=$4 file=$5 doc="" line
    [[ -s $file ]] && doc=$(<"$file")
    line="{\"t\": $t, \"source\": \"$src\", \"rc\": $rc"
    [[ -z $doc ]] || line+=", \"doc\": ${doc//[$'\r\n']/}"
    printf '%s}\n' "$line" >>"$dir/samples.jsonl" || true
}

# --- the loop (runs in a background subshell) --------------------------------------------------
_SAMPLER_CHILD=""
_SAMPLER_STOP=0

# On TERM: end the tool call or the sleep being waited for, and leave at the next check.
_sampler_on_term() {
    _SAMPLER_STOP=1
    if [[ -n $_SAMPLER_CHILD ]]; then
        kill -TERM "$_SAMPLER_CHILD" 2>/dev/null
        wait "$_SAMPLER_CHILD" 2>/dev/null
        _SAMPLER_CHILD=""
    fi
}

# _sampler_wait CMD [ARG...] - run CMD as a child the TERM handler can end, and wait for it.
_sampler_wait() {
    "$@" &
    _SAMPLER_CHILD=$!
    wait "$_SAMPLER_CHILD"
    local rc=$?
    _SAMPLER_CHILD=""
    return "$rc"
}

# _sampler_sample DIR SOURCE DISK - one sample, appended unless a stop came during the call (its
# output would be cut short).
_sampler_sample() {
    local dir=$1 src=$2 disk=$3 t rc=0 out="$1/.sample.json"
    local -a cmd=(smartctl -j -a "/dev/$disk")
    [[ $src == smartctl ]] || cmd=(nvme smart-log "/dev/$disk" -o json)
    if command -v timeout >/dev/null 2>&1; then
        cmd=(timeout -k "${COLLECT_KILL_AFTER:-5}" "${COLLECT_TIMEOUT:-20}" "${cmd[@]}")
    fi
    t=$(_sampler_epoch)
    _sampler_wait "${cmd[@]}" >"$out" 2>/dev/null || rc=$?
    ((_SAMPLER_STOP == 0)) || return 0
    _sampler_append "$dir" "$t" "$src" "$rc" "$out"
    rm -f -- "$out"
}

# _sampler_loop DIR SOURCE DISK INTERVAL OWNER - sample every INTERVAL s on a fixed schedule
# (a slow call delays the next sample, it does not shift all later ones) while OWNER lives.
_sampler_loop() {
    local dir=$1 src=$2 disk=$3 interval=$4 owner=$5 next now delay fd pause
    # A sampler never fails the section: a failed command in here is recorded or skipped.
    set +e
    trap _sampler_on_term TERM
    # Ctrl-C reaches the whole process group: the script's handler stops the loop (with TERM),
    # after the loop has left its tool call whole. Its children inherit the ignoring.
    trap '' INT QUIT
    # Hold none of the script's descriptors (its run lock, its helper's pipes).
    for fd in /proc/self/fd/*; do
        fd=${fd##*/}
        if ((fd > 2)) && [[ -e /proc/self/fd/$fd ]]; then
            exec {fd}>&-
        fi
    done
    next=${EPOCHREALTIME/[.,]/}
    while ((_SAMPLER_STOP == 0)); do
        next=$((next + interval * 1000000))
        now=${EPOCHREALTIME/[.,]/}
        delay=$((next - now))
        if ((delay < 0)); then
            next=$now delay=0
        fi
        printf -v pause '%d.%06d' $((delay / 1000000)) $((delay % 1000000))
        _sampler_wait sleep "$pause"
        ((_SAMPLER_STOP == 0)) || break
        kill -0 "$owner" 2>/dev/null || break # the script is gone: do not outlive it
        _sampler_sample "$dir" "$src" "$disk"
    done
    rm -f -- "$dir/.sample.json"
}

# --- the interface ------------------------------------------------------------------------------

# health_sampler_start DIR TARGET [INTERVAL_S] - see the header. Always returns 0.
health_sampler_start() {
    local dir=${1:-} target=${2:-} interval=${3:-5} t src disk rc
    health_sampler_stop
    HEALTH_SAMPLER_NOTE=""
    if [[ -z $dir || -z $target ]]; then
        _sampler_note "usage: health_sampler_start DIR TARGET [INTERVAL_S]; no samples taken"
        return 0
    fi
    if [[ ! $interval =~ ^[1-9][0-9]*$ ]]; then
        _sampler_note "interval '$interval' is not a whole number of seconds; using 5"
        interval=5
    fi
    if ! mkdir -p -- "$dir" 2>/dev/null || [[ ! -w $dir ]]; then
        _sampler_note "cannot write to $dir; no samples taken, the run goes on"
        return 0
    fi
    rm -rf -- "$dir/first" "$dir/samples.jsonl" "$dir/samples.unavailable" "$dir/.sample.json" \
        "$dir/sampler.log"
    t=$(_sampler_epoch)
    collect_health_raw "$dir/first" "$target" || true
    if ! src=$(_sampler_source "$dir/first"); then
        _sampler_reason "$dir/first" "$target" >"$dir/samples.unavailable"
        _sampler_note "unavailable on this device: $(cat -- "$dir/samples.unavailable");" \
            "no samples, the run goes on"
        return 0
    fi
    # The first attempt is the first sample.
    if [[ $src == nvme ]]; then
        rc=$(cat -- "$dir/first/nvme-smart-log.rc" 2>/dev/null) || rc=0
        _sampler_append "$dir" "$t" nvme "$rc" "$dir/first/nvme-smart-log.json"
    else
        rc=$(cat -- "$dir/first/smartctl.rc" 2>/dev/null) || rc=0
        _sampler_append "$dir" "$t" smartctl "$rc" "$dir/first/smartctl.json"
    fi
    disk=$(cat -- "$dir/first/health_device.txt" 2>/dev/null) || disk=""
    disk=${disk#/dev/}
    _sampler_loop "$dir" "$src" "$disk" "$interval" "$$" </dev/null >/dev/null \
        2>>"$dir/sampler.log" &
    HEALTH_SAMPLER_PID=$!
    HEALTH_SAMPLER_DIR=$dir
    _sampler_note "sampling /dev/$disk every ${interval} s ($src) into $dir/samples.jsonl"
    return 0
}

# health_sampler_stop - end the loop if one runs, and reap it. Always returns 0.
health_sampler_stop() {
    local pid=${HEALTH_SAMPLER_PID:-} dir=${HEALTH_SAMPLER_DIR:-}
    HEALTH_SAMPLER_PID="" HEALTH_SAMPLER_DIR=""
    [[ -n $pid ]] || return 0
    # The loop ends its tool call and exits at once; a tool stuck in the kernel is given 5 s.
    stop_process "$pid"
    if [[ -n $dir ]]; then
        rm -f -- "$dir/.sample.json"
        [[ -s $dir/sampler.log ]] || rm -f -- "$dir/sampler.log"
    fi
    return 0
}
