"""Isolation (3.4.0.1, Table 3-1) on SQLite and PostgreSQL, in tests modelled on those of 3.4.2: one transaction
held open before its commit while another runs against the same rows. On PostgreSQL the second one runs in both
transaction modes, the client's statements and the stored function."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from maximus.engines.base import Engine, Session
from maximus.workloads.tpcc.delivery import Delivery, DeliveryInput
from maximus.workloads.tpcc.new_order import NewOrder, NewOrderInput, OrderLine
from maximus.workloads.tpcc.order_status import OrderStatus, OrderStatusInput
from maximus.workloads.tpcc.payment import Payment, PaymentInput
from maximus.workloads.tpcc.server_side import Call, ServerSide

from restored import restored_build  # tests/restored.py


ORDER = NewOrderInput.from_lines(1, 6, 321, (OrderLine(11, 1, 2), OrderLine(12, 1, 3), OrderLine(13, 1, 4)))
STATUS = OrderStatusInput(1, 6, 321, None)
DELIVERY = DeliveryInput(1, 4)


# (engine, how the second transaction of a test runs: the driver's statements or one stored-function call)
SETUPS = [("sqlite", "client"), ("postgres", "client"), ("postgres", "server")]
each_setup = pytest.mark.parametrize("engine, mode", SETUPS, indirect=["engine"])


@pytest.fixture
def engine(request: pytest.FixtureRequest, built_workdir: Path, tmp_path: Path) -> Iterator[Engine]:
    """The pristine 1-warehouse build, restored, with its server up."""
    with restored_build(request.param, request, built_workdir, tmp_path) as engine:
        yield engine



class Open:
    """A session whose transaction stays open after its last batch: the engine's COMMIT waits for ``commit()``
    (PostgreSQL sends it with the last batch otherwise, ``Session.batch``)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def batch(self, statements: list, last: bool = False) -> list:
        return self.session.batch(statements)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _begun(engine: Engine, session: Session, mode: str, kind: type, inputs: Any) -> Any:
    """Run a transaction in ``mode`` inside a transaction left open: its screen (the caller commits)."""
    transaction = kind(engine.dialect)
    session.begin(read_only=transaction.read_only, one_snapshot=transaction.one_snapshot)
    if mode == "client":
        return transaction.execute(Open(session), inputs)
    sql, params = transaction.call(inputs)
    return ServerSide(transaction, engine.dialect).screen(session, Call(inputs, sql, params, params))


def _run(engine: Engine, mode: str, kind: type, inputs: Any) -> Any:
    """Run a transaction in ``mode`` on a session of its own, committed: its screen."""
    session = engine.connect()
    try:
        screen = _begun(engine, session, mode, kind, inputs)
        session.commit()
        return screen
    finally:
        session.close()


class Blocked(threading.Thread):
    """A transaction run in a thread that is expected to wait for another's locks: its screen once done."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work, self.screen, self.error = work, None, None

    def run(self) -> None:
        try:
            self.screen = self.work()
        except Exception as error:
            self.error = error

    def waiting(self) -> bool:
        """Still at it half a second after it started: it waits for the open transaction's locks."""
        self.start()
        self.join(0.5)
        return self.is_alive()

    def done(self) -> Any:
        self.join(30)
        assert not self.is_alive() and self.error is None, self.error
        return self.screen


def _latest_order(engine: Engine, mode: str) -> int | None:
    return _run(engine, mode, OrderStatus, STATUS).o_id


@each_setup
@pytest.mark.parametrize("commit", [True, False], ids=["committed", "rolled-back"])
def test_an_uncommitted_new_order_is_not_read_by_order_status(engine: Engine, mode: str, commit: bool) -> None:
    """3.4.2.1 and 3.4.2.2: no dirty read (P1) of an order entered by a New-Order not yet committed; once it
    is, the next Order-Status reads it."""
    before = _latest_order(engine, mode)
    held = engine.connect()
    entered = _begun(engine, held, "client", NewOrder, ORDER)
    assert _latest_order(engine, mode) == before  # the open order is not seen, and does not block the reader
    held.commit() if commit else held.rollback()
    held.close()
    assert _latest_order(engine, mode) == (entered.o_id if commit else before)


@each_setup
@pytest.mark.parametrize("commit", [True, False], ids=["committed", "rolled-back"])
def test_a_second_new_order_of_a_district_waits_for_the_first_and_takes_the_next_number(
        engine: Engine, mode: str, commit: bool) -> None:
    """3.4.2.3 and 3.4.2.4: no lost update (P0/P2) of D_NEXT_O_ID between two New-Orders of one district."""
    held = engine.connect()
    first = _begun(engine, held, "client", NewOrder, ORDER)
    second = Blocked(lambda: _run(engine, mode, NewOrder, ORDER))
    assert second.waiting()
    held.commit() if commit else held.rollback()
    held.close()
    assert second.done().o_id == first.o_id + (1 if commit else 0)


@each_setup
def test_a_payment_and_a_delivery_of_one_customer_both_count(engine: Engine, mode: str) -> None:
    """3.4.2.5: a Delivery (crediting the customer of the order it delivers) and a Payment of that customer,
    the second waiting for the first: neither change is lost (P0, P2)."""
    session = engine.connect()
    (c_id,) = session.fetchone("SELECT o_c_id FROM orders WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 2101")
    before = _run(engine, mode, OrderStatus, OrderStatusInput(1, 1, c_id, None)).c_balance
    held = engine.connect()
    result = _begun(engine, held, "client", Delivery, DELIVERY)
    paying = Blocked(lambda: _run(engine, mode, Payment, PaymentInput(1, 1, 1, 1, c_id, None, 12.34)))
    assert paying.waiting()
    held.commit()
    held.close()
    paid = paying.done()
    (delivered,) = session.fetchone("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 1 "
                                    "AND ol_o_id = ?", (result.delivered[0],))
    session.close()
    assert result.delivered[0] == 2101 and paid.c_balance == before + _money(engine, delivered) - Decimal("12.34")


def _money(engine: Engine, value: Any) -> Decimal:
    """An amount read from the database (integer cents where the dialect keeps money so) as a Decimal."""
    return Decimal(value).scaleb(-2) if (not engine.dialect.exact_decimals) else Decimal(value)


@pytest.mark.parametrize("engine, held_mode, mode", [*((e, m, m) for e, m in SETUPS), ("postgres", "client", "server"),
                                                     ("postgres", "server", "client")], indirect=["engine"])
def test_two_overlapping_deliveries_skip_no_district_that_has_orders(engine: Engine, held_mode: str,
                                                                     mode: str) -> None:
    """2.7.4.2: a Delivery that finds a district's oldest order locked by another waits, and takes the next one;
    it skips a district only when no undelivered order is left there (district 2: one, taken by the first)."""
    session = engine.connect()
    session.execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id > 2101")
    session.execute("UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 2 AND o_id > 2101")
    held = engine.connect()
    first = _begun(engine, held, held_mode, Delivery, DELIVERY)
    second = Blocked(lambda: _run(engine, mode, Delivery, DELIVERY))
    assert second.waiting()
    held.commit()
    held.close()
    after = second.done()
    assert first.delivered[1] == 2101 and after.delivered[1] is None  # district 2 had that one order only
    assert [(first.delivered[d], after.delivered[d]) for d in range(10) if d != 1] == [(2101, 2102)] * 9
    assert session.fetchone("SELECT COUNT(*) FROM new_order WHERE no_w_id = 1 AND no_d_id = 2") == (0,)
    session.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"], indirect=True)
def test_a_transaction_that_needs_one_snapshot_reads_one_committed_state(engine: Engine) -> None:
    """3.4.0.1 for Order-Status (level 3 among the TPC-C transactions): what ``Session.begin(one_snapshot=True)``
    gives it client-side. A balance read twice, with a Payment of that customer in between, reads the same (no
    P2): the Payment commits at once (PostgreSQL) or waits for the reader's lock (SQLite's rollback journal).
    On the server the function reads everything in one statement."""
    reader = engine.connect()
    read = "SELECT c_balance FROM customer WHERE c_w_id = 1 AND c_d_id = 7 AND c_id = 77"
    reader.begin(read_only=True, one_snapshot=True)
    (first,) = reader.fetchone(read)
    paying = Blocked(lambda: _run(engine, "client", Payment, PaymentInput(1, 7, 1, 7, 77, None, 100.0)))
    paying.waiting()
    assert reader.fetchone(read) == (first,)
    reader.commit()
    paying.done()
    assert reader.fetchone(read) != (first,)
    reader.close()
