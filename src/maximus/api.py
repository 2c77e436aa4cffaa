"""The plain-Python verbs behind the CLI, in one place: build a database and check it (``database``), run a
benchmark (``runs``), read the results back analysed (``analysis``). A façade: the work is in those modules."""

from __future__ import annotations

from pathlib import Path

from maximus.analysis.experiment import ExperimentReport, analyse_experiment
from maximus.analysis.run import RunReport, analyse_run, listed_runs, run_column
from maximus.analysis.targets import Comparison, compare_targets
from maximus.database import (Build, LoadProgress, PreparedDatabase, check_database, default_workdir,
                              load_database, locked, make_engine, prepare_database, running)
from maximus.experiment.runner import keep_models
from maximus.runs import (BenchmarkOptions, RunOutcome, deferred_workers, failure_excess, keep_engine_facts,
                          keep_readings,
                          record_failed_run, run_benchmark, terminal_hosting)
from maximus.store import ResultsStore, default_results_path
from maximus.system import Layout
from maximus.system import applied as system_applied
from maximus.system import recover as recover_system

__all__ = [
    "BenchmarkOptions", "Build", "Comparison", "ExperimentReport", "Layout", "LoadProgress", "PreparedDatabase",
    "ResultsStore",
    "RunOutcome", "RunReport", "analyse_experiment", "analyse_run", "check_database", "compare_targets",
    "default_results_path", "default_workdir", "deferred_workers", "failure_excess", "listed_runs", "load_database",
    "locked",
    "make_engine", "open_results", "prepare_database", "record_failed_run", "report_of_run", "run_benchmark",
    "recover_system", "run_column", "running", "system_applied", "terminal_hosting",
]


def open_results(path: Path | None = None) -> ResultsStore:
    """The results database, each experiment and run in it with what reading it needs (its resolved model, its
    engine's facts, how its workload reads it), added where an older Maximus did not keep it."""
    store = ResultsStore(path or default_results_path())
    keep_models(store)
    keep_engine_facts(store)
    keep_readings(store)
    return store


def report_of_run(results: Path, run_id: int) -> RunReport:
    """``analyse_run`` on the results database at ``results``, opened and closed around it."""
    store = open_results(results)
    try:
        return analyse_run(store, run_id)
    finally:
        store.close()
