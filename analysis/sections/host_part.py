"""The host's part of every section's findings: which points the host limited, not the drive
(analysis.run.host_ceiling's rules, read from the table's host columns), as the Host line each
snippet ends with and as an anomaly for the report."""

from __future__ import annotations

import collections
from collections.abc import Callable

import pandas as pd

from analysis.render import claims
from analysis.rules.cases import case_rows
from analysis.run.host_ceiling import (
    CEILING_LABELS,
    HOST_BOUND_SHARE,
    PUNTED,
)
from analysis.sections.facts import Anomaly


def host_bound_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the host limited, one per case (analysis.run.host_ceiling)."""
    rows = case_rows(df)
    return rows[rows.host_bound.astype(bool)]


def _ceiling_label(df: pd.DataFrame) -> str:
    """Where the ceiling was measured, for the Host line: 'measured on null_blk (no media)' and
    so on; io_uring shapes whose zram ceiling was a kernel worker's are said to have none."""
    found = [d for d in dict.fromkeys(df.get("host_ceiling_device", pd.Series(dtype=str)))
             if isinstance(d, str) and d]
    measured = "; ".join(CEILING_LABELS.get(d, d) for d in found if d != PUNTED)
    if not found:
        measured = CEILING_LABELS["null"]
    parts = [f"measured on {measured}"] if measured else []
    return "; ".join(parts + [CEILING_LABELS[PUNTED]] * (PUNTED in found))


NO_CEILING = ("no host ceiling was measured for these results (a fleet run, --no-host-ceiling, "
              "or results from before the toolkit measured it)")


NAMED_POINTS = 3  # host-bound points the line names; more are counted by rule


# How the Host-bound finding begins (the report finds it by this: common.repeated_lines)
HOST_BOUND_LEAD = f"**Host-bound** ({claims.HOST})"


def host_finding(df: pd.DataFrame, label: Callable[[object], str]) -> str:
    """The line every snippet ends with, after stability: which points the host limited."""
    devices = set(df.get("host_ceiling_device", pd.Series(dtype=str)))
    no_ceiling = df.host_ceiling_iops.isna().all() and PUNTED not in devices
    bound = host_bound_rows(df)
    if no_ceiling and bound.empty:
        return (f"**Host:** {NO_CEILING}; the CPU columns still show fio's own load, and a "
                "point that kept a CPU busy is still marked host-bound.")
    if bound.empty:
        if df.get("cpu_busiest_pct", pd.Series(dtype=float)).notna().any():
            # every rule was tested: the methodology's ⌂ states them once
            # the methodology's ⌂ names null_blk; another ceiling is named here
            label = _ceiling_label(df)
            where = "" if label == f"measured on {CEILING_LABELS['null_blk']}" else f"; the host's ceiling: {label}"
            return (f"**Host:** no point met a host-bound rule ({claims.HOST}{where}): by this "
                    "test, the drive set the pace.")
        return (f"**Host:** no point reached {HOST_BOUND_SHARE * 100:.0f}% of what this host can "
                f"issue for its shape (its ceiling, {_ceiling_label(df)}) or kept fio's CPUs "
                "busy (no per-CPU load was recorded for these results): by this test, the drive "
                "set the pace.")
    # the words say what was tested, no more (each point's load, its share of the ceiling and its
    # CPUs' busy shares, is in the section's CSV): a few points named with the rules that fired;
    # more, which the table's marks name, counted by rule
    if len(bound) <= NAMED_POINTS:
        groups: dict[str, list[str]] = {}
        for r in bound.itertuples():
            groups.setdefault(claims.host_reason(claims.host_rules(r)), []).append(label(r))
        listed = "; ".join(f"{', '.join(points)} ({why})" for why, points in groups.items())
    else:
        counts = collections.Counter(k for r in bound.itertuples() for k in claims.host_rules(r))
        listed = (f"{len(bound)} of {len(case_rows(df))} points (" + ", ".join(
            f"{claims.host_reason(k)} at {n}" for k, n in counts.most_common())
            + "; each point's rules: `host_rule` in the section's CSV)")
    return (f"{HOST_BOUND_LEAD}: {listed}: the host's limit as much as the drive's."
            + (f" {NO_CEILING.capitalize()}: they were marked by the CPUs' "
               "load alone." if no_ceiling else ""))


def host_anomaly(table: pd.DataFrame) -> Anomaly | None:
    """For the report's Anomalies table: how many points the host limited, and by which rules."""
    bound = host_bound_rows(table)
    if bound.empty:
        return None
    fired = dict.fromkeys(k for r in bound.itertuples() for k in claims.host_rules(r))
    return Anomaly("host_bound", f"{len(bound)} of {len(case_rows(table))} points host-bound "
                                 f"({claims.host_reason(fired)})")
