"""Monitoring over time from known samples: per-interval rates, CPU shares, checkpoints."""

from __future__ import annotations

import pytest

from maximus.analysis.timeseries import checkpoint_times, cpu_timeline, disk_timeline, interval_rates
from maximus.records import MetricSample


def test_interval_rates_skip_intervals_where_a_counter_went_backwards_or_time_stood_still() -> None:
    points = [(0.0, 0.0), (1.0, 10.0), (2.0, 5.0), (4.0, 25.0), (4.0, 30.0), (5.0, 31.0)]
    assert interval_rates(points) == ((1.0, 10.0), (4.0, 10.0), (5.0, 1.0))


def test_checkpoint_times_are_the_readings_that_found_the_counter_moved() -> None:
    samples = [MetricSample(t, "sqlite", "wal_resets_total", v) for t, v in ((0, 0), (1, 0), (2, 3), (3, 3), (4, 4))]
    assert checkpoint_times(samples) == (2.0, 4.0)
    assert checkpoint_times([MetricSample(0, "sqlite", "commits_total", 1)]) is None  # no checkpoint counter
    assert checkpoint_times(samples[:2]) == ()


def test_cpu_and_disk_timelines_need_their_counters() -> None:
    partial = [MetricSample(t, "os", "cpu_seconds_total", t, "s", {"mode": "user"}) for t in range(3)]
    assert cpu_timeline(partial) is None
    assert disk_timeline(partial) is None


def test_cpu_timeline_leaves_out_intervals_without_cpu_time() -> None:
    modes = ("user", "nice", "system", "irq", "softirq", "iowait", "idle", "steal")
    samples = [MetricSample(float(t), "os", "cpu_seconds_total", v, "s", {"mode": m})
               for m in modes for t, v in enumerate([0, 0, 1 if m == "user" else 0])]
    timeline = cpu_timeline(samples)
    assert timeline.times == (2.0,) and timeline.shares["user"] == pytest.approx((100.0,))
