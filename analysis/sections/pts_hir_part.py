"""The host idle recovery test (HIR) on §6's page under --profile pts (--pts-hir): its numbers
are analysis.rules.pts_hir's.

* the test-conditions header and whether the run is conformant (pts_page's, as every test's);
* a table: per wait state, the mean IOPS of its cycles with their 95% interval, their range, and
  the mean against WSAT's steady rate (the baseline);
* the plot of IOPS against time for each wait state, per second: the cycles, then the return to
  steady state (and, after a pause of the run, the return that ran before them), with the
  baseline and the wait state's mean drawn across.

pts_page.draw hands the test's folder to ``hir_part``.
"""

from __future__ import annotations

from analysis.core.workspace import Workspace
from analysis.render import claims
from analysis.render import markdown as md
from analysis.render.plots import plt  # pyplot on the Agg backend, as every figure
from analysis.rules.pts_hir import HirResult
from analysis.sections import facts as facts_file

NOTE = ("Each wait state's IOPS: the mean over its cycles of each cycle's I/Os over its 5 s of "
        "writes, ± the half-width of its 95% interval (t over the cycles). Each wait state starts "
        "from steady state: after WSAT, or after the previous wait state's return to it, whose "
        "level (the mean of its second half) is in the last column: writes without a pause, "
        "where WSAT's rounds pause between them.")
JOB_STYLE = {"return": ("0.6", "return to steady state (the run had paused)"),
             "cycles": ("C0", "cycles: 5 s of writes, then the wait"),
             "baseline": ("0.35", "return to steady state")}


def hir_figure(r: HirResult, path) -> None:
    fig, axes = plt.subplots(len(r.waits), 1, figsize=(9, 2.3 * len(r.waits) + 0.8),
                             squeeze=False)
    for ax, w in zip(axes[:, 0], r.waits, strict=True):
        for job, rows in w.series.groupby("job", sort=False):
            color, label = JOB_STYLE[job]
            ax.plot(rows.t_s / 60, rows.iops, ".-" if job == "cycles" else "-", ms=2, lw=0.6,
                    color=color, label=label)
        mean, _ = w.stats
        ax.axhline(mean, color="C1", lw=1, label=f"mean of the cycles {md.num(mean)}")
        if r.baseline:
            ax.axhline(r.baseline.iops, color="k", ls="--", lw=0.8,
                       label=f"WSAT steady state {md.num(r.baseline.iops)}")
        ax.set_title(f"wait state {w.wait_s} s: {len(w.cycle_iops)} cycles", fontsize=9)
        ax.set_ylabel("IOPS")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("time since the wait state started (minutes)")
    fig.suptitle("Host idle recovery: 4 KiB random-write IOPS per second, by wait state",
                 fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def hir_table(r: HirResult) -> str:
    rows = []
    for row in r.table.itertuples():
        ratio = "–" if row.vs_baseline != row.vs_baseline else f"{row.vs_baseline:.2f}x"
        cycles = f"{row.cycles}" + ("" if row.cycles == row.cycles_planned
                                    else f" of {row.cycles_planned}")
        rows.append([f"{row.write_s} s / {row.wait_s} s" + (" (resumed)" if row.resumed else ""),
                     cycles, md.pm(row.iops_mean, row.iops_ci95),
                     f"{md.num(row.iops_min)}–{md.num(row.iops_max)}", ratio,
                     md.num(row.return_iops)])
    return md.table(["writes / wait", "cycles", "IOPS (mean of the cycles)", "cycles' range",
                     "x WSAT's steady state", "IOPS back at steady state after it"], rows)


def baseline_text(r: HirResult) -> str:
    b = r.baseline
    if b is None:
        return "WSAT's steady state: not found (no WSAT rounds in this tree)."
    n = b.rounds[1] - b.rounds[0] + 1
    which = "its last 5" if n == 5 else f"all {n} it ran"
    return (f"Baseline: WSAT's steady state, {md.pm(b.iops, b.ci95)} IOPS (the mean of its "
            f"rounds {b.rounds[0]}–{b.rounds[1]}, {which}, ± the half-width of its 95% "
            "interval).")


def hir_headlines(facts: facts_file.Facts, r: HirResult, qualifiers: tuple[str, ...]) -> None:
    for row in r.table.itertuples():
        facts.headline("pts", f"Host idle recovery (HIR), {row.write_s} s writes / {row.wait_s} s "
                       "idle", f"{claims.with_interval(row.iops_mean, row.iops_ci95, 'IOPS')} "
                       f"(mean of {row.cycles} cycles)", value=row.iops_mean, unit="IOPS",
                       ci95=row.iops_ci95, qualifiers=qualifiers)


def hir_part(ws: Workspace, section: str, r: HirResult) -> tuple[list[str], list[tuple]]:
    """The blocks and figures of HIR's part of the page; its table in tables/."""
    name = f"{section}_pts_hir"
    blocks = [f"HIR: {r.verdict}. {baseline_text(r)}"]
    if not r.waits:
        return blocks, []
    blocks += [hir_table(r), NOTE]
    path = ws.path(f"tables/{name}.csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    r.table.to_csv(path, index=False, float_format="%.10g")
    hir_figure(r, ws.path(f"figs/{name}.png"))
    return blocks, [("HIR: IOPS against time for each wait state", f"figs/{name}.png")]
