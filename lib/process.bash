# shellcheck shell=bash
# lib/process.bash: stopping a child that may not stop. Sourced by lib/common.bash and
# lib/sampler.bash (which a test sources alone); never run on its own.

# process_running PID - true while PID is a live process (an exited child awaiting `wait` is a
# zombie, which kill -0 still finds).
process_running() {
    local stat
    stat=$(cat -- "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*") "}
    [[ ${stat:0:1} != Z ]]
}

# stop_process PID - TERM, then KILL (it and the children it forked, such as fio's job processes)
# when it is still there after 5 s, and reap it. fio can hang in its own signal handler, waiting
# on a lock with INT and TERM blocked, when a Ctrl-C reaches it while it starts: an unbounded
# wait would make the interrupt hang with it. Always returns 0.
stop_process() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        process_running "$pid" || break
        sleep 0.1
    done
    if process_running "$pid"; then
        pkill -KILL -P "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    fi
    # Reaped only while it is still there (a zombie): a `wait` for a pid bash had already reaped,
    # called from the Ctrl-C handler that interrupted the run loop's `wait` for it, was seen to
    # block (bash 5.2) until the helper's coprocess ended, which it never did, the script
    # holding its input: a test's script stayed in it 90 s after Ctrl-C, twice in six suites.
    [[ ! -e /proc/$pid ]] || wait "$pid" 2>/dev/null || true
    return 0
}
