"""MariaDB's client-side statements where they differ from the shared ones (the text SQLite and PostgreSQL run, in
each transaction's module), keyed by (transaction, statement); its stored functions are in ``mariadb.sql``.

- MariaDB returns rows from INSERT and DELETE, not from UPDATE: an ``UPDATE ... RETURNING`` is the UPDATE, then a
  SELECT of the same row by its key, which reads it as this transaction changed it (the row stays locked).
- New-Order's stock rows are one primary-key statement per row where the shared text joins a VALUES list: MariaDB's
  optimiser may scan the table for a derived table's rows, and ``FOR UPDATE`` would then lock every row it reads.
- A stored function returns one value, its row as a JSON array (``function_row`` reads it), and is called as
  ``SELECT f(...)`` with the server's UTC clock to the microsecond; a parameter needs no cast.
- ``WITH v AS MATERIALIZED`` has no hint (MariaDB materialises a CTE read twice); ``ANALYZE TABLE t``.

Each statement is sent in the same batch as the rest of its transaction's: one round trip, as the shared text.
"""

from __future__ import annotations

import json
from decimal import Decimal

from maximus.workloads.statements import Part, Split
from maximus.workloads.tpcc.constants import BAD_CREDIT_SHOWN, C_DATA_MAX

UTC_NOW = "UTC_TIMESTAMP(6)"  # the server's UTC time to the microsecond, as DATETIME(6) holds it


def stock(count: int, d_id: int, lock: str) -> Split:
    """New-Order: ``count`` stock rows read (and locked), each by its key (s_i_id, s_w_id): parameters in pairs."""
    read = (f"SELECT s_i_id, s_w_id, s_quantity, s_data, s_dist_{d_id:02d} FROM stock "
            f"WHERE s_i_id = ? AND s_w_id = ?{lock}")
    return Split(tuple(Part(read, (2 * row, 2 * row + 1), returns=True) for row in range(count)))


def restock(count: int, _district: int, _lock: str) -> Split:
    """New-Order: ``count`` stock rows changed, each by its key; parameters six a row (s_i_id, s_w_id, then the
    quantity left and what adds to s_ytd, s_order_cnt, s_remote_cnt)."""
    change = ("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + ?, "
              "s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?")
    return Split(tuple(Part(change, (6 * row + 2, 6 * row + 3, 6 * row + 4, 6 * row + 5, 6 * row, 6 * row + 1),
                            returns=False) for row in range(count)))


STATEMENTS = {
    ("new_order", "stock"): stock,
    ("new_order", "restock"): restock,
    ("new_order", "call"): f"SELECT tpcc_new_order(?, ?, ?, ?, ?, ?, {UTC_NOW})",
    ("payment", "warehouse"): Split((  # (amount, w_id)
        Part("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", (0, 1), returns=False),
        Part("SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?", (1,),
             returns=True))),
    ("payment", "district"): Split((  # (amount, w_id, d_id)
        Part("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", (0, 1, 2), returns=False),
        Part("SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district "
             "WHERE d_w_id = ? AND d_id = ?", (1, 2), returns=True))),
    ("payment", "pay_bad_credit"): Split((  # (amount, amount, entry, c_w_id, c_d_id, c_id)
        Part("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
             f"c_payment_cnt = c_payment_cnt + 1, c_data = substr(? || c_data, 1, {C_DATA_MAX}) "
             "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (0, 1, 2, 3, 4, 5), returns=False),
        Part(f"SELECT substr(c_data, 1, {BAD_CREDIT_SHOWN}) FROM customer WHERE c_w_id = ? AND c_d_id = ? "
             "AND c_id = ?", (3, 4, 5), returns=True))),
    ("payment", "call"): f"SELECT tpcc_payment(?, ?, ?, ?, ?, ?, ?, {UTC_NOW})",
    ("order_status", "call"): "SELECT tpcc_order_status(?, ?, ?, ?)",
    ("delivery", "carrier"): Split((  # (carrier, w_id, d_id, o_id)
        Part("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", (0, 1, 2, 3),
             returns=False),
        Part("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", (1, 2, 3), returns=True))),
    ("delivery", "call"): f"SELECT tpcc_delivery(?, ?, {UTC_NOW})",
    ("consistency", "violations"): lambda sql, order, shown: (
        f"WITH v AS ({sql}) SELECT v.*, (SELECT COUNT(*) FROM v) AS violations FROM v ORDER BY {order} "
        f"LIMIT {shown}"),
    ("load", "analyze"): lambda table: f"ANALYZE TABLE {table}",
}


def function_row(row: tuple | None) -> tuple | None:
    """The row a stored function returns as one JSON array (``mariadb.sql``), its numbers with decimals exact. JSON
    has no dates: a date is text (``transaction.datetime_of``)."""
    if row is None or row[0] is None:
        return None
    return tuple(json.loads(row[0], parse_float=Decimal))
