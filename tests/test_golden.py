"""Golden snippets: each section's out/section_<n>_<id>.md rendered from a committed results tree
(tests/fixtures/results/, short real fio runs; tests/fixtures/make-results.bash remakes it) and
compared with tests/golden/<id>.md, so any change of wording, rounding or layout shows as a diff.

When a change is meant: `.venv/bin/python -m pytest tests/test_golden.py --update-golden`, then
read the diff of tests/golden/ before committing it.
"""

from __future__ import annotations

import difflib
import importlib
import shutil

import pytest

from analysis.sections import SECTIONS, snippet_path
from tests.toolkit import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results"
GOLDEN = REPO / "tests" / "golden"


@pytest.mark.parametrize("section", list(SECTIONS))
def test_snippet_matches_golden(section, tmp_path, capsys, request):
    results = tmp_path / "results"
    # A copy: the analysis stores its thresholds (analysis.json) in the results tree.
    shutil.copytree(FIXTURE, results)
    module = importlib.import_module(f"analysis.sections.{section}")
    code = module.main(["--root", str(tmp_path), "--results", str(results)])
    assert code == 0, capsys.readouterr().err
    rendered = (tmp_path / snippet_path(section)).read_text()
    golden = GOLDEN / f"{section}.md"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(rendered)
    assert golden.exists(), f"no {golden.relative_to(REPO)}; run with --update-golden"
    expected = golden.read_text()
    diff = "".join(difflib.unified_diff(expected.splitlines(True), rendered.splitlines(True),
                                        str(golden.relative_to(REPO)), "rendered now"))
    assert rendered == expected, (
        f"the §{SECTIONS[section].number} snippet changed; if that is meant, rerun with "
        f"--update-golden and commit tests/golden/:\n{diff}")
