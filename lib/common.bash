# shellcheck shell=bash
# lib/common.bash: exit codes, messages, checks, and the common options (declared with every
# other option in lib/options.tsv, read by lib/registry.bash).
# Sourced by every section script; never run on its own.

# Exit codes of every script.
# EXIT_TARGET: the run finished and a target of --targets failed (python -m analysis targets).
readonly EXIT_OK=0 EXIT_FAIL=1 EXIT_USAGE=2 EXIT_UNSAFE=3 EXIT_TARGET=4 EXIT_INTERRUPTED=130
export EXIT_OK EXIT_FAIL EXIT_USAGE EXIT_UNSAFE EXIT_TARGET EXIT_INTERRUPTED

TK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly TK_ROOT
TK_PROG=$(basename "$0")

# Messages go to stderr; an error starts with what is wrong and says how to fix it.
info() { printf '%s\n' "$*" >&2; }
warn() { printf '%s: warning: %s\n' "$TK_PROG" "$*" >&2; }
die() {
    local code=$1
    shift
    printf '%s: %s\n' "$TK_PROG" "$*" >&2
    exit "$code"
}

# What every run needs: lib/packages.tsv's run group and .venv. A fresh clone has neither, so the
# first script that needs them installs them (env.bash --install-only, quiet when all is there):
# README's commands are the whole set-up. NO_INSTALL=1 makes a missing piece an error instead.
ensure_installed() {
    [[ -x $TK_ROOT/.venv/bin/python ]] && command -v fio >/dev/null 2>&1 && return 0
    [[ -z ${NO_INSTALL:-} ]] ||
        die "$EXIT_FAIL" "the toolkit is not installed here (fio or .venv missing) and NO_INSTALL is set; run 'sudo bash env.bash --install-only'"
    info "$TK_PROG: installing what the toolkit needs first (bash env.bash --install-only)"
    bash "$TK_ROOT/env.bash" --install-only ||
        die "$EXIT_FAIL" "the install failed (see above); fix that, then run 'sudo bash env.bash --install-only'"
}

# The Python of the toolkit's own venv (made by env.bash from requirements.txt).
tk_python() {
    local py="$TK_ROOT/.venv/bin/python"
    [[ -x $py ]] || ensure_installed
    PYTHONPATH="$TK_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$py" -m analysis "$@"
}

# sysfs_block_of PATH: the sysfs folder of the block device PATH is (a device node) or lives on
# (a file, through its st_dev), the one place a path becomes /sys/dev/block/MAJ:MIN; fails where
# there is none (tmpfs, overlay, btrfs's anonymous st_dev).
sysfs_block_of() {
    local dev sys
    if [[ -b $1 ]]; then
        dev=$(stat -L -c '%Hr:%Lr' -- "$1" 2>/dev/null) || return 1
    else
        dev=$(stat -L -c '%Hd:%Ld' -- "$1" 2>/dev/null) || return 1
    fi
    [[ -e /sys/dev/block/$dev ]] && sys=$(readlink -f -- "/sys/dev/block/$dev") || return 1
    printf '%s\n' "$sys"
}

# shellcheck source=lib/packages.bash
source "$TK_ROOT/lib/packages.bash"
# shellcheck source=lib/registry.bash
source "$TK_ROOT/lib/registry.bash"
# shellcheck source=lib/process.bash
source "$TK_ROOT/lib/process.bash"

# --- validation -----------------------------------------------------------------------------
# Each check names the setting the way the user gave it (--runtime or RUNTIME=) so the message
# points at what to change.
require_int() { # NAME VALUE MIN
    if [[ ! $2 =~ ^[0-9]+$ ]] || ((10#$2 < $3)); then
        die "$EXIT_USAGE" "$1=$2: expected a whole number >= $3"
    fi
}
# Only fio's plain suffixes (k, m, g, t = powers of 1024): fio reads "KiB" as 1000, a trap.
require_size() { # NAME VALUE
    if [[ ! $2 =~ ^[0-9]+[kKmMgGtT]?$ ]] || [[ $2 =~ ^0+[^0-9]*$ ]]; then
        die "$EXIT_USAGE" "$1=$2: expected a size such as 512M or 8G (k, m, g, t are powers of 1024)"
    fi
}
require_one_of() { # NAME VALUE CHOICE...
    local name=$1 value=$2 choice
    shift 2
    for choice in "$@"; do [[ $value == "$choice" ]] && return 0; done
    die "$EXIT_USAGE" "$name=$value: expected one of: $*"
}

# --- list options of the sections -----------------------------------------------------------


# split_list NAME VALUE: the comma- (or space-) separated items of VALUE in the array LIST_ITEMS.
# An empty list or an item given twice is a usage error (it would make two cases of one name).
split_list() {
    local name=$1 item seen=" " words
    IFS=', ' read -r -a words <<<"$2"
    LIST_ITEMS=()
    for item in "${words[@]}"; do [[ -z $item ]] || LIST_ITEMS+=("$item"); done
    ((${#LIST_ITEMS[@]})) || die "$EXIT_USAGE" "$name is empty; give a comma-separated list, e.g. $name=4k,64k"
    for item in "${LIST_ITEMS[@]}"; do
        [[ $seen != *" $item "* ]] || die "$EXIT_USAGE" "$name=$2: '$item' is given twice"
        seen+="$item "
    done
}

# jobs_list NAME VALUE: the job counts (fio's numjobs) of VALUE, whole numbers >= 1, in
# JOBS_ITEMS. A case with more than one job is named with -j<N> (jobs_suffix).
jobs_list() {
    local jobs
    split_list "$1" "$2"
    JOBS_ITEMS=()
    for jobs in "${LIST_ITEMS[@]}"; do
        require_int "$1" "$jobs" 1
        JOBS_ITEMS+=("$((10#$jobs))")
    done
}
jobs_suffix() { ((10#$1 == 1)) || printf -- '-j%s' "$((10#$1))"; }
jobs_option() { ((10#$1 == 1)) || printf 'numjobs=%s' "$((10#$1))"; } # none for one job

# A size as the toolkit writes it in case names and fio options: 4k, 128k, 1m, 8g (the largest
# unit that divides it; plain bytes below 1 KiB).
size_token() { # BYTES
    local bytes=$1 unit shift
    for unit in t:40 g:30 m:20 k:10; do
        shift=${unit#*:}
        if ((bytes >= 1 << shift && bytes % (1 << shift) == 0)); then
            echo "$((bytes >> shift))${unit%:*}"
            return 0
        fi
    done
    echo "$bytes"
}

# A block size fio accepts, as size_token writes it. Must be a multiple of 512 bytes: direct I/O
# needs sector-aligned transfers.
block_size_token() { # NAME VALUE
    require_size "$1" "$2"
    local bytes
    bytes=$(size_bytes "$2")
    ((bytes % 512 == 0)) || die "$EXIT_USAGE" "$1: $2 is not a multiple of 512 bytes, which direct I/O needs"
    size_token "$bytes"
}

# Size in bytes of a size accepted by require_size.
size_bytes() {
    local v=$1 num unit
    num=${v%%[!0-9]*}
    unit=${v#"$num"}
    unit=${unit:0:1}
    case "$unit" in
        "") echo "$num" ;;
        k | K) echo $((num << 10)) ;;
        m | M) echo $((num << 20)) ;;
        g | G) echo $((num << 30)) ;;
        t | T) echo $((num << 40)) ;;
    esac
}

# Sizes to the nearest tenth of a GiB or TiB (a 1,535 MiB partition is 1.5 GiB, not 1.4).
human_bytes() {
    local b=$1 tenths
    if ((b >= 1 << 40)); then
        tenths=$(((b * 10 + (1 << 39)) >> 40))
        printf '%d.%d TiB' $((tenths / 10)) $((tenths % 10))
    elif ((b >= 1 << 30)); then
        tenths=$(((b * 10 + (1 << 29)) >> 30))
        printf '%d.%d GiB' $((tenths / 10)) $((tenths % 10))
    elif ((b >= 1 << 20)); then
        printf '%d MiB' $((b >> 20))
    else
        printf '%d KiB' $((b >> 10))
    fi
}

human_seconds() {
    local s=$1
    if ((s >= 3600)); then
        printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
    elif ((s >= 60)); then
        printf '%dm%02ds' $((s / 60)) $((s % 60))
    else
        printf '%ds' "$s"
    fi
}

# "0.43%", "99.99%", "<0.01%": PART as a share of WHOLE, never rounded up to 100%.
share_of() { # PART WHOLE
    awk -v p="$1" -v w="$2" 'BEGIN {
        x = 100 * p / w
        if (x > 0 && x < 0.01) { printf "<0.01%%"; exit }
        s = sprintf("%.2f", x)
        if (p < w && s + 0 >= 100) s = "99.99"
        sub(/\.?0+$/, "", s); printf "%s%%", s }'
}

# "at least 1.8 TiB, and up to 25m of time-based writes (at most 2.0 TiB at the 1200 MB/s this
# target wrote): 103% of its capacity" (a CAPACITY of 0 leaves the share out)
writes_text() { # MIN_BYTES TIMED_S SPEED_MBPS CAPACITY
    local most=$1 text=""
    (($1 == 0)) || text="at least $(human_bytes "$1")"
    ((${2} == 0)) || text+="${text:+, and }up to $(human_seconds "$2") of time-based writes"
    [[ -n $text ]] || text="nothing"
    if (($2 && $3 > 0)); then
        most=$(($1 + $2 * $3 * 1000000))
        text+=" (at most $(human_bytes "$most") at the $3 MB/s this target wrote)"
        (($4 == 0)) || text+=": up to $(share_of "$most" "$4") of its capacity"
    elif (($4 && $1)); then
        text+=": the least alone is $(share_of "$1" "$4") of its capacity"
    fi
    printf '%s' "$text"
}

# --- the common options -----------------------------------------------------------------------
# An option that takes a value: fail with the option's name when it has none (the next word
# being another option, `--qd --dry-run`, counts as none).
need_value() { # OPTION ARGS...: the arguments from the option on
    if (($# < 2)) || [[ $2 == --* ]]; then
        die "$EXIT_USAGE" "$1 needs a value; see --help"
    fi
}

# The common options (lib/options.tsv, scope common) and the profiles, for a section's --help.
common_usage() {
    cat <<EOF
Options (a flag overrides its environment variable, which overrides the default):
EOF
    usage_options common
    cat <<EOF
  -h, --help         this help
Profiles (the defaults of --runtime, --ramp, --repeat and --size):
  $(profile_summary standard)
  $(profile_summary quick)

Exit codes: 0 done; 1 a run or a tool failed; 2 bad usage or bad input; 3 refused for safety;
4 done, and a target of --targets failed (out/targets.md, out/junit.xml); 130 interrupted
(finished repetitions are kept; rerun the same command to resume).
EOF
}

# Sets the variable of every common option and of the script's own (SECTION's scope in
# lib/options.tsv): TARGET PROFILE RUNTIME RAMP REPEAT SIZE ENGINE DESTROY NO_PREFILL DRY_RUN
# FRESH HOSTS RESULTS, and e.g. QD_LIST for qd_sweep.
parse_common_options() {
    parse_options "common $SECTION" "$@"
    # A hosts file named relative to where the user is: the scripts cd to the toolkit folder.
    [[ -z $HOSTS || ! -f $HOSTS || $HOSTS == /* ]] || HOSTS="$PWD/$HOSTS"
    resolve_targets_file
    resolve_results_tree "$RESULTS"
    return 0
}

# TARGETS: the targets file, made absolute (the scripts cd to the toolkit folder) and checked
# before anything runs, so a typo costs a second, not the run.
resolve_targets_file() {
    [[ -n ${TARGETS:-} ]] || return 0
    [[ $TARGETS == /* ]] || TARGETS="$PWD/$TARGETS"
    [[ -f $TARGETS && -r $TARGETS ]] ||
        die "$EXIT_USAGE" "TARGETS=$TARGETS is not a readable file; give a targets file, e.g. examples/targets.yaml"
    return 0
}

# Judges the lab's targets (TARGETS) on the results tree, writing out/targets.md and
# out/junit.xml, or, without targets, removes the last run's (they are not this run's).
# Returns 0, EXIT_TARGET when one failed, or EXIT_USAGE for a file it cannot read.
judge_targets() { # SECTION: only that section's targets ("" for every section's)
    if [[ -z ${TARGETS:-} ]]; then
        tk_python targets "$RESULTS" --clear
        return 0
    fi
    tk_python targets "$RESULTS" "$TARGETS" --unresolved "${TARGETS_UNRESOLVED:-fail}" \
        ${1:+--sections "$1"}
}

# RESULTS: the results tree, made absolute here (the scripts cd to the toolkit folder later) and
# exported, so that the analysis (`--results` defaults to $RESULTS) reads and names the same tree.
resolve_results_tree() { # [DIR]
    RESULTS=${1:-$TK_ROOT/results}
    [[ $RESULTS == /* ]] || RESULTS="$PWD/$RESULTS"
    RESULTS=${RESULTS%/}
    [[ ! -e $RESULTS || -d $RESULTS ]] ||
        die "$EXIT_USAGE" "RESULTS=$RESULTS is not a folder; give a folder for the results tree, e.g. results/drive-a"
    export RESULTS
}

# fio in the background, then `wait`: a trapped Ctrl-C runs at once. With fio in the foreground
# bash defers the trap until fio exits, and skips it when fio (which catches SIGINT) exits
# normally, so the run would end as a failure (exit 1) instead of an interruption (130).
# FIO_PID lets the interrupt handler stop it. fio's stderr goes to STDERR_FILE; a redirection
# around the call would also swallow the interrupt handler's own messages, which run in here.
# fio's job processes call setsid(), and can outlive fio: one whose fio was killed while it
# started (the OOM killer, a kill -9; a window of a few hundred ms) waits on a futex for its
# parent forever, and one stuck in the kernel (an io_uring hipri read never reaped, fio issue
# #1598) is given up by fio after 300 s and spins on. Either holds the target open. Each fio is
# therefore started with its run and the target's lock in its environment (TK_FIO_RUN,
# TK_FIO_LOCK), which its job processes inherit: whatever fio leaves is stopped as it exits (a
# look through /proc, 3 ms), and a run that takes the lock stops those of an earlier run killed
# whole. fio never inherits the lock's descriptor, so a leftover cannot hold the target's lock
# either.
# Every fio starts with the tree's clock (TK_FIO_CLOCK, choose_fio_clock in lib/engine.bash) once
# it is chosen: fio then skips its own test of the TSC at start.
TK_FIO_CLOCK=""
run_fio() { # STDERR_FILE FIO_ARG...
    local rc=0 err=$1 run="$$.${EPOCHREALTIME/[.,]/}"
    shift
    [[ -z $TK_FIO_CLOCK ]] || set -- "--clocksource=$TK_FIO_CLOCK" "$@"
    if [[ -n ${TK_LOCK_FD:-} ]]; then
        TK_FIO_RUN=$run TK_FIO_LOCK=$TK_LOCK fio "$@" 2>"$err" {TK_LOCK_FD}>&- &
    else
        TK_FIO_RUN=$run fio "$@" 2>"$err" &
    fi
    FIO_PID=$!
    wait "$FIO_PID" || rc=$?
    FIO_PID=""
    stop_left_fio TK_FIO_RUN "$run"
    return "$rc"
}

stop_left_fio() { # VAR VALUE: stop every process whose environment holds VAR=VALUE
    local file pid stopped=()
    while IFS= read -r file; do
        pid=${file#/proc/}
        pid=${pid%/environ}
        kill -KILL "$pid" 2>/dev/null && stopped+=("$pid")
    done < <(grep -lsxzF -- "$1=$2" /proc/[0-9]*/environ)
    ((${#stopped[@]} == 0)) && return 0
    # SIGKILL lands when a process next runs, or when its I/O in the kernel ends: on a busy
    # machine that is later (v89: one CPU kept busy, still there after its parent's wait). Wait
    # up to 10 s for them to go, so that the target is free when this returns (a zombie's
    # environ is empty: it holds nothing)
    local tries
    for ((tries = 0; tries < 100; tries++)); do
        grep -qsxzF -- "$1=$2" /proc/[0-9]*/environ || break
        sleep 0.1
    done
    info "stopped ${#stopped[@]} fio job process(es) that fio left behind as it ended (pid ${stopped[*]}): killed as they started, or stuck in the kernel, they held the target open"
}

require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 ||
            die "$EXIT_USAGE" "'$tool' not found on PATH; install it (sudo bash env.bash installs all dependencies)"
    done
}
