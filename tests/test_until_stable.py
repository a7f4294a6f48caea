"""--until-stable: points not yet certified stable get more repetitions, one per round.

The run loop's check (analysis/run/stability.py) reads the repetitions' JSON itself, without the
rules layer; it must say what the tables' `half_width_pct` says, on the committed fixture tree,
and call a point that drifts over its rounds drifting. End to end, real fio: with 2 planned
repetitions no trend can be tested, so no point is certified and every point runs to
--max-repeat, which the snippet names. The rule's rates are in tests/test_effects.py and
bench/statistics.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from analysis.rules.cases import section_frame
from analysis.run import record
from analysis.run.stability import unstable, verdict, widest_half_width_pct
from tests.toolkit import TINY, load_json, run

FIXTURE = Path(__file__).parent / "fixtures" / "results" / "qd1"


def test_the_run_loop_judges_as_the_tables_do():
    table = section_frame(FIXTURE)
    for case, rows in table.groupby("case"):
        assert widest_half_width_pct(FIXTURE / case) == pytest.approx(
            rows.half_width_pct.max(), rel=1e-9)
    widest = table.half_width_pct.max()
    # The fixture has two repetitions a point: no trend can be tested from two rounds, so none
    # is certified, however wide the interval allowed; and none drifts (the tables agree).
    cases = sorted(set(table.case))
    assert unstable(FIXTURE, widest + 1, cases) == cases
    assert {verdict(FIXTURE / c, widest + 1) for c in cases} == {"unstable"}
    assert not table.drifting.any() and table.drift_p.isna().all()


def test_widest_of_a_case_without_repetitions_is_nan(tmp_path):
    assert math.isnan(widest_half_width_pct(tmp_path))
    assert verdict(tmp_path, 5) == "unstable"


def test_a_case_whose_rounds_drift_is_named_drifting(tmp_path):
    """Three repetitions of a real case, the third made to do 4% more IOPS than the second and
    the second 2% more than the first (IOPS 100, 102, 104 in proportion): drifting, never
    stable, however narrow its interval is asked to be."""
    case = tmp_path / "randread-4k"
    case.mkdir()
    source = min((FIXTURE / "randread-4k").glob("rep[0-9].json"))
    doc = load_json(source)
    for k, factor in enumerate((1.00, 1.02, 1.04), start=1):
        job = json.loads(json.dumps(doc))
        for j in job["jobs"]:
            j["read"]["iops"] *= factor
        (case / f"rep{k}.json").write_text(json.dumps(job))
    assert verdict(case, 50) == "drifting" and unstable(tmp_path, 50, ["randread-4k"]) == [
        "randread-4k"]


def test_points_rerun_until_the_budget_and_the_snippet_says_so(toolkit):
    plan = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3",
               "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "until    stable: a point not yet stable to ±1% (a 95% interval" in plan.stderr
    assert "at most 4 more runs" in plan.stderr  # 4 cases, 2 planned, 3 at most

    res = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3")
    assert res.returncode == 0, res.stderr
    tree = toolkit / "results" / "qd1"
    cases = ("randread-4k", "randwrite-4k", "read-128k", "write-128k")
    reps = {c: sorted(p.name for p in (tree / c).glob("rep[0-9].json")) for c in cases}
    # A trend needs three rounds: with two, no point is certified, and every one runs to the
    # budget.
    rerun = [c for c in cases if reps[c] == ["rep1.json", "rep2.json", "rep3.json"]]
    assert rerun == list(cases), reps
    said = re.findall(r"until stable: (\S+) is not yet stable to ±1% \(its 95% interval, or the "
                      r"drift over its rounds\): repetition 3 of at most 3", res.stderr)
    assert sorted(said) == sorted(rerun)
    manifest = record.section(tree)
    assert (manifest["until_stable"], manifest["max_repeat"]) == ("1", "3")
    snippet = (toolkit / "out" / "section_2_qd1.md").read_text()
    assert "re-measured until stable (±1%, at most 3): " in snippet
    assert all(f"{c} (3 repetitions)" in snippet for c in rerun)

    again = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3")
    assert again.returncode == 0, again.stderr
    assert "until stable:" not in again.stderr  # what was run is kept: nothing more to say
