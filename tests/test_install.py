"""The set-up: README's commands install what they need (lib/packages.tsv, requirements.txt), and
nothing else does it behind their back.

    $ bash -c 'source lib/packages.bash; packages_of nvme-vm'
    qemu-system-x86
    kmod
    busybox-static

`.ci/run` only clones and runs `make test`, so a green CI proves README's test command;
tests/test_report_e2e.py runs README's first, `make report`, on a copy with no .venv.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

GROUPS = ("run", "test", "nvme-vm")


def listed() -> dict[str, list[str]]:
    """lib/packages.tsv read with nothing but str.split: {group: [package, ...]}."""
    out: dict[str, list[str]] = {g: [] for g in GROUPS}
    for line in (REPO / "lib" / "packages.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            package, group, why = line.split("\t")
            assert why, package
            out[group].append(package)
    return out


def packages(function: str, *groups: str) -> list[str]:
    done = subprocess.run(["bash", "-c", f'source lib/packages.bash; {function} "$@"', "-", *groups],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_each_group_is_read_from_the_one_list():
    table = listed()
    assert all(table.values())
    for group in GROUPS:
        assert packages("packages_of", group) == table[group]
    # several groups: the list's order, each package once
    assert packages("packages_of", "nvme-vm", "run") == table["run"] + table["nvme-vm"]


def test_no_other_file_installs_packages():
    """apt-get install is written once (lib/packages.bash), and .ci/run installs nothing of its
    own: it runs README's test command, which does."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    scripts = [p for p in tracked if p.endswith((".bash", ".py", "Makefile")) or p == ".ci/run"
               or p.startswith("bench/")]
    command = re.compile(r"^\s*(if\s+!\s+)?(\w+=\S+\s+)*apt-get\s+(-\S+\s+)*install\b", re.MULTILINE)
    installing = [p for p in scripts if (REPO / p).is_file()
                  and command.search((REPO / p).read_text(errors="replace"))]
    assert installing == ["lib/packages.bash"]  # (a message naming a package is no install)
    ci = (REPO / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for word in ("apt-get", "pip", "setup.bash", "env.bash", "install"):
        assert not [c for c in commands if re.search(rf"\b{re.escape(word)}\b", c)], word
    assert "make test" in ci


@pytest.mark.root
def test_make_test_installed_every_group():
    """What make test's install step (env.bash --install-only --for-tests) left on this machine:
    every package of the list, as dpkg has it."""
    assert packages("packages_missing", *GROUPS) == []


@pytest.mark.root
def test_the_nvme_vm_is_not_called_ready_without_a_qemu_that_runs(tmp_path):
    """The VM's set-up checks packages with dpkg, but the VM starts the QEMU on PATH: with
    qemu-system-* hidden from PATH (every other tool still there, as the issue-40 run that hid
    it did), setup.bash fails naming it, where it once said "ready" with no QEMU version."""
    hidden = tmp_path / "bin"
    hidden.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if not tool.name.startswith("qemu-system-"):
            (hidden / tool.name).symlink_to(tool)
    path = f"{hidden}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin"
    done = subprocess.run(["bash", "tools/nvme_vm/setup.bash"], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "PATH": path}, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    assert "qemu-system-x86_64 does not run from this PATH" in done.stderr
    assert "ready" not in done.stderr
    ready = subprocess.run(["bash", "tools/nvme_vm/setup.bash"], cwd=REPO, capture_output=True,
                           text=True, timeout=300, check=False)
    assert ready.returncode == 0 and re.search(r"ready: .*QEMU emulator version \d", ready.stderr)
