"""What a report or an export needs, read from the results store in one go.

A ``RunData`` is one stored run analysed (``analysis.run.analyse_run``) with its raw monitoring samples
and its place in an experiment's plan; an ``ExperimentData`` is ``analysis.experiment.analyse_experiment``
plus every run of the experiment as ``RunData``. Both are frozen and hold no store handle, so rendering and
exporting are pure functions of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from maximus.analysis.compare import Estimate, estimate
from maximus.analysis.device import DeviceCell, device_cell
from maximus.analysis.experiment import ExperimentReport, analyse_experiment
from maximus.analysis.rate_curve import RateCurve, rate_curves, rate_run
from maximus.analysis.run import RunReport, analyse_run
from maximus.experiment.plan import Level, PlannedRun, from_data
from maximus.records import RunStatus
from maximus.records import MetricSample
from maximus.store import ResultsStore


@dataclass(frozen=True)
class RunData:
    """One run, analysed, with its raw metric samples; ``planned`` is None for a run outside experiments."""

    report: RunReport
    metrics: tuple[MetricSample, ...]
    planned: PlannedRun | None = None

    @property
    def id(self) -> int:
        return self.report.record.id

    @property
    def complete(self) -> bool:
        return self.report.record.status is RunStatus.COMPLETE

    @property
    def label(self) -> str:
        """E.g. "run 12 · 2 clients · repeat 1", "run 12 · 2 clients @ 500/s · repeat 1" in a rate sweep (or "run 12 ·
        2 terminals" outside an experiment)."""
        if self.planned is None:
            return f"run {self.id} · {_plural(self.report.record.spec.terminals, 'terminal')}"
        return f"run {self.id} · {self.planned.level.long_label} · repeat {self.planned.repeat}"

    @property
    def long_label(self) -> str:
        """The label with the step's name, e.g. "run 12 · wal · 2 clients · repeat 1"."""
        if self.planned is None:
            return self.label
        return (f"run {self.id} · {self.planned.step_name} · {self.planned.level.long_label} · "
                f"repeat {self.planned.repeat}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class ExperimentData:
    report: ExperimentReport
    runs: tuple[RunData, ...]  # in the order they were stored
    tps: Mapping[tuple[int, Level], Estimate]  # (step, level) -> transactions per second over repeats
    # (step, level) -> the cell against its device, for the cells whose runs fio measured (storage-bound ones)
    device: Mapping[tuple[int, Level], DeviceCell] = field(default_factory=dict)
    rate_curves: tuple[RateCurve, ...] = ()  # a rate sweep's, per step and client count (``analysis.rate_curve``)

    def cell_runs(self, step: int, level: Level) -> list[RunData]:
        """The runs of the step's cell at ``level``: its repeats."""
        return [r for r in self.runs if r.planned and r.planned.step == step and r.planned.level == level]

    def step_runs(self, step: int) -> list[RunData]:
        return [r for r in self.runs if r.planned and r.planned.step == step]


def gather_run(store: ResultsStore, run_id: int, planned: PlannedRun | None = None) -> RunData:
    return RunData(analyse_run(store, run_id), tuple(store.metric_samples(run_id)), planned)


def gather_experiment(store: ResultsStore, experiment_id: int) -> ExperimentData:
    """The experiment's summary and every run that belongs to its plan (raises UserError if unknown)."""
    planned = {run.key: run for run in from_data(store.experiment(experiment_id).plan["runs"])}
    runs = tuple(gather_run(store, r.id, planned[r.plan_key]) for r in store.runs(experiment_id)
                 if r.plan_key in planned)
    report = analyse_experiment(store, experiment_id, {r.id: (r.report.record.reading, r.report.figures) for r in runs})
    tps = {(c.step, c.level): estimate([r.report.figures.tpm / 60 for r in runs if r.complete and r.planned
                                        and r.planned.step == c.step and r.planned.level == c.level])
           for c in report.summary.cells}
    return ExperimentData(report, runs, tps, device_cells(report, runs), sweep_curves(report, runs))


def device_cells(report: ExperimentReport, runs: Sequence[RunData]) -> dict[tuple[int, Level], DeviceCell]:
    """Each cell whose complete runs were held against fio, in the summary's order of cells."""
    cells = {}
    for c in report.summary.cells:
        compared = [(r.id, r.report.device) for r in runs if r.complete and r.report.device and r.planned
                    and r.planned.step == c.step and r.planned.level == c.level]
        if cell := device_cell(c.step, c.level, compared):
            cells[c.step, c.level] = cell
    return cells


def sweep_curves(report: ExperimentReport, runs: Sequence[RunData]) -> tuple[RateCurve, ...]:
    """The curve of each step and client count of a rate sweep; none for an experiment without rates."""
    swept = [rate_run(r.id, r.planned, r.report) for r in runs if r.planned]
    experiment = report.experiment
    return rate_curves([run for run in swept if run], report.summary.step_names, experiment.clients,
                       experiment.rates)


def representative(runs: Sequence[RunData]) -> RunData | None:
    """The complete run with the median headline figure (the lower one of an even count); None without one.

    The run table and the per-run charts show one real run per cell rather than averages of
    latencies or CPU shares, which would describe no run that happened.
    """
    complete = sorted((r for r in runs if r.complete), key=lambda r: (r.report.figures.headline, r.id))
    return complete[(len(complete) - 1) // 2] if complete else None
