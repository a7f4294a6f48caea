"""Every figure of the committed sample (docs/sample/results, a real quick report) drawn again and
checked for what can be checked without eyes, from matplotlib's own artists and bounding boxes
once each figure is laid out and saved:

- every text inside the axes (a point's label, a bar's value, a heatmap cell) lies inside them;
- no text covers a marker (a point, a ring, a diamond; error-bar caps are not counted);
- a heatmap whose values span more than 100x is coloured on a log scale;
- a bar chart's value axis starts at 0 (a bar's length is its value), and no bar is drawn on a
  log axis;
- no panel is empty;
- a labelled log axis says it is one (a reader takes an axis for linear otherwise);
- no error bar runs past its axis: one too long is cut by the figure itself and marked;
- a series keeps one colour across a figure's panels (a reader matches them by colour);
- a log axis has three labelled ticks or more within its limits.

The checks are this file's own (not analysis.render.plots's placement code), and each is shown
to fail on a figure made wrong on purpose. No fio: the sample's results are fio's JSON already.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.figure
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import LogNorm
from matplotlib.container import BarContainer
from matplotlib.image import AxesImage
from matplotlib.ticker import LogLocator

from analysis.render import bars, exceedance, plots
from analysis.report import redraw
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


def problems(fig) -> list[str]:
    """What is wrong with a saved figure, by the rules of this file's docstring."""
    found = []
    renderer = fig.canvas.get_renderer()
    colours: dict[str, set] = {}  # a series' name -> its colours over the figure's panels
    for ax in fig.axes:
        for line in ax.lines:
            name = line.get_label().split(" (")[0]  # 'R70/W30 (51,829 I/Os)': the series
            if line.get_visible() and name and not name.startswith("_"):
                colours.setdefault(name, set()).add(matplotlib.colors.to_hex(line.get_color()))
    found += [f"series {name!r} drawn in {len(c)} colours across the panels"
              for name, c in colours.items() if len(c) > 1]
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        name = f"panel {n + 1} ({ax.get_title() or 'untitled'})"
        if not has_data(ax):
            found.append(f"{name}: empty")
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
        for image in ax.images:
            values = [v for v in image.get_array().compressed().ravel() if v > 0]
            if values and max(values) > 100 * min(values) and not isinstance(image.norm, LogNorm):
                found.append(f"{name}: colours span {max(values) / min(values):.0f}x on a "
                             "linear scale")
        low, high = sorted(ax.get_ylim())
        for coll in ax.collections:
            # an error bar is a LineCollection: one running past the axis is cut by matplotlib
            # with nothing to say so; the figures cut it themselves and mark it (issue 42)
            if isinstance(coll, LineCollection) and coll.get_visible():
                ends = [y for seg in coll.get_segments() for y in seg[:, 1] if math.isfinite(y)]
                if any(y < low - abs(low) * 1e-6 or y > high + abs(high) * 1e-6 for y in ends):
                    found.append(f"{name}: an error bar runs past the axis, unmarked")
                    break
        for axis, lim, ticks in (("x", ax.get_xlim(), ax.get_xticks()),
                                 ("y", ax.get_ylim(), ax.get_yticks())):
            # a log axis needs three labelled ticks or more to be read between them (one whose
            # ticks are the data's own, such as §6's two working sets, is not read between)
            locator = getattr(ax, f"{axis}axis").get_major_locator()
            if getattr(ax, f"get_{axis}scale")() == "log" and isinstance(locator, LogLocator):
                inside = [t for t in ticks if min(lim) <= t <= max(lim)]
                if len(inside) < 3:
                    found.append(f"{name}: {axis} log axis labelled at {len(inside)} ticks")
        for axis, scale, label in (("x", ax.get_xscale(), ax.get_xlabel()),
                                   ("y", ax.get_yscale(), ax.get_ylabel())):
            # a log axis read as linear misleads: its label says so (issue 42)
            if scale == "log" and label and "log" not in label:
                found.append(f"{name}: {axis} axis on a log scale, its label {label!r} does "
                             "not say so")
        if any(isinstance(c, BarContainer) and len(c.patches) for c in ax.containers):
            if ax.get_yscale() != "linear":
                found.append(f"{name}: bars on a {ax.get_yscale()} axis")
            elif ax.get_ylim()[0] != 0:
                found.append(f"{name}: bar axis starts at {ax.get_ylim()[0]:g}, not 0")
    return found


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict[str, list[str]]:
    """The sample's tree drawn again (`python -m analysis all`), each figure checked once saved."""
    root = tmp_path_factory.mktemp("figures")
    tree = root / "results" / "sample"
    shutil.copytree(SAMPLE / "results", tree)
    seen: dict[str, list[str]] = {}
    saving: list[str] = []
    original, close = plots._save, plt.close

    def save(fig, path: Path, note: str = ""):
        saving.append(Path(path).name)
        return original(fig, path, note)

    def check_then_close(fig=None):
        # _save closes the figure right after writing it: checked then, laid out as saved
        if saving and isinstance(fig, matplotlib.figure.Figure):
            seen[saving.pop()] = problems(fig)
        return close(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "_save", save)
        mp.setattr(bars, "_save", save)
        mp.setattr(exceedance, "_save", save)
        mp.setattr(plt, "close", check_then_close)
        assert redraw.main(["--root", str(root), "--results", str(tree)]) == 0
    return seen


def test_every_figure_of_the_sample_is_drawn(drawn):
    committed = {p.name for p in (SAMPLE / "figs").glob("*.png")}
    assert committed <= set(drawn), committed - set(drawn)


def test_no_figure_has_a_problem_a_reader_would_see(drawn):
    bad = {name: found for name, found in drawn.items() if found}
    assert not bad, "\n".join(f"{n}: {'; '.join(f)}" for n, f in sorted(bad.items()))


# --- the checks fail where they should ----------------------------------------------------------
def test_the_checks_catch_a_figure_made_wrong(tmp_path):
    fig, (bars, heat, _empty) = plt.subplots(1, 3, figsize=(9, 3))
    bars.bar([0, 1], [50, 60])
    bars.errorbar([1], [60], yerr=[[30], [5]], fmt="none")  # down to 30, under the axis's 40
    bars.set_ylim(40, 70)  # a bar axis not from 0
    bars.plot([0.0], [55.0], "o", ms=8)
    bars.text(0.0, 55.0, "on the point")  # covers the marker
    bars.text(5.0, 55.0, "far right")  # outside the axes
    heat.imshow([[1.0, 10.0], [100.0, 291_504.0]])  # spans 291,504x, linear
    bars.plot([0, 1], [45, 46], color="#4C78A8", label="R70/W30")
    _empty.plot([0, 1], [1, 2], color="#F58518", label="R70/W30")  # the same series, recoloured
    heat.set_yscale("log")
    heat.set_ylabel("IOPS")  # a log axis that does not say so
    fig.savefig(tmp_path / "bad.png")
    found = "\n".join(problems(fig))
    plt.close(fig)
    for expected in ("bar axis starts at 40", "'on the point' covers a marker",
                     "'far right' outside the axes", "colours span 291504x",
                     "y axis on a log scale, its label 'IOPS'",
                     "panel 1 (untitled): an error bar runs past the axis, unmarked",
                     "series 'R70/W30' drawn in 2 colours across the panels"):
        assert expected in found, found


def test_the_tick_check_catches_a_log_axis_labelled_at_two_decades_only(tmp_path):
    """§5's distribution before issue 42: 150 to 40,000 µs labelled at 1,000 and 10,000 only,
    so a p50 of 253 µs could not be read."""
    fig, ax = plt.subplots()
    ax.plot([150, 40_000], [1, 0.001], label="QD 1")
    ax.set_xscale("log")
    ax.set_xlim(150, 40_000)
    plots.log_axis(ax.xaxis, subs=(1.0,))
    ax.set_xlabel("latency (µs), log scale")
    fig.savefig(tmp_path / "ticks.png")
    found = problems(fig)
    plt.close(fig)
    assert "panel 1 (untitled): x log axis labelled at 2 ticks" in found, found
