"""The order a section runs its repetitions in (analysis/run/order.py, lib/loop.bash run_all).

The rule, derived here again with nothing but hashlib: round k runs repetition k of every case
that has one, the cases sorted by sha256("<seed>:<k>:<name>"). The end-to-end tests run real fio
(the quick profile cut to 1 s repetitions) and read the order back from the files: a repetition is
renamed into place as it ends, so the files' modification times are the order it ran in.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from scipy import stats

from analysis.run import order, record, runner_service
from tests.toolkit import TINY, rep_files, run, start, tree_digest, wait_for_line

QD1_CASES = ["randread-4k", "randwrite-4k", "read-128k", "write-128k"]


def expected(seed: int, cases: list[str], reps: int) -> list[str]:
    """The rule of docs/methodology.md ("Order"), written out independently of the code."""
    out = []
    for k in range(1, reps + 1):
        ranked = sorted(cases, key=lambda c: hashlib.sha256(f"{seed}:{k}:{c}".encode()).hexdigest())
        out += [f"{c}/rep{k}" for c in ranked]
    return out


def manifest(root: Path, section: str) -> dict:
    return record.section(root / "results" / section)


def written_order(root: Path, section: str) -> list[str]:
    reps = sorted(rep_files(root, section), key=lambda p: p.stat().st_mtime_ns)
    return [f"{p.parent.name}/{p.stem}" for p in reps if p.stem[3:].isdigit()]


def progress_order(stderr: str) -> list[str]:
    return [f"{m[1]}/rep{m[2]}" for m in re.finditer(r"^\[\d+/\d+\] (\S+) rep (\d+)/\d+ ", stderr,
                                                     re.MULTILINE)]


# --- the rule ---------------------------------------------------------------------------------
def test_rounds_follow_the_hash_rule_and_are_round_robin():
    cases = [(name, 3) for name in QD1_CASES]
    for seed in (0, 1, 2**32 - 1):
        got = order.run_order(seed, "rounds", cases)
        assert [f"{QD1_CASES[i]}/rep{k}" for i, k in got] == expected(seed, QD1_CASES, 3)
        assert [k for _, k in got] == [1] * 4 + [2] * 4 + [3] * 4  # round-robin
        assert sorted(got) == [(i, k) for i in range(4) for k in (1, 2, 3)]  # each exactly once


def test_the_order_depends_on_the_names_not_on_their_place():
    """A case added later (§5's peak search) or declared elsewhere leaves the others' order as it
    was: a resumed run whose list grew still runs the rest as the first run would have."""
    def names(cases, got):
        return [f"{cases[i][0]}/rep{k}" for i, k in got]

    cases = [(name, 2) for name in QD1_CASES]
    first = names(cases, order.run_order(7, "rounds", cases))
    reversed_cases = cases[::-1]
    assert names(reversed_cases, order.run_order(7, "rounds", reversed_cases)) == first
    grown = [*cases, ("peak-randread-4k-qd8-j2", 2)]
    assert [r for r in names(grown, order.run_order(7, "rounds", grown))
            if not r.startswith("peak-")] == first


def test_fixed_cases_first_as_declared_then_the_rest_in_shuffled_rounds():
    """§6's rule: the burst and its probes (fixed) run first, each case's repetitions back to
    back as declared; the other cases follow in the rounds the seed gives them."""
    cases = [("burst", 1), ("recovery-2s", 1), ("wss-a", 2), ("wss-b", 2), ("zeros", 2)]
    got = order.run_order(7, "fixed-first", cases, frozenset({0, 1}))
    assert got[:2] == [(0, 1), (1, 1)]
    rest = order.run_order(7, "rounds", cases[2:])
    assert got[2:] == [(i + 2, k) for i, k in rest]
    assert order.order_reply("7", "fixed-first", "0", "burst:1:0:1 recovery-2s:1:0:1 wss-a:2 "
                             "wss-b:2 zeros:2") == "ok\t" + " ".join(f"{i}:{k}" for i, k in got)


def test_fewer_repetitions_leave_later_rounds_and_declared_keeps_the_declaration():
    cases = [("burst-write-128k", 1), ("randread-4k-wss-all", 2), ("write-128k-zeros", 2)]
    got = order.run_order(3, "rounds", cases)
    assert sum(k == 1 for _, k in got) == 3 and sum(k == 2 for _, k in got) == 2
    assert order.run_order(3, "declared", cases) == [(0, 1), (1, 1), (1, 2), (2, 1), (2, 2)]
    with pytest.raises(order.OrderError, match="unknown order rule 'random'"):
        order.run_order(3, "random", cases)


def test_every_order_of_a_round_is_as_likely():
    """24,000 seeds, 4 cases: each of the 24 orders of a round should come up 1,000 times. A
    chi-square test at the 0.1% level (23 degrees of freedom); the seeds are fixed, so the result
    is too: 0.1% is the chance that a fair shuffle would have failed it."""
    cases = [(name, 1) for name in QD1_CASES]
    counts = Counter(tuple(i for i, _ in order.run_order(seed, "rounds", cases))
                     for seed in range(24_000))
    assert set(counts) == set(itertools.permutations(range(4)))
    assert stats.chisquare(list(counts.values())).pvalue > 0.001


# --- the seed ---------------------------------------------------------------------------------
def test_the_seed_is_new_given_or_kept(tmp_path):
    path = tmp_path / "qd1"  # a section's folder: its manifest is in the tree's record
    seeds = {order.choose_seed("", False, [path])[0] for _ in range(20)}
    assert len(seeds) == 20  # new each time (os.urandom, 32 bits)
    assert order.choose_seed("", False, [path])[1] == "new"
    assert order.choose_seed("42", False, [path]) == (42, "given")
    record.save(tmp_path, {**record.empty(), "sections": {"qd1": {"order_seed": 42},
                                                        "bs_sweep": {"order_seed": 43}}})
    path.mkdir()
    (tmp_path / "bs_sweep").mkdir()
    assert order.choose_seed("", False, [path]) == (42, "kept")
    assert order.choose_seed("42", False, [path]) == (42, "kept")
    with pytest.raises(order.OrderError, match=r"run in the order of seed 42, not 7: give --seed 42"):
        order.choose_seed("7", False, [path])
    assert order.choose_seed("7", True, [path]) == (7, "given")  # --fresh: moved aside, anew
    with pytest.raises(order.OrderError, match="different order seeds"):
        order.choose_seed("", False, [path, tmp_path / "bs_sweep"])


def test_the_helper_answers_and_records_each_stage_once(tmp_path):
    path = tmp_path / "qd_sweep"  # the section's folder: its manifest is in the tree's record
    record.save(tmp_path, {**record.empty(), "sections": {"qd_sweep": {"section": "qd_sweep"}}})
    path.mkdir()
    request = "\t".join(["order", "5", "rounds", "0", "a:2 b:2", str(path)])
    reply = runner_service.reply_to(request)
    pairs = [tuple(map(int, p.split(":"))) for p in reply.removeprefix("ok\t").split()]
    assert pairs == order.run_order(5, "rounds", [("a", 2), ("b", 2)])
    runner_service.reply_to(request)  # a resumed run records the same stage again: replaced
    # The run loop asks again for the cases a section adds (§5's peak search), and only those.
    runner_service.reply_to("\t".join(["order", "5", "rounds", "1", "peak-c:2 peak-d:2", str(path)]))
    doc = record.section(path)
    assert doc["section"] == "qd_sweep" and doc["order_seed"] == 5 and doc["order_rule"] == "rounds"
    assert doc["order"][0] == expected(5, ["a", "b"], 2)
    assert doc["order"][1] == expected(5, ["peak-c", "peak-d"], 2) and len(doc["order"]) == 2
    # A point measured again (peak-c given 4 repetitions, 2 of them ordered before) joins the next
    # stage with its new repetitions only, in the rounds they belong to.
    reply = runner_service.reply_to("\t".join(["order", "5", "rounds", "2", "peak-c:4:2 peak-e:3:0",
                                               str(path)]))
    stage = record.section(path)["order"][2]
    full = expected(5, ["peak-c", "peak-e"], 4)
    assert stage == [r for r in full if r not in ("peak-c/rep1", "peak-c/rep2", "peak-e/rep4")]
    assert len(reply.removeprefix("ok\t").split()) == len(stage) == 5
    assert runner_service.reply_to("order\tx\trounds\t0\ta:2").startswith("bad\t")


# --- end to end, real fio -----------------------------------------------------------------------
def test_dry_run_states_the_rule_and_the_seed(toolkit):
    result = run(toolkit, "qd1_test.bash", *TINY, "--dry-run", "--seed", "9")
    assert result.returncode == 0, result.stderr
    assert "order    in rounds: repetition 1 of every case, then repetition 2" in result.stderr
    assert "seed 9 (given with --seed)" in result.stderr
    result = run(toolkit, "qd1_test.bash", *TINY, "--dry-run")
    seed = re.search(r"seed (\d+) \(new; --seed \1 gives this order again\)", result.stderr)
    assert seed, result.stderr
    burst = run(toolkit, "wss_burst_test.bash", *TINY, "--dry-run")
    assert ("order    first the cases whose order is part of the method, as declared: "
            "burst-write-128k, recovery-") in burst.stderr
    assert "then the others in rounds" in burst.stderr


def test_rounds_recorded_and_the_same_seed_gives_the_same_order(toolkit):
    """Seed 1 shuffles both rounds of §2's four cases away from the declared order."""
    want = expected(1, QD1_CASES, 2)
    assert want[:4] != [f"{c}/rep1" for c in QD1_CASES] and want[4:] != [f"{c}/rep2" for c in QD1_CASES]
    result = run(toolkit, "qd1_test.bash", *TINY, "--seed", "1")
    assert result.returncode == 0, result.stderr
    doc = manifest(toolkit, "qd1")
    assert doc["order_seed"] == 1 and doc["order_rule"] == "rounds" and doc["order"] == [want]
    assert written_order(toolkit, "qd1") == want
    assert progress_order(result.stderr) == want
    numbers = re.findall(r"^\[(\d)/8\]", result.stderr, re.MULTILINE)
    assert numbers == [str(n) for n in range(1, 9)]

    # The same seed in another run gives the same order: the interrupted run below (--seed 1,
    # another runtime) runs and records exactly `want` too.

    # A fresh run without --seed draws a new one, and runs in its order (one round is enough to
    # show it: --repeat 1).
    once = [*TINY, "--repeat", "1"]
    fresh = run(toolkit, "qd1_test.bash", *once, "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    seed = manifest(toolkit, "qd1")["order_seed"]
    assert seed != 1 and f"seed {seed} (new; --seed {seed} gives this order again)" in fresh.stderr
    assert written_order(toolkit, "qd1") == expected(seed, QD1_CASES, 1)

    # Another seed on these results would change the order half way: refused, nothing touched.
    before = tree_digest(toolkit / "results" / "qd1")
    other = run(toolkit, "qd1_test.bash", *once, "--seed", str(seed + 1))
    assert other.returncode == 2
    assert f"was run in the order of seed {seed}, not {seed + 1}: give --seed {seed}" in other.stderr
    assert tree_digest(toolkit / "results" / "qd1") == before


def test_interrupted_in_the_second_round_resumes_in_the_same_order(toolkit):
    """Ctrl-C inside the first repetition of round 2; the same command (its --seed included)
    resumes from there in the first run's order, and ends with every repetition."""
    args = [*TINY, "--runtime", "2", "--seed", "1"]
    want = expected(1, QD1_CASES, 2)
    proc = start(toolkit, "qd1_test.bash", *args)
    wait_for_line(proc, f"[5/8] {want[4].split('/')[0]} rep 2/2")
    time.sleep(1.0)  # inside the fifth repetition
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert written_order(toolkit, "qd1") == want[:4]

    result = run(toolkit, "qd1_test.bash", *args)
    assert result.returncode == 0, result.stderr
    assert "resuming: 4 of 8 repetitions already done, 4 to run" in result.stderr
    assert progress_order(result.stderr) == want[4:]
    assert re.findall(r"^\[(\d)/8\]", result.stderr, re.MULTILINE) == ["5", "6", "7", "8"]
    assert written_order(toolkit, "qd1") == want and manifest(toolkit, "qd1")["order"] == [want]


# The order of cases a section adds as it goes (§5's peak search) is checked on the peak search's
# own run, in test_host.py (check_added_stages); §6's declared order on its own run, in
# test_wss_burst_e2e.py: neither section is run again here for it.
