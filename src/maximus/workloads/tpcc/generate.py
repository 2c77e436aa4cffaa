"""Initial population (clause 4.3.3.1), generated column-wise with numpy.

Every table chunk comes from its own random stream keyed by (seed, table, warehouse, district), so
the data for a warehouse is the same whichever process or engine generates it, in whatever order.
A chunk is a ``Chunk``: the table, its column names and one numpy array per column (text as bytes,
NULLs masked), so an engine can build its bulk format without a Python object per value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from maximus.engines.base import rows_of
from maximus.workloads.tpcc import schema
from maximus.workloads.tpcc.constants import (
    A_C_LAST, CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, FIRST_UNDELIVERED_ORDER, INITIAL_C_BALANCE,
    INITIAL_C_CREDIT_LIM, INITIAL_C_YTD_PAYMENT, INITIAL_D_NEXT_O_ID, INITIAL_D_YTD, INITIAL_H_AMOUNT,
    INITIAL_W_YTD, ITEMS, MAX_ORDER_LINES, MIN_ORDER_LINES, ORDERS_PER_DISTRICT, STOCK_PER_WAREHOUSE,
)
from maximus.workloads.tpcc.random import LAST_NAMES

_ALNUM = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
_LETTERS = _ALNUM[:26]
_ORIGINAL = np.frombuffer(b"ORIGINAL", dtype=np.uint8)
_ONES = np.frombuffer(b"11111", dtype=np.uint8)
_LAST_NAMES = np.array(LAST_NAMES, dtype="S")
_STOCK_CHUNK = 25_000
_TABLE_IDS = {table.name: number for number, table in enumerate(schema.TABLES)}


@dataclass(frozen=True)
class Chunk:
    table: str
    columns: tuple[str, ...]
    values: tuple[np.ndarray, ...]  # one per column, as Engine.bulk_insert_columns takes them

    def __len__(self) -> int:
        return len(self.values[0])

    @property
    def rows(self) -> list[tuple]:
        """The same rows as Python values (text as str, NULL as None)."""
        return rows_of(self.values)


def rng_for(seed: int, table: str, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, _TABLE_IDS[table], *keys])


def _strings(rng: np.random.Generator, alphabet: np.ndarray, n: int, low: int, high: int,
             original: bool = False) -> np.ndarray:
    """4.3.2.2: n random strings of ``alphabet`` with lengths uniform in [low, high].

    With ``original``, 10 % of them, chosen at random, carry "ORIGINAL" at a random position
    (4.3.3.1 for I_DATA and S_DATA).
    """
    lengths = rng.integers(low, high + 1, n)
    chars = _characters(rng.integers(0, len(alphabet), (n, high), dtype=np.uint8), alphabet)  # bytes: 2.5x faster
    if original:
        _stamp_original(rng, chars, lengths)
    if low < high:
        chars[np.arange(high) >= lengths[:, None]] = 0  # numpy drops trailing NULs from bytes
    return chars.view(f"S{high}").ravel()


def _characters(indexes: np.ndarray, alphabet: np.ndarray) -> np.ndarray:
    """``alphabet[indexes]``, computed as an offset per run of consecutive bytes in the alphabet (A-Z,
    a-z, 0-9): adding uint8 offsets is twice as fast as numpy's fancy indexing."""
    offsets = (alphabet.astype(np.int16) - np.arange(len(alphabet))) % 256
    chars = indexes + np.uint8(offsets[0])
    for start in np.flatnonzero(np.diff(offsets)) + 1:
        chars += (indexes >= start).view(np.uint8) * np.uint8((offsets[start] - offsets[start - 1]) % 256)
    return chars


def _stamp_original(rng: np.random.Generator, chars: np.ndarray, lengths: np.ndarray) -> None:
    rows = rng.choice(len(chars), size=len(chars) // 10, replace=False)
    starts = rng.integers(0, lengths[rows] - len(_ORIGINAL) + 1)
    chars[rows[:, None], starts[:, None] + np.arange(len(_ORIGINAL))] = _ORIGINAL


def _zips(rng: np.random.Generator, n: int) -> np.ndarray:
    """4.3.2.7: four random digits followed by "11111"."""
    digits = _strings(rng, _DIGITS, n, 4, 4).view(np.uint8).reshape(n, 4)
    return np.hstack([digits, np.broadcast_to(_ONES, (n, len(_ONES)))]).view("S9").ravel()


def _address(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """4.3.3.1: street 1 and 2, city (a-strings 10..20), state (2 letters), zip."""
    return [_strings(rng, _ALNUM, n, 10, 20), _strings(rng, _ALNUM, n, 10, 20),
            _strings(rng, _ALNUM, n, 10, 20), _strings(rng, _LETTERS, n, 2, 2), _zips(rng, n)]


def _money(rng: np.random.Generator, low_cents: int, high_cents: int, n: int) -> np.ndarray:
    return rng.integers(low_cents, high_cents + 1, n) / 100.0


def _same(value: int | float | str, n: int) -> np.ndarray:
    """A constant column: one value seen n times (engines format it once)."""
    return np.broadcast_to(np.array(value.encode() if isinstance(value, str) else value), n)


def _chunk(table: schema.Table, columns: list[np.ndarray]) -> Chunk:
    return Chunk(table.name, table.column_names, tuple(columns))


def items(seed: int) -> Iterator[Chunk]:
    rng = rng_for(seed, "item")
    yield _chunk(schema.ITEM, [
        np.arange(1, ITEMS + 1), rng.integers(1, 10_001, ITEMS), _strings(rng, _ALNUM, ITEMS, 14, 24),
        _money(rng, 100, 10_000, ITEMS), _strings(rng, _ALNUM, ITEMS, 26, 50, original=True),
    ])


def warehouse(seed: int, w_id: int) -> Iterator[Chunk]:
    rng = rng_for(seed, "warehouse", w_id)
    yield _chunk(schema.WAREHOUSE, [
        _same(w_id, 1), _strings(rng, _ALNUM, 1, 6, 10), *_address(rng, 1),
        rng.integers(0, 2_001, 1) / 10_000, _same(INITIAL_W_YTD, 1),
    ])


def districts(seed: int, w_id: int) -> Iterator[Chunk]:
    rng = rng_for(seed, "district", w_id)
    n = DISTRICTS_PER_WAREHOUSE
    yield _chunk(schema.DISTRICT, [
        np.arange(1, n + 1), _same(w_id, n), _strings(rng, _ALNUM, n, 6, 10), *_address(rng, n),
        rng.integers(0, 2_001, n) / 10_000, _same(INITIAL_D_YTD, n), _same(INITIAL_D_NEXT_O_ID, n),
    ])


def stock(seed: int, w_id: int) -> Iterator[Chunk]:
    for first in range(1, STOCK_PER_WAREHOUSE + 1, _STOCK_CHUNK):
        rng = rng_for(seed, "stock", w_id, first)
        n = min(_STOCK_CHUNK, STOCK_PER_WAREHOUSE - first + 1)
        quantity = rng.integers(10, 101, n)  # drawn first, as ever: the same seed gives the same stock
        districts = [_strings(rng, _ALNUM, n, 24, 24) for _ in range(10)]
        yield _chunk(schema.STOCK, [
            np.arange(first, first + n), _same(w_id, n), *districts,
            _strings(rng, _ALNUM, n, 26, 50, original=True), quantity, _same(0, n), _same(0, n), _same(0, n),
        ])


def customers(seed: int, w_id: int, d_id: int, c_load: int, since: str) -> Iterator[Chunk]:
    """4.3.3.1 CUSTOMER and HISTORY rows of one district."""
    rng = rng_for(seed, "customer", w_id, d_id)
    n = CUSTOMERS_PER_DISTRICT
    credit = np.full(n, b"GC", dtype="S2")
    credit[rng.choice(n, size=n // 10, replace=False)] = b"BC"  # 10 % of rows, chosen at random
    yield _chunk(schema.CUSTOMER, [
        np.arange(1, n + 1), _same(d_id, n), _same(w_id, n), _strings(rng, _ALNUM, n, 8, 16), _same("OE", n),
        _customer_last_names(rng, n, c_load), *_address(rng, n), _strings(rng, _DIGITS, n, 16, 16),
        _same(since, n), credit, _same(INITIAL_C_CREDIT_LIM, n), rng.integers(0, 5_001, n) / 10_000,
        _same(INITIAL_C_BALANCE, n), _same(INITIAL_C_YTD_PAYMENT, n), _same(1, n), _same(0, n),
        _strings(rng, _ALNUM, n, 300, 500),
    ])
    yield _chunk(schema.HISTORY, [
        np.arange(1, n + 1), _same(d_id, n), _same(w_id, n), _same(d_id, n), _same(w_id, n), _same(since, n),
        _same(INITIAL_H_AMOUNT, n), _strings(rng, _ALNUM, n, 12, 24),
    ])


def _customer_last_names(rng: np.random.Generator, n: int, c_load: int) -> np.ndarray:
    """4.3.3.1: the first 1,000 customers get names 0..999 in order, the rest NURand(255, 0, 999)."""
    rest = n - 1000
    nurand = ((rng.integers(0, A_C_LAST + 1, rest) | rng.integers(0, 1000, rest)) + c_load) % 1000
    return _LAST_NAMES[np.concatenate([np.arange(1000), nurand])]


def orders(seed: int, w_id: int, d_id: int, since: str) -> Iterator[Chunk]:
    """4.3.3.1 ORDERS, ORDER-LINE and NEW-ORDER rows of one district."""
    rng = rng_for(seed, "orders", w_id, d_id)
    n = ORDERS_PER_DISTRICT
    o_ids = np.arange(1, n + 1)
    delivered = o_ids < FIRST_UNDELIVERED_ORDER
    ol_cnt = rng.integers(MIN_ORDER_LINES, MAX_ORDER_LINES + 1, n)
    carrier = np.ma.masked_array(rng.integers(1, 11, n), mask=~delivered)  # NULL until delivered
    yield _chunk(schema.ORDERS, [
        o_ids, _same(d_id, n), _same(w_id, n), rng.permutation(n) + 1, _same(since, n), carrier, ol_cnt,
        _same(1, n),
    ])
    yield _order_lines(rng, w_id, d_id, o_ids, ol_cnt, since)
    undelivered = o_ids[~delivered]
    m = len(undelivered)
    yield _chunk(schema.NEW_ORDER, [undelivered, _same(d_id, m), _same(w_id, m)])


def _order_lines(rng: np.random.Generator, w_id: int, d_id: int, o_ids: np.ndarray, ol_cnt: np.ndarray,
                 since: str) -> Chunk:
    line_o_ids = np.repeat(o_ids, ol_cnt)
    numbers = np.arange(len(line_o_ids)) - np.repeat(np.cumsum(ol_cnt) - ol_cnt, ol_cnt) + 1
    delivered = line_o_ids < FIRST_UNDELIVERED_ORDER
    n = len(line_o_ids)
    amounts = np.where(delivered, 0.0, rng.integers(1, 1_000_000, n) / 100.0)
    delivery_dates = np.ma.masked_array(_same(since, n), mask=~delivered)  # NULL until delivered
    return _chunk(schema.ORDER_LINE, [
        line_o_ids, _same(d_id, n), _same(w_id, n), numbers, rng.integers(1, ITEMS + 1, n), _same(w_id, n),
        delivery_dates, _same(5, n), amounts, _strings(rng, _ALNUM, n, 24, 24),
    ])


def warehouse_chunks(seed: int, w_id: int, c_load: int, since: str) -> Iterator[Chunk]:
    """Every row that belongs to warehouse ``w_id``, table by table."""
    yield from warehouse(seed, w_id)
    yield from districts(seed, w_id)
    yield from stock(seed, w_id)
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        yield from customers(seed, w_id, d_id, c_load, since)
        yield from orders(seed, w_id, d_id, since)


def expected_rows(warehouses: int) -> dict[str, int]:
    """Rows per table the load writes (order lines are an estimate: 10 per order on average)."""
    districts_total = warehouses * DISTRICTS_PER_WAREHOUSE
    return {
        "item": ITEMS, "warehouse": warehouses, "district": districts_total,
        "stock": warehouses * STOCK_PER_WAREHOUSE, "customer": districts_total * CUSTOMERS_PER_DISTRICT,
        "history": districts_total * CUSTOMERS_PER_DISTRICT, "orders": districts_total * ORDERS_PER_DISTRICT,
        "new_order": districts_total * (ORDERS_PER_DISTRICT - FIRST_UNDELIVERED_ORDER + 1),
        "order_line": districts_total * ORDERS_PER_DISTRICT * 10,
    }
