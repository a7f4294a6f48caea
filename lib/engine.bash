# shellcheck shell=bash
# lib/engine.bash: which I/O engine (and O_DIRECT) works on the target and, under --engine auto,
# the one each queue depth costs least with, from short read-only probes.
# Sourced by lib/run.bash; never run on its own.

# The engine probes of `auto` (choose_engines_by_cost): each runs this long after a 100 ms ramp,
# and an engine this close to the best counts as a tie.
readonly ENGINE_PROBE_MS=400 ENGINE_TIE_PCT=5

# --- fio's clock ------------------------------------------------------------------------------
# fio times each I/O with the CPU's TSC where the CPU has an invariant one and fio's test finds it
# in step on every CPU, else with clock_gettime(2) (fio's HOWTO, clocksource): a TSC reading costs
# less (fio's null engine here: 17-22 ns per I/O against 30-31). fio runs that test at every start
# (70 ms of CPU), and where the TSC is nearly in step its verdict changes from start to start: on
# this project's 2-vCPU VM `fio --cpuclock-test` passed 2 runs of 4, and fio's null engine ran at
# 6.3 M IOPS in some starts and 4.5 M in others, so a host ceiling and the cases judged against it
# could be timed by different clocks. The clock is therefore chosen once per results tree, by one
# run of fio's own test (`fio --cpuclock-test`, exit 0 when it passes; stricter than the one at each
# start: 100,000 readings per CPU), and kept in the tree's record: every fio of the tree starts with
# it (run_fio; the host ceiling's, analysis/run/host_ceiling.py) and skips its own test. Without an
# invariant TSC (cpuinfo's constant_tsc and nonstop_tsc, what fio's x86 test requires first: the
# NVMe VM's emulated CPUs) fio never uses the TSC, so neither does the tree, untested. A fleet run
# leaves the clock to each host's fio, and so does a CPU other than x86-64 (whose timer fio judges
# by other means).
choose_fio_clock() {
    TK_FIO_CLOCK="" FIO_CLOCK_NOTE=""
    [[ -z $HOSTS && $(uname -m) == x86_64 ]] || return 0
    local kept clock note
    kept=$(DIRECT=1 stored_tree_choice fio_clock) # the host's, whatever the target's O_DIRECT
    if [[ -n $kept ]]; then
        clock=${kept%%$'\t'*} note=${kept#*$'\t'}
    elif ! grep -qw constant_tsc /proc/cpuinfo || ! grep -qw nonstop_tsc /proc/cpuinfo; then
        clock=clock_gettime note="the CPU has no invariant TSC (constant_tsc, nonstop_tsc)"
    elif run_fio "$TK_TMP/clock.stderr" --cpuclock-test >/dev/null; then
        clock=cpu note="the TSC: fio's test (fio --cpuclock-test) found it in step on every CPU"
    else
        clock=clock_gettime note="fio's test (fio --cpuclock-test) found the TSC out of step between CPUs"
    fi
    [[ -n $kept ]] || DIRECT=1 remember_tree_choice fio_clock "$clock" "$note"
    # shellcheck disable=SC2034  # FIO_CLOCK_NOTE: lib/run.bash logs it
    TK_FIO_CLOCK=$clock FIO_CLOCK_NOTE=$note
    export TK_FIO_CLOCK
}

# A tiny read-only job tells whether an engine (and O_DIRECT) works on this target. fio can exit 0
# while refusing a job, so the JSON is checked too. No size= on purpose: fio would lay out (write)
# a file smaller than size= before reading it; without it, fio reads the existing file or device.
probe_engine_works() { # ENGINE DIRECT
    local out="$TK_TMP/probe.json"
    run_fio "$TK_TMP/probe.stderr" --name=probe --filename="$(fio_filename "$TARGET_PATH")" \
        --rw=randread --bs=4k --io_size=256k --ioengine="$1" --direct="$2" \
        --output-format=json --output="$out" >/dev/null || return 1
    [[ $(service_ask "check-result" "$out") == ok ]]
}

# Sets ENGINE_USED and DIRECT. `auto`: io_uring when it works, else libaio. When O_DIRECT is
# refused (tmpfs, some network filesystems) the runs fall back to buffered I/O, loudly.
# choose_engine [PROBE WHERE]: PROBE ENGINE DIRECT succeeds when the engine works (default: a job
# on the local target); WHERE names what was probed (a fleet run probes every host).
# Every case then runs on ENGINE_USED (ENGINE_QD1 = ENGINE_DEEP) unless choose_engines_by_cost
# picks an engine per queue depth.
choose_engine() {
    local probe=${1:-probe_engine_works} where=${2:-$TARGET_PATH} candidates=("$ENGINE") direct
    [[ $ENGINE == auto ]] && candidates=(io_uring libaio)
    for direct in 1 0; do
        for ENGINE_USED in "${candidates[@]}"; do
            if "$probe" "$ENGINE_USED" "$direct"; then
                DIRECT=$direct
                ENGINE_QD1=$ENGINE_USED ENGINE_DEEP=$ENGINE_USED
                ENGINE_NOTE="$ENGINE_USED"
                [[ $ENGINE == auto ]] && ENGINE_NOTE="$ENGINE_USED (auto: probe job worked${2:+ on $where})"
                if ((direct == 0)); then
                    warn "O_DIRECT is refused on $where: running buffered; reads may come from the page cache and the numbers will be optimistic. Put the target on a disk filesystem or a block device."
                    ENGINE_BUFFERED=", buffered (O_DIRECT refused)"
                    ENGINE_NOTE+=$ENGINE_BUFFERED
                fi
                return 0
            fi
        done
    done
    [[ ! -s $TK_TMP/probe.stderr ]] || cat "$TK_TMP/probe.stderr" >&2
    die "$EXIT_FAIL" "no I/O engine works on $where (tried ${candidates[*]}, direct and buffered; fio's messages above)"
}

# A short read-only 4 KiB random-read job at depth QD: "IOPS<TAB>mean latency in ns" on stdout.
# Reads only, so it is safe anywhere. It runs after the region was written (state or prefill) and
# reads inside it: on a trimmed drive, reads of deallocated LBAs never touch the media.
probe_engine_cost() { # ENGINE QD [--FIO-OPTION=VALUE...]
    local out="$TK_TMP/cost-$1-$2-$BASHPID.json" reply
    run_fio "$TK_TMP/probe.stderr" --name=cost --filename="$(fio_filename "$TARGET_PATH")" \
        --size="$REGION_BYTES" --rw=randread --bs=4k --iodepth="$2" --ioengine="$1" --direct="$DIRECT" --time_based \
        --runtime="${ENGINE_PROBE_MS}ms" --ramp_time=100ms --randrepeat=0 --norandommap=1 "${@:3}" \
        --output-format=json --output="$out" >/dev/null || return 1
    reply=$(service_ask probe-cost "$out")
    [[ $reply == ok$'\t'* ]] || return 1
    printf '%s' "${reply#ok$'\t'}"
}

# `auto` on this machine: the engine each queue depth costs least with. Which engine works says
# nothing about what it adds: io_uring hands I/O to a worker thread on a device that cannot take
# it without blocking (zram, loop devices), which on zram made a 4 KiB QD=1 read 44 µs instead of
# psync's 2.6 µs. So QD=1 cases get the engine with the lowest mean latency in a short QD=1 probe,
# deeper queues the asynchronous engine with the most IOPS at QD 32. An engine within
# ENGINE_TIE_PCT of the best counts as a tie, won by the earlier of io_uring, libaio, psync, so
# that noise does not flip the choice between runs. A resumed run keeps the first run's choice
# (ENGINE_KEPT, from the manifest): one case is never measured with two engines.
choose_engines_by_cost() {
    local engine cost iops lat qd1_costs=() deep_costs=() best_lat="" best_iops=""
    if [[ -n ${ENGINE_KEPT:-} ]]; then
        ENGINE_QD1=${ENGINE_KEPT% *} ENGINE_DEEP=${ENGINE_KEPT#* }
        ENGINE_NOTE="$(engine_label) (auto, chosen by the first run of these results)${ENGINE_BUFFERED:-}"
        return 0
    fi
    local tree
    tree=$(stored_tree_engines)
    if [[ -n $tree ]]; then
        IFS=$'\t' read -r ENGINE_QD1 ENGINE_DEEP ENGINE_NOTE <<<"$tree"
        ENGINE_KEPT="$ENGINE_QD1 $ENGINE_DEEP"
        # shellcheck disable=SC2034  # read by lib/run.bash and lib/loop.bash
        ENGINE_FROM_TREE=1
        return 0
    fi
    declare -A lat_of=() iops_of=()
    for engine in io_uring libaio psync; do
        cost=$(probe_engine_cost "$engine" 1) || continue
        lat=${cost#*$'\t'} lat_of[$engine]=$lat
        qd1_costs+=("$engine $(human_ns "$lat")")
        [[ -n $best_lat ]] && ((lat >= best_lat)) || best_lat=$lat
    done
    for engine in io_uring libaio; do
        cost=$(probe_engine_cost "$engine" 32) || continue
        iops=${cost%%$'\t'*} iops_of[$engine]=$iops
        deep_costs+=("$engine $(human_count "$iops")")
        [[ -n $best_iops ]] && ((iops <= best_iops)) || best_iops=$iops
    done
    for engine in io_uring libaio psync; do
        [[ -n ${lat_of[$engine]:-} ]] || continue
        if ((lat_of[$engine] * 100 <= best_lat * (100 + ENGINE_TIE_PCT))); then ENGINE_QD1=$engine && break; fi
    done
    for engine in io_uring libaio; do
        [[ -n ${iops_of[$engine]:-} ]] || continue
        if ((iops_of[$engine] * (100 + ENGINE_TIE_PCT) >= best_iops * 100)); then ENGINE_DEEP=$engine && break; fi
    done
    ENGINE_NOTE="$(engine_label) (auto: QD=1 probe mean latency ${qd1_costs[*]/%/,}"
    ENGINE_NOTE="${ENGINE_NOTE%,}; QD 32 probe IOPS ${deep_costs[*]/%/,}"
    ENGINE_NOTE="${ENGINE_NOTE%,})${ENGINE_BUFFERED:-}"
    remember_tree_engines
}

engine_label() { # "psync" or "psync at QD=1, io_uring deeper"
    if [[ $ENGINE_QD1 == "$ENGINE_DEEP" ]]; then
        printf '%s' "$ENGINE_QD1"
    else
        printf '%s at QD=1, %s deeper' "$ENGINE_QD1" "$ENGINE_DEEP"
    fi
}

engine_for_case() { # INDEX: the engine its jobfile names
    local qd
    qd=$(case_option "$1" iodepth)
    if ((${qd:-1} <= 1)); then printf '%s' "$ENGINE_QD1"; else printf '%s' "$ENGINE_DEEP"; fi
}

human_ns() { # NS: "2.6 µs"
    printf '%d.%d µs' $(($1 / 1000)) $(($1 % 1000 / 100))
}

human_count() { # N: "384 K"
    if (($1 >= 1000000)); then printf '%d.%d M' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); else printf '%d K' $(($1 / 1000)); fi
}

stored_engines() { # the engines a first run of these results chose (auto), if any
    [[ -z $FRESH ]] || return 0
    manifest_value engines
}
