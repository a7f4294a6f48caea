"""What the history shows: figs/history_<headline>.png and the markdown of out/history.md (and of
the report's history section).

Each figure is one headline kind (QD=1 latency, peak random IOPS, ...), a panel per device, a
line per thing it was measured on, a point per run with its repetitions' error bar; firmware
changes (red) and kernel changes (grey) are marked on the time axis, and a step change is drawn
as the two levels either side of it. Drifted devices (any step) come first, each step with its
date, its size, the run that started it and what changed around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from analysis.core.workspace import Workspace
from analysis.history import trends
from analysis.history.trends import Series, around, device_key, parse_date, setting_changes
from analysis.render import markdown as md
from analysis.render.plots import COLORS
from analysis.sections import SECTIONS
from analysis.sections.facts import HEADLINE_KINDS


def figure_path(kind: str, prefix: str = "history") -> str:
    return f"figs/{prefix}_{kind}.png"


@dataclass
class Device:
    key: str
    runs: list[dict]  # in time order
    series: list[Series]

    @property
    def drifted(self) -> bool:
        return any(s.steps for s in self.series)

    @property
    def name(self) -> str:
        model = next((r["model"] for r in reversed(self.runs) if r.get("model")), None)
        return f"{model} ({self.key})" if model else self.key


def devices(runs: list[dict], series: list[Series]) -> list[Device]:
    """The devices, drifted ones first, then by name."""
    out: dict[str, Device] = {}
    for run in runs:
        out.setdefault(device_key(run), Device(device_key(run), [], [])).runs.append(run)
    for s in series:
        out[s.device].series.append(s)
    return sorted(out.values(), key=lambda d: (not d.drifted, d.key))


def _label(s: Series) -> str:
    label = f"{s.label} (§{SECTIONS[s.section].number})" if s.section in SECTIONS else s.label
    return f"{label} [{s.settings}]" if s.settings else label


def draw(path: Path, kind: str, devs: list[Device]) -> Path | None:
    """One headline's figure: a panel per device that has it. None when no device has it."""
    shown = [(d, [s for s in d.series if s.kind == kind]) for d in devs]
    shown = [(d, ss) for d, ss in shown if ss]
    if not shown:
        return None
    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 2.6 + 2.2 * len(shown)), dpi=110,
                             squeeze=False, sharex=True)
    for ax, (dev, series) in zip(axes[:, 0], shown):
        for color, s in zip(COLORS * 3, series):
            dates = [p.date for p in s.points]
            ax.errorbar(dates, s.values, yerr=[p.error for p in s.points], marker="o",
                        ms=4, capsize=3, color=color, label=_label(s))
            for step in s.steps:
                before, after = dates[:step.index], dates[step.index:]
                ax.hlines([step.before, step.after], [before[0], after[0]],
                          [before[-1], after[-1]], colors=color, linestyles="--", linewidth=1)
                ax.annotate(f"step {step.pct:+.0f}%", (after[0], step.after), xytext=(4, 6),
                            textcoords="offset points", fontsize=8, color=color,
                            fontweight="bold")
        for i, name, change in setting_changes(dev.runs):
            if name in ("firmware", "kernel"):
                style = ({"color": "#E45756", "linestyle": "-"} if name == "firmware" else
                         {"color": "#888", "linestyle": ":"})
                when = parse_date(dev.runs[i]["run_date"])
                ax.axvline(when, linewidth=1.2, **style)
                ax.annotate(f"{name} {change}", (when, 1), xycoords=("data", "axes fraction"),
                            xytext=(3, -10), textcoords="offset points", fontsize=7,
                            rotation=0, color=style["color"], va="top")
        unit = series[0].unit
        ax.set_ylabel(f"{unit}" if unit else "value")
        ax.set_title(dev.name + (" — drifted" if dev.drifted and any(s.steps for s in series)
                                 else ""), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[-1, 0].xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
    fig.autofmt_xdate()
    fig.suptitle(f"{HEADLINE_KINDS[kind]} over runs (error bar: each run's 95% interval over "
                 "its repetitions; ± std for runs recorded before intervals)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def draw_all(ws: Workspace, devs: list[Device], prefix: str = "history") -> dict[str, str]:
    """figs/<prefix>_<kind>.png for every headline kind some device has: {kind: path}."""
    written = {}
    for kind in HEADLINE_KINDS:
        if draw(ws.path(figure_path(kind, prefix)), kind, devs) is not None:
            written[kind] = figure_path(kind, prefix)
    return written


def _day(run: dict) -> str:
    return run["run_date"][:10]


def _num(value: float, unit: str) -> str:
    return f"{md.num(value)} {unit}".strip()


ALARM_RULE = (
    "A step is a level change found by a CUSUM test over the runs; a recent change is the last "
    "1-4 runs against those before. Each series' p-value is referred to a null simulated for "
    "its own number of runs and for every lag-1 autocorrelation up to 0.9 its runs cannot rule "
    "out, and the p-values of each device's series are adjusted together (Benjamini–Hochberg "
    f"at {trends.ALPHA:g}), so the report of a drive that did not change shows an alarm in at "
    f"most {trends.ALPHA:.0%} of reports (8-30 series of 8-52 runs, autocorrelation up to 0.8: "
    "bench/statistics). "
    f"A step must also be at least {trends.MIN_STEP_PCT:g}% with {trends.MIN_RUNS} runs either "
    "side. Runs with a different --state, region, peak search or --jobs are separate series "
    "(their settings in brackets).")


def _p(p: float) -> str:
    return "–" if math.isnan(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


LOWER_IS_BETTER = {"qd1_latency"}  # every other headline is better higher (IOPS, MB/s, ...)


def verdict(kind: str, pct: float) -> str:
    return "worse" if (pct > 0) == (kind in LOWER_IS_BETTER) else "better"


def step_rows(dev: Device) -> list[list[str]]:
    rows = []
    for s in dev.series:
        for step in s.steps:
            run = s.points[step.index].run
            changed = around(run, dev.runs)
            rows.append([HEADLINE_KINDS[s.kind], _label(s),
                         (f"{_day(run)}, run {step.index + 1} of {len(s.points)} "
                          f"(`{run['run_id']}`)"
                          + (f"; the last {step.recent} run(s)" if step.recent else "")),
                         f"{_num(step.before, s.unit)} → {_num(step.after, s.unit)}",
                         f"{step.pct:+.1f}% ({verdict(s.kind, step.pct)})", _p(step.p),
                         "; ".join(changed) if changed else "nothing recorded"])
    return rows


def device_rows(devs: list[Device]) -> list[list[str]]:
    rows = []
    for d in devs:
        firmware = list(dict.fromkeys(r["firmware"] for r in d.runs if r.get("firmware")))
        rows.append([d.name, str(len(d.runs)), _day(d.runs[0]), _day(d.runs[-1]),
                     " → ".join(firmware) or "–",
                     f"**drifted** ({sum(len(s.steps) for s in d.series)} step(s))"
                     if d.drifted else "steady"])
    return rows


def render(ws: Workspace, devs: list[Device], figures: dict[str, str], *, heading: str,
           scope: str, level: int = 1, link=None) -> str:
    """The history's markdown: the drifted devices with their steps, the devices, the figures
    and the runs. `level` 2 nests it in a report (its subsections get ###)."""
    link = link or ws.link
    h, sub = "#" * level, "#" * (level + 1)
    parts = [f"{h} {heading}", "", scope, ""]
    drifted = [d for d in devs if d.drifted]
    parts += [f"{sub} Step changes", ""]
    if not drifted:
        parts += [f"No device's headlines show a step change. {ALARM_RULE}", ""]
    else:
        parts += [ALARM_RULE, ""]
    for d in drifted:
        parts += [f"**{d.name}** drifted:", "",
                  md.table(["headline", "measured on", "started at", "level", "size", "p",
                            "what changed around it"], step_rows(d),
                           ["l", "l", "l", "r", "r", "r", "l"]), ""]
    parts += [f"{sub} Devices", "",
              md.table(["device", "runs", "first", "last", "firmware", "trend"],
                       device_rows(devs), ["l", "r", "l", "l", "l", "l"]), ""]
    for kind, path in figures.items():
        parts += [md.image(f"{HEADLINE_KINDS[kind]} over runs", link(path)), ""]
    runs = sorted((r for d in devs for r in d.runs), key=lambda r: r["run_date"])
    parts += [f"{sub} Runs", "",
              md.table(["date", "run", "device", "firmware", "kernel", "fio", "profile",
                        "toolkit"],
                       [[r["run_date"].replace("T", " ").removesuffix("Z"), f"`{r['run_id']}`",
                         device_key(r), r.get("firmware") or "–",
                         (r.get("kernel") or "–").split(" #")[0], r.get("fio_version") or "–",
                         r.get("profile") or "–", r.get("git_revision") or "–"] for r in runs],
                       ["l"] * 8), ""]
    return "\n".join(parts)


SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """▁▃█▇: the series in one line of text, for a terminal or a CI job's log."""
    low, high = min(values), max(values)
    if high == low:
        return SPARKS[3] * len(values)
    return "".join(SPARKS[round((v - low) / (high - low) * (len(SPARKS) - 1))] for v in values)


def text_lines(devs: list[Device], last: int = 40) -> list[str]:
    """Each device's series as sparklines (its last `last` runs), steps named: the terminal's
    and a CI log's view of the trends."""
    out = []
    for d in devs:
        out.append(f"{d.name}: {len(d.runs)} run(s)" + (" — DRIFTED" if d.drifted else ""))
        for s in d.series:
            values = s.values[-last:]
            line = (f"  {HEADLINE_KINDS[s.kind]:<28.28} {_label(s):<28.28} {sparkline(values)} "
                    f"{_num(values[0], s.unit)} → {_num(values[-1], s.unit)}")
            for step in s.steps:
                run = s.points[step.index].run
                what = f"the last {step.recent} run(s)" if step.recent else "step"
                line += f"; {what} {step.pct:+.1f}% at run {step.index + 1} ({_day(run)})"
            out.append(line)
    return out


def mermaid(devs: list[Device], last: int = 30) -> str:
    """The trends as Mermaid line charts (xychart-beta), which a GitHub job summary draws: one
    chart per device and series, over its last `last` runs."""
    parts = []
    for d in devs:
        for s in d.series:
            points = s.points[-last:]
            dates = ", ".join(f'"{p.run["run_date"][5:10]}"' for p in points)
            values = ", ".join(f"{p.value:.6g}" for p in points)
            title = f"{d.key}: {HEADLINE_KINDS[s.kind]}, {_label(s)} ({s.unit})".replace('"', "'")
            parts += ["```mermaid", "xychart-beta", f'  title "{title}"', f"  x-axis [{dates}]",
                      f'  y-axis "{s.unit or "value"}"', f"  line [{values}]", "```", ""]
    return "\n".join(parts)
