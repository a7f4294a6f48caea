"""The run history: every finished run recorded, each drive's headlines over its runs.

  python -m analysis history add TREE...   record results trees (make report records its own
                                           run); recording a tree again replaces it, one run
  python -m analysis history [--device SERIAL] [--since DATE]
                                           out/history.md (and .html), figs/history_<headline>.png:
                                           per drive, each headline over its runs, step changes
                                           found and drifted drives listed first

Where the history is: --history PATH, else $HISTORY, else results/history.sqlite (for a results
tree outside results/, TREE/history.sqlite). HISTORY=postgresql://user@host/db keeps a whole
lab's history in one PostgreSQL server (see docs/history.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

from analysis.core import workspace
from analysis.core.workspace import Workspace
from analysis.history.db import (
    HistoryError,
    Store,
    is_postgres,
    location,
    open_store,
    shown,
)
from analysis.history.record import identity, read_tree, sections_in
from analysis.history.trends import build_series, device_key
from analysis.history.view import devices, draw_all, mermaid, render, text_lines
from analysis.render import html
from analysis.rules.cases import read_manifest

HISTORY_MD = "out/history.md"
HISTORY_HTML = "out/history.html"
# For a CI job's page (GitHub's job summary draws Mermaid charts, not local images): the step
# changes and the devices of out/history.md, each trend as a chart.
HISTORY_SUMMARY = "out/history_summary.md"


def add_history_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", metavar="PATH|URI",
                        help="the history: a SQLite file or postgresql://... (default: "
                             "$HISTORY, else results/history.sqlite)")


# --- history add --------------------------------------------------------------------------------
def add(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis history add",
                                     description="Record results trees into the history; a "
                                     "tree recorded again replaces its run (one run per tree).")
    parser.add_argument("trees", nargs="+", type=Path, metavar="TREE",
                        help="results trees (results/, results/drive-a, a fleet's "
                             "results/hosts/<host>, ...)")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="toolkit folder whose tables/ hold the trees' analyses "
                             "(default: current folder)")
    add_history_argument(parser)
    args = parser.parse_args(argv)
    bad = [t for t in args.trees if not t.is_dir() or not (sections_in(t) or
                                                              (t / "env.json").is_file())]
    if bad:
        print("history add: not a results tree (no env.json, no section results): "
              + ", ".join(map(str, bad)) + "; give folders that make report or a section "
              "script wrote", file=sys.stderr)
        return 2
    spec = location(args.history, Workspace.of(args.root, args.trees[0]))
    with open_store(spec) as store:
        for tree in args.trees:
            record = read_tree(Workspace.of(args.root, tree))
            new = store.record(record.run, record.rows, record.headlines, record.anomalies,
                                 record.targets)
            run = record.run
            print(f"history: {'recorded' if new else 'replaced'} run {run['run_id']} of "
                  f"{run['run_date'][:10]} ({device_key(run)}, "
                  f"{', '.join(record.sections) or 'no sections'}) from {tree} in {shown(spec)}")
            for note in record.notes:
                print(f"history: note: {note}", file=sys.stderr)
    return 0


# --- the view -----------------------------------------------------------------------------------
def load(store: Store, device: str | None = None, since: str | None = None):
    """The devices of the runs chosen, their series and steps."""
    runs = store.runs(device, since)
    series = build_series(runs, store.of_runs("headlines", [r["run_id"] for r in runs]))
    return devices(runs, series)


def scope_line(spec: str, devs, device: str | None, since: str | None) -> str:
    runs = sum(len(d.runs) for d in devs)
    chosen = " ".join(filter(None, [f"device {device}" if device else "",
                                    f"since {since}" if since else ""]))
    return (f"{runs} run(s) of {len(devs)} device(s) from the history at `{shown(spec)}`"
            + (f" ({chosen})" if chosen else "") + ". Each point is one run's headline, its "
            "error bar the 95% interval over that run's repetitions (± std for a run recorded "
            "before the intervals).")


def view(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    workspace.add_arguments(parser)
    add_history_argument(parser)
    parser.add_argument("--device", metavar="SERIAL", help="only this drive (its serial)")
    parser.add_argument("--since", metavar="YYYY-MM-DD", help="only runs from this date on")
    args = parser.parse_args(argv)
    if args.since:
        try:
            args.since = date.fromisoformat(args.since).isoformat()
        except ValueError:
            parser.error(f"--since {args.since!r}: give a date as YYYY-MM-DD")
    ws = Workspace.from_args(args)
    spec = location(args.history, ws)
    with open_store(spec, create=is_postgres(spec)) as store:
        devs = load(store, args.device, args.since)
    if not devs:
        print(f"history: no runs in {shown(spec)}"
              + (" for these filters" if args.device or args.since else
                 "; record some with make report or python -m analysis history add TREE"),
              file=sys.stderr)
        return 2
    figures = draw_all(ws, devs)
    text = render(ws, devs, figures, heading="Run history",
                  scope=scope_line(spec, devs, args.device, args.since))
    out = ws.path(HISTORY_MD)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    html.write_html(out, ws.path(HISTORY_HTML))
    summary = text.split("\n### Devices")[0].split("\n## Devices")[0]
    ws.path(HISTORY_SUMMARY).write_text(summary + "\n" + mermaid(devs))
    drifted = [d.name for d in devs if d.drifted]
    print(f"history: {sum(len(d.runs) for d in devs)} run(s) of {len(devs)} device(s); "
          + (f"drifted: {', '.join(drifted)}" if drifted else "no step change"))
    print("\n".join(text_lines(devs)))
    print(f"wrote {ws.show(HISTORY_MD)}, {ws.show(HISTORY_HTML)}, {ws.show(HISTORY_SUMMARY)}, "
          + ", ".join(ws.show(f) for f in figures.values()))
    return 0


# --- the report's section -----------------------------------------------------------------------
def report_section(ws: Workspace) -> list[str]:
    """'## Run history of this drive' for out/report.md: this run's drive over the history's
    runs, when the history holds this run and another of the drive. [] otherwise."""
    spec = location(None, ws)
    if not is_postgres(spec) and not Path(spec).is_file():
        return []
    try:
        env_path = ws.results / "env.json"
        env = json.loads(env_path.read_text()) if env_path.is_file() else {}
        run_id, _ = identity(ws.results, env, {s: read_manifest(ws.results / s)
                                                for s in sections_in(ws.results)})
        with open_store(spec) as store:
            this = [r for r in store.runs() if r["run_id"] == run_id]
            if not this:
                return []
            key = device_key(this[0])
            devs = [d for d in load(store) if d.key == key]
    except (HistoryError, ValueError) as e:
        return ["## Run history of this drive", "", f"The history could not be read: {e}.", ""]
    if not devs or len(devs[0].runs) < 2:
        return []
    figures = draw_all(ws, devs, prefix="report_history")
    return [render(ws, devs, figures, heading="Run history of this drive", level=2,
                   scope=scope_line(spec, devs, None, None)), ""]


def main(argv: list[str]) -> int:
    try:
        if argv and argv[0] == "add":
            return add(argv[1:])
        return view(argv)
    except HistoryError as e:
        print(f"history: {e}", file=sys.stderr)
        return 1
