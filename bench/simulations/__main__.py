"""bench/statistics: every statistical rule of the toolkit on seeded simulations with known
answers, over the grid its documentation claims; prints each rule's false-alarm rate, coverage
and power as markdown tables (bench/README.md explains each)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from multiprocessing import Pool

from bench.simulations import (
    compare_sim,
    effects_sim,
    history_sim,
    regimes_sim,
    stable_sim,
    tails_sim,
)

RULES = {
    "compare": (compare_sim, "compare: a whole comparison of two trees (6 cases × 6 metrics)"),
    "history": (history_sim, "history: alarms per report"),
    "tails": (tails_sim, "tail intervals (95%)"),
    "stable": (stable_sim, "--until-stable 5, 3 planned repetitions, at most 6"),
    "effects": (effects_sim, "the test for an effect (findings) and the gain rule"),
    "regimes": (regimes_sim, "regimes: a case's repetitions split by level (3 repetitions)"),
}


def _run(job: tuple[str, dict]) -> tuple[str, dict, float]:
    name, cell = job
    started = time.perf_counter()
    return name, RULES[name][0].run(cell), time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/statistics", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="a smaller grid and fewer simulations (a smoke run)")
    parser.add_argument("--only", action="append", choices=sorted(RULES),
                        help="only this rule (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: every CPU)")
    args = parser.parse_args(argv)
    names = args.only or list(RULES)
    jobs = [(name, cell) for name in names for cell in RULES[name][0].grid(args.quick)]
    # the costliest cells first, so the workers finish together
    jobs.sort(key=lambda j: -(j[1].get("reps", 3) * j[1].get("pool", 1)))
    started = time.perf_counter()
    results: dict[str, list[dict]] = {name: [] for name in names}
    seconds: dict[str, float] = dict.fromkeys(names, 0.0)
    with Pool(max(1, args.jobs)) as pool:
        for name, result, spent in pool.imap_unordered(_run, jobs):
            results[name].append(result)
            seconds[name] += spent
    for name in names:
        module, title = RULES[name]
        order = {repr(c): i for i, c in enumerate(module.grid(args.quick))}
        rows = sorted(results[name], key=lambda r: order[repr(
            {k: r[k] for k in next(iter(module.grid(args.quick)))})])
        print(f"## {title}\n\n{module.table(rows)}\n\n({seconds[name]:.0f} CPU s)\n")
    print(f"bench/statistics: {time.perf_counter() - started:.0f} s on {args.jobs} worker(s)"
          + (" (--quick)" if args.quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
