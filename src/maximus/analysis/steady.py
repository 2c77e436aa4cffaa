"""Steady-state checks: is throughput still trending inside the measured window?"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from maximus.analysis.distributions import t_cdf

TREND_LIMIT = 0.10  # a change of more than 10 % across the window is not a steady state
SIGNIFICANCE = 0.01


@dataclass(frozen=True)
class Trend:
    change: float  # fitted change across the window, relative to the mean (0.12 = +12 %)
    p_value: float

    @property
    def steady(self) -> bool:
        return abs(self.change) <= TREND_LIMIT or self.p_value >= SIGNIFICANCE


def window_series(per_second: Sequence[tuple[int, int, int]], start: float, end: float) -> list[float]:
    """Headline completions per second inside the measured window (whole seconds only)."""
    counts = {second: headline for second, headline, _ in per_second}
    return [float(counts.get(second, 0)) for second in range(int(np.ceil(start)), int(end))]


def trend(series: Sequence[float]) -> Trend | None:
    if len(series) < 5 or not np.mean(series):
        return None
    slope, p_value = _slope_test(np.asarray(series, dtype=float))
    return Trend(slope * (len(series) - 1) / float(np.mean(series)), p_value)


def _slope_test(series: np.ndarray) -> tuple[float, float]:
    """Least-squares slope against time and the two-sided p-value of "no trend" (the t test on the slope,
    as scipy.stats.linregress gives it; scipy.stats itself would add 1.8 s to every command's start)."""
    time = np.arange(len(series), dtype=float)
    dt, dy = time - time.mean(), series - series.mean()
    slope = float(dt @ dy / (dt @ dt))
    spread = float(dy @ dy)
    if spread == 0:
        return slope, 1.0
    r = min(1.0, abs(float(dt @ dy)) / math.sqrt(float(dt @ dt) * spread))
    if r == 1.0:
        return slope, 0.0
    df = len(series) - 2
    t = r * math.sqrt(df / (1 - r * r))
    return slope, 2 * t_cdf(df, -t)


def steady_state_warning(run_id: int, series: Sequence[float]) -> str | None:
    found = trend(series)
    if found is None or found.steady:
        return None
    direction = "rising" if found.change > 0 else "falling"
    return (f"run {run_id}: throughput still {direction} ({found.change:+.0%} across the measured window): "
            "lengthen the warm-up or the duration")
