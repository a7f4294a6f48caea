"""The toolkit's two tables, as the scripts read them (lib/registry.bash reads the same files):

- lib/sections.tsv: the report's sections (number, id, script, make alias, fleet, title);
- lib/options.tsv: every option of every script (scope, flag, variable, default, check, help).

`python -m analysis options` prints docs/options.md from the second (`make docs`).
Standard library only: `python -m analysis` imports this before any command runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib"
SECTIONS_FILE = LIB / "sections.tsv"
OPTIONS_FILE = LIB / "options.tsv"
# Scopes of lib/options.tsv that are not sections, with the heading docs/options.md gives them.
SCRIPT_SCOPES = {
    "common": "Every section (report.bash and env.bash pass them on)",
    "report": "report.bash",
    "env": "env.bash (§1)",
    "serve": "serve.bash (a fleet host)",
}


def rows(path: Path, width: int) -> list[list[str]]:
    """The data lines of a table, split on tabs; '-' is an empty field."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != width or not all(fields):
            raise ValueError(f"{path}:{number}: expected {width} tab-separated fields "
                             f"(- for an empty one), found {len(fields)}")
        out.append(["" if f == "-" else f for f in fields])
    return out


@dataclass(frozen=True)
class SectionInfo:
    number: int
    id: str
    script: str
    alias: str  # its short `make` target
    fleet: bool  # runs on every host of a fleet (--hosts)
    always: tuple[str, ...]  # directions that get a row even when never issued (a mix)
    title: str

    @property
    def heading(self) -> str:
        return f"§{self.number} {self.title}"


def read_sections(path: Path = SECTIONS_FILE) -> dict[str, SectionInfo]:
    """id -> SectionInfo, in report order."""
    out = {}
    for number, sid, script, alias, fleet, always, title in rows(path, 7):
        if fleet not in ("yes", "no"):
            raise ValueError(f"{path}: section {sid}: fleet is yes or no, not {fleet!r}")
        out[sid] = SectionInfo(int(number), sid, script, alias, fleet == "yes",
                               tuple(always.split(",")) if always else (), title)
    return out


@dataclass(frozen=True)
class Option:
    scopes: tuple[str, ...]
    flag: str
    arg: str  # '' for a switch or a bool
    variable: str
    default: str  # a value, '', or per profile: 'standard=30 quick=4'
    check: str
    help: str

    @property
    def flags(self) -> str:
        """How --help writes it: '--qd LIST', '--seq, --no-seq', '--peak MODE, --no-peak' (a
        choice with the value off takes --no-name too)."""
        name = f"{self.flag} {self.arg}".rstrip()
        off = self.check == "bool" or (self.check.startswith("choice:")
                                       and "off" in self.check[7:].split(","))
        return f"{name}, --no-{self.flag[2:]}" if off else name

    @property
    def profile_defaults(self) -> dict[str, str]:
        """{'standard': '30', 'quick': '4'} for a per-profile default, else {}."""
        if "=" not in self.default:
            return {}
        return dict(word.split("=", 1) for word in self.default.split())

    @property
    def default_text(self) -> str:
        if self.check == "switch":
            return f"off ({self.variable}=1 turns it on)"
        if self.profile_defaults:
            return ", ".join(f"{v} ({p})" for p, v in self.profile_defaults.items())
        return self.default


def read_options(path: Path = OPTIONS_FILE) -> list[Option]:
    return [Option(tuple(scope.split(",")), flag, arg, var, default, check, text)
            for scope, flag, arg, var, default, check, text in rows(path, 7)]


def settings() -> list[str]:
    """Every environment variable an option of a script reads, each once."""
    return list(dict.fromkeys(o.variable for o in read_options()))


def escape_cell(text: str) -> str:
    """Text for a Markdown table cell: | would end the cell, <host> would read as HTML."""
    return text.replace("|", "\\|").replace("<", "\\<")


def options_markdown() -> str:
    """docs/options.md: one table per script or section."""
    options = read_options()
    sections = read_sections()
    lines = ["# Options", "",
             "Generated from `lib/options.tsv` by `make docs`: edit that table, not this page.", "",
             ("Every option is also an environment variable: a flag overrides its variable, which "
              "overrides the default (`QD_LIST=1,4,16 make qd`, or `bash qd_sweep_test.bash --qd "
              "1,4,16`). A switch is on when given or when its variable is 1; `VAR=0` is off. "
              "`--opt=value` is the same as `--opt value`."), ""]
    groups = list(SCRIPT_SCOPES.items())
    groups[1:1] = [(s.id, f"{s.heading} ({s.script})") for s in sections.values()]
    for scope, title in groups:
        mine = [o for o in options if scope in o.scopes]
        if not mine:
            continue
        lines += [f"## {title}", "", "| Option | Variable | Default | What it does |",
                  "|---|---|---|---|"]
        lines += [f"| `{o.flags}` | `{o.variable}` | {o.default_text or '–'} | "
                  f"{escape_cell(o.help)} |" for o in mine]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m analysis options  (prints docs/options.md)", file=sys.stderr)
        return 2
    sys.stdout.write(options_markdown())
    return 0
