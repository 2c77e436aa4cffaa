"""Per-run figures: tpmC, NOPM, TPM, outcomes, latencies per transaction, throughput over time.

Everything here is computed from the raw samples of the results store, so any figure can be
recomputed (and checked) later.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from maximus.analysis.stats import Histogram, LatencySummary, histogram_of_recorded, summarise_recorded
from maximus.histograms import LATENCY, SERVICE, interval_histograms, window_histograms
from maximus.records import IntervalHistogram, Outcome, TxnSample, Window

COMPLETED = (Outcome.COMMITTED, Outcome.ROLLED_BACK)


@dataclass(frozen=True)
class TransactionFigures:
    name: str
    completed: int
    latency: LatencySummary  # response times: in a fixed-rate run from each transaction's intended start
    histogram: Histogram  # of ``latency``
    service: LatencySummary | None = None  # a fixed-rate run's: from each transaction's actual start


@dataclass(frozen=True)
class RunFigures:
    """A run's figures over its measured window. The headline is the workload's figure of merit
    (``Workload.headline``: TPC-C's tpmC, completed New-Orders per minute, rollbacks included, 5.4.1)."""

    headline: int  # completed headline transactions per minute, or per second (``Headline.per_seconds``), truncated
    # to an integer (TPC-C's tpmC, pgbench's tps)
    committed: float  # the same, committed ones only (TPC-C's NOPM: rollbacks excluded)
    tpm: float  # every completed business transaction per minute (deferred completions not counted twice)
    outcomes: Mapping[str, int]  # committed, rolled_back, retried, failed: in the window
    transactions: tuple[TransactionFigures, ...]
    counts: Mapping[str, int]  # completed per type, plus "<headline>.rolled_back", for the validity bands
    per_second: tuple[tuple[int, int, int], ...]  # (second from origin, headline done, all done)
    window: Window


def in_window(samples: Iterable[TxnSample], window: Window) -> list[TxnSample]:
    return [s for s in samples if window.contains(s)]


def outcome_counts(samples: Sequence[TxnSample]) -> dict[str, int]:
    tally = Counter(s.outcome.value for s in samples)
    return {"committed": tally["committed"], "rolled_back": tally["rolled_back"],
            "retried": sum(1 for s in samples if s.attempts > 1), "failed": tally["failed"]}


def per_second(samples: Sequence[TxnSample], headline: str, deferred_prefix: str = "deferred_"
               ) -> tuple[tuple[int, int, int], ...]:
    """Completions per second from the time origin (warm-up included: steady state shows in it)."""
    headline_done: Counter = Counter()
    all_done: Counter = Counter()
    for sample in samples:
        if sample.outcome in COMPLETED and not sample.transaction.startswith(deferred_prefix):
            second = int(sample.start + sample.latency)
            all_done[second] += 1
            headline_done[second] += sample.transaction == headline
    if not all_done:
        return ()
    return tuple((s, headline_done[s], all_done[s]) for s in range(0, max(all_done) + 1))


def run_figures(samples: Sequence[TxnSample], window: Window, transaction_order: Sequence[str],
                headline: str, per_seconds: float = 60.0,
                histograms: Sequence[IntervalHistogram] | None = None) -> RunFigures:
    """``headline``: the transaction whose completions per ``per_seconds`` (``Headline.per_seconds``: a minute, or
    a second) are the run's figure of merit. ``histograms``: the run's stored response times
    (``maximus.histograms``), from which every percentile is computed; made from the samples when not given (a
    run stored before them)."""
    measured = in_window(samples, window)
    recorded = histograms if histograms is not None else interval_histograms(samples, window)
    completed = [s for s in measured if s.outcome in COMPLETED]
    minutes = window.minutes or math.nan
    periods = window.minutes * 60.0 / per_seconds or math.nan
    headline_done = [s for s in completed if s.transaction == headline]
    interactive = [s for s in completed if not s.transaction.startswith("deferred_")]
    counts = Counter(s.transaction for s in completed)
    counts[f"{headline}.rolled_back"] = sum(1 for s in headline_done if s.outcome is Outcome.ROLLED_BACK)
    return RunFigures(
        headline=int(len(headline_done) / periods) if window.minutes else 0,
        committed=sum(1 for s in headline_done if s.outcome is Outcome.COMMITTED) / periods,
        tpm=len(interactive) / minutes,
        outcomes=outcome_counts(measured),
        transactions=tuple(_figures(name, recorded) for name in transaction_order),
        counts=dict(counts),
        per_second=per_second(samples, headline),
        window=window,
    )


def _figures(name: str, histograms: Sequence[IntervalHistogram]) -> TransactionFigures:
    """A transaction's response times over the window, from its histograms; in a fixed-rate run from their intended
    starts (the latency a user waiting since then saw), with their service times beside them."""
    latencies = window_histograms(histograms, name, LATENCY)
    summary = summarise_recorded(latencies)
    scheduled = any(h.transaction == name and h.kind == SERVICE for h in histograms)
    return TransactionFigures(name, summary.count, summary, histogram_of_recorded(latencies, summary.p90),
                              summarise_recorded(window_histograms(histograms, name, SERVICE)) if scheduled else None)
