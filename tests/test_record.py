"""The tree's record, results/run.json (analysis/run/record.py): read from what older toolkits
left (the committed sample's tree), written whole, refused at a version it does not know, and
reached by bash through the run loop's helper (record-get, record-set)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis.run import manifest, record
from analysis.run.runner_service import reply_to
from tests.conftest import REPO

SAMPLE = REPO / "docs" / "sample" / "results"


def test_the_committed_sample_migrates_its_engines_as_fields():
    doc = record.load(SAMPLE)  # the sample predates run.json: read through the migration
    assert not record.path_of(SAMPLE).exists()
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
    with pytest.raises(record.RecordError, match="this toolkit reads version 1"):
        record.load(tmp_path)
    assert reply_to(f"record-get\t{tmp_path}\tengines\t/dev/x\t1").startswith(
        "bad\t" + str(record.path_of(tmp_path)) + " is a record of version 2")
    record.path_of(tmp_path).write_text("{not json")
    with pytest.raises(record.RecordError, match="cannot be read"):
        record.load(tmp_path)


# --- each section's manifest.json (analysis/run/manifest.py) -----------------------------------
OLDER_MANIFESTS = sorted([*SAMPLE.glob("*/manifest.json"),
                          *(REPO / "tests" / "fixtures").rglob("manifest.json")])


def _flat(matrix: dict) -> str:
    """The string an older toolkit stored, from the data (lib/cases.bash case_matrix's form)."""
    return "; ".join(f"{name}: " + " ".join(f"{k}={v}" for k, v in opts.items())
                     for name, opts in matrix.items())


@pytest.mark.parametrize("path", OLDER_MANIFESTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_manifest_migrates_without_loss(path):
    old = json.loads(path.read_text())
    assert "version" not in old  # written before manifests had one
    new = manifest.load_path(path)
    assert new["version"] == manifest.VERSION
    for key in ("matrix", "added"):
        if key in old:
            assert isinstance(new[key], dict) and _flat(new[key]) == old[key]
    assert set(old["cases"].split()) <= set(manifest.matrix_entries(new))
    assert all("rw" in opts for opts in manifest.matrix_entries(new).values())
    for note, fact in (("engine_note", "engine_from_tree"), ("io_uring_note", "io_uring_from_tree")):
        if manifest.PROBED_ONCE in str(old.get(note)):
            assert new[fact] == "1" and manifest.PROBED_ONCE not in new[note]
            assert new[note] == old[note].replace(manifest.PROBED_ONCE, "")
        else:
            assert new.get(note) == old.get(note) and new.get(fact) == old.get(fact)
    assert new["engines"] == old["engines"]


def test_a_tree_an_older_toolkit_wrote_resumes_and_refuses_as_before(tmp_path):
    """A rerun compares its settings with an older manifest as read through the migration: the
    same settings resume (nothing rewritten), another iodepth is named case by case."""
    path = tmp_path / "qd1" / manifest.NAME
    path.parent.mkdir()
    shutil.copy(SAMPLE / "qd1" / manifest.NAME, path)
    old = json.loads(path.read_text())
    same = manifest.parse_settings([f"{k}={v}" for k, v in old.items() if k != "created"])
    assert manifest.check_or_write(path, same) == []
    assert json.loads(path.read_text()) == old
    case = next(iter(same["matrix"]))
    deeper = {**same, "matrix": {**same["matrix"], case: {**same["matrix"][case], "iodepth": "8"}}}
    assert manifest.check_or_write(path, deeper) == [f"matrix: {case}: iodepth=1 (now 8)"]
    # a new tree's manifest is written with its version and the matrix as data
    fresh = tmp_path / "fresh" / manifest.NAME
    assert manifest.check_or_write(fresh, same) == []
    assert json.loads(fresh.read_text())["version"] == manifest.VERSION
    assert json.loads(fresh.read_text())["matrix"] == same["matrix"]
    fresh.write_text(json.dumps({**old, "version": 3}))
    with pytest.raises(manifest.ManifestError, match="reads versions 1 and 2"):
        manifest.load_path(fresh)


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
