"""An experiment's figures per step and load level (a client count, and in a rate sweep a rate), gains over the
previous step and the baseline at the same level."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from maximus.analysis.compare import Estimate, Ratio, Verdict, compare, estimate
from maximus.analysis.durability import Durability, durability_by_step
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.analysis.steady import steady_state_warning, window_series
from maximus.errors import UserError
from maximus.experiment.model import MODEL, READING, Experiment
from maximus.experiment.model import from_data as model_from_data
from maximus.experiment.plan import Level, from_data, levels
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
    rate: float | None = None  # its planned rate in a rate sweep; None: closed loop

    @property
    def level(self) -> Level:
        return Level(self.clients, self.rate)


@dataclass(frozen=True)
class Cell:
    """A step's runs at one load level, its repeats: in a rate sweep a cell is one rate, never several averaged."""

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
    rate: float | None  # a rate sweep's rate, transactions per second; None: closed loop

    @property
    def level(self) -> Level:
        return Level(self.clients, self.rate)

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
    levels: tuple[Level, ...]  # each step's cells, in the plan's order (``experiment.plan.levels``)
    cells: tuple[Cell, ...]
    warnings: tuple[str, ...]
    planned: int
    finished: int
    durability: tuple[Durability | None, ...] = ()  # per step, from its crash tests; None: not crash-tested

    def cell(self, step: int, clients: int, rate: float | None = None) -> Cell:
        """The step's cell at ``clients`` (and in a rate sweep at ``rate``: a sweep has no cell without one)."""
        wanted = Level(clients, rate)
        found = next((c for c in self.cells if c.step == step and c.level == wanted), None)
        if found is None:
            raise KeyError(f"no cell of step {step} at {wanted.long_label} (levels: "
                           f"{', '.join(level.label for level in self.levels)})")
        return found

    def level_cell(self, step: int, level: Level) -> Cell:
        return self.cell(step, level.clients, level.rate)

    @property
    def highest_level(self) -> Level:
        """The most clients, and of them the highest rate: where the summary line compares the steps."""
        return max(self.levels, key=lambda level: (level.clients, level.rate or 0.0))

    @property
    def swept(self) -> bool:
        """Whether the levels are rates of a sweep: the tables then name each level's rate."""
        return any(level.rate is not None for level in self.levels)

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
        durability class when it was crash-tested. The gains are the final step's at the highest level."""
        final = self.level_cell(len(self.step_names) - 1, self.highest_level)
        parts = []
        if final.load_vs_baseline and not math.isnan(final.load_vs_baseline.ratio):
            parts.append(f"load time {final.load_vs_baseline.change_percent:+.0f} %")
        if final.vs_baseline and not math.isnan(final.vs_baseline.ratio):
            at = f" at {final.level.long_label}" if self.swept else ""  # a sweep's gain depends on the rate
            parts.append(f"{self.figure.name} {final.vs_baseline.change_percent:+.0f} % from baseline{at}")
        steps = len(self.step_names) - 1
        parts.append(f"{self.significant_steps} of {steps} step{'s' if steps != 1 else ''} significant")
        tested = self.step_durability(len(self.step_names) - 1)
        if tested is not None:  # a gain bought with lost commits is read with its price
            parts.append(f"final step {tested.durability_class}")
        return ", ".join(parts)


def summarise(figure: Headline, step_names: Sequence[str], levels: Sequence[Level], planned: int,
              rows: Sequence[RunRow], crash_tests: Sequence[CrashTestRecord] = ()) -> ExperimentSummary:
    """Each step's cell at each level, with its gains over the previous step and the baseline at the same level."""
    steps = range(len(step_names))
    headline = {(s, level): _values(rows, s, level, lambda f: f.headline) for s in steps for level in levels}
    loads = {s: [r.load_seconds for r in rows if r.step == s and r.loaded_in_run and r.load_seconds is not None
                 and r.status is RunStatus.COMPLETE] for s in steps}
    cells = tuple(_cell(figure, s, level, rows, headline, loads) for s in steps for level in levels)
    finished = sum(1 for r in rows if r.status in (RunStatus.COMPLETE, RunStatus.FAILED))
    return ExperimentSummary(figure, tuple(step_names), tuple(levels), cells, tuple(_warnings(rows)), planned,
                             finished, durability_by_step(crash_tests, len(step_names)))


def _values(rows: Sequence[RunRow], step: int, level: Level, pick: Callable[[RunFigures], float]) -> list[float]:
    return [float(pick(r.figures)) for r in rows
            if r.step == step and r.level == level and r.status is RunStatus.COMPLETE and r.figures]


def _cell(figure: Headline, step: int, level: Level, rows: Sequence[RunRow], headline: Mapping,
          loads: Mapping) -> Cell:
    mine = [r for r in rows if r.step == step and r.level == level]
    p90 = _values(rows, step, level, lambda f: _p90(f, figure.transaction))
    return Cell(
        step, level.clients, estimate(headline[step, level]),
        estimate(_values(rows, step, level, lambda f: f.committed)), estimate(p90), estimate(loads[step]),
        tuple(r.run_id for r in mine), sum(1 for r in mine if r.status is RunStatus.FAILED),
        compare(headline[step - 1, level], headline[step, level]) if step else None,
        compare(headline[0, level], headline[step, level]) if step else None,
        compare(loads[0], loads[step], higher_is_better=False) if step else None,
        level.rate,
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


def analyse_experiment(store: ResultsStore, experiment_id: int,
                       analysed: Mapping[int, tuple[WorkloadReading | None, RunFigures]] | None = None
                       ) -> ExperimentReport:
    """Per step and load level: estimates over repeats, gains, verdicts; from the stored raw samples. Per step, its
    durability, from its crash tests. ``analysed``: runs whose figures the caller has computed already, with the
    reading they were computed by (``analysis.bundle``, which analyses every run whole: reading each run's samples
    twice took half of an export's time); they are used where that reading is the experiment's."""
    analysed = analysed or {}
    record = store.experiment(experiment_id)
    experiment = stored_model(record)
    reading = stored_reading(record)
    planned = {run.key: run for run in from_data(record.plan["runs"])}
    rows = []
    for run in store.runs(experiment_id):
        if run.plan_key not in planned:
            continue
        headline = reading.headline
        known = analysed.get(run.id)
        figures = (None if run.status is not RunStatus.COMPLETE else known[1] if known and known[0] == reading
                   else run_figures(store.sample_columns(run.id), run.window, reading.reported_transactions,
                                    headline.transaction, headline.per_seconds, store.latency_histograms(run.id)))
        key = planned[run.plan_key]
        rows.append(RunRow(run.id, key.step, key.clients, run.status, run.load_seconds, run.loaded_in_run, figures,
                           key.rate))
    crash_tests = store.crash_tests(experiment_id)
    summary = summarise(reading.headline, [s.name for s in experiment.steps], levels(experiment), len(planned), rows,
                        crash_tests)
    return ExperimentReport(record, experiment, summary, reading.presentation, tuple(crash_tests))
