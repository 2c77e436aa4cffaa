"""Builds a TPC-C database: schema, initial population (4.3.3.1), indexes, statistics, metadata."""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from maximus import __version__
from maximus.engines.base import Dialect, Engine, Session
from maximus.errors import EngineError
from maximus import workers as worker_processes
from maximus.workers import ignore_interrupts, spawning
from maximus.workloads.base import DatabaseInfo, Homes, LoadResult, Progress, SplitLoad, tallied
from maximus.workloads.tpcc import generate, schema
from maximus.workloads.tpcc.random import NURandConstants
from maximus.workloads.tpcc.server_side import procedures_sql
from maximus.workloads.tpcc.sql import statements

SQL = {"analyze": lambda table: f"ANALYZE {table}"}  # the shared SQL (sql/ has a dialect's own)
MONEY_IN_CENTS, MONEY_AS_DECIMALS = "cents", "decimal"


def load(engine: Engine, warehouses: int, seed: int, progress: Progress = lambda table, rows: None) -> LoadResult:
    """Provision ``engine``'s database and fill it with ``warehouses`` warehouses; time all of it."""
    build = WarehouseLoad.of(engine, warehouses, seed)
    build.begin()
    rows: dict[str, int] = {}
    tally = tallied(rows, progress)
    build.load_homes(range(1, warehouses + 1), _loader_processes(engine, warehouses), tally,
                     meanwhile=lambda: build.load_shared(tally))
    return build.finish(rows)


@dataclass(frozen=True)
class WarehouseLoad(SplitLoad):
    """A TPC-C build in parts: the schema, the items and the indexes from where the build is run, the warehouses
    (all but the items' rows) from here or from client hosts, each its own warehouses. Every warehouse is drawn
    from the seed and the warehouse's number alone, so whoever loads it writes the same rows."""

    engine: Engine
    warehouses: int
    seed: int
    constants: NURandConstants
    since: str  # the build's time, every warehouse's dates: taken once, where the build is run from
    started: float  # time.perf_counter() where the build is run from, at its start

    @classmethod
    def of(cls, engine: Engine, warehouses: int, seed: int) -> WarehouseLoad:
        return cls(engine, warehouses, seed, NURandConstants.for_load(seed),
                   datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"), time.perf_counter())

    @property
    def homes(self) -> Homes:
        return Homes(self.warehouses, "warehouses")

    def begin(self) -> None:
        self.engine.provision()
        with _connected(self.engine) as session:
            for statement in schema.schema_statements(self.engine.dialect):
                session.execute(statement)

    def load_shared(self, progress: Progress) -> None:
        with _connected(self.engine) as session:
            _write(self.engine, session, generate.items(self.seed), progress)

    def load_homes(self, homes: Sequence[int], processes: int, progress: Progress,
                   meanwhile: Callable[[], None] = lambda: None) -> None:
        """The warehouses ``homes``, dealt in turn to ``processes`` processes (one: this one); ``meanwhile`` runs
        here while they do."""
        processes = max(1, min(processes, len(homes)))
        if processes == 1:
            meanwhile()
            with _connected(self.engine) as session:
                for w_id in homes:
                    _write(self.engine, session, self._warehouse(w_id), progress)
            return
        shares = [list(homes[first::processes]) for first in range(processes)]
        _parallel(self.engine, self.seed, self.constants.c_last, self.since, shares, progress, meanwhile)

    def finish(self, rows: Mapping[str, int]) -> LoadResult:
        with _connected(self.engine) as session:
            _index_and_analyze(self.engine, session, rows)
            install_procedures(self.engine.dialect, session)
            seconds = time.perf_counter() - self.started
            _write_meta(session, self.warehouses, self.seed, self.constants, seconds,
                        self.engine.creation_settings(), schema.money_in_cents(self.engine.dialect))
        return LoadResult(self.warehouses, self.seed, seconds, dict(rows), self.constants)

    def _warehouse(self, w_id: int) -> Iterator[generate.Chunk]:
        return generate.warehouse_chunks(self.seed, w_id, self.constants.c_last, self.since)


@contextmanager
def _connected(engine: Engine) -> Iterator[Session]:
    session = engine.connect()
    try:
        yield session
    finally:
        session.close()


def install_procedures(dialect: Dialect, session: Session) -> None:
    """Create or replace the stored functions of server-side mode, where the dialect has them."""
    procedures = procedures_sql(dialect)
    if procedures:
        session.execute(procedures)


def _index_and_analyze(engine: Engine, session: Session, rows: Mapping[str, int]) -> None:
    """Keys, indexes and statistics: one table after another on a single-writer engine, else the
    tables side by side, biggest first, on one session per core (each index build is one process)."""
    if engine.capabilities.single_writer:
        for statement in schema.index_statements(engine.dialect) + ["ANALYZE"]:
            session.execute(statement)
        return
    by_table = schema.index_statements_by_table(engine.dialect)
    tables = sorted(rows, key=lambda table: rows[table], reverse=True)
    analyze = statements("load", SQL, engine.dialect)["analyze"]
    _side_by_side(engine, [by_table.get(table, []) + [analyze(table)] for table in tables])
    session.execute(analyze(schema.META_TABLE))


def _side_by_side(engine: Engine, scripts: list[list[str]]) -> None:
    """Each script's statements in turn on a session of its own, one session per core.

    A failure or a Ctrl-C stops the others: pool.map drops the scripts not begun, and the statements under
    way are cancelled, or leaving the pool would wait for each (an index build takes minutes at 100
    warehouses)."""
    stopping = threading.Event()
    opened: list[Session] = []  # appended to only, so the main thread can copy it while others append

    def run(script: list[str]) -> None:
        own = engine.connect()
        opened.append(own)
        try:
            for statement in script:
                if stopping.is_set():
                    return
                own.execute(statement)
        finally:
            own.close()

    with ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, len(scripts)))) as pool:
        try:
            list(pool.map(run, scripts))  # list(): the first failure is raised here
        except BaseException:
            stopping.set()
            for other in list(opened):
                other.cancel()  # a closed one has nothing to stop
            raise


def _write(engine: Engine, session: Session, chunks: Iterator[generate.Chunk], tally: Progress) -> None:
    """One commit per group of chunks (the items, or one warehouse)."""
    session.begin()
    for chunk in chunks:
        engine.bulk_insert_columns(session, chunk.table, chunk.columns, stored_columns(chunk, engine.dialect))
        tally(chunk.table, len(chunk))
    session.commit()


def stored_columns(chunk: generate.Chunk, dialect: Dialect) -> tuple[np.ndarray, ...]:
    """The chunk's columns as the dialect stores them: money in integer cents where it keeps money so (the
    generator draws whole cents, so the conversion is exact)."""
    if not schema.money_in_cents(dialect):
        return chunk.values
    money = schema.money_columns(schema.TABLES_BY_NAME[chunk.table])
    return tuple(np.rint(np.asarray(values) * 100).astype(np.int64) if name in money else values
                 for name, values in zip(chunk.columns, chunk.values))


def _loader_processes(engine: Engine, warehouses: int) -> int:
    """Engines with concurrent writers load warehouses in parallel, one process per core."""
    if engine.capabilities.single_writer or warehouses < 2:
        return 1
    return max(1, min(os.cpu_count() or 1, warehouses))


def _parallel(engine: Engine, seed: int, c_load: int, since: str, shares: list[list[int]], tally: Progress,
              meanwhile: Callable[[], None]) -> None:
    """A worker process per share of the warehouses; each generates and streams its own. ``meanwhile`` (the items,
    on one machine) runs in this process while the workers start."""
    context = worker_processes.context()
    reports = context.Queue()
    with spawning():  # a Ctrl-C to the process group while they import is theirs to drop, not to print
        processes = [worker_processes.start(context, _load_share, (engine, seed, c_load, since, share, reports))
                     for share in shares]
    try:
        meanwhile()
        failures = _await(len(processes), reports, tally)
    except BaseException:  # Ctrl-C (which the workers leave to this process) or a failure here: end them
        for process in processes:
            process.terminate()
        raise
    finally:
        for process in processes:
            process.join()
    if failures:
        raise EngineError(f"a loader process failed: {failures[0]}")


def _await(workers: int, reports: Any, tally: Progress) -> list[str]:
    """The workers' progress as it comes, until each is done; their failures. Once each has started, the queue's
    semaphores are unnamed (``worker_processes.unlink_semaphores``)."""
    started, finished, failures = 0, 0, []
    while finished < workers:
        kind, *payload = reports.get()
        if kind == "started":
            started += 1
            if started == workers:
                worker_processes.unlink_semaphores(reports)
        elif kind == "rows":
            tally(*payload)
        else:
            finished += 1
            failures += [payload[0]] if payload and payload[0] else []
    return failures


def _load_share(engine: Engine, seed: int, c_load: int, since: str, w_ids: list[int], reports: Any) -> None:
    ignore_interrupts()
    reports.put(("started",))  # it has the queue open
    try:
        session = engine.connect()
        try:
            for w_id in w_ids:
                _write(engine, session, generate.warehouse_chunks(seed, w_id, c_load, since),
                       lambda table, written: reports.put(("rows", table, written)))
        finally:
            session.close()
        reports.put(("done", ""))
    except Exception as error:  # reported to the parent, which fails the load with it
        reports.put(("done", f"{type(error).__name__}: {error}"))


def _write_meta(session: Session, warehouses: int, seed: int, constants: NURandConstants, seconds: float,
                creation_settings: dict[str, str], money_in_cents: bool) -> None:
    meta = {
        "workload": "tpcc", "warehouses": warehouses, "seed": seed, "c_load_c_last": constants.c_last,
        "c_load_c_id": constants.c_id, "c_load_ol_i_id": constants.ol_i_id, "load_seconds": round(seconds, 3),
        "fresh": 1, "creation_settings": json.dumps(creation_settings), "maximus_version": __version__,
        "money": MONEY_IN_CENTS if money_in_cents else MONEY_AS_DECIMALS,
        "loaded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    session.begin()
    for name, value in meta.items():
        session.execute(f"INSERT INTO {schema.META_TABLE} (name, value) VALUES (?, ?)", (name, str(value)))
    session.commit()


def read_info(session: Session, dialect: Dialect) -> DatabaseInfo | None:
    """The metadata of a loaded database, or None when it is not a complete Maximus TPC-C load that this
    Maximus's transactions can run on (an SQLite build that keeps money as REAL is built again)."""
    try:
        meta = dict(session.fetchall(f"SELECT name, value FROM {schema.META_TABLE}"))
    except Exception:  # no such table: not ours, or the load never finished
        session.rollback()
        return None
    if meta.get("workload") != "tpcc":
        return None
    if (meta.get("money") == MONEY_IN_CENTS) != schema.money_in_cents(dialect):  # a SQLite build with money as REAL
        return None
    constants = NURandConstants(int(meta["c_load_c_last"]), int(meta["c_load_c_id"]), int(meta["c_load_ol_i_id"]))
    return DatabaseInfo(int(meta["warehouses"]), int(meta["seed"]), float(meta["load_seconds"]), meta["fresh"] == "1",
                        json.loads(meta["creation_settings"]), constants)


def mark_used(session: Session) -> None:
    """A run changes the data: consistency condition 11 (3.3.2.11) no longer applies."""
    session.execute(f"UPDATE {schema.META_TABLE} SET value = '0' WHERE name = 'fresh'")
