"""The purge's choice of method (analysis/device/purge.py) on recorded `nvme id-ctrl -o json`
of a real drive (tests/fixtures/health/SOURCES.md), and its check on a real file.

The purge itself runs end to end in tests/test_drive_state.py (a discard on a partition) and on
QEMU's NVMe controller (Format NVM, and Sanitize refused) in the NVMe VM's tests.
"""

from __future__ import annotations

import json
import os

import pytest

from analysis.device import purge
from tests.conftest import REPO

SN730 = json.loads((REPO / "tests/fixtures/health/nvme-id-ctrl-wdc-sn730.json").read_text())
GIB = 2**30


def namespace(id_ctrl: dict, namespaces: int = 1, flbas: int = 0) -> purge.Target:
    return purge.Target("/dev/nvme0n1", "block", "nvme0n1", "/dev/nvme0", 1, id_ctrl,
                        {"flbas": flbas, "nsze": 1000}, namespaces)


def test_what_the_recorded_drive_supports():
    """The SN730: OACS 0x17 (Format NVM), SANICAP 0x60000003 (crypto and block erase), FNA 0x4
    (a format acts on one namespace; crypto erase supported)."""
    t = namespace(SN730)
    assert t.supports() == ["format", "sanitize", "discard"]
    assert purge.choose(t, "auto", 100 * GIB, 100 * GIB)[0] == "format"
    assert purge.choose(t, "auto", 10 * GIB, 100 * GIB)[0] == "discard"  # a part of it
    method, what = purge.choose(t, "format", 10 * GIB, 100 * GIB)
    assert method == "format" and "not only the region" in what
    assert purge.command(t, "format", GIB)[:5] == ["nvme", "format", "/dev/nvme0n1",
                                                   "--namespace-id=1", "--ses=1"]
    assert purge.command(t, "sanitize", GIB)[-1] == "--sanact=2"     # block erase


def test_a_controller_wide_purge_of_a_shared_controller_is_refused():
    """Sanitize erases every namespace of the controller; so does a format where FNA bit 0 is
    set: with a second namespace beside the target, refused as unsafe (exit 3)."""
    with pytest.raises(purge.PurgeError, match="would erase every namespace") as e:
        purge.choose(namespace(SN730, namespaces=2), "sanitize", GIB, GIB)
    assert e.value.code == 3
    assert purge.choose(namespace(SN730, namespaces=2), "format", GIB, GIB)[0] == "format"
    with pytest.raises(purge.PurgeError) as e:
        purge.choose(namespace(dict(SN730, fna=1), namespaces=2), "format", GIB, GIB)
    assert e.value.code == 3
    assert purge.choose(namespace(dict(SN730, fna=1), namespaces=2), "auto", GIB, GIB)[0] \
        == "discard"


def test_a_method_the_drive_lacks_is_refused_naming_what_it_has():
    qemu_like = dict(SN730, sanicap=0)
    with pytest.raises(purge.PurgeError, match="it supports format, discard") as e:
        purge.choose(namespace(qemu_like), "sanitize", GIB, GIB)
    assert e.value.code == 2 and "SANICAP 0x0" in str(e.value)
    partition = purge.Target("/dev/nvme0n1p2", "block")
    with pytest.raises(purge.PurgeError, match="not a whole NVMe namespace; it supports discard"):
        purge.choose(partition, "format", GIB, GIB)
    with pytest.raises(purge.PurgeError, match="is a file"):
        purge.choose(purge.Target("/tmp/x.img", "file"), "discard", GIB, GIB)


def test_lba_format_in_use_keeps_the_high_bits():
    assert purge.lba_format({"flbas": 0x4}) == 4
    assert purge.lba_format({"flbas": 0x10 | 0x2}) == 2          # bit 4: metadata at the end
    assert purge.lba_format({"flbas": 0x40 | 0x3}) == 0x23       # NVMe 2.0: bits 6:5 on top


def test_the_check_reads_purged_and_written_blocks_apart(tmp_path):
    """A file with its first half written and its second half freed: the sampled blocks read
    as data, then as zeros, half and half."""
    path = tmp_path / "t.img"
    with open(path, "wb") as f:
        f.write(os.urandom(4 << 20))
        f.truncate(8 << 20)
    found = purge.sample(str(path), 8 << 20)
    assert found == {"sampled": 64, "zeros": 32, "ones": 0, "data": 32}
