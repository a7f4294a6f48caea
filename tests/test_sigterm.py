"""A suite that is terminated (CI's timeout, `kill -- -PGID`) cleans up as one interrupted by
Ctrl-C does: pytest runs no teardown for SIGTERM of its own, and the loop devices, mounts, fio
servers and cgroups of the tests then running were left behind (tests/toolkit.py,
teardown_on_sigterm). A small suite of its own is started here, with and without xdist, and
its process group is sent SIGTERM while a loop device of a fixture is attached."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.toolkit import REPO, backs

# The suite's conftest.py in small: the controller loads it too (xdist's workers alone import
# the test files)
CONFTEST = '''\
import sys

sys.path.insert(0, {repo!r})
from tests.toolkit import teardown_on_sigterm

teardown_on_sigterm()
'''
INNER = '''\
import time

import pytest

from tests.toolkit import loop_device


@pytest.fixture
def attached(tmp_path):
    with loop_device(tmp_path / "backing.img", size_mb=1, fill=False) as dev:
        open({said!r}, "w").write(dev + "\\n" + str(tmp_path / "backing.img"))
        yield dev


def test_waits(attached):
    time.sleep(120)
'''


@pytest.mark.root
@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "1"]], ids=["plain", "xdist"])
def test_a_terminated_suite_detaches_its_loop_device(workers):
    (REPO / "tmp").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sigterm-", dir=REPO / "tmp"))  # on disk: direct I/O
    said = work / "device"
    (work / "conftest.py").write_text(CONFTEST.format(repo=str(REPO)))
    (work / "test_inner.py").write_text(INNER.format(said=str(said)))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--basetemp", str(work / "base"), *workers, "test_inner.py"],
                            cwd=work, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not said.exists() or "\n" not in said.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.1)
        # the device by its backing file, not its name: once detached, the name may be a device
        # of a test running beside (losetup -f takes the first free name)
        dev, backing = said.read_text().split("\n")
        assert backs(dev, Path(backing))
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
        # 2: pytest's "interrupted"; the loop device was detached by the fixture's finally
        assert proc.returncode == 2, out
        assert not backs(dev, Path(backing)), out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if said.exists() and "\n" in said.read_text():  # a failed test's device, not left
            dev, backing = said.read_text().split("\n")
            if backs(dev, Path(backing)):
                subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.root
def test_a_device_detached_inside_its_block_is_not_detached_again_by_name(tmp_path):
    """v104: a loop device's name is free once detached, and losetup -f hands it to the next
    test that asks. loop_device detaches on leaving only the device still backed by its own
    file, so a test that detached it early (test_faults) leaves the next holder of the name
    alone."""
    from tests.toolkit import loop_device
    with loop_device(tmp_path / "first.img", size_mb=1, fill=False) as dev:
        subprocess.run(["losetup", "-d", dev], check=True)
        assert not backs(dev, tmp_path / "first.img")
        other = tmp_path / "second.img"
        other.write_bytes(bytes(1 << 20))
        reused = subprocess.run(["losetup", "-f", "--show", str(other)], capture_output=True,
                                text=True, check=True).stdout.strip()
    try:
        assert backs(reused, other)  # still attached after the first block's exit
    finally:
        subprocess.run(["losetup", "-d", reused], check=False)
    assert not backs(reused, other)
