"""Safety interlocks on real loop devices: each refusal exits 3 and leaves every byte as it was."""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

from tests.toolkit import TINY, loop_device, mkfs_ext4, mounted, rep_files, run, sha256_of

pytestmark = pytest.mark.root


def refused(toolkit, dev, *extra):
    subprocess.run(["sync"], check=True)
    before = sha256_of(dev)
    result = run(toolkit, "qd1_test.bash", *TINY, "--target", dev, *extra)
    subprocess.run(["sync"], check=True)
    assert result.returncode == 3, result.stderr
    assert sha256_of(dev) == before
    assert not rep_files(toolkit)
    return result.stderr


@contextlib.contextmanager
def frozen(where):
    """The mounted filesystem's own writes (journal commits, superblock times) held back, so
    only a write to the device itself could change its bytes; the mount stays in place."""
    subprocess.run(["fsfreeze", "--freeze", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["fsfreeze", "--unfreeze", str(where)], check=False)


def test_mounted_device_is_refused_and_unchanged(toolkit):
    with loop_device(toolkit / "tmp" / "fs.img", size_mb=64) as dev:
        mkfs_ext4(dev)
        with mounted(dev, toolkit / "tmp" / "mnt") as where, frozen(where):
            err = refused(toolkit, dev)
            assert f"mounted at {where}" in err
            # No option overrides a mount, not even --destroy naming the device.
            err = refused(toolkit, dev, "--destroy", dev)
            assert "No option overrides this" in err


def test_filesystem_signature_without_destroy_is_refused(toolkit):
    with loop_device(toolkit / "tmp" / "fs.img", size_mb=64) as dev:
        mkfs_ext4(dev)
        err = refused(toolkit, dev)
        assert "partition signature (ext4;" in err and f"--destroy {dev}" in err


def test_destroy_naming_another_device_is_refused(toolkit):
    with loop_device(toolkit / "tmp" / "a.img", size_mb=64) as dev, \
            loop_device(toolkit / "tmp" / "b.img", size_mb=8) as other:
        mkfs_ext4(dev)
        err = refused(toolkit, dev, "--destroy", other)
        assert f"--destroy names {other}" in err


def test_destroy_naming_the_device_runs(toolkit):
    with loop_device(toolkit / "tmp" / "fs.img", size_mb=64) as dev:
        mkfs_ext4(dev)
        before = sha256_of(dev)
        result = run(toolkit, "qd1_test.bash", *TINY, "--target", dev, "--destroy", dev)
        assert result.returncode == 0, result.stderr
        assert len(rep_files(toolkit)) == 8
        assert sha256_of(dev) != before
        signatures = subprocess.run(["wipefs", "--no-act", "--json", dev], capture_output=True,
                                    text=True, check=True).stdout
        assert "ext4" not in signatures


def test_destroy_with_a_file_target_is_bad_usage(toolkit):
    result = run(toolkit, "qd1_test.bash", *TINY, "--destroy", "/dev/loop0")
    assert result.returncode == 2
    assert "is a file, not a block device" in result.stderr
    assert not (toolkit / "tmp" / "target.img").exists()


def test_a_missing_device_name_is_not_created_as_a_file(toolkit):
    # A partition label that is gone must not turn into an 8 GiB file in /dev (RAM).
    name = "/dev/disk/by-partlabel/ssd-toolkit-no-such-label"
    for extra in ([], ["--destroy", name]):
        result = run(toolkit, "qd1_test.bash", *TINY, "--target", name, *extra)
        assert result.returncode == 2
        assert f"target {name}: no such block device" in result.stderr
        assert not os.path.exists(name) and not os.path.exists(name + ".partial")


def test_safety_module_refuses_the_root_disk():
    """The disk holding / is refused whatever --destroy says."""
    root_source = subprocess.run(["findmnt", "-n", "-r", "-o", "SOURCE", "/"],
                                 capture_output=True, text=True, check=False).stdout.strip()
    if not root_source.startswith("/dev/"):
        pytest.skip(f"/ is on {root_source!r}, not a block device")
    from analysis.device.safety import Refusal, check_write
    with pytest.raises(Refusal, match="holds /, the running system"):
        check_write(root_source, root_source)
