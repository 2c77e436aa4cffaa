"""Figures computed from known samples: the window rule, tpmC vs NOPM, latency statistics."""

from __future__ import annotations

import math

import pytest

from maximus.analysis.metrics import run_figures
from maximus.analysis.stats import histogram, summarise
from maximus.records import Outcome, TxnSample, Window

WINDOW = Window(10.0, 70.0)  # one minute


def _sample(name: str, start: float, latency: float = 0.01, outcome: Outcome = Outcome.COMMITTED,
            attempts: int = 1) -> TxnSample:
    return TxnSample(0, name, start, latency, outcome, attempts)


def test_tpmc_counts_rollbacks_and_only_transactions_wholly_inside_the_window() -> None:
    samples = [_sample("new_order", 5.0),  # warm-up
               _sample("new_order", 10.0), _sample("new_order", 20.0),
               _sample("new_order", 30.0, outcome=Outcome.ROLLED_BACK),
               _sample("new_order", 40.0, outcome=Outcome.FAILED),
               _sample("new_order", 69.995, latency=0.01),  # ends after the window: not counted (5.4)
               _sample("payment", 50.0, attempts=3), _sample("deferred_delivery", 60.0, latency=2.0)]
    figures = run_figures(samples, WINDOW, ["new_order", "payment", "deferred_delivery"], "new_order")
    assert figures.headline == 3
    assert figures.committed == 2
    assert figures.tpm == 4  # deferred completions are not counted as extra business transactions
    assert figures.outcomes == {"committed": 4, "rolled_back": 1, "retried": 1, "failed": 1}
    assert figures.counts["new_order.rolled_back"] == 1


def test_tpmc_is_truncated_to_an_integer() -> None:
    samples = [_sample("new_order", 10.0 + i) for i in range(7)]
    figures = run_figures(samples, Window(0.0, 120.0), ["new_order"], "new_order")
    assert figures.headline == 3  # 3.5 per minute, truncated (5.4.1)


def test_per_second_series_counts_completions() -> None:
    samples = [_sample("new_order", 0.5), _sample("payment", 0.7), _sample("new_order", 2.2)]
    figures = run_figures(samples, WINDOW, ["new_order"], "new_order")
    assert figures.per_second == ((0, 1, 2), (1, 0, 0), (2, 1, 1))
    # a completion before the time origin (a host's clock a little behind) is in no second, as in none of the series;
    # the figures are plain Python numbers, for the exports and the tables
    early = run_figures([_sample("new_order", -2.5), *samples], WINDOW, ["new_order"], "new_order")
    assert early.per_second == figures.per_second
    assert type(early.committed) is float and type(early.tpm) is float
    # each transaction's count in the order of its first completion in the window, as the exports list them
    ordered = run_figures([_sample("new_order", 0.5), _sample("payment", 0.2)], Window(0.0, 60.0), ["new_order"],
                          "new_order")
    assert list(ordered.counts) == ["payment", "new_order", "new_order.rolled_back"]


def test_latency_summary_and_histogram() -> None:
    latencies = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    summary = summarise(latencies)
    assert summary.count == 100 and summary.maximum == pytest.approx(0.1)
    assert summary.p90 == pytest.approx(0.0901)
    assert summary.average == pytest.approx(0.0505)
    hist = histogram(latencies, summary.p90)
    assert len(hist.counts) == 20 and hist.edges[-1] == pytest.approx(4 * summary.p90)
    assert sum(hist.counts) + hist.beyond == 100 and hist.beyond == 0
    assert math.isnan(summarise([]).p90)
