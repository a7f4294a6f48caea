"""Each case second by second (analysis/sections/seconds_part.py), checked against fio's own
numbers for the same repetitions.

The fixture, tests/fixtures/per-second/, is real: `bash qd1_test.bash --profile tiny
--no-host-ceiling --engine libaio --runtime 3` on the default file target (fio 3.33, Linux
6.18, 2026-11-29), two of its cases as the toolkit left them (each rep<k>.json with its 1 s IOPS,
latency and, for the write, bandwidth logs; the slat and clat logs left out).
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from analysis.render import plots
from analysis.sections import seconds_part
from tests.toolkit import REPO

FIXTURE = REPO / "tests" / "fixtures" / "per-second"
CASES = {"randread-4k": ("read", 4096), "write-128k": ("write", 131072)}


def fio_job(case: str, rep: int) -> dict:
    return json.loads((FIXTURE / case / f"rep{rep}.json").read_text())["jobs"][0]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rep", [1, 2])
def test_each_second_accounts_for_fios_own_ios_and_latency(case, rep):
    direction, bs = CASES[case]
    job = fio_job(case, rep)
    seconds = seconds_part.repetition_seconds(FIXTURE / case, rep, bs, "fio-3.33")
    assert len(seconds) >= 2 and list(seconds.t_s) == list(range(1, len(seconds) + 1))
    # the complete seconds hold fio's I/Os but those of its last, partial second
    total = job[direction]["total_ios"]
    logged = seconds.iops.sum()
    unlogged_s = job[direction]["runtime"] / 1000 - len(seconds)
    assert 0 <= total - logged <= max(unlogged_s, 0.05) * seconds.iops.max() * 1.5
    # their latency, weighted by each second's I/Os, and the partial second's (the latency log's
    # row past them, read here as text; its I/Os are the rest) give fio's mean over all I/Os:
    # each second's IOPS and latency are of the same second
    rows = [line.split(",") for line in (FIXTURE / case / f"rep{rep}_lat.1.log").read_text()
            .splitlines()]
    rest = [int(r[1]) / 1000 for r in rows[len(seconds):]]
    assert len(rest) <= 1 and (rest or total == logged)
    whole = ((seconds.iops * seconds.lat_us_mean).sum() + (total - logged) * sum(rest)) / total
    assert whole == pytest.approx(job[direction]["lat_ns"]["mean"] / 1000, rel=0.01)
    # QD 1: one I/O in flight at most, so IOPS x mean latency cannot exceed 1 in any second
    assert ((seconds.iops * seconds.lat_us_mean / 1e6) <= 1.02).all()


def test_results_from_before_every_case_logged_give_iops_from_the_write_rate(tmp_path):
    """A write case of an older tree logged its bandwidth only: IOPS from it, latency unknown."""
    case = tmp_path / "write-128k"
    case.mkdir()
    for name in ("rep1.json", "rep1_bw.1.log"):
        (case / name).write_text((FIXTURE / "write-128k" / name).read_text())
    old = seconds_part.repetition_seconds(case, 1, 131072, "fio-3.33")
    new = seconds_part.repetition_seconds(FIXTURE / "write-128k", 1, 131072, "fio-3.33")
    assert list(old.t_s) == list(new.t_s)
    # fio's 1 s bandwidth log is in KiB/s, rounded: within a block's worth of I/Os a second
    assert (old.iops - new.iops).abs().max() <= 1024 / 128 + 1
    assert old.lat_us_mean.isna().all()
    # and a read case of an older tree logged nothing: no seconds, not an error
    bare = tmp_path / "randread-4k"
    bare.mkdir()
    (bare / "rep1.json").write_text((FIXTURE / "randread-4k" / "rep1.json").read_text())
    assert seconds_part.repetition_seconds(bare, 1, 4096, "fio-3.33").empty


def test_the_figure_has_a_row_per_case_and_says_where_no_latency_was_logged(tmp_path):
    found, close = [], plots.plt.close

    def keep_then_close(fig=None):
        if fig is not None and hasattr(fig, "axes"):
            found.append([(ax.get_title(), len(ax.lines), ax.get_visible()) for ax in fig.axes])
        return close(fig)

    frames = [seconds_part.repetition_seconds(FIXTURE / c, k, CASES[c][1], "fio-3.33")
              .assign(case=c, shape=c, rep=k) for c in CASES for k in (1, 2)]
    frame = pd.concat(frames, ignore_index=True)
    frame.loc[frame.case == "write-128k", "lat_us_mean"] = math.nan
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots.plt, "close", keep_then_close)
        seconds_part.draw(frame, tmp_path / "a.png")
    ((read_iops, read_lat, write_iops, write_lat),) = found
    assert read_iops == read_lat == ("randread-4k", 2, True)
    # the write logged no latency (an older run): its IOPS say so, its latency panel is not drawn
    assert write_iops == ("write-128k (no latency logged)", 2, True)
    assert write_lat[1:] == (0, False)
    assert (tmp_path / "a.png").stat().st_size > 10_000
    # no case logged latency: IOPS alone, one column
    found.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots.plt, "close", keep_then_close)
        seconds_part.draw(frame.assign(lat_us_mean=math.nan), tmp_path / "b.png")
    assert [(title, lines) for title, lines, _ in found[0]] == [("randread-4k", 2),
                                                              ("write-128k", 2)]


def test_a_repetition_of_about_a_second_gives_no_seconds_not_an_error(tmp_path):
    """v56's §5 e2e tests, 1 s runs with 2 jobs: one job's log empty (fio logged no full second),
    another's rows 1,476 ms apart (too few to infer the averaging window). Their numbers are the
    section table's; the per-second view leaves them out and the analysis goes on."""
    case = tmp_path / "randread-4k"
    case.mkdir()
    for name in ("rep1.json", "rep1_iops.1.log", "rep1_lat.1.log"):
        (case / name).write_text((FIXTURE / "randread-4k" / name).read_text())
    (case / "rep1_iops.2.log").write_text("")
    assert seconds_part.repetition_seconds(case, 1, 4096, "fio-3.33").empty
    (case / "rep1_iops.2.log").unlink()
    (case / "rep1_iops.1.log").write_text("1476, 9551, 0, 0, 0\n")
    (case / "rep1_lat.1.log").write_text("1476, 103867, 0, 0, 0\n")
    # the window is the job's log_avg_msec, not inferred: one row is one second's average
    seconds = seconds_part.repetition_seconds(case, 1, 4096, "fio-3.33", window_ms=1000)
    assert list(seconds.iops) in ([], [9551.0])
