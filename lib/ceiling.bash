# shellcheck shell=bash
# lib/ceiling.bash: the host ceiling's jobfile, rendered from the same cases and the same shared
# lines as the cases' own jobfiles (lib/jobfile.bash); analysis/run/host_ceiling.py makes the RAM
# device, runs the jobs it needs and reads fio's JSON.
# Sourced by lib/run.bash; never run on its own.

# The options of a case that decide fio's own cost per I/O: its pattern, sizes, depth, jobs,
# buffer contents, percentiles and CPUs. The rest is the run's, not the shape's: the target's
# region (size, offsets), the profile's time (runtime, ramp_time), a rate cap, logs.
readonly CEILING_KEYS=" rw readwrite rwmixread rwmixwrite bs blocksize bssplit iodepth \
    iodepth_batch_submit iodepth_batch_complete_min numjobs norandommap randrepeat lat_percentiles \
    clat_percentiles percentile_list cpus_allowed cpus_allowed_policy hipri fixedbufs registerfiles \
    sqthread_poll "
# What a write's buffers hold. zram compresses what it stores, its media and not the host's path,
# so zram runs a write with zero-filled buffers (stored as same-filled pages, no compression) and
# fio's own cost of the case's buffers is measured apart, on the null engine.
readonly BUFFER_KEYS=" refill_buffers scramble_buffers zero_buffers buffer_compress_percentage \
    buffer_compress_chunk dedupe_percentage buffer_pattern "

# results/<section>/ceiling.fio and its index ceiling.tsv, for every case of the section. Each
# distinct shape is a job named after its first case; a job picks what it runs on from fio's
# expansion of the environment, which host_ceiling.py sets: the RAM device it made
# (TK_CEILING_DEVICE), the device's bytes (TK_CEILING_BYTES) and the time (TK_CEILING_RUNTIME).
# Beside each shape, in the same file: NAME@null (fio's null engine, which takes no device
# option), and for a write NAME@zeroed and NAME@null-zeroed (zero-filled buffers: what zram runs,
# and its pair on the null engine for the buffers' cost); punt@io_uring and punt@psync, where a
# case runs io_uring (whether zram hands io_uring's I/O to a kernel worker: 4 KiB random reads
# at QD 1). ceiling.tsv says, per case, its job, engine, I/Os in flight, jobs and whether it
# writes: what host_ceiling.py decides with, as data.
render_ceiling() { # DIR
    local dir=$1 i engine job body role roles writes depth jobs uring="" row
    local tsv=$'case\tjob\tengine\tin_flight\tnumjobs\twrites'
    local -A job_of=()
    {
        printf '; %s host ceiling: every case'\''s shape, rendered by %s; run by analysis/run/host_ceiling.py\n' \
            "$SECTION" "$TK_PROG"
        printf "[global]\nsize=\${TK_CEILING_BYTES}\ntime_based=1\nruntime=\${TK_CEILING_RUNTIME}\n"
        shape_lines
        # the cases' per-second logs (second_log_lines), whose latency log costs fio time on
        # every I/O: the ceiling pays it too, or a case would look further from it than it is
        # shellcheck disable=SC2016 # fio expands it: a folder run_jobs makes and removes
        printf '%s\n' '; the cases log each second: so do these jobs' \
            'write_iops_log=${TK_CEILING_LOG}' 'write_lat_log=${TK_CEILING_LOG}' \
            'write_bw_log=${TK_CEILING_LOG}' 'log_avg_msec=1000'
        for i in "${!CASE_NAMES[@]}"; do
            engine=$(engine_for_case "$i")
            [[ $engine != io_uring ]] || uring=1
            body=$(ceiling_job "$i" "$engine" device)
            job=${job_of[$body]:-}
            writes=0
            ! ceiling_writes "$i" || writes=1
            depth=$(case_option "$i" iodepth) jobs=$(case_option "$i" numjobs)
            printf -v row '\n%s\t%s\t%s\t%s\t%s\t%s' "${CASE_NAMES[$i]}" "${job:-${CASE_NAMES[$i]}}" \
                "$engine" $((${depth:-1} * ${jobs:-1})) "${jobs:-1}" "$writes"
            tsv+=$row
            [[ -z $job ]] || continue
            job=${CASE_NAMES[$i]}
            job_of[$body]=$job
            printf '\n[%s]\nstonewall\n%s\n' "$job" "$body"
            roles=(null)
            ((writes == 0)) || roles+=(zeroed null-zeroed)
            for role in "${roles[@]}"; do
                printf '\n[%s@%s]\nstonewall\n' "$job" "$role"
                ceiling_job "$i" "$engine" "$role"
            done
        done
        [[ -z $uring ]] || for engine in io_uring psync; do
            printf "\n[punt@%s]\nstonewall\nfilename=\${TK_CEILING_DEVICE}\nioengine=%s\ndirect=1\n" "$engine" "$engine"
            printf 'rw=randread\nbs=4k\niodepth=1\n'
        done
    } >"$dir/ceiling.fio" && printf '%s\n' "$tsv" >"$dir/ceiling.tsv"
}

# The job lines of case INDEX's shape as the ceiling runs it. ROLE: device (its engine on the
# ceiling's device), zeroed (the same with zero-filled buffers), null (fio's null engine: no
# device, no O_DIRECT, no engine options), null-zeroed.
ceiling_job() { # INDEX ENGINE ROLE
    local i=$1 engine=$2 role=$3 opt
    if [[ $role == null* ]]; then
        printf 'ioengine=null\n'
    else
        printf "filename=\${TK_CEILING_DEVICE}\nioengine=%s\ndirect=%s\n" "$engine" "$DIRECT"
    fi
    for opt in ${CASE_OPTS[$i]}; do
        if [[ $BUFFER_KEYS == *" ${opt%%=*} "* ]]; then
            [[ $role == *zeroed ]] || printf '%s\n' "$opt"
        elif [[ $CEILING_KEYS == *" ${opt%%=*} "* ]]; then
            printf '%s\n' "$opt"
        fi
    done
    [[ $role != *zeroed ]] || printf 'zero_buffers=1\nscramble_buffers=0\n'
    [[ $role == null* || $engine != io_uring ]] || uring_job_options "$i"
    placement_options
}

ceiling_writes() { # INDEX: whether the case writes data (a mix that reads 100% does not)
    case_writes "$1" && [[ $(case_option "$1" rwmixread) != 100 ]]
}
