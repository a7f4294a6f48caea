"""The run loop's helper process: what makes a repetition good, spoken over a real pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO, SAMPLES

PLOT = SAMPLES / "louwrentius__fio-plot"
GOOD = PLOT / "test-data02" / "randread-01-01.json"
ERROR_22 = PLOT / "party" / "fio" / "1m" / "run-1" / "write-64-1.json"  # exit 0, error 22
NO_JSON = PLOT / "benchmark_script" / "test" / "zda" / "randread-1-1.json"


def ask(*lines: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "analysis", "runner"], cwd=REPO, check=True,
                          input="".join(line + "\n" for line in lines),
                          capture_output=True, text=True, timeout=30)
    return proc.stdout.splitlines()


def test_check_result_accepts_only_good_fio_output(tmp_path):
    empty = tmp_path / "missing.json"
    replies = ask(f"check-result\t{GOOD}", f"check-result\t{ERROR_22}",
                  f"check-result\t{NO_JSON}", f"check-result\t{empty}", "nonsense")
    assert replies[0] == "ok"
    assert replies[1].startswith("bad\t") and "error 22" in replies[1]
    assert replies[2].startswith("bad\t") and "engine libaio not loadable" in replies[2]
    assert replies[3].startswith("bad\t") and "missing.json" in replies[3]
    assert replies[4].startswith("bad\tunknown request")


def test_safety_over_the_pipe_refuses_a_regular_file(tmp_path):
    plain = tmp_path / "f.img"
    plain.write_bytes(b"x" * 4096)
    (reply,) = ask(f"safety\t{plain}\t")
    assert reply.startswith("refused\t") and "not a block device" in reply


def test_the_manifest_and_the_orders_seed_over_the_pipe(tmp_path):
    """A section's manifest written, matched, refused (another iodepth) and unwritable; the
    order's seed kept from it, and a --seed other than the stored one refused."""
    path = tmp_path / "qd1"  # the section's folder: its manifest goes into the tree's record
    settings = "section=qd1\trepeat=2\tmatrix=randread-4k: rw=randread bs=4k iodepth=1"
    deeper = settings.replace("iodepth=1", "iodepth=4")
    blocked = tmp_path / "file"
    blocked.write_text("")
    replies = ask(f"manifest-check\t{path}\t{settings}", f"manifest-check\t{path}\t{settings}",
                  f"manifest-check\t{path}\t{deeper}",
                  f"manifest-check\t{blocked / 'qd1'}\t{settings}",
                  f"order\t7\trounds\t0\trandread-4k:2\t{path}",
                  f"order-seed\t\t\t{path}", f"order-seed\t8\t\t{path}", f"order-seed\t8\t1\t{path}")
    assert replies[:2] == ["ok", "ok"]
    assert replies[2] == (f"refused\t{path} holds results measured with other settings: "
                          "matrix: randread-4k: iodepth=1 (now 4). Rerun with --fresh to move "
                          "them aside (nothing is deleted), or give the same settings to resume.")
    assert replies[3].startswith("bad\tcannot write")
    assert replies[4].startswith("ok\t")
    assert replies[5] == "ok\t7\tkept"
    assert replies[6].startswith(f"bad\t{path} was run in the order of seed 7, not 8")
    assert replies[7] == "ok\t8\tgiven"  # --fresh: the stored seed no longer holds


def test_the_helper_starts_without_numpy():
    """Every section starts the helper; numpy, which only --until-stable's check needs, is
    imported by that check alone (on an emulated CPU its import is most of the helper's start)."""
    code = ("import sys; import analysis.run.runner_service as s; before = 'numpy' in sys.modules; "
            "s.unstable('/nonexistent', '5', ''); print(before, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out == ["False", "True"]


def test_the_purges_plan_fill_and_check_over_the_pipe(tmp_path):
    """--purge's steps as the run loop asks them: a file's plan (punch-hole, the command's words
    as fields) and a method it cannot have (refused with its exit code); its fill (none: not an
    NVMe namespace); the check of a freed region and of one still holding data, each recorded."""
    target = tmp_path / "t.img"
    with open(target, "wb") as f:
        f.truncate(8 << 20)  # freed: reads back as zeros
    written = tmp_path / "w.img"
    written.write_bytes(os.urandom(8 << 20))
    record, still = tmp_path / "purge.json", tmp_path / "still.json"
    replies = ask(f"purge-plan\t{target}\tauto\t{8 << 20}\t{8 << 20}",
                  f"purge-plan\t{target}\tformat\t{8 << 20}\t{8 << 20}",
                  f"purge-plan\t{target}\tauto\teight\t{8 << 20}",
                  f"purge-fill\t{target}",
                  f"purge-check\t{target}\tpunch-hole\t{8 << 20}\t{record}\t",
                  f"purge-check\t{written}\tpunch-hole\t{8 << 20}\t{still}\t",
                  f"purge-check\t{target}\tpunch-hole\t{8 << 20}\t{tmp_path / 'no' / 'r.json'}\t")
    assert replies[0].split("\t") == [
        "ok", "punch-hole", "the file's region freed (fallocate --punch-hole)", "fallocate",
        "--punch-hole", "--offset", "0", "--length", str(8 << 20), str(target)]
    assert replies[1] == (f"refused\t2\t--purge format: {target} is a file; a file's region is "
                          "freed with --purge auto")
    assert replies[2].startswith("bad\t") and "eight" in replies[2]
    assert replies[3] == "ok\t"
    assert replies[4] == "ok\t64 of 64 sampled blocks read as purged"
    doc = json.loads(record.read_text())
    assert doc["verified"] and doc["samples"] == {"sampled": 64, "zeros": 64, "ones": 0, "data": 0}
    assert replies[5] == ("unverified\t0 of 64 sampled blocks read as purged: NOT verified: "
                          "64 of 64 sampled blocks still hold data")
    assert not json.loads(still.read_text())["verified"]
    assert replies[6].startswith("bad\t") and "r.json" in replies[6]  # no folder: said, helper lives
    assert len(replies) == 7
