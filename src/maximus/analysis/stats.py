"""Latency statistics: percentiles, and the response-time histogram of TPC-C 5.6.1, from a list of values or from an
HdrHistogram of them in microseconds (``maximus.histograms``: what every printed response time comes from)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from hdrh.histogram import HdrHistogram

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


def summarise_recorded(recorded: HdrHistogram) -> LatencySummary:
    """``summarise`` of the values an HdrHistogram of microseconds holds, each to its three significant digits: the
    percentile is the highest value equivalent to the one at or below which the share of the values lies."""
    count = recorded.get_total_count()
    if not count:
        return summarise([])
    p50, p90, p95, p99 = (recorded.get_value_at_percentile(p) / 1e6 for p in (50, 90, 95, 99))
    return LatencySummary(count, recorded.get_mean_value() / 1e6, p50, p90, p95, p99, recorded.get_max_value() / 1e6)


def histogram_of_recorded(recorded: HdrHistogram, p90: float, bins: int = HISTOGRAM_BINS) -> Histogram:
    """``histogram`` of the values an HdrHistogram of microseconds holds, each at its bucket's highest value."""
    values, weights = [], []
    for bucket in recorded.get_recorded_iterator():
        values.append(bucket.value_iterated_to / 1e6)
        weights.append(bucket.count_added_in_this_iter_step)
    array, counts_of = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    top = 4 * p90 if p90 > 0 else (float(array.max()) if len(array) else 1.0) or 1.0
    counts, edges = np.histogram(array[array <= top], bins=bins, range=(0.0, top), weights=counts_of[array <= top])
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts),
                     int(counts_of[array > top].sum()))
