#!/usr/bin/env bash
# §6 working set, burst -> steady state, compressibility: what the other sections cannot show.
#
# Usage: sudo bash wss_burst_test.bash [--parts LIST] [--wss LIST] [--duration S]
#        [--burst-rw RW] [--burst-bs SIZE] [--recovery-gaps LIST] [--recovery-probe S]
#        [--precondition [--yes]] [common options]
#        (see --help). Results in results/wss_burst/, then tables/wss_burst_*.csv,
#        figs/wss_burst_*.png and out/section_6_wss_burst.md.
# Run time: standard 15 min burst + recovery (10+30+90+270 s idle + 4 x 60 s probes, 11 min)
#           + 8 working-set cases x 3 x 35 s + 3 compressibility cases x 3 x 35 s = about 44
#           minutes; quick about 5 minutes. Both plus a one-time prefill.
# shellcheck disable=SC2153  # PARTS, WSS_LIST...: set by parse_options from lib/options.tsv
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION=wss_burst # lib/sections.tsv: §6; its options are in lib/options.tsv
# The sustained state runs no rounds of its own here: the burst is itself a long write whose steady
# state the section reports (lib/state.bash).
STEADY_ROUNDS=0
# The order of the burst and its recovery probes is part of the method (@fixed=1): the burst
# first, after a stated idle, then each probe after its gap; the working-set and compressibility
# cases after them, in shuffled rounds as in the other sections.
CASE_ORDER=fixed-first
readonly HEALTH_SAMPLE_S=5
# A guess of sustained write speed for the precondition's time estimate only.
readonly PRECONDITION_GUESS_MBPS=500

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [options]

§6 of the report, in four parts:
  burst     one sustained write (128 KiB sequential, QD 32) for --duration, logged per second:
            the burst plateau, the cliff where a write cache fills (and how much was written
            before it: an SLC cache estimate), steady state by the SNIA PTS rule, and the
            drive's temperature and throttle counters sampled every ${HEALTH_SAMPLE_S} s
  recovery  right after the burst: idle for each of --recovery-gaps seconds, then write at full
            speed for --recovery-probe seconds (a probe): how much fast cache the drive regains
            per idle minute, and the idle time to a full cache; it needs the burst part
  wss       4 KiB random read and write at QD 32 over growing working sets (256 MiB ... the
            whole region): how latency and its stability change as the hot set outgrows caches
  compress  128 KiB sequential writes of random, 50% compressible and all-zero data: a drive
            that compresses writes them at different speeds; one that does not, at the same

Section options:
$(usage_options "$SECTION")

EOF
    common_usage
    cat <<EOF

Outputs: results/wss_burst/<case>/rep<k>.json (fio json+) and rep<k>_{iops,bw,lat}.1.log (fio's
per-second logs), results/wss_burst/burst-*/health/ (temperature samples),
results/wss_burst/recovery-<gap>s/ (the probes' json+ and bandwidth logs),
tables/wss_burst_wss.csv, tables/wss_burst_burst.csv (per second), tables/wss_burst_recovery.csv,
tables/wss_burst_compress.csv,
figs/wss_burst_*.png, out/section_6_wss_burst.md.
Example: sudo bash $TK_PROG --profile quick
         sudo bash $TK_PROG --target /dev/nvme0n1 --destroy /dev/nvme0n1 --precondition
EOF
}

has_part() { [[ ",$PARTS," == *",$1,"* ]]; }

# Working sets: each size of the list that fits the region, and 'all' (the region itself).
# Sizes at or above the region are the whole region already: skipped, with a note.
add_wss_cases() {
    local wss_list=$1 item bytes label rw
    WSS_NOTES=()
    split_list WSS_LIST "$wss_list"
    for item in "${LIST_ITEMS[@]}"; do
        if [[ $item == all ]]; then
            bytes=$REGION_BYTES label=all
        else
            require_size WSS_LIST "$item"
            bytes=$(size_bytes "$item")
            label=$(block_size_token WSS_LIST "$item")
            if ((bytes >= REGION_BYTES)); then
                WSS_NOTES+=("working set $item skipped: the region is $(human_bytes "$REGION_BYTES")")
                continue
            fi
        fi
        for rw in randread randwrite; do
            add_case "$rw-4k-wss-$label" "rw=$rw" bs=4k iodepth=32 "size=$bytes" \
                "write_iops_log=\${TK_LOG}" log_avg_msec=1000
        done
    done
}

section_cases() {
    local part
    split_list PARTS "$PARTS"
    for part in "${LIST_ITEMS[@]}"; do require_one_of PARTS "$part" burst recovery wss compress; done
    BURST_OPTS=("rw=$BURST_RW" "bs=$BURST_BS" iodepth=32 "runtime=$DURATION" ramp_time=0)
    BURST_NAME="burst-$BURST_RW-$BURST_BS"
    RECOVERY_NAMES=()
    has_part recovery || return 0
    has_part burst || die "$EXIT_USAGE" "--parts recovery measures how a write cache the burst filled comes back: add burst (--parts burst,recovery)"
    local gap
    split_list RECOVERY_GAPS "$RECOVERY_GAPS"
    for gap in "${LIST_ITEMS[@]}"; do
        require_int RECOVERY_GAPS "$gap" 1
        RECOVERY_NAMES+=("recovery-$((10#$gap))s")
    done
    # The region is known only once the target is: the working-set cases are declared in
    # section_plan.
}

section_plan_note() {
    has_part burst || return 0
    info "  burst    ${BURST_OPTS[*]:0:3}, one job: incompressible data scrambled per write, not made anew"
    info "           for each write (that costs fio far less than new data would); its ceiling on"
    info "           this host is measured before the run"
    has_part recovery || return 0
    local gaps=0 name
    for name in "${RECOVERY_NAMES[@]}"; do gaps=$((gaps + ${name//[!0-9]/})); done
    info "  recovery right after the burst, ${#RECOVERY_NAMES[@]} probes of ${RECOVERY_PROBE} s at full speed, each after an idle of"
    info "           ${RECOVERY_GAPS//,/, } s ($(human_seconds "$gaps") idle, not in the time above); the probes write up"
    info "           to ${#RECOVERY_NAMES[@]} x ${RECOVERY_PROBE} s at the burst's speed"
}

# Called once the target (and so the region) is resolved, before the plan. The burst runs first,
# on a drive that has not just been written by the other parts (only by the prefill, if any).
section_plan() {
    if has_part burst; then
        # One long run logged per second (a time series, not a sample to repeat); the clat
        # histogram log gives a p99 per second.
        add_case "$BURST_NAME" "${BURST_OPTS[@]}" @repeat=1 @fixed=1 "write_bw_log=\${TK_LOG}" \
            "write_iops_log=\${TK_LOG}" "write_lat_log=\${TK_LOG}" log_avg_msec=1000 \
            "write_hist_log=\${TK_LOG}" log_hist_msec=1000
    fi
    # The recovery probes right after it, in the order of the gaps (§6 keeps its declared
    # order): the same write for --recovery-probe seconds; @idle is the gap before it.
    local name
    for name in "${RECOVERY_NAMES[@]}"; do
        add_case "$name" "${BURST_OPTS[@]:0:3}" "runtime=$RECOVERY_PROBE" ramp_time=0 @repeat=1 @fixed=1 \
            "@idle=${name//[!0-9]/}" "write_bw_log=\${TK_LOG}" log_avg_msec=1000
    done
    if has_part wss; then
        add_wss_cases "$WSS_LIST"
        local note
        for note in "${WSS_NOTES[@]}"; do info "note: $note"; done
    fi
    if has_part compress; then
        # Incompressible is the toolkit's default (random buffers, scrambled per write). The
        # compressible case makes new data for every write: a buffer filled once at 50% would
        # repeat itself, and fio does not scramble compressible buffers.
        add_case write-128k-random rw=write bs=128k iodepth=32
        add_case write-128k-compress50 rw=write bs=128k iodepth=32 \
            buffer_compress_percentage=50 buffer_compress_chunk=4k refill_buffers=1
        add_case write-128k-zeros rw=write bs=128k iodepth=32 zero_buffers=1 refill_buffers=0
    fi
    if [[ -n $PRECONDITION ]]; then
        [[ $TARGET_KIND == block ]] ||
            die "$EXIT_USAGE" "--precondition writes a whole device twice over: it needs a block device target, not the file $TARGET_PATH"
        [[ -n $DESTROY && $(realpath -- "$DESTROY") == "$TARGET_PATH" ]] ||
            die "$EXIT_UNSAFE" "--precondition overwrites all of $TARGET_PATH twice: add --destroy $TARGET_PATH to confirm the device holds nothing you need"
    fi
}

# The preconditioning is planned and confirmed before anything is touched.
section_confirm() {
    [[ -n $PRECONDITION ]] && ! step_done "$RESULTS_DIR" precondition || return 0
    local capacity seconds answer
    capacity=$(blockdev --getsize64 "$TARGET_PATH")
    seconds=$((2 * capacity / (PRECONDITION_GUESS_MBPS * 1000000)))
    info "precondition: 128 KiB sequential writes over 2 x $(human_bytes "$capacity") of $TARGET_PATH"
    info "              about $(human_seconds "$seconds") at $PRECONDITION_GUESS_MBPS MB/s (the drive's sustained write speed decides)"
    [[ -z $YES ]] || return 0
    [[ -t 0 ]] || die "$EXIT_USAGE" "--precondition asks before writing the whole device twice, and there is no terminal to ask on; add --yes (YES=1) to start it unattended"
    read -r -p "Overwrite all of $TARGET_PATH twice now? Type yes to go on: " answer
    [[ $answer == yes ]] || die "$EXIT_USAGE" "preconditioning not confirmed; nothing was written"
}

# The recovery probes measure a cache the burst just filled: a run resumed after the burst but
# before its last probe runs the burst and all its probes again (their results set aside).
resume_recovery() {
    local name missing=0 path
    ((${#RECOVERY_NAMES[@]})) && [[ -e $RESULTS_DIR/$BURST_NAME/rep1.json ]] || return 0
    for name in "${RECOVERY_NAMES[@]}"; do [[ -e $RESULTS_DIR/$name/rep1.json ]] || missing=1; done
    ((missing)) || return 0
    info "resuming: the recovery probes must follow the burst at once; the burst and its probes run again"
    for path in "$RESULTS_DIR/$BURST_NAME/rep1.json" "${RECOVERY_NAMES[@]/#/$RESULTS_DIR/}"; do
        [[ $path == *.json ]] || path=$path/rep1.json
        [[ ! -e $path ]] || mv -f -- "$path" "${path%.json}.superseded.json"
    done
}

# SNIA PTS workload-independent preconditioning: sequential 128 KiB writes over twice the
# device's user capacity, so every LBA has been written before the measured writes. It writes
# random data everywhere, so it is the region's prefill too.
section_prepare() {
    resume_recovery
    [[ -n $PRECONDITION ]] && ! step_done "$RESULTS_DIR" precondition || return 0
    still_safe_to_write
    # the drive's counters around it: its write amplification (analysis/device/nand_writes.py)
    rm -rf -- "$RESULTS_DIR/precondition-health"
    collect_health_raw "$RESULTS_DIR/precondition-health/before" "$TARGET_PATH" || true
    run_fio "$RESULTS_DIR/precondition.stderr" --name=precondition \
        --filename="$(fio_filename "$TARGET_PATH")" --rw=write --bs=128k --iodepth=32 \
        --ioengine="$ENGINE_DEEP" --direct="$DIRECT" --loops=2 --refill_buffers=1 \
        --output-format=json --output="$RESULTS_DIR/precondition.json" ||
        die "$EXIT_FAIL" "preconditioning failed (see $RESULTS_DIR/precondition.stderr)"
    LAST_WRITE_END_MS=$(now_ms)
    collect_health_raw "$RESULTS_DIR/precondition-health/after" "$TARGET_PATH" || true
    local what
    what=$(printf 'device %s written twice sequentially at %(%F %T)T' "$TARGET_PATH" -1)
    step_set "$RESULTS_DIR" precondition "$what"
    step_set "$RESULTS_DIR" prefill "$what"
}

# The burst case samples the drive's temperature and throttle counters while it runs. A recovery
# probe waits until its gap has passed since the write before it ended, counting what the toolkit
# did since (the analysis measures the idle from fio's own timestamps). Nothing but the safety
# check before a write runs in that gap: the health snapshot after the burst runs in the
# background beside it, and the check of the burst's and the probes' results waits until the
# last probe has run (CHECK_LATER). The toolkit's steps in the gap are kept beside the probe
# (rep<k>.gap), so that an idle longer than planned is explained from them.
HEALTH_LAST_PID=""

section_before_repetition() {
    if [[ ${CASE_NAMES[$1]} == recovery-* ]]; then
        local gap wait_ms dir="$RESULTS_DIR/${CASE_NAMES[$1]}"
        gap=$(case_option "$1" @idle)
        wait_ms=$((gap * 1000 - ($(now_ms) - ${LAST_WRITE_END_MS:-0})))
        if ((wait_ms > 0)); then
            sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
            gap_step "the idle left of the planned ${gap} s"
        fi
        { printf 't\twhat\n' && printf '%s\n' "${GAP_STEPS[@]}"; } >"$dir/rep$2.gap"
        return 0
    fi
    [[ ${CASE_NAMES[$1]} == burst-* ]] || return 0
    local dir="$RESULTS_DIR/${CASE_NAMES[$1]}" rest_ms
    # The stated rest before the burst: from the last write of this run (the state, the prefill),
    # or the whole of it when this run wrote nothing yet.
    rest_ms=$((BURST_IDLE * 1000))
    [[ -z ${LAST_WRITE_END_MS:-} ]] || rest_ms=$((rest_ms - ($(now_ms) - LAST_WRITE_END_MS)))
    if ((rest_ms > 0)); then
        info "burst: the drive idles $(((rest_ms + 999) / 1000)) s first (--burst-idle $BURST_IDLE)"
        sleep "$((rest_ms / 1000)).$(printf '%03d' $((rest_ms % 1000)))"
    fi
    if [[ -n ${LAST_WRITE_END_MS:-} ]]; then
        printf '%s\n' "$((($(now_ms) - LAST_WRITE_END_MS) / 1000))" >"$dir/rep$2.idle"
    else
        printf '%s\n' "$BURST_IDLE" >"$dir/rep$2.idle"
    fi
    # How full the drive is as the burst begins (NVMe: NUSE and NSZE), for the snippet.
    local fill
    [[ $TARGET_KIND != block ]] || fill=$(service_ask purge-fill "$TARGET_PATH")
    [[ ${fill:-} != ok$'\t'* ]] || printf '%s\n' "${fill#ok$'\t'}" >"$dir/rep$2.fill"
    health_sampler_start "$dir/health" "$TARGET_PATH" "$HEALTH_SAMPLE_S"
    # t = 0 of the health samples: fio starts right after this.
    printf '%s\n' "$EPOCHREALTIME" >"$dir/rep$2.start"
}

section_after_repetition() {
    LAST_WRITE_END_MS=$(now_ms)
    local name=${CASE_NAMES[$1]}
    # A probe follows the burst and each probe but the last: their checks wait (lib/loop.bash)
    if ((${#RECOVERY_NAMES[@]})) && [[ $name == burst-* || $name == recovery-* ]] &&
        [[ $name != "${RECOVERY_NAMES[-1]}" ]]; then
        CHECK_LATER=1
    fi
    health_last_reaped
    [[ $name == burst-* ]] || return 0
    local dir="$RESULTS_DIR/$name"
    # the counters right after the burst; the sampler's first capture is right before it
    rm -rf -- "$dir/health/last"
    if ((${#RECOVERY_NAMES[@]})); then
        # Out of the probe's idle: the sampler is told to stop and reaped after the probe
        # (stopping it waited 1.5 s under QEMU's TCG), and the snapshot runs beside the idle at
        # the lowest priority, so that it slows the probe's fio starting as little as it can.
        [[ -z $HEALTH_SAMPLER_PID ]] || kill -TERM "$HEALTH_SAMPLER_PID" 2>/dev/null || true
        { renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
          collect_health_raw "$dir/health/last" "$TARGET_PATH" || true; } &
        HEALTH_LAST_PID=$!
        gap_step "starting the health snapshot after the burst (it runs beside the idle)"
    else
        health_sampler_stop
        collect_health_raw "$dir/health/last" "$TARGET_PATH" || true
    fi
}

# The health snapshot after the burst and the sampler, reaped once the probe after it has run (it
# takes seconds; the probe, more). Before the analysis reads them: at the latest after the last
# probe.
health_last_reaped() {
    [[ -n $HEALTH_LAST_PID ]] || return 0
    health_sampler_stop # told to stop after the burst: reaped now
    wait "$HEALTH_LAST_PID" 2>/dev/null || true
    HEALTH_LAST_PID=""
}

main() {
    section_main "$@"
}

main "$@"
