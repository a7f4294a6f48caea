"""Only facts the drive gave (issue 41), on the committed sample's real capture of QEMU's emulated
NVMe drive (the sample issue 41 read, kept in tests/fixtures/older-sample): its namespace reports nuse = nsze with
nothing written and NSFEAT 0x14 (bit 0 clear: no thin provisioning, so nuse is no fill level);
its temperature sat at 50 °C through the burst and its controller keeps no throttle counter
(HCTMA 0); §1 says its write cache is "write back". Each sentence of the report that rested on
such a fact is checked against what the drive did give."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from analysis.device.health_log import samples_table
from analysis.rules.burst import cliff_cause
from analysis.rules.cases import read_manifest
from analysis.sections.burst_part import _prefill_step, fill_text
from tests.conftest import REPO

SAMPLE = REPO / "tests" / "fixtures" / "older-sample" / "results"  # the sample issue 41 read
BURST = SAMPLE / "wss_burst" / "burst-write-128k"


def test_qemus_nuse_is_not_read_as_the_fill_level(tmp_path):
    manifest, prefill = read_manifest(SAMPLE / "wss_burst"), _prefill_step(SAMPLE / "wss_burst")
    assert (BURST / "rep1.fill").read_text().split() == ["4194304", "4194304"]
    # the sample's rep1.fill predates NSFEAT in it: not a fill level, and what was written said
    text = fill_text(BURST / "rep1.fill", manifest, prefill)
    assert "100% full" not in text
    said = ("whose region (50% of it) was written once by this section's prefill, the rest "
            "left as it was")
    assert text == said
    # as this toolkit records it: NUSE NSZE NSFEAT (QEMU's 0x14 = 20): no fill level either
    fill = tmp_path / "rep1.fill"
    fill.write_text("4194304 4194304 20\n")
    assert fill_text(fill, manifest, prefill) == said
    # with nothing written by the toolkit, the reason the drive's count is not read is given
    assert fill_text(fill, {**manifest, "state": "as-is"}, None) == (
        "of unknown fill (its NUSE is no fill level: the namespace reports no thin provisioning "
        "(NSFEAT bit 0 clear), and the state was not set)")
    fill.write_text("4194304 4194304\n")
    assert fill_text(fill, {**manifest, "state": "as-is"}, None) == (
        "of unknown fill (its NUSE is not read as a fill level: NSFEAT, which says whether it "
        "is one, was not recorded, and the state was not set)")
    # a thin-provisioned namespace (NSFEAT bit 0; none was recorded here): its NUSE is the fill
    fill.write_text("1048576 4194304 21\n")
    assert fill_text(fill, manifest, prefill) == (
        "25% full (the namespace's utilization: 1,048,576 of 4,194,304 blocks)")
    # no prefill and no state: unknown, said so
    assert fill_text(fill.with_name("none"), {**manifest, "state": "as-is"}, None) == (
        "of unknown fill (the drive reports no fill level, and the state was not set)")


def test_a_temperature_that_never_moved_says_nothing_of_heat():
    """The sample burst's own health samples: 50 °C throughout, every counter 0."""
    start = float((BURST / "rep1.start").read_text())
    health = samples_table(BURST / "health", start=start)
    assert len(health) >= 5 and set(health.temperature_c) == {50}
    unknown = cliff_cause(9, health, counters_kept=False)
    assert unknown.kind == "unknown"
    assert unknown.evidence == ("the temperature did not move (50 °C throughout) and the drive "
                                "keeps no throttle counter (HCTMA bit 0 clear)")
    # not knowing whether it keeps them, counters all 0 are none read
    assert cliff_cause(9, health).kind == "unknown"
    # a drive that says it keeps them (HCTMA bit 0): their standing still is a fact
    assert cliff_cause(9, health, counters_kept=True).kind == "cache"
    # a temperature that moved is one too
    moved = health.assign(temperature_c=[50 + i % 2 for i in range(len(health))])
    assert cliff_cause(9, moved, counters_kept=False).kind == "cache"


def analysed(tmp_path: Path, section: str, env_edit=None) -> str:
    tree = tmp_path / "results"
    shutil.copytree(SAMPLE, tree)
    if env_edit:
        env = json.loads((tree / "env.json").read_text())
        env_edit(env)
        (tree / "env.json").write_text(json.dumps(env))
    subprocess.run([sys.executable, "-m", "analysis", section, "--results", str(tree)],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300,
                   env={"PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    number = {"qd1": 2, "wss_burst": 6}[section]
    return (tmp_path / "out" / f"section_{number}_{section}.md").read_text()


def test_no_write_cache_explanation_that_section_1_contradicts(tmp_path):
    """The sample's §2: writes 27% slower than reads at QD=1, on a drive §1 finds a write-back
    cache on. It said "a medium whose program time no write cache hides"; now it says the cache
    did not hide the cost. The same results under a §1 that found write through (the same
    env.json with that one field changed: no write-through NVMe capture was recorded here) keep
    the medium's explanation, citing §1."""
    text = analysed(tmp_path / "back", "qd1")
    assert "no write cache hides" not in text
    assert ("the drive has a volatile write cache (§1: write back), so at QD=1 it did not hide "
            "the writes' cost here; this run measures the latency, not the cause") in text
    through = analysed(tmp_path / "through", "qd1",
                       lambda env: env["target"].update(write_cache="write through"))
    assert ("a medium whose program time no write cache hides at QD=1 (§1: write through, no "
            "volatile write cache)") in through


def test_section_6_of_the_sample_claims_no_fill_and_no_thermal_verdict(tmp_path):
    text = analysed(tmp_path, "wss_burst")
    assert "100% full" not in text and "Not thermal" not in text
    assert "Heat is not ruled out: the temperature did not move" in text
