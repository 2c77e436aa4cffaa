"""What each transaction returns: the data of its terminal output screen (2.4.3.3, 2.5.3.3, 2.6.3.3,
2.8.3.3) and the Delivery's result-file record (2.7.2.3).

Both transaction modes return the same screens, so a client-side and a server-side run do the same work
and a test can hold one to the other. Money and rates are ``Decimal``s, whatever the engine stores; dates
are as the engine's driver returns a table's (``datetime`` on a server engine), also from a stored function
whose row gives them as text (``transaction.datetime_of``: MariaDB's JSON).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple

CENT = Decimal("0.01")
RATE = Decimal("0.0001")  # W_TAX, D_TAX and C_DISCOUNT have four decimals (1.3)


def money(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def rate(value: Any) -> Decimal:
    """A rate as the engine returns it (SQLite: a float; PostgreSQL: a Decimal) with its four decimals."""
    return Decimal(str(value)).quantize(RATE)


def total_amount(amounts_cents: int, discount: Decimal, w_tax: Decimal, d_tax: Decimal) -> Decimal:
    """2.4.2.2: sum(OL_AMOUNT) * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), to the cent (half up, as SQL's round)."""
    return (money(amounts_cents) * (1 - discount) * (1 + w_tax + d_tax)).quantize(CENT, ROUND_HALF_UP)


class NewOrderLineScreen(NamedTuple):
    supply_w_id: int
    i_id: int
    i_name: str
    quantity: int
    s_quantity: int  # after this line's update
    brand_generic: str  # "B" when both I_DATA and S_DATA contain "ORIGINAL", else "G"
    i_price: Decimal
    ol_amount: Decimal


class NewOrderScreen(NamedTuple):
    w_id: int
    d_id: int
    c_id: int
    c_last: str
    c_credit: str
    c_discount: Decimal
    w_tax: Decimal
    d_tax: Decimal
    o_ol_cnt: int
    o_id: int
    o_entry_d: Any
    total_amount: Decimal
    lines: tuple[NewOrderLineScreen, ...]


class Address(NamedTuple):
    street_1: str
    street_2: str
    city: str
    state: str
    zip: str


class PaymentScreen(NamedTuple):
    w_id: int
    d_id: int
    c_id: int
    c_d_id: int
    c_w_id: int
    h_amount: Decimal
    h_date: Any
    warehouse: Address
    district: Address
    c_first: str
    c_middle: str
    c_last: str
    customer: Address
    c_phone: str
    c_since: Any
    c_credit: str
    c_credit_lim: Decimal
    c_discount: Decimal
    c_balance: Decimal  # after the payment
    c_data: str | None  # the first 200 characters, for a customer with bad credit only


class OrderStatusLineScreen(NamedTuple):
    supply_w_id: int
    i_id: int
    quantity: int
    amount: Decimal
    delivery_d: Any


class OrderStatusScreen(NamedTuple):
    w_id: int
    d_id: int
    c_id: int
    c_first: str
    c_middle: str
    c_last: str
    c_balance: Decimal
    o_id: int | None  # None: the customer has no order
    o_entry_d: Any
    o_carrier_id: int | None
    lines: tuple[OrderStatusLineScreen, ...]


class DeliveryResult(NamedTuple):
    """2.7.2.3: the result-file record of one Delivery (its queue and completion times are the driver's)."""

    w_id: int
    carrier_id: int
    delivered: tuple[int | None, ...]  # the O_ID delivered in districts 1..10, None where skipped (2.7.4.2)

    @property
    def skipped(self) -> int:
        return sum(o_id is None for o_id in self.delivered)


class StockLevelScreen(NamedTuple):
    w_id: int
    d_id: int
    threshold: int
    low_stock: int
