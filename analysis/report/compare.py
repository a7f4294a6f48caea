"""Compare two results trees: `python -m analysis compare A B [--out DIR] [--fail-if-worse PCT]`.

A results tree is a folder holding its record (run.json, whose `sections` say which sections ran;
an older tree's `<section>/manifest.json`, read through the record's migration) and the case
folders (what is `results/` in a toolkit checkout; a toolkit folder holding `results/` is
accepted too). Each
section present in both trees is summarised again from the raw repetitions (`section_frame`), so
no earlier `make analysis` is needed, and matched on (section, case, direction).

Per case and metric: A, B, the ratio B/A, the difference in % with its 95% interval, the one
test for an effect (analysis.core.effects: Welch's t-test over the repetitions, raw p) and the
Benjamini-Hochberg adjusted p over every test of the comparison (`p_adj`); a change is
significant when p_adj < 0.05, worse when it is lower IOPS or MB/s or higher latency. Six metrics
times every case are many tests: unadjusted, two trees of the same drive would show "significant"
rows by chance; adjusted, a comparison of an unchanged drive flags any row at most 5% of the time.

**Between runs.** Two trees are two runs: another day, another idle time, another thermal state.
Each tree's level moves by more than its repetitions show, so the test adds the variance between
runs (analysis.core.effects.Between), per metric, from the first of: `--between-run` (a lab's
measured figure, in % of the mean), the history's runs of this drive and case (at least
analysis.history.between.MIN_RUNS of them: a random-effects estimate), else the default, a spread
between runs as large as the repetitions' own. The row says which (`between_source`,
`between_pct`).

Percentiles (p95, p99, p99.9) are pooled over the repetitions (one number per tree) with the
tables' 95% interval (analysis.core.stats.tail_intervals); their test is the same Welch test on
the log of the percentile, from the sd of the repetitions' own log percentiles (`_lsd`), which is
what the interval is made of. A percentile with fewer than MIN_TAIL_IOS (100) I/Os above it on
either side is not tested ("too few I/Os above"). Tables without `_lsd` (another tool's) fall
back to the std of the repetitions' own percentiles (`welch~`), where two within one bucket are
"within one bucket", never significant. Not tested (p NaN): fewer than two repetitions on either
side ("not testable (n<2)"), or no spread on either side ("not testable (no spread)").

Writes tables/compare.csv, out/compare.md and, for the sweeps present in both trees,
figs/compare_bs_sweep.png (MB/s by block size) and figs/compare_qd_sweep.png (IOPS by queue
depth), A against B with ± std error bars. Exit 0; 1 with --fail-if-worse PCT when a change for
the worse is both significant and larger than PCT %; 2 for bad input.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.core.effects import ALPHA, t_two_sided_p, welch
from analysis.core.stats import MIN_TAIL_IOS
from analysis.render import markdown as md
from analysis.report import between_runs
from analysis.report.compare_rows import (
    COLUMNS,
    JUDGED,
    METRICS,
    PARAMS,
    PERCENTILES,
    compare_rows,
    judge,
    regressions,
)
from analysis.rules.cases import case_rows, read_manifest, section_frame
from analysis.run import record
from analysis.sections import SECTIONS

# A section's settings that make its numbers another measurement (manifest key, name).
SECTION_SETTINGS = [("state", "drive state"), ("region_bytes", "region")]
TABLE = "tables/compare.csv"
SNIPPET = "out/compare.md"
FIG_BS = "figs/compare_bs_sweep.png"
FIG_QD = "figs/compare_qd_sweep.png"


# what other modules and tools use of this one, beside its own definitions
__all__ = ["COLUMNS", "JUDGED", "METRICS", "PERCENTILES", "compare_rows", "judge", "regressions",
           "t_two_sided_p", "welch"]


class BadInput(Exception):
    """A tree that cannot be compared; the message says how to fix it."""


# ---------------------------------------------------------------- reading the trees


def tree_root(path: Path) -> Path:
    """The results tree: `path` itself or its results/, whichever's record holds a section."""
    path = Path(path)
    if not path.is_dir():
        raise BadInput(f"{path}: no such folder; give a results tree (the results/ folder of a "
                       "toolkit run, e.g. results or a copy such as results/drive-a)")
    for candidate in (path, path / "results"):
        if set(SECTIONS) & set(tree_sections(candidate)):
            return candidate
    raise BadInput(f"{path} is not a results tree: its record (run.json) holds no section "
                   f"(sections: {', '.join(SECTIONS)}); give the folder a section script wrote "
                   "into (results/, or a copy of it), after running e.g. 'bash qd1_test.bash'")


def tree_sections(root: Path) -> dict[str, dict]:
    """{folder: its manifest} of the tree's record; a record that cannot be read is bad input."""
    try:
        return record.sections(root)
    except record.RecordError as e:
        raise BadInput(str(e)) from None


def load_tree(path: Path) -> dict[str, pd.DataFrame]:
    """{section: its summary table} for every section of the tree with finished repetitions."""
    root = tree_root(path)
    ran = tree_sections(root)
    out = {}
    for section, info in SECTIONS.items():
        folder = root / section
        if section in ran:
            table = section_frame(folder, info.always)
            if not table.empty:
                out[section] = table
    return out


def tree_manifests(path: Path, frames: dict[str, pd.DataFrame]) -> dict[str, dict]:
    """{section: its manifest} for the sections of a tree that load_tree read."""
    root = tree_root(path)
    return {s: read_manifest(root / s) for s in frames}


# ---------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Comparison:
    table: pd.DataFrame  # one row per section, case, direction and metric
    # (section, case, direction, "A" | "B" | "params" | why the settings differ)
    only: list[tuple[str, str, str, str]]
    sections: list[str]  # compared: present in both trees
    frames_a: dict[str, pd.DataFrame]
    frames_b: dict[str, pd.DataFrame]


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
                  manifests_b: dict[str, dict] | None = None,
                  between=None) -> Comparison:
    """B against A, case by case. A case is compared only when it measured the same thing on
    both sides: the same parameters and engine, in a section of the same drive state and region;
    otherwise it is listed with the reason. `between(section, case, direction)` gives the spread
    between runs per metric (None: the default for every row)."""
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
            spread = between(section, *key) if between else None
            rows += [{**head, **r} for r in compare_rows(ra, rb, spread)]
        only += [(section, *key, "B") for key in b.index if key not in a.index]
    raw = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in JUDGED])
    return Comparison(judge(raw), only, sections, frames_a, frames_b)


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


TESTED = ("welch", "welch~", "welch-log")  # the tests that give a p-value


def _verdict(r) -> str:
    if r.test not in TESTED:
        return r.test
    if r.worse:
        return "**worse**"
    if r.better:
        return "better"
    return "no significant change"


def _cell(metric: str, value: float, std: float, low: float, high: float) -> str:
    """A mean ± its 95% half-width, a percentile with its interval (low–high, or ≥ low where
    it is one-sided); the std where the tree gave no interval."""
    if metric in PERCENTILES and not math.isnan(low) and math.isnan(high):
        return f"{md.num(value)} (≥ {md.num(low)})"
    if math.isnan(low) or math.isnan(high):
        return md.pm(value, std)
    if metric in PERCENTILES:
        return f"{md.num(value)} ({md.num(low)}–{md.num(high)})"
    return md.pm(value, (high - low) / 2)


def _diff(r) -> str:
    """'−9.1% (−15 to −3)': the difference with its 95% interval where it was tested."""
    text = md.signed_pct(r.diff_pct, 1)
    if math.isnan(r.diff_low) or math.isnan(r.diff_high):
        return text
    return f"{text} ({r.diff_low:+.0f} to {r.diff_high:+.0f})".replace("-", "−")


def _rows_md(df: pd.DataFrame) -> str:
    rows = [[f"{r.section} {r.case}" + ("" if r.direction in ("read", "write") and
                                          r.section != "mix_rw" else f" ({r.direction})"),
             r.label, _cell(r.metric, r.a, r.a_std, r.a_low, r.a_high),
             _cell(r.metric, r.b, r.b_std, r.b_low, r.b_high),
             "–" if math.isnan(r.ratio) else f"{r.ratio:.3f}", _diff(r),
             _p(r.p) + ("~" if r.test == "welch~" else ""), _p(r.p_adj), _verdict(r)]
            for r in df.itertuples()]
    return md.table(["case", "metric", "A", "B", "B/A", "diff (95% interval)", "p", "p (BH)",
                     "verdict"], rows,
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
    halves = ((t.diff_high - t.diff_low) / 2).dropna()
    if not halves.empty:
        out.append(f"What this comparison can resolve: the 95% interval of a difference is "
                   f"±{halves.median():.1f}% wide (the median over the {len(halves)} rows "
                   "tested); a change well inside it is not resolved, whatever its sign.")
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
                    if len(bad) else "passed.") +
                   " It fails on a change for the worse that is both significant and larger "
                   f"than {fail_pct:g}%.")
    for section, case, direction, side in comp.only:
        where = ("parameters differ between the trees, not compared" if side == "params"
                 else f"only in {side}" if side in ("A", "B") else f"{side}: not compared")
        out.append(f"{section} {case} ({direction}): {where}.")
    return out


def snippet(comp: Comparison, paths: tuple[Path, Path], figs: list[str],
            fail_pct: float | None, between_note: str = "") -> str:
    t = comp.table
    sig = t[t.significant].sort_values("regression_pct", ascending=False)
    parts = ["## Comparison: B against A", "",
             _tree_line("A", paths[0], comp.frames_a, comp.sections),
             _tree_line("B", paths[1], comp.frames_b, comp.sections), "",
             (f"Sections compared: {', '.join(comp.sections)}. Values are mean ± the half-width "
              "of its 95% confidence interval over the repetitions (t); p95, p99 and p99.9 are "
              "pooled from the repetitions' json+ bins, with the tables' 95% interval (low–high; "
              "≥ low where too few I/Os lie above it to bound it from above). p: Welch's "
              "two-sided t-test over the repetitions, with the spread between runs added (two "
              "trees are two runs); for a percentile on its log, from the spread of the "
              f"repetitions' own (`welch-log`), untested when fewer than {MIN_TAIL_IOS} I/Os "
              "lie above either side's. Tables without it fall back to the std of the "
              "per-repetition percentiles (`~`) and call two within one histogram bucket equal. "
              "diff: B against A with the 95% interval of the difference. p (BH): adjusted by "
              "Benjamini–Hochberg over all the comparisons here. "
              f"Significant: adjusted p < {ALPHA}: a comparison of an unchanged drive shows "
              f"any significant row in at most {ALPHA:.0%} of cases while runs differ by no "
              "more than the spread used. Worse: lower IOPS or MB/s, higher latency."), "",
             *([between_note, ""] if between_note else []),
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
                        help="exit 1 when a change of B for the worse is both significant "
                             "(Benjamini–Hochberg adjusted p < 0.05) and larger than PCT %%")
    parser.add_argument("--between-run", metavar="PCT|METRIC=PCT,...", default=None,
                        help="the sd of a run's level between runs of this drive, in %% of the "
                             "mean, as a lab measured it (3, or iops=2,p99=6; metrics: "
                             f"{', '.join(between_runs.NAMES.values())}); default: from the "
                             "history's runs of the drive, else as large as the repetitions' "
                             "own spread")
    parser.add_argument("--history", metavar="PATH|URI",
                        help="the history to estimate the spread between runs from (default: "
                             "$HISTORY, else results/history.sqlite)")
    args = parser.parse_args(argv)
    try:
        given = between_runs.parse(args.between_run)
    except ValueError as e:
        parser.error(str(e))
    try:
        frames_a, frames_b = load_tree(args.a), load_tree(args.b)
        for name, path, frames in (("A", args.a, frames_a), ("B", args.b, frames_b)):
            if not frames:
                raise BadInput(f"{name} ({path}) holds no finished repetition; run a section "
                               "script into it first")
        between, note = between_runs.resolver(given, args.history, tree_root(args.a),
                                              tree_root(args.b))
        comp = compare_trees(frames_a, frames_b, tree_manifests(args.a, frames_a),
                             tree_manifests(args.b, frames_b), between)
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
    (out / SNIPPET).write_text(snippet(comp, (args.a, args.b), figs, args.fail_if_worse,
                                       between_runs.summary(comp.table, note)))
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
