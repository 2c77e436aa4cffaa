"""MariaDB's client-side statements (``workloads/tpcc/sql/mariadb.py``) do what the shared ones do: each client-side
transaction, run on MariaDB and on PostgreSQL (the shared text) from the same pristine build, returns the same screen
and leaves the same database."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from maximus import api
from maximus.engines.base import Session
from maximus.workloads.tpcc.schema import TABLES

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
UNCHANGED = {"item"}  # no transaction writes it


def _value(value: Any) -> Any:
    """A column's value alike on both engines: PostgreSQL pads CHAR(n) with spaces, MariaDB does not."""
    return value.rstrip() if isinstance(value, str) else value


def _contents(session: Session) -> dict[str, Counter]:
    """Every table a transaction may change, as a multiset of rows, dates left out: each engine stamps its own time."""
    contents = {}
    for table in TABLES:
        if table.name in UNCHANGED:
            continue
        columns = [name for name, kind in table.columns if kind != "TIMESTAMP"]
        rows = session.fetchall(f"SELECT {', '.join(columns)} FROM {table.name}")
        contents[table.name] = Counter(tuple(map(_value, row)) for row in rows)
    return contents


def _client_side(engine_name: str, workdir: Path, since: datetime) -> tuple[list, dict[str, Counter]]:
    """The screens of ``tpcc_modes.cases`` run client-side from the engine's pristine build, and what it holds after."""
    engine = api.make_engine(engine_name, workdir, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        try:
            shown = tpcc_modes.screens(engine, session, "client", tpcc_modes.cases(session))
            return [tpcc_modes.undated(screen, since) for screen in shown], _contents(session)
        finally:
            session.close()
            engine.restore()  # the module's other tests start from pristine data


@pytest.fixture(scope="module")
def both(mariadb_loaded: Path, loaded: Path) -> dict[str, tuple[list, dict[str, Counter]]]:
    since = datetime.now(timezone.utc).replace(tzinfo=None)
    return {"mariadb": _client_side("mariadb", mariadb_loaded, since),
            "postgres": _client_side("postgres", loaded, since)}


def test_each_transaction_returns_the_same_screen_on_mariadb_as_the_shared_statements_do(both) -> None:
    mariadb, postgres = both["mariadb"][0], both["postgres"][0]
    for case, (one, other) in enumerate(zip(mariadb, postgres, strict=True)):
        assert one == other, case
    new_order, repeated, payment, bad_credit, *_, delivery, _ = mariadb
    assert len(new_order.lines) == 5 and [line.i_id for line in repeated.lines] == [5, 6, 5, 7, 5]
    assert payment.c_data is None and bad_credit.c_data is not None  # the split UPDATE then SELECT of C_DATA
    assert payment.warehouse.zip and payment.district.zip  # the split UPDATEs' rows, read back
    assert delivery.delivered == (2101,) * 10  # each district's oldest order, its carrier set and its customer read


def test_the_transactions_leave_the_same_database_on_mariadb_as_the_shared_statements_do(both) -> None:
    mariadb, postgres = both["mariadb"][1], both["postgres"][1]
    for table in mariadb:
        assert mariadb[table] == postgres[table], (table, list((mariadb[table] - postgres[table]).items())[:3],
                                                   list((postgres[table] - mariadb[table]).items())[:3])
    assert sum(mariadb["orders"].values()) == 30_000 + 2  # the two New-Orders went in
    assert sum(mariadb["history"].values()) == 30_000 + 3  # and the three Payments
