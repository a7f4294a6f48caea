"""A real browser's view of an HTML file: Debian's chromium, headless.

check_in_browser loads a copy of the page with a small script added at the end that, once the
page has loaded, asks the browser itself whether each <img> rendered (complete, with a natural
width) and writes the answer into the page; --dump-dom prints the page as the browser then holds
it. A second run takes a screenshot of the untouched page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHECK = """<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const broken = images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt);
  const out = document.createElement("pre");
  out.id = "browser-check";
  out.textContent = JSON.stringify({images: images.length, broken: broken,
                                    title: document.title});
  document.body.appendChild(out);
});
</script>"""
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-dev-shm-usage"]  # root needs --no-sandbox


@dataclass(frozen=True)
class BrowserCheck:
    images: int
    broken: list[str]  # the alt text of each image that did not render
    title: str


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    browser = find_chromium()
    assert browser, "chromium is not installed (apt-get install chromium)"
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args],
                                capture_output=True, text=True, timeout=120, check=False)
    # chromium complains about dbus and the GPU on a headless box; only its exit code counts.
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    return result


def check_in_browser(html_path: Path, screenshot: Path) -> BrowserCheck:
    """Load html_path in headless chromium: how many images, which did not render, the title;
    and a screenshot of the page (1280 px wide) saved to `screenshot`."""
    html_path, screenshot = html_path.resolve(), screenshot.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / html_path.name
        page = html_path.read_text()
        probe.write_text(page.replace("</body>", CHECK + "\n</body>", 1))
        dom = _chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'<pre id="browser-check">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the page's check did not run: the page did not finish loading"
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&amp;", "&"))
    _chromium("--window-size=1280,2400", f"--screenshot={screenshot}", html_path.as_uri())
    assert screenshot.is_file(), "chromium wrote no screenshot"
    return BrowserCheck(seen["images"], seen["broken"], seen["title"])
