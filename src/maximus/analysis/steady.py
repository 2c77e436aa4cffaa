"""Steady-state checks: is throughput still trending inside the measured window?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

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
    fit = stats.linregress(np.arange(len(series)), series)
    change = fit.slope * (len(series) - 1) / float(np.mean(series))
    return Trend(float(change), float(fit.pvalue))


def steady_state_warning(run_id: int, series: Sequence[float]) -> str | None:
    found = trend(series)
    if found is None or found.steady:
        return None
    direction = "rising" if found.change > 0 else "falling"
    return (f"run {run_id}: throughput still {direction} ({found.change:+.0%} across the measured window): "
            "lengthen the warm-up or the duration")
