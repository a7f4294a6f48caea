"""The whole report end to end: `make report` with real fio on the default file target, then the
report read back, its headline numbers checked against the sections' own tables, and the HTML
opened in a real headless browser. Then a run into another results tree where one section is
refused and others are left out, which must still write everything else and say why.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd

from analysis.render import markdown as md
from analysis.run import record
from tests.browser import check_in_browser, find_chromium
from tests.toolkit import REPO, script_env, table_rows, tree_fio_clock, unless_installable

# Every section, each as small as it can honestly be: two repetitions of 1 s, short lists; no
# host ceiling, one engine and no peak search (each tested where it is: test_host.py,
# test_order.py, test_peak_search.py), as tests/toolkit.py's TINY.
TINY_ENV = {"PROFILE": "quick", "RUNTIME": "1", "RAMP": "0", "REPEAT": "2", "SIZE": "64M",
            "BS_LIST": "4k,1m", "RW_LIST": "randread,read", "MIX_LIST": "100,0",
            "QD_LIST": "1,4", "PARTS": "burst,wss", "DURATION": "10", "WSS_LIST": "16m",
            "HOST_CEILING": "0", "ENGINE": "libaio", "PEAK": "off",
            # no write ramps (the quick profile's after-cliff): 1 s repetitions show no regime
            "WRITE_REGIME": "as-found"}
HEADINGS = ["## Conclusion", "## §1 Environment", "## Methodology", "## §2 QD=1 baselines",
            "## §3 Block-size sweep", "## §4 Read/write mix", "## §5 Queue-depth sweep",
            "## §6 Working set, burst and compressibility", "## Anomalies and limitations"]


def run_report(root: Path, *command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=root, env=script_env(env), capture_output=True, text=True,
                          timeout=900, check=False)


def conclusion_rows(text: str) -> dict[tuple[str, str], str]:
    """(headline, measured on) -> the result, from the conclusion table (a headline is written
    once, on its first row)."""
    part = text.split("## Conclusion", 1)[1].split("\n## ", 1)[0]
    return {(cells[0], cells[1]): cells[2] for cells in table_rows(part)[1:]}


def check_links(md_path: Path) -> list[Path]:
    """Every figure the report links exists and is a PNG."""
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md_path.read_text())
    paths = [(md_path.parent / link).resolve() for link in links]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    return paths


def require_browser() -> None:
    unless_installable(None if find_chromium() else "chromium is not installed")


def test_make_report_quick_on_the_default_target(toolkit, tmp_path):
    """README's first command, `make report`, on a copy where nothing of the toolkit's is
    installed yet: no .venv (the distribution's packages are here, as make test installed them).
    report.bash records the sections' outcomes through Python before §1 runs: it installs first,
    builds .venv from requirements.txt, and runs every section to the end."""
    require_browser()
    (toolkit / ".venv").unlink()
    result = run_report(toolkit, "make", "report", env=TINY_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "report.bash: installing what the toolkit needs first" in result.stderr
    assert "creating .venv from requirements.txt" in result.stderr
    stamp = toolkit / ".venv" / "requirements.stamp"
    assert stamp.read_bytes() == (REPO / "requirements.txt").read_bytes()
    report = toolkit / "out" / "report.md"
    text = report.read_text()
    positions = [text.index(h) for h in HEADINGS]
    assert positions == sorted(positions)  # every part, in the report's order
    assert text.startswith("# SSD performance report")
    # one setup for the whole report; every section ran it, so each says only that
    assert text.count("**Setup** (every section's") == 1
    assert "**Setup:** as in the methodology above." not in text  # said once, not per section
    status = record.load(toolkit / "results")["status"]
    assert [(s, st["exit"]) for s, st in status.items()] == [
        (s, 0) for s in ("env", "qd1", "bs_sweep", "mix_rw", "qd_sweep", "wss_burst")]
    # one clock for fio across the tree: the first section chose it, the others kept it
    clock = tree_fio_clock(toolkit / "results")
    assert result.stderr.count(f"fio's clock: {clock} (") == 5

    # The headline numbers are the sections' own, as their tables hold them.
    rows = conclusion_rows(text)
    qd1 = pd.read_csv(toolkit / "tables" / "qd1_baseline.csv").set_index("case")
    r = qd1.loc["randread-4k"]
    assert rows["QD=1 latency", "4 KiB random read (§2)"].startswith(
        f"{md.pm(r.lat_us_mean, r.lat_us_ci95)} µs mean, p99 {md.num(r.lat_p99_us)} µs")
    # the peak is the sweep's best (no peak search here), with the depth that gave it
    qd = pd.read_csv(toolkit / "tables" / "qd_sweep.csv")
    rand = qd[qd.pattern == "4 KiB random read"]
    peak = rand.loc[rand.iops_mean.idxmax()]
    assert rows["Peak random IOPS", "4 KiB random read (§5)"].startswith(
        f"{md.pm(peak.iops_mean, peak.iops_ci95)} IOPS at QD {int(peak.iodepth)}")
    bs = pd.read_csv(toolkit / "tables" / "bs_sweep.csv")
    seq = bs[bs.rw == "read"]
    best = seq.loc[seq.bw_MBps_mean.idxmax()]  # quoted with its interval (issue 42)
    assert rows["Peak sequential MB/s", "sequential read (§3)"].startswith(
        f"{md.pm(best.bw_MBps_mean, best.bw_MBps_ci95)} MB/s")
    headlines = {h for h, _ in rows}
    assert headlines == {"QD=1 latency", "Peak random IOPS", "Peak sequential MB/s",
                         "Queue-depth knee", "Write cache (SLC) estimate",
                         "Sustained (steady-state) write MB/s",
                         "Write-cache recovery"}
    # a file's burst has no cliff, so there is no cache to regain: the only headline not measured
    assert [k for k, v in rows.items() if v == "not measured"] in (
        [], [("Write-cache recovery", k[1]) for k in rows
             if k[0] == "Write-cache recovery"])
    assert ("Write cache (SLC) estimate", "128 KiB sequential write at QD 32 (§6)") in rows
    # One shape across sections: its points in tables/shapes.csv, the widest spread quoted
    shapes_csv = toolkit / "tables" / "shapes.csv"
    assert ("Between sections" in text) == shapes_csv.is_file()
    if shapes_csv.is_file():
        shapes = pd.read_csv(shapes_csv)
        assert (shapes.groupby("shape").section.nunique() >= 2).all()
        assert f"up to {shapes.spread_pct.max():.1f}%" in text and "`tables/shapes.csv`" in text
    # The file target is a limitation the report states; so is the short burst.
    assert "| file target |" in text and "not 5 SNIA rounds of" in text

    # The one-screen summary names the report and every section's outcome.
    assert "report: out/report.md and out/report.html" in result.stdout
    assert "sections: §2 ok · §3 ok · §4 ok · §5 ok · §6 ok" in result.stdout
    assert len(result.stdout.split("report: out/report.md", 1)[1].splitlines()) <= 24

    # The HTML: one file, every figure embedded, rendered by a real browser.
    figures = check_links(report)
    page = toolkit / "out" / "report.html"
    html_text = page.read_text()
    assert "../figs/" not in html_text and html_text.count("data:image/png;base64,") == len(figures)
    shot = tmp_path / "report.png"
    seen = check_in_browser(page, shot)
    assert seen.images == len(figures) >= 12
    assert seen.broken == []
    assert seen.title.startswith("SSD performance report")
    assert shot.stat().st_size > 20_000


def test_a_refused_section_and_another_results_tree(toolkit):
    env = dict(TINY_ENV, MIX_LIST="100,7x")
    result = run_report(toolkit, "bash", "report.bash", "--sections", "qd1,mix_rw", "--results",
                        "results/drive-b", env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    # Everything went to the named tree, and its report beside, not over, the default one.
    assert "qd1" in record.sections(toolkit / "results" / "drive-b")
    assert (toolkit / "results" / "drive-b" / "qd1").is_dir()
    assert not (toolkit / "results" / "qd1").exists()
    report = toolkit / "out" / "drive-b" / "report.md"
    text = report.read_text()
    assert not (toolkit / "out" / "report.md").exists()
    assert all(p.is_relative_to(toolkit / "figs" / "drive-b") for p in check_links(report))
    assert (toolkit / "out" / "drive-b" / "report.html").is_file()
    assert (toolkit / "tables" / "drive-b" / "qd1_facts.json").is_file()

    # Why each part is missing, in the report and on the terminal.
    assert ("| §4 | refused its input (exit 2): MIX_LIST=7x: expected a whole "
            "number >= 0 |") in text
    assert "| §3 | skipped (not among --sections qd1 mix_rw) |" in text
    assert "## §5 Queue-depth sweep\n\nNot in this report: skipped" in text
    # the refused section is a failure; those the run left out are not (README's first command)
    assert ("Incomplete: §4 Read/write mix did not run cleanly (see Anomalies and limitations)"
            in text)
    assert ("Not in this run: §3 Block-size sweep, §5 Queue-depth sweep, §6 Working set, burst "
            "and compressibility (not among --sections qd1 mix_rw).") in text
    assert "| Peak random IOPS | – | not measured |" in text
    assert "sections: §2 ok · §3 skipped (not among --sections qd1 mix_rw) · §4 refused its " \
           "input (exit 2)" in result.stdout
    log = toolkit / "results" / "drive-b" / "report-logs" / "mix_rw.log"
    assert "MIX_LIST" in log.read_text()
