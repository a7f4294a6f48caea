#!/usr/bin/env bash
# tools/nvme_vm/setup.bash - install what the NVMe VM needs; a second run changes nothing.
#
# Usage: sudo bash tools/nvme_vm/setup.bash    (or: sudo bash env.bash --nvme-vm)
# Installs from the distribution lib/packages.tsv's nvme-vm group (QEMU, kmod, busybox-static) and
# its run group (the guest runs the host's fio, nvme-cli and smartctl); Debian's generic
# kernel package (linux-image-amd64's current ABI, not the -cloud flavour, which lacks 9p),
# downloaded and unpacked, never installed: vmlinuz into NVME_VM_CACHE (default
# /var/cache/ssd-toolkit/nvme-vm), its modules into /lib/modules/<release>, where the guest, which
# sees the host's root read-only, finds them; and virtme-ng, pinned in
# tools/nvme_vm/requirements.txt, into .venv. The kernel is the archive's current one (Debian drops
# an ABI's package when the next arrives, so it cannot be pinned); NVME_VM_CACHE/kernel names it.
# Run time: about a minute on a fresh machine (70 MB kernel package, 400 MB of modules unpacked).
# Exit codes: 0 ready; 1 an install failed; 2 not root, or not an amd64 Debian.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${NVME_VM_CACHE:-/var/cache/ssd-toolkit/nvme-vm}
KERNEL_META=linux-image-amd64
# shellcheck source=lib/packages.bash
source "$ROOT/lib/packages.bash"

say() { printf 'nvme-vm setup: %s\n' "$*" >&2; }
fail() {
    say "$2"
    exit "$1"
}

# The distribution's packages of lib/packages.tsv's run and nvme-vm groups (the guest runs the
# host's fio, nvme-cli and smartctl).
install_packages() {
    local rc=0
    packages_install run nvme-vm || rc=$?
    ((rc == 0)) || fail "$rc" "the packages above are needed first"
}

# The package linux-image-amd64 depends on today, e.g. linux-image-6.1.0-56-amd64.
kernel_package() {
    local pkg
    pkg=$(apt-cache depends "$KERNEL_META" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    if [[ -z $pkg ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || fail 1 "apt-get update failed"
        pkg=$(apt-cache depends "$KERNEL_META" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    fi
    [[ -n $pkg ]] || fail 1 "apt-cache finds no $KERNEL_META: is this Debian with its main archive?"
    printf '%s\n' "$pkg"
}

install_kernel() {
    local pkg release work
    pkg=$(kernel_package)
    release=${pkg#linux-image-}
    if [[ -f $CACHE/vmlinuz-$release && -f /lib/modules/$release/modules.dep ]]; then
        printf '%s\n' "$release" >"$CACHE/kernel"
        return 0
    fi
    say "fetching $pkg (unpacked, not installed: vmlinuz to $CACHE, modules to /lib/modules/$release)"
    work=$(mktemp -d "${TMPDIR:-/tmp}/nvme-vm-kernel.XXXXXX")
    # shellcheck disable=SC2064 # the folder is known now
    trap "rm -rf -- '$work'" EXIT
    # apt-get download writes into the current folder, as the _apt user where it can
    chmod 755 "$work"
    (cd "$work" && apt-get download -qq "$pkg" 2>/dev/null) || fail 1 "apt-get download $pkg failed"
    dpkg-deb -x "$work"/*.deb "$work/x" || fail 1 "dpkg-deb could not unpack $pkg"
    mkdir -p "$CACHE" /lib/modules
    cp -- "$work/x/boot/vmlinuz-$release" "$CACHE/vmlinuz-$release.partial"
    mv -- "$CACHE/vmlinuz-$release.partial" "$CACHE/vmlinuz-$release"
    rm -rf -- "/lib/modules/$release"
    cp -a -- "$work/x/lib/modules/$release" "/lib/modules/$release"
    depmod -a "$release" || fail 1 "depmod -a $release failed"
    printf '%s\n' "$release" >"$CACHE/kernel"
    rm -rf -- "$work"
    trap - EXIT
}

install_virtme() {
    local want have=""
    want=$(awk -F'==' '/^virtme-ng==/ {print $2}' "$ROOT/tools/nvme_vm/requirements.txt")
    [[ -x $ROOT/.venv/bin/pip ]] || fail 1 "no .venv in $ROOT: run 'sudo bash env.bash --install-only' first"
    [[ -x $ROOT/.venv/bin/vng ]] && have=$("$ROOT/.venv/bin/vng" --version 2>/dev/null | awk '{print $2}')
    [[ $have == "$want" ]] && return 0
    say "installing virtme-ng $want into .venv (pip)"
    "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check \
        -r "$ROOT/tools/nvme_vm/requirements.txt" || fail 1 "pip install virtme-ng==$want failed"
}

# matplotlib's font cache, which the guests share (they cannot write the host's home): built here
# in a second, where a guest under TCG takes a minute or more.
build_font_cache() {
    mkdir -p "$CACHE/matplotlib"
    [[ -n $(compgen -G "$CACHE/matplotlib/fontlist-*.json") ]] && return 0
    MPLCONFIGDIR="$CACHE/matplotlib" "$ROOT/.venv/bin/python" -c 'import matplotlib.font_manager' ||
        fail 1 "could not build matplotlib's font cache in $CACHE/matplotlib"
}

main() {
    ((EUID == 0)) || fail 2 "needs root (apt-get, /lib/modules): sudo bash $0"
    [[ $(dpkg --print-architecture 2>/dev/null) == amd64 ]] ||
        fail 2 "the NVMe VM boots Debian's amd64 kernel: this is not an amd64 Debian"
    install_packages
    install_kernel
    install_virtme
    build_font_cache
    # Installed by dpkg is not runnable from here: "ready" is said of the QEMU the VM will start.
    local qemu
    qemu=$(qemu-system-x86_64 --version 2>/dev/null | head -1) || qemu=""
    [[ -n $qemu ]] ||
        fail 1 "qemu-system-x86_64 does not run from this PATH ($PATH), though its package is installed"
    say "ready: kernel $(cat "$CACHE/kernel"), $("$ROOT/.venv/bin/vng" --version), $qemu"
}

main "$@"
