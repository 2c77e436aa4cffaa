"""The initial population (clause 4.3.3.1) as the loader writes it into a real SQLite file.

One warehouse is loaded once for the module (~3 s); every test only reads it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from maximus.engines.base import rows_of
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError
from maximus.workloads.tpcc import Tpcc, generate, loader
from maximus.workloads.tpcc.consistency import check_consistency
from maximus.workloads.tpcc.random import LAST_NAMES, NURandConstants

SEED = 20240601
TABLE_ROWS = {"item": 100_000, "warehouse": 1, "district": 10, "customer": 30_000, "history": 30_000,
              "orders": 30_000, "new_order": 9_000, "stock": 100_000}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SQLiteEngine, loader.LoadResult]]:
    engine = SQLiteEngine(tmp_path_factory.mktemp("tpcc-load"), "t", {})
    result = loader.load(engine, 1, SEED)
    yield engine, result
    engine.destroy()


@pytest.fixture(scope="module")
def db(loaded: tuple[SQLiteEngine, loader.LoadResult]) -> Iterator[sqlite3.Connection]:
    engine, _ = loaded
    connection = sqlite3.connect(engine.path)
    yield connection
    connection.close()


def one(db: sqlite3.Connection, sql: str, params: tuple = ()):
    return db.execute(sql, params).fetchone()


def rows(db: sqlite3.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    return db.execute(sql, params).fetchall()


# --- cardinalities (4.2.2, 4.3.3.1) ---

@pytest.mark.parametrize("table, count", TABLE_ROWS.items())
def test_table_cardinality(db: sqlite3.Connection, table: str, count: int) -> None:
    assert one(db, f"SELECT COUNT(*) FROM {table}") == (count,)


def test_new_order_holds_exactly_orders_2101_to_3000_of_each_district(db: sqlite3.Connection) -> None:
    per_district = rows(db, "SELECT no_w_id, no_d_id, COUNT(*), MIN(no_o_id), MAX(no_o_id), "
                            "COUNT(DISTINCT no_o_id) FROM new_order GROUP BY no_w_id, no_d_id ORDER BY no_d_id")
    assert per_district == [(1, d, 900, 2101, 3000, 900) for d in range(1, 11)]


def test_order_lines_5_to_15_per_order_and_match_o_ol_cnt(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT MIN(o_ol_cnt), MAX(o_ol_cnt) FROM orders") == (5, 15)
    (lines,) = one(db, "SELECT COUNT(*) FROM order_line")
    assert one(db, "SELECT SUM(o_ol_cnt) FROM orders") == (lines,)
    assert 290_000 < lines < 310_000  # ~10 per order
    mismatched = one(db, "SELECT COUNT(*) FROM orders o LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, "
                         "COUNT(*) AS n, MAX(ol_number) AS top FROM order_line GROUP BY 1, 2, 3) l "
                         "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id "
                         "WHERE l.n IS NOT o.o_ol_cnt OR l.top IS NOT o.o_ol_cnt")
    assert mismatched == (0,)  # each order has lines 1..o_ol_cnt
    per_district = rows(db, "SELECT o_d_id, COUNT(*), MIN(o_id), MAX(o_id) FROM orders GROUP BY o_d_id")
    assert per_district == [(d, 3000, 1, 3000) for d in range(1, 11)]


def test_load_result_and_metadata(loaded: tuple[SQLiteEngine, loader.LoadResult]) -> None:
    engine, result = loaded
    assert result.scale == 1 and result.seed == SEED
    assert result.seconds > 0
    assert result.inputs == NURandConstants.for_load(SEED)
    assert {k: v for k, v in result.rows.items() if k != "order_line"} == TABLE_ROWS
    session = engine.connect()
    try:
        info = loader.read_info(session, engine.dialect)
        (lines,) = session.fetchone("SELECT COUNT(*) FROM order_line")
    finally:
        session.close()
    assert result.rows["order_line"] == lines
    assert info is not None
    assert info.scale == 1
    assert info.seed == SEED
    assert info.fresh is True
    assert info.inputs == result.inputs
    assert 0 <= info.inputs.c_last <= 255
    assert info.load_seconds > 0
    assert info.creation_settings == {"page_size": "4096"}


def test_zero_warehouses_is_a_user_error(tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path, "zero", {})
    with pytest.raises(UserError, match="warehouses: expected an integer of at least 1"):
        Tpcc().load(engine, Tpcc().settings({"warehouses": 0}), SEED, lambda table, rows: None)
    assert not engine.exists()  # refused before anything was built


def test_all_twelve_consistency_conditions_hold_after_the_load(loaded) -> None:
    engine, _ = loaded
    session = engine.connect()
    try:
        results = check_consistency(session, fresh=True, money_in_cents=True)
    finally:
        session.close()
    assert [(r.condition, r.passed, r.detail) for r in results] == [(n, True, "") for n in range(1, 13)]


# --- initial values (4.3.3.1) ---

def test_warehouse_and_district_initial_values(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT w_id, w_ytd FROM warehouse") == (1, 300_000_00)  # money in integer cents
    assert rows(db, "SELECT DISTINCT d_ytd, d_next_o_id FROM district") == [(30_000_00, 3001)]
    assert rows(db, "SELECT d_id FROM district ORDER BY d_id") == [(d,) for d in range(1, 11)]
    (w_tax,) = one(db, "SELECT w_tax FROM warehouse")
    assert 0 <= w_tax <= 0.2
    assert one(db, "SELECT MIN(d_tax) >= 0 AND MAX(d_tax) <= 0.2 FROM district") == (1,)


def test_customer_initial_values(db: sqlite3.Connection) -> None:
    assert rows(db, "SELECT DISTINCT c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_credit_lim, "
                    "c_middle FROM customer") == [(-10_00, 10_00, 1, 0, 50_000_00, "OE")]
    assert one(db, "SELECT MAX(c_discount) <= 0.5 AND MIN(c_discount) >= 0 FROM customer") == (1,)
    assert rows(db, "SELECT DISTINCT c_credit FROM customer ORDER BY 1") == [("BC",), ("GC",)]


def test_history_initial_values(db: sqlite3.Connection) -> None:
    assert rows(db, "SELECT DISTINCT h_amount FROM history") == [(10_00,)]
    # one history row per customer, made at its own district
    assert one(db, "SELECT COUNT(DISTINCT h_c_w_id || '/' || h_c_d_id || '/' || h_c_id) FROM history") == (30_000,)
    assert one(db, "SELECT COUNT(*) FROM history WHERE h_d_id <> h_c_d_id OR h_w_id <> h_c_w_id") == (0,)


def test_exactly_300_bad_credit_customers_per_district(db: sqlite3.Connection) -> None:
    per_district = rows(db, "SELECT c_d_id, SUM(c_credit = 'BC'), COUNT(*) FROM customer GROUP BY c_d_id")
    assert per_district == [(d, 300, 3000) for d in range(1, 11)]


@pytest.mark.parametrize("table, column, total", [("item", "i_data", 100_000), ("stock", "s_data", 100_000)])
def test_ten_percent_of_data_contains_original(db: sqlite3.Connection, table: str, column: str,
                                               total: int) -> None:
    # the generator stamps exactly n // 10 rows, chosen at random
    (original,) = one(db, f"SELECT COUNT(*) FROM {table} WHERE instr({column}, 'ORIGINAL') > 0")
    assert original == total // 10
    # spread over the table, not a block of consecutive ids
    key = "i_id" if table == "item" else "s_i_id"
    (first_half,) = one(db, f"SELECT COUNT(*) FROM {table} WHERE instr({column}, 'ORIGINAL') > 0 "
                            f"AND {key} <= {total // 2}")
    assert 0.4 * original < first_half < 0.6 * original


def test_first_1000_customers_of_each_district_have_names_0_to_999_in_order(db: sqlite3.Connection) -> None:
    for d_id in range(1, 11):
        names = [name for (name,) in rows(db, "SELECT c_last FROM customer WHERE c_d_id = ? AND c_id <= 1000 "
                                              "ORDER BY c_id", (d_id,))]
        assert names == list(LAST_NAMES)


def test_remaining_customer_names_are_nurand_with_c_load(db: sqlite3.Connection,
                                                         loaded: tuple[SQLiteEngine, loader.LoadResult]) -> None:
    """4.3.3.1: C_LAST of customers 1001..3000 is NURand(255, 0, 999) with C-Load: names, not uniform."""
    names = [name for (name,) in rows(db, "SELECT c_last FROM customer WHERE c_id > 1000")]
    assert len(names) == 20_000
    assert set(names) <= set(LAST_NAMES)
    counts = Counter(names)
    assert max(counts.values()) > 10 * 20_000 / 1000  # NURand's hottest name: ~26x the uniform 20


def test_undelivered_orders_are_exactly_2101_and_up(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT COUNT(*) FROM orders WHERE (o_carrier_id IS NULL) <> (o_id >= 2101)") == (0,)
    assert one(db, "SELECT MIN(o_carrier_id), MAX(o_carrier_id) FROM orders") == (1, 10)
    assert one(db, "SELECT COUNT(*) FROM order_line WHERE (ol_delivery_d IS NULL) <> (ol_o_id >= 2101)") == (0,)
    assert one(db, "SELECT COUNT(*) FROM order_line WHERE ol_o_id < 2101 AND ol_amount <> 0") == (0,)
    low, high, zero = one(db, "SELECT MIN(ol_amount), MAX(ol_amount), SUM(ol_amount = 0) FROM order_line "
                              "WHERE ol_o_id >= 2101")
    assert 1 <= low and high <= 9_999_99 and zero == 0


def test_order_and_order_line_values(db: sqlite3.Connection) -> None:
    # 4.3.3.1: O_C_ID is a permutation of 1..3000 in each district
    assert rows(db, "SELECT o_d_id, COUNT(DISTINCT o_c_id), MIN(o_c_id), MAX(o_c_id) FROM orders "
                    "GROUP BY o_d_id") == [(d, 3000, 1, 3000) for d in range(1, 11)]
    assert rows(db, "SELECT DISTINCT o_all_local FROM orders") == [(1,)]
    assert one(db, "SELECT MIN(ol_i_id) >= 1 AND MAX(ol_i_id) <= 100000 FROM order_line") == (1,)
    assert rows(db, "SELECT DISTINCT ol_supply_w_id, ol_quantity FROM order_line") == [(1, 5)]


def test_stock_and_item_values(db: sqlite3.Connection) -> None:
    assert one(db, "SELECT MIN(s_quantity), MAX(s_quantity) FROM stock") == (10, 100)
    assert rows(db, "SELECT DISTINCT s_ytd, s_order_cnt, s_remote_cnt FROM stock") == [(0, 0, 0)]
    assert one(db, "SELECT MIN(s_i_id), MAX(s_i_id), COUNT(DISTINCT s_i_id) FROM stock") == (1, 100_000, 100_000)
    assert one(db, "SELECT MIN(i_im_id), MAX(i_im_id) FROM item") == (1, 10_000)
    assert one(db, "SELECT MIN(i_price), MAX(i_price) FROM item") == (1_00, 100_00)
    assert one(db, "SELECT MIN(i_id), MAX(i_id), COUNT(DISTINCT i_id) FROM item") == (1, 100_000, 100_000)


# --- string lengths and formats (4.3.2, 4.3.3.1) ---

@pytest.mark.parametrize("table, column, low, high", [
    ("item", "i_name", 14, 24), ("item", "i_data", 26, 50),
    ("warehouse", "w_name", 6, 10), ("warehouse", "w_street_1", 10, 20), ("warehouse", "w_city", 10, 20),
    ("district", "d_name", 6, 10), ("district", "d_street_2", 10, 20),
    ("customer", "c_first", 8, 16), ("customer", "c_street_1", 10, 20), ("customer", "c_street_2", 10, 20),
    ("customer", "c_city", 10, 20), ("customer", "c_state", 2, 2), ("customer", "c_zip", 9, 9),
    ("customer", "c_phone", 16, 16), ("customer", "c_data", 300, 500),
    ("history", "h_data", 12, 24),
    ("stock", "s_dist_01", 24, 24), ("stock", "s_dist_10", 24, 24), ("stock", "s_data", 26, 50),
    ("order_line", "ol_dist_info", 24, 24),
])
def test_string_lengths(db: sqlite3.Connection, table: str, column: str, low: int, high: int) -> None:
    shortest, longest, texts = one(db, f"SELECT MIN(length({column})), MAX(length({column})), "
                                       f"SUM(typeof({column}) = 'text') FROM {table}")
    (count,) = one(db, f"SELECT COUNT(*) FROM {table}")
    assert low <= shortest and longest <= high
    assert texts == count  # stored as text, not coerced to a number
    if count >= 1_000:  # lengths are uniform: both ends are reached
        assert (shortest, longest) == (low, high)


@pytest.mark.parametrize("table, prefix", [("warehouse", "w"), ("district", "d"), ("customer", "c")])
def test_zip_is_four_digits_then_11111(db: sqlite3.Connection, table: str, prefix: str) -> None:
    zips = [z for (z,) in rows(db, f"SELECT {prefix}_zip FROM {table}")]
    assert all(len(z) == 9 and z.endswith("11111") and z[:4].isdigit() for z in zips)
    states = [s for (s,) in rows(db, f"SELECT {prefix}_state FROM {table}")]
    assert all(len(s) == 2 and s.isalpha() and s.isupper() for s in states)


def test_phone_is_16_digits(db: sqlite3.Connection) -> None:
    phones = [p for (p,) in rows(db, "SELECT c_phone FROM customer")]
    assert all(len(p) == 16 and p.isdigit() for p in phones)


# --- determinism (the loader writes what the seeded generator yields) ---

def _since(db: sqlite3.Connection) -> str:
    (since,) = one(db, "SELECT DISTINCT c_since FROM customer")
    return since


def stored_rows(chunk: generate.Chunk) -> list[tuple]:
    return rows_of(loader.stored_columns(chunk, SQLiteEngine.dialect))


def test_database_matches_the_generator_for_the_seed(db: sqlite3.Connection,
                                                     loaded: tuple[SQLiteEngine, loader.LoadResult]) -> None:
    """Same seed, same content: the rows in the file are exactly the generator's, money in cents (the
    timestamps are the load's wall clock, so they are taken from the file)."""
    _, result = loaded
    since, c_load = _since(db), result.inputs.c_last
    expected = {"customer": [], "history": [], "orders": [], "new_order": [], "order_line": []}
    for d_id in (1, 7):
        for chunk in (*generate.customers(SEED, 1, d_id, c_load, since), *generate.orders(SEED, 1, d_id, since)):
            expected[chunk.table] += stored_rows(chunk)
    keys = {"customer": ("c_d_id", "c_id"), "history": ("h_c_d_id", "h_c_id"), "orders": ("o_d_id", "o_id"),
            "new_order": ("no_d_id", "no_o_id"), "order_line": ("ol_d_id", "ol_o_id", "ol_number")}
    district = {"customer": "c_d_id", "history": "h_c_d_id", "orders": "o_d_id", "new_order": "no_d_id",
                "order_line": "ol_d_id"}
    for table, want in expected.items():
        columns = ", ".join(generate.schema.TABLES_BY_NAME[table].column_names)
        got = rows(db, f"SELECT {columns} FROM {table} WHERE {district[table]} IN (1, 7) "
                       f"ORDER BY {', '.join(keys[table])}")
        assert got == want, table
    first_stock_chunk = next(generate.stock(SEED, 1))  # s_i_id 1..25000: its own stream, like the rest
    for table, chunks, where in (("item", generate.items(SEED), ""),
                                 ("stock", [first_stock_chunk], f"WHERE s_i_id <= {len(first_stock_chunk.rows)}"),
                                 ("district", generate.districts(SEED, 1), ""),
                                 ("warehouse", generate.warehouse(SEED, 1), "")):
        want = [row for chunk in chunks for row in stored_rows(chunk)]
        table_ = generate.schema.TABLES_BY_NAME[table]
        columns = ", ".join(table_.column_names)
        got = rows(db, f"SELECT {columns} FROM {table} {where} ORDER BY {', '.join(table_.primary_key)}")
        assert got == want, table


def test_generator_is_deterministic_per_seed_and_differs_between_seeds() -> None:
    since = "2024-01-01 00:00:00"

    def sample(seed: int) -> list:
        chunks = [*generate.customers(seed, 1, 3, 100, since), *generate.orders(seed, 1, 3, since),
                  *generate.districts(seed, 1), *generate.warehouse(seed, 1)]
        return [(chunk.table, chunk.rows) for chunk in chunks]

    assert sample(5) == sample(5)
    other = dict(sample(6))
    for table, rows_ in sample(5):
        if table != "new_order":  # NEW-ORDER is just the keys 2101..3000, whatever the seed
            assert rows_ != other[table], table


def test_generator_keys_streams_by_warehouse_and_district() -> None:
    """Each (table, warehouse, district) has its own stream: districts and warehouses differ."""
    since = "2024-01-01 00:00:00"
    first = next(generate.customers(5, 1, 1, 100, since)).rows
    other_district = next(generate.customers(5, 1, 2, 100, since)).rows
    other_warehouse = next(generate.customers(5, 2, 1, 100, since)).rows
    assert [r[3] for r in first] != [r[3] for r in other_district]  # c_first
    assert [r[3] for r in first] != [r[3] for r in other_warehouse]
    assert first == next(generate.customers(5, 1, 1, 100, since)).rows


def test_expected_rows_matches_the_spec_per_warehouse() -> None:
    assert generate.expected_rows(2) == {
        "item": 100_000, "warehouse": 2, "district": 20, "stock": 200_000, "customer": 60_000,
        "history": 60_000, "orders": 60_000, "new_order": 18_000, "order_line": 600_000,
    }
