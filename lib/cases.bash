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

case_writes() { # INDEX: true when the case writes (anything but a pure read pattern or a 100/0 mix)
    local rw
    rw=$(case_option "$1" rw)
    [[ $rw != read && $rw != randread && -n $rw ]] || return 1
    [[ $(case_option "$1" rwmixread) != 100 ]]
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
