# shellcheck shell=bash
# lib/jobfile.bash: a case's jobfile (one [global] base, then the case's own options, its jobs'
# stripes, io_uring's kept options) and the CPUs its jobs run on (--cpus, the target's NUMA node).
# Sourced by lib/run.bash; never run on its own.

# One [global] base shared by every case of every section, then the case's own options. A fleet
# host's jobfile (HOST given) names that host's target, has no [global] section (fio's client
# output merges the hosts' [global] options; see analysis/run/fleet.py) and starts with the server's
# check.
render_jobfile() { # INDEX ENGINE DIRECT [HOST]
    local i=$1 engine=$2 direct=$3 host=${4:-} target=$TARGET_PATH opt
    [[ -z $host ]] || target=${FLEET_TARGETS[$host]}
    printf '; %s case %s, rendered by %s (profile %s)%s\n' "$SECTION" "${CASE_NAMES[$i]}" "$TK_PROG" \
        "$PROFILE" "${host:+ for $(fleet_name "$host")}"
    if [[ -z $host ]]; then
        printf '[global]\n'
    else
        printf '[%s]\n' "${CASE_NAMES[$i]}"
        if case_writes "$i"; then fleet_prerun "$host" write; else fleet_prerun "$host" read; fi
    fi
    cat <<EOF
filename=$(fio_filename "$target")
size=$REGION_BYTES
ioengine=$engine
direct=$direct
time_based=1
runtime=$RUNTIME
ramp_time=$RAMP
invalidate=1
EOF
    shape_lines
    [[ -n $host ]] || printf '\n[%s]\n' "${CASE_NAMES[$i]}"
    for opt in ${CASE_OPTS[$i]}; do [[ $opt == @* ]] || printf '%s\n' "$opt"; done
    [[ -n $host ]] || second_log_lines "$i"
    job_stripes "$i"
    [[ -n $host || $engine != io_uring ]] || uring_job_options "$i"
    [[ -n $host ]] || placement_options
}

# Every case logs its IOPS and mean latency each second (fio's 1 s averages, rep<k>_iops.<job>.log
# and rep<k>_lat.<job>.log beside rep<k>.json): the report's per-second view of each case
# (analysis/sections/seconds_part.py), where a mean's stall, drift or cliff shows. A case that
# writes also logs its write rate (rep<k>_bw.<job>.log): which regime each repetition measured,
# the write cache or after the cliff (analysis/core/regimes.py), is read from it, not from the
# repetitions' means. A log a case sets itself (§6's burst, its working sets) keeps its own line.
# Not on a fleet host: its logs stay there.
second_log_lines() { # INDEX
    local logs=(write_iops_log write_lat_log) log wrote=""
    ! case_writes "$1" || logs+=(write_bw_log)
    printf '; each second: IOPS, mean latency and the write rate (the regime it measured)\n'
    for log in "${logs[@]}"; do
        [[ -z $(case_option "$1" "$log") ]] || continue
        # shellcheck disable=SC2016 # ${TK_LOG} is fio's to expand, per repetition
        printf '%s=${TK_LOG}\n' "$log"
        wrote=1
    done
    [[ -z $wrote || -n $(case_option "$1" log_avg_msec) ]] || printf 'log_avg_msec=1000\n'
}

# The lines every jobfile shares that decide fio's own work per I/O rather than the target's: a
# case's (render_jobfile) and the host ceiling's (render_ceiling), so the ceiling runs what the cases
# run.
shape_lines() {
    cat <<EOF
; a new random offset sequence each repetition, so repetitions are independent samples
randrepeat=0
norandommap=1
; write data: each buffer is filled with random data once, then scrambled before every write
; (fio writes the offset and time into every 512 bytes), so each block is incompressible and
; unique to a naive dedupe, at no cost per I/O. refill_buffers=1 (new random data before every
; write) is not used: it caps one job near 4.9 GB/s and halves QD=1 write IOPS on a fast target
; (docs/methodology.md, "Write data"). A case may override these (§6's compressibility part).
refill_buffers=0
scramble_buffers=1
group_reporting=1
; percentiles and json+ histogram bins of total latency (submission + completion)
lat_percentiles=1
EOF
}

# Several jobs of one case: sequential jobs each get a stripe of their own (size and
# offset_increment), or they would read the same offsets in near lockstep and the drive could
# serve the duplicates from its buffer; random jobs each cover the whole region.
job_stripes() { # INDEX
    local jobs rw size stripe
    jobs=$(case_option "$1" numjobs)
    ((${jobs:-1} > 1)) || return 0
    rw=$(case_option "$1" rw)
    if [[ $rw == read || $rw == write || $rw == rw || $rw == readwrite ]]; then
        size=$(case_option "$1" size)
        stripe=$(((${size:-$REGION_BYTES} / jobs) >> 20 << 20))
        printf '; %s sequential jobs, each in a disjoint stripe of %s: job k starts at k x %s\n' \
            "$jobs" "$(human_bytes "$stripe")" "$(human_bytes "$stripe")"
        printf 'size=%s\noffset_increment=%s\n' "$stripe" "$stripe"
    else
        printf '; %s random jobs, each over the whole region with its own random offsets (randrepeat=0)\n' "$jobs"
    fi
}

# --- placement: the CPUs the jobs run on ----------------------------------------------------

# The NUMA node of the device behind the target (a block device, or the one holding a file):
# the first numa_node file from its sysfs device up; empty when unknown (none, or -1).
target_numa_node() {
    local sys node=""
    sys=$(target_disk_sysfs) || return 0
    while [[ $sys == /sys/devices/* ]]; do
        if [[ -r $sys/numa_node ]]; then
            node=$(<"$sys/numa_node")
            break
        fi
        sys=${sys%/*}
    done
    [[ -z $node || $node == -1 ]] || printf '%s' "$node"
}

# PLACEMENT_CPUS (fio's cpus_allowed, empty for any CPU) and PLACEMENT_NOTE (why, for the jobfile
# and the plan): --cpus, else the target's NUMA node's CPUs on a machine of several nodes. The
# host ceiling's jobs (lib/ceiling.bash) carry the same lines and so run on the same CPUs.
resolve_placement() {
    local node nodes
    PLACEMENT_CPUS="" PLACEMENT_NOTE=""
    if [[ -n ${CPUS:-} ]]; then
        PLACEMENT_CPUS=$CPUS PLACEMENT_NOTE="CPUs $CPUS (--cpus)"
        return 0
    fi
    node=$(target_numa_node)
    nodes=$(compgen -G '/sys/devices/system/node/node[0-9]*' | wc -l)
    if [[ -z $node ]]; then
        PLACEMENT_NOTE="any CPU (the target's NUMA node is unknown)"
    elif ((nodes < 2)) || [[ ! -r /sys/devices/system/node/node$node/cpulist ]]; then
        PLACEMENT_NOTE="any CPU (NUMA node $node, the only one)"
    else
        PLACEMENT_CPUS=$(</sys/devices/system/node/node"$node"/cpulist)
        PLACEMENT_NOTE="CPUs $PLACEMENT_CPUS, those of the target's NUMA node $node"
    fi
}

cpulist_count() { # LIST: how many CPUs "0-3,8" names
    local part n=0 IFS=,
    for part in $1; do
        if [[ $part == *-* ]]; then n=$((n + ${part#*-} - ${part%-*} + 1)); else n=$((n + 1)); fi
    done
    echo "$n"
}

job_cpus() { # how many CPUs a job may run on: --cpus or the NUMA node's, else this process's (the
    # peak search's and the grid's most jobs, sqthread_poll's room)
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    if [[ -n $PLACEMENT_CPUS ]]; then cpulist_count "$PLACEMENT_CPUS"; else nproc; fi
}

placement_options() { # the jobfile's lines: a comment saying where the jobs run, cpus_allowed
    [[ -n ${PLACEMENT_NOTE:-} ]] || resolve_placement
    printf '; jobs run on %s\n' "$PLACEMENT_NOTE"
    [[ -z $PLACEMENT_CPUS ]] || printf 'cpus_allowed=%s\n' "$PLACEMENT_CPUS"
}
