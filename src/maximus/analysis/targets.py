"""``maximus compare``: the headline figure of two runs, or of two steps of an experiment, B against A.

Two fixed-rate runs (or two steps of a rate sweep at one rate) did the throughput they were asked for, so theirs says
nothing of which setup is better: they are compared by the headline transaction's 90th-percentile response time from
its intended start (TPC-C 5.2.5.4's percentile), lower being better. A fixed-rate run against a closed-loop one is
compared by throughput, and the differences listed say why that is odd."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from maximus.analysis.compare import Ratio, batch_means, compare
from maximus.analysis.experiment import ExperimentSummary, analyse_experiment
from maximus.analysis.rate import scheduled
from maximus.analysis.run import RunReport, analyse_run
from maximus.analysis.stats import summarise_recorded
from maximus.analysis.steady import window_series
from maximus.errors import UserError
from maximus.experiment.model import Experiment
from maximus.experiment.plan import Level
from maximus.histograms import INTERVAL_S, LATENCY, interval_histograms, merged
from maximus.records import Headline, IntervalHistogram, RunStatus, differences
from maximus.store import ResultsStore

BATCHES = 10  # a single run's window is cut into this many batches (``batch_means``)


@dataclass(frozen=True)
class Comparison:
    a_label: str
    b_label: str
    headline: Headline  # the workload's figure of merit (TPC-C: tpmC)
    a_values: list[float]
    b_values: list[float]
    method: str  # "repeats" or "batch means within one run"
    ratio: Ratio
    differences: tuple[tuple[str, str, str], ...] = ()  # two runs: what their setups set differently (what, A, B)
    figure: str = ""  # what the values are: the headline's name, or a latency's ("New-Order p90 latency ms")
    higher_is_better: bool = True  # the headline; a latency is better lower

    @property
    def loss_percent(self) -> float:
        """How much worse B is than A, in percent of A's figure (negative: better)."""
        change = self.ratio.change_percent
        return -change if self.higher_is_better else change


def compare_targets(store: ResultsStore, a: str, b: str, experiment_id: int | None = None,
                    clients: int | None = None, rate: float | None = None) -> Comparison:
    """Compare the headline figure of two runs (by number) or of two steps of an experiment (by name or index, at one
    client count: the largest unless ``clients`` says otherwise; in a rate sweep at one rate: the highest unless
    ``rate`` says otherwise); two fixed-rate targets by their headline transaction's p90 latency."""
    runs = [_runs_of(store, target, experiment_id, clients, rate) for target in (a, b)]
    by_latency = all(reports and all(scheduled(report.record.spec) for report in reports) for _, _, reports in runs)
    (a_label, headline, a_reports), (b_label, _, b_reports) = runs
    a_values, method = _values(store, a_reports, by_latency, _single(a, experiment_id))
    b_values, b_method = _values(store, b_reports, by_latency, _single(b, experiment_id))
    method = method if method == b_method else f"{method} against {b_method}"
    setups = tuple(differences(store.run(int(a)).spec, store.run(int(b)).spec)) \
        if experiment_id is None and a.isdigit() and b.isdigit() else ()
    # by latency, both have runs: their presentation names the transaction as the tables do ("New-Order")
    figure = f"{a_reports[0].presentation.label(headline.transaction)} p90 latency ms" if by_latency else headline.name
    return Comparison(a_label, b_label, headline, a_values, b_values, method,
                      compare(a_values, b_values, higher_is_better=not by_latency), setups, figure, not by_latency)


def _single(target: str, experiment_id: int | None) -> bool:
    """A run named by its number: alone, its window is cut into batches."""
    return target.isdigit() and experiment_id is None


def _runs_of(store: ResultsStore, target: str, experiment_id: int | None, clients: int | None,
             rate: float | None) -> tuple[str, Headline, list[RunReport]]:
    """A run by number, or a step's complete runs at one level, analysed; with their label and headline."""
    if _single(target, experiment_id):
        run = analyse_run(store, int(target))
        return f"run {target}", run.presentation.headline, [run]
    report = analyse_experiment(store, experiment_id or _newest_experiment(store))
    step = _step_index(report.experiment, target)
    level = _level(report.record.id, report.summary, clients, rate)
    reports = [analyse_run(store, run_id) for run_id in report.summary.level_cell(step, level).run_ids
               if store.run(run_id).status is RunStatus.COMPLETE]
    at = f" @ {level.rate:,g}/s" if level.rate is not None else ""
    return f"step {report.experiment.steps[step].name!r} at {level.clients} clients{at}", report.summary.figure, reports


def _values(store: ResultsStore, reports: Sequence[RunReport], by_latency: bool,
            single: bool) -> tuple[list[float], str]:
    """A step's repeats, a value each; a ``single`` run has no repeats: its measured window cut into batches gives
    within-run noise only."""
    if single:
        return _batches(store, reports[0], by_latency), "batch means within one run"
    return [_p90_ms(report) if by_latency else float(report.figures.headline) for report in reports], "repeats"


def _batches(store: ResultsStore, report: RunReport, by_latency: bool) -> list[float]:
    window = report.record.window
    if by_latency:
        return _batch_p90s_ms(store, report)
    series = window_series(report.figures.per_second, window.start, window.end)
    return [report.presentation.headline.rate(v, 1.0) for v in batch_means(series)]


def _p90_ms(report: RunReport) -> float:
    """The headline transaction's 90th-percentile latency from its intended start, in milliseconds (the run's own
    figure, as ``show`` prints it); NaN without any."""
    named = report.presentation.headline.transaction
    found = [t.latency.p90 for t in report.figures.transactions if t.name == named and t.completed]
    return found[0] * 1000 if found else float("nan")


def _batch_p90s_ms(store: ResultsStore, report: RunReport) -> list[float]:
    """Each batch's 90th-percentile latency of the headline transaction from its intended start, in milliseconds, from
    the run's histograms as every percentile Maximus prints: the window's seconds cut into ``BATCHES`` runs of whole
    seconds (a histogram holds the transactions that started in one second), each one's histograms merged; a batch
    where none completed gives none."""
    run_id, window = report.record.id, report.record.window
    recorded = store.latency_histograms(run_id)
    if recorded is None:  # a run stored before its histograms: made from its samples, as analyse_run makes them
        recorded = interval_histograms(store.sample_columns(run_id), window)
    named = report.presentation.headline.transaction
    by_second: dict[float, list[IntervalHistogram]] = defaultdict(list)
    for histogram in recorded:
        if histogram.transaction == named and histogram.kind == LATENCY and histogram.counted:
            by_second[histogram.start].append(histogram)
    first, last = math.floor(window.start / INTERVAL_S), math.ceil(window.end / INTERVAL_S)
    seconds = [second * INTERVAL_S for second in range(first, last)]
    batches = np.array_split(np.array(seconds), min(BATCHES, len(seconds))) if seconds else []
    summaries = [summarise_recorded(merged(h for second in batch for h in by_second[float(second)]))
                 for batch in batches]
    return [summary.p90 * 1000 for summary in summaries if summary.count]


def _level(experiment_id: int, summary: ExperimentSummary, clients: int | None, rate: float | None) -> Level:
    """The level the steps are compared at: the client count given, else the largest; of its rates in a sweep the one
    given, else the highest. Two rates are never compared as one: each is its own cell."""
    counts = sorted({level.clients for level in summary.levels})
    count = clients or max(counts)
    if count not in counts:
        raise UserError(f"experiment {experiment_id} has no runs with {count} clients "
                        f"(client counts: {', '.join(map(str, counts))})")
    at_count = [level for level in summary.levels if level.clients == count]
    if rate is None:
        return max(at_count, key=lambda level: level.rate or 0.0)
    if not summary.swept:
        raise UserError(f"experiment {experiment_id} is not a rate sweep: its runs had no fixed rate to compare at")
    found = next((level for level in at_count if level.rate == rate), None)
    if found is None:
        raise UserError(f"experiment {experiment_id} has no runs at {rate:,g}/s (rates: "
                        f"{', '.join(f'{level.rate:,g}' for level in at_count if level.rate is not None)})")
    return found


def _step_index(experiment: Experiment, target: str) -> int:
    names = [step.name for step in experiment.steps]
    if target in names:
        return names.index(target)
    if target.isdigit() and int(target) < len(names):
        return int(target)
    raise UserError(f"no step {target!r} in experiment {experiment.name!r} (steps: {', '.join(names)})")


def _newest_experiment(store: ResultsStore) -> int:
    experiments = store.experiments()
    if not experiments:
        raise UserError("no experiment stored yet: name two runs by number, or run an experiment first")
    return experiments[-1].id
