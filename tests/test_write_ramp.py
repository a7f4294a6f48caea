"""The regime a write block's ramp declares (analysis/rules/write_ramp.py), on two real ramps of
§2 on the model drive (tests/fixtures/write-ramp/README.md: 62.9 MB/s, a cliff at 0.44 GiB, then
8 MB/s; and a ramp at 8 MB/s throughout, the block right after)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.rules.write_ramp import IDLE_GAP_S, NOT_RECORDED, declared, read_ramp

FIXTURES = Path(__file__).parent / "fixtures" / "write-ramp"


@pytest.fixture(scope="module")
def ramps():
    return read_ramp(FIXTURES / "cliff", 20), read_ramp(FIXTURES / "held", 20)


def test_a_ramp_that_passes_the_cliff_declares_it(ramps):
    cliff, _ = ramps
    said = declared([("randwrite-4k", cliff, None)])["randwrite-4k"]
    assert said == ("after the write cache filled (the ramp fell from 62.9 to 8.01 MB/s at "
                    "0.44 GiB)")


def test_a_ramp_that_held_its_level_declares_no_cliff(ramps):
    _, held = ramps
    said = declared([("write-128k", held, None)])["write-128k"]
    match = re.fullmatch(r"no cliff in the ramp's ([\d.]+) GiB at ([\d.]+) MB/s "
                         r"\(any write cache is larger\)", said)
    assert match, said
    # 20 s at 8 MB/s: 0.15 GiB
    assert float(match[1]) == pytest.approx(20 * 8e6 / 2**30, rel=0.1)
    assert float(match[2]) == pytest.approx(8.0, rel=0.02)


def test_a_block_right_after_a_cliff_finds_the_drive_past_it(ramps):
    cliff, held = ramps
    end = cliff.end_s + 15.0  # the first block's repetitions, back to back
    follows = replace(held, end_s=end + 1.0 + held.seconds)  # its ramp began 1 s later
    said = declared([("randwrite-4k", cliff, end), ("write-128k", follows, None)])
    assert said["write-128k"] == ("after the write cache filled (randwrite-4k's ramp, just "
                                  "before, fell from 62.9 to 8.01 MB/s at 0.44 GiB; this ramp "
                                  "held 8 MB/s)")
    # an idle between the blocks (a resumed run) lets the cache drain: nothing is inherited
    later = replace(held, end_s=end + IDLE_GAP_S + 1.0 + held.seconds)
    said = declared([("randwrite-4k", cliff, end), ("write-128k", later, None)])
    assert said["write-128k"].startswith("no cliff in the ramp's")
    # a block without its ramp says so, and breaks the chain
    said = declared([("randwrite-4k", cliff, end), ("a", None, end + 5), ("write-128k", follows, None)])
    assert said["a"] == NOT_RECORDED and said["write-128k"].startswith("no cliff")


def test_no_ramp_without_its_json(tmp_path):
    (tmp_path / "ramp_bw.1.log").write_text((FIXTURES / "cliff" / "ramp_bw.1.log").read_text())
    assert read_ramp(tmp_path, 20) is None  # fio did not finish it: nothing is declared
