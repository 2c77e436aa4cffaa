"""Runs an experiment's plan, storing each run as it ends; resumes where a stopped experiment left off.

A run that completed or failed is never run again; a run that was interrupted, or left ``running`` by
a runner that was killed, is run again. A failing run is stored with its reason and the experiment
goes on.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Protocol

from maximus import api
from maximus.driver.scheduler import Observer
from maximus.errors import MaximusError, UserError, cause
from maximus.experiment.loader import load_experiment, parse_experiment
from maximus.experiment.model import Experiment
from maximus.experiment.plan import PlannedRun, from_data, plan, to_data
from maximus.records import RunStatus
from maximus.store import ResultsStore

FINISHED = (RunStatus.COMPLETE, RunStatus.FAILED)


class ExperimentObserver(Protocol):
    def run_starting(self, position: int, total: int, planned: PlannedRun) -> Observer | None: ...

    def run_finished(self, planned: PlannedRun, run_id: int | None, error: str | None) -> None: ...

    def note(self, message: str) -> None: ...


def start(path: Path, workdir: Path, results: Path, observer: ExperimentObserver,
          overrides: Callable[[Experiment], Experiment] | None = None) -> int:
    """Validate the file, store the experiment and its plan, and run it. Returns the experiment's id."""
    experiment = load_experiment(path)
    if overrides:
        experiment = overrides(experiment)
    runs = plan(experiment)
    store = ResultsStore(results)
    try:
        experiment_id = store.create_experiment(experiment.name, str(path), Path(path).read_text(),
                                                {"runs": to_data(runs), "experiment": _as_data(experiment)})
    finally:
        store.close()
    execute(experiment_id, experiment, runs, workdir, results, observer)
    return experiment_id


def resume(experiment_id: int | None, workdir: Path, results: Path, observer: ExperimentObserver) -> int:
    """Run what is left of a stopped experiment (the newest unfinished one by default)."""
    store = ResultsStore(results)
    try:
        record = store.experiment(experiment_id) if experiment_id else _newest_unfinished(store)
        stale = store.abandon_stale_runs(record.id)
    finally:
        store.close()
    if stale:
        observer.note(f"{stale} run(s) left running by a stopped runner were marked interrupted and will run again")
    experiment = stored_experiment(record)
    execute(record.id, experiment, from_data(record.plan["runs"]), workdir, results, observer)
    return record.id


def stored_experiment(record) -> Experiment:
    """The experiment exactly as it was planned: parsed from the stored text, with stored overrides."""
    experiment = parse_experiment(record.source_text, Path(record.source_path))
    stored = record.plan.get("experiment", {})
    return _apply(experiment, stored) if stored else experiment


def _newest_unfinished(store: ResultsStore):
    unfinished = [e for e in store.experiments() if e.status != "complete"]
    if not unfinished:
        raise UserError("no unfinished experiment to resume (see `maximus experiment list`)")
    return unfinished[-1]


def execute(experiment_id: int, experiment: Experiment, runs: list[PlannedRun], workdir: Path, results: Path,
            observer: ExperimentObserver) -> None:
    done = _finished_keys(results, experiment_id)
    try:
        for position, planned in enumerate(runs, start=1):
            if planned.key not in done:
                _execute_one(experiment_id, experiment, planned, (position, len(runs)), workdir, results, observer)
    except KeyboardInterrupt:
        observer.note(f"experiment {experiment_id} stopped: `maximus experiment resume {experiment_id}` runs what "
                      "is left")
        raise
    store = ResultsStore(results)
    try:
        store.finish_experiment(experiment_id)
    finally:
        store.close()


def _execute_one(experiment_id: int, experiment: Experiment, planned: PlannedRun, position: tuple[int, int],
                 workdir: Path, results: Path, observer: ExperimentObserver) -> None:
    """One planned run, stored complete, failed (the experiment goes on) or interrupted (it stops)."""
    _hygiene(experiment, observer)
    options = _options(experiment, planned, workdir, results, experiment_id)
    live = observer.run_starting(*position, planned)
    try:
        outcome = api.run_benchmark(options, live)
    except MaximusError as error:  # stored with its reason; the experiment goes on
        observer.run_finished(planned, _failed(options, str(error)), str(error))
        return
    if outcome.status is RunStatus.INTERRUPTED:
        raise KeyboardInterrupt
    failed = outcome.status is RunStatus.FAILED
    observer.run_finished(planned, outcome.run_id, cause(outcome.result.errors) if failed else None)


def _finished_keys(results: Path, experiment_id: int) -> set[str]:
    store = ResultsStore(results)
    try:
        return {r.plan_key for r in store.runs(experiment_id) if r.status in FINISHED and r.plan_key}
    finally:
        store.close()


def _failed(options: api.BenchmarkOptions, reason: str) -> int:
    store = ResultsStore(options.results)
    try:
        recorded = [r for r in store.runs(options.experiment_id) if r.plan_key == options.plan_key
                    and r.status is RunStatus.FAILED]
    finally:
        store.close()
    return recorded[-1].id if recorded else api.record_failed_run(options, reason)


def _options(experiment: Experiment, planned: PlannedRun, workdir: Path, results: Path,
             experiment_id: int) -> api.BenchmarkOptions:
    workload = experiment.workload
    return api.BenchmarkOptions(
        engine=experiment.engine, knobs=planned.knobs, warehouses=workload.warehouses, terminals=planned.clients,
        warmup_s=workload.warmup_s, duration_s=workload.duration_s, seed=planned.seed,
        keying_and_think=workload.keying_and_think, mix=workload.mix, workdir=workdir, results=results,
        rebuild=planned.build, restore=experiment.hygiene.restore, database=planned.database,
        experiment_id=experiment_id, plan_key=planned.key, max_failed_percent=workload.max_failed_percent)


def _hygiene(experiment: Experiment, observer: ExperimentObserver) -> None:
    if not experiment.hygiene.drop_caches:
        return
    if os.geteuid() != 0:
        observer.note("drop_caches needs root: the OS page cache was not dropped before this run")
        return
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as control:
        control.write("3\n")


def _as_data(experiment: Experiment) -> dict:
    """What the command line may override (e.g. the demo's duration), so a resume plans the same runs."""
    return {"duration_s": experiment.workload.duration_s, "warmup_s": experiment.workload.warmup_s}


def _apply(experiment: Experiment, stored: dict) -> Experiment:
    workload = replace(experiment.workload, duration_s=stored["duration_s"], warmup_s=stored["warmup_s"])
    return replace(experiment, workload=workload)

