"""Series of a run's monitoring samples, and their change over the measured window.

Counters are stored cumulative; a figure over the measured window is the change between the reading nearest
each edge of the window, divided by the time between those readings (``change``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from maximus.records import Window
from maximus.records import MetricSample

EDGE_SLACK_S = 0.25  # a reading this late still counts as taken at the window's edge (thread wake-up jitter)
OS_SOURCES = ("os", "monitor")


@dataclass(frozen=True)
class Series:
    """The readings of one counter or gauge: same source, name and labels, in time order."""

    source: str
    name: str
    unit: str
    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]

    @property
    def is_counter(self) -> bool:
        return self.name.endswith("_total")


@dataclass(frozen=True)
class Change:
    seconds: float
    amount: float

    @property
    def per_second(self) -> float:
        return self.amount / self.seconds


def series_of(samples: Iterable[MetricSample]) -> list[Series]:
    grouped: dict[tuple[str, str, str], list[MetricSample]] = defaultdict(list)
    for sample in samples:
        grouped[(sample.source, sample.name, sample.labels_text())].append(sample)
    return [Series(source, name, group[0].unit, json.loads(labels), tuple(sorted((s.time, s.value) for s in group)))
            for (source, name, labels), group in grouped.items()]


def find(all_series: Sequence[Series], name: str, **labels: str) -> list[Series]:
    """The series called ``name`` whose labels include ``labels``."""
    return [s for s in all_series if s.name == name and labels.items() <= s.labels.items()]


def edges(series: Series, window: Window) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The readings nearest the window's start and end; None when fewer than two cover it."""
    before = [p for p in series.points if p[0] <= window.start + EDGE_SLACK_S]
    until = [p for p in series.points if p[0] <= window.end + EDGE_SLACK_S]
    first = before[-1] if before else series.points[0]
    if not until or until[-1][0] <= first[0]:
        return None
    return first, until[-1]


def change(series: Series | None, window: Window) -> Change | None:
    """A counter's increase over the window; None when not covered, or when it went backwards (a wrap)."""
    bounds = edges(series, window) if series else None
    if bounds is None or bounds[1][1] < bounds[0][1]:
        return None
    (t0, v0), (t1, v1) = bounds
    return Change(t1 - t0, v1 - v0)


def one_series(all_series: Sequence[Series], name: str, **labels: str) -> Series | None:
    """The first series called ``name`` with ``labels``, or None."""
    found = find(all_series, name, **labels)
    return found[0] if found else None


def label(series: Series | None, key: str) -> str:
    """A series' label ``key`` as a sentence names it: ``?`` where there is no such series or label."""
    return series.labels.get(key, "?") if series else "?"
