"""The knob catalogue of a PostgreSQL server: its ``pg_settings`` rows as knobs."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Mapping

from maximus.engines.postgres.settings import PgValue
from maximus.errors import EngineError
from maximus.knobs import Applies, Knob, KnobCatalogue

_CONTEXT = {"postmaster": Applies.RESTART, "sighup": Applies.RELOAD, "superuser": Applies.RELOAD,
            "user": Applies.RELOAD, "superuser-backend": Applies.RELOAD, "backend": Applies.RELOAD}
DURABILITY = {"fsync": {"off"}, "synchronous_commit": {"off"}, "full_page_writes": {"off"}}


def catalogue_of(rows: Iterable[Mapping[str, Any]], own: Iterable[Knob] = ()) -> KnobCatalogue:
    """The server's settings that a user can set, and ``own``, knobs of Maximus's."""
    return KnobCatalogue("postgres", [*(_knob(row) for row in rows if row["context"] != "internal"), *own])


def _knob(row: Mapping[str, Any]) -> Knob:
    value_type = PgValue(row["vartype"], row["unit"] or "", _float(row["min_val"]), _float(row["max_val"]),
                         tuple(row["enumvals"] or ()))
    default = value_type.spelled_exactly(row["boot_val"] or "")
    return Knob(row["name"], value_type, default, _CONTEXT.get(row["context"], Applies.RESTART),
                row["short_desc"] or "", row["unit"] or "", frozenset(DURABILITY.get(row["name"], ())))


def _float(value: Any) -> float | None:
    return None if value in (None, "") else float(value)


@lru_cache(maxsize=8)
def server_settings(dsn: str) -> tuple[dict, ...]:
    """pg_settings of the server at ``dsn``."""
    return query_settings(dsn)


def query_settings(dsn: str) -> tuple[dict, ...]:
    import psycopg
    from psycopg.rows import dict_row

    try:
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as connection:
            rows = connection.execute("SELECT name, vartype, unit, min_val, max_val, enumvals, boot_val, context,"
                                      " short_desc FROM pg_settings").fetchall()
    except psycopg.OperationalError as error:
        raise EngineError(f"cannot connect to PostgreSQL: {str(error).strip().splitlines()[-1]}") from None
    return tuple({**row, "enumvals": list(row["enumvals"] or [])} for row in rows)
