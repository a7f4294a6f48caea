#!/usr/bin/env bash
# serve.bash: make this machine one host of a fleet run. Checks the local target with the same
# safety interlocks as a local run, then serves it with fio's own server (`fio --server`), so that
# an orchestrator (any section script with HOSTS= or --hosts) runs its cases here.
#
# Usage: sudo bash serve.bash --listen ADDR[:PORT] [--target PATH] [--size SIZE]
#                             [--destroy DEVICE] [--read-only]      (see --help)
# Runs until stopped (Ctrl-C or SIGTERM); the vouch is withdrawn on exit.
#
# What is enforced where: fio's server runs any job a client sends it and has no hook to inspect
# one. So the orchestrator puts `exec_prerun=<this machine's check>` into every job it sends, and
# fio runs that check here right before the job starts, skipping the job when it fails: the
# check (serve.bash --check) compares the job's target and size with what this server vouched
# for and, for a job that writes to a block device, runs the safety interlocks again. That stops
# mistakes (a wrong hosts file, a disk mounted since), not a hostile client that leaves the
# check out: bind the server to a lab-internal address.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG --listen ADDR[:PORT] [options]

Serve this machine's target to a fleet run: check it as a local run would (a block device that
is mounted, is swap, has holders or carries a signature is refused, exit 3), then run
'fio --server' on ADDR:PORT until stopped. Jobs sent by the toolkit's orchestrator are checked
here right before they start (same target, region within the size vouched for, and for writes
the safety interlocks again); a job that fails the check is skipped by fio and reported by the
orchestrator as refused.

Options (a flag overrides its environment variable, which overrides the default):
$(usage_options serve)
  -h, --help           this help

On the orchestrator, name this host and its target: HOSTS=ADDR:PORT with --target PATH, or a
line 'ADDR:PORT PATH' in a --hosts file. The orchestrator and every server must run the same fio
version. State (the vouch and the check the jobs call): \${TK_SERVE_DIR:-/run/ssd-toolkit};
the output of each job's check: tmp/serve-PORT/<job>.prerun.txt (<job>: CASE@REP).

Exit codes: 0 stopped; 1 fio's server failed; 2 bad usage; 3 refused for safety.
Example: sudo bash $TK_PROG --listen 10.0.0.12 --target /dev/nvme0n1p4 --destroy /dev/nvme0n1p4
EOF
}

# TARGET SIZE DESTROY LISTEN READ_ONLY (lib/options.tsv, scope serve), then LISTEN_ADDR and
# LISTEN_PORT.
parse_serve_options() {
    parse_options serve "$@"
    [[ -n $LISTEN ]] || die "$EXIT_USAGE" "no address to listen on; give --listen ADDR[:PORT] (or LISTEN=), e.g. --listen 10.0.0.12"
    LISTEN_ADDR=${LISTEN%:*} LISTEN_PORT=$FLEET_DEFAULT_PORT
    [[ $LISTEN == *:* ]] && LISTEN_PORT=${LISTEN##*:}
    [[ -n $LISTEN_ADDR ]] || die "$EXIT_USAGE" "--listen $LISTEN: no address; e.g. --listen 10.0.0.12:$FLEET_DEFAULT_PORT"
    require_int "--listen port" "$LISTEN_PORT" 1
    ((LISTEN_PORT < 65536)) || die "$EXIT_USAGE" "--listen $LISTEN: port $LISTEN_PORT is not a TCP port"
}

# --- the check fio runs before each job (exec_prerun) -------------------------------------------
vouched() { # VOUCH_FILE KEY: a value of the vouch record
    sed -n "s/^$2=//p" "$1" | head -n 1
}

# serve.bash --check VOUCH TARGET BYTES read|write: exit 0 when the job may run, 3 (with the
# reason on stdout, which fio saves in <job>.prerun.txt) when it may not.
check_job() {
    local vouch=$1 target=$2 bytes=$3 mode=$4 served region
    [[ -r $vouch ]] || { echo "refused: no vouch at $vouch (is serve.bash running?)"; exit "$EXIT_UNSAFE"; }
    served=$(vouched "$vouch" target)
    region=$(vouched "$vouch" region_bytes)
    if [[ $(realpath -m -- "$target") != "$served" ]]; then
        echo "refused: this server vouches for $served, not $target"
        exit "$EXIT_UNSAFE"
    fi
    if ((bytes > region)); then
        echo "refused: the job uses $bytes bytes of $served; this server vouches for $region"
        exit "$EXIT_UNSAFE"
    fi
    if [[ $mode == write ]]; then
        if [[ $(vouched "$vouch" mode) == read-only ]]; then
            echo "refused: this server serves $served read-only (--read-only)"
            exit "$EXIT_UNSAFE"
        fi
        if [[ $(vouched "$vouch" kind) == block ]]; then
            local reason
            if ! reason=$(tk_python safety "$served" "$(vouched "$vouch" destroy)" 2>&1); then
                echo "refused: ${reason:-writing to $served is not safe}"
                exit "$EXIT_UNSAFE"
            fi
        fi
    fi
    echo "ok: $mode of $bytes bytes of $served"
}

# --- serving ------------------------------------------------------------------------------------
write_vouch() { # VOUCH CHECK
    local vouch=$1 check=$2 mode=read-write
    [[ -z $READ_ONLY ]] || mode="read-only"
    {
        printf 'target=%s\nkind=%s\nregion_bytes=%s\nmode=%s\ndestroy=%s\n' \
            "$TARGET_PATH" "$TARGET_KIND" "$REGION_BYTES" "$mode" "$DESTROY"
        printf 'listen=%s:%s\npid=%s\nfio=%s\ntoolkit=%s\nsince=%(%F %T)T\n' \
            "$LISTEN_ADDR" "$LISTEN_PORT" "$$" "$(fio --version)" "$TK_ROOT" -1
    } >"$vouch.partial"
    mv -f -- "$vouch.partial" "$vouch"
    # The orchestrator knows only the port: this fixed name is what its jobs call.
    printf '#!/bin/sh\nexec bash %q --check %q "$@"\n' "$TK_ROOT/serve.bash" "$vouch" >"$check"
    chmod 755 "$check"
}

stop_server() {
    trap '' INT TERM
    if [[ -n ${FIO_PID:-} ]]; then
        pkill -TERM -P "$FIO_PID" 2>/dev/null || true # the job fio forked for a client
        stop_process "$FIO_PID"
    fi
    rm -f -- "${VOUCH:-}" "${CHECK:-}"
    [[ -n ${TK_TMP:-} ]] && rm -rf -- "$TK_TMP"
}

main() {
    if [[ ${1:-} == --check ]]; then
        (($# == 5)) || die "$EXIT_USAGE" "--check VOUCH TARGET BYTES read|write"
        check_job "${@:2}"
        exit "$EXIT_OK"
    fi
    parse_serve_options "$@"
    require_tools fio
    resolve_target
    [[ -n $READ_ONLY ]] || check_writes_allowed

    local state port_pid
    state=$(serve_state_dir)
    mkdir -p -- "$state" 2>/dev/null || true
    [[ -w $state ]] ||
        die "$EXIT_USAGE" "cannot write the server's state to $state; run with sudo (or set TK_SERVE_DIR to a writable folder, the same on the orchestrator)"
    VOUCH="$state/serve-$LISTEN_PORT.vouch" CHECK="$state/serve-$LISTEN_PORT.check"
    if [[ -e $VOUCH ]]; then
        port_pid=$(vouched "$VOUCH" pid)
        if [[ -n $port_pid ]] && kill -0 "$port_pid" 2>/dev/null; then
            die "$EXIT_USAGE" "port $LISTEN_PORT is already served by pid $port_pid ($(vouched "$VOUCH" target)); stop it or choose another port"
        fi
    fi

    TK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssd-toolkit.XXXXXX")
    trap stop_server EXIT
    trap 'exit "$EXIT_OK"' INT TERM
    # A local run on the same target while serving would disturb both: hold its lock.
    acquire_lock
    [[ -z $TARGET_CREATE ]] || create_file_target
    write_vouch "$VOUCH" "$CHECK"
    # fio saves each job's check output (<job>.prerun.txt) in its working folder.
    local workdir="$TK_ROOT/tmp/serve-$LISTEN_PORT"
    mkdir -p -- "$workdir"
    cd -- "$workdir"
    info "serving $TARGET_PATH ($TARGET_KIND, $(human_bytes "$REGION_BYTES")${REGION_NOTE:+: $REGION_NOTE}, $([[ -n $READ_ONLY ]] && echo "read-only" || echo "reads and writes")) on $LISTEN_ADDR:$LISTEN_PORT with $(fio --version)"
    info "on the orchestrator: HOSTS=$LISTEN_ADDR:$LISTEN_PORT --target $TARGET_PATH, or the hosts-file line '$LISTEN_ADDR:$LISTEN_PORT $TARGET_PATH'"
    info "stop with Ctrl-C; jobs' checks are logged in $workdir"
    local rc=0
    fio --server="ip:$LISTEN_ADDR,$LISTEN_PORT" &
    FIO_PID=$!
    wait "$FIO_PID" || rc=$?
    FIO_PID=""
    ((rc == 0)) || die "$EXIT_FAIL" "fio's server on $LISTEN_ADDR:$LISTEN_PORT stopped with exit $rc (a port in use? an address not on this machine?)"
}

main "$@"
