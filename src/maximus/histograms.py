"""Response times as interval histograms (issue #45): HdrHistograms, exactly mergeable, one per transaction type, kind
and second of the run, from which every percentile Maximus prints is computed.

An HdrHistogram keeps counts in buckets whose width grows with the value, so that every value is kept to three
significant digits whatever its size (here from 1 µs to an hour): a p99 of 12.3456 ms reads back as 12.35 ms at
worst. Unlike a percentile, a histogram merges exactly: the sum of two histograms is the histogram of the union of
their values, bucket for bucket, so a window's percentiles come from its seconds' histograms, an experiment's from
its runs', several client hosts' from each host's. Each histogram is stored in HdrHistogram's own compressed
encoding, which other tools read too.

A run's histograms are made from its samples where they are stored (``runs``); a run stored before them gets the
same from its samples when it is read, so old and new runs read the same way.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np
from hdrh.histogram import HdrHistogram

from maximus.records import IntervalHistogram, TxnSample, Window
from maximus.samples import Samples, samples_of

LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS = 1, 3_600_000_000, 3  # 1 µs to an hour, three significant digits
INTERVAL_S = 1.0  # each histogram holds the transactions that started in one second from the time origin
LATENCY, SERVICE = "latency", "service"  # from the intended start (a fixed rate's; else the start), from the start


def empty() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def to_us(seconds: float) -> int:
    """A response time in whole microseconds, within what the histograms hold."""
    return min(max(round(seconds * 1e6), LOWEST_US), HIGHEST_US)


def interval_histograms(samples: Samples | Iterable[TxnSample], window: Window) -> list[IntervalHistogram]:
    """The completed transactions' response times, a histogram per transaction type, kind, second and whether they
    count in ``window``. A fixed-rate run's (samples with an intended start) get their service times too.

    Each histogram records each distinct microsecond value once, with its count: a storage-bound run's million
    samples are a few thousand calls into HdrHistogram, not a million."""
    every = replace(samples_of(samples), error=None)  # not copied below: no histogram reads it
    completed = every.completed()
    done = every if completed.all() else every.where(completed)  # a copy of a long run's columns only if it must
    second = np.floor_divide(done.start, INTERVAL_S).astype(np.int64)
    counted = done.in_window(window)
    latency = np.where(done.timed, done.end - done.intended, done.latency)  # from the intended start, if any
    histograms: dict[tuple[str, str, int, bool], HdrHistogram] = defaultdict(empty)
    for kind, values, chosen in ((LATENCY, latency, slice(None)), (SERVICE, done.latency, done.timed)):
        keys = (done.transaction[chosen], second[chosen], counted[chosen], _us(values[chosen]))
        if not len(keys[3]):
            continue
        order = np.lexsort(keys[::-1])
        name, at, inside, us = (key[order] for key in keys)
        firsts = np.flatnonzero(np.concatenate(([True], (name[1:] != name[:-1]) | (at[1:] != at[:-1])
                                                 | (inside[1:] != inside[:-1]) | (us[1:] != us[:-1]))))
        counts = np.diff(np.append(firsts, len(us)))
        for first, count in zip(firsts.tolist(), counts.tolist()):
            histograms[done.names[name[first]], kind, int(at[first]), bool(inside[first])].record_value(
                int(us[first]), count)
    return [IntervalHistogram(name, kind, second * INTERVAL_S, counted, histogram.encode().decode("ascii"))
            for (name, kind, second, counted), histogram in sorted(histograms.items())]


def _us(seconds: np.ndarray) -> np.ndarray:
    """``to_us`` of each: whole microseconds (halves to even, as ``round``), within what the histograms hold."""
    return np.clip(np.rint(seconds * 1e6), LOWEST_US, HIGHEST_US).astype(np.int64)


def merged(histograms: Iterable[IntervalHistogram | HdrHistogram]) -> HdrHistogram:
    """The sum of histograms: the histogram of the union of their values."""
    total = empty()
    for histogram in histograms:
        total.add(HdrHistogram.decode(histogram.encoded) if isinstance(histogram, IntervalHistogram) else histogram)
    return total


def window_histograms(histograms: Sequence[IntervalHistogram], transaction: str, kind: str) -> HdrHistogram:
    """One transaction type's histogram of one kind over the measured window."""
    return merged(h for h in histograms if h.transaction == transaction and h.kind == kind and h.counted)
