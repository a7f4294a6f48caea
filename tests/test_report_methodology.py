"""The report's setup, stated once: the span and the drive's state above the methodology
(drive_state), the other fields the sections share in it, each section's line reduced to what
differs, the cases that run their own time (§6's burst runs
--duration, not the profile's), and how the engine was chosen. On the committed fixture tree."""

from __future__ import annotations

from analysis.render import markdown as md
from analysis.report.build import (
    SectionState,
    drive_state,
    methodology,
    own_runtimes,
    section_setup,
    shared_setup,
)
from analysis.run.record import section as read_manifest
from analysis.sections.facts import Facts
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results"


def state(section: str, manifest: dict, **changes) -> SectionState:
    fields = {**md.setup_fields(manifest, "m"), **changes}
    return SectionState(section, manifest, "", 0.0,
                        Facts(setup=fields, setup_line=md.setup_text(fields)), None)


def test_own_runtimes_name_the_bursts_duration():
    # the fixture's §6 ran the quick profile (runtime 1 s) with a 10 s burst
    manifest = read_manifest(FIXTURE / "wss_burst")
    assert own_runtimes(manifest) == "the burst 10 s"
    assert own_runtimes(read_manifest(FIXTURE / "qd1")) == ""


def test_the_setup_is_stated_once_and_sections_say_what_differs():
    qd1 = read_manifest(FIXTURE / "qd1")
    burst = read_manifest(FIXTURE / "wss_burst")
    states = [state("qd1", qd1), state("bs_sweep", qd1), state("wss_burst", burst,
                                                                  engine="psync")]
    text = "\n".join(methodology(states))
    fields = md.setup_fields(qd1, "m")
    # the span is stated once, above the methodology, not again in its setup block
    assert md.span_text(qd1) not in text and "span and state" not in text
    assert md.span_text(qd1) in "\n".join(drive_state(states))
    assert text.count(fields["target"]) == 1 and f"- engine: {fields['engine']}\n" in text
    assert "  - cases with their own runtime: §6 the burst 10 s" in text
    shared = shared_setup(states)
    assert shared["engine"] == fields["engine"]  # two sections of three ran it
    assert section_setup(states[0], shared) == ""  # nothing differs: no line at all
    assert section_setup(states[2], shared) == ("**Setup:** as in the methodology above, "
                                                "except engine psync")
