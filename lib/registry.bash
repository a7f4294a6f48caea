# shellcheck shell=bash
# shellcheck disable=SC2034  # the globals set here are read by the scripts
# lib/registry.bash: the toolkit's two tables, read once when a script starts.
#   lib/sections.tsv  the report's sections: number, id, script, make alias, fleet, title
#   lib/options.tsv   every option of every script: scope, flag, variable, default, check, help
# From the second come the options' lines of every --help (usage_options), their parsing and
# checks (parse_options) and the profiles (profile_default). analysis/core/registry.py reads the same
# files for the analysis, docs/options.md and the tests.
# Sourced by lib/common.bash (after TK_ROOT and the checks are defined); never run on its own.

# The data lines of a table: no comments, no blank lines.
registry_rows() { grep -v -e '^#' -e '^[[:space:]]*$' -- "$1"; }

# --- sections -----------------------------------------------------------------------------------
SECTION_IDS=()
declare -gA SECTION_NUMBER_OF=() SECTION_SCRIPT_OF=() SECTION_FLEET_OF=() SECTION_TITLE_OF=()
while IFS=$'\t' read -r _number _id _script _alias _fleet _always _title; do
    SECTION_IDS+=("$_id")
    SECTION_NUMBER_OF[$_id]=$_number SECTION_SCRIPT_OF[$_id]=$_script
    SECTION_FLEET_OF[$_id]=$_fleet SECTION_TITLE_OF[$_id]=$_title
done < <(registry_rows "$TK_ROOT/lib/sections.tsv")
unset _number _id _script _alias _fleet _always _title

# SECTION_NUMBER and SECTION_TITLE of a section script's SECTION (e.g. 2, "QD=1 baselines").
load_section() { # ID
    [[ -n ${SECTION_NUMBER_OF[$1]:-} ]] ||
        die "$EXIT_FAIL" "section '$1' is not in $TK_ROOT/lib/sections.tsv; add its line there"
    SECTION_NUMBER=${SECTION_NUMBER_OF[$1]} SECTION_TITLE=${SECTION_TITLE_OF[$1]}
}

# --- options ------------------------------------------------------------------------------------
# One array per column; '-' in the table is an empty field here.
OPT_SCOPE=() OPT_FLAG=() OPT_ARG=() OPT_VAR=() OPT_DEFAULT=() OPT_CHECK=() OPT_HELP=()
while IFS=$'\t' read -r _scope _flag _arg _var _default _check _help; do
    [[ $_arg != - ]] || _arg=""
    [[ $_default != - ]] || _default=""
    [[ $_check != - ]] || _check=""
    OPT_SCOPE+=(",$_scope,") OPT_FLAG+=("$_flag") OPT_ARG+=("$_arg") OPT_VAR+=("$_var")
    OPT_DEFAULT+=("$_default") OPT_CHECK+=("$_check") OPT_HELP+=("$_help")
done < <(registry_rows "$TK_ROOT/lib/options.tsv")
unset _scope _flag _arg _var _default _check _help

option_in_scope() { # INDEX SCOPES: SCOPES is a space-separated list, e.g. "common qd1"
    local scope
    for scope in $2; do [[ ${OPT_SCOPE[$1]} == *",$scope,"* ]] && return 0; done
    return 1
}

# The default of an option: its value, or for a per-profile default (standard=30 quick=4) the
# value of PROFILE's (standard when no profile applies; quick's for a profile with none of its own:
# tiny sets only the run's size). In REPLY, as check_option's answer: parse_options asks both of
# every option at every script start, and an answer on stdout costs a fork each (about 0.6 ms
# here, 63 of them a start; many times that in the NVMe VM's emulated CPUs).
option_default() { # INDEX -> REPLY
    local default=${OPT_DEFAULT[$1]} word profile
    REPLY=$default
    [[ $default == *=* ]] || return 0
    REPLY=""
    for profile in "${PROFILE:-standard}" quick; do
        for word in $default; do
            [[ $word != "$profile="* ]] || { REPLY=${word#*=} && return 0; }
        done
    done
}

# The profile's value of a common setting: profile_default quick runtime -> 4.
profile_default() { # PROFILE KEY
    local i PROFILE=$1
    for i in "${!OPT_VAR[@]}"; do
        [[ ${OPT_VAR[$i]} == "${2^^}" && ${OPT_DEFAULT[$i]} == *=* ]] || continue
        option_default "$i"
        printf '%s' "$REPLY"
        return 0
    done
    return 1
}

profile_summary() { # PROFILE
    local size
    size=$(profile_default "$1" size)
    [[ $size != auto ]] || size="whole-device (a file: 8G)"
    printf '%s %ss after %ss ramp, %s reps, %s region' "$1" "$(profile_default "$1" runtime)" \
        "$(profile_default "$1" ramp)" "$(profile_default "$1" repeat)" "$size"
}

# Check a value by the option's check, and normalise it (a whole number without leading zeros, a
# block size as 4k or 128k): the messages name the variable, which the flag sets too. A bad value
# exits the script (usage, 2).
check_option() { # INDEX VALUE -> REPLY: the value to use
    local var=${OPT_VAR[$1]} check=${OPT_CHECK[$1]} value=$2 choices
    case "$check" in
        switch) [[ $value != 0 ]] || value="" ;;
        bool) require_one_of "$var" "$value" 0 1 ;;
        int:*) [[ -z $value ]] || { require_int "$var" "$value" "${check#int:}" && value=$((10#$value)); } ;;
        size) [[ -z $value ]] || require_size "$var" "$value" ;;
        region) [[ -z $value || $value == auto || $value == all ]] || require_size "$var" "$value" ;;
        block) [[ -z $value ]] || value=$(block_size_token "$var" "$value") || exit "$EXIT_USAGE" ;;
        cpulist) [[ -z $value || $value =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
            die "$EXIT_USAGE" "$var=$value: expected CPUs as fio's cpus_allowed takes them, e.g. 0-3,8" ;;
        choice:*)
            IFS=, read -r -a choices <<<"${check#choice:}"
            require_one_of "$var" "$value" "${choices[@]}"
            ;;
    esac
    REPLY=$value
}

# A bool takes --no-name (0), and so does a choice with the value off (--no-name is off).
takes_no_flag() { # INDEX
    [[ ${OPT_CHECK[$1]} == bool || ( ${OPT_CHECK[$1]} == choice:* && ,${OPT_CHECK[$1]#choice:}, == *,off,* ) ]]
}

# parse_options SCOPES ARGS...: the options of SCOPES (see option_in_scope) in ARGS, each into its
# variable: the flag's value, else the environment's, else the default; then checked. --opt=value
# is the same as --opt value. -h or --help prints `usage` and exits 0; anything else is bad usage.
parse_options() {
    local scopes=$1 i var value
    shift
    local -a active=()
    local -A by_flag=() given=()
    for i in "${!OPT_FLAG[@]}"; do
        option_in_scope "$i" "$scopes" || continue
        active+=("$i")
        by_flag[${OPT_FLAG[$i]}]=$i
        takes_no_flag "$i" && by_flag[--no-${OPT_FLAG[$i]#--}]=$i
    done
    while (($#)); do
        [[ $1 != --*=* ]] || set -- "${1%%=*}" "${1#*=}" "${@:2}"
        case "$1" in
            -h | --help) usage && exit "$EXIT_OK" ;;
        esac
        i=""
        [[ -z $1 ]] || i=${by_flag[$1]:-}
        [[ -n $i ]] || die "$EXIT_USAGE" "unknown option '$1'; see $TK_PROG --help"
        case "${OPT_CHECK[$i]}" in
            switch) given[$i]=1 && shift ;;
            bool)
                if [[ $1 == --no-* ]]; then given[$i]=0; else given[$i]=1; fi
                shift
                ;;
            *)
                if [[ $1 == --no-* ]]; then given[$i]=off && shift; else need_value "$@" && given[$i]=$2 && shift 2; fi
                ;;
        esac
    done
    # Per-profile defaults last: they read PROFILE, which is set (and checked) by then.
    local -a first=() last=()
    for i in "${active[@]}"; do
        if [[ ${OPT_DEFAULT[$i]} == *=* ]]; then last+=("$i"); else first+=("$i"); fi
    done
    for i in "${first[@]}" "${last[@]}"; do
        var=${OPT_VAR[$i]}
        value=${given[$i]:-${!var:-}}
        [[ -n $value ]] || { option_default "$i" && value=$REPLY; }
        check_option "$i" "$value"
        printf -v "$var" '%s' "$REPLY"
    done
}

# --- usage --------------------------------------------------------------------------------------
# What --help adds to an option's sentence: its variable and its default.
option_note() { # INDEX
    local var=${OPT_VAR[$1]} default=${OPT_DEFAULT[$1]}
    case "${OPT_CHECK[$1]}" in
        switch) printf '%s=1' "$var" ;;
        bool) printf '%s=1 or 0; default %s' "$var" "$default" ;;
        *)
            if [[ $default == *=* ]]; then
                default=${default// /, }
                printf '%s; default %s' "$var" "${default//=/ }"
            else
                printf '%s%s' "$var" "${default:+; default $default}"
            fi
            ;;
    esac
}

# The lines of a --help for the options of SCOPES (or only the FLAGs named), in the table's order:
#   --iodepth N        I/Os in flight in every case (IODEPTH; default 32)
usage_options() { # SCOPES [FLAG...]
    local scopes=$1 i left width=19 line word # width: the flags' column
    shift
    local -a picked=() lefts=() words
    for i in "${!OPT_FLAG[@]}"; do
        option_in_scope "$i" "$scopes" || continue
        (($# == 0)) || [[ " $* " == *" ${OPT_FLAG[$i]} "* ]] || continue
        left=${OPT_FLAG[$i]}${OPT_ARG[$i]:+ ${OPT_ARG[$i]}}
        ! takes_no_flag "$i" || left+=", --no-${OPT_FLAG[$i]#--}"
        picked+=("$i") lefts+=("$left")
        ((${#left} + 2 <= width)) || width=$((${#left} + 2))
    done
    for i in "${!picked[@]}"; do
        printf -v line '  %-*s' "$width" "${lefts[$i]}"
        read -r -a words <<<"${OPT_HELP[${picked[$i]}]} ($(option_note "${picked[$i]}"))"
        for word in "${words[@]}"; do
            if ((${#line} + ${#word} >= 98)) && [[ $line == *[![:space:]] ]]; then
                printf '%s\n' "$line"
                printf -v line '  %-*s' "$width" ""
            fi
            [[ $line == *" " ]] || line+=" "
            line+=$word
        done
        printf '%s\n' "$line"
    done
}
