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
from analysis.rules.write_ramp import read_ramp
from tests.write_regimes_run import MB, SLOW, cache_found_bounds, kept_run, most_MBps

# The cache's rate here, a third of the as-found file's FAST: the rule finds the cliff where the
# rate falls for good, so the seconds before it must stay at the cap whatever the suite does
# beside them. At 80 MB/s (20 K IOPS of 4 KiB at QD 1) they were CPU-bound: in v153 the last 3 s
# before the cliff fell to 41, 40 and 34 MB/s, least squares gave those seconds (too few for a
# segment of their own) to the slow level after them, and the cliff was found 3 s early, at 0.31
# GiB of a 0.45 GiB cache. 24 MB/s is 6 K IOPS: beside two busy loops every second before the
# cliff stood at 24.0 MB/s and the cliff was found at 6 s and 0.134 GiB, the cache, twice (at
# 80 MB/s, alternated with it: seconds of 55-87 MB/s, the cliff at 0.433 and 0.438 GiB).
FAST = 24 * MB
RAMP_CACHE = 6 * FAST  # the first ramp's cliff at about 6 s of its 20
GIB = 2**30


@pytest.fixture(scope="module")
def section_2_after_cliff(tmp_path_factory):
    # the quick profile's 1 s warm-up: a new fio's first second (a throttle slice's budget
    # dispatched at once) is fio's ramp, not a measured second
    yield from kept_run(RAMP_CACHE, "after-cliff", "1", FAST)


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
    # from the cache's level to the cap SLOW, after the cache's bytes (the model's CACHE, give
    # or take a throttle slice). Each level is the median of its seconds, and a second at a cap
    # may hold up to 1.3 x it (most_MBps); the mean over the seconds before the cliff, their
    # bytes over their time, is held to FAST within 3 slices of the whole
    ramp = read_ramp(tk / "results" / "qd1" / "randwrite-4k", 20)
    cliff = ramp.cliff
    assert (float(fell[1]), float(fell[2])) == pytest.approx(
        (cliff.before_MBps, cliff.after_MBps), rel=0.01), first
    assert 2 * SLOW / MB < cliff.before_MBps <= most_MBps(FAST, 1), first
    assert cliff.after_MBps <= most_MBps(SLOW, 1), first
    before_s = cliff.index  # whole seconds before the cliff's
    assert cliff.written_GiB * GIB / before_s / MB <= most_MBps(FAST, before_s), \
        (first, ramp.MBps)
    after = ramp.MBps[cliff.index + 1:]  # whole seconds after the cliff's
    assert after.mean() <= most_MBps(SLOW, after.size), (first, ramp.MBps)
    # the cache found: the ramp's whole seconds before its cliff, against the model's truth, the
    # bytes its cache took before it switched to SLOW (its first slow event; the drive was fresh,
    # so all of them this ramp's). Whole seconds cannot split the one in which the cache ran out,
    # and the rule gives it to either side: the truth less that second's cache part (under one
    # second at FAST's cap) or plus its slow part (at most one at SLOW's). Idle, the switch falls
    # on a second's edge (144.0 MB found, 144.03 true); CI on 43b3a01, loaded, found 0.12 GiB,
    # under the 0.9 x RAMP_CACHE that an older check asked of the page's two digits
    truth = next(e for e in events if e.kind == "slow").burst
    found = cliff.written_GiB * GIB
    assert truth >= RAMP_CACHE, [e.describe() for e in events]
    low, high = cache_found_bounds(truth, FAST, SLOW)
    assert low < found <= high, (first, truth, ramp.MBps)
    assert fell[3] == f"{cliff.written_GiB:.2g}", first
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
    # the median second too stood above the cap under the suite's load (8.46 MB/s): a second
    # at the cap may hold up to 1.3 x it (most_MBps), still under half of FAST
    assert (regimes.regime_MBps <= most_MBps(SLOW, 1)).all(), regimes.regime_MBps.to_string()
    # the evidence: the first block's warm-up and ramp (21 s) wrote the cache and then SLOW
    # before its first repetition, and the second block followed with no idle, so all of it
    # counts since the last idle
    before = regimes.written_before_GiB
    assert 0.9 * RAMP_CACHE < before["randwrite-4k"] * GIB \
        < RAMP_CACHE + 21 * most_MBps(SLOW, 21) * MB, regimes.to_string()
    assert before["write-128k"] > before["randwrite-4k"], regimes.to_string()
    assert regimes.written_since_idle_GiB.equals(before), regimes.to_string()
    assert regimes.drive_written_GiB.isna().all()  # a loop device counts no host writes
    text = (tk / "out" / "section_2_qd1.md").read_text()
    assert "### Write regimes" in text and "after the write cache filled" in text
    # reads are unaffected: in rounds, each with its mean, no regime
    reads = table[table.rw.isin(["read", "randread"])]
    assert reads.iops_mean.notna().all() and not reads.regime_split.any()
    assert (reads.regime.isna() | (reads.regime == "")).all()
