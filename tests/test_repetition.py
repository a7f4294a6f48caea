"""What makes a file a good repetition of its case, and how a failed one is diagnosed: the pure
parts (tests/test_faults.py makes each fault for real)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from analysis.run import faults, record, repetition
from analysis.run.manifest import case_options, migrate, planned_repeats
from tests.conftest import REPO, SAMPLES

# A real fio 3.x json+ run: rw=randread bs=4k iodepth=01 numjobs=01 ioengine=libaio direct=1,
# no size= (the whole device).
GOOD = SAMPLES / "louwrentius__fio-plot" / "test-data02" / "randread-01-01.json"
ERROR_22 = SAMPLES / "louwrentius__fio-plot" / "party" / "fio" / "1m" / "run-1" / "write-64-1.json"

MANIFEST = {
    "version": 2, "cases": "randread-4k randwrite-4k",
    "matrix": {"randread-4k": {"rw": "randread", "bs": "4k", "iodepth": "1", "@repeat": "2",
                               "write_iops_log": "${TK_LOG}"},
               "randwrite-4k": {"rw": "randwrite", "bs": "4k", "iodepth": "32"}},
    "engines": "libaio io_uring", "engine": "libaio at QD=1, io_uring deeper", "direct": "1",
}


def test_the_matrix_gives_each_case_its_fio_options():
    assert case_options(MANIFEST) == {
        "randread-4k": {"rw": "randread", "bs": "4k", "iodepth": "1"},
        "randwrite-4k": {"rw": "randwrite", "bs": "4k", "iodepth": "32"}}
    assert case_options({}) == {}
    assert planned_repeats({**MANIFEST, "repeat": "3"}, "randread-4k") == 2  # its own @repeat
    assert planned_repeats({**MANIFEST, "repeat": "3"}, "randwrite-4k") == 3
    assert planned_repeats({}, "randwrite-4k") is None


def test_expected_options_add_the_run_settings_and_fio_defaults():
    expected = repetition.expected_options({**MANIFEST, "region_bytes": "16777216"},
                                           "randread-4k")
    assert expected == {"rw": "randread", "bs": "4k", "iodepth": "1", "direct": "1",
                        "size": "16777216", "ioengine": "libaio io_uring", "numjobs": "1"}
    assert repetition.expected_options(MANIFEST, "not-a-case") is None
    older = migrate({"engine": "psync", "matrix": "a: rw=read"})  # before engines per depth
    assert repetition.expected_options(older, "a")["ioengine"] == "psync"


def test_a_good_repetition_of_its_case_passes():
    group = repetition.check(GOOD, repetition.expected_options(MANIFEST, "randread-4k"))
    assert group.rw == "randread" and group.iodepth == 1  # '01' is 1
    assert repetition.check(GOOD).rw == "randread"  # no manifest: only the run itself is checked


@pytest.mark.parametrize("manifest, case, says", [
    (MANIFEST, "randwrite-4k", ("rw=randread where its case has rw=randwrite; iodepth=01 where "
                                "its case has iodepth=32")),
    ({**MANIFEST, "direct": "0"}, "randread-4k", "direct=1 where its case has direct=0"),
    ({**MANIFEST, "engines": "psync io_uring"}, "randread-4k",
     "ioengine=libaio where its case has ioengine=psync or ioengine=io_uring"),
    ({**MANIFEST, "region_bytes": "1073741824"}, "randread-4k",
     "size=(not set) where its case has size=1073741824"),
])
def test_a_repetition_of_another_case_or_run_is_refused(manifest, case, says):
    with pytest.raises(repetition.BadRepetition) as e:
        repetition.check(GOOD, repetition.expected_options(manifest, case))
    assert str(e.value) == f"not a repetition of this case: its job options say {says}"


def test_damaged_failed_and_missing_files_are_refused(tmp_path):
    cut = tmp_path / "rep2.json"
    cut.write_bytes(GOOD.read_bytes()[:3000])
    with pytest.raises(repetition.BadRepetition, match="^truncated or malformed JSON") as e:
        repetition.check(cut)
    assert "json+" not in str(e.value)  # the toolkit's own file: the remedy is to run it again
    with pytest.raises(repetition.BadRepetition, match=r"fio reported error 22 \(Invalid"):
        repetition.check(ERROR_22)
    with pytest.raises(repetition.BadRepetition, match="cannot read .*missing.json"):
        repetition.check(tmp_path / "missing.json")


def test_sizes_compare_by_value():
    assert repetition.same_value("4096", "4k") and repetition.same_value("1m", "1024k")
    assert not repetition.same_value("4k", "8k") and not repetition.same_value(None, "4k")
    assert repetition.same_value("psync", "psync io_uring")


def test_fio_killed_by_a_signal_is_named():
    assert faults.killed(128 + signal.SIGKILL).startswith(
        "fio was killed by SIGKILL (the kernel's out-of-memory killer")
    assert faults.killed(128 + signal.SIGTERM) == "fio was killed by SIGTERM"
    assert faults.killed(1) == "" and faults.killed(0) == ""


def test_a_target_that_is_there_and_writable_is_no_fault(tmp_path):
    target = tmp_path / "t.img"
    target.write_bytes(b"\0" * 4096)
    assert faults.target_gone(target) == "" and faults.target_read_only(target) == ""
    assert faults.target_gone(tmp_path / "gone.img") == f"{tmp_path / 'gone.img'} no longer exists"
    assert faults.diagnose(str(target), str(tmp_path), 1, True) == ("", "")
    assert faults.diagnose(str(target), str(tmp_path), 137, True)[0] == "go"
    action, message = faults.diagnose(str(tmp_path / "gone.img"), str(tmp_path), 1, True)
    assert action == "stop" and message.startswith("the target is gone: ")
    # A fleet run names no local target: only the results folder is checked.
    assert faults.diagnose("", str(tmp_path / "not-made-yet"), 1, True) == ("", "")


def test_the_helper_answers_check_result_and_diagnose_over_its_pipe(tmp_path):
    manifest = tmp_path / "qd1"  # the section's folder: its manifest is in the tree's record
    record.save(tmp_path, {**record.empty(), "sections": {"qd1": MANIFEST}})
    manifest.mkdir()
    lines = [f"check-result\t{GOOD}\t{manifest}\trandread-4k",
             f"check-result\t{GOOD}\t{manifest}\trandwrite-4k",
             f"diagnose\t{tmp_path / 'gone'}\t{tmp_path}\t137\t1",
             f"diagnose\t{GOOD}\t{tmp_path}\t137\t0"]
    replies = subprocess.run([sys.executable, "-m", "analysis", "runner"], cwd=REPO, check=True,
                             input="".join(x + "\n" for x in lines), capture_output=True,
                             text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(REPO)}
                             ).stdout.splitlines()
    assert replies[0] == "ok"
    assert replies[1].startswith("bad\tnot a repetition of this case: its job options say rw=")
    assert replies[2].startswith("stop\tthe target is gone: ")
    assert replies[3].startswith("go\tfio was killed by SIGKILL")
