"""§2 QD=1 baselines: tables/qd1_baseline.csv, figs/qd1_{latency,iops}.png, out/section_2_qd1.md.

At QD=1 one I/O is in flight at a time, so mean latency is the per-I/O service time and Little's
Law says IOPS x mean latency = 1. What is left over (the product falls short of 1) is time spent
outside the measured latency: fio's own work between completing one I/O and issuing the next.
"""

from __future__ import annotations

import pandas as pd

from analysis.core.effects import adjusted
from analysis.core.workspace import Workspace
from analysis.render import claims, exceedance
from analysis.render import markdown as md
from analysis.render.bars import bar_chart
from analysis.render.claims import NOT_RESOLVED
from analysis.rules.cases import case_rows, one_state, read_manifest
from analysis.sections import SECTIONS, snippet_path
from analysis.sections.common import (
    LATENCY_HEADER,
    MAX_LEGEND,
    NINES_POINTER,
    P99_LEGEND,
    SectionRun,
    clat_note,
    drive_fact,
    flag,
    interval,
    interval_note,
    latency_cells,
    nines_frame,
    nines_note,
    nines_table,
    row_change,
    run_section,
    snippet,
    stability_finding,
    standard_note,
)
from analysis.sections.facts import Facts
from analysis.sections.host_part import host_finding

SECTION = "qd1"
TABLE = "tables/qd1_baseline.csv"
NINES_TABLE = "tables/qd1_nines.csv"
FIG_LATENCY = "figs/qd1_latency.png"
FIG_IOPS = "figs/qd1_iops.png"
SNIPPET = snippet_path(SECTION)
LITTLE_TOLERANCE = 0.10  # |IOPS x latency - 1| above this is flagged
def with_pattern(df: pd.DataFrame) -> pd.DataFrame:
    """The table with each row's pattern: '4 KiB random read', or for a read/write mix (--mix)
    '4 KiB random R65/W35' on the row of all its I/O and '... reads' / '... writes' on each
    direction's."""
    df = df.copy()
    df.insert(1, "pattern", [pattern_of(r) for r in df.itertuples()])
    return df


def pattern_of(r) -> str:
    if not 0 < r.read_pct < 100:
        return md.pattern(r.rw, r.bs)
    mix = f"{md.bs_label(r.bs)} random R{r.read_pct}/W{100 - r.read_pct}"
    return mix if r.direction == "total" else f"{mix} {r.direction}s"


def _row(df: pd.DataFrame, rw: str, bs: int):
    hits = df[(df["rw"] == rw) & (df["bs"] == bs)]
    return None if hits.empty else hits.iloc[0]


def _speed_phrase(latency: float, reference: float) -> str:
    """'21% slower' / '12% faster': a latency against a reference latency."""
    pct = (latency / reference - 1) * 100
    return f"{abs(pct):.0f}% {'faster' if pct < 0 else 'slower'}"


def random_vs_sequential(op: str, rand, seq) -> str:
    """MB/s and time per I/O of 128 KiB sequential against 4 KiB random, each tested; as
    ratios, the values being in the table above."""
    bw, lat = adjusted([row_change(seq, rand, "bw_MBps_mean"),
                        row_change(seq, rand, "lat_us_mean")])
    text = (f"**Random vs sequential {op}:** 128 KiB sequential {op} move "
            f"{seq.bw_MBps_mean / rand.bw_MBps_mean:.1f}× the MB/s of 4 KiB random {op}")
    if bw.tested and not bw.significant:
        text += f" ({NOT_RESOLVED}: 95% interval of the difference {bw.interval_text()})"
    if lat.tested and not lat.significant:
        return text + (f"; whether a 128 KiB I/O takes longer than a 4 KiB one is {NOT_RESOLVED} "
                       f"(95% interval {lat.interval_text()}).")
    return text + (f", at {seq.lat_us_mean / rand.lat_us_mean:.1f}× the time per I/O for 32× "
                   "the data.")


def read_vs_write(rr, rw_, target_kind: str, write_cache: str | None = None) -> str:
    """4 KiB random write latency against read, tested; what could explain it, as a
    possibility tied to what was measured and never one §1 contradicts (``write_cache``: the
    kernel's view of the drive's volatile write cache, 'write back' or 'write through', §1)."""
    mean, *p99 = adjusted([row_change(rw_, rr, "lat_us_mean"),
                           *([row_change(rw_, rr, "lat_p99_us")]
                             if not (pd.isna(rw_.lat_p99_us) or pd.isna(rr.lat_p99_us)) else [])])
    text = (f"**Read vs write:** 4 KiB random writes average {md.num(rw_.lat_us_mean)} µs "
            f"against {md.num(rr.lat_us_mean)} µs for reads")
    p99_text = f"; p99 {md.num(rw_.lat_p99_us)} µs vs {md.num(rr.lat_p99_us)} µs"
    if p99 and p99[0].tested and not p99[0].significant:
        p99_text += f" {claims.UNRESOLVED}"
    if mean.tested and not mean.significant:
        return (text + f": which is faster is {NOT_RESOLVED} (95% interval of the difference "
                f"{mean.interval_text()}){p99_text}.")
    faster = rw_.lat_us_mean < rr.lat_us_mean
    if target_kind == "file":
        why = ("on a file target the filesystem, the page cache and the storage under it take "
               "part in both, so this run cannot say which part is the drive's")
    elif faster and write_cache == "write through":
        why = ("on a drive this fits writes acknowledged from a buffer before they reach the "
               "medium, while a read must fetch its data; §1 finds no volatile write cache "
               "(write through), which a power-protected buffer would not be reported as; this "
               "run measures the latency, not the buffer")
    elif faster:
        why = ("on a drive this fits writes acknowledged from a write cache before they reach "
               "the medium, while a read must fetch its data"
               + (" (§1: write cache write back)" if write_cache == "write back" else "")
               + "; this run measures the latency, not the cache")
    elif write_cache == "write back":
        why = ("the drive has a volatile write cache (§1: write back), so at QD=1 it did not "
               "hide the writes' cost here; this run measures the latency, not the cause")
    else:
        why = ("on a drive this fits a medium whose program time no write cache hides at QD=1"
               + (" (§1: write through, no volatile write cache)"
                  if write_cache == "write through" else "")
               + "; this run measures the latency, not the cause")
    interval = f"95% interval {mean.interval_text()}; " if mean.tested else ""
    return (text + f", {_speed_phrase(rw_.lat_us_mean, rr.lat_us_mean)} ({interval}{why})"
            f"{p99_text}.")


def findings(df: pd.DataFrame, target_kind: str = "",
             write_cache: str | None = None) -> list[str]:
    df = one_state(df)
    out = []
    rr, rw_ = _row(df, "randread", 4096), _row(df, "randwrite", 4096)
    sr, sw = _row(df, "read", 131072), _row(df, "write", 131072)

    for op, rand, seq in (("reads", rr, sr), ("writes", rw_, sw)):
        if rand is not None and seq is not None:
            out.append(random_vs_sequential(op, rand, seq))

    if rr is not None and rw_ is not None:
        out.append(read_vs_write(rr, rw_, target_kind, write_cache))

    # a mix's one I/O in flight is a read or a write: the law holds for all of its I/O
    cases = case_rows(df)
    low = cases[cases.little_product < 1 - LITTLE_TOLERANCE]
    high = cases[cases.little_product > 1 + LITTLE_TOLERANCE]
    # every case's product is in the table's CSV; a range says enough where none misses
    lo, hi = (f"{v:.2f}" for v in (cases.little_product.min(), cases.little_product.max()))
    products = ((f"{lo} for each of the {len(cases)} patterns" if lo == hi else
                 f"{lo}–{hi} over the {len(cases)} patterns")
                if low.empty and high.empty and len(cases) > 1 else
                ", ".join(f"{r.pattern} {r.little_product:.2f}" for r in cases.itertuples()))
    text = (f"**Little's Law at QD=1:** IOPS × mean latency = {products} "
            f"(1.00 with one I/O always in flight).")
    if not low.empty:
        gaps = ", ".join(
            f"{r.pattern} {md.num(1e6 / r.iops_mean - r.lat_us_mean)} µs"
            for r in low.itertuples())
        text += (f" Below 0.90, the device sits idle between I/Os: per I/O, {gaps} pass "
                 f"outside the measured latency (fio's and the engine's own work).")
    if not high.empty:
        text += (f" Above 1.10 for {', '.join(high.pattern)}: more than one I/O was in flight, "
                 "a sign of a measurement problem.")
    out.append(text)

    out.append(stability_finding(df, lambda r: r.pattern))
    out.append(host_finding(df, lambda r: r.pattern))
    out += clat_note(df)
    return out


def render_markdown(df: pd.DataFrame, setup: str, link=md.link_from_out,
                    nines: pd.DataFrame | None = None, target_kind: str = "",
                    write_cache: str | None = None) -> str:
    rows = []
    for r in df.itertuples():
        mark = flag(r)
        rows.append([r.pattern + mark, md.pm(r.iops_mean, r.iops_ci95),
                     md.pm(r.bw_MBps_mean, r.bw_MBps_ci95), *latency_cells(r)])
    table = md.table(["pattern (QD=1)", "IOPS", "MB/s", *LATENCY_HEADER], rows)
    # the nines' table where a point can quote a nine beyond p99 (--nines); p99 alone is in
    # the table above (issue 42: a second table of the same p99s doubled them on the page)
    deeper = nines is not None and bool(nines[nines.pct > 99].quotable.astype(bool).any())
    blocks = [table, f"{standard_note(df)} {MAX_LEGEND} {P99_LEGEND}"
              + (" " + NINES_POINTER.format(table=NINES_TABLE)
                 if nines is not None and not nines.empty else "")]
    if deeper:
        blocks += [nines_table(nines), nines_note()]
    return snippet(f"## {SECTIONS[SECTION].heading}", setup, blocks,
                   [("QD=1 mean latency", FIG_LATENCY), ("QD=1 IOPS", FIG_IOPS),
                    ("Share of I/Os slower than each latency",
                     exceedance.figure(SECTION))], findings(df, target_kind, write_cache), link)


def draw_figures(df: pd.DataFrame, ws: Workspace) -> None:
    df = case_rows(df)  # a mix's bar is all of its I/O; its directions are in the table
    labels = [p.replace(" random", "\nrandom").replace(" sequential", "\nsequential")
              for p in df.pattern]
    flags = {"flagged": list(df.host_bound), "flag_label": "host-bound (see the Host line)"}
    bar_chart(ws.path(FIG_LATENCY), labels, list(df.lat_us_mean), interval(df, "lat_us_mean"),
              ylabel="total latency (µs)", title="QD=1 latency per I/O: mean and p99",
              markers=list(df.lat_p99_us), marker_errors=interval(df, "lat_p99_us"),
              marker_name="p99", marker_label="p99 (pooled repetitions) ± its 95% interval",
              marker_thin=claims.thin_marks(df, "lat_p99_us"),
              note=interval_note(df), **flags)
    bar_chart(ws.path(FIG_IOPS), labels, list(df.iops_mean), interval(df, "iops_mean"),
              ylabel="IOPS", title="QD=1 IOPS", note=interval_note(df, percentiles=False),
              **flags)


def print_summary(df: pd.DataFrame) -> None:
    print(f"{'case':<16} {'IOPS':>18} {'mean µs':>10} {'p99 µs':>10} {'IOPS×lat':>9}")
    for r in df.itertuples():
        print(f"{r.case:<16} {md.pm(r.iops_mean, r.iops_ci95):>18} {md.num(r.lat_us_mean):>10} "
              f"{md.num(r.lat_p99_us):>10} {r.little_product:>9.2f}"
              + ("  unstable" if r.unstable else ""))


def record_facts(df: pd.DataFrame, facts: Facts) -> None:
    """The QD=1 latency of the random patterns for the conclusion; Little's Law misses."""
    df = one_state(df)
    random = df[df.rw.str.startswith("rand")]
    for r in (random if not random.empty else df).itertuples():
        facts.headline("qd1_latency", r.pattern,
                       f"{md.pm(r.lat_us_mean, r.lat_us_ci95)} µs mean, p99 {md.num(r.lat_p99_us)} "
                       f"µs ({md.num(r.iops_mean)} IOPS)", r.lat_us_mean, "µs", r.lat_us_std,
                       ci95=r.lat_us_ci95,
                       qualifiers=(claims.host_qualifier(r), claims.write_state(r.regime)))
    off = case_rows(df)[(case_rows(df).little_product - 1).abs() > LITTLE_TOLERANCE]
    if not off.empty:
        facts.anomaly("little", "Little's Law at QD=1 (IOPS × mean latency = 1) misses by "
                      "more than 10% for " + ", ".join(
                          f"{r.pattern} ({r.little_product:.2f})" for r in off.itertuples())
                      + ": time passes outside the measured latency, or more than one I/O was "
                      "in flight.")


def produce(run: SectionRun) -> list[str]:
    df = with_pattern(run.table)
    record_facts(df, run.facts)
    draw_figures(df, run.ws)
    distribution = exceedance.rows_panel(run.results_dir, "QD=1", case_rows(df).itertuples(),
                                         lambda r: r.pattern)
    nines = nines_frame(run, df, lambda r: r.pattern)
    written = [run.write_table(TABLE, df), run.write_table(NINES_TABLE, nines),
               run.ws.show(FIG_LATENCY), run.ws.show(FIG_IOPS),
               *map(run.ws.show, exceedance.write(run, SECTION, [distribution],
                                                  "QD=1 latency distribution")),
               run.write_text(SNIPPET, render_markdown(
                   df, run.setup, run.ws.link, nines,
                   read_manifest(run.results_dir).get("target_kind", ""),
                   drive_fact(run.results_dir, "write_cache")))]
    print_summary(df)
    return written


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__,
                       produce=produce)
