# shellcheck shell=bash
# lib/collect.bash - raw capture of the machine, the target and the device's health (report §1).
#
# Sourced by env.bash and by the section scripts (health snapshots before/after a run); never run
# on its own. Bash only gathers the tools' own output - their JSON wherever a tool offers it - into
# a directory; analysis/device/environment.py and analysis/device/health.py turn that directory into
# results/env.json and out/env.txt. Nothing here parses a tool's text.
#
# Usage (after `source lib/collect.bash`):
#   collect_env_raw    DIR TARGET_PATH ENGINES_CSV   # everything: machine, tools, target, health
#   collect_health_raw DIR DEV                       # health only: smartctl, nvme smart-log/id-ctrl
#
# Every probe can fail on some machine (no cpufreq in a VM, no SMART on virtio, a tool not
# installed). A failure never aborts the caller, even under `set -euo pipefail`: it is written as
# NAME.err next to where NAME.json/NAME.txt would have been, for the analysis to report.
# Run time: well under a second when no device answers SMART; each tool is bounded by
# COLLECT_TIMEOUT seconds (default 20) so a hung device cannot stall a run: a tool still there
# then gets TERM, and KILL COLLECT_KILL_AFTER seconds (default 5) later should it ignore TERM; a
# line on stderr names it, and the caller goes on without its answer.

# _collect_capture DIR FILE CMD [ARG...]
# Runs CMD with stdout into DIR/FILE and always records its exit code in DIR/STEM.rc (STEM = FILE
# without extension): smartctl's exit code is a bit mask whose bits matter even when it printed
# JSON. On failure the reason goes to DIR/STEM.err; stdout is kept if the tool printed any.
_collect_capture() {
    local dir=$1 file=$2
    shift 2
    local stem=${file%.*}
    local out="$dir/$file" err="$dir/$stem.err" stderr="$dir/.$stem.stderr" rc=0
    local -a runner=()
    if ! command -v "$1" >/dev/null 2>&1; then
        printf '%s: not installed\n' "$1" >"$err"
        return 0
    fi
    if command -v timeout >/dev/null 2>&1; then
        runner=(timeout -k "${COLLECT_KILL_AFTER:-5}" "${COLLECT_TIMEOUT:-20}")
    fi
    "${runner[@]}" "$@" >"$out" 2>"$stderr" || rc=$?
    printf '%s\n' "$rc" >"$dir/$stem.rc"
    if ((rc != 0)); then
        {
            # timeout exits 124 after TERM, 137 (128 + KILL) when it had to kill.
            if ((rc == 124 || rc == 137)) && ((${#runner[@]} > 0)); then
                printf '%s: timed out after %ss\n' "$1" "${COLLECT_TIMEOUT:-20}"
                printf '%s: warning: %s did not answer within %ss (a hung device or driver?): stopped it; going on without its answer (see dmesg)\n' \
                    "$(basename "$0")" "$*" "${COLLECT_TIMEOUT:-20}" >&2
            else
                printf '%s: exit %s\n' "$1" "$rc"
            fi
            head -c 2000 "$stderr"
        } >"$err"
    fi
    [[ -s $out ]] || rm -f -- "$out"
    rm -f -- "$stderr"
    return 0
}

# _collect_copy SRC DIR FILE - copy a /proc or /etc file, or say why it could not be read.
_collect_copy() {
    local src=$1 dir=$2 file=$3
    # cat, not cp: cp keeps /proc's read-only mode on the copy.
    if ! cat -- "$src" >"$dir/$file" 2>/dev/null; then
        rm -f -- "$dir/$file"
        printf '%s: not readable\n' "$src" >"$dir/${file%.*}.err"
    fi
    return 0
}

# _collect_read FILE - print a sysfs file's content; fails quietly (sysfs reads can EIO).
_collect_read() {
    [[ -r $1 ]] && cat -- "$1" 2>/dev/null
}

# _collect_sysfs_ancestor SYSPATH FILE - the nearest directory at or above SYSPATH holding FILE.
# Used for numa_node and the PCIe link: both live on the PCI function the disk hangs off, a few
# levels above the block device (nvme0n1 -> nvme0 -> nvme -> 0000:01:00.0).
_collect_sysfs_ancestor() {
    local d
    d=$(readlink -f -- "$1") || return 1
    while [[ $d == /sys/devices/* ]]; do
        if [[ -e $d/$2 ]]; then
            printf '%s\n' "$d"
            return 0
        fi
        d=${d%/*}
    done
    return 1
}

# _collect_kname DEV - kernel name of a block device node (/dev/mapper/vg-lv -> dm-0).
_collect_kname() {
    local real
    real=$(readlink -f -- "$1") || return 1
    [[ -b $real && -e /sys/class/block/${real##*/} ]] || return 1
    printf '%s\n' "${real##*/}"
}

# _collect_whole_disk KNAME - the disk whose health describes KNAME: the parent of a partition,
# and the only slave of a single-device mapping (LVM, dm-crypt). A mapping over several devices
# (md RAID, striped LVM) stays itself: no single disk's SMART describes it.
_collect_whole_disk() {
    local name=$1 depth
    local -a slaves
    for depth in 1 2 3 4; do
        : "$depth"
        if [[ -e /sys/class/block/$name/partition ]]; then
            name=$(readlink -f -- "/sys/class/block/$name") || break
            name=${name%/*}
            name=${name##*/}
            continue
        fi
        slaves=("/sys/class/block/$name/slaves/"*)
        if ((${#slaves[@]} == 1)) && [[ -e ${slaves[0]} ]]; then
            name=${slaves[0]##*/}
            continue
        fi
        break
    done
    printf '%s\n' "$name"
}

# _collect_backing_dev PATH - /dev node of the block device holding a file, or nothing (tmpfs,
# overlay, NFS). The file's st_dev names it through /sys/dev/block; btrfs reports an anonymous
# st_dev, so fall back to the mount's source when that is a block device.
_collect_backing_dev() {
    local src
    if src=$(sysfs_block_of "$1"); then
        printf '/dev/%s\n' "${src##*/}"
        return 0
    fi
    src=$(findmnt -n -o SOURCE -T "$1" 2>/dev/null) || return 0
    src=${src%%\[*} # btrfs subvolume sources read /dev/sda2[/@home]
    if [[ -b $src ]]; then
        readlink -f -- "$src"
    fi
    return 0
}

# _collect_governors DIR - governor.txt: "cpuN GOVERNOR" per CPU, or "unavailable" when the kernel
# exposes no cpufreq (common in VMs): the analysis warns either way unless all say performance.
_collect_governors() {
    local dir=$1 f cpu gov found=0
    : >"$dir/governor.txt"
    for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
        cpu=${f#/sys/devices/system/cpu/}
        cpu=${cpu%%/*}
        if gov=$(_collect_read "$f"); then
            printf '%s %s\n' "$cpu" "$gov" >>"$dir/governor.txt"
            found=1
        fi
    done
    if ((found == 0)); then
        printf 'unavailable\n' >"$dir/governor.txt"
    fi
    return 0
}

# _collect_machine DIR - kernel, distribution, CPU, memory, governors and tool versions.
_collect_machine() {
    local dir=$1
    date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/collected_at.txt"
    _collect_copy /proc/sys/kernel/hostname "$dir" hostname.txt
    _collect_capture "$dir" uname.txt uname -srvmo
    _collect_copy /etc/os-release "$dir" os-release.txt
    _collect_capture "$dir" lscpu.json lscpu -J
    _collect_copy /proc/meminfo "$dir" meminfo.txt
    _collect_governors "$dir"
    _collect_capture "$dir" fio_version.txt fio --version
    # The toolkit's own revision, for the run history (a copy without git has none: no file).
    git -C "$(dirname "${BASH_SOURCE[0]}")/.." describe --always --dirty --abbrev=12 \
        >"$dir/toolkit_revision.txt" \
        2>/dev/null || rm -f -- "$dir/toolkit_revision.txt"
    _collect_capture "$dir" smartctl_version.json smartctl -j --version
    _collect_capture "$dir" nvme_version.txt nvme version
    return 0
}

# _collect_sysfs DIR KNAME - sysfs.txt: KEY=VALUE facts lsblk does not give (or that are worth
# reading at the source), for the disk KNAME. Missing files are listed in sysfs.err.
_collect_sysfs() {
    local dir=$1 name=$2 key value anc
    local sys="/sys/class/block/$name" out="$dir/sysfs.txt" err="$dir/sysfs.err"
    : >"$out"
    rm -f -- "$err"
    printf 'kname=%s\n' "$name" >>"$out"
    printf 'syspath=%s\n' "$(readlink -f -- "$sys")" >>"$out"
    for key in scheduler rotational logical_block_size physical_block_size write_cache \
        nr_requests max_sectors_kb; do
        if value=$(_collect_read "$sys/queue/$key"); then
            printf '%s=%s\n' "$key" "$value" >>"$out"
        else
            printf '%s: %s/queue/%s not readable\n' "$key" "$sys" "$key" >>"$err"
        fi
    done
    if value=$(_collect_read "$sys/loop/backing_file"); then
        printf 'loop_backing_file=%s\n' "$value" >>"$out"
    fi
    if anc=$(_collect_sysfs_ancestor "$sys" numa_node) &&
        value=$(_collect_read "$anc/numa_node"); then
        printf 'numa_node=%s\n' "$value" >>"$out"
    else
        printf 'numa_node: no numa_node above %s (not on a PCI/platform bus)\n' "$sys" >>"$err"
    fi
    if anc=$(_collect_sysfs_ancestor "$sys" current_link_speed); then
        printf 'pci_device=%s\n' "${anc##*/}" >>"$out"
        for key in current_link_speed current_link_width max_link_speed max_link_width; do
            if value=$(_collect_read "$anc/$key"); then
                printf '%s=%s\n' "$key" "$value" >>"$out"
            fi
        done
    else
        printf 'pcie_link: no PCIe link above %s\n' "$sys" >>"$err"
    fi
    [[ -s $err ]] || rm -f -- "$err"
    return 0
}

# _collect_block DIR DEV - identity of the block device under the target, its disk, and health.
_collect_block() {
    local dir=$1 dev=$2 name disk
    if ! name=$(_collect_kname "$dev"); then
        printf '%s: not a block device\n' "$dev" >"$dir/device.err"
        collect_health_raw "$dir" ""
        return 0
    fi
    disk=$(_collect_whole_disk "$name")
    printf '/dev/%s\n' "$name" >"$dir/device.txt"
    printf '/dev/%s\n' "$disk" >"$dir/disk.txt"
    _collect_capture "$dir" lsblk.json lsblk -J -b -O "/dev/$name"
    if [[ $disk != "$name" ]]; then
        _collect_capture "$dir" lsblk-disk.json lsblk -J -b -O -d "/dev/$disk"
    fi
    _collect_sysfs "$dir" "$disk"
    if [[ $disk =~ ^nvme[0-9]+n[0-9]+$ ]]; then
        # the namespace's own identity: its LBA format in use, size, capacity and utilisation
        _collect_capture "$dir" nvme-id-ns.json nvme id-ns "/dev/$disk" -o json
    fi
    collect_health_raw "$dir" "/dev/$disk"
}

# _collect_target DIR TARGET - what the target is (file or block device), where it lives, and
# whether it is mounted; then the block device under it.
_collect_target() {
    local dir=$1 target=$2 resolved dev=""
    printf '%s\n' "$target" >"$dir/target_path.txt"
    if ! resolved=$(realpath -e -- "$target" 2>/dev/null); then
        # The default file target is created by the first section, after §1 ran: describe the
        # filesystem that will hold it, from its nearest existing directory.
        printf 'missing\n' >"$dir/target_kind.txt"
        printf '%s: does not exist (yet)\n' "$target" >"$dir/target.err"
        resolved=$(realpath -m -- "$target")
        while [[ ! -e $resolved ]]; do
            resolved=$(dirname -- "$resolved")
        done
        printf '%s\n' "$resolved" >"$dir/target_existing_parent.txt"
        _collect_capture "$dir" findmnt.json findmnt -J -T "$resolved"
        dev=$(_collect_backing_dev "$resolved")
    elif [[ -b $resolved ]]; then
        printf '%s\n' "$resolved" >"$dir/target_resolved.txt"
        printf 'block\n' >"$dir/target_kind.txt"
        dev=$resolved
        _collect_capture "$dir" findmnt.json findmnt -J --source "$resolved"
        # findmnt exits 1 with no output when the device is not mounted: an answer, not an error.
        if [[ ! -e $dir/findmnt.json && $(cat -- "$dir/findmnt.rc" 2>/dev/null) == 1 ]]; then
            rm -f -- "$dir/findmnt.err"
        fi
    elif [[ -f $resolved ]]; then
        printf '%s\n' "$resolved" >"$dir/target_resolved.txt"
        printf 'file\n' >"$dir/target_kind.txt"
        stat -c '%s' -- "$resolved" >"$dir/target_size.txt" 2>/dev/null || true
        _collect_capture "$dir" findmnt.json findmnt -J -T "$resolved"
        dev=$(_collect_backing_dev "$resolved")
    else
        printf '%s\n' "$resolved" >"$dir/target_resolved.txt"
        printf 'other\n' >"$dir/target_kind.txt"
        printf '%s: neither a regular file nor a block device\n' "$resolved" >"$dir/target.err"
    fi
    if [[ -z $dev ]]; then
        printf 'no block device under %s\n' "$resolved" >"$dir/device.err"
        collect_health_raw "$dir" ""
        return 0
    fi
    _collect_block "$dir" "$dev"
}

# collect_health_raw DIR DEV
# smartctl -j -a (kept whatever its exit code) and, for NVMe, nvme smart-log/id-ctrl as JSON.
# DEV may be a partition or a file: health is the whole disk's, so both are resolved to it.
# An empty DEV records why there is no health (e.g. a file on tmpfs) and does nothing else.
collect_health_raw() {
    local dir=$1 dev=${2:-} name disk
    mkdir -p -- "$dir" && [[ -w $dir ]] || return 1
    dev=${dev%%\[*} # a findmnt SOURCE may carry a btrfs subvolume: /dev/sda2[/@home]
    if [[ -n $dev && ! -b $dev && -e $dev ]]; then
        dev=$(_collect_backing_dev "$dev")
    fi
    if [[ -z $dev ]] || ! name=$(_collect_kname "$dev"); then
        printf 'smartctl: no block device to query%s\n' "${2:+ for $2}" >"$dir/smartctl.err"
        return 0
    fi
    disk=$(_collect_whole_disk "$name")
    printf '/dev/%s\n' "$disk" >"$dir/health_device.txt"
    _collect_capture "$dir" smartctl.json smartctl -j -a "/dev/$disk"
    if [[ $disk == nvme* ]]; then
        _collect_capture "$dir" nvme-smart-log.json nvme smart-log "/dev/$disk" -o json
        _collect_capture "$dir" nvme-id-ctrl.json nvme id-ctrl "/dev/$disk" -o json
        _collect_media_writes "$dir" "$disk"
    fi
    return 0
}

# _collect_media_writes DIR DISK - what the drive wrote to its NAND, for the write amplification
# (analysis/device/nand_writes.py): the OCP extended SMART log where the drive has it; else the
# vendor's own log, chosen by the controller's PCI vendor id as Meta's CacheLib chooses the
# plugin (text: its first line is the command). A drive with neither leaves their .err files.
_collect_media_writes() {
    local dir=$1 disk=$2 vendor
    local -a cmd=()
    _collect_capture "$dir" nvme-ocp-smart.json nvme ocp smart-add-log "/dev/$disk" -o json
    [[ -e $dir/nvme-ocp-smart.err ]] || return 0
    vendor=$(_collect_read "/sys/class/block/$disk/device/device/vendor") || vendor=""
    case $vendor in
        0x144d) cmd=(samsung vs-smart-add-log) ;;
        0x1bb1) cmd=(seagate vs-smart-add-log) ;;
        0x1b96 | 0x15b7) cmd=(wdc vs-smart-add-log) ;;
        0x1179 | 0x1e0f) cmd=(toshiba vs-smart-add-log) ;;
        0x14a4 | 0x1e95) cmd=(liteon vs-smart-add-log) ;;
        0x8086) cmd=(intel smart-log-add) ;;
        0x1c5c) cmd=(skhms vs-nand-stats) ;;
        *)
            printf 'no vendor log known for PCI vendor %s\n' "${vendor:-unknown}" >"$dir/nvme-vendor-log.err"
            return 0
            ;;
    esac
    _collect_capture "$dir" .vendor-log.txt nvme "${cmd[@]}" "/dev/$disk"
    if [[ -e $dir/.vendor-log.txt ]]; then
        { printf 'nvme %s /dev/%s\n' "${cmd[*]}" "$disk" && cat -- "$dir/.vendor-log.txt"; } >"$dir/nvme-vendor-log.txt"
    fi
    [[ ! -e $dir/.vendor-log.err ]] || mv -- "$dir/.vendor-log.err" "$dir/nvme-vendor-log.err"
    rm -f -- "$dir/.vendor-log.txt" "$dir/.vendor-log.rc"
    return 0
}

# collect_env_raw DIR TARGET_PATH ENGINES_CSV
# Raw facts for results/env.json: machine, tools, the engines the caller probed (e.g.
# "io_uring=ok,libaio=ok,psync=ok"), the target and the health of the disk under it.
# Returns 1 only when DIR cannot be created or written; every other failure is recorded in DIR.
collect_env_raw() {
    local dir=$1 target=$2 engines=${3:-}
    # Nowhere to write is the one real failure: everything else is recorded in DIR.
    mkdir -p -- "$dir" && [[ -w $dir ]] || return 1
    _collect_machine "$dir"
    printf '%s\n' "$engines" >"$dir/engines.txt"
    _collect_target "$dir" "$target"
    # which CPUs take the drive's interrupts (analysis/device/irq.py)
    cat /proc/interrupts >"$dir/interrupts.txt" 2>/dev/null
    return 0
}
