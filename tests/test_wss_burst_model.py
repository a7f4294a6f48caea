"""§6 end to end on a model drive with known answers (tools/model_drive/): a tmpfs-backed loop
device whose cgroup write throttle runs at FAST until C bytes have been written, then at SLOW,
and regains cache at RECOVER bytes/s while idle. wss_burst_test.bash (quick profile, the burst
and recovery parts) runs inside that cgroup; what it reports is checked against the model:

- the cache (SLC) estimate within the second in which the cache ran out of the bytes the model
  let through at FAST from the burst's first write (cache_granted: C, plus what a stall inside
  the burst regained);
- the level after the cliff at SLOW ±10%, and the steady state reached there unless the
  seconds after the cliff stood apart (a busy CPU delays the throttle's slices);
- the recovery rate within 20% of RECOVER.

The model's numbers are chosen so the quick profile's rules can see them: the cliff about 7 s in
(a segment is at least 5 s), 20 s of burst, 6 s probes after 2, 4 and 8 s of idle that regain 60% of
the cache at most (a full cache would leave the rate's fit). It runs for about 60 s.
"""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from tests.toolkit import ahead_of_load, script_env
from tests.write_regimes_run import cache_found_bounds
from tools.model_drive.drive import model_drive

MIB = 2**20
GIB = 2**30
CACHE = 512 * MIB
FAST = 80_000_000
SLOW = 20_000_000
RECOVER = 40_000_000


def cache_granted(events: list, recover: int) -> float:
    """The bytes the model let through at FAST before its first cliff, counted from the burst's
    first write, as the toolkit counts them: the cache free when the burst began (the resume
    after the longest idle, the section's before its burst) plus what each stall inside the
    burst regained. A stall of the model's idle threshold (0.25 s) counts as idle, and fio on a
    loaded machine pauses that long: v107's `slow` event said 380 MB "since it was refilled",
    by such a stall, against 550 MB from the burst's start (C = 537 MB, and the stall's regain)."""
    slow = next(i for i, e in enumerate(events) if e.kind == "slow")
    resumes = [e for e in events[:slow] if e.kind == "resume"]
    began = max(range(len(resumes)), key=lambda i: resumes[i].idle_s)
    return resumes[began].free + sum(recover * e.idle_s for e in resumes[began + 1:])


@pytest.mark.root
def test_cache_steady_state_and_recovery_of_a_model_drive(toolkit):
    # ahead of the suite's load (nice -20), the model's watcher thread (started in here, so it
    # inherits it) and the section's fio too: beside the suite, once, no cliff was found
    with ahead_of_load(), model_drive(size=1 * GIB, cache=CACHE, fast=FAST, slow=SLOW,
                                      recover=RECOVER) as drive:
        dev = drive.device
        cmd = ["bash", str(toolkit / "wss_burst_test.bash"), "--profile", "quick",
               "--target", dev, "--destroy", dev, "--size", "512M", "--no-prefill",
               "--parts", "burst,recovery", "--duration", "20", "--recovery-gaps", "2,4,8",
               "--recovery-probe", "6", "--no-host-ceiling"]
        result = subprocess.run(drive.wrap(cmd), capture_output=True, text=True,
                                env=script_env(), timeout=400, cwd=toolkit, check=False)
        events = drive.events
    assert result.returncode == 0, result.stderr
    slow = [e for e in events if e.kind == "slow"]
    assert slow, [e.describe() for e in events]
    truth_cache = cache_granted(events, RECOVER)

    facts = json.loads((toolkit / "tables" / "wss_burst_facts.json").read_text())
    head = {h["kind"]: h for h in facts["headlines"]}
    # the cache: what was written before the cliff, in the log's whole seconds, so to within the
    # second in which the cache ran out, which the rule gives to either side (docs/methodology.md):
    # up to one second at FAST's cap short (here 15% of the cache), one at SLOW's over. Its 10%
    # held while that second began 0.7 s before the cliff and went to the fast side; a loaded
    # host moves the edge (tests/test_write_regimes_after_cliff_e2e.py failed so in CI)
    assert head["slc_cache"]["unit"] == "GiB", (head["slc_cache"], [e.describe() for e in events])
    found = head["slc_cache"]["value"] * GIB
    low, high = cache_found_bounds(truth_cache, FAST, SLOW)
    assert low < found <= high, (found, truth_cache, [e.describe() for e in events])
    # the steady state after the cliff. Its level, the median second after it, is SLOW: the
    # throttle caps it, and 128 KiB at 20 MB/s asks little of a CPU, so load moves neither
    levels = pd.read_csv(toolkit / "tables" / "wss_burst_levels.csv").set_index("phase")
    assert levels.loc["after_cliff", "bw_MBps_median"] * 1e6 == pytest.approx(SLOW, rel=0.10)
    # SNIA's verdict judges the spread of the quick profile's 2 s rounds, which the kernel's
    # throttle does move on a busy CPU: a slice dispatched late lifts one second and empties
    # another (v90, one CPU kept busy beside the suite: "not reached (range and slope)" at a
    # median of 20.1 MB/s). The rule itself is tested on rounds with known answers
    # (tests/test_burst.py); here it must say reached, at SLOW, unless the seconds after the
    # cliff really stood apart: a round 10% off their median needs a second that far off
    steady = head["steady_state"]
    if steady["unit"] != "MB/s":
        burst = pd.read_csv(toolkit / "tables" / "wss_burst_burst.csv")
        after = burst[burst.t_s > levels.loc["after_cliff", "start_s"] + 1].bw_MBps
        assert steady["text"].startswith(("not reached (range", "not reached (slope")), steady
        assert ((after - after.median()).abs() > 0.1 * after.median()).any(), (
            steady, after.tolist())
    else:
        assert steady["value"] * 1e6 == pytest.approx(SLOW, rel=0.10)
    # the recovery rate: RECOVER bytes per idle second
    rate = head["cache_recovery"]["value"]
    assert head["cache_recovery"]["unit"] == "GiB/min", head["cache_recovery"]
    assert rate * GIB / 60 == pytest.approx(RECOVER, rel=0.20)

    print(f"model drive: cache {head['slc_cache']['value']:.4f} GiB (truth "
          f"{truth_cache / GIB:.4f}), after the cliff "
          f"{levels.loc['after_cliff', 'bw_MBps_median']:.2f} MB/s (truth {SLOW / 1e6:g}; "
          f"steady state: {steady['text']}), recovery {rate:.4f} GiB/min (truth {RECOVER * 60 / GIB:.4f})")
    table = pd.read_csv(toolkit / "tables" / "wss_burst_recovery.csv")
    print(table.to_string())
    assert list(table.gap_s) == [2, 4, 8]
    assert table.used.all(), table.to_string()
    # each probe followed its planned idle: fio's own timestamps, the toolkit's steps in the
    # gap kept beside it (issue 41: the sample's first idle was 24 s, not 2 s)
    late = table.idle_s - table.gap_s
    assert late.between(-0.2, 1.5).all(), table.to_string()  # fio starts in 0.3-1 s here
    wss = toolkit / "results" / "wss_burst"
    for gap in (2, 4, 8):
        steps = pd.read_csv(wss / f"recovery-{gap}s" / "rep1.gap", sep="\t")
        print(f"gap {gap} s:", "; ".join(f"{r.what} +{r.t - steps.t.iloc[0]:.3f} s"
                                        for r in steps.itertuples()))
        assert list(steps.columns) == ["t", "what"] and steps.t.is_monotonic_increasing
        assert steps.what.iloc[0].startswith("fio of ") and steps.what.iloc[0].endswith("exiting")
        assert "checking that writing to" in " ".join(steps.what)
        assert not any(w.startswith("checking the result") for w in steps.what), steps
    first = pd.read_csv(wss / "recovery-2s" / "rep1.gap", sep="\t").what.tolist()
    assert "starting the health snapshot after the burst (it runs beside the idle)" in first
    # the checks put off until the last probe were made: every result in place
    assert all((wss / c / "rep1.json").is_file() for c in
               ("burst-write-128k", "recovery-2s", "recovery-4s", "recovery-8s"))
    assert not list(wss.glob("*/.rep*.json.partial"))
    assert (wss / "burst-write-128k" / "health" / "last" / "health_device.txt").is_file() or \
        (wss / "burst-write-128k" / "health" / "last" / "smartctl.err").is_file()
    # the idle fio's timestamps measured agrees with the model's record of each gap
    # (the planned gaps, 2 s and more: a stall of a probe's writes under the suite's load is a
    # resume to the model too, 0.28 s measured, between the 4 s and 8 s gaps)
    resumes = [e.idle_s for e in events if e.kind == "resume" and e.idle_s >= 1.0]
    assert len(resumes) >= 3
    assert list(table.idle_s) == pytest.approx(resumes[-3:], abs=0.5)
    text = (toolkit / "out" / "section_6_wss_burst.md").read_text()
    assert "### Write-cache recovery" in text and "GiB of fast cache per idle minute" in text


def test_the_cache_granted_counts_a_stall_inside_the_burst():
    """cache_granted on the model's own bookkeeping (tools/model_drive/cache.py, no device): a
    burst at FAST after 5 s idle, stalled 0.3 s after 2 s (longer than the model's idle
    threshold), then on to the cliff. The `slow` event's `burst` counts only since the stall;
    the cache granted is every byte from the burst's first write, C and the stall's regain."""
    from tools.model_drive.cache import CacheModel
    model = CacheModel(cache=CACHE, fast=FAST, slow=SLOW, recover=RECOVER, t0=0.0, wall0=0.0)
    t, written, poll = 5.0, 0, 0.02
    while t < 7.0:  # 2 s at FAST: 160 MB
        t, written = t + poll, written + int(FAST * poll)
        model.step(t, written)
    for _ in range(15):  # 0.3 s without a write
        t += poll
        model.step(t, written)
    while model.limit == FAST:
        t, written = t + poll, written + int(FAST * poll)
        model.step(t, written)
    slow = next(e for e in model.events if e.kind == "slow")
    stall = [e for e in model.events if e.kind == "resume"][-1]
    assert 0.25 <= stall.idle_s < 0.35 and slow.burst < slow.written - 150e6
    granted = cache_granted(model.events, RECOVER)
    assert granted == pytest.approx(CACHE + RECOVER * stall.idle_s)
    # every byte written from the burst's start to the cliff, to within one poll's
    assert slow.written == pytest.approx(granted, abs=FAST * poll)
