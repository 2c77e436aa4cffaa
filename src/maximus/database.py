"""A benchmark database's life: the engine that holds it, its build (timed, kept as a pristine copy), the
restore every run starts from, its consistency check, and the locks that keep another Maximus off it."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol

from maximus import locks
from maximus.engines import Engine, check_connection, runnable_engine
from maximus.errors import EngineError, MaximusError, UserError, describe
from maximus.records import CheckResult
from maximus.workloads import workload as workload_named
from maximus.workloads.base import DatabaseInfo, LoadResult, Progress, Settings, SplitLoad, Workload, tallied

_log = logging.getLogger(__name__)  # what the user should know besides the error (the CLI prints it as a note)

# Who loads a build's per-home rows, when not this process: a run's client hosts (``driver.hosts.load_on_hosts``)
HomesLoader = Callable[[SplitLoad, Progress], None]


def default_workdir() -> Path:
    """``$MAXIMUS_WORKDIR``, else ``./maximus-work``: where databases are built (choose the disk under test)."""
    return Path(os.environ.get("MAXIMUS_WORKDIR") or "maximus-work")


@dataclass(frozen=True)
class Build:
    """What a database holds: a workload and its settings (TPC-C: warehouses, ...), validated by it."""

    workload: Workload
    settings: Settings

    @classmethod
    def of(cls, workload: str = "tpcc", settings: Mapping[str, Any] | None = None) -> Build:
        chosen = workload_named(workload)
        return cls(chosen, chosen.settings(settings or {}))

    @property
    def database(self) -> str:
        return self.workload.database_name(self.settings)

    @property
    def scale(self) -> int:
        return self.workload.scale(self.settings)


class LoadProgress(Protocol):
    def start(self, expected_rows: Mapping[str, int]) -> None: ...

    def advance(self, table: str, rows: int) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True)
class PreparedDatabase:
    info: DatabaseInfo
    loaded_now: bool


def make_engine(name: str, workdir: Path, build: Build, knobs: Mapping[str, str], database: str | None = None,
                connection: Mapping[str, str] | None = None) -> Engine:
    """The engine with validated knobs; by default its database name tells apart builds with other
    creation knobs, so a page size change gets a build of its own."""
    cls = runnable_engine(name)
    check_connection(cls, connection or {})
    catalogue = cls.catalogue_for(knobs, connection or {})
    settings = catalogue.resolve(knobs)
    changed = {k.name: settings[k.name] for k in catalogue if k.applies == "creation" and k.name in settings
               and settings[k.name] != k.default}
    suffix = "".join(f"-{key}{value}" for key, value in sorted(changed.items()))
    return cls(Path(workdir), database or f"{build.database}{suffix}", settings, connection)


def load_database(engine: Engine, build: Build, seed: int, progress: LoadProgress | None = None,
                  homes_loader: HomesLoader | None = None) -> LoadResult:
    """Build the database from scratch, time it, and keep it as the pristine copy for later runs: the
    working copy may then be missing until ``engine.restore()``, which every run begins with. ``homes_loader``:
    who loads the per-home rows of a workload that splits its build (``Workload.split_load``)."""
    # A build starts from nothing. On PostgreSQL, dropping the old pristine copy after the load instead
    # would cost a checkpoint of the new data: dropping a database that exists forces one.
    engine.destroy()
    if progress:
        progress.start(build.workload.expected_rows(build.settings))
    try:
        result = _built(engine, build, seed, progress.advance if progress else lambda table, rows: None,
                        homes_loader)
        engine.keep_as_pristine()
    except BaseException as error:  # a build cut short leaves nothing: no half of it filling the disk
        quietly(engine.discard_build, f"removing the unfinished build of {engine.database}")
        raise_fault(engine, error, f"the build of {engine.database} failed: ", reported=True)
        raise
    finally:
        if progress:
            progress.finish()
    return result


def _built(engine: Engine, build: Build, seed: int, progress: Progress,
           homes_loader: HomesLoader | None) -> LoadResult:
    """The workload's build; its per-home rows by ``homes_loader`` where the workload offers its build in parts."""
    split = build.workload.split_load(engine, build.settings, seed) if homes_loader else None
    if split is None or homes_loader is None:
        return build.workload.load(engine, build.settings, seed, progress)
    rows: dict[str, int] = {}
    split.begin()
    homes_loader(split, tallied(rows, progress))
    return split.finish(rows)


def raise_fault(engine: Engine, error: BaseException, prefix: str = "", reported: bool = False) -> None:
    """An error of the engine's driver or of the file system that the engine explains (a full disk, a lost
    server) as the one line it means; anything else goes on as it is (a bug keeps its traceback). ``reported``:
    Maximus's own errors too (a loader process's failure, reported in its words)."""
    if not isinstance(error, Exception) or (isinstance(error, MaximusError) and not reported):
        return
    cause = engine.fault(str(error) if isinstance(error, MaximusError) else describe(error))
    if cause:
        raise EngineError(prefix + cause) from None


def quietly(action: Callable[[], None], what: str) -> None:
    """Clean-up while another error is on its way: a failure of its own is noted, never put in that error's place."""
    try:
        action()
    except Exception as error:
        _log.warning("%s failed too: %s", what, " ".join(str(error).split()))


def prepare_database(engine: Engine, build: Build, seed: int, progress: LoadProgress | None = None,
                     rebuild: bool = False, restore: bool = True,
                     homes_loader: HomesLoader | None = None) -> PreparedDatabase:
    """Start from the pristine copy when there is one (same scale and build knobs), else load first
    (``homes_loader``: as ``load_database``'s)."""
    loaded_now = rebuild or not engine.has_snapshot()
    if loaded_now:
        load_database(engine, build, seed, progress, homes_loader)
    if restore or loaded_now or not engine.exists():
        restored(engine)
    info = _database_info(engine, build.workload)
    if info is None or not _built_as_asked(info, engine, build):
        if not loaded_now:
            return prepare_database(engine, build, seed, progress, rebuild=True,  # an unfinished or foreign copy
                                    homes_loader=homes_loader)
        raise EngineError(f"the database just built in {engine.workdir} does not read back as built "
                          f"({build.workload.name}, {build.settings.to_mapping()})")
    with _session(engine) as session:
        build.workload.prepare(engine, session, loaded_now)
    return PreparedDatabase(replace(info, files=engine.data_path()), loaded_now)


def _built_as_asked(info: DatabaseInfo, engine: Engine, build: Build) -> bool:
    """A complete build of this scale with the knobs fixed at creation that the run asks for. A database
    name does not promise it: two experiments of one name share their steps' names, and the second one's
    build of a step with another page size would be taken, and labelled, for the first one's."""
    return info.scale == build.scale and info.creation_settings == engine.creation_settings()


def restored(engine: Engine) -> None:
    """The working copy made again from the pristine one; a fault of the engine's as its one line."""
    try:
        engine.restore()
    except Exception as error:
        raise_fault(engine, error, f"restoring the pristine copy of {engine.database} failed: ")
        raise


def _database_info(engine: Engine, workload: Workload) -> DatabaseInfo | None:
    with _session(engine) as session:
        return workload.database_info(session, engine.dialect)


@contextmanager
def _session(engine: Engine) -> Iterator[Any]:
    session = engine.connect()
    try:
        yield session
    finally:
        session.close()


def check_database(engine: Engine, workload: Workload, fresh: bool | None = None,
                   announce: Callable[[str], None] = lambda message: None) -> list[CheckResult]:
    """The workload's consistency conditions (TPC-C: the twelve of 3.3.2, 11 only on a freshly built
    database), then the engine's own check of its storage (``Engine.integrity_check``). With no working copy but a
    pristine one (a build with no run since), the pristine copy is restored, ``announce``d, and checked: the user
    asked for a check of this build. After a run that is never done (``runs``): only the workload's conditions
    are, there."""
    with running(engine):
        if not engine.exists() and engine.has_snapshot():
            announce(f"No working copy of {engine.database}: checking its pristine copy, restored")
            restored(engine)
        if not engine.exists():
            raise UserError(f"no database at {engine.workdir} named {engine.database}: run `maximus load` first")
        return check_running(engine, workload, fresh) + integrity_of(engine)


def integrity_of(engine: Engine) -> list[CheckResult]:
    """The engine's own check of the database's storage, on its running server."""
    with _session(engine) as session:
        return engine.integrity_check(session)


def check_running(engine: Engine, workload: Workload, fresh: bool | None) -> list[CheckResult]:
    """The check of the working copy as it is, on the engine's running server."""
    with _session(engine) as session:
        info = workload.database_info(session, engine.dialect)
        if info is None:
            raise UserError(f"{engine.database} is not a complete Maximus {workload.name} database of this version: "
                            "load it again")
        return workload.check(session, info.fresh if fresh is None else fresh, engine.dialect)


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
            quietly(engine.stop, f"stopping {engine.name}")
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
