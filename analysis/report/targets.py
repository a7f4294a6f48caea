"""`python -m analysis targets RESULTS FILE`: a lab's targets judged on a finished results tree,
without touching a device, for the report and the CI server.

    python -m analysis targets results examples/targets.yaml            # every section's
    python -m analysis targets results my.yaml --sections qd1            # what a section script does
    python -m analysis targets results my.yaml --unresolved pass         # not resolved: no failure
    python -m analysis targets results --clear                          # no targets this run

Writes, into the tree's workspace (analysis.core.workspace):

- `out/targets.md`, the Targets table the report puts at its top (analysis.report.build);
- `out/junit.xml`, one testcase per target (JUnit XML, which Jenkins, GitLab and GitHub show):
  a failure with the measured value and its interval for a failed target, an error for one not
  run or host-bound, a skip for one unmapped or (with --unresolved pass) not resolved;
- `tables/targets.json` and `tables/targets.csv`, the verdicts for machines: the run history
  records them (analysis.history.record).

Exit codes: 0 every target passed (or was listed as unmapped from a suite's file, or not
resolved with --unresolved pass); 4 a target failed, was not run, was host-bound, was not
resolved (unless --unresolved pass), or is one of the file's own that maps onto nothing; 2 a
targets file that cannot be read. The rules are analysis.rules.targets'; the formats
analysis.rules.target_files'. A section whose tables are missing or older than its results is
analysed first, as the history does.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from analysis.core.registry import read_sections
from analysis.core.workspace import Workspace
from analysis.history.record import SECTION_TABLES, analyse_section, sections_in, stale
from analysis.render import markdown as md
from analysis.rules import target_files
from analysis.rules import targets as rules
from analysis.rules.cases import read_manifest

EXIT_TARGET_FAILED = 4  # lib/common.bash's EXIT_TARGET, docs/architecture.md
TARGETS_MD = "out/targets.md"
JUNIT_XML = "out/junit.xml"
TARGETS_JSON = "tables/targets.json"
TARGETS_CSV = "tables/targets.csv"
OUTPUTS = (TARGETS_MD, JUNIT_XML, TARGETS_JSON, TARGETS_CSV)


# --------------------------------------------------------------------------- judging a tree

def section_table(ws: Workspace, section: str) -> pd.DataFrame | None:
    """Every row of a section that stands for a case (its tables with a `case` column, §6's
    levels among them), analysed first when its tables are older than its results; None when
    the section has no results in the tree."""
    results_dir = ws.results / section
    if section not in sections_in(ws.results):
        return None
    facts = ws.path(f"tables/{section}_facts.json")
    if stale(facts, results_dir):
        analyse_section(ws, section)
    frames = []
    for module, constant in SECTION_TABLES.get(section, []):
        path = ws.path(getattr(importlib.import_module(module), constant))
        if path.is_file():
            frame = pd.read_csv(path)
            if "case" in frame.columns:
                frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


def capacity_of(ws: Workspace, section: str) -> float | None:
    """The target's capacity in bytes, as the section's manifest recorded it."""
    value = read_manifest(ws.results / section).get("target_bytes") if section else None
    try:
        return float(value) if value else None
    except (TypeError, ValueError):
        return None


def judge_tree(ws: Workspace, targets: list[rules.Target]) -> list[rules.Verdict]:
    tables: dict[str, pd.DataFrame | None] = {}
    verdicts = []
    for t in targets:
        if t.section and t.section not in tables and not t.unmapped:
            tables[t.section] = section_table(ws, t.section)
        verdicts.append(rules.judge(t, tables.get(t.section), capacity_of(ws, t.section)))
    return verdicts


# --------------------------------------------------------------------------- what it writes

def records(verdicts: list[rules.Verdict], unresolved_fails: bool) -> list[dict]:
    """One plain record per verdict: tables/targets.json's and the history's rows."""
    def plain(x):
        return None if isinstance(x, float) and math.isnan(x) else x
    return [{"name": v.target.name, "section": v.target.section, "case": v.case,
             "direction": v.direction, "metric": v.target.metric, "bound": v.target.bound,
             "per_tb": v.target.per_tb, "threshold": plain(v.threshold), "value": plain(v.value),
             "low": plain(v.low), "high": plain(v.high), "verdict": v.verdict,
             "failing": v.failing(unresolved_fails), "detail": v.detail,
             "origin": v.target.origin} for v in verdicts]


def measured_text(r: dict) -> str:
    """'1,203 (1,180–1,226)', '≥ 612 (one-sided)', '—' when nothing was measured."""
    if r["value"] is None:
        return "—"
    if r["low"] is None:
        return f"{md.num(r['value'])} (no interval)"
    if r["high"] is None:
        return f"{md.num(r['value'])} (≥ {md.num(r['low'])}, one-sided)"
    if r["low"] == r["high"] == r["value"]:
        return f"{md.num(r['value'])} (no interval)"
    return f"{md.num(r['value'])} ({md.num(r['low'])}–{md.num(r['high'])})"


def threshold_text(r: dict) -> str:
    if r["threshold"] is None:
        return "—"
    sign = "≥" if r["bound"] == "min" else "≤"
    return f"{r['metric']} {sign} {md.num(r['threshold'])}" + (" (per TB)" if r["per_tb"] else "")


def markdown(recs: list[dict], source: str, unresolved_fails: bool) -> str:
    """'## Targets': a line of counts, then one row per target."""
    counts = {v: sum(r["verdict"] == v for r in recs) for v in rules.VERDICTS}
    failing = sum(r["failing"] for r in recs)
    said = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    gate = (f"**{failing} of {len(recs)} fail the gate**" if failing else
            f"all {len(recs)} pass the gate")
    rows = [[r["name"], f"{r['case']} {r['direction']}".strip() or "—", threshold_text(r),
             measured_text(r), f"**{r['verdict']}**" if r["failing"] else r["verdict"],
             r["detail"]] for r in recs]
    unresolved = "fails" if unresolved_fails else "does not fail"
    intro = (f"Targets from `{source}`, each judged with the 95% interval of what it names "
             "(pass: the interval clears the target; fail: it lies wholly on the wrong side; "
             f"not resolved: it straddles it, which {unresolved} the gate): {said}; {gate}.")
    lines = ["## Targets", "", intro, ""]
    if rows:
        lines.append(md.table(["target", "case", "threshold", "measured (95% interval)",
                               "verdict", "why"], rows, ["l", "l", "r", "r", "l", "l"]))
    else:
        lines.append("The file holds no target.")
    return "\n".join(lines) + "\n"


def junit(recs: list[dict], source: str) -> JUnitXml:
    """One testcase per target, classname its section: a failure for a failed (or failing,
    not resolved) target, an error for one not run or host-bound, a skip for the rest that did
    not pass."""
    suite = TestSuite(f"targets ({source})")
    for r in recs:
        case = TestCase(r["name"], classname=f"ssd-toolkit.{r['section'] or 'unmapped'}")
        text = (f"{r['verdict']}: {threshold_text(r)}; measured {measured_text(r)}"
                f"{' on ' + r['case'] + ' ' + r['direction'] if r['case'] else ''}: {r['detail']}")
        if r["verdict"] in (rules.NOT_RUN, rules.HOST_BOUND):
            case.result = [Error(text, r["verdict"])]
        elif r["failing"]:
            case.result = [Failure(text, r["verdict"])]
        elif r["verdict"] != rules.PASS:
            case.result = [Skipped(text)]
        else:
            case.system_out = text
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    return xml


def write(ws: Workspace, recs: list[dict], source: str, unresolved_fails: bool) -> list[str]:
    for relpath in OUTPUTS:
        ws.path(relpath).parent.mkdir(parents=True, exist_ok=True)
    ws.path(TARGETS_MD).write_text(markdown(recs, source, unresolved_fails))
    junit(recs, source).write(str(ws.path(JUNIT_XML)), pretty=True)
    ws.path(TARGETS_JSON).write_text(json.dumps(
        {"file": source, "judged_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "unresolved_fails": unresolved_fails, "verdicts": recs}, indent=1) + "\n")
    pd.DataFrame(recs).to_csv(ws.path(TARGETS_CSV), index=False, float_format="%.10g")
    return [ws.show(p) for p in OUTPUTS]


def clear(ws: Workspace) -> None:
    """No targets this run: the last run's verdicts are not this run's, so they go."""
    for relpath in OUTPUTS:
        ws.path(relpath).unlink(missing_ok=True)


def report_section(ws: Workspace) -> list[str]:
    """The Targets table for the top of out/report.md ([] without targets)."""
    path = ws.path(TARGETS_MD)
    return [path.read_text().rstrip(), ""] if path.is_file() else []


def verdict_rows(ws: Workspace) -> list[dict]:
    """The verdicts of the last judgment of this tree ([] without one)."""
    path = ws.path(TARGETS_JSON)
    return json.loads(path.read_text())["verdicts"] if path.is_file() else []


# --------------------------------------------------------------------------- the command

def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis targets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="the results tree, e.g. results/")
    parser.add_argument("file", type=Path, nargs="?", help="the targets file (YAML, or a "
                        "suite's JSON); without it, --clear")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="toolkit folder for tables/ and out/ (default: current folder)")
    parser.add_argument("--sections", default="", help="judge only these sections' targets "
                        "(comma-separated ids): a section script's own")
    parser.add_argument("--unresolved", choices=("fail", "pass"), default="fail",
                        help="whether a target not resolved fails the gate (default fail)")
    parser.add_argument("--clear", action="store_true",
                        help="remove the last judgment's outputs (a run without targets)")
    args = parser.parse_args(argv)
    ws = Workspace.of(args.root, args.results)
    if args.clear or args.file is None:
        clear(ws)
        return 0
    try:
        targets = target_files.read(args.file)
    except target_files.TargetFileError as e:
        print(f"targets: {e}", file=sys.stderr)
        return 2
    if args.sections:
        wanted = set(args.sections.split(","))
        unknown = wanted - set(read_sections())
        if unknown:
            print(f"targets: --sections: unknown section(s) {', '.join(sorted(unknown))}",
                  file=sys.stderr)
            return 2
        targets = [t for t in targets if t.section in wanted]
    unresolved_fails = args.unresolved == "fail"
    recs = records(judge_tree(ws, targets), unresolved_fails)
    # the file as the reader knows it: from the toolkit folder where it lies inside it
    source = args.file.resolve()
    shown = str(source.relative_to(Path.cwd().resolve())) if source.is_relative_to(
        Path.cwd().resolve()) else str(args.file)
    written = write(ws, recs, shown, unresolved_fails)
    failing = [r for r in recs if r["failing"]]
    print(f"targets: {len(recs)} judged, {len(failing)} failing the gate: " + ", ".join(written))
    for r in failing:
        print(f"  {r['verdict']}: {r['name']}: measured {measured_text(r)}; {r['detail']}",
              file=sys.stderr)
    return EXIT_TARGET_FAILED if failing else 0
