"""fio's option values as its JSON prints them: sizes, times and the version string, and the
parameters of a job (rw, bs, iodepth, numjobs, rwmixread) read from its effective options."""

from __future__ import annotations

import re


def _int_option(value) -> int | None:
    """Leading integer of an option value: '01' -> 1, '32,' -> 32 (a real sample)."""
    if value is None:
        return None
    m = re.match(r"\s*(\d+)", str(value))
    return int(m.group(1)) if m else None


_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(value: str, kb_base: int = 1024) -> int | None:
    """fio's size syntax: '4k' -> 4096, '1m' -> 1048576, '512' -> 512.

    fio's default kb_base=1024 is a compatibility mode: K/KB mean 1024 while
    KiB means 1000 (fio parse.c get_mult_bytes; checked with fio 3.33: bs=4KiB
    issues 4000-byte I/Os). kb_base=1000 swaps them. None when not one size.
    """
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(i?)(b?)\s*", str(value), flags=re.IGNORECASE)
    if not m:
        return None
    number, prefix, iec, _ = m.groups()
    power = _POWERS[prefix.lower()]
    if iec and not prefix:
        return None
    if iec:
        mult = 1024 if kb_base == 1000 else 1000
    else:
        mult = kb_base
    return int(number) * mult**power


_BS_KEYS = ("bs", "blocksize")
_OTHER_BS_KEYS = ("bsrange", "blocksize_range", "bssplit")
_MIXED_RW = ("rw", "readwrite", "randrw", "trimwrite", "randtrimwrite")


def job_parameters(options: dict, has_options: bool) -> dict:
    """rw, bs, iodepth, numjobs, rwmixread from the effective options.

    fio lists only options that were set, so where the JSON has options at all
    an absent one is fio's documented default (rw=read, bs=4096, iodepth=1,
    numjobs=1, rwmixread=50 for mixed rw). fio 2.1.4 prints no options: every
    parameter is unknown ('' or None) there.
    """
    if not has_options:
        return {"rw": "", "bs": "", "iodepth": None, "numjobs": None, "rwmixread": None}
    kb_base = _int_option(options.get("kb_base")) or 1024
    rw = options.get("rw") or options.get("readwrite") or "read"
    bs_raw = next((options[k] for k in _BS_KEYS if k in options), None)
    if bs_raw is None:
        bs_raw = next((options[k] for k in _OTHER_BS_KEYS if k in options), None)
        bs: int | str = 4096 if bs_raw is None else str(bs_raw)
    else:
        size = parse_size(bs_raw, kb_base)
        bs = size if size is not None else str(bs_raw)
    rwmixread = _int_option(options.get("rwmixread"))
    if rwmixread is None and options.get("rwmixwrite") is not None:
        mixwrite = _int_option(options.get("rwmixwrite"))
        rwmixread = None if mixwrite is None else 100 - mixwrite
    if rwmixread is None and rw.split(":")[0] in _MIXED_RW:
        rwmixread = 50
    iodepth = _int_option(options["iodepth"]) if "iodepth" in options else 1
    numjobs = _int_option(options["numjobs"]) if "numjobs" in options else 1
    return {"rw": rw, "bs": bs, "iodepth": iodepth, "numjobs": numjobs, "rwmixread": rwmixread}


def fio_release(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a "fio version" string ("fio-3.33" -> (3, 33)); None if it has none."""
    m = re.search(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None



# fio's time suffixes (parse.c): a bare number is in seconds for runtime and ramp_time.
_TIME_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0,
               "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def time_option_s(value) -> float | None:
    """A fio time option as the JSON's job options hold it ("300", "5m", "1500ms"), in seconds;
    None when it is absent or not a time."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value or "").lower())
    if not m or m.group(2) not in ("", *_TIME_UNITS):
        return None
    return float(m.group(1)) * _TIME_UNITS.get(m.group(2), 1.0)
