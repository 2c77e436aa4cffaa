"""The plain-Python verbs behind the CLI: load a database, run a benchmark, check it, read results."""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Protocol, Sequence

from maximus import environment, limits, locks
from maximus.analysis import monitoring
from maximus.analysis.monitoring import RunColumn, RunMonitoring, cross_checks
from maximus.driver.scheduler import DriveResult, DriveSpec, Observer, drive
from maximus.engines import Dialect, Engine, check_connection, engine_class
from maximus.errors import EngineError, MaximusError, UserError, describe
from maximus.records import MAX_FAILED_PERCENT, Outcome, RunSpec, RunStatus, TxnSample, Window, differences
from maximus.samplers.base import Sampler
from maximus.samplers.monitor import Monitor
from maximus.samplers.os_linux import OsSampler
from maximus.store import ResultsStore, default_results_path
from maximus.store.failures import ResultsUnavailable
from maximus.store.store import RunRecord
from maximus.workloads import workload as workload_named
from maximus.workloads.tpcc import loader
from maximus.workloads.tpcc.constants import TERMINALS_PER_WAREHOUSE
from maximus.workloads.tpcc.emulator import TpccRunSettings
from maximus.workloads.tpcc.mix import parse_mix
from maximus.workloads.tpcc.random import NURandConstants

if TYPE_CHECKING:
    from maximus.analysis.metrics import RunFigures

_log = logging.getLogger(__name__)  # what the user should know besides the error (the CLI prints it as a note)


def default_workdir() -> Path:
    """``$MAXIMUS_WORKDIR``, else ``./maximus-work``: where databases are built (choose the disk under test)."""
    return Path(os.environ.get("MAXIMUS_WORKDIR") or "maximus-work")


@dataclass(frozen=True)
class BenchmarkOptions:
    engine: str = "sqlite"
    knobs: Mapping[str, str] = field(default_factory=dict)
    warehouses: int = 1
    terminals: int = 2
    warmup_s: float = 5.0
    duration_s: float = 30.0
    seed: int = 1
    keying_and_think: bool = False
    mix: str = "deck"
    workdir: Path = field(default_factory=default_workdir)
    results: Path = field(default_factory=default_results_path)
    check: bool = True
    rebuild: bool = False
    restore: bool = True  # start from the pristine copy; False continues on the data the last run left
    transactions: str = "auto"  # client (SQL from the driver), server (stored functions), auto: server if any
    connection: Mapping[str, str] = field(default_factory=dict)  # engine connection: dsn, bin_dir, ...
    database: str | None = None  # a database name of its own (experiments build one per step)
    monitor: bool = True  # sample OS and engine statistics during the run (maximus.samplers)
    experiment_id: int | None = None  # set by the experiment runner: which experiment and plan entry
    plan_key: str | None = None
    max_failed_percent: float = MAX_FAILED_PERCENT  # a run with more failed transactions in its window is failed

    def validate(self) -> None:
        """Every number within its documented range (``maximus.limits``), the mix and the mode, before anything
        runs."""
        for option, value, limit in (("--warehouses", self.warehouses, limits.WAREHOUSES),
                                     ("--terminals", self.terminals, limits.TERMINALS),
                                     ("--warmup", self.warmup_s, limits.WARMUP_S),
                                     ("--duration", self.duration_s, limits.DURATION_S),
                                     ("--seed", self.seed, limits.SEED)):
            limits.check(option, value, limit)
        parse_mix(self.mix)
        if self.transactions not in ("auto", "client", "server"):
            raise UserError(f"--transactions must be auto, client or server, got {self.transactions!r}")
        if not 0 <= self.max_failed_percent <= 100:  # a NaN is refused too
            raise UserError(f"--max-failed must be a percentage between 0 and 100, got {self.max_failed_percent:g}")


    def estimate(self) -> limits.Estimate:
        """How long the run takes, a build of its database included (which a pristine copy spares)."""
        return limits.estimate(1, 1, self.warmup_s, self.duration_s, self.warehouses)


class LoadProgress(Protocol):
    def start(self, expected_rows: Mapping[str, int]) -> None: ...

    def advance(self, table: str, rows: int) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True)
class PreparedDatabase:
    info: loader.DatabaseInfo
    loaded_now: bool


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: RunStatus
    result: DriveResult
    consistency: list


def make_engine(name: str, workdir: Path, warehouses: int, knobs: Mapping[str, str],
                database: str | None = None, connection: Mapping[str, str] | None = None) -> Engine:
    """The engine with validated knobs; by default its database name tells apart builds with other
    creation knobs, so a page size change gets a build of its own."""
    cls = engine_class(name)
    check_connection(cls, connection or {})
    catalogue = cls.catalogue_for(knobs, connection or {})
    settings = catalogue.resolve(knobs)
    changed = {k.name: settings[k.name] for k in catalogue if k.applies == "creation" and k.name in settings
               and settings[k.name] != k.default}
    suffix = "".join(f"-{key}{value}" for key, value in sorted(changed.items()))
    return cls(Path(workdir), database or f"tpcc-{warehouses}wh{suffix}", settings, connection)


def load_database(engine: Engine, warehouses: int, seed: int,
                  progress: LoadProgress | None = None) -> loader.LoadResult:
    """Build the database from scratch, time it, and keep it as the pristine copy for later runs: the
    working copy may then be missing until ``engine.restore()``, which every run begins with."""
    tpcc = workload_named("tpcc")
    # A build starts from nothing. On PostgreSQL, dropping the old pristine copy after the load instead
    # would cost a checkpoint of the new data: dropping a database that exists forces one.
    engine.destroy()
    if progress:
        progress.start(tpcc.expected_rows(warehouses))
    try:
        result = tpcc.load(engine, warehouses, seed, progress.advance if progress else lambda t, r: None)
        engine.keep_as_pristine()
    except BaseException as error:  # a build cut short leaves nothing: no half of it filling the disk
        _quietly(engine.discard_build, f"removing the unfinished build of {engine.database}")
        _raise_fault(engine, error, f"the build of {engine.database} failed: ", reported=True)
        raise
    finally:
        if progress:
            progress.finish()
    return result


def _raise_fault(engine: Engine, error: BaseException, prefix: str = "", reported: bool = False) -> None:
    """An error of the engine's driver or of the file system that the engine explains (a full disk, a lost
    server) as the one line it means; anything else goes on as it is (a bug keeps its traceback). ``reported``:
    Maximus's own errors too (a loader process's failure, reported in its words)."""
    if not isinstance(error, Exception) or (isinstance(error, MaximusError) and not reported):
        return
    cause = engine.fault(str(error) if isinstance(error, MaximusError) else describe(error))
    if cause:
        raise EngineError(prefix + cause) from None


def _quietly(action: Callable[[], None], what: str) -> None:
    """Clean-up while another error is on its way: a failure of its own is noted, never put in that error's place."""
    try:
        action()
    except Exception as error:
        _log.warning("%s failed too: %s", what, " ".join(str(error).split()))


def prepare_database(engine: Engine, warehouses: int, seed: int, progress: LoadProgress | None = None,
                     rebuild: bool = False, restore: bool = True) -> PreparedDatabase:
    """Start from the pristine copy when there is one (same scale and build knobs), else load first."""
    loaded_now = rebuild or not engine.has_snapshot()
    if loaded_now:
        load_database(engine, warehouses, seed, progress)
    if restore or loaded_now or not engine.exists():
        _restore(engine)
    info = _database_info(engine)
    if not _built_as_asked(info, engine, warehouses) and not loaded_now:
        return prepare_database(engine, warehouses, seed, progress, rebuild=True)  # an unfinished or foreign copy
    if not _built_as_asked(info, engine, warehouses):
        raise EngineError(f"the database just built in {engine.workdir} does not read back as {warehouses} "
                          "warehouse(s)")
    if not loaded_now and engine.capabilities.server_side_procedures:
        _install_procedures(engine)  # so that a copy built by an older Maximus runs this version's functions
    return PreparedDatabase(info, loaded_now)


def _built_as_asked(info: loader.DatabaseInfo | None, engine: Engine, warehouses: int) -> bool:
    """A complete build of this scale with the knobs fixed at creation that the run asks for. A database
    name does not promise it: two experiments of one name share their steps' names, and the second one's
    build of a step with another page size would be taken, and labelled, for the first one's."""
    return info is not None and info.warehouses == warehouses and info.creation_settings == engine.creation_settings()


def _restore(engine: Engine) -> None:
    try:
        engine.restore()
    except Exception as error:
        _raise_fault(engine, error, f"restoring the pristine copy of {engine.database} failed: ")
        raise


def _database_info(engine: Engine) -> loader.DatabaseInfo | None:
    session = engine.connect()
    try:
        return workload_named("tpcc").database_info(session, engine.dialect)
    finally:
        session.close()


def _install_procedures(engine: Engine) -> None:
    session = engine.connect()
    try:
        loader.install_procedures(engine.dialect, session)
    finally:
        session.close()


def run_benchmark(options: BenchmarkOptions, observer: Observer | None = None,
                  progress: LoadProgress | None = None) -> RunOutcome:
    """Load if needed, restore the pristine data, drive the terminals, store everything, check consistency."""
    options.validate()
    engine = make_engine(options.engine, options.workdir, options.warehouses, options.knobs, options.database,
                         options.connection)
    engine.validate_run(options.terminals)
    if options.transactions == "server" and not engine.capabilities.server_side_procedures:
        raise UserError(f"{engine.name} has no stored procedures: use --transactions client")
    with locked(engine):
        store = ResultsStore(options.results)
        run_id = None
        try:
            store.check_writable()  # before a build that may take an hour
            engine.start()  # a fresh server for every run: restarted between runs, like the seeds did
            prepared = prepare_database(engine, options.warehouses, options.seed, progress, options.rebuild,
                                        options.restore)
            run_id, settings, started = _begin(store, engine, options, prepared)
            watch = engine.watch()
            result = _drive_and_store(store, (run_id, started), engine, options, settings, observer, watch)
            consistency = _check_after(store, run_id, engine, result, options.check, watch)
            outcome = RunOutcome(run_id, result.status, result, consistency)
        except BaseException as error:
            store.close()
            _quietly(engine.stop, f"stopping {engine.name}")  # the error on its way is the cause
            _raise_fault(engine, error)
            raise
        store.close()
        if outcome.status is RunStatus.FAILED:
            _quietly(engine.stop, f"stopping {engine.name}")
        else:
            _stop_after(engine, run_id)
        return outcome


def _stop_after(engine: Engine, run_id: int | None) -> None:
    """``engine.stop()``; one that fails after the run was stored says that the run is kept."""
    try:
        engine.stop()
    except EngineError as error:
        if run_id is None:
            raise
        raise EngineError(f"{error} (run {run_id} is stored: `maximus show {run_id}`)") from None


def _begin(store: ResultsStore, engine: Engine, options: BenchmarkOptions,
           prepared: PreparedDatabase) -> tuple[int, TpccRunSettings, dict]:
    """The run's row, stored as it starts; with what it was begun with, which ``_store_end`` needs again."""
    constants = NURandConstants.for_run(prepared.info.constants.c_last, options.seed)
    server_side = options.transactions == "server" or (
        options.transactions == "auto" and engine.capabilities.server_side_procedures)
    settings = TpccRunSettings(options.warehouses, options.seed, constants, parse_mix(options.mix),
                               options.keying_and_think, server_side)
    session = engine.connect()
    try:
        reported = engine.reported_settings(session)
        session.begin()
        loader.mark_used(session)
        session.commit()
    finally:
        session.close()
    spec = RunSpec(engine.name, dict(engine.settings), "tpcc", options.warehouses, options.terminals,
                   options.warmup_s, options.duration_s, options.seed, options.keying_and_think, options.mix,
                   engine.database, {"transactions": "server" if settings.server_side else "client",
                                     "isolation": isolation_text(engine, settings)})
    started = dict(
        spec=spec, effective_knobs=engine.effective_settings, engine_settings=reported,
        load_seconds=prepared.info.load_seconds, loaded_in_run=prepared.loaded_now, load_seed=prepared.info.seed,
        constants={"c_load": asdict(prepared.info.constants), "c_run": asdict(constants)},
        environment=environment.fingerprint(engine.data_path(), engine.name, engine.version()),
        warnings=[*_warnings(engine, options), *engine.reported_otherwise(reported)],
        experiment_id=options.experiment_id, plan_key=options.plan_key)
    return store.begin_run(**started), settings, started


def isolation_text(engine: Engine, settings: TpccRunSettings) -> str:
    """How each transaction is isolated in this run (3.4.0.1): the level it runs at, and what its statements do
    for the rest; recorded with the run."""
    transactions = workload_named("tpcc").transactions(engine.dialect, settings).values()
    return "; ".join(f"{t.name}: {engine.isolation(t.one_snapshot, settings.server_side)}, {t.isolation_means}"
                     for t in transactions)


def _warnings(engine: Engine, options: BenchmarkOptions) -> list[str]:
    warnings = engine.durability_warnings()
    if not options.keying_and_think:
        warnings.append("keying and think times off: a TPC-C-like run, not a TPC-C result (5.2.5)")
    per_warehouse = options.terminals / options.warehouses
    if per_warehouse > TERMINALS_PER_WAREHOUSE:
        warnings.append(f"{per_warehouse:g} terminals per warehouse, more than the {TERMINALS_PER_WAREHOUSE} of 4.2.2: "
                        "terminals share (warehouse, district) pairs, which 2.8.1.1 gives one each")
    return warnings


def deferred_workers(terminals: int) -> int:
    """One deferred-delivery worker per 10 terminals (Delivery is 4 % of the mix, about ten New-Orders
    of work each), at most two per core: beyond that processes cost memory, not throughput."""
    return max(1, min(terminals // 10, 2 * (os.cpu_count() or 1)))


def terminal_hosting(engine: Engine, settings: TpccRunSettings, terminals: int) -> tuple[str, int]:
    """How the terminals share worker processes (``DriveSpec.hosting``) and how many each process hosts.

    Sharing needs every transaction to be one statement (server-side mode). Busy terminals (no keying
    or think times) share one process per core, each keeping a call in flight, on engines that split
    a call in two: far cheaper than a process each once there are more terminals than cores. Keyed
    terminals, which mostly wait, share one process per core on an event loop, so a thousand fit in
    little memory. Everything else gets a process per terminal.
    """
    shared = -(-terminals // min(terminals, os.cpu_count() or 1))
    if settings.server_side and not settings.keying_and_think and engine.capabilities.split_calls:
        return "multiplexed", shared
    if settings.server_side and settings.keying_and_think and engine.capabilities.async_sessions:
        return "asyncio", shared
    return "process", 1


def _drive_and_store(store: ResultsStore, run: tuple[int, dict], engine: Engine, options: BenchmarkOptions,
                     settings: TpccRunSettings, observer: Observer | None,
                     watch: Callable[[], str | None]) -> DriveResult:
    hosting, per_process = terminal_hosting(engine, settings, options.terminals)
    spec = DriveSpec(engine, "tpcc", settings, options.terminals, options.warmup_s, options.duration_s,
                     deferred_workers=0 if hosting == "multiplexed" or engine.one_connection()
                     else deferred_workers(options.terminals),
                     hosting=hosting, terminals_per_process=per_process)
    monitor = Monitor(run_samplers(engine), Window(options.warmup_s, options.warmup_s + options.duration_s)) \
        if options.monitor else None
    try:
        result = _judged(drive(spec, observer, monitor, watch), options.max_failed_percent)
    except BaseException as error:  # the run row must not stay "running": record why it ended
        status = RunStatus.INTERRUPTED if isinstance(error, KeyboardInterrupt) else RunStatus.FAILED
        reason, warnings = f"{type(error).__name__}: {error}", monitor.warnings if monitor else []
        _store_end(store, run, monitor, lambda target, run_id: target.finish_run(
            run_id, status, [], {}, [reason], 0.0, warnings))
        raise
    warnings = monitoring_warnings(monitor, result, engine) if monitor else []
    _store_end(store, run, monitor, lambda target, run_id: target.finish_run(
        run_id, result.status, result.samples, result.facts, result.errors, result.elapsed_s, warnings, result.window,
        result.deferred))
    return result


def _store_end(store: ResultsStore, run: tuple[int, dict], monitor: Monitor | None,
               finish: Callable[[ResultsStore, int], None]) -> None:
    """Store the run's monitoring samples and ``finish`` it in the results database; if that fails, say because
    another process kept it locked for all of $MAXIMUS_RESULTS_TIMEOUT, in a results database of its own beside
    it instead, and say where: what was measured is not lost, whatever holds the lock."""
    run_id, started = run

    def write(target: ResultsStore, target_id: int) -> None:
        target.add_metric_samples(target_id, monitor.samples if monitor else [])
        finish(target, target_id)

    try:
        write(store, run_id)
    except ResultsUnavailable as error:
        kept = store.path.with_name(f"{store.path.stem}.run-{run_id}{store.path.suffix}")
        spare = ResultsStore(kept)
        try:
            spare_id = spare.begin_run(**started)
            write(spare, spare_id)
        finally:
            spare.close()
        raise ResultsUnavailable(f"{error}; run {run_id} is kept in {kept} instead: `maximus show {spare_id} "
                                 f"--results {kept}`", error.exit_code) from None


def _judged(result: DriveResult, max_failed_percent: float) -> DriveResult:
    """A run that went to its end is failed all the same when too many of its transactions failed."""
    excess = failure_excess(result.samples, result.window, max_failed_percent)
    if result.status is RunStatus.COMPLETE and excess:
        result.status, result.errors = RunStatus.FAILED, [excess, *result.errors]
    return result


def failure_excess(samples: Sequence[TxnSample], window: Window, max_failed_percent: float) -> str | None:
    """Why the failed transactions of the measured window (5.4) are too many to call the run a measurement,
    or None: they are at most ``max_failed_percent`` of all."""
    counted = [sample for sample in samples if window.contains(sample)]
    failed = [sample for sample in counted if sample.outcome is Outcome.FAILED]
    if not failed or 100 * len(failed) <= max_failed_percent * len(counted):
        return None
    first = failed[0].error.strip().splitlines()[0] if failed[0].error.strip() else "no error text"
    return (f"{len(failed):,} of {len(counted):,} transactions in the measured window failed "
            f"({100 * len(failed) / len(counted):.1f} %, more than the {max_failed_percent:g} % allowed); "
            f"the first: {first}")


def run_samplers(engine: Engine) -> list[Sampler]:
    """The samplers of one run: the OS's, then the engine's own. Tests replace this to inject faults."""
    return [OsSampler(engine.data_path()), *engine.samplers()]


def write_transactions(dialect: Dialect) -> set[str]:
    """Sample names of the transactions that commit changes; a deferred one under its completion's name."""
    transactions = workload_named("tpcc").transactions(dialect).values()
    return {f"deferred_{t.name}" if t.deferred else t.name for t in transactions if not t.read_only}


def monitoring_warnings(monitor: Monitor, result: DriveResult, engine: Engine) -> list[str]:
    """The monitor's own warnings, every failed cross-check with both of its numbers, and a client-bound run."""
    checks = cross_checks(monitor.samples, result.samples, result.window, write_transactions(engine.dialect),
                          embedded(type(engine)))
    bound = monitoring.client_bound_warning(monitor.samples, result.window)
    return [*monitor.warnings, *(check.warning() for check in checks if not check.passed), *([bound] if bound else [])]


def embedded(engine: type[Engine]) -> bool:
    """An engine without a server process runs inside Maximus's client processes (SQLite)."""
    return not engine.capabilities.managed_server


def analyse_monitoring(store: ResultsStore, record: RunRecord, samples: Sequence[TxnSample],
                       figures: RunFigures) -> RunMonitoring:
    """The run's monitoring figures and cross-checks, recomputed from its stored samples."""
    engine = engine_class(record.spec.engine)
    return monitoring.analyse(store.metric_samples(record.id), samples, record.window,
                              write_transactions(engine.dialect), figures.tpm / 60, embedded(engine))


def run_column(report: RunReport) -> RunColumn:
    """One column of the seeds' run table (``report.console.render_run_table``), headed by its terminals."""
    return RunColumn(str(report.record.spec.terminals), report.figures, report.monitoring.figures)


def _check_after(store: ResultsStore, run_id: int, engine: Engine, result: DriveResult, check: bool,
                 watch: Callable[[], str | None]) -> list:
    """The consistency check of the database the run left, on the run's server (not restarted). A fault it
    meets fails the run, which is then no result: the check never runs on a pristine copy restored instead."""
    if not check or result.status is not RunStatus.COMPLETE:
        return []
    try:
        if not engine.exists():  # the fault itself: never a reason to check the pristine copy instead
            raise EngineError(f"the database {engine.database} disappeared during the run")
        consistency = _check_running(engine, False)
    except Exception as error:
        cause = watch() or (str(error) if isinstance(error, EngineError) else engine.fault(describe(error)))
        if not cause:
            raise
        store.fail_run(run_id, cause)
        result.status, result.errors = RunStatus.FAILED, [cause, *result.errors]
        return []
    store.add_consistency(run_id, consistency)
    return consistency


def check_database(engine: Engine, fresh: bool | None = None,
                   announce: Callable[[str], None] = lambda message: None) -> list:
    """All twelve conditions of 3.3.2 (11 only when the database is freshly loaded). With no working
    copy but a pristine one (a build with no run since), the pristine copy is restored, ``announce``d, and
    checked: the user asked for a check of this build. After a run that is never done (``_check_after``)."""
    with running(engine):
        if not engine.exists() and engine.has_snapshot():
            announce(f"No working copy of {engine.database}: checking its pristine copy, restored")
            _restore(engine)
        if not engine.exists():
            raise UserError(f"no database at {engine.workdir} named {engine.database}: run `maximus load` first")
        return _check_running(engine, fresh)


def _check_running(engine: Engine, fresh: bool | None) -> list:
    """The check of the working copy as it is, on the engine's running server."""
    session = engine.connect()
    try:
        info = workload_named("tpcc").database_info(session, engine.dialect)
        if info is None:
            raise UserError(f"{engine.database} is not a complete Maximus TPC-C database of this version: "
                            "load it again")
        return workload_named("tpcc").check(session, info.fresh if fresh is None else fresh, engine.dialect)
    finally:
        session.close()


@contextmanager
def running(engine: Engine) -> Iterator[Engine]:
    """The engine's server up for the duration (a no-op for embedded engines), stopped even on Ctrl-C; its
    data locked against another Maximus meanwhile. A stop that fails after another error leaves that error
    in place."""
    with locked(engine):
        engine.start()
        try:
            yield engine
        except BaseException:
            _quietly(engine.stop, f"stopping {engine.name}")
            raise
        engine.stop()


@contextmanager
def locked(engine: Engine) -> Iterator[None]:
    """The engine's data (a work directory's database, a managed cluster) kept from other Maximus processes:
    a second one gets ``locks.Busy`` naming this one's pid, instead of restoring a copy or stopping a server
    under it."""
    target = engine.lock_target()
    if target is None:
        yield
        return
    path, what = target
    with locks.held(path, what, "wait for it to finish, or use another --workdir"):
        yield


def report_of_run(results: Path, run_id: int) -> RunReport:
    """``analyse_run`` on the results database at ``results``, opened and closed around it."""
    store = ResultsStore(results)
    try:
        return analyse_run(store, run_id)
    finally:
        store.close()


def open_results(path: Path | None = None) -> ResultsStore:
    return ResultsStore(path or default_results_path())



@dataclass(frozen=True)
class RunReport:
    """Everything `show` prints about a run, recomputed from the stored raw samples."""

    record: object
    figures: object
    validity: list
    mix: list
    consistency: list
    monitoring: object = None  # analysis.monitoring.RunMonitoring
    deferred: tuple = ()  # records.DeferredResult: the Delivery result file (2.7.2.3)


def analyse_run(store: ResultsStore, run_id: int) -> RunReport:
    from maximus.analysis.metrics import run_figures
    from maximus.workloads.tpcc import Tpcc
    from maximus.workloads.tpcc.validity import mix_report, validity_report

    record = store.run(run_id)
    samples = store.samples(run_id)
    figures = run_figures(samples, record.window, Tpcc.reported_transactions)
    deferred = tuple(store.deferred_results(run_id))
    validity = validity_report(figures.counts, store.facts(run_id), record.spec.warehouses, deferred, record.window)
    return RunReport(record, figures, validity, mix_report(figures.counts), store.consistency(run_id),
                     analyse_monitoring(store, record, samples, figures), deferred)


def record_failed_run(options: BenchmarkOptions, reason: str) -> int:
    """Store a run that failed before it could start (a build that broke, a server that would not start)."""
    store = ResultsStore(options.results)
    try:
        spec = RunSpec(options.engine, dict(options.knobs), "tpcc", options.warehouses, options.terminals,
                       options.warmup_s, options.duration_s, options.seed, options.keying_and_think, options.mix,
                       options.database or "")
        run_id = store.begin_run(spec, effective_knobs=dict(options.knobs), engine_settings={}, load_seconds=None,
                                 loaded_in_run=False, load_seed=None, constants={},
                                 environment=environment.fingerprint(Path(options.workdir), options.engine, ""),
                                 warnings=[], experiment_id=options.experiment_id, plan_key=options.plan_key)
        store.finish_run(run_id, RunStatus.FAILED, [], {}, [reason], 0.0)
        return run_id
    finally:
        store.close()


@dataclass(frozen=True)
class ExperimentReport:
    record: object  # store.ExperimentRecord
    experiment: object  # experiment.model.Experiment
    summary: object  # analysis.experiment.ExperimentSummary


def analyse_experiment(store: ResultsStore, experiment_id: int) -> ExperimentReport:
    """Per step and client count: estimates over repeats, gains, verdicts; from the stored raw samples."""
    from maximus.analysis.experiment import RunRow, summarise
    from maximus.analysis.metrics import run_figures
    from maximus.experiment.plan import from_data
    from maximus.experiment.runner import stored_experiment
    from maximus.workloads.tpcc import Tpcc

    record = store.experiment(experiment_id)
    experiment = stored_experiment(record)
    planned = {run.key: run for run in from_data(record.plan["runs"])}
    rows = []
    for run in store.runs(experiment_id):
        if run.plan_key not in planned:
            continue
        figures = (run_figures(store.samples(run.id), run.window, Tpcc.reported_transactions)
                   if run.status is RunStatus.COMPLETE else None)
        key = planned[run.plan_key]
        rows.append(RunRow(run.id, key.step, key.clients, run.status, run.load_seconds, run.loaded_in_run, figures))
    summary = summarise([s.name for s in experiment.steps], experiment.clients, len(planned), rows)
    return ExperimentReport(record, experiment, summary)


@dataclass(frozen=True)
class Comparison:
    a_label: str
    b_label: str
    a_values: list
    b_values: list
    method: str  # "repeats" or "batch means within one run"
    ratio: object  # analysis.compare.Ratio
    differences: tuple = ()  # two runs: what their setups set differently, as (what, in A, in B)


def compare_targets(store: ResultsStore, a: str, b: str, experiment_id: int | None = None,
                    clients: int | None = None) -> Comparison:
    """Compare tpmC of two runs (by number) or of two steps of an experiment (by name or index, at one
    client count: the largest unless ``clients`` says otherwise)."""
    from maximus.analysis.compare import compare

    a_label, a_values, a_method = _target_values(store, a, experiment_id, clients)
    b_label, b_values, b_method = _target_values(store, b, experiment_id, clients)
    method = a_method if a_method == b_method else f"{a_method} against {b_method}"
    setups = tuple(differences(store.run(int(a)).spec, store.run(int(b)).spec)) \
        if experiment_id is None and a.isdigit() and b.isdigit() else ()
    return Comparison(a_label, b_label, a_values, b_values, method, compare(a_values, b_values), setups)


def _target_values(store: ResultsStore, target: str, experiment_id: int | None,
                   clients: int | None) -> tuple[str, list[float], str]:
    if target.isdigit() and experiment_id is None:
        return _run_values(store, int(target))
    report = analyse_experiment(store, experiment_id or _newest_experiment(store))
    step = _step_index(report.experiment, target)
    count = clients or max(report.summary.clients)
    if count not in report.summary.clients:
        raise UserError(f"experiment {report.record.id} has no runs with {count} clients "
                        f"(client counts: {', '.join(map(str, report.summary.clients))})")
    values = [float(analyse_run(store, run_id).figures.tpmc) for run_id in report.summary.cell(step, count).run_ids
              if store.run(run_id).status is RunStatus.COMPLETE]
    return f"step {report.experiment.steps[step].name!r} at {count} clients", values, "repeats"


def _run_values(store: ResultsStore, run_id: int) -> tuple[str, list[float], str]:
    """One run has no repeats: its measured window cut into batches gives within-run noise only."""
    from maximus.analysis.compare import batch_means
    from maximus.analysis.steady import window_series

    report = analyse_run(store, run_id)
    window = report.record.window
    series = window_series(report.figures.per_second, window.start, window.end)
    return f"run {run_id}", [v * 60 for v in batch_means(series)], "batch means within one run"


def _step_index(experiment, target: str) -> int:
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
