"""Every relative link in the documentation resolves to a file in the repository, and every
#anchor to a heading of the page it names. A renamed file or heading shows here, not as a dead
link on the front page. Links inside code (fenced blocks, `inline code`) are examples, not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted({REPO / "README.md", REPO / "tests" / "README.md", REPO / "examples" / "README.md",
                REPO / "bench" / "README.md", *(REPO / "docs").rglob("*.md")})
# Generated and git-ignored: a link there works on the author's machine only, never in a clone.
GENERATED = ("results", "tables", "figs", "out", "tmp")

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
# [text](target "title") and ![alt](target); the target ends at whitespace or the closing ).
INLINE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto: ...


def prose(text: str) -> str:
    """The page without its code: links shown as examples are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    body = prose(text)
    return INLINE.findall(body) + REFERENCE.findall(body)


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated heading numbered -1, -2 ..."""
    seen: dict[str, int] = {}
    ids = set()
    for line in prose(page.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


def problem(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, does not resolve; None when it does."""
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.is_relative_to(REPO):
        return "points outside the repository"
    if dest.relative_to(REPO).parts[:1] in [(g,) for g in GENERATED]:
        return "points into a generated, git-ignored folder"
    if not dest.is_file():
        return "no such file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"no heading #{anchor} in {dest.relative_to(REPO)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    bad = [f"{target}: {why}" for target in links(page.read_text())
           if not EXTERNAL.match(target) and (why := problem(page, target))]
    assert not bad, f"{page.relative_to(REPO)} has dead links:\n" + "\n".join(bad)


def test_the_checker_finds_links_and_dead_ones(tmp_path):
    """The parser sees every kind of link the pages use, skips code, and catches each fault."""
    text = ("See [a](docs/a.md), ![fig](figs/x.png \"t\"), [b](#here), [c](https://x.org/y)\n"
            "`[not](a link)` and\n```\n[nor](this.md)\n```\n[ref]: docs/ref.md\n")
    assert links(text) == ["docs/a.md", "figs/x.png", "#here", "https://x.org/y", "docs/ref.md"]
    readme = REPO / "README.md"
    assert problem(readme, "docs/no-such-page.md") == "no such file"
    assert problem(readme, "../outside.md") == "points outside the repository"
    assert problem(readme, "out/report.md") == "points into a generated, git-ignored folder"
    assert problem(readme, "#no-such-heading").startswith("no heading")
    assert problem(readme, "README.md") is None
    page = tmp_path / "p.md"
    page.write_text("# Comparing two runs\n## Fleet runs: many lab machines\n# Notes\n# Notes\n")
    assert anchors(page) == {"comparing-two-runs", "fleet-runs-many-lab-machines", "notes",
                             "notes-1"}
