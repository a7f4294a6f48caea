"""Compare two results trees: `python -m analysis compare A B [--out DIR] [--fail-if-worse PCT]`.

A results tree is a folder holding `<section>/manifest.json` and the case folders (what is
`results/` in a toolkit checkout; a toolkit folder holding `results/` is accepted too). Each
section present in both trees is summarised again from the raw repetitions (`section_frame`), so
no earlier `make analysis` is needed, and matched on (section, case, direction).

Per case and metric: A, B, the ratio B/A, the difference in %, Welch's two-sided t-test over the
repetitions (raw p, with scipy's t distribution), the Benjamini–Hochberg adjusted p over every
test of the comparison (`p_adj`, scipy's false_discovery_control), and whether the change is
significant (p_adj < 0.05) and worse (lower IOPS or MB/s, higher latency). Six metrics times
every case are many tests: unadjusted, two trees of the same drive would show "significant" rows
by chance; the adjustment holds the expected share of false discoveries at 5%.

The t-test is computed from each side's mean, sample std (ddof=1) and n, which `section_frame`
takes over the per-repetition values: that is exactly Welch's test on the per-repetition values.
Percentiles (p95, p99, p99.9) are pooled over the repetitions (one number per tree). Each side's
percentile comes with its 95% interval (`lat_p99_us_lo`/`_hi`, analysis.core.stats.tail_intervals:
the order-statistic uncertainty within the runs and the spread between them), and the test
(`interval`) is a z-test on the two: se = interval width / (2 x 1.96); the intervals reach the
edges of fio's buckets, so a move of one bucket can be significant only when both percentiles are
known to about a bucket. A percentile with fewer than MIN_TAIL_IOS (100) I/Os above it on either
side is not tested ("too few I/Os above"): it rests on a handful of I/Os (a p99.9 of a short run
at QD=1, typically). Tables without the intervals (another tool's) fall back to the std of the
repetitions' own percentiles (`welch~`), where two within one bucket are "within one bucket",
never significant. Every row also carries each
side's 95% interval (`a_low` … `b_high`; mean ± its t half-width for a mean). Not tested (p NaN):
fewer than two repetitions on either side ("not testable (n<2)"), or no spread on either side
("not testable (no spread)").

Writes tables/compare.csv, out/compare.md and, for the sweeps present in both trees,
figs/compare_bs_sweep.png (MB/s by block size) and figs/compare_qd_sweep.png (IOPS by queue
depth), A against B with ± std error bars. Exit 0; 1 with --fail-if-worse PCT when a significant
regression is larger than PCT %; 2 for bad input.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import scipy.stats

from analysis.core.stats import CONFIDENCE, MIN_TAIL_IOS, bucket_width_ns
from analysis.render import markdown as md
from analysis.rules.cases import case_rows, read_manifest, section_frame
from analysis.sections import SECTIONS

ALPHA = 0.05
# metric column -> (its std column, label, higher is better)
METRICS = {
    "iops_mean": ("iops_std", "IOPS", True),
    "bw_MBps_mean": ("bw_MBps_std", "MB/s", True),
    "lat_us_mean": ("lat_us_std", "mean lat (µs)", False),
    "lat_p95_us": ("lat_p95_us_std", "p95 (µs)", False),
    "lat_p99_us": ("lat_p99_us_std", "p99 (µs)", False),
    "lat_p99_9_us": ("lat_p99_9_us_std", "p99.9 (µs)", False),
}
# pooled from json+ bins (resolved to one fio bucket), each with its tail interval
PERCENTILES = ("lat_p95_us", "lat_p99_us", "lat_p99_9_us")
HALF_WIDTHS = {"iops_mean": "iops_ci95", "bw_MBps_mean": "bw_MBps_ci95",
               "lat_us_mean": "lat_us_ci95"}  # each mean's 95% t half-width
PARAMS = ["rw", "bs", "iodepth", "numjobs", "read_pct"]
# A section's settings that make its numbers another measurement (manifest key, name).
SECTION_SETTINGS = [("state", "drive state"), ("region_bytes", "region")]
TABLE = "tables/compare.csv"
SNIPPET = "out/compare.md"
FIG_BS = "figs/compare_bs_sweep.png"
FIG_QD = "figs/compare_qd_sweep.png"


class BadInput(Exception):
    """A tree that cannot be compared; the message says how to fix it."""


# ---------------------------------------------------------------- Student t and Welch's test


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df may be fractional)."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    return float(2.0 * scipy.stats.t.sf(abs(t), df))


def welch(mean_a: float, std_a: float, n_a: float, mean_b: float, std_b: float,
          n_b: float) -> tuple[float, float, float]:
    """Welch's unequal-variance t-test of B against A: (t, df, two-sided p).

    t = (mean_b - mean_a) / sqrt(s_a²/n_a + s_b²/n_b), df by Welch–Satterthwaite (scipy's
    ttest_ind_from_stats does the same but does not return df, which the table shows), p from
    scipy's t distribution. NaN throughout, not testable, when a value is missing, when n < 2
    on either side (no sample std), or when neither side has any spread: pooled percentiles
    snap to fio's histogram buckets, so repetitions landing in one bucket on each side give
    two constants, and a t of ±inf would call a one-bucket move infinitely significant.
    """
    values = (mean_a, std_a, n_a, mean_b, std_b, n_b)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        return math.nan, math.nan, math.nan
    if n_a < 2 or n_b < 2:
        return math.nan, math.nan, math.nan
    va, vb = std_a * std_a / n_a, std_b * std_b / n_b
    se2 = va + vb
    if se2 == 0:
        return math.nan, math.nan, math.nan
    t = (mean_b - mean_a) / math.sqrt(se2)
    df = se2 * se2 / (va * va / (n_a - 1) + vb * vb / (n_b - 1))
    return t, df, t_two_sided_p(t, df)


def within_one_bucket(a_us: float, b_us: float) -> bool:
    """Two pooled percentiles (µs) no further apart than one bucket of fio's latency histogram
    at the larger of them: fio cannot tell them apart, so neither can a test on them."""
    return abs(b_us - a_us) * 1000 <= bucket_width_ns(max(a_us, b_us) * 1000) * (1 + 1e-9)


def interval_test(a: float, a_low: float, a_high: float, b: float, b_low: float,
                  b_high: float) -> tuple[float, float]:
    """Two pooled percentiles (µs) with their 95% intervals (analysis.core.stats.tail_intervals:
    within-run order statistics and the spread between repetitions): (z, two-sided p).

    Each interval is read as a normal one, se = (high - low) / (2 x 1.96); the intervals reach
    the edges of fio's buckets, so one that collapses to a single bucket still has a spread.
    z = (b - a) / sqrt(se_a² + se_b²); p from the normal distribution."""
    z95 = scipy.stats.norm.ppf(0.5 + CONFIDENCE / 2)
    se2 = sum(((high - low) / (2 * z95)) ** 2 for low, high in ((a_low, a_high), (b_low, b_high)))
    if se2 <= 0:
        return math.nan, math.nan
    z = (b - a) / math.sqrt(se2)
    return z, float(2 * scipy.stats.norm.sf(abs(z)))


def benjamini_hochberg(p: pd.Series) -> pd.Series:
    """Benjamini–Hochberg adjusted p over every test made (NaN, not tested, stays NaN): the
    false discovery rate of the whole comparison is then held at ALPHA."""
    tested = p.dropna()
    adjusted = pd.Series(math.nan, index=p.index)
    if not tested.empty:
        adjusted[tested.index] = scipy.stats.false_discovery_control(tested.to_numpy(),
                                                                     method="bh")
    return adjusted


# ---------------------------------------------------------------- reading the trees


def tree_root(path: Path) -> Path:
    """The folder holding <section>/manifest.json: `path` itself or its results/."""
    path = Path(path)
    if not path.is_dir():
        raise BadInput(f"{path}: no such folder; give a results tree (the results/ folder of a "
                       "toolkit run, e.g. results or a copy such as results/drive-a)")
    for candidate in (path, path / "results"):
        if any((candidate / s / "manifest.json").is_file() for s in SECTIONS):
            return candidate
    raise BadInput(f"{path} is not a results tree: it holds no <section>/manifest.json "
                   f"(sections: {', '.join(SECTIONS)}); give the folder a section script wrote "
                   "into (results/, or a copy of it), after running e.g. 'bash qd1_test.bash'")


def load_tree(path: Path) -> dict[str, pd.DataFrame]:
    """{section: its summary table} for every section of the tree with finished repetitions."""
    root = tree_root(path)
    out = {}
    for section, info in SECTIONS.items():
        folder = root / section
        if (folder / "manifest.json").is_file():
            table = section_frame(folder, info.always)
            if not table.empty:
                out[section] = table
    return out


def tree_manifests(path: Path, frames: dict[str, pd.DataFrame]) -> dict[str, dict]:
    """{section: its manifest} for the sections of a tree that load_tree read."""
    root = tree_root(path)
    return {s: read_manifest(root / s) for s in frames}


# ---------------------------------------------------------------- the comparison


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def interval_of(row: pd.Series, col: str) -> tuple[float, float]:
    """(low, high) of a metric's 95% interval: mean ± its t half-width (`<metric>_ci95`), or a
    pooled percentile's own interval (`_lo`, `_hi`); NaN when the table has none (a table from
    before the intervals, or one repetition)."""
    if col in PERCENTILES:
        return _f(row.get(col + "_lo")), _f(row.get(col + "_hi"))
    half = _f(row.get(HALF_WIDTHS[col]))
    return _f(row.get(col)) - half, _f(row.get(col)) + half


def has_interval(a: pd.Series, b: pd.Series, col: str) -> bool:
    return not any(math.isnan(v) for v in (*interval_of(a, col), *interval_of(b, col)))


def compare_rows(a: pd.Series, b: pd.Series) -> list[dict]:
    """One row per metric for one (section, case, direction) present in both trees: the raw
    test. Whether a change is significant is decided over the whole comparison (`judge`)."""
    rows = []
    for col, (std_col, label, higher_better) in METRICS.items():
        if col not in a.index and col not in b.index:
            continue  # neither table has it (another tool's): nothing to compare, no row
        # a column one table lacks (an older table) is "no value" on that side
        ma, mb = _f(a.get(col)), _f(b.get(col))
        sa, sb = _f(a.get(std_col)), _f(b.get(std_col))
        na, nb = int(a["n"]), int(b["n"])
        ratio = mb / ma if ma and not math.isnan(ma) and not math.isnan(mb) else math.nan
        diff = (ratio - 1.0) * 100 if not math.isnan(ratio) else math.nan
        if math.isnan(ma) or math.isnan(mb):
            test = "no value"
        elif na < 2 or nb < 2:
            test = "not testable (n<2)"
        elif col in PERCENTILES and has_interval(a, b, col):
            thin = min(_f(a.get(col + "_tail_ios")), _f(b.get(col + "_tail_ios")))
            test = "too few I/Os above" if thin < MIN_TAIL_IOS else "interval"
        elif col in PERCENTILES and within_one_bucket(ma, mb):
            test = "within one bucket"
        elif sa == 0 and sb == 0:
            test = "not testable (no spread)"
        else:
            test = "welch~" if col in PERCENTILES else "welch"
        t, df, p = welch(ma, sa, na, mb, sb, nb) if test.startswith("welch") else (math.nan,) * 3
        (low_a, high_a), (low_b, high_b) = interval_of(a, col), interval_of(b, col)
        if test == "interval":
            t, p = interval_test(ma, low_a, high_a, mb, low_b, high_b)
        rows.append({"metric": col, "label": label, "a": ma, "a_std": sa, "a_n": na, "b": mb,
                     "b_std": sb, "b_n": nb, "a_low": low_a, "a_high": high_a, "b_low": low_b,
                     "b_high": high_b, "ratio": ratio, "diff_pct": diff, "t": t, "df": df,
                     "p": p,
                     # how much worse B is, in % of A (negative: better)
                     "regression_pct": -diff if higher_better else diff, "test": test})
    return rows


def judge(table: pd.DataFrame) -> pd.DataFrame:
    """Significance over the whole comparison: Benjamini–Hochberg adjusted p (`p_adj`) below
    ALPHA. Testing every case and metric at ALPHA unadjusted would find "significant" rows
    between two trees of the same drive by chance alone; the gate uses p_adj too."""
    table = table.assign(p_adj=benjamini_hochberg(table.p))
    significant = table.p_adj < ALPHA  # NaN compares False: not tested, never significant
    return table.assign(significant=significant,
                        worse=significant & (table.regression_pct > 0),
                        better=significant & (table.regression_pct < 0))[COLUMNS]


@dataclass(frozen=True)
class Comparison:
    table: pd.DataFrame  # one row per section, case, direction and metric
    # (section, case, direction, "A" | "B" | "params" | why the settings differ)
    only: list[tuple[str, str, str, str]]
    sections: list[str]  # compared: present in both trees
    frames_a: dict[str, pd.DataFrame]
    frames_b: dict[str, pd.DataFrame]


COLUMNS = ["section", "case", "direction", *PARAMS, "metric", "label", "a", "a_std", "a_n", "b",
           "b_std", "b_n", "a_low", "a_high", "b_low", "b_high", "ratio", "diff_pct", "t", "df",
           "p", "p_adj", "significant", "worse", "better", "regression_pct", "test"]


JUDGED = ("p_adj", "significant", "worse", "better")  # set by judge() over the whole table


def setting_difference(manifest_a: dict, manifest_b: dict) -> str | None:
    """Why two sections measured different things although their cases match: another drive
    state or another region (lib/state.bash) makes another number, never a regression."""
    for key, what in SECTION_SETTINGS:
        a, b = manifest_a.get(key), manifest_b.get(key)
        if str(a or "") != str(b or ""):
            show = (lambda v: md.human_size(int(v)) if str(v or "").isdigit() else
                    (v or "not recorded")) if key == "region_bytes" else (lambda v: v or "not recorded")
            return f"{what} differs ({show(a)} in A, {show(b)} in B)"
    return None


def compare_trees(frames_a: dict[str, pd.DataFrame],
                  frames_b: dict[str, pd.DataFrame],
                  manifests_a: dict[str, dict] | None = None,
                  manifests_b: dict[str, dict] | None = None) -> Comparison:
    """B against A, case by case. A case is compared only when it measured the same thing on
    both sides: the same parameters and engine, in a section of the same drive state and region;
    otherwise it is listed with the reason."""
    rows, only = [], []
    sections = [s for s in SECTIONS if s in frames_a and s in frames_b]
    for s in [s for s in SECTIONS if (s in frames_a) != (s in frames_b)]:
        side = "A" if s in frames_a else "B"
        frame = frames_a.get(s, frames_b.get(s))
        only += [(s, r.case, r.direction, side) for r in frame.itertuples()]
    for section in sections:
        a = frames_a[section].set_index(["case", "direction"], drop=False)
        b = frames_b[section].set_index(["case", "direction"], drop=False)
        differs = setting_difference((manifests_a or {}).get(section, {}),
                                     (manifests_b or {}).get(section, {}))
        for key in a.index:
            if key not in b.index:
                only.append((section, *key, "A"))
                continue
            ra, rb = a.loc[key], b.loc[key]
            if [str(ra[p]) for p in PARAMS] != [str(rb[p]) for p in PARAMS]:
                only.append((section, *key, "params"))
                continue
            engines = (str(ra.get("engine", "")), str(rb.get("engine", "")))
            if differs or (all(engines) and engines[0] != engines[1]):
                only.append((section, *key, differs or
                             f"engine differs ({engines[0]} in A, {engines[1]} in B)"))
                continue
            head = {"section": section, "case": key[0], "direction": key[1],
                    **{p: ra[p] for p in PARAMS}}
            rows += [{**head, **r} for r in compare_rows(ra, rb)]
        only += [(section, *key, "B") for key in b.index if key not in a.index]
    raw = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in JUDGED])
    return Comparison(judge(raw), only, sections, frames_a, frames_b)


def regressions(table: pd.DataFrame, pct: float) -> pd.DataFrame:
    """Significant changes for the worse larger than pct %, largest first."""
    bad = table[table.worse & (table.regression_pct > pct)]
    return bad.sort_values("regression_pct", ascending=False)


# ---------------------------------------------------------------- figures


def _overlay(frames: list[tuple[str, pd.DataFrame]], x_of, col: str, std_col: str,
             group_cols: list[str]) -> list:
    from analysis.render.plots import Panel, Series  # matplotlib only when a sweep is drawn
    panels = []
    groups = sorted({tuple(r) for _, f in frames for r in f[group_cols].itertuples(index=False)},
                    key=str)
    for group in groups:
        series = []
        for label, frame in frames:
            rows = frame[(frame[group_cols] == pd.Series(group, index=group_cols)).all(axis=1)]
            rows = rows.assign(_x=[x_of(r) for r in rows.itertuples()]).sort_values("_x")
            if not rows.empty:
                series.append(Series(label, list(rows._x), list(rows[col]), list(rows[std_col])))
        title = md.pattern(group[0], group[1]) if len(group) == 2 else str(group[0])
        panels.append((title, series))
    return [Panel(t, "", "", s) for t, s in panels]  # axes filled in by the caller


def draw_figures(comp: Comparison, labels: tuple[str, str], out: Path) -> list[str]:
    from analysis.render.plots import Panel, line_chart
    written = []
    specs = [("bs_sweep", FIG_BS, ["rw"], lambda r: r.bs / 1024, "block size (KiB)",
              "bw_MBps_mean", "bw_MBps_std", "MB/s (10^6 B/s)", "MB/s by block size"),
             ("qd_sweep", FIG_QD, ["rw", "bs"], lambda r: r.iodepth, "queue depth",
              "iops_mean", "iops_std", "IOPS", "IOPS by queue depth")]
    for section, fig, groups, x_of, xlabel, col, std_col, ylabel, title in specs:
        if section not in comp.sections:
            continue
        frames = [(labels[0], case_rows(comp.frames_a[section])),
                  (labels[1], case_rows(comp.frames_b[section]))]
        panels = [Panel(p.title, xlabel, ylabel, p.series, xscale="log2",
                        xticks=(ticks := sorted({x for s in p.series for x in s.x})),
                        xticklabels=[f"{x:g}" for x in ticks])
                  for p in _overlay(frames, x_of, col, std_col, groups)]
        if panels:
            line_chart(out / fig, panels, title=f"{title}: A against B",
                       note="error bars: ± std over the repetitions")
            written.append(fig)
    return written


# ---------------------------------------------------------------- markdown


def _p(p: float) -> str:
    if math.isnan(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


TESTED = ("welch", "welch~", "interval")  # the tests that give a p-value


def _verdict(r) -> str:
    if r.test not in TESTED:
        return r.test
    if r.worse:
        return "**worse**"
    if r.better:
        return "better"
    return "no significant change"


def _cell(metric: str, value: float, std: float, low: float, high: float) -> str:
    """A mean ± its 95% half-width, a percentile with its interval (low–high); the std where
    the tree gave no interval."""
    if math.isnan(low) or math.isnan(high):
        return md.pm(value, std)
    if metric in PERCENTILES:
        return f"{md.num(value)} ({md.num(low)}–{md.num(high)})"
    return md.pm(value, (high - low) / 2)


def _rows_md(df: pd.DataFrame) -> str:
    rows = [[f"{r.section} {r.case}" + ("" if r.direction in ("read", "write") and
                                          r.section != "mix_rw" else f" ({r.direction})"),
             r.label, _cell(r.metric, r.a, r.a_std, r.a_low, r.a_high),
             _cell(r.metric, r.b, r.b_std, r.b_low, r.b_high),
             "–" if math.isnan(r.ratio) else f"{r.ratio:.3f}", md.signed_pct(r.diff_pct, 1),
             _p(r.p) + ("~" if r.test == "welch~" else ""), _p(r.p_adj), _verdict(r)]
            for r in df.itertuples()]
    return md.table(["case", "metric", "A", "B", "B/A", "diff", "p", "p (BH)", "verdict"], rows,
                    ["l", "l", "r", "r", "r", "r", "r", "r", "l"])


def _tree_line(name: str, path: Path, frames: dict[str, pd.DataFrame], sections: list[str]) -> str:
    section = next((s for s in sections if s in frames), next(iter(frames), None))
    try:
        m = read_manifest(tree_root(path) / section) if section else {}
    except BadInput:  # tables given directly (tests, other tools): no manifest to quote
        m = {}
    return (f"- **{name}**: `{path}` · target `{m.get('target', '?')}` "
            f"({m.get('target_kind', '?')}) · engine {m.get('engine', '?')} · profile "
            f"{m.get('profile', '?')} ({m.get('runtime', '?')} s, {m.get('repeat', '?')} "
            f"repetitions) · sections {', '.join(frames) or 'none'}")


def findings(comp: Comparison, fail_pct: float | None) -> list[str]:
    t = comp.table
    bucket = int((t.test == "within one bucket").sum())
    untested = int((~t.test.isin(TESTED)).sum()) - bucket
    out = [(f"{len(t)} comparisons over {t.groupby(['section', 'case', 'direction']).ngroups} "
            f"case rows: {int(t.significant.sum())} significant (BH-adjusted p < {ALPHA}), "
            f"{int(t.worse.sum())} worse, {int(t.better.sum())} better, "
            f"{bucket} within one histogram bucket, {untested} not testable.")]
    worse = t[t.worse].sort_values("regression_pct", ascending=False)
    better = t[t.better].sort_values("regression_pct")
    for found, what in ((worse, "regression"), (better, "improvement")):
        if found.empty:
            out.append(f"No significant {what}.")
            continue
        r = found.iloc[0]
        out.append(f"Largest significant {what}: {r.section} {r.case} {r.label} "
                   f"{md.num(r.a)} → {md.num(r.b)} ({md.signed_pct(r.diff_pct, 1)}, p {_p(r.p)}, "
                   f"adjusted {_p(r.p_adj)}).")
    if fail_pct is not None:
        bad = regressions(t, fail_pct)
        out.append(f"Gate --fail-if-worse {fail_pct:g}%: " +
                   (f"FAILED, {len(bad)} significant regression(s) above {fail_pct:g}%."
                    if len(bad) else "passed."))
    for section, case, direction, side in comp.only:
        where = ("parameters differ between the trees, not compared" if side == "params"
                 else f"only in {side}" if side in ("A", "B") else f"{side}: not compared")
        out.append(f"{section} {case} ({direction}): {where}.")
    return out


def snippet(comp: Comparison, paths: tuple[Path, Path], figs: list[str],
            fail_pct: float | None) -> str:
    t = comp.table
    sig = t[t.significant].sort_values("regression_pct", ascending=False)
    parts = ["## Comparison: B against A", "",
             _tree_line("A", paths[0], comp.frames_a, comp.sections),
             _tree_line("B", paths[1], comp.frames_b, comp.sections), "",
             (f"Sections compared: {', '.join(comp.sections)}. Values are mean ± the half-width "
              "of its 95% confidence interval over the repetitions (t); p95, p99 and p99.9 are pooled from the "
              "repetitions' json+ bins, with its 95% interval (low–high: the order statistics "
              "within the runs and the spread between them, a bootstrap over both). p: for a "
              "mean, Welch's two-sided t-test over the repetitions (from mean, std and n); for "
              "a percentile, a z-test on the two intervals with fio's bucket width added (`interval`), "
              f"untested when fewer than {MIN_TAIL_IOS} I/Os lie above either side's. Trees "
              "without intervals fall back to the std of the per-repetition percentiles (`~`) "
              "and call two within one histogram bucket equal. p (BH): adjusted by Benjamini–Hochberg over all the comparisons here. "
              f"Significant: adjusted p < {ALPHA}, which holds the expected share of false "
              f"discoveries at {ALPHA:.0%}. Worse: lower IOPS or MB/s, higher latency."), "",
             "### Significant changes", "",
             _rows_md(sig) if not sig.empty else f"None at adjusted p < {ALPHA}.", "",
             "### All comparisons", "", _rows_md(t), ""]
    for fig in figs:
        parts += [md.image(Path(fig).stem.replace("_", " "), md.link_from_out(fig)), ""]
    parts += ["### Findings", ""] + [f"- {f}" for f in findings(comp, fail_pct)]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- command line


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="results tree A (the baseline)")
    parser.add_argument("b", type=Path, help="results tree B (the one judged against A)")
    parser.add_argument("--out", type=Path, default=Path("."),
                        help="folder for tables/, out/ and figs/ (default: current folder)")
    parser.add_argument("--fail-if-worse", type=float, metavar="PCT", default=None,
                        help="exit 1 when any significant regression of B (Benjamini–Hochberg "
                             "adjusted p < 0.05) is larger than PCT %%")
    args = parser.parse_args(argv)
    try:
        frames_a, frames_b = load_tree(args.a), load_tree(args.b)
        for name, path, frames in (("A", args.a, frames_a), ("B", args.b, frames_b)):
            if not frames:
                raise BadInput(f"{name} ({path}) holds no finished repetition; run a section "
                               "script into it first")
        comp = compare_trees(frames_a, frames_b, tree_manifests(args.a, frames_a),
                             tree_manifests(args.b, frames_b))
        reasons = sorted({side for *_, side in comp.only if side not in ("A", "B", "params")})
        if comp.table.empty and reasons:
            raise BadInput(f"nothing compared between {args.a} and {args.b}: "
                           f"{'; '.join(reasons)}. Numbers measured in another drive state, "
                           "region or engine are other measurements; rerun one tree with the "
                           "other's --state, --size and --engine")
        if comp.table.empty:
            raise BadInput(f"nothing in common between {args.a} (sections "
                           f"{', '.join(frames_a)}) and {args.b} (sections "
                           f"{', '.join(frames_b)}): run the same section with the same cases "
                           "into both trees")
    except BadInput as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    out = args.out
    (out / "tables").mkdir(parents=True, exist_ok=True)
    comp.table.to_csv(out / TABLE, index=False, float_format="%.10g")
    labels = (f"A ({_name(args.a)})", f"B ({_name(args.b)})")
    figs = draw_figures(comp, labels, out)
    (out / "out").mkdir(parents=True, exist_ok=True)
    (out / SNIPPET).write_text(snippet(comp, (args.a, args.b), figs, args.fail_if_worse))
    t = comp.table
    print(f"compared {', '.join(comp.sections)}: {len(t)} comparisons, "
          f"{int(t.significant.sum())} significant, {int(t.worse.sum())} worse, "
          f"{int(t.better.sum())} better")
    print(f"wrote {', '.join([TABLE, SNIPPET, *figs])} under {out}")
    if args.fail_if_worse is not None:
        bad = regressions(t, args.fail_if_worse)
        if not bad.empty:
            print(f"compare: {len(bad)} significant regression(s) larger than "
                  f"{args.fail_if_worse:g}%:", file=sys.stderr)
            for r in bad.itertuples():
                print(f"  {r.section} {r.case} ({r.direction}) {r.label}: {md.num(r.a)} -> "
                      f"{md.num(r.b)} ({md.signed_pct(r.diff_pct, 1)}, p {_p(r.p)}, adjusted "
                      f"{_p(r.p_adj)})", file=sys.stderr)
            return 1
    return 0


def _name(path: Path) -> str:
    """A short label for a tree: its folder name, or its parent's when it is just results/."""
    path = Path(path).resolve()
    return path.parent.name if path.name == "results" else path.name


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
