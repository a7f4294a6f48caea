"""One shape, several sections (analysis/report/shapes.py, issue 41), on the sample's raw
results (the sample issue 41 read, kept in tests/fixtures/older-sample; the emulated NVMe drive): the numbers the issue read from the
sample's tables, found again side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.report.shapes import largest_spread, load_frames, shapes_frame, shared_shapes
from tests.toolkit import REPO

SAMPLE = REPO / "tests" / "fixtures" / "older-sample" / "results"  # the sample issue 41 read


@pytest.fixture(scope="module")
def frames():
    return load_frames(SAMPLE)


def test_the_4k_random_read_at_qd32_of_four_sections(frames):
    shapes = {s.label: s for s in shared_shapes(frames)}
    s = shapes["4 KiB random read, QD 32, io_uring"]
    # issue 41: §3 14,017 ± 5,683; §4 14,355 ± 8,073; §5 17,344 ± 474; §6 16,346 ± 1,157 and
    # 15,564 ± 1,880
    assert [(p.section, round(p.mean), round(p.ci95)) for p in s.points] == [
        ("bs_sweep", 14017, 5683), ("mix_rw", 14355, 8073), ("qd_sweep", 17344, 474),
        ("wss_burst", 16346, 1157), ("wss_burst", 15564, 1880)]
    means = [p.mean for p in s.points]
    assert s.spread_pct == pytest.approx(100 * pd_std(means) / (sum(means) / len(means)))
    # §5's narrow interval excludes §3's mean, but §3's own is wide: Welch's test over the
    # repetitions does not show the two apart
    assert s.apart.tested and not s.apart.significant


def pd_std(values):
    m = sum(values) / len(values)
    return (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def test_only_shapes_of_two_sections_or_more_and_one_state(frames):
    shapes = shared_shapes(frames)
    assert all(len({p.section for p in s.points}) >= 2 for s in shapes)
    assert all(p.n >= 2 for s in shapes for p in s.points)
    # a section alone with a shape (§2's 4 KiB random write at QD 1) is not listed
    assert not any(s.label.startswith("4 KiB random write, QD 1,") for s in shapes)
    # a case split by regime is no one number: without its section's rows, the shape goes
    split = {k: v.assign(regime_split=v.rw.eq("randread") & (v.iodepth == 32))
             for k, v in frames.items()}
    assert not any(s.label == "4 KiB random read, QD 32, io_uring"
                   for s in shared_shapes(split))


def test_the_csv_and_the_conclusions_line(frames):
    shapes = shared_shapes(frames)
    table = shapes_frame(shapes)
    rows = table[table["shape"] == "4 KiB random read, QD 32, io_uring"]
    assert list(rows.section) == ["§3", "§4", "§5", "§6", "§6"]
    assert [round(v) for v in rows.iops_mean] == [14017, 14355, 17344, 16346, 15564]
    assert len(table) == sum(len(s.points) for s in shapes)
    widest = max(shapes, key=lambda s: s.spread_pct)
    assert table.spread_pct.max() == widest.spread_pct
    line = largest_spread(shapes)
    assert f"up to {widest.spread_pct:.1f}%" in line and "`tables/shapes.csv`" in line
    assert shapes_frame([]).empty and largest_spread([]) == ""


def test_no_sections_no_shapes(tmp_path: Path):
    assert shared_shapes({}) == []
