"""Honest comparisons: means with confidence intervals, ratios with their uncertainty, and a verdict.

Repeats are the unit of inference. A ratio B/A is estimated on the log scale (throughput varies
multiplicatively): the difference of mean logs with a Welch t interval, turned back into a ratio.
The verdict is "faster" or "slower" only when the whole interval lies on one side of 1; otherwise the
difference is "within noise". With fewer than two repeats on either side there is no interval, and
the verdict says so instead of guessing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

import numpy as np

from maximus.analysis.distributions import normal_quantile, t_quantile

CONFIDENCE = 0.95
POWER = 0.80


class Verdict(StrEnum):
    FASTER = "faster"
    SLOWER = "slower"
    WITHIN_NOISE = "within noise"
    NEEDS_REPEATS = "needs repeats"  # fewer than two values on a side: no interval, no verdict


@dataclass(frozen=True)
class Estimate:
    """A mean over repeats with its two-sided confidence interval (NaN bounds with one value)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width_percent(self) -> float:
        return 100 * (self.high - self.mean) / self.mean if self.n > 1 and self.mean else math.nan


@dataclass(frozen=True)
class Ratio:
    """B relative to A: ``ratio`` = mean(B)/mean(A) (geometric), with its interval and verdict."""

    ratio: float
    low: float
    high: float
    verdict: Verdict
    repeats_needed: int | None  # per side, to resolve an effect of this size at 80 % power

    @property
    def change_percent(self) -> float:
        return 100 * (self.ratio - 1)


def estimate(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    data = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if len(data) == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(data.mean())
    if len(data) < 2:
        return Estimate(mean, math.nan, math.nan, 1)
    half = t_quantile(len(data) - 1, 0.5 + confidence / 2) * data.std(ddof=1) / math.sqrt(len(data))
    return Estimate(mean, mean - float(half), mean + float(half), len(data))


def compare(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True,
            confidence: float = CONFIDENCE) -> Ratio:
    """B against A. ``higher_is_better`` says which way is "faster" (throughput yes, latency no)."""
    log_a, log_b = _logs(a), _logs(b)
    if len(log_a) == 0 or len(log_b) == 0:
        return Ratio(math.nan, math.nan, math.nan, Verdict.NEEDS_REPEATS, None)
    difference = float(log_b.mean() - log_a.mean())
    if len(log_a) < 2 or len(log_b) < 2:
        return Ratio(math.exp(difference), math.nan, math.nan, Verdict.NEEDS_REPEATS, None)
    var_a, var_b = log_a.var(ddof=1) / len(log_a), log_b.var(ddof=1) / len(log_b)
    se = math.sqrt(var_a + var_b)
    df = _welch_df(var_a, var_b, len(log_a), len(log_b))
    half = t_quantile(df, 0.5 + confidence / 2) * se if se > 0 else 0.0
    low, high = math.exp(difference - half), math.exp(difference + half)
    verdict = _verdict(low, high, higher_is_better)
    needed = None
    if verdict is Verdict.WITHIN_NOISE:
        estimate_n = _repeats_needed(log_a, log_b, difference, confidence)
        # the current repeats just failed to resolve it, so the answer is never "as many as now"
        needed = None if estimate_n is None else max(estimate_n, max(len(log_a), len(log_b)) + 1)
    return Ratio(math.exp(difference), low, high, verdict, needed)


def _logs(values: Sequence[float]) -> np.ndarray:
    return np.log(np.asarray([v for v in values if v > 0 and not math.isnan(v)], dtype=float))


def _welch_df(var_a: float, var_b: float, n_a: int, n_b: int) -> float:
    if var_a + var_b == 0:
        return float(n_a + n_b - 2)
    return (var_a + var_b) ** 2 / (var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1))


def _verdict(low: float, high: float, higher_is_better: bool) -> Verdict:
    if low > 1:
        return Verdict.FASTER if higher_is_better else Verdict.SLOWER
    if high < 1:
        return Verdict.SLOWER if higher_is_better else Verdict.FASTER
    return Verdict.WITHIN_NOISE


def _repeats_needed(log_a: np.ndarray, log_b: np.ndarray, difference: float, confidence: float) -> int | None:
    """Repeats per side for a two-sample t test to detect this effect at 80 % power."""
    pooled = math.sqrt((log_a.var(ddof=1) + log_b.var(ddof=1)) / 2)
    if difference == 0 or pooled == 0:
        return None
    for n in range(2, 1001):
        df = 2 * n - 2
        reach = (t_quantile(df, 0.5 + confidence / 2) + t_quantile(df, POWER)) * pooled * math.sqrt(2 / n)
        if reach <= abs(difference):
            return n
    z = normal_quantile(0.5 + confidence / 2) + normal_quantile(POWER)  # t is normal by now
    return math.ceil(2 * (z * pooled / abs(difference)) ** 2)


def batch_means(per_second: Sequence[float], batches: int = 10) -> list[float]:
    """Split one run's per-second series into equal batches and average each (the batch-means method):
    values that let a single run be compared at all, with within-run noise only."""
    data = np.asarray(per_second, dtype=float)
    if len(data) < batches:
        return [float(v) for v in data]
    return [float(chunk.mean()) for chunk in np.array_split(data, batches)]
