"""Payment (clause 2.5): record a customer's payment at warehouse, district and customer level."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import (
    AMOUNT_RANGE_CENTS, BY_NAME_PERCENT, C_DATA_MAX, DISTRICTS_PER_WAREHOUSE, PAYMENT_REMOTE_PERCENT,
)
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.screens import Address, PaymentScreen, money, rate
from maximus.workloads.tpcc.transaction import (SERVER_UTC_NOW, Home, cents_of, customer_by_name, returning,
                                                to_sql_money)


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
BAD_CREDIT_SHOWN = 200  # 2.5.3.3: the first 200 characters of C_DATA are displayed


class Payment:
    name = "payment"
    read_only = False
    deferred = False
    one_snapshot = False
    isolation_means = "the customer row locked before it is read, the others changed before they are read"
    call_sql = f"SELECT * FROM tpcc_payment(?, ?, ?, ?, ?, ?, ?::numeric, {SERVER_UTC_NOW})"

    def __init__(self, dialect: Dialect) -> None:
        self.in_cents = dialect.money_in_cents
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
        """2.5.2.2, in its order: warehouse, district, customer (by number or by name), history."""
        w_id, d_id, amount = inputs.w_id, inputs.d_id, inputs.amount_cents
        paid = to_sql_money(amount, self.in_cents)
        session.execute("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", (paid, w_id))
        w_name, *warehouse = session.fetchone(f"SELECT w_name, {_ADDRESS.format('w')} FROM warehouse WHERE w_id = ?",
                                              (w_id,))
        session.execute("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", (paid, w_id, d_id))
        d_name, *district = session.fetchone(f"SELECT d_name, {_ADDRESS.format('d')} FROM district "
                                             "WHERE d_w_id = ? AND d_id = ?", (w_id, d_id))
        c_id = inputs.c_id or customer_by_name(session, inputs.c_w_id, inputs.c_d_id, inputs.c_last)
        customer = session.fetchone(self.customer_sql, (inputs.c_w_id, inputs.c_d_id, c_id))
        c_data = self._pay(session, inputs, c_id, customer[10] == "BC")
        (h_date,) = returning(session, self.history_sql, (c_id, inputs.c_d_id, inputs.c_w_id, d_id, w_id, paid,
                                                          f"{w_name}    {d_name}"))
        balance = cents_of(customer[13], self.in_cents) - amount
        return PaymentScreen(w_id, d_id, c_id, inputs.c_d_id, inputs.c_w_id, money(amount), h_date,
                             Address(*warehouse), Address(*district), *customer[:3], Address(*customer[3:8]),
                             *customer[8:11], money(cents_of(customer[11], self.in_cents)), rate(customer[12]),
                             money(balance), c_data)

    def _pay(self, session: Session, inputs: PaymentInput, c_id: int, bad_credit: bool) -> str | None:
        """Take the payment from the customer; one with bad credit also keeps a history of payments in
        C_DATA (2.5.2.2), of which the screen shows the start."""
        paid, key = to_sql_money(inputs.amount_cents, self.in_cents), (inputs.c_w_id, inputs.c_d_id, c_id)
        if not bad_credit:
            session.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                            "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                            (paid, paid, *key))
            return None
        (c_data,) = session.fetchone("SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", key)
        entry = f"{c_id} {inputs.c_d_id} {inputs.c_w_id} {inputs.d_id} {inputs.w_id} {inputs.amount:.2f} "
        c_data = (entry + c_data)[:C_DATA_MAX]
        session.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                        "c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                        (paid, paid, c_data, *key))
        return c_data[:BAD_CREDIT_SHOWN]

    def screen(self, inputs: PaymentInput, row: tuple) -> PaymentScreen:
        """From ``tpcc_payment``'s columns, in the screen's order after its inputs."""
        c_id, *warehouse_and_district = row[:11]
        c_first, c_middle, c_last, *rest = row[11:]
        customer, (phone, since, credit, limit, discount, balance, c_data, h_date) = rest[:5], rest[5:]
        return PaymentScreen(inputs.w_id, inputs.d_id, c_id, inputs.c_d_id, inputs.c_w_id, money(inputs.amount_cents),
                             h_date, Address(*warehouse_and_district[:5]), Address(*warehouse_and_district[5:]),
                             c_first, c_middle, c_last, Address(*customer), phone, since, credit, limit,
                             rate(discount), balance, c_data)
