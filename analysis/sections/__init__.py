"""The report's sections in order: results/<id>, `python -m analysis <id>`, its script, and the
snippet out/section_<number>_<id>.md. One module per section sits beside this file; the list
itself is lib/sections.tsv (analysis/core/registry.py), which the Makefile and the scripts read too."""

from __future__ import annotations

from analysis.core.registry import SectionInfo, read_sections

__all__ = ["SECTIONS", "SectionInfo", "snippet_path"]

SECTIONS: dict[str, SectionInfo] = read_sections()


def snippet_path(section: str) -> str:
    return f"out/section_{SECTIONS[section].number}_{section}.md"
