"""io_uring's own options: is one more group of them worth keeping? (lib/uring.bash asks, through
the runner service, after each round of its probe.)

A round (lib/uring.bash uring_probe_round) is one fio call of URING_PAIRS pairs of short 4 KiB
random read jobs on the target: `base@R.I` with the options kept so far, `more@R.I` with one more group
on top. The pairs alternate their order (base first, then the group first), so that a drift of
the machine during the probe weighs on both alike. The verdict reads every round so far:

- kept: the group's mean IOPS is higher by more than the noise (analysis.core.stats.gains, the
  peak search's rule: more than NOISE_SE combined standard errors);
- dropped: its gain is surely below GAIN_PCT %, or still not shown after MAX_PAIRS pairs;
- more: it cannot tell yet; run another round.

Why repeated samples: one 400 ms sample per option, the probe before this one, moved by 10-20%
from sample to sample on zram and on a tmpfs file, so its verdict on a fixed 5% changed from run
to run and kept options that gained nothing at the cases' depths. Alternating samples measured
here (fio 3.33, 6 pairs at QD 32 and at QD 128): registered buffers and files +17% and +27% on
zram, +0.1% and +2.8% on a tmpfs file; batching at a quarter of the depth -14% and -11% on the
tmpfs file (docs/methodology.md "io_uring's own options").
Rates of this rule on seeded simulations are in tests/test_uring_options.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analysis.core.stats import gains, mean_se
from analysis.fio.output import FioOutputError, read_groups

MAX_PAIRS = 12  # an undecided group is dropped after this many pairs
GAIN_PCT = 5  # a gain surely below this is not worth an option


@dataclass(frozen=True)
class Verdict:
    word: str  # kept | dropped | more
    base: float  # mean IOPS with the options kept so far
    more: float  # mean IOPS with the group on top
    pairs: int

    @property
    def gain_pct(self) -> float:
        return (self.more / self.base - 1) * 100 if self.base else 0.0

    def reply(self) -> str:
        return f"{self.word}\t{round(self.base)}\t{round(self.more)}\t{self.gain_pct:+.0f}\t{self.pairs}"


def verdict(base: list[float], more: list[float]) -> Verdict:
    """The rule on the samples so far (pairs: the fewer of the two counts)."""
    pairs = min(len(base), len(more))
    keep = gains(base, more, GAIN_PCT, last=pairs >= MAX_PAIRS)
    word = "more" if keep is None else "kept" if keep else "dropped"
    return Verdict(word, mean_se(base)[0], mean_se(more)[0], pairs)


def samples(paths: Iterable[str]) -> tuple[list[float], list[float]]:
    """IOPS of the base@ and more@ jobs of the rounds' fio outputs, in round and pair order.
    Raises FioOutputError when a job failed (an option the kernel refuses, hipri without poll
    queues): a group that cannot run is not kept."""
    out: dict[str, list[float]] = {"base": [], "more": []}
    for path in paths:
        skipped: list[str] = []
        groups = read_groups(path, skipped)
        if skipped:
            raise FioOutputError(skipped[0])
        for g in groups:
            side = g.jobname.partition("@")[0]
            if side not in out:
                raise FioOutputError(f"job {g.jobname!r} is not a probe's base@ or more@ job")
            out[side].append(sum(d.iops for d in g.directions.values()))
    return out["base"], out["more"]


def gain_reply(*paths: str) -> str:
    """The runner service's reply: kept|dropped|more, base and group IOPS, gain %, pairs; or
    bad<TAB>reason."""
    try:
        base, more = samples(paths)
    except (FioOutputError, OSError) as e:
        return f"bad\t{e}"
    if not base or not more:
        return "bad\tno samples"
    return verdict(base, more).reply()
