"""Response times as interval HdrHistograms (issue #45): each value kept to three significant digits, the window's
figures from the counted seconds' histograms, and a merge that is exact: the sum of several hosts' histograms is
the histogram of the union of their samples, bucket for bucket, so every percentile agrees bit for bit."""

from __future__ import annotations

import math
from dataclasses import astuple
import random

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from maximus.analysis.metrics import run_figures
from maximus.analysis.stats import histogram_of_recorded, summarise_recorded
from maximus.histograms import LATENCY, SERVICE, empty, interval_histograms, merged, to_us, window_histograms
from maximus.records import Outcome, TxnSample, Window

WINDOW = Window(2.0, 12.0)


def _samples(seed: int, count: int, terminal: int = 0) -> list[TxnSample]:
    draws = random.Random(seed)
    return [TxnSample(terminal, draws.choice(["new_order", "payment"]), draws.uniform(0.0, 13.0),
                      draws.lognormvariate(-5.0, 1.0), Outcome.COMMITTED) for _ in range(count)]


def test_the_merge_of_the_hosts_histograms_is_the_histogram_of_the_union_of_their_samples() -> None:
    hosts = [_samples(seed, 3000, terminal=seed) for seed in (1, 2, 3)]
    union = interval_histograms([s for host in hosts for s in host], WINDOW)
    each = [interval_histograms(host, WINDOW) for host in hosts]
    for name in ("new_order", "payment"):
        together = window_histograms(union, name, LATENCY)
        summed = merged(window_histograms(host, name, LATENCY) for host in each)
        assert summed.encode() == together.encode()  # the same counts in every bucket
        assert summarise_recorded(summed) == summarise_recorded(together)  # every percentile, bit for bit
        assert histogram_of_recorded(summed, 0.01) == histogram_of_recorded(together, 0.01)


def test_percentiles_keep_three_significant_digits_and_the_count_is_exact() -> None:
    samples = _samples(7, 20_000)
    figures = run_figures(samples, WINDOW, ["new_order", "payment"], "new_order")
    for transaction in figures.transactions:
        exact = np.array([s.latency for s in samples if s.transaction == transaction.name and WINDOW.contains(s)])
        assert transaction.completed == transaction.latency.count == len(exact)
        ordered = np.sort(exact)
        for stat, percent in (("p50", 50), ("p90", 90), ("p99", 99)):
            rank = math.ceil(percent / 100 * len(ordered))  # the nearest rank, give or take one (rounding)
            low, high = ordered[rank - 2], ordered[min(rank, len(ordered) - 1)]
            assert low * (1 - 1e-3) - 1e-6 <= getattr(transaction.latency, stat) <= high * (1 + 1e-3) + 1e-6
        assert transaction.latency.maximum == pytest.approx(exact.max(), rel=1e-3)
        assert transaction.latency.average == pytest.approx(exact.mean(), rel=1e-3)
        assert sum(transaction.histogram.counts) + transaction.histogram.beyond == len(exact)


@pytest.mark.parametrize("seed", range(6))
def test_the_figures_are_hdrhistograms_own_read_at_once(seed: int) -> None:
    """stats reads the buckets as arrays; HdrHistogram's own methods, which walk them in Python, give the same."""
    draws = random.Random(seed)
    recorded = empty()
    for _ in range(draws.choice([1, 3, 200, 5000])):  # from microseconds (the first, unit-wide buckets) to minutes
        recorded.record_value(to_us(draws.choice([draws.uniform(0, 5e-6), draws.lognormvariate(-4.0, 3.0)])))
    for histogram in (recorded, HdrHistogram.decode(recorded.encode())):  # a decoded one keeps fewer buckets
        summary = summarise_recorded(histogram)
        expected = (histogram.get_total_count(), histogram.get_mean_value() / 1e6,
                    *(histogram.get_value_at_percentile(p) / 1e6 for p in (50, 90, 95, 99)),
                    histogram.get_max_value() / 1e6)
        assert astuple(summary) == pytest.approx(expected, rel=1e-12)
        values = [bucket.value_iterated_to / 1e6 for bucket in histogram.get_recorded_iterator()]
        weights = [bucket.count_added_in_this_iter_step for bucket in histogram.get_recorded_iterator()]
        top = 4 * summary.p90
        counts, _ = np.histogram([v for v in values if v <= top], bins=20, range=(0.0, top),
                                 weights=[w for v, w in zip(values, weights) if v <= top])
        assert histogram_of_recorded(histogram, summary.p90).counts == tuple(int(c) for c in counts)


def test_only_the_seconds_counted_in_the_window_make_the_figures() -> None:
    inside = TxnSample(0, "payment", 5.0, 0.010, Outcome.COMMITTED)
    warmup = TxnSample(0, "payment", 1.0, 0.500, Outcome.COMMITTED)
    across = TxnSample(0, "payment", 11.9, 0.200, Outcome.COMMITTED)  # ends after the window (5.4)
    failed = TxnSample(0, "payment", 6.0, 0.900, Outcome.FAILED)
    histograms = interval_histograms([inside, warmup, across, failed], WINDOW)
    assert [(h.start, h.counted) for h in histograms] == [(1.0, False), (5.0, True), (11.0, False)]
    counted = summarise_recorded(window_histograms(histograms, "payment", LATENCY))
    assert counted.count == 1 and counted.maximum == pytest.approx(0.010, rel=1e-3)


def test_a_fixed_rate_run_keeps_latency_and_service_time_apart() -> None:
    late = TxnSample(0, "payment", 5.0, 0.010, Outcome.COMMITTED, intended=4.0)
    histograms = interval_histograms([late], WINDOW)
    assert summarise_recorded(window_histograms(histograms, "payment", LATENCY)).p50 == pytest.approx(1.010, rel=1e-3)
    assert summarise_recorded(window_histograms(histograms, "payment", SERVICE)).p50 == pytest.approx(0.010, rel=1e-3)


def test_figures_from_stored_histograms_equal_those_made_from_the_samples() -> None:
    samples = _samples(11, 5000)
    stored = interval_histograms(samples, WINDOW)
    assert run_figures(samples, WINDOW, ["new_order"], "new_order", histograms=stored) == \
        run_figures(samples, WINDOW, ["new_order"], "new_order")


def test_each_distinct_value_recorded_once_with_its_count_makes_the_histograms_of_each_value_recorded_alone() -> None:
    """``interval_histograms`` records a distinct microsecond value once with its count: the histograms are those
    of every completed sample recorded one at a time, fixed-rate ones with their service times, values below 1 µs
    and halves of a microsecond included, failed ones left out."""
    draws = random.Random(9)
    samples = [TxnSample(draws.randrange(4), draws.choice(["new_order", "payment"]), draws.uniform(0.0, 13.0),
                         draws.choice([draws.lognormvariate(-8.0, 1.0), 0.0, 2.5e-6, 3.5e-6, 0.0125]),
                         draws.choice(list(Outcome)), intended=None if n % 3 else draws.uniform(0.0, 13.0))
               for n in range(20_000)]
    one_by_one: dict[tuple[str, str, float, bool], HdrHistogram] = {}
    for sample in samples:
        if sample.outcome in (Outcome.COMMITTED, Outcome.ROLLED_BACK):
            at, counted = float(sample.start // 1), WINDOW.contains(sample)
            kinds = [(LATENCY, sample.scheduled_latency)]
            if sample.intended is not None:
                kinds.append((SERVICE, sample.latency))
            for kind, value in kinds:
                one_by_one.setdefault((sample.transaction, kind, at, counted), empty()).record_value(to_us(value))
    made = interval_histograms(samples, WINDOW)
    assert [(h.transaction, h.kind, h.start, h.counted) for h in made] == sorted(one_by_one)
    assert [h.encoded for h in made] == [one_by_one[key].encode().decode("ascii") for key in sorted(one_by_one)]
