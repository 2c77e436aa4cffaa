"""TPC-C's transactions in C on a libmariadb connection (workloads/tpcc/native.py, _profiles.c over its libmariadb
backend) held to the Python transactions, their reference, on a real server: the same inputs, run each way from the
same database, return the same screens and leave the same database, which passes the twelve consistency conditions;
MariaDB's split statements (``UPDATE`` then ``SELECT``, New-Order's stock rows one by one) go in the same query; the
BEGIN and COMMIT go with the statements, as the Python session sends them; a failed statement raises what MySQLdb
raises, and the connection goes on."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Iterator

import MySQLdb
import pytest

from maximus import api
from maximus.engines.mariadb import MariaDBEngine
from maximus.engines.mariadb.sessions import MariaDBSession
from maximus.records import Outcome
from maximus.workloads.tpcc import Tpcc, native
from maximus.workloads.tpcc.delivery import DeliveryInput
from maximus.workloads.tpcc.kinds import transactions_for
from maximus.workloads.tpcc.order_status import OrderStatusInput

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
DIALECT = MariaDBEngine.dialect
NOT_COMPILED = "maximus.workloads.tpcc._profiles was not compiled: pip install -e . needs a C compiler"
DRAWN = 600  # a terminal's first transactions: every type, New-Orders rolled back by rule among them
LOCK_WAIT_TIMEOUT = 1205


@pytest.fixture(scope="module")
def engine(mariadb_loaded: Path) -> Iterator[MariaDBEngine]:
    built = api.make_engine("mariadb", mariadb_loaded, ONE_WAREHOUSE, {})
    assert isinstance(built, MariaDBEngine)
    with api.running(built):
        yield built
        built.restore()  # the module's tests leave the build as they found it


def test_the_c_profiles_return_the_same_screens_and_leave_the_same_database(engine: MariaDBEngine) -> None:
    tpcc_modes.assert_c_equals_python(engine, DIALECT, DRAWN, tpcc_modes.mariadb_contents)


def test_a_run_wraps_its_transactions_and_commits_with_the_last_batch(engine: MariaDBEngine,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's transactions are wrapped; each one is whole and committed with its last batch: the session sends no
    COMMIT of its own, and is in no transaction after it, the change seen by another connection."""
    assert native.available(DIALECT), NOT_COMPILED
    engine.restore()
    session, other = engine.connect(), engine.connect()
    ended: list[bytes] = []
    try:
        info = Tpcc().database_info(session, DIALECT)
        assert info is not None
        transactions = Tpcc().transactions(DIALECT, Tpcc().run_settings(ONE_WAREHOUSE.settings, 1, info, False))
        assert all(isinstance(transaction, native.Native) for transaction in transactions.values())
        order = tpcc_modes.cases(session)[0][1]
        (before,) = other.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 3")
        monkeypatch.setattr(session, "_send_end", ended.append)
        assert transactions["new_order"].execute(session, order) is None
        assert session.fetchone("SELECT @@in_transaction") == (0,)
        assert other.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 3") == (before + 1,)
        result = transactions["delivery"].execute(session, DeliveryInput(1, 4))
        assert result.delivered and all(o_id for o_id in result.delivered)
        assert session.fetchone("SELECT @@in_transaction") == (0,) and ended == []
    finally:
        session.close()
        other.close()


def test_a_lock_wait_timeout_raises_what_mysqldb_raises_and_the_connection_goes_on(engine: MariaDBEngine) -> None:
    """A lock not granted in time reaches the caller as MySQLdb's own error (1205, with its SQLSTATE), which the engine
    retries; the caller rolls back, and the connection runs the next transactions."""
    assert native.available(DIALECT), NOT_COMPILED
    engine.restore()
    holder, session = engine.connect(), engine.connect()
    try:
        session.execute("SET SESSION innodb_lock_wait_timeout = 1")
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        cases = tpcc_modes.cases(session)
        holder.begin()
        holder.execute("UPDATE district SET d_ytd = d_ytd WHERE d_w_id = ? AND d_id = ?", (1, 3))
        with pytest.raises(MySQLdb.OperationalError) as raised:
            wrapped["new_order"].execute(session, cases[0][1])
        assert raised.value.args[0] == LOCK_WAIT_TIMEOUT and raised.value.sqlstate == "HY000"
        assert engine.classify(raised.value) is Outcome.RETRY and not session.broken()
        session.rollback()
        holder.rollback()
        assert session.fetchone("SELECT @@in_transaction") == (0,)
        assert wrapped["new_order"].screen(session, cases[0][1]).o_id > 0
        assert wrapped["stock_level"].screen(session, cases[-1][1]).low_stock >= 0
    finally:
        holder.close()
        session.close()


def test_a_text_parameter_is_escaped(engine: MariaDBEngine) -> None:
    """A last name with quotes and backslashes is sent as a literal (no such customer), not as SQL."""
    assert native.available(DIALECT), NOT_COMPILED
    session = engine.connect()
    try:
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        with pytest.raises(LookupError, match="no customer"):
            wrapped["order_status"].screen(session, OrderStatusInput(1, 2, None, "O'NEIL\\' OR 1=1; -- \""))
        session.rollback()
        assert wrapped["order_status"].connections.of(session) is not None  # it ran in C
    finally:
        session.close()


def test_a_lost_connection_breaks_the_session(engine: MariaDBEngine) -> None:
    assert native.available(DIALECT), NOT_COMPILED
    session, other = engine.connect(), engine.connect()
    try:
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        inputs = tpcc_modes.cases(session)[-1][1]
        assert wrapped["stock_level"].screen(session, inputs).low_stock >= 0
        other.execute(f"KILL CONNECTION {session.thread_id}")
        with pytest.raises(MySQLdb.OperationalError) as raised:
            wrapped["stock_level"].screen(session, inputs)
        assert raised.value.args[0] in (2006, 2013) and session.broken()
    finally:
        session.close()
        other.close()


def test_a_connection_in_another_character_set_runs_the_python_transactions(engine: MariaDBEngine) -> None:
    session = engine.connect()
    try:
        session.connection.set_character_set("latin1")
        assert session.library_handle() is None
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        assert wrapped["stock_level"].screen(session, tpcc_modes.cases(session)[-1][1]).low_stock >= 0
        assert not wrapped["stock_level"].connections.profiles  # none made
    finally:
        session.close()


def test_a_sessions_profiles_go_with_it_and_a_closed_session_has_none(engine: MariaDBEngine) -> None:
    """The profiles are kept by session and must not keep it (and its connection) alive; a closed connection is never
    run on: the Python transaction then raises MySQLdb's own error."""
    assert native.available(DIALECT), NOT_COMPILED
    wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
    connections = wrapped["stock_level"].connections
    session = engine.connect()
    inputs = tpcc_modes.cases(session)[-1][1]
    assert wrapped["stock_level"].screen(session, inputs).low_stock >= 0 and len(connections.profiles) == 1
    session.close()
    assert connections.of(session) is None
    with pytest.raises(MySQLdb.OperationalError):  # as MySQLdb raises it on a closed connection
        wrapped["stock_level"].screen(session, inputs)
    del session
    gc.collect()
    assert len(connections.profiles) == 0


def test_the_session_gives_its_handle_once_open(engine: MariaDBEngine) -> None:
    session = engine.connect()
    try:
        assert isinstance(session, MariaDBSession)
        library, address = session.library_handle() or ("", 0)
        assert library == "libmariadb" and address == session.pump_handle()[0]
    finally:
        session.close()
