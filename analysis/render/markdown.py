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


def pm(mean: float, std: float) -> str:
    """mean ± std with the std's precision matched to the mean's."""
    if std is None or math.isnan(std):
        return num(mean)
    digits = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 10 else 2
    return f"{num(mean, digits)} ± {num(std, digits)}"


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


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


def device_model(tree: Path, results_dir: Path) -> str:
    """The model of the device under the target: env.json if §1 ran into the results tree,
    else the health snapshot."""
    env_path = tree / "env.json"
    target = json.loads(env_path.read_text()).get("target") or {} if env_path.exists() else {}
    snapshot = results_dir / "health" / "before"
    health = health_summary(snapshot) if snapshot.is_dir() else {}
    model = target.get("model") or health.get("model")
    if model:
        return str(model)
    device = target.get("device") or health.get("device")
    return f"{device} (model not reported)" if device else "model not reported"


def setup_line(manifest: dict, model: str, state: str = "state not recorded") -> str:
    """The snippet's setup line; ``state``: the drive's state before the section, in words
    (analysis.sections.state_part.clause)."""
    runs = (f"{manifest.get('runtime', '?')} s after {manifest.get('ramp', '?')} s ramp, "
            f"{manifest.get('repeat', '?')} repetitions")
    direct = "direct I/O" if str(manifest.get("direct", "1")) == "1" else "BUFFERED I/O"
    return (f"Device: {model} · target `{manifest.get('target', '?')}` "
            f"({manifest.get('target_kind', '?')}) · {span_text(manifest)} · "
            f"{state} · profile {manifest.get('profile', '?')} "
            f"({runs}) · engine {manifest.get('engine_note') or manifest.get('engine', '?')}"
            f"{uring_text(manifest)}, {direct}{placement_text(manifest)}")


def placement_text(manifest: dict) -> str:
    """' · jobs on CPUs 0-7, those of the target's NUMA node 0' where the jobs were pinned
    (--cpus, or the target's node on a machine of several); nothing where they ran anywhere."""
    if not manifest.get("cpus_allowed"):
        return ""
    return f" · jobs on {manifest.get('placement') or 'CPUs ' + manifest['cpus_allowed']}"


def uring_text(manifest: dict) -> str:
    """'; io_uring options fixedbufs=1 registerfiles=1 (probed...)' where a case ran on io_uring
    with options lib/uring.bash chose (choose_uring_options); nothing for other engines or for
    results measured before the options were probed."""
    note = manifest.get("io_uring_note") or manifest.get("io_uring_options")
    if not note:
        return ""
    return f"; io_uring options {note}"


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


