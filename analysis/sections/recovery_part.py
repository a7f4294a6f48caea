"""§6, write-cache recovery: the probes after the burst, judged by analysis.rules.recovery.

Right after the burst, wss_burst_test.bash idles for each gap of --recovery-gaps and then writes
at full speed for --recovery-probe seconds (cases recovery-<gap>s, @idle=<gap> in the manifest).
The idle is measured from fio's own output: a job's end is its document's timestamp_ms (written
as the job finishes), its start that minus job_runtime, so the idle before a probe is its start
minus the end of the write before it (the burst, or the previous probe). What the toolkit did in
that time is in rep<k>.gap beside the probe (one "epoch s<TAB>the step that ended then" a line,
lib/loop.bash): an idle longer than planned is explained from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.workspace import Workspace
from analysis.fio.log_files import find_logs
from analysis.fio.log_series import read_per_second
from analysis.fio.output import load_document
from analysis.render import markdown as md
from analysis.render.plots import Panel, Series, line_chart
from analysis.rules import recovery as rules
from analysis.rules.burst import Burst
from analysis.rules.cases import Case
from analysis.run.manifest import matrix_entries
from analysis.sections.facts import Facts

TABLE = "tables/wss_burst_recovery.csv"
FIGURE = "figs/wss_burst_recovery.png"
PREFIX = "recovery-"


@dataclass(frozen=True)
class RecoveryRun:
    result: rules.Recovery | None  # None when the burst had no cliff to recover from
    why_not: str                   # then why
    table: pd.DataFrame            # one row per probe (see docs/outputs.md)
    series: dict                   # case -> per-second MB/s of its probe


def is_probe(name: str) -> bool:
    return name.startswith(PREFIX)


def _span_ms(path: Path) -> tuple[float, float]:
    """(start, end) of the job in epoch ms, from fio's own document."""
    doc = load_document(path)
    end = float(doc["timestamp_ms"])
    return end - float(doc["jobs"][0]["job_runtime"]), end


def _gap_steps(path: Path) -> list[tuple[float, str]] | None:
    """The toolkit's steps between the write before a probe and the probe (rep<k>.gap), None for
    a tree written before they were kept."""
    try:
        table = pd.read_csv(path, sep="\t", dtype={"t": float, "what": str})
    except (OSError, ValueError):
        return None
    return list(zip(table.t.astype(float), table.what.astype(str), strict=True))


def _gap_s(name: str, manifest: dict) -> float:
    """The planned idle: the case's @idle in the manifest, else the number in its name."""
    idle = matrix_entries(manifest).get(name, {}).get("@idle")
    return float(idle) if idle else float(name.removeprefix(PREFIX).removesuffix("s"))


def analyse(results_dir: Path, cases: dict[str, Case], manifest: dict, burst_name: str | None,
            burst: Burst | None, thermal: str = "") -> RecoveryRun | None:
    """The probes after the burst; none computed after a thermal cliff (``thermal`` says why)."""
    names = [n for n in cases if is_probe(n) and cases[n].numbers]
    if not names:
        return None
    names.sort(key=lambda n: _span_ms(results_dir / n / f"rep{cases[n].numbers[0]}.json")[0])
    prev_end = math.nan
    if burst_name is not None and (results_dir / burst_name / "rep1.json").exists():
        prev_end = _span_ms(results_dir / burst_name / "rep1.json")[1]
    probes, series, gaps = [], {}, []
    for name in names:
        rep = f"rep{cases[name].numbers[0]}"
        start, end = _span_ms(results_dir / name / f"{rep}.json")
        bw = read_per_second(find_logs(results_dir / name, rep, "bw")).complete().total()
        series[name] = np.asarray(bw, dtype=float)
        probes.append((_gap_s(name, manifest), (start - prev_end) / 1000, series[name]))
        steps = _gap_steps(results_dir / name / f"{rep}.gap")
        gaps.append(None if steps is None or math.isnan(prev_end) else
                    rules.explain_gap(steps, prev_end / 1000, start / 1000))
        prev_end = end
    why = ""
    if burst is None:
        why = "the burst's results are missing: the probes have no speeds to be read against"
    elif burst.cliff is None:
        why = ("the burst showed no cliff, so there was no filled cache to recover: the "
               "probes ran at the burst's speed")
    elif thermal:
        why = thermal
    result = None
    if not why:
        result = rules.analyse_recovery(probes, burst.plateau.median_MBps, burst.post.median_MBps,
                                        burst.cliff.written_GiB, gaps=gaps)
    rows = []
    for name, (gap, idle, bw) in zip(names, probes, strict=True):
        p = result.probes[names.index(name)] if result else None
        rows.append({"case": name, "gap_s": gap, "idle_s": round(idle, 3),
                     "probe_s": len(bw), "mean_MBps": float(np.mean(bw)) if len(bw) else math.nan,
                     "regained_GiB": p.regained_GiB if p else math.nan,
                     "fast_s": p.fast_s if p else math.nan,
                     "fell_at_s": p.fell_at_s if p and p.fell_at_s is not None else math.nan,
                     "censored": bool(p.censored) if p else False,
                     "used": bool(p.used) if p else False, "note": p.note if p else why})
    return RecoveryRun(result, why, pd.DataFrame(rows), series)


# --- text ---------------------------------------------------------------------------------------
def blocks(r: RecoveryRun) -> list[str]:
    # probes of one length say it once, above the table; of several, in a column
    lengths = sorted({row.probe_s for row in r.table.itertuples()})
    one = len(lengths) == 1  # none: an empty table, whose header keeps the column
    rows = [[f"{row.gap_s:g} s", md.num(row.idle_s), *([] if one else [f"{row.probe_s} s"]),
             md.num(row.mean_MBps),
             ("≥ " if row.censored else "") + (f"{row.regained_GiB:.3f}"
                                               if not math.isnan(row.regained_GiB) else "–"),
             ("yes" + (f": {row.note}" if row.note else "")) if row.used else (row.note or "no")]
            for row in r.table.itertuples()]
    header = ["idle (planned)", "idle measured (s)", *([] if one else ["probe"]), "mean MB/s",
              "regained (GiB)", "in the rate"]
    table = md.table(header, rows, ["r"] * (len(header) - 1) + ["l"])
    probe = f"a {lengths[0]} s probe" if one else "a probe"
    return ["### Write-cache recovery",
            (f"After the burst, idle gaps of growing length, each followed by {probe} at full "
             "speed; the cache regained is each probe's bytes above the post-cliff speed."),
            table]


def findings(r: RecoveryRun) -> list[str]:
    head = "**Write-cache recovery:**"
    if r.result is None:
        return [f"{head} not measured: {r.why_not}."]
    rec = r.result
    if rec.rate_GiB_per_min is None:
        return [f"{head} {rec.message}; see the table for why each probe was left out."]
    text = (f"{head} the drive regained {rec.rate_GiB_per_min:.3g} GiB of fast cache per idle "
            f"minute (a line through the origin over {sum(p.used for p in rec.probes)} probes).")
    if rec.full_how == "observed":
        text += (f" A full cache ({rec.cache_GiB:.2f} GiB, the burst's estimate) was back after "
                 f"{rec.full_idle_s:.0f} s idle (observed).")
    elif rec.full_how == "extrapolated":
        longest = max(p.idle_s for p in rec.probes if p.used)
        # a straight line beyond the longest gap: a drive may recover slower as it fills
        text += (f" At that rate the whole cache ({rec.cache_GiB:.2f} GiB) is back after at "
                 f"least {rec.full_idle_s:.0f} s idle (extrapolated beyond the longest idle "
                 f"measured, {longest:.0f} s).")
    return [text]


def draw(r: RecoveryRun, ws: Workspace) -> list[tuple[str, str]]:
    t = r.table
    # Each probe at, and labelled by, the idle it measured (24 s where 2 s were planned); those
    # the rate's fit leaves out (the table's note says why) drawn apart, as crosses.
    regained = [Series(name, list(part.idle_s / 60), list(part.regained_GiB),
                       point_labels=[f"{i:.0f} s idle" for i in part.idle_s], marker=marker,
                       line=False)
                for name, part, marker in (
                    ("regained per probe in the fit (lower bound where it never fell)",
                     t[t.used], "o"),
                    ("left out of the fit (the table says why)", t[~t.used], "X"))
                if not part.empty]
    if r.result is not None and r.result.rate_GiB_per_min:
        x = [0.0, float(t.idle_s.max()) / 60]
        regained.append(Series(f"{r.result.rate_GiB_per_min:.3g} GiB per idle minute (fit)",
                               x, [v * r.result.rate_GiB_per_min for v in x]))
    cache = (r.result.cache_GiB, "the burst's cache estimate") if r.result else None
    per_s = [Series(f"after {row.idle_s:.0f} s idle", list(range(1, len(r.series[row.case]) + 1)),
                    list(r.series[row.case])) for row in t.itertuples()]
    slow = (r.result.slow_MBps, "post-cliff speed") if r.result else None
    probes = Panel("Each probe, per second", "time in the probe (s)", "MB/s (10^6 B/s)", per_s,
                   hline=slow, from_zero=True, whole_x=True)
    if t.regained_GiB.notna().any():
        line_chart(ws.path(FIGURE), [
            Panel("Cache regained against idle time", "idle (minutes)", "regained (GiB)",
                  regained, hline=cache, from_zero=True), probes],
                   title="Write-cache recovery after the burst")
    else:  # nothing regained to plot (no cliff, no cache): the probes alone, and why
        line_chart(ws.path(FIGURE), [probes],
                   title="Write-cache recovery after the burst: no cache regained to plot",
                   note=f"regained: {r.why_not or 'not measured'}")
    return [("Write-cache recovery: cache regained against idle time", FIGURE)]


def record_facts(r: RecoveryRun, label: str, facts: Facts) -> None:
    """The recovery rate as a headline (and so in the history)."""
    rec = r.result
    if rec is None or rec.rate_GiB_per_min is None:
        facts.headline("cache_recovery", label,
                       f"not measured ({r.why_not or rec.message})")
        return
    text = f"{rec.rate_GiB_per_min:.3g} GiB per idle minute"
    if rec.full_idle_s is not None:
        text += f"; full cache after {rec.full_idle_s:.0f} s idle ({rec.full_how})"
    facts.headline("cache_recovery", label, text, rec.rate_GiB_per_min, "GiB/min")
