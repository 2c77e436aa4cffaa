"""What every engine's transaction-mode tests share: the inputs worth holding server-side and client-side mode to,
their screens in either mode, and those screens with the dates a run stamped replaced by a marker."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

from maximus import api
from maximus.engines.base import Dialect, Session
from maximus.records import RollbackByRule
from maximus.workloads.tpcc import Tpcc, native
from maximus.workloads.tpcc.constants import UNUSED_ITEM_ID
from maximus.workloads.tpcc.kinds import TRANSACTION_TYPES, transactions_for
from maximus.workloads.tpcc.schema import TABLES
from maximus.workloads.tpcc.delivery import Delivery, DeliveryInput
from maximus.workloads.tpcc.new_order import NewOrder, NewOrderInput, OrderLine
from maximus.workloads.tpcc.order_status import OrderStatus, OrderStatusInput
from maximus.workloads.tpcc.payment import Payment, PaymentInput
from maximus.workloads.tpcc.server_side import Call, ServerSide
from maximus.workloads.tpcc.stock_level import StockLevel, StockLevelInput


def cases(session: Session) -> list[tuple[type, Any]]:
    """One of each transaction, and the branches worth holding the modes to: an item with "ORIGINAL" in both
    I_DATA and S_DATA (brand "B"), a stock row restocked by 91, an item on two lines, a customer with bad
    credit, by name and by number, an order with delivered lines. The order of the list is the screens'."""
    (original,) = session.fetchone("SELECT i_id FROM item JOIN stock ON s_i_id = i_id AND s_w_id = 1 "
                                   "WHERE i_data LIKE '%ORIGINAL%' AND s_data LIKE '%ORIGINAL%' "
                                   "ORDER BY i_id LIMIT 1")
    (low,) = session.fetchone("SELECT s_i_id FROM stock WHERE s_w_id = 1 AND s_quantity < 19 ORDER BY s_i_id LIMIT 1")
    (bad,) = session.fetchone("SELECT c_id FROM customer WHERE c_w_id = 1 AND c_d_id = 5 AND c_credit = 'BC' "
                              "ORDER BY c_id LIMIT 1")
    (name,) = session.fetchone("SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 1500")
    (delivered,) = session.fetchone("SELECT o_c_id FROM orders WHERE o_w_id = 1 AND o_d_id = 6 AND o_carrier_id IS "
                                    "NOT NULL ORDER BY o_id DESC LIMIT 1")
    return [
        (NewOrder, NewOrderInput.from_lines(1, 3, 42, (OrderLine(original, 1, 4), OrderLine(low, 1, 10),
                                                       OrderLine(77, 1, 1), OrderLine(78, 1, 9), OrderLine(79, 1, 2)))),
        (NewOrder, NewOrderInput.from_lines(1, 4, 11, (OrderLine(5, 1, 3), OrderLine(6, 1, 9), OrderLine(5, 1, 8),
                                                       OrderLine(7, 1, 2), OrderLine(5, 1, 7)))),
        (Payment, PaymentInput(1, 3, 1, 3, 42, None, 1234.56)),
        (Payment, PaymentInput(1, 5, 1, 5, bad, None, 17.05)),
        (Payment, PaymentInput(1, 2, 1, 2, None, name, 4999.99)),
        (OrderStatus, OrderStatusInput(1, 3, 42, None)),
        (OrderStatus, OrderStatusInput(1, 2, None, name)),
        (OrderStatus, OrderStatusInput(1, 6, delivered, None)),
        (Delivery, DeliveryInput(1, 5)),
        (StockLevel, StockLevelInput(1, 3, 20)),
    ]


def screens(engine: Any, session: Session, mode: str, inputs: list[tuple[type, Any]]) -> list[Any]:
    """Each case's screen, run server-side (one function call) or client-side (the driver's statements)."""
    shown = []
    for kind, given in inputs:
        transaction = kind(engine.dialect)
        if mode == "server":
            sql, params = transaction.call(given)
            call = Call(given, sql, params, engine.dialect.call_parameters(params))
            shown.append(ServerSide(transaction, engine.dialect).screen(session, call))
        else:
            session.begin(read_only=transaction.read_only, one_snapshot=transaction.one_snapshot)
            shown.append(transaction.execute(session, given))
            session.commit()
    return shown


def undated(value: Any, since: datetime) -> Any:
    """The screen with each date that this run or the load stamped (the server's UTC clock) replaced by a marker,
    once it is seen to be a datetime of that span: the modes' clocks read different moments."""
    if isinstance(value, datetime):
        assert since - timedelta(hours=1) < value < datetime.now(timezone.utc).replace(tzinfo=None)
        return "date"
    if isinstance(value, tuple):
        parts = [undated(item, since) for item in value]
        return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
    return value


ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


def native_work(session: Session, dialect: Dialect, drawn: int) -> list[tuple[str, Any]]:
    """What the C profiles are held to the Python transactions on (workloads/tpcc/native.py): the branches of
    ``cases``, an order with an unused item, then a terminal's first ``drawn`` transactions as a run draws them."""
    given = [(kind.name, inputs) for kind, inputs in cases(session)]
    unused = NewOrderInput.from_lines(1, 7, 99, (OrderLine(12, 1, 3), OrderLine(UNUSED_ITEM_ID, 1, 1)))
    info = Tpcc().database_info(session, dialect)
    assert info is not None
    emulator = Tpcc().emulator(Tpcc().run_settings(ONE_WAREHOUSE.settings, 7, info, server_side=False), 0, dialect)
    return [*given, ("new_order", unused), *((t.name, inputs) for t, inputs in emulator.batch(drawn))]


def native_screens(session: Session, dialect: Dialect, way: str, work: list[tuple[str, Any]]) -> Iterator[Any]:
    """Each transaction's screen ("rolled back" for one rolled back by its rule), run in Python or in C."""
    python = transactions_for(dialect, server_side=False)
    wrapped = native.wrapped(python)
    for name, inputs in work:
        try:
            if way == "c":
                yield wrapped[name].screen(session, inputs)
                continue
            session.begin(read_only=python[name].read_only, one_snapshot=python[name].one_snapshot)
            yield python[name].execute(session, inputs)
            session.commit()
        except RollbackByRule:
            session.rollback()
            yield "rolled back"


def postgres_contents(session: Session) -> dict[str, str]:
    """Every table of a PostgreSQL database as a digest of its rows, dates left out: each way stamps its own time."""
    digests = {}
    for table in TABLES:
        columns = [name for name, kind in table.columns if kind != "TIMESTAMP"]
        order = ", ".join(table.primary_key or columns)
        (digests[table.name],) = session.fetchone(
            f"SELECT md5(string_agg(ROW({', '.join(columns)})::text, ',' ORDER BY {order})) FROM {table.name}")
    return digests


def mariadb_contents(session: Session) -> dict[str, tuple]:
    """Every table of a MariaDB database as its row count and a sum of its rows' hashes (GROUP_CONCAT would be cut at
    its length limit), dates left out: each way stamps its own time. The sum is of integers, exact: a sum of doubles
    depends on the rows' order, which a table without a key (history) keeps from its loaders' interleaving."""
    digests = {}
    for table in TABLES:
        columns = ", ".join(f"QUOTE({name})" for name, kind in table.columns if kind != "TIMESTAMP")
        digests[table.name] = session.fetchone(
            f"SELECT COUNT(*), SUM(CAST(CONV(SUBSTR(MD5(CONCAT_WS('|', {columns})), 1, 15), 16, 10) AS UNSIGNED)) "
            f"FROM {table.name}")
    return digests


def assert_c_equals_python(engine: Any, dialect: Dialect, drawn: int, contents: Callable[[Session], Any]) -> None:
    """The C profiles (``native``) and the Python transactions, each run from the same restored build on the same
    inputs (the branches of ``cases`` and a terminal's first ``drawn`` transactions): the same screens, the same
    database (``contents``), which passes the consistency conditions both ways."""
    assert native.available(dialect), "maximus.workloads.tpcc._profiles was not compiled: it needs a C compiler"
    results, work = {}, None
    for way in ("python", "c"):
        engine.restore()
        since = datetime.now(timezone.utc).replace(tzinfo=None)
        session = engine.connect()
        try:
            work = work or native_work(session, dialect, drawn)
            if way == "c":
                assert native.wrapped(transactions_for(dialect, False))["payment"].connections.of(session) is not None
            results[way] = [undated(screen, since) for screen in native_screens(session, dialect, way, work)], \
                contents(session)
            failed = [check for check in Tpcc().check(session, False, dialect) if check.passed is False]
            assert not failed, (way, failed)
        finally:
            session.close()
    assert {name for name, _ in work or ()} == {kind.name for kind in TRANSACTION_TYPES}
    python_screens, c_screens = results["python"][0], results["c"][0]
    assert sum(screen == "rolled back" for screen in python_screens) >= 2  # the unused item's, and a drawn one's
    assert len(c_screens) == len(python_screens)
    for n, (python_screen, c_screen) in enumerate(zip(python_screens, c_screens)):
        assert c_screen == python_screen, n
    assert results["c"][1] == results["python"][1]
