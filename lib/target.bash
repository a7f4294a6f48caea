# shellcheck shell=bash
# lib/target.bash: what the scripts measure. Resolves --target, creates the embedded default file
# target, sizes the region, and applies the safety interlocks before anything writes.
# shellcheck disable=SC2034  # the globals set here are read by lib/run.bash
# Sourced by the section scripts after lib/common.bash; never run on its own.

# Set by resolve_target:
#   TARGET_PATH     absolute path fio opens (a file, or the resolved block device)
#   TARGET_KIND     file | block
#   TARGET_DEFAULT  1 for the embedded default tmp/target.img
#   TARGET_CREATE   1 when the file must be (re)created full of random data before use
#   TARGET_BYTES    the target's size: a block device's capacity, a file's size (or the size the
#                   toolkit will create it with)
#   REGION_BYTES    bytes of the target that the cases use, from its start (--size: a size capped
#                   by the capacity, 'all' the whole target, 'auto' a block device whole, a file 8G)
#   REGION_NOTE     why the region is smaller than --size, if it is

default_target_path() { echo "$TK_ROOT/tmp/target.img"; }

# --size auto on a file: the region of today's default file target. A block device's default
# region is the whole device, as SNIA PTS's default ActiveRange (100%) and ezFIO's utilisation:
# a corner of a drive, just written, describes nothing a user can reproduce (methodology.md).
readonly AUTO_FILE_REGION=8G

# The region's bytes for a target of CAPACITY bytes (0: a file still to be created): --size as
# given, the whole target for 'all' (and 'auto' on a block device), capped at the capacity and
# rounded down to whole MiB so every block size and job stripe stays aligned.
region_bytes_for() { # CAPACITY KIND
    local capacity=$1 kind=$2 want
    case $SIZE in
        all) want=$capacity ;;
        auto) if [[ $kind == block ]]; then want=$capacity; else want=$(size_bytes "$AUTO_FILE_REGION"); fi ;;
        *) want=$(size_bytes "$SIZE") ;;
    esac
    ((capacity == 0 || want <= capacity)) || want=$capacity
    echo $((want >> 20 << 20))
}

# "8.0 GiB of 1.8 TiB (0.43%); the other 1.8 TiB left as it was": the region as a share of the
# target, for the plan.
region_share() {
    if ((TARGET_BYTES > 0 && REGION_BYTES < TARGET_BYTES)); then
        printf '%s of %s (%s)' "$(human_bytes "$REGION_BYTES")" "$(human_bytes "$TARGET_BYTES")" \
            "$(share_of "$REGION_BYTES" "$TARGET_BYTES")"
        [[ $TARGET_KIND != block ]] ||
            printf '; the other %s is left as it was (its free space, or lack of it, changes steady-state random writes)' \
                "$(human_bytes $((TARGET_BYTES - REGION_BYTES)))"
    elif [[ $TARGET_KIND == file ]]; then
        printf '%s, the whole file' "$(human_bytes "$REGION_BYTES")"
    else
        printf '%s, the whole target' "$(human_bytes "$REGION_BYTES")"
    fi
}

# The filesystem type of the folder a path would be in (devtmpfs for /dev, tmpfs for /dev/shm),
# empty when the folder does not exist.
dir_fstype() { # PATH
    local dir
    dir=$(dirname -- "$(realpath -m -- "$1")")
    # The last line: the mount on top, when several are stacked on one folder.
    [[ -d $dir ]] && findmnt -n -o FSTYPE -T "$dir" 2>/dev/null | tail -n 1
    return 0
}

resolve_target() {
    TARGET_DEFAULT="" TARGET_CREATE="" REGION_NOTE="" TARGET_BYTES=0
    local given=${TARGET:-$(default_target_path)}
    [[ -n ${TARGET:-} ]] || TARGET_DEFAULT=1

    if [[ -b $given ]]; then
        ((EUID == 0)) || die "$EXIT_USAGE" "$given is a block device: testing it needs root; rerun with sudo"
        TARGET_PATH=$(realpath -- "$given")
        TARGET_KIND="block"
        TARGET_BYTES=$(blockdev --getsize64 "$TARGET_PATH") ||
            die "$EXIT_FAIL" "cannot read the size of $TARGET_PATH"
        REGION_BYTES=$(region_bytes_for "$TARGET_BYTES" block)
        if [[ $SIZE != all && $SIZE != auto ]] && (($(size_bytes "$SIZE") > TARGET_BYTES)); then
            REGION_NOTE="$TARGET_PATH holds only $(human_bytes "$TARGET_BYTES"); region capped at $(human_bytes "$REGION_BYTES")"
        fi
    elif [[ -d $given ]]; then
        die "$EXIT_USAGE" "target $given is a directory; name a file inside it, e.g. --target $given/fio-target.img"
    elif [[ -e $given && ! -f $given ]]; then
        die "$EXIT_USAGE" "target $given is neither a regular file nor a block device"
    elif [[ $(realpath -m -- "$given") == /dev/* && $(dir_fstype "$given") != tmpfs ]]; then
        # A device name that does not exist (a partition label that is gone, a typo) must not
        # become a file the toolkit creates in /dev. A file in a tmpfs under /dev (/dev/shm) is
        # a RAM-backed file target like any other.
        die "$EXIT_USAGE" "target $given: no such block device; check the name (lsblk -o NAME,PARTLABEL,SIZE). The toolkit creates no file in /dev itself; for a file in RAM, name one in /dev/shm"
    else
        local dir
        dir=$(dirname -- "$given")
        [[ -d $dir ]] || die "$EXIT_USAGE" "target $given: directory $dir does not exist; create it or choose another --target"
        TARGET_PATH=$(realpath -m -- "$given")
        TARGET_KIND="file"
        if [[ ! -e $TARGET_PATH ]]; then
            [[ $SIZE != all ]] || die "$EXIT_USAGE" "--size all: $given does not exist yet, so it has no size to use whole; give a size such as --size 8G"
            TARGET_CREATE=1
            REGION_BYTES=$(region_bytes_for 0 file) TARGET_BYTES=$REGION_BYTES
        else
            TARGET_BYTES=$(stat -c %s -- "$TARGET_PATH")
            REGION_BYTES=$(region_bytes_for 0 file)
            [[ $SIZE != all ]] || REGION_BYTES=$((TARGET_BYTES >> 20 << 20))
            if ((TARGET_BYTES < REGION_BYTES)); then
                if [[ -n $TARGET_DEFAULT ]]; then
                    TARGET_CREATE=1 TARGET_BYTES=$REGION_BYTES # our own file: grow it to the region
                else
                    REGION_BYTES=$((TARGET_BYTES >> 20 << 20))
                    REGION_NOTE="$given holds only $(human_bytes "$TARGET_BYTES"); region capped at $(human_bytes "$REGION_BYTES")"
                fi
            fi
            ((REGION_BYTES > 0)) || die "$EXIT_USAGE" "target $given is smaller than 1 MiB; give a larger file or a new path, which the toolkit creates"
        fi
    fi
    if [[ -n $DESTROY && $TARGET_KIND != block ]]; then
        die "$EXIT_USAGE" "--destroy $DESTROY: the target $given is a file, not a block device; drop --destroy"
    fi
}

# The filesystem a file target is on, "/dev/vda (ext4)": a file's numbers are that stack's.
file_fs() {
    local dir
    dir=$(dirname -- "$TARGET_PATH")
    findmnt -n -r -o SOURCE,FSTYPE -T "$dir" 2>/dev/null | tail -n 1 | awk '{ printf "%s (%s)", $1, $2 }'
}

# Why a partition's start is a problem, "" when it is aligned: a start off 4 KiB makes every
# 4 KiB write straddle two of the drive's pages; one off 1 MiB can straddle its erase blocks.
partition_misalignment() {
    local name start
    [[ $TARGET_KIND == block ]] || return 0
    name=$(basename -- "$TARGET_PATH")
    [[ -e /sys/class/block/$name/partition && -r /sys/class/block/$name/start ]] || return 0
    start=$(($(<"/sys/class/block/$name/start") * 512))
    if ((start % 4096)); then
        printf 'the partition starts at byte %s, not on a 4 KiB boundary: every 4 KiB I/O straddles two of the drive'"'"'s pages, so writes are slower (and wear faster) than the drive'"'"'s own; repartition on 1 MiB boundaries' "$start"
    elif ((start % 1048576)); then
        printf 'the partition starts at byte %s, not on a 1 MiB boundary: large I/Os may straddle the drive'"'"'s erase blocks; partitioning tools align to 1 MiB by default' "$start"
    fi
}

# fio's filename= treats ':' as a separator between files; escape it.
fio_filename() { printf '%s' "${1//:/\\:}"; }

# Write the whole region once with incompressible data: a read of never-written space (a new file,
# a trimmed SSD, a fresh RAM disk) returns zeros without touching the media and measures nothing.
fill_region() { # ENGINE DIRECT [PATH]
    local path=${3:-$TARGET_PATH}
    local -a args=(
        --name=prefill --filename="$(fio_filename "$path")" --size="$REGION_BYTES"
        --rw=write --bs=1m --iodepth=16 --ioengine="$1" --direct="$2"
        --refill_buffers=1 --end_fsync=1 --output-format=json --output=/dev/null
    )
    run_fio "$TK_TMP/fill.stderr" "${args[@]}" || {
        cat "$TK_TMP/fill.stderr" >&2
        die "$EXIT_FAIL" "writing the region of $TARGET_PATH failed (fio's messages above)"
    }
}

# Space a file target must leave free on its filesystem, for the results, logs and the system.
readonly FILE_TARGET_RESERVE=$((256 << 20))

# Create (or grow) a file target full of random data, after checking there is room for it.
create_file_target() {
    local dir avail
    dir=$(dirname -- "$TARGET_PATH")
    avail=$(findmnt -n -b -r -o AVAIL -T "$dir")
    local have=0
    [[ -e $TARGET_PATH ]] && have=$(stat -c %s -- "$TARGET_PATH")
    if ((avail + have < REGION_BYTES + FILE_TARGET_RESERVE)); then
        die "$EXIT_USAGE" "not enough space for a $(human_bytes "$REGION_BYTES") target in $dir: $(human_bytes "$avail") free, and $(human_bytes "$FILE_TARGET_RESERVE") must stay free beside the target (a full filesystem fails the runs and the results); use a smaller --size, or --target on a larger filesystem"
    fi
    info "creating $TARGET_PATH: $(human_bytes "$REGION_BYTES") of random data (once)"
    # Written under a temporary name and renamed when complete: fio fallocates the full size
    # first, so an interrupted creation would otherwise leave a full-sized file of unwritten
    # (zero) extents that a later run would take for finished. Buffered psync: no engine or
    # O_DIRECT probe can have run on a file that does not exist yet.
    local partial="$TARGET_PATH.partial"
    rm -f -- "$partial"
    fill_region psync 0 "$partial"
    mv -f -- "$partial" "$TARGET_PATH"
}

# Would writing to the target harm someone's data? Exit 3 with the reason if so. Called at plan
# time and again right before each fio that writes (through the run loop's helper process).
check_writes_allowed() {
    [[ $TARGET_KIND == block ]] || return 0
    local reason
    if ! reason=$(tk_python safety "$TARGET_PATH" "$DESTROY" 2>&1); then
        die "$EXIT_UNSAFE" "${reason:-refusing to write to $TARGET_PATH}"
    fi
}

# target_disk_sysfs: the sysfs folder of the disk behind the target (a partition's whole disk,
# the device holding a file), where queue/ lives; fails when there is none (tmpfs, overlay), or
# no target yet: §5's --peak grid counts the CPUs while its cases are built, before the target is.
target_disk_sysfs() {
    local sys
    [[ -n ${TARGET_PATH:-} ]] || return 1
    sys=$(sysfs_block_of "$TARGET_PATH") || return 1
    [[ ! -e $sys/partition ]] || sys=${sys%/*}
    [[ -d $sys/queue ]] || return 1
    printf '%s\n' "$sys"
}

# A block device takes direct I/O only in whole logical blocks, at offsets that are whole blocks:
# fio would otherwise start, and fail each such job with EINVAL (error 22) after the plan and the
# prefill. So every case's block size and the region are checked before anything runs.
check_io_alignment() {
    [[ $TARGET_KIND == block ]] || return 0
    local sys lbs i bs one bad=()
    sys=$(target_disk_sysfs) && lbs=$(<"$sys/queue/logical_block_size") || return 0
    ((lbs > 512)) || return 0
    for i in "${!CASE_NAMES[@]}"; do
        bs=$(case_option "$i" bs)
        for one in ${bs//[,:\/]/ }; do
            [[ $one == [0-9]* ]] || continue
            (($(size_bytes "$one") % lbs == 0)) || bad+=("${CASE_NAMES[$i]} (bs=$bs)")
        done
    done
    if ((${#bad[@]})); then
        die "$EXIT_USAGE" "$TARGET_PATH has $lbs-byte logical blocks: direct I/O must be whole blocks, and ${#bad[@]} case(s) are not: ${bad[*]}; use block sizes that are multiples of $lbs B (e.g. --bs 4k)"
    fi
    ((REGION_BYTES % lbs == 0)) ||
        die "$EXIT_USAGE" "$TARGET_PATH has $lbs-byte logical blocks: the region (--size, $REGION_BYTES bytes) is not a whole number of them; give a size that is a multiple of $lbs B"
}
