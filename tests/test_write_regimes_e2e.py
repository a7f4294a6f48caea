"""Write regimes end to end (issue 41): §2's quick profile on a model drive whose write cache
runs out part-way through the section, so that a write case's repetitions stand on both sides
of the cliff (tools/model_drive: a RAM-backed loop device, its cgroup throttle at FAST until C
bytes are written, then at SLOW; it regains cache at RECOVER bytes/s while idle, here almost
nothing).

C is three write repetitions' worth at FAST (4 s each): §2 runs two write cases three times each,
in rounds, so the cache runs out in the second round and each write case's later repetitions
run at SLOW. Before the regimes, each write row was one mean over both levels, describing
neither; now a case whose repetitions stood at both is split, its row keeps no mean, and each
regime's own row in tables/qd1_regimes.csv is at FAST or at SLOW, over its own repetitions.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest

from analysis.rules.cases import read_section
from tests.toolkit import script_env
from tools.model_drive.drive import model_drive

MB = 1_000_000
FAST = 80 * MB     # 4 KiB at QD 1 reaches it (20 K IOPS) on the RAM-backed loop device
SLOW = 8 * MB
CACHE = 3 * 4 * FAST
RECOVER = 100_000  # idle between the writes (the reads' turns) regains next to nothing


@pytest.fixture(scope="module")
def section_2(tmp_path_factory):
    from tests.toolkit import make_copy
    tk = make_copy()
    try:
        with model_drive(size=512 * 2**20, cache=CACHE, fast=FAST, slow=SLOW,
                         recover=RECOVER) as drive:
            dev = drive.device
            cmd = ["bash", str(tk / "qd1_test.bash"), "--profile", "quick", "--target", dev,
                   "--destroy", dev, "--size", "256M", "--no-prefill", "--state", "as-is",
                   "--repeat", "3", "--runtime", "4", "--ramp", "0", "--no-host-ceiling",
                   "--engine", "libaio", "--seed", "1"]
            result = subprocess.run(drive.wrap(cmd), capture_output=True, text=True,
                                    env=script_env(), timeout=400, cwd=tk, check=False)
            events = drive.events
        yield tk, result, events
    finally:
        subprocess.run(["rm", "-rf", str(tk)], check=False)


@pytest.mark.root
def test_a_case_across_the_cliff_is_split_and_each_regime_is_one_level(section_2):
    tk, result, events = section_2
    assert result.returncode == 0, result.stderr[-3000:]
    assert [e.kind for e in events].count("slow") >= 1, [e.describe() for e in events]
    table = pd.read_csv(tk / "tables" / "qd1_baseline.csv")
    writes = table[table.rw.isin(["write", "randwrite"])]
    assert set(writes.regime.dropna()) and "regime" in table
    split = writes[writes.regime_split]
    assert not split.empty, writes[["case", "bw_MBps_mean", "regime"]].to_string()
    # a split case's row has no mean: one over two states describes neither
    assert split.iops_mean.isna().all() and split.bw_MBps_mean.isna().all()
    # what the row would have said before: a mean between the two levels, neither state's
    cases = {c.name: c for c in read_section(tk / "results" / "qd1")}
    for name in split.case:
        old = np.mean([g.directions["write"].bw_bytes for g in cases[name].reps])
        assert 1.5 * SLOW < old < 0.8 * FAST, (name, old)
    regimes = pd.read_csv(tk / "tables" / "qd1_regimes.csv")
    assert set(regimes.case) == set(split.case)
    for name, rows in regimes.groupby("case"):
        reps = rows.n.sum()
        assert reps == len(cases[name].reps) == 3, rows.to_string()
        # fastest first: the cache's level, then after the cliff (each regime's level is the
        # median of its seconds; a repetition that crossed the cliff in its last second or two
        # keeps its place by its median, and lowers its regime's mean a little)
        levels = list(rows.regime_MBps * MB)
        assert levels[0] == pytest.approx(FAST, rel=0.12), rows.to_string()
        assert levels[-1] == pytest.approx(SLOW, rel=0.15), rows.to_string()
        assert rows.bw_MBps_mean.iloc[0] * MB > 0.6 * FAST, rows.to_string()
        assert rows.bw_MBps_mean.iloc[-1] * MB < 0.3 * FAST, rows.to_string()
        assert "after" in rows.regimes.iloc[0], rows.regimes.iloc[0]
    text = (tk / "out" / "section_2_qd1.md").read_text()
    assert "### Write regimes" in text and "(write regimes below)" in text
    findings = text[text.index("### Findings"):text.index("### Write regimes")]
    assert "nan" not in findings
    # reads are unaffected: one row each, with its mean
    reads = table[table.rw.isin(["read", "randread"])]
    assert reads.iops_mean.notna().all() and not reads.regime_split.any()
    assert (reads.regime.isna() | (reads.regime == "")).all()
