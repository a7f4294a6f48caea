"""bench/fidelity's report: what was compared and how, one row per case, metric and target
(the toolkit, the best plain fio, the ratio, the verdict), every plain configuration's spread,
and io_uring's own options."""

from __future__ import annotations

import os
import statistics
import subprocess
import textwrap

from bench.lib.fidelity.model import (
    ENGINES,
    LATENCY,
    PEAK,
    PEAK_WORKLOAD,
    QD1_CASES,
    TARGETS,
    THROUGHPUT,
    TK_SRC,
    UNIT,
    URING_QD,
    URING_WORKLOAD,
    Config,
)
from bench.lib.fidelity.search import best_config, by_config, judge
from bench.lib.fidelity.state import Bench


def num(v: float | None) -> str:
    """A number in a table cell: 3 to 4 significant digits, K and M for large ones."""
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e4:
        return f"{v / 1e3:.1f}K"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def block(title: str, text: str) -> str:
    """A titled paragraph of the report's header, wrapped at 96 columns; lines of `text` kept."""
    indent = " " * 11
    lines = [textwrap.fill(line, 96, initial_indent=indent, subsequent_indent=indent)
             for line in text.splitlines()]
    return title.ljust(11) + "\n".join(lines)[11:]


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return num(mean) if len(values) == 1 else f"{num(mean)} [{num(min(values))}-{num(max(values))}]"


def peak_config(headline: str) -> str:
    """The configuration a peak headline names, for the table ('QD 32 x 2 jobs with psync' from
    '... IOPS at QD 32 x 2 jobs with psync (6.1 µs mean, ...)'); the whole text is printed below
    the table."""
    at = headline.rfind(" IOPS at ")
    return headline[at + len(" IOPS at "):].split(" (", 1)[0] if at >= 0 else ""


def verdict_rows(bench: Bench) -> list[list[str]]:
    """One row per (case, metric, target): toolkit, best plain fio, ratio, verdict."""
    out = []
    for w in (*QD1_CASES, PEAK_WORKLOAD):
        kinds = ((PEAK, "iops"),) if w is PEAK_WORKLOAD else (
            (THROUGHPUT, w.metric), (LATENCY, "lat_us"))
        for kind, metric in kinds:
            for target in bench.targets:
                mine = [s for s in bench.samples if s.target == target.key
                        and s.workload == w.name]
                best = best_config(mine, metric, bench.settings.trials, metric == "lat_us")
                if w is PEAK_WORKLOAD:
                    tk_value = target.peak[0] if target.peak else None
                    tk_note = peak_config(target.peak[1]) if target.peak else ""
                else:
                    column = {"lat_us": "lat_us_mean"}.get(metric, f"{metric}_mean")
                    tk_value = target.qd1.get(w.name, {}).get(column)
                    tk_note = target.qd1_config.get(w.name, "")
                ratio, ok = judge(kind, tk_value, best.mean if best else None)
                op, bound = TARGETS[kind]
                plain = "-" if best is None else (
                    f"{num(best.mean)} [{num(best.low)}-{num(best.high)}] {best.config}"
                    if best.n > 1 else f"{num(best.mean)} {best.config}")
                label = "peak rand-read-4k IOPS" if w is PEAK_WORKLOAD else \
                    f"{w.name} {UNIT[metric]}"
                out.append([label, target.key,
                            f"{num(tk_value)}{f' ({tk_note})' if tk_note else ''}", plain,
                            "-" if ratio is None else f"{ratio:.2f}", f"{op} {bound:.2f}",
                            "PASS" if ok else "FAIL"])
    return out


def detail_lines(bench: Bench) -> list[str]:
    """Every plain configuration's mean [min-max] over the trials, per target."""
    lines = []
    for target in bench.targets:
        lines.append(f"{target.key}:")
        for w in QD1_CASES:
            for e in ENGINES:
                v = [s.measure for s in bench.samples if s.target == target.key
                     and s.workload == w.name and s.config == Config(e) and s.trial >= 1]
                if v:
                    lines.append(f"  {w.name:<13} {e:<9} "
                                 f"{spread([m.get(w.metric) for m in v])} {UNIT[w.metric]}, "
                                 f"{spread([m.lat_us for m in v])} µs mean")
        screened = sorted((s for s in bench.samples if s.target == target.key
                           and s.trial == 0), key=lambda s: -s.measure.iops)
        lines.append(f"  peak screening ({len(screened)} configurations, "
                     f"{bench.settings.screen_runtime_s} s each), IOPS best first:")
        for i in range(0, len(screened), 4):
            lines.append("    " + "; ".join(f"{s.config} {num(s.measure.iops)}"
                                           for s in screened[i:i + 4]))
        trial_samples = [s for s in bench.samples if s.target == target.key
                         and s.workload == PEAK_WORKLOAD.name and s.trial >= 1]
        for config, values in by_config(trial_samples, "iops").items():
            lines.append(f"  peak finalist {config!s:<22} {spread(values)} IOPS over the "
                         "trials")
        if target.peak:
            lines.append(f"  toolkit's peak: {target.peak[1]}")
    return lines


def uring_lines(bench: Bench) -> list[str]:
    """The io_uring comparison per target: mean [min-max] IOPS over the trials."""
    lines = []
    for target in bench.targets:
        if not target.uring_configs:
            continue
        lines.append(f"{target.key}: 1 job, 4 KiB random read, QD {URING_QD}")
        base = None
        for config in target.uring_configs:
            v = [s.measure.iops for s in bench.samples if s.target == target.key
                 and s.workload == URING_WORKLOAD.name and s.config == config and s.trial >= 1]
            if not v:
                continue
            mean = statistics.fmean(v)
            base = base or mean
            gain = f" ({100 * (mean / base - 1):+.0f}%)" if mean is not base else ""
            opts = " ".join(config.options) or "-"
            lines.append(f"  {config.tag:<18} {spread(v):>24} IOPS{gain:<7}  {opts}")
        if target.uring_toolkit is not None:
            lines.append(f"  {'toolkit §5 QD ' + str(URING_QD):<18} "
                         f"{num(target.uring_toolkit):>24} IOPS         its own repetitions")
        lines.append(f"  toolkit's probe: {target.uring_note or target.uring_options}")
    return lines


def header_lines(bench: Bench) -> list[str]:
    """What was compared, how, and how quiet the machine was."""
    s = bench.settings
    src = subprocess.run(["git", "-C", str(TK_SRC), "describe", "--always", "--dirty"],
                         capture_output=True, text=True, check=False).stdout.strip()
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip()
    depths = ",".join(map(str, s.peak_depths))
    jobs = ",".join(map(str, bench.jobs))
    return [
        "== bench/fidelity: the toolkit against the best plain fio " + "=" * 38,
        block("toolkit", f"copy of {TK_SRC} ({src or 'not a git tree'}), one per target: "
              f"qd1_test.bash, then qd_sweep_test.bash {' '.join(s.tk_sweep_args)}; "
              f"--profile quick --runtime {s.tk_runtime} --ramp {s.tk_ramp} --repeat "
              f"{s.tk_repeat} --size <region>; its own defaults otherwise (engine, write "
              "buffers, jobs)"),
        block("plain fio", f"{fio_version} on {os.uname().release}; direct=1, fio's default "
              "write buffers, randrepeat=0, norandommap=1, group_reporting=1, the same "
              f"region; {s.runtime_s} s after {s.ramp} ramp per run"),
        block("  §2", "psync, libaio, io_uring at QD 1, 1 job: every trial"),
        block("  peak", f"4 KiB random read: {len(bench.grid)} configurations screened for "
              f"{s.screen_runtime_s} s each (psync x {jobs} jobs; libaio, io_uring QD "
              f"{depths} x {jobs} jobs), the best {s.finalists} measured again in every "
              "trial"),
        block("  best", f"the configuration with the best mean over the {s.trials} "
              "trial(s)"),
        block("targets", "\n".join(f"{t.key}: {t.desc}, region {t.region >> 20} MiB"
                                   for t in bench.targets)),
        block("order", "targets and configurations alternate from trial to trial; the "
              f"toolkit ran once per target, after trial {(s.trials + 1) // 2} of "
              f"{s.trials}"),
        block("machine", bench.machine.summary()),
    ]


def print_report(bench: Bench) -> bool:
    """The report on stdout; whether every target was met and nothing failed."""
    rows = verdict_rows(bench)
    columns = ["case", "target", "toolkit", "best plain fio [min-max] (config)", "ratio",
               "target", "result"]
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print("\n" + "\n".join(header_lines(bench)) + "\n")
    for r in [columns, ["-" * w for w in widths], *rows]:
        print(fmt.format(*r).rstrip())
    print("\nplain fio per configuration, mean [min-max] over the trials:")
    print("\n".join(detail_lines(bench)))
    print("\nio_uring's own options, plain fio, mean [min-max] over the trials:")
    print("\n".join(uring_lines(bench)))
    if bench.failures:
        print("\nfailed:")
        print("\n".join(f"  {f}" for f in bench.failures))
    ok = all(r[-1] == "PASS" for r in rows) and not bench.failures
    missed = sum(r[-1] != "PASS" for r in rows)
    verdict = "every target met" if ok else f"{missed} of {len(rows)} targets missed"
    if bench.failures:
        verdict += f", {len(bench.failures)} failure(s)"
    print(f"\nresult: {verdict}; {bench.elapsed()} in all")
    return ok
