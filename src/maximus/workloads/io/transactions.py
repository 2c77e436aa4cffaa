"""The io workloads' transactions: one row read by its key, and one full scan. Each is a single read-only
statement, run in autocommit mode (``single_statement``): no BEGIN and COMMIT round trips, nothing but the read."""

from __future__ import annotations

from typing import Any, Sequence

from pathlib import Path

from maximus.engines.base import Dialect, Session
from maximus.system.memory import drop_cached
from maximus.workloads.io.schema import TABLE

# length() of every payload: the scan must read each row whole, which no index-only path can give
SCAN_SQL = f"SELECT COUNT(*), SUM(LENGTH(payload)) FROM {TABLE}"
READ_SQL = f"SELECT id, payload FROM {TABLE} WHERE id = ?"


class ReadRow:
    """io-random's transaction: the row of one id, through the primary key."""

    name = "read_row"
    read_only = True
    single_statement = True
    deferred = False
    one_snapshot = False
    isolation_means = "one SELECT by primary key, in autocommit mode"

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.convert = dialect.call_parameters

    def execute(self, session: Session, row_id: int) -> int:
        """The payload's width; a missing row is an error, not a result."""
        rows = session.fetchall(READ_SQL, (row_id,))
        if not rows:
            raise LookupError(f"no row {row_id} in {TABLE}: the database is not an io build of this size")
        return len(rows[0][1])

    def send_args(self, row_id: int) -> tuple[str, Sequence[Any]]:
        """The read as the engine's pump sends it for busy terminals sharing a process (``Session.send_call``), which
        reads its row and keeps none of it: a missing row is then found by the run's check of the table
        (``consistency``), not by the read."""
        return READ_SQL, self.convert((row_id,))

    @staticmethod
    def rolled_back_by_rule(error: BaseException) -> bool:
        return False  # a read has no rollback of its own

    def summed_facts(self, inputs: Sequence[Any]) -> dict[str, int]:
        return {}


class ScanTable:
    """io-scan's transaction: every row of the table, aggregated (PostgreSQL may run it with parallel workers,
    as ``max_parallel_workers_per_gather`` allows)."""

    name = "scan_table"
    read_only = True
    single_statement = True
    deferred = False
    one_snapshot = False
    isolation_means = "one SELECT of every row, in autocommit mode"

    def __init__(self, dialect: Dialect, cold_files: str | None = None) -> None:
        self.dialect, self.cold_files = dialect, cold_files

    def execute(self, session: Session, inputs: None = None) -> tuple[int, int]:
        """(rows, payload bytes) the scan counted; with cold caches, after the OS page cache of the database's files
        is dropped (within the scan's time: milliseconds, where the cold scan takes seconds)."""
        if self.cold_files is not None:
            drop_cached(Path(self.cold_files))
        counted = session.fetchone(SCAN_SQL)
        rows, payload = counted if counted else (0, 0)
        return int(rows), int(payload or 0)

    def summed_facts(self, inputs: Sequence[Any]) -> dict[str, int]:
        return {}
