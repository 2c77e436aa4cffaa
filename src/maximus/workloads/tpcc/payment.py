"""Payment (clause 2.5): record a customer's payment at warehouse, district and customer level."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.statements import Statement, batch
from maximus.workloads.tpcc.constants import (
    AMOUNT_RANGE_CENTS, BAD_CREDIT_SHOWN, BY_NAME_PERCENT, C_DATA_MAX, DISTRICTS_PER_WAREHOUSE,
    PAYMENT_REMOTE_PERCENT,
)
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.schema import money_in_cents
from maximus.workloads.tpcc.screens import Address, PaymentScreen, money, rate
from maximus.workloads.tpcc.sql import function_row, statements
from maximus.workloads.tpcc.transaction import (
    SERVER_UTC_NOW, Home, by_name, cents_of, datetime_of, middle, one_row, to_sql_money,
)


class PaymentInput(NamedTuple):
    w_id: int
    d_id: int
    c_w_id: int
    c_d_id: int
    c_id: int | None  # None: select by last name
    c_last: str | None
    amount: float

    @property
    def remote(self) -> bool:
        return self.c_w_id != self.w_id

    @property
    def amount_cents(self) -> int:
        return round(self.amount * 100)  # drawn as whole cents (TpccRandom.money), so exact


_ADDRESS = "{0}_street_1, {0}_street_2, {0}_city, {0}_state, {0}_zip"
GOOD_CREDIT_PAYS = ("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                     "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")
# The shared SQL (sql/ has a dialect's own). Each UPDATE reads the row it changed: the screen shows it.
SQL: dict[str, Statement] = {
    "call": f"SELECT * FROM tpcc_payment(?, ?, ?, ?, ?, ?, ?::numeric, {SERVER_UTC_NOW})",
    "warehouse": f"UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ? RETURNING w_name, {_ADDRESS.format('w')}",
    "district": (f"UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ? RETURNING d_name, "
                 f"{_ADDRESS.format('d')}"),
    "pay_bad_credit": ("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                       f"c_payment_cnt = c_payment_cnt + 1, c_data = substr(? || c_data, 1, {C_DATA_MAX}) "
                       f"WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? RETURNING substr(c_data, 1, {BAD_CREDIT_SHOWN})"),
}


class Payment:
    name = "payment"
    read_only = False
    deferred = False
    one_snapshot = False
    isolation_means = "the customer row locked before it is read, the others changed before they are read"
    call_sql = str(SQL["call"])

    def __init__(self, dialect: Dialect) -> None:
        self.in_cents = money_in_cents(dialect)
        self.sql: dict[str, Any] = statements(self.name, SQL, dialect)
        self.call_sql = self.sql["call"]
        self.function_row = function_row(dialect)
        self.customer_sql = (f"SELECT c_first, c_middle, c_last, {_ADDRESS.format('c')}, c_phone, c_since, c_credit, "
                             "c_credit_lim, c_discount, c_balance FROM customer "
                             f"WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?{dialect.for_update}")
        self.history_sql = ("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, "
                            f"h_data) VALUES (?, ?, ?, ?, ?, {dialect.utc_now}, ?, ?) RETURNING h_date")

    def draw(self, rng: TpccRandom, home: Home) -> PaymentInput:
        """2.5.1.2: 85 % home / 15 % remote customer; 60 % by last name; amount 1.00..5,000.00."""
        d_id = rng.uniform(1, DISTRICTS_PER_WAREHOUSE)
        remote = home.warehouses > 1 and rng.percent() <= PAYMENT_REMOTE_PERCENT
        c_w_id = rng.other_warehouse(home.w_id, home.warehouses) if remote else home.w_id
        c_d_id = rng.uniform(1, DISTRICTS_PER_WAREHOUSE) if remote else d_id
        by_name = rng.percent() <= BY_NAME_PERCENT
        c_id, c_last = (None, rng.customer_last_name()) if by_name else (rng.customer_id(), None)
        return PaymentInput(home.w_id, d_id, c_w_id, c_d_id, c_id, c_last, rng.money(*AMOUNT_RANGE_CENTS))

    def call(self, inputs: PaymentInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.d_id, inputs.c_w_id, inputs.c_d_id, inputs.c_id, inputs.c_last,
                               f"{inputs.amount:.2f}")

    def summed_facts(self, inputs: Sequence[PaymentInput]) -> dict[str, int]:
        return {"remote": sum(payment.c_w_id != payment.w_id for payment in inputs),
                "by_name": sum(payment.c_id is None for payment in inputs)}

    def execute(self, session: Session, inputs: PaymentInput) -> PaymentScreen:
        """2.5.2.2 in its order (warehouse, district, customer, history), in two batches, three for a customer
        chosen by name: the warehouse's and the district's rows are read as they are changed (RETURNING)."""
        w_id, d_id, amount = inputs.w_id, inputs.d_id, inputs.amount_cents
        paid, customer = to_sql_money(amount, self.in_cents), (inputs.c_w_id, inputs.c_d_id)
        warehouse, district, found = batch(session, [
            (self.sql["warehouse"], (paid, w_id)), (self.sql["district"], (paid, w_id, d_id)),
            (self.customer_sql, (*customer, inputs.c_id)) if inputs.c_id else
            (by_name("c_id"), (*customer, inputs.c_last))])
        c_id = inputs.c_id or middle(found, *customer, inputs.c_last)[0]
        row = found[0] if inputs.c_id else one_row(session.fetchone(self.customer_sql, (*customer, c_id)), "customer")
        bad_credit = row[10] == "BC"
        paying, history = batch(session, [
            self._pay(inputs, c_id, bad_credit),
            (self.history_sql, (c_id, inputs.c_d_id, inputs.c_w_id, d_id, w_id, paid,
                                f"{warehouse[0][0]}    {district[0][0]}"))], last=True)
        return self.screen_of(inputs, c_id, warehouse[0], district[0], row, paying[0][0] if bad_credit else None,
                              history[0][0])

    def screen_of(self, inputs: PaymentInput, c_id: int, warehouse: tuple, district: tuple, customer: tuple,
                  c_data: str | None, h_date: Any) -> PaymentScreen:
        """The screen (2.5.3.3) from what the profile read: the warehouse's and the district's rows as it changed
        them, the customer's row as it read it before the payment, C_DATA's start (bad credit only), H_DATE."""
        amount = inputs.amount_cents
        return PaymentScreen(inputs.w_id, inputs.d_id, c_id, inputs.c_d_id, inputs.c_w_id, money(amount), h_date,
                             Address(*warehouse[1:]), Address(*district[1:]), customer[0], customer[1], customer[2],
                             Address(*customer[3:8]), customer[8], customer[9], customer[10],
                             money(cents_of(customer[11], self.in_cents)), rate(customer[12]),
                             money(cents_of(customer[13], self.in_cents) - amount), c_data)

    def _pay(self, inputs: PaymentInput, c_id: int, bad_credit: bool) -> tuple[Statement, tuple]:
        """Take the payment from the customer; one with bad credit also keeps a history of payments at the
        head of C_DATA (2.5.2.2), of which the screen shows the start."""
        paid, key = to_sql_money(inputs.amount_cents, self.in_cents), (inputs.c_w_id, inputs.c_d_id, c_id)
        if not bad_credit:
            return GOOD_CREDIT_PAYS, (paid, paid, *key)
        entry = f"{c_id} {inputs.c_d_id} {inputs.c_w_id} {inputs.d_id} {inputs.w_id} {inputs.amount:.2f} "
        return self.sql["pay_bad_credit"], (paid, paid, entry, *key)

    def screen(self, inputs: PaymentInput, returned: tuple | None) -> PaymentScreen:
        """From ``tpcc_payment``'s columns, in the screen's order after its inputs."""
        row = one_row(self.function_row(returned), "payment's row")
        c_id, *warehouse_and_district = row[:11]
        c_first, c_middle, c_last, *rest = row[11:]
        customer, (phone, since, credit, limit, discount, balance, c_data, h_date) = rest[:5], rest[5:]
        return PaymentScreen(inputs.w_id, inputs.d_id, c_id, inputs.c_d_id, inputs.c_w_id, money(inputs.amount_cents),
                             datetime_of(h_date), Address(*warehouse_and_district[:5]),
                             Address(*warehouse_and_district[5:]), c_first, c_middle, c_last, Address(*customer),
                             phone, datetime_of(since), credit, limit,
                             rate(discount), balance, c_data)
