"""Per-run figures: tpmC, NOPM, TPM, outcomes, latencies per transaction, throughput over time.

Everything here is computed from the raw samples of the results store, so any figure can be
recomputed (and checked) later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from maximus.analysis.stats import Histogram, LatencySummary, histogram_of_recorded, summarise_recorded
from maximus.histograms import LATENCY, SERVICE, interval_histograms, window_histograms
from maximus.records import DEFERRED_PREFIX, IntervalHistogram, Outcome, TxnSample, Window
from maximus.samples import OUTCOMES, Samples, samples_of


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


def in_window(samples: Samples | Sequence[TxnSample], window: Window) -> Samples:
    chosen = samples_of(samples)
    return chosen.where(chosen.in_window(window))


def outcome_counts(samples: Samples | Sequence[TxnSample]) -> dict[str, int]:
    chosen = samples_of(samples)
    tally = np.bincount(chosen.outcome, minlength=len(OUTCOMES))
    count = {outcome.value: int(tally[n]) for n, outcome in enumerate(OUTCOMES)}
    return {"committed": count["committed"], "rolled_back": count["rolled_back"],
            "retried": int(np.count_nonzero(chosen.attempts > 1)), "failed": count["failed"]}


def per_second(samples: Samples | Sequence[TxnSample], headline: str) -> tuple[tuple[int, int, int], ...]:
    """Completions per second from the time origin (warm-up included: steady state shows in it)."""
    chosen = samples_of(samples)
    interactive = [name for name in chosen.names if not name.startswith(DEFERRED_PREFIX)]
    done = chosen.completed() & chosen.named(interactive)
    if not done.any():
        return ()
    seconds = chosen.end[done].astype(np.int64)  # each completion's second: a truncation, as int() of each
    kept = seconds >= 0  # none before the time origin, but a host's clock: counted from second 0 on
    if not kept.any():
        return ()
    all_done = np.bincount(seconds[kept])
    headline_done = np.bincount(seconds[kept & chosen.named([headline])[done]], minlength=len(all_done))
    return tuple(zip(range(len(all_done)), headline_done.tolist(), all_done.tolist()))


def run_figures(samples: Samples | Sequence[TxnSample], window: Window, transaction_order: Sequence[str],
                headline: str, per_seconds: float = 60.0,
                histograms: Sequence[IntervalHistogram] | None = None) -> RunFigures:
    """``headline``: the transaction whose completions per ``per_seconds`` (``Headline.per_seconds``: a minute, or
    a second) are the run's figure of merit. ``histograms``: the run's stored response times
    (``maximus.histograms``), from which every percentile is computed; made from the samples when not given (a
    run stored before them)."""
    every = samples_of(samples)
    measured = in_window(every, window)
    recorded = histograms if histograms is not None else interval_histograms(every, window)
    completed = measured.completed()
    minutes = window.minutes or math.nan
    periods = window.minutes * 60.0 / per_seconds or math.nan
    headline_done = completed & measured.named([headline])
    interactive = completed & measured.named([n for n in measured.names if not n.startswith(DEFERRED_PREFIX)])
    counts = measured.counts(completed)
    counts[f"{headline}.rolled_back"] = int(np.count_nonzero(headline_done & measured.with_outcome(
        Outcome.ROLLED_BACK)))
    return RunFigures(
        headline=int(np.count_nonzero(headline_done) / periods) if window.minutes else 0,
        committed=int(np.count_nonzero(headline_done & measured.with_outcome(Outcome.COMMITTED))) / periods,
        tpm=int(np.count_nonzero(interactive)) / minutes,
        outcomes=outcome_counts(measured),
        transactions=tuple(_figures(name, recorded) for name in transaction_order),
        counts=counts,
        per_second=per_second(every, headline),
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
