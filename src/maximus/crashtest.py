"""Crash tests: a configuration's durability measured, not assumed (TPC-C 3.5.4, issue #42).

Each cycle restores the pristine database, reads the workload's baseline, releases busy terminals that append every
acknowledged outcome to a success log, and at a seeded moment crashes the database under them: a SIGKILL of every
server process (``process``; an embedded engine's processes are the terminals), or a power cut of the power-cut layer
its files are on (``power``: the layer stops serving, the server and the terminals are killed, the crash state the
seed draws is built, and the layer is mounted again). The engine is then restarted, its recovery timed to the first
query answered, and the recovered database verified: the success log against the data (the workload's), the
workload's consistency conditions, the engine's own integrity check. The verdict (durable, lost N acknowledged
commits, inconsistent) is stored with the configuration, the seed and the documented loss window; a crash test is
never a throughput figure.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from maximus import environment, limits, system
from maximus.database import (Build, LoadProgress, PreparedDatabase, check_running, integrity_of, locked,
                              make_engine, prepare_database, quietly)
from maximus.driver.crashload import CrashLoad, CrashLoadSpec
from maximus.engines import Engine, engine_class
from maximus.errors import EngineError, UserError, describe
from maximus.records import (CheckResult, CrashMode, CrashTest, DurabilityFindings, Verdict, verdict_of)
from maximus.runs import BenchmarkOptions, server_side_run
from maximus.store import ResultsStore
from maximus.system.kinds import PowerCutLayer

RECOVERY_CHECK = 300  # the engine came back: numbered after the workload's conditions and its verification's
_TICK_S = 0.25


@dataclass(frozen=True)
class CrashTestOptions:
    """A crash test of the configuration ``benchmark`` names (engine, knobs, workload, terminals, seed, where); its
    crash falls at a moment the seed draws between ``benchmark.warmup_s`` and the end of ``benchmark.duration_s``."""

    benchmark: BenchmarkOptions
    mode: CrashMode = CrashMode.PROCESS
    crashes: int = 1
    # A power cut's odds for each pending write: kept, dropped, garbled (random bytes over its sectors), torn (some of
    # its sectors written). A disk writes a sector whole or not at all, which every engine's recovery assumes: garbage
    # is a disk's fault, not a power cut's, and is left out unless asked for (docs/durability.md).
    weights: tuple[float, float, float, float] = (1.0, 1.0, 0.0, 1.0)

    def validate(self) -> None:
        self.benchmark.validate()
        limits.check("--crashes", self.crashes, limits.CRASHES)
        if not self.benchmark.build.workload.crash_testable:
            raise UserError(f"the {self.benchmark.workload} workload keeps no success log: it has no crash test")
        if len(self.weights) != 4 or any(weight < 0 for weight in self.weights) or not sum(self.weights[:2]):
            raise UserError("a power cut's weights (kept, dropped, garbled, torn) are four numbers of at least 0, kept "
                            "or dropped above 0")


class CrashObserver(Protocol):
    """What a crash test shows as it goes: each cycle as it starts, the terminals' acknowledged outcomes now and then,
    and each verdict as it is stored."""

    def cycle(self, number: int, total: int, crash_at_s: float) -> None: ...

    def tick(self, elapsed_s: float, acknowledged: int) -> None: ...

    def verdict(self, test_id: int, test: CrashTest) -> None: ...


@dataclass
class _Cycle:
    """What one cycle learnt before its verification."""

    entries: list[str]
    baseline: Any
    crashed_at_s: float
    notes: list[str] = field(default_factory=list)


def crash_test(options: CrashTestOptions, observer: CrashObserver | None = None,
               progress: LoadProgress | None = None, layouts: system.KeptLayouts | None = None) -> list[int]:
    """Run ``options.crashes`` crash, recovery and verification cycles; the stored crash tests' ids."""
    options.validate()
    bench = options.benchmark
    kind = engine_class(bench.engine)
    if kind.capabilities.server_process and not kind.manages_server_for(bench.connection):
        raise UserError(f"a crash test kills the {kind.name} server: it needs a server Maximus manages, not one of "
                        "yours (--dsn)")
    named = _engine(bench, bench.workdir)
    layer = PowerCutLayer(options.weights) if options.mode is CrashMode.POWER else None
    extra = [(system.Stage.PLACE, layer)] if layer else []
    with system.changed(bench.os_knobs, named, lambda workdir: _engine_on(bench, workdir, layer),
                        bench.system_changes, layouts, extra) as machine:
        store = ResultsStore(bench.results)
        try:
            store.check_writable()
            return [_cycle(store, machine, options, layer, number, observer, progress)
                    for number in range(options.crashes)]
        finally:
            store.close()
            quietly(machine.engine.stop, f"stopping {machine.engine.name}")


def _engine(options: BenchmarkOptions, workdir: Path) -> Engine:
    return make_engine(options.engine, workdir, options.build, options.engine_knobs, options.database,
                       options.connection)


@contextmanager
def _engine_on(options: BenchmarkOptions, workdir: Path, layer: PowerCutLayer | None) -> Iterator[Engine]:
    """The engine on the work directory the changes chose, kept from other Maximus processes: on the power-cut layer,
    by a lock on the disk under it, which outlives the layer's remounts at each cut."""
    engine = _engine(options, workdir)
    engine.validate_run(options.terminals)
    with locked(_engine(options, layer.mount.backing) if layer and layer.mount else engine):
        yield engine


def cycle_seed(seed: int, number: int) -> int:
    """The seed of cycle ``number`` (from 0) of a test seeded ``seed``: the first cycle's is ``seed`` itself, so that a
    stored crash test's seed given to ``--seed`` with one crash draws that cycle again."""
    if number == 0:
        return seed
    return random.Random(f"maximus crash test {seed} {number}").randrange(1, 2 ** 31)


def cycle_draws(seed: int, warmup_s: float, duration_s: float) -> tuple[float, int]:
    """What a cycle's seed draws beside its terminals' inputs: the crash moment, seconds after the terminals' release
    within [warmup, warmup + duration], and the power cut's seed."""
    draw = random.Random(f"maximus crash {seed}")
    return warmup_s + draw.random() * duration_s, draw.randrange(0, 2 ** 31)


def _cycle(store: ResultsStore, machine: system.Machine[Engine], options: CrashTestOptions,
           layer: PowerCutLayer | None, number: int, observer: CrashObserver | None,
           progress: LoadProgress | None) -> int:
    bench, engine = options.benchmark, machine.engine
    build = bench.build
    seed = cycle_seed(bench.seed, number)
    crash_at, cut_seed = cycle_draws(seed, bench.warmup_s, bench.duration_s)
    if observer:
        observer.cycle(number + 1, options.crashes, crash_at)
    cycle = replace(bench, seed=seed, rebuild=bench.rebuild and number == 0)
    prepared = _restored(machine, build, cycle, layer, progress)
    with machine.working():
        crashed = _crash_under_load(engine, build, cycle, prepared, crash_at, cut_seed, layer, observer)
    recovery_s, recovered_note = _recover(engine)
    findings, checks = _verify(engine, build, crashed, bench.terminals) if recovery_s is not None else \
        (DurabilityFindings(len(crashed.entries), 0, (), ()), [])
    test = CrashTest(
        engine.name, {**bench.engine_knobs, **bench.os_knobs}, build.workload.name, build.settings.to_mapping(),
        bench.terminals, options.mode, seed,
        verdict_of(findings, checks, recovery_s is not None), findings, tuple(checks), recovery_s,
        crashed.crashed_at_s, engine.loss_window(options.mode.value),
        tuple(crashed.notes + ([recovered_note] if recovered_note else [])),
        environment.fingerprint(engine.data_path(), engine.name, engine.version()) | machine.done().environment,
        bench.experiment_id, bench.plan_key)
    test_id = store.add_crash_test(test)
    if observer:
        observer.verdict(test_id, test)
    quietly(engine.stop, f"stopping {engine.name}")
    return test_id


def _restored(machine: system.Machine[Engine], build: Build, bench: BenchmarkOptions, layer: PowerCutLayer | None,
              progress: LoadProgress | None) -> PreparedDatabase:
    """The pristine database restored (built first with ``bench.rebuild`` or without one), then made durable as no
    crash can take back: the server stopped cleanly and started again, and the layer synced. A crash test measures
    what the terminals' commits lose, not the restore's: MariaDB's restore (IMPORT TABLESPACE) writes pages its redo
    log does not cover, and a SIGKILL soon after it took the whole run back, or left indexes corrupt."""
    engine = machine.engine
    engine.start()
    with machine.working():
        prepared = prepare_database(engine, build, bench.seed, progress, bench.rebuild, restore=True)
    engine.stop()
    engine.start()
    machine.server_started()
    if layer is not None and layer.mount is not None:
        layer.mount.sync()
    return prepared


def _crash_under_load(engine: Engine, build: Build, bench: BenchmarkOptions, prepared: PreparedDatabase,
                      crash_at: float, cut_seed: int, layer: PowerCutLayer | None,
                      observer: CrashObserver | None) -> _Cycle:
    """The restored database's baseline, the terminals (seeded by ``bench.seed``), and the crash at ``crash_at``
    seconds after their release."""
    server_side = server_side_run(bench, engine, build.workload)
    run_settings = build.workload.run_settings(build.settings, bench.seed, prepared.info, server_side)
    session = engine.connect()
    try:
        baseline = build.workload.durability_baseline(session)
        session.begin()
        build.workload.mark_used(session)
        session.commit()
    finally:
        session.close()
    with _success_logs() as log_dir:
        load = CrashLoad(CrashLoadSpec(engine, build.workload, run_settings, bench.terminals, log_dir))
        try:
            load.start()
            _wait_for_the_moment(load, crash_at, observer)
            crashed_at = time.monotonic() - (load.released_at or time.monotonic())  # the kill, not its end
            notes = _crash(engine, load, layer, cut_seed)
        finally:
            load.kill()
        return _Cycle(list(load.entries()), baseline, crashed_at, notes)


@contextmanager
def _success_logs() -> Iterator[Path]:
    """A directory for the success logs on a file system neither crash touches: /dev/shm (tmpfs) where there is
    one, which no database under test is on; removed after the cycle read it."""
    shm = Path("/dev/shm")
    directory = Path(tempfile.mkdtemp(prefix="maximus-success-log-", dir=shm if shm.is_dir() else None))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _wait_for_the_moment(load: CrashLoad, crash_at: float, observer: CrashObserver | None) -> None:
    """Until ``crash_at`` seconds after the release; terminals that all ended before it are a fault, not a crash."""
    assert load.released_at is not None
    while (elapsed := time.monotonic() - load.released_at) < crash_at:
        if not load.running():
            raise EngineError("every terminal of the crash test ended before the crash: nothing was crashed")
        if observer:
            observer.tick(elapsed, load.acknowledged())
        time.sleep(min(_TICK_S, crash_at - elapsed))


def _crash(engine: Engine, load: CrashLoad, layer: PowerCutLayer | None, cut_seed: int) -> list[str]:
    """The crash itself: the server and the terminals killed at once. A power cut then builds the crash state and
    mounts the layer again: a kill writes nothing back (the layer's mount caches no writes), so the disk holds at the
    cut what it held at the kill."""
    _kill(engine, load)
    if layer is None or layer.mount is None:
        return []
    report = layer.mount.cut(cut_seed)
    return [f"power cut {report.summary()}"]


def _kill(engine: Engine, load: CrashLoad) -> None:
    if engine.capabilities.server_process:
        engine.crash()
    load.kill()


def _recover(engine: Engine) -> tuple[float | None, str]:
    """The engine restarted and its first query answered: the seconds it took, or None and why it did not come back."""
    started = time.monotonic()
    try:
        engine.start()
        session = engine.connect()
        try:
            session.fetchone("SELECT 1")
        finally:
            session.close()
    except Exception as error:  # the verdict: it did not come back
        return None, f"{engine.name} did not come back after the crash: {describe(error).splitlines()[0]}"
    return time.monotonic() - started, ""


def _verify(engine: Engine, build: Build, crashed: _Cycle,
            terminals: int) -> tuple[DurabilityFindings, list[CheckResult]]:
    """The success log against the recovered data, then the workload's conditions and the engine's integrity check;
    an error in any of them is a failed check: the database did not come back whole."""
    findings = _or_failed(lambda: _findings(engine, build, crashed, terminals), "the success log could be verified")
    checks = _or_failed(lambda: check_running(engine, build.workload, False), "the consistency conditions could be "
                        "checked") + _or_failed(lambda: integrity_of(engine), "the engine's integrity check ran")
    if isinstance(findings, list):  # the verification itself failed
        return DurabilityFindings(sum(1 for _ in crashed.entries), 0, (), tuple(findings)), checks
    return findings, checks


def _findings(engine: Engine, build: Build, crashed: _Cycle, terminals: int) -> DurabilityFindings:
    session = engine.connect()
    try:
        return build.workload.verify_durability(session, crashed.entries, crashed.baseline, terminals)
    finally:
        session.close()


def _or_failed(check: Callable[[], Any], what: str) -> Any:
    try:
        return check()
    except Exception as error:
        return [CheckResult(RECOVERY_CHECK, "3.5.4", what, False, describe(error).splitlines()[0])]


__all__ = ["CrashObserver", "CrashTestOptions", "Verdict", "crash_test", "cycle_draws", "cycle_seed"]
