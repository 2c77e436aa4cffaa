"""``maximus compare``: the headline figure of two runs, or of two steps of an experiment, B against A."""

from __future__ import annotations

from dataclasses import dataclass

from maximus.analysis.compare import Ratio, batch_means, compare
from maximus.analysis.experiment import ExperimentSummary, analyse_experiment
from maximus.analysis.run import analyse_run
from maximus.analysis.steady import window_series
from maximus.errors import UserError
from maximus.experiment.model import Experiment
from maximus.experiment.plan import Level
from maximus.records import Headline, RunStatus, differences
from maximus.store import ResultsStore


@dataclass(frozen=True)
class Comparison:
    a_label: str
    b_label: str
    headline: Headline  # the figure compared (TPC-C: tpmC)
    a_values: list[float]
    b_values: list[float]
    method: str  # "repeats" or "batch means within one run"
    ratio: Ratio
    differences: tuple[tuple[str, str, str], ...] = ()  # two runs: what their setups set differently (what, A, B)


def compare_targets(store: ResultsStore, a: str, b: str, experiment_id: int | None = None,
                    clients: int | None = None, rate: float | None = None) -> Comparison:
    """Compare the headline figure of two runs (by number) or of two steps of an experiment (by name or index, at one
    client count: the largest unless ``clients`` says otherwise; in a rate sweep at one rate: the highest unless
    ``rate`` says otherwise)."""
    a_label, headline, a_values, a_method = _target_values(store, a, experiment_id, clients, rate)
    b_label, _, b_values, b_method = _target_values(store, b, experiment_id, clients, rate)
    method = a_method if a_method == b_method else f"{a_method} against {b_method}"
    setups = tuple(differences(store.run(int(a)).spec, store.run(int(b)).spec)) \
        if experiment_id is None and a.isdigit() and b.isdigit() else ()
    return Comparison(a_label, b_label, headline, a_values, b_values, method, compare(a_values, b_values), setups)


def _target_values(store: ResultsStore, target: str, experiment_id: int | None, clients: int | None,
                   rate: float | None) -> tuple[str, Headline, list[float], str]:
    if target.isdigit() and experiment_id is None:
        return _run_values(store, int(target))
    report = analyse_experiment(store, experiment_id or _newest_experiment(store))
    step = _step_index(report.experiment, target)
    level = _level(report.record.id, report.summary, clients, rate)
    values = [float(analyse_run(store, run_id).figures.headline)
              for run_id in report.summary.level_cell(step, level).run_ids
              if store.run(run_id).status is RunStatus.COMPLETE]
    at = f" @ {level.rate:,g}/s" if level.rate is not None else ""
    return (f"step {report.experiment.steps[step].name!r} at {level.clients} clients{at}", report.summary.figure,
            values, "repeats")


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


def _run_values(store: ResultsStore, run_id: int) -> tuple[str, Headline, list[float], str]:
    """One run has no repeats: its measured window cut into batches gives within-run noise only."""
    report = analyse_run(store, run_id)
    window = report.record.window
    series = window_series(report.figures.per_second, window.start, window.end)
    headline = report.presentation.headline
    return (f"run {run_id}", headline, [headline.rate(v, 1.0) for v in batch_means(series)],
            "batch means within one run")


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
