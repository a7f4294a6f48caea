"""A lab's targets (analysis/rules/targets.py, target_files.py, analysis/report/targets.py):

- the formats: the toolkit's YAML, and the recorded files of two qualification suites
  (tests/fixtures/targets/SOURCES.md) read with every key kept, mapped or listed as unmapped;
- the verdicts on rows with known intervals (pass, fail, not resolved with the repetitions that
  would resolve it, checked against scipy's t; one-sided percentiles; host-bound; not run);
- JUnit XML read back with junitparser, never matched as text;
- §2 for real on a file through report.bash (tiny profile) with one impossible and one trivial
  target: exit 4, a JUnit file of two testcases and one failure, the report's Targets table;
- the model drive with a write cache (400 -> 100 MB/s): targets on the level after the cliff
  that must pass (>= 50 MB/s), fail (>= 300 MB/s) and straddle (at the measured mean).
"""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from junitparser import Failure, JUnitXml
from scipy import stats as sps

from analysis.report import targets as command
from analysis.rules import target_files as files
from analysis.rules import targets as rules
from tests.conftest import REPO
from tests.toolkit import TINY, run, script_env
from tools.model_drive.drive import model_drive

FIXTURES = REPO / "tests" / "fixtures" / "targets"
QUAL = FIXTURES / "ocp-diag-ssd-qual"
AUTOVAL = FIXTURES / "ocp-diag-autoval-ssd"
MB, GIB = 10**6, 2**30


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- the formats

def test_the_toolkit_yaml_names_section_case_metric_and_bound(tmp_path):
    f = write_yaml(tmp_path / "t.yaml", """
- section: qd_sweep
  case: {rw: randread, bs: 4k, iodepth: 32}
  metric: iops_mean
  min: 400000
- name: p99.9 at QD 1
  section: qd1
  case: randread-4k
  metric: lat_p99_9_us
  max: 2000
- section: bs_sweep
  case: {rw: read, bs: 1m}
  direction: read
  metric: bw_MBps_mean
  min: 700
  per_tb: true
""")
    a, b, c = files.read(f)
    assert (a.section, a.match, a.metric, a.bound, a.value) == (
        "qd_sweep", {"rw": "randread", "bs": "4k", "iodepth": 32}, "iops_mean", "min", 400000)
    assert a.name == "qd_sweep randread 4k iodepth 32: iops_mean >= 400000"
    assert (b.name, b.match, b.bound) == ("p99.9 at QD 1", {"case": "randread-4k"}, "max")
    assert c.per_tb and c.tb_rule == "exact" and c.match["direction"] == "read"
    assert not any(t.imported or t.unmapped for t in (a, b, c))


@pytest.mark.parametrize("text, said", [
    ("- {section: nosuch, metric: iops_mean, min: 1}", "section 'nosuch': choose one of qd1"),
    ("- {section: qd1, metric: iops_mean, min: 1, max: 2}", "exactly one of min and max"),
    ("- {section: qd1, min: 1}", "no metric"),
    ("- {section: qd1, metric: iops_mean, min: fast}", "'fast' is not a number"),
    ("- {section: qd1, metric: iops_mean, min: 1, bound: 3}", "unknown key(s) bound"),
    ("section: qd1", "neither a YAML list of targets"),
])
def test_a_bad_targets_file_exits_2_saying_what_to_fix(tmp_path, capsys, text, said):
    f = write_yaml(tmp_path / "t.yaml", text + "\n")
    with pytest.raises(files.TargetFileError) as e:
        files.read(f)
    assert said in str(e.value)
    assert command.main([str(tmp_path / "results"), str(f), "--root", str(tmp_path)]) == 2
    assert said in capsys.readouterr().err


def test_ocp_diag_ssd_qual_targets_map_onto_columns_with_their_units(tmp_path):
    # alone: no section, so every target is listed as unmapped, none dropped
    (alone,) = files.read(QUAL / "iops_rd_benchmark_targets.json")
    assert alone.imported and "no section given" in alone.unmapped
    f = write_yaml(tmp_path / "t.yaml", f"""
- include: {QUAL / 'iops_rd_benchmark_targets.json'}
  section: qd_sweep
  case: {{bs: 4k, iodepth: 64}}
- include: {QUAL / 'bandwidth_wr_benchmark_targets.json'}
  section: bs_sweep
""")
    lat, bw = files.read(f)
    raw = json.loads((QUAL / "iops_rd_benchmark_targets.json").read_text())
    assert raw["workloads"][0]["targets"] == {"lat999thUsec": "7000"}
    assert (lat.section, lat.metric, lat.bound, lat.value) == ("qd_sweep", "lat_p99_9_us", "max", 7000)
    assert lat.match == {"rw": "randread", "bs": "4k", "iodepth": 64} and not lat.unmapped
    # bwMbytesPerSec is MiB/s (the suite compares 1024 x it with fio's KiB/s): 70 MiB/s in MB/s
    assert (bw.metric, bw.bound, bw.match) == ("bw_MBps_mean", "min", {"rw": "write"})
    assert bw.value == pytest.approx(70 * 2**20 / 1e6)
    # a key the toolkit's tables do not hold is listed as unmapped
    (p9999,) = files.from_data({"workloads": [{"ioType": "randread", "targets": {
        "lat9999thUsec": "9000"}}]}, tmp_path / "x.json", {"section": "qd1"})
    assert "no column" in p9999.unmapped


def test_autoval_targets_every_key_kept_per_tb_scaled_as_autoval_does(tmp_path):
    f = write_yaml(tmp_path / "t.yaml", f"""
- include: {AUTOVAL / 'fiosynth_targets_excerpt.json'}
  jobs:
    HE_Flash_Short_wTRIM_1H22/4K_L2R6DWPD_wTRIM: {{section: mix_rw, case: {{mix: 70}}}}
""")
    targets = files.read(f)
    raw = json.loads((AUTOVAL / "fiosynth_targets_excerpt.json").read_text())
    keys = [k for jobs in raw.values() for job in jobs.values() for k in job]
    assert len(targets) == len(keys) == 16          # never dropped
    by_key = {t.origin.rsplit(": ", 1)[1]: t for t in targets}
    bw = by_key["Read_BW_PER_TB_MIN"]
    assert (bw.section, bw.metric, bw.bound, bw.per_tb, bw.tb_rule) == (
        "mix_rw", "bw_MBps_mean", "min", True, "autoval")
    assert bw.match == {"mix": 70, "direction": "read"}
    assert bw.value == pytest.approx(68000 * 1024 / 1e6)       # fio's KiB/s in MB/s
    # autoval's factor: the capacity in TB rounded down to 2 places, at least 1; MIN only
    assert rules.threshold_of(bw, 3_840_755_982_336) == pytest.approx(bw.value * 3.84)
    assert rules.threshold_of(bw, 480_103_981_056) == pytest.approx(bw.value)
    p99 = by_key["P99_Read_Latency_MAX"]
    assert (p99.metric, p99.bound, p99.value, p99.match["direction"]) == ("lat_p99_us", "max", 1500, "read")
    assert by_key["Max_Write_Latency_MAX"].metric == "lat_max_us"
    for key in ("Trim_BW_PER_TB_MIN", "P99.99_Read_Latency_MAX", "Max_Read_Latency_Counter_AFTER_MAX"):
        assert "no column" in by_key[key].unmapped, key
    glob = [t for t in targets if "_Global" in t.origin]
    assert len(glob) == 2 and all("no case named" in t.unmapped for t in glob)


# --------------------------------------------------------------------------- the verdicts

def row(**kw) -> dict:
    base = {"case": "randread-4k", "rw": "randread", "bs": 4096, "iodepth": 1, "numjobs": 1,
            "read_pct": 100, "direction": "read", "n": 3, "host_bound": False}
    return {**base, **kw}


def mean_row(mean: float, std: float, n: int = 3, **kw) -> dict:
    half = sps.t.ppf(0.975, n - 1) * std / math.sqrt(n)
    return row(n=n, iops_mean=mean, iops_std=std, iops_ci95=half, **kw)


def judge(table_rows, bound, value, metric="iops_mean", match=None, capacity=None, **kw):
    target = rules.Target("t", "qd1", metric, bound, value, match or {"case": "randread-4k"}, **kw)
    return rules.judge(target, pd.DataFrame(table_rows), capacity)


def test_a_mean_passes_fails_or_is_not_resolved_by_its_interval():
    rows = [mean_row(1000, 10)]                         # 1000 ± 24.8 (t 4.30, 3 runs)
    assert judge(rows, "min", 970).verdict == rules.PASS
    assert judge(rows, "min", 1030).verdict == rules.FAIL
    assert judge(rows, "max", 1030).verdict == rules.PASS
    assert judge(rows, "max", 970).verdict == rules.FAIL
    v = judge(rows, "min", 1010)
    assert v.verdict == rules.NOT_RESOLVED and (v.low, v.high) == pytest.approx((975.2, 1024.8), abs=0.1)
    # the advice: the fewest runs whose t-interval with this spread is narrower than 10
    needed = next(n for n in range(4, 100) if sps.t.ppf(0.975, n - 1) * 10 / math.sqrt(n) < 10)
    assert f"about {needed} repetitions in all" in v.detail and needed == 7
    # at the mean itself no practical number of runs resolves it
    assert "more than 100 repetitions" in judge(rows, "min", 1000.0001).detail
    # one repetition has no interval: never a pass
    one = judge([row(n=1, iops_mean=1000, iops_std=math.nan, iops_ci95=math.nan)], "min", 1)
    assert one.verdict == rules.NOT_RESOLVED and "at least 2" in one.detail


def test_per_tb_scales_by_the_capacity():
    rows = [mean_row(3000, 10)]
    v = judge(rows, "min", 700, per_tb=True, capacity=4e12)      # 700 x 4 TB: 2800 < 2975
    assert v.verdict == rules.PASS and v.threshold == pytest.approx(2800)
    assert judge(rows, "min", 800, per_tb=True, capacity=4e12).verdict == rules.FAIL
    assert judge(rows, "min", 700, per_tb=True).verdict == rules.UNMAPPED    # capacity unknown


def test_a_one_sided_percentile_never_passes_a_maximum():
    base = row(lat_p99_9_us=900.0, lat_p99_9_us_lo=700.0, lat_p99_9_us_hi=math.nan,
               lat_p99_9_us_tail_ios=2, lat_p99_9_us_lsd=math.nan)
    v = judge([base], "max", 5000, metric="lat_p99_9_us")
    assert v.verdict == rules.NOT_RESOLVED and "only 2 I/Os lie above it" in v.detail
    assert judge([base], "max", 600, metric="lat_p99_9_us").verdict == rules.FAIL
    two = {**base, "lat_p99_9_us_hi": 1200.0, "lat_p99_9_us_tail_ios": 40}
    assert judge([two], "max", 1500, metric="lat_p99_9_us").verdict == rules.PASS
    assert "runtime" in judge([two], "max", 1000, metric="lat_p99_9_us").detail


def test_host_bound_not_run_and_ambiguous_are_said_never_passed():
    rows = [mean_row(1000, 10, host_bound=True)]
    v = judge(rows, "min", 1)
    assert v.verdict == rules.HOST_BOUND and v.value == 1000 and v.failing(False)
    assert judge(rows, "min", 1, match={"case": "nosuch"}).verdict == rules.NOT_RUN
    t = rules.Target("t", "qd1", "iops_mean", "min", 1, {})
    assert rules.judge(t, None).verdict == rules.NOT_RUN
    two = [mean_row(1000, 10), mean_row(900, 10, case="randread-4k-b")]
    v = judge(two, "min", 1, match={"rw": "randread"})
    assert v.verdict == rules.UNMAPPED and "2 rows match" in v.detail and v.failing(False)
    # a mixed case stands for itself by its total row; direction picks one of its rows
    mix = [mean_row(700, 5, case="mix-70", read_pct=70, direction=d, rw="randrw")
           for d in ("read", "write", "total")]
    assert judge(mix, "min", 1, match={"mix": 70}).direction == "total"
    assert judge(mix, "min", 1, match={"mix": 70, "direction": "write"}).direction == "write"


# --------------------------------------------------------------------------- JUnit

def junit_cases(path: Path) -> list:
    return [case for suite in JUnitXml.fromfile(str(path)) for case in suite]


def test_junit_has_a_testcase_per_target_and_each_verdicts_kind(tmp_path):
    recs = command.records([
        judge([mean_row(1000, 10)], "min", 1),
        judge([mean_row(1000, 10)], "min", 5000),
        judge([mean_row(1000, 10)], "min", 1010),
        judge([mean_row(1000, 10, host_bound=True)], "min", 1),
        rules.Verdict(rules.Target("u", "", "x", "max", 1, imported=True, unmapped="no column"),
                      rules.UNMAPPED, detail="no column"),
    ], unresolved_fails=False)
    command.junit(recs, "t.yaml").write(str(tmp_path / "j.xml"))
    cases = junit_cases(tmp_path / "j.xml")
    kinds = [type(c.result[0]).__name__ if c.result else "passed" for c in cases]
    assert kinds == ["passed", "Failure", "Skipped", "Error", "Skipped"]
    failure = cases[1].result[0]
    assert "measured 1,000 (975–1,025)" in failure.message and "≥ 5,000" in failure.message
    # with --unresolved fail the straddling target is a failure too
    recs = command.records([judge([mean_row(1000, 10)], "min", 1010)], unresolved_fails=True)
    command.junit(recs, "t.yaml").write(str(tmp_path / "k.xml"))
    assert isinstance(junit_cases(tmp_path / "k.xml")[0].result[0], Failure)


# --------------------------------------------------------------------------- §2 for real

@pytest.mark.e2e
@pytest.mark.alone  # a busy CPU makes every point host-bound (then both are errors, rightly)
def test_qd1_tiny_run_with_an_impossible_and_a_trivial_target(toolkit):
    targets = write_yaml(toolkit / "tmp" / "targets.yaml", """
- name: impossible
  section: qd1
  case: randread-4k
  metric: iops_mean
  min: 1.0e+12
- name: trivial
  section: qd1
  case: randread-4k
  metric: lat_us_mean
  max: 1.0e+7
""")
    # trivial: a mean latency under 10 s, which even tiny's two runs' wide interval (t 12.7)
    # clears; an IOPS minimum of 1 would not always (a spread of 2,600 IOPS between the two runs
    # reaches below 0)
    result = run(toolkit, "report.bash", "--sections", "qd1", *TINY, "--targets", str(targets),
                 timeout=600)
    assert result.returncode == 4, result.stderr[-3000:]
    table = pd.read_csv(toolkit / "tables" / "qd1_baseline.csv").set_index("case")
    if table.loc["randread-4k", "host_bound"]:
        # The test runs `alone`: nothing of the suite ran beside it, so only another tenant of
        # the machine (a loop kept busy beside the suite) made the point the host's, and then
        # both targets are rightly host-bound, not the known answer (tests/README.md).
        pytest.skip("the machine was busy outside the suite: randread-4k host-bound, its "
                    f"busiest CPU {table.loc['randread-4k', 'cpu_busiest_pct']:.0f}% busy")
    cases = junit_cases(toolkit / "out" / "junit.xml")
    assert [c.name for c in cases] == ["impossible", "trivial"]
    assert [type(r).__name__ for c in cases for r in c.result] == ["Failure"]
    assert cases[1].is_passed
    # the failure carries what was measured: fio's own mean IOPS of the case, read here
    reps = sorted((toolkit / "results" / "qd1" / "randread-4k").glob("rep[0-9].json"))
    iops = [json.loads(p.read_text())["jobs"][0]["read"]["iops"] for p in reps]
    measured = sum(iops) / len(iops)
    verdicts = json.loads((toolkit / "tables" / "targets.json").read_text())["verdicts"]
    assert verdicts[0]["value"] == pytest.approx(measured, rel=1e-9)
    assert verdicts[0]["verdict"] == "fail" and verdicts[1]["verdict"] == "pass"
    assert f"{verdicts[0]['value']:,.0f}" in cases[0].result[0].message
    # the report opens with the Targets table, before §1
    report = (toolkit / "out" / "report.md").read_text()
    assert report.index("## Targets") < report.index("## §1 Environment")
    table = report.split("## Targets", 1)[1].split("\n## ", 1)[0]
    assert "| impossible | randread-4k read |" in table and "**fail**" in table
    assert "| trivial | randread-4k read |" in table and "| pass |" in table
    # the run history recorded each verdict
    with sqlite3.connect(toolkit / "results" / "history.sqlite") as db:
        got = db.execute("SELECT name, verdict, failing FROM targets ORDER BY seq").fetchall()
    assert got == [("impossible", "fail", 1), ("trivial", "pass", 0)]
    # the section script alone judges its own section's targets and exits 4 too
    again = run(toolkit, "qd1_test.bash", *TINY, "--targets", str(targets), timeout=300)
    assert again.returncode == 4, again.stderr[-2000:]
    # make analysis keeps the last judgment's table, and TARGETS=FILE judges the tree again
    # (here a file with the trivial target only) before it redraws the report
    redraw = subprocess.run(["make", "analysis"], cwd=toolkit, env=script_env(),
                            capture_output=True, text=True, check=False, timeout=300)
    assert redraw.returncode == 0, redraw.stderr[-2000:]
    assert "| impossible |" in (toolkit / "out" / "report.md").read_text()
    trivial = write_yaml(toolkit / "tmp" / "trivial.yaml", """
- name: trivial
  section: qd1
  case: randread-4k
  metric: lat_us_mean
  max: 1.0e+7
""")
    redraw = subprocess.run(["make", "analysis", f"TARGETS={trivial}"], cwd=toolkit,
                            env=script_env(), capture_output=True, text=True, check=False,
                            timeout=300)
    assert redraw.returncode == 0, redraw.stderr[-2000:]
    assert [c.name for c in junit_cases(toolkit / "out" / "junit.xml")] == ["trivial"]
    report = (toolkit / "out" / "report.md").read_text()
    assert "| trivial |" in report and "| impossible |" not in report
    failing = subprocess.run(["make", "analysis", f"TARGETS={targets}"], cwd=toolkit,
                             env=script_env(), capture_output=True, text=True, check=False,
                             timeout=300)
    assert failing.returncode != 0 and "failing the gate" in failing.stdout
    assert "| impossible |" in (toolkit / "out" / "report.md").read_text()  # redrawn all the same
    # a later report without targets removes the last run's verdicts (they are not its own)
    assert subprocess.run([str(toolkit / ".venv" / "bin" / "python"), "-m", "analysis", "targets",
                           "results", "--clear"], cwd=toolkit, check=False).returncode == 0
    assert not (toolkit / "out" / "junit.xml").exists()


# --------------------------------------------------------------------------- the model drive

FAST, SLOW = 400 * MB, 100 * MB
CACHE = 2400 * MB              # 6 s at FAST: the cliff, then 19 s at SLOW


@pytest.mark.root
def test_targets_on_a_model_drives_level_after_the_cliff(toolkit):
    targets = write_yaml(toolkit / "tmp" / "targets.yaml", """
- name: after the cliff >= 50 MB/s
  section: wss_burst
  case: {phase: after_cliff}
  metric: bw_MBps_mean
  min: 50
- name: after the cliff >= 300 MB/s
  section: wss_burst
  case: {phase: after_cliff}
  metric: bw_MBps_mean
  min: 300
""")
    with model_drive(size=1 * GIB, cache=CACHE, fast=FAST, slow=SLOW, recover=50 * MB) as drive:
        dev = drive.device
        cmd = ["bash", str(toolkit / "wss_burst_test.bash"), "--profile", "quick",
               "--target", dev, "--destroy", dev, "--size", "512M", "--no-prefill",
               "--parts", "burst", "--duration", "25", "--no-host-ceiling",
               "--targets", str(targets)]
        result = subprocess.run(drive.wrap(cmd), capture_output=True, text=True,
                                env=script_env(), timeout=400, cwd=toolkit, check=False)
    assert result.returncode == 4, result.stderr[-3000:]
    levels = pd.read_csv(toolkit / "tables" / "wss_burst_levels.csv").set_index("phase")
    after = levels.loc["after_cliff"]
    assert after.bw_MBps_mean * MB == pytest.approx(SLOW, rel=0.10), levels.to_string()
    assert levels.loc["burst"].bw_MBps_mean * MB == pytest.approx(FAST, rel=0.10)
    # the section judged its own targets: one passes, one fails
    cases = junit_cases(toolkit / "out" / "junit.xml")
    assert [bool(c.is_passed) for c in cases] == [True, False]
    assert isinstance(cases[1].result[0], Failure)
    # and a third, set at the measured mean, straddles it: not resolved, said how to resolve
    at_mean = write_yaml(toolkit / "tmp" / "at_mean.yaml", targets.read_text() + f"""
- name: after the cliff at its measured mean
  section: wss_burst
  case: {{phase: after_cliff}}
  metric: bw_MBps_mean
  min: {float(after.bw_MBps_mean)!r}
""")
    rc = command.main([str(toolkit / "results"), str(at_mean), "--root", str(toolkit),
                       "--unresolved", "pass"])
    recs = json.loads((toolkit / "tables" / "targets.json").read_text())["verdicts"]
    print((toolkit / "out" / "targets.md").read_text())
    assert [r["verdict"] for r in recs] == ["pass", "fail", "not resolved"]
    assert recs[2]["low"] < after.bw_MBps_mean < recs[2]["high"]
    assert "sits on the target" in recs[2]["detail"]
    assert rc == 4                                   # the failed one still fails the gate
    kinds = [type(c.result[0]).__name__ if c.result else "passed"
             for c in junit_cases(toolkit / "out" / "junit.xml")]
    assert kinds == ["passed", "Failure", "Skipped"]


def test_a_case_split_by_regime_is_not_resolved_never_passed():
    """A case whose repetitions stood in two states (analysis.rules.cases) has no mean to judge:
    its target is not resolved, saying why, whatever its threshold."""
    rows = pd.DataFrame([{"case": "write-128k", "rw": "write", "bs": 131072, "direction": "write",
                          "n": 3, "bw_MBps_mean": float("nan"), "bw_MBps_ci95": float("nan"),
                          "host_bound": False, "regime_split": True,
                          "regime": "2 at 200 MB/s (reps 1-2); 1 at 20 MB/s after (rep 3)"}])
    for threshold in (1.0, 1e6):
        target = rules.Target("w", "qd1", "bw_MBps_mean", "min", threshold, {"rw": "write"})
        v = rules.judge(target, rows)
        assert v.verdict == rules.NOT_RESOLVED and "2 at 200 MB/s" in v.detail, v
