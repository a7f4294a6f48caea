"""Write-cache recovery (analysis/rules/recovery.py) on seeded simulated probes with known
answers: a drive at FAST 2,000 MB/s with a 40 GiB cache that falls to SLOW 500 MB/s and regains
RATE GiB per idle minute; each probe writes its regained cache at FAST (a fraction of a second
averaged into fio's 1 s sample, as fio's log would hold it), then SLOW, with 3% noise.

Over 200 seeds (noise only) the rate came back within 5% of the truth every time (4.2% at most:
the noise around SLOW summed over a 60 s probe); a probe too short to use up its cache is flagged
as a lower bound and left out with every probe after it.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.rules.recovery import analyse_recovery, explain_gap, regained

GIB = 2**30
FAST, SLOW, CACHE = 2000.0, 500.0, 40.0


def probe(cache_GiB: float, seconds: int, rng, noise_pct: float = 3.0) -> np.ndarray:
    """Per-second MB/s of a probe that finds ``cache_GiB`` of fast cache."""
    fast_s = cache_GiB * GIB / 1e6 / FAST
    t = np.arange(seconds, dtype=float)
    share = np.clip(fast_s - t, 0, 1)                 # the part of each second at FAST
    x = share * FAST + (1 - share) * SLOW
    return x * (1 + rng.normal(0, noise_pct / 100, seconds))


def run(gaps, rate, seconds=60, seed=1, idle_extra=0.4):
    rng = np.random.default_rng(seed)
    probes = []
    for g in gaps:
        r = min(CACHE, rate * g / 60)
        probes.append((g, g + idle_extra, probe(r, seconds, rng)))
    return analyse_recovery(probes, FAST, SLOW, CACHE)


def test_one_probe_regained_within_a_second_of_writing():
    rng = np.random.default_rng(3)
    r, fell, censored = regained(probe(0.5, 20, rng, noise_pct=0), FAST, SLOW)
    assert r == pytest.approx(0.5, rel=1e-9) and fell == 1 and not censored


def test_rate_and_extrapolated_full_cache():
    rec = run([10, 30, 90, 270], rate=4.0)           # 0.67 .. 18 GiB: never full
    idle = np.array([10.4, 30.4, 90.4, 270.4]) / 60
    truth = float(np.sum(idle * 4.0 * np.array([10, 30, 90, 270]) / 60) / np.sum(idle ** 2))
    assert rec.rate_GiB_per_min == pytest.approx(truth, rel=0.02)
    assert rec.full_how == "extrapolated"
    assert rec.full_idle_s == pytest.approx(CACHE / rec.rate_GiB_per_min * 60)
    assert all(p.used for p in rec.probes)


def test_full_cache_observed_and_left_out_of_the_rate():
    rec = run([10, 30, 90, 270], rate=20.0)          # 270 s: 90 GiB > 40 GiB, full
    last = rec.probes[-1]
    assert not last.used and last.note.endswith(": full")
    assert last.regained_GiB == pytest.approx(CACHE, rel=0.02)
    assert rec.full_how == "observed" and rec.full_idle_s == pytest.approx(270.4)
    assert rec.rate_GiB_per_min == pytest.approx(20.0 * 10 / 10.4, rel=0.03)


def test_probe_too_short_is_a_lower_bound():
    # 90 s idle at 10 GiB/min: 15 GiB = 8 s at FAST; a 5 s probe never falls
    rec = run([10, 90, 270], rate=10.0, seconds=5)
    first, short, after = rec.probes
    assert first.used and short.censored and not short.used
    assert short.regained_GiB < 15 and "lower bound" in short.note
    assert not after.used and "starting cache is unknown" in after.note


def test_a_late_probe_without_timestamps_is_left_out_unguessed():
    """A tree written before the toolkit kept its steps: the idle is said, not guessed at."""
    rng = np.random.default_rng(2)
    rec = analyse_recovery([(10, 3600.0, probe(0.67, 30, rng))], FAST, SLOW, CACHE, gaps=[None])
    (p,) = rec.probes
    assert not p.used and p.note == (
        "idle 3600 s, not the planned 10 s: the record holds no timestamps of what ran in "
        "between (a tree written before they were kept): left out")
    assert "resumed" not in p.note
    assert rec.rate_GiB_per_min is None and rec.full_how == "unknown"
    assert rec.message == "no probe could be used to measure the recovery rate"


# The sample's first probe (docs/sample, issue 41): the burst's fio ended at 978.63 (its
# timestamp_ms), the probe's first I/O at 1002.63, planned 2 s. Stamps as lib/loop.bash writes
# them, in the order the steps ran.
BURST_END, PROBE_START = 1795666978.627, 1795667002.631
STEPS = [(1795666978.790, "fio of burst-write-128k rep 1 exiting"),
         (1795666979.100, "stopping the health sampler"),
         (1795666990.400, "checking the result of burst-write-128k rep 1"),
         (1795667001.200, "checking that writing to /dev/nvme0n1 is still safe")]


def test_the_toolkits_steps_explain_a_late_idle():
    why = explain_gap(STEPS, BURST_END, PROBE_START)
    assert why == ("the toolkit's own steps took 24.0 s (checking the result of "
                   "burst-write-128k rep 1 11.3 s, checking that writing to /dev/nvme0n1 is "
                   "still safe 10.8 s, starting fio 1.4 s)")
    # steps outside the gap (an earlier write's) are not this gap's
    assert explain_gap([(BURST_END - 5, "earlier"), *STEPS], BURST_END, PROBE_START) == why


def test_a_late_probe_the_record_explains_counts_at_its_measured_idle():
    """Nothing writes between a probe and the write before it: the drive idled the whole
    measured time, and the probe is a point of the fit at that idle."""
    rng = np.random.default_rng(4)
    on_time = (4, 4.3, probe(4.0 * 4 / 60, 30, rng))
    late = (2, 24.0, probe(4.0 * 24 / 60, 30, rng))
    why = explain_gap(STEPS, BURST_END, PROBE_START)
    rec = analyse_recovery([late, on_time], FAST, SLOW, CACHE, gaps=[why, ""])
    first, second = rec.probes
    assert first.used and first.note == (f"idle 24 s, not the planned 2 s: {why}; nothing wrote "
                                         "in between: counted at its measured idle")
    assert second.used and second.note == ""
    assert rec.rate_GiB_per_min == pytest.approx(4.0, rel=0.05)


def test_noise_only_power():
    """The rate over 200 seeds of noise against the least-squares truth of the idle measured
    (the regained cache is rate x planned gap, the fit is against the measured idle)."""
    gaps = np.array([10, 30, 90, 270])
    idle = (gaps + 0.4) / 60
    truth = float(np.sum(idle * 4.0 * gaps / 60) / np.sum(idle ** 2))
    errors = [abs(run(gaps, rate=4.0, seed=seed).rate_GiB_per_min / truth - 1)
              for seed in range(200)]
    assert max(errors) < 0.05                          # measured: 4.2% at most
