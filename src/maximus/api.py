"""Maximus as Python: the verbs the command line calls, and nothing it calls lies below them.

Build a database, check it, run a benchmark (``load``, ``check``, ``run``); run and resume experiments
(``run_experiment``, ``resume_experiment``, ``run_demo``); read results back analysed (``list_runs``,
``report_of_run``, ``list_experiments``, ``show_experiment``, ``compare``, ``crash_tests``) and write them out
(``report``, ``export``, ``export_crash_tests``); the machine's knobs (``os_knobs``, ``restore_system``); what the
command line offers (``engines``, ``connection_options``, ``workload_options``). Each verb opens what it needs (the
results database, an engine) and closes it; the work is in the modules below.

Scripts that compose a run of their own (``bench/``, the tests) also find its parts here: ``make_engine``,
``running``, ``load_database``, ``prepare_database``, ``run_benchmark``, ``analyse_run`` and the rest of
``__all__``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO

from maximus import engines as engine_registry
from maximus import export as exporting
from maximus import system
from maximus.analysis.bundle import ExperimentData, RunData, gather_experiment, gather_run
from maximus.analysis.experiment import ExperimentReport, analyse_experiment
from maximus.analysis.run import RunReport, analyse_run, listed_runs, run_column
from maximus.analysis.targets import Comparison, compare_targets
from maximus.database import (Build, LoadProgress, PreparedDatabase, check_database, default_workdir,
                              load_database, locked, make_engine, prepare_database, running)
from maximus.driver.scheduler import Observer
from maximus.engines import ConnectionOption
from maximus.errors import UserError
from maximus.experiment import runner
from maximus.experiment.model import Experiment
from maximus.experiment.plan import PlannedRun
from maximus.experiment.runner import ExperimentObserver, keep_models
from maximus.knobs.registry import parse_assignments
from maximus.records import CheckResult, CrashMode, CrashTest, CrashTestRecord, ExperimentRecord, RunRecord, RunStatus
from maximus.crashtest import CrashObserver, CrashTestOptions
from maximus.crashtest import crash_test as run_crash_test
from maximus.runs import (BenchmarkOptions, RunOutcome, deferred_workers, failure_excess, homes_loader,
                          keep_engine_facts, keep_readings, placed_client_hosts, record_failed_run, run_benchmark,
                          terminal_hosting)
from maximus.store import ResultsStore, default_results_path
from maximus.system import Layout
from maximus.system import recover as recover_system
from maximus.system.journal import Entry
from maximus.workloads import WORKLOADS, workload
from maximus.workloads.base import CommandLineSetting, Presentation, SettingError

__all__ = [
    # the verbs
    "check", "compare", "connection_options", "crash_test", "crash_tests", "default_settings", "engines", "export",
    "export_crash_tests", "last_complete_run",
    "list_experiments", "list_runs", "load", "os_knobs", "parse_knobs", "report", "report_of_run", "restore_system",
    "resume_experiment", "run", "run_demo", "run_experiment", "show_experiment", "system_journal", "workload_options",
    # what they take and give
    "BenchmarkOptions", "CheckResult", "CommandLineSetting", "Comparison", "ConnectionOption", "CrashMode",
    "CrashObserver", "CrashTest", "CrashTestOptions", "CrashTestRecord", "ExperimentData",
    "ExperimentObserver", "ExperimentRecord", "Loaded", "LoadProgress", "Observer", "OsKnobNow", "PlannedRun",
    "Presentation", "RunOutcome", "RunRecord", "RunReport", "SettingError", "default_results_path",
    "default_workdir", "open_results", "recover_system",
    # the parts, for scripts that compose a run of their own
    "Build", "ExperimentReport", "Layout", "PreparedDatabase", "ResultsStore", "analyse_experiment", "analyse_run",
    "check_database", "compare_targets", "deferred_workers", "failure_excess", "listed_runs", "load_database",
    "locked", "make_engine", "prepare_database", "record_failed_run", "run_benchmark", "run_column", "running",
    "terminal_hosting",
]


# What the command line offers

def engines() -> tuple[str, ...]:
    """The registered engines' names, in the registry's order."""
    return tuple(engine_registry.ENGINES)


def connection_options() -> list[ConnectionOption]:
    """Every registered engine's connection options (``Engine.connection_options``), each name once."""
    return engine_registry.connection_options()


def workload_options() -> dict[str, tuple[CommandLineSetting, ...]]:
    """Each registered workload's settings as the command line offers them (``Workload.options``)."""
    return {name: kind.options for name, kind in WORKLOADS.items()}


def default_settings(workload_name: str) -> dict[str, Any]:
    """The settings a workload takes when none is given."""
    return workload(workload_name).settings({}).to_mapping()


def parse_knobs(pairs: Iterable[str]) -> dict[str, str]:
    """Knob settings given as ``NAME=VALUE``, as ``BenchmarkOptions.knobs`` takes them."""
    return parse_assignments(pairs)


# A database and one run

@dataclass(frozen=True)
class Loaded:
    """What ``load`` built: the workload's scale as reports name it, its rows, the time the load took."""

    scale: str
    rows: int
    seconds: float
    path: Path
    host_load_s: tuple[float, ...] = ()  # with client hosts: each host's load of its own homes


def load(options: BenchmarkOptions, progress: LoadProgress | None = None) -> Loaded:
    """Build the database of ``options`` from scratch (timed) and keep its pristine copy, with the operating-system
    knobs of ``options`` in force; a working copy is left to look at."""
    options.validate()
    build = options.build
    if Layout.of(options.os_knobs):
        raise UserError("storage.* knobs put a run's database on a file system made for it and removed after it: "
                        "use `maximus run` (its load is timed on the layout) or an experiment")
    named = make_engine(options.engine, options.workdir, build, options.engine_knobs, options.database,
                        options.connection)
    with system.changed(options.os_knobs, named, lambda workdir: nullcontext(named), options.system_changes) as machine:
        target = machine.engine
        with running(target):
            machine.server_started()
            with machine.working(), placed_client_hosts(options) as placed:  # as a run's build
                result = load_database(target, build, options.seed, progress, homes_loader(placed))
            if not target.exists():
                target.restore()  # a working copy to look at, as `load` always left
    return Loaded(build.workload.presentation(build.settings).scale, sum(result.rows.values()), result.seconds,
                  target.workdir / target.database, tuple(placed.load_s or ()) if placed else ())


def check(options: BenchmarkOptions, announce: Callable[[str], None] = lambda message: None) -> list[CheckResult]:
    """The workload's consistency conditions on the database of ``options`` as the last run left it."""
    build = options.build
    target = make_engine(options.engine, options.workdir, build, options.engine_knobs, options.database,
                         options.connection)
    return check_database(target, build.workload, announce=announce)


def run(options: BenchmarkOptions, observer: Observer | None = None,
        progress: LoadProgress | None = None) -> RunOutcome:
    """One measured run (``runs.run_benchmark``): load if needed, restore the pristine data, drive, store, check."""
    return run_benchmark(options, observer, progress)


def crash_test(options: CrashTestOptions, observer: CrashObserver | None = None,
               progress: LoadProgress | None = None) -> list[int]:
    """Crash the configuration ``options`` names under its terminals, ``options.crashes`` times, and verify what
    came back (``maximus.crashtest``); the stored crash tests' numbers."""
    return run_crash_test(options, observer, progress)


# Experiments

def run_experiment(file: Path, observer: ExperimentObserver, workdir: Path | None = None,
                   results: Path | None = None, yes: bool = False, ray_address: str | None = None) -> int:
    """Validate the experiment file, then run every planned run, storing each as it ends; its number.
    ``ray_address``: the Ray cluster whose nodes are the client hosts (the file's ``hosts``)."""
    return runner.start(file, workdir or default_workdir(), results or default_results_path(), observer, yes=yes,
                        ray_address=ray_address)


def resume_experiment(experiment_id: int | None, observer: ExperimentObserver, workdir: Path | None = None,
                      results: Path | None = None, ray_address: str | None = None) -> int:
    """Run what is left of a stopped experiment (the newest unfinished one by default); its number."""
    return runner.resume(experiment_id, workdir or default_workdir(), results or default_results_path(), observer,
                         ray_address)


def run_demo(duration_s: float, observer: ExperimentObserver, workdir: Path | None = None,
             results: Path | None = None, yes: bool = False) -> int:
    """The demo experiment shipped with Maximus, each run measured for ``duration_s``; its number."""
    def measured_for(experiment: Experiment) -> Experiment:
        return replace(experiment, workload=replace(experiment.workload, duration_s=duration_s))

    with resources.as_file(resources.files("maximus.experiment") / "demo.toml") as path:
        return runner.start(path, workdir or default_workdir(), results or default_results_path(), observer,
                            overrides=measured_for, yes=yes)


# Reading results back

def open_results(path: Path | None = None) -> ResultsStore:
    """The results database, each experiment and run in it with what reading it needs (its resolved model, its
    engine's facts, how its workload reads it), added where an older Maximus did not keep it."""
    store = ResultsStore(path or default_results_path())
    keep_models(store)
    keep_engine_facts(store)
    keep_readings(store)
    return store


@contextmanager
def _results(path: Path | None) -> Iterator[ResultsStore]:
    store = open_results(path)
    try:
        yield store
    finally:
        store.close()


def report_of_run(results: Path | None, run_id: int) -> RunReport:
    """One stored run, analysed (``analyse_run``)."""
    with _results(results) as store:
        return analyse_run(store, run_id)


def list_runs(results: Path | None = None) -> list[tuple[RunRecord, Presentation, int]]:
    """Every stored run, how its workload names it, and its headline figure."""
    with _results(results) as store:
        return listed_runs(store)


def last_complete_run(experiment_id: int, results: Path | None = None) -> RunReport | None:
    """The last run of an experiment that completed, analysed; None when none did."""
    with _results(results) as store:
        complete = [r.id for r in store.runs(experiment_id) if r.status is RunStatus.COMPLETE]
        return analyse_run(store, complete[-1]) if complete else None


def list_experiments(results: Path | None = None) -> list[ExperimentRecord]:
    with _results(results) as store:
        return store.experiments()


def show_experiment(experiment_id: int, results: Path | None = None) -> ExperimentData:
    """An experiment with each of its runs, analysed (``gather_experiment``)."""
    with _results(results) as store:
        return gather_experiment(store, experiment_id)


def crash_tests(results: Path | None = None, experiment_id: int | None = None,
                ids: Sequence[int] | None = None) -> list[CrashTestRecord]:
    """The stored crash tests in the order stored: all, an experiment's, or those numbered ``ids``
    (``maximus.report.durability.render_crash_tests`` prints them with each configuration's durability)."""
    with _results(results) as store:
        if experiment_id is not None:
            store.experiment(experiment_id)  # an unknown experiment is an error, not an empty listing
        return store.crash_tests(experiment_id, ids)


def export_crash_tests(results: Path | None = None, experiment_id: int | None = None,
                       ids: Sequence[int] | None = None, output_format: str = "json",
                       output: Path | None = None) -> str:
    """Crash tests (as ``crash_tests`` chooses them) as JSON, or as CSV a row per test; written to ``output`` when
    given."""
    text = exporting.crash_tests_text(crash_tests(results, experiment_id, ids), output_format)
    if output is not None:
        _write(output, text)
    return text


def compare(a: str, b: str, experiment_id: int | None = None, clients: int | None = None,
            results: Path | None = None, rate: float | None = None) -> Comparison:
    """The headline figure of two runs (by number), or of two steps of an experiment (``compare_targets``)."""
    with _results(results) as store:
        return compare_targets(store, a, b, experiment_id, clients, rate)


def report(experiment_id: int | None = None, run_id: int | None = None, output: Path | None = None,
           results: Path | None = None) -> Path:
    """Write one self-contained HTML report of an experiment (the newest by default) or of a run; where it went:
    ``output``, or ./maximus-report-<experiment>.html (./maximus-report-run-<run>.html)."""
    from maximus.report import html  # plotly: a quarter of a second that only a report needs

    data = _gathered(results, experiment_id, run_id)
    if isinstance(data, RunData):
        path, page = output or Path(f"maximus-report-run-{data.id}.html"), html.run_page(data)
    else:
        path, page = output or Path(f"maximus-report-{data.report.record.id}.html"), html.experiment_page(data)
    _write(path, page)
    return path


def export(experiment_id: int | None = None, run_id: int | None = None, output_format: str = "json",
           table: str = "runs", output: Path | None = None, results: Path | None = None) -> str:
    """Every figure of an experiment (the newest by default) or of a run as JSON, or one CSV ``table`` of them
    (``export.table_text``); written to ``output`` when given."""
    data = _gathered(results, experiment_id, run_id)
    text = exporting.document_text(data) if output_format == "json" else exporting.table_text(data, table)
    if output is not None:
        _write(output, text)
    return text


def exported_runs(experiment_id: int | None = None, run_id: int | None = None,
                  results: Path | None = None) -> list[int]:
    """The runs an export names: run ``run_id``, or every run of an experiment (the newest by default)."""
    _one_target(experiment_id, run_id)
    with _results(results) as store:
        if run_id is not None:
            return [store.run(run_id).id]
        experiment = store.experiment(experiment_id if experiment_id is not None else _newest(store))
        return [run.id for run in store.runs(experiment.id)]


def export_samples(out: TextIO, run_ids: Sequence[int], results: Path | None = None) -> None:
    """The raw samples of the runs ``run_ids`` as CSV into ``out`` (``export.write_samples``): a run's samples read
    at a time, its rows written a slice at a time."""
    with _results(results) as store:
        exporting.write_samples(out, ((run, store.sample_columns(run, with_errors=True)) for run in run_ids))


def _one_target(experiment_id: int | None, run_id: int | None) -> None:
    if run_id is not None and experiment_id is not None:
        raise UserError("give an experiment number or --run N, not both")


def _gathered(results: Path | None, experiment_id: int | None, run_id: int | None) -> ExperimentData | RunData:
    _one_target(experiment_id, run_id)
    with _results(results) as store:
        if run_id is not None:
            return gather_run(store, run_id)
        return gather_experiment(store, experiment_id if experiment_id is not None else _newest(store))


def _newest(store: ResultsStore) -> int:
    experiments = store.experiments()
    if not experiments:
        raise UserError(f"no experiment in {store.path}: name a run with --run N, or run an experiment first")
    return experiments[-1].id


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


# The machine

@dataclass(frozen=True)
class OsKnobNow:
    """An operating-system knob and its value now: None when it is set per run, "" when this kernel does not
    offer it."""

    name: str
    description: str
    values: str  # the values it takes
    advice: str
    unit: str
    risk: str
    now: str | None


def os_knobs(workdir: Path | None = None) -> list[OsKnobNow]:
    """Every operating-system knob with its value now (the block.* ones of the disk holding ``workdir``)."""
    values = system.current_values(workdir or default_workdir())
    return [OsKnobNow(knob.name, knob.description, knob.type.describe(), knob.advice, getattr(knob, "unit", ""),
                      getattr(knob, "risk", ""), values.get(knob.name)) for knob in system.OS]


def system_journal() -> Path | None:
    """The journal of changes a Maximus made to the machine, while it lists any."""
    path = system.journal_path()
    return path if path.exists() else None


def restore_system() -> list[Entry]:
    """Put back what a Maximus that did not finish left changed (as root); the changes put back."""
    if system_journal() and os.geteuid() != 0:
        raise UserError("putting back the operating-system knobs needs root: run maximus system restore as root")
    changes = recover_system(strict=True)
    if system_journal():
        raise UserError("the Maximus that changed the machine still runs: it puts everything back itself")
    return changes
