"""A section's page under --profile pts: its SNIA PTS tests as a PTS reader knows them.

For each test (RESULTS/<section>/pts/<test>, lib/pts.bash; its numbers: analysis.rules.
pts_window):

* the test-conditions header: device, purge, preconditioning, active range, threads and queue
  depth, data pattern, write cache, start and end, and whether the run is conformant (rounds
  under 60 s, a purge that is not Format NVM or Sanitize, the reduced matrix: "PTS-like, NOT
  conformant", on every page of the run);
* the steady-state convergence plot (each tracking variable per round) and the measurement-window
  plot (the window's rounds, their average, ±10% and ±20% of it, the least-squares line);
* the test's table, every average with its 95% interval over the window's rounds; the IOPS test
  also as the mix x block-size table and its plot; Latency as AVE, p99.999 (its interval and the
  I/Os above it, † under 100) and MAX; WSAT as IOPS against time and against GiB written.

The section modules' run_section hands a PTS tree to ``draw``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from analysis.core.pts import read_pts
from analysis.core.pts import test as pts_test
from analysis.core.stats import MIN_TAIL_IOS
from analysis.core.steady import window_line
from analysis.core.workspace import Workspace
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.plots import plt  # pyplot on the Agg backend, as every figure
from analysis.rules.pts_hir import HirResult, load_hir
from analysis.rules.pts_window import TestResult, load_test
from analysis.run.pts_rounds import tracks_of
from analysis.sections import SECTIONS, snippet_path
from analysis.sections import facts as facts_file
from analysis.sections.pts_hir_part import hir_headlines, hir_part

NOT_CONFORMANT = "PTS-like, NOT conformant"
HEADER = [("device", "Device"), ("purge", "Purge"), ("preconditioning", "Preconditioning"),
          ("active_range", "Active range"), ("outstanding", "Threads / QD"),
          ("data_pattern", "Data pattern"), ("write_cache", "Write cache"),
          ("engine", "Engine")]


def is_pts(results_dir: Path) -> bool:
    return (results_dir / "pts").is_dir()


def _tests(results_dir: Path) -> list[TestResult | HirResult]:
    """The tests with results, in lib/pts.tsv's order: rounds (round1.json), or HIR's wait
    states (wait<W>.json)."""
    tests = read_pts()[1]
    found = [p for p in (results_dir / "pts").iterdir() if p.is_dir() and p.name in tests
             and (any(p.glob("wait*.json")) if tests[p.name].waits
                  else (p / "round1.json").is_file())]
    order = list(tests)
    return [load_hir(p) if tests[p.name].waits else load_test(p)
            for p in sorted(found, key=lambda p: order.index(p.name))]


def conformance(r: TestResult | HirResult) -> str:
    if r.deviations:
        return f"**{NOT_CONFORMANT}:** " + "; ".join(r.deviations) + "."
    return "**Conformant** to SNIA PTS 2.0 in what the toolkit checks (purge, preconditioning, " \
           "60 s rounds, the whole matrix)."


def header_table(r: TestResult | HirResult) -> str:
    c = r.conditions
    rows = [[label, c.get(key, "not recorded")] for key, label in HEADER]
    if isinstance(r, TestResult):
        rows.append(["Rounds", (f"{len(r.rounds)} of {c.get('round_s', '?')} s per access "
                                f"pattern (at most {c.get('max_rounds', '?')})")])
    rows.append(["Start / end", f"{_read(r.folder / 'start')} / {_read(r.folder / 'end')}"])
    if c.get("skipped"):
        rows.append(["Left out", f"{c['skipped']} (smaller than the logical block)"])
    return md.table(["Test conditions", ""], rows, ["l", "l"])


def _read(path: Path) -> str:
    return path.read_text().strip() if path.is_file() else "not finished"


# --- figures ------------------------------------------------------------------------------------
def convergence_figure(r: TestResult, path: Path) -> Path:
    tracks = tracks_of(r.test, r.rounds)
    fig, axes = plt.subplots(len(tracks), 1, figsize=(7, 2.2 * len(tracks) + 0.6), squeeze=False)
    first, last = r.window
    for ax, (name, values) in zip(axes[:, 0], tracks.items(), strict=True):
        ax.plot(range(1, len(values) + 1), values, "o-", ms=3, label=name)
        ax.axvspan(first - 0.5, last + 0.5, color="#cde", alpha=0.5,
                   label="steady window" if r.steady else "last 5 rounds (not steady)")
        ax.set_ylabel(name.rsplit(" ", 1)[-1])
        ax.set_title(name, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="lower right")
    axes[-1, 0].set_xlabel("round")
    fig.suptitle(f"{r.test.title}: steady-state convergence", fontsize=10)
    return _save(fig, path)


def window_figure(r: TestResult, path: Path) -> Path:
    tracks = tracks_of(r.test, r.rounds)
    first, last = r.window
    fig, axes = plt.subplots(len(tracks), 1, figsize=(9, 2.4 * len(tracks) + 0.6), squeeze=False)
    for ax, (name, values) in zip(axes[:, 0], tracks.items(), strict=True):
        x = list(range(first, last + 1))
        y = values[first - 1:last]
        avg = sum(y) / len(y)
        ax.plot(x, y, "o", color="C0", label=name)
        ax.axhline(avg, color="k", lw=1, label=f"average {md.num(avg)}")
        for pct, style in ((10, ":"), (20, "--")):
            ax.axhline(avg * (1 + pct / 100), color="C3", ls=style, lw=0.8,
                       label=f"±{pct}% of the average")
            ax.axhline(avg * (1 - pct / 100), color="C3", ls=style, lw=0.8)
        if len(x) >= 2:
            start, slope = window_line(y)
            ax.plot(x, [start + slope * (v - first) for v in x], color="C2",
                    label=f"fitted line, slope {md.num(slope)} per round")
        ax.set_title(name, fontsize=9)
        ax.set_xticks(x)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("round")
    kind = "steady-state measurement window" if r.steady else "last 5 rounds (NOT steady)"
    fig.suptitle(f"{r.test.title}: {kind}", fontsize=10)
    return _save(fig, path)


def iops_matrix_figure(r: TestResult, path: Path) -> Path:
    t = r.table
    fig, ax = plt.subplots(figsize=(7, 4))
    for read, rows in t.groupby("read_pct", sort=False):
        rows = rows.sort_values("bs_bytes")
        ax.errorbar(rows.bs_bytes / 1024, rows.iops_mean, yerr=rows.iops_ci95, marker="o", ms=3,
                    capsize=2, label=f"{read}/{100 - read}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block size (KiB)")
    ax.set_ylabel("IOPS (window average, 95% interval)")
    ax.legend(title="R/W mix", fontsize=7)
    ax.set_title("IOPS by block size and read/write mix", fontsize=10)
    return _save(fig, path)


def wsat_figure(r: TestResult, path: Path) -> Path:
    t = r.table
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5.5))
    a.plot(t.end_s / 60, t.iops, "o-", ms=2)
    a.set_xlabel("time (minutes)")
    b.plot(t.written_GiB, t.iops, "o-", ms=2, color="C1")
    b.set_xlabel("GiB written")
    for ax in (a, b):
        ax.set_ylabel("IOPS, 4 KiB random write")
        ax.set_ylim(bottom=0)
    fig.suptitle("Write saturation: IOPS against time and against GiB written", fontsize=10)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --- tables -------------------------------------------------------------------------------------
def results_table(r: TestResult) -> str:
    t = r.table
    rows = [[row.pattern + (" (tracking)" if row.tracking else ""),
             md.pm(row.iops_mean, row.iops_ci95), md.pm(row.bw_MBps_mean, row.bw_MBps_ci95),
             md.pm(row.lat_us_mean, row.lat_us_ci95)] for row in t.itertuples()]
    return md.table(["pattern (KiB, R/W)", "IOPS", "MB/s", "mean latency (µs)"], rows)


def iops_matrix_table(r: TestResult) -> str:
    t = r.table
    mixes = list(dict.fromkeys(t.read_pct))
    sizes = sorted(set(t.bs_bytes), reverse=True)
    cells = {(row.read_pct, row.bs_bytes): md.pm(row.iops_mean, row.iops_ci95)
             for row in t.itertuples()}
    rows = [[f"{bs / 1024:g}", *[cells.get((m, bs), "–") for m in mixes]] for bs in sizes]
    return md.table(["block size (KiB)", *[f"{m}/{100 - m}" for m in mixes]], rows)


def latency_table(r: TestResult) -> str:
    rows = []
    for row in r.table.itertuples():
        if math.isnan(row.p99_999_us):
            nine = "–"
        else:
            high = "…" if math.isnan(row.p99_999_high_us) else md.num(row.p99_999_high_us)
            nine = (f"{md.num(row.p99_999_us)} [{md.num(row.p99_999_low_us)}–{high}] "
                    f"({int(row.p99_999_tail_ios):,})" + ("" if row.p99_999_quotable else " †"))
        rows.append([row.pattern, md.pm(row.lat_us_mean, row.lat_us_ci95), nine,
                     md.num(row.lat_max_us), f"{int(row.ios):,}"])
    return md.table(["pattern (KiB, R/W)", "AVE (µs)", "p99.999 (µs) [95%] (I/Os above)",
                     "MAX (µs)", "I/Os"], rows)


def _write_csv(ws: Workspace, relpath: str, r: TestResult) -> None:
    path = ws.path(relpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    r.table.to_csv(path, index=False, float_format="%.10g")


# --- the conclusion's numbers -------------------------------------------------------------------
# what each test's tracking variables are judged by, as its own table gives it
TRACKED_METRIC = {"iops": ("iops", "IOPS"), "throughput": ("bw_MBps", "MB/s"),
                  "latency": ("lat_us", "µs mean latency")}


def pts_headlines(facts: facts_file.Facts, r: TestResult) -> None:
    """The conclusion's rows: each tracking variable's average over the window, with its
    interval, kept with what limits it (not conformant; no steady window)."""
    metric = TRACKED_METRIC.get(r.test.name)
    if metric is None or r.test.written_times:  # WSAT has no window
        return
    col, unit = metric
    qualifiers = [NOT_CONFORMANT] if r.deviations else []
    if not r.steady:
        qualifiers.append(f"steady state NOT reached: the last rounds, "
                          f"{r.window[0]}–{r.window[1]}")
    for row in r.table[r.table.tracking.astype(bool)].itertuples():
        mean, half = getattr(row, f"{col}_mean"), getattr(row, f"{col}_ci95")
        facts.headline("pts", f"{r.test.title}, {row.pattern}",
                       f"{claims.with_interval(mean, half, unit)} (rounds {r.window[0]}–"
                       f"{r.window[1]})", value=mean, unit=unit, ci95=half,
                       qualifiers=tuple(qualifiers))


# --- the page -----------------------------------------------------------------------------------
def test_part(ws: Workspace, section: str,
              r: TestResult | HirResult) -> tuple[list[str], list[tuple]]:
    test = pts_test(r.folder.name)
    blocks = [f"### {test.title} ({test.outstanding})", conformance(r), header_table(r)]
    if isinstance(r, HirResult):
        more, figures = hir_part(ws, section, r)
        return blocks + more, figures
    name = f"{section}_pts_{r.test.name}"
    figures = []
    if r.test.written_times:
        blocks.append(f"Rounds: {r.verdict}.")
        figures.append(("WSAT: IOPS against time and GiB written", f"figs/{name}.png"))
        wsat_figure(r, ws.path(f"figs/{name}.png"))
        _write_csv(ws, f"tables/{name}.csv", r)
        return blocks, figures
    blocks.append(f"Steady state: {r.verdict}.")
    if not r.steady:
        blocks.append(f"**Steady state NOT reached**: the averages below are over the last "
                      f"rounds ({r.window[0]}–{r.window[1]}), not a steady window.")
    _write_csv(ws, f"tables/{name}.csv", r)
    note = (f"Each value: the average over rounds {r.window[0]}–{r.window[1]} ± the half-width "
            "of its 95% interval (t over those rounds).")
    if r.test.name == "latency":
        blocks += [latency_table(r), note + f" p99.999: the window's I/Os pooled; – where no I/O "
                   f"lies above it (one needs over 100,000 I/Os), † where fewer than "
                   f"{MIN_TAIL_IOS} do: too few to quote (10 million I/Os for {MIN_TAIL_IOS})."]
    else:
        blocks += [results_table(r), note]
    if r.test.name == "iops":
        blocks += ["IOPS by read/write mix (columns) and block size (rows):",
                   iops_matrix_table(r)]
        iops_matrix_figure(r, ws.path(f"figs/{name}_matrix.png"))
        figures.append(("IOPS by block size and mix", f"figs/{name}_matrix.png"))
    convergence_figure(r, ws.path(f"figs/{name}_convergence.png"))
    window_figure(r, ws.path(f"figs/{name}_window.png"))
    figures[:0] = [("steady-state convergence", f"figs/{name}_convergence.png"),
                   ("measurement window", f"figs/{name}_window.png")]
    return blocks, figures


def draw(ws: Workspace, section: str) -> int:
    """out/section_<n>_<section>.md, its tables, figures and facts, from a PTS tree."""
    results_dir = ws.results / section
    tests = _tests(results_dir)
    if not tests:
        print(f"{section}: no PTS round in {results_dir / 'pts'}", file=sys.stderr)
        return 2
    info = SECTIONS[section]
    parts = [f"## §{info.number} SNIA PTS: "
             + ", ".join(pts_test(r.folder.name).title for r in tests), ""]
    deviations = sorted({d for r in tests for d in r.deviations})
    if deviations:
        parts += [f"**{NOT_CONFORMANT}** on every page of this run: " + "; ".join(deviations)
                  + ".", ""]
    facts = facts_file.Facts(setup={"profile": "pts", "class": tests[0].conditions.get("class", "")},
                             setup_line=f"SNIA PTS 2.0, {tests[0].conditions.get('class', '')}")
    for r in tests:
        blocks, figures = test_part(ws, section, r)
        for b in blocks:
            parts += [b, ""]
        for alt, rel in figures:
            parts += [md.image(alt, ws.link(rel)), ""]
        title = pts_test(r.folder.name).title
        if r.deviations:
            facts.anomaly("pts_not_conformant", f"{title}: {NOT_CONFORMANT}: "
                          + "; ".join(r.deviations) + ".")
        if isinstance(r, HirResult):
            hir_headlines(facts, r, (NOT_CONFORMANT,) if r.deviations else ())
            continue
        if not r.test.written_times and not r.steady:
            facts.anomaly("steady_state", f"{r.test.title}: steady state not reached ({r.verdict}).")
        pts_headlines(facts, r)
    path = ws.path(snippet_path(section))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
    facts_file.write(ws.path(f"tables/{section}_facts.json"), section, facts)
    print(f"wrote {ws.show(snippet_path(section))}")
    return 0
