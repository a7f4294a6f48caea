"""An NVMe namespace's identity from `nvme id-ns DEV -o json`: the LBA format in use, the size,
the capacity and the utilisation (nuse), in bytes.

The format in use is FLBAS's bits 3:0, with bits 6:5 as its upper bits when the namespace has
more than 16 formats (NVMe 2.0); each format's data size is 2^ds bytes and ms bytes of metadata
go with each block. nsze, ncap and nuse count logical blocks of the format in use. nuse is what
the namespace holds allocated only where it supports thin provisioning (NSFEAT bit 0): there a
Format NVM or a deallocation drops it. Elsewhere the spec lets nuse equal ncap whatever was
written (QEMU's emulated NVMe reports nuse = nsze, NSFEAT 0x14: bit 0 clear, with nothing
written), so it is no fill level, and a report says what the toolkit wrote instead.
"""

from __future__ import annotations

from analysis.device.health import as_int


def format_in_use(flbas: int) -> int:
    return (flbas & 0xF) | (((flbas >> 5) & 0x3) << 4)


def nuse_is_fill(doc: dict | None) -> bool:
    """Whether the namespace's nuse is its fill level: NSFEAT bit 0 (thin provisioning) set. An
    id-ns without nsfeat (or none at all) gives no such fact."""
    nsfeat = as_int(doc.get("nsfeat")) if isinstance(doc, dict) else None
    return nsfeat is not None and bool(nsfeat & 0x1)


def parse_nvme_id_ns(doc: dict | None) -> dict | None:
    """The namespace's facts, or None when the document has no usable LBA format."""
    if not isinstance(doc, dict):
        return None
    flbas, formats = as_int(doc.get("flbas")), doc.get("lbafs")
    if flbas is None or not isinstance(formats, list):
        return None
    index = format_in_use(flbas)
    if index >= len(formats) or not isinstance(formats[index], dict):
        return None
    ds, ms = as_int(formats[index].get("ds")), as_int(formats[index].get("ms"))
    if ds is None:
        return None
    block = 1 << ds
    blocks = {key: as_int(doc.get(key)) for key in ("nsze", "ncap", "nuse")}
    return {
        "lba_format": index,
        "lba_formats": len(formats),
        "lba_data_bytes": block,
        "lba_metadata_bytes": ms or 0,
        "supported_lba_bytes": sorted({1 << f["ds"] for f in formats
                                       if isinstance(f, dict) and as_int(f.get("ds"))}),
        **{f"{key}_blocks": value for key, value in blocks.items()},
        "size_bytes": None if blocks["nsze"] is None else blocks["nsze"] * block,
        "capacity_bytes": None if blocks["ncap"] is None else blocks["ncap"] * block,
        "used_bytes": None if blocks["nuse"] is None else blocks["nuse"] * block,
        "nuse_is_fill": nuse_is_fill(doc),
    }


def describe_namespace(ns: dict | None) -> list[tuple[str, str]]:
    """env.txt's rows for the namespace."""
    if not ns:
        return []
    offered = ", ".join(f"{b} B" for b in ns["supported_lba_bytes"])
    lba = (f"{ns['lba_format']} of {ns['lba_formats']} in use: {ns['lba_data_bytes']} B data + "
           f"{ns['lba_metadata_bytes']} B metadata (formats offer {offered})")
    rows = [("LBA format", lba)]
    if ns.get("size_bytes") is not None and ns.get("used_bytes") is not None:
        share = ns["used_bytes"] / ns["size_bytes"] * 100 if ns["size_bytes"] else 0
        what = (f"{share:.0f}% allocated" if ns.get("nuse_is_fill") else
                "not a fill level: no thin provisioning, NSFEAT bit 0 clear"
                if "nuse_is_fill" in ns else  # an env.json written before NSFEAT was read
                "not read as a fill level: NSFEAT, which says whether it is one, not recorded")
        use = (f"nuse {ns['nuse_blocks']:,} of nsze {ns['nsze_blocks']:,} blocks "
               f"({what}), ncap {ns['ncap_blocks']:,}")
        rows.append(("namespace use", use))
    return rows
