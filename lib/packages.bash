# shellcheck shell=bash
# lib/packages.bash: installs the distribution's packages that lib/packages.tsv lists for a group
# (run, test, nvme-vm). Sourced by lib/common.bash and by tools/nvme_vm/setup.bash, which has no
# other library; it needs none.
#
#   packages_install run test   # apt-get installs what is missing of both groups; silent when none

PACKAGES_TSV="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)/packages.tsv"

packages_of() { # GROUP...: their packages, one a line, in the list's order
    awk -F'\t' -v groups=" $* " '!/^#/ && NF >= 2 && index(groups, " " $2 " ") {print $1}' \
        "$PACKAGES_TSV"
}

packages_missing() { # GROUP...: those of their packages dpkg has not installed
    local pkg status
    while read -r pkg; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || printf '%s\n' "$pkg"
    done < <(packages_of "$@")
}

# packages_install GROUP...: apt-get installs what is missing, saying what (on stderr). Returns 2
# without root when something is missing, 1 when apt-get fails; both say what to do.
packages_install() {
    local -a absent
    mapfile -t absent < <(packages_missing "$@")
    ((${#absent[@]})) || return 0
    if ((EUID != 0)); then
        printf '%s\n' "missing packages: ${absent[*]}; rerun as root (sudo) to install them" >&2
        return 2
    fi
    printf '%s\n' "installing ${absent[*]} (apt-get; lib/packages.tsv says what each is for)" >&2
    # update first: a fresh machine's package lists may be empty or stale
    if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null; then
        printf '%s\n' "apt-get update failed; check the network or the apt sources" >&2
        return 1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${absent[@]}" >/dev/null; then
        printf '%s\n' "apt-get install ${absent[*]} failed (see above)" >&2
        return 1
    fi
}
