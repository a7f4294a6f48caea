"""--until-stable: points whose 95% interval is too wide get more repetitions, one per round.

The run loop's check (analysis/run/stability.py) reads the repetitions' JSON itself, without the
rules layer; it must say what the tables' `half_width_pct` says, on the committed fixture tree.
End to end, real fio: with 2 planned repetitions t(0.975, 1) = 12.7, so a ±1% interval is out of
reach and every point runs to --max-repeat, which the snippet names.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from analysis.rules.cases import section_frame
from analysis.run.stability import unstable, widest_half_width_pct
from tests.toolkit import TINY, load_json, run

FIXTURE = Path(__file__).parent / "fixtures" / "results" / "qd1"


def test_the_run_loop_judges_as_the_tables_do():
    table = section_frame(FIXTURE)
    for case, rows in table.groupby("case"):
        assert widest_half_width_pct(FIXTURE / case) == pytest.approx(
            rows.half_width_pct.max(), rel=1e-9)
    widest = table.half_width_pct.max()
    assert unstable(FIXTURE, widest + 1, sorted(set(table.case))) == []
    flagged = unstable(FIXTURE, 5, sorted(set(table.case)))
    assert flagged == sorted(set(table[table.half_width_pct > 5].case))


def test_widest_of_a_case_without_repetitions_is_nan(tmp_path):
    assert math.isnan(widest_half_width_pct(tmp_path))


def test_points_rerun_until_the_budget_and_the_snippet_says_so(toolkit):
    plan = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3",
               "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "until    stable: a point whose 95% interval is wider than ±1% gets one more" in plan.stderr
    assert "at most 4 more runs" in plan.stderr  # 4 cases, 2 planned, 3 at most

    res = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3")
    assert res.returncode == 0, res.stderr
    tree = toolkit / "results" / "qd1"
    cases = ("randread-4k", "randwrite-4k", "read-128k", "write-128k")
    reps = {c: sorted(p.name for p in (tree / c).glob("rep[0-9].json")) for c in cases}
    # ±1% at t(0.975, 1) = 12.7 needs two repetitions within 0.1% of each other: nearly every
    # point runs to the budget; one that made it already is left alone.
    rerun = [c for c in cases if reps[c] == ["rep1.json", "rep2.json", "rep3.json"]]
    assert rerun, reps
    for c in set(cases) - set(rerun):
        assert reps[c] == ["rep1.json", "rep2.json"]
        assert widest_half_width_pct(tree / c) <= 1
    said = re.findall(r"until stable: (\S+)'s 95% interval is wider than ±1%: repetition 3 of "
                      r"at most 3", res.stderr)
    assert sorted(said) == sorted(rerun)
    manifest = load_json(tree / "manifest.json")
    assert (manifest["until_stable"], manifest["max_repeat"]) == ("1", "3")
    snippet = (toolkit / "out" / "section_2_qd1.md").read_text()
    assert "re-measured until stable (±1%, at most 3): " in snippet
    assert all(f"{c} (3 repetitions)" in snippet for c in rerun)

    again = run(toolkit, "qd1_test.bash", *TINY, "--until-stable", "1", "--max-repeat", "3")
    assert again.returncode == 0, again.stderr
    assert "until stable:" not in again.stderr  # what was run is kept: nothing more to say
