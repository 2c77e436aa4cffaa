"""The columnar COPY path: numpy columns written as COPY text store exactly what the rows path stores."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pytest

from maximus.engines._copy_text import copy_text
from maximus.engines.base import Session, rows_of
from maximus.engines.postgres import PostgresEngine
from maximus.workloads.tpcc import generate, schema

SINCE = "2026-01-02 03:04:05"
MIXED = ("id INTEGER, small SMALLINT, money NUMERIC(12,2), rate NUMERIC(4,4), real_ FLOAT8, name VARCHAR(30), "
         "code CHAR(24), at TIMESTAMP, other BIGINT")


def _mixed_columns(names: np.ndarray) -> list[np.ndarray]:
    n = len(names)
    return [
        np.arange(n) - 2, np.ma.masked_array(np.arange(n) % 7, mask=np.arange(n) % 3 == 0),
        np.array([0.0, -0.05, 4731.89, 300000.0, -10.0, 0.01])[np.arange(n) % 6],
        np.array([0.0, 0.1234, 0.0001, 0.5, 0.2, 0.0999])[np.arange(n) % 6],
        np.array([1 / 3, 1e20, -0.0, 2.5e-7, 12.0, -7.125])[np.arange(n) % 6], names,
        np.full(n, b"X" * 24, dtype="S24"),
        np.ma.masked_array(np.broadcast_to(np.array(SINCE.encode()), n), mask=np.arange(n) % 2 == 1),
        np.broadcast_to(np.int64(-(2 ** 40)), n),
    ]


def test_copy_text_writes_numbers_without_a_python_object_each() -> None:
    columns = [np.array([0, -12, 123]), np.array([0.0, -0.05, 5000.0]), np.array([b"", b"ab", b"abc"], dtype="S5"),
               np.ma.masked_array([1, 2, 3], mask=[False, True, False]), np.broadcast_to(np.array(b"OE"), 3)]
    assert copy_text(columns) == b"0\t0.00\t\t1\tOE\n-12\t-0.05\tab\t\\N\tOE\n123\t5000.00\tabc\t3\tOE\n"


def test_copy_text_leaves_escapes_and_other_types_to_the_rows_path() -> None:
    assert copy_text([np.array([b"tab\there"])]) is None
    assert copy_text([np.array([b"back\\slash"])]) is None
    assert copy_text([np.array([True, False])]) is None


@pytest.fixture(scope="module")
def session(server_workdir: Path) -> Iterator[tuple[PostgresEngine, Session]]:
    engine = PostgresEngine(server_workdir, "columns", {})
    engine.start()
    try:
        engine.provision()
        session = engine.connect()
        yield engine, session
        session.close()
    finally:
        engine.stop()


def _both_ways(engine: PostgresEngine, session: Session, table: str, columns: Sequence[str],
               values: Sequence[np.ndarray]) -> tuple[list[tuple], list[tuple]]:
    """What the table holds after the rows path, then after the columnar path."""
    order = ", ".join(str(position) for position in range(1, len(columns) + 1))
    stored = []
    for write in (lambda: engine.bulk_insert(session, table, columns, rows_of(values)),
                  lambda: engine.bulk_insert_columns(session, table, columns, values)):
        session.execute(f"TRUNCATE {table}")
        session.begin()
        write()
        session.commit()
        stored.append(session.fetchall(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"))
    return stored[0], stored[1]


@pytest.mark.parametrize("names", [np.array([b"plain", b"", b"caf\xc3\xa9", b"x" * 30, b"y", b"zz"] * 5),
                                   np.array([b"tab\tand\\back", b"new\nline", b"ok"] * 10)],
                         ids=["copy-text", "escaped-falls-back-to-rows"])
def test_columns_read_back_identical_to_rows_with_nulls_floats_and_strings(
        session: tuple[PostgresEngine, Session], names: np.ndarray) -> None:
    engine, own = session
    own.execute(f"CREATE TABLE IF NOT EXISTS mixed ({MIXED})")
    columns = ("id", "small", "money", "rate", "real_", "name", "code", "at", "other")
    by_rows, by_columns = _both_ways(engine, own, "mixed", columns, _mixed_columns(names))
    assert len(by_rows) == len(names) and by_columns == by_rows
    assert any(row[1] is None for row in by_rows) and any(row[7] is None for row in by_rows)


def test_generated_chunks_read_back_identical_to_rows(session: tuple[PostgresEngine, Session]) -> None:
    engine, own = session
    chunks = [*generate.customers(1, 2, 3, 157, SINCE), *generate.orders(1, 2, 3, SINCE), next(generate.stock(1, 2)),
              *generate.warehouse(1, 2), *generate.districts(1, 2)]
    for chunk in chunks:
        own.execute(schema.create_table_sql(schema.TABLES_BY_NAME[chunk.table], engine.dialect).replace(
            "CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        by_rows, by_columns = _both_ways(engine, own, chunk.table, chunk.columns, chunk.values)
        assert len(by_rows) == len(chunk) and by_columns == by_rows, chunk.table
