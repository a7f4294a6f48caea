"""Quantities as a reader wants them, for every layer's messages."""

from __future__ import annotations


def human_size(n: float) -> str:
    """Bytes as a reader wants them: '256 MiB', '8 GiB', '1.5 GiB' (powers of 1024)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{int(n)} B"
