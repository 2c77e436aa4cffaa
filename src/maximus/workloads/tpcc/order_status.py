"""Order-Status (clause 2.6): a customer's balance and latest order; read-only."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import BY_NAME_PERCENT, DISTRICTS_PER_WAREHOUSE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.transaction import Home, customer_by_name


class OrderStatusInput(NamedTuple):
    w_id: int
    d_id: int
    c_id: int | None
    c_last: str | None


class OrderStatus:
    name = "order_status"
    read_only = True
    deferred = False
    call_sql = "SELECT tpcc_order_status(?, ?, ?, ?)"

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

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

    def execute(self, session: Session, inputs: OrderStatusInput) -> None:
        w_id, d_id = inputs.w_id, inputs.d_id
        c_id = inputs.c_id or customer_by_name(session, w_id, d_id, inputs.c_last)
        session.fetchone("SELECT c_balance, c_first, c_middle, c_last FROM customer "
                         "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (w_id, d_id, c_id))
        order = session.fetchone("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? "
                                 "AND o_c_id = ? ORDER BY o_id DESC LIMIT 1", (w_id, d_id, c_id))
        if order is not None:
            session.fetchall("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
                             "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", (w_id, d_id, order[0]))
