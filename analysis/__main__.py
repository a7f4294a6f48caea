"""`python -m analysis <command> ...`: the toolkit's Python entry point.

Commands import their module only when called, so the small ones the scripts call often (safety,
record, runner) start fast, without numpy, pandas or matplotlib. With TK_ANALYSIS_SERVER set to
the socket of `python -m analysis serve SOCKET`, the commands that only read and draw files run
in a worker forked from that preloaded process (analysis/core/preload.py: the test suite's).
"""

from __future__ import annotations

import importlib
import os
import sys

from analysis.core.registry import read_sections

# command -> (module, one-line description); each section of lib/sections.tsv is a command, its
# module analysis/sections/<id>.py.
COMMANDS = {
    "summarize": ("analysis.fio.summarize", "CSV summary of any fio JSON files: summarize FILE..."),
    "env": ("analysis.device.environment", "build results/env.json and out/env.txt from raw captures"),
    **{s.id: (f"analysis.sections.{s.id}", f"{s.heading}: tables, figures, snippet from results/{s.id}")
       for s in read_sections().values()},
    "health-log": ("analysis.device.health_log", "CSV of the health samples taken during a burst"),
    "compare": ("analysis.report.compare", "two results trees: compare A B [--fail-if-worse PCT]"),
    "all": ("analysis.report.redraw", "every section present, fleet hosts, then the report (make analysis)"),
    "report": ("analysis.report.build", "assemble out/report.md from env.txt and section snippets"),
    "safety": ("analysis.device.safety", "may this block device be written? exit 0 yes, 3 no"),
    "purge": ("analysis.device.purge", "the wait for a sanitize of --state purged|sustained (the run loop's helper plans and checks the purge)"),
    "write-cache": ("analysis.device.write_cache", "an NVMe namespace's volatile write cache: TARGET [on|off --record F | --restore F]"),
    "record": ("analysis.run.record", "a results tree's record, run.json: TREE show|status|clear-status"),
    "fleet": ("analysis.run.fleet", "fio client/server output: probe FILE; split OUT LABEL=HOST,PORT=FILE"),
    "hosts": ("analysis.report.hosts", "a section across fleet hosts: table, figure and snippet"),
    "targets": ("analysis.report.targets", "a lab's targets judged on a results tree: targets RESULTS FILE (exit 4: one failed)"),
    "history": ("analysis.history.command", "run history: history add TREE...; history [--device S]"),
    "runner": ("analysis.run.runner_service", "pipe helper for the run loop (check-result, safety)"),
    "peak-next": ("analysis.rules.peak_search", "§5's peak search: the next cases to run, if any"),
    "host-ceiling": ("analysis.run.host_ceiling", "the host's ceiling of each case (null_blk, zram or null engine): DIR CASE..."),
    "options": ("analysis.core.registry", "docs/options.md from lib/options.tsv (make docs)"),
}

# The commands a preloaded process may run for its caller: each reads files and writes tables,
# figures and snippets. Not those that measure the host, touch a device or serve the run loop:
# a worker runs in the server's cgroup and on its CPUs, not the caller's.
PRELOADED = {*read_sections(), "summarize", "env", "health-log", "compare", "all", "report",
             "hosts", "targets", "history", "peak-next"}


def usage() -> str:
    lines = ["usage: python -m analysis <command> [args...]", "", "commands:"]
    lines += [f"  {name:<10} {desc}" for name, (_, desc) in COMMANDS.items()]
    lines.append(f"  {'serve':<10} preload the analysis, run others' commands: serve SOCKET "
                 "(TK_ANALYSIS_SERVER=SOCKET in their environment)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        if len(argv) != 2:
            print("usage: python -m analysis serve SOCKET", file=sys.stderr)
            return 2
        from analysis.core import preload
        preload.serve(argv[1], run, [COMMANDS[c][0] for c in sorted(PRELOADED)])
        return 0
    if argv[:1] and argv[0] in PRELOADED and os.environ.get("TK_ANALYSIS_SERVER"):
        from analysis.core import preload
        code = preload.forward(os.environ["TK_ANALYSIS_SERVER"], argv)
        if code is not None:
            return code
    return run(argv)


def run(argv: list[str]) -> int:
    """The command itself, in this process."""
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"analysis: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
