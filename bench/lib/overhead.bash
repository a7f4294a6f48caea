# shellcheck shell=bash
# bench/lib/overhead.bash: what bench/overhead's measurements share: messages, its children and
# Ctrl-C, the clean-up, other I/O on the machine, the arithmetic (medians, CV, a paired t
# interval), IOPS from fio's JSON, the toolkit's copy and its timed runs, the fleet of one host
# (serve.bash on loopback) and fio alone on the toolkit's jobfiles. Sourced by bench/overhead,
# which sets the globals these read (BENCH_PROG, TK_SRC, TK_FILES, SECTION, SIZE, ...); never
# run on its own.
# shellcheck disable=SC2034  # WORK_FSTYPE and ELAPSED are read by bench/overhead

info() { printf '%s\n' "$*" >&2; }
die() {
    local code=$1
    shift
    printf '%s: %s\n' "$BENCH_PROG" "$*" >&2
    exit "$code"
}

# --- processes, clean-up, Ctrl-C -----------------------------------------------------------------
# Children run in the background and are waited for, so a signal reaches the trap at once; the
# trap then stops the child (the toolkit stops its fio on TERM) and the EXIT trap removes WORK.
run_child() { # CMD... ; returns the command's exit code
    local rc=0
    "$@" &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}

# The trap can fire inside a call whose output goes to a log (toolkit ... >LOG): its message goes
# to the bench's own stderr, saved at start as ERR_FD.
on_signal() {
    trap '' INT TERM
    if [[ -n $CHILD ]]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    printf '\n%s: interrupted; removing %s\n' "$BENCH_PROG" "$WORK" >&"$ERR_FD"
    exit 130
}

cleanup() {
    stop_server
    [[ -n $WORK && -d $WORK ]] || return 0
    # The toolkit's per-target lock file for our own temporary target (see lib/run.bash).
    local lock
    lock="/run/lock/ssd-toolkit.$(printf '%s' "$WORK/tk/tmp/target.img" | md5sum | cut -c1-16).lock"
    rm -f -- "$lock"
    rm -rf -- "$WORK"
}

# --- other I/O on the machine ------------------------------------------------------------------
# A bench shares the disk with whatever else runs (a test suite's fio, a backup): their I/O shows
# up as noise or bias. The bench looks for other fio processes between its own runs (never while
# one of its runs is timed) and reads the disk's pressure before it starts, and says what it saw.
BUSY_CHECKS=0 BUSY_SEEN=0 BUSY_PIDS=""
check_other_io() {
    local pid
    BUSY_CHECKS=$((BUSY_CHECKS + 1))
    local -a pids=()
    mapfile -t pids < <(pgrep -x fio || true)
    # Our own fio server (3.) is no other I/O: it is idle between runs.
    [[ -z $FLEET_PORT ]] || mapfile -t pids < <(for pid in "${pids[@]}"; do
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "127.0.0.1,$FLEET_PORT" || echo "$pid"
    done)
    ((${#pids[@]})) || return 0
    BUSY_SEEN=$((BUSY_SEEN + 1))
    for pid in "${pids[@]}"; do
        [[ " $BUSY_PIDS " == *" $pid "* ]] || BUSY_PIDS+="${BUSY_PIDS:+ }$pid"
    done
}

io_pressure() { # "some avg10" of /proc/pressure/io: % of the last 10 s a task waited for I/O
    awk '/^some/ { sub("avg10=", "", $2); print $2 }' /proc/pressure/io 2>/dev/null || true
}

# --- arithmetic ----------------------------------------------------------------------------------
calc() { # AWK-EXPRESSION [FORMAT]
    awk "BEGIN { printf \"${2:-%.3f}\", ($1) }" # parenthesised: a bare > would redirect
}

# median, minimum and maximum of the numbers given: "MED MIN MAX"
stats() {
    printf '%s\n' "$@" | sort -g | awk '
        { v[NR] = $1 }
        END {
            med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.3f %.3f %.3f", med, v[1], v[NR]
        }'
}

mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.1f", s / NR }'; }
cv_pct() {
    printf '%s\n' "$@" | awk '
        { v[NR] = $1; s += $1 }
        END {
            m = s / NR
            for (i = 1; i <= NR; i++) d += (v[i] - m) ^ 2
            printf "%.1f", (NR > 1 && m > 0) ? sqrt(d / (NR - 1)) / m * 100 : 0
        }'
}

# Paired differences in %, 100 * (A_i / B_i - 1): "MEAN HALF-WIDTH-OF-THE-95%-CI" (Student's t;
# "n/a" for a single pair).
paired_ci() { # "A1 A2 ..." "B1 B2 ..."
    awk -v a="$1" -v b="$2" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) { d[i] = 100 * (x[i] / y[i] - 1); s += d[i] }
        m = s / n
        for (i = 1; i <= n; i++) v += (d[i] - m) ^ 2
        split("12.71 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131", t, " ")
        tv = (n - 1 <= 15) ? t[n - 1] : 2.0
        if (n < 2) { printf "%.2f n/a", m; exit }
        printf "%.2f %.2f", m, tv * sqrt(v / (n - 1)) / sqrt(n)
    }'
}

# IOPS (all directions) of a fio JSON output file. jq when installed, else the toolkit's own
# reader (`python -m analysis summarize`). Anything fio printed before the JSON is skipped.
iops_of() { # FILE
    if [[ $IOPS_PARSER == jq ]]; then
        sed -n '/^{/,$p' "$1" | jq -e '[.jobs[] | .read.iops + .write.iops + .trim.iops] | add'
    else
        (cd "$WORK/tk" && .venv/bin/python -m analysis summarize "$1") | awk -F, '
            NR == 1 { for (i = 1; i <= NF; i++) if ($i == "iops") c = i; next }
            { s += $c }
            END { if (!c || NR < 2) exit 1; printf "%f\n", s }'
    fi
}

# --- the toolkit, from a copy ---------------------------------------------------------------------
# A directory for the copy, on a filesystem that takes O_DIRECT.
make_work_dir() {
    local base fstype
    for base in "${TMPDIR:-/tmp}" /var/tmp; do
        [[ -d $base && -w $base ]] || continue
        fstype=$(findmnt -n -o FSTYPE -T "$base" 2>/dev/null || true)
        case "$fstype" in tmpfs | ramfs | "") continue ;; esac
        WORK=$(mktemp -d "$base/ssd-toolkit-bench.XXXXXX")
        WORK_FSTYPE=$fstype
        return 0
    done
    die 2 "no writable on-disk temporary directory (${TMPDIR:-/tmp} and /var/tmp are tmpfs or missing); set TMPDIR to a directory on a disk filesystem"
}

copy_toolkit() {
    local f tk="$WORK/tk"
    mkdir -p -- "$tk"
    for f in "${TK_FILES[@]}"; do
        [[ -e $TK_SRC/$f ]] || die 1 "$TK_SRC/$f is missing; is this the toolkit's work tree?"
        cp -r -- "$TK_SRC/$f" "$tk/"
    done
    [[ -x $TK_SRC/.venv/bin/python ]] || die 1 "no $TK_SRC/.venv; run 'sudo bash env.bash' (or 'make env') first"
    ln -s -- "$TK_SRC/.venv" "$tk/.venv"
    mkdir -p -- "$tk/results" "$tk/tables" "$tk/figs" "$tk/out" "$tk/tmp"
}

# timed_run LOG [PIN...]: RUN_CMD in the copy, with RUN_ENV's VAR=value settings, behind the
# optional PIN command (taskset); sets ELAPSED (s), and stops the bench with the log's last lines
# when it fails. The toolkit's settings come from flags only; environment settings that would
# change what it does are cleared (TARGET is passed as a flag; DESTROY is kept for --target on a
# device).
timed_run() {
    local log=$1 t0 t1 rc=0
    t0=$EPOCHREALTIME
    run_child "${@:2}" env -u NO_PREFILL -u DRY_RUN -u FRESH -u TARGET -u PROFILE -u ENGINE -u HOSTS \
        -C "$WORK/tk" "${RUN_ENV[@]}" "${RUN_CMD[@]}" >"$log" 2>&1 || rc=$?
    t1=$EPOCHREALTIME
    if ((rc != 0)); then
        tail -n 20 -- "$log" >&2
        die 1 "${RUN_CMD[1]} exited $rc (its last lines above); command: (cd <copy> && ${RUN_CMD[*]})"
    fi
    ELAPSED=$(calc "$t1 - $t0" "%.4f")
}

# toolkit RUNTIME RAMP REPEAT LOG [PIN...]: one qd1_test.bash section run in the copy; sets ELAPSED.
toolkit() {
    RUN_ENV=() RUN_CMD=(bash qd1_test.bash --profile quick --runtime "$1" --ramp "$2" --repeat "$3"
        --size "$SIZE" --engine auto)
    [[ -z $USER_TARGET ]] || RUN_CMD+=(--target "$USER_TARGET")
    timed_run "$4" "${@:5}"
}

# --- 3. the fleet of one host ------------------------------------------------------------------
# serve.bash on a free loopback port, serving a file of its own; stopped (its process group) on exit.
start_server() {
    local k
    FLEET_TARGET="$WORK/tk/tmp/fleet.img"
    FLEET_PORT=$("$TK_SRC/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p -- "$WORK/serve"
    setsid env TK_SERVE_DIR="$WORK/serve" bash "$WORK/tk/serve.bash" --listen "127.0.0.1:$FLEET_PORT" \
        --target "$FLEET_TARGET" --size "$SIZE" >"$WORK/serve.log" 2>&1 &
    SERVER_PID=$!
    for ((k = 0; k < 300; k++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$FLEET_PORT") 2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    die 1 "serve.bash did not start listening on 127.0.0.1:$FLEET_PORT; its log: $(tail -n 5 -- "$WORK/serve.log")"
}

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# fleet RUNTIME RAMP REPEAT LOG: one qd1_test.bash run on the fleet of one host; sets ELAPSED (s).
fleet() {
    RUN_ENV=(TK_SERVE_DIR="$WORK/serve")
    RUN_CMD=(bash qd1_test.bash --hosts "127.0.0.1:$FLEET_PORT" --target "$FLEET_TARGET"
        --profile quick --runtime "$1" --ramp "$2" --repeat "$3" --size "$SIZE" --engine auto)
    timed_run "$4"
}

# fio_alone PASSES LOG: every case's jobfile PASSES times back to back, case by case like the
# toolkit, with the toolkit's own fio command line; sets ELAPSED (s).
fio_alone() {
    local passes=$1 log=$2 t0 t1 job k rc=0
    t0=$EPOCHREALTIME
    for job in "${JOBS[@]}"; do
        for ((k = 1; k <= passes; k++)); do
            run_child fio --output-format=json+ --output="$WORK/fio-alone.json" "$job" 2>>"$log" || rc=$?
            ((rc == 0)) || die 1 "fio $job exited $rc; see its messages: $(tail -n 5 -- "$log")"
        done
    done
    t1=$EPOCHREALTIME
    ELAPSED=$(calc "$t1 - $t0" "%.4f")
}

count_reps() { # [TREE]: number of finished repetitions in the copy's results (or a fleet host's)
    local -a reps
    shopt -s nullglob
    reps=("${1:-$WORK/tk/results}/$SECTION"/*/rep*.json)
    shopt -u nullglob
    printf '%d' "${#reps[@]}"
}
