"""§5 queue-depth sweep: the knee, 90%-of-peak, objective and Little's Law rules on real fio
output with known answers, then the section end to end on the default file and a loop device.

Known answers come from the raw JSON read here with the json module alone: a real drive's QD
sweep from the fio-samples (NightHydra: randrw 50/50 4 KiB, QD 1..32, a knee at QD 16), a real
SATA SSD at QD 1 and 32 (louwrentius), and real fio runs made here (psync ignores iodepth, so
Little's Law must miss by 1 - 1/iodepth).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
import subprocess
from itertools import pairwise
from pathlib import Path

import pandas as pd
import pytest

from analysis.fio.output import read_groups
from analysis.render import markdown as md
from analysis.rules import sweeps
from analysis.rules.cases import frame_of_groups
from analysis.run import record
from analysis.sections.qd_sweep import DEFAULTS, analyse, findings, knee_finding, recommendation
from tests.conftest import SAMPLES
from tests.toolkit import TINY, assert_row_is_fios, fio_reps, loop_device, run

NIGHTHYDRA_QD = (SAMPLES / "NightHydra__AdvancedComputerSystemsProjects" / "Project3"
                 / "raw_data" / "data_analysis" / "queue_depth.json")
LOUWRENTIUS = SAMPLES / "louwrentius__fio-plot" / "test-data02"


def raw_points(path: Path) -> dict[int, dict]:
    """{iodepth: total IOPS, N-weighted mean total latency (µs), read p99 (µs)} from the JSON."""
    points = {}
    for job in json.loads(path.read_text())["jobs"]:
        qd = int(job["job options"]["iodepth"])
        dirs = [job[d] for d in ("read", "write") if job[d]["total_ios"] > 0]
        n = sum(d["lat_ns"]["N"] for d in dirs)
        points[qd] = {
            "iops": sum(d["iops"] for d in dirs),
            "lat_us": sum(d["lat_ns"]["mean"] * d["lat_ns"]["N"] for d in dirs) / n / 1000,
            "read_p99_us": job["read"]["clat_ns"]["percentile"]["99.000000"] / 1000,
        }
    return points


def sample_sweep(depths=None, settings=DEFAULTS):
    table = frame_of_groups(read_groups(NIGHTHYDRA_QD))
    if depths is not None:
        table = table[table.iodepth.isin(depths)]
    return analyse(table, settings)


def test_knee_and_peak_on_a_real_drive():
    raw = raw_points(NIGHTHYDRA_QD)
    df, (sweep,) = sample_sweep()
    assert sweep.pattern == "4 KiB random read/write 50/50"
    # By hand from the JSON: QD 8 -> 16 gains 2.0% IOPS while mean latency grows 70%; every
    # step before gains more than 5% (86%, 75%, 27%).
    gain = (raw[16]["iops"] / raw[8]["iops"] - 1) * 100
    growth = (raw[16]["lat_us"] / raw[8]["lat_us"] - 1) * 100
    assert gain == pytest.approx(2.0, abs=0.05) and growth == pytest.approx(70, abs=1)
    assert (sweep.knee.x, sweep.knee.previous) == (16, 8)
    assert sweep.knee.gain_pct == pytest.approx(gain, rel=1e-9)
    assert sweep.knee.latency_growth_pct == pytest.approx(growth, rel=1e-9)
    # Peak at QD 32 (91,293 IOPS); 90% of it is 82,164, first reached at QD 8 (87,434).
    assert sweep.best_outstanding == 32 and sweep.outstanding_90 == 8
    assert list(df.is_knee) == [d == 16 for d in df.iodepth]
    assert list(df.is_90pct_of_peak) == [d == 8 for d in df.iodepth]
    peak = max(p["iops"] for p in raw.values())
    for row in df.itertuples():
        assert row.iops_mean == pytest.approx(raw[row.iodepth]["iops"], rel=1e-9)
        assert row.pct_of_peak == pytest.approx(raw[row.iodepth]["iops"] / peak * 100)
    text = "\n".join(findings(df, [sweep], DEFAULTS))
    assert "**Knee (4 KiB random read/write 50/50): QD 16.**" in text
    assert f"gains {gain:.1f}% IOPS" in text and f"+{growth:.0f}%" in text
    assert "90% of it is reached at QD 8" in text


def test_no_knee_while_the_curve_still_climbs():
    # QD 1, 2, 4 of the same drive: every step gains more than 70%.
    df, (sweep,) = sample_sweep([1, 2, 4])
    raw = raw_points(NIGHTHYDRA_QD)
    assert sweep.knee is None and not df.is_knee.any()
    assert sweep.outstanding_90 == 4
    text = "\n".join(findings(df, [sweep], DEFAULTS))
    last_gain = (raw[4]["iops"] / raw[2]["iops"] - 1) * 100
    assert "none within the sweep" in text and f"gains {last_gain:.1f}% IOPS" in text

    # A real SATA SSD at QD 1 and 32: ×7.9 the IOPS, no knee, 90% only at QD 32.
    groups = [read_groups(LOUWRENTIUS / f)[0] for f in ("randread-01-01.json",
                                                        "randread-32-01.json")]
    df, (sweep,) = analyse(frame_of_groups(groups), DEFAULTS)
    assert sweep.knee is None and sweep.outstanding_90 == 32 and list(df.iodepth) == [1, 32]


def test_thresholds_move_the_knee():
    # A stricter gain rule (< 1%): no step qualifies (QD 16 -> 32 gains 2.4%).
    _, (sweep,) = sample_sweep(settings=dict(DEFAULTS, knee_gain_pct=1))
    assert sweep.knee is None
    # A looser gain rule (< 30%) finds the earlier QD 4 -> 8 step (+27% IOPS, +46% latency).
    loose = dict(DEFAULTS, knee_gain_pct=30)
    _, (sweep,) = sample_sweep(settings=loose)
    assert (sweep.knee.x, sweep.knee.previous) == (8, 4)
    # ... after which IOPS still climb more than 30% over QD 4 (68,864 -> 91,293 at QD 32): the
    # finding keeps the rule's answer and says it looks like a dip.
    raw = raw_points(NIGHTHYDRA_QD)
    text = knee_finding(sweep, loose)
    assert (f"Caution: IOPS climb again past it, to {raw[32]['iops']:,.0f} at QD 32 "
            f"(+{(raw[32]['iops'] / raw[4]['iops'] - 1) * 100:.0f}% over QD 4)") in text
    assert "Caution" not in knee_finding(sample_sweep()[1][0], DEFAULTS)
    # Demanding more latency growth (> 80%): QD 16 (+70%) and QD 32 (+73%) no longer count.
    _, (sweep,) = sample_sweep(settings=dict(DEFAULTS, knee_latency_pct=80))
    assert sweep.knee is None


def test_latency_objective_depth():
    raw = raw_points(NIGHTHYDRA_QD)
    depths = sorted(raw)
    p99 = [raw[d]["read_p99_us"] for d in depths]  # 132, 159, 163, 185, 322, 432 µs
    assert sweeps.slo_point(depths, p99, 200) == 8
    assert sweeps.slo_point(depths, p99, 1000) == 32
    assert sweeps.slo_point(depths, p99, 100) is None
    # Through the section, on the read direction of each job.
    table = frame_of_groups(read_groups(NIGHTHYDRA_QD))
    df, (sweep,) = analyse(table[table.direction == "read"], dict(DEFAULTS, slo_p99_us=200))
    assert sweep.slo_outstanding == 8
    assert list(df.within_slo) == [d <= 8 for d in df.iodepth]
    text = "\n".join(findings(df, [sweep], dict(DEFAULTS, slo_p99_us=200)))
    assert "the deepest queue within it is QD 8" in text
    assert f"QD 16 exceeds it (p99 {raw[16]['read_p99_us']:,.0f} µs)" in text
    _, (sweep,) = analyse(table[table.direction == "read"], dict(DEFAULTS, slo_p99_us=100))
    assert sweep.slo_outstanding is None


def test_latency_objective_stops_at_the_first_miss():
    # p99 150, 160, 1200, 1300, 900, 950 µs at QD 1..32 against 1000 µs.
    # QD 16 and 32 meet the objective again, but QD 4 and 8 miss it: the depth to quote is QD 2,
    # the deepest before the first miss, and the finding says p99 is not monotonic in depth.
    depths, p99 = [1, 2, 4, 8, 16, 32], [150.0, 160.0, 1200.0, 1300.0, 900.0, 950.0]
    assert sweeps.slo_point(depths, p99, 1000) == 2
    assert sweeps.slo_point(depths, p99, 2000) == 32
    assert sweeps.slo_point(depths, p99, 100) is None
    # Through the section: the real sweep (knee at QD 16), with these p99s in place of its own.
    table = frame_of_groups(read_groups(NIGHTHYDRA_QD))
    table = table.assign(lat_p99_us=table.iodepth.map(dict(zip(depths, p99))))
    df, (sweep,) = analyse(table, DEFAULTS)
    assert sweep.slo_outstanding == 2 and sweep.knee.x == 16
    text = "\n".join(findings(df, [sweep], DEFAULTS))
    assert "the deepest queue within it is QD 2" in text
    assert "QD 4 exceeds it (p99 1,200 µs)" in text
    assert "every depth swept meets it" not in text
    assert "p99 is not monotonic in depth" in text and "QD 16 (900 µs)" in text
    assert "for latency-sensitive work QD 2 (" in recommendation(sweep, 1000)
    # The recommendation checks its own depth's p99, whatever depth it is handed: QD 4 and
    # QD 8 (before the knee) miss the objective and are never recommended for latency.
    wide = recommendation(dataclasses.replace(sweep, slo_outstanding=32), 1000)
    assert "for latency-sensitive work QD 2 (" in wide


def test_littles_law_error_on_a_real_drive():
    """On this Windows run (windowsaio) fewer I/Os were in flight than the depth asked: at QD 32
    IOPS x latency is 18, not 32. Little's Law finds it: QD 1 and 2 agree within 10%, deeper
    points miss by 12% to 44% and are flagged."""
    raw = raw_points(NIGHTHYDRA_QD)
    df, found = sample_sweep()
    errors = {}
    for row in df.itertuples():
        point = raw[row.iodepth]
        errors[row.iodepth] = (point["iops"] * point["lat_us"] / 1e6 / row.iodepth - 1) * 100
        assert row.little_error_pct == pytest.approx(errors[row.iodepth])
        assert row.little_pred_iops == pytest.approx(row.iodepth * 1e6 / point["lat_us"])
    assert [d for d, e in errors.items() if abs(e) > 10] == [4, 8, 16, 32]
    assert errors[32] == pytest.approx(-43.7, abs=0.1)
    little = next(f for f in findings(df, found, DEFAULTS) if f.startswith("**Little's Law:**"))
    assert "the largest miss is −43.7% (4 KiB random read/write 50/50, QD 32)" in little
    for depth in (4, 8, 16, 32):
        assert f"QD {depth} ({md.signed_pct(errors[depth], 0)})" in little
    assert "QD 2 (" not in little and "a sign of a measurement problem" in little


def test_littles_law_flags_a_queue_that_was_never_full(tmp_path):
    """psync is synchronous: at iodepth=8 one I/O is in flight, so measured IOPS are 1/8 of
    what 8 / mean latency predicts (-87.5%). io_uring keeps the 8 in flight."""
    target = tmp_path / "t.img"
    target.write_bytes(os.urandom(32 << 20))
    procs = {engine: subprocess.Popen(
        ["fio", f"--name=qd8-{engine}", f"--filename={target}", "--rw=randread", "--bs=4k",
         "--iodepth=8", f"--ioengine={engine}", "--runtime=1", "--time_based",
         "--lat_percentiles=1", "--output-format=json+", f"--output={tmp_path / engine}.json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for engine in ("psync", "io_uring")}
    for proc in procs.values():
        assert proc.wait(timeout=30) == 0
    groups = [read_groups(tmp_path / f"{e}.json")[0] for e in ("psync", "io_uring")]
    table = frame_of_groups(groups)
    by_case = {}
    for case, part in table.groupby("case"):
        _, (sweep,) = analyse(part, DEFAULTS)
        by_case[case] = sweep
    psync = by_case["qd8-psync"].rows.iloc[0]
    assert psync.little_error_pct == pytest.approx(-87.5, abs=2)
    text = findings(by_case["qd8-psync"].rows, [by_case["qd8-psync"]], DEFAULTS)
    little = next(f for f in text if f.startswith("**Little's Law:**"))
    assert "Off by more than 10% at" in little and "QD 8 (−8" in little
    assert abs(by_case["qd8-io_uring"].rows.iloc[0].little_error_pct) < 10


# --- end to end -----------------------------------------------------------------------------
def check_outputs(root: Path, expected_cases: list[str], slo_us: float) -> pd.DataFrame:
    table = pd.read_csv(root / "tables" / "qd_sweep.csv")
    assert list(table.case) == expected_cases
    for col in ("case", "rw", "bs", "iodepth", "numjobs", "direction", "n", "iops_mean",
                "iops_std", "bw_MBps_mean", "bw_MBps_std", "lat_us_mean", "lat_us_std",
                "lat_p50_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "pct_of_peak",
                "little_pred_iops", "little_error_pct", "gain_pct", "latency_growth_pct",
                "is_knee", "is_90pct_of_peak", "within_slo"):
        assert col in table.columns, col
    for row in table.itertuples():
        reps = fio_reps(root / "results" / "qd_sweep", row.case, "read")
        assert_row_is_fios(row, reps)
        iops = [r["iops"] for r in reps]
        lat = [r["lat_ns"]["mean"] / 1000 for r in reps]
        # Little's Law per repetition, averaged: measured / (QD / latency) - 1.
        ratio = statistics.mean(i * m / 1e6 / row.iodepth for i, m in zip(iops, lat))
        assert row.little_error_pct == pytest.approx((ratio - 1) * 100, rel=1e-6, abs=1e-6)
        assert row.within_slo == (row.lat_p99_us <= slo_us)
    for _, part in table.groupby("pattern", sort=False):
        iops = list(part.iops_mean)
        lat = list(part.lat_us_mean)
        assert part.pct_of_peak.max() == pytest.approx(100)
        gains = [(b / a - 1) * 100 for a, b in pairwise(iops)]
        assert list(part.gain_pct[1:]) == pytest.approx(gains)
        # The knee flag is the rule, recomputed here.
        knee = next((d for d, g, a, b in zip(list(part.iodepth)[1:], gains, lat, lat[1:])
                     if g < 5 and (b / a - 1) * 100 > 20), None)
        assert list(part.is_knee) == [d == knee for d in part.iodepth]
        first90 = next(d for d, i in zip(part.iodepth, iops) if i >= 0.9 * max(iops))
        assert list(part.is_90pct_of_peak) == [d == first90 for d in part.iodepth]
    for fig in ("curve", "throughput", "latency", "percentiles", "tails"):
        data = (root / "figs" / f"qd_sweep_{fig}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        assert f"](../figs/qd_sweep_{fig}.png)" in (root / "out" / "section_5_qd_sweep.md"
                                                    ).read_text()
    return table


def test_default_file_target(toolkit):
    # the peak search is tested in test_host.py and test_order.py; here the sweep alone
    result = run(toolkit, "qd_sweep_test.bash", *TINY, "--qd", "1,4", "--no-peak")
    assert result.returncode == 0, result.stderr
    cases = ["randread-4k-qd1", "randread-4k-qd4", "read-128k-qd1", "read-128k-qd4"]
    table = check_outputs(toolkit, cases, 1000)
    # the last repetition run is one of round 2 (lib/run.bash runs them in rounds)
    assert re.search(r"^\[8/8\] \S+-qd[14] rep 2/2 ", result.stderr, re.MULTILINE)
    snippet = (toolkit / "out" / "section_5_qd_sweep.md").read_text()
    assert snippet.startswith("## §5 Queue-depth sweep")
    assert f"`{toolkit / 'tmp' / 'target.img'}`" in snippet
    for row in table.itertuples():
        assert md.pm(row.iops_mean, row.iops_ci95) in snippet
    assert "**Knee (4 KiB random read)" in snippet and "**Knee (128 KiB sequential read)" in snippet
    assert "p99 ≤ 1,000 µs" in snippet

    # The findings follow the objective, and the objective given is kept for `make analysis`.
    def analysis(*args):
        out = subprocess.run([str(toolkit / ".venv" / "bin" / "python"), "-m", "analysis",
                              "qd_sweep", "--root", str(toolkit), *args], cwd=toolkit,
                             env=dict(os.environ, PYTHONPATH=str(toolkit)),
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        return (toolkit / "out" / "section_5_qd_sweep.md").read_text()

    assert "no depth is shown to meet p99 ≤ 1.00 µs" in analysis("--slo-p99-us", "1")
    assert "no depth is shown to meet p99 ≤ 1.00 µs" in analysis()  # stored in results/qd_sweep/analysis.json
    assert json.loads((toolkit / "results" / "qd_sweep" / "analysis.json").read_text()
                      )["slo_p99_us"] == 1
    text = analysis("--slo-p99-us", "10000000")
    assert "every depth swept meets it" in text and "p99 ≤ 10,000,000 µs" in text


@pytest.mark.root
def test_loop_device(toolkit, tmp_path):
    with loop_device(tmp_path / "backing.img", size_mb=96) as dev:
        result = run(toolkit, "qd_sweep_test.bash", *TINY, "--target", dev, "--destroy", dev,
                     "--qd", "1,8",
                     "--no-seq", "--no-peak", env={"SLO_P99_US": "50000", "KNEE_GAIN_PCT": "7"})
    assert result.returncode == 0, result.stderr
    check_outputs(toolkit, ["randread-4k-qd1", "randread-4k-qd8"], 50000)
    stored = json.loads((toolkit / "results" / "qd_sweep" / "analysis.json").read_text())
    assert stored == {"slo_p99_us": 50000, "knee_gain_pct": 7, "knee_latency_pct": 20}
    snippet = (toolkit / "out" / "section_5_qd_sweep.md").read_text()
    assert f"`{dev}` (block;" in snippet and "p99 ≤ 50,000 µs" in snippet
    assert "gaining < 7% IOPS" in snippet
    assert "read-128k" not in (toolkit / "tables" / "qd_sweep.csv").read_text()


def test_usage_errors(toolkit):
    for args, message in ((["--qd", "1,0"], "QD_LIST=0"), (["--qd", "4,4"], "given twice"),
                          (["--slo-p99-us", "fast"], "SLO_P99_US=fast"),
                          (["--qd"], "--qd needs a value")):
        result = run(toolkit, "qd_sweep_test.bash", *args, "--dry-run")
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
    assert not (toolkit / "tmp" / "target.img").exists()


# --- one peak: a real search cut short by its budget (an earlier sample's §5, a fixture) -------
SAMPLE_QD = Path(__file__).resolve().parent / "fixtures" / "peak-search" / "qd_sweep"  # README there


def sample_search():
    from analysis.rules import peak_search
    from analysis.rules.cases import frame_of_cases, read_section
    from analysis.run.host_ceiling import read_ceilings
    from analysis.sections.peak_part import peak_findings, peak_rows
    table = frame_of_cases(read_section(SAMPLE_QD), (), read_ceilings(SAMPLE_QD))
    peaks = peak_rows(table, peak_search.outcomes(SAMPLE_QD))
    df, found = analyse(table, DEFAULTS, peaks)
    manifest = record.section(SAMPLE_QD)
    budget = peak_search.run_budget(manifest)
    return df, found, peaks, peak_findings(peaks, budget), manifest


def test_the_table_the_findings_and_the_headline_quote_one_peak():
    """The fixture's search found 95,617 IOPS at QD 128 beyond the sweep's best (QD 64): the
    CSV's pct_of_peak, the 90% mark, the knee's sentence, the recommendation and the headline
    all take that peak, and the budget stated is the manifest's (6), not the code's default."""
    from analysis.sections.facts import Facts
    from analysis.sections.qd_sweep import record_facts
    _, found, peaks, lines, manifest = sample_search()
    facts = Facts()
    record_facts(found, DEFAULTS, facts, peaks)
    for s in found:
        rw, bs = s.rows.rw.iloc[0], s.rows.bs.iloc[0]
        top = peaks[(peaks.rw == rw) & (peaks.bs == bs) & peaks.is_peak].iloc[0]
        assert s.top.case == top.case
        assert list(s.rows.pct_of_peak) == pytest.approx(list(s.rows.iops_mean / top.iops_mean
                                                              * 100))
        first90 = next((d for d, i in zip(s.rows.outstanding, s.rows.iops_mean)
                        if i >= 0.9 * top.iops_mean), None)
        assert s.outstanding_90 == first90
        quoted = md.num(top.iops_mean if "random" in s.pattern else top.bw_MBps_mean)
        # the peak is stated by the peak search's finding; the recommendation names its
        # configuration (quoting its numbers only when it is not the peak); the knee's names
        # the depth at 90% of it, the table each depth's share
        rec = recommendation(s, 1000)
        assert (rec.endswith("for throughput the peak (above).")
                if s.efficient is not None and s.efficient.case == top.case else quoted in rec)
        best = s.at(s.best_outstanding)
        finding = knee_finding(s, DEFAULTS)
        assert (quoted in finding if s.peak is None or s.peak.case == best.case
                else "90% of the peak" in finding and "sweep's best" not in finding)
        headline = next(h for h in facts.headlines if h.label == s.pattern
                        and h.kind.startswith("peak_"))
        assert headline.text.startswith(quoted)
    rand = next(s for s in found if "random" in s.pattern)
    assert rand.top.case == "peak-randread-4k-qd128-j1" and rand.at(64).pct_of_peak < 100
    assert manifest["peak_budget"] == "6"
    assert all("Its budget (6 cases)" in line for line in lines)


def test_a_peak_with_a_far_longer_tail_is_flagged_and_units_stay_one():
    """The fixture's sequential peak (QD 64 × 2 jobs) is 0.9% above the efficient configuration
    (QD 128) with a p99 24× as long: its finding, headline and anomalies say so; the random
    pattern's peak is its efficient configuration, not flagged. A sequential pattern's peak
    sentence is in MB/s throughout (no IOPS beside an MB/s figure)."""
    from analysis.sections.facts import Facts
    from analysis.sections.peak_part import PEAK_TAIL_RATIO, peak_facts
    _, _, peaks, lines, _ = sample_search()
    seq = next(line for line in lines if "sequential" in line)
    rand = next(line for line in lines if "random" in line)
    rows = peaks[peaks.pattern == "128 KiB sequential read"]
    top, eff = rows[rows.is_peak].iloc[0], rows[rows.is_efficient].iloc[0]
    ratio = top.lat_p99_us / eff.lat_p99_us
    assert ratio > PEAK_TAIL_RATIO
    assert f"The peak's p99 is {ratio:.0f}× the efficient configuration's" in seq
    assert "The peak's p99" not in rand and "efficient configuration" not in rand
    assert "IOPS" not in seq.split(". The search")[0]
    facts = Facts()
    peak_facts(peaks, facts)
    assert [a.kind for a in facts.anomalies] == ["peak_tail"]
    assert f"{ratio:.0f}× the efficient" in next(h.text for h in facts.headlines
                                                   if h.kind == "peak_seq_MBps")
