# shellcheck shell=bash
# lib/uring.bash: io_uring's own options, probed where a case runs on io_uring (sourced by
# lib/run.bash; it uses the helper service, case_option and the placement).

# io_uring's own options (choose_uring_options) are probed at this depth, one job; the batching
# option submits and reaps a quarter of each case's depth at a time, as fio's t/io_uring does.
# Each probe sample runs URING_SAMPLE_MS after a 100 ms ramp; a round is URING_PAIRS pairs of them.
readonly URING_PROBE_QD=32 URING_BATCH_DIV=4 URING_SAMPLE_MS=200 URING_PAIRS=3

# --- io_uring's own options -------------------------------------------------------------------
# fio's defaults leave io_uring's fast paths off; t/io_uring, fio's own peak tool, turns them on.
# When a case runs on io_uring, choose_uring_options probes them on the target (4 KiB random read,
# one job, QD URING_PROBE_QD, read-only), one group at a time on top of what was kept so far:
#   1. registered buffers and files (fixedbufs=1 registerfiles=1);
#   2. batching: iodepth_batch_submit and iodepth_batch_complete_min at a quarter of the depth
#      (recorded as QD/4; each case's jobfile has its own depth's quarter, none below 2);
#   3. hipri (polled completions), tried only where the target's block device has poll queues
#      (queue/io_poll is 1: the disk of a partition, the device holding a file);
#   4. sqthread_poll (a kernel thread per job polls the submission queue), tried only where a CPU
#      is spare: each job and its polling thread need a CPU of their own, and one is left for the
#      rest, so a case gets it only with at least 2 x numjobs + 1 CPUs it may run on (--cpus or
#      the NUMA node's, else the CPUs this process may use). Never with 2 CPUs.
# A group is kept only when it gains more than the noise: each round (uring_probe_round) samples
# the target with and without it in alternation, and analysis/run/uring_probe.py judges all the
# rounds so far by the peak search's rule (kept, dropped, or one more round). One sample each,
# the probe before this one, varied 10-20% from sample to sample here and kept options that
# gained nothing (docs/methodology.md "io_uring's own options").
# URING_OPTS is the choice: empty when no case runs on io_uring, `defaults` when nothing was kept,
# else the options. Probed once per results tree (`io_uring` in its record, run.json) and kept by a resumed run (the
# manifest's io_uring_options), like the engines: one case is never measured with two sets.
# --uring-tuning on probes; off keeps fio's defaults; auto (the default) probes in the standard
# profile only: a probe that can tell a gain from the noise takes tens of seconds per results
# tree, a large share of the quick profile's first look, whose 1 s cases move as much from run to
# run.

uring_probes() { [[ $URING_TUNING == on || ($URING_TUNING == auto && $PROFILE == standard) ]]; }

uring_defaults_why() { # [report]: why fio's defaults are kept without probing, for the plan (its
    # flags) or for the report (its words: a reader of the page has no command line)
    if [[ $URING_TUNING == off ]]; then
        [[ ${1:-} == report ]] && printf 'not probed: tuning turned off' || printf -- '--uring-tuning off'
    elif [[ ${1:-} == report ]]; then
        printf 'not probed by the %s profile; the standard profile probes them' "$PROFILE"
    else
        printf -- '--uring-tuning auto: the %s profile does not probe them; --uring-tuning on does' "$PROFILE"
    fi
}

# The block device behind the target (a partition's whole disk; the device holding a file):
# its queue/io_poll, 1 when it has poll queues; 0 when it has none or is unknown (tmpfs).
target_io_poll() {
    local sys
    if sys=$(target_disk_sysfs) && [[ -r $sys/queue/io_poll ]]; then cat -- "$sys/queue/io_poll"; else echo 0; fi
}

# The largest I/O the target takes as one request (queue/max_sectors_kb); empty when unknown.
target_request_kb() {
    local sys
    if sys=$(target_disk_sysfs) && [[ -r $sys/queue/max_sectors_kb ]]; then cat -- "$sys/queue/max_sectors_kb"; fi
}

# A polled I/O larger than one request of its device is split in two bios, and Linux 6.1
# polls for one of them only: fio then waits for the other for good (measured in the NVMe VM's
# guest, Linux 6.1: 128 KiB hipri reads and writes on a null_blk whose requests hold 127.5 KiB
# hung in 4 of 4 fio runs, and in 0 of 6 once they held 1280 KiB). So a case gets hipri only
# where its block fits one request; a case without a plain bs (a bssplit) keeps it.
hipri_fits() { # INDEX
    local bs kb
    bs=$(case_option "$1" bs) kb=$(target_request_kb)
    [[ $bs =~ ^[0-9]+[kKmMgG]?$ && $kb =~ ^[0-9]+$ ]] || return 0
    (($(size_bytes "$bs") <= kb * 1024))
}

sqpoll_fits() { # JOBS: a CPU of its own for each job and its polling thread, and one spare
    (($(job_cpus) >= 2 * $1 + 1))
}

uring_plan_line() { # what the plan says will be probed
    local poll cpus
    if ! uring_probes; then
        info "  io_uring fio's defaults ($(uring_defaults_why)): no registered buffers or files, no batching, no polling"
        return 0
    fi
    poll=$(target_io_poll) cpus=$(job_cpus)
    info "  io_uring where a case runs on io_uring: its options probed once per results tree (4 KiB random read, QD $URING_PROBE_QD,"
    info "           ${URING_SAMPLE_MS} ms samples with and without each group in alternation, $URING_PAIRS pairs at a time), kept when"
    info "           they gain more IOPS than the noise: fixedbufs + registerfiles;"
    info "           batching iodepth_batch_submit = iodepth_batch_complete_min = QD/${URING_BATCH_DIV};"
    if [[ $poll == 1 ]]; then
        info "           hipri (the target's device has poll queues, io_poll 1), for cases whose block fits one request ($(target_request_kb) KiB);"
    else
        info "           not hipri (the target's device has no poll queues, io_poll 0);"
    fi
    if ((cpus >= 3)); then
        info "           sqthread_poll for cases of at most $(((cpus - 1) / 2)) jobs (2 x jobs + 1 CPUs needed, $cpus here)"
    else
        info "           not sqthread_poll ($cpus CPUs: it needs 2 x jobs + 1, a CPU for each job and its polling thread and one spare)"
    fi
}

stored_tree_uring() { stored_tree_choice io_uring; } # "OPTIONS<TAB>note" (lib/state.bash)
remember_tree_uring() { remember_tree_choice io_uring "$URING_OPTS" "$URING_NOTE"; }

stored_manifest_uring() { # a resumed section's own choice: "OPTIONS<TAB>note"; none for a new one
    [[ -z $FRESH ]] && section_has_manifest || return 1
    # A section measured before the options were probed ran io_uring with fio's defaults and
    # recorded none: it keeps them (empty, as its manifest says).
    printf '%s\t%s' "$(manifest_value io_uring_options)" "$(manifest_value io_uring_note)"
}

# One round of a group's probe, in one fio call: URING_PAIRS pairs of samples, base@ROUND.I with
# the options kept so far and more@ROUND.I with the group on top, base first in odd pairs and the
# group first in even ones, so that a drift of the machine weighs on both alike.
uring_probe_round() { # OUT ROUND "KEPT OPTIONS" "GROUP OPTIONS"
    local i side opt args=() kept=() more=() order
    read -ra kept <<<"$3"
    read -ra more <<<"$4"
    for ((i = 1; i <= URING_PAIRS; i++)); do
        order=(base more)
        ((i % 2)) || order=(more base)
        for side in "${order[@]}"; do
            args+=(--name="$side@$2.$i" --stonewall)
            for opt in "${kept[@]}"; do args+=("--$opt"); done
            if [[ $side == more ]]; then
                for opt in "${more[@]}"; do args+=("--$opt"); done
            fi
        done
    done
    run_fio "$TK_TMP/uring-probe.stderr" --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=randread --bs=4k --iodepth="$URING_PROBE_QD" --ioengine=io_uring \
        --direct="$DIRECT" --time_based --runtime="${URING_SAMPLE_MS}ms" --ramp_time=100ms \
        --randrepeat=0 --norandommap=1 --output-format=json --output="$1" "${args[@]}" >/dev/null
}

# Probe one group on top of KEPT until the rule decides: prints the runner service's reply
# (kept|dropped<TAB>kept's IOPS<TAB>the group's IOPS<TAB>gain %<TAB>pairs), or `failed<TAB>why`.
probe_uring_group() { # NAME "KEPT OPTIONS" "GROUP OPTIONS"
    local rounds=() round reply ran
    for ((round = 1; ; round++)); do
        rounds+=("$TK_TMP/uring-$1-$round.json")
        ran=1
        uring_probe_round "${rounds[-1]}" "$round" "$2" "$3" || ran=""
        # The service names a job that failed from fio's JSON (an option the kernel refuses)
        if [[ -s ${rounds[-1]} ]]; then reply=$(service_ask uring-gain "${rounds[@]}"); else reply=""; fi
        if [[ -z $ran && $reply != bad$'\t'* ]]; then
            reply="bad"$'\t'"$(grep -m1 -E 'error|fio:' "$TK_TMP/uring-probe.stderr" || echo "fio failed")"
        fi
        [[ $reply == more$'\t'* ]] || break
    done
    [[ $reply != bad$'\t'* ]] || reply="failed${reply#bad}"
    printf '%s' "$reply"
}

choose_uring_options() {
    URING_OPTS="" URING_NOTE="" URING_FROM_TREE=""
    [[ $ENGINE_QD1 == io_uring || $ENGINE_DEEP == io_uring ]] || return 0
    if ! uring_probes; then
        URING_OPTS=defaults URING_NOTE="fio's defaults ($(uring_defaults_why report))"
        return 0
    fi
    local kept
    if kept=$(stored_manifest_uring); then
        URING_OPTS=${kept%%$'\t'*} URING_NOTE=${kept#*$'\t'}
        return 0
    fi
    kept=$(stored_tree_uring)
    if [[ -n $kept ]]; then
        # shellcheck disable=SC2034  # read by lib/run.bash and lib/loop.bash
        URING_OPTS=${kept%%$'\t'*} URING_NOTE=${kept#*$'\t'} URING_FROM_TREE=1
        return 0
    fi
    local base=() group figures=() half=$((URING_PROBE_QD / URING_BATCH_DIV)) poll cpus n=0
    local reply word label more=() b m gain pairs
    poll=$(target_io_poll) cpus=$(job_cpus)
    local groups=("fixedbufs=1 registerfiles=1" "iodepth_batch_submit=$half iodepth_batch_complete_min=$half")
    [[ $poll != 1 ]] || groups+=("hipri=1")
    sqpoll_fits 1 && groups+=("sqthread_poll=1")
    for group in "${groups[@]}"; do
        n=$((n + 1))
        info "probing io_uring's ${group// /, } against what was kept ($n of ${#groups[@]}: $URING_PAIRS pairs of samples at a time)"
        reply=$(probe_uring_group "$n" "${base[*]}" "$group")
        label="+${group// /,}"
        label=${label//=$half/=QD\/$URING_BATCH_DIV}
        IFS=$'\t' read -r word b m gain pairs <<<"$reply"
        case $word in
        kept | dropped)
            figures+=("$label $(human_count "$b") vs $(human_count "$m") ($gain%, $pairs pairs): $word")
            if [[ $word == kept ]]; then
                read -ra more <<<"$group"
                base+=("${more[@]}")
            fi
            ;;
        *) figures+=("$label failed (${reply#*$'\t'})") ;;
        esac
    done
    URING_OPTS="${base[*]}"
    URING_OPTS=${URING_OPTS//=$half/=QD\/$URING_BATCH_DIV}
    URING_OPTS=${URING_OPTS:-defaults}
    URING_NOTE="${URING_OPTS/#defaults/fio\'s defaults} (probed, 4 KiB random read at QD $URING_PROBE_QD, ${URING_SAMPLE_MS} ms samples"
    URING_NOTE+=" in alternation, each group against fio's defaults and what was kept before it: ${figures[*]/%/;}"
    URING_NOTE="${URING_NOTE%;}"
    [[ $poll == 1 ]] || URING_NOTE+="; hipri not tried: no poll queues"
    sqpoll_fits 1 || URING_NOTE+="; sqthread_poll not tried: $cpus CPUs"
    URING_NOTE+=")"
    remember_tree_uring
}

# The jobfile lines of URING_OPTS for one case: QD/4 becomes the case's own quarter (left out
# below 2, fio's default being 1), sqthread_poll only where the case's jobs fit (sqpoll_fits).
uring_job_options() { # INDEX
    [[ -n $URING_OPTS ]] || return 0
    if [[ $URING_OPTS == defaults ]]; then
        printf "; io_uring: fio's defaults (the manifest's io_uring_note says why)\n"
        return 0
    fi
    local opt qd jobs value
    qd=$(case_option "$1" iodepth) jobs=$(case_option "$1" numjobs)
    printf '; io_uring options chosen by probing (see the manifest): %s\n' "$URING_OPTS"
    for opt in $URING_OPTS; do
        if [[ $opt == *=QD/* ]]; then
            value=$((${qd:-1} / ${opt#*=QD/}))
            ((value >= 2)) && printf '%s=%s\n' "${opt%%=*}" "$value"
        elif [[ $opt == hipri=* ]] && ! hipri_fits "$1"; then
            printf '; hipri left out: a %s block is more than one request of the target (%s KiB): a split polled I/O can hang fio\n' \
                "$(case_option "$1" bs)" "$(target_request_kb)"
        elif [[ $opt == sqthread_poll=* ]]; then
            if sqpoll_fits "${jobs:-1}"; then printf '%s\n' "$opt"; else printf '; sqthread_poll left out: %s job(s) need %s CPUs\n' "${jobs:-1}" $((2 * ${jobs:-1} + 1)); fi
        else
            printf '%s\n' "$opt"
        fi
    done
    return 0
}
