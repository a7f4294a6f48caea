"""§4 read/write mix: tables/mix_rw.csv, figs/mix_rw_{bw,latency}.png, out/section_4_mix_rw.md.

Each mix is one randrw job: reads and writes share the queue as they do in an application, and
fio measures each direction on its own. The questions: what a mix moves and how long its I/Os
take against pure reads, what writes cost against reads (the write penalty, which is negative on
a drive whose write cache makes writes faster), whether a mix costs more than its parts, and
which direction pays for the sharing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.core.effects import ALPHA, Change, adjusted, change, gap
from analysis.core.workspace import Workspace
from analysis.render import claims, exceedance
from analysis.render import markdown as md
from analysis.render.bars import BarSet, grouped_bars
from analysis.render.plots import Panel, Series, line_chart
from analysis.rules.cases import one_state
from analysis.sections import SECTIONS, snippet_path
from analysis.sections.common import (
    LATENCY_HEADER,
    SectionRun,
    clat_note,
    flag,
    interval,
    interval_note,
    latency_cells,
    run_section,
    snippet,
    stability_finding,
    standard_note,
)
from analysis.sections.host_part import host_finding

SECTION = "mix_rw"
TABLE = "tables/mix_rw.csv"
FIG_BW = "figs/mix_rw_bw.png"
FIG_LATENCY = "figs/mix_rw_latency.png"
SNIPPET = snippet_path(SECTION)
DIRECTIONS = ("read", "write", "total")
# Without repetitions there is no spread to judge a difference by; below this it counts as small.
SMALL_PCT = 5.0
WORKLOAD_NOTE = ("one job a mix, its reads and writes sharing the queue. `total` pools both: "
                 "IOPS and MB/s add, latency is over all I/Os.")


@dataclass(frozen=True)
class Mix:
    """One mix (one case): its read, write and total table rows."""
    label: str  # "R70/W30"
    case: str
    read_pct: int  # the read share asked for (rwmixread)
    read: pd.Series
    write: pd.Series
    total: pd.Series

    @property
    def has_read(self) -> bool:
        return self.read.iops_mean > 0

    @property
    def has_write(self) -> bool:
        return self.write.iops_mean > 0

    @property
    def mixed(self) -> bool:
        return self.has_read and self.has_write

    @property
    def measured_read_share(self) -> float:
        """The share of the I/Os that were reads (rwmixread is a probability, not a quota)."""
        return self.read.iops_mean / self.total.iops_mean

    def row(self, direction: str) -> pd.Series:
        return {"read": self.read, "write": self.write, "total": self.total}[direction]


def small(c: Change) -> bool:
    """Not a measured difference: the test does not show it (analysis.core.effects: Welch,
    adjusted over the finding's comparisons), or under SMALL_PCT where it cannot test."""
    if c.within_spread is None:
        return abs(c.pct) < SMALL_PCT
    return c.within_spread


def _change_of(a: pd.Series, b: pd.Series, column: str, std_column: str) -> Change:
    return change(a[column], a[std_column], b[column], b[std_column], a.n, b.n)


def mix_label(read_pct: int) -> str:
    return f"R{read_pct}/W{100 - read_pct}"


def mixes(df: pd.DataFrame) -> list[Mix]:
    """The mixes of the table, pure read first (read share descending, ties in table order)."""
    cases = list(dict.fromkeys(df.case))
    found = []
    for case in cases:
        rows = df[df.case == case].set_index("direction")
        if not {"read", "write", "total"} <= set(rows.index):
            continue
        read_pct = int(rows.loc["total", "read_pct"])
        found.append(Mix(mix_label(read_pct), case, read_pct, rows.loc["read"],
                         rows.loc["write"], rows.loc["total"]))
    found.sort(key=lambda m: -m.read_pct)
    labels = [m.label for m in found]
    return [Mix(f"{m.label} ({m.case})", m.case, m.read_pct, m.read, m.write, m.total)
            if labels.count(m.label) > 1 else m for m in found]


def with_mix(df: pd.DataFrame) -> pd.DataFrame:
    """The table in mix order (pure read first), with a `mix` column beside the case."""
    order = {m.case: i for i, m in enumerate(mixes(df))}
    labels = {m.case: m.label for m in mixes(df)}
    df = df[df.case.isin(order)].copy()
    df.insert(1, "mix", [labels[c] for c in df.case])
    rank = df.case.map(order) * len(DIRECTIONS) + df.direction.map(
        {d: i for i, d in enumerate(DIRECTIONS)}).fillna(len(DIRECTIONS))
    return df.assign(_rank=rank).sort_values("_rank", kind="stable").drop(columns="_rank")


def pure_read(ms: list[Mix]) -> Mix | None:
    return next((m for m in ms if m.read_pct == 100 and m.has_read and not m.has_write), None)


def pure_write(ms: list[Mix]) -> Mix | None:
    return next((m for m in ms if m.read_pct == 0 and m.has_write and not m.has_read), None)


def blend_iops(read_share: float, read_iops: float, write_iops: float) -> float:
    """The IOPS a mix would reach if each I/O cost what it costs in its pure run:
    1 / IOPS = r / IOPS_read + (1 - r) / IOPS_write."""
    return 1 / (read_share / read_iops + (1 - read_share) / write_iops)


# ---- findings --------------------------------------------------------------------------------

class Unresolved(str):
    """A comparison finding none of whose differences is resolved (claims rule 2). When every
    comparison of the section is one, findings() says so once (`all_unresolved`)."""


def _tag(c: Change) -> str:
    """' ‡' beside a difference the test does not show (claims: the methodology's legend)."""
    return f" {claims.UNRESOLVED}" if claims.unresolved(c) else ""


def _pct_tagged(c: Change) -> str:
    return claims.marked(c)


def _join(items: list[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _missing(ms: list[Mix]) -> str:
    """'no pure-read (R100/W0) point' / '... and no pure-write ...' or ''."""
    gaps = []
    if pure_read(ms) is None:
        gaps.append("no pure-read (R100/W0) point")
    if pure_write(ms) is None:
        gaps.append("no pure-write (R0/W100) point")
    return " and ".join(gaps)


def _has_p99(*rows: pd.Series) -> bool:
    return not any(math.isnan(r.lat_p99_us) for r in rows)


def throughput_finding(ms: list[Mix]) -> str:
    base = pure_read(ms)
    if base is None:
        listed = "; ".join(f"{m.label} {md.num(m.total.iops_mean)} IOPS "
                           f"({md.num(m.total.bw_MBps_mean)} MB/s)" for m in ms)
        return (f"**Throughput (read + write):** {listed}. This run has no pure-read (R100/W0) "
                "point, so throughput and latency relative to pure read cannot be computed; add "
                "100 to --mix.")
    text = (f"**Throughput against pure read (read + write):** {base.label} reaches "
            f"{md.num(base.total.iops_mean)} IOPS ({md.num(base.total.bw_MBps_mean)} MB/s)")
    others = [m for m in ms if m is not base]
    changes = adjusted([_change_of(m.total, base.total, "iops_mean", "iops_std") for m in others])
    parts = [f"{m.label} {md.num(m.total.iops_mean)} IOPS ({md.num(m.total.bw_MBps_mean)} MB/s), "
             f"{_pct_tagged(c)}" for m, c in zip(others, changes)]
    if not parts:
        return text + "; no other mix was measured to compare with it."
    if claims.none_resolved(changes):
        return Unresolved(text + f"; {_unshown([m.label for m in others])} from it.")
    return text + "; " + "; ".join(parts) + "."


def _unshown(labels: list[str]) -> str:
    """'R70/W30 and R50/W50 are not shown to differ ‡': a finding none of whose differences is
    resolved (claims.none_resolved) names what it compared, and quotes none of them."""
    verb = "is" if len(labels) == 1 else "are"
    return f"{_join(labels)} {verb} not shown to differ {claims.UNRESOLVED}"


def latency_finding(ms: list[Mix]) -> str | None:
    base = pure_read(ms)
    # pure writes against pure reads are the write penalty's, said there once
    others = [m for m in ms if m is not base and m is not pure_write(ms)]
    if base is None or not others:
        return None  # the throughput finding says why
    means = adjusted([_change_of(m.total, base.total, "lat_us_mean", "lat_us_std")
                      for m in others])
    with_p99 = [m for m in others if _has_p99(m.total, base.total)]
    p99s = dict(zip([m.case for m in with_p99], adjusted(
        [_change_of(m.total, base.total, "lat_p99_us", "lat_p99_us_std") for m in with_p99])))
    if claims.none_resolved([*means, *p99s.values()]):
        return Unresolved(
            f"**Latency against pure read:** {_unshown([m.label for m in others])} from "
            f"{base.label} in mean latency over all I/Os ({md.num(base.total.lat_us_mean)} µs)"
            + (" or p99" if p99s else "") + ".")
    parts = []
    for m, mean in zip(others, means):
        text = f"{m.label} {md.num(m.total.lat_us_mean)} µs ({_pct_tagged(mean)})"
        if m.case in p99s:
            text += f", p99 {md.num(m.total.lat_p99_us)} µs ({_pct_tagged(p99s[m.case])})"
        parts.append(text)
    text = (f"**Latency against pure read:** the mean over all I/Os of a mix is "
            f"{md.num(base.total.lat_us_mean)} µs at {base.label} (p99 "
            f"{md.num(base.total.lat_p99_us)} µs); " + "; ".join(parts) + ".")
    if any(math.isnan(m.total.lat_p99_us) for m in others if m.mixed):
        text += (" The p99 of a mix's reads and writes together needs json+ histogram bins, "
                 "which this output lacks.")
    return text


def write_penalty_finding(ms: list[Mix]) -> str:
    r, w = pure_read(ms), pure_write(ms)
    mixed = [m for m in ms if m.mixed]
    in_mix = list(zip(mixed, adjusted([_change_of(m.write, m.read, "lat_us_mean", "lat_us_std")
                                       for m in mixed])))
    in_mix_text = ""
    if in_mix:
        in_mix_text = (" Sharing the queue in the mixes, writes take " + _join(
            [f"{md.num(m.write.lat_us_mean)} µs against {md.num(m.read.lat_us_mean)} µs for "
             f"reads at {m.label} ({_pct_tagged(c)})" for m, c in in_mix]) + ".")
    if r is None or w is None:
        return (f"**Write penalty:** this run has {_missing(ms)}, so the penalty of pure writes "
                "against pure reads cannot be computed without both pure mixes (R100/W0 and "
                "R0/W100)." + in_mix_text)
    pure = [_change_of(w.total, r.total, "iops_mean", "iops_std"),
            _change_of(w.total, r.total, "lat_us_mean", "lat_us_std")]
    if _has_p99(w.total, r.total):
        pure.append(_change_of(w.total, r.total, "lat_p99_us", "lat_p99_us_std"))
    iops, lat, *p99 = adjusted(pure)
    if claims.none_resolved([iops, lat, *p99, *(c for _, c in in_mix)]):
        return Unresolved(
            f"**Write penalty:** {claims.NOT_RESOLVED} {claims.UNRESOLVED}: pure writes "
            f"({w.label}, {md.num(w.total.iops_mean)} IOPS) against pure reads "
            f"({md.num(r.total.iops_mean)} IOPS) in IOPS and latency"
            + (", and writes against reads within each mix" if in_mix else "") + ".")
    penalty = -iops.pct  # the share of the read IOPS lost by writing instead
    ratio = w.total.iops_mean / r.total.iops_mean
    text = (f"**Write penalty:** pure writes ({w.label}) reach {md.num(w.total.iops_mean)} IOPS "
            f"against {md.num(r.total.iops_mean)} for pure reads, a write penalty of "
            f"{md.signed_pct(penalty)}{_tag(iops)}")
    if claims.unresolved(iops):
        pass  # ‡ says it: whether writes and reads differ in rate is not resolved
    elif small(iops):
        text += ": writes and reads run at about the same rate"
    elif penalty < 0:
        text += f", negative: writes are faster than reads on this device ({ratio:.2f}× the IOPS)"
    else:
        text += f": writes reach {ratio * 100:.0f}% of the read IOPS"
    text += (f". Mean latency {md.num(w.total.lat_us_mean)} µs against "
             f"{md.num(r.total.lat_us_mean)} µs ({_pct_tagged(lat)})")
    if p99:
        text += (f", p99 {md.num(w.total.lat_p99_us)} µs against "
                 f"{md.num(r.total.lat_p99_us)} µs ({_pct_tagged(p99[0])})")
    return text + "." + in_mix_text


def mixing_cost_finding(ms: list[Mix]) -> str | None:
    r, w = pure_read(ms), pure_write(ms)
    inside = [m for m in ms if m.mixed]
    if not inside:
        return None  # the who-pays finding says why
    if r is None or w is None:
        return (f"**Mixing cost:** this run has {_missing(ms)}, so what a mix would reach from "
                "the pure runs alone (their blend) cannot be computed.")
    parts, worse, better = [], [], []
    blends = [blend_iops(m.measured_read_share, r.total.iops_mean, w.total.iops_mean)
              for m in inside]
    # The prediction's spread: the larger relative spread of the two pure runs, over the fewer
    # of their repetitions.
    changes = adjusted([change(m.total.iops_mean, m.total.iops_std, pred,
                               pred * max(r.total.iops_cv, w.total.iops_cv), m.total.n,
                               min(r.total.n, w.total.n)) for m, pred in zip(inside, blends)])
    if claims.none_resolved(changes):
        return Unresolved(
            "**Mixing cost:** " + _unshown([m.label for m in inside]) + " from the blend of "
            "the pure runs (1/IOPS = r/IOPS_read + (1−r)/IOPS_write): a cost of mixing is "
            "neither shown nor ruled out.")
    for m, predicted, c in zip(inside, blends, changes):
        share = m.measured_read_share
        parts.append(f"{m.label} (reads {share * 100:.0f}% of the I/Os) would reach "
                     f"{md.num(predicted)} IOPS and reaches {md.num(m.total.iops_mean)} "
                     f"({_pct_tagged(c)})")
        if not small(c):
            (worse if c.pct < 0 else better).append(m.label)
    text = ("**Mixing cost:** if every I/O cost what it costs in its pure run "
            "(1/IOPS = r/IOPS_read + (1−r)/IOPS_write), " + "; ".join(parts) + ".")
    if not worse and not better and any(c.tested for c in changes):
        text += " No mix is shown to differ from that blend: a cost of mixing is not ruled out."
    elif not worse and not better:
        text += " No mix differs measurably from that blend: mixing shows no cost of its own."
    if worse:
        text += (f" {_join(worse)} {'falls' if len(worse) == 1 else 'fall'} short of the blend: "
                 "reads and writes hindering each other (in the drive, or the stack under the "
                 "target) would do this.")
    if better:
        text += (f" {_join(better)} {'beats' if len(better) == 1 else 'beat'} the blend: "
                 "reads and writes overlapping (in the drive, or the stack under the target) "
                 "would do this.")
    return text


def _against_pure(inside: list[Mix], base: Mix, direction: str) -> list[tuple[Mix, Change]]:
    return list(zip(inside, adjusted([_change_of(m.row(direction), base.row(direction),
                                                 "lat_us_mean", "lat_us_std") for m in inside])))


def _p99s_against_pure(direction: str, base: Mix,
                       changes: list[tuple[Mix, Change]]) -> dict[str, Change]:
    with_p99 = [m for m, _ in changes if _has_p99(m.row(direction), base.row(direction))]
    return dict(zip([m.case for m in with_p99], adjusted(
        [_change_of(m.row(direction), base.row(direction), "lat_p99_us", "lat_p99_us_std")
         for m in with_p99])))


def _pure_sentence(direction: str, base: Mix, changes: list[tuple[Mix, Change]]) -> str:
    p99s = _p99s_against_pure(direction, base, changes)

    def one(m: Mix, c: Change) -> str:
        text = f"{md.num(c.value)} µs at {m.label} ({_pct_tagged(c)}"
        if m.case in p99s:
            text += f"; p99 {_pct_tagged(p99s[m.case])}"
        return text + ")"
    return (f"{direction} latency against pure {direction}s "
            f"({md.num(base.row(direction).lat_us_mean)} µs) is "
            + _join([one(m, c) for m, c in changes]))


def who_pays_finding(ms: list[Mix]) -> str:
    inside = [m for m in ms if m.mixed]
    if not inside:
        return ("**Who pays in the mix:** this run has no mixed case (a read share strictly "
                "between 0 and 100), so whether reads or writes suffer more from sharing the "
                "queue cannot be computed.")
    r, w = pure_read(ms), pure_write(ms)
    reads = _against_pure(inside, r, "read") if r else []
    writes = _against_pure(inside, w, "write") if w else []
    if not reads and not writes:
        return (f"**Who pays in the mix:** this run has {_missing(ms)}, so neither direction's "
                "latency in the mixes can be set against its pure run, and whether reads suffer "
                "more than writes cannot be computed; add 100 and 0 to --mix.")
    if reads and writes and claims.none_resolved(
            [c for side, base, found in (("read", r, reads), ("write", w, writes))
             for c in (*(c for _, c in found), *_p99s_against_pure(side, base, found).values())]):
        return Unresolved(
            "**Who pays in the mix:** " + _unshown([m.label for m in inside]) + " from the "
            "pure runs in read or write latency (mean and p99): whether sharing the queue "
            f"slows either direction is {claims.NOT_RESOLVED}.")
    sentences = ([_pure_sentence("read", r, reads)] if reads else []) + (
        [_pure_sentence("write", w, writes)] if writes else [])
    text = "**Who pays in the mix:** " + "; ".join(sentences) + "."
    text = text.replace(":** r", ":** R", 1).replace(":** w", ":** W", 1)
    if not reads or not writes:
        side = "reads'" if not reads else "writes'"
        return (f"{text} This run has {_missing(ms)}, so the {side} side, and whether reads "
                "suffer more than writes, cannot be computed.")
    pairs = [(m, a, b) for (m, a), (_, b) in zip(reads, writes)]
    if all(small(a) and small(b) for _, a, b in pairs):
        return text + (" Neither direction is shown to be slowed by sharing the queue" if all(
                           a.within_spread is not None for _, a, _ in pairs)
                       else f" Neither direction is slowed by more than {SMALL_PCT:.0f}%") + "."
    worse = [(m, _fares_worse(a, b)) for m, a, b in pairs]
    by = {who: [m.label for m, w in worse if w == who] for who in ("reads", "writes", "")}
    every = "every mixed case" if len(pairs) > 1 else f"the mixed case {pairs[0][0].label}"
    for who, other, mine, theirs in (("reads", "writes", 1, 2), ("writes", "reads", 2, 1)):
        if len(by[who]) == len(pairs):
            text += f" {who.capitalize()} suffer more than {other} in {every}"
            if all(small(p[mine]) or p[mine].pct <= 0 for p in pairs):
                text += f", though only relatively: {who} are not measurably slower than alone"
                if all(not small(p[theirs]) and p[theirs].pct < 0 for p in pairs):
                    text += f", while {other} run faster than alone"
            return text + "."
    if len(by[""]) == len(pairs):
        return text + (" Neither direction suffers more: read and write latency move alike "
                       "against their pure runs.")
    parts = [f"{who or 'neither'} at {_join(by[who])}" for who in ("reads", "writes", "")
             if by[who]]
    return text + " Neither suffers more throughout: more for " + "; ".join(parts) + "."


def _fares_worse(a: Change, b: Change) -> str:
    """'reads' / 'writes' / '': whose latency rose more against its own pure run (a = reads',
    b = writes'), when that is measured: the test shows the gap between the two changes
    (analysis.core.effects.gap; beyond SMALL_PCT where it cannot test), or one rose
    measurably while the other did not."""
    def rose(c: Change) -> bool:
        return not small(c) and c.pct > 0
    if rose(a) != rose(b):
        return "reads" if rose(a) else "writes"
    difference, p = gap(a, b)
    if p < ALPHA if not math.isnan(p) else abs(difference) > SMALL_PCT:
        return "reads" if difference > 0 else "writes"
    return ""


def all_unresolved(ms: list[Mix]) -> str:
    """One finding for a section whose every comparison is unresolved (five findings that each
    said "not shown to differ" read as five results)."""
    r, w = pure_read(ms), pure_write(ms)
    inside = [m.label for m in ms if m.mixed]
    return (f"**Against the pure runs:** {_unshown(inside)} from pure reads ({r.label}, "
            f"{md.num(r.total.iops_mean)} IOPS) or pure writes ({w.label}, "
            f"{md.num(w.total.iops_mean)} IOPS) in IOPS, mean or p99 latency, or from the blend "
            "of the two (1/IOPS = r/IOPS_read + (1−r)/IOPS_write); nor are writes from reads, "
            f"pure or within a mix: the costs of writing and of mixing are {claims.NOT_RESOLVED}.")


def stability_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the stability line names: a pure mix's total repeats its one direction."""
    df = with_mix(df)
    pure = {m.case for m in mixes(df) if not m.mixed}
    return df[~((df.direction == "total") & df.case.isin(pure))]


def findings(df: pd.DataFrame) -> list[str]:
    ms = mixes(one_state(df))
    out = [throughput_finding(ms), latency_finding(ms), write_penalty_finding(ms),
           mixing_cost_finding(ms), who_pays_finding(ms)]
    out = [f for f in out if f]
    if len(out) > 1 and all(isinstance(f, Unresolved) for f in out):
        out = [all_unresolved(ms)]
    if int(df.n.max()) < 2:  # no CV either: the stability line would have nothing to judge
        out.append(f"**Stability:** one repetition per mix, so no spread is known and "
                   f"differences under {SMALL_PCT:.0f}% are read as none; add repetitions "
                   "for error bars.")
    else:
        out.append(stability_finding(stability_rows(df), lambda r: f"{r.mix} {r.direction}"))
    out.append(host_finding(with_mix(df), lambda r: r.mix))
    return out + clat_note(df)


# ---- snippet, figures, summary ---------------------------------------------------------------

def workload(df: pd.DataFrame) -> str:
    """'4 KiB random, QD=32, 1 job': what every mix shares, from the JSON's own options."""
    def values(col):
        return ", ".join(str(v) for v in dict.fromkeys(df[col]))
    bs = ", ".join(md.bs_label(int(b)) if str(b).isdigit() else str(b)
                   for b in dict.fromkeys(df.bs))
    kinds = {"random" if str(rw).startswith("rand") else "sequential" for rw in df.rw}
    jobs = values("numjobs")
    return (f"{bs} {'/'.join(sorted(kinds))}, QD={values('iodepth')}"
            + ("" if jobs == "1" else f" × {jobs} jobs"))


def render_markdown(df: pd.DataFrame, setup: str, link=md.link_from_out) -> str:
    rows, split = [], set()
    # a pure mix's rows: its one direction (its total repeats it, its other direction is empty)
    for r in stability_rows(df).itertuples():
        mark = flag(r)
        if r.iops_mean == 0:
            continue
        if getattr(r, "regime_split", False) is True:  # no mean in any direction: one row
            if r.case not in split:
                split.add(r.case)
                rows.append([r.mix, mark.strip(), *["–"] * (2 + len(LATENCY_HEADER))])
            continue
        rows.append([r.mix, r.direction + mark, md.pm(r.iops_mean, r.iops_ci95),
                     md.pm(r.bw_MBps_mean, r.bw_MBps_ci95), *latency_cells(r)])
    table = md.table(["mix", "direction", "IOPS", "MB/s", *LATENCY_HEADER], rows,
                     align=["l", "l"] + ["r"] * 5, grouped=1)
    return snippet(f"## {SECTIONS[SECTION].heading}", setup,
                   [f"Workload: {workload(df)}; {WORKLOAD_NOTE}", table, standard_note(df)],
                   [("MB/s per mix, read and write", FIG_BW),
                    ("Mean and p99 latency per mix and direction", FIG_LATENCY),
                    ("Share of I/Os slower than each latency, per mix",
                     exceedance.figure(SECTION))], findings(df), link)


def draw_figures(df: pd.DataFrame, ws: Workspace) -> None:
    ms = mixes(df)
    groups = [m.label for m in ms]
    title = workload(df)
    note = interval_note(df)
    sets = [BarSet(d, [m.row(d).bw_MBps_mean for m in ms], [m.row(d).bw_MBps_ci95 for m in ms])
            for d in DIRECTIONS]
    grouped_bars(ws.path(FIG_BW), groups, sets, ylabel="MB/s (10^6 B/s)",
                 title=f"Throughput per mix ({title})",
                 note=f"{interval_note(df, percentiles=False)}; total = read + write")
    # The mixes on a scale of their write share (0, 30, 50, 100%), so the line between two
    # mixes spans what lies between them, not an equal step per mix.
    shares = [100 - m.read_pct for m in ms]
    panels = []
    for column, name in (("lat_us_mean", "mean"), ("lat_p99_us", "p99")):
        series = []
        for d in ("read", "write"):
            rows = pd.DataFrame([m.row(d) for m in ms])
            keep = list(rows.iops_mean > 0)
            rows = rows[keep]
            series.append(Series(d, [x for x, k in zip(shares, keep) if k], list(rows[column]),
                                 interval(rows, column),
                                 host_bound=[bool(v) for v in rows.get("host_bound", [])],
                                 thin=claims.thin_marks(rows, column)))
        panels.append(Panel(f"{name} total latency per direction", "writes in the mix (%)",
                            f"{name} latency (µs)", series, xticks=shares,
                            xticklabels=[f"{x}%\n{g}" for x, g in zip(shares, groups)],
                            from_zero=True))
    line_chart(ws.path(FIG_LATENCY), panels, title=f"Latency per mix ({title})", note=note)


def print_summary(df: pd.DataFrame) -> None:
    print(f"{'mix':<10} {'direction':<9} {'IOPS':>18} {'MB/s':>8} {'mean µs':>10} {'p99 µs':>10}")
    for r in with_mix(df).itertuples():
        iops = md.pm(r.iops_mean, r.iops_ci95) if r.iops_mean else "0"
        bw = md.num(r.bw_MBps_mean) if r.iops_mean else "0"
        print(f"{r.mix:<10} {r.direction:<9} {iops:>18} {bw:>8} {md.num(r.lat_us_mean):>10} "
              f"{md.num(r.lat_p99_us):>10}" + ("  unstable" if r.unstable else ""))


def produce(run: SectionRun) -> list[str]:
    df = run.table
    draw_figures(df, run.ws)
    # Each mix's reads and its writes: a panel per direction, a curve per mix that issued it.
    distribution = [exceedance.Panel(f"{d}s", [c for m in mixes(df) if (
        c := exceedance.case_curve(run.results_dir, m.case, d, m.label,
                                     bool(getattr(m.row(d), "host_bound", False))))])
        for d in DIRECTIONS[:2]]
    written = [run.write_table(TABLE, with_mix(df)), run.ws.show(FIG_BW),
               run.ws.show(FIG_LATENCY),
               *map(run.ws.show, exceedance.write(
                   run, SECTION, distribution, f"Latency distribution per mix ({workload(df)})")),
               run.write_text(SNIPPET, render_markdown(df, run.setup, run.ws.link))]
    print_summary(df)
    return written


def main(argv: list[str]) -> int:
    return run_section(argv, section=SECTION, description=__doc__, produce=produce)
