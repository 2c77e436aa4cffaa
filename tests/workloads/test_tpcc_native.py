"""TPC-C's transactions in C on a SQLite connection (workloads/tpcc/native.py, _profiles.c over its SQLite backend)
held to the Python transactions, their reference: the same inputs, run each way from the same database, execute the
same statements (SQLite's own trace of the connection, every parameter's value written in), return the same screens
and leave the same database, which passes the twelve consistency conditions."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from maximus import api
from maximus.driver.retry import RetryPolicy
from maximus.driver.terminal import transaction_runner
from maximus.engines.sqlite import SQLiteEngine, SQLiteSession, connection_handle
from maximus.records import Outcome
from maximus.workloads.tpcc import Tpcc, native
from maximus.workloads.tpcc.kinds import TRANSACTION_TYPES, transactions_for
from maximus.workloads.tpcc.delivery import DeliveryInput
from maximus.workloads.tpcc.new_order import NewOrderInput, OrderLine
from maximus.workloads.tpcc.schema import TABLES
from maximus.workloads.tpcc.screens import DeliveryResult

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
DIALECT = SQLiteEngine.dialect
NOT_COMPILED = ("maximus.workloads.tpcc._profiles was not compiled: pip install -e . needs a C compiler "
                "(docs/sqlite.md)")
DRAWN = 600  # a terminal's first transactions: every type, New-Orders rolled back by rule among them
DATE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$")  # 'now' as SQLite's clock writes it


@pytest.fixture
def copies(built_workdir: Path, tmp_path: Path) -> dict[str, SQLiteEngine]:
    """Two private copies of the pristine build: one for each way of running the transactions."""
    engines = {}
    for way in ("python", "c"):
        shutil.copytree(built_workdir, tmp_path / way)
        engine = api.make_engine("sqlite", tmp_path / way, ONE_WAREHOUSE, {})
        engine.restore()
        assert isinstance(engine, SQLiteEngine)
        engines[way] = engine
    return engines


def _undated(value: Any) -> Any:
    """A screen with the dates this run stamped (SQLite's clock, as text) replaced by a marker: the two ways read
    the clock at different moments."""
    if isinstance(value, str) and DATE.match(value):
        return "date"
    if isinstance(value, tuple):
        parts = [_undated(item) for item in value]
        return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
    return value


def _traced(engine: SQLiteEngine, way: str, work: list[tuple[str, Any]]) -> tuple[list[str], list[Any]]:
    session = engine.connect()
    try:
        assert session.library_handle() is not None  # looked for (one statement) before the trace starts
        statements: list[str] = []
        session.connection.set_trace_callback(statements.append)
        screens = [_undated(screen) for screen in tpcc_modes.native_screens(session, DIALECT, way, work)]
        session.connection.set_trace_callback(None)
        return statements, screens
    finally:
        session.close()


def _differences(one: SQLiteEngine, other: SQLiteEngine) -> dict[str, int]:
    """Rows of each table that one database has and the other has not, either way, dates left out."""
    connection = sqlite3.connect(one.path)
    try:
        connection.execute("ATTACH DATABASE ? AS other", (str(other.path),))
        differences = {}
        for table in TABLES:
            columns = ", ".join(name for name, kind in table.columns if kind != "TIMESTAMP")
            (count,) = connection.execute(
                f"SELECT count(*) FROM (SELECT {columns} FROM main.{table.name} EXCEPT "
                f"SELECT {columns} FROM other.{table.name}) UNION ALL SELECT count(*) FROM (SELECT {columns} "
                f"FROM other.{table.name} EXCEPT SELECT {columns} FROM main.{table.name})").fetchall()[0]
            differences[table.name] = count
        return differences
    finally:
        connection.close()


def test_the_c_profiles_run_the_same_statements_return_the_same_screens_and_leave_the_same_database(
        copies: dict[str, SQLiteEngine]) -> None:
    assert native.available(DIALECT), NOT_COMPILED
    session = copies["python"].connect()
    try:
        work = tpcc_modes.native_work(session, DIALECT, DRAWN)
    finally:
        session.close()
    python_statements, python_screens = _traced(copies["python"], "python", work)
    c_statements, c_screens = _traced(copies["c"], "c", work)
    assert sum(screen == "rolled back" for screen in python_screens) >= 2  # the unused item's, and a drawn one's
    assert {name for name, _ in work} == {kind.name for kind in TRANSACTION_TYPES}
    assert len(c_statements) == len(python_statements) > 10 * len(work)
    for n, (python_statement, c_statement) in enumerate(zip(python_statements, c_statements)):
        assert c_statement == python_statement, n
    for n, (python_screen, c_screen) in enumerate(zip(python_screens, c_screens)):
        assert c_screen == python_screen, (n, work[n])
    assert set(_differences(copies["python"], copies["c"]).values()) == {0}
    session = copies["c"].connect()
    try:
        failed = [check for check in Tpcc().check(session, False, DIALECT) if check.passed is False]
    finally:
        session.close()
    assert not failed


def test_a_run_runs_its_transactions_in_c_with_begin_and_commit_as_in_python(copies: dict[str, SQLiteEngine]) -> None:
    """A run's transactions (run settings given) are wrapped, each one whole: the driver sends no BEGIN or COMMIT
    of its own, and the deferred Delivery still returns its result record (2.7.2.3), the others nothing."""
    assert native.available(DIALECT), NOT_COMPILED
    engine = copies["c"]
    session = engine.connect()
    try:
        info = Tpcc().database_info(session, DIALECT)
        assert info is not None
        transactions = Tpcc().transactions(DIALECT, Tpcc().run_settings(ONE_WAREHOUSE.settings, 1, info, False))
        assert all(isinstance(transaction, native.Native) for transaction in transactions.values())
        assert not any(isinstance(t, native.Native) for t in Tpcc().transactions(DIALECT).values())  # the reference
        work = [("payment", tpcc_modes.cases(session)[2][1]), ("delivery", DeliveryInput(1, 4))]
        statements: list[str] = []
        session.connection.set_trace_callback(statements.append)
        for name, inputs in work:
            result = transaction_runner(session, engine, RetryPolicy(), transactions[name])(inputs)
            assert result.outcome is Outcome.COMMITTED
            assert result.output == (None if name == "payment" else DeliveryResult(1, 4, result.output.delivered))
        assert statements[0] == "BEGIN IMMEDIATE" and statements.count("COMMIT") == 2 and statements[-1] == "COMMIT"
        assert not session.connection.in_transaction
    finally:
        session.close()


def test_a_failed_statement_raises_what_pythons_sqlite3_raises_and_is_rolled_back_by_the_caller(
        copies: dict[str, SQLiteEngine]) -> None:
    """A busy database reaches the retry policy as Python's own error, with its result code (classified as a
    conflict), and the transaction is left for the caller to roll back, as after a statement of its own."""
    assert native.available(DIALECT), NOT_COMPILED
    engine = copies["c"]
    holder, session = engine.connect(), engine.connect()
    try:
        session.connection.execute("PRAGMA busy_timeout = 0")
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        holder.begin()  # the write lock, held
        with pytest.raises(sqlite3.OperationalError) as raised:
            wrapped["delivery"].execute(session, DeliveryInput(1, 4))
        assert engine.classify(raised.value) is Outcome.RETRY
        assert raised.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
        holder.rollback()
        unknown = NewOrderInput.from_lines(1, 1, 99999, (OrderLine(12, 1, 3),))  # no such customer
        with pytest.raises(LookupError, match="no customer"):
            wrapped["new_order"].execute(session, unknown)
        assert session.connection.in_transaction
        session.rollback()
    finally:
        holder.close()
        session.close()


def test_a_statement_that_fails_mid_batch_raises_its_own_error_not_pythons(copies: dict[str, SQLiteEngine]) -> None:
    """A New-Order's write refused (a read-only connection) is the error Python's sqlite3 raises: the statements
    after it in the batch are neither prepared nor asked for, so nothing replaces it with an error of its own."""
    assert native.available(DIALECT), NOT_COMPILED
    session = copies["c"].connect()
    try:
        session.connection.execute("PRAGMA query_only = 1")
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            wrapped["new_order"].execute(session, tpcc_modes.cases(session)[0][1])
        session.rollback()
    finally:
        session.close()


def test_the_handle_is_the_connections_own_and_a_session_closes_before_its_profiles(
        copies: dict[str, SQLiteEngine]) -> None:
    """The handle read from the sqlite3 module's connection is checked against SQLite's own account of it; a session
    closed while its connection's profiles live closes without an error, its connection once they go
    (sqlite3_close_v2 waits for their statements)."""
    assert native.available(DIALECT), NOT_COMPILED
    engine = copies["c"]
    session = engine.connect()
    handle = session.library_handle()
    assert handle is not None and handle[0] == "libsqlite3" and handle[1] == connection_handle(session.connection)
    connections = native.Connections(transactions_for(DIALECT, server_side=False))
    profiles = connections.of(session)
    assert profiles is not None and connections.of(session) is profiles  # one per connection
    assert profiles.stock_level(1, 1, 20) >= 0
    session.close()
    del connections, profiles  # their statements finalized: the connection closes now
    other = engine.connect()
    try:
        assert other.fetchone("SELECT count(*) FROM warehouse") == (1,)
    finally:
        other.close()


def test_a_session_without_a_handle_runs_the_python_transactions(copies: dict[str, SQLiteEngine],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    engine = copies["c"]
    monkeypatch.setattr(SQLiteSession, "library_handle", lambda self: None)
    session = engine.connect()
    try:
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        screen = wrapped["new_order"].screen(session, tpcc_modes.cases(session)[0][1])
        assert screen.o_id == 3001  # the district's first order after the 3,000 of the build
        assert not wrapped["new_order"].connections.profiles  # none made
    finally:
        session.close()
