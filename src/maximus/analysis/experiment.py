"""An experiment's figures per step and client count, gains over previous step and baseline."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Mapping, Sequence

from maximus.analysis.compare import Estimate, Ratio, Verdict, compare, estimate
from maximus.analysis.durability import Durability, durability_by_step
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.analysis.steady import steady_state_warning, window_series
from maximus.errors import UserError
from maximus.experiment.model import MODEL, READING, Experiment
from maximus.experiment.model import from_data as model_from_data
from maximus.experiment.plan import from_data
from maximus.records import CrashTestRecord, ExperimentRecord, Headline, Presentation, RunStatus, WorkloadReading
from maximus.store import ResultsStore

SIGNIFICANT = (Verdict.FASTER, Verdict.SLOWER)


@dataclass(frozen=True)
class RunRow:
    """What the summary needs of one stored run."""

    run_id: int
    step: int
    clients: int
    status: RunStatus
    load_seconds: float | None
    loaded_in_run: bool
    figures: RunFigures | None


@dataclass(frozen=True)
class Cell:
    step: int
    clients: int
    headline: Estimate  # the workload's figure of merit over the repeats (TPC-C's tpmC)
    committed: Estimate  # the same of committed transactions only (TPC-C's NOPM)
    p90_headline_s: Estimate  # the headline transaction's 90th-percentile response time (TPC-C: New-Order's)
    load_s: Estimate
    run_ids: tuple[int, ...]
    failed: int
    vs_previous: Ratio | None  # None for the baseline's cells
    vs_baseline: Ratio | None
    load_vs_baseline: Ratio | None

    @property
    def step_gain(self) -> Ratio:
        """The gain over the previous step, which every step after the baseline has."""
        if self.vs_previous is None:
            raise ValueError(f"step {self.step} is the baseline: no step before it to gain over")
        return self.vs_previous

    @property
    def baseline_gain(self) -> Ratio:
        """The gain over the baseline, which every step after the baseline has."""
        if self.vs_baseline is None:
            raise ValueError(f"step {self.step} is the baseline: no gain over itself")
        return self.vs_baseline


@dataclass(frozen=True)
class ExperimentSummary:
    figure: Headline  # what the cells' headline estimates are
    step_names: tuple[str, ...]
    clients: tuple[int, ...]
    cells: tuple[Cell, ...]
    warnings: tuple[str, ...]
    planned: int
    finished: int
    durability: tuple[Durability | None, ...] = ()  # per step, from its crash tests; None: not crash-tested

    def cell(self, step: int, clients: int) -> Cell:
        return next(c for c in self.cells if c.step == step and c.clients == clients)

    def step_durability(self, step: int) -> Durability | None:
        return self.durability[step] if step < len(self.durability) else None

    @property
    def crash_tested(self) -> bool:
        """Whether any step was crash-tested: tables show a durability column only then."""
        return any(found is not None for found in self.durability)

    @property
    def significant_steps(self) -> int:
        return sum(1 for step in range(1, len(self.step_names))
                   if any(c.vs_previous and c.vs_previous.verdict in SIGNIFICANT
                          for c in self.cells if c.step == step))

    def headline(self) -> str:
        """E.g. "load time -91 %, tpmC +84 % from baseline, 5 of 7 steps significant", then the final step's
        durability class when it was crash-tested."""
        final = self.cell(len(self.step_names) - 1, max(self.clients))
        parts = []
        if final.load_vs_baseline and not math.isnan(final.load_vs_baseline.ratio):
            parts.append(f"load time {final.load_vs_baseline.change_percent:+.0f} %")
        if final.vs_baseline and not math.isnan(final.vs_baseline.ratio):
            parts.append(f"{self.figure.name} {final.vs_baseline.change_percent:+.0f} % from baseline")
        steps = len(self.step_names) - 1
        parts.append(f"{self.significant_steps} of {steps} step{'s' if steps != 1 else ''} significant")
        tested = self.step_durability(len(self.step_names) - 1)
        if tested is not None:  # a gain bought with lost commits is read with its price
            parts.append(f"final step {tested.durability_class}")
        return ", ".join(parts)


def summarise(figure: Headline, step_names: Sequence[str], clients: Sequence[int], planned: int,
              rows: Sequence[RunRow], crash_tests: Sequence[CrashTestRecord] = ()) -> ExperimentSummary:
    headline = {(s, c): _values(rows, s, c, lambda f: f.headline) for s in range(len(step_names)) for c in clients}
    loads = {s: [r.load_seconds for r in rows if r.step == s and r.loaded_in_run and r.load_seconds is not None
                 and r.status is RunStatus.COMPLETE] for s in range(len(step_names))}
    cells = tuple(_cell(figure, s, c, rows, headline, loads) for s in range(len(step_names)) for c in clients)
    finished = sum(1 for r in rows if r.status in (RunStatus.COMPLETE, RunStatus.FAILED))
    return ExperimentSummary(figure, tuple(step_names), tuple(clients), cells, tuple(_warnings(rows)), planned,
                             finished, durability_by_step(crash_tests, len(step_names)))


def _values(rows: Sequence[RunRow], step: int, clients: int, pick) -> list[float]:
    return [float(pick(r.figures)) for r in rows
            if r.step == step and r.clients == clients and r.status is RunStatus.COMPLETE and r.figures]


def _cell(figure: Headline, step: int, clients: int, rows: Sequence[RunRow], headline: Mapping,
          loads: Mapping) -> Cell:
    mine = [r for r in rows if r.step == step and r.clients == clients]
    p90 = _values(rows, step, clients, lambda f: _p90(f, figure.transaction))
    return Cell(
        step, clients, estimate(headline[step, clients]),
        estimate(_values(rows, step, clients, lambda f: f.committed)), estimate(p90), estimate(loads[step]),
        tuple(r.run_id for r in mine), sum(1 for r in mine if r.status is RunStatus.FAILED),
        compare(headline[step - 1, clients], headline[step, clients]) if step else None,
        compare(headline[0, clients], headline[step, clients]) if step else None,
        compare(loads[0], loads[step], higher_is_better=False) if step else None,
    )


def _p90(figures: RunFigures, name: str) -> float:
    return next((t.latency.p90 for t in figures.transactions if t.name == name), math.nan)


def _warnings(rows: Sequence[RunRow]) -> list[str]:
    warnings = []
    for row in rows:
        if row.figures is None or row.status is not RunStatus.COMPLETE:
            continue
        window = row.figures.window
        warning = steady_state_warning(row.run_id, window_series(row.figures.per_second, window.start, window.end))
        if warning:
            warnings.append(warning)
    return warnings


@dataclass(frozen=True)
class ExperimentReport:
    record: ExperimentRecord
    experiment: Experiment
    summary: ExperimentSummary
    presentation: Presentation  # how the experiment's workload names its figures
    crash_tests: tuple[CrashTestRecord, ...] = ()  # the experiment's, each step's after its measured runs


def stored_model(record: ExperimentRecord) -> Experiment:
    """The experiment as it was resolved when it was planned, from its plan: its file is not read again."""
    if MODEL not in record.plan:  # what api.open_results could not add here (experiment.runner.keep_models)
        raise UserError(f"experiment {record.id} was stored by an older Maximus, which did not keep its resolved "
                        f"settings: read it once on a machine where its engine{_engine_named(record)} runs, which "
                        "keeps them")
    return model_from_data(record.plan[MODEL])


def stored_reading(record: ExperimentRecord) -> WorkloadReading:
    """How the experiment's runs are read together, as kept with its plan (``experiment.runner.reading``)."""
    if READING not in record.plan:  # its workload is not known here (experiment.runner.keep_models)
        raise UserError(f"experiment {record.id} was stored by an older Maximus, which did not keep how to read its "
                        f"runs, and this Maximus does not know its workload")
    return WorkloadReading.from_data(record.plan[READING])


def _engine_named(record: ExperimentRecord) -> str:
    try:
        return f" ({tomllib.loads(record.source_text).get('engine', 'sqlite')})"
    except tomllib.TOMLDecodeError:
        return ""


def analyse_experiment(store: ResultsStore, experiment_id: int) -> ExperimentReport:
    """Per step and client count: estimates over repeats, gains, verdicts; from the stored raw samples. Per step,
    its durability, from its crash tests."""
    record = store.experiment(experiment_id)
    experiment = stored_model(record)
    reading = stored_reading(record)
    planned = {run.key: run for run in from_data(record.plan["runs"])}
    rows = []
    for run in store.runs(experiment_id):
        if run.plan_key not in planned:
            continue
        headline = reading.headline
        figures = (run_figures(store.samples(run.id), run.window, reading.reported_transactions, headline.transaction,
                               headline.per_seconds, store.latency_histograms(run.id))
                   if run.status is RunStatus.COMPLETE else None)
        key = planned[run.plan_key]
        rows.append(RunRow(run.id, key.step, key.clients, run.status, run.load_seconds, run.loaded_in_run, figures))
    crash_tests = store.crash_tests(experiment_id)
    summary = summarise(reading.headline, [s.name for s in experiment.steps], experiment.clients, len(planned), rows,
                        crash_tests)
    return ExperimentReport(record, experiment, summary, reading.presentation, tuple(crash_tests))
