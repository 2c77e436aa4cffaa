"""One measured run, end to end: its database prepared, its terminals driven with the samplers beside them,
everything stored as it ends, its consistency checked, and a fault made a failed run, never a result."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from maximus import device, environment, limits, system
from maximus.client_hosts import CLIENT_HOSTS
from maximus.database import (Build, HomesLoader, LoadProgress, PreparedDatabase, check_running, default_workdir,
                              locked, make_engine, prepare_database, quietly, raise_fault)
from maximus.driver import hosts
from maximus.driver.schedule import ARRIVALS, RateSchedule
from maximus.driver.scheduler import DriveResult, DriveSpec, Observer, drive
from maximus.engines import Engine, engine_class, runnable_engine
from maximus.histograms import interval_histograms
from maximus.errors import EngineError, UserError, describe
from maximus.records import (ARRIVALS_OPTION, EMBEDDED, MAX_FAILED_PERCENT, RATE, CheckResult, Outcome,
                             RunSpec, RunStart, RunStatus, StorageAccess, TxnSample, Window)
from maximus.samples import RunEnd, Samples, samples_of
from maximus.samplers.base import Sampler
from maximus.samplers.monitor import Monitor
from maximus.samplers.os_linux import OsSampler
from maximus.store import ResultsStore, default_results_path
from maximus.store.failures import ResultsUnavailable
from maximus.workloads import workload as workload_named
from maximus.workloads.base import DatabaseInfo, Workload


@dataclass(frozen=True)
class BenchmarkOptions:
    engine: str = "sqlite"
    knobs: Mapping[str, str] = field(default_factory=dict)
    workload: str = "tpcc"
    settings: Mapping[str, Any] = field(default_factory=dict)  # the workload's own (TPC-C: warehouses, keying, mix)
    terminals: int = 2
    warmup_s: float = 5.0
    duration_s: float = 30.0
    seed: int = 1
    workdir: Path = field(default_factory=default_workdir)
    results: Path = field(default_factory=default_results_path)
    check: bool = True
    rebuild: bool = False
    restore: bool = True  # start from the pristine copy; False continues on the data the last run left
    transactions: str = "auto"  # client (SQL from the driver), server (stored functions), auto: server if any
    connection: Mapping[str, str] = field(default_factory=dict)  # the engine's own connection options
    database: str | None = None  # a database name of its own (experiments build one per step)
    monitor: bool = True  # sample OS and engine statistics during the run (maximus.samplers)
    experiment_id: int | None = None  # set by the experiment runner: which experiment and plan entry
    plan_key: str | None = None
    max_failed_percent: float = MAX_FAILED_PERCENT  # a run with more failed transactions in its window is failed
    system_changes: bool = False  # the user allows operating-system knobs to be changed (as root), and put back
    device_limit: bool = True  # a storage-bound workload's run is measured beside fio's matching job (maximus.device)
    rate: float | None = None  # fixed throughput (transactions per second over all terminals); None: closed loop
    arrivals: str = "regular"  # a fixed rate's arrivals: regular or poisson (driver.schedule)
    ray_address: str | None = None  # the Ray cluster whose nodes are the client hosts (driver.hosts); None: here
    hosts: int = 1  # with ray_address: client hosts, one node each, each with the terminals of its own homes

    @property
    def engine_knobs(self) -> dict[str, str]:
        return system.split(self.knobs)[0]

    @property
    def os_knobs(self) -> dict[str, str]:
        """The operating-system knobs among ``knobs``, validated (canonical names and values)."""
        return system.OS.resolve(system.split(self.knobs)[1])

    @property
    def build(self) -> Build:
        """The workload and its settings, validated by it (``SettingError``)."""
        return Build.of(self.workload, self.settings)

    def validate(self) -> None:
        """Every number within its documented range (``maximus.limits``), the workload's settings and the mode,
        before anything runs; the engine's driver installed."""
        runnable_engine(self.engine)
        for option, value, limit in (("--terminals", self.terminals, limits.TERMINALS),
                                     ("--warmup", self.warmup_s, limits.WARMUP_S),
                                     ("--duration", self.duration_s, limits.DURATION_S),
                                     ("--seed", self.seed, limits.SEED)):
            limits.check(option, value, limit)
        if self.rate is not None:
            limits.check("--rate", self.rate, limits.RATE)
            if self.build.workload.pauses(self.build.settings):
                raise UserError(f"--rate sets when each transaction starts: the {self.workload} workload's keying "
                                "and think times would too (leave them off)")
        if self.arrivals not in ARRIVALS:
            raise UserError(f"--arrivals must be {' or '.join(ARRIVALS)}, got {self.arrivals!r}")
        self.build  # noqa: B018  (validates)
        if self.transactions not in ("auto", "client", "server"):
            raise UserError(f"--transactions must be auto, client or server, got {self.transactions!r}")
        if not 0 <= self.max_failed_percent <= 100:  # a NaN is refused too
            raise UserError(f"--max-failed must be a percentage between 0 and 100, got {self.max_failed_percent:g}")
        system.require(list(self.os_knobs), self.system_changes)
        self._validate_hosts()
        if self.device_limit and self.build.workload.device_job(self.build.settings, self.terminals,
                                                                StorageAccess(4096, False), 1 << 20):
            missing = device.fio_missing()
            if missing:
                raise UserError(f"{missing} (or --no-device-limit: the run without the device's limit beside it)")

    def _validate_hosts(self) -> None:
        """Several client hosts need a server to connect to, a home and a terminal each, Ray, and its cluster there."""
        if self.ray_address is None:
            if self.hosts != 1:
                raise UserError("--hosts needs --ray ADDRESS: the client hosts are the nodes of a Ray cluster")
            return
        limits.check("--hosts", self.hosts, limits.HOSTS)
        if embedded(engine_class(self.engine)):
            raise UserError(f"--ray: {self.engine} is embedded in Maximus's client processes, so its runs have one "
                            "client host: run it without --ray")
        if clients := sorted(knob for knob in self.os_knobs if knob.startswith("client.")):
            raise UserError(f"--ray: {', '.join(clients)} would set this machine's terminals, and with --ray the "
                            "terminals run on the hosts: leave it out")
        hosts.check_shares(self.terminals, self.hosts, self.build.workload.homes(self.build.settings))
        hosts.import_ray()
        hosts.check_reachable(self.ray_address)

    def estimate(self) -> limits.Estimate:
        """How long the run takes, a build of its database included (which a pristine copy spares)."""
        return limits.estimate(1, 1, self.warmup_s, self.duration_s, self.build.scale)


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: RunStatus
    result: DriveResult
    consistency: list[CheckResult]


@dataclass(frozen=True)
class _Begun:
    """A run as it was stored when it began: ``_store_end`` begins it again elsewhere if it must."""

    run_id: int
    start: RunStart
    run_settings: Any  # the workload's, shared by the terminals


def run_benchmark(options: BenchmarkOptions, observer: Observer | None = None, progress: LoadProgress | None = None,
                  layouts: system.KeptLayouts | None = None) -> RunOutcome:
    """Load if needed, restore the pristine data, drive the terminals, store everything, check consistency.
    ``layouts``: the storage layouts an experiment keeps between its runs (else the run makes its own)."""
    options.validate()
    named = _engine(options, options.workdir)
    _check(named, options)
    with system.changed(options.os_knobs, named, lambda workdir: _engine_on(options, workdir), options.system_changes,
                        layouts) as machine:  # a layout's load is timed on it
        return _run_changed(options, machine, observer, progress)


def _engine(options: BenchmarkOptions, workdir: Path) -> Engine:
    return make_engine(options.engine, workdir, options.build, options.engine_knobs, options.database,
                       options.connection)


@contextmanager
def _engine_on(options: BenchmarkOptions, workdir: Path) -> Iterator[Engine]:
    """The engine that runs, on the work directory the run's changes chose (a layout's), kept from other Maximus
    processes."""
    engine = _engine(options, workdir)
    engine.validate_run(options.terminals)  # on the engine that runs: what it sets for the terminals is kept
    with locked(engine):
        yield engine


def _check(engine: Engine, options: BenchmarkOptions) -> None:
    """What the engine and the workload must offer for this run, before anything is made or started."""
    engine.validate_run(options.terminals)
    if options.transactions == "server" and not engine.capabilities.server_side_procedures:
        raise UserError(f"{engine.name} has no stored procedures: use --transactions client")
    workload = options.build.workload
    if options.transactions == "server" and not workload.server_side:
        raise UserError(f"the {workload.name} workload has no server-side transactions: use --transactions client")


def server_side_run(options: BenchmarkOptions, engine: Engine, workload: Workload) -> bool:
    """Whether the run's transactions are stored-procedure calls: asked for, or by default where both the engine
    and the workload have them."""
    return options.transactions == "server" or (
        options.transactions == "auto" and engine.capabilities.server_side_procedures and workload.server_side)


def _run_changed(options: BenchmarkOptions, machine: system.Machine[Engine], observer: Observer | None,
                 progress: LoadProgress | None) -> RunOutcome:
    engine = machine.engine
    store = ResultsStore(options.results)
    try:
        outcome = _run(store, machine, options.build, options, observer, progress)
    except BaseException as error:
        store.close()
        # A memory limit whose OOM kills broke the server lifts and ends it first, where a stop would wait for its
        # crash recovery under the limit
        quietly(machine.failed, "undoing what would keep the server from stopping")
        quietly(engine.stop, f"stopping {engine.name}")  # the error on its way is the cause
        raise_fault(engine, error)
        raise
    store.close()
    if outcome.status is RunStatus.FAILED:
        quietly(engine.stop, f"stopping {engine.name}")
    else:
        _stop_after(engine, outcome.run_id)
    return outcome


def _run(store: ResultsStore, machine: system.Machine[Engine], build: Build, options: BenchmarkOptions,
         observer: Observer | None, progress: LoadProgress | None) -> RunOutcome:
    engine = machine.engine
    store.check_writable()  # before a build that may take an hour
    engine.start()  # a fresh server for every run: restarted between runs, as the tuning articles rebooted
    machine.server_started()
    with machine.working(), placed_client_hosts(options) as placed:
        prepared = prepare_database(engine, build, options.seed, progress, options.rebuild, options.restore,
                                    homes_loader(placed))
        begun = _begin(store, engine, build, options, prepared, machine.done())
        if options.device_limit:
            _measure_device(store, begun.run_id, engine, build, options.terminals, prepared.info)
        watch = engine.watch()
        result = _drive_and_store(store, begun, engine, build, options, observer, watch, machine.seen, placed)
        consistency = _check_after(store, begun.run_id, engine, build, result, options.check, watch)
    return RunOutcome(begun.run_id, result.status, result, consistency)


@contextmanager
def placed_client_hosts(options: BenchmarkOptions) -> Iterator[hosts.PlacedHosts | None]:
    """The run's client hosts (``--ray``), placed once for its build and its terminals; None: it runs here."""
    if options.ray_address is None:
        yield None
        return
    with hosts.placed(options.ray_address, options.hosts) as placed:
        yield placed


def homes_loader(placed: hosts.PlacedHosts | None) -> HomesLoader | None:
    """Who loads a build's per-home rows: the client hosts, each its own homes, as they then run their terminals;
    without hosts, this machine."""
    if placed is None:
        return None
    return lambda split, progress: hosts.load_on_hosts(split, placed, progress)


def _measure_device(store: ResultsStore, run_id: int, engine: Engine, build: Build, terminals: int,
                    info: DatabaseInfo) -> None:
    """fio's job matching the run, on its data's file system, before the terminals start; kept with the run. None for
    a workload that is not storage-bound (asked first: only its job needs the database's size)."""
    workload, access = build.workload, engine.storage_access()
    if workload.device_job(build.settings, terminals, access, 0) is None:
        return
    session = engine.connect()
    try:
        data_bytes = engine.database_bytes(session)
    finally:
        session.close()
    job = workload.device_job(build.settings, terminals, access, data_bytes, info)
    if job is not None:
        data, server = engine.data_path(), engine.server_pid()
        groups = system.io_groups_of(server) if server else []  # an embedded engine's are Maximus's, fio's too
        store.add_device_limit(run_id, device.measure(job, data if data.is_dir() else data.parent, groups))


def _stop_after(engine: Engine, run_id: int | None) -> None:
    """``engine.stop()``; one that fails after the run was stored says that the run is kept."""
    try:
        engine.stop()
    except EngineError as error:
        if run_id is None:
            raise
        raise EngineError(f"{error} (run {run_id} is stored: `maximus show {run_id}`)") from None


def _begin(store: ResultsStore, engine: Engine, build: Build, options: BenchmarkOptions,
           prepared: PreparedDatabase, changes: system.Done) -> _Begun:
    """The run's row, stored as it starts."""
    server_side = server_side_run(options, engine, build.workload)
    run_settings = build.workload.run_settings(build.settings, options.seed, prepared.info, server_side)
    session = engine.connect()
    try:
        reported = engine.reported_settings(session)
        session.begin()
        build.workload.mark_used(session)
        session.commit()
    finally:
        session.close()
    spec = RunSpec(engine.name, {**engine.settings, **options.os_knobs}, build.workload.name,
                   build.settings.to_mapping(), options.terminals, options.warmup_s, options.duration_s, options.seed,
                   engine.database,
                   {"transactions": "server" if server_side else "client",
                    "isolation": isolation_text(engine, build, run_settings),
                    EMBEDDED: "yes" if embedded(type(engine)) else "no",
                    **({RATE: f"{options.rate:g}", ARRIVALS_OPTION: options.arrivals} if options.rate else {})})
    start = RunStart(
        spec=spec, effective_knobs=engine.effective_settings, engine_settings=reported,
        load_seconds=prepared.info.load_seconds, loaded_in_run=prepared.loaded_now, load_seed=prepared.info.seed,
        constants=dict(build.workload.recorded_inputs(prepared.info, run_settings)),
        environment=environment.fingerprint(engine.data_path(), engine.name, engine.version())
        | changes.environment,
        warnings=(*engine.durability_warnings(), *changes.durability,
                  *build.workload.warnings(build.settings, options.terminals),
                  *engine.reported_otherwise(reported), *changes.warnings),
        experiment_id=options.experiment_id, plan_key=options.plan_key,
        reading=build.workload.reading(build.settings, options.terminals))
    return _Begun(store.begin_run(start), start, run_settings)


def isolation_text(engine: Engine, build: Build, run_settings: Any) -> str:
    """How each transaction is isolated in this run (TPC-C 3.4.0.1): the level it runs at, and what its
    statements do for the rest; recorded with the run."""
    transactions = build.workload.transactions(engine.dialect, run_settings).values()
    return "; ".join(f"{t.name}: {engine.isolation(t.one_snapshot, run_settings.server_side)}, {t.isolation_means}"
                     for t in transactions)


def deferred_workers(terminals: int) -> int:
    """One deferred worker per 10 terminals (TPC-C's Delivery is 4 % of the mix, about ten New-Orders of work
    each), at most two per core: beyond that processes cost memory, not throughput."""
    return max(1, min(terminals // 10, 2 * (os.cpu_count() or 1)))


def own_deferred(engine: Engine, hosting: str, scheduled: bool = False) -> bool:
    """Whether the terminal processes execute the deferred transactions they queue, with no deferred worker.

    Busy terminals sharing a process do, on a session of the process's. So does every terminal of an engine with one
    writer at a time (SQLite), on its own connection: a deferred worker's Delivery would wait for the terminals'
    writes anyway, and in WAL mode each connection's commit empties the other connections' page caches, so a second
    connection reads again what the first had cached, and the two processes hand the write lock to each other. A
    fixed-rate run's terminals keep their deferred workers: a Delivery a terminal executed itself would hold back its
    next intended starts. An engine whose settings allow one connection only has no choice."""
    return (hosting == "multiplexed" or (engine.capabilities.single_writer and not scheduled)
            or engine.one_connection())


def terminal_hosting(engine: Engine, run_settings: Any, terminals: int, scheduled: bool = False) -> tuple[str, int]:
    """How the terminals share worker processes (``DriveSpec.hosting``) and how many each process hosts.

    Sharing needs every transaction to be one call (``RunSettings.one_call``: TPC-C's server-side mode, a single
    read). Busy terminals (no keying or think times) share one process per core, each keeping a call in flight, on
    engines that split a call in two: far cheaper than a process each once there are more terminals than cores. Keyed
    terminals, which mostly wait, share one process per core on an event loop, so a thousand fit in
    little memory. Everything else, a fixed-rate run's scheduled terminals included, gets a process per terminal.
    """
    if scheduled:
        return "process", 1
    shared = -(-terminals // min(terminals, os.cpu_count() or 1))
    if run_settings.one_call and not run_settings.pauses and engine.capabilities.split_calls:
        return "multiplexed", shared
    if run_settings.one_call and run_settings.pauses and engine.capabilities.async_sessions:
        return "asyncio", shared
    return "process", 1


def _drive_and_store(store: ResultsStore, begun: _Begun, engine: Engine, build: Build, options: BenchmarkOptions,
                     observer: Observer | None, watch: Callable[[], str | None],
                     seen: Callable[[], system.Seen], placed: hosts.PlacedHosts | None = None) -> DriveResult:
    """Drive the terminals and store what they did, with what the machine's changes saw by the end (``seen``: a
    memory limit's peak usage; its OOM kills, the cause of a run that failed)."""
    hosting, per_process = terminal_hosting(engine, begun.run_settings, options.terminals, options.rate is not None)
    schedule = RateSchedule(options.rate, options.arrivals, options.terminals, options.seed) if options.rate else None
    spec = DriveSpec(engine, build.workload, begun.run_settings, options.terminals, options.warmup_s,
                     options.duration_s,
                     deferred_workers=0 if own_deferred(engine, hosting, schedule is not None)
                     else deferred_workers(options.terminals),
                     hosting=hosting, terminals_per_process=per_process, schedule=schedule)
    monitor = Monitor(run_samplers(engine), Window(options.warmup_s, options.warmup_s + options.duration_s)) \
        if options.monitor else None
    try:
        driven, on_hosts = _driven(spec, options, build, observer, monitor, watch, placed)
        result = _judged(driven, options.max_failed_percent)
    except BaseException as error:  # the run row must not stay "running": record why it ended
        status = RunStatus.INTERRUPTED if isinstance(error, KeyboardInterrupt) else RunStatus.FAILED
        reason, warnings = f"{type(error).__name__}: {error}", monitor.warnings if monitor else []
        nothing = Window(options.warmup_s, options.warmup_s)  # no sample is stored: nothing was measured
        machine_seen = _seen_quietly(seen)
        _store_end(store, begun, monitor, RunEnd(status, errors=(*machine_seen.warnings, reason),
                                                 warnings=(*warnings, *machine_seen.warnings), window=nothing,
                                                 environment=machine_seen.environment))
        raise
    # The monitor's own notes (a sampler that failed) are the run's; the cross-checks and the client-bound verdict are
    # the read side's, recomputed from the stored samples (analysis.run.RunReport.warnings)
    warnings, machine_seen = monitor.warnings if monitor else [], seen()
    if result.status is RunStatus.FAILED:  # an OOM kill is the cause the rest follows from
        result.errors = [*machine_seen.warnings, *result.errors]
    _store_end(store, begun, monitor, RunEnd(result.status, result.samples, result.facts, tuple(result.errors),
                                             result.elapsed_s, (*warnings, *machine_seen.warnings), result.window,
                                             result.deferred, machine_seen.environment | on_hosts,
                                             interval_histograms(result.samples, result.window)))
    return result


def _driven(spec: DriveSpec, options: BenchmarkOptions, build: Build, observer: Observer | None,
            monitor: Monitor | None, watch: Callable[[], str | None],
            placed: hosts.PlacedHosts | None = None) -> tuple[DriveResult, dict[str, Any]]:
    """The terminals driven on this machine, or from the client hosts of a Ray cluster (``--ray``): the one place
    where that is chosen. With hosts, what each did is kept in the run's environment (``CLIENT_HOSTS``)."""
    if options.ray_address is None:
        return drive(spec, observer, monitor, watch), {}
    cluster = hosts.ClientHosts(options.ray_address, options.hosts, build.workload.homes(build.settings))
    on_hosts = hosts.drive_on_hosts(spec, cluster, observer, monitor, watch, placed)
    return on_hosts.result, {CLIENT_HOSTS: [host.to_json() for host in on_hosts.hosts]}


def _seen_quietly(seen: Callable[[], system.Seen]) -> system.Seen:
    """What the machine's changes saw, when a run ends with an error on its way: that error is the one to raise."""
    try:
        return seen()
    except (OSError, ValueError):
        return system.Seen()


def _store_end(store: ResultsStore, begun: _Begun, monitor: Monitor | None, end: RunEnd) -> None:
    """Store the run's monitoring samples and its ``end`` in the results database; if that fails, say because
    another process kept it locked for all of $MAXIMUS_RESULTS_TIMEOUT, in a results database of its own beside
    it instead, and say where: what was measured is not lost, whatever holds the lock."""

    def write(target: ResultsStore, target_id: int) -> None:
        target.add_metric_samples(target_id, monitor.samples if monitor else [])
        target.finish_run(target_id, end)

    try:
        write(store, begun.run_id)
    except ResultsUnavailable as error:
        kept = store.path.with_name(f"{store.path.stem}.run-{begun.run_id}{store.path.suffix}")
        spare = ResultsStore(kept)
        try:
            spare_id = spare.begin_run(begun.start)
            write(spare, spare_id)
        finally:
            spare.close()
        raise ResultsUnavailable(f"{error}; run {begun.run_id} is kept in {kept} instead: `maximus show "
                                 f"{spare_id} --results {kept}`", error.exit_code) from None


def _judged(result: DriveResult, max_failed_percent: float) -> DriveResult:
    """A run that went to its end is failed all the same when too many of its transactions failed."""
    excess = failure_excess(result.samples, result.window, max_failed_percent)
    if result.status is RunStatus.COMPLETE and excess:
        result.status, result.errors = RunStatus.FAILED, [excess, *result.errors]
    return result


def failure_excess(samples: Samples | Sequence[TxnSample], window: Window, max_failed_percent: float) -> str | None:
    """Why the failed transactions of the measured window are too many to call the run a measurement,
    or None: they are at most ``max_failed_percent`` of all."""
    columns = samples_of(samples)
    counted = columns.in_window(window)
    failed = np.flatnonzero(counted & columns.with_outcome(Outcome.FAILED))
    total = int(np.count_nonzero(counted))
    if not len(failed) or 100 * len(failed) <= max_failed_percent * total:
        return None
    error = str(columns.error[failed[0]]).strip() if columns.error is not None else ""
    first = error.splitlines()[0] if error else "no error text"
    return (f"{len(failed):,} of {total:,} transactions in the measured window failed "
            f"({100 * len(failed) / total:.1f} %, more than the {max_failed_percent:g} % allowed); "
            f"the first: {first}")


def embedded(engine: type[Engine]) -> bool:
    """An engine without a server process runs inside Maximus's client processes (SQLite)."""
    return not engine.capabilities.server_process


def keep_engine_facts(store: ResultsStore) -> None:
    """Runs stored before Maximus kept whether their engine is embedded (``EMBEDDED`` of their options) get it now,
    from the engine's class where it is registered here: reading their results then needs no engine."""
    kept = {}
    for run_id, engine in store.runs_without_option(EMBEDDED):
        try:
            kept[run_id] = "yes" if embedded(engine_class(engine)) else "no"
        except UserError:  # an engine this Maximus does not know
            continue
    if kept:
        store.keep_run_option(EMBEDDED, kept)


def keep_readings(store: ResultsStore) -> None:
    """Runs stored before Maximus kept how to read them (``RunRecord.reading``) get it now, from their workload where
    it is registered here: reading their results then asks no workload."""
    kept = {}
    for record in store.runs_without_reading():
        try:
            workload = workload_named(record.spec.workload)
            kept[record.id] = workload.reading(workload.settings(record.spec.settings), record.spec.terminals)
        except UserError:  # a workload this Maximus does not know, or settings it no longer takes
            continue
    if kept:
        store.keep_run_readings(kept)


def run_samplers(engine: Engine) -> list[Sampler]:
    """The samplers of one run: the OS's, then the engine's own. Tests replace this to inject faults."""
    return [OsSampler(engine.data_path()), *engine.samplers()]


def _check_after(store: ResultsStore, run_id: int, engine: Engine, build: Build, result: DriveResult, check: bool,
                 watch: Callable[[], str | None]) -> list[CheckResult]:
    """The consistency check of the database the run left, on the run's server (not restarted). A fault it
    meets fails the run, which is then no result: the check never runs on a pristine copy restored instead."""
    if not check or result.status is not RunStatus.COMPLETE:
        return []
    try:
        if not engine.exists():  # the fault itself: never a reason to check the pristine copy instead
            raise EngineError(f"the database {engine.database} disappeared during the run")
        consistency = check_running(engine, build.workload, False)
    except Exception as error:
        cause = watch() or (str(error) if isinstance(error, EngineError) else engine.fault(describe(error)))
        if not cause:
            raise
        store.fail_run(run_id, cause)
        result.status, result.errors = RunStatus.FAILED, [cause, *result.errors]
        return []
    store.add_consistency(run_id, consistency)
    return consistency


def record_failed_run(options: BenchmarkOptions, reason: str) -> int:
    """Store a run that failed before it could start (a build that broke, a server that would not start)."""
    store = ResultsStore(options.results)
    try:
        spec = RunSpec(options.engine, dict(options.knobs), options.workload, dict(options.settings),
                       options.terminals, options.warmup_s, options.duration_s, options.seed, options.database or "")
        run_id = store.begin_run(RunStart(spec, effective_knobs=dict(options.knobs), engine_settings={},
                                          load_seconds=None, loaded_in_run=False, load_seed=None, constants={},
                                          environment=environment.fingerprint(Path(options.workdir), options.engine,
                                                                              ""),
                                          experiment_id=options.experiment_id, plan_key=options.plan_key))
        store.finish_run(run_id, RunEnd(RunStatus.FAILED, errors=(reason,)))
        return run_id
    finally:
        store.close()
