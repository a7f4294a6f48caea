"""Every figure of the committed sample (docs/sample/results, a real quick report) drawn again and
checked for what can be checked without eyes, from matplotlib's own artists and bounding boxes
once each figure is laid out and saved:

- every text inside the axes (a point's label, a bar's value, a heatmap cell) lies inside them;
- no text covers a marker (a point, a ring, a diamond; error-bar caps are not counted);
- a heatmap whose values span more than 100x is coloured on a log scale;
- a bar chart's value axis starts at 0 (a bar's length is its value), and no bar is drawn on a
  log axis;
- no panel is empty;
- no error bar runs off its axis without a mark at the edge it leaves by;
- a series (a legend label) has one colour in every panel of a figure;
- every log axis says so in its label;
- no legend entry for a shading that renders as another colour (two filled shadings overlapping).

The checks are this file's own (not analysis.render.plots's placement code), and each is shown
to fail on a figure made wrong on purpose. The same drawing, written out as the sample, must equal
the committed docs/sample (its report, tables and figures' names). No fio: the sample's results
are fio's JSON already.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.figure
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import LogNorm, to_hex
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from analysis.core.stats import MIN_TAIL_IOS
from analysis.render import bars, exceedance, plots
from analysis.report.sample import render
from tests.toolkit import REPO

SAMPLE = REPO / "docs" / "sample"
CAPS = ("_", "|")  # error-bar caps: drawn as markers, not data
TOLERANCE = 1.0  # pixels


def marker_boxes(ax) -> list:
    """Display boxes of the data markers: points of lines drawn with a marker, scatter points."""
    dpi, out = ax.figure.dpi, []
    for line in ax.lines:
        marker = line.get_marker()
        if not line.get_visible() or marker in (None, "None", "", " ") or marker in CAPS:
            continue
        r = line.get_markersize() * dpi / 72 / 2
        for x, y in line.get_transform().transform(line.get_xydata()):
            if math.isfinite(x) and math.isfinite(y):
                out.append((x - r, y - r, x + r, y + r))
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible():
            sizes = list(coll.get_sizes()) or [36.0]
            for k, (x, y) in enumerate(coll.get_offset_transform().transform(coll.get_offsets())):
                r = math.sqrt(sizes[k % len(sizes)]) * dpi / 72 / 2
                out.append((x - r, y - r, x + r, y + r))
    return out


def overlaps(a, b) -> bool:
    return (min(a[2], b[2]) - max(a[0], b[0]) > TOLERANCE
            and min(a[3], b[3]) - max(a[1], b[1]) > TOLERANCE)


def has_data(ax) -> bool:
    lines = any(line.get_visible() and any(math.isfinite(v) for v in line.get_ydata(orig=False))
                for line in ax.lines)
    images = any(isinstance(i, AxesImage) for i in ax.images)
    bars = any(isinstance(c, BarContainer) and len(c.patches) for c in ax.containers)
    points = any(isinstance(c, PathCollection) and len(c.get_offsets()) for c in ax.collections)
    return lines or images or bars or points


def unmarked_clips(ax) -> list[str]:
    """Error-bar segments (data coordinates) that run beyond the axis's limits, or to zero and
    below on a log axis, with no marker drawn at that edge (an arrowhead, ▲ ▼ ◀ ▶)."""
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    marks = [(x, y) for line in ax.lines if line.get_marker() in ("^", "v", "<", ">")
             for x, y in line.get_xydata()]

    def marked(x, y):
        return any(math.isclose(x, mx, rel_tol=1e-6, abs_tol=1e-9)
                   and math.isclose(y, my, rel_tol=1e-6, abs_tol=1e-9) for mx, my in marks)

    found = []
    for coll in ax.collections:
        if not isinstance(coll, LineCollection):
            continue
        for (ax_, ay), (bx, by) in (seg for seg in coll.get_segments() if len(seg) == 2):
            if ax_ == bx:  # vertical: a y interval
                low = min(ay, by) < y0 or (ax.get_yscale() == "log" and min(ay, by) <= 0)
                for off, edge in ((low, y0), (max(ay, by) > y1, y1)):
                    if off and not marked(ax_, edge):
                        found.append(f"interval at x={ax_:g} cut at y={edge:g} unmarked")
            elif ay == by:  # horizontal: an x interval
                low = min(ax_, bx) < x0 or (ax.get_xscale() == "log" and min(ax_, bx) <= 0)
                for off, edge in ((low, x0), (max(ax_, bx) > x1, x1)):
                    if off and not marked(edge, ay):
                        found.append(f"interval at y={ay:g} cut at x={edge:g} unmarked")
    return found


def series_colours(fig) -> list[str]:
    """A legend label drawn in more than one colour across the figure's panels."""
    seen: dict[str, set] = {}
    for ax in fig.axes:
        for line in ax.lines:
            label = line.get_label()
            if label and not label.startswith("_"):
                seen.setdefault(label, set()).add(to_hex(line.get_color()))
        for container in ax.containers:
            if isinstance(container, ErrorbarContainer) and container.get_label():
                line = container.lines[0]
                if line is not None:
                    seen.setdefault(container.get_label(), set()).add(to_hex(line.get_color()))
    return [f"series {label!r} in {len(colours)} colours" for label, colours in seen.items()
            if len(colours) > 1]


def unlabelled_logs(ax) -> list[str]:
    out = []
    for name, scale, label in (("x", ax.get_xscale(), ax.get_xlabel()),
                               ("y", ax.get_yscale(), ax.get_ylabel())):
        if scale == "log" and label and "log" not in label:
            out.append(f"log {name} axis labelled {label!r} without saying so")
    return out


def blended_shadings(ax) -> list[str]:
    """Filled shadings (axvspan) overlapping: their overlap renders in a colour no legend
    entry has."""
    spans = []
    for patch in ax.patches:  # a bar's patches carry no label of their own (_nolegend_)
        label = patch.get_label()
        if (not label or label.startswith("_") or not patch.get_fill()
                or patch.get_facecolor()[3] == 0):
            continue
        xs = ([patch.get_x(), patch.get_x() + patch.get_width()] if isinstance(patch, Rectangle)
              else [x for x, _ in patch.get_xy()])
        spans.append((min(xs), max(xs), label))
    return [f"shadings {a[2]!r} and {b[2]!r} overlap" for i, a in enumerate(spans)
            for b in spans[i + 1:] if a[0] < b[1] and b[0] < a[1]]


def problems(fig) -> list[str]:
    """What is wrong with a saved figure, by the rules of this file's docstring."""
    found = series_colours(fig)
    renderer = fig.canvas.get_renderer()
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        name = f"panel {n + 1} ({ax.get_title() or 'untitled'})"
        if not has_data(ax):
            found.append(f"{name}: empty")
        found += [f"{name}: {p}" for p in
                  unmarked_clips(ax) + unlabelled_logs(ax) + blended_shadings(ax)]
        frame = ax.get_window_extent(renderer)
        markers = marker_boxes(ax)
        for text in ax.texts:
            if not text.get_visible() or not text.get_text().strip():
                continue
            box = text.get_window_extent(renderer)
            b = (box.x0, box.y0, box.x1, box.y1)
            if (b[0] < frame.x0 - TOLERANCE or b[1] < frame.y0 - TOLERANCE
                    or b[2] > frame.x1 + TOLERANCE or b[3] > frame.y1 + TOLERANCE):
                found.append(f"{name}: text {text.get_text()!r} outside the axes")
            if any(overlaps(b, m) for m in markers):
                found.append(f"{name}: text {text.get_text()!r} covers a marker")
        ticks = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.get_xticklabels()
                 if t.get_visible() and t.get_text().strip()]
        for (a, ba), (b, bb) in itertools.pairwise(ticks):  # side by side, never run together
            if ba.x1 > bb.x0 + TOLERANCE and ba.y1 > bb.y0 and bb.y1 > ba.y0:
                found.append(f"{name}: tick labels {a!r} and {b!r} run into each other")
        for image in ax.images:
            values = [v for v in image.get_array().compressed().ravel() if v > 0]
            if values and max(values) > 100 * min(values) and not isinstance(image.norm, LogNorm):
                found.append(f"{name}: colours span {max(values) / min(values):.0f}x on a "
                             "linear scale")
        if any(isinstance(c, BarContainer) and len(c.patches) for c in ax.containers):
            if ax.get_yscale() != "linear":
                found.append(f"{name}: bars on a {ax.get_yscale()} axis")
            elif ax.get_ylim()[0] != 0:
                found.append(f"{name}: bar axis starts at {ax.get_ylim()[0]:g}, not 0")
    return found


DAGGERS: dict[str, int] = {}  # per figure of the sample, the † marks beside its points


@dataclass
class Drawn:
    figures: dict[str, list[str]]   # each figure's name: the problems the checks found in it
    sample: Path                    # the sample written from the drawing, as docs/sample is


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Drawn:
    """The sample drawn again from its committed tree as `make sample-report` draws it
    (analysis.report.sample.render: `python -m analysis all`, then the copy), each figure
    checked once saved (its † marks counted in DAGGERS). One drawing serves the figures' checks
    and the comparison with the committed sample: each is a whole analysis."""
    sample = tmp_path_factory.mktemp("sample")
    seen: dict[str, list[str]] = {}
    saving: list[str] = []
    original, close = plots._save, plt.close

    def save(fig, path: Path, note: str = ""):
        saving.append(Path(path).name)
        return original(fig, path, note)

    def check_then_close(fig=None):
        # _save closes the figure right after writing it: checked then, laid out as saved
        if saving and isinstance(fig, matplotlib.figure.Figure):
            name = saving.pop()
            seen[name] = problems(fig)
            DAGGERS[name] = sum(t.get_text() == "†" for ax in fig.axes for t in ax.texts)
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "_save", save)
        mp.setattr(bars, "_save", save)
        mp.setattr(exceedance, "_save", save)
        mp.setattr(plt, "close", check_then_close)
        render(SAMPLE / "results", sample)
    return Drawn(seen, sample)


def test_every_figure_of_the_sample_is_drawn(drawn):
    committed = {p.name for p in (SAMPLE / "figs").glob("*.png")}
    assert committed <= set(drawn.figures), committed - set(drawn.figures)


def test_committed_sample_is_current(drawn, request):
    """docs/sample/report.md equals what today's analysis draws from docs/sample/results (in
    another folder, another process and another day than the committed one: the drawing is
    reproducible): a change to the analysis shows in the sample's diff. After a change that is
    meant, rerun with --update-golden (or `python -m analysis.report.sample --render`) and read
    the diff."""
    if request.config.getoption("--update-golden"):
        render(SAMPLE / "results", SAMPLE)
        return
    assert (drawn.sample / "report.md").read_text() == (SAMPLE / "report.md").read_text()
    figures = {p.name for p in (drawn.sample / "figs").rglob("*.png")}
    assert figures == {p.name for p in (SAMPLE / "figs").rglob("*.png")}
    tables = {p.name: p.read_text() for p in (drawn.sample / "tables").iterdir()}
    assert tables == {p.name: p.read_text() for p in (SAMPLE / "tables").iterdir()}


def test_no_figure_has_a_problem_a_reader_would_see(drawn):
    bad = {name: found for name, found in drawn.figures.items() if found}
    assert not bad, "\n".join(f"{n}: {'; '.join(f)}" for n, f in sorted(bad.items()))


def test_a_line_figure_marks_the_percentiles_its_table_marks(drawn):
    """The sample's 128 KiB sequential read p99.9 is † at every depth of §5 (its table says so):
    the percentile figures mark those points, and the § tables' † count bounds the marks."""
    table = pd.read_csv(SAMPLE / "tables" / "qd_sweep.csv")
    thin = {c: int((table[f"{c}_tail_ios"] < MIN_TAIL_IOS).sum())
            for c in ("lat_p95_us", "lat_p99_us", "lat_p99_9_us")}
    assert thin["lat_p99_9_us"] >= 5
    assert DAGGERS["qd_sweep_percentiles.png"] == sum(thin.values())
    assert DAGGERS["qd_sweep_tails.png"] >= 1


# --- the checks fail where they should ----------------------------------------------------------
def test_the_checks_catch_a_figure_made_wrong(tmp_path):
    fig, (bars, heat, _empty) = plt.subplots(1, 3, figsize=(9, 3))
    bars.bar([0, 1], [50, 60])
    bars.set_ylim(40, 70)  # a bar axis not from 0
    bars.plot([0.0], [55.0], "o", ms=8)
    bars.text(0.0, 55.0, "on the point")  # covers the marker
    bars.text(5.0, 55.0, "far right")  # outside the axes
    heat.imshow([[1.0, 10.0], [100.0, 291_504.0]])  # spans 291,504x, linear
    fig.savefig(tmp_path / "bad.png")
    found = "\n".join(problems(fig))
    plt.close(fig)
    for expected in ("bar axis starts at 40", "'on the point' covers a marker",
                     "'far right' outside the axes", "colours span 291504x",
                     "panel 3 (untitled): empty"):
        assert expected in found, found


def test_the_checks_catch_cut_intervals_colours_log_labels_and_blended_shadings(tmp_path):
    fig, (lines, other, spans) = plt.subplots(1, 3, figsize=(9, 3))
    lines.errorbar([1.0, 2.0], [300.0, 400.0], yerr=[[500.0, 10.0], [10.0, 10.0]],
                   color="C0", label="mean")  # the first runs below zero on a log axis
    lines.set_yscale("log")
    lines.set_ylabel("latency (µs)")
    other.plot([1, 2], [3, 4], color="C1", label="mean")  # 'mean' in another colour
    spans.plot([0, 10], [1, 1])
    spans.axvspan(0, 6, color="C2", alpha=0.12, label="after the cliff")
    spans.axvspan(4, 8, color="C3", alpha=0.12, label="steady-state window")
    fig.savefig(tmp_path / "bad.png")
    found = "\n".join(problems(fig))
    plt.close(fig)
    for expected in ("interval at x=1 cut at y=", "series 'mean' in 2 colours",
                     "log y axis labelled 'latency (µs)' without saying so",
                     "shadings 'after the cliff' and 'steady-state window' overlap"):
        assert expected in found, found


def test_the_toolkit_marks_a_cut_interval_and_hatches_an_overlapping_shading(tmp_path):
    """The same faults drawn through plots.py come out marked, told apart and labelled."""
    found, close = [], plt.close

    def check_then_close(fig=None):
        if isinstance(fig, matplotlib.figure.Figure):
            found.append(problems(fig))
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt, "close", check_then_close)
        plots.line_chart(tmp_path / "a.png", [
            plots.Panel("p", "x", "latency (µs)", [
                plots.Series("mean", [1, 2], [300.0, 400.0], [500.0, 10.0])], yscale="log"),
            plots.Panel("q", "x", "IOPS", [plots.Series("mean", [1, 2], [3.0, 4.0])])])
        plots.timeseries_chart(tmp_path / "b.png", [0, 10], [1, 1], ylabel="MB/s", title="t",
                               spans=[plots.Span(0, 6, "after the cliff", "#E45756"),
                                      plots.Span(4, 8, "steady-state window")])
    assert found == [[], []]


def test_a_log_panel_with_no_value_is_drawn_and_says_so(tmp_path):
    """A log panel whose every value is missing (a working-set case whose percentiles all came
    out NaN, in a tiny run of §6 on a file) stopped the analysis: matplotlib cannot lay out a
    log axis over no data. The panel says so instead, and the others are drawn as usual."""
    found, close = [], plt.close

    def keep_then_close(fig=None):
        if isinstance(fig, matplotlib.figure.Figure):
            found.append([(ax.get_yscale(), [t.get_text() for t in ax.texts]) for ax in fig.axes])
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt, "close", keep_then_close)
        out = plots.line_chart(tmp_path / "a.png", [
            plots.Panel("drawn", "x", "latency (µs)", [
                plots.Series("p99", [1, 2], [300.0, 900.0])], yscale="log"),
            plots.Panel("empty", "x", "latency (µs)", [
                plots.Series("p99", [1, 2], [math.nan, math.nan])], yscale="log")])
    assert out.stat().st_size > 10_000
    assert found == [[("log", []), ("linear", ["no value to draw"])]]


def test_a_line_series_marks_its_thin_points_and_says_so_in_the_legend(tmp_path):
    found, close = [], plt.close

    def keep_then_close(fig=None):
        if isinstance(fig, matplotlib.figure.Figure):
            ax = fig.axes[0]
            legend = ax.get_legend() or fig.legends[0]
            found.append(([t.get_text() for t in ax.texts],
                          [t.get_text() for t in legend.get_texts()]))
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt, "close", keep_then_close)
        plots.line_chart(tmp_path / "a.png", [plots.Panel("p99.9", "QD", "latency (µs)", [
            plots.Series("p99.9", [1, 2, 4], [300.0, 900.0, 2_000.0],
                         thin=[False, False, True])])])
    ((texts, legend),) = found
    assert texts.count("†") == 1 and plots.THIN_POINT in legend


def test_a_percentile_too_few_ios_back_is_labelled_with_its_mark(tmp_path):
    """A † percentile is never quoted bare (analysis/render/claims.py, rule 1), in a figure as in
    a table: the sample's §2 drew its 128 KiB write p99 (18 I/Os above it) labelled "p99 10,158"."""
    found, close = [], plt.close

    def keep_then_close(fig=None):
        if isinstance(fig, matplotlib.figure.Figure):
            found.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt, "close", keep_then_close)
        bars.bar_chart(tmp_path / "a.png", ["read", "write"], [400.0, 6_000.0], [50.0, 40.0],
                       ylabel="total latency (µs)", title="t", markers=[3_359.0, 10_158.0],
                       marker_errors=[[100.0, 1_200.0], [100.0, 1_400.0]], marker_name="p99",
                       marker_label="p99", marker_thin=[False, True])
    assert "p99 3,359" in found and "p99 10,158 †" in found
