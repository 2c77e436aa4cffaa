"""TPC-C consistency conditions (clause 3.3.2): the twelve invariants a TPC-C database must keep.

Each condition is one query returning the rows that violate it. The aggregation happens in the
database (GROUP BY in derived tables joined on their keys, never a correlated subquery), so a check
stays near-linear on a million order lines. The SQL is standard (the one window function, COUNT(*)
OVER (), needs SQLite 3.25+) and runs unchanged on SQLite and PostgreSQL. 3.3.3 asks for conditions
1-4 before and after a run; 11 only holds on a freshly loaded database.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, NamedTuple, Sequence

from maximus.engines.base import Session
from maximus.workloads.base import CheckResult
from maximus.workloads.tpcc.constants import FIRST_UNDELIVERED_ORDER

# Money is exact on every engine (integer cents where the engine's NUMERIC is binary floating point, as
# SQLite's is), so amounts are compared exactly: a tolerance would hide a lost cent.
SHOWN_VIOLATIONS = 3  # enough to start investigating; the count tells how many more there are
DELIVERED_AT_LOAD = FIRST_UNDELIVERED_ORDER - 1  # 4.3.3.1: orders 1..2100 of a district are delivered


class Query(NamedTuple):
    """A condition's check: ``sql`` gives one row per violation, ``keys`` columns then ``values``."""

    noun: str  # what violates it: "warehouse", "district", ...
    sql: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    params: Sequence[Any] = ()
    money: bool = False  # the values are amounts


Check = Callable[[], Query]


@dataclass(frozen=True)
class Condition:
    description: str
    check: Check
    initial_state_only: bool = False


CONDITIONS: dict[int, Condition] = {}


def _condition(number: int, description: str, initial_state_only: bool = False) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        CONDITIONS[number] = Condition(description, check, initial_state_only)
        return check
    return register


def violations_sql(sql: str, order: str, shown: int) -> str:
    """The rows of ``sql`` in ``order``, the first ``shown`` of them, each with the count of all.

    The query runs once, materialised, planned on its own: below a LIMIT, PostgreSQL planned it for its first rows
    (nested loops over 60,000 customers: 100 s at 2 warehouses), though counting needs them all."""
    return (f"WITH v AS MATERIALIZED ({sql}) SELECT v.*, (SELECT COUNT(*) FROM v) AS violations FROM v "
            f"ORDER BY {order} LIMIT {shown}")


SQL = {"violations": violations_sql}  # the shared SQL (sql/ has a dialect's own)


def check_consistency(session: Session, fresh: bool, money_in_cents: bool,
                      violations: Callable[[str, str, int], str] = violations_sql) -> list[CheckResult]:
    """Check conditions 1-12 of clause 3.3.2; ``fresh``: no transaction has run since the load;
    ``money_in_cents``: the database keeps money in integer cents (``schema.money_in_cents``); ``violations``:
    the dialect's ``violations_sql``."""
    return [_run(number, condition, session, fresh, money_in_cents, violations)
            for number, condition in sorted(CONDITIONS.items())]


def _run(number: int, condition: Condition, session: Session, fresh: bool, money_in_cents: bool,
         violations: Callable[[str, str, int], str]) -> CheckResult:
    clause = f"3.3.2.{number}"
    if condition.initial_state_only and not fresh:
        reason = ("holds only on a freshly loaded database: Delivery removes NEW-ORDER rows "
                  "and New-Order adds orders, so the difference drifts during a run")
        return CheckResult(number, clause, condition.description, None, reason)
    detail = _violations(session, condition.check(), money_in_cents, violations)
    return CheckResult(number, clause, condition.description, detail == "", detail)


def _differs(a: str, b: str) -> str:
    # A NULL where a number belongs is a violation, not an unknown to let through.
    return f"COALESCE(({a}) - ({b}), 1) <> 0"


def _violations(session: Session, query: Query, in_cents: bool, violations: Callable[[str, str, int], str]) -> str:
    """Run the query and describe the violations it found ("" when none)."""
    noun, sql, keys, values, params, money = query
    order = ", ".join(f"v.{key}" for key in keys)
    rows = session.fetchall(violations(sql, order, SHOWN_VIOLATIONS), params)
    if not rows:
        return ""
    total = rows[0][-1]
    labels = keys + values
    shown = "; ".join(" ".join(f"{label}={_show(value, money and i >= len(keys), in_cents)}"
                               for i, (label, value) in enumerate(zip(labels, row))) for row in rows)
    verb = "violates" if total == 1 else "violate"
    return f"{total} {noun}{'' if total == 1 else 's'} {verb}: {shown}"


def _show(value: object, money: bool, in_cents: bool) -> str:
    if value is None:
        return "NULL"
    if money and in_cents and isinstance(value, int):
        return f"{Decimal(value).scaleb(-2):.2f}"
    if money and isinstance(value, (int, Decimal)):
        return f"{value:.2f}"
    return str(value)


# Per customer: sum of OL_AMOUNT over the delivered lines of the customer's orders (10 and 12).
_DELIVERED_PER_CUSTOMER = """
    SELECT o.o_w_id AS w_id, o.o_d_id AS d_id, o.o_c_id AS c_id, SUM(ol.ol_amount) AS amount
    FROM orders o JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
    WHERE ol.ol_delivery_d IS NOT NULL
    GROUP BY o.o_w_id, o.o_d_id, o.o_c_id"""

_CUSTOMER_DELIVERED_JOIN = f"""
    LEFT JOIN ({_DELIVERED_PER_CUSTOMER}) dl ON dl.w_id = c.c_w_id AND dl.d_id = c.c_d_id AND dl.c_id = c.c_id"""


@_condition(1, "W_YTD = sum(D_YTD) per warehouse")
def _warehouse_ytd_is_district_ytd() -> Query:
    sql = f"""
        SELECT w.w_id AS w_id, w.w_ytd AS w_ytd, COALESCE(d.ytd, 0) AS d_ytd
        FROM warehouse w
        LEFT JOIN (SELECT d_w_id, SUM(d_ytd) AS ytd FROM district GROUP BY d_w_id) d ON d.d_w_id = w.w_id
        WHERE {_differs("w.w_ytd", "COALESCE(d.ytd, 0)")}"""
    return Query("warehouse", sql, ("w_id",), ("w_ytd", "sum(d_ytd)"), money=True)


@_condition(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district")
def _next_order_id_follows_last_order() -> Query:
    # A district whose NEW-ORDER rows were all delivered has no max(NO_O_ID) to compare.
    sql = f"""
        SELECT d.d_w_id AS w_id, d.d_id AS d_id, d.d_next_o_id - 1 AS last_o_id,
               o.max_o_id AS max_o_id, n.max_no_o_id AS max_no_o_id
        FROM district d
        LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS max_o_id FROM orders GROUP BY o_w_id, o_d_id) o
            ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
        LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS max_no_o_id FROM new_order GROUP BY no_w_id, no_d_id) n
            ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
        WHERE {_differs("d.d_next_o_id - 1", "COALESCE(o.max_o_id, 0)")}
           OR (n.max_no_o_id IS NOT NULL AND {_differs("d.d_next_o_id - 1", "n.max_no_o_id")})"""
    return Query("district", sql, ("w_id", "d_id"),
                       ("d_next_o_id-1", "max(o_id)", "max(no_o_id)"))


@_condition(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER) per district")
def _new_orders_have_no_gaps() -> Query:
    # Districts without NEW-ORDER rows produce no group, so they pass.
    sql = """
        SELECT no_w_id AS w_id, no_d_id AS d_id, MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS new_orders
        FROM new_order GROUP BY no_w_id, no_d_id
        HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)"""
    return Query("district", sql, ("w_id", "d_id"),
                       ("max(no_o_id)-min(no_o_id)+1", "count(new_order)"))


@_condition(4, "sum(O_OL_CNT) = count(ORDER-LINE) per district")
def _order_line_counts_match_per_district() -> Query:
    sql = f"""
        SELECT d.d_w_id AS w_id, d.d_id AS d_id, COALESCE(o.ol_cnt, 0) AS ol_cnt,
               COALESCE(l.line_count, 0) AS line_count
        FROM district d
        LEFT JOIN (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS ol_cnt FROM orders GROUP BY o_w_id, o_d_id) o
            ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
        LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS line_count FROM order_line GROUP BY ol_w_id, ol_d_id) l
            ON l.ol_w_id = d.d_w_id AND l.ol_d_id = d.d_id
        WHERE {_differs("COALESCE(o.ol_cnt, 0)", "COALESCE(l.line_count, 0)")}"""
    return Query("district", sql, ("w_id", "d_id"), ("sum(o_ol_cnt)", "count(order_line)"))


@_condition(5, "O_CARRIER_ID is null iff the order has a NEW-ORDER row")
def _undelivered_orders_are_new_orders() -> Query:
    sql = """
        SELECT o.o_w_id AS w_id, o.o_d_id AS d_id, o.o_id AS o_id, o.o_carrier_id AS carrier,
               CASE WHEN n.no_o_id IS NULL THEN 'no' ELSE 'yes' END AS in_new_order
        FROM orders o
        LEFT JOIN new_order n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
        WHERE (o.o_carrier_id IS NULL AND n.no_o_id IS NULL)
           OR (o.o_carrier_id IS NOT NULL AND n.no_o_id IS NOT NULL)"""
    return Query("order", sql, ("w_id", "d_id", "o_id"), ("o_carrier_id", "in_new_order"))


@_condition(6, "O_OL_CNT = count(ORDER-LINE) per order")
def _order_line_count_matches_order() -> Query:
    sql = f"""
        SELECT o.o_w_id AS w_id, o.o_d_id AS d_id, o.o_id AS o_id, o.o_ol_cnt AS ol_cnt,
               COALESCE(l.line_count, 0) AS line_count
        FROM orders o
        LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS line_count FROM order_line
                   GROUP BY ol_w_id, ol_d_id, ol_o_id) l
            ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
        WHERE {_differs("o.o_ol_cnt", "COALESCE(l.line_count, 0)")}"""
    return Query("order", sql, ("w_id", "d_id", "o_id"), ("o_ol_cnt", "count(order_line)"))


@_condition(7, "OL_DELIVERY_D is null iff O_CARRIER_ID is null")
def _delivery_dates_match_carrier() -> Query:
    # Checked per order rather than per line: one row per order says which side is off.
    sql = """
        SELECT o.o_w_id AS w_id, o.o_d_id AS d_id, o.o_id AS o_id, o.o_carrier_id AS carrier,
               l.delivered AS delivered, l.line_count - l.delivered AS undelivered
        FROM orders o
        JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(ol_delivery_d) AS delivered, COUNT(*) AS line_count
              FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id) l
            ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
        WHERE (o.o_carrier_id IS NULL AND l.delivered > 0)
           OR (o.o_carrier_id IS NOT NULL AND l.delivered < l.line_count)"""
    return Query("order", sql, ("w_id", "d_id", "o_id"),
                       ("o_carrier_id", "delivered_lines", "undelivered_lines"))


@_condition(8, "W_YTD = sum(H_AMOUNT) per warehouse")
def _warehouse_ytd_is_history() -> Query:
    sql = f"""
        SELECT w.w_id AS w_id, w.w_ytd AS w_ytd, COALESCE(h.amount, 0) AS amount
        FROM warehouse w
        LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS amount FROM history GROUP BY h_w_id) h ON h.h_w_id = w.w_id
        WHERE {_differs("w.w_ytd", "COALESCE(h.amount, 0)")}"""
    return Query("warehouse", sql, ("w_id",), ("w_ytd", "sum(h_amount)"), money=True)


@_condition(9, "D_YTD = sum(H_AMOUNT) per district")
def _district_ytd_is_history() -> Query:
    sql = f"""
        SELECT d.d_w_id AS w_id, d.d_id AS d_id, d.d_ytd AS d_ytd, COALESCE(h.amount, 0) AS amount
        FROM district d
        LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS amount FROM history GROUP BY h_w_id, h_d_id) h
            ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id
        WHERE {_differs("d.d_ytd", "COALESCE(h.amount, 0)")}"""
    return Query("district", sql, ("w_id", "d_id"), ("d_ytd", "sum(h_amount)"), money=True)


@_condition(10, "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) per customer")
def _balance_is_deliveries_minus_payments() -> Query:
    # History is matched on the paying customer (H_C_*), not on the warehouse that took the payment.
    sql = f"""
        SELECT c.c_w_id AS w_id, c.c_d_id AS d_id, c.c_id AS c_id, c.c_balance AS balance,
               COALESCE(dl.amount, 0) AS delivered, COALESCE(h.amount, 0) AS paid
        FROM customer c {_CUSTOMER_DELIVERED_JOIN}
        LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, SUM(h_amount) AS amount FROM history
                   GROUP BY h_c_w_id, h_c_d_id, h_c_id) h
            ON h.h_c_w_id = c.c_w_id AND h.h_c_d_id = c.c_d_id AND h.h_c_id = c.c_id
        WHERE {_differs("c.c_balance", "COALESCE(dl.amount, 0) - COALESCE(h.amount, 0)")}"""
    return Query("customer", sql, ("w_id", "d_id", "c_id"),
                       ("c_balance", "sum(delivered ol_amount)", "sum(h_amount)"), money=True)


@_condition(11, f"count(ORDER) - count(NEW-ORDER) = {DELIVERED_AT_LOAD} per district", initial_state_only=True)
def _delivered_orders_as_loaded() -> Query:
    sql = f"""
        SELECT d.d_w_id AS w_id, d.d_id AS d_id, COALESCE(o.order_count, 0) AS order_count,
               COALESCE(n.new_orders, 0) AS new_orders
        FROM district d
        LEFT JOIN (SELECT o_w_id, o_d_id, COUNT(*) AS order_count FROM orders GROUP BY o_w_id, o_d_id) o
            ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
        LEFT JOIN (SELECT no_w_id, no_d_id, COUNT(*) AS new_orders FROM new_order GROUP BY no_w_id, no_d_id) n
            ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
        WHERE {_differs("COALESCE(o.order_count, 0) - COALESCE(n.new_orders, 0)", "?")}"""
    return Query("district", sql, ("w_id", "d_id"), ("count(orders)", "count(new_order)"),
                       params=(DELIVERED_AT_LOAD,))


@_condition(12, "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) per customer")
def _balance_plus_payments_is_deliveries() -> Query:
    sql = f"""
        SELECT c.c_w_id AS w_id, c.c_d_id AS d_id, c.c_id AS c_id, c.c_balance AS balance,
               c.c_ytd_payment AS ytd_payment, COALESCE(dl.amount, 0) AS delivered
        FROM customer c {_CUSTOMER_DELIVERED_JOIN}
        WHERE {_differs("c.c_balance + c.c_ytd_payment", "COALESCE(dl.amount, 0)")}"""
    return Query("customer", sql, ("w_id", "d_id", "c_id"),
                       ("c_balance", "c_ytd_payment", "sum(delivered ol_amount)"), money=True)
