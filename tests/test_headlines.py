"""A headline keeps its qualifiers (issue 41): a number quoted in the conclusion says what limits
it, as the section's own table and findings do."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from analysis.render import markdown as md
from analysis.render.claims import host_qualifier
from analysis.sections import qd1
from analysis.sections.facts import Facts
from tests.toolkit import REPO

BOUND = SimpleNamespace(host_bound=True, host_rule="fio_cpu")


def test_qualifiers_stay_with_the_number():
    facts = Facts()
    facts.headline("peak_seq_MBps", "128 KiB sequential read", "2,103 MB/s at QD 128", 2103.0,
                   "MB/s", qualifiers=(host_qualifier(BOUND), ""))
    facts.headline("peak_seq_MBps", "128 KiB sequential write", "900 MB/s at QD 32", 900.0,
                   "MB/s", qualifiers=(host_qualifier(SimpleNamespace(host_bound=False)),))
    bound, free = facts.headlines
    # the rule that fired is named (issue 42: not a list of rules of which one held)
    assert bound.text == ("2,103 MB/s at QD 128 [host-bound (fio's CPU): the "
                          "host's limit]") and bound.value == 2103.0
    assert free.text == "900 MB/s at QD 32"  # nothing to say: nothing added


def test_a_write_headline_names_the_state_it_measured():
    """Rule 6 (analysis/render/claims.py): §2's write latency in the conclusion says which state
    of the drive it measured, as its row's regime has it; a read says nothing of the kind."""
    rows = pd.DataFrame({
        "case": ["randread-4k", "randwrite-4k", "randwrite-4k"], "pattern": [
            "4 KiB random read", "4 KiB random write", "4 KiB random write"],
        "rw": ["randread", "randwrite", "randwrite"], "direction": ["read", "write", "write"],
        "lat_us_mean": [80.0, 90.0, 95.0], "lat_us_ci95": [4.0, 5.0, 5.0],
        "lat_us_std": [2.0, 2.5, 2.5], "lat_p99_us": [120.0, 150.0, 160.0],
        "iops_mean": [12_000.0, 11_000.0, 10_000.0], "little_product": [1.0, 1.0, 1.0],
        "host_bound": [False] * 3, "regime_split": [False] * 3,
        "regime": ["", "one level", ("after the write cache filled (the ramp fell from 80 to 8 "
                                     "MB/s at 0.45 GiB)")]})
    for regime, said in (("one level", "as found: cache state not established"),
                         (rows.regime[2], "after the write cache filled")):
        facts = Facts()
        qd1.record_facts(rows[rows.regime.isin(["", regime])], facts)
        read, write = facts.headlines
        assert write.text.endswith(f"µs (11,000 IOPS) [{said}]" if regime == "one level"
                                   else f"µs (10,000 IOPS) [{said}]"), write.text
        assert read.text.endswith("(12,000 IOPS)"), read.text
    # the sample's 4 KiB writes followed a 20 s ramp that showed no cliff
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    assert ("| 4 KiB random write (§2) | 531 ± 112 µs mean, p99 3,555 µs (1,791 IOPS) [ramp "
            "showed no cliff] |") in text
    assert "- 4 KiB random write: no cliff in the ramp's 0.13 GiB at 7.29 MB/s" in text


def test_the_samples_conclusion_carries_them():
    """docs/sample/report.md (drawn from its committed results; test_sample_report keeps it
    current): §3's and §5's sequential peaks were host-bound, §5's random peak was cut short by
    its search's budget, §6's verdicts came from a 30 s burst in 3 s rounds."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    conclusion = text[text.index("## Conclusion"):].split("\n## ", 1)[0]
    # a mean is quoted with its interval (issue 42: the conclusion had dropped §3's ±1,311)
    assert ("17,828 ± 2,755 IOPS at QD 32 × 2 jobs with libaio (3,627 µs mean, p99 19,005 µs); "
            "the search's budget ended it before the plateau was shown") in conclusion
    assert ("3,271 ± 434 MB/s at 1 MiB blocks, QD 32 (still rising at the largest size) "
            "[host-bound (fio's CPU): the host's limit]") in conclusion
    assert "1,505 ± 76 MB/s at QD 128 × 2 jobs with libaio [host-bound (" in conclusion
    assert "SNIA PTS" not in conclusion  # no pts row in a report without a PTS run
    assert conclusion.count("[an indication only: 3 s rounds, not SNIA's 60 s]") == 2


def test_the_sample_opens_with_its_conclusion_and_states_the_legend_once():
    """Issue 42: the conclusion's table before §1 and §2; the tables' legend once (the
    methodology's), not under every section's table."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Conclusion" and headings[1] == "## §1 Environment"
    assert "Mean ± half-width" not in text  # the snippets' own legend
    assert text.count("mean ± the half-width of its 95% confidence interval") == 1
    assert "⚠ marks a mean whose 95% interval is wider" not in text
    assert text.count("- ⚠ a mean whose 95% interval is wider than ±5%") == 1
    # each mark explained once, in the methodology; † and ‡ mean different things (issue 42)
    for mark in ("- † fewer than 100 I/Os above a percentile",
                 "- ‡ a difference not shown", "- ⌂ the host's point, not the drive's"):
        assert text.count(mark) == 1, mark
    assert "Nines: each percentile" not in text and "(one I/O: no interval)" not in text
    assert "† marks a difference" not in text


def test_the_samples_claims_stay_within_their_evidence():
    """Issue 42's review of the sample, claim by claim, against its own tables."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    conclusion = text[text.index("## Conclusion"):].split("\n## ", 1)[0]
    # the knee: judged with the peak search's QD 32 (11,935 IOPS) beside the sweep's points,
    # between host-bound points, its step not resolved
    assert ("not established: the means put it at QD 32 (from QD 16, loses 0.4% IOPS for +109% "
            "mean latency), a step not resolved by this run [host-bound (fio's CPU, a busy "
            "CPU): the host's knee]") in conclusion
    # a pattern is named on its first row only (md.table grouped)
    assert "|  | 32 ⚠ ⌂ (search) ◆ knee ‡ | 11,935 ± 6,635 |" in text
    # the p99 objective, judged with its interval: QD 1's [2,897–3,592] lies above 1,000 µs;
    # both patterns' recommendations are QD 1 and the peak, said once
    assert ("**Recommended depth:** for latency-sensitive work QD 1 (no depth is shown to meet "
            "p99 ≤ 1,000 µs: 4 KiB random read p99 3,228 µs [2,897–3,592]; 128 KiB sequential "
            "read p99 3,490 µs [3,219–3,781]); for throughput each pattern's peak (above).") in text
    # no † value quoted: §5's QD 1 p99.9 (4,489 µs, 67 I/Os above it) is not
    table = pd.read_csv(REPO / "docs" / "sample" / "tables" / "qd_sweep.csv")
    assert table.query("outstanding == 1 and bs == 4096").lat_p99_9_us_tail_ios.iloc[0] < 100
    assert "| 4 KiB random read | 1 ⚠ | 2,624 ± 686 |" in text and "4,489" not in text
    assert ("**Tails (4 KiB random read):** p99 3,228 µs at QD 1, ×2.3 at the knee (QD 32), ×4.0 "
            "at QD 64, while IOPS grew ×4.6.") in text
    # §3: a size still rising is not marked as reaching 90% of a peak the findings put beyond
    # it; its host-bound peak is named the host's in the finding too
    assert "|  | 1 MiB ⚠ ⌂ ▲ still rising |" in text  # the last of sequential read's rows
    assert not any("still rising |" in line and "●" in line for line in text.splitlines())
    assert ("so the peak and the transition lie beyond it. Its peak is host-bound (fio's CPU): the "
            "host's limit") in text
    # §6: all zeros wrote at two levels (rep 2 after an idle, one second in the refilled
    # cache), so it is not compared on one mean over both, nor said to have measured the
    # full cache (issue 41)
    assert ("Every one compared was written after the burst's cliff, with the write cache "
            "full") in text
    assert ("All zeros: not compared, its repetitions wrote at separate levels (write regimes "
            "below).") in text
    assert "±0%" not in text
    # the working sets' finding weighs what their table shows (mean, p99), not p99.9
    # in one finding for both patterns
    assert ("**4 KiB random read and 4 KiB random write, working set 256 MiB → 1 GiB:** no "
            "change in IOPS, mean latency or p99 is shown ‡.") in text
    # the host-bound wording names the rule that fired, not every rule
    assert "kept a CPU or all of them busy" not in text
    assert "- **Host-bound** (⌂): randrw" not in text  # no case ids for §4's mixes


def test_the_samples_write_regimes_name_each_block_once():
    """§4's blocks: the 50/50 mix wrote at two levels, each summarised over its own
    repetitions with its directions, the mix and each level named on their first row only; the
    others held one level, and the regime each ramp declared is a line per case, not the
    section's numbers again; the 0/100 mix is a random write with no empty read row."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    mix = text[text.index("## §4"):].split("\n## ", 1)[0]
    regimes = mix[mix.index("### Write regimes"):]
    assert "| 0.00 |" not in regimes
    assert "| 4 KiB random read/write 50/50, QD 32 | 2 at 21.6 MB/s (reps 1-2) | reads |" in regimes
    assert "|  | 1 at 14.7 MB/s (rep 3) | reads |" in regimes
    assert regimes.count("|  |  | writes |") == 2 and regimes.count("|  |  | total |") == 2
    assert regimes.count("4 KiB random read/write 50/50, QD 32") == 1
    assert "| R50/W50 | (write regimes below) | – |" in mix and "|  | write (write" not in mix
    assert "- 4 KiB random write, QD 32: no cliff in the ramp's" in regimes
    assert "- 4 KiB random read/write 70/30, QD 32: no cliff in the ramp's" in regimes


def test_section_2_shows_the_nines_table_only_for_a_nine_beyond_p99():
    """§2's p99 carries its interval in the table; the nines' own table (value [interval] (I/Os
    above)) is shown only where a point can quote a deeper nine, as `--nines` runs are sized to
    (issue 42: a second table of the same p99s doubled them on the page). The sample's own
    tables: no p99.9 with 100 I/Os above it; then one made quotable."""
    tables = REPO / "docs" / "sample" / "tables"
    df = pd.read_csv(tables / "qd1_baseline.csv")
    nines = pd.read_csv(tables / "qd1_nines.csv")
    text = qd1.render_markdown(df, "setup", nines=nines)
    assert "| point | I/Os |" not in text
    assert "p99 [low–high] is its 95% interval. Every nine with its interval:" in text
    first = df.iloc[0]
    assert f"| {md.num(first.lat_p99_us)} [{md.num(first.lat_p99_us_lo)}–" in text
    deeper = nines.copy()
    row = deeper.index[(deeper.pct == 99.9)][0]
    deeper.loc[row, ["tail_ios", "quotable"]] = [150, True]
    text = qd1.render_markdown(df, "setup", nines=deeper)
    assert "| point | I/Os | p99 (µs) | p99.9 (µs) |" in text
    assert " (150) |" in text
