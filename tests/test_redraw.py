"""`python -m analysis all` (what `make analysis` runs): every section, each fleet host's tree and
the report in one interpreter. It must write what one process per step writes, byte for byte
(tables, facts, snippets, the report), keep the steps' order and exit-code rules, and keep going
past a step that fails. No fio runs here: the committed fixture tree (tests/fixtures/results, real
fio output) is redrawn.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from analysis.core.workspace import Workspace
from analysis.report import redraw
from analysis.sections import SECTIONS
from tests.toolkit import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results"


def analysis(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *args], cwd=REPO, text=True,
                          capture_output=True, timeout=300, check=False)


def tree_copy(root: Path, sections: tuple[str, ...] = ()) -> list[str]:
    """A toolkit folder with a copy of the fixture tree (only the named sections' folders, if
    any are named); the --root/--results that name it."""
    keep = shutil.ignore_patterns(*(set(SECTIONS) - set(sections))) if sections else None
    shutil.copytree(FIXTURE, root / "results", ignore=keep)
    return ["--root", str(root), "--results", str(root / "results")]


def derived(root: Path, pattern: str) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for top in ("tables", "out") for p in sorted((root / top).rglob(pattern))}


def test_one_process_writes_what_one_process_per_step_writes(tmp_path):
    alone, together = tmp_path / "alone", tmp_path / "together"
    tree = tree_copy(alone)
    for section in SECTIONS:  # as the Makefile's loop ran them before
        assert analysis(section, *tree).returncode == 0
    assert analysis("report", *tree).returncode == 0
    done = analysis("all", *tree_copy(together))
    assert done.returncode == 0, done.stderr
    want, got = derived(alone, "*"), derived(together, "*")
    assert len(want) >= 20 and set(got) == set(want)
    assert [name for name in want if got[name] != want[name]] == []
    # Figures: the same files with the same pixels (PNG bytes may carry other metadata).
    figures = sorted(p.name for p in (together / "figs").glob("*.png"))
    assert figures == sorted(p.name for p in (alone / "figs").glob("*.png")) and figures
    for name in figures:
        a, b = (Image.open(root / "figs" / name).convert("RGBA") for root in (alone, together))
        assert a.size == b.size and ImageChops.difference(a, b).getbbox() is None, name
    # Each step's summary is printed, in order, then the report's.
    wrote = [line for line in done.stdout.splitlines() if line.startswith(("wrote ", "report:"))]
    assert len(wrote) == len(SECTIONS) + 1 and wrote[-1].startswith("report: ")


# The two tests of a failing step redraw two sections, the failing one and one after it: `all`
# draws the sections present, and each section's process costs 3-5 CPU-s (make test is CPU-bound).
def test_a_section_left_incomplete_exits_1_after_everything_is_drawn(tmp_path):
    present = ("qd1", "mix_rw")
    tree = tree_copy(tmp_path, present)
    # qd1's randread-4k loses every repetition: §2 exits 1 naming it, the rest is still drawn.
    for rep in (tmp_path / "results" / "qd1" / "randread-4k").glob("rep*.json"):
        rep.unlink()
    done = analysis("all", *tree)
    assert done.returncode == 1
    assert "qd1: 1 point(s) have no good repetition: randread-4k" in done.stderr
    assert done.stderr.rstrip().endswith(redraw.FAILED)
    for section in present:
        assert (tmp_path / "tables" / f"{section}_facts.json").is_file(), section
    assert (tmp_path / "out" / "report.md").is_file()


def test_a_step_that_raises_is_printed_and_the_next_ones_run(tmp_path):
    tree = tree_copy(tmp_path, ("bs_sweep", "mix_rw"))
    # one section's file broken (its host ceilings): its step raises, the next one runs
    (tmp_path / "results" / "bs_sweep" / "host_ceiling.json").write_text("{not json")
    done = analysis("all", *tree)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "JSONDecodeError" in done.stderr
    assert not (tmp_path / "tables" / "bs_sweep_facts.json").exists()
    assert (tmp_path / "tables" / "mix_rw_facts.json").is_file()  # the section after bs_sweep
    assert done.stderr.rstrip().endswith(redraw.FAILED)


def test_steps_follow_the_registry_with_each_fleet_host_then_the_hosts(tmp_path):
    first, second = list(SECTIONS)[:2]
    for path in (first, f"hosts/lab2/{first}", f"hosts/lab1/{first}", f"hosts/lab1/{second}",
                 second):
        (tmp_path / "results" / path).mkdir(parents=True)
    ws = Workspace.of(tmp_path)
    tree = ["--root", str(tmp_path)]
    host = [*tree, "--results"]
    assert redraw.steps(ws, tree) == [
        (first, tree),
        (first, [*host, str(tmp_path / "results" / "hosts" / "lab1")]),
        (first, [*host, str(tmp_path / "results" / "hosts" / "lab2")]),
        ("hosts", [first, *tree]),
        (second, tree),
        (second, [*host, str(tmp_path / "results" / "hosts" / "lab1")]),
        ("hosts", [second, *tree]),
        ("report", tree),
    ]


@pytest.mark.parametrize(("outcome", "code"), [(0, 0), (1, 1), (SystemExit(2), 2),
                                                 (SystemExit(None), 0), (KeyError("x"), 1)])
def test_a_step_counts_as_its_own_process_would_have_exited(outcome, code, capsys):
    def step(argv):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    assert redraw.run_step(step, []) == code
    if isinstance(outcome, KeyError):
        assert "KeyError" in capsys.readouterr().err  # the traceback, as the process printed it
