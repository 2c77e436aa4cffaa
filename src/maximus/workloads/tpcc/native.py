"""TPC-C's transactions run in C (``_profiles.c``) on a SQLite, PostgreSQL or MariaDB connection, when the extension
is built.

In Python each statement's parameters, the driver's layer (the ``sqlite3`` module, psycopg), the rows made into
Python values and the arithmetic between them cost the client more CPU than the statements themselves: a third of a
SQLite terminal's, most of a client-side PostgreSQL terminal's. The C profiles run the statements of the Python
transactions (the same texts, which they take from them, in the same order, with the same parameters, in the same
batches), each prepared once per connection, on the session's own connection (``Session.library_handle``), over a
backend per client library: SQLite's runs each statement at once, libpq's sends each batch in one pipeline and
libmariadb's as one multi-statement query, with the session's BEGIN and COMMIT (``BatchedSession.take_begin``), as
``PostgresSession.batch`` and ``MariaDBSession.batch`` do. A statement a dialect writes as several (a ``Split``:
MariaDB's ``UPDATE ... RETURNING``) is handed over as its parts (``statement_form``). The Python transactions
stay the reference, and the fallback wherever the session gives no handle; the tests hold the two to each other: the
same statements, screens and changes.

A run's transaction is wrapped (``Native``) as a stored-function call is (``server_side.ServerSide``): its
``execute`` is the whole transaction (the session's BEGIN, the statements in C, the session's COMMIT) and returns
what a call returns (a deferred transaction's result record, else None: a run reads no other screen), and
``screen`` returns the whole screen, which the C profiles then return too.
"""

from __future__ import annotations

import sqlite3
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

from maximus.engines.base import Dialect, Session
from maximus.engines.pump import library_functions
from maximus.engines.session import BatchedSession
from maximus.records import RollbackByRule
from maximus.workloads.statements import Statement
from maximus.workloads.tpcc import delivery, new_order, order_status, stock_level
from maximus.workloads.tpcc.delivery import Delivery, DeliveryInput
from maximus.workloads.tpcc.new_order import NewOrder, NewOrderInput
from maximus.workloads.tpcc.order_status import OrderStatus, OrderStatusInput
from maximus.workloads.tpcc.payment import GOOD_CREDIT_PAYS, Payment, PaymentInput
from maximus.workloads.tpcc.screens import NewOrderLineScreen, NewOrderScreen, StockLevelScreen, money, rate, \
    total_amount
from maximus.workloads.tpcc.stock_level import StockLevel, StockLevelInput
from maximus.workloads.tpcc.transaction import Transaction, by_name

try:
    from maximus.workloads.tpcc._profiles import Error as ProfileError, Profiles
except ImportError:  # built without a C compiler: the transactions run in Python
    Profiles = None
    ProfileError = None

DIALECTS = ("sqlite", "postgres", "mariadb")  # whose SQL and client library the C profiles speak
# A statement as the C profiles take it: its text, or a Split's parts, each (text, the logical statement's parameters
# its placeholders take, whether its rows are the logical statement's)
Form = Union[str, tuple[tuple[str, tuple[int, ...], bool], ...]]


@dataclass(frozen=True)
class Library:
    """A client library the C profiles run statements through: the functions they call, in the order of its
    backend's table (``_profiles_<library>.h``), and the exception a failure they report is (``ProfileError``'s
    arguments), as the session's driver raises it."""

    functions: tuple[str, ...]
    error: Callable[[Session, tuple], Exception]


def sqlite_error(code: int, message: str) -> sqlite3.Error:
    """The exception Python's sqlite3 module raises for a failed statement, as the C profiles report it: the class
    by SQLite's result code, which ``SQLiteEngine.classify`` reads again (a busy database is retried)."""
    error = _ERRORS.get(code & 0xFF, sqlite3.DatabaseError)(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


# What Python's sqlite3 module raises for a primary result code (Modules/_sqlite/util.c); others: DatabaseError
_ERRORS: dict[int, type[sqlite3.Error]] = {
    **dict.fromkeys((1, 3, 4, 5, 6, 8, 9, 10, 13, 14, 15, 16, 17), sqlite3.OperationalError),
    2: sqlite3.InternalError, 12: sqlite3.InternalError, 11: sqlite3.DatabaseError, 18: sqlite3.DataError,
    19: sqlite3.IntegrityError, 20: sqlite3.IntegrityError, 21: sqlite3.InterfaceError, 25: sqlite3.InterfaceError}
LIBRARIES = {
    "libsqlite3": Library(
        ("sqlite3_prepare_v2", "sqlite3_step", "sqlite3_reset", "sqlite3_finalize", "sqlite3_bind_int64",
         "sqlite3_bind_text", "sqlite3_bind_null", "sqlite3_column_count", "sqlite3_column_type",
         "sqlite3_column_int64", "sqlite3_column_double", "sqlite3_column_text", "sqlite3_column_blob",
         "sqlite3_column_bytes", "sqlite3_extended_errcode", "sqlite3_errmsg"),
        lambda session, reported: sqlite_error(*reported)),
    "libpq": Library(
        ("PQprepare", "PQsendQueryPrepared", "PQsendQueryParams", "PQenterPipelineMode", "PQexitPipelineMode",
         "PQpipelineSync", "PQflush", "PQisBusy", "PQconsumeInput", "PQgetResult", "PQresultStatus",
         "PQresultErrorField", "PQresultErrorMessage", "PQerrorMessage", "PQclear", "PQntuples", "PQnfields",
         "PQgetisnull", "PQgetvalue", "PQgetlength", "PQftype", "PQsocket"),
        lambda session, reported: session.library_error(reported)),
    "libmariadb": Library(
        ("mysql_send_query", "mysql_read_query_result", "mysql_store_result", "mysql_fetch_row", "mysql_fetch_lengths",
         "mysql_free_result", "mysql_next_result", "mysql_more_results", "mysql_errno", "mysql_error",
         "mysql_sqlstate", "mysql_field_count", "mysql_num_fields", "mysql_fetch_fields",
         "mysql_real_escape_string"),
        lambda session, reported: session.library_error(reported)),
}


def available(dialect: Dialect) -> bool:
    """Whether a run in this dialect can run its transactions in C (the extension built, the dialect SQLite's,
    PostgreSQL's or MariaDB's)."""
    return Profiles is not None and dialect.name in DIALECTS


def statement_form(statement: Statement) -> Form:
    """A statement as the C profiles prepare it: a text as it is, a Split as its parts (``Form``), which a backend
    sends as that many statements in the same batch, the rows of the returning ones making the statement's."""
    if isinstance(statement, str):
        return statement
    return tuple((part.sql, part.takes, part.returns) for part in statement.parts)


def statement_texts(transactions: Mapping[str, Any]) -> dict[str, Form]:
    """The Python transactions' statements of fixed text, by the names _profiles.c gives them, each in its form."""
    placed: NewOrder = transactions["new_order"]
    paying: Payment = transactions["payment"]
    delivering: Delivery = transactions["delivery"]
    return {name: statement_form(statement) for name, statement in _fixed(placed, paying, delivering).items()}


def _fixed(placed: NewOrder, paying: Payment, delivering: Delivery) -> dict[str, Statement]:
    """The statements of fixed text, as the transactions' dialect writes them."""
    return {
        "new_order.customer": placed.customer_sql, "new_order.district": placed.district_sql,
        "new_order.next_order": new_order.NEXT_ORDER, "new_order.order": placed.order_sql,
        "new_order.new_order": new_order.QUEUED,
        "payment.warehouse": paying.sql["warehouse"], "payment.district": paying.sql["district"],
        "payment.customer": paying.customer_sql, "payment.by_name": by_name("c_id"),
        "payment.good_credit": GOOD_CREDIT_PAYS, "payment.bad_credit": paying.sql["pay_bad_credit"],
        "payment.history": paying.history_sql,
        "order_status.by_name": by_name(order_status.CUSTOMER), "order_status.customer": order_status.CUSTOMER_BY_ID,
        "order_status.order": order_status.LATEST_ORDER, "order_status.lines": order_status.LATEST_LINES,
        "delivery.oldest": delivering.oldest_sql, "delivery.delete": delivery.DELIVERED,
        "delivery.carrier": delivering.sql["carrier"], "delivery.lines": delivering.lines_sql,
        "delivery.amount": delivery.AMOUNT, "delivery.customer": delivery.PAID,
        "stock_level.low": stock_level.LOW_STOCK,
    }


class Connections:
    """The C profiles of each connection the transactions of one process run on, made at its first transaction."""

    def __init__(self, transactions: Mapping[str, Any]) -> None:
        self.texts = statement_texts(transactions)
        placed: NewOrder = transactions["new_order"]
        self.set_text: Callable[[str, int, int], Form] = lambda kind, district, count: statement_form(
            placed.rows_sql(kind, district, count))
        self.functions: dict[str, tuple[int, ...] | None] = {}  # by library, once looked for
        # By session, with the handle they run on: a connection's profiles go with its session (a SQLite connection
        # closed while they live stays open until they go: sqlite3_close_v2 waits for their statements; a libpq one's
        # PGconn is freed, and a new connection may have its address)
        self.profiles: weakref.WeakKeyDictionary[Session, tuple[tuple[str, int], Any]] = weakref.WeakKeyDictionary()

    def of(self, session: Session) -> Any | None:
        """The session's connection's profiles; None when it runs its statements in Python (no handle: another
        driver, another encoding, a closed connection, whose error is then the driver's own)."""
        handle = session.library_handle()
        if handle is None or handle[0] not in LIBRARIES or self._functions(handle[0]) is None:
            return None
        known = self.profiles.get(session)
        if known is not None and known[0] == handle:
            return known[1]
        profiles = Profiles(handle[0], handle[1], self._functions(handle[0]), self.texts, self.set_text,
                            _loader(session))
        self.profiles[session] = (handle, profiles)
        return profiles

    def error(self, session: Session, reported: tuple) -> Exception:
        """The exception the session's driver raises for a failure the C profiles reported on its connection."""
        handle, _ = self.profiles[session]  # the profiles that failed ran on it
        return LIBRARIES[handle[0]].error(session, reported)

    def _functions(self, library: str) -> tuple[int, ...] | None:
        if library not in self.functions:
            self.functions[library] = library_functions((library,), LIBRARIES[library].functions)
        return self.functions[library]


def _loader(session: Session) -> Callable[[int, bytes], Any]:
    """``session.library_value``, without holding the session: the profiles, kept by session in a weak mapping, would
    otherwise keep their own key, and with it the connection, alive."""
    method = weakref.WeakMethod(session.library_value)
    return lambda type_code, text: method()(type_code, text)  # type: ignore[misc]  # alive while its profiles run


class Native:
    """A transaction run as a whole (``execute``: the session's BEGIN, the profile's statements in C, the session's
    COMMIT), its statements in Python (the wrapped reference) on a session without a handle. Everything else is the
    wrapped transaction's."""

    single_statement = True  # execute is the whole transaction: the driver sends no BEGIN or COMMIT of its own

    def __init__(self, inner: Transaction, connections: Connections) -> None:
        self.inner, self.connections = inner, connections
        self.name, self.read_only, self.deferred = inner.name, inner.read_only, inner.deferred
        self.one_snapshot, self.isolation_means = inner.one_snapshot, inner.isolation_means
        self.call_sql = inner.call_sql
        self.draw, self.call, self.summed_facts = inner.draw, inner.call, inner.summed_facts
        self._run = _PROFILES[inner.name]

    def execute(self, session: Session, inputs: Any) -> Any:
        """The transaction; its result record when it is deferred (2.7.2.3), else None, as a call's."""
        shown = self._whole(session, inputs, self.deferred)
        return shown if self.deferred else None

    def screen(self, session: Session, inputs: Any) -> Any:
        """The transaction, and its whole screen (what the Python transaction returns)."""
        return self._whole(session, inputs, True)

    def _whole(self, session: Session, inputs: Any, shown: bool) -> Any:
        session.begin(read_only=self.read_only, one_snapshot=self.one_snapshot)
        profiles = self.connections.of(session)
        if profiles is None:
            output = self.inner.execute(session, inputs)
        else:
            # A session that sends BEGIN and COMMIT with its statements leaves them to the profile's
            batched = session if isinstance(session, BatchedSession) else None
            begin = None if batched is None else batched.take_begin()
            profiles.transaction(begin, batched is not None)
            try:
                output = self._run(profiles, self.inner, inputs, shown)
            except ProfileError as error:
                raise self.connections.error(session, error.args) from None
            finally:  # the session's state as if it had sent the statements itself, whatever the profile raised
                if batched is not None and profiles.committed():
                    batched.committed_with_batch()
                elif batched is not None and profiles.unsent():
                    batched.give_back_begin(begin)
                profiles.transaction(None, False)  # a profile called on its own afterwards sends neither
        session.commit()
        return output


def _new_order(profiles: Any, transaction: NewOrder, inputs: NewOrderInput, shown: bool) -> NewOrderScreen | None:
    done = profiles.new_order(inputs.w_id, inputs.d_id, inputs.c_id, inputs.item_ids, inputs.supply_w_ids,
                              inputs.quantities, shown)
    if done is None:
        raise RollbackByRule("Item number is not valid")  # 2.4.2.3
    if not shown:
        return None
    c_discount, c_last, c_credit, w_tax, d_tax, o_id, entered, lines = done
    discount, w_tax, d_tax = rate(c_discount), rate(w_tax), rate(d_tax)
    screens = tuple(NewOrderLineScreen(supply, i_id, name, quantity, left, brand, money(price), money(amount))
                    for supply, i_id, quantity, (name, price, left, brand, amount)
                    in zip(inputs.supply_w_ids, inputs.item_ids, inputs.quantities, lines))
    total = total_amount(sum(line[4] for line in lines), discount, w_tax, d_tax)
    return NewOrderScreen(inputs.w_id, inputs.d_id, inputs.c_id, c_last, c_credit, discount, w_tax, d_tax,
                          len(screens), o_id, entered, total, screens)


def _payment(profiles: Any, transaction: Payment, inputs: PaymentInput, shown: bool) -> Any:
    done = profiles.payment(inputs.w_id, inputs.d_id, inputs.c_w_id, inputs.c_d_id, inputs.c_id, inputs.c_last,
                            inputs.amount_cents, shown)
    return transaction.screen_of(inputs, *done) if shown else None


def _order_status(profiles: Any, transaction: OrderStatus, inputs: OrderStatusInput, shown: bool) -> Any:
    read = profiles.order_status(inputs.w_id, inputs.d_id, inputs.c_id, inputs.c_last, shown)
    return transaction.screen_of(inputs, *read) if shown else None


def _delivery(profiles: Any, transaction: Delivery, inputs: DeliveryInput, shown: bool) -> Any:
    return transaction.result_of(inputs, profiles.delivery(inputs.w_id, inputs.carrier_id))


def _stock_level(profiles: Any, transaction: StockLevel, inputs: StockLevelInput, shown: bool) -> Any:
    low = profiles.stock_level(inputs.w_id, inputs.d_id, inputs.threshold)
    return StockLevelScreen(*inputs, low) if shown else None


_PROFILES: dict[str, Callable[[Any, Any, Any, bool], Any]] = {
    "new_order": _new_order, "payment": _payment, "order_status": _order_status, "delivery": _delivery,
    "stock_level": _stock_level}


def wrapped(transactions: Mapping[str, Any]) -> dict[str, Any]:
    """The transactions each run as a whole in C where the session allows it, sharing one connection's profiles."""
    connections = Connections(transactions)
    return {name: Native(transaction, connections) for name, transaction in transactions.items()}
