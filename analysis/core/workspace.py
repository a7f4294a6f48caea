"""Where a run's files live.

A results tree holds the raw fio output: `results/` by default, or another folder given with
`RESULTS=results/drive-a` (or `--results`), so that two drives or two firmware versions can be
kept side by side and compared. What is drawn from a tree goes to tables/, figs/ and out/ of the
toolkit folder: straight in for the default tree, and in a subfolder named after the tree for any
other (out/drive-a/report.md beside out/drive-b/report.md), so one tree's report never
overwrites another's.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path

DERIVED = ("tables", "figs", "out")


@dataclass(frozen=True)
class Workspace:
    root: Path  # the toolkit folder: tables/, figs/, out/
    results: Path  # the results tree: <section>/..., env.json, run.json
    name: str  # "" for root/results, else the subfolder of tables/, figs/ and out/

    @classmethod
    def of(cls, root: Path, results: Path | None = None) -> Workspace:
        root = Path(root)
        default = root / "results"
        results = Path(results) if results else default
        return cls(root, results, tree_name(results, default))

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Workspace:
        return cls.of(args.root, args.results)

    def path(self, relpath: str) -> Path:
        """'figs/qd1_iops.png' -> root/figs[/<name>]/qd1_iops.png."""
        top, _, rest = relpath.partition("/")
        if top not in DERIVED or not rest:
            raise ValueError(f"{relpath}: not under {', '.join(DERIVED)}")
        return self.root / top / self.name / rest if self.name else self.root / relpath

    @property
    def out(self) -> Path:
        return self.path("out/x").parent

    def link(self, relpath: str) -> str:
        """The path of a derived file as a markdown link from out/ (e.g. '../figs/x.png')."""
        return Path(os.path.relpath(self.path(relpath), self.out)).as_posix()

    def show(self, relpath: str) -> str:
        """A derived file's path for messages: relative to the toolkit folder."""
        return self.path(relpath).relative_to(self.root).as_posix()


def tree_name(results: Path, default: Path) -> str:
    """'' for the default tree; its path under results/ for a tree inside it (drive-a,
    lab/drive-a, hosts/lab3); its folder name for a tree elsewhere, with its fleet's name for a
    fleet host's tree (/data/lab/hosts/lab3 -> lab/hosts/lab3)."""
    tree, default = results.resolve(), default.resolve()
    if tree == default:
        return ""
    if tree.is_relative_to(default):
        return tree.relative_to(default).as_posix()
    if tree.parent.name == "hosts" and tree.parent.parent != tree.parent:
        return tree_name(tree.parent.parent, default) + "/hosts/" + tree.name
    return tree.name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="toolkit folder for tables/, figs/ and out/ (default: current "
                             "folder)")
    parser.add_argument("--results", type=Path, default=os.environ.get("RESULTS") or None,
                        help="results tree (default: $RESULTS, else ROOT/results); another tree "
                             "writes to tables/, figs/ and out/ under its own name")


def write_json(path: Path, doc: dict, sort_keys: bool = False) -> None:
    """Write a JSON file whole, atomically: a crash or a full disk leaves the old file or the new
    one, never half of one (the temporary name is this process's own)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
