"""The four tables of TPC-B as pgbench documents them, with the fillers that give rows their classic sizes
(about 100 bytes each, 50 for history), rendered per dialect; primary keys as the dialect adds them best."""

from __future__ import annotations

from dataclasses import dataclass

from maximus.engines.base import Dialect
from maximus.workloads import build_record

META_TABLE = build_record.TABLE


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]
    primary_key: str = ""  # history has none, as in pgbench

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def filler_width(self) -> int:
        """The width of the CHAR filler, written in full so that every engine stores the classic row size (SQLite
        and MariaDB's CHAR do not pad on their own)."""
        (kind,) = [kind for name, kind in self.columns if name == "filler"]
        return int(kind[len("CHAR("):-1])


BRANCHES = Table("branches", (("bid", "INTEGER NOT NULL"), ("bbalance", "INTEGER"), ("filler", "CHAR(88)")), "bid")
TELLERS = Table("tellers", (("tid", "INTEGER NOT NULL"), ("bid", "INTEGER"), ("tbalance", "INTEGER"),
                            ("filler", "CHAR(84)")), "tid")
ACCOUNTS = Table("accounts", (("aid", "INTEGER NOT NULL"), ("bid", "INTEGER"), ("abalance", "INTEGER"),
                              ("filler", "CHAR(84)")), "aid")
HISTORY = Table("history", (("tid", "INTEGER"), ("bid", "INTEGER"), ("aid", "INTEGER"), ("delta", "INTEGER"),
                            ("mtime", "TIMESTAMP"), ("filler", "CHAR(22)")))

TABLES = (BRANCHES, TELLERS, ACCOUNTS, HISTORY)
TABLES_BY_NAME = {table.name: table for table in TABLES}


def create_table_sql(table: Table, dialect: Dialect) -> str:
    columns = [f"{name} {dialect.datetime_type if kind == 'TIMESTAMP' else kind}" for name, kind in table.columns]
    if table.primary_key and not dialect.primary_keys_after_load:
        columns.append(f"PRIMARY KEY ({table.primary_key})")
    suffix = dialect.clustered_table_suffix if table.primary_key else ""
    return f"CREATE TABLE {table.name} ({', '.join(columns)}){suffix}"


def schema_statements(dialect: Dialect) -> list[str]:
    tables = [create_table_sql(table, dialect) for table in TABLES]
    return tables + [build_record.CREATE]


def key_statements(dialect: Dialect) -> list[str]:
    """The primary keys, where the dialect adds them after the data (bulk loads are faster)."""
    if not dialect.primary_keys_after_load:
        return []
    return [f"ALTER TABLE {t.name} ADD PRIMARY KEY ({t.primary_key})" for t in TABLES if t.primary_key]
