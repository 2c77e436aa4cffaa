"""TPC-C's transactions in C on a libpq connection (workloads/tpcc/native.py, _profiles.c over its libpq backend) held
to the Python transactions, their reference, on a real server: the same inputs, run each way from the same database,
return the same screens and leave the same database, which passes the twelve consistency conditions; the BEGIN and
COMMIT go with the statements, as the Python session sends them; a failed statement raises what psycopg raises."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

from maximus import api
from maximus.engines.postgres import PostgresEngine
from maximus.engines.postgres.sessions import PostgresSession
from maximus.records import Outcome
from maximus.workloads.tpcc import Tpcc, native
from maximus.workloads.tpcc.delivery import DeliveryInput
from maximus.workloads.tpcc.kinds import transactions_for
from maximus.workloads.tpcc.new_order import NewOrderInput, OrderLine

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
DIALECT = PostgresEngine.dialect
NOT_COMPILED = "maximus.workloads.tpcc._profiles was not compiled: pip install -e . needs a C compiler"
DRAWN = 600  # a terminal's first transactions: every type, New-Orders rolled back by rule among them


@pytest.fixture(scope="module")
def engine(loaded: Path) -> Iterator[PostgresEngine]:
    built = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    assert isinstance(built, PostgresEngine)
    with api.running(built):
        yield built


def test_the_c_profiles_return_the_same_screens_and_leave_the_same_database(engine: PostgresEngine) -> None:
    tpcc_modes.assert_c_equals_python(engine, DIALECT, DRAWN, tpcc_modes.postgres_contents)


def test_a_run_wraps_its_transactions_and_commits_with_the_last_batch(engine: PostgresEngine) -> None:
    """A run's transactions are wrapped; each one is whole and committed with its last batch (no round trip of
    its own for COMMIT): the session is idle after it, the change seen by another connection."""
    assert native.available(DIALECT), NOT_COMPILED
    engine.restore()
    session, other = engine.connect(), engine.connect()
    try:
        info = Tpcc().database_info(session, DIALECT)
        assert info is not None
        transactions = Tpcc().transactions(DIALECT, Tpcc().run_settings(ONE_WAREHOUSE.settings, 1, info, False))
        assert all(isinstance(transaction, native.Native) for transaction in transactions.values())
        (before,) = other.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 3")
        assert transactions["new_order"].execute(session, tpcc_modes.cases(session)[0][1]) is None
        assert session.connection.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert other.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 3") == (before + 1,)
        result = transactions["delivery"].execute(session, DeliveryInput(1, 4))
        assert result.delivered and all(o_id for o_id in result.delivered)
        assert session.connection.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
    finally:
        session.close()
        other.close()


def test_a_failed_statement_raises_what_psycopg_raises_and_is_rolled_back_by_the_caller(
        engine: PostgresEngine) -> None:
    """A lock not granted in time reaches the caller as psycopg's own error, by its SQLSTATE (classified as the
    engine classifies it), the transaction left for the caller to roll back; the connection then goes on."""
    assert native.available(DIALECT), NOT_COMPILED
    engine.restore()
    holder, session = engine.connect(), engine.connect()
    try:
        session.execute("SET lock_timeout = '50ms'")
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        holder.begin()
        holder.execute("UPDATE district SET d_ytd = d_ytd WHERE d_w_id = ? AND d_id = ?", (1, 3))
        with pytest.raises(psycopg.errors.LockNotAvailable) as raised:
            wrapped["new_order"].execute(session, tpcc_modes.cases(session)[0][1])
        assert engine.classify(raised.value) is Outcome.RETRY
        assert session.connection.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
        session.rollback()
        holder.rollback()
        unknown = NewOrderInput.from_lines(1, 1, 99999, (OrderLine(12, 1, 3),))  # no such customer
        with pytest.raises(LookupError, match="no customer"):
            wrapped["new_order"].execute(session, unknown)
        session.rollback()
        assert wrapped["stock_level"].screen(session, tpcc_modes.cases(session)[-1][1]).low_stock >= 0
    finally:
        holder.close()
        session.close()


def test_a_connection_in_another_encoding_runs_the_python_transactions(engine: PostgresEngine) -> None:
    session = engine.connect()
    try:
        session.execute("SET client_encoding = 'LATIN1'")
        latin = PostgresSession(session.connection)  # reads the encoding anew
        assert latin.library_handle() is None
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        assert wrapped["stock_level"].screen(latin, tpcc_modes.cases(latin)[-1][1]).low_stock >= 0
        assert not wrapped["stock_level"].connections.profiles  # none made
    finally:
        session.close()


def test_a_profile_that_fails_before_sending_leaves_the_session_nothing_to_roll_back(engine: PostgresEngine) -> None:
    """A statement the server will not prepare fails the profile before its first batch: the BEGIN it took goes
    back to the session, whose rollback then sends nothing (no "no transaction in progress" from the server)."""
    assert native.available(DIALECT), NOT_COMPILED
    engine.restore()
    session = engine.connect()
    notices: list[str] = []
    session.connection.add_notice_handler(lambda notice: notices.append(notice.message_primary or ""))
    try:
        wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
        wrapped["new_order"].connections.texts["new_order.customer"] = "SELECT c_nothing FROM nowhere WHERE 1 = ?"
        with pytest.raises(psycopg.errors.UndefinedTable):
            wrapped["new_order"].execute(session, tpcc_modes.cases(session)[0][1])
        session.rollback()
        assert session.connection.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert session.fetchone("SELECT 1") == (1,) and notices == []
    finally:
        session.close()


def test_a_sessions_profiles_go_with_it_and_a_closed_session_has_none(engine: PostgresEngine) -> None:
    """The profiles are kept by session and must not keep it (and its server backend) alive; a closed connection's
    freed PGconn is never run on: the Python transaction then raises psycopg's own error."""
    assert native.available(DIALECT), NOT_COMPILED
    wrapped = native.wrapped(transactions_for(DIALECT, server_side=False))
    connections = wrapped["stock_level"].connections
    engine.restore()
    session = engine.connect()
    inputs = tpcc_modes.cases(session)[-1][1]
    assert wrapped["stock_level"].screen(session, inputs).low_stock >= 0 and len(connections.profiles) == 1
    session.close()
    assert connections.of(session) is None
    with pytest.raises(psycopg.OperationalError):
        wrapped["stock_level"].screen(session, inputs)
    del session
    gc.collect()
    assert len(connections.profiles) == 0
