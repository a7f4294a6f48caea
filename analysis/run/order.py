"""The order a section runs its repetitions in, and its record in the section's manifest (its
entry in the tree's record, analysis.run.record).

Run case by case in ascending order, every slow drift of the machine (the drive warming up, its
write cache filling, the page cache, background work) grows along the swept variable and reads as
its effect; and the repetitions of a case, run back to back, differ less than two runs of the
section do. So the run goes in rounds: repetition 1 of every case, then repetition 2, and so on,
the cases shuffled anew in each round (docs/methodology.md, "Order").

The shuffle ranks each case of round k by sha256("<seed>:<k>:<case name>"), so the order is a
function of the seed and the names alone: the same on every machine and Python version, the same
when a resumed run (or §5's peak search) adds cases, and checkable by anyone with a hash. A section
whose method fixes the order of some cases (§6: the burst first, on a drive only the state
wrote, then the recovery probes, each after its idle gap) marks them (@fixed=1) and sets
CASE_ORDER=fixed-first: those run first, as declared, each case's repetitions back to back; the
rest follow in shuffled rounds. CASE_ORDER=declared runs every case that way.

The seed is new for each fresh run (os.urandom), set with --seed, and kept in the manifest
(order_seed) so that a rerun of the same command resumes in the order the first run began; the
manifest also records the rule and the order itself, one list per run_all call of the run loop:
the sweep's, then those of each batch of cases a section adds as it goes (§5's peak search), which
are ordered among themselves and run after everything before them.

The run loop's helper answers the seed and the order (analysis.run.runner_service, requests
"order-seed" and "order").
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from analysis.run import record as tree_record

RULES = ("rounds", "declared", "fixed-first")


class OrderError(Exception):
    """str(e) says what is wrong and how to go on."""


def rank(seed: int, round_: int, name: str) -> str:
    return hashlib.sha256(f"{seed}:{round_}:{name}".encode()).hexdigest()


def run_order(seed: int, rule: str, cases: list[tuple[str, int]],
              fixed: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """[(case index, repetition)] in the order they run. cases: (name, repetitions) as declared;
    fixed: the indices that keep their declared order first (rule fixed-first)."""
    if rule not in RULES:
        raise OrderError(f"unknown order rule {rule!r}; expected one of {', '.join(RULES)}")
    if rule == "declared":
        fixed = frozenset(range(len(cases)))
    elif rule == "rounds":
        fixed = frozenset()
    order = [(i, k) for i, (_, n) in enumerate(cases) if i in fixed for k in range(1, n + 1)]
    for k in range(1, max((n for _, n in cases), default=0) + 1):
        members = [i for i, (_, n) in enumerate(cases) if n >= k and i not in fixed]
        order += [(i, k) for i in sorted(members, key=lambda i: rank(seed, k, cases[i][0]))]
    return order


def stored_seeds(section_dirs: list[Path]) -> set[int]:
    seeds = set()
    for folder in section_dirs:
        try:
            value = tree_record.section(folder).get("order_seed")
        except tree_record.RecordError:
            continue
        if isinstance(value, int):
            seeds.add(value)
    return seeds


def choose_seed(given: str, fresh: bool, section_dirs: list[Path]) -> tuple[int, str]:
    """The seed of this run and where it comes from: the one the results being resumed were run
    with (kept), else --seed (given), else a new one. A --seed other than the stored one is
    refused: the rest of the run would follow another order than its beginning."""
    stored = set() if fresh else stored_seeds(section_dirs)
    if len(stored) > 1:
        raise OrderError(f"the results in {', '.join(map(str, section_dirs))} were run "
                         f"with different order seeds ({', '.join(map(str, sorted(stored)))}); "
                         "rerun with --fresh to move them aside (nothing is deleted)")
    if stored:
        seed = stored.pop()
        if given and int(given) != seed:
            raise OrderError(f"{section_dirs[0]} was run in the order of seed {seed}, not "
                             f"{int(given)}: give --seed {seed} (or no --seed) to resume in the "
                             "same order, or --fresh to move those results aside (nothing is "
                             "deleted) and start anew")
        return seed, "kept"
    if given:
        return int(given), "given"
    return int.from_bytes(os.urandom(4), "big"), "new"


def record(section_dirs: list[Path], seed: int, rule: str, stage: int, names: list[str],
           order: list[tuple[int, int]]) -> None:
    """Write the seed, the rule and this stage's order ("case/rep<k>", as the files are named)
    into each section's manifest that exists; a stage run again (a resumed run) replaces its
    record."""
    done = [f"{names[i]}/rep{k}" for i, k in order]
    for folder in section_dirs:
        with tree_record.updating(folder.parent) as doc:
            entry = doc["sections"].get(folder.name)
            if entry is None:
                continue
            stages = list(entry.get("order") or [])[:stage]
            stages += [[]] * (stage - len(stages))
            entry.update(order_seed=seed, order_rule=rule, order=[*stages, done])


def order_reply(seed: str, rule: str, stage: str, cases: str, *section_dirs: str) -> str:
    """The run loop's request (analysis.run.runner_service): CASES is
    "name:repetitions[:ordered[:fixed]] ...", ordered (0 if left out) being how many of the case's
    repetitions an earlier stage already ordered (a point measured again joins with its new
    repetitions only), fixed 1 for a case that keeps its declared place (rule fixed-first); the
    reply lists "index:repetition" in running order, after recording it."""
    fields = [(c.split(":") + ["0", "0"])[:4] for c in cases.split()]
    parsed = [(name, int(n)) for name, n, _, _ in fields]
    ordered = [int(k) for _, _, k, _ in fields]
    fixed = frozenset(i for i, f in enumerate(fields) if f[3] == "1")
    order = [(i, k) for i, k in run_order(int(seed), rule, parsed, fixed) if k > ordered[i]]
    record([Path(d) for d in section_dirs], int(seed), rule, int(stage), [n for n, _ in parsed], order)
    return "ok\t" + " ".join(f"{i}:{k}" for i, k in order)

