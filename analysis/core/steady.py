"""SNIA PTS's steady-state window, in plain Python.

A window of rounds is steady when its range (max - min) is within ``range_pct`` of the window's
mean and its least-squares line moves at most ``slope_pct`` of the mean across the window
(|slope| x (n - 1) rounds). The run loop's helper asks this after every preconditioning round
of the sustained state (lib/state.bash), so it may not import numpy: it must answer in
milliseconds. The verdict is judged on the LAST window, as SNIA does: a drive that was steady for
five rounds before its write cache filled is not steady now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    mean: float
    range_pct: float
    excursion_pct: float  # how far the best-fit line moves across the window, % of the mean

    def holds(self, range_pct: float = 20.0, slope_pct: float = 10.0) -> bool:
        return self.range_pct <= range_pct and self.excursion_pct <= slope_pct


def window(values: list[float]) -> Window:
    """Range and line excursion of one window of round values (at least 2)."""
    n = len(values)
    if n < 2:
        raise ValueError("a steady-state window needs at least 2 rounds")
    mean = sum(values) / n
    if mean <= 0:
        return Window(mean, math.inf, math.inf)
    x_mean = (n - 1) / 2
    slope = (sum((i - x_mean) * (v - mean) for i, v in enumerate(values))
             / sum((i - x_mean) ** 2 for i in range(n)))
    return Window(mean, 100.0 * (max(values) - min(values)) / mean,
                  100.0 * abs(slope) * (n - 1) / mean)


def last_window(values: list[float], size: int = 5) -> Window | None:
    """The window of the last ``size`` rounds, or None while there are fewer."""
    return window(values[-size:]) if len(values) >= size else None
