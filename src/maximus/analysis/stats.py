"""Latency statistics: percentiles, and the response-time histogram of TPC-C 5.6.1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

HISTOGRAM_BINS = 20  # 5.6.1: at least 20 equal intervals


@dataclass(frozen=True)
class LatencySummary:
    count: int
    average: float
    p50: float
    p90: float
    p95: float
    p99: float
    maximum: float


@dataclass(frozen=True)
class Histogram:
    """Counts in equal bins from 0 to 4 × p90 (5.6.1); values beyond the last edge are counted apart."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    beyond: int


def summarise(latencies: Sequence[float]) -> LatencySummary:
    if len(latencies) == 0:
        return LatencySummary(0, float("nan"), *(float("nan"),) * 5)
    values = np.asarray(latencies, dtype=float)
    p50, p90, p95, p99 = np.percentile(values, [50, 90, 95, 99])
    return LatencySummary(len(values), float(values.mean()), float(p50), float(p90), float(p95), float(p99),
                          float(values.max()))


def histogram(latencies: Sequence[float], p90: float, bins: int = HISTOGRAM_BINS) -> Histogram:
    values = np.asarray(latencies, dtype=float)
    top = 4 * p90 if p90 > 0 else (float(values.max()) if len(values) else 1.0) or 1.0
    counts, edges = np.histogram(values[values <= top], bins=bins, range=(0.0, top))
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts), int((values > top).sum()))
