#!/usr/bin/env bash
# §1 Environment: installs what is missing, then records what is measured and on what.
#
# Usage: sudo bash env.bash [--target PATH] [--install-only] [--no-install] [--nvme-vm] [--for-tests]
# (see --help)
# Writes results/env.json (for the analysis) and out/env.txt (for people); with RESULTS=DIR,
# DIR/env.json and out/<tree name>/env.txt.
# Run time: a few seconds when everything is installed; a minute or two on a fresh machine.
set -euo pipefail

# shellcheck source=lib/run.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/run.bash"

SECTION="env" # its own options are in lib/options.tsv (scope env)

usage() {
    cat <<EOF
Usage: sudo bash $TK_PROG [--target PATH] [--install-only [--for-tests] | --no-install]

§1 of the report. Installs what is missing (quietly when nothing is), from the distribution
(lib/packages.tsv): $(packages_of run | xargs),
and .venv from the pinned requirements.txt; with --for-tests also what make test uses:
$(packages_of test | xargs), and the NVMe VM. Then records kernel,
distribution, CPU, governor, memory, fio version, which engines work, and for the target: path,
type, model, serial, firmware, capacity, block sizes, scheduler, rotational flag, NUMA node, PCIe
link, mount state and a SMART/NVMe health summary (or "unavailable on this device" and why).

$(usage_options "common env" --target --results --hosts --install-only --no-install --nvme-vm --for-tests)
  -h, --help         this help
It takes every option of the sections (report.bash passes them on) and uses these. With --hosts,
a fleet run, it records this machine, the orchestrator, and the hosts with their targets; each
host's own §1 is env.bash run there.

Writes results/env.json, out/env.txt (and the raw tool outputs in results/env-raw/); with
--results DIR (RESULTS), DIR/env.json and out/<name of DIR>/env.txt.
Warns, without failing, about what skews results: a CPU governor other than performance, a file
target (a filesystem in the path), O_DIRECT refused.
Exit codes: 0 done; 1 an install or a tool failed; 2 bad usage.
EOF
}

# The venv is rebuilt only when requirements.txt changed since it was made (a stamp copy inside).
install_venv() {
    local venv="$TK_ROOT/.venv" stamp="$TK_ROOT/.venv/requirements.stamp"
    if [[ -x $venv/bin/python ]] && cmp -s "$TK_ROOT/requirements.txt" "$stamp"; then
        return 0
    fi
    info "creating .venv from requirements.txt (pip)"
    python3 -m venv "$venv" || die "$EXIT_FAIL" "python3 -m venv failed; install python3-venv"
    # --no-compile, then one import of what the analysis loads: pip would compile every module of
    # every package (pandas' and scipy's tests included), 33 s of CPU here against 22. The import
    # writes the bytecode of what the toolkit uses while we are root, so that a user who runs
    # the analysis without sudo (or the NVMe VM's guest, which shares the venv read-only) does
    # not compile it again in every process; so does the toolkit's own package's compile. Both
    # write whatever PYTHONDONTWRITEBYTECODE says (set in some containers, this CI's included):
    # without the bytecode each analysis process compiled its imports anew, 5.7-6.5 s against
    # 2.2 s for numpy, pandas, matplotlib and scipy, and a §2 test file took 43 CPU-s against 27.
    "$venv/bin/pip" install -q --no-compile --disable-pip-version-check -r "$TK_ROOT/requirements.txt" ||
        die "$EXIT_FAIL" "pip install -r requirements.txt failed"
    local compile=(env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python")
    "${compile[@]}" -c 'import numpy, pandas, matplotlib.pyplot, scipy.stats, yaml, junitparser, psycopg' ||
        die "$EXIT_FAIL" "the new .venv cannot import numpy, pandas, matplotlib, scipy, PyYAML, junitparser or psycopg"
    "${compile[@]}" -m compileall -q "$TK_ROOT/analysis" >/dev/null ||
        die "$EXIT_FAIL" "python -m compileall analysis failed"
    cp -- "$TK_ROOT/requirements.txt" "$stamp"
}

# The distribution's packages (lib/packages.tsv), .venv, and with --nvme-vm or --for-tests the
# emulated NVMe drive's VM. make test's install (--for-tests) goes on where this machine cannot
# boot the VM at all (not an amd64 Debian, exit 2): its tests then skip, saying why.
install_all() {
    local -a groups=(run)
    local rc=0
    [[ -z $FOR_TESTS ]] || groups+=(test)
    packages_install "${groups[@]}" || rc=$?
    ((rc == 0)) || die "$([[ $rc == 2 ]] && echo "$EXIT_USAGE" || echo "$EXIT_FAIL")" \
        "the install stopped (above); as root: sudo bash env.bash --install-only"
    install_venv
    [[ -n $NVME_VM || -n $FOR_TESTS ]] || return 0
    bash "$TK_ROOT/tools/nvme_vm/setup.bash" || rc=$?
    if ((rc == 2)) && [[ -z $NVME_VM ]]; then
        warn "the NVMe VM cannot run on this machine (above): its tests will be skipped"
    elif ((rc != 0)); then
        die "$EXIT_FAIL" "the NVMe VM's setup failed (see above)"
    fi
}

# Which engines work on the target, with O_DIRECT; a read-only probe. A target that does not exist
# yet (the default file) is probed through a small file beside it, on the same filesystem.
probe_engines() { # RAW_DIR: direct.txt says whether O_DIRECT worked
    local raw_dir=$1 saved_path=$TARGET_PATH engine result=()
    if [[ ! -e $TARGET_PATH ]]; then
        TARGET_PATH="$(dirname -- "$TARGET_PATH")/.env-probe.img"
        head -c $((4 << 20)) /dev/urandom >"$TARGET_PATH"
    fi
    local direct_ok=""
    for engine in io_uring libaio psync; do
        if probe_engine_works "$engine" 1; then
            result+=("$engine=ok")
            direct_ok=1
        else
            result+=("$engine=failed")
        fi
    done
    if [[ -n $direct_ok ]]; then
        echo "ok" >"$raw_dir/direct.txt"
    elif probe_engine_works psync 0; then
        echo "refused: O_DIRECT open failed on $(dirname -- "$TARGET_PATH")" >"$raw_dir/direct.txt"
    fi
    [[ $TARGET_PATH == "$saved_path" ]] || rm -f -- "$TARGET_PATH"
    TARGET_PATH=$saved_path
    local IFS=,
    ENGINES="${result[*]}"
}

capture() {
    require_tools fio lsblk findmnt
    if [[ -n $HOSTS ]]; then
        # A fleet run: §1 is this machine, the orchestrator; --target names the hosts' paths.
        load_hosts
        TARGET=""
    fi
    resolve_target
    cd "$TK_ROOT" || exit "$EXIT_FAIL"
    TK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssd-toolkit.XXXXXX")
    trap on_exit EXIT
    local raw_dir="$RESULTS/env-raw"
    rm -rf -- "$raw_dir"
    mkdir -p "$raw_dir"
    service_start
    probe_engines "$raw_dir"
    collect_env_raw "$raw_dir" "$TARGET_PATH" "$ENGINES"
    if [[ -n $HOSTS ]]; then
        local h
        for h in "${!FLEET_LABELS[@]}"; do
            printf '%s %s\n' "$(fleet_name "$h")" "${FLEET_TARGETS[$h]}"
        done >"$raw_dir/fleet.txt"
    fi
    # env.json goes into the results tree, env.txt into its out/ folder (the analysis knows where).
    tk_python env "$raw_dir" --write || die "$EXIT_FAIL" "could not build env.json from $raw_dir"
    info "engines: $ENGINES"
}

main() {
    parse_common_options "$@"
    if [[ -z $NO_INSTALL ]]; then
        install_all
    fi
    [[ -n $INSTALL_ONLY ]] || capture
}

main "$@"
