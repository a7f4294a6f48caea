"""A section across a fleet's hosts: `python -m analysis hosts SECTION [--root R] [--results T]`
(a fleet run adds `--analyse HOST` for each host, whose own analysis comes first, in this process).

A fleet run (HOSTS= or --hosts) keeps each host's results in a tree of its own,
T/hosts/<host>/<section>/, which the section's own analysis reads like any tree (its tables,
figures and snippet go to tables/, figs/ and out/ under hosts/<host>). This module puts the hosts
side by side:

- tables/<section>_hosts.csv: the section's summary rows of every host, with a `host` column;
- figs/<section>_hosts.png: IOPS per case, one bar per host, with its 95% interval;
- the section's snippet of the tree T (out/section_<n>_<id>.md, which `make report` collects):
  per case the fastest and the slowest host, the spread between them and the worst p99, the
  hosts that dropped out (from dropped.txt, written by the run loop) and links to each host's
  own snippet;
- tables/<section>_facts.json: each host's headlines and anomalies, named with the host, and the
  dropouts, for the report's conclusion and anomalies.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import pandas as pd

from analysis.core import workspace
from analysis.core.workspace import Workspace
from analysis.render import markdown as md
from analysis.render.bars import BarSet, grouped_bars
from analysis.render.plots import Panel, Series, line_chart
from analysis.report.redraw import run_step
from analysis.rules.cases import UNSTABLE_HALF_WIDTH, read_manifest, section_frame
from analysis.run import record
from analysis.sections import SECTIONS, snippet_path
from analysis.sections import facts as facts_file
from analysis.sections.facts import Facts

LOG_SCALE_RATIO = 20  # bars spanning more than this ratio are drawn on a log axis


def host_trees(fleet: Path, section: str) -> list[Path]:
    """The hosts' trees that hold results of the section, by name."""
    hosts = fleet / "hosts"
    return sorted(p for p in hosts.iterdir() if p.is_dir() and section in record.sections(p)) \
        if hosts.is_dir() else []


def case_label(row, directions_per_case: dict[str, int]) -> str:
    return row.case if directions_per_case[row.case] == 1 else f"{row.case} ({row.direction})"


def fleet_table(trees: list[Path], section: str) -> pd.DataFrame:
    frames = []
    for tree in trees:
        df = section_frame(tree / section, SECTIONS[section].always)
        if not df.empty:
            df.insert(0, "host", tree.name)
            frames.append(df)
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    per_case = table.groupby("case")["direction"].nunique().to_dict()
    table.insert(1, "label", [case_label(r, per_case) for r in table.itertuples()])
    return table


def spread_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Per case: the fastest and slowest host by mean IOPS, the spread (1 - slowest/fastest) and
    the host with the worst p99."""
    rows = []
    for label, group in table.groupby("label", sort=False):
        group = group.dropna(subset=["iops_mean"])
        if group.empty:
            continue
        fast = group.loc[group.iops_mean.idxmax()]
        slow = group.loc[group.iops_mean.idxmin()]
        worst = group.loc[group.lat_p99_us.idxmax()] if group.lat_p99_us.notna().any() else None
        rows.append({
            "label": label,
            "hosts": len(group),
            "fastest": fast.host, "fastest_iops": fast.iops_mean,
            "slowest": slow.host, "slowest_iops": slow.iops_mean,
            "spread_pct": (1 - slow.iops_mean / fast.iops_mean) * 100 if fast.iops_mean else float("nan"),
            "worst_p99_host": worst.host if worst is not None else "",
            "worst_p99_us": worst.lat_p99_us if worst is not None else float("nan"),
        })
    return pd.DataFrame(rows)


def dropouts(trees: list[Path], section: str) -> dict[str, str]:
    out = {}
    for tree in trees:
        note = tree / section / "dropped.txt"
        if note.exists():
            out[tree.name] = note.read_text().strip()
    return out


def draw(ws: Workspace, section: str, table: pd.DataFrame) -> str:
    """IOPS per case, a bar per host with its 95% interval; where the cases span more than
    LOG_SCALE_RATIO, points on a log axis instead (a bar's length would not be its value)."""
    labels = list(dict.fromkeys(table.label))
    err = "iops_ci95" if "iops_ci95" in table else "iops_std"
    hosts = []
    for host, rows in table.groupby("host", sort=True):
        by_label = rows.set_index("label")
        hosts.append((host, [by_label.iops_mean.get(lb, float("nan")) for lb in labels],
                      [by_label[err].get(lb, float("nan")) for lb in labels]))
    values = table.iops_mean.dropna()
    rel = f"figs/{section}_hosts.png"
    path = ws.path(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    title = f"{SECTIONS[section].heading}: IOPS per host (mean ± 95% interval)"
    if len(values) and values.min() > 0 and values.max() / values.min() > LOG_SCALE_RATIO:
        x = list(range(len(labels)))
        width = 0.6 / max(len(hosts), 1)
        series = [Series(host, [i - 0.3 + width * (k + 0.5) for i in x], means, errors,
                         line=False) for k, (host, means, errors) in enumerate(hosts)]
        line_chart(path, [Panel(title, "", "IOPS (log scale)", series, yscale="log", xticks=x,
                                xticklabels=labels)])
    else:
        grouped_bars(path, labels, [BarSet(*h) for h in hosts], ylabel="IOPS", title=title)
    return rel


def findings(spread: pd.DataFrame, dropped: dict[str, str], hosts: int) -> list[str]:
    out = []
    if len(spread) and spread.spread_pct.notna().any():
        widest = spread.loc[spread.spread_pct.idxmax()]
        out.append(f"**Widest spread:** {widest.label}: {widest.slowest} is "
                   f"{widest.spread_pct:.0f}% below {widest.fastest} "
                   f"({md.num(widest.slowest_iops)} vs {md.num(widest.fastest_iops)} IOPS).")
        slowest = spread.slowest.value_counts()
        host, times = slowest.index[0], int(slowest.iloc[0])
        out.append(f"**Slowest host:** {host} is the slowest in {times} of {len(spread)} cases.")
    for host, why in dropped.items():
        out.append(f"**{host} dropped out:** {why}. Its finished repetitions are kept; rerun the "
                   "same command to run what is missing.")
    if not out:
        out.append(f"{hosts} host(s), nothing to compare yet.")
    return out


def snippet(ws: Workspace, section: str, trees: list[Path], table: pd.DataFrame,
            spread: pd.DataFrame, dropped: dict[str, str], figure: str) -> str:
    info = SECTIONS[section]
    manifest = read_manifest(trees[0] / section)
    hosts = ", ".join(f"`{read_manifest(t / section).get('target', t.name)}`" for t in trees)
    setup = (f"Hosts: {len(trees)} ({hosts}) · profile {manifest.get('profile', '?')} "
             f"({manifest.get('runtime', '?')} s after {manifest.get('ramp', '?')} s ramp, "
             f"{manifest.get('repeat', '?')} repetitions) · engine {manifest.get('engine', '?')}"
             " · each case ran on all hosts at once (fio client/server)")
    rows = [[r.label, str(r.hosts), f"{r.fastest} ({md.num(r.fastest_iops)})",
             f"{r.slowest} ({md.num(r.slowest_iops)})", f"{r.spread_pct:.1f}%",
             f"{r.worst_p99_host} ({md.num(r.worst_p99_us)})"] for r in spread.itertuples()]
    unstable = (table[table.unstable.astype(bool)] if "unstable" in table
                else table.iloc[0:0])
    links = []
    for tree in trees:
        host_ws = Workspace.of(ws.root, tree)
        target = host_ws.path(snippet_path(section))
        if target.exists():
            links.append(f"[{tree.name}]({Path(os.path.relpath(target, ws.out)).as_posix()})")
    parts = [f"## {info.heading} across hosts", "", setup, "",
             md.table(["Case", "Hosts", "Fastest (IOPS)", "Slowest (IOPS)", "Spread",
                       "Worst p99 (µs)"], rows, ["l", "r", "l", "l", "r", "l"]), "",
             "Spread = 1 - slowest/fastest mean IOPS. Per-host tables with ± std: "
             f"`{ws.show(f'tables/{section}_hosts.csv')}`"
             + (f"; each host's own section: {', '.join(links)}." if links else "."), ""]
    if len(unstable):
        parts += [f"⚠ {len(unstable)} host/case point(s) have a 95% interval of the mean wider "
                  f"than ±{UNSTABLE_HALF_WIDTH:.0%}: "
                  + ", ".join(f"{r.host} {r.label}" for r in unstable.itertuples()), ""]
    parts += [md.image(f"{info.heading}: IOPS per host", ws.link(figure)), ""]
    parts += ["### Findings", ""] + [f"- {f}" for f in findings(spread, dropped, len(trees))]
    return "\n".join(parts) + "\n"


def host_facts(ws: Workspace, trees: list[Path], section: str) -> Facts:
    """Each host's headlines and anomalies (from its own analysis), named with the host."""
    out = Facts()
    for tree in trees:
        path = Workspace.of(ws.root, tree).path(f"tables/{section}_facts.json")
        if not path.is_file():
            continue
        facts = facts_file.read(path)
        for h in facts.headlines:
            out.headline(h.kind, f"{h.label} on {tree.name}", h.text, h.value, h.unit)
        for a in facts.anomalies:
            out.anomaly(a.kind, f"{tree.name}: {a.text}")
    return out


def analyse_hosts(ws: Workspace, section: str, hosts: list[str], excused: list[str],
                  passed: list[str]) -> list[str]:
    """Each named host's own analysis of the section (its tables, figures and snippet under
    hosts/<host>), run in this process as `python -m analysis <section> --results
    T/hosts/<host>` runs it, `passed` its arguments (the section's thresholds). A fleet run's
    analyses come here together with the comparison: one interpreter imports pandas and
    matplotlib once for all the hosts, where a process per host paid about 1 CPU-s for them
    (analysis.report.redraw does the same for `make analysis`). Returns the hosts whose
    analysis failed, but for those excused: a host that dropped out may have a point left with
    no repetition, and its analysis says so without failing the run."""
    analyse = importlib.import_module(f"analysis.sections.{section}").main
    failed = []
    for host in hosts:
        print(f"analysis of host {host}:", file=sys.stderr)
        argv = ["--root", str(ws.root), "--results", str(ws.results / "hosts" / host), *passed]
        if run_step(analyse, argv) != 0 and host not in excused:
            failed.append(f"host {host}")
    return failed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis hosts",
        usage="python -m analysis hosts SECTION [--analyse HOST]... [--excused HOST]... "
              "[--root R] [--results T] [-- ARG...]",
        description="Compare a section's results across the hosts of a fleet run. With "
                    "--analyse, first each named host's own analysis of the section (what the "
                    "fleet run does); the arguments after -- are passed on to those.")
    parser.add_argument("section", choices=list(SECTIONS))
    parser.add_argument("--analyse", metavar="HOST", action="append", default=[],
                        help="first the section's own analysis of T/hosts/HOST, in this process; "
                             "repeatable")
    parser.add_argument("--excused", metavar="HOST", action="append", default=[],
                        help="a host that dropped out: its analysis failing does not fail this "
                             "command")
    workspace.add_arguments(parser)
    # split by hand: argparse gives a trailing positional list nothing once SECTION is taken
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    ws = Workspace.from_args(args)
    if not args.analyse:
        return compare(ws, args.section)
    failed = analyse_hosts(ws, args.section, args.analyse, args.excused, argv[cut + 1:])
    # as a step of its own, as the hosts' are: a failure in it still names theirs
    if run_step(lambda _: compare(ws, args.section), []) != 0:
        failed.append("the comparison of the hosts")
    if failed:
        print(f"hosts: the analysis failed for {', '.join(failed)} (see above)", file=sys.stderr)
    return 1 if failed else 0


def compare(ws: Workspace, section: str) -> int:
    """The hosts side by side: the table, figure, snippet and facts of the module's docstring;
    2 when no host has finished repetitions of the section."""
    trees = host_trees(ws.results, section)
    table = fleet_table(trees, section)
    if table.empty:
        print(f"hosts: no host in {ws.results / 'hosts'} has finished repetitions of "
              f"{section}; run the section with HOSTS= first", file=sys.stderr)
        return 2
    dropped = dropouts(trees, section)
    spread = spread_rows(table)
    written = []
    for rel, df in ((f"tables/{section}_hosts.csv", table),):
        path = ws.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(path, index=False, float_format="%.10g")
        written.append(ws.show(rel))
    figure = draw(ws, section, table)
    written.append(ws.show(figure))
    text = snippet(ws, section, trees, table, spread, dropped, figure)
    ws.path(snippet_path(section)).parent.mkdir(parents=True, exist_ok=True)
    ws.path(snippet_path(section)).write_text(text)
    written.append(ws.show(snippet_path(section)))
    facts = host_facts(ws, trees, section)
    for host, why in dropped.items():
        facts.anomaly("host_dropped", f"{SECTIONS[section].heading}: host {host} dropped out ({why}).")
    facts_path = f"tables/{section}_facts.json"
    facts_file.write(ws.path(facts_path), section, facts)
    written.append(ws.show(facts_path))
    print(text)
    print(f"wrote {', '.join(written)}")
    return 0
