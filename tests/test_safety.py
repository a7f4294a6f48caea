"""Safety interlocks on real loop devices: each refusal exits 3 and leaves every byte as it was."""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

from analysis.core.registry import read_sections
from tests.toolkit import TINY, loop_device, mkfs_ext4, mounted, rep_files, run, sha256_of

pytestmark = pytest.mark.root


def refused(toolkit, dev, *extra, script="qd1_test.bash"):
    subprocess.run(["sync"], check=True)
    before = sha256_of(dev)
    result = run(toolkit, script, *TINY, "--target", dev, *extra)
    subprocess.run(["sync"], check=True)
    assert result.returncode == 3, result.stderr
    assert sha256_of(dev) == before
    assert not list((toolkit / "results").rglob("*.json"))
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


def test_a_device_with_no_signature_is_written_by_no_section_without_destroy(toolkit):
    """A raw volume shows no signature, yet may hold someone's data: every section refuses it
    (exit 3) before touching a byte, the ones that only read included (their prefill writes),
    and says what it would have written and the flag to add."""
    with loop_device(toolkit / "tmp" / "raw.img", size_mb=64) as dev:
        for section in read_sections().values():
            if section.id == "env":
                continue
            err = refused(toolkit, dev, script=section.script)
            assert f"refusing to write to {dev} without --destroy naming it" in err, section.id
            assert "no filesystem or partition signature was found" in err
            assert f"pass --destroy {dev}" in err and "This run would write:" in err
        # a section that only reads: its prefill is what would write, and it can read instead
        err = refused(toolkit, dev, "--qd", "1", "--no-seq", "--peak", "off",
                      script="qd_sweep_test.bash")
        assert "the prefill: the region (64 MiB) written once" in err
        assert "the write cases" not in err and "add --state as-is --no-prefill" in err


def test_a_section_that_only_reads_needs_no_destroy(toolkit):
    """--state as-is --no-prefill writes nothing: the plan says so, the run reads, the device's
    bytes stay as they were."""
    with loop_device(toolkit / "tmp" / "raw.img", size_mb=64) as dev:
        args = [*TINY, "--target", dev, "--qd", "1", "--no-seq", "--peak", "off"]
        plan = run(toolkit, "qd_sweep_test.bash", *args, "--dry-run")
        assert plan.returncode == 0, plan.stderr
        assert "REFUSED as given" in plan.stderr and "the prefill" in plan.stderr
        before = sha256_of(dev)
        result = run(toolkit, "qd_sweep_test.bash", *args, "--state", "as-is", "--no-prefill")
        assert result.returncode == 0, result.stderr
        assert f"writes   none: this run only reads {dev}" in result.stderr
        assert sha256_of(dev) == before
        assert rep_files(toolkit, "qd_sweep")


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


def test_a_mounted_partition_refuses_writes_to_its_disk_and_to_the_other_partition(toolkit):
    from tests.test_drive_state import partitioned_loop
    with partitioned_loop(toolkit / "tmp", 16, 48) as (disk, p1, p2):
        mkfs_ext4(p2)
        with mounted(p2, toolkit / "tmp" / "mnt") as where, frozen(where):
            err = refused(toolkit, p1, "--destroy", p1)
            assert f"{p2} (another partition of its disk) is mounted at {where}" in err
            err = refused(toolkit, disk, "--destroy", disk)
            assert f"{p2} (a partition on it) is mounted at {where}" in err
