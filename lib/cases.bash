# shellcheck shell=bash
# lib/cases.bash: a section's matrix of cases (add_case) and what is asked of a case: its fio
# options, its repetitions, its planned time, whether it writes.
# Sourced by lib/run.bash; never run on its own.

# Milliseconds fio itself adds to each run (start, layout, stop), as bench/overhead measures it;
# used only for the time estimates.
readonly FIO_RUN_OVERHEAD_MS=300

CASE_NAMES=()
CASE_OPTS=()

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

# case_value INDEX KEY: the value of a fio option in the case into REPLY, empty if not set. The
# questions below are asked for every case at each repetition's progress line and plan: answered
# in REPLY, not on stdout, they cost no fork (about 0.6 ms each here, far more in the NVMe VM).
case_value() {
    local opt
    REPLY=""
    for opt in ${CASE_OPTS[$1]}; do
        [[ $opt == "$2="* ]] && REPLY=${opt#*=} && return 0
    done
    return 0
}

case_option() { # INDEX KEY: the same on stdout
    case_value "$1" "$2"
    printf '%s' "$REPLY"
}

# set_case_repeat INDEX N: the case gets N repetitions in all (--until-stable adds them).
set_case_repeat() {
    local opt kept=()
    for opt in ${CASE_OPTS[$1]}; do [[ $opt == @repeat=* ]] || kept+=("$opt"); done
    CASE_OPTS[$1]="${kept[*]} @repeat=$2"
}

case_repeat() { # INDEX: how many repetitions the case gets
    case_value "$1" @repeat
    echo "${REPLY:-$REPEAT}"
}

case_ms() { # INDEX: planned milliseconds of one repetition (runtime, ramp, fio's own overhead)
    local runtime
    case_value "$1" runtime
    runtime=${REPLY:-$RUNTIME}
    case_value "$1" ramp_time
    echo $(((runtime + ${REPLY:-$RAMP}) * 1000 + FIO_RUN_OVERHEAD_MS))
}

case_writes() { # INDEX: true when the case writes (anything but a pure read pattern or a 100/0 mix)
    case_value "$1" rw
    [[ $REPLY != read && $REPLY != randread && -n $REPLY ]] || return 1
    case_value "$1" rwmixread
    [[ $REPLY != 100 ]]
}

section_writes() {
    local i
    for i in "${!CASE_NAMES[@]}"; do case_writes "$i" && return 0; done
    return 1
}

case_matrix() { # every case with its fio options: "name: opt=v ...; name: ..."
    local i sep=""
    for i in "${!CASE_NAMES[@]}"; do
        printf '%s%s: %s' "$sep" "${CASE_NAMES[$i]}" "${CASE_OPTS[$i]}"
        sep="; "
    done
}
