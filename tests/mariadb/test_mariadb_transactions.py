"""The TPC-C transactions on MariaDB, one at a time: both modes return equal screens for the same inputs, New-Order's
unused item (2.4.2.3) rolls back in both modes and leaves nothing, a batch's first error stops it, and a deadlock
is a conflict to retry."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path

import MySQLdb
import pytest

from maximus import api
from maximus.records import Outcome, RollbackByRule
from maximus.workloads.tpcc.constants import UNUSED_ITEM_ID
from maximus.workloads import statements
from maximus.workloads.statements import Part, Split
from maximus.workloads.tpcc.new_order import NewOrder, NewOrderInput, OrderLine
from maximus.workloads.tpcc.order_status import OrderStatus
from maximus.workloads.tpcc.server_side import Call, ServerSide
from maximus.workloads.tpcc.sql import function_row

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


@pytest.fixture(scope="module")
def engine(mariadb_loaded: Path):
    engine = api.make_engine("mariadb", mariadb_loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        yield engine


def _state(session) -> tuple:
    return (session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", (1, 3)),
            session.fetchone("SELECT COUNT(*) FROM orders"), session.fetchone("SELECT SUM(s_ytd) FROM stock"))


def test_the_unused_item_rolls_back_in_both_modes_and_leaves_nothing(engine) -> None:
    order = NewOrderInput.from_lines(1, 3, 42, (OrderLine(5, 1, 3), OrderLine(6, 1, 2),
                                                OrderLine(UNUSED_ITEM_ID, 1, 1)))
    session = engine.connect()
    try:
        before = _state(session)
        client = NewOrder(engine.dialect)
        session.begin()
        with pytest.raises(RollbackByRule, match="Item number is not valid"):
            client.execute(session, order)
        session.rollback()
        server = ServerSide(NewOrder(engine.dialect), engine.dialect)
        sql, params = client.call(order)
        with pytest.raises(RollbackByRule, match="Item number is not valid"):
            server.execute(session, Call(order, sql, params, engine.dialect.call_parameters(params)))
        assert _state(session) == before
        valid = NewOrderInput.from_lines(1, 3, 42, (OrderLine(5, 1, 3), OrderLine(6, 1, 2)))
        sql, params = client.call(valid)
        server.execute(session, Call(valid, sql, params, engine.dialect.call_parameters(params)))
        assert _state(session)[0][0] == before[0][0] + 1  # a valid order goes in
    finally:
        session.close()


def test_a_batch_raises_its_first_error_and_stops_there(engine) -> None:
    session = engine.connect()
    try:
        (before,) = session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,))
        session.begin()
        with pytest.raises(MySQLdb.Error, match="no_such_table") as caught:
            session.batch([("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (5,)),
                           ("SELECT * FROM no_such_table WHERE a = ?", (1,)),
                           ("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (7,))], last=True)
        assert caught.value.sqlstate == "42S02"
        session.rollback()
        assert session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,)) == (before,)
        session.begin()  # UPDATE ... RETURNING, which MariaDB has not, as a workload writes it for MariaDB
        returning = Split((Part("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", (0, 1), returns=False),
                           Part("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,), returns=True)))
        assert statements.batch(session, [(returning, (5, 1))], last=True) == [[(before + 5,)]]
        session.commit()  # the batch committed it
        assert session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,)) == (before + 5,)
    finally:
        session.close()


def test_a_deadlock_is_classified_as_retry(engine) -> None:
    first, second = engine.connect(), engine.connect()
    errors: list[BaseException] = []
    try:
        first.begin()
        second.begin()
        first.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = ? AND d_id = ?", (1, 1))
        second.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = ? AND d_id = ?", (1, 2))

        def cross(session, d_id: int) -> None:
            try:
                session.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = ? AND d_id = ?", (1, d_id))
            except MySQLdb.Error as error:
                errors.append(error)

        waiting = threading.Thread(target=cross, args=(first, 2))
        waiting.start()
        cross(second, 1)
        waiting.join()
        assert len(errors) == 1 and errors[0].args[0] == 1213  # InnoDB chose one victim
        assert engine.classify(errors[0]) is Outcome.RETRY
    finally:
        first.rollback()
        second.rollback()
        first.close()
        second.close()


def test_a_function_called_as_a_row_returns_its_columns(engine) -> None:
    """A function returning a row, as TPC-C calls it for MariaDB (``SELECT tpcc_x(...)``, its row one JSON array):
    the JSON array's values as the row, money as decimals."""
    status = OrderStatus(engine.dialect)
    session = engine.connect()
    try:
        row = function_row(engine.dialect)(session.fetchone(status.call_sql, (1, 3, 42, None)))
        (balance,) = session.fetchone("SELECT c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                                      (1, 3, 42))
    finally:
        session.close()
    assert row[0] == 42 and row[4] == balance and len(row) == 13


def test_one_snapshot_at_read_committed_reads_its_rows_after_the_two_statement_begin(engine) -> None:
    """At read committed a one-snapshot transaction begins with two statements (SET TRANSACTION, START
    TRANSACTION): the rows read after them are the query's, not START TRANSACTION's empty result."""
    session = engine.connect()
    try:
        expected = session.fetchall("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", (1, 3))
        session.execute("SET SESSION tx_isolation = 'READ-COMMITTED'")
        session.begin(read_only=True, one_snapshot=True)
        rows = session.fetchall("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", (1, 3))
        pair = session.batch([("SELECT COUNT(*) FROM warehouse", ()), ("SELECT d_id FROM district WHERE d_w_id = ? "
                                                                         "AND d_id = ?", (1, 3))])
        session.commit()
        assert rows == expected and expected
        assert pair == [[(1,)], [(3,)]]
    finally:
        session.close()


def test_a_write_conflict_under_snapshot_isolation_is_classified_as_retry(engine) -> None:
    """With innodb_snapshot_isolation=ON (a knob in 10.11, the default from 11.6), updating a row another
    transaction changed since this one's snapshot fails with 1020 ("Record has changed since last read"): a
    conflict to retry, as a deadlock is."""
    first, second = engine.connect(), engine.connect()
    try:
        first.execute("SET SESSION innodb_snapshot_isolation = ON")
        first.begin()
        first.fetchall("SELECT d_ytd FROM district WHERE d_w_id = ? AND d_id = ?", (1, 4))  # the snapshot
        second.begin()
        second.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = ? AND d_id = ?", (1, 4))
        second.commit()
        with pytest.raises(MySQLdb.Error) as caught:
            first.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = ? AND d_id = ?", (1, 4))
        assert caught.value.args[0] == 1020
        assert engine.classify(caught.value) is Outcome.RETRY
    finally:
        first.rollback()
        first.close()
        second.close()


@pytest.mark.parametrize("lines", [
    (OrderLine(5, 1, 3), OrderLine(6, 1, 9), OrderLine(8, 1, 8), OrderLine(7, 1, 2)),
    (OrderLine(5, 1, 3), OrderLine(6, 1, 9), OrderLine(5, 1, 8), OrderLine(7, 1, 2), OrderLine(5, 1, 7)),
], ids=["distinct-items-set-wise", "an-item-ordered-twice-line-by-line"])
def test_a_server_side_new_order_changes_and_returns_what_the_client_side_one_does(engine, lines) -> None:
    """The function enters an order of distinct stock rows set-wise and walks one with an item ordered twice line
    by line (one UPDATE changes a row once); both must do what the client-side transaction does, each from the
    pristine database."""
    order = NewOrderInput.from_lines(1, 4, 11, lines)
    entered = ("SELECT ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info FROM order_line "
               "WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = (SELECT d_next_o_id - 1 FROM district "
               "WHERE d_w_id = 1 AND d_id = 4) ORDER BY ol_number")
    stock = "SELECT s_i_id, s_quantity, s_ytd, s_order_cnt FROM stock WHERE s_w_id = 1 AND s_i_id IN (5, 6, 7, 8)"
    transaction = NewOrder(engine.dialect)
    engine.restore()
    session = engine.connect()
    try:
        before = session.fetchall(stock + " ORDER BY s_i_id")
        session.begin()
        screen = transaction.execute(session, order)  # commits
        client = (session.fetchall(entered), session.fetchall(stock + " ORDER BY s_i_id"))
    finally:
        session.close()
    engine.restore()
    session = engine.connect()
    try:
        sql, params = transaction.call(order)
        returned = session.call(sql, engine.dialect.call_parameters(params))
        server = (session.fetchall(entered), session.fetchall(stock + " ORDER BY s_i_id"))
    finally:
        session.close()
    assert server == client
    assert [row[:4] for row in server[0]] == [(n, *line) for n, line in enumerate(lines, start=1)]
    count_of_5 = sum(line.i_id == 5 for line in lines)
    assert server[1][0][3] == before[0][3] + count_of_5  # s_order_cnt of item 5: once per line
    quantities = json.loads(returned)[10]
    assert quantities == [line.s_quantity for line in screen.lines]


def test_both_modes_return_the_same_screens_from_the_same_pristine_data(engine) -> None:
    since = datetime.now(timezone.utc).replace(tzinfo=None)
    screens = {}
    for mode in ("server", "client"):
        engine.restore()
        session = engine.connect()
        try:
            screens[mode] = [tpcc_modes.undated(screen, since) for screen in tpcc_modes.screens(engine, session, mode,
                                                                                 tpcc_modes.cases(session))]
        finally:
            session.close()
    engine.restore()  # the module's other tests start from pristine data too
    for case, (server, client) in enumerate(zip(screens["server"], screens["client"], strict=True)):
        assert server == client, case
    new_order, _, payment, bad_credit, _, status, _, delivered, delivery, _ = screens["server"]
    assert new_order.o_entry_d == payment.h_date == payment.c_since == "date"  # datetimes in both modes
    assert status.o_entry_d == "date" and {line.delivery_d for line in delivered.lines} == {"date"}
    assert bad_credit.c_data is not None and delivery.delivered == (2101,) * 10
