"""The tree's record, results/run.json (analysis/run/record.py): each section's manifest and the
tree's shared decisions, read from what older toolkits left (the committed sample's tree and the
fixtures: a run.json of version 1, a manifest.json per section, the files before run.json),
written whole, refused at a version it does not know, and reached by bash through the run loop's
helper (record-get, record-set, manifest-check...)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis.rules.cases import read_section
from analysis.run import manifest, record
from analysis.run.runner_service import reply_to
from tests.conftest import REPO

SAMPLE = REPO / "tests" / "fixtures" / "older-sample" / "results"  # its README says what it is


def test_the_committed_sample_migrates_its_engines_as_fields(tmp_path):
    # the sample predates run.json: its older files, read through the migration
    older = tmp_path / "results"
    shutil.copytree(SAMPLE, older, ignore=shutil.ignore_patterns(record.NAME))
    doc = record.load(older)
    # and the record it ships (analysis.report.sample.ship_record) is that migration, whole
    assert json.loads(record.path_of(SAMPLE).read_text()) == doc
    engines = doc["engines"]
    assert (engines["target"], engines["direct"]) == ("/dev/nvme0n1", "1")
    assert (engines["qd1"], engines["deep"]) == ("psync", "io_uring")
    assert engines["note"].startswith("psync at QD=1, io_uring deeper (auto: QD=1 probe mean")
    assert doc["io_uring"] is None and doc["write_speed"] is None and doc["status"] == {}
    sections = ("qd1", "bs_sweep", "mix_rw", "qd_sweep", "wss_burst")
    assert set(doc["steps"]) == {f"{s}/prefill" for s in sections}
    assert all(doc["steps"][f"{s}/prefill"] == (SAMPLE / s / "prefill.done").read_text().strip()
               for s in sections)


def test_the_fixtures_trees_migrate_their_prefills():
    fixtures = REPO / "tests" / "fixtures"
    for tree in (fixtures / "results", fixtures / "peak-search"):
        doc = record.load(tree)
        done = sorted(tree.glob("*/prefill.done"))
        assert done and {f"{p.parent.name}/prefill" for p in done} == set(doc["steps"])


def test_every_file_an_older_tree_kept_migrates(tmp_path):
    tree = tmp_path / "older"
    shutil.copytree(SAMPLE, tree, ignore=shutil.ignore_patterns("env-raw", "*-*", "*.json"))
    (tree / "io_uring").write_text("/dev/nvme0n1 1\nfixedbufs=1 registerfiles=1\t"
                                   "fixedbufs=1 registerfiles=1 (probed, ...)\n")
    (tree / "state").mkdir()
    (tree / "state" / "write_speed").write_text("/dev/nvme0n1\t195\n")
    (tree / "report_status.tsv").write_text(
        "env\t0\t100\t\nqd1\t1\t200\trun failed: fio said no\n"
        "bs_sweep\tskipped\t300\tnot among --sections qd1\ngarbage line\n")
    doc = record.load(tree)
    assert doc["io_uring"] == {"target": "/dev/nvme0n1", "direct": "1",
                               "options": "fixedbufs=1 registerfiles=1",
                               "note": "fixedbufs=1 registerfiles=1 (probed, ...)"}
    assert doc["write_speed"] == {"target": "/dev/nvme0n1", "direct": "1", "MBps": 195}
    assert doc["status"] == {
        "env": {"exit": 0, "started": 100, "error": ""},
        "qd1": {"exit": 1, "started": 200, "error": "run failed: fio said no"},
        "bs_sweep": {"exit": None, "started": 300, "error": "not among --sections qd1"}}
    # the first change writes run.json whole, the migrated fields with it
    record.set_status(tree, "mix_rw", 0, 400, "")
    saved = json.loads(record.path_of(tree).read_text())
    assert saved["version"] == record.VERSION
    assert saved["engines"] == doc["engines"] and saved["io_uring"] == doc["io_uring"]
    assert list(saved["status"]) == ["env", "qd1", "bs_sweep", "mix_rw"]  # in the order they ran
    record.clear_status(tree)
    assert record.load(tree)["status"] == {} and record.load(tree)["write_speed"]["MBps"] == 195


def test_bash_sets_and_gets_a_decision_for_one_target_and_direct_setting(tmp_path):
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/x\t1") == "none"
    note = "libaio (auto: QD=1 probe mean latency io_uring 5 µs, libaio 4 µs)"
    assert reply_to(f"record-set\t{tmp_path}\tengines\t/dev/x\t1\tlibaio\tlibaio\t{note}") == "ok"
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/x\t1") == f"ok\tlibaio\tlibaio\t{note}"
    # another target, or O_DIRECT off: probed anew
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/y\t1") == "none"
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/x\t0") == "none"
    assert reply_to(f"record-set\t{tmp_path}\twrite_speed\t/dev/x\t1\t3960") == "ok"
    assert record.load(tmp_path)["write_speed"]["MBps"] == 3960
    assert reply_to(f"record-set\t{tmp_path}\tengines\t/dev/x\t1\tlibaio").startswith("bad\t")
    assert reply_to(f"record-set\t{tmp_path}\tseeds\t/dev/x\t1\t7") == \
        "bad\tthe record keeps no decision 'seeds'"
    assert record.load(tmp_path)["engines"]["note"] == note  # a refused change changes nothing


def test_a_record_of_another_version_is_refused(tmp_path):
    record.path_of(tmp_path).write_text(json.dumps({"version": record.VERSION + 1}))
    with pytest.raises(record.RecordError, match="this toolkit reads versions 1 and 2"):
        record.load(tmp_path)
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/x\t1").startswith(
        "bad\t" + str(record.path_of(tmp_path)) + " is a record of version 3")
    # a section's manifest of that tree: nothing to read, and nothing written over it
    settings = "section=qd1\trepeat=2\tmatrix=randread-4k: rw=randread bs=4k iodepth=1"
    assert reply_to(f"manifest-check\t{tmp_path / 'qd1'}\t{settings}").startswith(
        "refused\t" + str(record.path_of(tmp_path)) + " is a record of version 3")
    assert json.loads(record.path_of(tmp_path).read_text()) == {"version": 3}
    record.path_of(tmp_path).write_text("{not json")
    with pytest.raises(record.RecordError, match="cannot be read"):
        record.load(tmp_path)


# --- each section's manifest: sections.<section> (analysis/run/manifest.py says what it means) ----
FIXTURES = REPO / "tests" / "fixtures"
OLDER_MANIFESTS = sorted({*SAMPLE.glob(f"*/{manifest.NAME}"), *FIXTURES.rglob(manifest.NAME)})
NOTES = {"engine_note": "engine_from_tree", "io_uring_note": "io_uring_from_tree"}


def _flat(matrix: dict) -> str:
    """The string an older toolkit stored, from the data (lib/cases.bash case_matrix's form)."""
    return "; ".join(f"{name}: " + " ".join(f"{k}={v}" for k, v in opts.items())
                     for name, opts in matrix.items())


def test_all_eleven_committed_manifests_are_migration_inputs():
    assert len(OLDER_MANIFESTS) == 11  # the sample's 5, the fixtures' results 5 and peak search


@pytest.mark.parametrize("path", OLDER_MANIFESTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_manifest_migrates_into_the_record_without_loss(path):
    old = json.loads(path.read_text())
    assert "version" not in old  # written before manifests had one
    tree, section = path.parent.parent, path.parent.name
    # the older files alone, read through the migration (the sample ships the record it made)
    doc = record.migrate(tree, None)
    assert doc["version"] == record.VERSION == 2
    new = doc["sections"][section]
    assert record.section(path.parent) == new  # what the readers get (rules.cases.read_manifest)
    assert set(new) - set(old) <= {"engines", *NOTES.values()}
    for key, value in old.items():
        if key in ("matrix", "added"):
            assert isinstance(new[key], dict) and _flat(new[key]) == value
        elif manifest.PROBED_ONCE in str(value) and key in NOTES:
            assert new[key] == value.replace(manifest.PROBED_ONCE, "")
            assert new[NOTES[key]] == "1" and manifest.PROBED_ONCE not in new[key]
        else:
            assert new[key] == value, key
    assert set(old["cases"].split()) <= set(manifest.matrix_entries(new))
    assert all("rw" in opts for opts in manifest.matrix_entries(new).values())
    assert new["engines"] == (old.get("engines") or old["engine"])


def test_an_older_record_and_its_manifests_are_read_and_written_whole_on_the_first_change(
        tmp_path):
    """A tree of the toolkit before: run.json of version 1 and a manifest.json per section. Read:
    version 2 with the sections in it; the first change writes it whole, after which the record,
    not the older files left beside it, is what a reader gets."""
    tree = tmp_path / "older"
    shutil.copytree(SAMPLE, tree, ignore=shutil.ignore_patterns("env-raw", "*-*", "rep*"))
    v1 = {"version": 1,
          "engines": {"target": "/dev/nvme0n1", "direct": "1", "qd1": "psync",
                      "deep": "io_uring", "note": "from the version 1 record"},
          "io_uring": None, "write_speed": {"target": "/dev/nvme0n1", "direct": "1", "MBps": 195},
          "steps": {"qd1/prefill": "region written"}, "status": {"qd1": {
              "exit": 0, "started": 100, "error": ""}}}
    record.path_of(tree).write_text(json.dumps(v1))
    manifests = {p.parent.name: manifest.migrate(json.loads(p.read_text()))
                 for p in tree.glob(f"*/{manifest.NAME}")}
    assert len(manifests) == 5
    doc = record.load(tree)
    assert doc == {**v1, "version": 2, "sections": doc["sections"]}
    assert doc["sections"] == manifests
    before = record.path_of(tree).read_bytes()
    settings = [f"{k}={_flat(v) if isinstance(v, dict) else v}"
                for k, v in manifests["qd1"].items() if k not in ("created", "order")]
    assert record.check_section(tree / "qd1", settings) == (0, "")  # resumed: nothing changed
    assert record.path_of(tree).read_bytes() == before
    record.set_status(tree, "bs_sweep", 0, 200, "")
    saved = json.loads(record.path_of(tree).read_text())
    assert saved["version"] == 2 and saved["sections"] == manifests
    assert {k: saved[k] for k in v1 if k not in ("version", "status")} == \
        {k: v for k, v in v1.items() if k not in ("version", "status")}
    assert list(saved["status"]) == ["qd1", "bs_sweep"]
    (tree / "qd1" / manifest.NAME).write_text("{not json")  # no longer read
    assert record.section(tree / "qd1") == manifests["qd1"]


def test_a_section_copied_out_of_its_tree_is_still_read(tmp_path):
    """A section folder of an older tree, copied on its own (it keeps its manifest.json), reads
    as it did in its tree; one of a tree written now is read with its tree's record beside it."""
    alone = tmp_path / "elsewhere" / "wss_burst"
    shutil.copytree(SAMPLE / "wss_burst", alone)
    assert record.section(alone) == record.section(SAMPLE / "wss_burst") != {}
    assert read_section(alone) and [c.name for c in read_section(alone)] == \
        [c.name for c in read_section(SAMPLE / "wss_burst")]
    renamed = tmp_path / "elsewhere" / "burst-copy"  # under another name too
    alone.rename(renamed)
    assert record.section(renamed)["section"] == "wss_burst"
    assert record.section(tmp_path / "elsewhere" / "qd1") == {}  # never ran there


def test_a_tree_an_older_toolkit_wrote_resumes_and_refuses_as_before(tmp_path):
    """A rerun compares its settings with an older manifest as read through the migration: the
    same settings resume (nothing written), another iodepth is named case by case. A new tree's
    manifest is an entry of its record, no manifest.json."""
    path = tmp_path / "older" / "qd1" / manifest.NAME
    path.parent.mkdir(parents=True)
    shutil.copy(SAMPLE / "qd1" / manifest.NAME, path)
    old = json.loads(path.read_text())
    same = [f"{k}={v}" for k, v in old.items() if k != "created"]
    assert record.check_section(path.parent, same) == (0, "")
    assert json.loads(path.read_text()) == old and not record.path_of(path.parent.parent).exists()
    case = next(iter(manifest.parse_settings(same)["matrix"]))
    deeper = [p.replace(f"{case}: rw=randread bs=4k iodepth=1", f"{case}: rw=randread bs=4k "
                        "iodepth=8") if p.startswith("matrix=") else p for p in same]
    code, message = record.check_section(path.parent, deeper)
    assert code == 2 and f"matrix: {case}: iodepth=1 (now 8)." in message
    fresh = tmp_path / "fresh" / "qd1"
    assert record.check_section(fresh, same) == (0, "")
    saved = json.loads(record.path_of(fresh.parent).read_text())
    assert saved["version"] == 2 and list(saved["sections"]) == ["qd1"]
    assert saved["sections"]["qd1"]["matrix"] == manifest.parse_settings(same)["matrix"]
    assert fresh.is_dir() and not (fresh / manifest.NAME).exists()
    assert record.check_section(fresh, deeper)[0] == 2


def test_a_manifest_of_another_version_is_refused(tmp_path):
    section = tmp_path / "qd1"
    section.mkdir()
    (section / manifest.NAME).write_text(json.dumps({"version": 3, "section": "qd1"}))
    with pytest.raises(record.RecordError, match=r"qd1/manifest.json is a manifest of version 3; "
                                                 "this toolkit reads versions 1 and 2"):
        record.section(section)
    (section / manifest.NAME).write_text("{not json")
    with pytest.raises(record.RecordError, match="manifest.json cannot be read"):
        record.load(tmp_path)


def test_a_folder_set_aside_by_fresh_takes_its_manifest_with_it(tmp_path):
    """--fresh moves results/qd1 aside (lib/loop.bash move_results_aside): its entry goes with
    it, so the section starts anew and the folder set aside reads as before."""
    settings = "section=qd1\trepeat=2\tmatrix=randread-4k: rw=randread bs=4k iodepth=1"
    assert reply_to(f"manifest-check\t{tmp_path / 'qd1'}\t{settings}") == "ok"
    entry = record.section(tmp_path / "qd1")
    aside = tmp_path / "qd1.20261126-101010"
    (tmp_path / "qd1").rename(aside)
    assert reply_to(f"section-aside\t{tmp_path / 'qd1'}\t{aside}") == "ok"
    assert record.section(tmp_path / "qd1") == {} and record.section(aside) == entry
    deeper = settings.replace("iodepth=1", "iodepth=4")
    assert reply_to(f"manifest-check\t{tmp_path / 'qd1'}\t{deeper}") == "ok"  # anew
    assert list(record.sections(tmp_path)) == [aside.name, "qd1"]
    # a section's folder removed by hand: its entry is no section, and the next run starts anew
    shutil.rmtree(tmp_path / "qd1")
    assert record.section(tmp_path / "qd1") == {} and list(record.sections(tmp_path)) == [aside.name]
    assert reply_to(f"manifest-check\t{tmp_path / 'qd1'}\t{settings}") == "ok"
    assert record.section(tmp_path / "qd1")["matrix"]["randread-4k"]["iodepth"] == "1"
    # an older tree's folder set aside: its entry, read from its manifest.json, goes the same way
    older = tmp_path / "older"
    shutil.copytree(SAMPLE / "qd1", older / "qd1")
    (older / "qd1").rename(older / aside.name)
    assert reply_to(f"section-aside\t{older / 'qd1'}\t{older / aside.name}") == "ok"
    assert record.section(older / aside.name)["section"] == "qd1"
    assert record.section(older / "qd1") == {}


def test_the_peak_searchs_added_cases_join_the_entry(tmp_path):
    settings = "section=qd_sweep\trepeat=2\tmatrix=randread-4k: rw=randread bs=4k iodepth=1"
    assert reply_to(f"manifest-check\t{tmp_path / 'qd_sweep'}\t{settings}") == "ok"
    record.add_cases(tmp_path / "qd_sweep", [("peak-a", "rw=randread bs=4k iodepth=8")],
                     peak_mode="search")
    record.add_cases(tmp_path / "qd_sweep", [("peak-b", "rw=randread bs=4k iodepth=16 @repeat=3")])
    entry = record.section(tmp_path / "qd_sweep")
    assert entry["peak_mode"] == "search" and entry["repeat"] == "2"
    assert entry["added"] == {"peak-a": {"rw": "randread", "bs": "4k", "iodepth": "8"},
                              "peak-b": {"rw": "randread", "bs": "4k", "iodepth": "16",
                                         "@repeat": "3"}}
    assert manifest.planned_repeats(entry, "peak-b") == 3
    # the identity keys are unchanged: the same command resumes
    assert reply_to(f"manifest-check\t{tmp_path / 'qd_sweep'}\t{settings}") == "ok"


def test_steps_migrate_from_an_older_trees_files_and_a_fresh_folder_forgets_its_own(tmp_path):
    tree = tmp_path / "older"
    for rel, text in (("state/purge.done", "/dev/x: discard (blkdiscard): checked at 2026-11-20\n"),
                      ("qd1/prefill.done", "region 67108864 bytes of /dev/x written at 2026-11-20\n"),
                      ("hosts/10.0.0.2:8765/qd1/prefill.done", "region 1 bytes of /t written\n"),
                      ("qd1.20261120-101010/prefill.done", "set aside by --fresh\n")):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    assert record.load(tree)["steps"] == {
        "state/purge": "/dev/x: discard (blkdiscard): checked at 2026-11-20",
        "qd1/prefill": "region 67108864 bytes of /dev/x written at 2026-11-20",
        "hosts/10.0.0.2:8765/qd1/prefill": "region 1 bytes of /t written"}
    assert reply_to(f"step-get\t{tree}\tqd1/prefill").startswith("ok\tregion 67108864 bytes")
    assert reply_to(f"step-set\t{tree}\tqd1x/prefill\tanother section") == "ok"
    assert reply_to(f"step-forget\t{tree}\tqd1/") == "ok"  # qd1 moved aside (--fresh)
    assert reply_to(f"step-get\t{tree}\tqd1/prefill") == "none"
    assert set(record.load(tree)["steps"]) == {"state/purge", "hosts/10.0.0.2:8765/qd1/prefill",
                                               "qd1x/prefill"}
