"""Delivery (clause 2.7): queued by the terminal, then delivers the oldest new order of each district."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import CARRIER_RANGE, DISTRICTS_PER_WAREHOUSE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.transaction import SERVER_UTC_NOW, Home, now_text


class DeliveryInput(NamedTuple):
    w_id: int
    carrier_id: int


class Delivery:
    """2.7.2: deferred. The whole business transaction is one database transaction (2.7.4.1 allows 1..10)."""

    name = "delivery"
    read_only = False
    deferred = True
    call_sql = f"SELECT tpcc_delivery(?, ?, {SERVER_UTC_NOW})"

    def __init__(self, dialect: Dialect) -> None:
        self.oldest_sql = "SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = ? AND no_d_id = ?"

    def draw(self, rng: TpccRandom, home: Home) -> DeliveryInput:
        return DeliveryInput(home.w_id, rng.uniform(*CARRIER_RANGE))

    def call(self, inputs: DeliveryInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.carrier_id)

    def summed_facts(self, inputs: Sequence[DeliveryInput]) -> dict[str, int]:
        return {}

    def execute(self, session: Session, inputs: DeliveryInput) -> list[tuple[int, int]]:
        """Deliver; return the (D_ID, O_ID) pairs delivered (2.7.2.3: the result file's content)."""
        delivered_at = now_text()
        delivered = [(d_id, o_id) for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1)
                     if (o_id := self._deliver(session, inputs, d_id, delivered_at)) is not None]
        return delivered

    def _deliver(self, session: Session, inputs: DeliveryInput, d_id: int, delivered_at: str) -> int | None:
        w_id = inputs.w_id
        (o_id,) = session.fetchone(self.oldest_sql, (w_id, d_id))
        if o_id is None:
            return None  # 2.7.4.2: no outstanding order in this district: skipped, and counted
        if not session.execute("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?",
                               (w_id, d_id, o_id)):
            return None  # another delivery took it first
        (c_id,) = session.fetchone("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                                   (w_id, d_id, o_id))
        session.execute("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                        (inputs.carrier_id, w_id, d_id, o_id))
        session.execute("UPDATE order_line SET ol_delivery_d = ? WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
                        (delivered_at, w_id, d_id, o_id))
        (amount,) = session.fetchone("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? "
                                     "AND ol_o_id = ?", (w_id, d_id, o_id))
        session.execute("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
                        "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (amount, w_id, d_id, c_id))
        return o_id
