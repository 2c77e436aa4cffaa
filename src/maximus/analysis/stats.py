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
    """``summarise`` of the values an HdrHistogram of microseconds holds, each to its three significant digits, as
    HdrHistogram's own methods give them: the percentile is the highest value equivalent to the one at or below which
    the share of the values lies, the mean weighs each bucket's middle value."""
    count = recorded.get_total_count()
    if not count:
        return summarise([])
    lowest, highest, counts = _buckets(recorded)
    cumulative = np.cumsum(counts)
    targets = [max(int(p * count / 100 + 0.5), 1) for p in (50, 90, 95, 99)]
    p50, p90, p95, p99 = (float(highest[np.searchsorted(cumulative, target)]) / 1e6 for target in targets)
    middles = lowest + ((highest - lowest + 1) >> 1)
    average = float((counts * middles).sum()) / count / 1e6
    return LatencySummary(count, average, p50, p90, p95, p99, recorded.get_max_value() / 1e6)


def histogram_of_recorded(recorded: HdrHistogram, p90: float, bins: int = HISTOGRAM_BINS) -> Histogram:
    """``histogram`` of the values an HdrHistogram of microseconds holds, each at its bucket's highest value."""
    _, highest, weights = _buckets(recorded)
    array, counts_of = highest.astype(float) / 1e6, weights.astype(float)
    top = 4 * p90 if p90 > 0 else (float(array.max()) if len(array) else 1.0) or 1.0
    counts, edges = np.histogram(array[array <= top], bins=bins, range=(0.0, top), weights=counts_of[array <= top])
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts),
                     int(counts_of[array > top].sum()))


def _buckets(recorded: HdrHistogram) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lowest and highest value of each bucket that holds values, and its count, in the order of the values.
    HdrHistogram's own readers walk its buckets in Python, a bucket at a time: 0.3 s for one transaction type's
    histogram (``get_mean_value``), where these take a millisecond. The layout is HdrHistogram's: a bucket ``b`` of
    sub-buckets ``s``, each ``1 << (unit magnitude + b)`` wide."""
    stored = min(recorded.counts_len, recorded.encoder.payload.counts_len)  # a decoded histogram may have fewer
    all_counts = np.ctypeslib.as_array(recorded.counts)[:stored]
    indices = np.flatnonzero(all_counts)
    half_magnitude, half = recorded.sub_bucket_half_count_magnitude, recorded.sub_bucket_half_count
    bucket = (indices >> half_magnitude) - 1
    sub_bucket = (indices & (half - 1)) + half
    first = bucket < 0
    sub_bucket[first] -= half
    bucket[first] = 0
    shift = bucket + recorded.unit_magnitude
    lowest = sub_bucket.astype(np.int64) << shift
    return lowest, lowest + (np.int64(1) << shift) - 1, all_counts[indices].astype(np.int64)
