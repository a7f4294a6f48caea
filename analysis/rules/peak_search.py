"""§5's peak search: find the drive's plateau, then the cheapest configuration on it.

One job rarely shows a fast drive's peak: on /dev/zram0 one io_uring job topped out at 384 K
4 KiB random reads at QD 128, while two psync jobs did 755 K, and vendors rate NVMe drives at
QD 32 x 4 jobs or so. After the depth sweep the search runs in two phases, per pattern:

1. Climb: from the best point of the sweep, try twice the jobs (up to the CPUs) and twice the
   depth (up to MAX_DEPTH), and one more synchronous job at QD=1 while that line could still
   win; move to the neighbour that gains most, counting a gain only when it is larger than the
   noise. When no neighbour gains, the climb has reached the plateau.
2. Descend: from the cheapest point known to be within GAIN_PCT of the peak, halve the depth
   and halve the jobs while the halved point stays within GAIN_PCT of the peak. The last point
   that stays is the efficient configuration: the fewest I/Os in flight that give (nearly) the
   peak, which is what a user should run.

Noise: every comparison is of two means over repetitions. A difference counts when it is more
than NOISE_SE combined standard errors; a comparison that can neither show a difference nor
rule out one of GAIN_PCT re-measures both points (2x, then 3x the run's repetitions) before it
settles on "no difference". Both phases spend at most the run's budget (--peak-budget, recorded
as the manifest's peak_budget; BUDGET before it was an option) in cases' worth of repetitions per
pattern; when that runs out first the outcome says so (stopped == "budget"), never "plateau".

Deterministic from the results, so a rerun resumes: the search is replayed from the sweep every
time, each point read through the repetitions the path had asked of it so far (rep1..repN, in
order), so the same files give the same path. The run loop asks
`python -m analysis peak-next RESULTS_DIR --cpus N` for the next cases after each round ("name
<TAB>fio options" lines; none when the search is over); a point to re-measure comes back under
its own name with @repeat=N. The cases it names are recorded in the manifest (`added`) so that
the repetition check holds them to their options.

With --peak grid the section measures every jobs x depth pair instead (SNIA's DIRTH test) and
`outcome` reads peak and efficient configuration from the full grid by the same rule.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from analysis.core.stats import NOISE_SE, gains, mean_se
from analysis.rules.cases import combined, read_manifest, read_section
from analysis.run.manifest import matrix_entries
from analysis.run.record import add_cases

GAIN_PCT = 5  # within this % of the peak is "the peak"; a smaller gain is not worth a step
MORE_REPS = (2, 3)  # an undecided comparison re-measures both points to 2x, then 3x the repeat
BUDGET = 16  # per pattern: the search's repetitions, in cases' worth (x the run's repeat)
MAX_DEPTH = 256  # per job: deeper than any NVMe drive's useful queue
PREFIX = "peak-"

# The patterns searched: the report's peak random IOPS and peak sequential MB/s.
PATTERNS = {("randread", 4096): "randread-4k", ("read", 131072): "read-128k"}

Key = tuple[int, int]  # (iodepth, numjobs)


@dataclass(frozen=True)
class Point:
    """One measured configuration: its IOPS per repetition, in repetition order."""
    iodepth: int
    numjobs: int
    case: str
    reps: tuple[float, ...]

    @property
    def key(self) -> Key:
        return (self.iodepth, self.numjobs)


@dataclass
class Outcome:
    """Where the search stands on one pattern's results."""
    peak: Key | None = None  # the most IOPS of every point the path measured
    efficient: Key | None = None  # the fewest I/Os in flight within GAIN_PCT of the peak
    # "plateau" (both phases ended on the drive's own surface), "budget" (the repetitions ran
    # out first), "grid" (a full grid, no search), or "running" (more cases asked for)
    stopped: str = "running"
    wanted: dict[Key, int] = field(default_factory=dict)  # point -> repetitions still needed
    used: dict[Key, int] = field(default_factory=dict)  # point -> repetitions the path read
    spent: int = 0  # repetitions the search added (new points and re-measures)


class _Need(Exception):
    """The path needs repetitions that are not there yet (Outcome.wanted)."""


def cheaper(key: Key) -> tuple[int, int]:
    """Order of cost: I/Os in flight, then jobs (a job is a CPU busy submitting)."""
    return (key[0] * key[1], key[1])


class _Path:
    """One replay of the search through the points measured."""

    def __init__(self, points: dict[Key, Point], sweep: set[Key], repeat: int, budget: int):
        self.points, self.sweep, self.repeat, self.budget = points, sweep, repeat, budget
        self.out = Outcome()
        self.used = self.out.used
        for key in sweep:
            self.used[key] = min(repeat, len(points[key].reps))

    def cost(self, key: Key, reps: int) -> int:
        """Repetitions the search adds by reading `reps` of `key` (the sweep paid for its own)."""
        had = self.used.get(key, 0) if key not in self.sweep else max(self.used[key], self.repeat)
        return max(0, reps - had)

    def ask(self, wants: dict[Key, int]) -> None:
        """Read these points through this many repetitions each, or stop the path: for more
        cases (_Need) or, when they would overrun the budget, for good."""
        extra = sum(self.cost(k, n) for k, n in wants.items())
        if self.out.spent + extra > self.budget:
            self.out.stopped = "budget"
            raise _Need
        missing = {k: n for k, n in wants.items()
                   if k not in self.points or len(self.points[k].reps) < n}
        self.out.spent += extra
        for k, n in wants.items():
            self.used[k] = max(self.used.get(k, 0), n)
        if missing:
            self.out.wanted = missing
            raise _Need

    def reps(self, key: Key) -> tuple[float, ...]:
        """The repetitions of `key` the path has read."""
        return self.points[key].reps[:self.used[key]]

    def stats(self, key: Key) -> tuple[float, float]:
        """Mean and standard error of the mean over the repetitions the path has read."""
        return mean_se(self.reps(key))

    def settle(self, a: Key, b: Key, verdict) -> bool:
        """verdict(a, b, last) -> True, False or None (undecided); an undecided one re-measures
        both points at the next level of MORE_REPS; at the last level verdict must decide."""
        levels = [self.repeat * m for m in MORE_REPS]
        while True:
            level = next((n for n in levels if n > min(self.used[a], self.used[b])), None)
            v = verdict(a, b, level is None)
            if v is not None:
                return v
            self.ask({a: max(level, self.used[a]), b: max(level, self.used[b])})

    def gains(self, x: Key, y: Key, last: bool = False) -> bool | None:
        """Does y give more IOPS than x? True: more than the noise; False: surely less than
        GAIN_PCT more, or not shown after the last re-measure; None: cannot tell yet."""
        return gains(self.reps(x), self.reps(y), GAIN_PCT, last)

    def on_plateau(self, peak: Key, y: Key, last: bool = False) -> bool | None:
        """Is y within GAIN_PCT of the peak? True or False beyond the noise, else None; after
        the last re-measure, by the means."""
        frac = 1 - GAIN_PCT / 100
        (mp, sp), (my, sy) = self.stats(peak), self.stats(y)
        d, se = my - frac * mp, math.hypot(sy, frac * sp)
        if d > NOISE_SE * se:
            return True
        if d < -NOISE_SE * se:
            return False
        return d >= 0 if last else None

    def cheapest_near(self, keys) -> Key:
        """The cheapest of `keys` within GAIN_PCT of the best of them, by the means: the climb
        starts and moves low, so it ends near the cheapest point of the plateau."""
        top = max(self.stats(k)[0] for k in keys)
        return min((k for k in keys if self.stats(k)[0] >= (1 - GAIN_PCT / 100) * top),
                   key=cheaper)

    def peak(self) -> Key:
        return max(self.used, key=lambda k: (self.stats(k)[0], [-c for c in cheaper(k)]))


def _climb_steps(path: _Path, x: Key, cpus: int) -> list[Key]:
    q, j = x
    steps = [(q, j * 2), (q * 2, j)]
    sync = [k for k in path.used if k[0] == 1]
    if sync:  # the QD=1 line, where a synchronous engine may be cheaper
        line = max(sync, key=lambda k: k[1])
        # worth a try while twice its IOPS (perfect scaling) could still beat x
        if 2 * path.stats(line)[0] > path.stats(x)[0]:
            steps.append((1, line[1] * 2))
    return [(d, n) for d, n in dict.fromkeys(steps) if n <= cpus and d <= MAX_DEPTH and (d, n) != x]


def _search(path: _Path, cpus: int) -> None:
    # 1. climb to the plateau: move on a gain beyond the noise; settle the undecided (by
    # re-measuring) only when no neighbour gains outright
    x = path.cheapest_near(path.sweep)
    while True:
        steps = _climb_steps(path, x, cpus)
        if not steps:
            break
        path.ask({s: max(path.used.get(s, 0), path.repeat) for s in steps})
        gaining = [s for s in steps if path.gains(x, s)]
        if not gaining:
            gaining = [s for s in steps if path.settle(x, s, path.gains)]
        if not gaining:
            break
        x = path.cheapest_near(gaining)
    # 2. descend: the cheapest point within GAIN_PCT of the peak, then its halvings
    while True:
        peak = path.peak()
        low = next(k for k in sorted(path.used, key=cheaper)
                   if k == peak or path.settle(peak, k, path.on_plateau))
        if path.peak() != peak:  # a re-measure moved the peak: judge again against the new one
            continue
        q, j = low
        new = [s for s in ((q // 2, j), (q, j // 2)) if s[0] * 2 == q or s[1] * 2 == j]
        new = [s for s in new if min(s) >= 1 and s != low and s not in path.used]
        if new:
            path.ask({s: path.repeat for s in new})
            continue
        path.out.peak, path.out.efficient = peak, low
        path.out.stopped = "plateau"
        return


def search(points: dict[Key, Point], sweep: set[Key], cpus: int, repeat: int,
           budget: int | None = None) -> Outcome:
    """Replay the search over the points measured; `sweep` are the configurations the sweep
    ran (the start), `repeat` the run's repetitions per case."""
    path = _Path(points, {k for k in sweep if points[k].reps}, repeat,
                 (BUDGET if budget is None else budget) * repeat)
    if not path.sweep:
        return path.out
    try:
        _search(path, cpus)
    except _Need:
        path.used = path.out.used = {k: min(n, len(points[k].reps)) for k, n in path.used.items()
                     if k in points and points[k].reps}
        measured = list(path.used)
        if measured:  # the best so far, said to be so far
            path.out.peak = path.peak()
            top = path.stats(path.out.peak)[0]
            path.out.efficient = min((k for k in measured
                                      if path.stats(k)[0] >= (1 - GAIN_PCT / 100) * top),
                                     key=cheaper)
    return path.out


def grid_outcome(points: dict[Key, Point]) -> Outcome:
    """A full grid: the peak and the cheapest point within GAIN_PCT of it, by their means."""
    means = {k: sum(p.reps) / len(p.reps) for k, p in points.items() if p.reps}
    out = Outcome(stopped="grid", used={k: len(points[k].reps) for k in means})
    if means:
        out.peak = max(means, key=lambda k: (means[k], [-c for c in cheaper(k)]))
        out.efficient = min((k for k in means if means[k] >= (1 - GAIN_PCT / 100)
                             * means[out.peak]), key=cheaper)
    return out


# --- results on disk --------------------------------------------------------------------------
def pattern_points(results_dir: Path) -> dict[tuple[str, int], dict[Key, Point]]:
    """Every measured configuration of each searched pattern, sweep and search alike."""
    out: dict[tuple[str, int], dict[Key, Point]] = {p: {} for p in PATTERNS}
    for case in read_section(results_dir):
        if not case.reps:
            continue
        g = case.reps[0]
        if (g.rw, g.bs) not in out:
            continue
        reps = tuple(combined(list(r.directions.values()))["iops"] for r in case.reps)
        key = (int(g.iodepth or 1), int(g.numjobs or 1))
        # two cases of one configuration (a --jobs sweep point and a search point): the first
        out[(g.rw, g.bs)].setdefault(key, Point(key[0], key[1], case.name, reps))
    return out


def run_budget(manifest: dict) -> int:
    """The search's budget the run was given (--peak-budget, recorded as peak_budget), in cases'
    worth of repetitions per pattern; BUDGET for a run from before it was an option."""
    value = str(manifest.get("peak_budget") or "")
    return int(value) if value.isdigit() and int(value) > 0 else BUDGET


def run_repeat(manifest: dict) -> int:
    value = str(manifest.get("repeat") or "")
    return int(value) if value.isdigit() and int(value) > 0 else 3


def outcomes(results_dir: Path) -> dict[tuple[str, int], Outcome]:
    """Each searched pattern's outcome on a section's results, as the run left it ({} when
    no search or grid ran: --no-peak)."""
    manifest = read_manifest(results_dir)
    if manifest.get("peak_mode") not in ("search", "grid"):
        return {}
    return search_outcomes(results_dir, manifest, int(manifest.get("peak_cpus") or 1))


def search_outcomes(results_dir: Path, manifest: dict, cpus: int) -> dict:
    out = {}
    for pattern, points in pattern_points(results_dir).items():
        if not points:
            continue
        if manifest.get("peak_mode") == "grid":
            out[pattern] = grid_outcome(points)
            continue
        sweep = {k for k, p in points.items() if not p.case.startswith(PREFIX)}
        out[pattern] = search(points, sweep, cpus, run_repeat(manifest), run_budget(manifest))
    return out


def case_name(stem: str, iodepth: int, numjobs: int) -> str:
    return f"{PREFIX}{stem}-qd{iodepth}-j{numjobs}"


def next_cases(results_dir: Path, cpus: int) -> list[tuple[str, str]]:
    """(case name, fio options) of what to measure next; [] when the search is over. A point
    measured already comes back under its own name and options, with @repeat=N."""
    manifest = read_manifest(results_dir)
    repeat = run_repeat(manifest)
    planned = matrix_entries(manifest)
    points = pattern_points(results_dir)
    out = []
    for (rw, bs), outcome in search_outcomes(results_dir, manifest, cpus).items():
        for (q, j), reps in sorted(outcome.wanted.items(), key=lambda kv: cheaper(kv[0])):
            known = points[(rw, bs)].get((q, j))
            name = known.case if known else case_name(PATTERNS[(rw, bs)], q, j)
            opts = {k: v for k, v in planned.get(name, {}).items() if k != "@repeat"} or {
                "rw": rw, "bs": f"{bs // 1024}k", "iodepth": str(q), "numjobs": str(j)}
            if reps != repeat:
                opts["@repeat"] = str(reps)
            out.append((name, " ".join(f"{k}={v}" for k, v in opts.items())))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis peak-next",
                                     description="the peak search's next cases, recorded in "
                                                 "the manifest")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--cpus", type=int, required=True, help="CPUs the jobs may use")
    parser.add_argument("--grid", action="store_true",
                        help="the section ran a full jobs x depth grid: record it, search none")
    parser.add_argument("--budget", type=int, default=BUDGET,
                        help="cases' worth of repetitions per pattern (--peak-budget)")
    args = parser.parse_args(argv)
    if args.grid:  # the section planned the grid itself: only say so, for the analysis
        add_cases(args.results_dir, [], peak_mode="grid", peak_cpus=str(args.cpus))
        return 0
    add_cases(args.results_dir, [], peak_mode="search", peak_cpus=str(args.cpus),
              peak_budget=str(args.budget))
    cases = next_cases(args.results_dir, args.cpus)
    add_cases(args.results_dir, cases)
    for name, opts in cases:
        print(f"{name}\t{opts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
