"""Markdown pieces every section snippet shares: number formatting, tables, the setup line."""

from __future__ import annotations

import json
import math
from pathlib import Path

from analysis.core.units import human_size
from analysis.device.health import health_summary


def num(value: float, digits: int | None = None) -> str:
    """A number as a reader wants it: thousands separators, precision by magnitude."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if digits is None:
        digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f}"


def signed_pct(value: float, digits: int | None = None) -> str:
    """A change in percent, the way every snippet writes one: '+12%', '−41%' (a real minus
    sign), one decimal under 10% unless DIGITS says otherwise, '±0%' when it rounds to nothing."""
    if value is None or math.isnan(value):
        return "–"
    if digits is None:
        digits = 1 if abs(value) < 10 else 0
    text = f"{abs(value):.{digits}f}%"
    if float(text[:-1]) == 0:
        return "±0%"
    return ("+" if value > 0 else "−") + text


def pm(mean: float, half_width: float) -> str:
    """'mean ± h', h the half-width of the mean's 95% interval as every table gives it (the
    `<metric>_ci95` columns), written to the mean's precision."""
    if half_width is None or math.isnan(half_width):
        return num(mean)
    digits = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 10 else 2
    return f"{num(mean, digits)} ± {num(half_width, digits)}"


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None,
          grouped: int = 0) -> str:
    """A markdown table; its first `grouped` columns name a group (a pattern, a mix), each
    written on the group's first row only, as a reader reads them down:

        >>> print(table(["pattern", "QD"], [["4 KiB", "1"], ["4 KiB", "4"]], grouped=1))
        | pattern | QD |
        | --- | ---: |
        | 4 KiB | 1 |
        |  | 4 |
    """
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in _grouped(rows, grouped)]
    return "\n".join(lines)


def _grouped(rows: list[list[str]], n: int) -> list[list[str]]:
    out, last = [], None
    for r in rows:
        key = list(r[:n])
        same = [last is not None and key[:i + 1] == last[:i + 1] for i in range(n)]
        out.append(["" if s else v for s, v in zip(same, key)] + list(r[n:]))
        last = key
    return out


def bs_label(bs) -> str:
    if isinstance(bs, int):
        if bs % (1 << 20) == 0:
            return f"{bs >> 20} MiB"
        if bs % 1024 == 0:
            return f"{bs >> 10} KiB"
        return f"{bs} B"
    return str(bs)


def image(alt: str, link: str) -> str:
    return f"![{alt}]({link})"


def link_from_out(relpath: str) -> str:
    """A derived file of the default results tree (figs/x.png) as linked from out/. A named tree
    links through its workspace (`Workspace.link`)."""
    return f"../{relpath}"


def pattern(rw: str, bs) -> str:
    """'4 KiB random read', '128 KiB sequential write', '4 KiB random read/write'."""
    kind = "random" if rw.startswith("rand") else "sequential"
    op = {"read": "read", "write": "write", "rw": "read/write", "readwrite": "read/write",
          "trim": "trim"}[rw.removeprefix("rand")]
    return f"{bs_label(bs)} {kind} {op}"


def shape(rw: str, bs, read_pct: float, iodepth: int, numjobs: int) -> str:
    """A case's I/O in words: '4 KiB random read/write 70/30, QD 32', '128 KiB sequential write,
    QD 32, 2 jobs' (a 0/100 or 100/0 mix named as the pure pattern it is).

    >>> shape("randrw", 4096, 0, 32, 1)
    '4 KiB random write, QD 32'
    """
    mixed = 0 < read_pct < 100
    if not mixed and rw in ("randrw", "rw", "readwrite"):
        rw = ("rand" if rw == "randrw" else "") + ("read" if read_pct == 100 else "write")
    return (pattern(rw, bs) + (f" {int(read_pct)}/{100 - int(read_pct)}" if mixed else "")
            + (f", QD {int(iodepth)}" if iodepth > 1 else "")
            + (f", {int(numjobs)} jobs" if numjobs > 1 else ""))


def device_model(tree: Path, results_dir: Path) -> str:
    """The model of the device under the target: env.json if §1 ran into the results tree,
    else the health snapshot; '/dev/vda, model not reported' when neither names one."""
    env_path = tree / "env.json"
    target = json.loads(env_path.read_text()).get("target") or {} if env_path.exists() else {}
    snapshot = results_dir / "health" / "before"
    health = health_summary(snapshot) if snapshot.is_dir() else {}
    model = target.get("model") or health.get("model")
    if model:
        return str(model)
    device = target.get("device") or health.get("device")
    return f"{device}, model not reported" if device else "model not reported"


# What a section ran on and how, field by field, in the order the setup line states them: the
# report states the fields its sections share once and each section only what differs.
SETUP_FIELDS = {"target": "target", "span_state": "span and state", "profile": "profile",
                "engine": "engine", "io": "I/O", "placement": "placement"}


def setup_fields(manifest: dict, model: str, state: str = "state not recorded") -> dict[str, str]:
    """The setup line's fields (SETUP_FIELDS) of one section; ``state``: the drive's state before
    the section, in words (analysis.sections.state_part.clause). How the engines and io_uring's
    options were chosen (the probes' numbers) is left to the report's methodology
    (`probe_notes`), so a pasted snippet reads its table after one short line."""
    runs = (f"{manifest.get('runtime', '?')} s after {manifest.get('ramp', '?')} s ramp, "
            f"{manifest.get('repeat', '?')} repetitions")
    return {
        "target": f"`{manifest.get('target', '?')}` ({manifest.get('target_kind', '?')}; {model})",
        "span_state": span_and_state(manifest, state),
        "profile": f"{manifest.get('profile', '?')} ({runs})",
        "engine": engine_text(manifest),
        "io": "direct" if str(manifest.get("direct", "1")) == "1" else "BUFFERED",
        "placement": placement_text(manifest),
    }


def setup_line(manifest: dict, model: str, state: str = "state not recorded") -> str:
    """'**Setup:** target `...` (file; model) · region ... · state ... · profile quick (...) ·
    engine io_uring · direct I/O': one line, what a reader needs beside the table."""
    return setup_text(setup_fields(manifest, model, state))


def setup_text(fields: dict[str, str], prefix: str = "**Setup:** ") -> str:
    """The fields given, in SETUP_FIELDS' order, as the setup line writes them."""
    words = {"target": "target {}", "span_state": "{}", "profile": "profile {}",
             "engine": "engine {}", "io": "{} I/O", "placement": "jobs on {}"}
    parts = [words[k].format(fields[k]) for k in SETUP_FIELDS if fields.get(k)]
    return prefix + " · ".join(parts)


def engine_text(manifest: dict) -> str:
    """'io_uring', 'psync at QD=1, io_uring deeper', with io_uring's options where any were kept
    ('io_uring with fixedbufs=1 registerfiles=1'); why is in the report's methodology."""
    engine = str(manifest.get("engine") or "?")
    kept = str(manifest.get("io_uring_options") or "")
    return f"{engine} with {kept}" if kept and kept != "defaults" else engine


def probe_notes(manifest: dict) -> dict[str, str]:
    """How the engine and io_uring's options were chosen, as the run recorded it (the probes'
    numbers), for the report's methodology: {'engine': ..., 'io_uring options': ...}."""
    out = {}
    for key, note in (("engine", manifest.get("engine_note")),
                      ("io_uring options", manifest.get("io_uring_note")
                       or manifest.get("io_uring_options"))):
        if note:
            out[key] = str(note)
    return out


def placement_text(manifest: dict) -> str:
    """'CPUs 0-7, those of the target's NUMA node 0' where the jobs were pinned (--cpus, or the
    target's node on a machine of several); empty where they ran anywhere."""
    if not manifest.get("cpus_allowed"):
        return ""
    return manifest.get("placement") or f"CPUs {manifest['cpus_allowed']}"


def span_and_state(manifest: dict, state: str = "state not recorded") -> str:
    """The span and the state a section measured (``state``: state_part.clause), as its setup
    line and the report state them: the one place both take them from."""
    return f"{span_text(manifest)} · {state}"


def span_text(manifest: dict) -> str:
    """'region 8 GiB of 1.8 TiB (0.43% of the target; the other 1.8 TiB left as it was)': what
    share of the target the numbers describe (a corner of a drive is not the drive); a file's
    region with the filesystem it is on."""
    region = int(manifest.get("region_bytes") or 0)
    target = int(manifest.get("target_bytes") or 0)
    fs = f", on {manifest['target_fs']}" if manifest.get("target_fs") else ""
    if manifest.get("target_kind") == "file":
        whole = ", the whole file" if target and region >= target else (
            f" of a {human_size(target)} file" if target else " of a file")
        return f"region {human_size(region)}{whole}{fs}" if region else f"region {manifest.get('size', '?')}"
    if not region:
        return f"region {manifest.get('size', '?')}"
    if target > region:
        return (f"region {human_size(region)} of {human_size(target)} ({share(region, target)} "
                f"of the target; the other {human_size(target - region)} left as it was)")
    if target:
        return f"region {human_size(region)}, the whole target"
    return f"region {human_size(region)}"


def share(part: float, whole: float) -> str:
    """'0.43%', '99.99%', '<0.01%': never rounded up to 100% (lib/target.bash share_of)."""
    x = 100 * part / whole
    if 0 < x < 0.01:
        return "<0.01%"
    text = f"{x:.2f}"
    if part < whole and float(text) >= 100:
        text = "99.99"
    return text.rstrip("0").rstrip(".") + "%"


