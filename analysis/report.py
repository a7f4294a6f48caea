"""out/report.md: the environment and every section snippet, in section order."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path


def snippet_number(path: Path) -> int:
    match = re.match(r"section_(\d+)_", path.name)
    return int(match.group(1)) if match else 1_000


def title(root: Path) -> str:
    env_path = root / "results" / "env.json"
    model = ""
    if env_path.exists():
        model = (json.loads(env_path.read_text()).get("target") or {}).get("model") or ""
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    return f"# SSD performance report{': ' + model if model else ''} ({date})"


def assemble(root: Path) -> tuple[str, list[str]]:
    """The report text and the names of the parts it holds."""
    parts, names = [title(root), ""], []
    env_txt = root / "out" / "env.txt"
    if env_txt.exists():
        parts += ["## §1 Environment", "", "```", env_txt.read_text().rstrip(), "```", ""]
        names.append("env.txt")
    for snippet in sorted((root / "out").glob("section_*.md"), key=snippet_number):
        parts += [snippet.read_text().rstrip(), ""]
        names.append(snippet.name)
    return "\n".join(parts), names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis report", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    text, names = assemble(args.root)
    if not names:
        print("report: nothing to assemble: no out/env.txt and no out/section_*.md; "
              "run 'make report' (or env.bash and a section script) first", file=sys.stderr)
        return 2
    out = args.root / "out" / "report.md"
    out.write_text(text)
    print(f"wrote {out} from {', '.join(names)}")
    return 0
