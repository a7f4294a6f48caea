"""Claims: how a finding words a number and its evidence. Each rule is stated here, once.

A section supplies the evidence (the values, their intervals, the test's outcome, the counts of
I/Os above a percentile, the host's verdict on a point); this module turns it into words, so no
sentence of the report says more than its evidence:

1. **A † value is never quoted.** A percentile with fewer than MIN_TAIL_IOS I/Os above it (the
   tables mark it THIN, †) is too thin a tail to stand for the drive: `tail` gives None for it,
   and a finding leaves it out.
2. **A difference whose 95% interval straddles zero is not resolved** (the tables mark such a
   change UNRESOLVED, ‡): neither a gain nor a loss was measured. Two means the repetitions hold
   to within ±EQUAL_PCT of each other are "no difference", which the run did establish. A
   finding none of whose differences is resolved (`none_resolved`) says so once and lists none
   of them: a row of ‡ percentages reads as a result, and the values are in the tables.
3. **A value from a host-bound point says so** (the tables mark the point HOST, ⌂) **and names
   the rule that fired** by its short name (analysis.run.host_ceiling.host_bound_rules, the
   tables' `host_rule`); the ⌂ legend gives each rule's threshold, once (`host_legend`).
4. **A headline keeps its qualifiers** (host-bound, an indication only, still rising).
5. **An objective is judged with its interval**: a p99 whose interval holds the limit neither
   meets nor misses it.
6. **A write number names the state it measured** (`write_state`): the regime its ramp
   declared (after the write cache filled, or no cliff in the ramp), or, for writes as found,
   that which side of a write cache they stood on was not established.

>>> from analysis.core.effects import change
>>> difference(change(130, 5, 100, 5, 3, 3))
'+30% (95% interval +19% to +41%)'
>>> difference(change(104, 8, 100, 8, 3, 3))
'+4.0% ‡'
>>> difference(change(20.0, 0.01, 20.0, 0.02, 3, 3))
'no difference'
>>> none_resolved([change(104, 8, 100, 8, 3, 3), change(96, 8, 100, 8, 3, 3)])
True
>>> none_resolved([change(104, 8, 100, 8, 3, 3), change(130, 5, 100, 5, 3, 3)])
False
>>> tail(4_227, 36) is None, tail(3_129, 368)
(True, 3129)
>>> host_reason("fio_cpu all_cpus")
"fio's CPU, all CPUs busy"
>>> qualified("2,103 MB/s", ["host-bound (fio's CPU)", ""])
"2,103 MB/s [host-bound (fio's CPU)]"
>>> objective(3_129, 966, 10_159, 1_000)
'not resolved'
>>> write_state("no cliff in the ramp's 0.13 GiB at 7.29 MB/s (any write cache is larger)")
'ramp showed no cliff'
>>> write_state("after the write cache filled (the ramp fell from 197 to 20 MB/s at 1.6 GiB)")
'after the write cache filled'
>>> write_state("one level"), write_state("")
('as found: cache state not established', '')
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from analysis.core.effects import Change
from analysis.core.stats import MIN_TAIL_IOS
from analysis.render import markdown as md
from analysis.rules.cases import ONE_LEVEL
from analysis.rules.write_ramp import AFTER_CLIFF, NO_CLIFF, NOT_RECORDED
from analysis.run.host_ceiling import (
    HOST_BOUND_ALL,
    HOST_BOUND_BUSY,
    HOST_BOUND_CPU,
    HOST_BOUND_SHARE,
    RULE_ALL,
    RULE_BUSY,
    RULE_CPU,
    RULE_SHARE,
)

# The marks, each explained once in the report's methodology (analysis.report.build.MARKS)
THIN = "†"  # a percentile with too few I/Os above it: not quoted
UNRESOLVED = "‡"  # a difference whose 95% interval straddles zero
HOST = "⌂"  # a point the host limited

NOT_RESOLVED = "not resolved by this run"
NO_DIFFERENCE = "no difference"
# Two means whose difference's 95% interval lies within ±this (in %) are "no difference": the
# run resolved them as equal to the precision a report quotes (one decimal of 20.0 MB/s is 0.5%)
EQUAL_PCT = 1.0

# A host-bound point's rules: a short name where a finding names the one that fired, and the
# name with its threshold (the thresholds: analysis.run.host_ceiling), once, in the ⌂ legend
HOST_RULE_WORDS = {
    RULE_SHARE: "the ceiling",
    RULE_CPU: "fio's CPU",
    RULE_BUSY: "a busy CPU",
    RULE_ALL: "all CPUs busy",
}
HOST_RULE_THRESHOLDS = {
    RULE_SHARE: f"≥ {HOST_BOUND_SHARE * 100:.0f}% of what the host issues for the shape to a "
                "device with no media, null_blk",
    RULE_CPU: f"≥ {HOST_BOUND_CPU * 100:.0f}% per job",
    RULE_BUSY: f"one ≥ {HOST_BOUND_BUSY * 100:.0f}% busy",
    RULE_ALL: f"≥ {HOST_BOUND_ALL * 100:.0f}% busy together",
}


def host_legend() -> str:
    """The four rules with their thresholds, as the ⌂ legend states them once:
    "the ceiling (≥ 50% of …), fio's CPU (≥ 90% per job), …"."""
    return ", ".join(f"{HOST_RULE_WORDS[k]} ({t})" for k, t in HOST_RULE_THRESHOLDS.items())


# --- rule 1: a † value is never quoted ------------------------------------------------------------
def quotable(tail_ios: float) -> bool:
    """Enough I/Os above a percentile to quote it (an unknown count, NaN, is not held against
    it: a foreign JSON's percentiles carry none)."""
    return math.isnan(tail_ios) or tail_ios >= MIN_TAIL_IOS


def tail(value: float, tail_ios: float):
    """The percentile, or None where it is †."""
    return value if quotable(tail_ios) else None


def row_tail(row, col: str):
    """A table row's percentile (`lat_p99_9_us`), or None where it is †."""
    return tail(getattr(row, col), float(getattr(row, col + "_tail_ios", math.nan)))


def thin_marks(rows, col: str) -> list[bool]:
    """For each row of a table (a DataFrame), whether its percentile `col` is † (a figure's
    label keeps the mark, as tail_cell does in a table). A column with no count of I/Os above
    it (a mean, p50) has none to mark."""
    if col + "_tail_ios" not in rows:
        return [False] * len(rows)
    return [row_tail(r, col) is None for r in rows.itertuples()]


def tail_cell(row, col: str) -> str:
    """A pooled percentile's table cell: the value, marked † where it is not to be quoted."""
    thin = row_tail(row, col) is None
    return md.num(getattr(row, col)) + (f" {THIN}" if thin else "")


# --- rule 2: a straddling interval is not resolved ------------------------------------------------
def verdict(c: Change) -> str:
    """'resolved', 'no difference', 'not resolved' or 'untested' (a spread or a count missing)."""
    if not c.tested:
        equal = c.value == c.reference and c.spread_pct == 0
        return "no difference" if equal else "untested"
    if c.significant:
        return "resolved"
    if -EQUAL_PCT <= c.low_pct and c.high_pct <= EQUAL_PCT:
        return "no difference"
    return "not resolved"


def marked(c: Change, digits: int | None = None) -> str:
    """A change in a list of them: '+30%', '+4.0% ‡' where the test does not show it (the
    mark's legend says "not resolved"), 'no difference' where the run held the two equal."""
    said = verdict(c)
    if said == "no difference":
        return NO_DIFFERENCE
    pct = md.signed_pct(c.pct, digits).replace("±0%", "0%")
    return pct + (f" {UNRESOLVED}" if said == "not resolved" else "")


def difference(c: Change, digits: int | None = None) -> str:
    """A change as a sentence quotes it: marked, with its 95% interval where the test shows it:
    '+30% (95% interval +19% to +41%)'."""
    text = marked(c, digits)
    return text + (f" (95% interval {c.interval_text()})" if resolved(c) else "")


def resolved(c: Change) -> bool:
    return verdict(c) == "resolved"


def unresolved(c: Change) -> bool:
    return verdict(c) == "not resolved"


def none_resolved(changes: Iterable[Change]) -> bool:
    """Every change tested, and none resolved: the finding says that in one clause."""
    found = list(changes)
    return bool(found) and all(unresolved(c) for c in found)


def comparison_note(changes: list[Change]) -> str:
    """'(95% interval +12% to +66%)' of one comparison, ', not resolved by this run (…)' or
    ', no difference'; nothing where it was not tested."""
    c = changes[0] if changes else None
    if c is None:
        return ""
    said = verdict(c)
    if said == "resolved":
        return f" (95% interval {c.interval_text()})"
    if said == "not resolved":
        return f", {NOT_RESOLVED} (95% interval {c.interval_text()})"
    return f", {NO_DIFFERENCE}" if said == "no difference" else ""


# --- rule 3: a host-bound point says so, naming its rule ------------------------------------------
def host_rules(row) -> list[str]:
    """The rules that marked a table row host-bound (its `host_rule`), in their order."""
    if not bool(getattr(row, "host_bound", False)):
        return []
    fired = getattr(row, "host_rule", "")
    return str(fired).split() if isinstance(fired, str) and fired else ["unknown"]


def host_reason(fired: str | Iterable[str]) -> str:
    """The rules by their short names: "fio's CPU, all CPUs busy" (thresholds: host_legend)."""
    keys = fired.split() if isinstance(fired, str) else list(fired)
    return ", ".join(HOST_RULE_WORDS.get(k, "a rule not recorded") for k in keys)


def host_qualifier(row) -> str:
    """A headline's or a finding's qualifier where its point is host-bound, else ''."""
    fired = host_rules(row)
    return f"host-bound ({host_reason(fired)}): the host's limit" if fired else ""


def host_mark(row) -> str:
    """' ⌂' after a host-bound point's label in a table."""
    return f" {HOST}" if host_rules(row) else ""


# --- rule 4: a headline keeps its qualifiers ------------------------------------------------------
def qualified(text: str, qualifiers: Iterable[str]) -> str:
    """The number with what limits it, in brackets, wherever it is quoted."""
    kept = [q for q in qualifiers if q]
    return text + (f" [{'; '.join(kept)}]" if kept else "")


def with_interval(mean: float, half_width: float, unit: str = "") -> str:
    """'3,194 ± 1,311 MB/s': a mean is quoted with its 95% half-width, never alone."""
    return md.pm(mean, half_width) + (f" {unit}" if unit else "")


# --- rule 5: an objective judged with its interval ------------------------------------------------
def objective(value: float, low: float, high: float, limit: float) -> str:
    """A latency against an upper limit: 'meets' when its whole 95% interval is under it,
    'misses' when the whole interval is above, else 'not resolved' (no interval: its value)."""
    if math.isnan(low):
        return "meets" if value <= limit else "misses"
    if low > limit:
        return "misses"
    if not math.isnan(high) and high <= limit:
        return "meets"
    return "not resolved"


# --- rule 6: a write number names the state it measured -----------------------------------------
def write_state(regime) -> str:
    """A write headline's qualifier from its row's `regime` (analysis.rules.cases.regime_text),
    short: the section's own table and its write regimes give the details. '' for a row that
    only reads."""
    text = regime if isinstance(regime, str) else ""
    if text.startswith(AFTER_CLIFF):
        return AFTER_CLIFF
    if text.startswith(NO_CLIFF):
        return "ramp showed no cliff"
    return {"": "", ONE_LEVEL: "as found: cache state not established",
            NOT_RECORDED: "no ramp recorded"}.get(text, "write state not judged")
