"""A device with 4 KiB logical blocks takes direct I/O only in whole blocks: a case with a smaller
block size is refused before anything runs (exit 2, the cases named), not sent to fio to fail
with EINVAL. On a real loop device with 4096-byte sectors; the NVMe namespace of the same kind is
in test_nvme_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.toolkit import TINY, loop_device, run


@pytest.mark.root
def test_512_byte_io_on_a_4k_device_is_refused_before_fio(toolkit):
    with loop_device(toolkit / "tmp" / "4k.img", size_mb=80, sector_size=4096) as dev:
        queue = Path(f"/sys/class/block/{dev.removeprefix('/dev/')}/queue")
        assert (queue / "logical_block_size").read_text().strip() == "4096"
        refused = run(toolkit, "bs_sweep_test.bash", "--target", dev, "--destroy", dev, *TINY,
                      "--bs", "512,4k", "--rw", "randread")
        assert refused.returncode == 2, refused.stderr
        assert f"{dev} has 4096-byte logical blocks" in refused.stderr
        assert "randread-512" in refused.stderr and "bs=512" in refused.stderr
        assert "randread-4k" not in refused.stderr.split("are not:")[1]
        assert not (toolkit / "results" / "bs_sweep").exists()
        mix = run(toolkit, "mix_rw_test.bash", "--target", dev, "--destroy", dev, *TINY,
                  "--bs", "2k")
        assert mix.returncode == 2 and "bs=2k" in mix.stderr, mix.stderr
        # whole blocks pass the check (the plan only: nothing is run)
        plan = run(toolkit, "bs_sweep_test.bash", "--target", dev, "--destroy", dev, *TINY,
                   "--bs", "4k,8k", "--rw", "randread", "--dry-run")
        assert plan.returncode == 0, plan.stderr
