"""Order-Status (clause 2.6): a customer's balance and latest order; read-only."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import BY_NAME_PERCENT, DISTRICTS_PER_WAREHOUSE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.schema import money_in_cents
from maximus.workloads.tpcc.screens import OrderStatusLineScreen, OrderStatusScreen, money
from maximus.workloads.tpcc.sql import function_row, statements
from maximus.workloads.tpcc.transaction import Home, by_name, cents_of, datetime_of, middle, one_row


class OrderStatusInput(NamedTuple):
    w_id: int
    d_id: int
    c_id: int | None
    c_last: str | None


SQL = {"call": "SELECT * FROM tpcc_order_status(?, ?, ?, ?)"}  # the shared SQL (sql/ has a dialect's own)
CUSTOMER = "c_id, c_first, c_middle, c_last, c_balance"
CUSTOMER_BY_ID = f"SELECT {CUSTOMER} FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
LATEST_ORDER = ("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? "
                 "ORDER BY o_id DESC LIMIT 1")
LATEST_LINES = ("SELECT ol_supply_w_id, ol_i_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
                 "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = (SELECT MAX(o_id) FROM orders "
                 "WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?) ORDER BY ol_number")


class OrderStatus:
    name = "order_status"
    read_only = True
    deferred = False
    one_snapshot = True
    isolation_means = "one snapshot for all its reads"
    call_sql = SQL["call"]

    def __init__(self, dialect: Dialect) -> None:
        self.in_cents = money_in_cents(dialect)
        self.call_sql = statements(self.name, SQL, dialect)["call"]
        self.function_row = function_row(dialect)

    def draw(self, rng: TpccRandom, home: Home) -> OrderStatusInput:
        """2.6.1: home warehouse, district uniform, 60 % by last name."""
        d_id = rng.uniform(1, DISTRICTS_PER_WAREHOUSE)
        if rng.percent() <= BY_NAME_PERCENT:
            return OrderStatusInput(home.w_id, d_id, None, rng.customer_last_name())
        return OrderStatusInput(home.w_id, d_id, rng.customer_id(), None)

    def call(self, inputs: OrderStatusInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.d_id, inputs.c_id, inputs.c_last)

    def summed_facts(self, inputs: Sequence[OrderStatusInput]) -> dict[str, int]:
        return {"by_name": sum(status.c_id is None for status in inputs)}

    def execute(self, session: Session, inputs: OrderStatusInput) -> OrderStatusScreen:
        """2.6.2.2: the customer, their latest order and its lines, in one batch; a customer chosen by name is
        found first, with the columns the screen shows."""
        w_id, d_id = inputs.w_id, inputs.d_id
        if inputs.c_id is None:
            customer = middle(session.fetchall(by_name(CUSTOMER), (w_id, d_id, inputs.c_last)), w_id, d_id,
                              inputs.c_last)
        key = (w_id, d_id, inputs.c_id or customer[0])
        statements = [(LATEST_ORDER, key), (LATEST_LINES, (w_id, d_id, *key))]
        if inputs.c_id is not None:
            statements.insert(0, (CUSTOMER_BY_ID, key))
        *found, order, rows = session.batch(statements, last=True)
        return self.screen_of(inputs, found[0][0] if found else customer, order, rows)

    def screen_of(self, inputs: OrderStatusInput, customer: tuple, orders: list[tuple],
                  rows: list[tuple]) -> OrderStatusScreen:
        """The screen (2.6.3.3) from what the profile read: the customer's row, the latest order's (none for a
        customer without an order) and its lines'."""
        c_id, c_first, c_middle, c_last, balance = customer
        lines = tuple(OrderStatusLineScreen(supply, i_id, quantity, money(cents_of(amount, self.in_cents)), delivered)
                      for supply, i_id, quantity, amount, delivered in rows)
        o_id, entered_at, carrier = orders[0] if orders else (None, None, None)
        return OrderStatusScreen(inputs.w_id, inputs.d_id, c_id, c_first, c_middle, c_last,
                                 money(cents_of(balance, self.in_cents)), o_id, entered_at, carrier, lines)

    def screen(self, inputs: OrderStatusInput, row: tuple | None) -> OrderStatusScreen:
        """From ``tpcc_order_status``'s columns: the customer's, the order's, then one array per line field."""
        c_id, c_first, c_middle, c_last, balance, o_id, entered_at, carrier, *columns = one_row(
            self.function_row(row), "order status's row")
        lines = tuple(OrderStatusLineScreen(supply, i_id, quantity, amount, datetime_of(delivered))
                      for supply, i_id, quantity, amount, delivered in zip(*(column or () for column in columns)))
        return OrderStatusScreen(inputs.w_id, inputs.d_id, c_id, c_first, c_middle, c_last, balance, o_id,
                                 datetime_of(entered_at), carrier, lines)
