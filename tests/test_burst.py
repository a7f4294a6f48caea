"""Burst -> steady state: plateau, cliff, SLC cache estimate, SNIA steady state.

Every verdict has a case that should find it and one that should not, on bandwidth logs built
here in fio's own line format (``"1000, 1953125, 1, 0, 0"``: ms, KiB/s, write, block size 0 and
priority 0 of an averaged row, the time jittered by a few ms as fio's timer does) and read back
with analysis.fio.log_series, with noise from a fixed seed. Then on real fio logs: a write to a loop
device whose bandwidth the block layer caps (cgroup blkio throttle, a known rate in MiB/s) and
then cuts to a quarter mid-run, a real cliff at a known time; and a real SATA drive's 10,011 s
log from the samples.
"""

from __future__ import annotations

import inspect
import json
import math
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from analysis.core.segments import DEFAULT_CLIFF, change_points, find_cliff, plateau, written_GiB
from analysis.core.steady import DEFAULT_STEADY, steady_state
from analysis.fio.log_files import find_logs
from analysis.fio.log_series import read_per_second
from analysis.fio.output import load_document
from analysis.rules.burst import analyse_burst, state_of_rate
from tests.conftest import REPO, SAMPLES
from tests.toolkit import loop_device, unless_installable
from tools.ram_device import Throttle

GIB = 2**30
SSD860_BW = (SAMPLES / "louwrentius__fio-plot" / "benchmark_data" / "HPMICROSERVERG8"
             / "SATA300" / "FULL" / "SAMSUNG860PRO" / "randrw-iodepth-1-numjobs-1_bw.1.log")


def levels(*parts, noise_pct=2.0, seed=1) -> np.ndarray:
    """Per-second MB/s: (level, seconds) parts, with Gaussian noise of noise_pct % of each
    level, fixed seed."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([np.full(n, float(v)) for v, n in parts])
    return np.maximum(x + rng.normal(0, 1, x.size) * x * noise_pct / 100, 0)


def through_fio_log(tmp_path: Path, mbps: np.ndarray, seed: int = 7) -> np.ndarray:
    """Write ``mbps`` as fio's averaged bandwidth log and read it back as MB/s per second."""
    rng = np.random.default_rng(seed)
    path = tmp_path / f"built_{uuid.uuid4().hex[:6]}_bw.1.log"
    lines = []
    for k, v in enumerate(mbps, 1):
        t = 1000 * k + int(rng.integers(-3, 4))          # fio's timer: a few ms either way
        lines.append(f"{t}, {round(v * 1e6 / 1024)}, 1, 0, 0\n")
    path.write_text("".join(lines))
    series = read_per_second([path])
    assert len(series.seconds) == len(mbps) and series.directions == ("write",)
    back = series.total()
    assert np.allclose(back, mbps, atol=1024 / 1e6)   # KiB/s rounding only
    return back


# --------------------------------------------------------------------------- cliff

def test_cliff_at_40s_and_the_cache_written_before_it(tmp_path):
    # 2000 MB/s for 40 s (the SLC cache), then 600 MB/s for 80 s
    bw = through_fio_log(tmp_path, levels((2000, 40), (600, 80)))
    cliff = find_cliff(bw)
    assert cliff is not None
    assert abs(cliff.time_s - 40) <= 2 and cliff.index == round(cliff.time_s)
    # cache estimate: what was written before the cliff, 2000e6 B/s x 40 s = 74.5 GiB
    assert cliff.written_GiB == pytest.approx(bw[:cliff.index].sum() * 1e6 / GIB, rel=1e-12)
    assert cliff.written_GiB == pytest.approx(2000e6 * 40 / GIB, abs=2000e6 * 2 / GIB)
    assert cliff.before_MBps == pytest.approx(2000, rel=0.02)
    assert cliff.after_MBps == pytest.approx(600, rel=0.02)
    assert cliff.drop_pct == pytest.approx(70, abs=2)
    b = analyse_burst(bw)
    assert b.cliff == cliff
    assert b.plateau.median_MBps == pytest.approx(2000, rel=0.02)
    assert b.plateau.cv == pytest.approx(0.02, abs=0.007)     # the 2% noise put in
    assert b.plateau.n == cliff.index - 1                      # first second left out
    assert b.post.median_MBps == pytest.approx(600, rel=0.02) and b.post.n == 120 - cliff.index
    assert b.written_GiB == pytest.approx(bw.sum() * 1e6 / GIB)
    assert b.run_s == 120


def test_cliff_with_a_ramp_and_heavy_noise(tmp_path):
    # 3 s of transition and 10% noise: still the same cliff, within two seconds
    ramp = [(v, 1) for v in (1650, 1300, 950)]
    bw = through_fio_log(tmp_path, levels((2000, 40), *ramp, (600, 77), noise_pct=10, seed=3))
    cliff = find_cliff(bw)
    assert cliff is not None and 39 <= cliff.time_s <= 43


def test_first_of_two_drops_is_the_cliff(tmp_path):
    bw = through_fio_log(tmp_path, levels((2000, 30), (1200, 60), (400, 60)))
    cliff = find_cliff(bw)
    assert cliff is not None and abs(cliff.time_s - 30) <= 2
    assert cliff.local_after_MBps == pytest.approx(1200, rel=0.03)
    assert cliff.after_MBps < 1200        # the median over the rest takes in the second drop


@pytest.mark.parametrize("name,parts,noise", [
    ("flat", [(2000, 120)], 5.0),
    ("short dip that recovers", [(2000, 50), (600, 5), (2000, 65)], 2.0),
    ("long dip that recovers", [(2000, 50), (600, 30), (2000, 60)], 2.0),
    ("drop of 15%", [(2000, 60), (1700, 60)], 2.0),
    ("steady noise", [(1000, 300)], 15.0),
])
def test_no_cliff(tmp_path, name, parts, noise):
    bw = through_fio_log(tmp_path, levels(*parts, noise_pct=noise))
    assert find_cliff(bw) is None, name
    b = analyse_burst(bw)
    assert b.cliff is None and b.post is None and b.plateau.n == len(bw) - 1


def test_slow_decline_is_no_cliff():
    # 2000 -> 1000 MB/s over 10 minutes: half the bandwidth lost, but never abruptly
    bw = np.linspace(2000, 1000, 600) + np.random.default_rng(5).normal(0, 30, 600)
    assert len(change_points(bw)) > 3          # the segmentation sees a staircase ...
    assert find_cliff(bw) is None              # ... of steps too small to be a cliff


def test_cliff_must_last():
    bw = levels((2000, 115), (600, 5))
    assert find_cliff(bw) is None                          # 5 s after it: not lasting
    cliff = find_cliff(bw, min_duration_s=5, min_segment_s=3, local_s=3)
    assert cliff is not None and abs(cliff.time_s - 115) <= 1


def test_cliff_thresholds_are_parameters():
    bw = levels((2000, 60), (1700, 60))                   # a 15% drop
    assert find_cliff(bw) is None
    cliff = find_cliff(bw, min_drop_pct=10)
    assert cliff is not None and abs(cliff.time_s - 60) <= 2


def test_quick_profile_30s():
    bw = levels((2000, 12), (600, 18))
    b = analyse_burst(bw)
    assert b.cliff is not None and abs(b.cliff.time_s - 12) <= 1
    assert not b.steady.reached and b.steady.reason == "not enough rounds"
    assert b.steady.n_rounds == 0 and b.steady.first_round is None
    assert b.steady.message == ("steady state not judged: the rule needs 5 complete rounds of "
                                "60 s (300 s); the run has 30 s (0 complete)")
    flat = steady_state(levels((500, 30), noise_pct=3), round_s=5)
    assert flat.reached and (flat.first_round, flat.last_round) == (1, 5)
    assert not flat.snia_rounds and "5 s rounds, shorter than SNIA's 1 minute" in flat.message


def test_too_short_for_a_cliff():
    assert find_cliff(levels((2000, 6))) is None
    assert find_cliff([]) is None
    assert change_points(levels((2000, 4), (100, 4))) == []     # below two minimum segments


# --------------------------------------------------------------------------- steady state

def rounds_of(*means, noise=15.0, seed=11) -> np.ndarray:
    """Per-second MB/s whose 1-minute rounds have the given means (noise per second)."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([np.full(60, float(m)) for m in means])
    return x + rng.normal(0, noise, x.size)


def test_steady_state_reached_where_the_rule_first_holds(tmp_path):
    # Round means 2000, 1800, 1400, 1000, 700, then 600 for 7 rounds. By hand, windows of 5:
    #   rounds 4-8  (1000, 700, 600, 600, 600): mean 700, range 400 = 57% > 20%   -> no
    #   rounds 5-9  (700, 600, 600, 600, 600):  mean 620, range 100 = 16.1% <= 20% but the
    #     line: deviations (80, -20, -20, -20, -20) against x - 2 = (-2..2) give a slope of
    #     -200/10 = -20 MB/s per round, moving 4 x 20 = 80 = 12.9% of the mean > 10% -> no
    #   rounds 6-10 (600 x 5): range and slope ~0 (noise of 15 MB/s per second, ~2 per round)
    # -> reached at rounds 6-10, 600 MB/s.
    bw = through_fio_log(tmp_path, rounds_of(2000, 1800, 1400, 1000, 700, *[600] * 7))
    st = steady_state(bw)
    assert st.reached and st.reason == "reached"
    assert (st.first_round, st.last_round) == (6, 10) and st.n_rounds == 12
    assert st.level == pytest.approx(600, rel=0.01)
    assert st.range_pct < 3 and st.slope_pct < 3 and st.snia_rounds
    assert st.message.startswith("steady state reached at rounds 6\u201310 of 12 "
                                 "(1-minute rounds): 600 MB/s")
    assert [round(r) for r in st.rounds[:5]] == pytest.approx(
        [2000, 1800, 1400, 1000, 700], abs=5)
    # the same series, judged over rounds 5-9 only: the range passes, the slope fails
    st59 = steady_state(bw[240:540])
    assert not st59.reached and st59.reason == "slope"
    assert st59.range_pct == pytest.approx(16.1, abs=0.5)
    assert st59.slope_pct == pytest.approx(12.9, abs=0.5)


def test_falling_series_never_steady():
    # -60 MB/s per round from 2000: a window's range is 240 = 13-19% of its mean (passes),
    # its line moves the same 240 (> 10%): the slope rule fails everywhere
    st = steady_state(rounds_of(*[2000 - 60 * r for r in range(15)]))
    assert not st.reached and st.reason == "slope"
    assert st.best_range_pct <= 20 and st.best_slope_pct > 10
    assert "still trending" in st.message


def test_oscillating_series_never_steady():
    # rounds alternate 600 / 1400: range 800 = 74-87% of the mean, the line flat
    st = steady_state(rounds_of(*[600, 1400] * 6))
    assert not st.reached and st.reason == "range"
    assert st.best_range_pct > 70 and st.best_slope_pct < 10


def test_falling_and_oscillating_fails_both():
    st = steady_state(rounds_of(*[3000 - 100 * r - (1000 if r % 2 else 0) for r in range(12)]))
    assert not st.reached and st.reason == "range and slope"


def test_not_enough_rounds():
    st = steady_state(rounds_of(*[600] * 5)[:-1])          # 299 s: 4 complete rounds
    assert not st.reached and st.reason == "not enough rounds" and st.n_rounds == 4
    assert "the run has 299 s (4 complete)" in st.message
    assert steady_state(rounds_of(*[600] * 5)).reached      # 300 s: judged, and steady


def test_a_run_of_exactly_five_rounds_lacks_only_fios_last_second():
    # fio does not log the window that closes as the job exits: a 300 s run logs 299 s. Given
    # the configured 300 s, round 5 counts over its 59 s; without it, or when more is missing,
    # only complete rounds count.
    bw = rounds_of(*[600] * 5)[:-1]
    assert steady_state(bw).reason == "not enough rounds"
    st = steady_state(bw, planned_s=300)
    assert st.reached and st.n_rounds == 5 and (st.first_round, st.last_round) == (1, 5)
    assert st.rounds[4] == pytest.approx(float(np.mean(bw[240:])))
    assert steady_state(bw[:-1], planned_s=300).reason == "not enough rounds"  # 2 s short
    assert steady_state(bw, planned_s=360).reason == "not enough rounds"  # a run cut short
    assert analyse_burst(bw, planned_s=300).steady.reached


def test_a_one_sample_round_missing_its_sample_is_not_a_round():
    """Rounds as long as fio's log step (a quick burst): the unlogged last second leaves the last
    round empty. It is not counted; it used to be, as a NaN mean (numpy's 'Mean of empty slice')."""
    bw = [600.0] * 9
    st = steady_state(bw, round_s=1, planned_s=10)
    assert st.n_rounds == 9 and not any(np.isnan(st.rounds))


def test_steady_state_thresholds_are_parameters():
    bw = rounds_of(*[600, 1400] * 6)
    assert steady_state(bw, range_pct=90).reached
    assert steady_state(bw, window=2, range_pct=90, slope_pct=90).first_round == 1
    with pytest.raises(ValueError, match="multiple of the sample step"):
        steady_state(bw, round_s=2.5)


def test_defaults_are_the_documented_thresholds():
    params = inspect.signature(analyse_burst).parameters
    assert {k: params[k].default for k in DEFAULT_CLIFF | DEFAULT_STEADY} == \
        DEFAULT_CLIFF | DEFAULT_STEADY
    assert DEFAULT_STEADY == {"round_s": 60.0, "window": 5, "range_pct": 20.0, "slope_pct": 10.0}
    cliff = inspect.signature(find_cliff).parameters
    assert all(cliff[k].default == v for k, v in DEFAULT_CLIFF.items())
    steady = inspect.signature(steady_state).parameters
    assert all(steady[k].default == v for k, v in DEFAULT_STEADY.items())


def test_bad_series_refused():
    with pytest.raises(ValueError, match="non-finite value at index 2"):
        find_cliff([1, 2, float("nan"), 3])
    with pytest.raises(ValueError, match="negative value"):
        steady_state([1, -2, 3])
    with pytest.raises(ValueError, match="evenly spaced"):
        plateau([1, 2, 3], seconds=[1, 2, 4])
    with pytest.raises(ValueError, match="3 bandwidth values but 2 seconds"):
        written_GiB([1, 2, 3], seconds=[1, 2])
    with pytest.raises(ValueError, match="empty"):
        analyse_burst([])


def test_seconds_other_than_one():
    # samples every 2 s: times and the cache estimate scale with the step
    bw = levels((2000, 20), (600, 40))
    cliff = find_cliff(bw, seconds=np.arange(1, 61) * 2.0)
    assert cliff is not None and cliff.time_s == pytest.approx(2 * cliff.index)
    assert cliff.written_GiB == pytest.approx(2 * bw[:cliff.index].sum() * 1e6 / GIB)


# --------------------------------------------------------------------------- real logs

def test_real_sata_drive_log():
    """A Samsung 860 PRO, randrw 50/50 4 KiB at QD 1 for 10,011 s: ~51 MB/s read + write,
    flat (CV 3%): no cliff, steady from the first window."""
    bw = read_per_second([SSD860_BW])
    b = analyse_burst(bw.total(), bw.seconds)
    assert b.cliff is None
    assert b.plateau.n == 10010 and b.plateau.median_MBps == pytest.approx(51.1, abs=0.1)
    assert b.steady.reached and (b.steady.first_round, b.steady.last_round) == (1, 5)
    assert b.steady.n_rounds == 166
    assert b.written_GiB == pytest.approx(bw.total().sum() * 1e6 / GIB)


HIGH, LOW = 32 << 20, 8 << 20      # bytes/s: 32 MiB/s, then 8 MiB/s (33.55 and 8.39 MB/s)
RUN_S, CUT_S = 12, 6


@pytest.mark.root
@pytest.mark.alone  # the block layer's throttle keeps its pace only while its workers get a CPU:
@pytest.mark.paced  # beside the suite, a dip at 3 s read as the cliff; beside the gc drive, none
def test_real_cliff_on_a_throttled_loop_device():
    """Two 128 KiB sequential writes at QD 32, 12 s each, on two loop devices capped by the
    block layer at 32 MiB/s; after 6 s one of them is cut to 8 MiB/s. fio's own logs must show
    the cliff at 6 s (fio starts its clock a little after it is launched: within 1.5 s), the
    plateau and post-cliff levels at the caps in MB/s, and no cliff on the other device, which
    is steady (2 s rounds)."""
    if shutil.which("fio") is None:
        unless_installable("fio is not installed")
    try:
        throttle = Throttle()
    except OSError as exc:
        pytest.skip(f"cannot cap a device's bandwidth here: {exc}")
    (REPO / "tmp").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pytest-burst-", dir=REPO / "tmp"))
    procs = []
    try:
        with loop_device(work / "a.img", size_mb=64) as cut, \
                loop_device(work / "b.img", size_mb=64) as flat:
            throttle.limit(cut, HIGH)
            throttle.limit(flat, HIGH)
            for name, dev in (("cut", cut), ("flat", flat)):
                cmd = ["fio", f"--name={name}", f"--filename={dev}", "--rw=write", "--bs=128k",
                       "--iodepth=32", "--ioengine=libaio", "--direct=1", "--time_based",
                       f"--runtime={RUN_S}", f"--write_bw_log={name}",
                       f"--write_iops_log={name}", f"--write_lat_log={name}",
                       "--log_avg_msec=1000", "--output-format=json"]
                with open(work / f"{name}.json", "wb") as out:
                    procs.append(subprocess.Popen(throttle.wrap(cmd), stdout=out,
                                                  stderr=subprocess.PIPE, cwd=work))
            time.sleep(CUT_S)
            throttle.limit(cut, LOW)
            for p in procs:
                _, err = p.communicate(timeout=RUN_S + 30)
                assert p.returncode == 0, err.decode()[-400:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        throttle.remove()
    try:
        docs = {n: load_document(work / f"{n}.json") for n in ("cut", "flat")}
        series = {n: read_per_second(find_logs(work, n, "bw")) for n in ("cut", "flat")}
        iops = read_per_second(find_logs(work, "cut", "iops"))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    high, low = HIGH / 1e6, LOW / 1e6
    cut = series["cut"].complete()
    b = analyse_burst(cut.total(), cut.seconds, min_duration_s=4, min_segment_s=2, local_s=3,
                      round_s=2)
    assert b.cliff is not None, json.dumps(list(cut.total()))
    assert abs(b.cliff.time_s - CUT_S) <= 1.5
    assert b.cliff.before_MBps == pytest.approx(high, rel=0.05)
    assert b.cliff.after_MBps == pytest.approx(low, rel=0.05)
    assert b.cliff.written_GiB == pytest.approx(high * 1e6 * b.cliff.time_s / GIB, rel=0.1)
    # judged after the last lasting cliff only, from the first 2 s round wholly after it: round 4
    # for a cliff at 6 s (3 of five rounds there), round 5 where fio's clock started a second
    # late under load (the cut is timed from fio's launch, the cliff from fio's own start) or
    # where the cut took two seconds to settle: beside the lint, lasting cliffs at 5 and 7 s,
    # each second from 7 s at the low cap (v177)
    assert all(abs(c.time_s - CUT_S) <= 1.5 for c in b.cliffs), [c.time_s for c in b.cliffs]
    assert b.levels[-1].median_MBps == pytest.approx(low, rel=0.05)
    assert not b.steady.reached and b.steady.reason == "not enough rounds"
    assert b.steady.first_judged == math.ceil(b.cliffs[-1].time_s / 2) + 1, \
        json.dumps(list(cut.total()))
    # the IOPS log agrees: 128 KiB per I/O
    assert np.median(iops.complete().total()[:5]) == pytest.approx(HIGH / 131072, rel=0.05)
    # everything fio wrote is in the logs but the tail after the last logged second
    total = docs["cut"]["jobs"][0]["write"]["io_bytes"] / 1e6
    assert total - 2 * high <= series["cut"].total().sum() <= total * 1.005

    flat = series["flat"].complete()
    f = analyse_burst(flat.total(), flat.seconds, min_duration_s=4, min_segment_s=2, local_s=3,
                      round_s=2)
    assert f.cliff is None
    assert f.plateau.median_MBps == pytest.approx(high, rel=0.05)
    assert f.steady.reached and f.steady.level == pytest.approx(high, rel=0.05)


def test_a_later_writes_state_is_the_burst_level_it_stands_at():
    """A write of the burst's shape measured the cache at the burst's plateau, the full cache at
    its after-cliff level, and neither between them: the regime rule's 25% either side."""
    b = analyse_burst(np.r_[np.full(20, 200.0), np.full(20, 20.0)])
    assert b.cliff is not None
    assert [state_of_rate(x, b) for x in (200.0, 151.0, 149.0, 20.0, 26.6, 15.1, 60.0)] == \
        ["cache", "cache", None, "after", "after", "after", None]
    # no cliff: nothing to tell the states apart
    assert state_of_rate(200.0, analyse_burst(np.full(40, 200.0))) is None
