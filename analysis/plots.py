"""Figures shared by the sections. Every point carries its error bar from the repetitions."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; lab boxes and CI have no display
import matplotlib.pyplot as plt


def _clean(values):
    return [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]


def bar_chart(path: Path, labels: list[str], means: list[float], stds: list[float], *,
              ylabel: str, title: str, markers: list[float] | None = None,
              marker_label: str = "", note: str = "") -> Path:
    """Bars of means with ±1 std error bars; optional markers (e.g. p99) on each bar."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    x = range(len(labels))
    bars = ax.bar(x, _clean(means), yerr=_clean(stds), capsize=6, color="#4C78A8",
                  label="mean ± std over repetitions")
    if markers is not None:
        ax.scatter(list(x), _clean(markers), marker="D", color="#E45756", zorder=3,
                   label=marker_label)
    for bar, mean in zip(bars, means):
        ax.annotate(f"{mean:,.0f}" if mean >= 100 else f"{mean:,.1f}",
                    (bar.get_x() + bar.get_width() / 2, 0), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", color="white",
                    fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    if note:
        fig.text(0.99, 0.01, note, ha="right", va="bottom", fontsize=7, color="#555")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
