"""TPC-C's SQL per dialect: the stored functions of server-side mode (``<dialect>.sql``) and, where a dialect writes
a client-side statement otherwise than the shared text (each transaction's module), its own (``<dialect>.py``,
keyed by (transaction, statement)). The shared text is what SQLite and PostgreSQL run."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from maximus.engines.base import Dialect
from maximus.workloads.statements import for_dialect
from maximus.workloads.tpcc.sql import mariadb

OVERRIDES: dict[str, Mapping[tuple[str, str], Any]] = {"mariadb": mariadb.STATEMENTS}
FUNCTION_ROWS: dict[str, Callable[[tuple | None], tuple | None]] = {"mariadb": mariadb.function_row}


def statements(part: str, shared: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    """The statements of ``part`` (a transaction, ``load`` or ``consistency``) as ``dialect`` writes them: the
    shared ones, each replaced by the dialect's own where it has one; an override of an unknown one is an error."""
    own = {statement: text for (name, statement), text in OVERRIDES.get(dialect.name, {}).items() if name == part}
    return for_dialect(shared, {dialect.name: own}, dialect.name)


def function_row(dialect: Dialect) -> Callable[[tuple | None], tuple | None]:
    """How a stored function's row reads in this dialect: as it comes, or (MariaDB) from the JSON array it is."""
    return FUNCTION_ROWS.get(dialect.name, _as_it_comes)


def _as_it_comes(row: tuple | None) -> tuple | None:
    return row

