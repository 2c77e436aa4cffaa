"""New-Order (clause 2.4): enter a complete order in one database transaction."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.statements import Statement, batch
from maximus.workloads.tpcc.constants import (
    DISTRICTS_PER_WAREHOUSE, MAX_ORDER_LINES, MIN_ORDER_LINES, REMOTE_SUPPLY_PERCENT, ROLLBACK_PERCENT,
    UNUSED_ITEM_ID,
)
from maximus.workloads.tpcc.random import TpccRandom
from maximus.records import RollbackByRule
from maximus.workloads.tpcc.screens import NewOrderLineScreen, NewOrderScreen, money, rate, total_amount
from maximus.workloads.tpcc.schema import money_in_cents
from maximus.workloads.tpcc.sql import function_row, statements
from maximus.workloads.tpcc.transaction import SERVER_UTC_NOW, Home, cents_of, datetime_of, one_row, to_sql_money

try:
    from maximus.workloads.tpcc._draws import order_lines as _c_order_lines
except ImportError:  # built without a C compiler: the same draws in Python
    _c_order_lines = None


class OrderLine(NamedTuple):  # one line of an order, as the client-side New-Order walks them
    i_id: int
    supply_w_id: int
    quantity: int


class NewOrderInput(NamedTuple):
    """The order's lines are kept as three columns, the arrays the server-side call sends: a terminal
    draws about a thousand lines a second, and a tuple per line costs more than drawing it. The columns
    are the lists the draw filled, never changed after it; lists, because psycopg adapts a list to an
    array and a tuple to nothing (the asyncio terminals send the call's parameters through psycopg)."""

    w_id: int
    d_id: int
    c_id: int
    item_ids: list[int]
    supply_w_ids: list[int]
    quantities: list[int]

    @classmethod
    def from_lines(cls, w_id: int, d_id: int, c_id: int, lines: Sequence[OrderLine]) -> "NewOrderInput":
        return cls(w_id, d_id, c_id, *(list(column) for column in zip(*lines)))

    @property
    def lines(self) -> tuple[OrderLine, ...]:
        return tuple(map(OrderLine, self.item_ids, self.supply_w_ids, self.quantities))

    @property
    def remote_lines(self) -> int:
        return len(self.supply_w_ids) - self.supply_w_ids.count(self.w_id)

    @property
    def all_local(self) -> bool:
        return self.remote_lines == 0


QUANTITY_RANGE = (1, 10)  # 2.4.1.5: OL_QUANTITY
QUANTITY_SPANS = (QUANTITY_RANGE[0], QUANTITY_RANGE[1] - QUANTITY_RANGE[0] + 1)  # as _draws.order_lines takes it


def order_lines(rng: TpccRandom, count: int, rollback: bool, home: Home) -> tuple[list[int], list[int], list[int]]:
    """A New-Order's lines as three columns: per line its item (NURand; on a rollback the last line's is
    unused, 2.4.1.5), its supply warehouse (1 % remote when there are others) and its quantity.

    The reference for ``_draws.order_lines``, the same loop in C, which draws the same numbers from the
    same stream and is used when compiled: a terminal draws about 1,000 lines a second."""
    item_id, percent, quantity = rng.item_id, rng.percent, rng.uniform_of(*QUANTITY_RANGE)
    w_id, warehouses, last = home.w_id, home.warehouses, count - 1
    items, supplies, quantities = [], [], []
    for n in range(count):
        items.append(UNUSED_ITEM_ID if rollback and n == last else item_id())
        remote = warehouses > 1 and percent() <= REMOTE_SUPPLY_PERCENT
        supplies.append(rng.other_warehouse(w_id, warehouses) if remote else w_id)
        quantities.append(quantity())
    return items, supplies, quantities


def _values(count: int, width: int) -> str:
    """``count`` rows of ``width`` integer parameters, as a VALUES list (typed: PostgreSQL cannot infer them)."""
    row = "(" + ", ".join(["CAST(? AS INTEGER)"] * width) + ")"
    return ", ".join([row] * count)


# The shared SQL (sql/ has a dialect's own): the call, and a New-Order's sets of rows by kind, made as
# (rows, district, the dialect's lock) -> statement.
SQL: dict[str, Any] = {
    "call": f"SELECT * FROM tpcc_new_order(?, ?, ?, ?, ?, ?, {SERVER_UTC_NOW})",
    "items": lambda count, _, __: f"SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN "
                                  f"({', '.join(['?'] * count)})",
    # A join, not (s_i_id, s_w_id) IN (VALUES ...): SQLite scanned the whole STOCK table for the row values.
    "stock": lambda count, d_id, lock: f"SELECT s_i_id, s_w_id, s_quantity, s_data, s_dist_{d_id:02d} "
                                       f"FROM (VALUES {_values(count, 2)}) AS l JOIN stock "
                                       f"ON s_i_id = l.column1 AND s_w_id = l.column2{lock and f'{lock} OF stock'}",
    "restock": lambda count, _, __: (
        "UPDATE stock SET s_quantity = l.column3, s_ytd = s_ytd + l.column4, s_order_cnt = s_order_cnt + l.column5, "
        f"s_remote_cnt = s_remote_cnt + l.column6 FROM (VALUES {_values(count, 6)}) AS l "
        "WHERE s_i_id = l.column1 AND s_w_id = l.column2"),
    "lines": lambda count, _, __: (
        "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "
        "ol_quantity, ol_amount, ol_dist_info) VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"] * count)),
}


NEXT_ORDER = "UPDATE district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?"
QUEUED = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)"


class NewOrder:
    name = "new_order"
    read_only = False
    deferred = False
    one_snapshot = False
    isolation_means = "the district and stock rows locked before they are read"
    call_sql = SQL["call"]

    def __init__(self, dialect: Dialect) -> None:
        self.in_cents, self.lock = money_in_cents(dialect), dialect.for_update
        self.sql = statements(self.name, SQL, dialect)
        self.call_sql = self.sql["call"]
        self.function_row = function_row(dialect)
        self.customer_sql = ("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse "
                             "WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?")
        self.district_sql = f"SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ?{self.lock}"
        self.order_sql = ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
                          f"o_all_local) VALUES (?, ?, ?, ?, {dialect.utc_now}, NULL, ?, ?) RETURNING o_entry_d")
        self._statements: dict[tuple, Statement] = {}  # by (kind, district, rows): the SQL of a batch's set of rows

    def draw(self, rng: TpccRandom, home: Home) -> NewOrderInput:
        """2.4.1: district uniform, customer NURand, 5..15 lines, 1 % remote supply, 1 % rollback."""
        count = rng.uniform(MIN_ORDER_LINES, MAX_ORDER_LINES)
        rollback = rng.percent() <= ROLLBACK_PERCENT
        if _c_order_lines is None:
            items, supplies, quantities = order_lines(rng, count, rollback, home)
        else:
            items, supplies, quantities = _c_order_lines(
                rng.random, count, rollback, rng.item_id_spans, home.w_id, home.warehouses, REMOTE_SUPPLY_PERCENT,
                UNUSED_ITEM_ID, QUANTITY_SPANS)
        return NewOrderInput(home.w_id, rng.uniform(1, DISTRICTS_PER_WAREHOUSE), rng.customer_id(), items, supplies,
                             quantities)

    def call(self, inputs: NewOrderInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.d_id, inputs.c_id, inputs.item_ids, inputs.supply_w_ids,
                               inputs.quantities)

    def summed_facts(self, inputs: Sequence[NewOrderInput]) -> dict[str, int]:
        return {"order_lines": sum(len(order.item_ids) for order in inputs),
                "remote_order_lines": sum(order.remote_lines for order in inputs)}

    def execute(self, session: Session, inputs: NewOrderInput) -> NewOrderScreen:
        """2.4.2.2 in two batches (a round trip each on a server): what it reads, the rows it will change locked
        first (the district before the stock, as 2.4.2.2 orders them), then what it writes. Each line's item
        and stock are read and written a set at a time: one statement for the items, one for the stock rows."""
        w_id, d_id = inputs.w_id, inputs.d_id
        items, stocks = sorted(set(inputs.item_ids)), sorted(set(zip(inputs.item_ids, inputs.supply_w_ids)))
        customer, district, found, stocked = batch(session, [
            (self.customer_sql, (w_id, d_id, inputs.c_id)), (self.district_sql, (w_id, d_id)),
            (self.rows_sql("items", 0, len(items)), items),
            (self.rows_sql("stock", d_id, len(stocks)), [key for pair in stocks for key in pair])])
        catalogue = {i_id: (cents_of(price, self.in_cents), name, data) for i_id, price, name, data in found}
        if len(catalogue) < len(items):
            raise RollbackByRule("Item number is not valid")  # 2.4.2.3
        (c_discount, c_last, c_credit, w_tax), (o_id, d_tax) = customer[0], district[0]
        lines, rows, changes = self._lines(inputs, o_id, catalogue, {(i, w): rest for i, w, *rest in stocked})
        written = batch(session, [
            (NEXT_ORDER, (o_id + 1, w_id, d_id)),
            (self.order_sql, (o_id, d_id, w_id, inputs.c_id, len(lines), int(inputs.all_local))),
            (QUEUED, (o_id, d_id, w_id)),
            (self.rows_sql("restock", 0, len(changes)), [value for change in changes for value in change]),
            (self.rows_sql("lines", 0, len(lines)), [value for row in rows for value in row])], last=True)
        discount, w_tax, d_tax = rate(c_discount), rate(w_tax), rate(d_tax)
        total = total_amount(sum(int(line.ol_amount.scaleb(2)) for line in lines), discount, w_tax, d_tax)
        return NewOrderScreen(w_id, d_id, inputs.c_id, c_last, c_credit, discount, w_tax, d_tax, len(lines), o_id,
                              written[1][0][0], total, tuple(lines))

    def _lines(self, inputs: NewOrderInput, o_id: int, catalogue: dict, stock: dict) -> tuple[list, list, list]:
        """Each line's screen and ORDER-LINE row, in line order, and each stock row's change: its quantity taken
        line after line (2.4.2.2: restocked by 91 when fewer than 10 would remain), so an item ordered twice
        from one warehouse counts twice."""
        lines, rows, changed = [], [], {}  # type: list, list, dict[tuple[int, int], tuple[int, int, int, int]]
        for number, (i_id, supply, ordered) in enumerate(zip(*inputs[3:]), start=1):
            price, name, i_data = catalogue[i_id]
            left, s_data, dist_info = stock[i_id, supply]
            left = left - ordered if left >= ordered + 10 else left - ordered + 91
            stock[i_id, supply] = (left, s_data, dist_info)
            _, ytd, count, remote = changed.get((i_id, supply), (0, 0, 0, 0))
            changed[i_id, supply] = (left, ytd + ordered, count + 1, remote + (supply != inputs.w_id))
            brand = "B" if "ORIGINAL" in i_data and "ORIGINAL" in s_data else "G"  # 2.4.2.2: brand-generic
            lines.append(NewOrderLineScreen(supply, i_id, name, ordered, left, brand, money(price),
                                            money(ordered * price)))
            rows.append((o_id, inputs.d_id, inputs.w_id, number, i_id, supply, ordered,
                         to_sql_money(ordered * price, self.in_cents), dist_info))
        return lines, rows, [(i_id, supply, *change) for (i_id, supply), change in changed.items()]

    def rows_sql(self, kind: str, district: int, count: int) -> Statement:
        """A statement over ``count`` rows of a kind of ``SQL`` (items, stock rows, restocked rows, order lines), in
        ``district`` for the stock rows' (0 for the others), made once per count."""
        key = (kind, district, count)
        if key not in self._statements:
            self._statements[key] = self.sql[kind](count, district, self.lock)
        return self._statements[key]

    def screen(self, inputs: NewOrderInput, row: tuple | None) -> NewOrderScreen:
        """From ``tpcc_new_order``'s columns: the order's, then one array per line field."""
        o_id, c_last, c_credit, c_discount, w_tax, d_tax, entered_at, total, *columns = one_row(
            self.function_row(row), "new order's row")
        names, prices, s_quantities, brands, amounts = columns
        lines = tuple(NewOrderLineScreen(supply, i_id, name, quantity, s_quantity, brand, price, amount)
                      for supply, i_id, quantity, name, price, s_quantity, brand, amount
                      in zip(inputs.supply_w_ids, inputs.item_ids, inputs.quantities, names, prices, s_quantities,
                             brands, amounts))
        return NewOrderScreen(inputs.w_id, inputs.d_id, inputs.c_id, c_last, c_credit, rate(c_discount), rate(w_tax),
                              rate(d_tax), len(lines), o_id, datetime_of(entered_at), total, lines)
