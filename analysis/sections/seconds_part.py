"""Each case second by second: its IOPS and mean latency each second, every repetition, so a
reader sees whether a mean hides a stall, a drift or a cliff (issue 42). From fio's 1 s averaged
logs, which every case writes (rep<k>_iops.<job>.log and rep<k>_lat.<job>.log; lib/jobfile.bash,
second_log_lines); one table, tables/<section>_per_second.csv, and one figure, a row per case,
which the section's snippet ends with (the HTML report embeds it).

Only the seconds a repetition ran in full are kept (PerSecond.complete): fio's last window is
cut short by the job's end. A mixed case's latency is its directions' means weighted by their
I/Os that second. Results from before every case logged (before 2026-11-29) have a write case's
bandwidth log only: its IOPS are that rate over the block size, its latency unknown (empty).

    >>> frame = seconds_frame(run)               # doctest: +SKIP
    >>> frame.query("case == 'randread-4k' and rep == 1")[["t_s", "iops"]]  # doctest: +SKIP
       t_s    iops
    0  1.0  2213.0
    1  2.0  2301.0
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.fio.log_files import FioLogError, latency_unit, logged
from analysis.fio.log_series import read_per_second
from analysis.render import markdown as md
from analysis.render.plots import SecondsRow, seconds_grid

COLUMNS = ["case", "shape", "rep", "t_s", "iops", "lat_us_mean"]
HEADING = "### Each second"
ALT = "Each second"


def _weighted_latency(iops, lat) -> np.ndarray:
    """Mean latency each second over the directions, each weighted by its I/Os that second."""
    n = min(len(iops.seconds), len(lat.seconds))
    num, den = np.zeros(n), np.zeros(n)
    for d in lat.directions:
        count, mean = iops.direction(d)[:n], lat.direction(d)[:n]
        ok = ~np.isnan(mean) & (count > 0)
        num[ok] += count[ok] * mean[ok]
        den[ok] += count[ok]
    out = np.full(len(iops.seconds), math.nan)
    out[:n] = np.where(den > 0, num / np.where(den > 0, den, 1), math.nan)
    return out


def repetition_seconds(case_dir: Path, rep: int, bs: int, fio_version: str,
                       window_ms: int = 1000) -> pd.DataFrame:
    """One repetition's seconds: t_s, iops, lat_us_mean. Empty where it logged neither, or a
    log is no whole second's (a run of about a second: a job's log empty, or rows too few to
    be 1 s averages): its numbers are the section table's, the logs stay on disk."""
    empty = pd.DataFrame(columns=["t_s", "iops", "lat_us_mean"])
    try:
        if iops_logs := logged(case_dir, f"rep{rep}", "iops"):
            iops = read_per_second(iops_logs, window_ms=window_ms).complete()
            lat_logs = logged(case_dir, f"rep{rep}", "lat")
            lat = (_weighted_latency(iops, read_per_second(
                lat_logs, lat_unit=latency_unit(fio_version), window_ms=window_ms).complete())
                if lat_logs else np.full(len(iops.seconds), math.nan))
            return pd.DataFrame({"t_s": iops.seconds, "iops": iops.total(), "lat_us_mean": lat})
        if bw_logs := logged(case_dir, f"rep{rep}", "bw"):  # results from before every case logged
            bw = read_per_second(bw_logs, window_ms=window_ms).complete()
            return pd.DataFrame({"t_s": bw.seconds, "iops": bw.total() * 1e6 / bs,
                                 "lat_us_mean": math.nan})
    except FioLogError:
        return empty
    return empty


def case_title(r, titles: dict[str, str]) -> str:
    """What tells a case from the section's others of the same shape: the section's own words
    for it (SectionRun.titles), or its part of §6 or of the peak search."""
    if r.case in titles:
        return titles[r.case]
    extras = []
    part, _, rest = r.case.partition("-")
    if part == "burst":
        extras.append("the burst")
    elif part == "recovery":
        extras.append(f"probe after {rest.removesuffix('s')} s idle")
    elif part == "peak":
        extras.append("peak search")
    return ", ".join([md.shape(r.rw, r.bs, r.read_pct, r.iodepth, r.numjobs), *extras])


def seconds_frame(run) -> pd.DataFrame:
    """Every case's repetitions, second by second, in the section table's order (COLUMNS)."""
    parts = []
    for r in run.table.drop_duplicates("case").itertuples():
        case = run.case(r.case)
        if case is None:
            continue
        label = case_title(r, run.titles)
        for k, group in zip(case.numbers, case.reps):
            # the window the job logged at (log_avg_msec: the toolkit's 1000, or a case's own)
            window = int(group.options.get("log_avg_msec") or 1000)
            rows = repetition_seconds(run.results_dir / r.case, k, int(r.bs), group.fio_version,
                                      window)
            if not rows.empty:
                parts.append(rows.assign(case=r.case, shape=label, rep=k))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.concat(parts, ignore_index=True)[COLUMNS]
    # two cases the words do not tell apart are told by their ids
    titles = frame.drop_duplicates("case")
    twice = titles[titles.duplicated("shape", keep=False)].case
    frame.loc[frame.case.isin(twice), "shape"] += " (" + frame.case + ")"
    return frame


def draw(frame: pd.DataFrame, path: Path) -> Path:
    rows = []
    for (_, shape), case in frame.groupby(["case", "shape"], sort=False):
        rows.append(SecondsRow(shape, [(f"rep {k}", list(rep.t_s), list(rep.iops),
                                        list(rep.lat_us_mean))
                                       for k, rep in case.groupby("rep", sort=True)]))
    return seconds_grid(path, rows, title=("Each second of each case: fio's 1 s averages, a line "
                                           "per repetition, its last, partial second left out"))


def produce(run, section: str) -> tuple[list[str], str]:
    """The table and figure written, and the snippet's part; nothing where no case logged."""
    frame = seconds_frame(run)
    if frame.empty:
        return [], ""
    table, figure = f"tables/{section}_per_second.csv", f"figs/{section}_per_second.png"
    written = [run.write_table(table, frame)]
    draw(frame, run.ws.path(figure))
    written.append(run.ws.show(figure))
    return written, f"\n{HEADING}\n\n{md.image(ALT, run.ws.link(figure))}\n"
