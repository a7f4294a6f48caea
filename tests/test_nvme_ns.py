"""An NVMe namespace's identity from `nvme id-ns -o json` (analysis/device/nvme_ns.py): on a real
controller's output (QEMU's, recorded in the NVMe VM) and on the FLBAS encodings of NVMe 2.0."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.device.nvme_ns import (
    describe_namespace,
    format_in_use,
    nuse_is_fill,
    parse_nvme_id_ns,
)

FIXTURE = Path(__file__).parent / "fixtures" / "health" / "nvme-id-ns-qemu-4k.json"


def test_qemus_4k_namespace():
    doc = json.loads(FIXTURE.read_text())
    ns = parse_nvme_id_ns(doc)
    assert ns["lba_format"] == doc["flbas"] == 4
    assert ns["lba_formats"] == doc["nlbaf"] + 1 == 8
    assert ns["lba_data_bytes"] == 2 ** doc["lbafs"][4]["ds"] == 4096
    assert ns["lba_metadata_bytes"] == 0
    assert ns["supported_lba_bytes"] == [512, 4096]
    assert ns["size_bytes"] == doc["nsze"] * 4096 == 512 * 2**20
    assert ns["used_bytes"] == doc["nuse"] * 4096
    assert describe_namespace(ns) == [
        ("LBA format", "4 of 8 in use: 4096 B data + 0 B metadata (formats offer 512 B, 4096 B)"),
        ("namespace use", ("nuse 131,072 of nsze 131,072 blocks (not a fill level: no thin "
                          "provisioning, NSFEAT bit 0 clear), ncap 131,072"))]


def test_nuse_is_a_fill_level_only_with_thin_provisioning():
    """QEMU reports nuse = nsze with nothing written, NSFEAT 0x14 (bit 0 clear): no fill level
    (issue 41). No thin-provisioned namespace was recorded here (QEMU cannot make one), so the
    other side is the same document with NSFEAT bit 0 set."""
    doc = json.loads(FIXTURE.read_text())
    assert doc["nsfeat"] == 0x14 and not nuse_is_fill(doc)
    thin = dict(doc, nsfeat=doc["nsfeat"] | 1, nuse=32768)
    assert nuse_is_fill(thin)
    assert describe_namespace(parse_nvme_id_ns(thin))[1] == (
        "namespace use", "nuse 32,768 of nsze 131,072 blocks (25% allocated), ncap 131,072")
    assert not nuse_is_fill(None) and not nuse_is_fill({"nuse": 1})


def test_format_index_bits():
    assert format_in_use(0x04) == 4
    assert format_in_use(0x14) == 4  # bit 4: metadata at the end of the block, not the index
    assert format_in_use(0x21) == 17  # bits 6:5 are the upper bits when there are > 16 formats
    assert format_in_use(0x6F) == 63


def test_what_is_not_a_namespace_is_none():
    assert parse_nvme_id_ns(None) is None
    assert parse_nvme_id_ns({"flbas": 0}) is None
    assert parse_nvme_id_ns({"flbas": 3, "lbafs": [{"ds": 9, "ms": 0}]}) is None
    assert describe_namespace(None) == []
