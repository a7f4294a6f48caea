"""docs/sample/ is copied out of a results tree with its figures and links that still resolve."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from analysis.core.workspace import Workspace
from analysis.report.sample import LINK, SampleError, relink, render, stamp, write_sample

ENV = {"kernel": "Linux 6.1.0 #1 SMP x86_64 GNU/Linux", "fio_version": "fio-3.33",
       "collected_at": "2026-11-23T10:48:11Z",
       "memory_bytes": 24 << 30, "distribution": "Debian GNU/Linux 12 (bookworm)",
       "cpu": {"model": "AMD EPYC", "logical_cpus": 2},
       "target": {"path": "/toolkit/tmp/target.img", "type": "missing",
                  "mounted": {"fstype": "ext4", "source": "/dev/vda", "where": "/"}}}


def sample_tree(root):
    """A named results tree as `make report RESULTS=results/sample` leaves it."""
    ws = Workspace.of(root, root / "results" / "sample")
    (root / "figs" / "sample" / "hosts").mkdir(parents=True)
    (root / "figs" / "sample" / "qd1_iops.png").write_bytes(b"png-1")
    (root / "figs" / "sample" / "hosts" / "qd1_hosts.png").write_bytes(b"png-2")
    (root / "out" / "sample").mkdir(parents=True)
    (root / "tables" / "sample").mkdir(parents=True)
    (root / "tables" / "sample" / "qd1_baseline.csv").write_text("case\n")
    ws.path("out/report.md").write_text(
        "# Report\n![QD=1 IOPS](../../figs/sample/qd1_iops.png)\n"
        "[per host](../../figs/sample/hosts/qd1_hosts.png \"title\") and "
        "[fio](https://github.com/axboe/fio) and [up](#report)\n")
    stamp(ws.results, "abc123")
    (ws.results / "env.json").write_text(json.dumps(ENV))
    return ws


def test_sample_carries_every_figure_the_report_links_and_links_them_from_its_folder(tmp_path):
    ws = sample_tree(tmp_path)
    dest = tmp_path / "docs" / "sample"
    (dest / "figs").mkdir(parents=True)
    (dest / "figs" / "stale.png").write_bytes(b"old")
    written = write_sample(ws, dest)

    text = (dest / "report.md").read_text()
    assert "![QD=1 IOPS](figs/qd1_iops.png)" in text
    assert '[per host](figs/hosts/qd1_hosts.png "title")' in text
    assert "(https://github.com/axboe/fio)" in text and "(#report)" in text
    assert (dest / "figs" / "qd1_iops.png").read_bytes() == b"png-1"
    assert (dest / "figs" / "hosts" / "qd1_hosts.png").read_bytes() == b"png-2"
    assert not (dest / "figs" / "stale.png").exists()  # an earlier sample's figure is gone
    assert len(written) == 4
    assert (dest / "tables" / "qd1_baseline.csv").read_text() == "case\n"
    first = text.splitlines()[0]
    # §1 ran before the default file existed ("missing"): it is still a file. The default target
    # is shown from tmp/, as it reads wherever the sample is rendered again (not /toolkit/...).
    for fact in ("2026-11-23T10:48:11Z", "`abc123`", "PROFILE=quick", "target `tmp/target.img`",
                 "(a file on ext4, /dev/vda)", "AMD EPYC", "2 CPUs", "24 GiB RAM", "Linux 6.1.0",
                 "fio-3.33"):
        assert fact in first


def test_a_link_to_anything_but_a_figure_of_the_run_is_refused(tmp_path):
    ws = sample_tree(tmp_path)
    with pytest.raises(SampleError, match="env.txt"):
        relink("[env](env.txt)", ws.out, tmp_path / "figs" / "sample")
    with pytest.raises(SampleError, match="gone.png"):
        relink("![x](../../figs/sample/gone.png)", ws.out, tmp_path / "figs" / "sample")


def test_without_a_run_or_its_revision_it_says_how_to_make_one(tmp_path):
    ws = sample_tree(tmp_path)
    (ws.results / "revision.txt").unlink()  # a tree not made by make sample-report
    with pytest.raises(SampleError, match="revision.txt is missing; run 'make sample-report'"):
        write_sample(ws, tmp_path / "docs" / "sample")
    ws = Workspace.of(tmp_path, tmp_path / "results" / "none")
    with pytest.raises(SampleError, match="report.md is missing"):
        write_sample(ws, tmp_path / "docs" / "sample")


REPO = Path(__file__).resolve().parents[1]
FIXTURE_TREE = REPO / "tests" / "fixtures" / "results"
SAMPLE = REPO / "docs" / "sample"


def test_render_from_a_committed_tree_is_dated_by_its_run(tmp_path):
    """The sample is drawn from its committed results tree, never copied from a run's out/:
    drawn from a tree (a real one: tests/fixtures/results) it is dated by the run (§1's
    collection, not the day it is drawn), with every figure it links. That a drawing is
    reproducible is tests/test_figures.py's: today's drawing of docs/sample/results equals the
    committed one."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, tree)
    stamp(tree, "fixture")
    (tree / "env.json").write_text(json.dumps(ENV))  # the fixture tree has no §1 of its own
    written = render(tree, tmp_path / "a")
    text = (tmp_path / "a" / "report.md").read_text()
    assert "# SSD performance report (2026-11-23)\n" in text
    linked = {path for path, _ in LINK.findall(text)}  # the report links figures only
    assert linked and all((tmp_path / "a" / f).is_file() for f in linked)
    assert len(written) > 1 and all(p.is_file() for p in written)


def test_the_sample_ships_every_table_its_legends_name_and_its_record():
    """A path the report names in backticks (`tables/qd_sweep_nines.csv`, `results/run.json`)
    resolves inside docs/sample, where a reader of the sample looks for it."""
    named = set(re.findall(r"`((?:tables|results)/[^`\s]+)`", (SAMPLE / "report.md").read_text()))
    assert any(n.startswith("tables/") for n in named), named
    missing = [n for n in named if "<" not in n and "*" not in n and not (SAMPLE / n).exists()]
    assert not missing, missing
    assert (SAMPLE / "results" / "run.json").is_file()


def test_a_tree_an_older_toolkit_wrote_is_committed_with_its_record(tmp_path):
    from analysis.report.sample import commit_tree
    from analysis.run import record
    older = tmp_path / "run"
    shutil.copytree(FIXTURE_TREE, older, ignore=shutil.ignore_patterns(record.NAME))
    assert not record.path_of(older).exists()
    tree = commit_tree(older, tmp_path / "dest")
    doc = json.loads(record.path_of(tree).read_text())
    assert doc["version"] == record.VERSION
    assert set(doc["sections"]) == {p.parent.name for p in older.glob("*/manifest.json")} != set()


def test_a_sample_on_the_emulated_nvme_drive_says_the_speeds_are_an_emulators():
    from analysis.report.sample import emulated_provenance
    from tools.nvme_vm.demo import describe
    env = {"collected_at": "2026-11-26T01:00:00Z", "cpu": {"model": "QEMU TCG CPU"},
           "distribution": "Debian GNU/Linux 12 (bookworm)"}
    text = emulated_provenance(env, "abc123", describe())
    assert "**emulated NVMe drive**, /dev/nvme0n1 of QEMU's NVMe controller" in text
    assert "**The speeds are an emulator's, not an SSD's**" in text
    assert "makes a write cache: 200 MB/s for about 1.78 GB, then 20 MB/s" in text
    assert "at revision `abc123`" in text


def test_the_report_says_a_sections_stability_and_host_bound_lines_once():
    """Each section's Stability and Host-bound lines that its anomalies repeat (facts.repeated)
    are in its own page's snippet, not in the report, whose Anomalies table says them (issue 42:
    each rule stated once)."""
    sample = Path(__file__).resolve().parents[1] / "docs" / "sample"
    report = (sample / "report.md").read_text()
    anomalies = report[report.index("## Anomalies and limitations"):]
    said = 0
    for path in sorted((sample / "tables").glob("*_facts.json")):
        facts = json.loads(path.read_text())
        kinds = {a["kind"]: a["text"] for a in facts["anomalies"]}
        for line in facts.get("repeated", []):
            assert line not in report, line
            kind = "unstable" if line.startswith("- **Stability:**") else "host_bound"
            assert kinds[kind] in anomalies, (kind, kinds[kind])
            said += 1
    assert said >= 8  # §3-§6 each had both lines in the report before


def test_the_sample_reads_in_one_sitting():
    """Issue 42's measure, `wc -w` (every whitespace-separated token, the tables' pipes
    included), gave 7,679 for f0b7159's sample; the bar is 4,000. Each legend and mark is
    explained once, in the methodology: no section's note says it again."""
    text = (SAMPLE / "report.md").read_text()
    assert len(text.split()) <= 4000
    methodology = text[text.index("## Methodology"):text.index("\n## §2")]
    for said_once in ("the half-width of its 95% confidence interval", "the smallest block size",
                      "◆ the knee: the first step", "(search) a point of the peak search",
                      "Write regimes name the state", "`*_nines.csv`"):
        assert text.count(said_once) == 1 and said_once in methodology, said_once
    for section_note in ("Mean ± half-width", "● the smallest depth", "Every nine with its",
                         "Repetitions that wrote at separate levels", "ramp declared:"):
        assert section_note not in text, section_note
