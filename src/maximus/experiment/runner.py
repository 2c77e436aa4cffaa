"""Runs an experiment's plan, storing each run as it ends; resumes where a stopped experiment left off.

A run that completed or failed is never run again; a run that was interrupted, or left ``running`` by
a runner that was killed, is run again. A failing run is stored with its reason and the experiment
goes on.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Callable, ContextManager, Protocol

from maximus import locks, system
from maximus.driver.scheduler import Observer
from maximus.errors import MaximusError, UserError, cause
from maximus.experiment.loader import load_experiment, stored_experiment, stored_overrides
from maximus.crashtest import CrashTestOptions, crash_test, cycle_seed
from maximus.experiment.model import MODEL, READING, CrashTests, Experiment, to_data
from maximus.experiment.model import from_data as from_model
from maximus.experiment.plan import PlannedRun, estimate, from_data, plan
from maximus.experiment.plan import to_data as plan_data
from maximus.records import CrashMode, RunStatus, WorkloadReading
from maximus.runs import BenchmarkOptions, record_failed_run, run_benchmark
from maximus.store import ResultsStore
from maximus.store.failures import ResultsUnavailable
from maximus.workloads import workload as workload_named

FINISHED = (RunStatus.COMPLETE, RunStatus.FAILED)
# Errors that are not the run's own: the experiment stops (it can be resumed) instead of storing a failed run
NOT_THE_RUNS = (locks.Busy, ResultsUnavailable)


class ExperimentObserver(Protocol):
    def run_starting(self, position: int, total: int, planned: PlannedRun) -> Observer | None: ...

    def run_finished(self, planned: PlannedRun, run_id: int | None, error: str | None) -> None: ...

    def note(self, message: str) -> None: ...


def start(path: Path, workdir: Path, results: Path, observer: ExperimentObserver,
          overrides: Callable[[Experiment], Experiment] | None = None, yes: bool = False,
          ray_address: str | None = None) -> int:
    """Validate the file, store the experiment and its plan, and run it. Returns the experiment's id. A plan
    estimated to take more than a day (``limits.CONFIRM_ABOVE_S``) runs only when ``yes``. ``ray_address``: the Ray
    cluster whose nodes are the client hosts (the file's ``hosts``)."""
    experiment = load_experiment(path)
    if overrides:
        experiment = overrides(experiment)
    _allowed(experiment)
    runs = plan(experiment)
    _hosts_reachable(experiment, runs, ray_address, workdir, results)
    planned = estimate(experiment, scale(experiment))
    planned.confirm(yes, f"experiment {experiment.name!r}")
    observer.note(f"estimated time: {planned.text()}")
    with system.KeptLayouts() as layouts:  # a step's layout, and its pristine copy on it, serve all its runs
        _make_layouts(layouts, experiment, runs, workdir)  # before the experiment is stored
        store = ResultsStore(results)
        try:
            experiment_id = store.create_experiment(experiment.name, str(path), Path(path).read_text(),
                                                    {"runs": plan_data(runs),
                                                     "experiment": stored_overrides(experiment),
                                                     MODEL: to_data(experiment),
                                                     READING: reading(experiment).to_data()})
        finally:
            store.close()
        with running_experiment(results, experiment_id):
            execute(experiment_id, experiment, runs, workdir, results, observer, layouts, ray_address)
    return experiment_id


def _hosts_reachable(experiment: Experiment, runs: list[PlannedRun], ray_address: str | None, workdir: Path,
                     results: Path) -> None:
    """Client hosts need the cluster's address, and the cluster there, before the first run, not at it."""
    if experiment.hosts > 1 and ray_address is None:
        raise UserError(f"the experiment's hosts = {experiment.hosts} runs each run's terminals from the nodes of a "
                        "Ray cluster: give its address, --ray ADDRESS")
    if ray_address is not None and runs:  # its engine, its client knobs, Ray and the cluster: as a run checks them
        _options(experiment, runs[0], workdir, results, 0, ray_address).validate()


def _make_layouts(layouts: system.KeptLayouts, experiment: Experiment, runs: list[PlannedRun], workdir: Path) -> None:
    """The file systems of the steps that ``runs`` visit, made before the first run: one that mkfs or the kernel
    refuses (a mount option, a block size) stops the experiment in one line before anything was measured, not
    after the runs of the steps before it."""
    steps = sorted({planned.step for planned in runs})
    layouts.make_all([system.OS.resolve(system.split(experiment.steps[step].knobs)[1]) for step in steps], workdir)


def resume(experiment_id: int | None, workdir: Path, results: Path, observer: ExperimentObserver,
           ray_address: str | None = None) -> int:
    """Run what is left of a stopped experiment (the newest unfinished one by default); ``ray_address`` as for
    ``start``."""
    with ExitStack() as held:
        store = ResultsStore(results)
        try:
            record = store.experiment(experiment_id) if experiment_id else _newest_unfinished(store)
            held.enter_context(running_experiment(results, record.id))  # before its "running" runs are abandoned
            stale = store.abandon_stale_runs(record.id)
        finally:
            store.close()
        if stale:
            observer.note(f"{stale} run(s) left running by a stopped runner were marked interrupted and will run "
                          "again")
        experiment = stored_experiment(record)
        _allowed(experiment)
        runs = from_data(record.plan["runs"])
        left = builds_left([run for run in runs if run.key not in _finished_keys(results, record.id)])
        _hosts_reachable(experiment, left, ray_address, workdir, results)
        observer.note(f"estimated time of what is left: {estimate(experiment, scale(experiment), left).text()}")
        layouts = held.enter_context(system.KeptLayouts())
        _make_layouts(layouts, experiment, left, workdir)
        execute(record.id, experiment, runs, workdir, results, observer, layouts, ray_address)
    return record.id


def builds_left(left: list[PlannedRun]) -> list[PlannedRun]:
    """The runs left of a stopped experiment, the first of each database marked as building it where the build is
    not done yet, or was done on a storage layout: this runner makes the layout anew, empty, so the build is done
    again (a killed experiment of three layout steps builds three times)."""
    seen: set[str] = set()
    marked = []
    for run in left:
        first = run.database not in seen
        seen.add(run.database)
        marked.append(replace(run, build=first and (run.build or _on_a_layout(run))))
    return marked


def _on_a_layout(run: PlannedRun) -> bool:
    layout = system.Layout.of(system.OS.resolve(system.split(run.knobs)[1]))
    return layout is not None and layout.made


def keep_models(store: ResultsStore) -> None:
    """Experiments stored before Maximus kept their resolved model and how to read their runs with their plan get
    them now: the model read again from their stored file as when they ran, where that can be done here (the engine
    that validates the file is installed), and the reading from the model's workload. Reading their results then
    needs neither. One that cannot stays as it is, and reading it says so."""
    for record in store.experiments_without(MODEL):
        try:
            store.keep_in_plan(record.id, MODEL, to_data(stored_experiment(record)))
        except MaximusError:
            pass
    for record in store.experiments_without(READING):
        if MODEL in record.plan:
            try:
                store.keep_in_plan(record.id, READING, reading(from_model(record.plan[MODEL])).to_data())
            except UserError:  # a workload this Maximus does not know
                pass


def scale(experiment: Experiment) -> int:
    """How big the experiment's database is, in its workload's unit (TPC-C: warehouses)."""
    workload = workload_named(experiment.workload.name)
    return workload.scale(workload.settings(experiment.workload.settings))


def reading(experiment: Experiment) -> WorkloadReading:
    """How the experiment's runs are read together: named as by its workload, at its most clients."""
    workload = workload_named(experiment.workload.name)
    return workload.reading(workload.settings(experiment.workload.settings), max(experiment.clients))


def _allowed(experiment: Experiment) -> None:
    """Operating-system knobs in any step need the file's ``system_changes = true`` and root, before anything runs."""
    names = sorted({name for step in experiment.steps for name in system.split(step.knobs)[1]})
    system.require(names, experiment.system_changes, "system_changes = true to the experiment file")


def running_experiment(results: Path, experiment_id: int) -> ContextManager[None]:
    """The experiment's lock, beside its results database, for as long as this process runs its plan: a
    second runner (``experiment resume`` while it runs) would run the same plan again beside it."""
    return locks.held(results.with_name(f"{results.name}.experiment-{experiment_id}.lock"),
                      f"experiment {experiment_id}", f"wait for it to finish, or stop it and run `maximus "
                      f"experiment resume {experiment_id}` then")


def _newest_unfinished(store: ResultsStore):
    unfinished = [e for e in store.experiments() if e.status != "complete"]
    if not unfinished:
        raise UserError("no unfinished experiment to resume (see `maximus experiment list`)")
    return unfinished[-1]


def execute(experiment_id: int, experiment: Experiment, runs: list[PlannedRun], workdir: Path, results: Path,
            observer: ExperimentObserver, layouts: system.KeptLayouts, ray_address: str | None = None) -> None:
    """The planned ``runs`` not finished yet, in order, on the ``layouts`` kept for the experiment; their terminals
    on the client hosts of the Ray cluster at ``ray_address``, if given."""
    done = _finished_keys(results, experiment_id)
    try:
        for position, planned in enumerate(runs, start=1):
            if planned.key not in done:
                _execute_one(experiment_id, experiment, planned, (position, len(runs)), workdir, results, observer,
                             layouts, ray_address)
        if experiment.crash_tests:
            _crash_tests(experiment_id, experiment, runs, workdir, results, observer, layouts)
    except (KeyboardInterrupt, *NOT_THE_RUNS):
        observer.note(f"experiment {experiment_id} stopped: `maximus experiment resume {experiment_id}` runs what "
                      "is left")
        raise
    store = ResultsStore(results)
    try:
        store.finish_experiment(experiment_id)
    finally:
        store.close()


def _execute_one(experiment_id: int, experiment: Experiment, planned: PlannedRun, position: tuple[int, int],
                 workdir: Path, results: Path, observer: ExperimentObserver, layouts: system.KeptLayouts,
                 ray_address: str | None) -> None:
    """One planned run, stored complete, failed (the experiment goes on) or interrupted (it stops)."""
    _hygiene(experiment, observer)
    options = _options(experiment, planned, workdir, results, experiment_id, ray_address)
    live = observer.run_starting(*position, planned)
    try:
        outcome = run_benchmark(options, live, layouts=layouts)
    except NOT_THE_RUNS:
        raise
    except MaximusError as error:  # stored with its reason; the experiment goes on
        observer.run_finished(planned, _failed(options, str(error)), str(error))
        return
    if outcome.status is RunStatus.INTERRUPTED:
        raise KeyboardInterrupt
    failed = outcome.status is RunStatus.FAILED
    observer.run_finished(planned, outcome.run_id, cause(outcome.result.errors) if failed else None)


def _crash_tests(experiment_id: int, experiment: Experiment, runs: list[PlannedRun], workdir: Path, results: Path,
                 observer: ExperimentObserver, layouts: system.KeptLayouts) -> None:
    """Each step's crash tests (``[crashtest]``), after every measured run: stored under the keys "s<step>/x<n>", and
    skipped on a resume once stored. One that fails is noted, and the experiment goes on without it."""
    assert experiment.crash_tests is not None
    store = ResultsStore(results)
    try:
        done = {test.test.plan_key for test in store.crash_tests(experiment_id)}
    finally:
        store.close()
    for planned in _first_run_of_each_step(runs):
        for number, mode in enumerate(_crash_modes(experiment.crash_tests), start=1):
            key = f"s{planned.step}/x{number}"
            if key not in done:
                _crash_test(experiment_id, experiment, planned, key, number, mode, workdir, results, observer,
                            layouts)


def _first_run_of_each_step(runs: list[PlannedRun]) -> list[PlannedRun]:
    firsts: dict[int, PlannedRun] = {}
    for planned in runs:
        firsts.setdefault(planned.step, planned)
    return [firsts[step] for step in sorted(firsts)]


def _crash_modes(tests: CrashTests) -> list[CrashMode]:
    return [CrashMode(mode) for mode in tests.modes for _ in range(tests.crashes)]


def _crash_test(experiment_id: int, experiment: Experiment, planned: PlannedRun, key: str, number: int,
                mode: CrashMode, workdir: Path, results: Path, observer: ExperimentObserver,
                layouts: system.KeptLayouts) -> None:
    tests = experiment.crash_tests
    assert tests is not None
    # busy terminals, as the crash tests of an experiment without rates: a rate sweep's first run has a rate
    options = replace(_options(experiment, planned, workdir, results, experiment_id), plan_key=key,
                      terminals=max(experiment.clients), warmup_s=tests.warmup_s, duration_s=tests.duration_s,
                      seed=cycle_seed(experiment.seed, number - 1), rebuild=False, rate=None)
    try:
        [test_id] = crash_test(CrashTestOptions(options, mode, 1), layouts=layouts)  # their journal's hold
    except NOT_THE_RUNS:
        raise
    except MaximusError as error:
        observer.note(f"step {planned.step_name!r}: crash test {number} ({mode.value}) failed and is not stored: "
                      f"{error}")
        return
    store = ResultsStore(results)
    try:
        [record] = store.crash_tests(ids=[test_id])
    finally:
        store.close()
    test = record.test
    lost = f", {len(test.findings.lost):,} of them lost" if test.findings.lost else ""
    observer.note(f"step {planned.step_name!r}: crash test {number} ({mode.value}): {test.verdict.value}, "
                  f"{test.findings.acknowledged:,} acknowledged commits{lost} (crash test {test_id})")


def _finished_keys(results: Path, experiment_id: int) -> set[str]:
    store = ResultsStore(results)
    try:
        return {r.plan_key for r in store.runs(experiment_id) if r.status in FINISHED and r.plan_key}
    finally:
        store.close()


def _failed(options: BenchmarkOptions, reason: str) -> int:
    store = ResultsStore(options.results)
    try:
        recorded = [r for r in store.runs(options.experiment_id) if r.plan_key == options.plan_key
                    and r.status is RunStatus.FAILED]
    finally:
        store.close()
    return recorded[-1].id if recorded else record_failed_run(options, reason)


def _options(experiment: Experiment, planned: PlannedRun, workdir: Path, results: Path,
             experiment_id: int, ray_address: str | None = None) -> BenchmarkOptions:
    workload = experiment.workload
    return BenchmarkOptions(
        engine=experiment.engine, knobs=planned.knobs, workload=workload.name, settings=workload.settings,
        terminals=planned.clients, warmup_s=workload.warmup_s, duration_s=workload.duration_s, seed=planned.seed,
        workdir=workdir, results=results, rebuild=planned.build, restore=experiment.hygiene.restore,
        database=planned.database, experiment_id=experiment_id, plan_key=planned.key,
        max_failed_percent=workload.max_failed_percent, system_changes=experiment.system_changes,
        rate=planned.rate, arrivals=experiment.arrivals, ray_address=ray_address, hosts=experiment.hosts)


def _hygiene(experiment: Experiment, observer: ExperimentObserver) -> None:
    if not experiment.hygiene.drop_caches:
        return
    if os.geteuid() != 0:
        observer.note("drop_caches needs root: the OS page cache was not dropped before this run")
        return
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as control:
        control.write("3\n")
