"""What every section module does the same way: read its results, build the summary table,
write the CSV, the figures and the snippet, print a summary, and return the exit code.

A section module supplies `produce(run) -> list of written paths`; this module owns the command
line (`--root`, plus the section's own options), the checks and the messages.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.core import workspace
from analysis.core.effects import Change, change, log_change
from analysis.core.stats import MIN_TAIL_IOS
from analysis.core.workspace import Workspace
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.claims import tail_cell
from analysis.rules.cases import (
    NINES,
    UNSTABLE_HALF_WIDTH,
    Case,
    frame_of_cases,
    frame_of_regimes,
    nines,
    one_state,
    read_manifest,
    read_section,
    report_left_out,
)
from analysis.rules.sweeps import KNEE_GAIN_PCT, KNEE_LATENCY_PCT
from analysis.rules.write_evidence import drive_written_GiB, since_state
from analysis.run.host_ceiling import read_ceilings
from analysis.run.manifest import planned_repeats
from analysis.sections import SECTIONS, seconds_part, snippet_path, state_part
from analysis.sections import facts as facts_file
from analysis.sections.facts import Anomaly, Facts
from analysis.sections.host_part import HOST_BOUND_LEAD, host_anomaly


@dataclass(frozen=True)
class SectionRun:
    ws: Workspace  # where results are read and tables, figures and snippets written
    results_dir: Path
    table: pd.DataFrame  # one row per case and direction (analysis.rules.cases columns)
    setup: str  # the snippet's setup line
    args: argparse.Namespace
    facts: Facts = field(default_factory=Facts)  # headlines and anomalies for the report
    cases: list[Case] = field(default_factory=list)  # the repetitions behind the table
    # what tells a case from others of its shape, where the section knows more than the table's
    # columns (§6's working sets and data patterns): the per-second view's titles
    titles: dict[str, str] = field(default_factory=dict)

    def case(self, name: str) -> Case | None:
        return next((c for c in self.cases if c.name == name), None)

    def write_table(self, relpath: str, df: pd.DataFrame) -> str:
        path = self.ws.path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(path, index=False, float_format="%.10g")
        return self.ws.show(relpath)

    def write_text(self, relpath: str, text: str) -> str:
        path = self.ws.path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return self.ws.show(relpath)


def run_section(argv: list[str], *, section: str, description: str,
                produce: Callable[[SectionRun], list[str]],
                add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """`python -m analysis <section>`: the section's script and the directions it always shows
    come from its line in lib/sections.tsv."""
    script, always = SECTIONS[section].script, SECTIONS[section].always
    parser = argparse.ArgumentParser(prog=f"python -m analysis {section}",
                                     description=description)
    workspace.add_arguments(parser)
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    ws = Workspace.from_args(args)
    results_dir = ws.results / section
    if not results_dir.is_dir():
        print(f"{section}: no results in {results_dir}; run 'sudo bash {script}' first",
              file=sys.stderr)
        return 2
    # --profile pts: the section ran SNIA PTS's tests, not its own cases (lib/pts.bash)
    from analysis.sections import pts_page

    if pts_page.is_pts(results_dir):
        return pts_page.draw(ws, section)
    manifest = read_manifest(results_dir)
    cases = read_section(results_dir)
    report_left_out(cases, section)
    table = frame_of_cases(cases, always, read_ceilings(results_dir))
    if table.empty and not any(c.left_out for c in cases):
        print(f"{section}: {results_dir} holds no finished repetition; run {script}",
              file=sys.stderr)
        return 2
    missing = missing_points(cases, manifest)
    rerun = rerun_advice(script, ws)
    for line in completeness(cases, missing, short_points(cases, manifest), rerun):
        print(f"{section}: {line}", file=sys.stderr)
    if table.empty:
        return 1
    story = state_part.story(ws.results, results_dir, manifest)
    fields = md.setup_fields(manifest, md.device_model(ws.results, results_dir),
                             state_part.clause(story))
    line = md.setup_text(fields)
    setup = line + left_out_note(cases, missing, rerun) + remeasured_note(cases, manifest)
    run = SectionRun(ws, results_dir, table, setup, args, cases=cases,
                     facts=Facts(setup=fields, setup_line=line))
    run.facts.state = state_part.clause(story)
    written = produce(run)
    state_blocks, state_figures = state_part.blocks(story, run, f"tables/{section}_steady.csv",
                                                    f"figs/{section}_steady.png")
    if state_blocks:
        path = ws.path(snippet_path(section))
        path.write_text(path.read_text() + drive_state_part(state_blocks, state_figures, ws.link))
    regimes = frame_of_regimes(cases, drive_written_GiB(results_dir),
                               since_state(ws.results, results_dir.name, story.prepared_end_s))
    if not regimes.empty:
        written.append(run.write_table(f"tables/{section}_regimes.csv", regimes))
        path = ws.path(snippet_path(section))
        path.write_text(path.read_text() + regimes_part(regimes))
    seconds_written, seconds_text = seconds_part.produce(run, section)
    if seconds_text:
        written += seconds_written
        path = ws.path(snippet_path(section))
        path.write_text(path.read_text() + seconds_text)
    anomalies = [a for a in (unstable_anomaly(table), host_anomaly(table)) if a]
    if state_part.anomaly_text(story):
        anomalies.append(Anomaly("steady_state", state_part.anomaly_text(story)))
    run.facts.anomalies += anomalies + facts_file.health_anomalies(results_dir)
    run.facts.anomalies += left_out_anomalies(cases, missing, rerun)
    short = short_points(cases, manifest)
    if short and not missing:
        run.facts.anomaly("short", f"fewer good repetitions than planned: {', '.join(short)}.")
    run.facts.repeated = repeated_lines(ws.path(snippet_path(section)).read_text(),
                                        run.facts.anomalies)
    facts_path = f"tables/{section}_facts.json"
    facts_file.write(ws.path(facts_path), section, run.facts)
    written.append(ws.show(facts_path))
    print(f"\nwrote {', '.join(written)}")
    return 1 if missing or any(math.isnan(r.iops_mean) and not r.regime_split
                               for r in table.itertuples()) else 0


# --- repetitions left out, points left with none ------------------------------------------------
def missing_points(cases: list[Case], manifest: dict) -> list[str]:
    """The cases of the manifest with no good repetition: all left out, or never run."""
    kept = {c.name for c in cases if c.reps}
    names = (manifest.get("cases") or "").split() + [c.name for c in cases]
    return [n for n in dict.fromkeys(names) if n not in kept]


def rerun_advice(script: str, ws: Workspace) -> str:
    """How to run again only what is missing: the run loop resumes, and moves a file that is not
    a good repetition aside (rep<k>.rejected.json) before running it again."""
    tree = f" --results {ws.results}" if ws.name else ""
    return (f"rerun the section's command with the same settings (sudo bash {script}{tree} ...): "
            "it runs only what is missing, after moving each left-out file aside as "
            "rep<k>.rejected.json")


def remeasured_note(cases: list[Case], manifest: dict) -> str:
    """' · re-measured until stable (±5%, at most 6): randwrite-4k (5 repetitions)': the points
    --until-stable gave more repetitions than planned (lib/loop.bash until_stable)."""
    pct = manifest.get("until_stable")
    more = [f"{c.name} ({len(c.reps)} repetitions)" for c in cases
            if (planned := planned_repeats(manifest, c.name)) and len(c.reps) > planned]
    if not pct:
        return ""
    limit = f"±{pct}%, at most {manifest.get('max_repeat', '?')}"
    return (f" · re-measured until stable ({limit}): {', '.join(more)}" if more else
            f" · until stable ({limit}): no point needed more repetitions")


def short_points(cases: list[Case], manifest: dict) -> list[str]:
    """'randwrite-4k (1 of 2)': points that kept fewer good repetitions than the run plans."""
    out = []
    for case in cases:
        planned = planned_repeats(manifest, case.name)
        if case.reps and planned and len(case.reps) < planned:
            out.append(f"{case.name} ({len(case.reps)} of {planned})")
    return out


def completeness(cases: list[Case], missing: list[str], short: list[str],
                 rerun: str) -> list[str]:
    """What stderr says after the files left out were named: how complete the section is."""
    left = sum(len(c.left_out) for c in cases)
    if missing:
        return [(f"{len(missing)} point(s) have no good repetition: {', '.join(missing)}; "
                 f"{rerun}.")]
    if left:
        return [(f"{left} repetition file(s) left out (named above); every point keeps at "
                 f"least one good repetition (the table's n says how many); {rerun}.")]
    if short:
        return [(f"{len(short)} point(s) have fewer good repetitions than planned: "
                 f"{', '.join(short)}; {rerun}.")]
    return []


def left_out_note(cases: list[Case], missing: list[str], rerun: str) -> str:
    """A paragraph under the snippet's setup line: nothing left out goes unsaid in a report."""
    items = [f"`{c.name}/{bad.path.name}` ({bad.reason})" for c in cases for bad in c.left_out]
    parts = []
    if items:
        parts.append(f"**Left out:** {len(items)} repetition file(s) that are not good "
                     f"repetitions of their case: {'; '.join(items)}.")
    if missing:
        parts.append(f"**Missing:** no good repetition of {', '.join(missing)}.")
    return ("\n\n" + " ".join(parts) + f" To complete it, {rerun}.") if parts else ""


def left_out_anomalies(cases: list[Case], missing: list[str], rerun: str) -> list[Anomaly]:
    out = [Anomaly("left_out", f"{c.name}/{bad.path.name} was left out: {bad.reason}.")
           for c in cases for bad in c.left_out]
    if missing:
        out.append(Anomaly("missing", f"no good repetition of {', '.join(missing)}; {rerun}."))
    return out


def drive_fact(results_dir: Path, key: str):
    """A fact §1 recorded of this section's target (the tree's env.json, `target.<key>`, e.g.
    write_cache), so that a section explains nothing §1 contradicts; None where §1 did not run
    or described another target."""
    try:
        target = json.loads((Path(results_dir).parent / "env.json").read_text()).get("target")
    except (OSError, ValueError, AttributeError):
        return None
    measured = read_manifest(results_dir).get("target")
    if not isinstance(target, dict) or (measured and measured not in (
            target.get("path"), target.get("resolved"), target.get("device"))):
        return None
    return target.get(key)


def stored_settings(results_dir: Path, given: dict, defaults: dict) -> dict:
    """Analysis thresholds: those given now win, then those stored with the results by the last
    analysis (so `make analysis` redraws with the thresholds the user chose), then the defaults.
    The outcome is stored again in results/<section>/analysis.json."""
    path = results_dir / "analysis.json"
    stored = json.loads(path.read_text()) if path.exists() else {}
    settings = {key: given.get(key) if given.get(key) is not None else stored.get(key, default)
                for key, default in defaults.items()}
    if settings != stored:
        path.write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n")
    return settings


def interval(rows: pd.DataFrame, col: str):
    """A figure's error bars for a column, the interval the table gives it: a mean's 95%
    half-width (`iops_mean` -> `iops_ci95`), or a percentile's own interval as distances below
    and above it (`lat_p99_us` -> `_lo`, `_hi`); None where the table gives none (p50)."""
    half = col.removesuffix("_mean") + "_ci95"
    if half in rows:
        return list(rows[half])
    if col + "_lo" in rows:
        return (list(rows[col] - rows[col + "_lo"]), list(rows[col + "_hi"] - rows[col]))
    return None


def interval_note(df: pd.DataFrame, percentiles: bool = True) -> str:
    """What a figure's error bars are, for its note; the percentiles' own intervals only on a
    figure that draws percentiles."""
    return (f"error bars: 95% interval of the mean (t over {reps_label(df)} repetitions)"
            + ("; p95–p99.9: their own 95% interval" if percentiles else ""))


def reps_label(df: pd.DataFrame) -> str:
    """'3' or '2–3': the repetitions behind the table's points."""
    low, high = int(df.n.min()), int(df.n.max())
    return str(low) if low == high else f"{low}–{high}"


# The legends a snippet's tables carry, each built from one template: the notes below fill them
# in, and without_legends matches the same templates whatever their counts, so the assembled
# report leaves them to its methodology, which states them once (analysis.report.build.METHOD).
STANDARD_LEGEND = ("{spread}; percentiles of the pooled repetitions from fio's json+ histogram "
                   "bins; latency is total (submission + completion); MB/s = 10^6 B/s. ⚠ marks "
                   "a mean whose 95% interval is wider than ±{limit}%.{tail}")
SPREAD_LEGEND = ("Mean ± half-width of its 95% confidence interval (t over {reps} repetitions; "
                 "the sample std is in the CSV)")
ONE_REPETITION_LEGEND = "One repetition, so no interval"
TAIL_LEGEND = (" † marks a percentile with fewer than {count} I/Os above it: too few to quote "
               "(run longer).")
MAX_LEGEND = "max: the slowest I/O of all the repetitions (one I/O: no interval)."
P99_LEGEND = "p99 [low–high] is its 95% interval."
NINES_LEGEND = (
    "Nines: each percentile of the pooled repetitions with its 95% interval in brackets (the "
    "spread of the repetitions' own percentiles, t over the repetitions, and the order "
    "statistics of the pooled I/Os; ≥ where too few I/Os lie above it for even the slowest to "
    "bound it from above) and, in parentheses, the number of I/Os above it. A nine is shown only "
    "when at least one I/O lies above it, and as a column only when some point can quote it; "
    "† marks fewer than {count}: too few to quote, run longer for it.")
BS_MARKS_LEGEND = ("● the smallest block size at 90% of the pattern's peak MB/s; ▲ still "
                   "rising: the peak and ● lie beyond the sweep.")
QD_MARKS_LEGEND = ("◆ the knee (first step gaining < {gain}% IOPS while mean latency grows > "
                   "{latency}%); ● the smallest depth reaching 90% of peak; (search): a point "
                   "the peak search measured on the sweep's engine and jobs.")
NINES_POINTER = "Every nine with its interval: `{table}`."
REGIMES_LEGEND = ("Repetitions that wrote at separate levels have no mean above (one over two "
                  "states describes neither); each level here:")
DECLARED_LEGEND = "The regime each write case's ramp declared:"


def _matching(template: str, **fields: str) -> str:
    """A legend template as a regex: its text literally, each {field} by the pattern given."""
    parts = re.split(r"\{(\w+)\}", template)
    return "".join(re.escape(part) if i % 2 == 0 else fields[part]
                   for i, part in enumerate(parts))


def standard_note(df: pd.DataFrame) -> str:
    """What the table's numbers are, under every section table."""
    reps = reps_label(df)
    spread = (ONE_REPETITION_LEGEND if reps == "1" else SPREAD_LEGEND.format(reps=reps))
    tail = TAIL_LEGEND.format(count=MIN_TAIL_IOS) if has_thin_tail(df) else ""
    return STANDARD_LEGEND.format(spread=spread, limit=f"{UNSTABLE_HALF_WIDTH * 100:.0f}",
                                  tail=tail)


# Every legend, whatever its counts, and the space after it
_LEGENDS = re.compile("(?:" + "|".join([
    _matching(STANDARD_LEGEND, limit=r"\d+",
              spread="(?:" + _matching(SPREAD_LEGEND, reps=r"[\d–]+") + "|"
              + re.escape(ONE_REPETITION_LEGEND) + ")",
              tail="(?:" + _matching(TAIL_LEGEND, count=r"\d+") + ")?"),
    _matching(NINES_LEGEND, count=r"\d+"),
    re.escape(MAX_LEGEND), re.escape(P99_LEGEND), re.escape(REGIMES_LEGEND),
    re.escape(DECLARED_LEGEND), re.escape(BS_MARKS_LEGEND),
    _matching(NINES_POINTER, table=r"tables/\w+\.csv"),
    # the knee's default thresholds only: a run's own stay under its table, the methodology
    # stating the defaults
    _matching(QD_MARKS_LEGEND, gain=f"{KNEE_GAIN_PCT:g}", latency=f"{KNEE_LATENCY_PCT:g}")])
    + ") ?")


def without_legends(snippet: str) -> str:
    r"""A snippet without its tables' legends; a line left empty by them goes too.

    >>> without_legends("| t |\n\n" + MAX_LEGEND + "\n\n### Findings")
    '| t |\n\n### Findings'
    """
    lines = [_LEGENDS.sub("", line).rstrip() if _LEGENDS.search(line) else line
             for line in snippet.split("\n")]
    out = []
    for before, line in zip(["", *lines], lines):
        if line == "" and before == "" and out:  # two blank lines where the legend stood
            continue
        out.append(line)
    return "\n".join(out)


def has_thin_tail(df: pd.DataFrame) -> bool:
    cols = [c for c in df.columns if c.endswith("_tail_ios")]
    return bool(cols) and bool((df[cols] < MIN_TAIL_IOS).any(axis=None))


# --- comparisons in findings -------------------------------------------------------------------
# a table column -> the column of its spread over the repetitions; the tail percentiles are
# tested on their logs, from the spread of the repetitions' own log percentiles (`_lsd`)
SPREADS = {"iops_mean": "iops_std", "bw_MBps_mean": "bw_MBps_std", "lat_us_mean": "lat_us_std"}
LOG_SPREADS = {c: c + "_lsd" for c in ("lat_p95_us", "lat_p99_us", "lat_p99_9_us")}


def row_change(row, reference, col: str) -> Change:
    """A table row's metric against another row's, two points of one run, by the one test for
    an effect (analysis.core.effects: Welch over the repetitions; on the log for a tail
    percentile). Untested (p NaN) where a spread or a count is missing."""
    value, ref = float(getattr(row, col)), float(getattr(reference, col))
    if col in LOG_SPREADS:
        sd = col + "_lsd"
        return log_change(value, float(getattr(row, sd, math.nan)), row.n, ref,
                          float(getattr(reference, sd, math.nan)), reference.n)
    return change(value, float(getattr(row, SPREADS[col])), ref,
                  float(getattr(reference, SPREADS[col])), row.n, reference.n)


def interval_text(low: float, high: float) -> str:
    """'103–114', or '≥ 103' for a one-sided interval (too few I/Os above to bound it)."""
    return f"≥ {md.num(low)}" if math.isnan(high) else f"{md.num(low)}–{md.num(high)}"


def tail_range_cell(row, col: str) -> str:
    """A pooled percentile with its 95% interval: '108 [103–114]', '350 [≥ 301]' where it is
    one-sided (brackets, as every interval of the report; parentheses hold counts); † as in
    tail_cell."""
    low, high = getattr(row, col + "_lo", math.nan), getattr(row, col + "_hi", math.nan)
    cell = tail_cell(row, col)
    if math.isnan(low):
        return cell
    value, _, mark = cell.partition(" ")
    return f"{value} [{interval_text(low, high)}]" + (f" {mark}" if mark else "")


# The latency a results table shows: the mean with its interval, p99 with its interval, the max.
# p50, p95, p99.9 and the spreads are in each section's CSV (the methodology says so once): the
# page is read in one sitting, the CSV is searched.
LATENCY_HEADER = ["mean lat (µs)", "p99 (µs)", "max (µs)"]


def latency_cells(row) -> list[str]:
    """A results row's latency cells, under LATENCY_HEADER."""
    return [md.pm(row.lat_us_mean, row.lat_us_ci95), tail_range_cell(row, "lat_p99_us"),
            md.num(row.lat_max_us)]


NINES_COLUMNS = ["point", "case", "direction", "pct", "value_us", "low_us", "high_us",
                 "tail_ios", "total_ios", "quotable"]


def nines_frame(run: SectionRun, rows: pd.DataFrame, label: Callable[[object], str]) -> pd.DataFrame:
    """The "nines" of some summary rows (tables/<section>_nines.csv): for each row and each of
    p99 … p99.999 with at least one I/O above it, the pooled percentile, its 95% interval, the
    I/Os above it and whether that is enough to quote it (analysis.core.stats.tail_intervals)."""
    out = []
    for r in one_state(rows).itertuples():
        case = run.case(r.case)
        for p, t in (nines(case, r.direction) if case else {}).items():
            out.append([label(r), r.case, r.direction, p, t.value / 1000, t.low / 1000,
                        t.high / 1000, t.tail, t.total, t.quotable])
    return pd.DataFrame(out, columns=NINES_COLUMNS)


def nines_table(frame: pd.DataFrame) -> str:
    """nines_frame as markdown: a row per point, each nine as value [95% interval] (I/Os
    above it); "–" where no I/O lies above it, † where fewer than MIN_TAIL_IOS do; a nine with
    no quotable point anywhere is in the CSV only."""
    rows = []
    # a nine no point can quote (every one †) is left to the CSV: the table shows what may be said
    shown = [p for p in NINES if frame[frame.pct == p].quotable.astype(bool).any()] or NINES[:1]
    for point, group in frame.groupby("point", sort=False):
        by_pct = {t.pct: t for t in group.itertuples()}
        cells = ["–" if (t := by_pct.get(p)) is None else
                 (f"{md.num(t.value_us)} [{interval_text(t.low_us, t.high_us)}] "
                  f"({t.tail_ios:,})" + ("" if t.quotable else f" {claims.THIN}"))
                 for p in shown]
        rows.append([point, f"{int(group.total_ios.iloc[0]):,}", *cells])
    return md.table(["point", "I/Os", *[f"p{p:g} (µs)" for p in shown]], rows)


def nines_note() -> str:
    return NINES_LEGEND.format(count=MIN_TAIL_IOS)


def snippet(heading: str, setup: str, blocks: list[str], figures: list[tuple[str, str]],
            findings: list[str], link: Callable[[str], str] = md.link_from_out) -> str:
    """A section's out/section_<n>_<name>.md: heading, setup line, its blocks (table, notes),
    the figures as (alt text, path such as figs/x.png) linked from out/ by `link` (a workspace's
    `link` for a named results tree), then the findings. run_section adds the drive's state
    after them (drive_state_part)."""
    parts = [heading, "", setup, ""]
    for block in blocks:
        parts += [block, ""]
    for alt, path in figures:
        parts += [md.image(alt, link(path)), ""]
    parts += ["### Findings", ""] + [f"- {f}" for f in findings]
    return "\n".join(parts) + "\n"


def drive_state_part(blocks: list[str], figures: list[tuple[str, str]],
                     link: Callable[[str], str]) -> str:
    """The snippet's last part after a sustained state's rounds: their line and figure."""
    parts = ["", "### Drive state", ""]
    for block in blocks:
        parts += [block, ""]
    for alt, path in figures:
        parts += [md.image(alt, link(path)), ""]
    return "\n".join(parts)


def regimes_part(regimes: pd.DataFrame) -> str:
    """The snippet's part on what each write case measured: the cases whose repetitions wrote
    at separate levels, or held a cliff, as a table of each regime over its own repetitions
    (analysis.rules.cases.frame_of_regimes: their rows in the section's table stay empty, one
    mean over two states describing neither); a block that ran with its ramp and held one
    level, as a line naming the regime its ramp declares (its numbers are the section table's)."""
    def label(r) -> str:
        return md.shape(r.rw, r.bs, r.read_pct, r.iodepth, r.numjobs)
    split = regimes.regime_split.astype(bool)
    parts = []
    if split.any():
        levels = regimes[split]
        mixed = bool(((levels.read_pct > 0) & (levels.read_pct < 100)).any())
        # a case and its regime are named on their first row only; a mix's directions follow
        rows = [[label(r), r.regime,
                 *([r.direction if r.direction == "total" else f"{r.direction}s"] if mixed else []),
                 md.pm(r.iops_mean, r.iops_ci95), md.pm(r.bw_MBps_mean, r.bw_MBps_ci95),
                 *latency_cells(r)] for r in levels.itertuples()]
        header = ["pattern", "repetitions in the regime", *(["direction"] if mixed else []),
                  "IOPS", "MB/s", *LATENCY_HEADER]
        align = ["l", "r", *(["l"] if mixed else []), "r", "r"] + ["r"] * len(LATENCY_HEADER)
        parts += [REGIMES_LEGEND, "",
                  md.table(header, rows, align, grouped=2), ""]
    declared = regimes[~split].drop_duplicates("case")
    if not declared.empty:
        parts += [DECLARED_LEGEND, ""]
        parts += [f"- {label(r)}: {r.regime}"
                  for r in declared.itertuples()] + [""]
    return "\n### Write regimes\n\n" + "\n".join(parts)


def widest(row) -> str:
    """'latency ±7.2%': the mean whose 95% interval is widest relative to it, which marked the
    point."""
    rel = {name: half / mean if mean else math.nan for name, half, mean in (
        ("IOPS", row.iops_ci95, row.iops_mean), ("MB/s", row.bw_MBps_ci95, row.bw_MBps_mean),
        ("latency", row.lat_us_ci95, row.lat_us_mean))}
    name = max(rel, key=lambda k: -1 if math.isnan(rel[k]) else rel[k])
    return f"{name} ±{rel[name] * 100:.1f}%"


def is_drifting(row) -> bool:
    return bool(getattr(row, "drifting", False))


def flag(row) -> str:
    """A table row's mark: ' ⚠' where the mean is not known to ±5%, ' drifting +2.1%/round'
    where its rounds show a trend (analysis.rules.cases.mark_drifting), ' ⌂' where the host
    limited it (claims.host_mark), and ' (write regimes below)' where its repetitions measured
    more than one state (no mean)."""
    if getattr(row, "regime_split", False) is True:
        return " (write regimes below)"
    mark = " ⚠" if row.unstable or is_drifting(row) else ""
    return (mark + (f" drifting {row.drift_pct:+.1f}%/round" if is_drifting(row) else "")
            + claims.host_mark(row))


# How the Stability finding that counts the ⚠ points begins (repeated_lines finds it)
STABILITY_LEAD = "**Stability:** "


def stability_finding(df: pd.DataFrame, label: Callable[[object], str]) -> str:
    """The stability line every snippet ends with: which points' means are not known to ±5%,
    and which drifted over their rounds."""
    unstable = df[df.unstable.astype(bool)]
    drifting = df[[is_drifting(r) for r in df.itertuples()]] if "drifting" in df else df[:0]
    limit = f"±{UNSTABLE_HALF_WIDTH * 100:.0f}%"
    if df.n.max() < 2:
        return ("**Stability:** one repetition per point, so no interval to judge; run with "
                "--repeat 3 or more before quoting these numbers.")
    drift = ("" if drifting.empty else
             " **Drifting** (a trend over the rounds, Benjamini–Hochberg adjusted p < 0.05 over "
             "the table's points): " + ", ".join(
                 f"{label(r)} (IOPS {r.drift_pct:+.1f}% per round over {int(r.n)} rounds)"
                 for r in drifting.itertuples())
             + ": its level moved while it was measured, so its mean stands for no one state "
               "of the drive.")
    if unstable.empty:
        return (f"**Stability:** every point's mean is known to {limit} or better (95% "
                f"confidence, {reps_label(df)} repetitions).{drift}")
    # the unstable points carry ⚠ in the table and are counted in the Anomalies: named here
    # only when some are not in the table's own rows (a mix's total)
    return (f"{STABILITY_LEAD}{len(unstable)} of {len(df)} points ⚠ (widest: "
            f"{widest(unstable.loc[unstable.half_width_pct.idxmax()])})." + drift)


# The finding lines an anomaly says again, by the anomaly's kind (a drift is said only there)
REPEATED_BY = {"unstable": f"- {STABILITY_LEAD}", "host_bound": f"- {HOST_BOUND_LEAD}"}


def repeated_lines(snippet: str, anomalies: list[Anomaly]) -> list[str]:
    r"""The snippet's Stability and Host-bound lines where the section has the anomaly that
    says the same (the ⚠ count, the host-bound count and rules): the report states them once,
    in its Anomalies table.

    >>> snippet = "- **Stability:** 3 of 4 points ⚠ (widest: IOPS ±29%).\n- **Host:** none."
    >>> repeated_lines(snippet, [Anomaly("unstable", "3 of 4 points ⚠ (widest: IOPS ±29%)")])
    ['- **Stability:** 3 of 4 points ⚠ (widest: IOPS ±29%).']
    """
    starts = [REPEATED_BY[a.kind] for a in anomalies if a.kind in REPEATED_BY]
    return [line for line in snippet.splitlines()
            if line.startswith(tuple(starts)) and "**Drifting**" not in line]


def unstable_anomaly(table: pd.DataFrame) -> Anomaly | None:
    """For the report's Anomalies table: how many points' means are not known to ±5% (the ⚠
    mark), and the widest interval among them."""
    rows = table[table.unstable.astype(bool)]
    if rows.empty:
        return None
    worst = rows.loc[rows.half_width_pct.idxmax()]
    return Anomaly("unstable", f"{len(rows)} of {len(table)} points ⚠ (widest: {widest(worst)})")


def clat_note(df: pd.DataFrame) -> list[str]:
    if (df.pct_source == "clat").any():
        return [("Percentiles are of completion latency only (clat): this fio output has no "
                 "total-latency percentiles.")]
    return []
