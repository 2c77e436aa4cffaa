"""Monitoring over time: per-interval rates of cumulative counters, CPU shares, disk rates, checkpoints.

``analysis.monitoring`` turns a run's raw ``MetricSample`` readings into one figure per measured
window; this module keeps the time axis instead, for charts of CPU and I/O over the run. Pure
functions over stored samples. Each point is placed at the later reading of its interval, in
seconds from the run's time origin (like ``TxnSample.start``). An interval whose counter went
backwards (a restart or a wrap) or whose readings share a time is left out, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from maximus.analysis.series import one_series, series_of
from maximus.records import MetricSample

# Counters whose every increase is a checkpoint that could be observed from outside the engine:
# SQLite's WAL resets (samplers/sqlite.py), a server engine's completed checkpoints.
CHECKPOINT_COUNTERS = ("wal_resets_total", "checkpoints_total")
CPU_GROUPS = {"user": ("user", "nice"), "system": ("system", "irq", "softirq"), "iowait": ("iowait",),
              "idle": ("idle",), "steal": ("steal",)}

Points = tuple[tuple[float, float], ...]


def interval_rates(points: Sequence[tuple[float, float]]) -> Points:
    """(time, increase per second) between consecutive readings of a counter; see the module's rules."""
    rates = []
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t1 > t0 and v1 >= v0:
            rates.append((t1, (v1 - v0) / (t1 - t0)))
    return tuple(rates)


@dataclass(frozen=True)
class CpuTimeline:
    """The whole machine's CPU per interval, as percent of all CPUs' time in that interval.

    ``shares`` maps user (user + nice), system (system + irq + softirq), iowait, idle and steal to
    one value per entry of ``times``; the shares of one interval add up to 100.
    """

    times: tuple[float, ...]
    shares: dict[str, tuple[float, ...]]


def cpu_timeline(samples: Iterable[MetricSample]) -> CpuTimeline | None:
    """None when the run has no ``cpu_seconds_total`` of every mode (no OS sampler, or another OS)."""
    all_series = series_of(samples)
    found = {m: one_series(all_series, "cpu_seconds_total", mode=m) for group in CPU_GROUPS.values() for m in group}
    modes = {mode: series for mode, series in found.items() if series is not None}
    if len(modes) < len(found):
        return None
    rates = {m: dict(interval_rates(s.points)) for m, s in modes.items()}
    times = sorted(set.intersection(*(set(r) for r in rates.values())))
    totals = {t: sum(r[t] for r in rates.values()) for t in times}
    times = [t for t in times if totals[t] > 0]
    if not times:
        return None
    shares = {group: tuple(100 * sum(rates[m][t] for m in members) / totals[t] for t in times)
              for group, members in CPU_GROUPS.items()}
    return CpuTimeline(tuple(times), shares)


@dataclass(frozen=True)
class DiskTimeline:
    """The data directory's device per interval: reads and writes per second, MB (10**6 B) per second."""

    device: str
    reads_per_s: Points
    writes_per_s: Points
    read_mb_per_s: Points
    written_mb_per_s: Points


def disk_timeline(samples: Iterable[MetricSample]) -> DiskTimeline | None:
    """None when the data device's counters were not sampled."""
    all_series = series_of(samples)
    names = ("disk_reads_total", "disk_writes_total", "disk_read_bytes_total", "disk_written_bytes_total")
    found = [series for name in names if (series := one_series(all_series, name, role="data")) is not None]
    if len(found) < len(names):
        return None
    reads, writes, read_bytes, written_bytes = (interval_rates(s.points) for s in found)
    megabytes = lambda points: tuple((t, v / 1e6) for t, v in points)  # noqa: E731
    return DiskTimeline(found[0].labels.get("device", ""), reads, writes, megabytes(read_bytes),
                        megabytes(written_bytes))


def checkpoint_times(samples: Iterable[MetricSample]) -> tuple[float, ...] | None:
    """When a checkpoint counter moved: the time of each reading that found it increased.

    None when the run has no checkpoint counter at all (the engine reports none, or this journal
    mode has no checkpoints); an empty tuple when there is one and it never moved.
    """
    counters = [s for s in series_of(samples) if s.name in CHECKPOINT_COUNTERS]
    if not counters:
        return None
    return tuple(sorted(t1 for s in counters for (_, v0), (t1, v1) in zip(s.points, s.points[1:]) if v1 > v0))
