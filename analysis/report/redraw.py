"""`python -m analysis all [--results DIR]` (what `make analysis` runs): every table, figure and
snippet of a results tree redrawn from its raw results, in one interpreter.

The steps are those `make analysis` ran as one process each, in the same order and with the same
exit code: each section present in the tree (lib/sections.tsv's order), then each fleet host's
tree of it (DIR/hosts/<host>/<section>) and the hosts side by side, then the report. A step that
fails (a point left without a good repetition exits 1, an error in the analysis is printed with
its traceback) does not stop the others; the command exits 1 at the end if any did. One
interpreter imports pandas and matplotlib once instead of once per step, which was most of the
time (bench/README.md has the numbers).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import sys
import traceback
from collections.abc import Callable

from analysis.core import workspace
from analysis.core.workspace import Workspace
from analysis.sections import SECTIONS

# The steps that are not a section: the module each runs (a section's is analysis.sections.<id>).
MODULES = {"hosts": "analysis.report.hosts", "report": "analysis.report.build"}
FAILED = ("analysis: a section above is incomplete or failed; its message says what to rerun "
          "(python -m analysis <section> redraws one)")


def steps(ws: Workspace, tree: list[str]) -> list[tuple[str, list[str]]]:
    """(command, argv) for each step, in the order `make analysis` has always run them; `tree`
    is the --root/--results arguments that name the tree to every step."""
    planned: list[tuple[str, list[str]]] = []
    root = ["--root", str(ws.root)]
    for section in SECTIONS:
        if (ws.results / section).is_dir():
            planned.append((section, tree))
        hosts = [h for h in sorted((ws.results / "hosts").glob("*/")) if (h / section).is_dir()]
        planned += [(section, [*root, "--results", str(h)]) for h in hosts]
        if hosts:
            planned.append(("hosts", [section, *tree]))
    planned.append(("report", tree))
    return planned


def run_step(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """One step's exit code, as its own process would have returned it: an exception is printed
    with its traceback and counts as 1, argparse's exit as its code."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except Exception:  # noqa: BLE001 - one step's bug must not stop the others, as before
        traceback.print_exc()
        code = 1
    finally:
        close_figures()
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def close_figures() -> None:
    """A step that failed half-way may leave figures open; the next must not inherit them."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis all", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    workspace.add_arguments(parser)
    args = parser.parse_args(argv)
    ws = Workspace.from_args(args)
    tree = ["--root", str(args.root)] + (["--results", str(args.results)] if args.results else [])
    planned = [(MODULES.get(command, f"analysis.sections.{command}"), step_argv)
               for command, step_argv in steps(ws, tree)]
    for name in {name for name, _ in planned}:
        with contextlib.suppress(Exception):  # a module that cannot load fails its own step below
            importlib.import_module(name)
    # What the imports made (pandas, matplotlib: hundreds of thousands of objects) lives until
    # the end; kept out of the garbage collector's passes, the figures' garbage is collected
    # without walking it again each time (about 8% of the CPU time of a fixture tree).
    gc.freeze()
    failed = False
    for name, step_argv in planned:
        failed |= run_step(lambda argv, name=name: importlib.import_module(name).main(argv),
                           step_argv) != 0
    if failed:
        print(FAILED, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
