"""§5's peak search (analysis/rules/peak_search.py): its path on simulated drives whose surfaces
are known, and the cases it adds held to their options.

A simulated drive is a surface, IOPS as a function of depth per job (q) and jobs (j), measured
with seeded Gaussian noise per repetition (2% CV, about what fio's repetitions of a real run
scatter by; tests/test_qd_sweep.py's real sweep shows 0.3-3%). The sweep measures QD 1..128 at one
job, 3 repetitions each, then the search runs as the section runs it, round by round, on a host
of 8 CPUs. Rates measured on seeds 0-199 (this file runs 100 of them):

| drive | true efficient | reported it | budget ended the search | repetitions added (mean, max) |
|---|---|---|---|---|
| plateau (from 256 in flight, 0.3 of the peak per job) | QD 64 x 4 | 200/200 | 0 | 30, 48 |
| smooth (1 - exp(-in flight / 32)) | QD 128 x 1 | 200/200 | 0 | 15, 36 |
| capped per job (smooth, 0.3 of the peak per job) | QD 32 x 4 | 200/200 | 4/200 | 30, 48 |

At 3% CV: 200/200, 198/200 and 194/200. The earlier search (doubling only, a gain at a
fixed 5%) found 0/200, 193/200 and 197/200 at 2% CV: on the plateau drive it reported QD 128 x 4. Where the budget ends the search the outcome says so
(stopped == "budget"): the test below checks that no search claims a plateau it did not reach.
"""

from __future__ import annotations

import math
import random
import shutil

from analysis.rules import peak_search
from analysis.rules.cases import load_case
from analysis.run import record, repetition
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results" / "qd_sweep"  # real fio runs (MADE says how)


def test_the_searchs_cases_are_held_to_their_options(tmp_path, capsys):
    """A case the search adds is in the manifest with its fio options, so a file that
    is not a repetition of it (here a real repetition of the sweep's QD 4 copied into the
    search's first case) is left out, as it is for every sweep case."""
    tree = tmp_path / "qd_sweep"
    shutil.copytree(FIXTURE, tree)
    assert peak_search.main([str(tree), "--cpus", "2"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert lines, "the search added no case"
    manifest = record.section(tree)
    for name, opts in lines:
        expected = repetition.expected_options(manifest, name)
        assert expected is not None, f"{name} is not in the manifest"
        for opt in opts.split():
            key, _, value = opt.partition("=")
            if not key.startswith("@"):
                assert repetition.same_value(expected[key], value), (name, opt)
    name = next(n for n, opts in lines if "iodepth=4 " not in opts + " ")
    (tree / name).mkdir()
    shutil.copy(tree / "randread-4k-qd4" / "rep1.json", tree / name / "rep1.json")
    case = load_case(tree / name, repetition.expected_options(manifest, name))
    assert not case.reps
    assert "not a repetition of this case" in case.left_out[0].reason


# --- simulated drives ----------------------------------------------------------------------------
PEAK = 1_000_000.0
DEPTHS = [1, 2, 4, 8, 16, 32, 64, 128]  # the sweep's default --qd, at one job
CPUS, REPEAT, CV = 8, 3, 0.02


def per_job(q: int, j: int) -> float:
    """A host or queue limit per job: 0.3 of the drive's peak each, reached by QD 16."""
    return j * 0.3 * PEAK * (1 - math.exp(-q / 4))


def plateau(q: int, j: int) -> float:
    """The review's drive: IOPS rise with I/Os in flight at a fixed latency (Little's Law) up to
    its plateau at 256, and each job submits at most 0.3 of the peak. The plateau starts at
    4 jobs x QD 64; one job is best at QD 128, which is where the old search (doubling only)
    started and why it reported QD 128 x 4 (199 of 200 seeds) instead."""
    return min(PEAK * min(1.0, q * j / 256), j * 0.3 * PEAK)


def smooth(q: int, j: int) -> float:
    """Saturating smoothly with I/Os in flight, no limit per job: 98% of its peak at 128."""
    return PEAK * (1 - math.exp(-q * j / 32))


def capped(q: int, j: int) -> float:
    """The smooth drive behind a limit per job: 4 jobs x QD 32 reach 98%."""
    return min(smooth(q, j), per_job(q, j))


DRIVES = {"plateau": (plateau, (64, 4)), "smooth": (smooth, (128, 1)),
          "capped": (capped, (32, 4))}


def true_efficient(surface) -> tuple[int, int]:
    """The cheapest point of the search's space within 5% of its peak, from the surface."""
    space = [(2 ** a, 2 ** b) for a in range(9) for b in range(4)]  # QD 1..256, jobs 1..8
    top = max(surface(*k) for k in space)
    return min((k for k in space if surface(*k) >= 0.95 * top), key=peak_search.cheaper)


def simulate(surface, seed: int, budget: int | None = None, cv: float = CV):
    """The sweep, then the search round by round as qd_sweep_test.bash runs it."""
    rng = random.Random(seed)
    reps: dict[tuple[int, int], list[float]] = {}

    def measure(key, n):
        while len(reps.setdefault(key, [])) < n:
            reps[key].append(surface(*key) * (1 + rng.gauss(0, cv)))
    for q in DEPTHS:
        measure((q, 1), REPEAT)
    sweep = set(reps)
    for _ in range(100):
        points = {k: peak_search.Point(*k, ("" if k in sweep else peak_search.PREFIX) + str(k),
                                       tuple(v)) for k, v in reps.items()}
        outcome = peak_search.search(points, sweep, CPUS, REPEAT, budget)
        if not outcome.wanted:
            return outcome, reps
        for key, n in outcome.wanted.items():
            measure(key, n)
    raise AssertionError("the search never ended")


def test_the_simulated_drives_have_the_answers_stated():
    for surface, want in DRIVES.values():
        assert true_efficient(surface) == want


def test_plateau_drive_efficient_configuration():
    """Plateau from 4 jobs x QD 64: the old search reported QD 128 x 4 (doubling only, it never
    tried QD 64 x 4). Here 100/100 seeds report QD 64 x 4 (200/200 on seeds 0-199), none cut by
    the budget."""
    assert_rates(plateau, (64, 4), min_right=95, max_budget=0)


def test_smooth_drive_efficient_configuration():
    """98% of the peak at 128 in flight: QD 128 x 1 (one job: the fewest CPUs for 128)."""
    assert_rates(smooth, (128, 1), min_right=95, max_budget=0)


def test_capped_drive_efficient_configuration():
    """Each job capped at 0.3 of the peak: QD 32 x 4. The longest path of the three; the
    budget ends about 2 searches in 100, each of them still reporting the right point."""
    assert_rates(capped, (32, 4), min_right=95, max_budget=5)


def assert_rates(surface, want, min_right: int, max_budget: int, seeds: int = 100):
    right = budget = 0
    for seed in range(seeds):
        outcome, reps = simulate(surface, seed)
        right += outcome.efficient == want
        budget += outcome.stopped == "budget"
        assert outcome.stopped in ("plateau", "budget")
        assert outcome.spent <= peak_search.BUDGET * REPEAT
        if outcome.stopped == "plateau":
            # a plateau is claimed only where the descent ended: the efficient point's halvings
            # were measured, and nothing more is asked for
            q, j = outcome.efficient
            for half in ((q // 2, j), (q, j // 2)):
                assert min(half) < 1 or half in reps, (seed, half)
        peak = outcome.peak
        assert peak is not None and outcome.used[peak] >= REPEAT
    assert right >= min_right, f"{right}/{seeds} right"
    assert budget <= max_budget, f"{budget}/{seeds} ended by the budget"


def test_a_search_cut_short_by_its_budget_says_so():
    """With a smaller budget a search says "budget" exactly when its full path needs more than
    that, asks for nothing more and names the best point it measured; when it says "plateau"
    it is the full search's answer."""
    cut = 0
    for surface, _ in DRIVES.values():
        for seed in range(10):
            full, _ = simulate(surface, seed)
            for budget in (2, 4, 8):
                outcome, reps = simulate(surface, seed, budget=budget)
                assert not outcome.wanted and outcome.spent <= budget * REPEAT
                if full.spent > budget * REPEAT:
                    cut += 1
                    assert outcome.stopped == "budget", (seed, budget)
                    means = {k: sum(v[:outcome.used[k]]) / outcome.used[k]
                             for k, v in reps.items() if outcome.used.get(k)}
                    assert outcome.peak == max(means, key=means.get)
                else:
                    assert (outcome.stopped, outcome.peak, outcome.efficient) == (
                        "plateau", full.peak, full.efficient)
    assert cut >= 60  # most of the 90 searches were cut: the rule was exercised


def test_the_search_replays_the_same_path_from_the_same_results():
    """Resuming: the outcome read from the final results, all at once, is the one the rounds
    reached, and asks for nothing (a rerun runs nothing)."""
    for surface, _ in DRIVES.values():
        outcome, reps = simulate(surface, 7)
        sweep = {(q, 1) for q in DEPTHS}
        points = {k: peak_search.Point(*k, ("" if k in sweep else peak_search.PREFIX) + str(k),
                                       tuple(v)) for k, v in reps.items()}
        again = peak_search.search(points, sweep, CPUS, REPEAT)
        assert (again.peak, again.efficient, again.stopped, again.spent, again.wanted) == (
            outcome.peak, outcome.efficient, outcome.stopped, outcome.spent, {})


def test_a_point_measured_again_keeps_its_name_and_options(tmp_path, monkeypatch):
    """What peak-next prints for a search outcome asking for more repetitions of a sweep point
    (its own name and the manifest's options, @repeat=N) and for a new point (peak-…). The
    outcome is set here, so only the printing is under test; the search is tested above."""
    tree = tmp_path / "qd_sweep"
    shutil.copytree(FIXTURE, tree)  # repeat=2: QD 1 and QD 4 at one job
    wanted = {(4, 1): 4, (8, 2): 2}
    monkeypatch.setattr(peak_search, "search",
                        lambda *a, **k: peak_search.Outcome(wanted=dict(wanted)))
    assert peak_search.next_cases(tree, cpus=2) == [
        ("randread-4k-qd4", "rw=randread bs=4k iodepth=4 @repeat=4"),
        ("peak-randread-4k-qd8-j2", "rw=randread bs=4k iodepth=8 numjobs=2")]


def test_the_runs_budget_is_recorded_and_replayed():
    """--peak-budget reaches the search through the manifest (peak_budget), so `make analysis`
    replays the run's own path; a run from before the option had BUDGET."""
    assert peak_search.run_budget({"peak_budget": "6"}) == 6
    assert peak_search.run_budget({}) == peak_search.BUDGET
    assert peak_search.run_budget({"peak_budget": "x"}) == peak_search.BUDGET
