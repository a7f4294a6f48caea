"""docs/sample/: the committed sample report, copied out of a real run's results tree.

`make sample-report` first records the git revision in the dedicated tree results/sample
(`--stamp`), runs the quick report into that tree on make demo's emulated NVMe drive
(tools/nvme_vm/demo.py, which records the drive in nvme-vm.json), then calls
this module again, which copies out/sample/report.md to docs/sample/report.md with a line saying
what it was run on (the run's own env.json and the recorded revision), and copies every figure
the report links into docs/sample/figs/, rewriting the links so they resolve from docs/sample/,
and every table drawn into docs/sample/tables/ (the CSVs the report's legends name).
The run's results tree is committed too, as docs/sample/results/ (fio's JSON and logs, the
tree's record run.json; not the history database: a tree an older toolkit wrote gets its
record written from the files it kept, as the toolkit's first change would write it), and the
report is always rendered from that committed
tree, never copied from the run's own out/: tests/test_figures.py renders it again and
compares, so a change to the analysis shows in the sample's diff (`--render` redraws it, as
`--update-golden` does for the snippets), and only a change of method needs a new measurement.

Command: python -m analysis.report.sample [--stamp | --render] [--results results/sample]
         [--dest docs/sample]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from analysis.core.workspace import Workspace
from analysis.render.markdown import human_size
from analysis.report import redraw
from analysis.report.build import REPORT_MD
from analysis.run import record

ROOT = Path(__file__).resolve().parents[2]
FIGS = "figs"  # the figures' folder under the destination
TABLES = "tables"  # the tables' folder under the destination (the report's legends name it)
REVISION = "revision.txt"  # in the results tree: the git revision the sample was measured at
TREE = "results"  # the committed results tree, under the destination
VM_RECORD = "nvme-vm.json"  # in the results tree of a run on the emulated NVMe drive (make demo)
# Not committed: the run history's database (binary, and a first run has no history to show).
NOT_COMMITTED = ("history.sqlite*", "*.partial", "__pycache__")
# A markdown link or image whose target is a relative path: ](path) or ](path "title").
LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)((?:\s+\"[^\"]*\")?)\)")


class SampleError(Exception):
    """The run's report cannot be turned into the sample; str() says why and what to do."""


@dataclass(frozen=True)
class Sample:
    text: str  # the report with its links rewritten and the provenance line on top
    figures: dict[Path, str]  # source file -> its path under the destination


def relink(report: str, report_dir: Path, figs_dir: Path) -> Sample:
    """Every relative link of the report must be a file under figs_dir (the tree's figures):
    it becomes figs/<its path under figs_dir>. Any other relative link would break once the
    report is copied, so it is an error rather than a silently dead link."""
    figures: dict[Path, str] = {}

    def rewrite(m: re.Match) -> str:
        source = (report_dir / m.group(1)).resolve()
        if not source.is_relative_to(figs_dir.resolve()) or not source.is_file():
            raise SampleError(f"the report links {m.group(1)}, which is not a figure of this "
                              f"run under {figs_dir}; the sample can carry only its figures")
        figures[source] = f"{FIGS}/{source.relative_to(figs_dir.resolve()).as_posix()}"
        return f"]({figures[source]}{m.group(2)})"

    return Sample(LINK.sub(rewrite, report), figures)


def emulated_provenance(env: dict, revision: str, vm: dict) -> str:
    """The paragraph for a sample made on the emulated NVMe drive (make demo's VM, whose settings
    the results tree records in nvme-vm.json)."""
    cache = vm.get("write_cache") or {}
    started = env.get("collected_at") or "at an unrecorded time"
    return (f"> **Sample report** (`make sample-report`): the quick profile on an **emulated NVMe "
            f"drive**, {vm.get('device')} of QEMU's NVMe controller in a VM whose CPU QEMU "
            f"emulates (TCG; docs/nvme-vm.md), started {started} at revision `{revision}`. QEMU's "
            f"write throttle makes a write cache: {cache.get('fast_Bps', 0) / 1e6:g} MB/s for "
            f"about {cache.get('cache_bytes', 0) / 1e9:.2f} GB, then "
            f"{cache.get('slow_Bps', 0) / 1e6:g} MB/s. **The speeds are an emulator's, not an "
            "SSD's**; the NVMe identity, health and §6's cliff are real.\n\n")


def provenance(env: dict, revision: str, has_env_section: bool = True) -> str:
    """One paragraph: what the sample was run on, from the run's own §1 (env.json)."""
    cpu = env.get("cpu") or {}
    target = env.get("target") or {}
    mount = target.get("mounted") or {}
    memory = env.get("memory_bytes")
    # The default target is <the checkout that ran it>/tmp/target.img: shown from tmp/, so the
    # line reads the same wherever the sample is rendered again (a clone, CI's folder).
    path = Path(target.get("path") or "tmp/target.img")
    shown = Path(*path.parts[-2:]) if path.parts[-2:] == ("tmp", "target.img") else path
    # §1 runs before the first section creates the default file, so it may call it "missing".
    kind = target.get("type") if target.get("type") not in (None, "missing") else "file"
    where = f" on {mount['fstype']}, {mount.get('source')}" if mount.get("fstype") else ""
    machine = ", ".join(str(p) for p in (
        cpu.get("model"), cpu.get("logical_cpus") and f"{cpu['logical_cpus']} CPUs",
        memory and f"{human_size(memory)} RAM", env.get("distribution")) if p)
    return (f"> **Sample report**, made by `make sample-report`: `make report PROFILE=quick` on "
            f"the default target `{shown}` (a {kind}{where}), started "
            f"{env.get('collected_at') or 'at an unrecorded time'} at git revision `{revision}`. "
            f"Machine: {machine or 'unknown'}, a virtual machine shared with other work while it "
            f"ran; kernel {env.get('kernel') or 'unknown'}; {env.get('fio_version') or 'fio'}. "
            f"A file on a virtual disk measures the filesystem, the host and its neighbours as "
            f"much as any drive (hence the unstable points): the sample shows what a report looks "
            f"like, not how fast an SSD is."
            + (" §1 below has the full environment." if has_env_section else "") + "\n\n")


def git_revision(root: Path) -> str:
    """The commit checked out, with '-dirty' when the work tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        rev = git("rev-parse", "--short=12", "HEAD")
        return rev + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError) as e:
        raise SampleError(f"cannot read the git revision of {root}: {e}") from None


def stamp(results: Path, revision: str) -> Path:
    """Record the revision about to be measured, in the (new) results tree."""
    results.mkdir(parents=True, exist_ok=True)
    (results / REVISION).write_text(revision + "\n")
    return results / REVISION


def write_sample(ws: Workspace, dest: Path) -> list[Path]:
    """Replace dest/report.md, dest/figs/ and dest/tables/ with the tree's report, its figures and
    its tables; returns the files written."""
    report, env_json, rev = ws.path(REPORT_MD), ws.results / "env.json", ws.results / REVISION
    for needed in (report, env_json, rev):
        if not needed.is_file():
            raise SampleError(f"{needed} is missing; run 'make sample-report', which makes it")
    sample = relink(report.read_text(), report.parent, ws.path("figs/x").parent)
    env = json.loads(env_json.read_text())
    vm = ws.results / VM_RECORD
    has_env = "\n## §1 Environment\n" in sample.text
    intro = (emulated_provenance(env, rev.read_text().strip(), json.loads(vm.read_text()))
             if vm.is_file() else provenance(env, rev.read_text().strip(), has_env))
    shutil.rmtree(dest / FIGS, ignore_errors=True)  # figures of an earlier sample must not linger
    written = []
    for source, rel in sample.figures.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest / rel)
        written.append(dest / rel)
    written += copy_tables(ws.path(f"{TABLES}/x").parent, dest / TABLES)
    (dest / "report.md").write_text(intro + sample.text)
    return [dest / "report.md", *written]


def copy_tables(tables: Path, dest: Path) -> list[Path]:
    """Every table the analysis drew (tables/<tree>/*), in place of an earlier sample's."""
    shutil.rmtree(dest, ignore_errors=True)  # a table no longer drawn must not linger
    written = []
    for source in sorted(p for p in tables.rglob("*") if p.is_file()):
        target = dest / source.relative_to(tables)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(target)
    return written


def commit_tree(results: Path, dest: Path) -> Path:
    """The run's results tree, as committed beside the sample (dest/results), with its record."""
    tree = dest / TREE
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(results, tree, ignore=shutil.ignore_patterns(*NOT_COMMITTED))
    ship_record(tree)
    return tree


def ship_record(tree: Path) -> Path:
    """The tree's record, run.json: a tree an older toolkit wrote (a manifest.json per section,
    .done steps) has none, and gets the one its first change would write (record.migrate)."""
    if not record.path_of(tree).exists():
        record.save(tree, record.load(tree))
    return record.path_of(tree)


def render(tree: Path, dest: Path) -> list[Path]:
    """Every table, figure and snippet and the report drawn again from a copy of the committed
    tree (`python -m analysis all`, in a scratch folder), then written to dest as the sample."""
    for needed in ("env.json", REVISION):
        if not (tree / needed).is_file():
            raise SampleError(f"{tree / needed} is missing; run 'make sample-report', which "
                              "makes the sample's results tree")
    with tempfile.TemporaryDirectory(prefix="sample-") as scratch:
        root = Path(scratch)
        work = root / "results" / "sample"
        shutil.copytree(tree, work)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = redraw.main(["--root", str(root), "--results", str(work)])
        if code != 0:
            raise SampleError(f"redrawing the sample from {tree} failed (exit {code}); run "
                              f"'python -m analysis all --results {tree}' to see why")
        return write_sample(Workspace.of(root, work), dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.report.sample", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "sample",
                        help="the sample run's results tree (default results/sample)")
    parser.add_argument("--dest", type=Path, default=ROOT / "docs" / "sample",
                        help="where the sample goes (default docs/sample)")
    parser.add_argument("--stamp", action="store_true",
                        help="before the run: record the git revision in the results tree")
    parser.add_argument("--render", action="store_true",
                        help="redraw the sample from its committed tree (dest/results) only: after "
                             "a change to the analysis, no new measurement")
    args = parser.parse_args(argv)
    try:
        if args.stamp:
            print(f"wrote {stamp(args.results, git_revision(ROOT))}")
            return 0
        tree = args.dest / TREE if args.render else commit_tree(args.results, args.dest)
        written = render(tree, args.dest)
    except SampleError as e:
        print(f"sample_report: {e}", file=sys.stderr)
        return 1
    print(f"wrote {written[0]} and {len(written) - 1} figures and tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
