"""Delivery (clause 2.7): queued by the terminal, then delivers the oldest new order of each district."""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.errors import EngineError
from maximus.workloads.statements import Statement, batch
from maximus.workloads.tpcc.constants import CARRIER_RANGE, DISTRICTS_PER_WAREHOUSE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.schema import money_in_cents
from maximus.workloads.tpcc.screens import DeliveryResult
from maximus.workloads.tpcc.sql import statements
from maximus.workloads.tpcc.transaction import SERVER_UTC_NOW, Home, cents_of, one_row, to_sql_money

DISTRICTS = range(1, DISTRICTS_PER_WAREHOUSE + 1)
DELIVERED = "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ? RETURNING no_o_id"
AMOUNT = "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
PAID = ("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
        "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")
SQL: dict[str, Statement] = {  # the shared SQL (sql/ has a dialect's own)
    "call": f"SELECT tpcc_delivery(?, ?, {SERVER_UTC_NOW})",
    "carrier": "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ? RETURNING o_c_id",
}


def _fours(rows: list) -> Iterator[tuple]:
    """A batch's results four by four: those of one district's ``Delivery._order``."""
    return zip(*[iter(rows)] * 4)


class DeliveryInput(NamedTuple):
    w_id: int
    carrier_id: int


class Delivery:
    """2.7.2: deferred. The whole business transaction is one database transaction (2.7.4.1 allows 1..10).

    2.7.4.2: each district's oldest undelivered order is locked before it is read (``FOR UPDATE``): a
    Delivery that finds it locked by another one waits, and takes the next one once the other has
    delivered it, so a district is skipped only when it has no undelivered order at all."""

    name = "delivery"
    read_only = False
    deferred = True
    one_snapshot = False
    isolation_means = "each district's oldest new order locked before it is read"
    call_sql = str(SQL["call"])

    def __init__(self, dialect: Dialect) -> None:
        self.in_cents = money_in_cents(dialect)
        self.sql: dict[str, Any] = statements(self.name, SQL, dialect)
        self.call_sql = self.sql["call"]
        self.array_of_ints = dialect.array_of_ints
        self.oldest_sql = ("SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id "
                           f"LIMIT 1{dialect.for_update}")
        self.lines_sql = (f"UPDATE order_line SET ol_delivery_d = {dialect.utc_now} WHERE ol_w_id = ? "
                          "AND ol_d_id = ? AND ol_o_id = ?")

    def draw(self, rng: TpccRandom, home: Home) -> DeliveryInput:
        return DeliveryInput(home.w_id, rng.uniform(*CARRIER_RANGE))

    def call(self, inputs: DeliveryInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.carrier_id)

    def summed_facts(self, inputs: Sequence[DeliveryInput]) -> dict[str, int]:
        return {}

    def execute(self, session: Session, inputs: DeliveryInput) -> DeliveryResult:
        """Deliver, in three batches over the ten districts: their oldest new orders, locked; each one's
        order, lines and amount; its customer. Return what the result file records of it (2.7.2.3)."""
        w_id = inputs.w_id
        oldest = session.batch([(self.oldest_sql, (w_id, d_id)) for d_id in DISTRICTS])
        found = [(d_id, rows[0][0]) for d_id, rows in zip(DISTRICTS, oldest) if rows]  # 2.7.4.2: else skipped
        done = batch(session, [statement for d_id, o_id in found for statement in self._order(inputs, d_id, o_id)])
        payments = []
        for (d_id, o_id), (deleted, carried, _, ((amount,),)) in zip(found, _fours(done)):
            if not deleted:
                raise EngineError(f"the new order {o_id} of district {d_id} vanished under its lock")
            payments.append((PAID, (to_sql_money(cents_of(amount, self.in_cents), self.in_cents), w_id, d_id,
                                    carried[0][0])))
        session.batch(payments, last=True)
        delivered = dict(found)
        return self.result_of(inputs, tuple(delivered.get(d_id) for d_id in DISTRICTS))

    @staticmethod
    def result_of(inputs: DeliveryInput, delivered: tuple[int | None, ...]) -> DeliveryResult:
        """The result-file record (2.7.2.3) of the orders delivered in districts 1..10 (None: skipped)."""
        return DeliveryResult(*inputs, delivered)

    def _order(self, inputs: DeliveryInput, d_id: int, o_id: int) -> list[tuple[Statement, tuple]]:
        """Its new order deleted, its carrier set (and customer read), its lines delivered and summed."""
        key = (inputs.w_id, d_id, o_id)
        return [(DELIVERED, key), (self.sql["carrier"], (inputs.carrier_id, *key)), (self.lines_sql, key),
                (AMOUNT, key)]

    def deferred_result(self, inputs: DeliveryInput, value: Any) -> DeliveryResult:
        """From what ``Session.call`` returned for ``call``: ``tpcc_delivery``'s array of order numbers."""
        return DeliveryResult(*inputs, tuple(self.array_of_ints(value)))

    def screen(self, inputs: DeliveryInput, row: tuple | None) -> DeliveryResult:
        return DeliveryResult(*inputs, tuple(self.array_of_ints(one_row(row, "delivery's row")[0])))
