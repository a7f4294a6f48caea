"""The report's parts on their own: where a results tree's outputs go, the status file of a
report run, the facts a section leaves, and the health counters that count as anomalies (from
recorded real smart-logs). The whole report from real runs is in test_report_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.core.workspace import Workspace
from analysis.report.build import (
    METHOD,
    PTS_METHOD,
    SectionState,
    Status,
    anomalies,
    conclusion,
    methodology,
    read_status,
)
from analysis.run import record
from analysis.sections import facts
from analysis.sections.facts import Facts

SMART_LOG = Path(__file__).parent / "fixtures" / "health" / "nvme-smart-log-v1.json"


def test_the_default_tree_writes_where_it_always_did(tmp_path):
    ws = Workspace.of(tmp_path)
    assert ws.name == "" and ws.results == tmp_path / "results"
    assert ws.path("figs/qd1_iops.png") == tmp_path / "figs" / "qd1_iops.png"
    assert ws.link("figs/qd1_iops.png") == "../figs/qd1_iops.png"
    assert ws.show("out/report.md") == "out/report.md"
    # The same tree named explicitly is still the default one.
    assert Workspace.of(tmp_path, tmp_path / "results").name == ""


def test_another_tree_gets_its_own_subfolders(tmp_path):
    ws = Workspace.of(tmp_path, tmp_path / "results" / "lab" / "drive-a")
    assert ws.name == "lab/drive-a"
    assert ws.path("out/report.md") == tmp_path / "out" / "lab" / "drive-a" / "report.md"
    assert ws.link("figs/qd1_iops.png") == "../../../figs/lab/drive-a/qd1_iops.png"
    assert (ws.out / ws.link("figs/x.png")).resolve() == (ws.path("figs/x.png")).resolve()
    # A tree outside results/ is named after its folder.
    elsewhere = Workspace.of(tmp_path, tmp_path / "archive" / "fw-2.1")
    assert elsewhere.show("tables/qd1_baseline.csv") == "tables/fw-2.1/qd1_baseline.csv"
    with pytest.raises(ValueError):
        ws.path("results/qd1")


def test_status_from_the_record_and_from_an_older_trees_file(tmp_path):
    record.set_status(tmp_path / "new", "env", 0, 100, "")
    record.set_status(tmp_path / "new", "qd1", None, 300, "not among --sections env")
    assert read_status(tmp_path / "new") == {
        "env": Status(0, 100.0, ""), "qd1": Status(None, 300.0, "not among --sections env")}
    # an older toolkit's report_status.tsv, read through the record's migration
    (tmp_path / "report_status.tsv").write_text(
        "env\t0\t100\t\n"
        "qd1\t1\t200\trun failed: fio said no\n"
        "bs_sweep\tskipped\t300\tnot among --sections qd1\n"
        "garbage line\n")
    status = read_status(tmp_path)
    assert status == {"env": Status(0, 100.0, ""), "qd1": Status(1, 200.0, "run failed: fio said no"),
                      "bs_sweep": Status(None, 300.0, "not among --sections qd1")}


def state(status, snippet_time=0.0, snippet="## §2", manifest=None):
    manifest = {"profile": "quick"} if manifest is None else manifest
    return SectionState("qd1", manifest, snippet, snippet_time, Facts(), status)


def test_why_a_section_is_missing():
    assert state(None).problem() is None
    assert state(Status(0, 10, "")).problem() is None
    assert state(None, snippet=None, manifest={}).problem() == "not run"
    assert "run 'make analysis'" in state(None, snippet=None).problem()
    assert state(Status(3, 10, "refused: /dev/x is mounted"), snippet=None).problem() == \
        "refused for safety (exit 3): refused: /dev/x is mounted"
    # A snippet older than this run's attempt is an earlier run's, and the report says so.
    old = state(Status(1, 1000, "boom"), snippet_time=999).problem()
    assert old.startswith("failed (exit 1): boom;") and "from an earlier run" in old
    assert "earlier" not in state(Status(1, 1000, "boom"), snippet_time=1001).problem()
    assert state(Status(None, 5, "not among --sections qd1"), snippet=None).problem() == \
        "skipped (not among --sections qd1)"
    # a section the profile has no test in (--profile pts's §5) is no gap: the conclusion is
    # not "Incomplete" for it, and its heading says why it is empty
    why = "SNIA PTS has no enterprise test in this section (--profile pts)"
    outside = state(Status(None, 5, why, outside=True), snippet=None)
    assert outside.problem() is None and outside.absent() == why
    assert state(Status(None, 5, "not among --sections qd1"), snippet=None).absent() == \
        "skipped (not among --sections qd1)"


def test_the_conclusion_tells_a_section_left_out_from_one_that_failed():
    """README's first command runs §2 alone (--sections qd1): the sections it leaves out did
    not fail, and the conclusion says so apart from the one that did (v107 said all four "did not
    run cleanly")."""
    why = "not among --sections qd1 qd_sweep"
    states = [SectionState("qd1", {"profile": "quick"}, "## §2", 0.0, Facts(), Status(0, 1, "")),
              SectionState("bs_sweep", {}, None, 0.0, Facts(), Status(None, 2, why)),
              SectionState("mix_rw", {}, None, 0.0, Facts(), Status(None, 3, why)),
              SectionState("qd_sweep", {}, None, 0.0, Facts(), Status(1, 4, "fio: boom"))]
    text = "\n".join(conclusion(states))
    assert ("Incomplete: §5 Queue-depth sweep did not run cleanly (see Anomalies and "
            "limitations)") in text
    assert f"Not in this run: §3 Block-size sweep, §4 Read/write mix ({why})." in text
    # a run that left out nothing it failed on is not called incomplete
    assert "Incomplete" not in "\n".join(conclusion(states[:3]))


def test_a_section_outside_the_profile_is_recorded_so(tmp_path):
    """report.bash records it with the code `outside` (python -m analysis record)."""
    why = "SNIA PTS has no client test in this section (--profile pts)"
    assert record.main([str(tmp_path), "status", "qd_sweep", "outside", "7", why]) == 0
    assert read_status(tmp_path) == {"qd_sweep": Status(None, 7.0, why, outside=True)}
    assert record.load(tmp_path)["status"]["qd_sweep"]["outside"] is True


def test_facts_round_trip(tmp_path):
    f = Facts()
    f.headline("knee", "4 KiB random read", "QD 16", 16, "QD")
    f.headline("slc_cache", "128 KiB sequential write", "no cliff", float("nan"))
    f.anomaly("little", "Little's Law misses")
    facts.write(tmp_path / "x_facts.json", "qd_sweep", f)
    doc = json.loads((tmp_path / "x_facts.json").read_text())
    assert doc["headlines"][1]["value"] is None  # NaN is not JSON
    back = facts.read(tmp_path / "x_facts.json")
    assert back.headlines[0].value == 16 and back.anomalies[0].kind == "little"
    with pytest.raises(ValueError):
        f.headline("fastest", "x", "y")


def snapshot(where: Path, doc: dict) -> None:
    where.mkdir(parents=True)
    (where / "nvme-smart-log.json").write_text(json.dumps(doc))


def test_health_counters_that_moved_are_anomalies(tmp_path):
    doc = json.loads(SMART_LOG.read_text())
    # The same real log after the section: a thermal transition and two media errors; the host
    # writes moved too, as they always do, and are no anomaly.
    after = dict(doc, thm_temp1_trans_count=doc.get("thm_temp1_trans_count", 0) + 1,
                 media_errors=doc["media_errors"] + 2,
                 data_units_written=doc["data_units_written"] + 99)
    snapshot(tmp_path / "health" / "before", doc)
    snapshot(tmp_path / "health" / "after", after)
    found = facts.health_anomalies(tmp_path)
    assert [a.kind for a in found] == ["throttle", "health"]
    assert "thermal_management_t1_trans_count +1" in found[0].text
    assert found[1].text == "health counters moved during the section: media_errors +2."

    (tmp_path / "b" / "health").mkdir(parents=True)
    snapshot(tmp_path / "b" / "health" / "before", doc)
    snapshot(tmp_path / "b" / "health" / "after", dict(doc, data_units_written=1))
    assert facts.health_anomalies(tmp_path / "b") == []
    assert facts.health_anomalies(tmp_path / "none") == []  # no snapshots: nothing to say


def test_report_wide_limitations():
    """A file target, buffered I/O, sections run on different setups, §1's warnings and a failed
    env.bash are stated once for the whole report."""
    states = [
        SectionState("qd1", {"target": "/tmp/t.img", "target_kind": "file", "profile": "quick",
                             "direct": "0"}, "## §2", 0.0, Facts(), None),
        SectionState("qd_sweep", {"target": "/dev/loop0", "target_kind": "block",
                                  "profile": "quick", "direct": "1"}, "## §5", 0.0, Facts(), None),
    ]
    lines = anomalies(states, {"warnings": ["governor powersave"]}, Status(1, 0, "no fio"))
    text = "\n".join(lines)
    # one short table: a row per place, the section's anomalies side by side (issue 42)
    assert "| §1 | env.bash failed (exit 1): no fio;" in text
    assert "| file target | `/tmp/t.img`: the numbers include the filesystem" in text
    assert "| buffered I/O | in §2 QD=1 baselines: O_DIRECT was refused" in text
    assert "(/tmp/t.img: §2; /dev/loop0: §5)" in text
    assert "Mixed profiles" not in text  # both quick
    assert "; governor powersave |" in text  # §1's warning in §1's row


def test_the_methodology_names_rounds_under_the_pts_profile():
    """A PTS run's values are averages over rounds, not repetitions: the methodology says so,
    for the sections that ran it, and keeps the repetitions' paragraph for the others."""
    def ran(section, profile):
        return SectionState(section, {"profile": profile}, "## x", 0.0, Facts(), None)
    pts = "\n".join(methodology([ran("qd1", "pts"), ran("mix_rw", "pts")]))
    assert PTS_METHOD in pts and METHOD not in pts
    assert "A round, not a repetition, is the unit" in pts
    mixed = "\n".join(methodology([ran("qd1", "quick"), ran("mix_rw", "pts")]))
    assert METHOD in mixed and f"§4 Read/write mix: {PTS_METHOD}" in mixed
    assert PTS_METHOD not in "\n".join(methodology([ran("qd1", "quick")]))
