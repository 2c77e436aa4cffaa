"""The one table both io workloads read, ``io_rows``, in each dialect; its size on disk as each engine counts it.

Rows are fixed-width: a BIGINT id, the primary key, and a payload written at its full declared width (random
alphanumerics, one byte each in every engine's encoding), so every row of a build is as wide as the others and a page
holds a known number of them (measured at the build and recorded, ``loader``). The payload is a VARCHAR: MariaDB's
CHAR stops at 255 characters, and every engine stores a full VARCHAR as it stores a CHAR of that width. The primary
key clusters the rows where the engine can (InnoDB always, SQLite ``WITHOUT ROWID``): the table is then its key's
B-tree, and a scan reads nothing but the rows.
"""

from __future__ import annotations

from maximus.engines.base import Dialect
from maximus.workloads.statements import for_dialect
from maximus.workloads import build_record

TABLE = "io_rows"
META_TABLE = build_record.TABLE

# The bytes of the table's rows on disk, without its indexes (a scan reads those bytes): PostgreSQL's heap, InnoDB's
# clustered index, SQLite's table B-tree.
_SIZE: dict[str, str] = {"table_bytes": f"SELECT SUM(pgsize) FROM dbstat WHERE name = '{TABLE}'"}
_OWN_SIZE = {
    "postgres": {"table_bytes": f"SELECT pg_relation_size('{TABLE}')"},
    "mariadb": {"table_bytes": "SELECT data_length FROM information_schema.tables "
                               f"WHERE table_schema = DATABASE() AND table_name = '{TABLE}'"},
}
# Statistics after the load. PostgreSQL's VACUUM also sets the pages' hint bits and visibility: without it the first
# scan of each page would write it back, and a read workload would measure writes.
_STATISTICS = {"analyze": f"ANALYZE {TABLE}"}
_OWN_STATISTICS = {"postgres": {"analyze": f"VACUUM ANALYZE {TABLE}"}, "mariadb": {"analyze": f"ANALYZE TABLE {TABLE}"}}


def schema_statements(dialect: Dialect, payload_bytes: int) -> list[str]:
    key = "" if dialect.primary_keys_after_load else ", PRIMARY KEY (id)"
    return [f"CREATE TABLE {TABLE} (id BIGINT NOT NULL, payload VARCHAR({payload_bytes}) NOT NULL{key})"
            f"{dialect.clustered_table_suffix}",
            build_record.CREATE]


def after_load_statements(dialect: Dialect) -> list[str]:
    """The primary key, where the dialect adds it after the data (bulk loads are faster), then statistics."""
    key = [f"ALTER TABLE {TABLE} ADD PRIMARY KEY (id)"] if dialect.primary_keys_after_load else []
    return key + [for_dialect(_STATISTICS, _OWN_STATISTICS, dialect.name)["analyze"]]


def table_bytes_sql(dialect: Dialect) -> str:
    return for_dialect(_SIZE, _OWN_SIZE, dialect.name)["table_bytes"]
