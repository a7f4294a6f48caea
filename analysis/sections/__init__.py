"""The report's sections in order: results/<id>, `python -m analysis <id>`, <id>_test.bash, and
the snippet out/section_<number>_<id>.md. One module per section sits beside this file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SectionInfo:
    number: int
    title: str
    script: str
    always: tuple[str, ...] = ()  # directions that get a row even when never issued (a mix)

    @property
    def heading(self) -> str:
        return f"§{self.number} {self.title}"


SECTIONS = {
    "qd1": SectionInfo(2, "QD=1 baselines", "qd1_test.bash"),
    "bs_sweep": SectionInfo(3, "Block-size sweep", "bs_sweep_test.bash"),
    "mix_rw": SectionInfo(4, "Read/write mix", "mix_rw_test.bash", ("read", "write")),
    "qd_sweep": SectionInfo(5, "Queue-depth sweep", "qd_sweep_test.bash"),
    "wss_burst": SectionInfo(6, "Working set, burst and compressibility", "wss_burst_test.bash"),
}


def snippet_path(section: str) -> str:
    return f"out/section_{SECTIONS[section].number}_{section}.md"
