"""Payment (clause 2.5): record a customer's payment at warehouse, district and customer level."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import (
    AMOUNT_RANGE_CENTS, BY_NAME_PERCENT, C_DATA_MAX, DISTRICTS_PER_WAREHOUSE, PAYMENT_REMOTE_PERCENT,
)
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.transaction import SERVER_UTC_NOW, Home, customer_by_name, now_text


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


class Payment:
    name = "payment"
    read_only = False
    deferred = False
    call_sql = f"SELECT tpcc_payment(?, ?, ?, ?, ?, ?, ?::numeric, {SERVER_UTC_NOW})"

    def __init__(self, dialect: Dialect) -> None:
        self.customer_sql = ("SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
                             "c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer "
                             f"WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?{dialect.for_update}")

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

    def execute(self, session: Session, inputs: PaymentInput) -> None:
        w_id, d_id, amount = inputs.w_id, inputs.d_id, inputs.amount
        session.execute("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", (amount, w_id))
        (w_name,) = session.fetchone("SELECT w_name FROM warehouse WHERE w_id = ?", (w_id,))
        session.execute("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", (amount, w_id, d_id))
        (d_name,) = session.fetchone("SELECT d_name FROM district WHERE d_w_id = ? AND d_id = ?", (w_id, d_id))
        c_id = inputs.c_id or customer_by_name(session, inputs.c_w_id, inputs.c_d_id, inputs.c_last)
        customer = session.fetchone(self.customer_sql, (inputs.c_w_id, inputs.c_d_id, c_id))
        if customer[10] == "BC":  # 2.5.2.2: bad credit keeps a history of payments in C_DATA
            self._bad_credit(session, inputs, c_id)
        else:
            session.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                            "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                            (amount, amount, inputs.c_w_id, inputs.c_d_id, c_id))
        session.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (c_id, inputs.c_d_id, inputs.c_w_id, d_id, w_id, now_text(), amount, f"{w_name}    {d_name}"))

    @staticmethod
    def _bad_credit(session: Session, inputs: PaymentInput, c_id: int) -> None:
        key = (inputs.c_w_id, inputs.c_d_id, c_id)
        (c_data,) = session.fetchone("SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", key)
        entry = f"{c_id} {inputs.c_d_id} {inputs.c_w_id} {inputs.d_id} {inputs.w_id} {inputs.amount:.2f} "
        session.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
                        "c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
                        (inputs.amount, inputs.amount, (entry + c_data)[:C_DATA_MAX], *key))
