"""The report's HTML: each markdown construct the toolkit writes, the figures embedded byte for
byte, and a page with a missing figure opened in a real headless browser."""

from __future__ import annotations

import base64
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from PIL import Image

from analysis.render.html import inline, render, write_html
from tests.browser import check_in_browser, find_chromium
from tests.toolkit import unless_installable


def png(path, label: str) -> bytes:
    fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
    ax.bar([label], [1.0])
    fig.savefig(path)
    plt.close(fig)
    return path.read_bytes()


def test_inline_markup_and_escaping():
    assert inline("**Knee (4 KiB): QD 16.** more") == \
        "<strong>Knee (4 KiB): QD 16.</strong> more"
    assert inline("p99 ≤ 1,000 µs ⚠ ◆ → × ± <b> & co") == \
        "p99 ≤ 1,000 µs ⚠ ◆ → × ± &lt;b&gt; &amp; co"
    # Identifiers and arithmetic are not emphasis; emphasis is.
    assert inline("lat_p99_us and rep_1 and a * b * c") == "lat_p99_us and rep_1 and a * b * c"
    assert inline("*one* and _two_") == "<em>one</em> and <em>two</em>"
    # Nothing inside code is touched; links keep their text's markup.
    assert inline("`tmp/**x**_<y>`") == "<code>tmp/**x**_&lt;y&gt;</code>"
    assert inline("see [the **HOWTO**](https://fio.readthedocs.io/a?b=1&c=2)") == \
        'see <a href="https://fio.readthedocs.io/a?b=1&amp;c=2">the <strong>HOWTO</strong></a>'


def test_blocks(tmp_path):
    text = """\
# SSD performance report: <Model> (2026-11-22)

## §5 Queue-depth sweep

Device: x · target `/dev/loop0` (block)
continued on a second line.

| pattern | QD | IOPS | note |
| --- | ---: | :---: | --- |
| 4 KiB random read | 2⚠ | 17,358 ± 995 | a \\| b |

### Findings

- **Knee:** QD 64.
- second item
  wrapped here

## §5 Queue-depth sweep

```
kernel   6.1   <x>
   indented & kept
```"""
    page, missing = render(text, tmp_path)
    assert missing == []
    assert "<title>SSD performance report: &lt;Model&gt; (2026-11-22)</title>" in page
    assert '<meta charset="utf-8">' in page
    # Heading ids are unique even for the same text.
    assert '<h2 id="5-queue-depth-sweep">' in page and '<h2 id="5-queue-depth-sweep-2">' in page
    assert "<p>Device: x · target <code>/dev/loop0</code> (block) continued on a second line.</p>" \
        in page
    assert ('<th style="text-align:left">pattern</th><th style="text-align:right">QD</th>'
            '<th style="text-align:center">IOPS</th>') in page
    assert ('<td style="text-align:right">2⚠</td><td style="text-align:center">17,358 ± 995</td>'
            '<td style="text-align:left">a | b</td>') in page
    assert "<li><strong>Knee:</strong> QD 64.</li>\n<li>second item wrapped here</li>" in page
    assert "<pre><code>kernel   6.1   &lt;x&gt;\n   indented &amp; kept</code></pre>" in page
    assert "<script" not in page and "http" not in page.split("<body>")[0]


def test_figures_are_embedded_byte_for_byte(tmp_path):
    (tmp_path / "figs").mkdir()
    (tmp_path / "out").mkdir()
    data = png(tmp_path / "figs" / "qd.png", "qd")
    md = tmp_path / "out" / "report.md"
    md.write_text("# R\n\n![IOPS by **queue** depth](../figs/qd.png)\n\n![gone](../figs/no.png)\n")
    missing = write_html(md, tmp_path / "out" / "report.html")
    page = (tmp_path / "out" / "report.html").read_text()
    assert missing == ["../figs/no.png"]
    encoded = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(encoded) == data
    assert "<figcaption>IOPS by <strong>queue</strong> depth</figcaption>" in page
    assert '<p class="missing">figure missing: ../figs/no.png</p>' in page
    assert "../figs/" not in page.replace("figure missing: ../figs/no.png", "")


def test_a_real_browser_renders_the_figures_and_names_none_missing(tmp_path):
    unless_installable(None if find_chromium() else "chromium is not installed")
    (tmp_path / "figs").mkdir()
    (tmp_path / "out").mkdir()
    for name in ("a", "b"):
        png(tmp_path / "figs" / f"{name}.png", name)
    md = tmp_path / "out" / "report.md"
    md.write_text("# Browser check\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |\n\n"
                  "![first](../figs/a.png)\n\n![second](../figs/b.png)\n\n![third](../figs/c.png)\n")
    assert write_html(md, tmp_path / "out" / "report.html") == ["../figs/c.png"]
    shot = tmp_path / "shot.png"
    seen = check_in_browser(tmp_path / "out" / "report.html", shot)
    assert (seen.images, seen.broken, seen.title) == (2, [], "Browser check")
    with Image.open(shot) as image:
        assert image.size[0] == 1280
        assert len(image.convert("RGB").getcolors(1 << 20) or []) > 10  # not a blank page
