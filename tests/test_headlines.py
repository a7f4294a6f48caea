"""A headline keeps its qualifiers (issue 41): a number quoted in the conclusion says what limits
it, as the section's own table and findings do."""

from __future__ import annotations

from types import SimpleNamespace

from analysis.render.claims import host_qualifier
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
    assert bound.text == ("2,103 MB/s at QD 128 [host-bound (fio's CPU ≥ 90% per job): the "
                          "host's limit]") and bound.value == 2103.0
    assert free.text == "900 MB/s at QD 32"  # nothing to say: nothing added


def test_the_samples_conclusion_carries_them():
    """docs/sample/report.md (drawn from its committed results; test_sample_report keeps it
    current): §5's peak was host-bound, §6's verdicts came from a 30 s burst in 3 s rounds."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    conclusion = text[text.index("## Conclusion"):].split("\n## ", 1)[0]
    assert "2,103 MB/s at QD 128 × 2 jobs with io_uring" in conclusion
    assert "plateau was shown [host-bound (" in conclusion
    assert conclusion.count("[an indication only: a 30 s burst in 3 s rounds, not SNIA's 60 s]") == 2


def test_the_sample_opens_with_its_conclusion_and_states_the_legend_once():
    """Issue 42: the conclusion's table before §1 and §2; the tables' legend once (the
    methodology's), not under every section's table."""
    text = (REPO / "docs" / "sample" / "report.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Conclusion" and headings[1] == "## §1 Environment"
    assert "Mean ± half-width" not in text  # the snippets' own legend
    assert text.count("mean ± the half-width of its 95% confidence interval") == 1
    assert "⚠ marks a mean whose 95% interval is wider" not in text
    assert text.count("whose interval is wider than ±5% of its mean is marked ⚠") == 1
