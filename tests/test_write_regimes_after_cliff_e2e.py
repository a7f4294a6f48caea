"""Write regimes end to end (issue 41), after the cliff: §2's quick profile on a model drive
whose write cache runs out in the first write block's ramp (tests/write_regimes_run.py).

After the cliff (--write-regime after-cliff, the quick profile's default): each write case runs
as one block, a 20 s ramp of its own workload, then its repetitions back to back. With a cache
of 6 s at FAST, the first block's ramp passes the cliff (found by the burst rule: 6 s before
it, 14 s after), so every write repetition runs at SLOW: each write row is one regime, its
mean at most the throttle's cap (load on the machine can only slow it), and says which regime.
As found, and a resumed block: tests/test_write_regimes_e2e.py.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis.rules.cases import read_section
from tests.write_regimes_run import FAST, MB, SLOW, kept_run

RAMP_CACHE = 6 * FAST  # the first ramp's cliff at about 6 s of its 20


@pytest.fixture(scope="module")
def section_2_after_cliff(tmp_path_factory):
    # the quick profile's 1 s warm-up: a new fio's first second (a throttle slice's budget
    # dispatched at once) is fio's ramp, not a measured second
    yield from kept_run(RAMP_CACHE, "after-cliff", "1")


@pytest.mark.root
def test_after_the_cliff_every_write_row_is_one_declared_regime_at_the_slow_rate(
        section_2_after_cliff):
    tk, result, events = section_2_after_cliff
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ramps    2 write case(s)" in result.stderr and "2 x 20s" in result.stderr
    assert [e.kind for e in events].count("slow") >= 1, [e.describe() for e in events]
    table = pd.read_csv(tk / "tables" / "qd1_baseline.csv")
    writes = table[table.rw.isin(["write", "randwrite"])].set_index("case")
    assert not writes.regime_split.any(), writes[["bw_MBps_mean", "regime"]].to_string()
    # the throttle is a cap: load on the machine can slow a repetition, never lift it above.
    # A new fio's first writes pass in one throttle slice, so a 4 s repetition's mean may stand
    # a little above the cap (8.46 MB/s measured); the regime's level, the median of its
    # seconds, may not
    assert (writes.bw_MBps_mean * MB <= 1.25 * SLOW).all(), writes.bw_MBps_mean.to_string()
    assert (writes.bw_MBps_mean * MB > 0.5 * SLOW).all(), writes.bw_MBps_mean.to_string()
    # the first block's ramp fell at the cliff; the second found the drive past it
    first, second = writes.loc["randwrite-4k", "regime"], writes.loc["write-128k", "regime"]
    fell = re.fullmatch(r"after the write cache filled \(the ramp fell from ([\d.]+) to "
                        r"([\d.]+) MB/s at ([\d.]+) GiB\)", first)
    assert fell, first
    # from the cache's level (at most FAST, less on a busy machine) to the cap SLOW, after the
    # cache's bytes (the model's CACHE, give or take a throttle slice)
    assert 2 * SLOW < float(fell[1]) * MB <= 1.05 * FAST, first
    assert float(fell[2]) * MB <= 1.05 * SLOW, first
    assert float(fell[3]) * 2**30 == pytest.approx(RAMP_CACHE, rel=0.1), first
    assert second.startswith("after the write cache filled (randwrite-4k's ramp, just before"), \
        second
    # the ramps are beside the repetitions, never one of them
    cases = {c.name: c for c in read_section(tk / "results" / "qd1")}
    for name in writes.index:
        assert (tk / "results" / "qd1" / name / "ramp.json").is_file()
        assert cases[name].numbers == (1, 2, 3)
    regimes = pd.read_csv(tk / "tables" / "qd1_regimes.csv").set_index("case")
    assert set(regimes.index) == set(writes.index)
    assert (regimes.regime == writes.regime).all()
    # the median second too stood above the cap under the suite's load (8.46 MB/s: the block
    # layer's throttle dispatches in slices, late on a busy CPU, and a 1 s window then holds
    # more than a second's budget); 10% above SLOW is still a tenth of FAST
    assert (regimes.regime_MBps * MB <= 1.10 * SLOW).all(), regimes.regime_MBps.to_string()
    # the evidence: the first block's ramp wrote ~0.6 GiB before its first repetition, and
    # the second block followed with no idle, so all of it counts since the last idle
    before = regimes.written_before_GiB
    assert 0.4 < before["randwrite-4k"] < 0.8, regimes.to_string()
    assert before["write-128k"] > before["randwrite-4k"], regimes.to_string()
    assert regimes.written_since_idle_GiB.equals(before), regimes.to_string()
    assert regimes.drive_written_GiB.isna().all()  # a loop device counts no host writes
    text = (tk / "out" / "section_2_qd1.md").read_text()
    assert "### Write regimes" in text and "after the write cache filled" in text
    # reads are unaffected: in rounds, each with its mean, no regime
    reads = table[table.rw.isin(["read", "randread"])]
    assert reads.iops_mean.notna().all() and not reads.regime_split.any()
    assert (reads.regime.isna() | (reads.regime == "")).all()
